"""torch's in-place view ops (``t_``, ``transpose_``, ``swapdims_``, ``swapaxes_``, ``unsqueeze_``,
``squeeze_``, ``as_strided_``) change the tensor's own shape and strides, compared with torch.

Each case runs the same lambda on a torch and an fjax tensor and compares what torch guarantees:
the method returns ``self``; the new shape, strides and offset; the values; the version counter
bump; the tensor still aliases its storage (a later write shows in its base); its ``grad_fn`` is
the view op's; and gradients flow through it. The in-place methods fjax has are torch's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax

CASES = {
    "t_": ((2, 3), lambda x: x.t_()),
    "t_1d": ((4,), lambda x: x.t_()),
    "transpose_": ((2, 3, 4), lambda x: x.transpose_(0, 2)),
    "transpose_neg": ((2, 3, 4), lambda x: x.transpose_(-1, 1)),
    "swapdims_": ((2, 3, 4), lambda x: x.swapdims_(1, 2)),
    "swapaxes_": ((2, 3, 4), lambda x: x.swapaxes_(0, -1)),
    "unsqueeze_": ((2, 3), lambda x: x.unsqueeze_(1)),
    "unsqueeze_neg": ((2, 3), lambda x: x.unsqueeze_(-1)),
    "squeeze_": ((2, 1, 3, 1), lambda x: x.squeeze_()),
    "squeeze_dim": ((2, 1, 3, 1), lambda x: x.squeeze_(1)),
    "squeeze_dim_not_1": ((2, 1, 3, 1), lambda x: x.squeeze_(0)),
    "squeeze_dims": ((2, 1, 3, 1), lambda x: x.squeeze_((1, 3))),
    "as_strided_": ((2, 3), lambda x: x.as_strided_((3, 2), (1, 3))),
    "as_strided_offset": ((2, 3), lambda x: x.as_strided_((2, 2), (1, 2), 1)),
}


def _geometry(x):
    return tuple(x.shape), tuple(x.stride()), x.storage_offset()


def _pair(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(a), fjax.tensor(a)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_view_changes_geometry_in_place_as_torch(name, seed):
    shape, fn = CASES[name]
    tx, fx = _pair(shape, seed)
    t_version, f_version = tx._version, fx._version
    assert fn(tx) is tx and fn(fx) is fx, f"{name}: the method must return self"
    assert _geometry(fx) == _geometry(tx), f"{name}, seed {seed}"
    np.testing.assert_array_equal(fx.numpy(), tx.numpy())
    assert fx._version - f_version == tx._version - t_version, f"{name}: version counter"
    assert (fx._base is None) == (tx._base is None), f"{name}: _base"


@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_view_of_a_view_keeps_aliasing_its_base(name):
    shape, fn = CASES[name]
    n = int(np.prod(shape))
    tb, fb = torch.zeros(n + 2), fjax.zeros(n + 2)
    tv, fv = tb[1 : n + 1].view(shape), fb[1 : n + 1].view(shape)
    fn(tv), fn(fv)
    assert tv._base is tb and fv._base is fb, f"{name}: still a view of the same base"
    assert _geometry(fv) == _geometry(tv)
    assert fv._version == tv._version == 1 and fb._version == tb._version == 1, f"{name}: shared version counter"
    fill = np.arange(tv.numel(), dtype=np.float32).reshape(tuple(tv.shape)) + 1
    tv.copy_(torch.tensor(fill)), fv.copy_(fjax.tensor(fill))
    np.testing.assert_array_equal(fb.numpy(), tb.numpy())
    fb.add_(10), tb.add_(10)
    np.testing.assert_array_equal(fv.numpy(), tv.numpy())


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_view_records_the_view_op_and_gradients_flow(name, seed):
    shape, fn = CASES[name]
    ta, fa = _pair(shape, seed)
    ta.requires_grad_(), fa.requires_grad_()
    ty, fy = ta * 2, fa * 2
    t_out_of_place = type(fn(ty.clone()).grad_fn).__name__  # the view op applied out of place
    f_out_of_place = fn(fy.clone()).grad_fn.name
    fn(ty), fn(fy)
    assert type(ty.grad_fn).__name__ == t_out_of_place, f"torch {name}: {ty.grad_fn}"
    assert fy.grad_fn.name == f_out_of_place, f"{name}: grad_fn {fy.grad_fn}, expected {f_out_of_place}"
    assert fy.requires_grad and not fy.is_leaf
    weights = np.random.default_rng(seed + 10).standard_normal(tuple(ty.shape)).astype(np.float32)
    (ty * torch.tensor(weights)).sum().backward()
    (fy * fjax.tensor(weights)).sum().backward()
    np.testing.assert_allclose(fa.grad.numpy(), ta.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_inplace_view_of_a_view_with_grad_flows_to_the_base():
    ta, fa = _pair((2, 3), 3)
    ta.requires_grad_(), fa.requires_grad_()
    tb, fb = ta * 3, fa * 3
    tv, fv = tb[1], fb[1]
    tv.unsqueeze_(0), fv.unsqueeze_(0)
    tv.mul_(torch.tensor([[1.0, 2.0, 3.0]])), fv.mul_(fjax.tensor([[1.0, 2.0, 3.0]]))
    tb.sum().backward(), fb.sum().backward()
    np.testing.assert_allclose(fa.grad.numpy(), ta.grad.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fb.detach().numpy(), tb.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("make", [lambda t: t, lambda t: t[0]], ids=["leaf", "view_of_leaf"])
def test_inplace_view_of_a_leaf_that_requires_grad_raises_as_torch(make):
    ta, fa = torch.ones(2, 3, requires_grad=True), fjax.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        make(ta).unsqueeze_(0)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        make(fa).unsqueeze_(0)
    with torch.no_grad(), fjax.no_grad():
        ta.t_(), fa.t_()
    assert tuple(fa.shape) == tuple(ta.shape) == (3, 2) and fa.is_leaf and fa.requires_grad


def test_inplace_view_inside_a_graph():
    class Step(fjax.nn.Graph):
        def build(self, x):
            y = x * 2
            y.t_()
            y.unsqueeze_(0)
            return y + fjax.arange(2.0)

    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    want = (torch.tensor(x) * 2).t_().unsqueeze_(0) + torch.arange(2.0)
    np.testing.assert_allclose(Step()(fjax.tensor(x)).numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_generated_inplace_methods_are_torchs():
    ours = {n for n in dir(fjax.Tensor) if n.endswith("_") and not n.startswith("_")}
    theirs = {n for n in dir(torch.Tensor) if n.endswith("_") and not n.startswith("_")}
    assert not ours - theirs, f"in-place methods torch does not have: {sorted(ours - theirs)}"
    for name in ("t_", "transpose_", "swapdims_", "swapaxes_", "unsqueeze_", "squeeze_", "as_strided_", "add_"):
        assert name in ours, name
    assert not hasattr(torch.Tensor, "einsum") and not hasattr(fjax.Tensor, "einsum")
