"""The von Mises (circular normal) distribution."""

from __future__ import annotations

import math

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad
from ..dispatch import functions as _f
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import _uniform, broadcast_all, lazy_property

__all__ = ["VonMises"]


def _eval_poly(y, coef):
    coef = list(coef)
    result = coef.pop()
    while coef:
        result = coef.pop() + y * result
    return result


# Abramowitz & Stegun 9.8.1-9.8.4, as torch uses
_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813]
_I0_COEF_LARGE = [
    0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537, -0.01647633, 0.00392377,
]  # fmt: skip
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411]
_I1_COEF_LARGE = [
    0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967, -0.02895312, 0.01787654, -0.00420059,
]  # fmt: skip
_COEF_SMALL = [_I0_COEF_SMALL, _I1_COEF_SMALL]
_COEF_LARGE = [_I0_COEF_LARGE, _I1_COEF_LARGE]


def _log_modified_bessel_fn(x: Tensor, order: int = 0) -> Tensor:
    """``log I_order(x)`` for ``x > 0`` (order 0 or 1), by torch's polynomial approximations."""
    if order not in (0, 1):
        raise ValueError(f"_log_modified_bessel_fn: order must be 0 or 1, got {order}")
    y = (x / 3.75) ** 2
    small = _eval_poly(y, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    y = 3.75 / x
    large = x - 0.5 * x.log() + _eval_poly(y, _COEF_LARGE[order]).log()
    return _f.where(x < 3.75, small, large)


def _rejection_sample(loc, concentration, proposal_r, x):
    """Best & Fisher's rejection sampler, run until every entry is accepted."""
    done = x != x  # all False
    while not bool(done.all()):
        u1, u2, u3 = _uniform((3,) + tuple(x.shape), loc.dtype).unbind()
        z = (math.pi * u1).cos()
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = (c * (2 - c) - u2 > 0) | ((c / u2).log() + 1 - c >= 0)
        x = _f.where(accept & ~done, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """The von Mises distribution on the circle, with mean direction ``loc`` (radians) and
    concentration ``concentration``; samples lie in ``[-pi, pi)``. Draws use Best & Fisher's
    rejection sampler in float64, as torch's.

    Args:
        loc: the mean direction, in radians.
        concentration: the concentration (positive; large is tight around ``loc``).
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import VonMises
        >>> d = VonMises(fjax.tensor([0.0]), fjax.tensor([2.0]))
        >>> d.log_prob(fjax.tensor([0.5])), d.variance
        (tensor([-0.9067], dtype=fjax.float32), tensor([0.3022], dtype=fjax.float32))
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args: bool | None = None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, Size(), validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel_fn(self.concentration, order=0)

    @lazy_property
    def _loc(self) -> Tensor:
        return self.loc.to(_dt.float64)

    @lazy_property
    def _concentration(self) -> Tensor:
        return self.concentration.to(_dt.float64)

    @lazy_property
    def _proposal_r(self) -> Tensor:
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa**2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        proposal_r = (1 + rho**2) / (2 * rho)
        return _f.where(kappa < 1e-5, 1 / kappa + kappa, proposal_r)  # Taylor expansion for small kappa

    def sample(self, sample_shape=Size()) -> Tensor:
        with no_grad():
            shape = tuple(self._extended_shape(sample_shape))
            x = self._loc.new_zeros(shape)
            loc, conc, r = (t.detach() for t in (self._loc, self._concentration, self._proposal_r))
            return _rejection_sample(loc, conc, r, x).to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        batch_shape = Size(tuple(batch_shape))
        validate_args = vars(self).get("_validate_args")
        return type(self)(self.loc.expand(batch_shape), self.concentration.expand(batch_shape), validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        log_i1 = _log_modified_bessel_fn(self.concentration, order=1)
        return 1 - (log_i1 - _log_modified_bessel_fn(self.concentration, order=0)).exp()
