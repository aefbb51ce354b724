"""Transcendental and special functions, elementwise: integers and bools become float32."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy import special

from . import _saving
from ._promote import promote, to_float
from ._registry import ELEMENTWISE, defop


@defop()
def exp2(input):
    """Elementwise ``2 ** input``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> fjax.exp2(fjax.tensor([0, 3, -1]))
        tensor([1.0000, 8.0000, 0.5000], dtype=fjax.float32)
    """
    return jnp.exp2(to_float(input))


@defop(rows=ELEMENTWISE)
def expm1(input):
    """Elementwise ``exp(input) - 1``, computed without the cancellation that subtracting 1 causes near 0.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> fjax.expm1(fjax.tensor([0.0, 1.0]))
        tensor([0.0000, 1.7183], dtype=fjax.float32)
        >>> fjax.expm1(fjax.tensor([1e-8]))
        tensor([1.0000e-08], dtype=fjax.float32)
    """
    return jnp.expm1(to_float(input))


@defop(rows=ELEMENTWISE)
def log(input):
    """Elementwise natural logarithm.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. Zero gives
    ``-inf`` and negative values give NaN.

    Example::

        >>> fjax.log(fjax.tensor([1.0, 0.0, -1.0]))
        tensor([0., -inf, nan], dtype=fjax.float32)
        >>> fjax.log(fjax.tensor([1, 10]))
        tensor([0.0000, 2.3026], dtype=fjax.float32)
    """
    return jnp.log(to_float(input))


@defop()
def log2(input):
    """Elementwise base-2 logarithm.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. Zero gives
    ``-inf`` and negative values give NaN.

    Example::

        >>> fjax.log2(fjax.tensor([1, 8, 0.5]))
        tensor([ 0.,  3., -1.], dtype=fjax.float32)
    """
    return jnp.log2(to_float(input))


@defop()
def log10(input):
    """Elementwise base-10 logarithm.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. Zero gives
    ``-inf`` and negative values give NaN.

    Example::

        >>> fjax.log10(fjax.tensor([1.0, 100.0, 0.0]))
        tensor([0., 2., -inf], dtype=fjax.float32)
    """
    return jnp.log10(to_float(input))


@defop(rows=ELEMENTWISE)
def log1p(input):
    """Elementwise ``log(1 + input)``, accurate for ``input`` near 0 where ``1 + input`` would round.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> fjax.log1p(fjax.tensor([0.0, 1.0, -1.0]))
        tensor([0.0000, 0.6931,   -inf], dtype=fjax.float32)
        >>> fjax.log1p(fjax.tensor([1e-8]))
        tensor([1.0000e-08], dtype=fjax.float32)
    """
    return jnp.log1p(to_float(input))


@defop(rows=ELEMENTWISE)
def sqrt(input):
    """Elementwise square root.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. Negative
    values give NaN.

    Example::

        >>> fjax.sqrt(fjax.tensor([4, 9, 2]))
        tensor([2.0000, 3.0000, 1.4142], dtype=fjax.float32)
        >>> fjax.sqrt(fjax.tensor([-1.0]))
        tensor([nan], dtype=fjax.float32)
    """
    return _saving.saves_result(jnp.sqrt, _saving.sqrt_rule, to_float(input))


@defop(rows=ELEMENTWISE)
def rsqrt(input):
    """Elementwise reciprocal square root ``1 / sqrt(input)``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. Zero gives
    ``inf`` and negative values give NaN.

    Example::

        >>> fjax.rsqrt(fjax.tensor([4.0, 0.25, 0.0]))
        tensor([0.5000, 2.0000,    inf], dtype=fjax.float32)
    """
    return lax.rsqrt(to_float(input))


@defop(rows=ELEMENTWISE)
def sin(input):
    """Elementwise sine of an angle in radians.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> import math
        >>> fjax.sin(fjax.tensor([0.0, math.pi / 6, math.pi / 2]))
        tensor([0.0000, 0.5000, 1.0000], dtype=fjax.float32)
    """
    return jnp.sin(to_float(input))


@defop(rows=ELEMENTWISE)
def cos(input):
    """Elementwise cosine of an angle in radians.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> import math
        >>> fjax.cos(fjax.tensor([0.0, math.pi / 3, math.pi]))
        tensor([ 1.0000,  0.5000, -1.0000], dtype=fjax.float32)
    """
    return jnp.cos(to_float(input))


@defop()
def tan(input):
    """Elementwise tangent of an angle in radians.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> import math
        >>> fjax.tan(fjax.tensor([0.0, math.pi / 4, -math.pi / 4]))
        tensor([ 0.,  1., -1.], dtype=fjax.float32)
    """
    return jnp.tan(to_float(input))


@defop(aliases=("arcsin",))
def asin(input):
    """Elementwise inverse sine, in radians in ``[-pi/2, pi/2]``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. Values
    outside ``[-1, 1]`` give NaN.

    Example::

        >>> fjax.asin(fjax.tensor([0.0, 0.5, 1.0, 2.0]))
        tensor([0.0000, 0.5236, 1.5708,    nan], dtype=fjax.float32)
    """
    return jnp.arcsin(to_float(input))


@defop(aliases=("arccos",))
def acos(input):
    """Elementwise inverse cosine, in radians in ``[0, pi]``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. Values
    outside ``[-1, 1]`` give NaN.

    Example::

        >>> fjax.acos(fjax.tensor([1.0, 0.5, -1.0, 2.0]))
        tensor([0.0000, 1.0472, 3.1416,    nan], dtype=fjax.float32)
    """
    return jnp.arccos(to_float(input))


@defop(aliases=("arctan",))
def atan(input):
    """Elementwise inverse tangent, in radians in ``(-pi/2, pi/2)``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. See ``atan2``
    for the angle of a point.

    Example::

        >>> fjax.atan(fjax.tensor([0.0, 1.0, -float("inf")]))
        tensor([ 0.0000,  0.7854, -1.5708], dtype=fjax.float32)
    """
    return jnp.arctan(to_float(input))


@defop()
def sinh(input):
    """Elementwise hyperbolic sine.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> fjax.sinh(fjax.tensor([0.0, 1.0, -1.0]))
        tensor([ 0.0000,  1.1752, -1.1752], dtype=fjax.float32)
    """
    return jnp.sinh(to_float(input))


@defop()
def cosh(input):
    """Elementwise hyperbolic cosine.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> fjax.cosh(fjax.tensor([0.0, 1.0, -1.0]))
        tensor([1.0000, 1.5431, 1.5431], dtype=fjax.float32)
    """
    return jnp.cosh(to_float(input))


@defop(rows=ELEMENTWISE)
def tanh(input):
    """Elementwise hyperbolic tangent, with values in ``(-1, 1)``; also ``F.tanh``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Args:
        input: the input tensor.

    Example::

        >>> fjax.tanh(fjax.tensor([0.0, 1.0, -1.0]))
        tensor([ 0.0000,  0.7616, -0.7616], dtype=fjax.float32)
        >>> F.tanh(fjax.tensor([100]))
        tensor([1.], dtype=fjax.float32)
    """
    return _saving.saves_result(jnp.tanh, _saving.tanh_rule, to_float(input))  # the backward reads the result


@defop(aliases=("arcsinh",))
def asinh(input):
    """Elementwise inverse hyperbolic sine.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> fjax.asinh(fjax.tensor([0.0, 1.0, -1.0]))
        tensor([ 0.0000,  0.8814, -0.8814], dtype=fjax.float32)
    """
    return jnp.arcsinh(to_float(input))


@defop(aliases=("arccosh",))
def acosh(input):
    """Elementwise inverse hyperbolic cosine, defined for ``input >= 1``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. Values below
    1 give NaN.

    Example::

        >>> fjax.acosh(fjax.tensor([1.0, 2.0, 0.5]))
        tensor([0.0000, 1.3170,    nan], dtype=fjax.float32)
    """
    return jnp.arccosh(to_float(input))


@defop(aliases=("arctanh",))
def atanh(input):
    """Elementwise inverse hyperbolic tangent, defined on ``[-1, 1]``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. 1 and -1 give
    ``inf`` and ``-inf``; values outside ``[-1, 1]`` give NaN.

    Example::

        >>> fjax.atanh(fjax.tensor([0.0, 0.5, 1.0, -1.0]))
        tensor([0.0000, 0.5493,    inf,   -inf], dtype=fjax.float32)
    """
    return jnp.arctanh(to_float(input))


@defop(rows=ELEMENTWISE)
def erf(input):
    """Elementwise Gauss error function ``2 / sqrt(pi) * integral of exp(-t**2) from 0 to input``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> fjax.erf(fjax.tensor([0.0, 0.5, -2.0]))
        tensor([ 0.0000,  0.5205, -0.9953], dtype=fjax.float32)
    """
    return lax.erf(to_float(input))


@defop()
def erfc(input):
    """Elementwise complementary error function ``1 - erf(input)``, accurate where ``erf`` is close to 1.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> fjax.erfc(fjax.tensor([0.0, 1.0, 2.0]))
        tensor([1.0000, 0.1573, 0.0047], dtype=fjax.float32)
        >>> fjax.erfc(fjax.tensor([5.0]))
        tensor([1.5375e-12], dtype=fjax.float32)
    """
    return lax.erfc(to_float(input))


@defop()
def erfinv(input):
    """Elementwise inverse error function: ``erf(erfinv(y)) == y`` for ``y`` in ``(-1, 1)``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. -1 and 1 give
    ``-inf`` and ``inf``; values outside ``[-1, 1]`` give NaN.

    Example::

        >>> fjax.erfinv(fjax.tensor([0.0, 0.5, 1.0, -1.0]))
        tensor([0.0000, 0.4769,    inf,   -inf], dtype=fjax.float32)
    """
    return lax.erf_inv(to_float(input))


@defop()
def lgamma(input):
    """Elementwise natural logarithm of the absolute value of the gamma function, ``log|gamma(input)|``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype. Non-positive
    integers give ``inf``.

    Example::

        >>> fjax.lgamma(fjax.tensor([0.5, 3.0, 5.0]))
        tensor([0.5724, 0.6931, 3.1781], dtype=fjax.float32)
    """
    return _lgamma(to_float(input))


@defop()
def digamma(input):
    """Elementwise digamma function, the derivative of ``lgamma``.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> fjax.digamma(fjax.tensor([1.0, 2.0, 0.5]))
        tensor([-0.5772,  0.4228, -1.9635], dtype=fjax.float32)
    """
    return polygamma_values(0, to_float(input))


# -- the gamma family's derivatives -------------------------------------------------------------------
# JAX differentiates lgamma and digamma through its polygamma(1, x), which is wrong for negative x, and its
# polygamma(n, x) is wrong for any negative x. ``polygamma_values`` is psi^(n) with torch's values (poles
# included) and the derivative psi^(n + 1), so lgamma, digamma and polygamma differentiate to any order.


def _digamma(x):
    """psi(x): XLA's, with torch's poles at zero (-inf at +0.0, +inf at -0.0; XLA gives NaN)."""
    return jnp.where(x == 0, jnp.copysign(jnp.asarray(jnp.inf, x.dtype), -x), lax.digamma(x))


def _trigamma(x):
    """psi^(1)(x) the way torch evaluates it, in ``x``'s precision: below 0.5 the reflection
    ``pi^2 / sin^2(pi x) - psi^(1)(1 - x)`` (sin(pi x) rounds away from 0 at the negative integers, which give
    huge finite values, as in torch), then six steps of ``psi^(1)(y) = 1 / y^2 + psi^(1)(y + 1)`` and the
    asymptotic series ``1/y + 1/(2y^2) + 1/(6y^3) - 1/(30y^5) + 1/(42y^7)``."""
    dtype = x.dtype
    if jnp.finfo(dtype).bits < 32:
        return _trigamma(x.astype(jnp.float32)).astype(dtype)
    pi = jnp.asarray(math.pi, dtype)
    left = x < 0.5
    sin = jnp.sin(pi * x)
    reflected = jnp.where(left, -(pi * pi) / (sin * sin), jnp.zeros_like(x))
    y = jnp.where(left, 1 - x, x)
    total = reflected
    for _ in range(6):
        total = total + 1 / (y * y)
        y = y + 1
    yy = 1 / (y * y)
    total = total + (1 + 1 / (2 * y) + yy * (1 / 6 - yy * (1 / 30 - yy * (1 / 42)))) / y
    return jnp.where(left, -total, total)


def _cot_derivative(n: int) -> np.ndarray:
    """Coefficients (lowest first) of the polynomial P with ``d^n/dy^n cot(y) = P(cot(y))``: from
    ``cot' = -(1 + cot^2)``, ``P_(k+1)(c) = -(1 + c^2) P_k'(c)``, ``P_0(c) = c``."""
    poly = np.polynomial.Polynomial([0.0, 1.0])
    for _ in range(n):
        poly = -poly.deriv() * np.polynomial.Polynomial([1.0, 0.0, 1.0])
    return poly.coef


def _polygamma_high(n: int, x):
    """psi^(n)(x) for n >= 2, in float64: ``(-1)^(n+1) n! zeta(n + 1, x)`` for positive x, and for negative x
    the reflection ``psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x))`` (``P_n`` above; pi x reduced
    to pi (x - round(x)) first). As torch: +inf (odd n) or -inf (even n) at 0, the negative integers and
    -inf; NaN at +inf."""
    dtype = x.dtype
    x = x.astype(jnp.float64)
    left = x < 0
    y = jnp.where(left, 1 - x, x)
    right = special.polygamma(jnp.asarray(n, jnp.int32), jnp.where(jnp.isinf(y), 1.0, y))
    c = 1 / jnp.tan(math.pi * (x - jnp.round(x)))
    cot_n = jnp.polyval(jnp.asarray(_cot_derivative(n)[::-1]), jnp.where(left, c, 0.0))
    out = jnp.where(left, (-1) ** n * right - math.pi ** (n + 1) * cot_n, right)
    pole = (x <= 0) & (x == jnp.floor(x))
    out = jnp.where(pole, jnp.inf if n % 2 else -jnp.inf, out)
    return jnp.where(x == jnp.inf, jnp.nan, out).astype(dtype)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def polygamma_values(n: int, x):
    """psi^(n)(x), the n-th derivative of digamma, elementwise on a floating array, with torch's values; its
    derivative is ``polygamma_values(n + 1, x)``."""
    if n == 0:
        return _digamma(x)
    if n == 1:
        return _trigamma(x)
    return _polygamma_high(n, x)


@polygamma_values.defjvp
def _polygamma_values_jvp(n, primals, tangents):
    (x,), (t,) = primals, tangents
    return polygamma_values(n, x), t * polygamma_values(n + 1, x)


@jax.custom_jvp
def _lgamma(x):
    return lax.lgamma(x)


@_lgamma.defjvp
def _lgamma_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return lax.lgamma(x), t * polygamma_values(0, x)


@defop()
def sinc(input):
    """Elementwise normalized sinc ``sin(pi * input) / (pi * input)``, with the value 1 at 0.

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> fjax.sinc(fjax.tensor([0.0, 0.5, 1.5]))
        tensor([ 1.0000,  0.6366, -0.2122], dtype=fjax.float32)
    """
    return jnp.sinc(to_float(input))


@defop()
def deg2rad(input):
    """Elementwise conversion of angles from degrees to radians (``input * pi / 180``).

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> fjax.deg2rad(fjax.tensor([180, 90, -45]))
        tensor([ 3.1416,  1.5708, -0.7854], dtype=fjax.float32)
    """
    return jnp.deg2rad(to_float(input))


@defop()
def rad2deg(input):
    """Elementwise conversion of angles from radians to degrees (``input * 180 / pi``).

    Integer and bool inputs are computed in float32; floating inputs keep their dtype.

    Example::

        >>> import math
        >>> fjax.rad2deg(fjax.tensor([math.pi, math.pi / 2, -1.0]))
        tensor([180.0000,  90.0000, -57.2958], dtype=fjax.float32)
    """
    return jnp.rad2deg(to_float(input))


def _float_pair(input, other):
    input, other = promote(input, other)
    return to_float(input), to_float(other)


@defop(aliases=("arctan2",))
def atan2(input, other):
    """Elementwise angle, in radians in ``[-pi, pi]``, of the point ``(x, y) = (other, input)``:
    the four-quadrant inverse tangent of ``input / other``.

    Note the order: ``input`` is the y coordinate. The operands broadcast and promote; integer
    inputs are computed in float32.

    Example::

        >>> y, x = fjax.tensor([1.0, 1.0, -1.0, 0.0]), fjax.tensor([1.0, -1.0, -1.0, 0.0])
        >>> fjax.atan2(y, x)
        tensor([ 0.7854,  2.3562, -2.3562,  0.0000], dtype=fjax.float32)
    """
    return jnp.arctan2(*_float_pair(input, other))


@defop()
def hypot(input, other):
    """Elementwise ``sqrt(input ** 2 + other ** 2)``, the length of the hypotenuse.

    It is computed without squaring directly, so it neither overflows nor underflows where the
    result is representable. The operands broadcast and promote; integer inputs are computed in
    float32.

    Example::

        >>> fjax.hypot(fjax.tensor([3.0, 6.0]), fjax.tensor([4.0, 8.0]))
        tensor([ 5., 10.], dtype=fjax.float32)
        >>> fjax.hypot(fjax.tensor([3e20]), fjax.tensor([4e20])) / 1e20
        tensor([5.], dtype=fjax.float32)
    """
    return jnp.hypot(*_float_pair(input, other))


@defop()
def logaddexp(input, other):
    """Elementwise ``log(exp(input) + exp(other))``, computed without overflow for large inputs.

    The operands broadcast and promote; integer inputs are computed in float32.

    Example::

        >>> fjax.logaddexp(fjax.tensor([0.0, 100.0]), fjax.tensor([0.0, 100.0]))
        tensor([  0.6931, 100.6931], dtype=fjax.float32)
        >>> fjax.logaddexp(fjax.tensor([-float("inf")]), fjax.tensor([2.0]))
        tensor([2.], dtype=fjax.float32)
    """
    return jnp.logaddexp(*_float_pair(input, other))


@defop()
def logaddexp2(input, other):
    """Elementwise ``log2(2 ** input + 2 ** other)``, computed without overflow for large inputs.

    The operands broadcast and promote; integer inputs are computed in float32.

    Example::

        >>> fjax.logaddexp2(fjax.tensor([0.0, 1.0, 3.0]), fjax.tensor([0.0, 1.0, 1.0]))
        tensor([1.0000, 2.0000, 3.3219], dtype=fjax.float32)
    """
    return jnp.logaddexp2(*_float_pair(input, other))


@defop()
def xlogy(input, other):
    """Elementwise ``input * log(other)``, defined as 0 where ``input == 0`` (even if ``other`` is 0),
    unless ``other`` is NaN, which gives NaN, as in torch.

    The operands broadcast and promote (either may be a Python number); integer inputs are
    computed in float32. This makes entropy-like sums ``p * log(p)`` safe at ``p == 0``.

    Example::

        >>> nan = float("nan")
        >>> fjax.xlogy(fjax.tensor([0.0, 2.0, 0.0]), fjax.tensor([0.0, 4.0, nan]))
        tensor([0.0000, 2.7726,    nan], dtype=fjax.float32)
    """
    x, y = _float_pair(input, other)
    return jnp.where(jnp.isnan(y), jnp.nan, special.xlogy(x, y))
