"""Autograd contracts against torch: what a custom Function's backward and a tensor hook may
return, and the errors torch raises otherwise (the wrong number of gradients, a gradient of the
wrong shape or a non-tensor, a gradient for a non-tensor input, a hook that changes the size or
dtype of the gradient, register_hook on a tensor that does not require grad).

Each variant runs in torch and in fjax on the same random inputs: the same error class and the
key part of torch's message when torch raises, the same ``.grad`` (values and dtype) when it
does not. A wrong shape is never broadcast into ``.grad``.
"""

import numpy as np
import pytest
import torch

import fjax

_RNG = np.random.default_rng(37)


def _fn(lib, fwd, bwd):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            return fwd(*args)

        @staticmethod
        def backward(ctx, g):
            return bwd(lib, g)

    return F


def _run(lib, fn, make_args):
    try:
        args, leaves = make_args(lib)
        fn(lib).apply(*args).sum().backward()
        return "ok", [None if t.grad is None else t.grad for t in leaves]
    except Exception as e:  # the comparison below needs the class and message
        return "err", e


def _compare(name, expect_msg, ft, tt):
    assert ft[0] == tt[0], f"{name}: fjax {ft[0]} {ft[1]!r}, torch {tt[0]} {tt[1]!r}"
    if tt[0] == "err":
        assert isinstance(ft[1], type(tt[1])), f"{name}: fjax raised {type(ft[1])}, torch {type(tt[1])}"
        for key in expect_msg:
            assert key in str(tt[1]), f"{name}: torch's message changed: {tt[1]}"
            assert key in str(ft[1]), f"{name}: {key!r} not in fjax's message {ft[1]}"
        return
    for fg, tg in zip(ft[1], tt[1]):
        if tg is None:
            # torch leaves .grad None when backward returns None; fjax accumulates zeros (the
            # engine's node-by-node walk has no "undefined" cotangent). Documented difference.
            assert fg is None or not np.asarray(fg.numpy()).any()
            continue
        assert fg is not None, name
        assert str(fg.dtype).split(".")[-1] == str(tg.dtype).split(".")[-1], name
        assert fg.shape == tuple(tg.shape), name
        np.testing.assert_allclose(np.asarray(fg.numpy()), tg.numpy(), rtol=1e-6, atol=1e-6, err_msg=name)


X = _RNG.standard_normal((2, 3)).astype(np.float32)
Y = _RNG.standard_normal((2, 3)).astype(np.float32)


def _one(lib):
    x = lib.tensor(X, requires_grad=True)
    return (x,), (x,)


def _two(lib):
    x, y = lib.tensor(X, requires_grad=True), lib.tensor(Y, requires_grad=True)
    return (x, y), (x, y)


def _int_and_tensor(lib):
    x = lib.tensor(X, requires_grad=True)
    return (3, x), (x,)


def _tensor_and_const(lib):
    x = lib.tensor(X, requires_grad=True)
    return (x, lib.tensor(Y)), (x,)


def _bcast_input(lib):
    x = lib.tensor(X[:1], requires_grad=True)  # (1, 3): a (2, 3) gradient sums down to it
    return (x,), (x,)


_WRONG_SHAPE = ["returned an invalid gradient at index", "but expected shape compatible with"]
_COUNT = ["returned an incorrect number of gradients (expected"]

# name: (args, forward, backward, key parts of torch's message when it raises)
FUNCTION_CASES = {
    "exact": (_one, lambda x: x * 2, lambda L, g: g * 2, []),
    "too_many_tensors": (_one, lambda x: x * 2, lambda L, g: (g, g), _COUNT),
    "too_many_trailing_none": (_one, lambda x: x * 2, lambda L, g: (g * 2, None, None), []),
    "too_few": (_two, lambda x, y: x * y, lambda L, g: (g,), _COUNT),
    "too_few_none": (_two, lambda x, y: x * y, lambda L, g: None, _COUNT),
    "wrong_shape_smaller": (_one, lambda x: x * 2, lambda L, g: g[:1], _WRONG_SHAPE),
    "wrong_shape_transposed": (_one, lambda x: x * 2, lambda L, g: g.t(), _WRONG_SHAPE),
    "wrong_shape_scalar": (_one, lambda x: x * 2, lambda L, g: g.sum(), _WRONG_SHAPE),
    "wrong_shape_flat": (_one, lambda x: x * 2, lambda L, g: g.reshape(6), _WRONG_SHAPE),
    "wrong_shape_second": (_two, lambda x, y: x * y, lambda L, g: (g, g[0]), _WRONG_SHAPE + ["index 1 "]),
    "wrong_shape_after_int": (_int_and_tensor, lambda k, x: x * k, lambda L, g: (None, g[:1]), ["index 0 "]),
    "bigger_expandable_sums": (_one, lambda x: x * 2, lambda L, g: g.expand(4, 2, 3), []),
    "broadcast_dim_sums": (_bcast_input, lambda x: x.expand(2, 3) * 1, lambda L, g: g, []),
    "bigger_not_expandable": (_one, lambda x: x * 2, lambda L, g: L.ones(2, 4), _WRONG_SHAPE),
    "dtype_float64_cast": (_one, lambda x: x * 2, lambda L, g: g.double() * 3, []),
    "dtype_int_cast": (_one, lambda x: x * 2, lambda L, g: (g * 4).long(), []),
    "dtype_complex_for_real": (_one, lambda x: x * 2, lambda L, g: g.to(L.complex64), []),
    "none": (_one, lambda x: x * 2, lambda L, g: None, []),
    "none_for_one_of_two": (_two, lambda x, y: x * y, lambda L, g: (None, g), []),
    "python_number": (_one, lambda x: x * 2, lambda L, g: 1.0, ["expected Variable or None (got float)"]),
    "list": (_one, lambda x: x * 2, lambda L, g: [g], ["expected Variable or None (got list)"]),
    "grad_for_int_input": (
        _int_and_tensor,
        lambda k, x: x * k,
        lambda L, g: (g, g),
        ["returned a gradient different than None at position 1", "forward input was not a Variable"],
    ),
    "grad_for_const_tensor_ignored": (_tensor_and_const, lambda x, c: x * c, lambda L, g: (g, g[:1]), []),
}


@pytest.mark.parametrize("name", sorted(FUNCTION_CASES))
def test_function_backward_contract(name):
    make_args, fwd, bwd, msg = FUNCTION_CASES[name]
    if name == "dtype_complex_for_real":
        # torch raises an internal check ("Expected isFloatingType(grad.scalar_type()) || ...");
        # fjax raises the same class with a message naming the Function and the dtypes
        tt = _run(torch, lambda L: _fn(L, fwd, bwd), make_args)
        ft = _run(fjax, lambda L: _fn(L, fwd, bwd), make_args)
        assert tt[0] == ft[0] == "err" and type(tt[1]) is RuntimeError and isinstance(ft[1], RuntimeError)
        assert "FBackward returned an invalid gradient at index 0" in str(ft[1]) and "complex64" in str(ft[1])
        return
    tt = _run(torch, lambda L: _fn(L, fwd, bwd), make_args)
    ft = _run(fjax, lambda L: _fn(L, fwd, bwd), make_args)
    _compare(name, msg, ft, tt)


def test_function_wrong_shape_message_names_shapes():
    F = _fn(fjax, lambda x: x * 2, lambda L, g: g[:1])
    x = fjax.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"FBackward returned an invalid gradient at index 0 - got \[1, 3\] but"):
        F.apply(x).sum().backward()
    assert x.grad is None  # nothing was broadcast into .grad


def test_function_contract_inside_functional_grad():
    """The traced path (fjax.func.grad runs the Function as a jax.custom_vjp) checks the same."""
    bad = _fn(fjax, lambda x: x * 2, lambda L, g: g[:1])
    good = _fn(fjax, lambda x: x * 2, lambda L, g: g.expand(5, 2, 3))
    x = fjax.tensor(X)
    with pytest.raises(RuntimeError, match="expected shape compatible with"):
        fjax.func.grad(lambda t: bad.apply(t).sum())(x)
    g = fjax.func.grad(lambda t: good.apply(t).sum())(x)
    np.testing.assert_allclose(np.asarray(g.numpy()), np.full((2, 3), 5.0))


# -- tensor hooks -------------------------------------------------------------------------------

_SIZE = ["has changed the size of value"]
_TYPE = ["has changed the type of value"]

HOOK_CASES = {
    "same": (lambda L, g: g * 3, []),
    "none": (lambda L, g: None, []),
    "smaller": (lambda L, g: g[:1], _SIZE),
    "expandable": (lambda L, g: g.expand(2, 2, 3), _SIZE),
    "scalar": (lambda L, g: g.sum(), _SIZE),
    "transposed": (lambda L, g: g.t(), _SIZE),
    "float64": (lambda L, g: g.double(), _TYPE),
    "int64": (lambda L, g: g.long(), _TYPE),
    "number": (lambda L, g: 1.0, ["expected Variable, but hook returned 'float'"]),
}


def _hook_run(lib, where, ret):
    try:
        x = lib.tensor(X, requires_grad=True)
        if where == "leaf":
            x.register_hook(lambda g: ret(lib, g))
            (x * 2).sum().backward()
        else:
            y = x * 2
            y.register_hook(lambda g: ret(lib, g))
            (y * y).sum().backward()
        return "ok", [x.grad]
    except Exception as e:
        return "err", e


@pytest.mark.parametrize("where", ["leaf", "nonleaf"])
@pytest.mark.parametrize("name", sorted(HOOK_CASES))
def test_tensor_hook_contract(where, name):
    ret, msg = HOOK_CASES[name]
    _compare(
        f"{where}:{name}",
        msg + (["hook '<lambda>'"] if msg and msg[0].startswith("has") else []),
        _hook_run(fjax, where, ret),
        _hook_run(torch, where, ret),
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda L: L.tensor(X),
        lambda L: L.tensor(X) * 2,
        lambda L: L.tensor([1, 2]),
        lambda L: L.tensor(X, requires_grad=True).detach(),
    ],
)
def test_register_hook_needs_requires_grad(make):
    for lib in (torch, fjax):
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
            make(lib).register_hook(lambda g: g)
