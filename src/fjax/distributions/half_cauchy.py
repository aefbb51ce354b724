"""The half-Cauchy distribution."""

from __future__ import annotations

import math

from .. import creation
from ..dispatch import functions as _f
from ..tensor import Tensor
from . import constraints
from .cauchy import Cauchy
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfCauchy"]


class HalfCauchy(TransformedDistribution):
    """``|X|`` for ``X ~ Cauchy(0, scale)``.

    Args:
        scale: the scale of the underlying Cauchy (positive).
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import HalfCauchy
        >>> d = HalfCauchy(fjax.tensor([1.0, 2.0]))
        >>> d.log_prob(fjax.tensor([1.0, 1.0])), d.mean
        (tensor([-1.1447, -1.3679], dtype=fjax.float32), tensor([inf, inf], dtype=fjax.float32))
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args: bool | None = None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return creation.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype)

    @property
    def mode(self) -> Tensor:
        return creation.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return _f.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)
