"""Ops with data-dependent output shapes (nonzero, argwhere, masked_select, unique, unique_consecutive,
bincount, histc) against torch on fresh random inputs, masked_select's gradient, and the error they
raise inside a trace.

Set FJAX_TEST_SEED to replay a failure (the seed is in every failure message).
"""

from __future__ import annotations

import os
import random

import jax
import numpy as np
import pytest
import torch

import fjax
import fjax.autograd.functional as FAF
import fjax.func as FF
from fjax.graph import Graph

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))
rng = np.random.default_rng(SEED)


def sample(shape, kind):
    """A random array with repeats and zeros: ``kind`` is int, float, bool, float64 or int32."""
    if kind == "bool":
        return np.asarray(rng.random(shape) < 0.4)
    values = rng.integers(-2, 3, size=shape)
    if kind in ("int", "int32"):
        return values.astype("int64" if kind == "int" else "int32")
    scale = rng.choice([0.5, 1.25, -3.0], size=shape)  # floats with repeats and zeros
    return np.asarray(values * scale).astype("float64" if kind == "float64" else "float32")


def same(f, t, what="result", rtol=0.0, atol=0.0):
    """fjax output ``f`` equals torch's ``t``: structure, shapes, dtypes and values."""
    if isinstance(t, (tuple, list)):
        assert isinstance(f, tuple) and len(f) == len(t), f"{what}: {f!r} vs torch {t!r} (seed={SEED})"
        for i, (a, b) in enumerate(zip(f, t)):
            same(a, b, f"{what}[{i}]", rtol, atol)
        return
    assert isinstance(f, fjax.Tensor), f"{what}: got {type(f).__name__}, torch gives a tensor (seed={SEED})"
    a, b = f.numpy(), t.detach().numpy()
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape} (seed={SEED})"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs torch {b.dtype} (seed={SEED})"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{what} (seed={SEED})")


SHAPES = [(), (7,), (3, 4), (2, 3, 4), (0,), (3, 0)]
KINDS = ["int", "float", "bool", "int32", "float64"]


# ----------------------------------------------------------------------------- nonzero / argwhere


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_nonzero_and_argwhere_match_torch(shape, kind):
    a = sample(shape, kind)
    x, t = fjax.tensor(a), torch.from_numpy(a)
    same(fjax.nonzero(x), torch.nonzero(t), "nonzero")
    same(x.nonzero(), t.nonzero(), "Tensor.nonzero")
    same(fjax.nonzero(x, as_tuple=True), torch.nonzero(t, as_tuple=True), "nonzero(as_tuple=True)")
    same(x.nonzero(as_tuple=True), t.nonzero(as_tuple=True), "Tensor.nonzero(as_tuple=True)")
    same(fjax.argwhere(x), torch.argwhere(t), "argwhere")
    same(x.argwhere(), t.argwhere(), "Tensor.argwhere")


def test_nonzero_of_zero_dim_tensors():
    for v in (0.0, 2.0, True, False, 3):
        same(fjax.nonzero(fjax.tensor(v)), torch.nonzero(torch.tensor(v)))
        same(fjax.nonzero(fjax.tensor(v), as_tuple=True), torch.nonzero(torch.tensor(v), as_tuple=True))


def test_nonzero_of_a_tensor_requiring_grad_gives_plain_indices():
    a = sample((4, 5), "float")
    x = fjax.tensor(a, requires_grad=True)
    out = x.nonzero()
    assert not out.requires_grad
    same(out, torch.from_numpy(a).nonzero())


# ----------------------------------------------------------------------------- masked_select

MASKED = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((1, 4), (3, 1)),
    ((2, 3, 4), (3, 1)),
    ((), (5,)),
    ((5,), ()),
    ((), ()),
    ((0, 3), (3,)),
    ((3,), (0, 3)),
]


@pytest.mark.parametrize("shapes", MASKED, ids=str)
@pytest.mark.parametrize("kind", ["float", "float64", "int", "bool"])
def test_masked_select_matches_torch(shapes, kind):
    a, m = sample(shapes[0], kind), sample(shapes[1], "bool")
    same(
        fjax.masked_select(fjax.tensor(a), fjax.tensor(m)),
        torch.masked_select(torch.from_numpy(a), torch.from_numpy(m)),
    )
    same(fjax.tensor(a).masked_select(fjax.tensor(m)), torch.from_numpy(a).masked_select(torch.from_numpy(m)))


@pytest.mark.parametrize("shapes", MASKED, ids=str)
def test_masked_select_gradient_matches_torch(shapes):
    a, m = sample(shapes[0], "float64"), sample(shapes[1], "bool")
    x, t = fjax.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, u = fjax.masked_select(x, fjax.tensor(m)), torch.masked_select(t, torch.from_numpy(m))
    assert y.requires_grad
    w = rng.standard_normal(tuple(u.shape))
    (y * fjax.tensor(w)).sum().backward()
    (u * torch.from_numpy(w)).sum().backward()
    same(x.grad, t.grad, "input.grad", rtol=1e-12, atol=1e-12)


def test_masked_select_of_non_leaf_in_a_graph():
    a, m = sample((4, 3), "float64"), sample((4, 3), "bool")
    x, t = fjax.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (fjax.masked_select(x * 2, fjax.tensor(m)) ** 2).sum().backward()
    (torch.masked_select(t * 2, torch.from_numpy(m)) ** 2).sum().backward()
    same(x.grad, t.grad, "input.grad", rtol=1e-12, atol=1e-12)


def test_masked_select_errors():
    x = fjax.randn(3, 4)
    with pytest.raises(fjax.OpError, match="bool mask"):
        fjax.masked_select(x, fjax.ones(3, 4))
    with pytest.raises(fjax.OpError, match="broadcast"):
        fjax.masked_select(x, fjax.ones(5, dtype=fjax.bool))


def test_masked_select_with_a_constant_mask_works_inside_fjax_func():
    a, m = sample((3, 4), "float64"), sample((3, 4), "bool")
    mask = fjax.tensor(m)
    g = FF.grad(lambda x: (fjax.masked_select(x, mask) ** 2).sum())(fjax.tensor(a))
    same(g, torch.from_numpy(2 * a * m), "grad", rtol=1e-12)


# ----------------------------------------------------------------------------- unique / unique_consecutive

FLAGS = [(False, False), (True, False), (False, True), (True, True)]


def _unique_calls(x, t, name, flags, **kwargs):
    inverse, counts = flags
    f = getattr(fjax, name)(x, return_inverse=inverse, return_counts=counts, **kwargs)
    r = getattr(torch, name)(t, return_inverse=inverse, return_counts=counts, **kwargs)
    same(f, r, f"{name}{flags}{kwargs}")
    f = getattr(x, name)(return_inverse=inverse, return_counts=counts, **kwargs)
    same(f, r, f"Tensor.{name}{flags}{kwargs}")


@pytest.mark.parametrize("shape", [(), (9,), (3, 5), (2, 3, 4), (0,), (2, 0)], ids=str)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("flags", FLAGS, ids=str)
def test_unique_matches_torch(shape, kind, flags):
    a = sample(shape, kind)
    x, t = fjax.tensor(a), torch.from_numpy(a)
    _unique_calls(x, t, "unique", flags)
    _unique_calls(x, t, "unique", flags, sorted=False)  # torch's CPU result is sorted either way
    _unique_calls(x, t, "unique_consecutive", flags)


@pytest.mark.parametrize("shape,dim", [((6, 3), 0), ((6, 3), 1), ((4, 2, 3), -1), ((4, 2, 3), 1), ((0, 3), 0)], ids=str)
@pytest.mark.parametrize("kind", ["int", "float", "bool"])
@pytest.mark.parametrize("flags", FLAGS, ids=str)
def test_unique_along_a_dim_matches_torch(shape, dim, kind, flags):
    a = rng.integers(0, 2, size=shape)  # few distinct values, so slices repeat
    a = a.astype(bool) if kind == "bool" else a.astype("int64" if kind == "int" else "float32")
    x, t = fjax.tensor(a), torch.from_numpy(a)
    _unique_calls(x, t, "unique", flags, dim=dim)
    _unique_calls(x, t, "unique_consecutive", flags, dim=dim)


def test_unique_treats_nans_as_distinct_like_torch():
    a = np.array([3.0, np.nan, 1.0, 3.0, np.nan, 1.0], np.float32)
    x, t = fjax.tensor(a), torch.from_numpy(a)
    for flags in FLAGS:
        _unique_calls(x, t, "unique", flags)
        _unique_calls(x, t, "unique_consecutive", flags)


def test_unique_errors():
    with pytest.raises(fjax.OpError, match="out of range"):
        fjax.unique(fjax.tensor(3), dim=0)
    with pytest.raises(fjax.OpError, match="0-sized"):
        fjax.unique(fjax.zeros(3, 0), dim=0)
    with pytest.raises(fjax.OpError, match="out of range"):
        fjax.unique_consecutive(fjax.zeros(3, 2), dim=2)


# ----------------------------------------------------------------------------- bincount


@pytest.mark.parametrize("n", [0, 1, 17])
@pytest.mark.parametrize("minlength", [0, 3, 12])
@pytest.mark.parametrize("weights", [None, "float32", "float64", "int64", "float16"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_bincount_matches_torch(n, minlength, weights, dtype):
    a = rng.integers(0, 9, size=n).astype(dtype)
    x, t = fjax.tensor(a), torch.from_numpy(a)
    if weights is None:
        same(fjax.bincount(x, minlength=minlength), torch.bincount(t, minlength=minlength))
        same(x.bincount(minlength=minlength), t.bincount(minlength=minlength))
        return
    w = rng.standard_normal(n).astype(weights) if weights != "int64" else rng.integers(-3, 4, size=n)
    f = fjax.bincount(x, fjax.tensor(w), minlength)
    r = torch.bincount(t, torch.from_numpy(w), minlength)
    same(f, r, rtol=1e-5, atol=1e-5)
    same(x.bincount(weights=fjax.tensor(w), minlength=minlength), r, rtol=1e-5, atol=1e-5)


def test_bincount_with_weights_requiring_grad_carries_no_gradient_like_torch():
    w = fjax.tensor([0.5, 1.0, 2.0], requires_grad=True)
    out = fjax.bincount(fjax.tensor([0, 2, 2]), w)
    assert not out.requires_grad
    same(out, torch.tensor([0.5, 0.0, 3.0]))


def test_bincount_errors_match_torch():
    for bad in (fjax.tensor([-1, 2]), fjax.tensor([[1, 2]]), fjax.tensor(3)):
        with pytest.raises(fjax.OpError, match="1-d non-negative integral"):
            fjax.bincount(bad)
    with pytest.raises(fjax.OpError, match="integer"):
        fjax.bincount(fjax.tensor([1.0, 2.0]))
    with pytest.raises(fjax.OpError, match="integer"):
        fjax.bincount(fjax.tensor([True, False]))
    with pytest.raises(fjax.OpError, match="same length"):
        fjax.bincount(fjax.tensor([0, 1, 1]), fjax.ones(2))
    with pytest.raises(fjax.OpError, match="minlength"):
        fjax.bincount(fjax.tensor([0, 1]), minlength=-1)


# ----------------------------------------------------------------------------- histc


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "bins,lo,hi", [(100, 0, 0), (7, 0, 0), (10, -1.0, 1.0), (5, -0.5, 2), (3, 1, 1), (1, 0, 0), (10, 0, 1)]
)
@pytest.mark.parametrize("shape", [(50,), (4, 6), (), (0,)], ids=str)
def test_histc_matches_torch(dtype, bins, lo, hi, shape):
    a = rng.standard_normal(shape).astype(dtype)
    if a.size > 4:
        a.reshape(-1)[:3] = [0.1, 0.5, 1.0]  # values on bin edges
    x, t = fjax.tensor(a), torch.from_numpy(a)
    same(fjax.histc(x, bins, lo, hi), torch.histc(t, bins, lo, hi))
    same(x.histc(bins=bins, min=lo, max=hi), t.histc(bins=bins, min=lo, max=hi))


def test_histc_of_constant_and_grid_data_matches_torch():
    for a in (
        np.full(6, 2.5, np.float32),
        np.linspace(-1, 1, 101).astype(np.float32),
        (np.arange(40) / 10).astype(np.float32),
        np.array([np.nan, 0.2, 0.7, np.inf, -np.inf], np.float32),
    ):
        for bins in (4, 10, 13):
            lo, hi = (0.0, 1.0) if not np.isfinite(a).all() else (0, 0)
            same(fjax.histc(fjax.tensor(a), bins, lo, hi), torch.histc(torch.from_numpy(a), bins, lo, hi))


def test_histc_errors():
    with pytest.raises(fjax.OpError, match="floating-point"):
        fjax.histc(fjax.tensor([1, 2, 3]))
    with pytest.raises(fjax.OpError, match="max must be larger than min"):
        fjax.histc(fjax.randn(5), min=2, max=1)
    with pytest.raises(fjax.OpError, match="bins must be > 0"):
        fjax.histc(fjax.randn(5), bins=0)
    with pytest.raises(fjax.OpError, match="not finite"):
        fjax.histc(fjax.tensor([1.0, float("inf")]))


def test_histc_runs_inside_traces():
    a = rng.standard_normal(30).astype(np.float32)
    expected = torch.histc(torch.from_numpy(a), 6)

    class Hist(Graph):
        def build(self, x):
            return fjax.histc(x, 6)

    same(Hist()(fjax.tensor(a)), expected, "nn.Graph")
    x = fjax.tensor(a, requires_grad=True)
    g = FF.grad(lambda x: (x * fjax.histc(x, 6).sum()).sum())(x)
    same(g, torch.full((30,), 30.0), "fjax.func.grad")


# ----------------------------------------------------------------------------- inside a trace


TRACED = {
    "nonzero": lambda x: x.nonzero().sum() * x.sum(),
    "argwhere": lambda x: fjax.argwhere(x).sum() * x.sum(),
    "masked_select": lambda x: x.masked_select(x > 0).sum(),
    "unique": lambda x: x.unique().sum(),
    "unique_consecutive": lambda x: x.unique_consecutive().sum(),
    "bincount": lambda x: (x > 0).long().bincount().sum() * x.sum(),
}


@pytest.mark.parametrize("name", sorted(TRACED))
def test_data_dependent_ops_raise_a_clear_error_inside_traces(name):
    fn = TRACED[name]
    x = fjax.randn(3, 4) if name != "bincount" else fjax.randn(6)
    expected = rf"fjax\.{name}: its output shape depends on the values"

    def check(call):
        with pytest.raises(fjax.OpError, match=expected) as info:
            call()
        assert not isinstance(info.value, jax.errors.ConcretizationTypeError)
        assert "fjax.where" in str(info.value) or "fixed" in str(info.value)

    check(lambda: FF.grad(fn)(x))
    check(lambda: FAF.jacobian(fn, x))

    class Step(Graph):
        def build(self, x):
            return fn(x)

    check(lambda: Step()(x))
    fn(x)  # eager: fine
