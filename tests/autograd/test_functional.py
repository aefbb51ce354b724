"""fjax.autograd.functional against torch.autograd.functional: values, structures, create_graph,
strict mode, validation messages, modules, and the compile cache.

Set FJAX_TEST_SEED to replay a failure (the seed is in every failure message).
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch
import torch.autograd.functional as TAF

import fjax
import fjax.autograd.functional as FAF
import fjax.nn
from fjax._transforms import executable

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))
rng = np.random.default_rng(SEED)


def pair(*shape, dtype="float64", requires_grad=False):
    a = rng.standard_normal(shape).astype(dtype)
    return fjax.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def close(f, t, rtol=1e-7, atol=1e-9, what=""):
    """Compare a (nested tuple of) fjax result(s) with torch's, structure included.

    torch's forward-mode jacobian returns lists where its docs (and fjax) say tuples.
    """
    if isinstance(t, (tuple, list)):
        assert isinstance(f, tuple) and len(f) == len(t), f"{what}: structure {type(f)} vs torch {t!r} (seed={SEED})"
        for i, (a, b) in enumerate(zip(f, t)):
            close(a, b, rtol, atol, f"{what}[{i}]")
        return
    assert isinstance(f, fjax.Tensor), f"{what}: got {type(f)} (seed={SEED})"
    a, b = np.asarray(f.detach()._data), t.detach().numpy()
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape} (seed={SEED})"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs torch {b.dtype} (seed={SEED})"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"{what} (seed={SEED})")


def leaves(x):
    return [e for item in x for e in leaves(item)] if isinstance(x, tuple) else [x]


# Each case: a function written once for both libraries (lib = fjax or torch), input shapes,
# whether inputs are a tuple. Scalar cases feed hessian/hvp/vhp.
def s_one(lib):
    return lambda x: (lib.sin(x) * x.exp()).sum() + (x**3).sum() * 0.5


def s_two(lib):
    return lambda x, y: (lib.tanh(x) * (y**2).sum() + x.exp() * lib.sin(y.transpose(0, 1) @ y).sum(0)).sum()


def v_one(lib):
    return lambda x: (lib.sin(x) * x).exp() * 2.0


def v_two(lib):
    return lambda x, y: (x * y.sum(), lib.cos(x) + y[0] ** 2)


SCALAR = {"one": (s_one, [(4,)], False), "two": (s_two, [(3,), (2, 3)], True)}
VECTOR = {"one": (v_one, [(4,)], False), "two": (v_two, [(3,), (2, 3)], True), "tuple_of_one": (v_one, [(5,)], True)}


def make(case, requires_grad=False, dtype="float64"):
    fn, shapes, is_tuple = case
    pairs = [pair(*s, dtype=dtype, requires_grad=requires_grad) for s in shapes]
    fx, tx = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    if not is_tuple:
        fx, tx = fx[0], tx[0]
    return fn(fjax), fn(torch), fx, tx


def like(x, requires_grad=False):
    """A random (fjax, torch) pair shaped like ``x`` (a tensor or a tuple of them)."""
    if isinstance(x, tuple):
        ps = [like(e, requires_grad) for e in x]
        return tuple(p[0] for p in ps), tuple(p[1] for p in ps)
    return pair(*x.shape, requires_grad=requires_grad)


# -- values and structures -----------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(VECTOR))
def test_vjp_and_jvp_match_torch(name):
    ff, tf, fx, tx = make(VECTOR[name])
    tout = tf(*tx) if isinstance(tx, tuple) else tf(tx)
    fv, tv = like(tout)
    close(FAF.vjp(ff, fx, fv), TAF.vjp(tf, tx, tv), what="vjp")
    fu, tu = like(tx)
    close(FAF.jvp(ff, fx, fu), TAF.jvp(tf, tx, tu), what="jvp")


def test_vjp_and_jvp_default_v_for_single_elements():
    fx, tx = pair(1)
    close(FAF.vjp(lambda x: (x * 3.0).exp().sum(), fx), TAF.vjp(lambda x: (x * 3.0).exp().sum(), tx))
    close(FAF.jvp(lambda x: x.sin() * x, fx), TAF.jvp(lambda x: x.sin() * x, tx))


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_hvp_and_vhp_match_torch(name):
    ff, tf, fx, tx = make(SCALAR[name])
    fv, tv = like(tx)
    close(FAF.hvp(ff, fx, fv), TAF.hvp(tf, tx, tv), what="hvp")
    close(FAF.vhp(ff, fx, fv), TAF.vhp(tf, tx, tv), what="vhp")


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
@pytest.mark.parametrize("name", sorted(VECTOR))
def test_jacobian_matches_torch(name, strategy):
    ff, tf, fx, tx = make(VECTOR[name])
    expected = TAF.jacobian(tf, tx, vectorize=True, strategy=strategy)  # torch's forward mode needs vectorize
    for vectorize in (False, True):
        close(FAF.jacobian(ff, fx, vectorize=vectorize, strategy=strategy), expected, what=f"vectorize={vectorize}")


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
@pytest.mark.parametrize("name", sorted(SCALAR))
def test_hessian_matches_torch(name, strategy):
    ff, tf, fx, tx = make(SCALAR[name])
    expected = TAF.hessian(tf, tx, vectorize=True, outer_jacobian_strategy=strategy)
    close(FAF.hessian(ff, fx, outer_jacobian_strategy=strategy), expected)
    close(FAF.hessian(ff, fx, vectorize=True, outer_jacobian_strategy=strategy), expected)


def test_float32_and_mixed_dtypes_follow_torch():
    fx, tx = pair(3, dtype="float32")
    fw, tw = pair(3, dtype="float64")
    ff = lambda x: x.exp() * fw  # noqa: E731 - float32 input, float64 output
    tf = lambda x: x.exp() * tw  # noqa: E731
    tol = dict(rtol=1e-5, atol=1e-6)
    close(FAF.jacobian(ff, fx), TAF.jacobian(tf, tx), **tol)
    close(
        FAF.jacobian(ff, fx, strategy="forward-mode"),
        TAF.jacobian(tf, tx, vectorize=True, strategy="forward-mode"),
        **tol,
    )
    close(FAF.hessian(lambda x: (x**3).sum(), fx), TAF.hessian(lambda x: (x**3).sum(), tx), **tol)


def test_results_are_detached_without_create_graph():
    fx, _ = pair(3, requires_grad=True)
    out, res = FAF.vjp(lambda x: x.exp(), fx, fjax.ones(3, dtype=fjax.float64))
    assert not out.requires_grad and not res.requires_grad
    assert not FAF.hessian(lambda x: (x**3).sum(), fx).requires_grad


# -- create_graph: results on the tape, differentiated again -----------------------------------
@pytest.mark.parametrize("name", sorted(SCALAR))
def test_second_order_through_hvp_and_vhp_matches_torch(name):
    ff, tf, fx, tx = make(SCALAR[name], requires_grad=True)
    fv, tv = like(tx, requires_grad=True)
    for fname in ("hvp", "vhp"):
        fout, fres = getattr(FAF, fname)(ff, fx, fv, create_graph=True)
        tout, tres = getattr(TAF, fname)(tf, tx, tv, create_graph=True)
        fl, tl = leaves(fres), leaves(tres)
        assert all(r.requires_grad for r in fl) and fout.requires_grad
        floss = sum(((r * r).sum() for r in fl), fout * 0.5)
        tloss = sum(((r * r).sum() for r in tl), tout * 0.5)
        wrt_f, wrt_t = (*leaves(fx), *leaves(fv)), (*leaves(tx), *leaves(tv))
        close(fjax.autograd.grad(floss, wrt_f), torch.autograd.grad(tloss, wrt_t), what=f"grad of {fname}")


def test_second_order_through_vjp_jvp_jacobian_hessian():
    fx, tx = pair(4, requires_grad=True)
    fv, tv = pair(4, requires_grad=True)
    ff, tf = v_one(fjax), v_one(torch)
    for fname, fargs, targs in [
        ("vjp", (fv,), (tv,)),
        ("jvp", (fv,), (tv,)),
        ("jacobian", (), ()),
    ]:
        fres = getattr(FAF, fname)(ff, fx, *fargs, create_graph=True)
        tres = getattr(TAF, fname)(tf, tx, *targs, create_graph=True)
        fl, tl = leaves(fres), leaves(tres)
        floss, tloss = sum((r.sin().sum() for r in fl), 0.0), sum((r.sin().sum() for r in tl), 0.0)
        wrt_f, wrt_t = (fx, *fargs), (tx, *targs)
        close(fjax.autograd.grad(floss, wrt_f), torch.autograd.grad(tloss, wrt_t), what=f"grad of {fname}")
    fh = FAF.hessian(s_one(fjax), fx, create_graph=True)
    th = TAF.hessian(s_one(torch), tx, create_graph=True)
    fh.pow(2).sum().backward()
    th.pow(2).sum().backward()
    close(fx.grad, tx.grad, what="backward through hessian")


def test_create_graph_third_order_through_autograd_grad():
    fx, tx = pair(3, requires_grad=True)
    fv, tv = pair(3)
    _, fres = FAF.hvp(s_one(fjax), fx, fv, create_graph=True)
    _, tres = TAF.hvp(s_one(torch), tx, tv, create_graph=True)
    (fg,) = fjax.autograd.grad(fres.sum(), fx, create_graph=True)
    (tg,) = torch.autograd.grad(tres.sum(), tx, create_graph=True)
    close(fg, tg)
    close(fjax.autograd.grad((fg * fg).sum(), fx), torch.autograd.grad((tg * tg).sum(), tx))


# -- strict mode ---------------------------------------------------------------------------
def _same_error(fcall, tcall, exc=RuntimeError):
    with pytest.raises(exc) as t_err:
        tcall()
    with pytest.raises(exc) as f_err:
        fcall()
    expected = str(t_err.value).replace("torch.", "fjax.")
    assert str(f_err.value) == expected, f"fjax: {f_err.value}\ntorch: {expected}"


def _both(fname, fn, shapes, with_v, **kwargs):
    """(fjax call, torch call) of ``fname`` on fresh inputs (and v) of ``shapes`` (a tuple if several)."""
    pairs = [pair(*s) for s in shapes]
    vpairs = [pair(*s) for s in shapes]
    fx, tx = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    fv, tv = tuple(p[0] for p in vpairs), tuple(p[1] for p in vpairs)
    if len(shapes) == 1:
        fx, tx, fv, tv = fx[0], tx[0], fv[0], tv[0]
    fargs, targs = ((fv,), (tv,)) if with_v else ((), ())
    return (
        lambda: getattr(FAF, fname)(fn(fjax), fx, *fargs, **kwargs),
        lambda: getattr(TAF, fname)(fn(torch), tx, *targs, **kwargs),
    )


STRICT_ERRORS = {
    # output independent of the input
    "vjp_output": ("vjp", lambda lib: lambda x: lib.ones(3, dtype=lib.float64), [(3,)], True),
    "jvp_output": ("jvp", lambda lib: lambda x: lib.ones(3, dtype=lib.float64), [(3,)], True),
    # an input no output depends on
    "vjp_input": ("vjp", lambda lib: lambda x, y: (x * y.sum(), x.exp()), [(3,), (2,)], False),
    "jvp_input": ("jvp", lambda lib: lambda x, y: x.exp(), [(3,), (2,)], True),
    "jacobian_pair": ("jacobian", lambda lib: lambda x, y: (x.exp(), y.sin() * x.sum()), [(3,), (2,)], False),
    # the gradient is independent of the input (linear function)
    "hessian_linear": ("hessian", lambda lib: lambda x: (x * 2.0).sum(), [(3,)], False),
    "hessian_pair": ("hessian", lambda lib: lambda x, y: (x * x * x).sum() + (y * y * y).sum(), [(3,), (2,)], False),
    "vhp_linear": ("vhp", lambda lib: lambda x: (x * 2.0).sum(), [(3,)], True),
    "hvp_linear": ("hvp", lambda lib: lambda x: (x * 2.0).sum(), [(3,)], True),
    "vhp_unused": ("vhp", lambda lib: lambda x, y: (x * x * x).sum(), [(3,), (2,)], True),
}


@pytest.mark.parametrize("case", sorted(STRICT_ERRORS))
def test_strict_errors_match_torch(case):
    fname, fn, shapes, with_v = STRICT_ERRORS[case]
    _same_error(*_both(fname, fn, shapes, with_v, strict=True))


@pytest.mark.parametrize(
    "fname,fn,v",
    [
        ("vjp", lambda lib: lambda x: x * 3.0, True),  # linear: the vjp is independent of x
        ("jacobian", lambda lib: lambda x: x * 3.0, False),
        # quadratic: constant hessian (x * x: fjax's x**2 passes 2 as a traced exponent, so its
        # hessian structurally depends on x through x**0)
        ("hessian", lambda lib: lambda x: (x * x).sum(), False),
        ("hvp", lambda lib: lambda x: (x * x).sum(), True),
    ],
)
def test_strict_create_graph_errors_match_torch(fname, fn, v):
    fx, tx = pair(3, requires_grad=True)
    fv, tv = pair(3)
    fargs, targs = ((fv,), (tv,)) if v else ((), ())
    _same_error(
        lambda: getattr(FAF, fname)(fn(fjax), fx, *fargs, create_graph=True, strict=True),
        lambda: getattr(TAF, fname)(fn(torch), tx, *targs, create_graph=True, strict=True),
    )


def test_independent_inputs_give_zeros_without_strict():
    fx, tx = pair(3)
    fy, ty = pair(2)
    fv, tv = pair(3)
    close(FAF.vjp(lambda x, y: x.exp(), (fx, fy), fv), TAF.vjp(lambda x, y: x.exp(), (tx, ty), tv))
    close(FAF.hessian(lambda x, y: (x**3).sum(), (fx, fy)), TAF.hessian(lambda x, y: (x**3).sum(), (tx, ty)))
    close(
        FAF.jacobian(lambda x: fjax.ones(2, dtype=fjax.float64), fx),
        TAF.jacobian(lambda x: torch.ones(2, dtype=torch.float64), tx),
    )


def test_strict_passes_for_dependent_functions():
    fx, tx = pair(3)
    fv, tv = pair(3)
    close(FAF.hvp(s_one(fjax), fx, fv, strict=True), TAF.hvp(s_one(torch), tx, tv, strict=True))
    close(FAF.jacobian(v_one(fjax), fx, strict=True), TAF.jacobian(v_one(torch), tx, strict=True))


# -- validation ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "case",
    ["inputs_list", "inputs_item", "v_length", "v_size", "v_none", "outputs_list", "hessian_tuple", "hessian_numel"],
)
def test_validation_matches_torch(case):
    fx, tx = pair(3)
    (fy, ty), (fv, tv) = pair(3), pair(2)
    calls = {
        "inputs_list": ("vjp", lambda lib: lambda x: x, lambda f, t: ([f], [t]), {}, TypeError),
        "inputs_item": ("jacobian", lambda lib: lambda x: x, lambda f, t: ((f, 2.0), (t, 2.0)), {}, TypeError),
        "v_length": ("jvp", lambda lib: lambda x, y: x, lambda f, t: ((f, fy), (t, ty)), {"v": "len"}, RuntimeError),
        "v_size": ("vjp", lambda lib: lambda x: x, lambda f, t: (f, t), {"v": "size"}, RuntimeError),
        "v_none": ("vhp", lambda lib: lambda x: x.sum(), lambda f, t: (f, t), {}, RuntimeError),
        "outputs_list": ("vjp", lambda lib: lambda x: [x], lambda f, t: (f, t), {"v": "ok"}, TypeError),
        "hessian_tuple": ("hessian", lambda lib: lambda x: (x.sum(),), lambda f, t: (f, t), {}, RuntimeError),
        "hessian_numel": ("hessian", lambda lib: lambda x: x, lambda f, t: (f, t), {}, RuntimeError),
    }
    fname, fn, make_inputs, opts, exc = calls[case]
    fin, tin = make_inputs(fx, tx)
    vs = {"len": ((fy,), (ty,)), "size": (fv, tv), "ok": (fy, ty)}
    fargs, targs = ((vs[opts["v"]][0],), (vs[opts["v"]][1],)) if "v" in opts else ((), ())
    _same_error(
        lambda: getattr(FAF, fname)(fn(fjax), fin, *fargs), lambda: getattr(TAF, fname)(fn(torch), tin, *targs), exc
    )


def test_bad_strategy_and_dtype_errors():
    fx, tx = pair(3)
    _same_error(
        lambda: FAF.jacobian(lambda x: x, fx, strategy="sideways"),
        lambda: TAF.jacobian(lambda x: x, tx, strategy="sideways"),
        AssertionError,
    )
    with pytest.raises(RuntimeError, match="jacobian: input 0 has dtype"):
        FAF.jacobian(lambda x: x * 2, fjax.arange(3))
    with pytest.raises(RuntimeError, match="hessian: output 0 .* dtype fjax.int64"):
        FAF.hessian(lambda x: x.sum().long(), fx)


def test_host_reads_inside_the_function_raise_a_clear_error():
    fx, _ = pair(3)
    with pytest.raises(fjax.OpError, match="functional.jacobian: the function reads a tensor's value"):
        FAF.jacobian(lambda x: x * float(x.sum()), fx)


# -- modules ----------------------------------------------------------------------------------
def _mlp_pair():
    tmod = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2)).double()
    fmod = fjax.nn.Sequential(fjax.nn.Linear(4, 6), fjax.nn.Tanh(), fjax.nn.Linear(6, 2)).double()
    fmod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})
    return fmod, tmod


def test_functions_of_modules_differentiate_parameters_like_torch():
    """Derivatives are w.r.t. the inputs; with create_graph=True the results also carry the
    captured parameters' history, so a backward through them fills the parameters' .grad."""
    fmod, tmod = _mlp_pair()
    fx, tx = pair(4)
    close(FAF.jacobian(fmod, fx), TAF.jacobian(tmod, tx), what="jacobian")
    fl = lambda x: (fmod(x) ** 2).sum()  # noqa: E731
    tl = lambda x: (tmod(x) ** 2).sum()  # noqa: E731
    close(FAF.hessian(fl, fx), TAF.hessian(tl, tx), what="hessian")
    assert all(p.grad is None for p in fmod.parameters())
    fv, tv = pair(4, requires_grad=True)
    fx.requires_grad_()
    tx.requires_grad_()
    _, fres = FAF.hvp(fl, fx, fv, create_graph=True)
    _, tres = TAF.hvp(tl, tx, tv, create_graph=True)
    fres.sum().backward()
    tres.sum().backward()
    for (name, fp), tp in zip(fmod.named_parameters(), tmod.parameters()):
        close(fp.grad, tp.grad, what=f"{name}.grad")
    close(fx.grad, tx.grad, what="x.grad")
    close(fv.grad, tv.grad, what="v.grad")


# -- the compile cache -------------------------------------------------------------------------
def _executables():
    return sum(e.jit._cache_size() for e in executable._cache.entries.values())


def test_fresh_identical_lambdas_do_not_recompile():
    fw, tw = pair(4, 4)
    fx, tx = pair(4)
    FAF.cache_clear()
    for _ in range(3):
        res = FAF.hessian(lambda x: fjax.tanh(fw @ fjax.tanh(fw @ x)).sum(), fx)
    close(res, TAF.hessian(lambda x: torch.tanh(tw @ torch.tanh(tw @ x)).sum(), tx))
    info = FAF.cache_info()
    assert (info.misses, info.hits, info.currsize) == (1, 2, 1), info
    assert _executables() == 1


def test_new_captured_values_and_scalars_reuse_the_executable():
    fw, _ = pair(4, 4)
    fx, tx = pair(4)
    FAF.cache_clear()
    for step in range(3):
        w = rng.standard_normal((4, 4))
        fw.data = fjax.tensor(w)  # an optimizer step: same shapes, new values
        scale = 1.5 + step  # a Python scalar captured by the lambda
        res = FAF.jacobian(lambda x: fjax.tanh(x @ fw) * scale, fx)  # noqa: B023 - captured on purpose
        expected = TAF.jacobian(lambda x: torch.tanh(x @ torch.tensor(w)) * scale, tx)  # noqa: B023
        close(res, expected, what=f"step {step}")
    assert FAF.cache_info().misses == 1 and _executables() == 1
    FAF.jacobian(lambda x: fjax.tanh(x @ fw) * 2.0, pair(3, 4)[0])  # new shapes: new entry
    FAF.jacobian(lambda x: fjax.sin(x @ fw) * 2.0, fx)  # new program: new entry
    assert FAF.cache_info().misses == 3


def test_random_draws_inside_the_function_are_fresh_each_call():
    fx, _ = pair(5)
    FAF.cache_clear()
    first = FAF.jacobian(lambda x: x * fjax.rand(5, dtype=fjax.float64), fx)
    second = FAF.jacobian(lambda x: x * fjax.rand(5, dtype=fjax.float64), fx)
    assert not np.allclose(first.numpy(), second.numpy()), f"seed={SEED}"
    assert FAF.cache_info().misses == 1


def test_inside_nn_graph():
    from fjax.graph import Graph

    fmod, tmod = _mlp_pair()
    fx, tx = pair(4)
    fv, tv = pair(4)

    class Analysis(Graph):
        def __init__(self):
            super().__init__()
            self.model = fmod

        def build(self, x, v):
            loss = lambda x: (self.model(x) ** 2).sum()  # noqa: E731
            return FAF.hessian(loss, x), FAF.hvp(loss, x, v)[1], FAF.jacobian(self.model, x)

    tl = lambda x: (tmod(x) ** 2).sum()  # noqa: E731
    expected = (TAF.hessian(tl, tx), TAF.hvp(tl, tx, tv)[1], TAF.jacobian(tmod, tx))
    graph = Analysis()
    for _ in range(2):  # the second call reuses the graph's executable
        close(graph(fx, fv), expected)


class _FakeCube:
    """x**3 * k whose backward is deliberately 2 k x**2 (not the true derivative), so a transform
    that differentiates ``forward`` instead of calling ``backward`` gives different numbers."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x**3 * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x**2 * ctx.k, None


FFakeCube = type("FFakeCube", (fjax.autograd.Function,), dict(vars(_FakeCube)))
TFakeCube = type("TFakeCube", (torch.autograd.Function,), dict(vars(_FakeCube)))


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("jvp", {}),
        ("vjp", {}),
        ("jacobian", {}),
        ("jacobian", {"strategy": "forward-mode", "vectorize": True}),
        ("hessian", {}),
        ("hessian", {"outer_jacobian_strategy": "forward-mode", "vectorize": True}),
        ("hvp", {}),
        ("vhp", {}),
    ],
)
def test_custom_function_backward_is_used(name, kwargs):
    fx, tx = pair(4)
    fv, tv = pair(4)
    scalar = name in ("hessian", "hvp", "vhp")

    def body(cube):
        def f(x):
            y = cube.apply(x, 2.0).sin()
            return y.sum() if scalar else y

        return f

    args_f = (body(FFakeCube), fx) + ((fv,) if name not in ("jacobian", "hessian") else ())
    args_t = (body(TFakeCube), tx) + ((tv,) if name not in ("jacobian", "hessian") else ())
    # torch's forward-mode strategies need a jvp staticmethod; fjax falls back to reverse mode,
    # which gives the same numbers, so compare with torch's reverse mode there.
    expected = getattr(TAF, name)(*args_t, **({} if "vectorize" in kwargs else kwargs))
    close(getattr(FAF, name)(*args_f, **kwargs), expected, what=name)


def test_custom_function_in_fjax_func():
    import fjax.func as FF

    fx, tx = pair(4)
    grad = FF.grad(lambda x: FFakeCube.apply(x, 2.0).sum())(fx)
    _, expected = TAF.vjp(lambda x: TFakeCube.apply(x, 2.0).sum(), tx)
    close(grad, expected, what="grad")
    per_example = FF.vmap(FF.grad(lambda x: FFakeCube.apply(x, 2.0).sum()))(fjax.stack([fx, fx]))
    close(per_example[1], expected, what="vmap(grad)")
    with pytest.raises(RuntimeError, match="custom fjax.autograd.Function.*no forward-mode"):
        FF.jvp(lambda x: FFakeCube.apply(x, 2.0), (fx,), (fx,))
    with pytest.raises(RuntimeError, match="fjax.func.jacfwd: the function calls a custom"):
        FF.jacfwd(lambda x: FFakeCube.apply(x, 2.0))(fx)


class _Dropout(fjax.autograd.Function):
    """Dropout whose backward reuses the saved mask: outputs and gradients must agree."""

    @staticmethod
    def forward(ctx, x):
        mask = (fjax.rand(*x.shape, dtype=x.dtype) > 0.5).to(x.dtype) * 2
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return g * mask


def test_custom_function_drawing_random_numbers_keeps_outputs_and_saved_tensors_together():
    fx, _ = pair(64)
    out, grad = FAF.vjp(lambda x: _Dropout.apply(x), fx, fjax.ones(64, dtype=fjax.float64))
    np.testing.assert_allclose(out.numpy(), fx.numpy() * grad.numpy(), err_msg=f"seed={SEED}")
    assert 0 < (grad.numpy() == 0).sum() < 64
