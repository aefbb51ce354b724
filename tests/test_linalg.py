"""fjax.linalg against torch.linalg on fresh random inputs: values, dtypes, gradients, batching, the
named-tuple fields, the errors torch raises, and each function's doctest example."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
import torch

import fjax
import fjax.linalg as LA

TOL = {"float32": (2e-4, 2e-5), "float64": (1e-8, 1e-10)}
DTYPES = ("float32", "float64")


def _rng(seed=0):
    return np.random.default_rng(seed)


def _general(rng, shape, dtype):
    """Well-conditioned (batches of) matrices: noise plus a multiple of the identity."""
    a = rng.standard_normal(shape) / np.sqrt(shape[-1])
    if shape[-1] == shape[-2]:
        a = a + 2.0 * np.eye(shape[-1])
    return a.astype(dtype)


def _spd(rng, shape, dtype):
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) / shape[-1] + np.eye(shape[-1])).astype(dtype)


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.asarray(t.detach()._data)


def _pair(arrays):
    fj = [fjax.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    th = [torch.from_numpy(a.copy()).requires_grad_(a.dtype.kind == "f") for a in arrays]
    return fj, th


def _outs(out):
    return list(out) if isinstance(out, tuple) else [out]


def _close(a, b, dtype, what, scale=1.0):
    rtol, atol = TOL[dtype]
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch {b.shape}"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != torch {b.dtype}"
    np.testing.assert_allclose(a, b, rtol=rtol * scale, atol=atol * scale, err_msg=what)


def check(name, arrays, dtype, *, kwargs=None, compare=None, loss=None, grad=True, fj=None, th=None):
    """Call fjax.linalg.<name> and torch.linalg.<name> on the same arrays; compare the outputs at
    ``compare`` (default: all) and the gradients of ``loss(outputs)`` (default: a fixed random weighting
    of the compared float outputs)."""
    kwargs = kwargs or {}
    fj_in, th_in = _pair(arrays)
    fj_out = _outs((fj or getattr(LA, name))(*fj_in, **kwargs))
    th_out = _outs((th or getattr(torch.linalg, name))(*th_in, **kwargs))
    assert len(fj_out) == len(th_out)
    idx = range(len(th_out)) if compare is None else compare
    for i in idx:
        _close(fj_out[i], th_out[i], dtype, f"{name} output {i}")
    if not grad:
        return fj_out, th_out
    if loss is None:
        rng = _rng(99)
        ws = {
            i: rng.standard_normal(tuple(th_out[i].shape)).astype(dtype) for i in idx if th_out[i].is_floating_point()
        }

        def loss(outs, lib):
            return sum((outs[i] * lib.tensor(w)).sum() for i, w in ws.items())

    loss(fj_out, fjax).backward()
    loss(th_out, torch).backward()
    for k, (a, b) in enumerate(zip(fj_in, th_in)):
        if b.requires_grad:
            _close(a.grad, b.grad, dtype, f"{name} grad of input {k}", scale=20)
    return fj_out, th_out


# -- plain functions: values and gradients ------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_det_slogdet_solve(dtype):
    rng = _rng(1)
    A = _general(rng, (2, 3, 4, 4), dtype)
    check("inv", [A], dtype)
    check("det", [A], dtype)
    out, _ = check("slogdet", [A], dtype)
    assert isinstance(out, list) and len(out) == 2
    check("solve", [A, rng.standard_normal((2, 3, 4, 2)).astype(dtype)], dtype)
    check("solve", [A, rng.standard_normal((3, 4, 2)).astype(dtype)], dtype)  # broadcast batch
    check("solve", [A[0, 0], rng.standard_normal(4).astype(dtype)], dtype)  # a vector
    check("solve", [A, rng.standard_normal((2, 3, 4)).astype(dtype)], dtype)  # a batch of vectors
    check("solve", [A, rng.standard_normal((2, 3, 5, 4)).astype(dtype)], dtype, kwargs={"left": False})
    out, _ = check("inv_ex", [A], dtype, compare=[0, 1])
    assert out[1].dtype == fjax.int32 and not out[1].any().item()


@pytest.mark.parametrize("dtype", DTYPES)
def test_norms(dtype):
    rng = _rng(2)
    x = rng.standard_normal((3, 4, 5)).astype(dtype)
    for kw in [
        {},
        {"ord": 1},
        {"ord": 3.5, "dim": 1},
        {"ord": float("inf"), "dim": (0, 2)},
        {"dim": -1, "keepdim": True},
    ]:
        check("vector_norm", [x], dtype, kwargs=kw)
    check("vector_norm", [x], dtype, kwargs={"ord": 0}, grad=False)
    A = _general(rng, (2, 4, 4), dtype)
    for ord in ["fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf")]:
        check("matrix_norm", [A], dtype, kwargs={"ord": ord})
    check("matrix_norm", [x], dtype, kwargs={"dim": (0, 2), "keepdim": True})
    for kw in [{}, {"ord": 2}, {"ord": "nuc"}, {"dim": 1}, {"dim": (0, 1), "ord": 1}]:
        check("norm", [A[0]], dtype, kwargs=kw)
    check("norm", [x], dtype, kwargs={"keepdim": True})
    check("norm", [x[0, 0]], dtype, kwargs={"ord": 3})


def test_norm_dtype_argument():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    out = LA.vector_norm(fjax.tensor(x), dtype=fjax.float64)
    assert out.dtype == fjax.float64
    assert torch.linalg.vector_norm(torch.tensor(x), dtype=torch.float64).item() == pytest.approx(out.item())
    with pytest.raises(Exception, match="floating point"):
        LA.vector_norm(fjax.tensor([1, 2]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_and_eigh(dtype):
    rng = _rng(3)
    S = _spd(rng, (3, 4, 4), dtype)
    check("cholesky", [S], dtype)
    check("cholesky", [S], dtype, kwargs={"upper": True})
    # eigenvalues directly; eigenvectors through gauge-invariant quantities
    check("eigvalsh", [S], dtype)
    check("eigvalsh", [S], dtype, kwargs={"UPLO": "U"})
    check(
        "eigh",
        [S],
        dtype,
        compare=[0],
        loss=lambda o, lib: (
            (o[0] ** 2).sum() + ((o[1] * o[1]) * lib.tensor(np.arange(16.0).reshape(4, 4).astype(dtype))).sum()
        ),
    )
    check(
        "eigh",
        [S],
        dtype,
        compare=[0],
        fj=lambda A: (
            lambda o: (o.eigenvalues, (o.eigenvectors * o.eigenvalues.unsqueeze(-2)) @ o.eigenvectors.transpose(-2, -1))
        )(LA.eigh(A)),
        th=lambda A: (lambda o: (o.eigenvalues, (o.eigenvectors * o.eigenvalues.unsqueeze(-2)) @ o.eigenvectors.mT))(
            torch.linalg.eigh(A)
        ),
    )
    # only the named triangle is read, as torch
    M = rng.standard_normal((4, 4)).astype(dtype) + 4 * np.eye(4, dtype=dtype)
    for uplo in ("L", "U"):
        check("eigvalsh", [M], dtype, kwargs={"UPLO": uplo}, grad=False)
    check("cholesky", [M + M.T], dtype, grad=False)


def _svd_parts(lib):
    """U, S and the reconstruction ``U diag(S) Vh`` (gauge-invariant but for U's column signs)."""

    def parts(A):
        o = lib.svd(A, full_matrices=False)
        return o.U.abs(), o.S, (o.U * o.S.unsqueeze(-2)) @ o.Vh

    return parts


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_qr(dtype):
    rng = _rng(4)
    for shape in [(2, 5, 3), (3, 3), (2, 3, 5)]:
        A = _general(rng, shape, dtype)
        check("svdvals", [A], dtype)
        check(
            "svd",
            [A],
            dtype,
            compare=[1],
            fj=_svd_parts(LA),
            th=_svd_parts(torch.linalg),
        )
        out = LA.svd(fjax.tensor(A))
        ref = torch.linalg.svd(torch.tensor(A))
        assert [tuple(o.shape) for o in out] == [tuple(r.shape) for r in ref]
        m, n = shape[-2:]
        U = _np(out.U)
        np.testing.assert_allclose(U @ np.swapaxes(U, -1, -2), np.broadcast_to(np.eye(m), U.shape), atol=1e-5)
        # QR: R up to the signs of its rows; Q @ R exactly
        for mode in ("reduced", "complete"):
            fq, tq = LA.qr(fjax.tensor(A), mode=mode), torch.linalg.qr(torch.tensor(A), mode=mode)
            assert fq.Q.shape == tuple(tq.Q.shape) and fq.R.shape == tuple(tq.R.shape)
            _close(fq.R.abs(), tq.R.abs(), dtype, f"qr {mode} |R|")
            _close(fq.Q @ fq.R, tq.Q @ tq.R, dtype, f"qr {mode} Q @ R")
        fr = LA.qr(fjax.tensor(A), mode="r")
        assert fr.Q.shape == (0,)
        _close(fr.R.abs(), torch.linalg.qr(torch.tensor(A), mode="r").R.abs(), dtype, "qr r")
    A = _general(rng, (2, 5, 3), dtype)
    check(
        "qr",
        [A],
        dtype,
        fj=lambda A: (lambda o: o.Q @ o.R + o.R.abs().sum())(LA.qr(A)),
        th=lambda A: (lambda o: o.Q @ o.R + o.R.abs().sum())(torch.linalg.qr(A)),
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_lstsq_pinv_matrix_rank(dtype):
    rng = _rng(5)
    A = _general(rng, (2, 6, 3), dtype)
    B = rng.standard_normal((2, 6, 2)).astype(dtype)
    for driver in (None, "gelsy", "gelsd", "gelss", "gels"):
        out, ref = check("lstsq", [A, B], dtype, kwargs={"driver": driver}, compare=[0, 1, 3])
        assert out[2].shape == tuple(ref[2].shape) and out[2].dtype == fjax.int64
        if ref[2].numel():
            np.testing.assert_array_equal(_np(out[2]), ref[2].numpy())
    check("pinv", [A], dtype)
    check("pinv", [_spd(rng, (4, 4), dtype)], dtype, kwargs={"hermitian": True})
    check("pinv", [A], dtype, kwargs={"atol": 0.1, "rtol": 0.01})
    low = (rng.standard_normal((3, 5, 2)) @ rng.standard_normal((3, 2, 4))).astype(dtype)
    check("pinv", [low], dtype, kwargs={"rtol": 1e-3})
    check("matrix_rank", [low], dtype, grad=False)
    check("matrix_rank", [A], dtype, grad=False)
    check("matrix_rank", [A], dtype, kwargs={"atol": 100.0}, grad=False)
    check("matrix_rank", [_spd(rng, (4, 4), dtype)], dtype, kwargs={"hermitian": True}, grad=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_products_and_views(dtype):
    rng = _rng(6)
    r = lambda *s: rng.standard_normal(s).astype(dtype)  # noqa: E731
    check("cross", [r(2, 4, 3), r(1, 4, 3)], dtype)
    check("cross", [r(3, 4), r(3, 4)], dtype, kwargs={"dim": 0})
    check("vecdot", [r(2, 3, 4), r(3, 4)], dtype)
    check("vecdot", [r(4, 3), r(4, 3)], dtype, kwargs={"dim": 0})
    check("matmul", [r(2, 3, 4), r(4, 5)], dtype)
    check("diagonal", [r(2, 3, 4)], dtype)
    check("diagonal", [r(3, 4, 2)], dtype, kwargs={"offset": 1, "dim1": 0, "dim2": 1})
    for shapes in [
        [(3, 4), (4, 5), (5, 2)],
        [(4,), (4, 6), (6, 2), (2,)],
        [(3, 4), (4,)],
        [(10, 2), (2, 9), (9, 3), (3, 1)],
    ]:
        arrays = [r(*s) for s in shapes]
        fj_in, th_in = _pair(arrays)
        out, ref = LA.multi_dot(fj_in), torch.linalg.multi_dot(th_in)
        _close(out, ref, dtype, "multi_dot")
        out.sum().backward()
        ref.sum().backward()
        for a, b in zip(fj_in, th_in):
            _close(a.grad, b.grad, dtype, "multi_dot grad", scale=20)


# -- named tuples, errors, unsupported arguments -------------------------------------------------


def test_named_tuple_fields():
    A = fjax.tensor(_spd(_rng(7), (3, 3), "float64"))
    expect = {
        "slogdet": ("sign", "logabsdet"),
        "eigh": ("eigenvalues", "eigenvectors"),
        "svd": ("U", "S", "Vh"),
        "qr": ("Q", "R"),
        "inv_ex": ("inverse", "info"),
    }
    for name, fields in expect.items():
        out = getattr(LA, name)(A)
        ref = getattr(torch.linalg, name)(torch.tensor(_np(A)))
        assert out._fields == fields and all(hasattr(ref, f) for f in fields)
        assert type(out).__name__ == type(ref).__name__ == f"linalg_{name}"
        assert type(out) is getattr(fjax.return_types, f"linalg_{name}")
    out = LA.lstsq(A, A)
    assert out._fields == ("solution", "residuals", "rank", "singular_values")
    sign, logabsdet = LA.slogdet(A)
    assert sign.item() == 1.0 and logabsdet.item() == pytest.approx(np.log(np.linalg.det(_np(A))))


SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]], "float32")


def test_singular_matrix_raises_as_torch():
    batch = np.stack([np.eye(2, dtype="float32"), SINGULAR])
    for fn, tfn in [(LA.inv, torch.linalg.inv), (fjax.inverse, torch.inverse)]:
        for a in (SINGULAR, batch):
            with pytest.raises(torch.linalg.LinAlgError) as ref:
                tfn(torch.tensor(a))
            with pytest.raises(LA.LinAlgError) as err:
                fn(fjax.tensor(a))
            assert str(err.value) == str(ref.value)
            assert isinstance(err.value, RuntimeError)
    with pytest.raises(LA.LinAlgError, match=r"linalg.solve: \(Batch element 1\): The solver failed"):
        LA.solve(fjax.tensor(batch), fjax.ones(2))
    with pytest.raises(LA.LinAlgError, match="matrix is singular"):
        LA.solve(fjax.tensor(SINGULAR), fjax.ones(2, 3))
    with pytest.raises(LA.LinAlgError, match="linalg.inv: The diagonal element 2 is zero"):
        LA.inv_ex(fjax.tensor(SINGULAR), check_errors=True)
    out = LA.inv_ex(fjax.tensor(batch))
    ref = torch.linalg.inv_ex(torch.tensor(batch))
    np.testing.assert_array_equal(_np(out.info), ref.info.numpy())
    not_pd = np.array([[1.0, 2.0], [2.0, 1.0]], "float32")
    with pytest.raises(torch.linalg.LinAlgError) as ref:
        torch.linalg.cholesky(torch.tensor(not_pd))
    with pytest.raises(LA.LinAlgError) as err:
        LA.cholesky(fjax.tensor(not_pd))
    assert str(err.value) == str(ref.value)
    # singular matrices that torch accepts: det 0, slogdet (0, -inf), pinv, matrix_rank
    assert LA.det(fjax.tensor(SINGULAR)).item() == fjax.det(fjax.tensor(SINGULAR)).item() == 0.0
    assert LA.slogdet(fjax.tensor(SINGULAR)).logabsdet.item() == -np.inf
    assert LA.matrix_rank(fjax.tensor(SINGULAR)).item() == 1


def test_unsupported_and_bad_arguments():
    A = fjax.eye(3)
    for call in (
        lambda: LA.svd(A, driver="gesvdj"),
        lambda: LA.svdvals(A, driver="gesvd"),
        lambda: LA.lstsq(A, A, driver="magic"),
    ):
        with pytest.raises(NotImplementedError, match="driver"):
            call()
    with pytest.raises(Exception, match="square"):
        LA.inv(fjax.ones(2, 3))
    with pytest.raises(Exception, match="floating point"):
        LA.det(fjax.tensor([[1, 2], [3, 4]]))
    with pytest.raises(Exception, match="mode"):
        LA.qr(A, mode="full")


def test_inverse_and_det_agree_with_linalg():
    A = fjax.tensor(_general(_rng(8), (2, 3, 3), "float64"))
    assert fjax.allclose(fjax.inverse(A), LA.inv(A))
    assert fjax.allclose(fjax.det(A), LA.det(A))


# -- LU, Householder reflectors, LDL, tensor solves, low-rank SVD ----------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_factor_lu_and_lu_solve(dtype):
    rng = _rng(7)
    for shape in ((4, 4), (2, 3, 5), (5, 3)):
        fj_out, th_out = check("lu_factor", [rng.standard_normal(shape).astype(dtype)], dtype)
        assert fj_out[1].dtype == fjax.int32
        check("lu", [rng.standard_normal(shape).astype(dtype)], dtype, compare=(1, 2))
        check("lu_factor_ex", [rng.standard_normal(shape).astype(dtype)], dtype)
    LU, pivots = torch.linalg.lu_factor(torch.from_numpy(_general(rng, (2, 3, 3), dtype)))
    for left in (True, False):
        for adjoint in (True, False):
            B = rng.standard_normal((3, 2) if left else (2, 3)).astype(dtype)
            fj_in, th_in = _pair([LU.numpy(), B])
            kw = dict(left=left, adjoint=adjoint)
            fj_x = LA.lu_solve(fj_in[0], fjax.tensor(pivots.numpy()), fj_in[1], **kw)
            th_x = torch.linalg.lu_solve(th_in[0], pivots, th_in[1], **kw)
            _close(fj_x, th_x, dtype, f"lu_solve {kw}")
            (fj_x * fj_x).sum().backward()
            (th_x * th_x).sum().backward()
            _close(fj_in[0].grad, th_in[0].grad, dtype, f"lu_solve {kw} grad of LU", scale=20)
            _close(fj_in[1].grad, th_in[1].grad, dtype, f"lu_solve {kw} grad of B", scale=20)


def test_legacy_lu_lu_unpack_lu_solve():
    rng = _rng(8)
    A = rng.standard_normal((2, 4, 4)).astype("float32")
    LU, pivots = fjax.lu(fjax.tensor(A))
    th_LU, th_pivots, th_info = torch.lu(torch.from_numpy(A), get_infos=True)
    _close(LU, th_LU, "float32", "lu")
    np.testing.assert_array_equal(_np(pivots), th_pivots.numpy())
    out = fjax.tensor(A).lu(get_infos=True)
    assert out.info.tolist() == th_info.tolist() and out.pivots.dtype == fjax.int32
    P, L, U = fjax.lu_unpack(LU, pivots)
    np.testing.assert_allclose(_np(P @ L @ U), A, rtol=1e-5, atol=1e-5)
    for fj, th in zip(fjax.lu_unpack(LU, pivots), torch.lu_unpack(th_LU, th_pivots)):
        _close(fj, th, "float32", "lu_unpack")
    assert fjax.lu_unpack(LU, pivots, unpack_data=False).L.shape == (0,)
    b = rng.standard_normal((4, 3)).astype("float32")
    _close(
        fjax.lu_solve(fjax.tensor(b), LU, pivots), torch.lu_solve(torch.from_numpy(b), th_LU, th_pivots), "float32", ""
    )
    with pytest.raises(NotImplementedError, match="pivot=False"):
        LA.lu_factor(fjax.tensor(A), pivot=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_ex_tensorinv_tensorsolve(dtype):
    rng = _rng(9)
    fj_out, _ = check("solve_ex", [_general(rng, (2, 3, 3), dtype), rng.standard_normal((3, 2)).astype(dtype)], dtype)
    assert fj_out[1].dtype == fjax.int32
    assert LA.solve_ex(fjax.tensor([[1.0, 2.0], [2.0, 4.0]]), fjax.ones(2)).info.item() == 2
    A = _general(rng, (6, 6), dtype)
    check("tensorinv", [A.reshape(2, 3, 6)], dtype, kwargs=dict(ind=2))
    check("tensorsolve", [A.reshape(2, 3, 6), rng.standard_normal((2, 3)).astype(dtype)], dtype)
    check("tensorsolve", [A.reshape(6, 2, 3), rng.standard_normal((2, 3)).astype(dtype)], dtype, kwargs=dict(dims=(0,)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_geqrf_householder_product_ormqr(dtype):
    rng = _rng(10)
    A = rng.standard_normal((2, 5, 3)).astype(dtype)
    a, tau = fjax.geqrf(fjax.tensor(A))
    th_a, th_tau = torch.geqrf(torch.from_numpy(A))
    _close(a, th_a, dtype, "geqrf a")
    _close(tau, th_tau, dtype, "geqrf tau")
    check("householder_product", [th_a.numpy(), th_tau.numpy()], dtype)
    for left in (True, False):
        for transpose in (True, False):
            C = rng.standard_normal((2, 5, 4) if left else (2, 4, 5)).astype(dtype)
            kw = dict(left=left, transpose=transpose)
            check("ormqr", [th_a.numpy(), th_tau.numpy(), C], dtype, kwargs=kw, fj=fjax.ormqr, th=torch.ormqr)


@pytest.mark.parametrize("kind", ["float64", "symmetric complex", "hermitian"])
def test_ldl_bunch_kaufman_pivots_match_lapack(kind):
    """Inputs with small diagonals make sytrf pivot, with 1x1 and 2x2 blocks; LD and pivots match exactly."""
    rng = _rng(11)
    hermitian = kind == "hermitian"
    blocks = 0
    for n in (1, 2, 3, 5, 6):
        a = rng.standard_normal((4, n, n))
        if kind != "float64":
            a = a + 1j * rng.standard_normal((4, n, n))
        a = a * np.where(np.eye(n), 0.05, 1.0)
        a = a + (np.conj(np.swapaxes(a, -1, -2)) if hermitian else np.swapaxes(a, -1, -2))
        LD, pivots, info = LA.ldl_factor_ex(fjax.tensor(a), hermitian=hermitian)
        th_LD, th_pivots, th_info = torch.linalg.ldl_factor_ex(torch.from_numpy(a), hermitian=hermitian)
        np.testing.assert_allclose(_np(LD), th_LD.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(_np(pivots), th_pivots.numpy())
        np.testing.assert_array_equal(_np(info), th_info.numpy())
        blocks += int((th_pivots < 0).sum())
        B = rng.standard_normal((n, 3)).astype(a.dtype)
        X = LA.ldl_solve(LD, pivots, fjax.tensor(B), hermitian=hermitian)
        np.testing.assert_allclose(
            _np(X),
            torch.linalg.ldl_solve(th_LD, th_pivots, torch.from_numpy(B), hermitian=hermitian).numpy(),
            rtol=1e-8,
            atol=1e-10,
        )
    assert blocks > 0, "no 2x2 block was exercised"
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.ldl_factor(fjax.zeros(2, 2))


def test_low_rank_svd_and_pca_of_a_low_rank_matrix_match_torch():
    """Exact on a rank-q input, whatever the random draws: U V^H, S and their gradients are torch's."""
    rng = _rng(12)
    a, b = rng.standard_normal((2, 5, 2)).astype("float32"), rng.standard_normal((2, 4, 2)).astype("float32")
    for fn, kwargs in ((LA.svd_lowrank, dict(q=2)), (LA.pca_lowrank, dict(q=2, center=True))):
        fj_in, th_in = _pair([a, b])
        th_fn = getattr(torch, fn.__name__)
        outs = []
        for inputs, f, lib in ((fj_in, fn, fjax), (th_in, th_fn, torch)):
            U, S, V = f(inputs[0] @ inputs[1].mT, **kwargs)
            outs.append((U @ V.mH, S))
            ((U @ V.mH).sum() + (S * lib.tensor([1.0, -2.0])).sum()).backward()
        for x, y in zip(*outs):
            _close(x, y, "float32", fn.__name__, scale=10)
        for x, y in zip(fj_in, th_in):
            _close(x.grad, y.grad, "float32", f"{fn.__name__} gradient", scale=20)


def test_zero_size_det_inv_and_subgradient_of_the_norm_at_zero():
    assert LA.det(fjax.zeros(0, 0)).item() == 1.0
    assert LA.det(fjax.zeros(3, 0, 0)).tolist() == [1.0, 1.0, 1.0]
    inverse, info = LA.inv_ex(fjax.zeros(0, 0))
    assert inverse.shape == (0, 0) and info.item() == 0
    for ord in (2, 1, 0.5, 3.5, float("inf"), -1, float("-inf")):
        x = fjax.zeros(5, requires_grad=True)
        (g,) = fjax.autograd.grad(LA.vector_norm(x, ord), x)
        assert g.tolist() == [0.0] * 5, ord
    a, b = np.ones((1, 1, 1), "float32"), np.arange(4.0, dtype="float32").reshape(2, 1, 2)
    dims = ([0, 1], [2, 0])
    expected = torch.tensordot(torch.from_numpy(a), torch.from_numpy(b), dims=dims)
    _close(fjax.tensordot(fjax.tensor(a), fjax.tensor(b), dims=dims), expected, "float32", "tensordot")


# -- each public function documents itself with an example that runs ----------------------------


@pytest.mark.parametrize("name", [n for n in LA.__all__ if n != "LinAlgError"])
def test_docstring_example_runs(name):
    obj = getattr(LA, name)
    doc = obj.__doc__ or ""
    assert doc.strip() and ">>>" in doc, f"fjax.linalg.{name} has no example"
    parser = doctest.DocTestParser()
    test = parser.get_doctest(doc, {"fjax": fjax}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
