"""fjax.distributions against torch.distributions: log_prob, entropy, moments, cdf/icdf and KL on
fresh random parameters (values and gradients), argument validation, sample statistics with fixed
seeds, reparametrized gradients given the same noise, tracing through fjax.func, and the
package's doctest examples."""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
import pkgutil
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest
import torch
import torch.distributions as TD

import fjax
import fjax.distributions as FD


@pytest.fixture(autouse=True)
def _torch_validates():
    """torch validates distribution arguments by default, but the first use of torch._dynamo
    (torch.compile, torch.export: other tests in the same worker) turns that off for the whole
    process; the oracle here must validate as torch does by default."""
    saved = TD.Distribution._validate_args
    TD.Distribution.set_default_validate_args(True)
    yield
    TD.Distribution.set_default_validate_args(saved)


SEED = int(os.environ.get("FJAX_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-9, 1e-11)}
DTYPES = ("float32", "float64")
D = "float32"  # the dtype of most tests: one dtype compiles each fjax op once


def _rng(*salt):
    return np.random.default_rng([SEED, *salt])


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.asarray(t.detach()._data)


def _close(a, b, what, dtype, scale=1.0):
    """fjax ``a`` equals torch ``b`` (shape, dtype, values within the dtype's tolerance; NaNs match)."""
    rtol, atol = TOL[dtype]
    a, b = _np(a), _np(b)
    msg = f"{what} (FJAX_TEST_SEED={SEED})"
    assert a.shape == b.shape, f"{msg}: shape {a.shape} != torch {b.shape}"
    assert a.dtype == b.dtype, f"{msg}: dtype {a.dtype} != torch {b.dtype}"
    np.testing.assert_allclose(a, b, rtol=rtol * scale, atol=atol * scale, equal_nan=True, err_msg=msg)


# -- random parameters --------------------------------------------------------------------------
def _real(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _pos(rng, shape, dtype, lo=0.5, hi=3.0):
    return rng.uniform(lo, hi, shape).astype(dtype)


def _unit(rng, shape, dtype):
    return rng.uniform(0.05, 0.95, shape).astype(dtype)


def _simplex(rng, shape, dtype):
    e = rng.uniform(0.1, 1.0, shape)
    return (e / e.sum(-1, keepdims=True)).astype(dtype)


def _spd(rng, shape, dtype):
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) / shape[-1] + np.eye(shape[-1])).astype(dtype)


def _tril(rng, shape, dtype):
    return (
        np.tril(rng.standard_normal(shape), -1) + np.eye(shape[-1]) * rng.uniform(0.5, 2.0, shape[:-1] + (1,))
    ).astype(dtype)


def _one_hot(rng, shape, dtype):
    return np.eye(shape[-1], dtype=dtype)[rng.integers(0, shape[-1], shape[:-1])]


B = (3, 4)  # batch shape of most cases
S = (2, 3, 4)  # a value: one sample dim in front of the batch
U = lambda r, d, p: _unit(r, S, d)  # noqa: E731 - a value in (0, 1), for icdf
MOMENTS = ("mean", "variance", "stddev", "mode")


@dataclass
class Case:
    """One distribution made from the same random parameters in fjax and torch."""

    name: str
    params: Callable  # (rng, dtype) -> {name: array or number}
    value: Callable  # (rng, dtype, params) -> array at which to evaluate log_prob/cdf
    props: tuple = MOMENTS + ("entropy",)
    cdf: bool = False
    icdf: bool = False
    cls: str = ""  # the class name when it differs from ``name``
    nograd: tuple = ()  # parameters that take no gradient
    extra: tuple = field(default=())  # further attributes to compare (probs, logits, matrices)
    no_backward: tuple = ()  # outputs left out of the gradient check


CASES = [
    Case(
        "Normal",
        lambda r, d: {"loc": _real(r, B, d), "scale": _pos(r, B, d)},
        lambda r, d, p: _real(r, S, d),
        cdf=True,
        icdf=True,
    ),
    Case(
        "Laplace",
        lambda r, d: {"loc": _real(r, B, d), "scale": _pos(r, B, d)},
        lambda r, d, p: _real(r, S, d),
        cdf=True,
        icdf=True,
    ),
    Case(
        "Uniform",
        lambda r, d: {"low": (lo := _real(r, B, d)), "high": lo + _pos(r, B, d)},
        lambda r, d, p: p["low"] + _unit(r, S, d) * (p["high"] - p["low"]),
        props=("mean", "variance", "stddev", "entropy"),
        cdf=True,
        icdf=True,
    ),
    Case(
        "Exponential",
        lambda r, d: {"rate": _pos(r, B, d)},
        lambda r, d, p: _pos(r, S, d, 0.0, 3.0),
        cdf=True,
        icdf=True,
    ),
    Case(
        "Gamma",
        lambda r, d: {"concentration": _pos(r, B, d), "rate": _pos(r, B, d)},
        lambda r, d, p: _pos(r, S, d, 0.1, 4.0),
        cdf=True,
        no_backward=("cdf",),  # torch has no gradient of gammainc in the concentration
    ),
    Case(
        "Beta",
        lambda r, d: {"concentration1": _pos(r, B, d), "concentration0": _pos(r, B, d)},
        lambda r, d, p: _unit(r, S, d),
    ),
    Case("Dirichlet", lambda r, d: {"concentration": _pos(r, (3, 4), d)}, lambda r, d, p: _simplex(r, (2, 3, 4), d)),
    Case(
        "Poisson",
        lambda r, d: {"rate": _pos(r, B, d, 0.5, 6.0)},
        lambda r, d, p: r.integers(0, 8, S).astype(d),
        props=("mean", "variance", "mode"),
    ),
    Case(
        "Binomial",
        lambda r, d: {"total_count": r.integers(1, 12, B).astype(d), "probs": _unit(r, B, d)},
        lambda r, d, p: np.floor(p["total_count"] * _unit(r, S, d)).astype(d),
        props=MOMENTS,
        nograd=("total_count",),
        extra=("logits",),
    ),
    Case(
        "Binomial-logits",
        lambda r, d: {"total_count": 7.0, "logits": _real(r, B, d)},
        lambda r, d, p: r.integers(0, 8, S).astype(d),
        cls="Binomial",
        extra=("probs",),
    ),
    Case(
        "Bernoulli",
        lambda r, d: {"probs": _unit(r, B, d)},
        lambda r, d, p: (r.random(S) < 0.5).astype(d),
        extra=("logits",),
    ),
    Case(
        "Bernoulli-logits",
        lambda r, d: {"logits": _real(r, B, d)},
        lambda r, d, p: (r.random(S) < 0.5).astype(d),
        cls="Bernoulli",
        extra=("probs",),
    ),
    Case(
        "Categorical",
        lambda r, d: {"probs": _pos(r, (3, 5), d)},
        lambda r, d, p: r.integers(0, 5, (2, 3)),
        props=("mean", "variance", "mode", "entropy"),
        extra=("probs", "logits"),
    ),
    Case(
        "Categorical-logits",
        lambda r, d: {"logits": _real(r, (3, 5), d)},
        lambda r, d, p: r.integers(0, 5, (2, 3)),
        props=("mode", "entropy"),
        cls="Categorical",
        extra=("probs", "logits"),
    ),
    Case(
        "OneHotCategorical",
        lambda r, d: {"logits": _real(r, (3, 5), d)},
        lambda r, d, p: _one_hot(r, (2, 3, 5), d),
        extra=("probs",),
    ),
    Case(
        "LogNormal",
        lambda r, d: {"loc": _real(r, B, d), "scale": _pos(r, B, d, 0.3, 1.5)},
        lambda r, d, p: _pos(r, S, d, 0.1, 4.0),
        cdf=True,
        icdf=True,
    ),
    Case(
        "MultivariateNormal",
        lambda r, d: {"loc": _real(r, (3, 4), d), "covariance_matrix": _spd(r, (3, 4, 4), d)},
        lambda r, d, p: _real(r, (2, 3, 4), d),
        props=("mean", "variance", "mode", "entropy"),
        extra=("scale_tril", "precision_matrix"),
    ),
    Case(
        "MultivariateNormal-precision",
        lambda r, d: {"loc": _real(r, (4,), d), "precision_matrix": _spd(r, (3, 4, 4), d)},
        lambda r, d, p: _real(r, (2, 3, 4), d),
        props=("mean", "variance", "entropy"),
        cls="MultivariateNormal",
        extra=("scale_tril", "covariance_matrix"),
    ),
    Case(
        "MultivariateNormal-scale_tril",
        lambda r, d: {"loc": _real(r, (3, 4), d), "scale_tril": _tril(r, (4, 4), d)},
        lambda r, d, p: _real(r, (2, 3, 4), d),
        props=("mean", "variance", "entropy"),
        cls="MultivariateNormal",
        extra=("covariance_matrix", "precision_matrix"),
    ),
]


def _make(lib, case, params, grad=True):
    """The distribution and its differentiable parameter tensors, in fjax (``lib=fjax``) or torch."""
    ns = FD if lib is fjax else TD
    args, leaves = {}, {}
    for k, v in params.items():
        if isinstance(v, np.ndarray):
            needs = grad and k not in case.nograd and v.dtype.kind == "f"
            t = fjax.tensor(v, requires_grad=needs) if lib is fjax else torch.from_numpy(v.copy()).requires_grad_(needs)
            if needs:
                leaves[k] = t
            v = t
        args[k] = v
    return getattr(ns, case.cls or case.name)(**args), leaves


def _outputs(lib, dist, case, value, u):
    out = {"log_prob": dist.log_prob(value)}
    if case.cdf:
        out["cdf"] = dist.cdf(value)
    if case.icdf:
        out["icdf"] = dist.icdf(u)
    for p in case.props + case.extra:
        out[p] = dist.entropy() if p == "entropy" else getattr(dist, p)
    return out


def _tensor(lib, a):
    return fjax.tensor(a) if lib is fjax else torch.from_numpy(np.array(a))


F64 = ("Normal",)  # float64 too: the dtype is kept, and the formulas hold to 1e-9


@pytest.mark.parametrize(
    "case,dtype",
    [(c, "float32") for c in CASES] + [(c, "float64") for c in CASES if c.name in F64],
    ids=lambda v: v.name if isinstance(v, Case) else v,
)
def test_against_torch(case, dtype):
    """log_prob, cdf, icdf, entropy, moments and derived parameters equal torch's, and so do the
    gradients of a random weighting of them with respect to every parameter."""
    rng = _rng(CASES.index(case), DTYPES.index(dtype))
    params = case.params(rng, dtype)
    value, u = case.value(rng, dtype, params), _unit(rng, S, dtype)
    results = {}
    for lib in (fjax, torch):
        dist, leaves = _make(lib, case, params)
        results[lib] = (_outputs(lib, dist, case, _tensor(lib, value), _tensor(lib, u)), leaves, dist)
    (fj, fj_leaves, fj_dist), (th, th_leaves, th_dist) = results[fjax], results[torch]
    assert fj_dist.batch_shape == tuple(th_dist.batch_shape)
    assert fj_dist.event_shape == tuple(th_dist.event_shape)
    for k in th:
        _close(fj[k], th[k], f"{case.name}.{k}", dtype, scale=10 if case.name.startswith("Multi") else 1)
    weights = {k: rng.standard_normal(tuple(t.shape)).astype(dtype) for k, t in th.items()}
    weights = {
        k: w
        for k, w in weights.items()
        if th[k].is_floating_point() and np.isfinite(_np(th[k])).all() and k not in case.no_backward
    }
    sum(((fj[k] * fjax.tensor(w)).sum() for k, w in weights.items())).backward()
    sum(((th[k] * torch.from_numpy(w)).sum() for k, w in weights.items())).backward()
    assert fj_leaves.keys() == th_leaves.keys()
    for k in th_leaves:
        _close(fj_leaves[k].grad, th_leaves[k].grad, f"{case.name} grad of {k}", dtype, scale=100)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_expand_and_enumerate_support(case):
    rng = _rng(100 + CASES.index(case))
    params = case.params(rng, D)
    fj, _ = _make(fjax, case, params, grad=False)
    th, _ = _make(torch, case, params, grad=False)
    shape = (2,) + tuple(th.batch_shape)
    fje, the = fj.expand(shape), th.expand(shape)
    assert fje.batch_shape == shape and type(fje) is type(fj)
    value = case.value(rng, D, params)
    _close(fje.log_prob(_tensor(fjax, value)), the.log_prob(_tensor(torch, value)), f"{case.name} expanded", D)
    assert repr(fj).replace("fjax.Size", "torch.Size") == repr(th)
    if th.has_enumerate_support and case.name != "Binomial":  # torch refuses mixed total counts too
        for expand in (True, False):
            _close(fj.enumerate_support(expand), th.enumerate_support(expand), f"{case.name} support", D)


def test_binomial_entropy_and_support():
    rng = _rng(200)
    probs = _unit(rng, B, D)
    fj, th = FD.Binomial(9, fjax.tensor(probs)), TD.Binomial(9, torch.from_numpy(probs))
    _close(fj.entropy(), th.entropy(), "Binomial entropy", D)
    _close(fj.enumerate_support(), th.enumerate_support(), "Binomial support", D)
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        FD.Binomial(fjax.tensor([2.0, 3.0]), fjax.tensor([0.5, 0.5])).entropy()


def test_independent():
    rng = _rng(300)
    loc, scale, x = _real(rng, B, D), _pos(rng, B, D), _real(rng, S, D)
    fj = FD.Independent(FD.Normal(fjax.tensor(loc), fjax.tensor(scale)), 1)
    th = TD.Independent(TD.Normal(torch.from_numpy(loc), torch.from_numpy(scale)), 1)
    assert fj.batch_shape == (3,) and fj.event_shape == (4,) and fj.has_rsample
    _close(fj.log_prob(fjax.tensor(x)), th.log_prob(torch.from_numpy(x)), "Independent log_prob", D)
    _close(fj.entropy(), th.entropy(), "Independent entropy", D)
    assert fj.expand((2, 3)).batch_shape == (2, 3)
    assert repr(fj.support) == repr(th.support)
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        FD.Independent(FD.Normal(0.0, 1.0), 1)


# -- transforms -------------------------------------------------------------------------------------
def _transforms(lib, rng):
    ns = FD.transforms if lib is fjax else TD.transforms
    loc, scale = _real(rng, B, D), (rng.uniform(0.5, 2.0, B) * rng.choice([-1.0, 1.0], B)).astype(D)
    t = (lambda a: fjax.tensor(a)) if lib is fjax else (lambda a: torch.from_numpy(a))
    return {
        "exp": ns.ExpTransform(),
        "sigmoid": ns.SigmoidTransform(),
        "tanh": ns.TanhTransform(),
        "softplus": ns.SoftplusTransform(),
        "affine": ns.AffineTransform(t(loc), t(scale)),
        "affine-number": ns.AffineTransform(0.5, -2.0, event_dim=1),
        "power": ns.PowerTransform(t(np.array(1.5, D))),
        "compose": ns.ComposeTransform([ns.AffineTransform(t(loc), t(scale)), ns.SigmoidTransform()]),
        "independent": ns.IndependentTransform(ns.ExpTransform(), 1),
        "inverse-sigmoid": ns.SigmoidTransform().inv,
    }


def test_transforms_against_torch():
    rng = _rng(250)
    fj_ts, th_ts = _transforms(fjax, _rng(251)), _transforms(torch, _rng(251))
    for name in fj_ts:
        x = _unit(rng, B, D) if name in ("power", "inverse-sigmoid") else _real(rng, B, D)
        fx, tx = fjax.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
        fy, ty = fj_ts[name](fx), th_ts[name](tx)
        _close(fy, ty, f"{name} forward", D)
        _close(fj_ts[name].inv(fy), th_ts[name].inv(ty), f"{name} inverse", D, scale=100)
        fj_ld, th_ld = fj_ts[name].log_abs_det_jacobian(fx, fy), th_ts[name].log_abs_det_jacobian(tx, ty)
        _close(fj_ld, th_ld, f"{name} log_abs_det_jacobian", D)
        (fy.sum() + fj_ld.sum()).backward()
        (ty.sum() + th_ld.sum()).backward()
        _close(fx.grad, tx.grad, f"{name} gradient", D)
        assert repr(fj_ts[name].domain) == repr(th_ts[name].domain), name
        assert repr(fj_ts[name].codomain) == repr(th_ts[name].codomain), name
    x = fjax.tensor(_real(rng, (2, 4), D))
    _close(
        FD.transforms.SoftmaxTransform()(x),
        TD.transforms.SoftmaxTransform()(torch.from_numpy(_np(x).copy())),
        "softmax",
        D,
    )
    cached = FD.transforms.ExpTransform().with_cache()
    assert cached.inv(cached(x)) is x and FD.transforms.ExpTransform() == FD.transforms.ExpTransform()


def test_tanh_squashed_normal_against_torch():
    """The policy distribution of SAC: Normal pushed through an affine map and tanh."""
    rng = _rng(260)
    loc, scale, y = _real(rng, B, D), _pos(rng, B, D), rng.uniform(-0.9, 0.9, S).astype(D)
    fl, fs = fjax.tensor(loc, requires_grad=True), fjax.tensor(scale, requires_grad=True)
    tl, ts = torch.from_numpy(loc).requires_grad_(), torch.from_numpy(scale).requires_grad_()
    ft = [FD.transforms.AffineTransform(0.5, 2.0), FD.transforms.TanhTransform()]
    tt = [TD.transforms.AffineTransform(0.5, 2.0), TD.transforms.TanhTransform()]
    fd = FD.TransformedDistribution(FD.Independent(FD.Normal(fl, fs), 1), ft)
    td = TD.TransformedDistribution(TD.Independent(TD.Normal(tl, ts), 1), tt)
    assert fd.batch_shape == tuple(td.batch_shape) and fd.event_shape == tuple(td.event_shape)
    fo, to = fd.log_prob(fjax.tensor(y)), td.log_prob(torch.from_numpy(y))
    _close(fo, to, "squashed log_prob", D, scale=100)
    fo.sum().backward()
    to.sum().backward()
    _close(fl.grad, tl.grad, "squashed grad loc", D, scale=100)
    _close(fs.grad, ts.grad, "squashed grad scale", D, scale=100)
    fjax.manual_seed(0)
    a = fd.rsample((64,))
    assert a.shape == (64, 3, 4) and bool((a.abs() <= 1).all()) and a.requires_grad
    assert fd.expand((2, 3)).batch_shape == (2, 3)
    p, q = FD.LogNormal(fjax.tensor(loc), fjax.tensor(scale)), FD.LogNormal(0.0, 1.0)
    kl_th = TD.kl_divergence(TD.LogNormal(torch.from_numpy(loc), torch.from_numpy(scale)), TD.LogNormal(0.0, 1.0))
    _close(FD.kl_divergence(p, q), kl_th, "LogNormal KL", D)


# -- KL divergence --------------------------------------------------------------------------------
KL_PAIRS = {
    "Normal": lambda r: {"loc": _real(r, B, D), "scale": _pos(r, B, D)},
    "Laplace": lambda r: {"loc": _real(r, B, D), "scale": _pos(r, B, D)},
    "Exponential": lambda r: {"rate": _pos(r, B, D)},
    "Gamma": lambda r: {"concentration": _pos(r, B, D), "rate": _pos(r, B, D)},
    "Beta": lambda r: {"concentration1": _pos(r, B, D), "concentration0": _pos(r, B, D)},
    "Dirichlet": lambda r: {"concentration": _pos(r, B, D)},
    "Poisson": lambda r: {"rate": _pos(r, B, D)},
    "Bernoulli": lambda r: {"probs": _unit(r, B, D)},
    "Binomial": lambda r: {"total_count": 5.0, "probs": _unit(r, B, D)},
    "Categorical": lambda r: {"logits": _real(r, (3, 5), D)},
    "OneHotCategorical": lambda r: {"probs": _simplex(r, (3, 5), D)},
    "Uniform": lambda r: {"low": r.uniform(-1.0, 0.0, B).astype(D), "high": r.uniform(1.0, 2.0, B).astype(D)},
    "MultivariateNormal": lambda r: {"loc": _real(r, (3, 4), D), "scale_tril": _tril(r, (3, 4, 4), D)},
}


@pytest.mark.parametrize("name", list(KL_PAIRS))
def test_kl_divergence(name):
    rng = _rng(400 + list(KL_PAIRS).index(name))
    case = Case(name, None, None)
    p_params, q_params = KL_PAIRS[name](rng), KL_PAIRS[name](rng)
    if name == "Uniform":  # q's support contains p's, or the KL is infinite
        p_params = {"low": p_params["low"] / 2, "high": p_params["high"] / 2}
    out = {}
    for lib in (fjax, torch):
        p, p_leaves = _make(lib, case, p_params)
        q, q_leaves = _make(lib, case, q_params)
        kl = (FD if lib is fjax else TD).kl_divergence(p, q)
        kl.sum().backward()
        out[lib] = kl, p_leaves, q_leaves
    _close(out[fjax][0], out[torch][0], f"KL({name}, {name})", D, scale=100 if name.startswith("Multi") else 1)
    for i, side in ((1, "p"), (2, "q")):
        for k in out[torch][i]:
            _close(out[fjax][i][k].grad, out[torch][i][k].grad, f"KL {name} grad {side}.{k}", D, scale=100)


def test_kl_infinite_and_dispatch():
    inside, outside = FD.Uniform(0.0, 1.0), FD.Uniform(0.5, 2.0)
    assert FD.kl_divergence(inside, outside).item() == float("inf")
    assert FD.kl_divergence(FD.Bernoulli(0.5), FD.Bernoulli(0.0)).item() == float("inf")
    assert FD.kl_divergence(FD.Bernoulli(0.0), FD.Bernoulli(0.0)).item() == 0.0
    zero = fjax.tensor([0.0, 0.5, 0.5])
    assert FD.kl_divergence(FD.Categorical(zero), FD.Categorical(fjax.tensor([0.2, 0.4, 0.4]))).isfinite().item()
    with pytest.raises(NotImplementedError, match="No KL"):
        FD.kl_divergence(FD.Normal(0.0, 1.0), FD.Gamma(1.0, 1.0))

    class Narrow(FD.Normal):
        pass

    @FD.register_kl(Narrow, FD.Normal)
    def _kl(p, q):
        return fjax.tensor(42.0)

    assert FD.kl_divergence(Narrow(0.0, 1.0), FD.Normal(0.0, 1.0)).item() == 42.0
    assert FD.kl_divergence(FD.Normal(0.0, 1.0), Narrow(0.0, 2.0)).item() != 42.0  # Normal-Normal still
    with pytest.raises(TypeError):
        FD.register_kl(int, FD.Normal)


# -- validation --------------------------------------------------------------------------------
BAD_PARAMS = [
    ("Normal", {"loc": [0.0, 1.0], "scale": [1.0, -1.0]}, "scale"),
    ("Normal", {"loc": [float("nan")], "scale": [1.0]}, "loc"),
    ("Exponential", {"rate": [0.0]}, "rate"),
    ("Gamma", {"concentration": [1.0], "rate": [-2.0]}, "rate"),
    ("Beta", {"concentration1": [0.0], "concentration0": [1.0]}, "concentration"),  # torch checks the Dirichlet
    ("Bernoulli", {"probs": [1.5]}, "probs"),
    ("Categorical", {"probs": [[0.5, -0.5]]}, "probs"),
    ("Uniform", {"low": [1.0], "high": [0.0]}, "low"),
    ("Poisson", {"rate": [-1.0]}, "rate"),
    ("Binomial", {"total_count": [2.5], "probs": [0.5]}, "total_count"),
    ("Dirichlet", {"concentration": [1.0, 0.0]}, "concentration"),
    ("MultivariateNormal", {"loc": [0.0, 0.0], "covariance_matrix": [[1.0, 2.0], [2.0, 1.0]]}, "covariance_matrix"),
    ("MultivariateNormal", {"loc": [0.0, 0.0], "scale_tril": [[1.0, 0.0], [1.0, -1.0]]}, "scale_tril"),
]


def _message_head(msg):
    """A validation message up to the parameter's repr (reprs of tensors/Sizes differ)."""
    return msg.split(" of distribution ")[0].split(" to be within")[0]


@pytest.mark.parametrize("name,params,bad", BAD_PARAMS, ids=lambda v: v if isinstance(v, str) else "")
def test_invalid_parameters_raise(name, params, bad):
    with pytest.raises(ValueError) as th_err:
        getattr(TD, name)(**{k: torch.tensor(v) for k, v in params.items()})
    with pytest.raises(ValueError, match=f"Expected parameter {bad} ") as fj_err:
        getattr(FD, name)(**{k: fjax.tensor(v) for k, v in params.items()})
    assert _message_head(str(fj_err.value)) == _message_head(str(th_err.value))
    if "covariance_matrix" not in params:  # (which cholesky rejects, as torch's, even unvalidated)
        assert repr(getattr(FD, name)(**{k: fjax.tensor(v) for k, v in params.items()}, validate_args=False))


BAD_VALUES = [
    (lambda ns, t, **kw: ns.Exponential(t([1.0]), **kw), [-1.0]),
    (lambda ns, t, **kw: ns.Gamma(t([1.0]), t([1.0]), **kw), [-0.5]),
    (lambda ns, t, **kw: ns.Beta(t([1.0]), t([1.0]), **kw), [1.5]),
    (lambda ns, t, **kw: ns.Bernoulli(t([0.3]), **kw), [0.5]),
    (lambda ns, t, **kw: ns.Poisson(t([2.0]), **kw), [1.5]),
    (lambda ns, t, **kw: ns.Binomial(3, t([0.3]), **kw), [4.0]),
    (lambda ns, t, **kw: ns.Categorical(t([0.3, 0.7]), **kw), [2]),
    (lambda ns, t, **kw: ns.Uniform(t([0.0]), t([1.0]), **kw), [2.0]),
    (lambda ns, t, **kw: ns.Dirichlet(t([1.0, 1.0]), **kw), [0.5, 0.6]),
    (lambda ns, t, **kw: ns.OneHotCategorical(t([0.3, 0.7]), **kw), [1.0, 1.0]),
]


@pytest.mark.parametrize("make,value", BAD_VALUES)
def test_values_outside_support_raise(make, value):
    with pytest.raises(ValueError) as th_err:
        make(TD, torch.tensor).log_prob(torch.tensor(value))
    with pytest.raises(ValueError, match="Expected value argument") as fj_err:
        make(FD, fjax.tensor).log_prob(fjax.tensor(value))
    assert _message_head(str(fj_err.value)) == _message_head(str(th_err.value))
    with pytest.raises(ValueError, match="Expected value argument"):
        make(FD, fjax.tensor).expand((2, 1)).log_prob(fjax.tensor(value))  # expand keeps validation on
    if not isinstance(value[0], int):  # (an index out of range fails in gather, as torch's)
        make(FD, fjax.tensor, validate_args=False).log_prob(fjax.tensor(value))  # no check


def test_validation_switches_and_shape_errors():
    d = FD.Normal(fjax.zeros(3), fjax.ones(3))
    with pytest.raises(ValueError, match="must be a Tensor"):
        d.log_prob(0.5)
    with pytest.raises(ValueError, match="not broadcastable with batch_shape"):
        d.log_prob(fjax.zeros(2))
    with pytest.raises(ValueError, match="right-most size of value must match event_shape"):
        FD.MultivariateNormal(fjax.zeros(2), fjax.eye(2)).log_prob(fjax.zeros(3))
    assert FD.Distribution._validate_args
    FD.Distribution.set_default_validate_args(False)
    try:
        assert FD.Normal(0.0, -1.0).log_prob(fjax.tensor(float("nan"))).isnan().item()
        with pytest.raises(ValueError):
            FD.Normal(0.0, -1.0, validate_args=True)
    finally:
        FD.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        FD.Distribution.set_default_validate_args("yes")
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        FD.Categorical(fjax.ones(2), fjax.ones(2))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        FD.Categorical(fjax.tensor(1.0))
    with pytest.raises(ValueError, match="Exactly one of"):
        FD.MultivariateNormal(fjax.zeros(2))
    assert FD.Exponential(fjax.ones(2), validate_args=False).log_prob(fjax.tensor([-1.0, 1.0])).shape == (2,)


def test_constraints_match_torch():
    rng = _rng(500)
    x = rng.uniform(-0.5, 1.5, (4, 3))
    x[0, 0] = np.nan
    pairs = ["real", "positive", "nonnegative", "unit_interval", "boolean", "nonnegative_integer", "positive_integer"]
    pairs += ["simplex", "real_vector", "one_hot", "lower_triangular", "lower_cholesky", "square", "symmetric"]
    values = [x, np.round(x), np.abs(x) / np.abs(x).sum(-1, keepdims=True), np.eye(3)[[0, 2, 1, 1]]]
    values = [v.astype(D) for v in values]
    for name in pairs:
        fc, tc = getattr(FD.constraints, name), getattr(TD.constraints, name)
        assert repr(fc) == repr(tc) and fc.event_dim == tc.event_dim and fc.is_discrete == tc.is_discrete
        matrices = [np.tril(_real(rng, (2, 3, 3), D)), _spd(rng, (2, 3, 3), D)]
        for v in matrices if fc.event_dim == 2 else values:
            _close(fc.check(fjax.tensor(v)), tc.check(torch.from_numpy(v)), f"constraints.{name}", D)
    for fc, tc in [
        (FD.constraints.interval(-0.2, 0.7), TD.constraints.interval(-0.2, 0.7)),
        (FD.constraints.half_open_interval(0.0, 1.0), TD.constraints.half_open_interval(0.0, 1.0)),
        (FD.constraints.greater_than_eq(0.5), TD.constraints.greater_than_eq(0.5)),
        (FD.constraints.less_than(0.5), TD.constraints.less_than(0.5)),
        (FD.constraints.integer_interval(0, 1), TD.constraints.integer_interval(0, 1)),
        (
            FD.constraints.independent(FD.constraints.positive, 1),
            TD.constraints.independent(TD.constraints.positive, 1),
        ),
    ]:
        assert repr(fc) == repr(tc)
        _close(fc.check(fjax.tensor(values[1])), tc.check(torch.from_numpy(values[1])), repr(fc), D)
    spd, not_pd = _spd(rng, (3, 3), D), np.array([[1.0, 2.0], [2.0, 1.0]], D)
    assert FD.constraints.positive_definite.check(fjax.tensor(spd)).item()
    assert not FD.constraints.positive_definite.check(fjax.tensor(not_pd)).item()
    assert FD.constraints.is_dependent(FD.Uniform.support) and not FD.constraints.is_dependent(FD.constraints.real)
    with pytest.raises(ValueError, match="dependent"):
        FD.constraints.dependent.check(fjax.zeros(1))


# -- sampling ---------------------------------------------------------------------------------------
N = 16384  # gamma-type samplers compile per bucket of 16384 draws: the tests share one
SAMPLED = [
    ("Normal", lambda: FD.Normal(fjax.tensor([0.0, 2.0]), fjax.tensor([1.0, 0.5]))),
    ("Laplace", lambda: FD.Laplace(fjax.tensor([0.0, 2.0]), fjax.tensor([1.0, 0.5]))),
    ("Uniform", lambda: FD.Uniform(fjax.tensor([0.0, -1.0]), fjax.tensor([1.0, 3.0]))),
    ("Exponential", lambda: FD.Exponential(fjax.tensor([1.0, 4.0]))),
    ("Gamma", lambda: FD.Gamma(fjax.tensor([0.5, 3.0]), fjax.tensor([1.0, 2.0]))),
    ("Beta", lambda: FD.Beta(fjax.tensor([0.5, 2.0]), fjax.tensor([0.5, 5.0]))),
    ("Dirichlet", lambda: FD.Dirichlet(fjax.tensor([0.5, 1.0, 2.0, 3.0]))),
    ("Poisson", lambda: FD.Poisson(fjax.tensor([0.5, 30.0]))),
    ("Binomial", lambda: FD.Binomial(fjax.tensor([10.0, 3.0]), fjax.tensor([0.3, 0.9]))),
    ("Bernoulli", lambda: FD.Bernoulli(logits=fjax.tensor([-1.0, 2.0]))),
    ("Categorical", lambda: FD.Categorical(fjax.tensor([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]]))),
    ("OneHotCategorical", lambda: FD.OneHotCategorical(fjax.tensor([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]]))),
    (
        "MultivariateNormal",
        lambda: FD.MultivariateNormal(fjax.tensor([1.0, -1.0]), fjax.tensor([[2.0, 0.8], [0.8, 1.0]])),
    ),
]


@pytest.mark.parametrize("name,make", SAMPLED, ids=[s[0] for s in SAMPLED])
def test_sample_statistics(name, make):
    """20k draws (fixed seed): right shape and dtype, inside the support, and mean and variance
    within a few standard errors of the distribution's."""
    d = make()
    fjax.manual_seed(1234)
    x = d.sample((N,))
    assert x.shape == (N,) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert x.dtype == (fjax.int64 if name == "Categorical" else fjax.float32)
    assert not x.requires_grad
    assert d.support.check(x).all().item(), f"{name}: samples outside the support"
    xs = _np(x).astype(np.float64)
    if name == "Categorical":  # compare the frequencies with probs
        freq = np.stack([(xs == k).mean(0) for k in range(3)], -1)
        np.testing.assert_allclose(freq, _np(d.probs), atol=0.015, err_msg=name)
        return
    mean, var = _np(d.mean).astype(np.float64), _np(d.variance).astype(np.float64)
    se = np.sqrt(var / N)
    assert np.all(np.abs(xs.mean(0) - mean) <= 5 * se + 1e-6), f"{name}: mean {xs.mean(0)} vs {mean}"
    np.testing.assert_allclose(xs.var(0), var, rtol=0.06, atol=1e-3, err_msg=f"{name} variance")
    fjax.manual_seed(1234)
    assert np.array_equal(_np(d.sample((N,))), _np(x)), f"{name}: manual_seed does not repeat the draws"


def test_sample_shapes_and_scalars():
    fjax.manual_seed(0)
    assert FD.Normal(0.0, 1.0).sample().shape == ()
    assert FD.Normal(0.0, 1.0).rsample((2, 3)).shape == (2, 3)
    assert FD.Categorical(logits=fjax.zeros(4)).sample().shape == ()
    assert FD.Bernoulli(0.3).sample((5,)).dtype == fjax.float32
    assert FD.Normal(fjax.zeros(2, dtype=fjax.float64), 1.0).rsample().dtype == fjax.float64
    d = FD.Normal(fjax.zeros(2, requires_grad=True), fjax.ones(2))
    assert d.rsample().requires_grad and not d.sample().requires_grad
    assert FD.Normal.has_rsample and not FD.Categorical.has_rsample and FD.Categorical.has_enumerate_support


# -- reparametrized gradients, given the same noise -------------------------------------------------
def _same_noise_grads(make_fj, noise, make_th_sample, params, shape=(2,)):
    """Gradients of ``sum(rsample(shape)**2)`` in fjax, and in torch for the same noise drawn by
    ``noise`` after re-seeding (``make_th_sample(params, noise)`` builds the torch sample)."""
    fj_params = {k: fjax.tensor(v, requires_grad=True) for k, v in params.items()}
    fjax.manual_seed(7)
    x = make_fj(**fj_params).rsample(shape)
    (x**2).sum().backward()
    fjax.manual_seed(7)
    eps = torch.from_numpy(_np(noise(tuple(x.shape))).copy())
    th_params = {k: torch.from_numpy(v.copy()).requires_grad_() for k, v in params.items()}
    y = make_th_sample(th_params, eps)
    _close(x, y, "rsample value", D)
    (y**2).sum().backward()
    for k in params:
        _close(fj_params[k].grad, th_params[k].grad, f"rsample grad of {k}", D, scale=100)


def test_rsample_gradients_location_scale():
    rng = _rng(600)
    loc, scale = _real(rng, B, D), _pos(rng, B, D)

    def randn(s):
        return fjax.randn(*s, dtype=fjax.float32)

    def rand(s):
        return fjax.rand(*s, dtype=fjax.float32)

    _same_noise_grads(FD.Normal, randn, lambda p, e: p["loc"] + e * p["scale"], {"loc": loc, "scale": scale})
    low, high = loc, loc + scale
    _same_noise_grads(FD.Uniform, rand, lambda p, e: p["low"] + e * (p["high"] - p["low"]), {"low": low, "high": high})

    def laplace(p, u):
        u = u * (2 - np.finfo(np.float32).eps) + (np.finfo(np.float32).eps - 1)
        return p["loc"] - p["scale"] * u.sign() * torch.log1p(-u.abs())

    _same_noise_grads(FD.Laplace, rand, laplace, {"loc": loc, "scale": scale})
    _same_noise_grads(FD.Exponential, rand, lambda p, u: -torch.log1p(-u) / p["rate"], {"rate": scale})
    tril = _tril(rng, (3, 4, 4), D)

    def mvn(p, e):
        return p["loc"] + (p["scale_tril"] @ e.unsqueeze(-1)).squeeze(-1)

    _same_noise_grads(FD.MultivariateNormal, randn, mvn, {"loc": loc, "scale_tril": tril})


def test_gamma_rsample_gradient_is_torchs_implicit_gradient():
    """Per draw, d(sample)/d(concentration) equals torch's ``_standard_gamma_grad`` at that draw,
    and d/d(rate) is ``-sample / rate``."""
    rng = _rng(700)
    alpha, rate = _pos(rng, (2, N), "float32", 0.2, 5.0), _pos(rng, (2, N), "float32")
    a, r = fjax.tensor(alpha, requires_grad=True), fjax.tensor(rate, requires_grad=True)
    fjax.manual_seed(3)
    x = FD.Gamma(a, r).rsample()
    x.sum().backward()
    std = torch.from_numpy(_np(x) * rate)
    expected = torch._standard_gamma_grad(torch.from_numpy(alpha), std) / torch.from_numpy(rate)
    np.testing.assert_allclose(_np(a.grad), expected.numpy(), rtol=2e-3, atol=1e-5, err_msg=f"seed {SEED}")
    np.testing.assert_allclose(_np(r.grad), -_np(x) / rate, rtol=1e-5)


@pytest.mark.parametrize("name", ["Gamma", "Beta", "Dirichlet"])
def test_implicit_rsample_gradient_is_unbiased(name):
    """The mean over draws of d(sample)/d(parameter) is the derivative of the distribution's mean."""

    def make(a, b):
        if name == "Gamma":
            return FD.Gamma(a, b)
        return FD.Beta(a, b) if name == "Beta" else FD.Dirichlet(fjax.stack([a, b], -1))

    def first(x):
        return x[..., 0] if name == "Dirichlet" else x

    leaves = [fjax.tensor([0.7, 2.5], requires_grad=True), fjax.tensor([1.5, 0.8], requires_grad=True)]
    fjax.manual_seed(11)
    first(make(*leaves).rsample((N,))).mean(0).sum().backward()
    exact = [fjax.tensor([0.7, 2.5], requires_grad=True), fjax.tensor([1.5, 0.8], requires_grad=True)]
    first(make(*exact).mean).sum().backward()
    for got, want in zip(leaves, exact):
        np.testing.assert_allclose(_np(got.grad), _np(want.grad), rtol=0.08, atol=0.01, err_msg=name)


# -- tracing ---------------------------------------------------------------------------------------
def test_log_prob_and_rsample_inside_fjax_func():
    rng = _rng(800)
    loc, scale, x = _real(rng, B, D), _pos(rng, B, D), _real(rng, S, D)

    def nll(loc, scale):
        return -FD.Normal(loc, scale).log_prob(fjax.tensor(x)).sum()

    g_loc, g_scale = fjax.func.grad(nll, argnums=(0, 1))(fjax.tensor(loc), fjax.tensor(scale))
    tl, ts = torch.from_numpy(loc).requires_grad_(), torch.from_numpy(scale).requires_grad_()
    (-TD.Normal(tl, ts).log_prob(torch.from_numpy(x)).sum()).backward()
    _close(g_loc, tl.grad, "func.grad loc", D)
    _close(g_scale, ts.grad, "func.grad scale", D)

    def normal_sample_mean(loc):
        return FD.Normal(loc, 2.0).rsample((4,)).mean()

    g = fjax.func.grad(normal_sample_mean)(fjax.tensor(loc))
    np.testing.assert_allclose(_np(g), np.full(B, 1 / 12))  # d/dloc of the mean of 12 entries

    def kl(loc):
        return FD.kl_divergence(
            FD.MultivariateNormal(loc, scale_tril=fjax.eye(4, dtype=fjax.float32)),
            FD.MultivariateNormal(fjax.zeros(4, dtype=fjax.float32), fjax.eye(4, dtype=fjax.float32)),
        ).sum()

    _close(fjax.func.grad(kl)(fjax.tensor(loc)), torch.from_numpy(loc), "func.grad of MVN KL", D)


def test_inside_nn_graph():
    """A Gaussian policy's loss in a compiled nn.Graph step equals eager's, and samples vary per step."""

    class Policy(fjax.nn.Module):
        def __init__(self):
            super().__init__()
            self.mu = fjax.nn.Linear(4, 4)

        def forward(self, x):
            return FD.Normal(self.mu(x), fjax.ones(4))

    class Step(fjax.nn.Graph):
        def __init__(self, policy):
            super().__init__()
            self.policy = policy

        def build(self, x, a):
            d = self.policy(x)
            return -d.log_prob(a).sum() - d.entropy().sum(), d.sample()

    rng = _rng(900)
    x, a = fjax.tensor(_real(rng, (3, 4), D)), fjax.tensor(_real(rng, (3, 4), D))
    policy = Policy()
    step = Step(policy)
    (loss, s1), (_, s2) = step(x, a), step(x, a)
    d = policy(x)
    eager = -d.log_prob(a).sum() - d.entropy().sum()
    np.testing.assert_allclose(_np(loss), _np(eager), rtol=1e-6, err_msg="graph loss")
    assert s1.shape == (3, 4) and not bool((s1 == s2).all())


# -- doctest examples --------------------------------------------------------------------------------
def _documented():
    """Every public class and function of the package (and module docstrings with examples)."""
    found = {"fjax.distributions": FD}
    for info in pkgutil.iter_modules(FD.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"fjax.distributions.{info.name}")
        if ">>>" in (mod.__doc__ or ""):
            found[mod.__name__] = mod
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            found[f"{mod.__name__}.{name}"] = obj
            if isinstance(obj, type):
                for k, v in vars(obj).items():
                    fn = v.__func__ if isinstance(v, staticmethod) else v
                    if callable(fn) and ">>>" in (fn.__doc__ or ""):
                        found[f"{mod.__name__}.{name}.{k}"] = fn
    return sorted(found.items())


DOCUMENTED = _documented()


def test_every_public_object_has_an_example():
    public = [(n, o) for n, o in DOCUMENTED if inspect.isclass(o) or inspect.isfunction(o)]
    missing = [n for n, o in public if ">>>" not in (inspect.getdoc(o) or "")]
    assert not missing, f"public objects without a runnable example: {missing}"


@pytest.mark.parametrize("name,obj", DOCUMENTED, ids=[n for n, _ in DOCUMENTED])
def test_examples_run(name, obj):
    parser = doctest.DocTestParser()
    test = parser.get_doctest(inspect.getdoc(obj) or "", {"fjax": fjax}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)


# -- one kernel per method and per validation ---------------------------------------------
def _op_names(fn) -> list[str]:
    with fjax.profiler.profile() as prof:
        fn()
    return [e.key for e in prof.key_averages()]


def test_log_prob_entropy_and_validation_run_as_one_kernel_each():
    rng = _rng(900)
    logits, actions = rng.standard_normal((6, 4)).astype(np.float32), rng.integers(0, 4, 6)
    fl = fjax.tensor(logits, requires_grad=True)
    tl = torch.from_numpy(logits).requires_grad_()
    names = []

    def step():
        d = FD.Categorical(logits=fl)
        loss = (d.log_prob(fjax.tensor(actions)) * 2).sum() - d.entropy().sum()
        loss.backward()
        names.append(loss)

    ops = _op_names(step)
    # the support check, log_prob and entropy are one op each (the op by op path dispatches a
    # remainder and comparisons for the check, then unsqueeze, expand, gather and squeeze)
    assert {"IntegerInterval.check", "Categorical.log_prob", "Categorical.entropy"} <= set(ops), ops
    assert not {"remainder", "bitwise_and", "gather", "expand"} & set(ops), ops
    td = TD.Categorical(logits=tl)
    ((td.log_prob(torch.from_numpy(actions)) * 2).sum() - td.entropy().sum()).backward()
    _close(names[0], ((td.log_prob(torch.from_numpy(actions)) * 2).sum() - td.entropy().sum()), "loss", D)
    _close(fl.grad, tl.grad, "grad through the kernels", D)


def test_a_kernel_check_still_rejects_what_it_must():
    d = FD.Categorical(logits=fjax.zeros(3, 4))
    with pytest.raises(ValueError, match="support"):
        d.log_prob(fjax.tensor([0, 4, 1])).sum().item()
    # one kernel per constraint state: the bounds are part of it
    FD.Categorical(logits=fjax.zeros(2, 3)).log_prob(fjax.tensor([0, 2]))
    with pytest.raises(ValueError, match="support"):
        FD.Categorical(logits=fjax.zeros(2, 3)).log_prob(fjax.tensor([0, 3])).sum().item()
    FD.Categorical(logits=fjax.zeros(2, 5)).log_prob(fjax.tensor([0, 4]))
    # bounds that are tensors: checked op by op, still checked
    low, high = fjax.tensor([0.0, 1.0]), fjax.tensor([1.0, 3.0])
    support = FD.Uniform(low, high).support
    assert FD.utils._check_kernel(support.check) is None
    with pytest.raises(ValueError, match="support"):
        FD.Uniform(low, high).log_prob(fjax.tensor([0.5, 3.5]))
    # validation off: gather's own index check runs (op by op), as torch's does
    free = FD.Categorical(logits=fjax.zeros(3, 4), validate_args=False)
    with pytest.raises(IndexError):
        free.log_prob(fjax.tensor([0, 7, 1])).sum().item()


def test_a_method_holding_other_objects_or_reading_the_host_runs_op_by_op():
    rng = _rng(901)
    loc, x = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
    ind = FD.Independent(FD.Normal(fjax.tensor(loc), fjax.ones(3, 2)), 1)  # holds a distribution
    ops = _op_names(lambda: ind.log_prob(fjax.tensor(x)))
    assert "Normal.log_prob" in ops and "Independent.log_prob" not in ops, ops
    ref = TD.Independent(TD.Normal(torch.from_numpy(loc), torch.ones(3, 2)), 1).log_prob(torch.from_numpy(x))
    _close(ind.log_prob(fjax.tensor(x)), ref, "Independent", D)

    class Host(FD.Distribution):  # a method that reads a value on the host cannot be one kernel
        def __init__(self, w):
            self.w = w
            super().__init__(validate_args=False)

        def entropy(self):
            return self.w * 2 if self.w.sum() > 0 else -self.w

    fused = FD.utils.one_kernel(Host.entropy)
    w = fjax.tensor([1.0, -3.0])
    np.testing.assert_array_equal(fused(Host(w)).numpy(), [-1.0, 3.0])
    np.testing.assert_array_equal(fused(Host(-w)).numpy(), [-2.0, 6.0])  # not the first call's branch
