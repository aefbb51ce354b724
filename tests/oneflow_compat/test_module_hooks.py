"""OneFlow-style module backward hooks (``import fjax as flow``): register_full_backward_hook,
register_backward_hook, the rule that a module takes one kind, handles, and gradients compared
with torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax as flow


def _grads_with_hook(lib, x, w, b, hook_factory):
    m = lib.nn.Linear(3, 2)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(w))
        m.bias.copy_(lib.tensor(b))
    seen = []
    handle = m.register_full_backward_hook(hook_factory(seen))
    xt = lib.tensor(x, requires_grad=True)
    (m(xt) ** 2).sum().backward()
    handle.remove()
    return seen, xt.grad.numpy(), m.weight.grad.numpy()


def test_full_backward_hook_records_and_scales_like_torch():
    rs = np.random.RandomState(11)
    x, w, b = rs.randn(4, 3).astype("f4"), rs.randn(2, 3).astype("f4"), rs.randn(2).astype("f4")

    def factory(seen):
        def hook(module, grad_input, grad_output):
            seen.append((grad_input[0].numpy().copy(), grad_output[0].numpy().copy()))
            return (grad_input[0] * 0.5,)

        return hook

    seen_f, gx_f, gw_f = _grads_with_hook(flow, x, w, b, factory)
    seen_t, gx_t, gw_t = _grads_with_hook(torch, x, w, b, factory)
    assert len(seen_f) == len(seen_t) == 1
    for a, c in zip(seen_f[0], seen_t[0]):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gx_f, gx_t, rtol=1e-5, atol=1e-6)  # the replacement reached x
    np.testing.assert_allclose(gw_f, gw_t, rtol=1e-5, atol=1e-6)  # the weight gradient is untouched


def test_handle_remove_stops_the_hook():
    m = flow.nn.ReLU()
    calls = []
    handle = m.register_full_backward_hook(lambda mod, gi, go: calls.append(1))
    x = flow.randn(5, requires_grad=True)
    m(x).sum().backward()
    handle.remove()
    m(x).sum().backward()
    assert calls == [1]


def test_backward_hook_then_full_hook_raises():
    m = flow.nn.Linear(2, 2)
    m.register_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        m.register_full_backward_hook(lambda *a: None)


def test_full_hook_then_backward_hook_raises():
    m = flow.nn.Linear(2, 2)
    m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both"):
        m.register_backward_hook(lambda *a: None)


def test_hook_kind_may_change_after_removal():
    m = flow.nn.Linear(2, 2)
    m.register_backward_hook(lambda *a: None).remove()
    m.register_full_backward_hook(lambda *a: None)


def test_hook_returning_wrong_length_raises():
    m = flow.nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Linear: a backward hook returned 2 grad_input entries, expected 1"):
        m(flow.ones(1, 2, requires_grad=True)).sum().backward()
