"""The eager kernel cache is bounded in bytes too (``fjax.config.eager_cache_bytes``), not only in
count: past the bound the least recently used op kernels are dropped and recompile if they return."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import fjax
from fjax import dispatch, profiler

MiB = 1 << 20


@pytest.fixture
def sized(monkeypatch):
    """Op by op (no eager fusion, no bucketing), a fresh kernel cache, and each compile sized at
    exactly 1 MiB (the process-memory reading advances 1 MiB per read: two reads per compile)."""
    reads = iter(range(0, 1 << 40, MiB))
    monkeypatch.setattr(profiler, "_rss", lambda: next(reads))
    monkeypatch.setattr(fjax.config, "eager_fusion", False)
    monkeypatch.setattr(fjax.config, "bucketing", False)
    before = fjax.config.eager_cache_bytes
    dispatch.new_kernel_cache(fjax.config.eager_cache_size)
    yield
    fjax.config.eager_cache_bytes = before
    dispatch.new_kernel_cache(fjax.config.eager_cache_size)


def _compiles(fn) -> int:
    before = profiler.compile_count()
    fn()
    return profiler.compile_count() - before


def test_bytes_stay_under_the_bound_and_the_hot_kernel_survives(sized):
    fjax.config.eager_cache_bytes = 6 * MiB
    hot, cold = fjax.tensor(np.ones(3, np.float32)), fjax.tensor(np.ones(5, np.float32))
    cold.sin(), cold.cos(), cold.exp()  # three kernels, used once
    hot * 2
    for n in range(1, 25):  # a shape that changes every step: one op's kernels pile up
        fjax.tensor(np.ones(n + 10, np.float32)).tanh()
        assert dispatch.kernel_cache_bytes() <= 6 * MiB
        assert _compiles(lambda: hot * 2) == 0, f"the hot kernel was dropped after {n} new shapes"
    assert _compiles(lambda: cold.sin()) == 1, "a kernel unused since the start should have been dropped"


def test_without_pressure_nothing_is_dropped(sized):
    fjax.config.eager_cache_bytes = 1 << 40
    x = fjax.tensor(np.ones(4, np.float32))
    x.sin()
    for n in range(1, 12):
        fjax.tensor(np.ones(n + 10, np.float32)).tanh()
    assert dispatch.kernel_cache_bytes() >= 12 * MiB
    assert _compiles(lambda: x.sin()) == 0


def test_backward_appliers_count_and_are_dropped_too(sized):
    fjax.config.eager_cache_bytes = 8 * MiB
    for n in range(1, 20):
        x = fjax.tensor(np.ones(n, np.float32), requires_grad=True)
        (x.tanh() * 3).sum().backward()
        assert dispatch.kernel_cache_bytes() <= 8 * MiB
        np.testing.assert_allclose(x.grad.numpy(), 3 * (1 - np.tanh(1.0) ** 2) * np.ones(n), rtol=1e-6)


def test_config_validates_and_reads_the_environment():
    with pytest.raises(ValueError, match="eager_cache_bytes"):
        fjax.config.eager_cache_bytes = 0
    with pytest.raises(ValueError, match="eager_cache_bytes"):
        fjax.config.eager_cache_bytes = 1.5
    code = "import fjax; print(fjax.config.eager_cache_bytes)"
    env = dict(os.environ, FJAX_EAGER_CACHE_BYTES="12345678")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split()[-1] == "12345678", out.stderr[-2000:]
