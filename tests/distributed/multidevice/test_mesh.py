"""DP, ZeRO and TP mesh configs give the single-device losses; ZeRO-3 cuts per-device memory."""

from __future__ import annotations

import functools
import json
import pathlib
import sys

import numpy as np
import pytest

import fjax
import fjax.nn as nn

sys.path.insert(0, str(pathlib.Path(__file__).parents[3] / "examples"))
from gpt import GPT, PRESETS, TrainGraph  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 64)
        self.fc2 = nn.Linear(64, 8)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


MLP_TP = {"column": ["model.fc1"], "row": ["model.fc2"]}
CONFIGS = {
    "dp": {"mesh": {"data": 8}},
    "zero1": {"mesh": {"data": 8}, "zero_stage": 1},
    "zero2": {"mesh": {"data": 8}, "zero_stage": 2},
    "zero3": {"mesh": {"data": 8}, "zero_stage": 3},
    "tp": {"mesh": {"data": 2, "model": 4}, "tensor_parallel": MLP_TP},
}


def _train(make_model, data, mesh, steps=10):
    fjax.manual_seed(0)
    model = make_model()
    g = TrainGraph(model, 3e-3, mesh)
    return [g(x, y).item() for x, y in data[:steps]], g.memory_report(), model


def _mlp_data(rng):
    return [
        (fjax.tensor(rng.standard_normal((32, 16)), dtype=fjax.float32), fjax.tensor(rng.integers(0, 8, 32)))
        for _ in range(10)
    ]


def _gpt_data(rng):
    return [(fjax.tensor(rng.integers(0, 64, (8, 16))), fjax.tensor(rng.integers(0, 64, (8, 16)))) for _ in range(10)]


@functools.cache
def _mlp_baseline():
    """The single-device losses every MLP config compares with, trained once (a graph with
    cross_entropy's index check is never in JAX's persistent compilation cache: it compiles)."""
    data = _mlp_data(np.random.default_rng(1))
    return data, _train(MLP, data, None)[0]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_mlp_mesh_configs_match_single_device(name):
    data, base = _mlp_baseline()
    losses, _, model = _train(MLP, data, CONFIGS[name])
    np.testing.assert_allclose(losses, base, rtol=1e-5, atol=1e-6)
    assert model.fc1.weight.is_global


@functools.cache
def _gpt_baseline():
    data = _gpt_data(np.random.default_rng(2))
    return data, _train(GPT, data, None)


@pytest.mark.parametrize("name", ["zero1", "tp", "dp_tp"])
def test_gpt_mesh_configs_match_single_device(name):
    data, (base, _, _) = _gpt_baseline()
    losses, _, model = _train(GPT, data, PRESETS[name])
    np.testing.assert_allclose(losses, base, rtol=2e-5, atol=2e-5)
    if "model" in PRESETS[name]["mesh"]:
        assert model.blocks[0].fc1.weight.sbp[-1] == fjax.sbp.split(0)  # column-parallel
        assert model.blocks[0].fc2.weight.sbp[-1] == fjax.sbp.split(1)  # row-parallel


def test_zero3_holds_about_an_eighth_of_the_state_per_device():
    data, (base, _, _) = _gpt_baseline()
    _, replicated, _ = _train(GPT, data, PRESETS["dp"], steps=1)
    losses, zero3, _ = _train(GPT, data, PRESETS["zero3"], steps=3)
    np.testing.assert_allclose(losses, base[:3], rtol=2e-5, atol=2e-5)
    ratio = zero3["argument_bytes"] / replicated["argument_bytes"]
    assert ratio < 1 / 6, f"ZeRO-3 keeps {ratio:.3f} of the replicated per-device state"


def test_config_from_json_file_and_errors(tmp_path):
    path = tmp_path / "mesh.json"
    path.write_text(json.dumps(CONFIGS["tp"]))
    data = _mlp_data(np.random.default_rng(4))
    losses, _, _ = _train(MLP, data, str(path), steps=3)
    base, _, _ = _train(MLP, data, None, steps=3)
    np.testing.assert_allclose(losses, base, rtol=1e-5, atol=1e-6)
    with pytest.raises(fjax.OpError, match="names axis 'tensor'"):
        fjax.distributed.mesh.MeshConfig.load({"mesh": {"data": 8}, "rules": {"*.weight": ["tensor", None]}})
    with pytest.raises(fjax.OpError, match="unknown keys"):
        fjax.distributed.mesh.MeshConfig.load({"mesh": {"data": 8}, "zero": 1})
    with pytest.raises(fjax.OpError, match="cannot split"):
        _train(MLP, data, {"mesh": {"data": 2, "model": 3}, "rules": {"model.fc1.weight": ["model", None]}}, steps=1)
