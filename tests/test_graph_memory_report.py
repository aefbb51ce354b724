"""nn.Graph.memory_report: XLA's bytes attributed to parameters, optimizer state, inputs,
activations by module path and temporaries; >= 99% named; per device for sharded graphs."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fjax
import fjax.nn as nn
import fjax.nn.functional as F
from fjax.graph import memory as gm

SEED = int(np.random.default_rng().integers(2**31))


def _mlp(width):
    return nn.Sequential(nn.Linear(16, width), nn.ReLU(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 4))


class Train(nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


def _train_report(batch, width=96):
    fjax.manual_seed(SEED)
    model = _mlp(width)
    opt = fjax.optim.Adam(model.parameters(), lr=1e-3)
    g = Train(model, opt)
    rng = np.random.default_rng(SEED)
    x = fjax.tensor(rng.standard_normal((batch, 16)).astype(np.float32))
    y = fjax.tensor(rng.integers(0, 4, batch))
    g(x, y)
    return g, model, opt, (x, y), g.memory_report()


def test_training_step_report_names_every_byte():
    g, model, opt, (x, y), r = _train_report(256)
    compiled = g._executables.last("test").compiled
    m = compiled.memory_analysis()
    # XLA's own totals keep their keys
    assert r["argument_bytes"] == m.argument_size_in_bytes and r["temp_bytes"] == m.temp_size_in_bytes
    assert r["alias_bytes"] == m.alias_size_in_bytes and r["output_bytes"] == m.output_size_in_bytes
    total = r["argument_bytes"] + r["output_bytes"] - r["alias_bytes"] + r["temp_bytes"]
    assert r["total_bytes"] == total
    buckets = r["buckets"]
    assert sum(buckets.values()) == total, (buckets, total)
    assert r["attributed_fraction"] >= 0.99, str(r)
    assert buckets.get("unattributed", 0) <= 0.01 * total
    # the argument buckets are exactly the tensors the step takes
    params = sum(p.numel() * 4 for p in model.parameters())
    assert buckets["parameters"] == params
    assert buckets["inputs"] == x.numel() * 4 + y.numel() * y.element_size()
    # Adam keeps exp_avg and exp_avg_sq per parameter (and per-parameter step counts)
    assert 2 * params <= buckets["optimizer state"] <= 2 * params + 64 * len(list(model.parameters()))
    assert r["donated_bytes"] == r["alias_bytes"] >= params
    # saved activations are named by module path; the batch-sized hidden layers are there
    acts = r["activations_by_module"]
    assert set(acts) <= {"model", "<build>"} | {f"model.{i}" for i in range(5)}
    assert sum(acts.values()) >= 256 * 96 * 4 * 2, acts
    assert r["peak_bytes"] == total + r["generated_code_bytes"]
    table = str(r)
    for name in ("parameters", "optimizer state", "inputs", "activations: model.", "total (XLA's bytes)"):
        assert name in table, table


def test_activations_scale_with_the_batch_and_parameters_do_not():
    *_, small = _train_report(128)
    *_, large = _train_report(512)
    assert small["buckets"]["parameters"] == large["buckets"]["parameters"]
    assert small["buckets"]["optimizer state"] == large["buckets"]["optimizer state"]
    ratio = sum(large["activations_by_module"].values()) / sum(small["activations_by_module"].values())
    assert 3.5 <= ratio <= 4.5, (ratio, small["activations_by_module"], large["activations_by_module"])
    assert large["attributed_fraction"] >= 0.99 and small["attributed_fraction"] >= 0.99


def test_inference_graph_and_buffers():
    fjax.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(8, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 8))

    class Infer(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    g = Infer()
    out = g(fjax.randn(32, 8))
    assert out.shape == (32, 8)
    r = g.memory_report()
    b = r["buckets"]
    assert "optimizer state" not in b
    assert sum(b.values()) == r["total_bytes"] and r["attributed_fraction"] >= 0.99
    n_buffers = sum(t.numel() * t.element_size() for t in model.buffers())
    assert b.get("buffers", 0) == n_buffers  # BatchNorm's running statistics (training mode: written)
    assert b["outputs"] >= 32 * 8 * 4


def test_report_needs_a_compiled_graph():
    g = nn.Graph.trace(lambda x: x * 2)
    with pytest.raises(RuntimeError, match="memory_report.*call it first"):
        g.memory_report()


def test_protobuf_reader_round_trip():
    # field 1 varint 150, field 2 bytes "hi", field 3 packed [1, 300]
    blob = bytes([0x08, 0x96, 0x01, 0x12, 0x02]) + b"hi" + bytes([0x1A, 0x03, 0x01, 0xAC, 0x02])
    fields = gm._fields(blob)
    assert fields[1] == [150] and fields[2] == [b"hi"] and gm._ints(fields[3]) == [1, 300]


SHARDED = textwrap.dedent(
    """
    import json, numpy as np, fjax, fjax.nn as nn, fjax.nn.functional as F
    assert fjax.cuda.device_count() >= 0
    import jax; assert jax.device_count() == 8
    out = {}
    for zero in (0, 3):
        fjax.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 64))
        opt = fjax.optim.Adam(model.parameters(), lr=1e-3)
        class G(nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                self.add_optimizer(opt)
                self.config.set_mesh({"mesh": {"data": 8}, "zero_stage": zero})
            def build(self, x, y):
                loss = F.mse_loss(self.model(x), y)
                loss.backward()
                return loss
        g = G()
        g(fjax.randn(64, 64), fjax.randn(64, 64))
        r = g.memory_report()
        out[zero] = {"buckets": r["buckets"], "devices": r["devices"], "frac": r["attributed_fraction"],
                     "total": r["total_bytes"], "params": sum(p.numel() * 4 for p in model.parameters())}
    print(json.dumps(out))
    """
)


def test_sharded_graph_reports_per_device(tmp_path):
    script = tmp_path / "sharded.py"
    script.write_text(SHARDED)
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    dp, zero3 = out["0"], out["3"]
    assert dp["devices"] == zero3["devices"] == 8
    for r in (dp, zero3):
        assert r["frac"] >= 0.99 and sum(r["buckets"].values()) == r["total"]
    assert dp["buckets"]["parameters"] == dp["params"]  # replicated: every device holds all of them
    # ZeRO-3 shards the large parameters over 8 devices (tensors under 1024 elements stay whole)
    assert zero3["buckets"]["parameters"] <= dp["params"] / 8 + 4 * (512 + 64) + 64
    assert zero3["buckets"]["optimizer state"] < dp["buckets"]["optimizer state"] / 4


def test_doctests():
    from fjax.graph import graph as graph_module

    globs = {"fjax": fjax, "nn": nn, "F": F, "MemoryReport": gm.MemoryReport}
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    finder = doctest.DocTestFinder()
    tests = finder.find(gm, "fjax.graph.memory", globs=dict(globs))
    tests += finder.find(graph_module.Graph.memory_report, "memory_report", globs=dict(globs))
    assert sum(len(t.examples) for t in tests) >= 5
    for t in tests:
        runner.run(t)
    assert runner.failures == 0, f"{runner.failures} doctest failures (seed={SEED})"


def test_names_come_from_this_graph_even_when_the_executable_is_cached(monkeypatch):
    """JAX's compilation cache can hand back an executable compiled from an earlier trace of the
    same program, carrying that trace's op names: the report then compiles this graph's own."""
    from fjax.graph import step as step_module

    # each graph compiled from its own trace here (the stale executable is made by hand below)
    monkeypatch.setattr(fjax.config, "compilation_cache", None)

    def graph_of():
        fjax.manual_seed(SEED)
        model = _mlp(40)
        g = Train(model, fjax.optim.SGD(model.parameters(), lr=0.1))
        g(fjax.randn(64, 16), fjax.randint(0, 4, (64,)))
        return g

    scoped = graph_of()
    honest = scoped.memory_report()["activations_by_module"]
    assert honest and all(k.startswith("model") or k == "<build>" for k in honest)

    def unscoped(path):  # a trace without module scopes, as an older fjax or another graph made it
        def call(module, args, kwargs):
            object.__delattr__(module, "_graph_call")
            try:
                return module(*args, **kwargs)
            finally:
                object.__setattr__(module, "_graph_call", call)

        return call

    with monkeypatch.context() as m:
        m.setattr(step_module, "_scoped", unscoped)
        stale = gm._compile_uncached(graph_of()._executables.last("test").lowered)
    assert gm.analyze(stale, {}, {"model.0"}, set())["_scopes_seen"] is False
    scoped._executables.last("test").compiled = stale  # what a cache hit would have given
    again = scoped.memory_report()["activations_by_module"]
    assert again == honest
