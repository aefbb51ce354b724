"""Sharded checkpoints: round trip, resharding onto another mesh, killed saves, clear errors."""

from __future__ import annotations

import glob
import os
import pathlib
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fjax
import fjax.nn as nn
import fjax.optim as optim
from fjax.distributed import checkpoint

sys.path.insert(0, str(pathlib.Path(__file__).parents[3] / "examples"))
from gpt import TrainGraph  # noqa: E402
from test_mesh import MLP  # noqa: E402  (the same two-layer MLP)

SEED = random.randrange(2**31)


ZERO3 = {"mesh": {"data": 8}, "zero_stage": 3}
TP = {"mesh": {"data": 2, "model": 4}, "tensor_parallel": {"column": ["model.fc1"], "row": ["model.fc2"]}}


def _data(rng, n):
    return [
        (fjax.tensor(rng.standard_normal((32, 16)), dtype=fjax.float32), fjax.tensor(rng.integers(0, 8, 32)))
        for _ in range(n)
    ]


def _graph(mesh, seed, lr=3e-3):
    fjax.manual_seed(seed)
    model = MLP()
    return TrainGraph(model, lr, mesh), model


def _values(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


def test_graph_checkpoint_reshards_onto_another_mesh(tmp_path):
    data = _data(np.random.default_rng(SEED), 6)
    g, model = _graph(ZERO3, 0)
    for x, y in data[:3]:
        g(x, y)
    assert model.fc1.weight.sbp == (fjax.sbp.split(0),)  # ZeRO-3: parameters sharded over data
    checkpoint.save(tmp_path, g, step=3)
    saved = _values(model)
    expected = [g(x, y).item() for x, y in data[3:]]

    g2, model2 = _graph(TP, 1, lr=1.0)  # another mesh, other initial values and lr
    assert checkpoint.load(tmp_path, g2) == 3
    assert g2._optimizers[0].param_groups[0]["lr"] == pytest.approx(3e-3)
    assert model2.fc1.weight.sbp == (fjax.sbp.broadcast, fjax.sbp.split(0))  # read straight into TP's layout
    assert model2.fc2.weight.sbp == (fjax.sbp.broadcast, fjax.sbp.split(1))
    for k, v in _values(model2).items():
        np.testing.assert_array_equal(v, saved[k], err_msg=f"{k} seed={SEED}")
    losses = [g2(x, y).item() for x, y in data[3:]]
    np.testing.assert_allclose(losses, expected, rtol=1e-5, atol=1e-6, err_msg=f"seed={SEED}")


def _mlp_bn():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8)), nn.BatchNorm1d(8)


def test_modules_and_optimizers_round_trip_and_partial_load(tmp_path):
    rng = np.random.default_rng(SEED)
    fjax.manual_seed(SEED)
    model, bn = _mlp_bn()
    fjax.distributed.module_to_global(model, fjax.placement("cpu", list(range(8))), fjax.sbp.split(0))
    opt = optim.Adam(model.parameters(), lr=1e-2, betas=(0.8, 0.9))
    for _ in range(2):
        loss = bn(model(fjax.tensor(rng.standard_normal((8, 8)), dtype=fjax.float32))).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    target = {"model": model, "bn": bn, "opt": opt}
    saved = {**_values(model), **{f"bn.{k}": v for k, v in _values(bn).items()}}
    checkpoint.save(tmp_path, target, step=7)
    local, local_bn = _mlp_bn()  # one device, no mesh
    local_opt = optim.Adam(local.parameters(), lr=5.0)
    checkpoint.load(tmp_path, {"model": local, "bn": local_bn, "opt": local_opt})
    assert local_opt.param_groups[0]["betas"] == (0.8, 0.9) and local_opt.param_groups[0]["lr"] == 1e-2
    got = {**_values(local), **{f"bn.{k}": v for k, v in _values(local_bn).items()}}
    assert set(got) == set(saved) and "bn.running_var" in got
    for k, v in saved.items():
        np.testing.assert_array_equal(got[k], v, err_msg=f"{k} seed={SEED}")
    ref, new = opt.state_dict()["state"], local_opt.state_dict()["state"]
    for i in ref:
        for k in ref[i]:
            np.testing.assert_array_equal(new[i][k].numpy(), ref[i][k].numpy(), err_msg=f"state {i}.{k}")
    weights_only, _ = _mlp_bn()
    checkpoint.load(tmp_path, {"model": weights_only}, strict=False)
    np.testing.assert_array_equal(weights_only[2].weight.detach().numpy(), saved["2.weight"])


def test_clear_errors(tmp_path):
    model = nn.Linear(4, 4)
    checkpoint.save(tmp_path, model, step=1)
    with pytest.raises(fjax.OpError, match="step 1 already exists"):
        checkpoint.save(tmp_path, model, step=1)
    with pytest.raises(fjax.OpError, match=r"weight: saved \(4, 4\):float32, expected \(3, 4\):float32"):
        checkpoint.load(tmp_path, nn.Linear(4, 3))
    with pytest.raises(fjax.OpError, match="missing keys"):
        checkpoint.load(tmp_path, nn.Sequential(nn.Linear(4, 4)))
    with pytest.raises(fjax.OpError, match="step 5 is not in"):
        checkpoint.load(tmp_path, model, step=5)
    with pytest.raises(fjax.OpError, match="no checkpoint folder"):
        checkpoint.load(tmp_path / "nowhere", model)
    with pytest.raises(fjax.OpError, match="expected a Module, an Optimizer"):
        checkpoint.save(tmp_path, {"x": 3}, step=2)


_KILLED_SAVE = """
import os, signal, sys
import numpy as np
import fjax
from fjax.distributed import checkpoint
from orbax.checkpoint._src.path import atomicity

model = fjax.nn.Linear(8, 16)
fjax.distributed.module_to_global(model, fjax.placement("cpu", list(range(8))), fjax.sbp.split(0))
checkpoint.save(sys.argv[1], model, step=1, max_to_keep=1)
np.save(sys.argv[2], model.weight.detach().numpy())
model.weight.data.fill_(7.0)

async def die(self):  # every array of step 2 is written; the process dies before the rename
    os.kill(os.getpid(), signal.SIGKILL)

atomicity.AtomicRenameTemporaryPath.finalize = die
checkpoint.save(sys.argv[1], model, step=2, max_to_keep=1)
"""


def test_killed_save_keeps_the_previous_checkpoint(tmp_path):
    ckpt, weight = tmp_path / "ckpt", tmp_path / "w.npy"
    script = tmp_path / "killed_save.py"
    script.write_text(textwrap.dedent(_KILLED_SAVE))
    proc = subprocess.run([sys.executable, str(script), str(ckpt), str(weight)], capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr[-3000:]
    tmp_dirs = glob.glob(os.path.join(ckpt, "2.orbax-checkpoint-tmp*"))
    assert tmp_dirs, os.listdir(ckpt)  # step 2 was written to a temporary folder, never renamed
    assert sorted(os.listdir(ckpt)) == sorted(["1"] + [os.path.basename(d) for d in tmp_dirs])
    assert checkpoint.latest_step(ckpt) == 1
    model = nn.Linear(8, 16)
    assert checkpoint.load(ckpt, model) == 1
    np.testing.assert_array_equal(model.weight.detach().numpy(), np.load(weight))
    checkpoint.save(ckpt, model, step=2, max_to_keep=1)  # the next save succeeds and keeps one step
    assert os.listdir(ckpt) == ["2"] and checkpoint.latest_step(ckpt) == 2
