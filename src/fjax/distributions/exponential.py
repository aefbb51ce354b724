"""The exponential distribution."""

from __future__ import annotations

from .. import creation
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import _NUMBER, _uniform, broadcast_all

__all__ = ["Exponential"]


class Exponential(Distribution):
    """The exponential distribution with rate ``rate``: density ``rate * exp(-rate * x)`` for ``x >= 0``.

    Example::

        >>> from fjax.distributions import Exponential
        >>> d = Exponential(fjax.tensor([1.0, 2.0]))
        >>> d.log_prob(fjax.tensor([1.0, 1.0])), d.mean
        (tensor([-1.0000, -1.3069], dtype=fjax.float32), tensor([1.0000, 0.5000], dtype=fjax.float32))
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args: bool | None = None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(Size() if isinstance(rate, _NUMBER) else self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Exponential, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return creation.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape=Size()) -> Tensor:
        u = _uniform(self._extended_shape(sample_shape), self.rate.dtype)
        return -(-u).log1p() / self.rate  # -log(1 - u) ~ Exp(1); u < 1, so finite

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()
