"""benchmarks/dynamic_shapes.py's programs at --quick sizes: fjax (under mock_torch) against torch.

Correctness only: the decode loop's tokens equal torch's, and each training case's first losses
match torch's on the same numpy weights and data; the harness's row is filled in."""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "dynamic_shapes.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("dynamic_shapes_bench", PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["dynamic_shapes_bench"] = module
    spec.loader.exec_module(module)
    module.on_torch, module.on_fjax = module.load(False), module.load(True)
    return module


def _both(bench, case, steps, seed):
    torch_run = bench.run(bench.on_torch, case, bench.QUICK, seed, steps, False)
    fjax_run = bench.run(bench.on_fjax, case, bench.QUICK, seed, steps, True)
    return torch_run, fjax_run


def test_decode_tokens_equal_torch(bench):
    seed = int(np.random.default_rng().integers(1 << 30))
    torch_run, fjax_run = _both(bench, "decode", 4, seed)
    assert len(fjax_run["values"]) == 4
    assert fjax_run["values"] == torch_run["values"], f"seed {seed}"
    assert fjax_run["compiles"] >= 0 and len(fjax_run["times"]) == 4


@pytest.mark.parametrize("case, steps", [("moe", 2), ("varbatch", 1), ("graph", 1)])
def test_training_losses_match_torch(bench, case, steps):
    seed = int(np.random.default_rng().integers(1 << 30))
    torch_run, fjax_run = _both(bench, case, steps, seed)
    t, f = torch_run["values"], fjax_run["values"]
    assert len(f) == steps and math.isfinite(f[0]) and f[0] > 0
    assert f[0] == pytest.approx(t[0], rel=1e-4, abs=1e-6), f"{case} step 1, seed {seed}"
    if steps > 1:  # after one optimizer step
        assert f[1] == pytest.approx(t[1], rel=1e-3, abs=1e-5), f"{case} step 2, seed {seed}"


def test_measure_row(bench):
    row = bench.measure("varbatch", bench.QUICK, 2, warmup=1, on_torch=bench.on_torch, on_fjax=bench.on_fjax)
    assert row["case"] == "varbatch" and row["unit"] == "step" and row["steps"] == 2
    for key in ("torch_med", "fjax_med", "torch_mean", "fjax_mean", "torch_rep", "fjax_rep"):
        assert row[key] > 0, key
    assert row["compiles"] >= 0
    assert {"hits", "compiles", "segment_hits", "segment_compiles"} <= set(row["fusion"])
    assert row["waste"] == "n/a" or row["waste"].endswith("%")
