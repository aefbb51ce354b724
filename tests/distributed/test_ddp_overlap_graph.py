"""nn.Graph data parallel: where XLA places the gradient all-reduces relative to the backward ops,
read from the compiled program of a step on 8 simulated CPU devices (a subprocess, so that
XLA_FLAGS is set before jax starts). Run as a script (``python test_ddp_overlap_graph.py worker
OUT``) this file is that subprocess.
"""

from __future__ import annotations

import doctest
import json
import os
import pathlib
import subprocess
import sys

import pytest

WIDTH, DEPTH = 64, 4


def schedule_of_dp_step(devices: int = 8) -> tuple[dict, int]:
    """Compile a DP training step over ``devices`` and return (its collective schedule, its
    parameters' element count)."""
    import fjax
    from fjax import nn
    from fjax.nn.parallel.schedule import collective_schedule

    class Train(nn.Graph):
        def __init__(self, model):
            super().__init__()
            self.model = model
            self.add_optimizer(fjax.optim.SGD(model.parameters(), lr=0.1))
            self.config.set_mesh({"mesh": {"data": devices}})

        def build(self, x):
            loss = self.model(x).square().mean()
            loss.backward()
            return loss

    model = nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(DEPTH)])
    graph = Train(model)
    graph(fjax.randn(4 * devices, WIDTH))
    text = graph._executables.last("stablehlo").lowered.compile().as_text()
    return collective_schedule(text), sum(p.numel() for p in model.parameters())


def _worker(out: str) -> None:
    schedule, n_params = schedule_of_dp_step()
    pathlib.Path(out, "schedule.json").write_text(json.dumps({"schedule": schedule, "params": n_params}))


def test_schedule_helper_examples_and_errors():
    from fjax.nn.parallel import schedule

    assert doctest.testmod(schedule).failed == 0
    with pytest.raises(ValueError, match="no ENTRY computation"):
        schedule.collective_schedule("HloModule m")


def test_dp_graph_all_reduces_every_gradient_after_backward_ops(tmp_path):
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, __file__, "worker", str(tmp_path)], env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads((tmp_path / "schedule.json").read_text())
    schedule, n_params = got["schedule"], got["params"]
    reduces = [c for c in schedule["collectives"] if c["opcode"].startswith("all-reduce")]
    assert reduces and schedule["backward"], schedule
    # every gradient is summed over the data axis exactly once (the loss's mean adds one scalar)
    assert sum(c["elements"] for c in reduces) == n_params + 1, (reduces, n_params)
    # each all-reduce waits for backward ops; on CPU XLA combines them into one after the last
    assert all(c["after_backward_ops"] > 0 for c in reduces)
    print(reduces, len(schedule["backward"]))


if __name__ == "__main__" and sys.argv[1:2] == ["worker"]:
    _worker(sys.argv[2])
