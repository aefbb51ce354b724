"""Student's t distribution."""

from __future__ import annotations

import math

from ..dispatch import functions as _f
from ..tensor import Size, Tensor
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``.
    ``rsample`` is ``loc + scale * X / sqrt(Z / df)`` with ``X`` normal and ``Z`` chi-squared, so it is
    differentiable in all three.

    Args:
        df: the degrees of freedom (positive).
        loc: the location (default 0).
        scale: the scale (positive, default 1).
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import StudentT
        >>> d = StudentT(fjax.tensor([1.0, 3.0]))
        >>> d.log_prob(fjax.tensor([0.0, 0.0])), d.variance
        (tensor([-1.1447, -1.0009], dtype=fjax.float32), tensor([nan, 3.], dtype=fjax.float32))
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args: bool | None = None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return _f.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        big = df > 2
        safe = _f.where(big, df, 3.0)
        var = _f.where(big, self.scale.pow(2) * safe / (safe - 2), math.inf)
        return _f.where(df <= 1, math.nan, var)

    def rsample(self, sample_shape=Size()) -> Tensor:
        x = _standard_normal(self._extended_shape(sample_shape), self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + (0.5 * self.df).lgamma()
            - (0.5 * (self.df + 1.0)).lgamma()
        )
        return -0.5 * (self.df + 1.0) * (y**2.0 / self.df).log1p() - z

    def entropy(self) -> Tensor:
        lbeta = (0.5 * self.df).lgamma() + math.lgamma(0.5) - (0.5 * (self.df + 1)).lgamma()
        return (
            self.scale.log()
            + 0.5 * (self.df + 1) * ((0.5 * (self.df + 1)).digamma() - (0.5 * self.df).digamma())
            + 0.5 * self.df.log()
            + lbeta
        )
