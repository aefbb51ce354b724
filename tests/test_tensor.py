"""Tensor API against torch: metadata, dtypes and promotion, operators, indexing, in-place, repr."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import fjax

SEED = random.randrange(2**31)
rng = np.random.default_rng(SEED)


def both(a: np.ndarray, requires_grad=False):
    return fjax.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def same(f, t, tol=1e-5):
    assert str(f.dtype).split(".")[1] == str(t.dtype).split(".")[1], (f.dtype, t.dtype, SEED)
    np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol, err_msg=f"seed={SEED}")


def test_metadata():
    f = fjax.randn(2, 3, 4)
    assert f.shape == (2, 3, 4) and f.size() == (2, 3, 4) and f.size(1) == 3 and f.size(-1) == 4
    assert f.ndim == 3 and f.dim() == 3 and f.numel() == 24
    assert f.dtype == fjax.float32 and f.is_floating_point()
    assert f.device == fjax.device("cpu") and str(f.device) == "cpu"
    assert f.is_leaf and not f.requires_grad and f.grad is None and f.grad_fn is None
    assert repr(f.shape) == "fjax.Size([2, 3, 4])"


@pytest.mark.parametrize(
    "data, dtype",
    [
        ([1, 2], "int64"),
        ([1.0, 2], "float32"),
        ([True, False], "bool"),
        (3.5, "float32"),
        (7, "int64"),
        ([[1j]], "complex64"),
    ],
)
def test_python_data_dtypes_match_torch(data, dtype):
    assert str(fjax.tensor(data).dtype) == f"fjax.{dtype}" == str(torch.tensor(data).dtype).replace("torch", "fjax")


@pytest.mark.parametrize("np_dtype", ["float64", "float32", "float16", "int32", "int64", "uint8", "bool"])
def test_numpy_dtypes_are_kept(np_dtype):
    a = np.ones((2,), np_dtype)
    assert fjax.from_numpy(a).dtype.name == np_dtype == str(torch.from_numpy(a).dtype).split(".")[1]


PROMOTION_CASES = [
    (("int64", (3,)), 2.5),
    (("int32", (3,)), 2),
    (("bool", (3,)), 1),
    (("float16", (3,)), 1.0),
    (("bfloat16", (3,)), ("float16", (3,))),
    (("float32", (3,)), ("float64", ())),
    (("int64", (3,)), ("float64", ())),
    (("int32", (3,)), ("int64", (3,))),
    (("uint8", (3,)), ("int8", (3,))),
    (("float32", (3,)), ("int64", (3,))),
    (("bool", (3,)), ("bool", (3,))),
]


def _make(spec):
    if not isinstance(spec, tuple):
        return spec, spec
    dt, shape = spec
    a = np.abs(rng.standard_normal(shape) * 3).astype("float32")  # float->uint8 of negatives is undefined
    f = fjax.tensor(a).to(getattr(fjax, dt))
    t = torch.tensor(a).to(getattr(torch, dt))
    return f, t


@pytest.mark.parametrize("lhs, rhs", PROMOTION_CASES)
@pytest.mark.parametrize("op", ["add", "mul", "sub", "div"])
def test_type_promotion_matches_torch(lhs, rhs, op):
    (fl, tl), (fr, tr) = _make(lhs), _make(rhs)
    if op == "sub" and "bool" in str(lhs):
        pytest.skip("torch forbids bool - bool")
    fo, to = getattr(fjax, op)(fl, fr), getattr(torch, op)(tl, tr)
    assert str(fo.dtype).split(".")[1] == str(to.dtype).split(".")[1]
    np.testing.assert_allclose(
        fo.float().numpy(), to.float().numpy(), rtol=1e-2 if "16" in str(lhs) + str(rhs) else 1e-6
    )


def test_operators_and_reflected():
    a = rng.standard_normal((3, 4)).astype("float32")
    b = rng.uniform(0.5, 2, (4,)).astype("float32")
    (fa, ta), (fb, tb) = both(a), both(b)
    for fn in [
        lambda x, y: x + y,
        lambda x, y: x - y,
        lambda x, y: x * y,
        lambda x, y: x / y,
        lambda x, y: 2 - x,
        lambda x, y: 1.5 / y,
        lambda x, y: 3 * x,
        lambda x, y: x**2,
        lambda x, y: 2**y,
        lambda x, y: -x,
        lambda x, y: abs(x),
        lambda x, y: x // y,
        lambda x, y: x % y,
        lambda x, y: x @ y,
        lambda x, y: (x > 0) & (x < 1),
        lambda x, y: x == y,
        lambda x, y: (x >= 0) | (x < -1),
        lambda x, y: ~(x > 0),
        lambda x, y: x != 0.5,
    ]:
        same(fn(fa, fb), fn(ta, tb))


def test_inplace_operators_and_versioner():
    a = rng.standard_normal((3,)).astype("float32")
    fa, ta = both(a)
    v = fa._version
    fa += 1
    ta += 1
    fa *= 2
    ta *= 2
    fa.sub_(0.5)
    ta.sub_(0.5)
    fa.clamp_(min=0.0)
    ta.clamp_(min=0.0)
    same(fa, ta)
    assert fa._version == v + 4
    fi = fjax.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast"):
        fi += 1.5


@pytest.mark.parametrize(
    "index",
    [
        0,
        -1,
        (1, 2),
        slice(1, None),
        (slice(None), 1),
        (Ellipsis, 0),
        (None, 1),
        (slice(None, None, 2), None, -1),
        [0, 2],
        (slice(None), [1, 0, 1]),
        ([0, 1], [2, 3]),
        "bool",
        "tensor",
    ],
)
def test_getitem_matches_torch_with_grad(index):
    a = rng.standard_normal((3, 4, 5)).astype("float32")
    fa, ta = both(a, requires_grad=True)
    if index == "bool":
        mask = a[:, :, 0] > 0
        fi, ti = fjax.tensor(mask), torch.tensor(mask)
    elif index == "tensor":
        idx = rng.integers(0, 3, (2, 2))
        fi, ti = fjax.tensor(idx), torch.tensor(idx)
    else:
        fi = ti = index
    fo, to = fa[fi], ta[ti]
    same(fo, to)
    g = rng.standard_normal(tuple(to.shape)).astype("float32")
    fo.backward(fjax.tensor(g))
    to.backward(torch.tensor(g))
    same(fa.grad, ta.grad)


def test_setitem_is_a_functional_update_with_grad():
    a = rng.standard_normal((4, 3)).astype("float32")
    v = rng.standard_normal((3,)).astype("float32")
    fa, ta = both(a, requires_grad=True)
    fv, tv = both(v, requires_grad=True)
    fb, tb = fa * 1, ta * 1
    fb[1] = fv
    tb[1] = tv
    fb[2:, 0] = 7.0
    tb[2:, 0] = 7.0
    same(fb, tb)
    g = rng.standard_normal((4, 3)).astype("float32")
    fb.backward(fjax.tensor(g))
    tb.backward(torch.tensor(g))
    same(fa.grad, ta.grad)
    same(fv.grad, tv.grad)


def test_repr_like_torch():
    assert repr(fjax.tensor([[1.0, 2.0]])) == "tensor([[1., 2.]], dtype=fjax.float32)"
    assert repr(fjax.tensor([1, 2])) == "tensor([1, 2], dtype=fjax.int64)"
    x = fjax.tensor([1.5], requires_grad=True)
    assert repr(x) == "tensor([1.5000], dtype=fjax.float32, requires_grad=True)"
    assert "grad_fn=<mulBackward>" in repr(x * 2)


def test_host_values():
    a = rng.standard_normal((2, 2)).astype("float32")
    f = fjax.tensor(a)
    np.testing.assert_array_equal(f.numpy(), a)
    assert f.tolist() == a.tolist()
    assert fjax.tensor(3).item() == 3 and isinstance(fjax.tensor(2.5).item(), float)
    assert float(fjax.tensor([2.5])) == 2.5 and int(fjax.tensor(4)) == 4
    np.testing.assert_array_equal(fjax.ones(2, requires_grad=True).numpy(), [1.0, 1.0])  # OneFlow's rule


def test_to_clone_detach_contiguous():
    f = fjax.randn(3, requires_grad=True)
    d = f.to(fjax.float64)
    assert d.dtype == fjax.float64 and d.requires_grad and d.grad_fn is not None
    assert f.double().dtype == fjax.float64 and f.half().dtype == fjax.float16 and f.long().dtype == fjax.int64
    assert f.to("cpu") is f and f.contiguous() is f
    c = f.clone()
    assert c.grad_fn is not None and np.array_equal(c.detach().numpy(), f.detach().numpy())
    assert not f.detach().requires_grad
    assert f.to(fjax.zeros(1, dtype=fjax.int32)).dtype == fjax.int32


def test_creation_matches_torch():
    same(fjax.arange(5), torch.arange(5))
    same(fjax.arange(1, 2, 0.25), torch.arange(1, 2, 0.25))
    same(fjax.linspace(0, 1, 7), torch.linspace(0, 1, 7))
    same(fjax.eye(3, 4), torch.eye(3, 4))
    same(fjax.full((2, 2), 3), torch.full((2, 2), 3))
    same(fjax.full((2,), 1.5), torch.full((2,), 1.5))
    same(fjax.zeros(2, 3, dtype=fjax.int32), torch.zeros(2, 3, dtype=torch.int32))
    same(fjax.ones((2, 3)), torch.ones((2, 3)))
    x = fjax.randn(2, 5)
    assert fjax.zeros_like(x).shape == x.shape and fjax.ones_like(x, dtype=fjax.int64).dtype == fjax.int64
    assert fjax.empty(2, 2).shape == (2, 2) and fjax.full_like(x, 7).numpy().max() == 7


def test_random_is_reproducible_and_well_distributed():
    fjax.manual_seed(123)
    a = [fjax.rand(1000), fjax.randn(1000), fjax.randint(0, 10, (1000,)), fjax.randperm(50)]
    fjax.manual_seed(123)
    b = [fjax.rand(1000), fjax.randn(1000), fjax.randint(0, 10, (1000,)), fjax.randperm(50)]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    u, n, i, p = a
    assert 0 <= u.numpy().min() and u.numpy().max() < 1 and abs(u.numpy().mean() - 0.5) < 0.05
    assert abs(n.numpy().mean()) < 0.15 and abs(n.numpy().std() - 1) < 0.1
    assert i.dtype == fjax.int64 and set(np.unique(i.numpy())) == set(range(10))
    assert sorted(p.tolist()) == list(range(50))
    g = fjax.Generator().manual_seed(5)
    state = g.get_state()
    x = fjax.randn(4, generator=g)
    g.set_state(state)
    np.testing.assert_array_equal(x.numpy(), fjax.randn(4, generator=g).numpy())
    bern = fjax.bernoulli(fjax.full((4000,), 0.3))
    assert abs(bern.numpy().mean() - 0.3) < 0.04
    nrm = fjax.normal(2.0, 3.0, (4000,))
    assert abs(nrm.numpy().mean() - 2) < 0.3 and abs(nrm.numpy().std() - 3) < 0.3


def test_numpy_of_a_tensor_that_requires_grad_gives_its_values():
    """OneFlow returns the values (a superset of torch, which raises)."""
    x = fjax.tensor([1.0, 2.0], requires_grad=True)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal((x * 3).numpy(), [3.0, 6.0])


@pytest.mark.parametrize("gdtype", ["float64", "float16", "int64", "bool"])
def test_gradient_of_another_dtype_is_cast_to_the_outputs(gdtype):
    """backward(gradient) and autograd.grad(grad_outputs) cast the gradient to the output's
    dtype, as torch and OneFlow do."""
    a = np.array([1.0, -2.0, 3.0], np.float32)
    g = np.array([1, 0, 2]).astype(gdtype)
    tx = torch.tensor(a, requires_grad=True)
    (tx * tx).backward(torch.tensor(g))
    fx = fjax.tensor(a, requires_grad=True)
    (fx * fx).backward(fjax.tensor(g))
    assert fx.grad.dtype == fjax.float32
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy())
    (want,) = torch.autograd.grad((tx * 2).sum(), tx, torch.tensor(g[0]))
    (got,) = fjax.autograd.grad((fx * 2).sum(), fx, fjax.tensor(g[0]))
    np.testing.assert_allclose(got.numpy(), want.numpy())
