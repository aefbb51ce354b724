"""The last names pending in the public surface (issue 32), against torch on fresh random inputs:
``torch.distributions.Wishart``, ``torch.segment_reduce``, ``Tensor.storage_type`` and ``torch.lobpcg``."""

from __future__ import annotations

import importlib
import os
import warnings

import numpy as np
import pytest
import torch
import torch.distributions as TD

import fjax
import fjax.distributions as FD

SEED = int(os.environ.get("FJAX_TEST_SEED", np.random.SeedSequence().entropy % 2**32))


def _rng(*salt):
    return np.random.default_rng([SEED, *salt])


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def _close(a, b, tol=1e-5, what=""):
    msg = f"{what} (FJAX_TEST_SEED={SEED})"
    assert tuple(a.shape) == tuple(b.shape), (msg, tuple(a.shape), tuple(b.shape))
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol, equal_nan=True, err_msg=msg)


def _spd(rng, shape, dtype=np.float32):
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) / shape[-1] + np.eye(shape[-1])).astype(dtype)


# -- Wishart ---------------------------------------------------------------------------------------


def _wishart_params(rng, kind, batch=(2,), p=3):
    df = rng.uniform(p + 0.5, p + 4.0, batch).astype(np.float32)
    m = _spd(rng, batch + (p, p))
    if kind == "scale_tril":
        m = np.linalg.cholesky(m).astype(np.float32)
    return df, m


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_against_torch(kind):
    """Moments, matrices, log_prob, entropy (closed form and the exponential family's) with gradients."""
    rng = _rng(1, len(kind))
    df, m = _wishart_params(rng, kind)
    value = _spd(rng, (4, 2, 3, 3))
    fdf, fm = fjax.tensor(df, requires_grad=True), fjax.tensor(m, requires_grad=True)
    tdf, tm = torch.tensor(df, requires_grad=True), torch.tensor(m, requires_grad=True)
    f, t = FD.Wishart(fdf, **{kind: fm}), TD.Wishart(tdf, **{kind: tm})
    assert f.batch_shape == t.batch_shape and f.event_shape == t.event_shape
    for attr in ("mean", "variance", "mode", "covariance_matrix", "precision_matrix", "scale_tril"):
        _close(getattr(f, attr), getattr(t, attr), 1e-4, f"Wishart({kind}).{attr}")
    lp_f, lp_t = f.log_prob(fjax.tensor(value)), t.log_prob(torch.tensor(value))
    _close(lp_f, lp_t, 1e-4, "log_prob")
    _close(f.entropy(), t.entropy(), 1e-4, "entropy")
    _close(FD.ExponentialFamily.entropy(f), t.entropy(), 1e-3, "exponential-family entropy")
    (lp_f.sum() + f.entropy().sum()).backward()
    (lp_t.sum() + t.entropy().sum()).backward()
    _close(fdf.grad, tdf.grad, 1e-3, "grad of df")
    _close(fm.grad, tm.grad, 1e-3, f"grad of {kind}")


def test_wishart_number_df_expand_and_errors():
    rng = _rng(2)
    m = _spd(rng, (3, 3))
    f, t = FD.Wishart(5.0, covariance_matrix=fjax.tensor(m)), TD.Wishart(5.0, covariance_matrix=torch.tensor(m))
    _close(f.mean, t.mean, 1e-5, "mean with a number df")
    fe, te = f.expand((4, 2)), t.expand((4, 2))
    assert fe.batch_shape == te.batch_shape
    v = _spd(rng, (4, 2, 3, 3))
    _close(fe.log_prob(fjax.tensor(v)), te.log_prob(torch.tensor(v)), 1e-4, "expanded log_prob")
    assert fe.rsample((5,)).shape == (5, 4, 2, 3, 3)
    with pytest.raises(ValueError, match="df"):
        FD.Wishart(fjax.tensor([1.5]), covariance_matrix=fjax.eye(3))
    with pytest.raises(ValueError, match="Exactly one"):
        FD.Wishart(4.0)
    with pytest.raises(ValueError, match="two-dimensional"):
        FD.Wishart(4.0, scale_tril=fjax.ones(3))
    with pytest.warns(UserWarning, match="Low df"):
        FD.Wishart(2.5, covariance_matrix=fjax.eye(3))
    mode = FD.Wishart(fjax.tensor([3.5, 6.0]), covariance_matrix=fjax.eye(3)).mode
    assert np.isnan(_np(mode[0])).all() and not np.isnan(_np(mode[1])).any()


def test_wishart_samples():
    """Bartlett draws: shape, positive definite, manual_seed repeats them, sample mean and variance
    within a few standard errors of ``df * Sigma`` and torch's variance."""
    rng = _rng(3)
    df, m = _wishart_params(rng, "covariance_matrix")
    f, t = FD.Wishart(fjax.tensor(df), covariance_matrix=fjax.tensor(m)), TD.Wishart(torch.tensor(df), torch.tensor(m))
    n = 4000
    fjax.manual_seed(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # df > p: no draw is singular, no warning
        x = f.sample((n,))
    assert x.shape == (n, 2, 3, 3) and not x.requires_grad
    assert bool(f.support.check(x).all())
    fjax.manual_seed(5)
    assert np.array_equal(_np(f.sample((n,))), _np(x))
    xs = _np(x).astype(np.float64)
    var = _np(t.variance).astype(np.float64)
    assert np.all(np.abs(xs.mean(0) - _np(t.mean)) <= 5 * np.sqrt(var / n) + 1e-5)
    np.testing.assert_allclose(xs.var(0), var, rtol=0.2)


def test_wishart_rsample_gradient_is_unbiased():
    """d/d(params) of the mean of many reparametrized draws is the gradient of ``df * Sigma``."""
    rng = _rng(4)
    df, m = _wishart_params(rng, "scale_tril", batch=())
    leaves = [fjax.tensor(df, requires_grad=True), fjax.tensor(m, requires_grad=True)]
    fjax.manual_seed(9)
    FD.Wishart(leaves[0], scale_tril=leaves[1]).rsample((8000,)).mean(0).sum().backward()
    exact = [torch.tensor(df, requires_grad=True), torch.tensor(m, requires_grad=True)]
    TD.Wishart(exact[0], scale_tril=exact[1]).mean.sum().backward()
    for got, want in zip(leaves, exact):
        np.testing.assert_allclose(_np(got.grad), _np(want.grad), rtol=0.1, atol=0.1)


# -- segment_reduce ----------------------------------------------------------------------------------

REDUCES = ["sum", "mean", "max", "min", "prod", "amax"]


def _segment_case(rng, ties=False):
    data = rng.standard_normal((7, 3)).astype(np.float32)
    if ties:
        data = np.round(data).astype(np.float32)  # repeated maxima and zeros
    return data, np.array([3, 0, 2, 2])  # one empty segment


def _segment_both(data, reduce, g, **kwargs):
    fx, tx = fjax.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    fk = {k: fjax.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    tk = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    fo, to = fjax.segment_reduce(fx, reduce, **fk), torch.segment_reduce(tx, reduce, **tk)
    _close(fo, to, 1e-5, f"segment_reduce({reduce}, {kwargs})")
    assert fo.dtype == getattr(fjax, str(to.dtype).split(".")[-1])
    g = np.nan_to_num(g, nan=0.0)
    fo.backward(fjax.tensor(g))
    to.backward(torch.tensor(g))
    _close(fx.grad, tx.grad, 1e-4, f"segment_reduce({reduce}) gradient")


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("initial", [None, 0.5])
@pytest.mark.parametrize("ties", [False, True])
def test_segment_reduce_lengths(reduce, initial, ties):
    rng = _rng(10, REDUCES.index(reduce), ties)
    data, lengths = _segment_case(rng, ties)
    g = rng.standard_normal((4, 3)).astype(np.float32)
    if ties:  # torch's CPU kernel splits only positive gradients among tied extremes; fjax splits all evenly
        g = np.abs(g) + 0.1
    _segment_both(data, reduce, g, lengths=lengths, initial=initial)


@pytest.mark.parametrize("reduce", REDUCES)
def test_segment_reduce_offsets_and_axis(reduce):
    rng = _rng(11, REDUCES.index(reduce))
    data = rng.standard_normal((2, 6, 3)).astype(np.float32)
    lengths = np.array([[2, 0, 4], [1, 4, 1]])
    offsets = np.concatenate([np.zeros((2, 1), np.int64), np.cumsum(lengths, -1)], -1)
    g = rng.standard_normal((2, 3, 3)).astype(np.float32)
    _segment_both(data, reduce, g, lengths=lengths, axis=1)
    _segment_both(data, reduce, g, offsets=offsets, axis=1)
    data = rng.standard_normal((5,)).astype(np.float64)
    _segment_both(data, reduce, rng.standard_normal(3), offsets=np.array([0, 2, 2, 5]))


def test_segment_reduce_errors():
    x = fjax.randn(5, 2)
    with pytest.raises(NotImplementedError, match="indices"):
        fjax.segment_reduce(x, "sum", indices=fjax.tensor([0, 1]))
    with pytest.raises(ValueError, match="lengths or offsets"):
        fjax.segment_reduce(x, "sum")
    with pytest.raises(ValueError, match="reduce argument"):
        fjax.segment_reduce(x, "median", lengths=fjax.tensor([5]))
    with pytest.raises(ValueError, match="sum to data.size"):
        fjax.segment_reduce(x, "sum", lengths=fjax.tensor([2, 2]))
    with pytest.raises(ValueError, match="last dimension of lengths"):
        fjax.segment_reduce(x, "sum", lengths=fjax.tensor([2, 3]), axis=1)
    with pytest.raises(ValueError, match="integer"):
        fjax.segment_reduce(x, "sum", lengths=fjax.tensor([2.0, 3.0]))
    with pytest.raises(ValueError, match="non-negative"):
        fjax.segment_reduce(x, "sum", lengths=fjax.tensor([6, -1]))
    out = fjax.segment_reduce(x, "sum", lengths=fjax.tensor([2, 2]), unsafe=True)  # no check: the rest is dropped
    _close(out, torch.tensor(_np(x)).reshape(5, 2)[:4].reshape(2, 2, 2).sum(1), 1e-5)


# -- Tensor.storage_type -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64"])
def test_storage_type(dtype):
    """fjax has one storage class for all dtypes (torch one per dtype): ``storage_type()`` is the class of
    ``storage()``, and an instance of it holds the tensor's dtype, as torch's class names it."""
    x = fjax.zeros(3, dtype=getattr(fjax, dtype))
    cls = x.storage_type()
    assert isinstance(cls, type) and cls is type(x.storage()) is importlib.import_module("fjax.tensor").Storage
    legacy = torch.zeros(3, dtype=getattr(torch, dtype)).storage_type()
    assert str(x.storage().array.dtype) == str(legacy.dtype).split(".")[-1]


# -- lobpcg ---------------------------------------------------------------------------------------------


def _lobpcg_problem(rng, m=16, batch=(), dtype=np.float64):
    a = rng.standard_normal(batch + (m, m))
    return (a @ np.swapaxes(a, -1, -2) / m + np.eye(m)).astype(dtype)


def _eigenpairs_ok(E, X, A, B, tol):
    """``A X = B X diag(E)``, with ``B``-orthonormal columns."""
    E, X = _np(E).astype(np.float64), _np(X).astype(np.float64)
    B = np.broadcast_to(np.eye(A.shape[-1]), A.shape) if B is None else B
    np.testing.assert_allclose(A @ X, B @ X * E[..., None, :], atol=tol * 10, err_msg=f"seed {SEED}")
    np.testing.assert_allclose(
        np.swapaxes(X, -1, -2) @ B @ X, np.broadcast_to(np.eye(E.shape[-1]), E.shape + E.shape[-1:]), atol=tol * 10
    )


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_against_torch(largest):
    """The 2 extreme eigenpairs from random start vectors: torch's eigenvalues, ``A X = X diag(E)``, and
    A's gradient through eigenvalues and (sign-free) eigenvector projections, as torch's backward."""
    rng = _rng(20, largest)
    A = _lobpcg_problem(rng)
    W, c = rng.standard_normal((16, 16)), rng.standard_normal(2)
    fa, ta = fjax.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    E, X = fjax.lobpcg(fa, k=2, largest=largest)
    E2, X2 = torch.lobpcg(ta, k=2, largest=largest, tol=1e-12, niter=-1)
    assert E.shape == (2,) and X.shape == (16, 2) and E.dtype == fjax.float64
    _close(E, E2, 1e-9, f"lobpcg eigenvalues, largest={largest}")
    _eigenpairs_ok(E, X, A, None, 1e-8)
    ((E * fjax.tensor(c)).sum() + ((X @ X.mT) * fjax.tensor(W)).sum()).backward()
    ((E2 * torch.tensor(c)).sum() + ((X2 @ X2.mT) * torch.tensor(W)).sum()).backward()
    _close(fa.grad, ta.grad, 1e-6, f"lobpcg gradient, largest={largest}")


def test_lobpcg_float32_start_vectors_batch_dense_route_and_generalized():
    rng = _rng(21)
    A = _lobpcg_problem(rng, batch=(2,), dtype=np.float32)
    X0 = rng.standard_normal((16, 3)).astype(np.float32)
    E, X = fjax.lobpcg(fjax.tensor(A), X=fjax.tensor(X0))  # k = n = X's columns, batch broadcast
    A64 = torch.tensor(A, dtype=torch.float64)
    ref = torch.lobpcg(A64, X=torch.tensor(X0, dtype=torch.float64).expand(2, 16, 3).contiguous(), tol=1e-10)[0]
    assert E.shape == (2, 3) and X.shape == (2, 16, 3) and E.dtype == fjax.float32
    np.testing.assert_allclose(_np(E), _np(ref), rtol=2e-4, err_msg=f"float32 lobpcg with X ({SEED})")
    _eigenpairs_ok(E, X, A.astype(np.float64), None, 2e-3)
    A = A.astype(np.float64)
    E, X = fjax.lobpcg(fjax.tensor(A), k=1, n=4, largest=False)  # 3 n <= m < 5 n + 1: the dense route
    _close(E, torch.lobpcg(torch.tensor(A), k=1, n=4, largest=False, tol=1e-10, niter=-1)[0], 1e-8, "n=4")
    B = _lobpcg_problem(rng, m=16)
    for largest in (True, False):
        E, X = fjax.lobpcg(fjax.tensor(A[0]), k=2, n=4, B=fjax.tensor(B), largest=largest)
        ref = torch.lobpcg(torch.tensor(A[0]), k=2, n=4, B=torch.tensor(B), largest=largest, tol=1e-10, niter=-1)[0]
        _close(E, ref, 1e-7, f"generalized lobpcg, largest={largest}")
        _eigenpairs_ok(E, X, A[0], B, 1e-8)


def test_lobpcg_errors():
    A = fjax.eye(12)
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested eigenpairs"):
        fjax.lobpcg(A, k=5)
    for name, value in [("iK", A), ("tracker", print), ("ortho_iparams", {}), ("ortho_fparams", {})]:
        with pytest.raises(NotImplementedError, match=name):
            fjax.lobpcg(A, k=1, **{name: value})
    with pytest.raises(NotImplementedError, match="B"):
        fjax.lobpcg(fjax.eye(12).requires_grad_(), k=1, B=fjax.eye(12))
    with pytest.raises(ValueError, match="square"):
        fjax.lobpcg(fjax.ones(12, 6))
