"""nn.Graph with pipeline stages (OneFlow's set_stage): OneFlow's pipeline script and a LiBai-like GPT
give the one-device losses and weights; bad stage settings raise errors naming the module and numbers."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import fjax as flow
import fjax.nn as nn
from fjax.distributed import get_layer_placement
from fjax.errors import OpError

B = flow.sbp.broadcast


def _p(*ranks):
    return flow.placement("cpu", ranks=list(ranks))


class Stage0(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)

    def forward(self, x):
        return self.fc(x).relu()


class PipelineModule(nn.Module):
    """OneFlow's pipeline example: stage modules on their placements, activations moved with to_global."""

    def __init__(self, staged: bool):
        super().__init__()
        self.m_stage0, self.m_stage1 = Stage0(), nn.Linear(16, 4)
        self.staged = staged
        if staged:
            self.m_stage0.to_global(placement=_p(0), sbp=B)
            self.m_stage1.to_global(placement=_p(1), sbp=B)

    def forward(self, x):
        out0 = self.m_stage0(x)
        if self.staged:
            out0 = out0.to_global(placement=_p(1), sbp=B)
        return self.m_stage1(out0)


class TrainGraph(nn.Graph):
    def __init__(self, model, stages=None, acc=2):
        super().__init__()
        self.model = model
        for name, (stage_id, placement) in (stages or {}).items():
            module = self.model
            for part in name.split("."):
                module = module[int(part)] if part.isdigit() else getattr(module, part)
            module.to(nn.graph.GraphModule).set_stage(stage_id=stage_id, placement=placement)
        self.loss_fn = nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(acc)
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))

    def build(self, x, y):
        loss = self.loss_fn(self.model(x).reshape(-1, self.vocab), y.reshape(-1))
        loss.backward()
        return loss


def _seed():
    return int(np.random.SeedSequence().entropy % 2**31)


def _train(make, stages, data, seed, place=None):
    flow.manual_seed(seed)
    model = make()
    graph = TrainGraph(model, stages)
    graph.vocab = 4 if isinstance(model, PipelineModule) else 16
    losses = []
    for x, y in data:
        if place is not None:
            x, y = x.to_global(placement=place[0], sbp=B), y.to_global(placement=place[1], sbp=B)
        losses.append(graph(x, y).numpy())
    return np.array(losses), {k: v.numpy() for k, v in model.state_dict().items()}, graph


def _assert_same(got, want, seed):
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6, err_msg=f"seed {seed}")
    for k in want[1]:
        np.testing.assert_allclose(got[1][k], want[1][k], rtol=1e-5, atol=1e-6, err_msg=f"seed {seed}: {k}")


def test_oneflow_pipeline_script_matches_one_device():
    seed = _seed()
    rng = np.random.default_rng(seed)
    data = [(flow.tensor(rng.standard_normal((8, 8)), dtype=flow.float32), flow.tensor(rng.integers(0, 4, 8)))
            for _ in range(3)]  # fmt: skip
    stages = {"m_stage0": (0, _p(0)), "m_stage1": (1, _p(1))}
    got = _train(lambda: PipelineModule(True), stages, data, seed, place=(_p(0), _p(1)))
    want = _train(lambda: PipelineModule(False), None, data, seed)
    _assert_same(got, want, seed)
    assert got[0].shape == (3, 2)  # OneFlow packs the 2 micro-batches' losses


class LiBaiGPT(nn.Module):
    """A LiBai-like GPT: layer i on get_layer_placement(i), the head on the last stage."""

    def __init__(self, stages: int, layers: int = 4, dim: int = 16, vocab: int = 16):
        super().__init__()
        import pathlib
        import sys

        sys.path.insert(0, str(pathlib.Path(__file__).parents[3] / "examples"))
        from gpt import Block

        place = (lambda i: get_layer_placement(i, layers, stages, device_type="cpu")) if stages else None
        self.place = place
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Block(dim, 2) for _ in range(layers)])
        self.head = nn.Linear(dim, vocab)
        if place:
            self.embed.to_global(place(0), B)
            for i, layer in enumerate(self.layers):
                layer.to_global(place(i), B)
            self.head.to_global(place(-1), B)

    def forward(self, idx):
        h = self.embed(idx)
        for i, layer in enumerate(self.layers):
            if self.place:
                h = h.to_global(self.place(i), B)
            h = layer(h)
        if self.place:
            h = h.to_global(self.place(-1), B)
        return self.head(h)


@functools.cache
def _gpt_reference():
    seed = _seed()
    rng = np.random.default_rng(seed)
    data = [(flow.tensor(rng.integers(0, 16, (4, 8))), flow.tensor(rng.integers(0, 16, (4, 8)))) for _ in range(2)]
    return seed, data, _train(lambda: LiBaiGPT(0), None, data, seed)


@pytest.mark.parametrize("stages", [2, 4])
def test_libai_like_gpt_matches_one_device(stages):
    seed, data, want = _gpt_reference()
    plan = {f"layers.{i}": (i * stages // 4, get_layer_placement(i, 4, stages, device_type="cpu")) for i in range(4)}
    plan["embed"], plan["head"] = (0, _p(0)), (stages - 1, _p(stages - 1))
    got = _train(lambda: LiBaiGPT(stages), plan, data, seed)
    _assert_same(got, want, seed)
    assert got[2].model.layers[3].to(nn.graph.GraphModule).stage_id == stages - 1


def _graph(acc=2):
    flow.manual_seed(0)
    return TrainGraph(PipelineModule(False), acc=acc)


def _run(graph, batch=8):
    graph.vocab = 4
    return graph(flow.randn(batch, 8), flow.randint(0, 4, (batch,)))


def test_config_forms_and_recompile_on_stage_change():
    graph = _graph()
    graph.model.m_stage0.config.set_stage(0, _p(0))  # OneFlow's older block.config forms
    graph.model.m_stage1.config.stage_id = 1
    with pytest.raises(OpError, match="'model.m_stage1' has stage 1 but no placement"):
        _run(graph)
    graph.model.m_stage1.config.set_stage(1, _p(1))
    _run(graph)
    graph.model.m_stage1.to(nn.graph.GraphModule).set_stage(1, _p(1, 2))
    _run(graph)
    assert len(graph.compile_report()) == 2  # the stages are part of the compile key


@pytest.mark.parametrize(
    "stages, match",
    [
        ({"m_stage0": (1, _p(0)), "m_stage1": (0, _p(1))}, r"out of order: module 'model.m_stage1' \(stage 0\)"),
        ({"m_stage0": (0, _p(0)), "m_stage1": (2, _p(1))}, r"stages \[0, 2\] skip stage\(s\) \[1\]"),
        ({"m_stage0": (0, _p(0)), "m_stage0.fc": (1, _p(1))}, r"'model.m_stage0.fc' is set to stage 1 inside"),
        ({"m_stage0": (0, _p(0)), "m_stage1": (0, _p(1))}, r"stage 0 has two placements: ranks \[0\]"),
    ],
)
def test_bad_stages(stages, match):
    graph = _graph()
    for name, (stage_id, placement) in stages.items():
        module = graph.model
        for part in name.split("."):
            module = getattr(module, part)
        module.to(nn.graph.GraphModule).set_stage(stage_id, placement)
    with pytest.raises(OpError, match=match):
        _run(graph)


def test_stage_outside_the_mesh_and_pipe_axis_larger_than_layers():
    graph = _graph()
    graph.config.set_mesh({"mesh": {"data": 2}})
    graph.model.m_stage0.to(nn.graph.GraphModule).set_stage(0, _p(0))
    graph.model.m_stage1.to(nn.graph.GraphModule).set_stage(1, _p(5))
    with pytest.raises(OpError, match=r"stage 1 of 'model.m_stage1' is placed on ranks \[5\], outside the mesh"):
        _run(graph)
    graph = _graph()
    graph.config.set_mesh({"mesh": {"pipe": 4}})
    graph.model.m_stage0.to(nn.graph.GraphModule).set_stage(0, _p(0))
    graph.model.m_stage1.to(nn.graph.GraphModule).set_stage(1, _p(1))
    with pytest.raises(OpError, match=r"pipe axis has 4 stages, more than the 2 module\(s\) with a stage"):
        _run(graph)
    with pytest.raises(ValueError, match="stage_id must be an int >= 0, got -1"):
        graph.model.m_stage1.to(nn.graph.GraphModule).set_stage(-1, _p(1))


def test_micro_batches_must_divide_the_batch_and_one_micro_batch_warns():
    graph = _graph(acc=3)
    graph.model.m_stage0.to(nn.graph.GraphModule).set_stage(0, _p(0))
    graph.model.m_stage1.to(nn.graph.GraphModule).set_stage(1, _p(1))
    with pytest.raises(OpError, match=r"over 3 micro-batches needs every input's dim 0 divisible by 3.*\(8, 8\)"):
        _run(graph)
    graph = _graph(acc=1)
    graph.model.m_stage0.to(nn.graph.GraphModule).set_stage(0, _p(0))
    graph.model.m_stage1.to(nn.graph.GraphModule).set_stage(1, _p(1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _run(graph)
    assert any("set_gradient_accumulation_steps(4)" in str(w.message) for w in caught)
