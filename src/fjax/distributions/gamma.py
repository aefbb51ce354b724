"""The gamma distribution."""

from __future__ import annotations

from ..dispatch import functions as _f
from ..tensor import Size, Tensor
from . import _draw, constraints
from .distribution import Distribution
from .utils import _NUMBER, _finfo, broadcast_all

__all__ = ["Gamma"]


class Gamma(Distribution):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``. ``rsample``
    is differentiable in both (implicit reparametrization for the concentration).

    Example::

        >>> from fjax.distributions import Gamma
        >>> d = Gamma(fjax.tensor([1.0, 3.0]), fjax.tensor([1.0, 2.0]))
        >>> d.log_prob(fjax.tensor([1.0, 1.0]))
        tensor([-1.0000, -0.6137], dtype=fjax.float32)
        >>> d.mean, d.variance
        (tensor([1.0000, 1.5000], dtype=fjax.float32), tensor([1.0000, 0.7500], dtype=fjax.float32))
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args: bool | None = None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = isinstance(concentration, _NUMBER) and isinstance(rate, _NUMBER)
        super().__init__(Size() if scalar else self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = _draw.standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        floor = value.detach().clamp(min=float(_finfo(value).tiny))
        return value + (floor - value.detach())  # no zeros (as torch), gradient unchanged

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (
            self.concentration.xlogy(self.rate)
            + (self.concentration - 1).xlogy(value)
            - self.rate * value
            - self.concentration.lgamma()
        )

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return _f.special_gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - self.rate.log() + a.lgamma() + (1.0 - a) * a.digamma()
