"""Runs with XLA_FLAGS=--xla_force_host_platform_device_count=8 (set by test_multidevice.py)."""

import jax
import pytest


@pytest.fixture(autouse=True)
def _eight_devices():
    assert jax.device_count() == 8, "run through tests/distributed/test_multidevice.py"
