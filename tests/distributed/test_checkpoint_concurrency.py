"""Step checkpoints saved from several threads at once: none fails, none is half-written,
max_to_keep holds, and the latest step always loads."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import fjax
from fjax import nn
from fjax.distributed import checkpoint


@pytest.mark.parametrize("max_to_keep", [None, 3])
def test_concurrent_step_saves(tmp_path, max_to_keep):
    directory = str(tmp_path / "ckpt")
    models = {s: nn.Linear(3, 2) for s in range(9)}
    for s, m in models.items():
        with fjax.no_grad():
            m.weight.fill_(float(s))
    errors = []

    def saver(steps):
        for s in steps:
            try:
                checkpoint.save(directory, {"m": models[s]}, s, max_to_keep=max_to_keep)
            except Exception as err:  # noqa: BLE001 - reported below
                errors.append((s, err))

    threads = [threading.Thread(target=saver, args=(range(i, 9, 3),)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    steps = sorted(int(n) for n in os.listdir(directory) if n.isdigit())
    if max_to_keep is None:
        assert steps == list(range(9))
    else:
        assert len(steps) == max_to_keep, steps
    for s in steps:  # every kept step is whole and holds its own values
        m = nn.Linear(3, 2)
        assert checkpoint.load(directory, {"m": m}, s) == s
        np.testing.assert_array_equal(m.weight.detach().numpy(), np.full((2, 3), float(s), np.float32))
    latest = checkpoint.latest_step(directory)
    assert latest == max(steps)
    assert checkpoint.load(directory, {"m": nn.Linear(3, 2)}) == latest
