"""The ops behind ``fjax.special`` that fjax has no top-level op for (``erf``, ``digamma``, ``logit`` ...
are aliased by ``fjax/special.py``). They are registered as ``special_<name>``, torch's native names,
elementwise, and are not Tensor methods. Integer and bool inputs are computed in float32, as in torch.
"""

from __future__ import annotations

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


# -- Bessel functions of the first kind -----------------------------------------------------------
# JAX's bessel_jn (backward recurrence) loses up to 0.4 in float32, so J0 and J1 are evaluated here in
# float64: the power series below |x| = 12 (cancellation among its terms costs up to ~1e-12 there) and
# Hankel's asymptotic expansion above, cut at its 24th term, near the smallest at |x| = 12. Both stay
# within ~1e-12 of the true values.

_SWITCH = 12.0
_SERIES_TERMS = 45
_HANKEL_TERMS = 12


def _hankel_coefficients(nu):
    """a_k(nu) = prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! 8^k), k < 2 * _HANKEL_TERMS."""
    out, a = [], 1.0
    for k in range(2 * _HANKEL_TERMS):
        if k:
            a *= (4 * nu * nu - (2 * k - 1) ** 2) / (8 * k)
        out.append(a)
    return out


_HANKEL = {0: _hankel_coefficients(0), 1: _hankel_coefficients(1)}


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
    # J_nu(x) = sqrt(2 / (pi x)) (P cos w - Q sin w), w = x - nu pi / 2 - pi / 4
    xl = jnp.where(near, _SWITCH, ax)
    z2 = 1.0 / (xl * xl)
    a = _HANKEL[nu]
    p = jnp.zeros_like(xl)
    q = jnp.zeros_like(xl)
    for k in range(_HANKEL_TERMS - 1, -1, -1):
        p = p * z2 + (-1) ** k * a[2 * k]
        q = q * z2 + (-1) ** k * a[2 * k + 1]
    q = q / xl
    s, c = jnp.sin(xl), jnp.cos(xl)
    cos_w, sin_w = (c + s, s - c) if nu == 0 else (s - c, -s - c)  # times sqrt(2), folded in below
    far = jnp.sqrt(1.0 / (math.pi * xl)) * (p * cos_w - q * sin_w)
    out = jnp.where(near, series, far)
    if nu == 1:
        out = jnp.where(x < 0, -out, out)
    return jnp.where(jnp.isnan(x), jnp.nan, out).astype(dtype)


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


def _trigamma(x):
    """polygamma(1, x): below 0.5 by the reflection ``pi^2 / sin^2(pi x) - polygamma(1, 1 - x)``, as torch, so
    that the negative integers give the same huge finite values (sin(pi x) rounds away from 0 there)."""
    pi = jnp.asarray(math.pi, x.dtype)
    left = x < 0.5
    right = jsp.polygamma(jnp.asarray(1, jnp.int32), jnp.where(left, 1 - x, x))
    sin = jnp.sin(pi * x)
    out = jnp.where(left, pi * pi / (sin * sin) - right, right)
    return jnp.where(x == jnp.inf, jnp.zeros_like(x), out)


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
    x = _real("special_polygamma", input)
    if n == 0:
        return transcendental.digamma(x)
    if n == 1:
        return _trigamma(x)
    out = jsp.polygamma(jnp.asarray(n, jnp.int32), x)
    pole = (x <= 0) & (x == jnp.floor(x))  # torch: (-1)^(n+1) n! zeta(n + 1, pole) = +-inf
    return jnp.where(pole, jnp.asarray(jnp.inf if n % 2 else -jnp.inf, x.dtype), out)


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
