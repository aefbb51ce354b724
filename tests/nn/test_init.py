"""nn.init and default layer initialisation: distributions compared with torch's over many draws."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import fjax
from fjax import nn

from .helper import SEED, close


def _moments(a: np.ndarray) -> np.ndarray:
    return np.array([a.mean(), a.std(), a.min(), a.max()])


def _compare(fj_samples: np.ndarray, th_samples: np.ndarray, what: str, bounded: bool) -> None:
    """Mean and std agree within 6 standard errors; the sample min/max of bounded distributions
    agree within 10 / n of the range (each misses its bound by more with probability < e^-10)."""
    n = fj_samples.size
    fm, tm = _moments(fj_samples), _moments(th_samples)
    se = tm[1] / math.sqrt(n)
    assert abs(fm[0] - tm[0]) < 6 * se + 1e-12, f"{what}: mean {fm[0]} vs torch {tm[0]} (seed={SEED})"
    assert abs(fm[1] - tm[1]) < 6 * tm[1] * math.sqrt(2 / n) + 1e-12, (
        f"{what}: std {fm[1]} vs torch {tm[1]} (seed={SEED})"
    )
    if bounded:
        tol = (tm[3] - tm[2]) * 10 / n
        assert abs(fm[2] - tm[2]) < tol and abs(fm[3] - tm[3]) < tol, (
            f"{what}: bounds {fm[2:]} vs {tm[2:]} (seed={SEED})"
        )


FUNCTIONS = [
    ("uniform_", dict(a=-0.3, b=0.7), True),
    ("normal_", dict(mean=0.5, std=2.0), False),
    ("trunc_normal_", dict(mean=0.2, std=1.5, a=-1.0, b=2.0), False),
    ("xavier_uniform_", dict(gain=1.5), True),
    ("xavier_normal_", dict(gain=0.5), False),
    ("kaiming_uniform_", dict(a=math.sqrt(5)), True),
    ("kaiming_uniform_", dict(mode="fan_out", nonlinearity="relu"), True),
    ("kaiming_normal_", dict(a=0.2, nonlinearity="leaky_relu"), False),
    ("kaiming_normal_", dict(mode="fan_out", nonlinearity="tanh"), False),
    ("orthogonal_", dict(gain=2.0), False),
    ("sparse_", dict(sparsity=0.3, std=0.5), False),
]


@pytest.mark.parametrize("name,kw,bounded", FUNCTIONS, ids=[f"{f[0]}-{i}" for i, f in enumerate(FUNCTIONS)])
def test_init_distribution(name, kw, bounded):
    fjax.manual_seed(SEED)
    torch.manual_seed(SEED)
    shape = (96, 64) if name in ("orthogonal_", "sparse_") else (32, 16, 3, 3)
    fj = [getattr(nn.init, name)(nn.Parameter(fjax.empty(*shape)), **kw).detach().numpy() for _ in range(4)]
    th = [getattr(torch.nn.init, name)(torch.empty(shape), **kw).numpy() for _ in range(4)]
    _compare(np.stack(fj), np.stack(th), f"init.{name}({kw})", bounded)
    if name == "trunc_normal_":
        assert -1.0 <= min(f.min() for f in fj) and max(f.max() for f in fj) <= 2.0
    if name == "sparse_":
        zero_per_column = (fj[0] == 0).sum(0)
        assert (zero_per_column == math.ceil(0.3 * shape[0])).all()


@pytest.mark.parametrize("shape", [(5, 8), (8, 5), (4, 3, 2)])
def test_orthogonal_is_orthogonal(shape):
    w = nn.init.orthogonal_(fjax.empty(*shape), gain=1.5).numpy().reshape(shape[0], -1)
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    np.testing.assert_allclose(gram, 1.5**2 * np.eye(gram.shape[0]), atol=1e-5)


def test_deterministic_fills_match_torch():
    for name, args, shape in [
        ("constant_", (0.3,), (3, 4)), ("zeros_", (), (2, 3)), ("ones_", (), (4,)), ("eye_", (), (3, 5)),
        ("dirac_", (), (4, 2, 3, 3)), ("dirac_", (2,), (6, 3, 3)), ("dirac_", (), (2, 2, 1, 3, 3)),
    ]:  # fmt: skip
        fj = getattr(nn.init, name)(fjax.empty(*shape), *args)
        th = getattr(torch.nn.init, name)(torch.empty(shape), *args)
        close(fj, th, f"init.{name}", 0, 0)


def test_gain_and_fans_match_torch():
    for nl, param in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                      ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:  # fmt: skip
        assert nn.init.calculate_gain(nl, param) == pytest.approx(torch.nn.init.calculate_gain(nl, param))
    for shape in [(3, 4), (5, 4, 3), (6, 2, 3, 3)]:
        assert nn.init._calculate_fan_in_and_fan_out(fjax.empty(*shape)) == torch.nn.init._calculate_fan_in_and_fan_out(
            torch.empty(shape)
        )
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        nn.init.calculate_gain("swish")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(fjax.empty(3))
    with pytest.raises(ValueError, match="mode 'fan_avg' not supported"):
        nn.init.kaiming_uniform_(fjax.empty(3, 3), mode="fan_avg")


def test_init_is_in_place_and_seeded():
    p = nn.Parameter(fjax.empty(4, 3))
    assert nn.init.normal_(p) is p and p.requires_grad and p.is_leaf
    fjax.manual_seed(SEED)
    a = nn.Linear(5, 4).weight.detach().numpy()
    fjax.manual_seed(SEED)
    b = nn.Linear(5, 4).weight.detach().numpy()
    np.testing.assert_array_equal(a, b)
    g = fjax.Generator().manual_seed(SEED)
    c = nn.init.uniform_(fjax.empty(3), generator=g).numpy()
    d = nn.init.uniform_(fjax.empty(3), generator=fjax.Generator().manual_seed(SEED)).numpy()
    np.testing.assert_array_equal(c, d)


LAYERS = [
    ("Linear", (24, 16)),
    ("Bilinear", (6, 5, 8)),
    ("Conv2d", (4, 8, 3)),
    ("Conv1d", (6, 8, 3, 1, 0, 1, 2)),
    ("ConvTranspose2d", (4, 8, 3)),
    ("Embedding", (50, 8)),
    ("MultiheadAttention", (16, 4)),
    ("PReLU", (4,)),
    ("LayerNorm", (8,)),
    ("BatchNorm2d", (8,)),
]


@pytest.mark.parametrize("name,args", LAYERS, ids=[layer[0] for layer in LAYERS])
def test_default_layer_init_matches_torch(name, args):
    """Every default-initialised parameter has torch's distribution (pooled over draws)."""
    fjax.manual_seed(SEED)
    torch.manual_seed(SEED)
    draws = 12
    fj = [dict(getattr(nn, name)(*args).named_parameters()) for _ in range(draws)]
    th = [dict(getattr(torch.nn, name)(*args).named_parameters()) for _ in range(draws)]
    assert list(fj[0]) == list(th[0])
    for key in fj[0]:
        a = np.stack([d[key].detach().numpy() for d in fj])
        b = np.stack([d[key].detach().numpy() for d in th])
        assert a.shape == b.shape, f"{name}.{key}: shape {a.shape} != torch {b.shape}"
        if b.std() == 0:
            np.testing.assert_array_equal(a, b, err_msg=f"{name}.{key}")
        else:
            _compare(a, b, f"{name}.{key}", bounded=name != "Embedding")
