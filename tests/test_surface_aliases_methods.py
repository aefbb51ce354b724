"""torch's op aliases, top-level in-place functions and the smaller Tensor methods/properties, against
torch 2.13 on fresh random inputs (set FJAX_TEST_SEED to replay a failure)."""

from __future__ import annotations

import inspect
import operator
import os
import random

import numpy as np
import pytest
import torch

import fjax
from fjax.ops._registry import ALIASES, OPS

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))


def _rng(salt=0):
    return np.random.default_rng(SEED + salt)


def _pair(a, requires_grad=False):
    t = torch.tensor(a, requires_grad=requires_grad)
    f = fjax.tensor(a, requires_grad=requires_grad)
    return f, t


def _close(f, t, **kw):
    if isinstance(t, (tuple, list)):
        assert len(f) == len(t)
        for a, b in zip(f, t):
            _close(a, b, **kw)
        return
    if not isinstance(t, torch.Tensor):
        assert f == t
        return
    assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (f.dtype, t.dtype)
    assert tuple(f.shape) == tuple(t.shape), (f.shape, t.shape)
    np.testing.assert_allclose(np.asarray(f.detach().numpy()), t.detach().numpy(), rtol=1e-5, atol=1e-6, **kw)


# alias -> (the inputs' value range, the number of tensor arguments, positive only)
UNARY = {
    "absolute": (-2, 2),
    "arccos": (-0.9, 0.9),
    "arccosh": (1.1, 3),
    "arcsin": (-0.9, 0.9),
    "arcsinh": (-2, 2),
    "arctan": (-2, 2),
    "arctanh": (-0.9, 0.9),
    "negative": (-2, 2),
    "fix": (-3, 3),
}
BINARY = ["arctan2", "multiply", "subtract", "divide", "ger"]
COMPARE = ["greater", "greater_equal", "less", "less_equal", "not_equal"]


def test_alias_table():
    # every alias is one name of one op, never a second table entry, and is exposed as a function
    assert not set(ALIASES) & set(OPS)
    for alias, name in ALIASES.items():
        fn = getattr(fjax, alias)
        assert fn.__name__ == alias and fn.alias_of == name
        assert f"Alias of :func:`fjax.{name}`" in fn.__doc__
        assert inspect.signature(fn) == inspect.signature(getattr(fjax, name))
        assert fn.__code__ is getattr(fjax, name).__code__  # the same function, renamed
        if OPS[name].method:
            assert getattr(fjax.Tensor, alias) is fn


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_alias(name):
    lo, hi = UNARY[name]
    a = _rng(1).uniform(lo, hi, (3, 4)).astype(np.float32)
    f, t = _pair(a, requires_grad=name != "fix")
    fo, to = getattr(fjax, name)(f), getattr(torch, name)(t)
    _close(fo, to)
    _close(getattr(f, name)(), getattr(t, name)())
    if name != "fix":
        fo.sum().backward()
        to.sum().backward()
        _close(f.grad, t.grad)
    # in place on a view changes its base, as in torch
    fb, tb = _pair(a)
    getattr(fb[1], name + "_")()
    getattr(tb[1], name + "_")()
    _close(fb, tb)


@pytest.mark.parametrize("name", BINARY)
def test_binary_alias(name):
    shape = (4,) if name == "ger" else (3, 4)
    a = _rng(2).uniform(0.5, 2, shape).astype(np.float32)
    b = _rng(3).uniform(0.5, 2, shape).astype(np.float32)
    (fa, ta), (fb, tb) = _pair(a, True), _pair(b, True)
    fo, to = getattr(fjax, name)(fa, fb), getattr(torch, name)(ta, tb)
    _close(fo, to)
    fo.sum().backward()
    to.sum().backward()
    _close(fa.grad, ta.grad)
    _close(fb.grad, tb.grad)
    _close(getattr(fa.detach(), name)(fb.detach()), getattr(ta.detach(), name)(tb.detach()))
    if name == "subtract":
        _close(fjax.subtract(fa, fb, alpha=2), torch.subtract(ta, tb, alpha=2))
    if name == "divide":
        _close(fjax.divide(fa, fb, rounding_mode="floor"), torch.divide(ta, tb, rounding_mode="floor"))
    if hasattr(torch.Tensor, name + "_"):
        fx, tx = _pair(a)
        getattr(fx[0], name + "_")(fjax.tensor(b[0]))
        getattr(tx[0], name + "_")(torch.tensor(b[0]))
        _close(fx, tx)


@pytest.mark.parametrize("name", COMPARE)
def test_compare_alias(name):
    a = _rng(4).integers(0, 3, (3, 4)).astype(np.float32)
    b = _rng(5).integers(0, 3, (4,)).astype(np.float32)
    (fa, ta), (fb, tb) = _pair(a), _pair(b)
    _close(getattr(fjax, name)(fa, fb), getattr(torch, name)(ta, tb))
    _close(getattr(fa, name)(1.0), getattr(ta, name)(1.0))
    getattr(fa, name + "_")(fb)
    getattr(ta, name + "_")(tb)
    _close(fa, ta)


def test_converted_aliases():
    a = _rng(6).normal(size=(2, 3, 4)).astype(np.float32)
    f, t = _pair(a)
    _close(fjax.clip(f, -0.5, 0.5), torch.clip(t, -0.5, 0.5))
    _close(f.swapdims(0, 2), t.swapdims(0, 2))
    _close(fjax.moveaxis(f, 0, -1), torch.moveaxis(t, 0, -1))
    # views of the input, as in torch
    for x in (f, t):
        x.swapdims(0, 1)[0, 1, 2] = 7.0
    assert f[1, 0, 2].item() == 7.0
    f.swapdims_(0, 1)
    t.swapdims_(0, 1)
    _close(f, t)
    f[1].clip_(max=0.1)
    t[1].clip_(max=0.1)
    _close(f, t)


@pytest.mark.parametrize("op", ["bitwise_left_shift", "bitwise_right_shift"])
def test_shifts(op):
    rng = _rng(7)
    for dtype in ("int8", "int32", "int64", "uint8"):
        lo = 0 if dtype == "uint8" else -100
        a = rng.integers(lo, 100, (3, 4)).astype(dtype)
        b = rng.integers(-2, 10, (4,)).astype(dtype if dtype != "uint8" else "uint8")
        (fa, ta), (fb, tb) = _pair(a), _pair(b)
        _close(getattr(fjax, op)(fa, fb), getattr(torch, op)(ta, tb))
        _close(getattr(fa, op)(3), getattr(ta, op)(3))
    left = op == "bitwise_left_shift"
    shift, ishift = (operator.lshift, operator.ilshift) if left else (operator.rshift, operator.irshift)
    fa, ta = _pair(rng.integers(-50, 50, (5,)))
    _close(shift(fa, 2), shift(ta, 2))
    _close(shift(3, fa.abs()), shift(3, ta.abs()))
    fv, tv = fa[1:3], ta[1:3]
    assert ishift(fv, 1) is fv
    ishift(tv, 1)
    _close(fa, ta)
    getattr(fa, op + "_")(1)
    getattr(ta, op + "_")(1)
    _close(fa, ta)
    with pytest.raises(TypeError, match=op):
        getattr(fjax, op)(fjax.ones(2), 1)
