"""examples/oneflow_pipeline.py (a OneFlow-style pipeline script: stage modules to_global'd to their
placements, set_stage, gradient accumulation) runs in its own process on 2 virtual devices, and
its pipelined steps give the weights and last losses of the same training done eagerly on one
device (3 micro-batches: mean of their gradients)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "oneflow_pipeline.py"

HARNESS = r"""
import json, runpy, sys
import jax
import fjax as flow

seed = int(sys.argv[2])
flow.manual_seed(seed)
ns = runpy.run_path(sys.argv[1])
got = {k: v.numpy().tolist() for k, v in ns["model"].state_dict().items()}
got_loss = ns["loss"].to_local().numpy().tolist()

flow.manual_seed(seed)  # the script's draws in its order: encoder, head, records, labels
model = flow.nn.Sequential(ns["Encoder"](), ns["Head"]())
n, micro = ns["BATCH"], ns["BATCH"] // ns["MICRO_BATCHES"]
x, y = flow.randn(n, ns["FEATURES"]), flow.randint(0, ns["CLASSES"], (n,))
opt = flow.optim.SGD(model.parameters(), lr=0.05)
loss_fn = flow.nn.CrossEntropyLoss()
for _ in range(ns["STEPS"]):
    opt.zero_grad()
    losses = [loss_fn(model(x[i : i + micro]), y[i : i + micro]) for i in range(0, n, micro)]
    (sum(losses) / len(losses)).backward()
    opt.step()
want = {k.replace("0.", "encoder.", 1).replace("1.", "head.", 1): v.numpy().tolist()
        for k, v in model.state_dict().items()}
print(json.dumps({"got": got, "want": want, "got_loss": got_loss, "want_loss": [m.item() for m in losses],
                  "devices": jax.device_count()}))
"""


def test_oneflow_pipeline_script_matches_eager_one_device():
    seed = int(np.random.SeedSequence().entropy % 2**31)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # the script sets it itself
    out = subprocess.run(
        [sys.executable, "-c", HARNESS, str(SCRIPT), str(seed)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 16 and lines[0].startswith("tensor(["), out.stdout[-2000:]  # the script's 15 prints
    result = json.loads(lines[-1])
    assert result["devices"] == 2
    np.testing.assert_allclose(result["got_loss"], result["want_loss"], rtol=1e-5, err_msg=f"seed {seed}")
    assert result["got"].keys() == result["want"].keys()
    for k, v in result["want"].items():
        np.testing.assert_allclose(result["got"][k], v, rtol=1e-5, atol=1e-6, err_msg=f"seed {seed}: {k}")
