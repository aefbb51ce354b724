"""Eager fusion of the backward (``fjax.config.eager_fusion``): the whole backward runs as one
compiled program, reused by every backward of the same tape structure (with ``_FUSE_AFTER`` set,
after that many node-by-node walks). Gradients equal torch's and the node-by-node walk's;
what cannot be fused (hooks, custom Functions) falls back and says why."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import fjax
from fjax.autograd import engine


@pytest.fixture
def fusion():
    """Fusion on, fused from the second sight of a structure, counters reset."""
    saved = fjax.config.eager_fusion, engine._FUSE_AFTER
    fjax.config.eager_fusion, engine._FUSE_AFTER = True, 1
    engine._FUSED.clear()
    before = fjax.profiler.fusion_stats()
    yield lambda: {
        k: fjax.profiler.fusion_stats()[k] - before[k] if k != "unfused" else fjax.profiler.fusion_stats()[k]
        for k in before
    }
    fjax.config.eager_fusion, engine._FUSE_AFTER = saved


def _mlp_params(lib, rng):
    shapes = [(6, 16), (16,), (16, 3), (3,)]
    return [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in shapes]


def _mlp_loss(lib, params, x):
    w1, b1, w2, b2 = params
    h = (x @ w1 + b1).tanh()
    out = (h @ w2 + b2).split([1, 2], dim=1)  # a multi-output node with both outputs used
    return out[0].pow(2).mean() + out[1].sigmoid().sum()


def test_training_steps_match_torch_and_fuse(fusion):
    rng = np.random.default_rng(0)
    init = [p.detach().numpy() for p in _mlp_params(torch, rng)]
    fp = [fjax.tensor(a, requires_grad=True) for a in init]
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    for step in range(4):
        x = rng.standard_normal((5, 6)).astype(np.float32)
        fl, tl = _mlp_loss(fjax, fp, fjax.tensor(x)), _mlp_loss(torch, tp, torch.tensor(x))
        fl.backward()
        tl.backward()
        for f, t in zip(fp, tp):
            np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"step {step}")
            with torch.no_grad():
                t -= 0.1 * t.grad
                t.grad = None
            with fjax.no_grad():
                f -= 0.1 * f.grad
                f.grad = None
    stats = fusion()
    assert stats["compiles"] == 1 and stats["hits"] == 3, stats
    assert stats["unfused"].get("first sight", 0) >= 1


def test_grad_accumulates_into_existing_grad(fusion):
    w = fjax.tensor([1.0, -2.0, 3.0], requires_grad=True)
    for _ in range(3):
        (w * w).sin().sum().backward()
    expected = 3 * np.cos(w.detach().numpy() ** 2) * 2 * w.detach().numpy()
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-6, atol=1e-6)
    assert fusion()["hits"] == 2


def test_autograd_grad_of_intermediates_and_unused_outputs(fusion):
    """``autograd.grad`` wanting a non-leaf, a leaf and an unused chunk (zeros filled in)."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    results = []
    for lib in (torch, fjax, fjax, fjax):
        x = lib.tensor(a, requires_grad=True)
        h = x.exp()
        p, q, r = h.chunk(3, dim=1)  # r is unused: its cotangent is zeros
        loss = (p * q).sum()
        results.append([g.numpy() if lib is fjax else g.detach().numpy() for g in lib.autograd.grad(loss, [h, x])])
    for got in results[1:]:
        for g, t in zip(got, results[0]):
            np.testing.assert_allclose(g, t, rtol=1e-5, atol=1e-6)
    assert fusion()["hits"] == 2


def test_retain_graph_twice_and_release(fusion):
    w = fjax.tensor([0.5, 1.5], requires_grad=True)
    for _ in range(2):
        loss = (w.exp() * w).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        with pytest.raises(RuntimeError, match="a second time"):
            loss.backward()
    x = w.detach().numpy()
    np.testing.assert_allclose(w.grad.numpy(), 4 * (np.exp(x) * x + np.exp(x)), rtol=1e-6, atol=1e-6)
    assert fusion()["hits"] >= 2


def test_inplace_modification_still_raises(fusion):
    for _ in range(3):
        w = fjax.tensor([1.0, 2.0], requires_grad=True)
        y = w * 1.0
        z = y.sin()
        z.sum().backward()  # the structure is seen (and then fused)
        y2 = w * 1.0
        z2 = y2.sin()
        y2.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z2.sum().backward()


def test_hooks_and_custom_functions_fall_back(fusion):
    seen = []
    w = fjax.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        y = w * 3.0
        y.register_hook(lambda g: seen.append(g.numpy()) or g * 2)
        y.sum().backward()
    assert len(seen) == 3
    np.testing.assert_allclose(w.grad.numpy(), [18.0, 18.0])

    class Square(fjax.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    v = fjax.tensor([3.0], requires_grad=True)
    for _ in range(3):
        Square.apply(v).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), [18.0])
    stats = fusion()
    assert stats["hits"] == 0
    assert stats["unfused"].get("hooks", 0) >= 3 and stats["unfused"].get("custom Function", 0) >= 3


def test_off_switch(fusion):
    fjax.config.eager_fusion = False
    w = fjax.tensor([1.0], requires_grad=True)
    for _ in range(3):
        (w * 2).sum().backward()
    assert fusion()["hits"] == 0 and fusion()["compiles"] == 0
    np.testing.assert_allclose(w.grad.numpy(), [6.0])


def test_leaf_root_and_shared_leaf(fusion):
    """A leaf as one of the roots, a leaf reached along two paths, and no compile per step after
    warm-up."""
    w = fjax.tensor([1.0, 2.0], requires_grad=True)
    counts = []
    for _ in range(5):  # (the forward's recorded segment compiles on its second sight: step 3)
        before = fjax.profiler.compile_count()
        fjax.autograd.backward([w, (w * w).sum() + w.sum()], [fjax.ones(2), fjax.tensor(1.0)])
        counts.append(fjax.profiler.compile_count() - before)
    np.testing.assert_allclose(w.grad.numpy(), 5 * (1 + 2 * np.array([1.0, 2.0]) + 1))
    assert counts[-1] == 0 and counts[-2] == 0, counts


def test_by_default_every_backward_is_fused_and_history_does_not_change_bits():
    """Training the same model twice in one process gives the same bits: the first backward of a
    structure is fused too (a first node-by-node run would round differently)."""
    saved = fjax.config.eager_fusion, engine._FUSE_AFTER
    fjax.config.eager_fusion, engine._FUSE_AFTER = True, 0
    try:
        runs = []
        for _ in range(2):
            fjax.manual_seed(3)
            m = fjax.nn.Sequential(fjax.nn.Linear(5, 7), fjax.nn.Tanh(), fjax.nn.Linear(7, 1))
            opt = fjax.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
            x = fjax.randn(9, 5)
            for _ in range(3):
                opt.zero_grad()
                m(x).pow(2).mean().backward()
                opt.step()
            runs.append([p.numpy().copy() for p in m.parameters()])
        for a, b in zip(*runs):
            np.testing.assert_array_equal(a, b)
    finally:
        fjax.config.eager_fusion, engine._FUSE_AFTER = saved


def test_a_structure_at_many_shape_combinations_runs_node_by_node(monkeypatch):
    """Two batches whose sizes vary apart (routed experts) give one structure many shape
    signatures: past ``_SHAPES_MAX`` a new combination of shapes it saw walks node by node (no
    compile of the whole backward per combination), and the gradients stay torch's."""
    monkeypatch.setattr(engine, "_SHAPES_MAX", 2)
    monkeypatch.setattr(fjax.config, "eager_fusion", True)
    rng = np.random.default_rng()
    w0 = rng.standard_normal((5, 3)).astype(np.float32)
    fw, tw = fjax.tensor(w0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    before = fjax.profiler.fusion_stats()["unfused"].get("shapes vary", 0)
    for a, b in [(4, 4), (4, 6), (6, 4), (6, 6), (4, 4)]:
        xa, xb = rng.standard_normal((a, 5)).astype(np.float32), rng.standard_normal((b, 5)).astype(np.float32)
        for lib, w in ((fjax, fw), (torch, tw)):
            w.grad = None
            ((lib.tensor(xa) @ w).tanh().sum() + (lib.tensor(xb) @ w).square().sum()).backward()
        np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"{(a, b)}")
    # (4, 4), (4, 6), (6, 4) compile; (6, 6) combines shapes seen: node by node; (4, 4) compiled
    assert fjax.profiler.fusion_stats()["unfused"].get("shapes vary", 0) - before == 1


_LOGITS_STEP = """
import json
import numpy as np
import fjax, fjax.nn as nn, fjax.nn.functional as F
fjax.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 4000))
opt = fjax.optim.SGD(model.parameters(), lr=0.01)
rng = np.random.default_rng(0)
x = fjax.tensor(rng.standard_normal((512, 64)).astype(np.float32))
y = fjax.tensor(rng.integers(0, 4000, 512))

def step():
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss

losses = [step().item() for _ in range(2)]
fjax.cuda.reset_peak_memory_stats()
losses.append(step().item())
state = sum(p.numel() * 4 for p in model.parameters())
print(json.dumps({"peak": fjax.cuda.max_memory_allocated(), "state": state, "logits": 512 * 4000 * 4}))
"""


def test_a_fused_step_frees_the_logits_before_the_backward_peak(tmp_path):
    """The fused backward starts once the loss's value exists (``_backward_program``'s awaited
    roots), so the logits, which only the loss and its gradient read, are freed early instead of
    kept until XLA computes the loss output at the end; on the CPU the order is a real data
    dependence (``fjax._order.after``: XLA:CPU drops optimization barriers). With XLA's
    memory-aware CPU scheduler this step held 3.06 logits-sized buffers beyond parameters and
    gradients at its peak, 2.56 now."""
    script = tmp_path / "step.py"
    script.write_text(_LOGITS_STEP)
    env = {**os.environ, "XLA_FLAGS": "--xla_cpu_enable_concurrency_optimized_scheduler=false"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    held = (out["peak"] - 2 * out["state"]) / out["logits"]
    assert held < 2.8, out
