"""clip_grad_norm_ and clip_grad_value_ against torch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import fjax
from fjax import nn

from ..helper import close, rng


def _params_with_grads(scale):
    r = rng()
    shapes = [(3, 4), (5,), (2, 2, 2)]
    values = [r.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [r.standard_normal(s).astype(np.float32) * scale for s in shapes]
    fj, th = [], []
    for v, g in zip(values, grads):
        p = nn.Parameter(fjax.tensor(v))
        p.grad = fjax.tensor(g)
        q = torch.nn.Parameter(torch.from_numpy(v.copy()))
        q.grad = torch.from_numpy(g.copy())
        fj.append(p)
        th.append(q)
    return fj, th


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.0, math.inf])
@pytest.mark.parametrize("scale", [0.01, 10.0])
def test_clip_grad_norm(norm_type, scale):
    fj, th = _params_with_grads(scale)
    total = nn.utils.clip_grad_norm_(fj, max_norm=1.5, norm_type=norm_type)
    ref = torch.nn.utils.clip_grad_norm_(th, max_norm=1.5, norm_type=norm_type)
    close(total, ref, f"total norm (p={norm_type})", 1e-5, 1e-6)
    for i, (p, q) in enumerate(zip(fj, th)):
        close(p.grad, q.grad, f"clipped grad {i} (p={norm_type}, scale={scale})", 1e-5, 1e-6)


def test_clip_grad_norm_single_tensor_none_grads_and_nonfinite():
    p = nn.Parameter(fjax.ones(3))
    assert float(nn.utils.clip_grad_norm_([p], 1.0)) == 0.0  # no gradients at all
    p.grad = fjax.full((3,), 2.0)
    total = nn.utils.clip_grad_norm_(p, 1.0)
    assert total.item() == pytest.approx(math.sqrt(12), rel=1e-6)
    assert np.linalg.norm(p.grad.numpy()) == pytest.approx(1.0, rel=1e-5)
    p.grad = fjax.tensor([1.0, float("inf"), 0.0])
    q = nn.Parameter(fjax.ones(2))
    q.grad = fjax.tensor([3.0, 4.0])
    with pytest.raises(RuntimeError, match="non-finite"):  # eager: at once, as torch
        nn.utils.clip_grad_norm_([q, p], 1.0, error_if_nonfinite=True)
    assert q.grad.tolist() == [3.0, 4.0]  # raised before any gradient was scaled


def test_clip_grad_value():
    fj, th = _params_with_grads(2.0)
    nn.utils.clip_grad_value_(fj, 0.7)
    torch.nn.utils.clip_grad_value_(th, 0.7)
    for i, (p, q) in enumerate(zip(fj, th)):
        close(p.grad, q.grad, f"clipped grad {i}", 0, 0)
