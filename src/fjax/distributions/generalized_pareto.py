"""The generalized Pareto distribution."""

from __future__ import annotations

import math

from .. import creation
from ..dispatch import functions as _f
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import _NUMBER, _uniform, broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution (the limit of threshold exceedances) with location
    ``loc``, scale ``scale`` and shape ``concentration``: exponential for ``concentration == 0``,
    heavy-tailed above, bounded above ``loc - scale / concentration`` below.

    Args:
        loc: the location (lower bound of the support).
        scale: the scale (positive).
        concentration: the shape (real).
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import GeneralizedPareto
        >>> d = GeneralizedPareto(fjax.tensor([0.0]), fjax.tensor([1.0]), fjax.tensor([0.5]))
        >>> d.log_prob(fjax.tensor([1.0])), d.mean
        (tensor([-1.2164], dtype=fjax.float32), tensor([2.], dtype=fjax.float32))
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args: bool | None = None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = all(isinstance(v, _NUMBER) for v in (loc, scale, concentration))
        super().__init__(Size() if scalar else self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _safe_concentration(self):
        eq_zero = _f.isclose(self.concentration, creation.zeros_like(self.concentration))
        return eq_zero, _f.where(eq_zero, creation.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=Size()) -> Tensor:
        return self.icdf(_uniform(self._extended_shape(sample_shape), self.loc.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + creation.ones_like(z)
        where_nonzero = _f.where(y == 0, y, y * (safe_conc * z).log1p())
        return -self.scale.log() - _f.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """``log(1 - cdf(value))``.

        Args:
            value: the points to evaluate at.

        Example::

            >>> from fjax.distributions import GeneralizedPareto
            >>> GeneralizedPareto(0.0, 1.0, 0.0).log_survival_function(fjax.tensor(2.0))
            tensor(-2., dtype=fjax.float32)
        """
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        return _f.where(eq_zero, -z, -(safe_conc * z).log1p() / safe_conc)

    def log_cdf(self, value: Tensor) -> Tensor:
        """``log(cdf(value))``.

        Args:
            value: the points to evaluate at.

        Example::

            >>> from fjax.distributions import GeneralizedPareto
            >>> GeneralizedPareto(0.0, 1.0, 0.0).log_cdf(fjax.tensor(2.0))
            tensor(-0.1454, dtype=fjax.float32)
        """
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        eq_zero, safe_conc = self._safe_concentration()
        logu = (-value).log1p()
        where_nonzero = self.loc + self.scale / safe_conc * (-safe_conc * logu).expm1()
        return _f.where(eq_zero, self.loc - self.scale * logu, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        safe_conc = _f.where(valid, self.concentration, 0.5)
        return _f.where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        safe_conc = _f.where(valid, self.concentration, 0.25)
        return _f.where(valid, self.scale**2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc)), math.nan)

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).broadcast_to(tuple(self._batch_shape))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = _f.where(self.concentration < 0, self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)
