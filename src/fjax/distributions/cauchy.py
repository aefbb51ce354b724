"""The Cauchy (Lorentz) distribution."""

from __future__ import annotations

import math

from .. import creation
from ..dispatch import functions as _f
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import _NUMBER, _uniform, broadcast_all

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """The Cauchy distribution with median ``loc`` and half width at half maximum ``scale``: the
    ratio of two independent standard normals, shifted and scaled. It has no mean or variance.

    Args:
        loc: the median (mode).
        scale: the half width at half maximum (positive).
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import Cauchy
        >>> d = Cauchy(0.0, 1.0)
        >>> d.log_prob(fjax.tensor(1.0)), d.cdf(fjax.tensor(1.0))
        (tensor(-1.8379, dtype=fjax.float32), tensor(0.7500, dtype=fjax.float32))
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all(loc, scale)
        scalar = isinstance(loc, _NUMBER) and isinstance(scale, _NUMBER)
        super().__init__(Size() if scalar else self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Cauchy, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return creation.full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return creation.full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape=Size()) -> Tensor:
        u = _uniform(self._extended_shape(sample_shape), self.loc.dtype)
        return self.loc + (math.pi * (u - 0.5)).tan() * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return _f.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()
