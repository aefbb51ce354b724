"""PipelineStack: a GPT's repeated blocks as a GPipe pipeline over a MeshConfig pipe axis inside nn.Graph
(one SPMD program) train with the one-device losses and weights."""

from __future__ import annotations

import functools
import pathlib
import sys

import numpy as np
import pytest

import fjax
from fjax.distributed import MeshConfig
from fjax.distributed.pipeline import PipelineStack
from fjax.errors import OpError

sys.path.insert(0, str(pathlib.Path(__file__).parents[3] / "examples"))
from gpt import GPT  # noqa: E402


class TrainGraph(fjax.nn.Graph):
    """SGD (AdamW would turn the key bias's zero gradient, pure rounding noise, into lr-sized steps)."""

    def __init__(self, model, mesh):
        super().__init__()
        self.model = model
        self.add_optimizer(fjax.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        if mesh is not None:
            self.config.set_mesh(mesh)

    def build(self, idx, targets):
        logits = self.model(idx)
        loss = fjax.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        return loss


class PipedGPT(GPT):
    def forward(self, idx):
        t = idx.shape[1]
        return self.head(self.ln(self.blocks(self.tok(idx) + self.pos(fjax.arange(t)))))


def _train(seed, data, mesh=None, micro=4):
    fjax.manual_seed(seed)
    model = PipedGPT(vocab=16, dim=16, heads=2, layers=4) if mesh else GPT(vocab=16, dim=16, heads=2, layers=4)
    if mesh:
        model.blocks = PipelineStack(model.blocks, MeshConfig.load(mesh), microbatches=micro)
    graph = TrainGraph(model, mesh)
    losses = [graph(x, y).item() for x, y in data]
    if mesh:  # one SPMD program: activations move between stages with collective permutes
        assert "collective_permute" in graph.stablehlo()
    return losses, {k.replace("blocks.blocks.", "blocks."): v.numpy() for k, v in model.state_dict().items()}


@functools.cache
def reference():
    """A random seed, its data and the one-device run (losses, weights): shared with
    test_pipeline_stack_3d, since a graph with index checks (embedding, cross_entropy) is never
    found in JAX's persistent compilation cache (its host callbacks) and compiles in every run."""
    seed = int(np.random.SeedSequence().entropy % 2**31)
    rng = np.random.default_rng(seed)
    data = [(fjax.tensor(rng.integers(0, 16, (8, 8))), fjax.tensor(rng.integers(0, 16, (8, 8)))) for _ in range(2)]
    return seed, data, _train(seed, data)


def test_pipeline_stack_in_graph_matches_one_device():
    mesh = {"mesh": {"pipe": 4}}  # PP2 is in test_pipeline.py
    seed, data, want = reference()
    got = _train(seed, data, mesh)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, err_msg=f"seed {seed}")
    for k, v in want[1].items():
        np.testing.assert_allclose(got[1][k], v, rtol=1e-5, atol=1e-6, err_msg=f"seed {seed}: {k}")


def test_pipeline_stack_bad_input():
    blocks = fjax.nn.ModuleList([fjax.nn.Linear(4, 4) for _ in range(3)])
    with pytest.raises(OpError, match="3 blocks cannot split over the 2 stages"):
        PipelineStack(blocks, MeshConfig(axes={"pipe": 2}), microbatches=2)
    with pytest.raises(OpError, match="block 1 has parameters"):
        PipelineStack(fjax.nn.ModuleList([fjax.nn.Linear(4, 4), fjax.nn.Linear(4, 4, bias=False)]),
                      MeshConfig(axes={"pipe": 2}), microbatches=2)  # fmt: skip
    stack = PipelineStack(blocks[:2], MeshConfig(axes={"pipe": 1}), microbatches=4)
    with pytest.raises(OpError, match=r"a batch of 6 \(input shape \(6, 4\)\) does not split into 4 micro-batches"):
        stack(fjax.randn(6, 4))
