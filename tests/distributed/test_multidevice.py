"""Runs tests/distributed/multidevice/ in a fresh pytest process with 8 virtual CPU devices.

XLA_FLAGS must be set before jax starts, so these tests cannot share this process.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys


def test_multidevice_suite():
    here = pathlib.Path(__file__).parent / "multidevice"
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "FJAX_MULTIDEVICE": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", str(here), "-q", "-p", "no:cacheprovider", "-o", "addopts="],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-8000:] + out.stderr[-3000:]
