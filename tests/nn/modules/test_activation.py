"""Activation layers against torch, including inplace=True on intermediate results."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax
from fjax import nn

from ..helper import check_module, close, rng

CASES = [
    ("ReLU", ()), ("ReLU", (True,)), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("LeakyReLU", (0.1, True)),
    ("ELU", (0.7,)), ("ELU", (1.0, True)), ("CELU", (1.5,)), ("SELU", ()), ("SELU", (True,)),
    ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()), ("SiLU", (True,)), ("Mish", ()), ("Sigmoid", ()),
    ("Tanh", ()), ("LogSigmoid", ()), ("Tanhshrink", ()), ("Softsign", ()), ("Softplus", (2.0, 1.0)),
    ("Hardtanh", (-0.5, 0.7)), ("Hardtanh", (-1.0, 1.0, True)), ("Hardsigmoid", ()), ("Hardswish", (True,)),
    ("Softshrink", (0.3,)), ("Hardshrink", (0.4,)), ("Threshold", (0.1, -2.0)), ("Threshold", (0.1, 2.0, True)),
    ("GLU", ()), ("GLU", (1,)), ("Softmax", (1,)), ("Softmin", (-1,)), ("LogSoftmax", (0,)), ("RReLU", (0.1, 0.3)),
]  # fmt: skip


class _Then(torch.nn.Module):
    """``act(2 * x)``: an in-place activation must run on a non-leaf, as in real models."""

    def __init__(self, act):
        super().__init__()
        self.act = act

    def forward(self, x):
        return self.act(x * 2)


class _FjThen(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.act = act

    def forward(self, x):
        return self.act(x * 2)


@pytest.mark.parametrize("name,args", CASES, ids=[f"{n}{a}" for n, a in CASES])
def test_activation(name, args):
    fj, th = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(fj) == repr(th)
    x = rng().standard_normal((4, 6))
    # RReLU draws random slopes in training mode; its training statistics are tested below.
    check_module(_FjThen(fj), _Then(th), [x], train=name != "RReLU")


def test_prelu():
    r = rng()
    check_module(nn.PReLU(), torch.nn.PReLU(), [r.standard_normal((3, 4, 5))])
    check_module(nn.PReLU(4, init=0.1), torch.nn.PReLU(4, init=0.1), [r.standard_normal((3, 4, 5))])


def test_rrelu_training_slopes():
    """Training slopes are U(lower, upper) per element; positive inputs pass unchanged."""
    fjax.manual_seed(rng().integers(2**31))
    x = fjax.tensor(-np.abs(rng().standard_normal((200, 100))).astype(np.float32) - 0.1)
    slopes = (nn.RReLU(0.1, 0.3)(x) / x).numpy()
    assert slopes.min() >= 0.1 - 1e-6 and slopes.max() <= 0.3 + 1e-6
    assert abs(slopes.mean() - 0.2) < 0.005 and abs(slopes.std() - 0.2 / np.sqrt(12)) < 0.005
    pos = fjax.tensor(np.abs(rng(1).standard_normal(10)).astype(np.float32))
    close(nn.RReLU()(pos), pos, "RReLU on positive inputs", 0, 0)


def test_inplace_writes_into_input():
    x = fjax.randn(3, 4)
    y = nn.ReLU(inplace=True)(x)
    assert y is x and float(x.min()) >= 0
    x = fjax.randn(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        nn.ReLU(inplace=True)(x)
