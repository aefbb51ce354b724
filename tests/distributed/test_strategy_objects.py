"""Sharding strategies as values (fjax.distributed.strategy): the dict form and the strategy form of a
MeshConfig are the same configuration; enable_zero swaps the ZeRO strategy by value; bad input names
the strategy, the parameter, the shape and the axis. One device (the 8-device checks are in
multidevice/test_strategies.py)."""

from __future__ import annotations

import pytest

import fjax
import fjax.nn as nn
from fjax.distributed import (
    DataParallel,
    MeshConfig,
    PipelineParallel,
    Rules,
    Strategy,
    TensorParallel,
    ZeRO,
    shard_module,
)

AXES = {"data": 1, "model": 1}
DICT = {
    "mesh": AXES,
    "tensor_parallel": {"column": ["*.fc1"], "row": ["*.fc2"]},
    "rules": {"*.embed.weight": [None, "model"]},
    "zero_stage": 3,
}
STRATEGIES = (
    Rules({"*.embed.weight": [None, "model"]}),
    TensorParallel(column=["*.fc1"], row=["*.fc2"]),
    DataParallel(),
    ZeRO(3),
)
PARAMS = {"m.fc1.weight": (8, 4), "m.fc1.bias": (8,), "m.fc2.weight": (4, 8), "m.embed.weight": (6, 4), "m.x": (3,)}


def _shardings(cfg):
    return {n: (cfg.param_spec(n, s), cfg.storage(n, s).spec, cfg.gradient(n, s), cfg.sbp(n, s))
            for n, s in PARAMS.items()}  # fmt: skip


def test_dict_form_and_strategy_form_are_one_configuration():
    by_dict, by_objects = MeshConfig.load(DICT), MeshConfig.of(AXES, *STRATEGIES)
    assert by_dict.key() == by_objects.key() and by_dict == by_objects and hash(by_dict) == hash(by_objects)
    assert by_dict.strategies == STRATEGIES
    assert _shardings(by_dict) == _shardings(by_objects)
    assert MeshConfig.of(AXES, *reversed(STRATEGIES)).key() == by_dict.key()  # any order: the same value
    keywords = MeshConfig(axes=AXES, rules=by_dict.rules, zero_stage=3)  # the keyword form (rules as pairs)
    assert _shardings(keywords) == _shardings(by_dict)
    # the keyword form's attributes read the strategies
    assert (by_objects.zero_stage, by_objects.zero_min_size, by_objects.batch_axis) == (3, 0, "data")
    assert by_objects.param_spec("m.fc1.weight", (8, 4)) == ("model", None)
    assert by_objects.param_spec("m.embed.weight", (6, 4)) == (None, "model")
    assert by_objects.storage("m.x", (3,)).spec == fjax.distributed.mesh.PartitionSpec("data")  # ZeRO-3
    assert by_objects.sbp("m.fc2.weight", (4, 8)) == (fjax.sbp.split(0), fjax.sbp.split(1))


def test_explicit_rules_win_over_tensor_parallel():
    cfg = MeshConfig.of(AXES, TensorParallel(column=["*.fc1"]), Rules({"*.fc1.weight": [None, None]}))
    assert cfg.param_spec("m.fc1.weight", (8, 4)) == (None, None)
    assert cfg.param_spec("m.fc1.bias", (8,)) == ("model",)


def test_pipeline_settings():
    cfg = MeshConfig.load({"mesh": {"pipe": 1}, "pipeline": {"schedule": "1f1b", "microbatches": 4}})
    assert cfg.strategy(PipelineParallel) == PipelineParallel("1f1b", microbatches=4)
    assert cfg.pipeline == {"schedule": "1f1b", "microbatches": 4, "axis": "pipe"}
    assert MeshConfig.of({"pipe": 1}, PipelineParallel("1f1b", 4)).key() == cfg.key()
    assert cfg.batch_axis is None  # no data axis: no DataParallel
    assert fjax.distributed.strategy.SCHEDULES == fjax.distributed.pipeline.SCHEDULES


def test_enable_zero_swaps_the_strategy_by_value():
    graph = nn.Graph.trace(lambda x: x)
    graph.config.set_mesh(MeshConfig.of({"data": 1}, DataParallel()))
    before = graph.config.mesh
    graph.config.enable_zero(True, stage=1, shard_min_size=4)
    assert before.zero_stage == 0 and before.strategy(ZeRO) is None  # the old value is not mutated
    assert graph.config.mesh.strategy(ZeRO) == ZeRO(1, 4)
    assert graph.config.mesh.key() != before.key()
    graph.config.enable_zero(True, stage=3, shard_min_size=4)
    assert graph.config.mesh.strategies == (DataParallel(), ZeRO(3, 4))
    graph.config.enable_zero(False)
    assert graph.config.mesh.key() == before.key()


def test_shard_module_lays_parameters_out_as_the_config_says():
    cfg = MeshConfig.of({"model": 1}, TensorParallel(column=["m.0"], row=["m.2"]), type="cpu")
    model = shard_module(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), cfg, prefix="m")
    assert model[0].weight.sbp == (fjax.sbp.split(0),) and model[0].bias.sbp == (fjax.sbp.split(0),)
    assert model[2].weight.sbp == (fjax.sbp.split(1),) and model[2].bias.sbp == (fjax.sbp.broadcast,)
    assert model[0].weight.placement == cfg.placement


def test_a_new_strategy_is_one_class():
    class ShardEmbeddings(Strategy):  # every embedding split on its vocabulary dim over "model"
        def param_spec(self, axes, name, shape, spec):
            return ("model", None) if spec is None and name.endswith("embed.weight") else spec

        def __hash__(self):
            return hash(type(self))

        def __eq__(self, other):
            return type(other) is type(self)

    cfg = MeshConfig.of(AXES, ShardEmbeddings(), DataParallel())
    assert cfg.param_spec("m.embed.weight", (6, 4)) == ("model", None)
    assert cfg.strategies[-1] == ShardEmbeddings()  # after the built-in ones
    with pytest.raises(fjax.OpError, match="ShardEmbeddings.*'m.embed.weight' of shape.*names mesh axis 'model'"):
        MeshConfig.of({"data": 1}, ShardEmbeddings()).param_spec("m.embed.weight", (6, 4))


def test_bad_input_names_the_strategy_and_the_axis():
    with pytest.raises(fjax.OpError, match=r"ZeRO\(stage=1.*names mesh axis 'shard'; the mesh has \['data'\]"):
        MeshConfig.of({"data": 1}, ZeRO(1, axis="shard"))
    with pytest.raises(fjax.OpError, match=r"TensorParallel\(.*names mesh axis 'tensor'"):
        MeshConfig.of({"data": 1}, TensorParallel(column=["*"], axis="tensor"))
    with pytest.raises(fjax.OpError, match="rule '\\*.w' names axis 'model'"):
        MeshConfig.of({"data": 1}, Rules({"*.w": ["model"]}))
    with pytest.raises(fjax.OpError, match="need a 'pipe' mesh axis"):
        MeshConfig.of({"data": 1}, PipelineParallel())
    with pytest.raises(fjax.OpError, match=r"Rules\(.*for 'm.w' of shape \(2, 3\).*1 entries"):
        MeshConfig.of({"data": 1}, Rules({"*.w": ["data"]})).param_spec("m.w", (2, 3))
    with pytest.raises(fjax.OpError, match="ZeRO stage must be 1, 2 or 3"):
        ZeRO(0)
    with pytest.raises(fjax.OpError, match="schedule 'zigzag'"):
        PipelineParallel("zigzag")
    with pytest.raises(fjax.OpError, match="one strategy of each kind"):
        MeshConfig.of({"data": 1}, ZeRO(1), ZeRO(2))
    with pytest.raises(fjax.OpError, match="not both"):
        MeshConfig({"data": 1}, zero_stage=1, strategies=[DataParallel()])
    with pytest.raises(fjax.OpError, match="not a sharding strategy"):
        MeshConfig.of({"data": 1}, {"zero_stage": 1})
    with pytest.raises(fjax.OpError, match="unknown tensor_parallel keys"):
        MeshConfig.load({"mesh": {"model": 1}, "tensor_parallel": {"columns": ["*"]}})
    with pytest.raises(NotImplementedError, match="sequence_parallel=True.*pipe axis"):
        MeshConfig.load({"mesh": {"model": 1, "pipe": 2}, "tensor_parallel": {"sequence_parallel": True}})


def test_sequence_parallel_activation_specs():
    tp = TensorParallel(column=["*.fc1"], row=["*.fc2"], sequence_parallel=True)
    cfg = MeshConfig.of(AXES, DataParallel(), tp)
    assert cfg.constrains_activations
    spec = lambda name, shape, where="out": tuple(getattr(cfg.activation(name, shape, where), "spec", (0,)))  # noqa: E731
    assert spec("m.fc2", (4, 8, 16)) == ("data", "model", None)  # a row output: the sequence split
    assert spec("m.fc1", (4, 8, 16), "in") == ("data", None, None)  # a column input: the whole sequence
    assert spec("m.fc1", (4, 8, 16)) == spec("m.fc2", (4, 8, 16), "in") == spec("m.fc2", (4, 16)) == (0,)  # none
    off = MeshConfig.of(AXES, DataParallel(), TensorParallel(column=["*.fc1"], row=["*.fc2"]))
    assert off.activation("m.fc2", (4, 8, 16)) is None and off.key() != cfg.key()
    assert not off.constrains_activations
