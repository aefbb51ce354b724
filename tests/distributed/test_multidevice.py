"""Runs tests/distributed/multidevice/ in fresh pytest processes with 8 virtual CPU devices.

XLA_FLAGS must be set before jax starts, so these tests cannot share this process. The files run
in two halves (two processes), so that `pytest -n 2` runs them side by side and neither half
comes near the per-test timeout on a loaded machine.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).parent / "multidevice"
FILES = sorted(p.name for p in HERE.glob("test_*.py"))
# (the auto-pipeline tests run with the rest: the halves take ~90 s and ~155 s on a quiet machine)
HALVES = {"pipeline": [f for f in FILES if f.startswith("test_pipeline") and f != "test_pipeline_auto.py"]}
HALVES["rest"] = [f for f in FILES if f not in HALVES["pipeline"]]


@pytest.mark.timeout(1000)
@pytest.mark.parametrize("half", list(HALVES))
def test_multidevice_suite(half):
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "FJAX_MULTIDEVICE": "1"}
    files = [str(HERE / f) for f in HALVES[half]]
    assert files, f"no multidevice test files in the {half} half"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider", "-o", "addopts="],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-8000:] + out.stderr[-3000:]
