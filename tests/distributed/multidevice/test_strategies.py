"""Strategy objects over 8 devices: DP x TP x ZeRO composed from objects trains as one device does,
lays parameters out as MeshConfig.sbp and shard_module say, and a changed ZeRO stage compiles a new step."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import fjax
import fjax.nn as nn
from fjax.distributed import DataParallel, MeshConfig, TensorParallel, ZeRO, shard_module

sys.path.insert(0, str(pathlib.Path(__file__).parents[3] / "examples"))
from gpt import TrainGraph  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 64)
        self.fc2 = nn.Linear(64, 8)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


AXES = {"data": 2, "model": 4}
TP = TensorParallel(column=["model.fc1"], row=["model.fc2"])


def _data(steps=4):
    rng = np.random.default_rng(5)
    return [(fjax.tensor(rng.standard_normal((32, 16)), dtype=fjax.float32), fjax.tensor(rng.integers(0, 8, 32)))
            for _ in range(steps)]  # fmt: skip


def _train(mesh, data):
    fjax.manual_seed(0)
    model = MLP()
    graph = TrainGraph(model, 3e-3, mesh)
    return [graph(x, y).item() for x, y in data], model, graph


def test_dp_tp_zero_objects_train_as_one_device():
    data = _data()
    base, _, _ = _train(None, data)
    cfg = MeshConfig.of(AXES, DataParallel(), TP, ZeRO(2))
    assert cfg.key() == MeshConfig.load({"mesh": AXES, "zero_stage": 2, "tensor_parallel": {
        "column": ["model.fc1"], "row": ["model.fc2"]}}).key()  # fmt: skip
    losses, model, _ = _train(cfg, data)
    np.testing.assert_allclose(losses, base, rtol=1e-5, atol=1e-6)
    named = dict(model.named_parameters())
    for name, p in named.items():  # where the graph put them is where MeshConfig.sbp says
        assert p.sbp == cfg.sbp(f"model.{name}", tuple(p.shape)), name
    assert model.fc1.weight.sbp == (fjax.sbp.broadcast, fjax.sbp.split(0))  # column-parallel over model
    fresh = shard_module(MLP(), cfg, prefix="model")  # the same layout without a graph
    assert {n: p.sbp for n, p in fresh.named_parameters()} == {n: p.sbp for n, p in named.items()}


def test_a_new_zero_stage_compiles_a_new_step():
    data = _data(3)
    fjax.manual_seed(0)
    model = MLP()
    graph = TrainGraph(model, 3e-3, MeshConfig.of({"data": 8}, DataParallel(), ZeRO(1)))
    graph(*data[0])
    assert model.fc1.weight.sbp == (fjax.sbp.broadcast,)
    graph.config.enable_zero(True, stage=3, shard_min_size=1)
    graph(*data[1])
    assert len(graph.compile_report()) == 2, "the ZeRO-3 step reused the ZeRO-1 executable"
    assert model.fc1.weight.sbp == (fjax.sbp.split(0),)  # the new step's shardings: parameters split too
    graph.config.set_mesh(MeshConfig.of({"data": 8}, ZeRO(1), DataParallel()))  # an equal value: reused
    graph(*data[2])
    assert len(graph.compile_report()) == 2


def test_a_spec_that_does_not_divide_names_strategy_parameter_shape_and_axis():
    cfg = MeshConfig.of({"data": 2, "model": 3}, TP)
    with pytest.raises(fjax.OpError, match=r"TensorParallel\(.*'model.fc1.weight' of shape \(64, 16\).*"
                                           r"cannot split a dim of 64 over axis 'model' of size 3"):  # fmt: skip
        _train(cfg, _data(1))
