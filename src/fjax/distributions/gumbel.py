"""The Gumbel (type-I extreme value) distribution."""

from __future__ import annotations

import math

from .. import creation
from ..tensor import Tensor
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import _NUMBER, _finfo, broadcast_all, euler_constant

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    """The Gumbel distribution with location ``loc`` and scale ``scale``:
    ``loc - scale * log(-log(U))`` for ``U`` uniform on ``(0, 1)``.

    Args:
        loc: the location (mode).
        scale: the scale (positive).
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import Gumbel
        >>> d = Gumbel(0.0, 1.0)
        >>> d.log_prob(fjax.tensor(0.0)), d.mean
        (tensor(-1., dtype=fjax.float32), tensor(0.5772, dtype=fjax.float32))
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all(loc, scale)
        info = _finfo(self.loc)
        tiny, top = float(info.tiny), 1 - float(info.eps)
        if isinstance(loc, _NUMBER) and isinstance(scale, _NUMBER):
            base_dist = Uniform(tiny, top, validate_args=validate_args)
        else:
            base_dist = Uniform(
                creation.full_like(self.loc, tiny), creation.full_like(self.loc, top), validate_args=validate_args
            )
        transforms = [
            ExpTransform().inv,
            AffineTransform(loc=0, scale=-creation.ones_like(self.scale)),
            ExpTransform().inv,
            AffineTransform(loc=loc, scale=-self.scale),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(tuple(batch_shape))
        new.scale = self.scale.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return y - y.exp() - self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * euler_constant

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return math.pi / math.sqrt(6) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + euler_constant)
