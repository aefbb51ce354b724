"""Whole PyTorch training programs (``tests/programs/mock_*.py``) on torch and on fjax.

Each program is plain PyTorch with a ``main(steps, seed)`` that returns its losses (and a few
evaluation numbers). It is loaded twice, as in ``test_mock_torch.py``: once against real torch
(the oracle) and once under ``fjax.mock_torch``, where ``import torch`` gives fjax; both start
from the same numpy-initialised weights and data, so the ten steps must agree to 1e-5 relative.
A program that fjax cannot run yet is an ``xfail(strict=True)`` naming the missing behaviour, so
that it turns into a failure (to be un-marked) once fjax has it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch as real_torch

import fjax
import fjax.mock_torch as mock_torch

PROGRAMS = Path(__file__).parent / "programs"

CASES = [
    "mock_vae",
    "mock_dcgan",
    "mock_transformer_lm",
    "mock_seq2seq",
    "mock_maml",
    "mock_per_sample_grads",
    "mock_legacy_policy",
    "mock_lstm_lbfgs",
    "mock_gnn",
    "mock_diffusion",
    "mock_normalizing_flow",
    "mock_actor_critic",
    "mock_wgan_gp",
    "mock_pinn",
    "mock_scripted_vit",
]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch_modules():
    return {name: mod for name, mod in sys.modules.items() if name == "torch" or name.startswith("torch.")}


@pytest.fixture(autouse=True)
def _always_disabled():
    before = _torch_modules()
    yield
    mock_torch.disable()
    after = _torch_modules()
    assert all(after.get(name) is mod for name, mod in before.items())


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """The oracle's tiny ops on one thread: idle intra-op workers spin and slow a shared machine."""
    threads = real_torch.get_num_threads()
    real_torch.set_num_threads(1)
    yield
    real_torch.set_num_threads(threads)


@pytest.mark.parametrize("program", CASES)
def test_program_trains_as_on_torch(program):
    path = PROGRAMS / f"{program}.py"
    want = _load(path, f"{program}_on_torch").main(10, 0)
    with mock_torch.enable():
        on_fjax = _load(path, f"{program}_on_fjax")
        assert on_fjax.torch is fjax
        got = on_fjax.main(10, 0)
    assert len(got) == len(want)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert want[0] != want[-1]
