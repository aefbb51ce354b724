"""Comparisons, predicates, logical and bitwise ops, and ``where``."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from . import _promote
from ._promote import promote, result_type
from ._registry import ELEMENTWISE, Rows, defop


@defop(differentiable=False, rows=ELEMENTWISE)
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


@defop(differentiable=False, aliases=("not_equal",), rows=ELEMENTWISE)
def ne(input, other):
    """Elementwise ``input != other`` as a bool tensor.

    ``other`` may be a tensor or a Python number; the operands broadcast, and are compared after
    torch's type promotion (an int64 tensor and a float32 one are compared in float32). Any comparison
    with NaN is False, except ``!=``, which is True.

    Example::

        >>> fjax.ne(fjax.tensor([1, 2, 3]), 2)
        tensor([ True, False,  True], dtype=fjax.bool)
        >>> fjax.ne(fjax.tensor([float("nan")]), fjax.tensor([float("nan")]))
        tensor([True], dtype=fjax.bool)
    """
    input, other = promote(input, other)
    return input != other


@defop(differentiable=False, aliases=("less",), rows=ELEMENTWISE)
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


@defop(differentiable=False, aliases=("less_equal",), rows=ELEMENTWISE)
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


@defop(differentiable=False, aliases=("greater",), rows=ELEMENTWISE)
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


@defop(differentiable=False, aliases=("greater_equal",), rows=ELEMENTWISE)
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
        tensor([True, True], dtype=fjax.bool)
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
        tensor([True, True, True], dtype=fjax.bool)
    """
    if input.dtype != other.dtype:
        raise TypeError(f"isclose: expected tensors of one dtype, got {input.dtype} and {other.dtype}")
    close = input == other
    if equal_nan:
        close = close | (jnp.isnan(input) & jnp.isnan(other))
    if rtol == 0 and atol == 0:
        return close
    if not jnp.issubdtype(input.dtype, jnp.inexact):
        input, other = input.astype(_promote.DEFAULT_FLOAT), other.astype(_promote.DEFAULT_FLOAT)
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


def _shift_operands(op, input, other):
    dt = result_type(input, other)
    if not jnp.issubdtype(dt, jnp.integer):  # torch has no bool or floating shift kernel
        raise NotImplementedError(f"{op}: not implemented for {dt} (expected integer tensors)")
    return promote(input, other)


@defop(differentiable=False)
def bitwise_left_shift(input, other):
    """Elementwise ``input << other`` of integer tensors: the bits of ``input`` moved left by ``other``,
    the result wrapping at the dtype's width as in torch (a shift by a negative amount or by at least
    the width gives 0).

    Args:
        input: an integer tensor.
        other: the shift amounts, an integer tensor or number that broadcasts with ``input``.

    Example::

        >>> fjax.bitwise_left_shift(fjax.tensor([1, 3]), fjax.tensor([2, 1]))
        tensor([4, 6], dtype=fjax.int64)
        >>> fjax.tensor([-1, 64], dtype=fjax.int8) << 1
        tensor([  -2, -128], dtype=fjax.int8)
    """
    return jnp.left_shift(*_shift_operands("bitwise_left_shift", input, other))


@defop(differentiable=False)
def bitwise_right_shift(input, other):
    """Elementwise ``input >> other`` of integer tensors: arithmetic (sign-filling) for signed dtypes,
    logical for unsigned ones; a shift by a negative amount or by at least the width gives 0 (-1 for a
    negative ``input``), as in torch.

    Args:
        input: an integer tensor.
        other: the shift amounts, an integer tensor or number that broadcasts with ``input``.

    Example::

        >>> fjax.bitwise_right_shift(fjax.tensor([16, -16]), 2)
        tensor([ 4, -4], dtype=fjax.int64)
    """
    return jnp.right_shift(*_shift_operands("bitwise_right_shift", input, other))


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


@defop(
    method=False,
    keyword_aliases={"x": "input", "y": "other"},
    rows=Rows(("condition", "input", "other"), broadcast=True),
)
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


# ----------------------------------------------------------------------------- sorted lookups


def _side(name, right, side):
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise ValueError(f"{name}: side must be 'left' or 'right', got {side!r}")
    if right and side == "left":
        raise ValueError(f"{name}: side='left' and right=True contradict each other")
    return side


def _search(name, seq, values, side, out_int32):
    seq, values = promote(seq, values)
    out = jnp.int32 if out_int32 else jnp.int64
    if seq.ndim == 0:
        raise ValueError(f"{name}: the sorted sequence must have at least one dim")
    if seq.ndim == 1:
        return jnp.searchsorted(seq, values, side=side).astype(out)
    if values.ndim != seq.ndim or values.shape[:-1] != seq.shape[:-1]:
        raise ValueError(
            f"{name}: the leading dims of the sorted sequence {seq.shape} and of the values {values.shape} must match"
        )
    flat = jax.vmap(lambda s, v: jnp.searchsorted(s, v, side=side))(
        seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
    )
    return flat.reshape(values.shape).astype(out)


@defop(static=("out_int32", "right", "side"), differentiable=False, method=False)
def searchsorted(sorted_sequence, values=None, *, out_int32=False, right=False, side=None, sorter=None, input=None):
    """Where each of ``values`` would go in ``sorted_sequence`` (sorted along its last dim) to keep it
    sorted: the first such index, or with ``right=True`` / ``side='right'`` the last one. A 1-D sequence
    serves values of any shape; an N-D one is searched row by row, its leading dims matching the values'.
    ``sorter`` gives indices that sort an unsorted sequence; ``input=`` is accepted for ``values``, as
    torch's keyword. The result is int64, or int32 with ``out_int32=True``.

    Example::

        >>> seq = fjax.tensor([1.0, 3.0, 5.0, 7.0])
        >>> fjax.searchsorted(seq, fjax.tensor([3.0, 6.0, 9.0]))
        tensor([1, 3, 4], dtype=fjax.int64)
        >>> fjax.searchsorted(seq, fjax.tensor([3.0]), right=True)
        tensor([2], dtype=fjax.int64)
        >>> fjax.searchsorted(fjax.tensor([[1, 3], [2, 4]]), fjax.tensor([[2], [2]]), side="right")
        tensor([[1],
                [1]], dtype=fjax.int64)
    """
    if (values is None) == (input is None):
        raise TypeError("searchsorted: expected the values to look up, as the second argument or input=")
    values = input if values is None else values
    if sorter is not None:
        sorted_sequence = jnp.take_along_axis(sorted_sequence, sorter, axis=-1)
    return _search("searchsorted", sorted_sequence, values, _side("searchsorted", right, side), out_int32)


@defop(static=("out_int32", "right"), differentiable=False, method=False)
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each element of ``input`` among the sorted 1-D ``boundaries``: index ``i`` with
    ``boundaries[i-1] < x <= boundaries[i]``, or with ``right=True`` ``boundaries[i-1] <= x < boundaries[i]``.
    Elements below the first boundary get 0, above the last ``len(boundaries)``. The result is int64, or
    int32 with ``out_int32=True``.

    Example::

        >>> b = fjax.tensor([1, 3, 5])
        >>> fjax.bucketize(fjax.tensor([[0, 3], [4, 9]]), b)
        tensor([[0, 1],
                [2, 3]], dtype=fjax.int64)
        >>> fjax.bucketize(fjax.tensor([3]), b, right=True)
        tensor([2], dtype=fjax.int64)
    """
    if jnp.ndim(boundaries) != 1:
        raise ValueError(f"bucketize: boundaries must be 1-D, got shape {jnp.shape(boundaries)}")
    return _search("bucketize", boundaries, input, "right" if right else "left", out_int32)


@defop(static=("assume_unique", "invert"), differentiable=False, method=False)
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of ``elements`` occurs among ``test_elements`` (of any shape), as a bool tensor of
    ``elements``' shape; ``invert=True`` asks whether it does not. Either argument may be a Python
    number, the two promote to a common dtype before comparing, and NaN matches nothing.
    ``assume_unique`` is accepted for torch's signature; the answer does not depend on it.

    Example::

        >>> fjax.isin(fjax.tensor([[1, 2], [3, 4]]), fjax.tensor([2, 3]))
        tensor([[False,  True],
                [ True, False]], dtype=fjax.bool)
        >>> fjax.isin(fjax.tensor([1.0, 2.5]), 2.5, invert=True)
        tensor([ True, False], dtype=fjax.bool)
    """
    elements, test_elements = promote(elements, test_elements)
    elements = jnp.asarray(elements)
    test = jnp.ravel(test_elements)
    if test.size == 0:
        found = jnp.zeros(elements.shape, jnp.bool_)
    else:
        test = jnp.sort(test)
        pos = jnp.clip(jnp.searchsorted(test, elements), 0, test.size - 1)
        found = test[pos] == elements
    return ~found if invert else found
