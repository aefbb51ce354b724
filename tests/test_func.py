"""fjax.func against torch.func: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap,
functional_call, their compositions, validation messages and the compile cache.

Set FJAX_TEST_SEED to replay a failure (the seed is in every failure message).
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch
import torch.func as TF

import fjax
import fjax.autograd.functional as FAF
import fjax.func as FF
import fjax.nn

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))
rng = np.random.default_rng(SEED)


def pair(*shape, dtype="float64", requires_grad=False):
    a = rng.standard_normal(shape).astype(dtype)
    return fjax.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def close(f, t, rtol=1e-7, atol=1e-9, what="result"):
    """Compare nested tuples/lists/dicts of fjax Tensors with torch's, structure included."""
    if isinstance(t, dict):
        assert isinstance(f, dict) and sorted(f) == sorted(t), f"{what}: keys {f!r} vs {sorted(t)} (seed={SEED})"
        for k in t:
            close(f[k], t[k], rtol, atol, f"{what}[{k!r}]")
        return
    if isinstance(t, (tuple, list)):
        assert type(f) is type(t) and len(f) == len(t), f"{what}: {type(f)} vs torch {type(t)} (seed={SEED})"
        for i, (a, b) in enumerate(zip(f, t)):
            close(a, b, rtol, atol, f"{what}[{i}]")
        return
    assert isinstance(f, fjax.Tensor), f"{what}: got {type(f)} (seed={SEED})"
    a, b = np.asarray(f.detach()._data), t.detach().numpy()
    assert a.shape == b.shape and a.dtype == b.dtype, (
        f"{what}: {a.shape} {a.dtype} vs {b.shape} {b.dtype} (seed={SEED})"
    )
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"{what} (seed={SEED})")


def same_error(fcall, tcall, exc=RuntimeError):
    with pytest.raises(exc) as t_err:
        tcall()
    with pytest.raises(exc) as f_err:
        fcall()
    assert str(f_err.value) == str(t_err.value).replace("torch.", "fjax."), f"{f_err.value}\nvs torch: {t_err.value}"


def f2(lib):
    return lambda x, y: (lib.sin(x) * y.exp()).sum() + (x * x * y).sum() * 0.5


# -- grad ------------------------------------------------------------------------------------
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0), -1])
def test_grad_and_grad_and_value_match_torch(argnums):
    (fx, tx), (fy, ty) = pair(3), pair(3)
    close(FF.grad(f2(fjax), argnums)(fx, fy), TF.grad(f2(torch), argnums)(tx, ty))
    close(FF.grad_and_value(f2(fjax), argnums)(fx, fy), TF.grad_and_value(f2(torch), argnums)(tx, ty))


def test_grad_over_pytrees_with_aux_and_static_arguments():
    fp = {"w": pair(3, 2), "b": pair(2)}
    fx, tx = pair(4, 3)

    def loss(lib):
        def fn(p, x, power):
            out = lib.tanh(x @ p["w"] + p["b"])
            return (out**power).sum(), {"out": out}

        return fn

    f_params = {k: v[0] for k, v in fp.items()}
    t_params = {k: v[1] for k, v in fp.items()}
    fg, faux = FF.grad(loss(fjax), has_aux=True)(f_params, fx, 3)
    tg, taux = TF.grad(loss(torch), has_aux=True)(t_params, tx, 3)
    close(fg, tg)
    close(faux, taux)
    fgv = FF.grad_and_value(loss(fjax), has_aux=True)(f_params, fx, 2)
    tgv = TF.grad_and_value(loss(torch), has_aux=True)(t_params, tx, 2)
    close((fgv[0], fgv[1][0]), (tgv[0], tgv[1][0]))


@pytest.mark.parametrize(
    "case",
    ["vector_output", "tuple_output", "aux_not_pair", "argnum_range", "argnums_empty", "argnums_dup", "argnums_type"],
)
def test_grad_validation_matches_torch(case):
    (fx, tx) = pair(3)
    calls = {
        "vector_output": (lambda lib: lambda x: x.sin(), {}),
        "tuple_output": (lambda lib: lambda x: (x.sum(), x.sum()), {}),
        "aux_not_pair": (lambda lib: lambda x: x.sum(), {"has_aux": True}),
        "argnum_range": (lambda lib: lambda x: x.sum(), {"argnums": 1}),
        "argnums_empty": (lambda lib: lambda x: x.sum(), {"argnums": ()}),
        "argnums_dup": (lambda lib: lambda x: x.sum(), {"argnums": (0, 0)}),
        "argnums_type": (lambda lib: lambda x: x.sum(), {"argnums": [0]}),
    }
    fn, kw = calls[case]
    same_error(lambda: FF.grad(fn(fjax), **kw)(fx), lambda: TF.grad(fn(torch), **kw)(tx))


def test_grad_of_non_tensor_argument_raises_like_torch():
    same_error(lambda: FF.grad(lambda x: x)(2.0), lambda: TF.grad(lambda x: x)(2.0), ValueError)


def test_grad_results_are_on_the_tape_like_torch():
    fx, tx = pair(3, requires_grad=True)
    fg = FF.grad(lambda x: (x.sin() * x).sum())(fx)
    tg = TF.grad(lambda x: (x.sin() * x).sum())(tx)
    assert fg.requires_grad
    (fg * fg).sum().backward()
    (tg * tg).sum().backward()
    close(fx.grad, tx.grad)


# -- vjp / jvp -----------------------------------------------------------------------------------
def test_vjp_matches_torch_with_tuples_and_aux():
    (fx, tx), (fy, ty) = pair(3), pair(3)

    def fn(lib):
        return lambda x, y: (((x * y).sin(), x.exp() + y), {"s": x.sum()})

    fout, fvjp, faux = FF.vjp(fn(fjax), fx, fy, has_aux=True)
    tout, tvjp, taux = TF.vjp(fn(torch), tx, ty, has_aux=True)
    close(fout, tout)
    close(faux, taux)
    (fc1, tc1), (fc2, tc2) = pair(3), pair(3)
    close(fvjp((fc1, fc2)), tvjp((tc1, tc2)))
    fout, fvjp = FF.vjp(lambda x: x.exp() * 2.0, fx)
    tout, tvjp = TF.vjp(lambda x: x.exp() * 2.0, tx)
    close(fvjp(fc1), tvjp(tc1))


def test_vjp_errors_match_torch():
    fx, tx = pair(3)
    _, fvjp = FF.vjp(lambda x: (x, x), fx)
    with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents"):
        fvjp(fx)
    same_error(lambda: FF.vjp(lambda x: x.long(), fx), lambda: TF.vjp(lambda x: x.long(), tx))
    same_error(lambda: FF.vjp(lambda x: x.sum(), fx, has_aux=True), lambda: TF.vjp(lambda x: x.sum(), tx, has_aux=True))


def test_jvp_matches_torch():
    (fx, tx), (fy, ty), (fu, tu), (fv, tv) = pair(3), pair(2, 3), pair(3), pair(2, 3)

    def fn(lib):
        return lambda x, y: (x * y, (y.cos() * x).sum(0))

    close(FF.jvp(fn(fjax), (fx, fy), (fu, fv)), TF.jvp(fn(torch), (tx, ty), (tu, tv)))

    def aux_fn(lib):
        return lambda x: (x.sin(), x * 2.0)

    close(FF.jvp(aux_fn(fjax), (fx,), (fu,), has_aux=True), TF.jvp(aux_fn(torch), (tx,), (tu,), has_aux=True))


def test_jvp_errors_match_torch():
    (fx, tx), (fu, tu) = pair(3), pair(3)
    same_error(lambda: FF.jvp(lambda x: x, fx, (fu,)), lambda: TF.jvp(lambda x: x, tx, (tu,)))
    same_error(
        lambda: FF.jvp(lambda x: fjax.ones(3, dtype=fjax.float64), (fx,), (fu,), strict=True),
        lambda: TF.jvp(lambda x: torch.ones(3, dtype=torch.float64), (tx,), (tu,), strict=True),
    )


# -- jacrev / jacfwd / hessian -----------------------------------------------------------------------
@pytest.mark.parametrize("which", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_jacobians_match_torch(which, argnums):
    (fx, tx), (fy, ty) = pair(3), pair(2, 3)

    def fn(lib):
        return lambda x, y: ((x * y).sin(), (y.exp() @ x).sum())

    close(getattr(FF, which)(fn(fjax), argnums)(fx, fy), getattr(TF, which)(fn(torch), argnums)(tx, ty))

    def aux_fn(lib):
        return lambda x, y: (x.exp() * y, y.sum())

    close(
        getattr(FF, which)(aux_fn(fjax), argnums, has_aux=True)(fx, fy),
        getattr(TF, which)(aux_fn(torch), argnums, has_aux=True)(tx, ty),
    )


def test_jacrev_chunk_size_and_its_validation():
    fx, tx = pair(5)
    fn = lambda lib: lambda x: (x.sin() * x, x.sum())  # noqa: E731
    expected = TF.jacrev(fn(torch))(tx)
    for chunk in (1, 2, 6):
        close(FF.jacrev(fn(fjax), chunk_size=chunk)(fx), expected, what=f"chunk_size={chunk}")
    same_error(lambda: FF.jacrev(fn(fjax), chunk_size=0), lambda: TF.jacrev(fn(torch), chunk_size=0), ValueError)


def test_jacfwd_randomness():
    fx, tx = pair(3)
    same_error(
        lambda: FF.jacfwd(lambda x: x * fjax.rand(3, dtype=fjax.float64))(fx),
        lambda: TF.jacfwd(lambda x: x * torch.rand(3, dtype=torch.float64))(tx),
    )
    jac = FF.jacfwd(lambda x: x * fjax.rand(3, dtype=fjax.float64), randomness="same")(fx).numpy()
    assert np.count_nonzero(jac - np.diag(np.diag(jac))) == 0 and np.all((np.diag(jac) >= 0) & (np.diag(jac) < 1))
    with pytest.raises(NotImplementedError, match="randomness='different'"):
        FF.jacfwd(lambda x: x, randomness="different")


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_hessian_matches_torch(argnums):
    (fx, tx), (fy, ty) = pair(3), pair(3)
    close(FF.hessian(f2(fjax), argnums)(fx, fy), TF.hessian(f2(torch), argnums)(tx, ty))


def test_compositions_match_torch():
    fx, tx = pair(3)
    f = lambda lib: lambda x: (lib.sin(x) * x.exp()).sum()  # noqa: E731
    close(FF.jacfwd(FF.jacrev(f(fjax)))(fx), TF.jacfwd(TF.jacrev(f(torch)))(tx))
    close(FF.grad(lambda x: FF.grad(f(fjax))(x).sum())(fx), TF.grad(lambda x: TF.grad(f(torch))(x).sum())(tx))
    fb, tb = pair(4, 3)
    close(FF.vmap(FF.jacrev(f(fjax)))(fb), TF.vmap(TF.jacrev(f(torch)))(tb))
    fv, tv = pair(3)
    # torch cannot nest autograd.functional in torch.func; the oracle is autograd.grad over create_graph
    fhvp = FF.grad(lambda x: FAF.hvp(f(fjax), x, fv, create_graph=True)[1].sum())(fx)
    tx.requires_grad_()
    thvp = torch.autograd.grad(torch.autograd.functional.hvp(f(torch), tx, tv, create_graph=True)[1].sum(), tx)[0]
    close(fhvp, thvp, what="grad of functional.hvp inside fjax.func.grad")
    detached = FF.grad(lambda x: FAF.hvp(f(fjax), x, fv)[1].sum() + x.sum())(fx)  # create_graph=False: detached
    close(detached, torch.ones(3, dtype=torch.float64), what="create_graph=False inside a transform")


# -- vmap ------------------------------------------------------------------------------------
def test_vmap_in_dims_out_dims_and_kwargs_match_torch():
    (fx, tx), (fy, ty), (fz, tz) = pair(4, 3), pair(3, 5, 4), pair(3)

    def fn(lib):
        return lambda x, y, z, scale=1.0: ((x * z).sum() * scale, y.sin() * x.sum(), z * 2.0)

    for in_dims, out_dims in [((0, 2, None), 0), ((-2, -1, None), (0, 1, 0)), ((0, 2, None), (0, 1, None))]:
        if out_dims == (0, 1, None):  # the third output is not batched
            close(
                FF.vmap(fn(fjax), in_dims, out_dims)(fx, fy, fz, scale=3.0),
                TF.vmap(fn(torch), in_dims, out_dims)(tx, ty, tz, scale=3.0),
            )
            continue
        close(FF.vmap(fn(fjax), in_dims, out_dims)(fx, fy, fz), TF.vmap(fn(torch), in_dims, out_dims)(tx, ty, tz))


def test_vmap_nested_and_dict_inputs_and_chunks():
    fa, ta = pair(6, 2)
    fb, tb = pair(3, 6)

    def fn(d, pair_):
        return (d["a"] * pair_[1].sum()).exp(), pair_[1].sin() * pair_[0]

    fin, tin = ({"a": fa}, (3.0, fb)), ({"a": ta}, (3.0, tb))
    in_dims = ({"a": 0}, (None, 1))
    for chunk in (None, 4):
        close(FF.vmap(fn, in_dims, chunk_size=chunk)(*fin), TF.vmap(fn, in_dims, chunk_size=chunk)(*tin))


def test_vmap_randomness_modes():
    fx, tx = pair(4, 3)
    same_error(
        lambda: FF.vmap(lambda x: x * fjax.rand(3, dtype=fjax.float64))(fx),
        lambda: TF.vmap(lambda x: x * torch.rand(3, dtype=torch.float64))(tx),
    )
    ones = fjax.ones(4, 3, dtype=fjax.float64)
    same = FF.vmap(lambda x: x * fjax.rand(3, dtype=fjax.float64), randomness="same")(ones).numpy()
    assert np.allclose(same, same[0]), f"one draw for the batch (seed={SEED})"
    different = FF.vmap(lambda x: x * fjax.rand(3, dtype=fjax.float64), randomness="different")(ones).numpy()
    assert not np.allclose(different[0], different[1]) and np.all((different >= 0) & (different < 1))
    again = FF.vmap(lambda x: x * fjax.rand(3, dtype=fjax.float64), randomness="different")(ones).numpy()
    assert not np.allclose(different, again), "fresh numbers on every call"
    same_error(lambda: FF.vmap(lambda x: x, randomness="bad"), lambda: TF.vmap(lambda x: x, randomness="bad"))


@pytest.mark.parametrize(
    "case", ["sizes", "in_dim_range", "non_tensor", "no_batch", "structure", "in_dims_type", "out_none", "out_float"]
)
def test_vmap_errors_match_torch(case):
    (fx, tx), (fy, ty) = pair(2, 3), pair(3, 3)

    def ident(x, *rest):
        return x

    def scalar(x):
        return 1.0

    calls = {
        "sizes": (ident, {}, lambda lib, x, y: (x, y)),
        "in_dim_range": (ident, {"in_dims": 2}, lambda lib, x, y: (x,)),
        "non_tensor": (ident, {}, lambda lib, x, y: (x, 3)),
        "no_batch": (ident, {"in_dims": (None,)}, lambda lib, x, y: (x,)),
        "structure": (ident, {"in_dims": (0,)}, lambda lib, x, y: (x, y)),
        "in_dims_type": (ident, {"in_dims": None}, lambda lib, x, y: (x,)),
        "out_none": (ident, {"out_dims": None}, lambda lib, x, y: (x,)),
        "out_float": (scalar, {}, lambda lib, x, y: (x,)),
    }
    fn, kw, args = calls[case]
    with pytest.raises(ValueError) as t_err:
        TF.vmap(fn, **kw)(*args(torch, tx, ty))
    with pytest.raises(ValueError) as f_err:
        FF.vmap(fn, **kw)(*args(fjax, fx, fy))
    if case not in ("structure", "out_none", "out_float"):  # torch's TreeSpec/BatchedTensor wording differs
        assert str(f_err.value) == str(t_err.value)


def test_fresh_lambdas_do_not_recompile_composed_transforms():
    fb, _ = pair(5, 3)
    fw, _ = pair(3)
    FAF.cache_clear()
    FF.vmap(FF.grad(lambda x: (x * fw).sin().sum()))(fb)
    first = FAF.cache_info()
    for _ in range(3):
        FF.vmap(FF.grad(lambda x: (x * fw).sin().sum()))(fb)
    info = FAF.cache_info()
    assert info.misses == first.misses and info.hits >= first.hits + 3, (first, info)


# -- functional_call ---------------------------------------------------------------------------
def _mlp_pair():
    tmod = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    fmod = fjax.nn.Sequential(fjax.nn.Linear(3, 4), fjax.nn.Tanh(), fjax.nn.Linear(4, 2)).double()
    fmod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})
    return fmod, tmod


def test_functional_call_and_per_example_gradients_match_torch():
    fmod, tmod = _mlp_pair()
    new = {k: rng.standard_normal(tuple(v.shape)) for k, v in tmod.named_parameters()}
    fparams = {k: fjax.tensor(v) for k, v in new.items()}
    tparams = {k: torch.tensor(v) for k, v in new.items()}
    (fx, tx), (fy, ty) = pair(6, 3), pair(6, 2)
    close(FF.functional_call(fmod, fparams, (fx,)), TF.functional_call(tmod, tparams, (tx,)))
    close(FF.functional_call(fmod, fparams, fx), TF.functional_call(tmod, tparams, tx))
    close(fmod(fx), tmod(tx), what="the module's own parameters are restored")

    def loss(mod, call, mse):
        return lambda p, x, y: mse(call(mod, p, (x[None],)), y[None])

    fper = FF.vmap(FF.grad(loss(fmod, FF.functional_call, fjax.nn.functional.mse_loss)), in_dims=(None, 0, 0))
    tper = TF.vmap(TF.grad(loss(tmod, TF.functional_call, torch.nn.functional.mse_loss)), in_dims=(None, 0, 0))
    close(fper(fparams, fx, fy), tper(tparams, tx, ty))


def test_functional_call_eager_gradients_flow_to_the_given_tensors():
    fmod, tmod = _mlp_pair()
    fparams = {k: v.detach().requires_grad_() for k, v in fmod.named_parameters()}
    tparams = {k: v.detach().requires_grad_() for k, v in tmod.named_parameters()}
    fx, tx = pair(5, 3)
    FF.functional_call(fmod, fparams, (fx,)).sin().sum().backward()
    TF.functional_call(tmod, tparams, (tx,)).sin().sum().backward()
    close({k: v.grad for k, v in fparams.items()}, {k: v.grad for k, v in tparams.items()})
    assert all(p.grad is None for p in fmod.parameters())


def test_functional_call_validation_and_tied_weights_match_torch():
    fmod, tmod = _mlp_pair()
    fx, tx = pair(2, 3)
    fw = {"0.weight": fjax.zeros(4, 3, dtype=fjax.float64)}
    tw = {"0.weight": torch.zeros(4, 3, dtype=torch.float64)}
    same_error(
        lambda: FF.functional_call(fmod, fw, fx, strict=True), lambda: TF.functional_call(tmod, tw, tx, strict=True)
    )
    same_error(
        lambda: FF.functional_call(fmod, (fw, fw), fx), lambda: TF.functional_call(tmod, (tw, tw), tx), ValueError
    )
    ftied = fjax.nn.Sequential(fjax.nn.Linear(3, 3, bias=False), fjax.nn.Linear(3, 3, bias=False)).double()
    ttied = torch.nn.Sequential(torch.nn.Linear(3, 3, bias=False), torch.nn.Linear(3, 3, bias=False)).double()
    ftied[1].weight = ftied[0].weight
    ttied[1].weight = ttied[0].weight
    (fw0, tw0), (fz, tz) = pair(3, 3), pair(2, 3)
    close(FF.functional_call(ftied, {"0.weight": fw0}, fz), TF.functional_call(ttied, {"0.weight": tw0}, tz))
    (fw1, tw1) = pair(3, 3)
    same_error(
        lambda: FF.functional_call(ftied, {"0.weight": fw0, "1.weight": fw1}, fz),
        lambda: TF.functional_call(ttied, {"0.weight": tw0, "1.weight": tw1}, tz),
        ValueError,
    )


def test_dicts_keep_the_users_key_order():
    """JAX sorts a dict's keys in its pytrees; torch.func keeps them in insertion order."""
    a = np.random.default_rng(3).standard_normal((2, 3))
    fp = {"w": fjax.tensor(a[0]), "b": fjax.tensor(a[1])}
    tp = {"w": torch.tensor(a[0]), "b": torch.tensor(a[1])}

    def loss(p):
        return (p["w"] * p["b"]).sin().sum()

    def outs(p):
        return {"z": p["w"] * 2, "a": p["b"].exp()}

    cases = [
        (FF.grad(loss), TF.grad(loss)),
        (FF.jacrev(outs), TF.jacrev(outs)),
        (FF.jacfwd(outs), TF.jacfwd(outs)),
        (FF.vmap(outs, in_dims=({"w": 0, "b": None},)), TF.vmap(outs, in_dims=({"w": 0, "b": None},))),
    ]
    for f_fjax, f_torch in cases:
        got, want = f_fjax(fp), f_torch(tp)
        assert list(got) == list(want)
        for k in want:
            inner_got, inner_want = got[k], want[k]
            if isinstance(inner_want, dict):
                assert list(inner_got) == list(inner_want)
                inner_got, inner_want = inner_got["w"], inner_want["w"]
            np.testing.assert_allclose(inner_got.numpy(), inner_want.numpy(), rtol=1e-12)
    out, vjp_fn = FF.vjp(outs, fp)
    assert list(out) == ["z", "a"] and list(vjp_fn(out)[0]) == ["w", "b"]


def test_captured_parameters_are_differentiable_like_torch():
    """A module a transformed function captures: its parameters get gradients through the
    transform's result (vmap over a model; func.grad's output; jacobian with create_graph)."""
    tm = torch.nn.Linear(3, 2)
    fm = fjax.nn.Linear(3, 2)
    fm.weight.data, fm.bias.data = fjax.tensor(tm.weight.detach().numpy()), fjax.tensor(tm.bias.detach().numpy())
    a = np.random.default_rng(5).standard_normal((4, 3)).astype(np.float32)
    fx, tx = fjax.tensor(a), torch.tensor(a)
    cases = [
        (lambda m, x: FF.vmap(m)(x).pow(2).sum(), lambda m, x: TF.vmap(m)(x).pow(2).sum()),
        (
            lambda m, x: FF.grad(lambda v: m(v).tanh().sum())(x).pow(2).sum(),
            lambda m, x: TF.grad(lambda v: m(v).tanh().sum())(x).pow(2).sum(),
        ),
        (
            lambda m, x: FAF.jacobian(lambda v: m(v).sin(), x[0], create_graph=True).sum(),
            lambda m, x: torch.autograd.functional.jacobian(lambda v: m(v).sin(), x[0], create_graph=True).sum(),
        ),
    ]
    for f_fjax, f_torch in cases:
        fm.zero_grad()
        tm.zero_grad()
        f_fjax(fm, fx).backward()
        f_torch(tm, tx).backward()
        for fp, tp in ((fm.weight, tm.weight), (fm.bias, tm.bias)):
            np.testing.assert_allclose(fp.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-6)
    # without create_graph torch.autograd.functional detaches its results, captured or not
    assert not FAF.jacobian(lambda v: fm(v).sin(), fx[0]).requires_grad
