"""Dropout layers: statistics and scale in training mode, identity in eval mode, seeding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax
from fjax import nn

from ..helper import SEED, rng


def _ones(*shape):
    return fjax.ones(*shape)


@pytest.mark.parametrize("p", [0.2, 0.6])
def test_dropout_statistics(p):
    fjax.manual_seed(SEED)
    x = fjax.tensor(rng().uniform(1, 2, (400, 250)).astype(np.float32))
    y = nn.Dropout(p)(x).numpy()
    kept = y != 0
    n = kept.size
    # the kept fraction is Binomial(n, 1 - p): allow 6 standard deviations
    assert abs(kept.mean() - (1 - p)) < 6 * np.sqrt(p * (1 - p) / n), f"p={p} seed={SEED}"
    np.testing.assert_allclose(y[kept], x.numpy()[kept] / (1 - p), rtol=1e-6, atol=1e-6)


def test_dropout_eval_is_identity_and_edges():
    x = fjax.randn(5, 4)
    drop = nn.Dropout(0.5).eval()
    assert drop(x) is x
    assert nn.Dropout(0.0)(x) is x
    assert float(nn.Dropout(1.0)(x).abs().sum()) == 0.0
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)


def test_dropout_seeded_and_fresh():
    x = _ones(64, 64)
    fjax.manual_seed(SEED)
    a = nn.Dropout()(x).numpy()
    b = nn.Dropout()(x).numpy()
    fjax.manual_seed(SEED)
    c = nn.Dropout()(x).numpy()
    assert (a == c).all() and (a != b).any()


def test_dropout_gradient_uses_the_same_mask():
    fjax.manual_seed(SEED)
    x = fjax.randn(30, 40, requires_grad=True)
    y = nn.Dropout(0.3)(x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (y.detach().numpy() != 0) / 0.7, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "name,shape",
    [("Dropout1d", (50, 40, 6)), ("Dropout1d", (40, 6)), ("Dropout2d", (50, 40, 3, 2)), ("Dropout3d", (40, 2, 3, 2))],
)
def test_channel_dropout(name, shape):
    fjax.manual_seed(SEED)
    x = fjax.tensor(rng().uniform(1, 2, shape).astype(np.float32))
    layer = getattr(nn, name)(0.4)
    y = layer(x).numpy()
    unbatched = len(shape) == {"Dropout1d": 2, "Dropout2d": 3, "Dropout3d": 4}[name]
    per_channel = y.reshape(shape[: 1 if unbatched else 2] + (-1,))
    zero = (per_channel == 0).all(-1)
    assert ((per_channel != 0).all(-1) | zero).all(), "a channel is either dropped whole or kept whole"
    assert abs(zero.mean() - 0.4) < 6 * np.sqrt(0.24 / zero.size), f"seed={SEED}"
    kept = y != 0
    np.testing.assert_allclose(y[kept], x.numpy()[kept] / 0.6, rtol=1e-6, atol=1e-6)
    assert layer.eval()(x) is x


@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_keeps_mean_and_variance(name):
    """Standard-normal input keeps mean 0 and variance 1, as torch's (compared statistically)."""
    fjax.manual_seed(SEED)
    torch.manual_seed(SEED)
    x = rng().standard_normal((200, 50, 4, 4)).astype(np.float32)
    y = getattr(nn, name)(0.3)(fjax.tensor(x)).numpy()
    t = getattr(torch.nn, name)(0.3)(torch.from_numpy(x)).numpy()
    assert abs(y.mean() - t.mean()) < 0.03 and abs(y.std() - t.std()) < 0.03, f"seed={SEED}"
    assert abs(y.mean()) < 0.03 and abs(y.std() - 1) < 0.03
    # kept: a * x + alpha * a * p; dropped: the constant alpha * a * (p - 1) (torch's formula)
    alpha, p = 1.7580993408473766, 0.3
    a = 1 / np.sqrt((alpha**2 * p + 1) * (1 - p))
    kept = np.isclose(y, a * x + alpha * a * p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y[~kept], alpha * a * (p - 1), rtol=1e-6, atol=1e-6)
    # the dropped fraction's spread: FeatureAlphaDropout drops whole channels (200 * 50 draws)
    draws = x.size if name == "AlphaDropout" else 200 * 50
    assert abs((~kept).mean() - p) < 5 * np.sqrt(p * (1 - p) / draws), f"seed={SEED}"
