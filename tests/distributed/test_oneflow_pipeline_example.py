"""examples/oneflow_pipeline.py (OneFlow's pipeline tutorial, only the import changed) runs in its own
process on 2 virtual devices, and its 20 pipelined steps give the weights and last losses of the
same training done eagerly on one device (2 micro-batches: mean of their gradients)."""

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
got = {k: v.numpy().tolist() for k, v in ns["module_pipeline"].state_dict().items()}
got_loss = ns["loss"].to_local().numpy().tolist()

flow.manual_seed(seed)  # the script's draws in its order: stage 0, stage 1, x, y
model = flow.nn.Sequential(ns["Stage0Module"](), ns["Stage1Module"]())
x, y = flow.randn(16, 1, 28, 28), flow.randint(0, 10, (16,))
opt = flow.optim.SGD(model.parameters(), lr=0.001)
loss_fn = flow.nn.CrossEntropyLoss()
for _ in range(20):
    opt.zero_grad()
    micro = [loss_fn(model(x[i : i + 8]), y[i : i + 8]) for i in (0, 8)]
    ((micro[0] + micro[1]) / 2).backward()
    opt.step()
want = {k.replace("0.", "m_stage0.", 1).replace("1.", "m_stage1.", 1): v.numpy().tolist()
        for k, v in model.state_dict().items()}
print(json.dumps({"got": got, "want": want, "got_loss": got_loss, "want_loss": [m.item() for m in micro],
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
    assert len(lines) == 21 and lines[0].startswith("tensor(["), out.stdout[-2000:]  # the script's 20 prints
    result = json.loads(lines[-1])
    assert result["devices"] == 2
    np.testing.assert_allclose(result["got_loss"], result["want_loss"], rtol=1e-5, err_msg=f"seed {seed}")
    assert result["got"].keys() == result["want"].keys()
    for k, v in result["want"].items():
        np.testing.assert_allclose(result["got"][k], v, rtol=1e-5, atol=1e-6, err_msg=f"seed {seed}: {k}")
