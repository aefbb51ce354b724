"""``ExponentialFamily``: the base class of exponential-family distributions."""

from __future__ import annotations

from .. import autograd
from ..tensor import Tensor
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """The base class of distributions with density ``exp(<t(x), theta> - F(theta) + k(x))``:
    subclasses give ``_natural_params`` (theta), ``_log_normalizer`` (F) and
    ``_mean_carrier_measure`` (E[k(x)]); ``entropy`` is then the Bregman divergence of F, with
    F's gradient taken by autograd.

    Example::

        >>> import math
        >>> from fjax.distributions import ExponentialFamily, constraints
        >>> class UnitNormal(ExponentialFamily):  # N(mu, 1): theta = mu, F = theta**2 / 2
        ...     arg_constraints = {"loc": constraints.real}
        ...     _mean_carrier_measure = -0.5 - 0.5 * math.log(2 * math.pi)
        ...     def __init__(self, loc):
        ...         self.loc = loc
        ...         super().__init__(loc.shape)
        ...     @property
        ...     def _natural_params(self):
        ...         return (self.loc,)
        ...     def _log_normalizer(self, x):
        ...         return 0.5 * x**2
        >>> UnitNormal(fjax.zeros(2)).entropy().detach()
        tensor([1.4189, 1.4189], dtype=fjax.float32)
    """

    @property
    def _natural_params(self) -> tuple:
        """The natural parameters ``theta``."""
        raise NotImplementedError(f"{type(self).__name__} does not define _natural_params")

    def _log_normalizer(self, *natural_params) -> Tensor:
        """The log normalizer ``F(theta)``."""
        raise NotImplementedError(f"{type(self).__name__} does not define _log_normalizer")

    @property
    def _mean_carrier_measure(self) -> float:
        """The expected carrier measure ``E[k(x)]``."""
        raise NotImplementedError(f"{type(self).__name__} does not define _mean_carrier_measure")

    def entropy(self) -> Tensor:
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, gradients):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
