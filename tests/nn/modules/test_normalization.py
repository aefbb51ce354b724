"""BatchNorm, InstanceNorm, LayerNorm, GroupNorm, RMSNorm against torch (train and eval)."""

from __future__ import annotations

import pytest
import torch

from fjax import nn

from ..helper import check_module, rng

BATCH = [
    ("BatchNorm1d", dict(), (6, 3)),
    ("BatchNorm1d", dict(momentum=0.3, affine=False), (4, 3, 5)),
    ("BatchNorm2d", dict(eps=1e-3, bias=False), (4, 3, 3, 2)),
    ("BatchNorm3d", dict(), (2, 3, 2, 3, 2)),
    ("BatchNorm2d", dict(track_running_stats=False), (4, 3, 3, 2)),
]


@pytest.mark.parametrize("name,kw,shape", BATCH, ids=[f"{c[0]}-{i}" for i, c in enumerate(BATCH)])
def test_batch_norm_train_then_eval(name, kw, shape):
    """Three training steps move the running statistics as torch's; eval then uses them."""
    fj, th = getattr(nn, name)(3, **kw), getattr(torch.nn, name)(3, **kw)
    for step in range(3):
        check_module(fj, th, [rng(step).standard_normal(shape) * 2 + 1], train=True, copy=step == 0, seed_salt=step)
    check_module(fj, th, [rng(9).standard_normal(shape)], train=False, copy=False)


def test_batch_norm_cumulative_average():
    """momentum=None: running stats are the plain average over all batches seen."""
    fj, th = nn.BatchNorm1d(3, momentum=None), torch.nn.BatchNorm1d(3, momentum=None)
    for step in range(3):
        check_module(fj, th, [rng(step).standard_normal((5, 3)) + step], copy=step == 0, seed_salt=step)
    assert int(fj.num_batches_tracked.item()) == 3


def test_batch_norm_float64_eval():
    check_module(
        nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3), [rng().standard_normal((2, 3, 4, 4))], train=False, dtype="float64"
    )


INSTANCE = [
    ("InstanceNorm1d", dict(), (2, 3, 6)),
    ("InstanceNorm1d", dict(affine=True), (3, 6)),
    ("InstanceNorm2d", dict(track_running_stats=True, momentum=0.2), (2, 3, 4, 4)),
    ("InstanceNorm3d", dict(affine=True, track_running_stats=True), (2, 3, 2, 3, 2)),
]


@pytest.mark.parametrize("name,kw,shape", INSTANCE, ids=[f"{c[0]}-{i}" for i, c in enumerate(INSTANCE)])
def test_instance_norm(name, kw, shape):
    fj, th = getattr(nn, name)(3, **kw), getattr(torch.nn, name)(3, **kw)
    check_module(fj, th, [rng().standard_normal(shape) * 3 + 1], train=True)
    check_module(fj, th, [rng(1).standard_normal(shape)], train=False, copy=False)


@pytest.mark.parametrize(
    "kw,shape",
    [(dict(normalized_shape=4), (3, 4)), (dict(normalized_shape=(2, 4), bias=False), (3, 5, 2, 4)),
     (dict(normalized_shape=[4], elementwise_affine=False, eps=1e-3), (2, 4))],
)  # fmt: skip
def test_layer_norm(kw, shape):
    check_module(nn.LayerNorm(**kw), torch.nn.LayerNorm(**kw), [rng().standard_normal(shape)])


@pytest.mark.parametrize(
    "kw,shape",
    [(dict(num_groups=2, num_channels=4), (3, 4, 5)), (dict(num_groups=4, num_channels=4, affine=False), (2, 4, 2, 3))],
)
def test_group_norm(kw, shape):
    check_module(nn.GroupNorm(**kw), torch.nn.GroupNorm(**kw), [rng().standard_normal(shape)])


@pytest.mark.parametrize(
    "kw,shape", [(dict(normalized_shape=4), (3, 4)), (dict(normalized_shape=(3, 4), eps=1e-3), (2, 3, 4))]
)
def test_rms_norm(kw, shape):
    check_module(nn.RMSNorm(**kw), torch.nn.RMSNorm(**kw), [rng().standard_normal(shape)])
