"""torch.nn.modules.<family> paths: every layer fjax has is importable where torch defines it, as the
same class; and the layers of the padding, pixelshuffle, upsampling, distance and fold families
against torch."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest
import torch

import fjax
import fjax.mock_torch as mock_torch
from fjax import nn

from .helper import check_module, rng

FAMILIES = [
    "module", "linear", "conv", "activation", "loss", "batchnorm", "instancenorm", "container", "normalization",
    "dropout", "pooling", "rnn", "sparse", "transformer", "flatten", "padding", "pixelshuffle", "upsampling",
    "distance", "fold", "utils",
]  # fmt: skip


def _torch_classes(family: str) -> list[str]:
    """Public classes torch defines in torch.nn.modules.<family> that fjax has as nn.<name>."""
    mod = importlib.import_module(f"torch.nn.modules.{family}")
    return sorted(
        name
        for name, obj in vars(mod).items()
        if inspect.isclass(obj) and not name.startswith("_") and obj.__module__ == mod.__name__ and hasattr(nn, name)
    )


@pytest.mark.parametrize(
    "family",
    FAMILIES,
)
def test_each_layer_is_importable_from_torchs_module_path(family):
    ours = importlib.import_module(f"fjax.nn.modules.{family}")
    missing = [name for name in _torch_classes(family) if getattr(ours, name, None) is not getattr(nn, name)]
    assert not missing, f"fjax.nn.modules.{family} lacks {missing} (or has copies, not nn's classes)"


def test_layout_covers_every_family_with_layers():
    assert sum(len(_torch_classes(f)) for f in FAMILIES) > 120
    assert all(_torch_classes(f) for f in FAMILIES if f not in ("utils",))


def test_parameter_init_and_base_classes():
    from fjax.nn.modules import batchnorm, conv, dropout, instancenorm, loss, module
    from fjax.nn.parameter import Parameter

    assert Parameter is nn.Parameter and module.Module is nn.Module and fjax.nn.init.xavier_uniform_
    bn = nn.BatchNorm2d(3)
    assert isinstance(bn, batchnorm._BatchNorm) and isinstance(bn, batchnorm._NormBase)
    assert isinstance(nn.InstanceNorm1d(2), instancenorm._InstanceNorm)
    assert isinstance(nn.Conv2d(1, 1, 1), conv._ConvNd) and isinstance(nn.Dropout(), dropout._DropoutNd)
    assert isinstance(nn.NLLLoss(), loss._WeightedLoss) and isinstance(nn.MSELoss(), loss._Loss)
    with mock_torch.enable():
        from torch.nn.modules.batchnorm import BatchNorm2d
        from torch.nn.modules.container import Sequential
        from torch.nn.parallel import DistributedDataParallel
    assert BatchNorm2d is nn.BatchNorm2d and Sequential is nn.Sequential
    assert DistributedDataParallel is fjax.nn.parallel.DistributedDataParallel


def test_utils_tuples_and_prefix_match_torch():
    from torch.nn.modules import utils as tu

    from fjax.nn.modules import utils as fu

    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for arg in (3, (1, 2), [4]):
            assert getattr(fu, name)(arg) == getattr(tu, name)(arg), (name, arg)
    assert fu._reverse_repeat_tuple((1, 2), 2) == tu._reverse_repeat_tuple((1, 2), 2)
    sd = {"module.a": 1, "b": 2, "module.c.d": 3}
    expected = dict(sd)
    fu.consume_prefix_in_state_dict_if_present(sd, "module.")
    tu.consume_prefix_in_state_dict_if_present(expected, "module.")
    assert sd == expected


PADS = [
    (f"{kind}Pad{n}d", n) for kind in ("Constant", "Zero", "Reflection", "Replication", "Circular") for n in (1, 2, 3)
]


def test_padding_layers_match_torch():
    x = rng().standard_normal((2, 3, 4, 5, 4)).astype(np.float32)
    for name, n in PADS:
        args = ((1, 2, 2, 0, 0, 1)[: 2 * n],) + ((0.5,) if name.startswith("Constant") else ())
        fj, th = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(fj) == repr(th)
        xi = x[(0,) * (3 - n)]  # a batched input of the layer's rank
        np.testing.assert_array_equal(fj(fjax.tensor(xi)).numpy(), th(torch.tensor(xi)).numpy(), err_msg=name)
    assert nn.ZeroPad2d(2).padding == torch.nn.ZeroPad2d(2).padding == (2, 2, 2, 2)
    check_module(nn.ReflectionPad2d((1, 2, 0, 1)), torch.nn.ReflectionPad2d((1, 2, 0, 1)), [x[0, 0]])


CASES = [
    ("PixelShuffle", (2,), [(2, 8, 3, 3)]),
    ("PixelUnshuffle", (2,), [(2, 2, 4, 6)]),
    ("Upsample", dict(scale_factor=2, mode="bilinear", align_corners=False), [(1, 2, 3, 3)]),
    ("Upsample", dict(size=(5,), mode="linear"), [(2, 2, 3)]),
    ("UpsamplingNearest2d", dict(scale_factor=(2, 3)), [(1, 2, 2, 3)]),
    ("UpsamplingBilinear2d", dict(size=(4, 5)), [(1, 2, 2, 3)]),
    ("PairwiseDistance", dict(p=1.5, keepdim=True), [(4, 5), (4, 5)]),
    ("CosineSimilarity", dict(dim=0), [(4, 5), (4, 5)]),
    ("Fold", dict(output_size=(4, 5), kernel_size=2, padding=1), [(2, 12, 30)]),
    ("Unfold", dict(kernel_size=(2, 3), stride=2, dilation=1), [(2, 3, 5, 7)]),
]


@pytest.mark.parametrize("name,args,shapes", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_layers_match_torch(name, args, shapes):
    make = (lambda cls: cls(**args)) if isinstance(args, dict) else (lambda cls: cls(*args))
    fj, th = make(getattr(nn, name)), make(getattr(torch.nn, name))
    assert repr(fj) == repr(th)
    r = rng(len(shapes))
    check_module(fj, th, [r.standard_normal(s) for s in shapes])
