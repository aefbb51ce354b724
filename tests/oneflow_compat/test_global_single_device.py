"""OneFlow's global-tensor API on one device (``placement("cpu", ranks=[0])``): runs in any process.

The multi-device checks are tests/distributed/test_oneflow_global_*.py.
"""

from __future__ import annotations

import doctest
import inspect

import numpy as np
import pytest
import torch

import fjax as flow
from fjax.utils import global_view

P0 = flow.placement("cpu", ranks=[0])
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)


@pytest.mark.parametrize(
    "obj",
    [
        global_view.to_global,
        global_view.to_local,
        global_view.global_mode,
        global_view.current_global_mode,
        flow.sbp.sbp,
        flow.sbp.split,
        flow.placement.ranks,
    ],
    ids=lambda o: (o.fget if isinstance(o, property) else o).__qualname__,
)
def test_examples_run(obj):
    doc = inspect.getdoc(obj.fget if isinstance(obj, property) else obj)
    test = doctest.DocTestParser().get_doctest(doc, {"fjax": flow, "nn": flow.nn}, "example", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    failures = []
    runner.run(test, out=failures.append)
    assert test.examples and runner.failures == 0, "".join(failures)


def test_oneflow_docstring_usage():
    x = flow.randn(3, 3)
    assert x.shape == flow.Size([3, 3]) and not x.is_global
    x = flow.randn(3, 3, placement=P0, sbp=flow.sbp.broadcast)
    assert x.is_global and x.placement == P0 and x.sbp == (B,)
    y = flow.ones(4, 5, placement=P0, sbp=flow.sbp.broadcast)
    np.testing.assert_array_equal(y.numpy(), torch.ones(4, 5).numpy())
    assert flow.randn_like(x).is_global and not flow.randn_like(flow.randn(2)).is_global


def test_values_match_torch_and_local_ops():
    rng = np.random.default_rng()
    data = rng.standard_normal((4, 6)).astype(np.float32)
    g = flow.tensor(data, placement=P0, sbp=S0, requires_grad=True)
    t = torch.tensor(data, requires_grad=True)
    (g.sin() * 3).sum().backward()
    (t.sin() * 3).sum().backward()
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(flow.linspace(0, 1, 7, placement=P0, sbp=B).numpy(), torch.linspace(0, 1, 7).numpy())
    np.testing.assert_array_equal(flow.eye(3, placement=P0, sbp=S0).numpy(), torch.eye(3).numpy())
    np.testing.assert_array_equal(flow.arange(2, 9, 3, placement=P0, sbp=B).numpy(), torch.arange(2, 9, 3).numpy())
    assert flow.full((2, 2), 7, placement=P0, sbp=B).dtype == flow.int64


def test_global_mode_keeps_explicitly_placed_tensors():
    a = flow.randn((1, 8), sbp=flow.sbp.broadcast, placement=P0)
    with global_view.global_mode(True, placement=P0, sbp=S0):
        assert a.placement == P0 and a.sbp == (B,)
        assert flow.zeros(2, 2).sbp == (S0,)
        assert flow.empty(2, device="meta").is_meta  # meta tensors stay local
    assert not flow.zeros(2).is_global


def test_sbp_symbols():
    assert flow.sbp.split(0) == flow.sbp.split(0)() and flow.sbp.broadcast == flow.sbp.broadcast()
    assert flow.sbp.partial_sum == flow.sbp.partial_sum() and flow.sbp.split(0) != flow.sbp.split(1)
    assert repr(flow.sbp.broadcast()) == "fjax.sbp.broadcast"
    with pytest.raises(ValueError, match="non-negative"):
        flow.sbp.split(-1)
    with pytest.raises(TypeError, match="unexpected keyword"):
        flow.sbp.split(dims=0)


def test_tensor_constructor_takes_placement_and_sbp():
    p = flow.placement("cpu", [0])
    t = flow.Tensor(2, 3, placement=p, sbp=flow.sbp.broadcast)
    assert t.is_global and t.sbp == (flow.sbp.broadcast,) and t.shape == (2, 3)
    t = flow.Tensor([[1.0, 2.0]], placement=p, sbp=flow.sbp.split(0))
    assert t.is_global and t.sbp == (flow.sbp.split(0),) and t.tolist() == [[1.0, 2.0]]
    assert not flow.Tensor(2, 3).is_global


def test_oneflow_cast_functions_and_methods():
    x = flow.tensor(np.arange(4.0, dtype=np.float32), requires_grad=True)
    g = flow.local_to_global(x, P0, B)
    assert g.is_global and g.sbp == (B,)
    h = g.global_to_global(sbp=S0)
    assert h.sbp == (S0,) and h.tolist() == [0.0, 1.0, 2.0, 3.0]
    (h * h).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 4.0, 6.0])
    local = flow.to_local(h)
    assert not local.is_global and flow.to_global(local, P0, B).is_global
    assert not h.to_local(copy=True).is_global
    with pytest.raises(RuntimeError, match="local_to_global"):
        x.global_to_global(P0, B)
    with pytest.raises(RuntimeError, match="global_to_global"):
        g.local_to_global(P0, B)


def test_global_tensor_repr_shows_placement_and_sbp():
    text = repr(flow.ones(2, placement=P0, sbp=B))
    assert 'placement=fjax.placement(type="cpu", ranks=[0])' in text and "sbp=(fjax.sbp.broadcast,)" in text
    assert "placement" not in repr(flow.ones(2))
