"""The beta distribution."""

from __future__ import annotations

from .. import creation
from ..dispatch import functions as _f
from ..tensor import Size, Tensor
from . import constraints
from .dirichlet import Dirichlet
from .distribution import Distribution
from .utils import _NUMBER, broadcast_all

__all__ = ["Beta"]


class Beta(Distribution):
    """The beta distribution on ``[0, 1]`` with ``concentration1`` (alpha) and ``concentration0``
    (beta), a two-category Dirichlet underneath.

    Example::

        >>> from fjax.distributions import Beta
        >>> d = Beta(fjax.tensor([2.0, 0.5]), fjax.tensor([3.0, 0.5]))
        >>> d.log_prob(fjax.tensor([0.25, 0.25]))
        tensor([ 0.5232, -0.3077], dtype=fjax.float32)
        >>> d.mean
        tensor([0.4000, 0.5000], dtype=fjax.float32)
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None):
        if isinstance(concentration1, _NUMBER) and isinstance(concentration0, _NUMBER):
            both = creation.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = _f.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = Size(tuple(batch_shape))
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self) -> Tensor:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=Size()) -> Tensor:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(_f.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()
