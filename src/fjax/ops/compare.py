"""Comparisons, predicates, logical and bitwise ops, and ``where``."""

from __future__ import annotations

import jax.numpy as jnp

from ._promote import DEFAULT_FLOAT, promote
from ._registry import defop


@defop(differentiable=False)
def eq(input, other):
    """``input == other`` after type promotion."""
    input, other = promote(input, other)
    return input == other


@defop(differentiable=False)
def ne(input, other):
    """``input != other`` after type promotion."""
    input, other = promote(input, other)
    return input != other


@defop(differentiable=False)
def lt(input, other):
    """``input < other`` after type promotion."""
    input, other = promote(input, other)
    return input < other


@defop(differentiable=False)
def le(input, other):
    """``input <= other`` after type promotion."""
    input, other = promote(input, other)
    return input <= other


@defop(differentiable=False)
def gt(input, other):
    """``input > other`` after type promotion."""
    input, other = promote(input, other)
    return input > other


@defop(differentiable=False)
def ge(input, other):
    """``input >= other`` after type promotion."""
    input, other = promote(input, other)
    return input >= other


@defop(differentiable=False)
def isnan(input):
    """True where ``input`` is NaN."""
    return jnp.isnan(input)


@defop(differentiable=False)
def isinf(input):
    """True where ``input`` is +inf or -inf."""
    return jnp.isinf(input)


@defop(differentiable=False)
def isposinf(input):
    """True where ``input`` is +inf."""
    return jnp.isposinf(input)


@defop(differentiable=False)
def isneginf(input):
    """True where ``input`` is -inf."""
    return jnp.isneginf(input)


@defop(differentiable=False)
def isfinite(input):
    """True where ``input`` is neither NaN nor infinite."""
    return jnp.isfinite(input)


@defop(differentiable=False)
def signbit(input):
    """True where the sign bit is set (including -0.0)."""
    return jnp.signbit(input)


@defop(static=("rtol", "atol", "equal_nan"), differentiable=False)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|``, or exactly equal (torch's rule)."""
    if input.dtype != other.dtype:
        raise TypeError(f"isclose: expected tensors of one dtype, got {input.dtype} and {other.dtype}")
    close = input == other
    if equal_nan:
        close = close | (jnp.isnan(input) & jnp.isnan(other))
    if rtol == 0 and atol == 0:
        return close
    if not jnp.issubdtype(input.dtype, jnp.inexact):
        input, other = input.astype(DEFAULT_FLOAT), other.astype(DEFAULT_FLOAT)
    error = jnp.abs(input - other)
    return close | (jnp.isfinite(error) & (error <= atol + jnp.abs(rtol * other)))


@defop(differentiable=False)
def logical_and(input, other):
    """Elementwise AND of the truth values (nonzero is True)."""
    return jnp.logical_and(input, other)


@defop(differentiable=False)
def logical_or(input, other):
    """Elementwise OR of the truth values."""
    return jnp.logical_or(input, other)


@defop(differentiable=False)
def logical_xor(input, other):
    """Elementwise XOR of the truth values."""
    return jnp.logical_xor(input, other)


@defop(differentiable=False)
def logical_not(input):
    """Elementwise NOT of the truth values."""
    return jnp.logical_not(input)


def _integral(op, *xs):
    xs = promote(*xs)
    if jnp.issubdtype(xs[0].dtype, jnp.inexact):
        dtypes = ", ".join(str(x.dtype) for x in xs)
        raise TypeError(f"{op}: expected integer or bool tensors, got {dtypes}")
    return xs


@defop(differentiable=False)
def bitwise_and(input, other):
    """Bitwise AND of integer or bool tensors."""
    return jnp.bitwise_and(*_integral("bitwise_and", input, other))


@defop(differentiable=False)
def bitwise_or(input, other):
    """Bitwise OR of integer or bool tensors."""
    return jnp.bitwise_or(*_integral("bitwise_or", input, other))


@defop(differentiable=False)
def bitwise_xor(input, other):
    """Bitwise XOR of integer or bool tensors."""
    return jnp.bitwise_xor(*_integral("bitwise_xor", input, other))


@defop(differentiable=False)
def bitwise_not(input):
    """Bitwise NOT of an integer tensor; logical NOT of a bool tensor."""
    return jnp.invert(*_integral("bitwise_not", input))


@defop(method=False)
def where(condition, input, other):
    """``input`` where ``condition`` holds, else ``other``; differentiable in both.

    Not a Tensor method here: torch's ``x.where(condition, y)`` puts ``x`` second.
    The one-argument form ``where(condition)`` (nonzero indices) has a data-dependent
    shape and is not supported.
    """
    if condition.dtype != jnp.bool_:
        raise TypeError(f"where: expected a bool condition, got {condition.dtype}")
    input, other = promote(input, other)
    return jnp.where(condition, input, other)
