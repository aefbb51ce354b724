"""Conv1d/2d/3d and ConvTranspose1d/2d/3d against torch: groups, dilation, stride, padding modes."""

from __future__ import annotations

import pytest
import torch

from fjax import nn

from ..helper import check_module, rng

CONV = [
    (1, dict(kernel_size=3), (2, 4, 9)),
    (1, dict(kernel_size=3, stride=2, padding=2, dilation=2, groups=2, padding_mode="circular"), (2, 4, 9)),
    (1, dict(kernel_size=4, padding="same", padding_mode="replicate", bias=False), (4, 9)),
    (2, dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)), (2, 4, 7, 6)),
    (2, dict(kernel_size=3, padding=1, groups=4, padding_mode="reflect"), (2, 4, 6, 6)),
    (2, dict(kernel_size=3, padding="same", dilation=2), (1, 4, 7, 7)),
    (2, dict(kernel_size=2, padding="valid", bias=False), (4, 5, 5)),
    (3, dict(kernel_size=2, stride=(1, 2, 1), padding=1), (1, 4, 4, 5, 3)),
]


@pytest.mark.parametrize("nd,kw,shape", CONV, ids=[f"{nd}d-{i}" for i, (nd, _, _) in enumerate(CONV)])
def test_conv(nd, kw, shape):
    name = f"Conv{nd}d"
    fj = getattr(nn, name)(4, 8, **kw)
    th = getattr(torch.nn, name)(4, 8, **kw)
    check_module(fj, th, [rng().standard_normal(shape)])


TRANSPOSED = [
    (1, dict(kernel_size=3, stride=2), (2, 4, 5), None),
    (1, dict(kernel_size=3, stride=3, padding=1, output_padding=2, groups=2, bias=False), (4, 5), None),
    (2, dict(kernel_size=(3, 2), stride=2, padding=(1, 0), dilation=(1, 2)), (2, 4, 4, 5), None),
    (2, dict(kernel_size=3, stride=2, groups=2), (2, 4, 5, 5), (12, 12)),
    (3, dict(kernel_size=2, stride=2, output_padding=1), (1, 4, 3, 2, 3), None),
]


@pytest.mark.parametrize("nd,kw,shape,size", TRANSPOSED, ids=[f"{t[0]}d-{i}" for i, t in enumerate(TRANSPOSED)])
def test_conv_transpose(nd, kw, shape, size):
    name = f"ConvTranspose{nd}d"
    fj = getattr(nn, name)(4, 6, **kw)
    th = getattr(torch.nn, name)(4, 6, **kw)
    check_module(fj, th, [rng().standard_normal(shape)], kwargs={"output_size": size} if size else None)


def test_conv_float64():
    check_module(nn.Conv2d(2, 3, 3), torch.nn.Conv2d(2, 3, 3), [rng().standard_normal((2, 2, 5, 5))], dtype="float64")


def test_conv_constructor_errors():
    with pytest.raises(ValueError, match="in_channels=3 must be divisible by groups=2"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="not supported for strided"):
        nn.Conv1d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="valid sizes along dim 0 range from 11 to 12"):
        nn.ConvTranspose2d(2, 2, 3, stride=2)(__import__("fjax").randn(1, 2, 5, 5), output_size=(13, 11))
