"""The Poisson distribution."""

from __future__ import annotations

from ..autograd.grad_mode import no_grad
from ..tensor import Size, Tensor
from . import _draw, constraints
from .distribution import Distribution
from .utils import _NUMBER, broadcast_all

__all__ = ["Poisson"]


class Poisson(Distribution):
    """The Poisson distribution with rate (mean) ``rate``: ``P(k) = rate**k exp(-rate) / k!``.

    Example::

        >>> from fjax.distributions import Poisson
        >>> d = Poisson(fjax.tensor([1.0, 4.0]))
        >>> d.log_prob(fjax.tensor([0.0, 3.0]))
        tensor([-1.0000, -1.6329], dtype=fjax.float32)
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args: bool | None = None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(Size() if isinstance(rate, _NUMBER) else self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape=Size()) -> Tensor:
        with no_grad():
            return _draw.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()
