"""Elementwise arithmetic: pure functions of jax arrays with torch's signatures."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._promote import promote, result_type, to_float
from ._registry import defop


def _scale(op, other, alpha):
    # alpha is a kernel argument (a Python number passed in is traced, so a learning rate that
    # changes compiles nothing new); the default 1 stays a literal and costs nothing.
    if type(alpha) is int and alpha == 1:
        return other
    if jnp.issubdtype(jnp.result_type(alpha), jnp.inexact) and not jnp.issubdtype(other.dtype, jnp.inexact):
        raise TypeError(f"{op}: alpha must not be a float for {other.dtype} tensors")
    return jnp.asarray(alpha).astype(other.dtype) * other


@defop(linear=True)
def add(input, other, *, alpha=1):
    """``input + alpha * other`` with torch's type promotion."""
    input, other = promote(input, other)
    return input + _scale("add", other, alpha)


@defop(linear=True)
def sub(input, other, *, alpha=1):
    """``input - alpha * other``."""
    input, other = promote(input, other)
    return input - _scale("sub", other, alpha)


@defop()
def mul(input, other):
    """Elementwise product."""
    input, other = promote(input, other)
    return input * other


def _integer(x) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, (int, np.integer)) or np.issubdtype(getattr(x, "dtype", np.float32), np.integer)


def _zero_divisor(name):
    """Check: integer division or remainder by zero raises, as torch's (XLA returns garbage)."""

    def check(input, other, *, rounding_mode=None):
        if name == "div" and rounding_mode is None:
            return  # true division of integers is float division: inf, as torch
        if not (_integer(input) and _integer(other)) or isinstance(other, jax.core.Tracer):
            return
        if (other == 0) if isinstance(other, int) else not np.asarray(other).all():
            raise RuntimeError(f"{name}: ZeroDivisionError (integer division by zero)")

    return check


@defop(static=("rounding_mode",), check=_zero_divisor("div"))
def div(input, other, *, rounding_mode=None):
    """True division (integers become float32, as in torch), or floor/trunc rounding."""
    if rounding_mode is None:
        dt = result_type(input, other)
        if not jnp.issubdtype(dt, jnp.inexact):
            dt = jnp.float32
        return jnp.asarray(input, dt) / jnp.asarray(other, dt)
    input, other = promote(input, other)
    integer = jnp.issubdtype(input.dtype, jnp.integer)
    if rounding_mode == "floor":
        return jnp.floor_divide(input, other) if integer else jnp.floor(input / other)
    if rounding_mode == "trunc":
        if integer:
            q = jnp.abs(input) // jnp.abs(other)
            return jnp.where((input < 0) != (other < 0), -q, q)
        return jnp.trunc(input / other)
    raise ValueError(f"div expected rounding_mode None, 'floor' or 'trunc', got {rounding_mode!r}")


@defop(linear=True)
def neg(input):
    """``-input``."""
    return -input


@defop()
def exp(input):
    """``e ** input``."""
    return jnp.exp(to_float(input))


@defop()
def true_divide(input, other):
    """Alias of ``div`` without rounding: integers become float32."""
    return div(input, other)


@defop(differentiable=False, check=_zero_divisor("floor_divide"))
def floor_divide(input, other):
    """``floor(input / other)`` (torch >= 1.13 semantics); torch defines no gradient."""
    return div(input, other, rounding_mode="floor")


@defop(check=_zero_divisor("remainder"))
def remainder(input, other):
    """Python-style modulus: the result has the sign of ``other``."""
    input, other = promote(input, other)
    return jnp.remainder(input, other)


@defop(check=_zero_divisor("fmod"))
def fmod(input, other):
    """C-style modulus: the result has the sign of ``input``."""
    input, other = promote(input, other)
    return jnp.fmod(input, other)


@defop()
def pow(input, exponent):
    """``input ** exponent``; integer ** integer stays integer, as in torch."""
    input, exponent = promote(input, exponent)
    return jnp.power(input, exponent)


@defop()
def float_power(input, exponent):
    """``input ** exponent`` computed in float64."""
    dt = jnp.complex128 if jnp.issubdtype(result_type(input, exponent), jnp.complexfloating) else jnp.float64
    return jnp.power(jnp.asarray(input, dt), jnp.asarray(exponent, dt))


@jax.custom_jvp
def _abs(x):
    return jnp.abs(x)


@_abs.defjvp
def _abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.abs(x), jnp.sign(x) * t  # torch: the gradient at 0 is 0, not 1


@defop()
def abs(input):
    """``|input|``; the gradient at 0 is 0, as in torch."""
    return _abs(input)


@defop()
def sign(input):
    """-1, 0 or 1 with the sign of ``input``; 0 for NaN and -0.0, as in torch."""
    if input.dtype == jnp.bool_:
        return input
    return (input > 0).astype(input.dtype) - (input < 0).astype(input.dtype)


@defop()
def square(input):
    """``input * input`` (integers stay integers)."""
    return input * input


@defop()
def reciprocal(input):
    """``1 / input``; integers become float32."""
    return 1 / to_float(input)


@defop()
def sigmoid(input):
    """``1 / (1 + exp(-input))``."""
    return jax.nn.sigmoid(to_float(input))


@defop()
def logit(input, eps=None):
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when eps is given."""
    x = to_float(input)
    if eps is not None:
        eps = jnp.asarray(eps, x.dtype)
        x = _clamp(x, eps, 1 - eps)
    return jnp.log(x / (1 - x))


@defop()
def floor(input):
    """Round down (integers pass through)."""
    return input if not jnp.issubdtype(input.dtype, jnp.inexact) else jnp.floor(input)


@defop()
def ceil(input):
    """Round up (integers pass through)."""
    return input if not jnp.issubdtype(input.dtype, jnp.inexact) else jnp.ceil(input)


@defop()
def trunc(input):
    """Round towards zero (integers pass through)."""
    return input if not jnp.issubdtype(input.dtype, jnp.inexact) else jnp.trunc(input)


@defop(static=("decimals",))
def round(input, *, decimals=0):
    """Round half to even, to ``decimals`` decimal places (integers pass through)."""
    if not jnp.issubdtype(input.dtype, jnp.inexact):
        return input
    if decimals == 0:
        return jnp.round(input)
    if decimals > 0:
        scale = 10.0**decimals
        return jnp.round(input * scale) / scale
    scale = 10.0**-decimals
    return jnp.round(input / scale) * scale


@defop()
def frac(input):
    """``input - trunc(input)``: the fractional part, with the sign of ``input``."""
    if not jnp.issubdtype(input.dtype, jnp.inexact):
        raise TypeError(f"frac: expected a floating point tensor, got {input.dtype}")
    return input - jnp.trunc(input)


def _clamp(x, lo, hi):
    """``min(max(x, lo), hi)`` with torch's gradients: ``x`` gets it on ``lo <= x <= hi``, ``lo``
    where ``x < lo < hi``, ``hi`` where ``x > hi`` or ``lo > hi``, and nobody where ``x < lo == hi``."""
    if hi is None:
        out = jnp.where(x < lo, lo, x)
    elif lo is None:
        out = jnp.where(x > hi, hi, x)
    else:
        below = jnp.where(lo < hi, lo, lax.stop_gradient(lo))
        out = jnp.where((x > hi) | (lo > hi), hi, jnp.where(x < lo, below, x))
    if jnp.issubdtype(out.dtype, jnp.inexact):  # a NaN bound gives NaN, as torch's
        for bound in (lo, hi):
            if bound is not None and not isinstance(bound, (int, float)):
                out = jnp.where(jnp.isnan(bound), bound, out)
    return out


@defop()
def clamp(input, min=None, max=None):
    """Clamp to ``[min, max]`` (scalars or tensors, either may be None); ``max`` wins if min > max."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")
    input, min, max = promote(input, min, max)
    return _clamp(input, min, max)


clip = defop("clip")(clamp)


@defop()
def clamp_min(input, min):
    """``max(input, min)``; the gradient reaches ``input`` where ``input >= min``."""
    input, min = promote(input, min)
    return _clamp(input, min, None)


@defop()
def clamp_max(input, max):
    """``min(input, max)``; the gradient reaches ``input`` where ``input <= max``."""
    input, max = promote(input, max)
    return _clamp(input, None, max)


@defop()
def maximum(input, other):
    """Elementwise max, propagating NaN; ties split the gradient in half, as in torch."""
    input, other = promote(input, other)
    return jnp.maximum(input, other)


@defop()
def minimum(input, other):
    """Elementwise min, propagating NaN; ties split the gradient in half, as in torch."""
    input, other = promote(input, other)
    return jnp.minimum(input, other)


@defop()
def fmax(input, other):
    """Elementwise max ignoring NaN; ties send the gradient to ``input``, as in torch."""
    input, other = promote(input, other)
    return jnp.where((input >= other) | jnp.isnan(other), input, other)


@defop()
def fmin(input, other):
    """Elementwise min ignoring NaN; ties send the gradient to ``input``, as in torch."""
    input, other = promote(input, other)
    return jnp.where((input <= other) | jnp.isnan(other), input, other)


@defop()
def lerp(input, end, weight):
    """``input + weight * (end - input)``, evaluated as torch does for accuracy near weight 1."""
    input, end, weight = promote(input, end, weight)
    diff = end - input
    return jnp.where(jnp.abs(weight) < 0.5, input + weight * diff, end - diff * (1 - weight))


def _scalar(value):
    # A default left as a Python number becomes a weak 0-d array, as a passed one does.
    return jnp.asarray(value) if isinstance(value, (int, float)) else value


@defop()
def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``."""
    input, tensor1, tensor2, value = promote(input, tensor1, tensor2, _scalar(value))
    return input + value * tensor1 * tensor2


@defop()
def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``."""
    if not (jnp.issubdtype(tensor1.dtype, jnp.inexact) or jnp.issubdtype(tensor2.dtype, jnp.inexact)):
        raise TypeError(
            f"addcdiv: integer division is not supported, got tensor1 {tensor1.dtype} "
            f"and tensor2 {tensor2.dtype}; use addcmul(input, tensor1, 1 / tensor2)"
        )
    input, tensor1, tensor2, value = promote(input, tensor1, tensor2, _scalar(value))
    return input + value * tensor1 / tensor2


@defop()
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """Replace NaN, +inf and -inf by ``nan``, ``posinf`` and ``neginf`` (default: dtype max/min)."""
    if not jnp.issubdtype(input.dtype, jnp.inexact):
        return input
    info = jnp.finfo(input.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = jnp.where(jnp.isnan(input), jnp.asarray(nan, input.dtype), input)
    out = jnp.where(input == jnp.inf, jnp.asarray(posinf, input.dtype), out)
    return jnp.where(input == -jnp.inf, jnp.asarray(neginf, input.dtype), out)


@defop()
def copysign(input, other):
    """``|input|`` with the sign of ``other``; the gradient at ``input == 0`` is 0, as in torch."""
    input, other = promote(input, other)
    input, other = to_float(input), to_float(other)
    return jnp.where(jnp.signbit(other), -_abs(input), _abs(input))
