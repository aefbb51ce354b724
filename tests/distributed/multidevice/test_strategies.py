"""Strategy objects over 8 devices: DP x TP (sequence parallel) x ZeRO composed from objects trains as one device does,
lays parameters out as MeshConfig.sbp and shard_module say, and a changed ZeRO stage compiles a new step."""

from __future__ import annotations

import pathlib
import re
import sys

import numpy as np
import pytest

import fjax
import fjax.nn as nn
from fjax.distributed import DataParallel, MeshConfig, TensorParallel, ZeRO, shard_module

sys.path.insert(0, str(pathlib.Path(__file__).parents[3] / "examples"))
from gpt import TrainGraph  # noqa: E402
from test_mesh import MLP  # noqa: E402  (the same two-layer MLP)

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


class Block(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.ln, self.fc1, self.fc2 = nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(self.fc1(self.ln(x)).relu())


class SeqTrain(nn.Graph):
    def __init__(self, model, mesh):
        super().__init__()
        self.model = model
        self.add_optimizer(fjax.optim.SGD(model.parameters(), lr=0.1))
        if mesh is not None:
            self.config.set_mesh(mesh)

    def build(self, x, y):
        loss = ((self.model(x) - y) ** 2).mean()
        loss.backward()
        return loss


def test_dp_tp_zero_sequence_parallel_objects_train_as_one_device():
    rng = np.random.default_rng(6)
    data = [(fjax.tensor(rng.standard_normal((4, 16, 64)), dtype=fjax.float32),
             fjax.tensor(rng.standard_normal((4, 16, 64)), dtype=fjax.float32)) for _ in range(2)]  # fmt: skip

    def train(mesh):
        fjax.manual_seed(0)
        model = nn.Sequential(Block(), Block())
        graph = SeqTrain(model, mesh)
        return [graph(x, y).item() for x, y in data], graph, model

    base, _, _ = train(None)
    tp = TensorParallel(column=["*.fc1"], row=["*.fc2"], sequence_parallel=True)
    cfg = MeshConfig.of(AXES, DataParallel(), tp, ZeRO(2))
    assert cfg.key() == MeshConfig.load({"mesh": AXES, "zero_stage": 2, "tensor_parallel": {
        "column": ["*.fc1"], "row": ["*.fc2"], "sequence_parallel": True}}).key()  # fmt: skip
    assert tuple(cfg.activation("model.0.fc2", (4, 16, 64)).spec) == ("data", "model", None)  # row output: split seq
    assert tuple(cfg.activation("model.0.fc1", (4, 16, 64), "in").spec) == ("data", None, None)  # column input: whole
    losses, graph, model = train(cfg)
    np.testing.assert_allclose(losses, base, rtol=1e-5, atol=1e-6)
    hlo = graph._executables.last("test").compiled.as_text()
    # sequence parallelism: the sequence (dim 1) of a (batch/2, seq, hidden) activation is all-gathered
    assert re.search(r"f32\[2,16,64\]\S* all-gather\([^\n]*dimensions=\{1\}", hlo), "no all-gather of the sequence"
    named = dict(model.named_parameters())
    for name, p in named.items():  # where the graph put them is where MeshConfig.sbp says
        assert p.sbp == cfg.sbp(f"model.{name}", tuple(p.shape)), name
    assert model[0].fc1.weight.sbp == (fjax.sbp.broadcast, fjax.sbp.split(0))  # column-parallel over model
    fresh = shard_module(nn.Sequential(Block(), Block()), cfg, prefix="model")  # the same layout without a graph
    assert {n: p.sbp for n, p in fresh.named_parameters()} == {n: p.sbp for n, p in named.items()}
