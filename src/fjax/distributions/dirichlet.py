"""The Dirichlet distribution."""

from __future__ import annotations

from ..dispatch import functions as _f
from ..nn import functional as F
from ..tensor import Size, Tensor
from . import _draw, constraints
from .distribution import Distribution
from .utils import _finfo

__all__ = ["Dirichlet"]


class Dirichlet(Distribution):
    """The Dirichlet distribution over the probability simplex, with ``concentration`` (at least
    1-D: the last dim is the event). ``rsample`` normalizes gamma draws, differentiable in the
    concentration.

    Example::

        >>> from fjax.distributions import Dirichlet
        >>> d = Dirichlet(fjax.tensor([1.0, 2.0, 3.0]))
        >>> d.log_prob(fjax.tensor([0.2, 0.3, 0.5]))
        tensor(1.5041, dtype=fjax.float32)
        >>> d.mean
        tensor([0.1667, 0.3333, 0.5000], dtype=fjax.float32)
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None):
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.concentration = self.concentration.expand(Size(tuple(batch_shape) + tuple(self.event_shape)))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=Size()) -> Tensor:
        gammas = _draw.standard_gamma(self.concentration.expand(self._extended_shape(sample_shape)))
        x = gammas / gammas.sum(-1, keepdim=True)
        floor = x.detach().clamp(min=float(_finfo(x).tiny))
        return x + (floor - x.detach())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return (a - 1.0).xlogy(value).sum(-1) + a.sum(-1).lgamma() - a.lgamma().sum(-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        am1 = (self.concentration - 1).clamp(min=0.0)
        mode = am1 / am1.sum(-1, keepdim=True)
        # every concentration < 1: the density peaks at the corner of the largest one
        corner = F.one_hot(mode.argmax(-1), am1.shape[-1]).type_as(mode)
        return _f.where((self.concentration < 1).all(-1, keepdim=True), corner, mode)

    @property
    def variance(self) -> Tensor:
        a0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (a0 - self.concentration) / (a0.pow(2) * (a0 + 1))

    def entropy(self) -> Tensor:
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return a.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma() - ((a - 1.0) * a.digamma()).sum(-1)
