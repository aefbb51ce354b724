"""Max/average/adaptive pooling layers against torch."""

from __future__ import annotations

import pytest
import torch

from fjax import nn

from ..helper import check_module, rng

CASES = [
    ("MaxPool1d", (3,), dict(stride=2, padding=1), (2, 3, 10)),
    ("MaxPool1d", (2,), dict(ceil_mode=True, dilation=2), (3, 9)),
    ("MaxPool2d", (2,), {}, (2, 3, 6, 6)),
    ("MaxPool2d", ((3, 2),), dict(stride=(2, 1), padding=1, ceil_mode=True), (2, 3, 7, 6)),
    ("MaxPool2d", (3,), dict(stride=2, return_indices=True), (1, 2, 7, 7)),
    ("MaxPool3d", (2,), dict(stride=1, padding=1), (1, 2, 3, 4, 3)),
    ("AvgPool1d", (3,), dict(stride=2, padding=1, count_include_pad=False), (2, 3, 10)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True), (2, 3, 7, 7)),
    ("AvgPool2d", (2,), dict(divisor_override=3), (2, 3, 6, 6)),
    ("AvgPool3d", (2,), dict(stride=(1, 2, 2)), (1, 2, 3, 4, 4)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 10)),
    ("AdaptiveAvgPool2d", ((3, None),), {}, (2, 3, 7, 5)),
    ("AdaptiveAvgPool3d", (2,), {}, (1, 2, 5, 4, 3)),
    ("AdaptiveMaxPool1d", (3,), dict(return_indices=True), (2, 3, 10)),
    ("AdaptiveMaxPool2d", ((2, 3),), {}, (2, 3, 7, 5)),
]


@pytest.mark.parametrize("name,args,kw,shape", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_pooling(name, args, kw, shape):
    fj, th = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(fj) == repr(th)
    check_module(fj, th, [rng().standard_normal(shape)])
