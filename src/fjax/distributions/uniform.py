"""The continuous uniform distribution."""

from __future__ import annotations

import math

from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import _NUMBER, _uniform, broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    """The uniform distribution on the half-open interval ``[low, high)``.

    Example::

        >>> from fjax.distributions import Uniform
        >>> d = Uniform(fjax.tensor([0.0, 1.0]), fjax.tensor([2.0, 5.0]))
        >>> d.log_prob(fjax.tensor([1.0, 2.0]))
        tensor([-0.6931, -1.3863], dtype=fjax.float32)
        >>> d.mean, d.variance
        (tensor([1., 3.], dtype=fjax.float32), tensor([0.3333, 1.3333], dtype=fjax.float32))
    """

    has_rsample = True

    def __init__(self, low, high, validate_args: bool | None = None):
        self.low, self.high = broadcast_all(low, high)
        scalar = isinstance(low, _NUMBER) and isinstance(high, _NUMBER)
        super().__init__(Size() if scalar else self.low.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Uniform, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.low = self.low.expand(batch_shape)
        new.high = self.high.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=Size()) -> Tensor:
        u = _uniform(self._extended_shape(sample_shape), self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = (value >= self.low).type_as(self.low) * (value < self.high).type_as(self.low)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()
