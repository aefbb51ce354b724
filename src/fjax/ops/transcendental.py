"""Transcendental and special functions, elementwise: integers and bools become float32."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax
from jax.scipy import special

from ._promote import promote, to_float
from ._registry import defop


@defop()
def exp2(input):
    """``2 ** input``."""
    return jnp.exp2(to_float(input))


@defop()
def expm1(input):
    """``exp(input) - 1``, accurate near 0."""
    return jnp.expm1(to_float(input))


@defop()
def log(input):
    """Natural logarithm."""
    return jnp.log(to_float(input))


@defop()
def log2(input):
    """Base-2 logarithm."""
    return jnp.log2(to_float(input))


@defop()
def log10(input):
    """Base-10 logarithm."""
    return jnp.log10(to_float(input))


@defop()
def log1p(input):
    """``log(1 + input)``, accurate near 0."""
    return jnp.log1p(to_float(input))


@defop()
def sqrt(input):
    """Square root."""
    return jnp.sqrt(to_float(input))


@defop()
def rsqrt(input):
    """``1 / sqrt(input)``."""
    return lax.rsqrt(to_float(input))


@defop()
def sin(input):
    """Sine."""
    return jnp.sin(to_float(input))


@defop()
def cos(input):
    """Cosine."""
    return jnp.cos(to_float(input))


@defop()
def tan(input):
    """Tangent."""
    return jnp.tan(to_float(input))


@defop()
def asin(input):
    """Inverse sine."""
    return jnp.arcsin(to_float(input))


@defop()
def acos(input):
    """Inverse cosine."""
    return jnp.arccos(to_float(input))


@defop()
def atan(input):
    """Inverse tangent."""
    return jnp.arctan(to_float(input))


@defop()
def sinh(input):
    """Hyperbolic sine."""
    return jnp.sinh(to_float(input))


@defop()
def cosh(input):
    """Hyperbolic cosine."""
    return jnp.cosh(to_float(input))


@defop()
def tanh(input):
    """Hyperbolic tangent."""
    return jnp.tanh(to_float(input))


@defop()
def asinh(input):
    """Inverse hyperbolic sine."""
    return jnp.arcsinh(to_float(input))


@defop()
def acosh(input):
    """Inverse hyperbolic cosine."""
    return jnp.arccosh(to_float(input))


@defop()
def atanh(input):
    """Inverse hyperbolic tangent."""
    return jnp.arctanh(to_float(input))


@defop()
def erf(input):
    """Gauss error function."""
    return lax.erf(to_float(input))


@defop()
def erfc(input):
    """``1 - erf(input)``, accurate for large inputs."""
    return lax.erfc(to_float(input))


@defop()
def erfinv(input):
    """Inverse of ``erf``."""
    return lax.erf_inv(to_float(input))


@defop()
def lgamma(input):
    """``log|gamma(input)|``."""
    return lax.lgamma(to_float(input))


@defop()
def digamma(input):
    """Derivative of ``lgamma``."""
    return lax.digamma(to_float(input))


@defop()
def sinc(input):
    """Normalized sinc, ``sin(pi x) / (pi x)``, 1 at 0."""
    return jnp.sinc(to_float(input))


@defop()
def deg2rad(input):
    """Degrees to radians."""
    return jnp.deg2rad(to_float(input))


@defop()
def rad2deg(input):
    """Radians to degrees."""
    return jnp.rad2deg(to_float(input))


def _float_pair(input, other):
    input, other = promote(input, other)
    return to_float(input), to_float(other)


@defop()
def atan2(input, other):
    """Angle of the point ``(other, input)``, in ``(-pi, pi]``."""
    return jnp.arctan2(*_float_pair(input, other))


@defop()
def hypot(input, other):
    """``sqrt(input ** 2 + other ** 2)`` without overflow."""
    return jnp.hypot(*_float_pair(input, other))


@defop()
def logaddexp(input, other):
    """``log(exp(input) + exp(other))``, stable."""
    return jnp.logaddexp(*_float_pair(input, other))


@defop()
def logaddexp2(input, other):
    """``log2(2 ** input + 2 ** other)``, stable."""
    return jnp.logaddexp2(*_float_pair(input, other))


@defop()
def xlogy(input, other):
    """``input * log(other)``, 0 where ``input == 0`` unless ``other`` is NaN (as in torch)."""
    x, y = _float_pair(input, other)
    return jnp.where(jnp.isnan(y), jnp.nan, special.xlogy(x, y))
