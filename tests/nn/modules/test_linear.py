"""Linear, Bilinear, Identity, Flatten, Unflatten against torch."""

from __future__ import annotations

import pytest
import torch

from fjax import nn

from ..helper import check_module, rng


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (3,)])
def test_linear(shape, bias):
    check_module(nn.Linear(3, 4, bias=bias), torch.nn.Linear(3, 4, bias=bias), [rng().standard_normal(shape)])


def test_linear_float64():
    lin = nn.Linear(3, 2)
    check_module(lin, torch.nn.Linear(3, 2), [rng().standard_normal((4, 3))], dtype="float64")
    assert str(lin.weight.dtype) == "fjax.float64"


@pytest.mark.parametrize("bias", [True, False])
def test_bilinear(bias):
    r = rng()
    check_module(
        nn.Bilinear(3, 2, 4, bias=bias),
        torch.nn.Bilinear(3, 2, 4, bias=bias),
        [r.standard_normal((5, 3)), r.standard_normal((5, 2))],
    )


def test_identity_flatten_unflatten():
    r = rng()
    x = r.standard_normal((2, 3, 4, 5))
    check_module(nn.Identity(54, unused=True), torch.nn.Identity(54, unused=True), [x])
    check_module(nn.Flatten(), torch.nn.Flatten(), [x])
    check_module(nn.Flatten(0, 2), torch.nn.Flatten(0, 2), [x])
    check_module(nn.Unflatten(1, (3, 1)), torch.nn.Unflatten(1, (3, 1)), [x])
    check_module(nn.Unflatten(-1, [5, 1]), torch.nn.Unflatten(-1, [5, 1]), [x])
