"""The chi-squared distribution."""

from __future__ import annotations

from ..tensor import Tensor
from . import constraints
from .gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``.

    Args:
        df: the degrees of freedom (positive).
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import Chi2
        >>> d = Chi2(fjax.tensor([1.0, 4.0]))
        >>> d.mean, d.log_prob(fjax.tensor([1.0, 1.0]))
        (tensor([1., 4.], dtype=fjax.float32), tensor([-1.4189, -1.8863], dtype=fjax.float32))
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args: bool | None = None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2
