"""The ops behind ``fjax.special`` that fjax has no top-level op for (``erf``, ``digamma``, ``logit`` ...
are aliased by ``fjax/special.py``). They are registered as ``special_<name>``, torch's native names,
elementwise, and are not Tensor methods. Integer and bool inputs are computed in float32, as in torch.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy import special as jsp

from . import transcendental
from ._promote import promote, to_float
from ._registry import defop


def _real(op, x):
    """``x`` as a real floating array: integers and bools become float32; complex is refused."""
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise TypeError(f"{op}: complex input is not supported, got a tensor of shape {x.shape} and dtype {x.dtype}")
    return to_float(x)


def _real_pair(op, input, other):
    """Two operands promoted together (either may be a Python number), then made real floats."""
    input, other = promote(input, other)
    return _real(op, input), _real(op, other)


# -- error functions and the normal distribution ---------------------------------------------


@defop(method=False)
def special_erfcx(input):
    """Elementwise scaled complementary error function ``exp(input ** 2) * erfc(input)``, computed without
    the overflow of ``exp`` or the underflow of ``erfc`` for large inputs.

    Example::

        >>> fjax.special.erfcx(fjax.tensor([0.0, 1.0, 30.0]))
        tensor([1.0000, 0.4276, 0.0188], dtype=fjax.float32)
    """
    x = _real("special_erfcx", input)
    # JAX's erfcx returns 0 at some large inputs (near 9.3 in float32, 26.6 in float64): above 12
    # use the asymptotic series 1/(x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k, k <= 7, whose
    # next term is below 1e-13 there.
    x64 = x.astype(jnp.float64)
    big = x64 > 12.0
    xb = jnp.where(big, x64, 12.0)
    z = 1.0 / (2.0 * jnp.square(xb))
    series, term = jnp.ones_like(xb), jnp.ones_like(xb)
    for k in range(1, 8):
        term = -term * (2 * k - 1) * z
        series = series + term
    series = series / (xb * math.sqrt(math.pi))
    return jnp.where(big, series, jsp.erfcx(jnp.where(big, 0.0, x64))).astype(x.dtype)


@defop(method=False)
def special_ndtr(input):
    """Elementwise standard normal cumulative distribution function ``(1 + erf(input / sqrt(2))) / 2``.

    Example::

        >>> fjax.special.ndtr(fjax.tensor([-1.0, 0.0, 2.0]))
        tensor([0.1587, 0.5000, 0.9772], dtype=fjax.float32)
    """
    return jsp.ndtr(_real("special_ndtr", input))


@jax.custom_jvp
def _ndtri(p):
    return jsp.ndtri(p)


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    (p,), (t,) = primals, tangents
    y = jsp.ndtri(p)
    # torch's derivative, sqrt(2 pi) exp(y**2 / 2): inf at 0 and 1 (JAX's rule gives 0 there)
    return y, t * (math.sqrt(2 * math.pi) * jnp.exp(y * y / 2)).astype(y.dtype)


@defop(method=False)
def special_ndtri(input):
    """Elementwise inverse of ``ndtr``: the ``x`` for which the standard normal CDF is ``input``; 0 and 1 give
    ``-inf`` and ``inf``, values outside ``[0, 1]`` give NaN.

    Example::

        >>> fjax.special.ndtri(fjax.tensor([0.0, 0.25, 0.5, 0.975]))
        tensor([   -inf, -0.6745,  0.0000,  1.9600], dtype=fjax.float32)
    """
    return _ndtri(_real("special_ndtri", input))


@defop(method=False)
def special_log_ndtr(input):
    """Elementwise log of the standard normal CDF, ``log(ndtr(input))``, accurate far in the lower tail
    where ``ndtr`` underflows.

    Example::

        >>> fjax.special.log_ndtr(fjax.tensor([-40.0, 0.0, 3.0]))
        tensor([-8.0461e+02, -6.9315e-01, -1.3508e-03], dtype=fjax.float32)
    """
    return jsp.log_ndtr(_real("special_log_ndtr", input))


# -- modified Bessel functions ------------------------------------------------------------------


@jax.custom_jvp
def _i0(x):
    return jsp.i0(x)


@_i0.defjvp
def _i0_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jsp.i0(x), t * jsp.i1(x)  # I0' = I1, 0 at 0 (JAX's rule gives 1 there)


@defop(method=False)
def special_i0(input):
    """Elementwise modified Bessel function of the first kind of order 0, ``I0(input)``; its gradient is
    ``i1(input)``.

    Example::

        >>> fjax.special.i0(fjax.tensor([0.0, 1.0, -2.0]))
        tensor([1.0000, 1.2661, 2.2796], dtype=fjax.float32)
    """
    return _i0(_real("special_i0", input))


@defop(method=False)
def special_i0e(input):
    """Elementwise exponentially scaled modified Bessel function of order 0, ``exp(-|input|) * I0(input)``,
    which does not overflow for large inputs.

    Example::

        >>> fjax.special.i0e(fjax.tensor([0.0, 1.0, 100.0]))
        tensor([1.0000, 0.4658, 0.0399], dtype=fjax.float32)
    """
    return jsp.i0e(_real("special_i0e", input))


@defop(method=False)
def special_i1(input):
    """Elementwise modified Bessel function of the first kind of order 1, ``I1(input)`` (odd in ``input``).

    Example::

        >>> fjax.special.i1(fjax.tensor([0.0, 1.0, -2.0]))
        tensor([ 0.0000,  0.5652, -1.5906], dtype=fjax.float32)
    """
    return jsp.i1(_real("special_i1", input))


@defop(method=False)
def special_i1e(input):
    """Elementwise exponentially scaled modified Bessel function of order 1, ``exp(-|input|) * I1(input)``.

    Example::

        >>> fjax.special.i1e(fjax.tensor([0.0, 1.0, -100.0]))
        tensor([ 0.0000,  0.2079, -0.0397], dtype=fjax.float32)
    """
    return jsp.i1e(_real("special_i1e", input))


@defop(method=False, differentiable=False)
def special_modified_bessel_i0(input):
    """Elementwise modified Bessel function of the first kind of order 0, as ``i0``; as in torch, the result
    carries no gradient.

    Example::

        >>> fjax.special.modified_bessel_i0(fjax.tensor([0.0, 1.0, -2.0]))
        tensor([1.0000, 1.2661, 2.2796], dtype=fjax.float32)
    """
    return jsp.i0(_real("special_modified_bessel_i0", input))


@defop(method=False, differentiable=False)
def special_modified_bessel_i1(input):
    """Elementwise modified Bessel function of the first kind of order 1, as ``i1``; as in torch, the result
    carries no gradient.

    Example::

        >>> fjax.special.modified_bessel_i1(fjax.tensor([0.0, 1.0, -2.0]))
        tensor([ 0.0000,  0.5652, -1.5906], dtype=fjax.float32)
    """
    return jsp.i1(_real("special_modified_bessel_i1", input))


# -- Bessel functions of the first and second kind -------------------------------------------------
# JAX's bessel_jn (backward recurrence) loses up to 0.4 in float32, so J0, J1, Y0 and Y1 are evaluated here in
# float64: the power series below |x| = 12 (cancellation among its terms costs up to ~1e-12 there) and
# Hankel's asymptotic expansion above, cut at its 24th term, near the smallest at |x| = 12. Both stay
# within ~1e-12 of the true values.

_SWITCH = 12.0
_SERIES_TERMS = 45
_HANKEL_TERMS = 12
_EULER_GAMMA = 0.57721566490153286061


def _hankel_coefficients(nu):
    """a_k(nu) = prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! 8^k), k < 2 * _HANKEL_TERMS."""
    out, a = [], 1.0
    for k in range(2 * _HANKEL_TERMS):
        if k:
            a *= (4 * nu * nu - (2 * k - 1) ** 2) / (8 * k)
        out.append(a)
    return out


_HANKEL = {0: _hankel_coefficients(0), 1: _hankel_coefficients(1)}


def _digamma_of_integer(m):
    """psi(m) = -gamma + 1 + 1/2 + ... + 1/(m - 1) for an integer m >= 1."""
    return -_EULER_GAMMA + sum(1.0 / j for j in range(1, m))


def _hankel(x, nu):
    """(J_nu(x), Y_nu(x)) for x >= _SWITCH by Hankel's expansion: sqrt(2 / (pi x)) (P cos w - Q sin w) and
    sqrt(2 / (pi x)) (P sin w + Q cos w), w = x - nu pi / 2 - pi / 4."""
    z2 = 1.0 / (x * x)
    a = _HANKEL[nu]
    p = jnp.zeros_like(x)
    q = jnp.zeros_like(x)
    for k in range(_HANKEL_TERMS - 1, -1, -1):
        p = p * z2 + (-1) ** k * a[2 * k]
        q = q * z2 + (-1) ** k * a[2 * k + 1]
    q = q / x
    s, c = jnp.sin(x), jnp.cos(x)
    cos_w, sin_w = (c + s, s - c) if nu == 0 else (s - c, -s - c)  # times sqrt(2), folded in below
    scale = jnp.sqrt(1.0 / (math.pi * x))
    return scale * (p * cos_w - q * sin_w), scale * (p * sin_w + q * cos_w)


def _bessel_j(x, nu):
    """J_nu(x) for nu in (0, 1), evaluated in float64, returned in ``x``'s dtype."""
    dtype = x.dtype
    x = x.astype(jnp.float64)
    ax = jnp.abs(x)
    near = ax < _SWITCH
    # sum_k (-u)^k / (k! (k + nu)!), u = x^2 / 4, by Horner's rule
    xs = jnp.where(near, ax, 0.0)
    u = xs * xs / 4
    series = jnp.zeros_like(u)
    for k in range(_SERIES_TERMS - 1, -1, -1):
        series = series * -u + 1.0 / (math.factorial(k) * math.factorial(k + nu))
    if nu == 1:
        series = series * xs / 2
    far, _ = _hankel(jnp.where(near, _SWITCH, ax), nu)
    out = jnp.where(near, series, far)
    if nu == 1:
        out = jnp.where(x < 0, -out, out)
    return jnp.where(jnp.isnan(x), jnp.nan, out).astype(dtype)


def _bessel_y(x, nu):
    """Y_nu(x) for nu in (0, 1), evaluated in float64, returned in ``x``'s dtype; as torch, NaN below 0 and at
    +-inf, -inf at 0. Below _SWITCH the series (DLMF 10.8.1)
    ``(2/pi) log(x/2) J_nu(x) - nu 2/(pi x) - ((x/2)^nu / pi) sum_k (psi(k+1) + psi(k+nu+1)) (-u)^k / (k! (k+nu)!)``,
    u = x^2 / 4."""
    dtype = x.dtype
    x = x.astype(jnp.float64)
    near = x < _SWITCH
    xs = jnp.where(near & (x > 0), x, 1.0)
    u = xs * xs / 4
    series = jnp.zeros_like(u)
    for k in range(_SERIES_TERMS - 1, -1, -1):
        weight = _digamma_of_integer(k + 1) + _digamma_of_integer(k + nu + 1)
        series = series * -u + weight / (math.factorial(k) * math.factorial(k + nu))
    series = (2 / math.pi) * jnp.log(xs / 2) * _bessel_j(xs, nu) - (xs / 2) ** nu / math.pi * series
    if nu == 1:
        series = series - 2 / (math.pi * xs)
    _, far = _hankel(jnp.where(near, _SWITCH, x), nu)
    out = jnp.where(near, series, far)
    out = jnp.where(x == 0, -jnp.inf, out)
    return jnp.where((x < 0) | jnp.isinf(x) | jnp.isnan(x), jnp.nan, out).astype(dtype)


@defop(method=False, differentiable=False)
def special_bessel_j0(input):
    """Elementwise Bessel function of the first kind of order 0, ``J0(input)``. As in torch, the result
    carries no gradient.

    Example::

        >>> fjax.special.bessel_j0(fjax.tensor([0.0, 1.0, -2.0]))
        tensor([1.0000, 0.7652, 0.2239], dtype=fjax.float32)
    """
    return _bessel_j(_real("special_bessel_j0", input), 0)


@defop(method=False, differentiable=False)
def special_bessel_j1(input):
    """Elementwise Bessel function of the first kind of order 1, ``J1(input)`` (odd in ``input``). As in
    torch, the result carries no gradient.

    Example::

        >>> fjax.special.bessel_j1(fjax.tensor([0.0, 1.0, -2.0]))
        tensor([ 0.0000,  0.4401, -0.5767], dtype=fjax.float32)
    """
    return _bessel_j(_real("special_bessel_j1", input), 1)


@defop(method=False, differentiable=False)
def special_bessel_y0(input):
    """Elementwise Bessel function of the second kind of order 0, ``Y0(input)``: ``-inf`` at 0, NaN for negative
    inputs. As in torch, the result carries no gradient.

    Example::

        >>> fjax.special.bessel_y0(fjax.tensor([0.0, 1.0, 10.0, -1.0]))
        tensor([  -inf, 0.0883, 0.0557,    nan], dtype=fjax.float32)
    """
    return _bessel_y(_real("special_bessel_y0", input), 0)


@defop(method=False, differentiable=False)
def special_bessel_y1(input):
    """Elementwise Bessel function of the second kind of order 1, ``Y1(input)``: ``-inf`` at 0, NaN for negative
    inputs. As in torch, the result carries no gradient.

    Example::

        >>> fjax.special.bessel_y1(fjax.tensor([0.0, 1.0, 10.0, -1.0]))
        tensor([   -inf, -0.7812,  0.2490,     nan], dtype=fjax.float32)
    """
    return _bessel_y(_real("special_bessel_y1", input), 1)


# -- modified Bessel functions of the second kind and the Airy function ------------------------------
# In float64: below x = 2 the power series (DLMF 10.31.1), above it the integral
# exp(x) K_nu(x) = int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt by the trapezoidal rule, whose error falls like
# exp(-pi^2 / h) for this analytic, doubly exponentially decaying integrand: the step h is at most 1/4 and
# shrinks like 1/sqrt(x) to resolve the peak of width ~1/sqrt(x) at t = 0.

_K_SERIES_TERMS = 20
_K_NODES = 48


def _scaled_k_integral(x, nu):
    """exp(x) K_nu(x) for x > 1 (float64), by the trapezoidal rule above."""
    h = jnp.minimum(0.25, 0.75 / jnp.sqrt(x))
    t = h[..., None] * jnp.arange(_K_NODES, dtype=x.dtype)
    f = jnp.exp(-2 * x[..., None] * jnp.square(jnp.sinh(t / 2))) * jnp.cosh(nu * t)  # cosh t - 1, no cancellation
    return h * (jnp.sum(f, -1) - f[..., 0] / 2)


def _modified_bessel_k(x, nu, scaled):
    """K_nu(x) (``exp(x) K_nu(x)`` where ``scaled``) for nu in (0, 1), in float64, returned in ``x``'s dtype; as
    torch, +inf at 0, NaN below 0 and at -inf, 0 at +inf."""
    dtype = x.dtype
    x = x.astype(jnp.float64)
    near = x <= 2
    xs = jnp.where(near & (x > 0), x, 1.0)
    u = xs * xs / 4
    # K_nu(x) = nu / x + (-1)^(nu+1) log(x/2) I_nu(x) + (-1)^nu ((x/2)^nu / 2) sum_k (psi(k+1) + psi(k+nu+1)) u^k
    # / (k! (k+nu)!), I_nu(x) = (x/2)^nu sum_k u^k / (k! (k+nu)!)
    i_series = jnp.zeros_like(u)
    series = jnp.zeros_like(u)
    for k in range(_K_SERIES_TERMS - 1, -1, -1):
        inverse = 1.0 / (math.factorial(k) * math.factorial(k + nu))
        i_series = i_series * u + inverse
        series = series * u + (_digamma_of_integer(k + 1) + _digamma_of_integer(k + nu + 1)) * inverse
    half = (xs / 2) ** nu
    sign = -1 if nu == 0 else 1
    small = sign * jnp.log(xs / 2) * half * i_series - sign * half / 2 * series
    if nu == 1:
        small = small + 1 / xs
    xl = jnp.where(near | jnp.isinf(x), 3.0, x)
    large = _scaled_k_integral(xl, nu)
    out = jnp.where(near, small * jnp.exp(xs) if scaled else small, large if scaled else jnp.exp(-xl) * large)
    out = jnp.where(x == 0, jnp.inf, jnp.where(x == jnp.inf, 0.0, out))
    return jnp.where((x < 0) | jnp.isnan(x), jnp.nan, out).astype(dtype)


@defop(method=False, differentiable=False)
def special_modified_bessel_k0(input):
    """Elementwise modified Bessel function of the second kind of order 0, ``K0(input)``: ``inf`` at 0, NaN for
    negative inputs. As in torch, the result carries no gradient.

    Example::

        >>> fjax.special.modified_bessel_k0(fjax.tensor([0.0, 1.0, 10.0, -1.0]))
        tensor([       inf, 4.2102e-01, 1.7780e-05,        nan], dtype=fjax.float32)
    """
    return _modified_bessel_k(_real("special_modified_bessel_k0", input), 0, scaled=False)


@defop(method=False, differentiable=False)
def special_modified_bessel_k1(input):
    """Elementwise modified Bessel function of the second kind of order 1, ``K1(input)``: ``inf`` at 0, NaN for
    negative inputs. As in torch, the result carries no gradient.

    Example::

        >>> fjax.special.modified_bessel_k1(fjax.tensor([0.0, 1.0, 10.0, -1.0]))
        tensor([       inf, 6.0191e-01, 1.8649e-05,        nan], dtype=fjax.float32)
    """
    return _modified_bessel_k(_real("special_modified_bessel_k1", input), 1, scaled=False)


@defop(method=False, differentiable=False)
def special_scaled_modified_bessel_k0(input):
    """Elementwise exponentially scaled modified Bessel function of the second kind of order 0,
    ``exp(input) * K0(input)``, which does not underflow for large inputs. As in torch, no gradient.

    Example::

        >>> fjax.special.scaled_modified_bessel_k0(fjax.tensor([0.0, 1.0, 100.0, -1.0]))
        tensor([   inf, 1.1445, 0.1252,    nan], dtype=fjax.float32)
    """
    return _modified_bessel_k(_real("special_scaled_modified_bessel_k0", input), 0, scaled=True)


@defop(method=False, differentiable=False)
def special_scaled_modified_bessel_k1(input):
    """Elementwise exponentially scaled modified Bessel function of the second kind of order 1,
    ``exp(input) * K1(input)``. As in torch, no gradient.

    Example::

        >>> fjax.special.scaled_modified_bessel_k1(fjax.tensor([0.0, 1.0, 100.0, -1.0]))
        tensor([   inf, 1.6362, 0.1258,    nan], dtype=fjax.float32)
    """
    return _modified_bessel_k(_real("special_scaled_modified_bessel_k1", input), 1, scaled=True)


# Ai(x) in float64: for x > 1, (1/pi) sqrt(x/3) K_(1/3)(zeta), zeta = (2/3) x^(3/2), by the integral above; on
# [-7.5, 1] the Maclaurin series Ai(0) f(x) + Ai'(0) g(x) (cancellation costs ~1e-11 at -7.5); below -7.5 the
# asymptotic expansion DLMF 9.7.9, cut at its 20th term (~1e-11 at -7.5, less further out).

_AIRY_AT_0 = 1 / (3 ** (2 / 3) * math.gamma(2 / 3))
_AIRY_SLOPE_AT_0 = -1 / (3 ** (1 / 3) * math.gamma(1 / 3))
_AIRY_SERIES_TERMS = 60
_AIRY_ASYMPTOTIC_TERMS = 10
_AIRY_SWITCH = -7.5


def _airy_series_coefficients():
    """f = sum_k a_k x^(3k), g = x sum_k b_k x^(3k): a_k = a_(k-1) / ((3k-1) 3k), b_k = b_(k-1) / (3k (3k+1))."""
    a, b = [1.0], [1.0]
    for k in range(1, _AIRY_SERIES_TERMS):
        a.append(a[-1] / ((3 * k - 1) * 3 * k))
        b.append(b[-1] / (3 * k * (3 * k + 1)))
    return a, b


def _airy_asymptotic_coefficients():
    """u_k = (2k+1)(2k+3)...(6k-1) / (216^k k!) of DLMF 9.7.2, k < 2 * _AIRY_ASYMPTOTIC_TERMS."""
    u = [1.0]
    for k in range(1, 2 * _AIRY_ASYMPTOTIC_TERMS):
        u.append(u[-1] * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216 * k))
    return u


_AIRY_SERIES = _airy_series_coefficients()
_AIRY_ASYMPTOTIC = _airy_asymptotic_coefficients()


def _airy_ai(x):
    """Ai(x), evaluated in float64, returned in ``x``'s dtype; NaN at +-inf, as torch."""
    dtype = x.dtype
    x = x.astype(jnp.float64)
    # the series on [_AIRY_SWITCH, 1]
    xs = jnp.clip(x, _AIRY_SWITCH, 1.0)
    z = xs * xs * xs
    f = jnp.zeros_like(xs)
    g = jnp.zeros_like(xs)
    a, b = _AIRY_SERIES
    for k in range(_AIRY_SERIES_TERMS - 1, -1, -1):
        f = f * z + a[k]
        g = g * z + b[k]
    series = _AIRY_AT_0 * f + _AIRY_SLOPE_AT_0 * xs * g
    # x > 1: through K_(1/3)
    xp = jnp.where(x > 1, x, 2.0)
    zeta = 2 / 3 * xp * jnp.sqrt(xp)
    positive = jnp.sqrt(xp / 3) / math.pi * jnp.exp(-zeta) * _scaled_k_integral(zeta, 1 / 3)
    # x < _AIRY_SWITCH: Ai(-X) ~ (cos(zeta - pi/4) P + sin(zeta - pi/4) Q) / (sqrt(pi) X^(1/4))
    big = jnp.where(x < _AIRY_SWITCH, -x, 8.0)
    zeta = 2 / 3 * big * jnp.sqrt(big)
    iz2 = 1 / (zeta * zeta)
    p = jnp.zeros_like(big)
    q = jnp.zeros_like(big)
    u = _AIRY_ASYMPTOTIC
    for k in range(_AIRY_ASYMPTOTIC_TERMS - 1, -1, -1):
        p = p * iz2 + (-1) ** k * u[2 * k]
        q = q * iz2 + (-1) ** k * u[2 * k + 1]
    w = zeta - math.pi / 4
    negative = (jnp.cos(w) * p + jnp.sin(w) * q / zeta) / (math.sqrt(math.pi) * jnp.sqrt(jnp.sqrt(big)))
    out = jnp.where(x > 1, positive, jnp.where(x < _AIRY_SWITCH, negative, series))
    return jnp.where(jnp.isinf(x), jnp.nan, out).astype(dtype)


@defop(method=False, differentiable=False)
def special_airy_ai(input):
    """Elementwise Airy function ``Ai(input)``, the solution of ``y'' = x y`` that decays for large positive
    inputs; NaN at ``+-inf``, as in torch. As in torch, the result carries no gradient.

    Example::

        >>> fjax.special.airy_ai(fjax.tensor([-2.0, 0.0, 1.0, 10.0]))
        tensor([2.2741e-01, 3.5503e-01, 1.3529e-01, 1.1048e-10], dtype=fjax.float32)
    """
    return _airy_ai(_real("special_airy_ai", input))


@defop(method=False, differentiable=False)
def special_spherical_bessel_j0(input):
    """Elementwise spherical Bessel function of the first kind of order 0, ``sin(input) / input`` (1 at 0).
    As in torch, the result carries no gradient.

    Example::

        >>> fjax.special.spherical_bessel_j0(fjax.tensor([0.0, 1.0, 3.14159265]))
        tensor([ 1.0000e+00,  8.4147e-01, -2.7828e-08], dtype=fjax.float32)
    """
    x = _real("special_spherical_bessel_j0", input)
    safe = jnp.where(x == 0, jnp.ones_like(x), x)
    return jnp.where(x == 0, jnp.ones_like(x), jnp.sin(safe) / safe)


# -- orthogonal polynomials ------------------------------------------------------------------------------
# torch's kernels, value for value: ``n`` (a tensor or a number, broadcast against ``input``) is truncated to an
# integer (NaN, +-inf and out-of-range values count as negative); n < 0 gives 0; the endpoints have closed forms;
# the Chebyshev kinds use their trigonometric forms for |x| < 1 above a small degree; everything else runs the
# three-term recurrence in ``input``'s precision, each element stopping at its degree or where it turns NaN.


def _polynomial_args(op, input, n):
    """(x, n): promoted together as torch does, broadcast, ``n`` truncated (-1 where torch's cast to int64 is
    out of range)."""
    x, n = _real_pair(op, input, n)
    x, n = jnp.broadcast_arrays(x, n)
    valid = jnp.isfinite(n) & (jnp.abs(n) < 2.0**63)
    return x, jnp.where(valid, jnp.trunc(n), -1).astype(x.dtype)


def _recurrence(n, p, q, step):
    """q_n from q_0 = ``p`` and q_1 = ``q`` by q_(m+1) = step(m, q_m, q_(m-1)), m = 1 .. n - 1, per element."""

    def active(m, q):
        return (m < n) & ~jnp.isnan(q)

    def body(carry):
        m, p, q = carry
        go = active(m, q)
        return m + 1, jnp.where(go, q, p), jnp.where(go, step(m, q, p), q)

    start = (jnp.asarray(1, q.dtype), p, q)
    return lax.while_loop(lambda carry: jnp.any(active(carry[0], carry[2])), body, start)[2]


def _select(n, at_zero, at_one, recurrence_start, step, cases):
    """torch's order of cases: n < 0 gives 0, then each (mask, value) of ``cases``, then n == 0, n == 1, the
    recurrence from (1, ``recurrence_start``) for the rest."""
    done = (n <= 1) | functools.reduce(jnp.logical_or, [mask for mask, _ in cases])
    out = _recurrence(jnp.where(done, 0, n), jnp.ones_like(at_one), recurrence_start, step)
    out = jnp.where(n == 1, at_one, jnp.where(n == 0, at_zero, out))
    for mask, value in reversed(cases):
        out = jnp.where(mask, value, out)
    return jnp.where(n < 0, jnp.zeros_like(out), out)


def _rounded(fn, v):
    """``fn(v)`` evaluated in float64 and rounded to ``v``'s dtype: in float32 the correctly rounded value that
    torch's C library gives (XLA's float32 arccos is up to 2 ulp off, which the degree multiplies)."""
    return fn(v.astype(jnp.float64)).astype(v.dtype)


def _chebyshev(op, input, n, kind, shifted):
    """The Chebyshev polynomial of ``kind`` (t, u, v, w) at ``input`` (at ``2 input - 1`` where ``shifted``)."""
    x, n = _polynomial_args(op, input, n)
    y = x + x - 1 if shifted else x
    top, bottom = (x == 1, x == 0) if shifted else (x == 1, x == -1)
    sign = jnp.where(jnp.fmod(n, 2) == 0, 1, -1).astype(x.dtype)
    one = jnp.ones_like(x)
    cos, sin = functools.partial(_rounded, jnp.cos), functools.partial(_rounded, jnp.sin)
    theta = _rounded(jnp.arccos, y)
    if kind == "t":
        ends = (one, sign)
        trig = cos(n * theta)
    elif kind == "u":
        ends = (n + 1, sign * (n + 1))
        trig = jnp.where(sin(theta) != 0, sin((n + 1) * theta) / sin(theta), (n + 1) * cos((n + 1) * theta) / y)
    elif kind == "v":
        ends = (one, sign * (n + n + 1))
        trig = jnp.where(sin(theta / 2) != 1, cos((n + 0.5) * theta) / cos(theta / 2), ends[1])
    else:
        ends = (n + n + 1, sign)
        # torch's shifted kernel falls back to the x = 0 value, the plain one to the end nearer x
        fallback = ends[1] if shifted else jnp.where(x > 0, ends[0], ends[1])
        trig = jnp.where(cos(theta / 2) != 1, sin((n + 0.5) * theta) / sin(theta / 2), fallback)
    threshold = {"t": 6, "u": 8, "v": 8, "w": 8}[kind] if not shifted else {"t": 6, "u": 6, "v": 6, "w": 4}[kind]
    first = {"t": y, "u": y + y, "v": y + y - 1, "w": y + y + 1}[kind]
    cases = [(top, ends[0]), (bottom, ends[1]), ((n > threshold) & (jnp.abs(y) < 1), trig)]
    return _select(n, one, first, first, lambda m, q, p: (y + y) * q - p, cases)


@defop(method=False, differentiable=False)
def special_chebyshev_polynomial_t(input, n):
    """Elementwise Chebyshev polynomial of the first kind, ``T_n(input)``, of degree ``n`` (a tensor or a number,
    broadcast against ``input``; truncated to an integer; negative degrees give 0). As in torch, the result carries
    no gradient.

    Example::

        >>> fjax.special.chebyshev_polynomial_t(fjax.tensor([0.5, 1.0, -1.0, 2.0]), 3)
        tensor([-1.,  1., -1., 26.], dtype=fjax.float32)
    """
    return _chebyshev("special_chebyshev_polynomial_t", input, n, "t", shifted=False)


@defop(method=False, differentiable=False)
def special_chebyshev_polynomial_u(input, n):
    """Elementwise Chebyshev polynomial of the second kind, ``U_n(input)``, of degree ``n`` (a tensor or a number,
    broadcast against ``input``; truncated to an integer; negative degrees give 0). As in torch, the result carries
    no gradient.

    Example::

        >>> fjax.special.chebyshev_polynomial_u(fjax.tensor([0.5, 1.0, -1.0, 2.0]), 3)
        tensor([-1.,  4., -4., 56.], dtype=fjax.float32)
    """
    return _chebyshev("special_chebyshev_polynomial_u", input, n, "u", shifted=False)


@defop(method=False, differentiable=False)
def special_chebyshev_polynomial_v(input, n):
    """Elementwise Chebyshev polynomial of the third kind, ``V_n(input)``, of degree ``n`` (a tensor or a number,
    broadcast against ``input``; truncated to an integer; negative degrees give 0). As in torch, the result carries
    no gradient.

    Example::

        >>> fjax.special.chebyshev_polynomial_v(fjax.tensor([0.5, 1.0, -1.0, 2.0]), 3)
        tensor([-1.,  1., -7., 41.], dtype=fjax.float32)
    """
    return _chebyshev("special_chebyshev_polynomial_v", input, n, "v", shifted=False)


@defop(method=False, differentiable=False)
def special_chebyshev_polynomial_w(input, n):
    """Elementwise Chebyshev polynomial of the fourth kind, ``W_n(input)``, of degree ``n`` (a tensor or a number,
    broadcast against ``input``; truncated to an integer; negative degrees give 0). As in torch, the result carries
    no gradient.

    Example::

        >>> fjax.special.chebyshev_polynomial_w(fjax.tensor([0.5, 1.0, -1.0, 2.0]), 3)
        tensor([-1.,  7., -1., 71.], dtype=fjax.float32)
    """
    return _chebyshev("special_chebyshev_polynomial_w", input, n, "w", shifted=False)


@defop(method=False, differentiable=False)
def special_shifted_chebyshev_polynomial_t(input, n):
    """Elementwise shifted Chebyshev polynomial of the first kind, ``T*_n(input) = T_n(2 input - 1)``, of degree
    ``n`` (a tensor or a number, broadcast against ``input``; truncated to an integer; negative degrees give 0). As
    in torch, the result carries no gradient.

    Example::

        >>> fjax.special.shifted_chebyshev_polynomial_t(fjax.tensor([0.25, 1.0, 0.0, 2.0]), 3)
        tensor([ 1.,  1., -1., 99.], dtype=fjax.float32)
    """
    return _chebyshev("special_shifted_chebyshev_polynomial_t", input, n, "t", shifted=True)


@defop(method=False, differentiable=False)
def special_shifted_chebyshev_polynomial_u(input, n):
    """Elementwise shifted Chebyshev polynomial of the second kind, ``U*_n(input) = U_n(2 input - 1)``, of degree
    ``n`` (a tensor or a number, broadcast against ``input``; truncated to an integer; negative degrees give 0). As
    in torch, the result carries no gradient.

    Example::

        >>> fjax.special.shifted_chebyshev_polynomial_u(fjax.tensor([0.25, 1.0, 0.0, 2.0]), 3)
        tensor([  1.,   4.,  -4., 204.], dtype=fjax.float32)
    """
    return _chebyshev("special_shifted_chebyshev_polynomial_u", input, n, "u", shifted=True)


@defop(method=False, differentiable=False)
def special_shifted_chebyshev_polynomial_v(input, n):
    """Elementwise shifted Chebyshev polynomial of the third kind, ``V*_n(input) = V_n(2 input - 1)``, of degree
    ``n`` (a tensor or a number, broadcast against ``input``; truncated to an integer; negative degrees give 0). As
    in torch, the result carries no gradient.

    Example::

        >>> fjax.special.shifted_chebyshev_polynomial_v(fjax.tensor([0.25, 1.0, 0.0, 2.0]), 3)
        tensor([  1.,   1.,  -7., 169.], dtype=fjax.float32)
    """
    return _chebyshev("special_shifted_chebyshev_polynomial_v", input, n, "v", shifted=True)


@defop(method=False, differentiable=False)
def special_shifted_chebyshev_polynomial_w(input, n):
    """Elementwise shifted Chebyshev polynomial of the fourth kind, ``W*_n(input) = W_n(2 input - 1)``, of degree
    ``n`` (a tensor or a number, broadcast against ``input``; truncated to an integer; negative degrees give 0). As
    in torch, the result carries no gradient.

    Example::

        >>> fjax.special.shifted_chebyshev_polynomial_w(fjax.tensor([0.25, 1.0, 0.0, 2.0]), 3)
        tensor([  1.,   7.,  -1., 239.], dtype=fjax.float32)
    """
    return _chebyshev("special_shifted_chebyshev_polynomial_w", input, n, "w", shifted=True)


def _hermite_limit(dtype):
    """torch's largest degree of a Hermite polynomial; above it the result is NaN."""
    return {jnp.float32: 128, jnp.float64: 512}.get(jnp.dtype(dtype).type, 1024)


@defop(method=False, differentiable=False)
def special_hermite_polynomial_h(input, n):
    """Elementwise physicists' Hermite polynomial ``H_n(input)`` of degree ``n`` (a tensor or a number,
    broadcast; truncated to an integer; negative degrees give 0, degrees above 128 in float32 or 512 in float64
    give NaN, as in torch). As in torch, the result carries no gradient.

    Example::

        >>> fjax.special.hermite_polynomial_h(fjax.tensor([0.5, 1.0, 2.0]), 3)
        tensor([-5., -4., 40.], dtype=fjax.float32)
    """
    x, n = _polynomial_args("special_hermite_polynomial_h", input, n)
    too_high = n > _hermite_limit(x.dtype)
    cases = [(too_high, jnp.full_like(x, jnp.nan))]
    return _select(n, jnp.ones_like(x), x + x, x + x, lambda m, q, p: (x + x) * q - (m + m) * p, cases)


@defop(method=False, differentiable=False)
def special_hermite_polynomial_he(input, n):
    """Elementwise probabilists' Hermite polynomial ``He_n(input)`` of degree ``n`` (a tensor or a number,
    broadcast; truncated to an integer; negative degrees give 0, degrees above 128 in float32 or 512 in float64
    give NaN, as in torch). As in torch, the result carries no gradient.

    Example::

        >>> fjax.special.hermite_polynomial_he(fjax.tensor([0.5, 1.0, 2.0]), 3)
        tensor([-1.3750, -2.0000,  2.0000], dtype=fjax.float32)
    """
    x, n = _polynomial_args("special_hermite_polynomial_he", input, n)
    too_high = n > _hermite_limit(x.dtype)
    cases = [(too_high, jnp.full_like(x, jnp.nan))]
    return _select(n, jnp.ones_like(x), x, x, lambda m, q, p: x * q - m * p, cases)


@defop(method=False, differentiable=False)
def special_laguerre_polynomial_l(input, n):
    """Elementwise Laguerre polynomial ``L_n(input)`` of degree ``n`` (a tensor or a number, broadcast;
    truncated to an integer; negative degrees give 0). As in torch, the result carries no gradient.

    Example::

        >>> fjax.special.laguerre_polynomial_l(fjax.tensor([0.0, 1.0, 2.0]), 2)
        tensor([ 1.0000, -0.5000, -1.0000], dtype=fjax.float32)
    """
    x, n = _polynomial_args("special_laguerre_polynomial_l", input, n)
    cases = [(x == 0, jnp.ones_like(x))]
    return _select(n, jnp.ones_like(x), 1 - x, 1 - x, lambda m, q, p: ((m + m + (1 - x)) * q - m * p) / (m + 1), cases)


@defop(method=False, differentiable=False)
def special_legendre_polynomial_p(input, n):
    """Elementwise Legendre polynomial ``P_n(input)`` of degree ``n`` (a tensor or a number, broadcast;
    truncated to an integer; negative degrees give 0). As in torch, the result carries no gradient.

    Example::

        >>> fjax.special.legendre_polynomial_p(fjax.tensor([0.5, 1.0, -1.0]), 3)
        tensor([-0.4375,  1.0000, -1.0000], dtype=fjax.float32)
    """
    x, n = _polynomial_args("special_legendre_polynomial_p", input, n)
    sign = jnp.where(jnp.fmod(n, 2) == 0, 1, -1).astype(x.dtype)
    cases = [(jnp.abs(x) == 1, jnp.where(x > 0, 1, sign).astype(x.dtype))]
    return _select(n, jnp.ones_like(x), x, x, lambda m, q, p: ((m + m + 1) * x * q - m * p) / (m + 1), cases)


# -- entropy and x log y ---------------------------------------------------------------------------


@jax.custom_jvp
def _entr(x):
    return jnp.where(x == 0, jnp.zeros_like(x), jsp.entr(x))  # +0 at 0 (JAX's entr gives -0)


@_entr.defjvp
def _entr_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _entr(x), t * -(1 + jnp.log(x))  # torch's: inf at 0, NaN below 0


@defop(method=False)
def special_entr(input):
    """Elementwise entropy term ``-input * log(input)``: 0 at 0 and ``-inf`` for negative inputs.

    Example::

        >>> fjax.special.entr(fjax.tensor([0.0, 0.5, 2.0, -1.0]))
        tensor([ 0.0000,  0.3466, -1.3863,    -inf], dtype=fjax.float32)
    """
    return _entr(_real("special_entr", input))


@defop(method=False)
def special_xlog1py(input, other):
    """Elementwise ``input * log1p(other)``, defined as 0 where ``input == 0`` unless ``other`` is NaN. The
    operands broadcast and promote (either may be a Python number).

    Example::

        >>> fjax.special.xlog1py(fjax.tensor([0.0, 2.0, 3.0]), fjax.tensor([-1.0, 1.0, 0.0]))
        tensor([0.0000, 1.3863, 0.0000], dtype=fjax.float32)
    """
    x, y = _real_pair("special_xlog1py", input, other)
    return jsp.xlog1py(x, y)


# -- gamma family ----------------------------------------------------------------------------------


@defop(method=False, differentiable=False)
def special_zeta(input, other):
    """Elementwise Hurwitz zeta function ``sum_k (k + other) ** -input`` (the Riemann zeta function for
    ``other == 1``). The operands broadcast and promote. As in torch, it has no gradient.

    Example::

        >>> fjax.special.zeta(fjax.tensor([2.0, 4.0]), 1.0)
        tensor([1.6449, 1.0823], dtype=fjax.float32)
    """
    x, q = _real_pair("special_zeta", input, other)
    return jsp.zeta(x, q)


@defop(static=("n",), method=False)
def special_polygamma(n, input):
    """Elementwise ``n``-th derivative of the digamma function (``n == 0`` is ``digamma``), for an integer
    ``n >= 0``. As in torch, 0 and the negative integers give ``+-inf`` (for ``n == 1``, whose reflection
    formula rounds, huge finite values at the negative integers).

    Example::

        >>> fjax.special.polygamma(1, fjax.tensor([1.0, 0.5]))
        tensor([1.6449, 4.9348], dtype=fjax.float32)
        >>> fjax.special.polygamma(2, fjax.tensor([1.0, 0.0]))
        tensor([-2.4041,    -inf], dtype=fjax.float32)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"special_polygamma: n must be an int, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"special_polygamma: polygamma(n, x) does not support negative n, got n={n}")
    return transcendental.polygamma_values(int(n), _real("special_polygamma", input))


def _check_multigammaln(input, p):
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"special_multigammaln: p must be an int, got {type(p).__name__}")
    if p < 1:
        raise ValueError(f"special_multigammaln: p has to be greater than or equal to 1, got p={p}")
    if not hasattr(input, "dtype") or not jnp.issubdtype(input.dtype, jnp.floating) or input.size == 0:
        return
    ok = jnp.all(input > (p - 1) / 2)
    message = (
        f"special_multigammaln: all elements of the input (shape {tuple(input.shape)}, dtype {input.dtype}) "
        f"must be greater than (p-1)/2 = {(p - 1) / 2}"
    )
    if isinstance(input, jax.core.Tracer):
        from . import indexing

        if indexing.traced_check is not None:
            indexing.traced_check(ok, message + " (checked inside a compiled graph)")
        return
    if not bool(ok):
        raise ValueError(message)


@defop(static=("p",), method=False, check=_check_multigammaln)
def special_multigammaln(input, p):
    """Elementwise log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 * log(pi) + sum_{j < p} lgamma(input - j / 2)``. Every element must exceed ``(p - 1) / 2``.

    Example::

        >>> fjax.special.multigammaln(fjax.tensor([1.0, 2.5]), 2)
        tensor([1.1447, 0.8570], dtype=fjax.float32)
    """
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
        raise ValueError(f"special_multigammaln: p must be an int >= 1, got {p!r}")
    x = _real("special_multigammaln", input)
    offsets = jnp.arange(-p * 0.5 + 0.5, 0.5, 0.5, dtype=x.dtype)  # torch's order of the terms
    terms = lax.lgamma(x[..., None] + offsets)
    return jnp.sum(terms, -1) + jnp.asarray(p * (p - 1) * math.log(math.pi) / 4, x.dtype)


@defop(method=False)
def special_gammainc(input, other):
    """Elementwise regularized lower incomplete gamma function ``P(input, other)``, ``input > 0`` the shape and
    ``other >= 0`` the upper limit; NaN outside. Torch has no gradient for ``input``; fjax gives JAX's.

    Example::

        >>> fjax.special.gammainc(fjax.tensor([1.0, 2.0]), fjax.tensor([1.0, 3.0]))
        tensor([0.6321, 0.8009], dtype=fjax.float32)
    """
    a, x = _real_pair("special_gammainc", input, other)
    return jsp.gammainc(a, x)


@defop(method=False)
def special_gammaincc(input, other):
    """Elementwise regularized upper incomplete gamma function ``Q(input, other) = 1 - P(input, other)``.
    Torch has no gradient for ``input``; fjax gives JAX's.

    Example::

        >>> fjax.special.gammaincc(fjax.tensor([1.0, 2.0]), fjax.tensor([1.0, 3.0]))
        tensor([0.3679, 0.1991], dtype=fjax.float32)
    """
    a, x = _real_pair("special_gammaincc", input, other)
    return jsp.gammaincc(a, x)


# -- torch.* / Tensor aliases of torch.special functions --------------------------------------


@defop()
def i0(input):
    """Elementwise modified Bessel function of the first kind of order 0 (``fjax.special.i0``).

    Example::

        >>> fjax.i0(fjax.tensor([0.0, 1.0]))
        tensor([1.0000, 1.2661], dtype=fjax.float32)
    """
    return special_i0(input)


@defop(static=("n",), method=False)
def polygamma(n, input):
    """Elementwise ``n``-th derivative of the digamma function (``fjax.special.polygamma``); the method
    form is ``x.polygamma(n)``.

    Example::

        >>> fjax.polygamma(1, fjax.tensor([1.0, 0.5]))
        tensor([1.6449, 4.9348], dtype=fjax.float32)
    """
    return special_polygamma(n, input)


@defop(static=("p",), check=_check_multigammaln)
def mvlgamma(input, p):
    """Elementwise log of the multivariate gamma function of dimension ``p`` (``fjax.special.multigammaln``).

    Example::

        >>> fjax.mvlgamma(fjax.tensor([1.0, 2.5]), 2)
        tensor([1.1447, 0.8570], dtype=fjax.float32)
    """
    return special_multigammaln(input, p)


@defop()
def igamma(input, other):
    """Elementwise regularized lower incomplete gamma function (``fjax.special.gammainc``).

    Example::

        >>> fjax.igamma(fjax.tensor([1.0, 2.0]), fjax.tensor([1.0, 3.0]))
        tensor([0.6321, 0.8009], dtype=fjax.float32)
    """
    return special_gammainc(input, other)


@defop()
def igammac(input, other):
    """Elementwise regularized upper incomplete gamma function (``fjax.special.gammaincc``).

    Example::

        >>> fjax.igammac(fjax.tensor([1.0, 2.0]), fjax.tensor([1.0, 3.0]))
        tensor([0.3679, 0.1991], dtype=fjax.float32)
    """
    return special_gammaincc(input, other)
