"""A mesh configuration's pipe axis pipelines a plain model with no stage annotations: nn.Graph finds
the repeated blocks (a GPT's ModuleList called in a loop, a Sequential of Linear + Tanh) and the
losses, gradients and weights match one device; the per-block names stay the user's."""

from __future__ import annotations

import collections
import functools
import pathlib
import sys
import warnings

import numpy as np
import pytest

import fjax
import fjax.nn as nn
import fjax.nn.functional as F
from fjax.errors import OpError

sys.path.insert(0, str(pathlib.Path(__file__).parents[3] / "examples"))
from gpt import GPT, TENSOR_PARALLEL  # noqa: E402


class Train(nn.Graph):
    """SGD with momentum; build returns the loss and every parameter's gradient."""

    def __init__(self, model, mesh, loss="ce"):
        super().__init__()
        self.model, self.loss = model, loss
        sgd = fjax.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        self.add_optimizer(sgd)
        self.__dict__["sgd"] = sgd  # to read its state back
        if mesh is not None:
            self.config.set_mesh(mesh)

    def build(self, x, y):
        out = self.model(x)
        if self.loss == "ce":
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        else:
            loss = F.mse_loss(out, y)
        loss.backward()
        return loss, [p.grad for p in self.model.parameters()]


def _train(make, data, mesh=None, loss="ce", seed=0):
    fjax.manual_seed(seed)
    model = make()
    graph = Train(model, mesh, loss)
    losses, grads = [], []
    for x, y in data:
        value, g = graph(x, y)
        losses.append(value.item())
        grads.append([t.numpy() for t in g])
    return graph, model, losses, grads, {k: v.numpy() for k, v in model.state_dict().items()}


def _compare(got, want, what):
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, err_msg=what)
    for step, (gs, ws) in enumerate(zip(got[3], want[3])):
        for (name, _), g, w in zip(want[1].named_parameters(), gs, ws):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"{what}: step {step} grad {name}")
    assert list(got[4]) == list(want[4]), "the state_dict keys are the user's, per block"
    for k, v in want[4].items():
        np.testing.assert_allclose(got[4][k], v, rtol=1e-5, atol=1e-6, err_msg=f"{what}: {k}")


def _gpt():
    return GPT(vocab=16, dim=16, heads=2, layers=4)


def _tokens(seed=0):
    rng = np.random.default_rng(seed)
    return [(fjax.tensor(rng.integers(0, 16, (8, 8))), fjax.tensor(rng.integers(0, 16, (8, 8)))) for _ in range(3)]


MESHES = {
    "pp2_1f1b": {"mesh": {"pipe": 2}, "pipeline": {"schedule": "1f1b", "microbatches": 4}},
    "dp2_tp2_pp2_zero1_gpipe": {
        "mesh": {"data": 2, "tensor": 2, "pipe": 2},
        "tensor_parallel": {**TENSOR_PARALLEL, "axis": "tensor"},
        "zero_stage": 1,
        "pipeline": {"microbatches": 2},
    },
    "dp2_tp2_pp2_1f1b": {
        "mesh": {"data": 2, "tensor": 2, "pipe": 2},
        "tensor_parallel": {**TENSOR_PARALLEL, "axis": "tensor"},
        "pipeline": {"schedule": "1f1b", "microbatches": 2},
    },
}


@functools.cache
def _one_device():
    return _train(_gpt, _tokens())


@pytest.mark.parametrize("name", list(MESHES))
def test_gpt_blocks_pipelined_from_the_mesh_config_alone(name):
    want = _one_device()
    got = _train(_gpt, _tokens(), MESHES[name])
    _compare(got, want, name)
    assert "collective_permute" in got[0].stablehlo(), f"{name}: no activations moved between stages"
    # the optimizer state stays per block, under the user's parameters
    np.testing.assert_allclose(got[0].sgd.state[got[1].blocks[3].fc1.weight]["momentum_buffer"].numpy(),
                               want[0].sgd.state[want[1].blocks[3].fc1.weight]["momentum_buffer"].numpy(),
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def _mlp():
    layers = [nn.Linear(8, 16), nn.Tanh()]
    for _ in range(4):
        layers += [nn.Linear(16, 16), nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(16, 2))


def test_sequential_of_linear_tanh_pipelined_over_four_stages():
    rng = np.random.default_rng(2)
    data = [(fjax.tensor(rng.standard_normal((16, 8)), dtype=fjax.float32),
             fjax.tensor(rng.standard_normal((16, 2)), dtype=fjax.float32)) for _ in range(3)]  # fmt: skip
    want = _train(_mlp, data, loss="mse")
    for schedule in ("gpipe", "interleaved"):
        mesh = {"mesh": {"data": 2, "pipe": 4}, "pipeline": {"schedule": schedule, "microbatches": 4}}
        if schedule == "interleaved":
            mesh = {"mesh": {"pipe": 2}, "pipeline": {"schedule": schedule, "microbatches": 4}}  # 4 layers: 2 x 2
        got = _train(_mlp, data, mesh, loss="mse")
        _compare(got, want, schedule)
        assert "collective_permute" in got[0].stablehlo()


def _error(make, mesh, data, match, exc=OpError):
    fjax.manual_seed(0)
    with pytest.raises(exc, match=match):
        Train(make(), mesh, "mse")(*data)


def test_errors_name_the_modules_and_numbers():
    x, y = fjax.randn(8, 8), fjax.randn(8, 2)
    eight = {"mesh": {"pipe": 8}, "pipeline": {"microbatches": 8}}
    _error(
        _mlp,
        eight,
        (x, y),
        r"'model.2'..'model.9' \(4 x Linear\+Tanh\).*pipe axis has 8 stages, more than the 4 repeated",
    )

    def named():
        hidden = [(f"h{i}", nn.Linear(16, 16)) for i in range(3)]
        return nn.Sequential(collections.OrderedDict([("inp", nn.Linear(8, 16)), *hidden, ("out", nn.Linear(16, 2))]))

    _error(named, eight, (x, y), r"'model.h0'..'model.h2' \(3 x Linear\).*8 stages, more than the 3 repeated layers")
    three = {"mesh": {"pipe": 3}, "pipeline": {"microbatches": 4}}
    _error(_mlp, three, (x, y), r"4 layers cannot split evenly over the 3 stages of the pipe axis")
    inter = {"mesh": {"pipe": 4}, "pipeline": {"schedule": "interleaved", "microbatches": 4}}
    _error(_mlp, inter, (x, y), r"4 layers cannot split evenly over the 4 stages x 2 chunks")
    plain = lambda: nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))  # noqa: E731
    _error(plain, {"mesh": {"pipe": 2}}, (x, y), r"pipe axis 'pipe' has 2 stages, but no nn.Sequential or nn.Module")
    odd = {"mesh": {"pipe": 2}, "pipeline": {"microbatches": 3}}
    _error(
        _mlp, odd, (x, y), r"'model.2'..'model.9'.*a batch of 8 \(input shape \(8, 16\)\) does not split into 3 micro"
    )
    with pytest.raises(OpError, match="unknown pipeline keys"):
        fjax.distributed.MeshConfig.load({"mesh": {"pipe": 2}, "pipeline": {"stages": 2}})
    with pytest.raises(OpError, match="microbatches must be an int >= 1, got 0"):
        fjax.distributed.MeshConfig.load({"mesh": {"pipe": 2}, "pipeline": {"microbatches": 0}})


class Skips(nn.Module):
    """Calls its blocks out of order, or keeps going with another tensor."""

    def __init__(self, how):
        super().__init__()
        self.how = how
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        if self.how == "reversed":
            for b in reversed(self.blocks):
                x = b(x)
        elif self.how == "residual":
            for b in self.blocks:
                x = x + b(x)
        elif self.how == "kept":  # an inner block's output used after the run
            outs = []
            for b in self.blocks:
                x = b(x)
                outs.append(x)
            x = x + outs[1]
        else:  # stops half way
            for b in self.blocks[:2]:
                x = b(x)
        return self.head(x)


def test_blocks_must_be_called_in_order_on_the_previous_output():
    x, y = fjax.randn(8, 8), fjax.randn(8, 2)
    mesh = {"mesh": {"pipe": 2}, "pipeline": {"microbatches": 2}}
    _error(lambda: Skips("reversed"), mesh, (x, y), r"'model.blocks.3' \(pipelined over the pipe axis\) is called out")
    inner = (
        r"'model.blocks.{}' \(pipelined over the pipe axis\): its output inside the pipelined run .* is not computed"
    )
    _error(lambda: Skips("residual"), mesh, (x, y), inner.format(0))
    _error(lambda: Skips("kept"), mesh, (x, y), inner.format(1))
    _error(lambda: Skips("half"), mesh, (x, y), inner.format(1))  # (the head reads block 1's output)


def test_one_micro_batch_warns_with_a_value():
    x, y = fjax.randn(8, 8), fjax.randn(8, 2)
    fjax.manual_seed(0)
    graph = Train(_mlp(), {"mesh": {"pipe": 2}}, "mse")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph(x, y)
    assert any('"pipeline": {"microbatches": 4}' in str(w.message) for w in caught), [str(w.message) for w in caught]
