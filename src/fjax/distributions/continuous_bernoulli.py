"""The continuous Bernoulli distribution."""

from __future__ import annotations

import math

from .. import creation
from ..autograd.grad_mode import no_grad
from ..dispatch import functions as _f
from ..nn import functional as F
from ..tensor import Size, Tensor
from . import constraints
from .exp_family import ExponentialFamily
from .utils import (
    _NUMBER,
    _all_true,
    _uniform,
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on ``[0, 1]`` (Loaiza-Ganem & Cunningham, 2019): density
    proportional to ``probs**x * (1 - probs)**(1 - x)``. Near ``probs = 0.5`` (inside ``lims``)
    Taylor expansions keep the normalizer stable, as torch's.

    Args:
        probs: the parameter in ``(0, 1)`` (give ``probs`` or ``logits``).
        logits: its log-odds.
        lims: the interval around 0.5 where the Taylor expansions are used.
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import ContinuousBernoulli
        >>> d = ContinuousBernoulli(fjax.tensor([0.2, 0.5]))
        >>> d.log_prob(fjax.tensor([0.5, 0.5])), d.mean
        (tensor([-0.0788,  0.0000], dtype=fjax.float32), tensor([0.3880, 0.5000], dtype=fjax.float32))
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args: bool | None = None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, _NUMBER)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not _all_true(self.arg_constraints["probs"].check(self.probs)):
                raise ValueError("ContinuousBernoulli: the parameter probs has invalid values (expected [0, 1])")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, _NUMBER)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(Size() if is_scalar else self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = Size(tuple(batch_shape))
        if "probs" in vars(self):
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in vars(self):
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        ExponentialFamily.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return _f.where(self._outside_unstable_region(), self.probs, self._lims[0] * creation.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        cut = self._cut_probs()
        below_half = _f.where(cut <= 0.5, cut, creation.zeros_like(cut))
        above_half = _f.where(cut >= 0.5, cut, creation.ones_like(cut))
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - _f.where(
            cut <= 0.5, (-2.0 * below_half).log1p(), (2.0 * above_half - 1.0).log()
        )
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _f.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return _f.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        var = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / ((-cut).log1p() - cut.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return _f.where(self._outside_unstable_region(), var, taylor)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    def sample(self, sample_shape=Size()) -> Tensor:
        u = _uniform(self._extended_shape(sample_shape), self.probs.dtype)
        with no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()) -> Tensor:
        return self.icdf(_uniform(self._extended_shape(sample_shape), self.probs.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = _f.where(self._outside_unstable_region(), cdfs, value)
        return _f.where(value <= 0.0, 0.0, _f.where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        inverse = ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) / (cut.log() - (-cut).log1p())
        return _f.where(self._outside_unstable_region(), inverse, value)

    def entropy(self) -> Tensor:
        log_probs0, log_probs1 = (-self.probs).log1p(), self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x):
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = _f.where(outside, x, (self._lims[0] - 0.5) * creation.ones_like(x))
        log_norm = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return _f.where(outside, log_norm, taylor)
