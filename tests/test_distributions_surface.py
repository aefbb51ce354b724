"""The rest of torch.distributions in fjax: the further distributions (Cauchy, StudentT, Gumbel,
Weibull, mixtures, low-rank normals, relaxed and matrix distributions, ...), the further
transforms and ``biject_to``/``transform_to``, against torch on fresh random parameters:
log_prob, cdf/icdf, entropy and moments with their gradients, transforms' values, inverses and
log-Jacobians with gradients, KL divergences, sample shapes and moments, and reparametrized
gradients."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
import torch
import torch.distributions as TD

import fjax
import fjax.distributions as FD

SEED = int(os.environ.get("FJAX_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
D = "float32"
RTOL, ATOL = 1e-5, 1e-5


def _rng(*salt):
    return np.random.default_rng([SEED, *salt])


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.asarray(t.detach()._data)


def _close(a, b, what, scale=1.0):
    """fjax ``a`` equals torch ``b``: shape, dtype and values (NaNs and infinities match)."""
    a, b = _np(a), _np(b)
    msg = f"{what} (FJAX_TEST_SEED={SEED})"
    assert a.shape == b.shape, f"{msg}: shape {a.shape} != torch {b.shape}"
    assert a.dtype == b.dtype, f"{msg}: dtype {a.dtype} != torch {b.dtype}"
    np.testing.assert_allclose(a, b, rtol=RTOL * scale, atol=ATOL * scale, equal_nan=True, err_msg=msg)


def _real(rng, shape):
    return rng.standard_normal(shape).astype(D)


def _pos(rng, shape, lo=0.5, hi=3.0):
    return rng.uniform(lo, hi, shape).astype(D)


def _unit(rng, shape, lo=0.05, hi=0.95):
    return rng.uniform(lo, hi, shape).astype(D)


def _away_from_half(rng, shape):
    """Probabilities in [0.05, 0.4] or [0.6, 0.95]: near 0.5 ContinuousBernoulli's float32 formulas cancel."""
    return np.where(rng.random(shape) < 0.5, rng.uniform(0.05, 0.4, shape), rng.uniform(0.6, 0.95, shape)).astype(D)


def _simplex(rng, shape):
    e = rng.uniform(0.1, 1.0, shape)
    return (e / e.sum(-1, keepdims=True)).astype(D)


def _spd(rng, shape):
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) / shape[-1] + np.eye(shape[-1])).astype(D)


def _corr_cholesky(rng, shape):
    a = rng.standard_normal(shape[:-1] + (shape[-1] + 2,))
    cov = a @ np.swapaxes(a, -1, -2)
    d = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
    return np.linalg.cholesky(cov / d[..., :, None] / d[..., None, :]).astype(D)


B = (3, 4)  # the batch shape of most cases
S = (2, 3, 4)  # a value: one sample dim before the batch
MOMENTS = ("mean", "variance", "stddev", "mode", "entropy")


@dataclass
class Case:
    """One distribution made from the same random parameters in fjax and torch."""

    name: str
    params: Callable  # rng -> {name: array or number}
    value: Callable  # (rng, params) -> the array log_prob/cdf are evaluated at
    props: tuple = MOMENTS
    cdf: bool = False
    icdf: bool = False
    cls: str = ""  # the class name when it differs from ``name``
    nograd: tuple = ()  # parameters that take no gradient
    extra: tuple = ()  # further attributes to compare
    no_backward: tuple = ()  # outputs left out of the gradient check
    scale: float = 1.0  # tolerance multiplier


CASES = [
    Case(
        "Cauchy",
        lambda r: {"loc": _real(r, B), "scale": _pos(r, B)},
        lambda r, p: _real(r, S),
        cdf=True,
        icdf=True,
    ),
    Case(
        "Chi2",
        lambda r: {"df": _pos(r, B, 0.5, 6.0)},
        lambda r, p: _pos(r, S, 0.1, 5.0),
        cdf=True,
        extra=("df",),
        no_backward=("cdf",),  # torch has no gradient of gammainc in the concentration
    ),
    Case(
        "StudentT",
        lambda r: {"df": _pos(r, B, 0.5, 6.0), "loc": _real(r, B), "scale": _pos(r, B)},
        lambda r, p: _real(r, S),
    ),
    Case("HalfNormal", lambda r: {"scale": _pos(r, B)}, lambda r, p: _pos(r, S, 0.0, 4.0), cdf=True, icdf=True),
    Case("HalfCauchy", lambda r: {"scale": _pos(r, B)}, lambda r, p: _pos(r, S, 0.0, 4.0), cdf=True, icdf=True),
    Case(
        "Geometric",
        lambda r: {"probs": _unit(r, B)},
        lambda r, p: r.integers(0, 6, S).astype(D),
        extra=("logits",),
    ),
    Case(
        "Geometric-logits",
        lambda r: {"logits": _real(r, B)},
        lambda r, p: r.integers(0, 6, S).astype(D),
        cls="Geometric",
        extra=("probs",),
    ),
    Case(
        "NegativeBinomial",
        lambda r: {"total_count": _pos(r, B, 0.5, 8.0), "probs": _unit(r, B)},
        lambda r, p: r.integers(0, 10, S).astype(D),
        props=("mean", "variance", "stddev", "mode"),
        extra=("logits",),
        scale=10,
    ),
    Case(
        "NegativeBinomial-logits",
        lambda r: {"total_count": 4.0, "logits": _real(r, B)},
        lambda r, p: r.integers(0, 10, S).astype(D),
        props=("mean", "variance", "mode"),
        cls="NegativeBinomial",
        extra=("probs",),
        scale=10,
    ),
    Case(
        "Multinomial",
        lambda r: {"total_count": 5, "probs": _pos(r, (3, 4))},
        lambda r, p: np.stack([r.multinomial(5, [0.25] * 4) for _ in range(6)]).reshape(2, 3, 4).astype(D),
        props=("mean", "variance", "entropy"),
        extra=("probs", "logits"),
    ),
    Case(
        "Multinomial-logits",
        lambda r: {"total_count": 3, "logits": _real(r, (3, 4))},
        lambda r, p: np.stack([r.multinomial(3, [0.25] * 4) for _ in range(6)]).reshape(2, 3, 4).astype(D),
        props=("mean", "variance", "entropy"),
        cls="Multinomial",
        extra=("probs",),
    ),
    Case(
        "Gumbel",
        lambda r: {"loc": _real(r, B), "scale": _pos(r, B)},
        # within 2.5 scales of loc: farther left the cdf is a float32 denormal, which XLA flushes to 0
        lambda r, p: (p["loc"] + p["scale"] * np.clip(_real(r, S), -2.5, 2.5)).astype(D),
        cdf=True,
        icdf=True,
    ),
    Case(
        "Weibull",
        lambda r: {"scale": _pos(r, B), "concentration": _pos(r, B, 0.8, 3.0)},
        lambda r, p: _pos(r, S, 0.1, 3.0),
        cdf=True,
        icdf=True,
        scale=10,
    ),
    Case(
        "Pareto",
        lambda r: {"scale": _pos(r, B), "alpha": _pos(r, B, 0.5, 4.0)},
        lambda r, p: p["scale"] + _pos(r, S, 0.0, 3.0),
        cdf=True,
        icdf=True,
    ),
    Case(
        "VonMises",
        lambda r: {"loc": _real(r, B), "concentration": _pos(r, B, 0.2, 8.0)},
        lambda r, p: r.uniform(-np.pi, np.pi, S).astype(D),
        props=("mean", "mode", "variance"),
        scale=10,
    ),
    Case(
        "LowRankMultivariateNormal",
        lambda r: {"loc": _real(r, (3, 4)), "cov_factor": _real(r, (3, 4, 2)), "cov_diag": _pos(r, (4,))},
        lambda r, p: _real(r, (2, 3, 4)),
        props=("mean", "mode", "variance", "entropy"),
        extra=("scale_tril", "covariance_matrix", "precision_matrix"),
        scale=10,
    ),
    Case(
        "FisherSnedecor",
        lambda r: {"df1": _pos(r, B, 0.5, 8.0), "df2": _pos(r, B, 1.0, 9.0)},
        lambda r, p: _pos(r, S, 0.1, 4.0),
        props=("mean", "variance", "mode"),
    ),
    Case(
        "ContinuousBernoulli",
        lambda r: {"probs": np.concatenate([_away_from_half(r, (3, 3)), np.full((3, 1), 0.4995, D)], -1)},
        lambda r, p: _unit(r, S, 0.0, 1.0),
        props=("mean", "variance", "stddev", "entropy"),
        cdf=True,
        icdf=True,
        extra=("logits",),
        scale=10,
    ),
    Case(
        "ContinuousBernoulli-logits",
        lambda r: {"logits": np.log(p := _away_from_half(r, B)) - np.log1p(-p)},
        lambda r, p: _unit(r, S, 0.0, 1.0),
        props=("mean", "variance", "stddev", "entropy"),
        cdf=True,
        icdf=True,
        cls="ContinuousBernoulli",
        extra=("probs",),
        scale=10,
    ),
    Case(
        "GeneralizedPareto",
        lambda r: {"loc": _real(r, B), "scale": _pos(r, B), "concentration": r.uniform(0.05, 0.9, B).astype(D)},
        lambda r, p: p["loc"] + _pos(r, S, 0.0, 3.0),
        cdf=True,
        icdf=True,
    ),
    Case(
        "GeneralizedPareto-negative",
        lambda r: {"loc": _real(r, B), "scale": _pos(r, B), "concentration": r.uniform(-0.9, -0.05, B).astype(D)},
        lambda r, p: p["loc"] + _unit(r, S, 0.0, 0.9) * p["scale"],
        cdf=True,
        icdf=True,
        cls="GeneralizedPareto",
    ),
    Case(
        "InverseGamma",
        lambda r: {"concentration": _pos(r, B, 0.5, 4.0), "rate": _pos(r, B)},
        lambda r, p: _pos(r, S, 0.1, 4.0),
        props=("mean", "variance", "mode", "entropy"),
    ),
    Case(
        "Kumaraswamy",
        lambda r: {"concentration1": _pos(r, B), "concentration0": _pos(r, B)},
        lambda r, p: _unit(r, S),
        scale=10,
    ),
    Case(
        "LogisticNormal",
        lambda r: {"loc": _real(r, B), "scale": _pos(r, B)},
        lambda r, p: _simplex(r, (2, 3, 5)),
        props=(),
        scale=10,
    ),
    Case(
        "RelaxedBernoulli",
        lambda r: {"temperature": _pos(r, (), 0.3, 2.0), "probs": _unit(r, B)},
        lambda r, p: _unit(r, S),
        props=(),
        extra=("logits", "temperature"),
    ),
    Case(
        "RelaxedBernoulli-logits",
        lambda r: {"temperature": _pos(r, B, 0.3, 2.0), "logits": _real(r, B)},
        lambda r, p: _unit(r, S),
        props=(),
        cls="RelaxedBernoulli",
        extra=("probs",),
    ),
    Case(
        "RelaxedOneHotCategorical",
        lambda r: {"temperature": _pos(r, (), 0.3, 2.0), "logits": _real(r, (3, 4))},
        lambda r, p: _simplex(r, (2, 3, 4)),
        props=(),
        extra=("probs",),
    ),
    Case(
        "RelaxedOneHotCategorical-probs",
        lambda r: {"temperature": _pos(r, (), 0.3, 2.0), "probs": _simplex(r, (3, 4))},
        lambda r, p: _simplex(r, (2, 3, 4)),
        props=(),
        cls="RelaxedOneHotCategorical",
        extra=("logits",),
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


def _tensor(lib, a):
    return fjax.tensor(a) if lib is fjax else torch.from_numpy(np.array(a))


def _outputs(dist, case, value, u):
    out = {"log_prob": dist.log_prob(value)}
    if case.cdf:
        out["cdf"] = dist.cdf(value)
    if case.icdf:
        out["icdf"] = dist.icdf(u)
    for p in case.props + case.extra:
        out[p] = dist.entropy() if p == "entropy" else getattr(dist, p)
    return out


def _compare(case, fj, fj_leaves, th, th_leaves, rng):
    for k in th:
        _close(fj[k], th[k], f"{case.name}.{k}", case.scale)
    weights = {
        k: rng.standard_normal(tuple(t.shape)).astype(D)
        for k, t in th.items()
        if t.is_floating_point() and np.isfinite(_np(t)).all() and k not in case.no_backward
    }
    sum(((fj[k] * fjax.tensor(w)).sum() for k, w in weights.items())).backward()
    sum(((th[k] * torch.from_numpy(w)).sum() for k, w in weights.items())).backward()
    assert fj_leaves.keys() == th_leaves.keys()
    for k in th_leaves:
        _close(fj_leaves[k].grad, th_leaves[k].grad, f"{case.name} grad of {k}", 100 * case.scale)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_against_torch(case):
    """log_prob, cdf, icdf, entropy, moments and derived parameters equal torch's, and so do the
    gradients of a random weighting of them with respect to every parameter; expand and repr too."""
    rng = _rng(CASES.index(case))
    params = case.params(rng)
    value, u = case.value(rng, params), _unit(rng, S)
    results = {}
    for lib in (fjax, torch):
        dist, leaves = _make(lib, case, params)
        results[lib] = (_outputs(dist, case, _tensor(lib, value), _tensor(lib, u)), leaves, dist)
    (fj, fj_leaves, fj_dist), (th, th_leaves, th_dist) = results[fjax], results[torch]
    assert fj_dist.batch_shape == tuple(th_dist.batch_shape)
    assert fj_dist.event_shape == tuple(th_dist.event_shape)
    assert fj_dist.has_rsample == th_dist.has_rsample
    assert repr(fj_dist.support).split("(")[0] == repr(th_dist.support).split("(")[0]
    _compare(case, fj, fj_leaves, th, th_leaves, rng)
    shape = (2,) + tuple(th_dist.batch_shape)
    fje, the = fj_dist.expand(shape), th_dist.expand(shape)
    assert fje.batch_shape == shape and type(fje) is type(fj_dist)
    _close(fje.log_prob(_tensor(fjax, value)), the.log_prob(_tensor(torch, value)), f"{case.name} expanded", case.scale)


def test_lkj_cholesky_against_torch():
    """log_prob and its gradient in the concentration equal torch's; draws are correlation
    Cholesky factors whose correlations have the spread of torch's draws."""
    rng = _rng(310)
    conc = _pos(rng, (3,), 0.3, 3.0)
    value = np.stack([_corr_cholesky(rng, (3, 4, 4)) for _ in range(2)])
    fc, tc = fjax.tensor(conc, requires_grad=True), torch.from_numpy(conc).requires_grad_()
    fd, td = FD.LKJCholesky(4, fc), TD.LKJCholesky(4, tc)
    assert fd.batch_shape == tuple(td.batch_shape) and fd.event_shape == tuple(td.event_shape)
    fl, tl = fd.log_prob(fjax.tensor(value)), td.log_prob(torch.from_numpy(value))
    _close(fl, tl, "LKJCholesky log_prob", 10)
    fl.sum().backward()
    tl.sum().backward()
    _close(fc.grad, tc.grad, "LKJCholesky grad of concentration", 100)
    _close(
        fd.expand((2, 3)).log_prob(fjax.tensor(value)), td.expand((2, 3)).log_prob(torch.from_numpy(value)), "expand"
    )
    eta = fjax.tensor([0.5, 3.0])
    fjax.manual_seed(5)
    x = FD.LKJCholesky(3, eta).sample((N // 4,))
    assert x.shape == (N // 4, 2, 3, 3) and bool(FD.constraints.corr_cholesky.check(x).all())
    corr = _np(x @ x.mT).astype(np.float64)
    np.testing.assert_allclose(corr[..., 1, 0].var(0), 1 / (2 * _np(eta) + 2), rtol=0.1)
    torch.manual_seed(SEED % 2**31)
    t = TD.LKJCholesky(3, torch.tensor([0.5, 3.0])).sample((N // 4,))
    t_corr = (t @ t.mT).double().numpy()
    for i, j in ((1, 0), (2, 0), (2, 1)):  # torch's onion draws, whose (2, 0) marginal is wider than LKJ's
        np.testing.assert_allclose(corr[..., i, j].var(0), t_corr[..., i, j].var(0), rtol=0.1, err_msg=f"{i},{j}")
        np.testing.assert_allclose(corr[..., i, j].mean(0), 0.0, atol=0.03)
    with pytest.raises(ValueError, match="dim"):
        FD.LKJCholesky(1)


# -- transforms -------------------------------------------------------------------------------------
def _transform_cases(lib, rng):
    """name -> (transform, x) with the same parameters in fjax (``lib=fjax``) and torch."""
    ns = FD.transforms if lib is fjax else TD.transforms
    top = FD if lib is fjax else TD
    t = fjax.tensor if lib is fjax else torch.from_numpy
    loc, scale = _real(rng, (4,)), _pos(rng, (4,))
    return {
        "reshape": (ns.ReshapeTransform((4,), (2, 2)), _real(rng, (3, 4))),
        "stick-breaking": (ns.StickBreakingTransform(), _real(rng, (3, 4))),
        "corr-cholesky": (ns.CorrCholeskyTransform(), _real(rng, (3, 6))),
        "lower-cholesky": (ns.LowerCholeskyTransform(), _real(rng, (3, 4, 4))),
        "positive-definite": (ns.PositiveDefiniteTransform(), _real(rng, (3, 3, 3))),
        "cat": (
            ns.CatTransform(
                [ns.ExpTransform(), ns.AffineTransform(t(loc), t(scale)), ns.identity_transform], 1, [1, 4, 2]
            ),
            _real(rng, (3, 7)),
        ),
        "cat-event": (
            ns.CatTransform(
                [ns.IndependentTransform(ns.TanhTransform(), 1), ns.IndependentTransform(ns.ExpTransform(), 1)],
                -1,
                [2, 3],
            ),
            _real(rng, (3, 5)),
        ),
        "stack": (
            ns.StackTransform([ns.ExpTransform(), ns.SigmoidTransform(), ns.TanhTransform()], 1),
            _real(rng, (4, 3)),
        ),
        "cdf": (ns.CumulativeDistributionTransform(top.Normal(t(loc), t(scale))), _real(rng, (3, 4))),
        "compose": (
            ns.ComposeTransform(
                [ns.ReshapeTransform((6,), (3, 2)), ns.IndependentTransform(ns.SoftplusTransform(), 2)]
            ),
            _real(rng, (2, 6)),
        ),
        "abs": (ns.AbsTransform(), _real(rng, (3, 4))),
        "power": (ns.PowerTransform(t(np.array(-1.5, D))), _pos(rng, (3, 4))),
    }


def test_transforms_against_torch():
    """Forward, inverse, log |det J| (values and input gradients), shapes, (co)domains and bijectivity
    of each transform equal torch's, for the module and the ``fjax.distributions`` names alike."""
    fj_cases, th_cases = _transform_cases(fjax, _rng(100)), _transform_cases(torch, _rng(100))
    for name, (ft, x) in fj_cases.items():
        tt = th_cases[name][0]
        fx, tx = fjax.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
        fy, ty = ft(fx), tt(tx)
        _close(fy, ty, f"{name} forward")
        # the inverse at torch's forward output: the same point for both (the cdf transform's inverse
        # is ill-conditioned in the tails, so fjax's own output would amplify its forward rounding)
        _close(ft.inv(fjax.tensor(ty.detach().numpy())), tt.inv(ty), f"{name} inverse", 100)
        assert tuple(ft.forward_shape(fx.shape)) == tuple(tt.forward_shape(tx.shape)), name
        assert tuple(ft.inverse_shape(fy.shape)) == tuple(tt.inverse_shape(ty.shape)), name
        assert ft.bijective == tt.bijective, name
        assert repr(ft.domain).split("(")[0] == repr(tt.domain).split("(")[0], name
        assert repr(ft.codomain).split("(")[0] == repr(tt.codomain).split("(")[0], name
        assert bool(ft.codomain.check(fy).all()), f"{name}: forward output outside the codomain"
        if name in ("abs", "lower-cholesky", "positive-definite"):  # no log_abs_det_jacobian in torch
            fy.sum().backward()
            ty.sum().backward()
        else:
            fl, tl = ft.log_abs_det_jacobian(fx, fy), tt.log_abs_det_jacobian(tx, ty)
            _close(fl, tl, f"{name} log_abs_det_jacobian", 10)
            w = _rng(101).standard_normal(tuple(ty.shape)).astype(D)
            ((fy * fjax.tensor(w)).sum() + fl.sum()).backward()
            ((ty * torch.from_numpy(w)).sum() + tl.sum()).backward()
        _close(fx.grad, tx.grad, f"{name} input gradient", 100)
        assert ft.with_cache(1)._cache_size == 1
    for name in TD.transforms.__all__:
        assert getattr(FD, name) is getattr(FD.transforms, name), name
    cached = FD.StickBreakingTransform().with_cache()
    x = fjax.tensor(_real(_rng(102), (2, 3)))
    assert cached.inv(cached(x)) is x


CONSTRAINTS = [
    ("real", lambda c: c.real, (3, 4)),
    ("real_vector", lambda c: c.real_vector, (3, 4)),
    ("positive", lambda c: c.positive, (3, 4)),
    ("nonnegative", lambda c: c.nonnegative, (3, 4)),
    ("greater_than", lambda c: c.greater_than(1.5), (3, 4)),
    ("greater_than_eq", lambda c: c.greater_than_eq(-1.0), (3, 4)),
    ("less_than", lambda c: c.less_than(2.0), (3, 4)),
    ("unit_interval", lambda c: c.unit_interval, (3, 4)),
    ("interval", lambda c: c.interval(-2.0, 3.0), (3, 4)),
    ("half_open_interval", lambda c: c.half_open_interval(0.0, 2.0), (3, 4)),
    ("simplex", lambda c: c.simplex, (3, 4)),
    ("lower_cholesky", lambda c: c.lower_cholesky, (3, 3)),
    ("positive_definite", lambda c: c.positive_definite, (3, 3)),
    ("corr_cholesky", lambda c: c.corr_cholesky, (2, 6)),
    ("independent", lambda c: c.independent(c.positive, 2), (3, 4)),
    ("cat", lambda c: c.cat([c.positive, c.real, c.unit_interval], -1, [1, 2, 1]), (3, 4)),
    ("stack", lambda c: c.stack([c.positive, c.real, c.interval(0.0, 2.0)], 0), (3, 4)),
]


@pytest.mark.parametrize("name,make,shape", CONSTRAINTS, ids=[c[0] for c in CONSTRAINTS])
def test_biject_to_and_transform_to(name, make, shape):
    """``biject_to``/``transform_to`` give the transform torch's do (the same values and log-Jacobians),
    whose outputs satisfy the constraint."""
    x = _real(_rng(200 + [c[0] for c in CONSTRAINTS].index(name)), shape)
    for fj_registry, th_registry in ((FD.biject_to, TD.biject_to), (FD.transform_to, TD.transform_to)):
        try:
            tt = th_registry(make(TD.constraints))
        except NotImplementedError:
            with pytest.raises(NotImplementedError, match="Cannot transform"):
                fj_registry(make(FD.constraints))
            continue
        ft = fj_registry(make(FD.constraints))
        fy, ty = ft(fjax.tensor(x)), tt(torch.from_numpy(x))
        _close(fy, ty, f"{name} {fj_registry is FD.biject_to and 'biject_to' or 'transform_to'}", 10)
        assert bool(make(FD.constraints).check(fy).all()), name
        if tt.bijective:
            _close(ft.log_abs_det_jacobian(fjax.tensor(x), fy), tt.log_abs_det_jacobian(torch.from_numpy(x), ty), name)
    with pytest.raises(NotImplementedError, match="Cannot transform"):
        FD.biject_to(FD.constraints.boolean)


def test_mixture_same_family_against_torch():
    rng = _rng(300)
    logits, loc, scale = _real(rng, (3, 5)), _real(rng, (3, 5, 2)), _pos(rng, (3, 5, 2))
    x = _real(rng, (4, 3, 2))
    out = {}
    for lib, ns in ((fjax, FD), (torch, TD)):
        leaves = [_tensor(lib, a).requires_grad_() for a in (logits, loc, scale)]
        comp = ns.Independent(ns.Normal(leaves[1], leaves[2]), 1)
        d = ns.MixtureSameFamily(ns.Categorical(logits=leaves[0]), comp)
        value = _tensor(lib, x)
        res = {"log_prob": d.log_prob(value), "mean": d.mean, "variance": d.variance}
        sum(r.sum() for r in res.values()).backward()
        out[lib] = (d, res, [t.grad for t in leaves])
    (fd, fres, fgrads), (td, tres, tgrads) = out[fjax], out[torch]
    assert fd.batch_shape == tuple(td.batch_shape) and fd.event_shape == tuple(td.event_shape)
    for k in tres:
        _close(fres[k], tres[k], f"MixtureSameFamily {k}", 10)
    for g, h, k in zip(fgrads, tgrads, ("logits", "loc", "scale")):
        _close(g, h, f"MixtureSameFamily grad of {k}", 100)
    scalar = [ns.MixtureSameFamily(ns.Categorical(logits=t(logits)), ns.Normal(t(loc[..., 0]), t(scale[..., 0])))
              for ns, t in ((FD, fjax.tensor), (TD, torch.from_numpy))]  # fmt: skip
    _close(scalar[0].cdf(fjax.tensor(x[..., 0])), scalar[1].cdf(torch.from_numpy(x[..., 0])), "mixture cdf")
    assert fd.expand((2, 3)).batch_shape == (2, 3)
    fjax.manual_seed(0)
    draws = fd.sample((5,))
    assert draws.shape == (5, 3, 2) and not draws.requires_grad
    assert repr(fd.support) == repr(td.support)
    with pytest.raises(ValueError, match="does not equal"):
        FD.MixtureSameFamily(FD.Categorical(logits=fjax.zeros(4)), FD.Normal(fjax.zeros(5), fjax.ones(5)))


def test_exponential_family_entropy_against_torch():
    """The Bregman-divergence entropy of ``ExponentialFamily`` (autograd of the log normalizer)."""

    def make(base, lib):
        class Exp(base):  # Exponential(rate) as an exponential family: theta = -rate
            arg_constraints = {}

            def __init__(self, rate):
                self.rate = rate
                super().__init__(rate.shape, validate_args=False)

            @property
            def _natural_params(self):
                return (-self.rate,)

            def _log_normalizer(self, x):
                return -(-x).log()

            _mean_carrier_measure = 0

        return Exp

    rate = _pos(_rng(301), B)
    fj = make(FD.ExponentialFamily, fjax)(fjax.tensor(rate)).entropy()
    th = make(TD.ExponentialFamily, torch)(torch.from_numpy(rate)).entropy()
    _close(fj, th, "ExponentialFamily entropy")
    _close(fj, TD.Exponential(torch.from_numpy(rate)).entropy(), "entropy of Exponential")


# -- sampling ----------------------------------------------------------------------------------------
N = 16384  # gamma-type samplers compile per bucket of 16384 draws: the tests share one
SAMPLED = {
    "Cauchy": lambda: FD.Cauchy(fjax.tensor([0.0, 2.0]), fjax.tensor([1.0, 0.5])),
    "Chi2": lambda: FD.Chi2(fjax.tensor([1.0, 5.0])),
    "StudentT": lambda: FD.StudentT(fjax.tensor([5.0, 9.0]), fjax.tensor([0.0, 1.0]), fjax.tensor([1.0, 2.0])),
    "HalfNormal": lambda: FD.HalfNormal(fjax.tensor([1.0, 3.0])),
    "HalfCauchy": lambda: FD.HalfCauchy(fjax.tensor([1.0, 3.0])),
    "Geometric": lambda: FD.Geometric(fjax.tensor([0.2, 0.7])),
    "NegativeBinomial": lambda: FD.NegativeBinomial(fjax.tensor([3.0, 10.0]), fjax.tensor([0.4, 0.2])),
    "Multinomial": lambda: FD.Multinomial(6, fjax.tensor([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])),
    "MixtureSameFamily": lambda: FD.MixtureSameFamily(
        FD.Categorical(fjax.tensor([0.3, 0.7])), FD.Normal(fjax.tensor([-2.0, 1.0]), fjax.tensor([0.5, 1.0]))
    ),
    "Gumbel": lambda: FD.Gumbel(fjax.tensor([0.0, 1.0]), fjax.tensor([1.0, 2.0])),
    "Weibull": lambda: FD.Weibull(fjax.tensor([1.0, 2.0]), fjax.tensor([0.8, 3.0])),
    "Pareto": lambda: FD.Pareto(fjax.tensor([1.0, 2.0]), fjax.tensor([5.0, 6.0])),
    "VonMises": lambda: FD.VonMises(fjax.tensor([0.0, 3.0]), fjax.tensor([0.5, 4.0])),
    "LowRankMultivariateNormal": lambda: FD.LowRankMultivariateNormal(
        fjax.tensor([1.0, -1.0]), fjax.tensor([[1.0], [0.5]]), fjax.tensor([0.5, 1.0])
    ),
    "FisherSnedecor": lambda: FD.FisherSnedecor(fjax.tensor([5.0, 10.0]), fjax.tensor([12.0, 20.0])),
    "ContinuousBernoulli": lambda: FD.ContinuousBernoulli(fjax.tensor([0.2, 0.8])),
    "GeneralizedPareto": lambda: FD.GeneralizedPareto(
        fjax.tensor([0.0, 1.0]), fjax.tensor([1.0, 2.0]), fjax.tensor([0.1, -0.3])
    ),
    "InverseGamma": lambda: FD.InverseGamma(fjax.tensor([5.0, 7.0]), fjax.tensor([1.0, 2.0])),
    "Kumaraswamy": lambda: FD.Kumaraswamy(fjax.tensor([2.0, 0.7]), fjax.tensor([3.0, 1.5])),
    "LogisticNormal": lambda: FD.LogisticNormal(fjax.tensor([0.0, 1.0]), fjax.tensor([1.0, 0.5])),
    "RelaxedBernoulli": lambda: FD.RelaxedBernoulli(fjax.tensor(0.7), fjax.tensor([0.3, 0.8])),
    "RelaxedOneHotCategorical": lambda: FD.RelaxedOneHotCategorical(fjax.tensor(0.5), fjax.tensor([0.2, 0.3, 0.5])),
}
NO_MOMENTS = ("Cauchy", "HalfCauchy", "LogisticNormal", "RelaxedBernoulli", "RelaxedOneHotCategorical")


@pytest.mark.parametrize("name", list(SAMPLED))
def test_sample_statistics(name):
    """16k draws (fixed seed): shape, dtype, no gradient, inside the support, ``manual_seed``
    repeats them; mean and variance within a few standard errors of the distribution's (or, for
    distributions without moments or with a cdf, the empirical cdf at a few points within 0.02)."""
    d = SAMPLED[name]()
    fjax.manual_seed(1234)
    x = d.sample((N,))
    assert x.shape == (N,) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert x.dtype == fjax.float32 and not x.requires_grad
    assert bool(d.support.check(x).all()), f"{name}: samples outside the support"
    fjax.manual_seed(1234)
    assert np.array_equal(_np(d.sample((N,))), _np(x)), f"{name}: manual_seed does not repeat the draws"
    xs = _np(x).astype(np.float64)
    if d.event_shape == () and name not in ("VonMises", "Geometric", "NegativeBinomial"):
        q = np.quantile(xs, [0.1, 0.5, 0.9], axis=0).astype(D)
        try:
            cdf = _np(d.cdf(fjax.tensor(q)))
        except NotImplementedError:
            cdf = None
        if cdf is not None:
            levels = np.array([0.1, 0.5, 0.9]).reshape((3,) + (1,) * (cdf.ndim - 1))
            np.testing.assert_allclose(cdf, np.broadcast_to(levels, cdf.shape), atol=0.02, err_msg=name)
    if name in NO_MOMENTS:
        return
    if name == "VonMises":  # circular moments: E[cos(x - loc)] = 1 - variance
        r = np.cos(xs - _np(d.loc)).mean(0)
        np.testing.assert_allclose(r, 1 - _np(d.variance), atol=0.02, err_msg=name)
        return
    mean, var = _np(d.mean).astype(np.float64), _np(d.variance).astype(np.float64)
    se = np.sqrt(var / N)
    assert np.all(np.abs(xs.mean(0) - mean) <= 5 * se + 1e-6), f"{name}: mean {xs.mean(0)} vs {mean}"
    np.testing.assert_allclose(xs.var(0), var, rtol=0.1, atol=1e-3, err_msg=f"{name} variance")


def test_rsample_gradients():
    """Reparametrized draws: Cauchy/GeneralizedPareto/Gumbel/Weibull given the same uniform noise
    equal torch's formula in value and gradient; StudentT/FisherSnedecor/InverseGamma (implicit
    gamma gradients) have unbiased gradients of the mean; relaxed draws carry gradients."""
    rng = _rng(400)
    loc, scale = _real(rng, B), _pos(rng, B)

    def same_noise(make_fj, make_th, params):
        fj = {k: fjax.tensor(v, requires_grad=True) for k, v in params.items()}
        fjax.manual_seed(7)
        x = make_fj(**fj).rsample((2,))
        (x**2).sum().backward()
        fjax.manual_seed(7)
        u = torch.from_numpy(_np(fjax.rand(*tuple(x.shape), dtype=fjax.float32)).copy())
        th = {k: torch.from_numpy(v.copy()).requires_grad_() for k, v in params.items()}
        y = make_th(u, **th)
        _close(x, y, f"{make_fj.__name__} rsample", 10)
        (y**2).sum().backward()
        for k in params:
            _close(fj[k].grad, th[k].grad, f"{make_fj.__name__} rsample grad of {k}", 100)

    same_noise(FD.Cauchy, lambda u, loc, scale: TD.Cauchy(loc, scale).icdf(u), {"loc": loc, "scale": scale})
    conc = rng.uniform(-0.4, 0.4, B).astype(D)
    same_noise(
        FD.GeneralizedPareto,
        lambda u, loc, scale, concentration: TD.GeneralizedPareto(loc, scale, concentration).icdf(u),
        {"loc": loc, "scale": scale, "concentration": conc},
    )

    def gumbel(u, loc, scale):
        info = torch.finfo(torch.float32)
        u = info.tiny + u * (1 - info.eps - info.tiny)
        return loc - scale * torch.log(-torch.log(u))

    same_noise(FD.Gumbel, gumbel, {"loc": loc, "scale": scale})

    def weibull(u, scale, concentration):
        return scale * (-torch.log1p(-u)).pow(1 / concentration)

    same_noise(FD.Weibull, weibull, {"scale": scale, "concentration": _pos(rng, B, 0.8, 3.0)})

    def unbiased(make, params, rtol=0.1):
        leaves = [fjax.tensor(p, requires_grad=True) for p in params]
        fjax.manual_seed(11)
        make(*leaves).rsample((N,)).mean(0).sum().backward()
        exact = [fjax.tensor(p, requires_grad=True) for p in params]
        make(*exact).mean.sum().backward()
        for got, want in zip(leaves, exact):
            expected = (
                np.zeros(want.shape, D) if want.grad is None else _np(want.grad)
            )  # the mean does not depend on it
            np.testing.assert_allclose(_np(got.grad), expected, rtol=rtol, atol=0.02, err_msg=make.__name__)

    unbiased(FD.StudentT, [np.array([4.0, 8.0], D), np.array([0.5, -1.0], D), np.array([1.0, 2.0], D)])
    unbiased(FD.FisherSnedecor, [np.array([6.0, 10.0], D), np.array([12.0, 16.0], D)])
    unbiased(FD.InverseGamma, [np.array([4.0, 6.0], D), np.array([1.0, 2.0], D)])
    unbiased(FD.HalfNormal, [np.array([1.0, 2.0], D)])
    unbiased(
        FD.LowRankMultivariateNormal, [np.array([1.0, -1.0], D), np.array([[1.0], [0.5]], D), np.array([0.5, 1.0], D)]
    )
    probs = fjax.tensor([0.3, 0.6], requires_grad=True)
    FD.RelaxedBernoulli(fjax.tensor(0.5), probs).rsample((4,)).sum().backward()
    assert probs.grad is not None and bool((probs.grad != 0).all())
    logits = fjax.tensor([0.3, 0.6, -1.0], requires_grad=True)
    y = FD.RelaxedOneHotCategorical(fjax.tensor(0.5), logits=logits).rsample((4,))
    np.testing.assert_allclose(_np(y.sum(-1)), np.ones(4), rtol=1e-5)
    (y[:, 0]).sum().backward()
    assert logits.grad is not None


# -- KL divergence ------------------------------------------------------------------------------------
def _lowrank(r):
    return {"loc": _real(r, (3, 4)), "cov_factor": _real(r, (3, 4, 2)), "cov_diag": _pos(r, (4,))}


def _mvn(r):
    a = _real(r, (3, 4, 4))
    tril = (np.tril(a, -1) + np.eye(4) * r.uniform(0.5, 2.0, (3, 4, 1))).astype(D)
    return {"loc": _real(r, (3, 4)), "scale_tril": tril}


KL_PAIRS = [
    ("Cauchy", "Cauchy", lambda r: {"loc": _real(r, B), "scale": _pos(r, B)}, None),
    ("Gumbel", "Gumbel", lambda r: {"loc": _real(r, B), "scale": _pos(r, B)}, None),
    ("Geometric", "Geometric", lambda r: {"probs": _unit(r, B)}, None),
    ("HalfNormal", "HalfNormal", lambda r: {"scale": _pos(r, B)}, None),
    ("Pareto", "Pareto", lambda r: {"scale": _pos(r, B), "alpha": _pos(r, B)}, None),
    ("ContinuousBernoulli", "ContinuousBernoulli", lambda r: {"probs": _away_from_half(r, B)}, None),
    ("LowRankMultivariateNormal", "LowRankMultivariateNormal", _lowrank, None),
    ("MultivariateNormal", "LowRankMultivariateNormal", _mvn, _lowrank),
    ("LowRankMultivariateNormal", "MultivariateNormal", _lowrank, _mvn),
]


@pytest.mark.parametrize("p_name,q_name,p_params,q_params", KL_PAIRS, ids=[f"{p[0]}-{p[1]}" for p in KL_PAIRS])
def test_kl_divergence(p_name, q_name, p_params, q_params):
    """KL(p || q) and its gradients in both distributions' parameters equal torch's."""
    rng = _rng(500 + [f"{p[0]}-{p[1]}" for p in KL_PAIRS].index(f"{p_name}-{q_name}"))
    pp, qp = p_params(rng), (q_params or p_params)(rng)
    out = {}
    for lib in (fjax, torch):
        p, p_leaves = _make(lib, Case(p_name, None, None), pp)
        q, q_leaves = _make(lib, Case(q_name, None, None), qp)
        kl = (FD if lib is fjax else TD).kl_divergence(p, q)
        w = _rng(501).standard_normal(tuple(kl.shape)).astype(D)
        (kl * _tensor(lib, w)).sum().backward()
        out[lib] = (
            kl,
            {**{f"p.{k}": v.grad for k, v in p_leaves.items()}, **{f"q.{k}": v.grad for k, v in q_leaves.items()}},
        )
    (fkl, fgrads), (tkl, tgrads) = out[fjax], out[torch]
    _close(fkl, tkl, f"KL({p_name} || {q_name})", 10)
    assert fgrads.keys() == tgrads.keys()
    for k in tgrads:
        _close(fgrads[k], tgrads[k], f"KL({p_name} || {q_name}) grad of {k}", 100)
