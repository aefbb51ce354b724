"""nn.Graph.save works on steps that check integer indices (cross_entropy labels, embedding ids).

Inside a graph those checks are deferred host callbacks, which ``jax.export`` cannot serialise;
the saved step is lowered without them (see ``Graph.save``), and the loaded step then computes
what the original graph computes.
"""

from __future__ import annotations

import numpy as np
import pytest

import fjax
import fjax.nn.functional as F
from fjax import nn, optim


class _Train(nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, ids, labels):
        loss = F.cross_entropy(self.model(ids), labels)
        loss.backward()
        return loss


def _graph(seed):
    fjax.manual_seed(seed)
    model = nn.Sequential(nn.Embedding(11, 8), nn.Flatten(), nn.Linear(3 * 8, 5))
    return _Train(model, optim.SGD(model.parameters(), lr=0.5))


@pytest.mark.parametrize("seed", [0, 1])
def test_saved_training_graph_with_index_checks_steps_as_the_original(tmp_path, seed):
    rng = np.random.default_rng(seed)
    ids = fjax.tensor(rng.integers(0, 11, (6, 3)), dtype=fjax.int64)
    labels = fjax.tensor(rng.integers(0, 5, (6,)), dtype=fjax.int64)
    graph = _graph(seed)
    first = graph(ids, labels).item()
    graph.save(str(tmp_path / "train"))
    loaded = nn.Graph.load(str(tmp_path / "train"))

    for step in range(3):
        want, got = graph(ids, labels).item(), loaded(ids, labels).item()
        assert np.isclose(got, want, rtol=1e-6, atol=1e-7), f"seed {seed}, step {step}: loaded {got}, graph {want}"
        assert want < first, f"seed {seed}: the loss did not go down ({first} -> {want}): the step did not train"


def test_graph_still_checks_indices_after_save(tmp_path):
    graph = _graph(0)
    ids = fjax.zeros(6, 3, dtype=fjax.int64)
    graph(ids, fjax.zeros(6, dtype=fjax.int64))
    graph.save(str(tmp_path / "train"))
    with pytest.raises(Exception, match="out of bounds|out of range"):
        graph(ids, fjax.full((6,), 7, dtype=fjax.int64)).item()
        fjax.asyncs.wait()
