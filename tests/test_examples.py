"""examples/ run end to end in their own process (as a user would start them)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
SMALL = ["--steps", "3", "--batch", "8", "--seq", "16", "--dim", "32", "--layers", "1", "--lr", "1e-2"]


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # the script must set it itself
    env.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.expanduser("~/.cache/fjax-tests"))
    return subprocess.run(
        [sys.executable, str(EXAMPLES / "gpt_mesh.py"), *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_gpt_mesh_trains_three_steps_under_a_yaml_config(tmp_path):
    config = tmp_path / "mesh.yaml"
    config.write_text(
        "mesh: {data: 4, model: 2}\ntensor_parallel: {column: ['*.qkv', '*.fc1'], row: ['*.proj', '*.fc2']}"
    )
    proc = _run("--mesh", str(config), *SMALL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "mesh {'data': 4, 'model': 2} (8 devices)" in proc.stdout
    losses = [float(x) for x in re.findall(r"step \d/3 loss (\S+)", proc.stdout)]
    assert len(losses) == 3 and np.isfinite(losses).all() and losses[-1] < losses[0], proc.stdout
    assert "split(dim=0)" in proc.stdout  # fc1 is column-parallel over the model axis
    assert "3/3" in proc.stderr  # the progress bar
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert abs(summary["last_loss"] - losses[-1]) <= 5e-5
