"""Module backward hooks against torch: call order, grad_input / grad_output values, replacement
gradients, pre-hooks, removal, multi-input/multi-output modules and inputs without grad."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import fjax

from .helper import SEED, rng


class _Pair:
    """A module of two inputs (the second optional, plus a non-Tensor) and two outputs."""

    @staticmethod
    def make(lib):
        class Pair(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(4, 3)

            def forward(self, a, b, scale):
                h = self.lin(a)
                return h * b.sum() * scale, h.tanh()

        return Pair()


def _mlp(lib, weights):
    m = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 3))
    with lib.no_grad():
        for p, w in zip(m.parameters(), weights):
            p.copy_(lib.tensor(w))
    return m


def _np(g):
    return None if g is None else g.detach().numpy().copy()


def _all(grads):
    return [_np(g) for g in grads]


def _close(a, b):
    assert len(a) == len(b), f"seed={SEED}"
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None and y is None, f"seed={SEED}"
        else:
            # float32 through a few layers: entries near zero get the error of the array's largest ones
            atol = 1e-5 + 1e-4 * float(np.abs(y).max(initial=0))
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=atol, err_msg=f"seed={SEED}")


def _run_mlp(lib, weights, x, replace):
    m = _mlp(lib, weights)
    log = []

    def hook(mod, gi, go):
        log.append(("full", type(mod).__name__, [_np(g) for g in gi], [_np(g) for g in go]))
        if replace:
            return tuple(None if g is None else g * 2 for g in gi)

    def pre(mod, go):
        log.append(("pre", type(mod).__name__, [_np(g) for g in go]))
        if replace:
            return tuple(g * -1.5 for g in go)

    handles = [
        m[1].register_full_backward_hook(hook),
        m[2].register_full_backward_pre_hook(pre),
        m.register_full_backward_hook(hook),
        m[0].register_full_backward_hook(hook),
    ]
    xt = lib.tensor(x, requires_grad=True)
    m(xt).pow(2).sum().backward()
    grads = [_np(xt.grad)] + [_np(p.grad) for p in m.parameters()]
    for h in handles:
        h.remove()
    m.zero_grad()
    xt.grad = None
    m(xt).pow(2).sum().backward()  # removed hooks neither log nor change gradients
    return log, grads, [_np(xt.grad)] + [_np(p.grad) for p in m.parameters()]


@pytest.mark.parametrize("replace", [False, True])
def test_full_backward_hooks_match_torch_on_mlp(replace):
    r = rng(1)
    weights = [r.standard_normal(s).astype(np.float32) for s in [(5, 4), (5,), (3, 5), (3,)]]
    x = r.standard_normal((2, 4)).astype(np.float32)
    log_t, grads_t, plain_t = _run_mlp(torch, weights, x, replace)
    log_f, grads_f, plain_f = _run_mlp(fjax, weights, x, replace)
    assert [e[:2] for e in log_f] == [e[:2] for e in log_t]
    for ef, et in zip(log_f, log_t):
        for a, b in zip(ef[2:], et[2:]):
            _close(a, b)
    _close(grads_f, grads_t)
    _close(plain_f, plain_t)


def test_full_backward_hook_multi_io_and_none_entries():
    r = rng(2)
    a, b = r.standard_normal((2, 4)).astype(np.float32), r.standard_normal(3).astype(np.float32)
    results = {}
    for lib in (torch, fjax):
        m = _Pair.make(lib)
        with lib.no_grad():
            m.lin.weight.copy_(lib.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10))
            m.lin.bias.fill_(0.5)
        log = []
        m.register_full_backward_hook(lambda mod, gi, go, log=log: log.append((_all(gi), _all(go))))
        at, bt = lib.tensor(a, requires_grad=True), lib.tensor(b)  # b needs no grad
        out, _unused = m(at, bt, 2.0)  # only the first output reaches the loss
        out.sum().backward()
        results[lib.__name__] = (log, _np(at.grad))
    (log_t, ga_t), (log_f, ga_f) = results["torch"], results["fjax"]
    assert len(log_f) == len(log_t) == 1
    gi_f, go_f = log_f[0]
    gi_t, go_t = log_t[0]
    assert gi_f[2] is None and go_f[1] is None  # a non-Tensor input, an output no gradient reached
    assert not gi_f[1].any()  # a tensor input without grad gets zeros, as in torch
    _close(gi_f, gi_t)
    _close(go_f, go_t)
    _close([ga_f], [ga_t])


def test_full_backward_hook_when_no_input_requires_grad():
    x = rng(3).standard_normal((2, 4)).astype(np.float32)
    for lib in (torch, fjax):
        lin = lib.nn.Linear(4, 2)
        seen = []
        lin.register_full_backward_hook(lambda m, gi, go, seen=seen: seen.append((gi, go[0].shape)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lin(lib.tensor(x)).sum().backward()
        assert seen[0][0] == (None,) and tuple(seen[0][1]) == (2, 2), lib.__name__
        assert lin.weight.grad is not None


def test_backward_pre_hook_bad_length_raises():
    lin = fjax.nn.Linear(3, 2)
    lin.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="Linear.*2 grad_output entries, expected 1"):
        lin(fjax.ones(1, 3, requires_grad=True)).sum().backward()


def test_backward_hooks_skipped_under_no_grad_and_prepend_order():
    lin = fjax.nn.Linear(3, 2)
    order = []
    lin.register_full_backward_hook(lambda m, gi, go: order.append("a"))
    lin.register_full_backward_hook(lambda m, gi, go: order.append("b"), prepend=True)
    with fjax.no_grad():
        y = lin(fjax.ones(1, 3, requires_grad=True))
    assert y.grad_fn is None
    lin(fjax.ones(1, 3, requires_grad=True)).sum().backward()
    assert order == ["b", "a"]


def test_legacy_and_full_hooks_are_exclusive():
    for lib in (torch, fjax):
        m = lib.nn.Tanh()
        m.register_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match="both regular backward hooks and full backward hooks"):
            m.register_full_backward_hook(lambda *a: None)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_legacy_backward_hook_single_op_module_matches_torch():
    x = rng(4).standard_normal(5).astype(np.float32)
    out = {}
    for lib in (torch, fjax):
        m = lib.nn.Sigmoid()
        seen = []
        m.register_backward_hook(lambda mod, gi, go, seen=seen: seen.append((_all(gi), _all(go))))
        xt = lib.tensor(x, requires_grad=True)
        m(xt).mul(3).sum().backward()
        out[lib.__name__] = seen
    _close(out["fjax"][0][0], out["torch"][0][0])
    _close(out["fjax"][0][1], out["torch"][0][1])
