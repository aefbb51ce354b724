"""nn.Graph's cache key holds the mesh configuration's value: enable_zero after the first compile
(it swaps the configuration's ZeRO strategy) compiles a new step, whose shardings are ZeRO's."""

from __future__ import annotations

import numpy as np

import fjax
import fjax.nn as nn
import fjax.nn.functional as F


class Train(nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        return loss


def _graph(seed):
    fjax.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    graph = Train(model, fjax.optim.Adam(model.parameters(), lr=1e-2))
    graph.config.set_mesh({"mesh": {"data": 8}})
    return graph, model


def test_enable_zero_after_first_compile_recompiles():
    seed = int(np.random.SeedSequence().entropy % 2**31)
    rng = np.random.default_rng(seed)
    data = [(fjax.tensor(rng.standard_normal((16, 16)), dtype=fjax.float32),
             fjax.tensor(rng.standard_normal((16, 8)), dtype=fjax.float32)) for _ in range(3)]  # fmt: skip

    graph, model = _graph(seed)
    first = graph(*data[0]).item()
    graph.config.enable_zero(True, stage=3, shard_min_size=1)
    later = [graph(x, y).item() for x, y in data[1:]]
    assert len(graph.compile_report()) == 2, "the ZeRO-3 step reused the executable compiled without ZeRO"
    assert model[0].weight.sbp[-1] == fjax.sbp.split(0), f"seed {seed}: weight sbp {model[0].weight.sbp}"

    reference, _ = _graph(seed)  # the same steps with no ZeRO at all: ZeRO changes no number
    want = [reference(x, y).item() for x, y in data]
    np.testing.assert_allclose([first, *later], want, rtol=1e-5, err_msg=f"seed {seed}")

    graph.config.enable_zero(False)  # back to the first configuration: its executable again
    graph(*data[0])
    assert len(graph.compile_report()) == 2
