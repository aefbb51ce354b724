"""What a forward keeps for backward is released by backward (jax.live_arrays)."""

from __future__ import annotations

import gc

import jax
import numpy as np

import fjax


def _live_ids():
    gc.collect()
    return {id(a) for a in jax.live_arrays()}


def test_50_layer_mlp_frees_everything_but_params_inputs_outputs_and_grads():
    rng = np.random.default_rng(0)
    width, depth = 32, 50
    params = [
        fjax.tensor(rng.standard_normal((width, width)) / np.sqrt(width), dtype=fjax.float32, requires_grad=True)
        for _ in range(depth)
    ]
    x = fjax.tensor(rng.standard_normal((16, width)), dtype=fjax.float32)

    def forward():
        h = x
        for w in params:
            h = (h @ w).tanh()
        return h.sum()

    forward().backward()  # warm up: compile caches hold no arrays of ours
    for p in params:
        p.grad = None
    before = _live_ids()
    loss = forward()
    fjax.sync()  # eager fusion records the forward: run it
    during = _live_ids()
    assert len(during - before) >= depth, "the forward should hold residuals for backward"
    copies = [a for a in jax.live_arrays() if id(a) in during - before and a.shape == (width, width)]
    assert not copies, f"the tape holds {len(copies)} copies of weights: residuals that are inputs must be shared"
    loss.backward()
    after = _live_ids()
    expected = {id(loss._data)} | {id(p.grad._data) for p in params}
    leaked = after - before - expected
    assert not leaked, f"{len(leaked)} arrays outlived backward: " + ", ".join(
        f"{a.dtype}{list(a.shape)}" for a in jax.live_arrays() if id(a) in leaked
    )
