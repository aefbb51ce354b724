"""The logistic-normal distribution on the simplex."""

from __future__ import annotations

from ..tensor import Tensor
from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """A normal vector of ``K - 1`` entries (``loc``, ``scale``) pushed onto the ``K``-simplex by
    ``StickBreakingTransform``.

    Args:
        loc: the mean of the underlying normal (last dim ``K - 1``).
        scale: the standard deviation of the underlying normal (positive).
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import LogisticNormal
        >>> d = LogisticNormal(fjax.zeros(2), fjax.ones(2))
        >>> d.event_shape, d.log_prob(fjax.tensor([0.2, 0.3, 0.5]))
        (fjax.Size([3]), tensor(1.2980, dtype=fjax.float32))
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale
