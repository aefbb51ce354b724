"""Loss layers against torch, every reduction, with weights and the module's own arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fjax import nn

from ..helper import check_module, rng

REDUCTIONS = ["mean", "sum", "none"]


def _pair(shape):
    r = rng()
    return [r.standard_normal(shape), r.standard_normal(shape)]


def _probs(shape):
    r = rng()
    return [r.uniform(0.05, 0.95, shape), r.uniform(0, 1, shape)]


def _classes(n, c, extra=(), ignore_index=-100):
    r = rng()
    target = r.integers(0, c, (n,) + extra)
    target.flat[0] = ignore_index
    return [r.standard_normal((n, c) + extra), target]


def _logp(shape):
    x = rng().standard_normal(shape)
    return [x - np.log(np.exp(x).sum(-1, keepdims=True)), rng(1).dirichlet(np.ones(shape[-1]), shape[0])]


def _weight(c):
    return rng(2).uniform(0.5, 2, c).astype(np.float32)


CASES = [
    ("L1Loss", {}, _pair((3, 4))),
    ("MSELoss", {}, _pair((3, 4))),
    ("SmoothL1Loss", dict(beta=0.5), _pair((3, 4))),
    ("HuberLoss", dict(delta=0.7), _pair((3, 4))),
    ("CrossEntropyLoss", {}, _classes(5, 4)),
    ("CrossEntropyLoss", dict(weight=_weight(4), label_smoothing=0.1), _classes(5, 4, (3,))),
    ("CrossEntropyLoss", dict(ignore_index=1), _classes(6, 3, ignore_index=1)),
    ("NLLLoss", dict(weight=_weight(4)), _classes(5, 4)),
    ("BCELoss", dict(weight=_weight(4)), _probs((3, 4))),
    ("BCEWithLogitsLoss", dict(pos_weight=_weight(4)), [rng().standard_normal((3, 4)), rng(1).uniform(0, 1, (3, 4))]),
    ("KLDivLoss", {}, _logp((4, 5))),
    ("KLDivLoss", dict(log_target=True), [_logp((4, 5))[0], np.log(_logp((4, 5))[1])]),
    ("SoftMarginLoss", {}, [rng().standard_normal((3, 4)), np.sign(rng(1).standard_normal((3, 4)))]),
    (
        "MultiLabelSoftMarginLoss",
        dict(weight=_weight(4)),
        [rng().standard_normal((3, 4)), rng(1).integers(0, 2, (3, 4)).astype(float)],
    ),
    ("PoissonNLLLoss", dict(full=True), [rng().standard_normal((3, 4)), rng(1).poisson(2, (3, 4)).astype(float)]),
    ("HingeEmbeddingLoss", dict(margin=0.5), [rng().standard_normal((3, 4)), np.sign(rng(1).standard_normal((3, 4)))]),
]


# losses whose torch version also differentiates the target
TARGET_GRAD = {"L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "BCEWithLogitsLoss"}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,kw,inputs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_loss(name, kw, inputs, reduction):
    th_kw = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    fj_kw = {k: __import__("fjax").tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    fj = getattr(nn, name)(reduction=reduction, **fj_kw)
    th = getattr(torch.nn, name)(reduction=reduction, **th_kw)
    check_module(fj, th, inputs, grad_inputs=None if name in TARGET_GRAD else (0,))


def test_kl_div_batchmean_and_legacy_flags():
    check_module(nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean"), _logp((4, 5)))
    fj, th = nn.MSELoss(size_average=False), torch.nn.MSELoss(size_average=False)
    assert fj.reduction == th.reduction == "sum"
    check_module(fj, th, _pair((3, 2)))


THREE = [
    (
        "CosineEmbeddingLoss",
        dict(margin=0.2),
        [rng().standard_normal((4, 5)), rng(1).standard_normal((4, 5)), np.array([1, -1, 1, -1])],
    ),
    (
        "MarginRankingLoss",
        dict(margin=0.1),
        [rng().standard_normal(6), rng(1).standard_normal(6), np.sign(rng(2).standard_normal(6))],
    ),
    ("TripletMarginLoss", dict(margin=0.5, p=1.5, swap=True), [rng(i).standard_normal((4, 5)) for i in range(3)]),
    (
        "GaussianNLLLoss",
        dict(full=True),
        [rng().standard_normal((4, 2)), rng(1).standard_normal((4, 2)), rng(2).uniform(0.1, 2, (4, 2))],
    ),
]


@pytest.mark.parametrize("name,kw,inputs", THREE, ids=[c[0] for c in THREE])
def test_three_input_losses(name, kw, inputs):
    for reduction in REDUCTIONS:
        fj, th = getattr(nn, name)(reduction=reduction, **kw), getattr(torch.nn, name)(reduction=reduction, **kw)
        check_module(fj, th, inputs, grad_inputs=(0, 1) if name != "GaussianNLLLoss" else (0, 1, 2))


def test_weight_is_a_buffer():
    loss = nn.CrossEntropyLoss(weight=__import__("fjax").ones(3))
    assert [n for n, _ in loss.named_buffers()] == ["weight"]
    assert list(loss.state_dict()) == list(torch.nn.CrossEntropyLoss(weight=torch.ones(3)).state_dict())
