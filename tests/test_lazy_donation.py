"""Eager fusion writes a training step's results into the inputs they replace (issue 36).

A segment program's results are allocated when it starts, so without donation a fused step
holds two copies of its parameters and gradients (and of its optimizer state, where the
optimizer lets go of it) through its whole forward and backward; torch updates them in place.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import fjax
from fjax import _lazy
from fjax.profiler import fusion_stats

W = 256  # 256 x 256 float32 weights: 256 KiB, above _lazy._DONATE_MIN


def _model():
    fjax.manual_seed(0)
    return fjax.nn.Sequential(fjax.nn.Linear(W, W), fjax.nn.ReLU(), fjax.nn.Linear(W, W), fjax.nn.Tanh())


def _train(steps, make_opt, keep=None, spy=None):
    """``steps`` SGD/Adam steps (gradients zeroed, not freed: the backward accumulates into
    them); returns the losses, the final parameters and what ``keep(model)`` returned before
    the last step."""
    model = _model()
    opt = make_opt(model.parameters())
    rng = np.random.default_rng(0)
    x, y = (fjax.tensor(rng.standard_normal((64, W)).astype(np.float32)) for _ in range(2))
    losses, kept = [], None
    for i in range(steps):
        if keep is not None and i == steps - 1:
            kept = keep(model)
        opt.zero_grad(set_to_none=False)
        loss = fjax.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy().copy() for p in model.parameters()], kept


def _sgd(ps):
    return fjax.optim.SGD(ps, lr=0.1)


def _adam(ps):
    return fjax.optim.Adam(ps, lr=1e-3)


def _step_program(make_opt):
    """The memory analysis of a steady training step's compiled program, and its donated inputs."""
    seen = {}
    real = _lazy._execute

    def spy(key, ops, outputs, ext, trains=False, pending=None):
        if trains:
            seen["key"] = _lazy.program_key(key, outputs, ext)
        return real(key, ops, outputs, ext, trains, pending)

    _lazy._execute = spy
    try:
        _train(4, make_opt)
    finally:
        _lazy._execute = real
    compiled, donate, _ = _lazy._programs[seen["key"]]
    return compiled.memory_analysis(), donate


@pytest.mark.parametrize("make_opt", [_sgd, _adam])
def test_results_are_written_into_the_parameters_and_gradients_they_replace(fused, make_opt, monkeypatch):
    """The step's new parameters and gradients take the old ones' buffers: XLA's aliased bytes
    cover the weights and their gradients, and the program's bytes (results not written in place,
    plus temporaries) are below those of the same program without donation by at least the
    gradients' bytes (a parameter that the forward and backward read too may still be copied
    first, which saves nothing for it; a gradient, read by its accumulation only, never is)."""
    ma, donate = _step_program(make_opt)
    big = 2 * W * W * 4  # the two weights; the biases are below _DONATE_MIN
    assert ma.alias_size_in_bytes >= 2 * big  # weights and their gradients
    assert len(donate) >= 4
    monkeypatch.setattr(_lazy, "_DONATE_MIN", float("inf"))
    monkeypatch.setattr(_lazy, "_programs", OrderedDict())  # (compiled afresh, without donation)
    plain, _ = _step_program(make_opt)
    assert plain.alias_size_in_bytes == 0

    def held(m):
        return m.output_size_in_bytes - m.alias_size_in_bytes + m.temp_size_in_bytes

    assert held(ma) <= held(plain) - big


@pytest.mark.parametrize("make_opt", [_sgd, _adam])
def test_donation_keeps_the_bits_and_the_compiles(fused, make_opt, monkeypatch):
    monkeypatch.setattr(_lazy, "_programs", OrderedDict())
    before = fusion_stats()
    losses, params, _ = _train(5, make_opt)
    mid = fusion_stats()
    assert mid["donated_bytes"] - before["donated_bytes"] >= 3 * 4 * W * W * 4  # 3 compiled steps, 2 weights + grads
    monkeypatch.setattr(_lazy, "_DONATE_MIN", float("inf"))
    monkeypatch.setattr(_lazy, "_programs", OrderedDict())
    losses0, params0, _ = _train(5, make_opt)
    after = fusion_stats()
    assert after["donated_bytes"] == mid["donated_bytes"]
    assert losses == losses0
    for a, b in zip(params, params0):
        np.testing.assert_array_equal(a, b)
    assert mid["segment_compiles"] - before["segment_compiles"] == after["segment_compiles"] - mid["segment_compiles"]


def test_an_array_the_user_still_holds_is_not_overwritten(fused):
    """An input chosen for donation when the program compiled but referenced elsewhere on a later
    run (a weight's array, a numpy view of one) is copied first: what
    the user holds keeps its values, and the step's results are the same."""

    def keep(m):
        held = [m[0].weight._data, m[2].weight.numpy()]
        return [(a, np.array(a, copy=True)) for a in held]

    losses, params, kept = _train(5, _sgd, keep=keep)
    for a, values in kept:
        np.testing.assert_array_equal(np.asarray(a), values)
    losses0, params0, _ = _train(5, _sgd)
    assert losses == losses0
    for a, b in zip(params, params0):
        np.testing.assert_array_equal(a, b)


def test_an_input_read_after_the_step_is_not_donated(fused):
    """A value recorded in a segment and read again later is not donated: only inputs nothing
    else references are."""
    x = fjax.tensor(np.ones((W, W), np.float32))
    for _ in range(3):
        y = x * 2
        y.sum().item()
    np.testing.assert_array_equal(x.numpy(), np.ones((W, W), np.float32))
