"""Comparisons, predicates, logical and bitwise ops, and ``where``."""

from __future__ import annotations

import jax.numpy as jnp

from ._promote import DEFAULT_FLOAT, promote
from ._registry import defop


@defop(differentiable=False)
def eq(input, other):
    """Elementwise ``input == other`` as a bool tensor.

    ``other`` may be a tensor or a Python number; the operands broadcast, and are compared after
    torch's type promotion (an int64 tensor and a float32 one are compared in float32). Any comparison
    with NaN is False, except ``!=``, which is True.

    Example::

        >>> fjax.eq(fjax.tensor([1, 2, 3]), fjax.tensor([1.0, 0.0, 3.0]))
        tensor([ True, False,  True], dtype=fjax.bool)
        >>> fjax.eq(fjax.tensor([float("nan")]), fjax.tensor([float("nan")]))
        tensor([False], dtype=fjax.bool)
    """
    input, other = promote(input, other)
    return input == other


@defop(differentiable=False)
def ne(input, other):
    """Elementwise ``input != other`` as a bool tensor.

    ``other`` may be a tensor or a Python number; the operands broadcast, and are compared after
    torch's type promotion (an int64 tensor and a float32 one are compared in float32). Any comparison
    with NaN is False, except ``!=``, which is True.

    Example::

        >>> fjax.ne(fjax.tensor([1, 2, 3]), 2)
        tensor([ True, False,  True], dtype=fjax.bool)
        >>> fjax.ne(fjax.tensor([float("nan")]), fjax.tensor([float("nan")]))
        tensor([ True], dtype=fjax.bool)
    """
    input, other = promote(input, other)
    return input != other


@defop(differentiable=False)
def lt(input, other):
    """Elementwise ``input < other`` as a bool tensor.

    ``other`` may be a tensor or a Python number; the operands broadcast, and are compared after
    torch's type promotion (an int64 tensor and a float32 one are compared in float32). Any comparison
    with NaN is False, except ``!=``, which is True.

    Example::

        >>> fjax.lt(fjax.tensor([1, 2, 3]), 2)
        tensor([ True, False, False], dtype=fjax.bool)
        >>> fjax.lt(fjax.tensor([[1], [3]]), fjax.tensor([2, 4]))
        tensor([[ True,  True],
                [False,  True]], dtype=fjax.bool)
    """
    input, other = promote(input, other)
    return input < other


@defop(differentiable=False)
def le(input, other):
    """Elementwise ``input <= other`` as a bool tensor.

    ``other`` may be a tensor or a Python number; the operands broadcast, and are compared after
    torch's type promotion (an int64 tensor and a float32 one are compared in float32). Any comparison
    with NaN is False, except ``!=``, which is True.

    Example::

        >>> fjax.le(fjax.tensor([1, 2, 3]), 2)
        tensor([ True,  True, False], dtype=fjax.bool)
        >>> fjax.le(fjax.tensor([1.0, float("nan")]), 5.0)
        tensor([ True, False], dtype=fjax.bool)
    """
    input, other = promote(input, other)
    return input <= other


@defop(differentiable=False)
def gt(input, other):
    """Elementwise ``input > other`` as a bool tensor.

    ``other`` may be a tensor or a Python number; the operands broadcast, and are compared after
    torch's type promotion (an int64 tensor and a float32 one are compared in float32). Any comparison
    with NaN is False, except ``!=``, which is True.

    Example::

        >>> fjax.gt(fjax.tensor([1, 2, 3]), 2)
        tensor([False, False,  True], dtype=fjax.bool)
        >>> fjax.gt(fjax.tensor([0.5, 1.5]), fjax.tensor([1]))
        tensor([False,  True], dtype=fjax.bool)
    """
    input, other = promote(input, other)
    return input > other


@defop(differentiable=False)
def ge(input, other):
    """Elementwise ``input >= other`` as a bool tensor.

    ``other`` may be a tensor or a Python number; the operands broadcast, and are compared after
    torch's type promotion (an int64 tensor and a float32 one are compared in float32). Any comparison
    with NaN is False, except ``!=``, which is True.

    Example::

        >>> fjax.ge(fjax.tensor([1, 2, 3]), 2)
        tensor([False,  True,  True], dtype=fjax.bool)
        >>> fjax.tensor([1.0, float("nan")]).ge(0.0)
        tensor([ True, False], dtype=fjax.bool)
    """
    input, other = promote(input, other)
    return input >= other


@defop(differentiable=False)
def isnan(input):
    """Elementwise test for NaN, as a bool tensor of the input's shape.

    Integer and bool tensors cannot hold NaN and give all False.

    Example::

        >>> fjax.isnan(fjax.tensor([1.0, float("nan"), float("inf")]))
        tensor([False,  True, False], dtype=fjax.bool)
    """
    return jnp.isnan(input)


@defop(differentiable=False)
def isinf(input):
    """Elementwise test for positive or negative infinity, as a bool tensor. NaN is not infinite.

    Example::

        >>> fjax.isinf(fjax.tensor([1.0, float("inf"), -float("inf"), float("nan")]))
        tensor([False,  True,  True, False], dtype=fjax.bool)
    """
    return jnp.isinf(input)


@defop(differentiable=False)
def isposinf(input):
    """Elementwise test for positive infinity, as a bool tensor.

    Example::

        >>> fjax.isposinf(fjax.tensor([1.0, float("inf"), -float("inf")]))
        tensor([False,  True, False], dtype=fjax.bool)
    """
    return jnp.isposinf(input)


@defop(differentiable=False)
def isneginf(input):
    """Elementwise test for negative infinity, as a bool tensor.

    Example::

        >>> fjax.isneginf(fjax.tensor([1.0, float("inf"), -float("inf")]))
        tensor([False, False,  True], dtype=fjax.bool)
    """
    return jnp.isneginf(input)


@defop(differentiable=False)
def isfinite(input):
    """Elementwise test for finite values (neither NaN nor infinite), as a bool tensor.

    Integer and bool tensors are always finite.

    Example::

        >>> fjax.isfinite(fjax.tensor([1.0, float("nan"), float("inf"), -float("inf")]))
        tensor([ True, False, False, False], dtype=fjax.bool)
        >>> fjax.isfinite(fjax.tensor([1, 2]))
        tensor([ True,  True], dtype=fjax.bool)
    """
    return jnp.isfinite(input)


@defop(differentiable=False)
def signbit(input):
    """Elementwise test of the sign bit, as a bool tensor: True for negative values, and also for
    -0.0, which compares equal to 0.0 but keeps its sign.

    Example::

        >>> fjax.signbit(fjax.tensor([-1.0, -0.0, 0.0, 2.0]))
        tensor([ True,  True, False, False], dtype=fjax.bool)
    """
    return jnp.signbit(input)


@defop(static=("rtol", "atol", "equal_nan"), differentiable=False)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise test that ``input`` and ``other`` are close, as a bool tensor: equal, or
    ``|input - other| <= atol + rtol * |other|`` (the rule is not symmetric, as in torch).

    Both tensors must have the same dtype; they broadcast. Infinities are close only to an equal
    infinity, and NaN is close to nothing unless ``equal_nan=True``, which makes two NaNs close.

    Example::

        >>> nan = float("nan")
        >>> a, b = fjax.tensor([1.0, 1.0, nan]), fjax.tensor([1.000001, 1.1, nan])
        >>> fjax.isclose(a, b)
        tensor([ True, False, False], dtype=fjax.bool)
        >>> fjax.isclose(a, b, atol=0.2, equal_nan=True)
        tensor([ True,  True,  True], dtype=fjax.bool)
    """
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
    """Elementwise logical AND, as a bool tensor.

    Inputs of any dtype are read as truth values (nonzero is True) and broadcast together.

    Example::

        >>> fjax.logical_and(fjax.tensor([0, 1, 2]), fjax.tensor([1.0, 1.0, 0.0]))
        tensor([False,  True, False], dtype=fjax.bool)
    """
    return jnp.logical_and(input, other)


@defop(differentiable=False)
def logical_or(input, other):
    """Elementwise logical OR, as a bool tensor.

    Inputs of any dtype are read as truth values (nonzero is True) and broadcast together.

    Example::

        >>> fjax.logical_or(fjax.tensor([0, 0, 3]), fjax.tensor([False, True, False]))
        tensor([False,  True,  True], dtype=fjax.bool)
    """
    return jnp.logical_or(input, other)


@defop(differentiable=False)
def logical_xor(input, other):
    """Elementwise logical exclusive OR, as a bool tensor: True where exactly one input is nonzero.

    Inputs of any dtype are read as truth values and broadcast together.

    Example::

        >>> fjax.logical_xor(fjax.tensor([0, 1, 2]), fjax.tensor([1, 1, 0]))
        tensor([ True, False,  True], dtype=fjax.bool)
    """
    return jnp.logical_xor(input, other)


@defop(differentiable=False)
def logical_not(input):
    """Elementwise logical NOT, as a bool tensor: True where ``input`` is zero.

    Example::

        >>> fjax.logical_not(fjax.tensor([0.0, 1.5, -2.0]))
        tensor([ True, False, False], dtype=fjax.bool)
    """
    return jnp.logical_not(input)


def _integral(op, *xs):
    xs = promote(*xs)
    if jnp.issubdtype(xs[0].dtype, jnp.inexact):
        dtypes = ", ".join(str(x.dtype) for x in xs)
        raise TypeError(f"{op}: expected integer or bool tensors, got {dtypes}")
    return xs


@defop(differentiable=False)
def bitwise_and(input, other):
    """Elementwise bitwise AND of integer or bool tensors (logical AND for bools).

    The operands broadcast and promote; floating point inputs raise a TypeError.

    Example::

        >>> fjax.bitwise_and(fjax.tensor([12, 10]), fjax.tensor([10, 6]))
        tensor([8, 2], dtype=fjax.int64)
        >>> fjax.bitwise_and(fjax.tensor([True, False]), True)
        tensor([ True, False], dtype=fjax.bool)
    """
    return jnp.bitwise_and(*_integral("bitwise_and", input, other))


@defop(differentiable=False)
def bitwise_or(input, other):
    """Elementwise bitwise OR of integer or bool tensors (logical OR for bools).

    The operands broadcast and promote; floating point inputs raise a TypeError.

    Example::

        >>> fjax.bitwise_or(fjax.tensor([12, 10]), fjax.tensor([10, 6]))
        tensor([14, 14], dtype=fjax.int64)
    """
    return jnp.bitwise_or(*_integral("bitwise_or", input, other))


@defop(differentiable=False)
def bitwise_xor(input, other):
    """Elementwise bitwise XOR of integer or bool tensors (logical XOR for bools).

    The operands broadcast and promote; floating point inputs raise a TypeError.

    Example::

        >>> fjax.bitwise_xor(fjax.tensor([12, 10]), fjax.tensor([10, 6]))
        tensor([ 6, 12], dtype=fjax.int64)
    """
    return jnp.bitwise_xor(*_integral("bitwise_xor", input, other))


@defop(differentiable=False)
def bitwise_not(input):
    """Elementwise bitwise NOT of an integer tensor (``~x == -x - 1`` in two's complement), or
    logical NOT of a bool tensor. Floating point inputs raise a TypeError.

    Example::

        >>> fjax.bitwise_not(fjax.tensor([0, 5, -1]))
        tensor([-1, -6,  0], dtype=fjax.int64)
        >>> fjax.bitwise_not(fjax.tensor([True, False]))
        tensor([False,  True], dtype=fjax.bool)
    """
    return jnp.invert(*_integral("bitwise_not", input))


@defop(method=False)
def where(condition, input, other):
    """Elementwise choice: ``input`` where ``condition`` is True, ``other`` where it is False.

    ``condition`` must be a bool tensor; it broadcasts with ``input`` and ``other`` (either of which
    may be a Python number), and the result takes their promoted dtype. The gradient reaches
    ``input`` where the condition holds and ``other`` where it does not.

    Not a Tensor method here: torch's ``x.where(condition, y)`` puts ``x`` second.
    The one-argument form ``where(condition)`` (nonzero indices) has a data-dependent
    shape and is not supported.

    Example::

        >>> x = fjax.tensor([-1.0, 2.0, -3.0])
        >>> fjax.where(x > 0, x, 0.0)
        tensor([0., 2., 0.], dtype=fjax.float32)
        >>> fjax.where(fjax.tensor([[True], [False]]), fjax.tensor([1, 2]), fjax.tensor([10, 20]))
        tensor([[ 1,  2],
                [10, 20]], dtype=fjax.int64)
    """
    if condition.dtype != jnp.bool_:
        raise TypeError(f"where: expected a bool condition, got {condition.dtype}")
    input, other = promote(input, other)
    return jnp.where(condition, input, other)
