"""Elementwise arithmetic: pure functions of jax arrays with torch's signatures."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..errors import OpError
from . import _promote, _saving
from ._promote import promote, result_type, to_float
from ._registry import ELEMENTWISE, Rows, defop


def _scale(op, other, alpha):
    # alpha is a kernel argument (a Python number passed in is traced, so a learning rate that
    # changes compiles nothing new); the default 1 stays a literal and costs nothing.
    if type(alpha) is int and alpha == 1:
        return other
    if not isinstance(alpha, (jax.Array, np.ndarray, np.generic, int, float, complex)):
        raise TypeError(f"{op}(): argument 'alpha' must be Number, not {type(alpha).__name__}")
    _check_alpha_kind(op, other.dtype, jnp.result_type(alpha))
    return jnp.asarray(alpha).astype(other.dtype) * other


def _check_alpha_kind(op, dtype, kind):
    """torch's ``alpha_check`` on the result dtype ``dtype`` and alpha's dtype ``kind``, in its order:
    a bool alpha only for bool results, a float (or complex) one not for integer or bool results, a
    complex one only for complex results (``OpError``: a RuntimeError as torch). ``alpha`` is then
    cast to ``dtype`` (integers wrap)."""
    dtype, kind = np.dtype(dtype), np.dtype(kind)  # not .kind: bfloat16's is "V"
    inexact, complex_ = jnp.issubdtype(dtype, jnp.inexact), jnp.issubdtype(dtype, jnp.complexfloating)
    if kind == np.bool_ and dtype != np.bool_:
        raise OpError(f"{op}: Boolean alpha only supported for Boolean results (the result is {dtype}).")
    if jnp.issubdtype(kind, jnp.inexact) and not inexact:
        raise OpError(
            f"{op}: For integral input tensors, argument alpha must not be a floating point number "
            f"(got a {'complex' if jnp.issubdtype(kind, jnp.complexfloating) else 'float'} alpha for a {dtype} result)."
        )
    if jnp.issubdtype(kind, jnp.complexfloating) and not complex_:
        raise OpError(
            f"{op}: For non-complex input tensors, argument alpha must not be a complex number (the result is {dtype})."
        )


@defop(linear=True, rows=ELEMENTWISE)
def add(input, other, *, alpha=1):
    """Elementwise ``input + alpha * other``.

    ``other`` may be a tensor or a Python number; the two broadcast against each other and the
    result takes torch's promoted dtype (an int64 tensor plus a float32 one gives float32, while a
    Python float only lifts integer tensors to the default float). ``alpha`` scales ``other`` first;
    it must be an integer when both operands are integers.

    Example::

        >>> a = fjax.tensor([1, 2, 3])
        >>> fjax.add(a, fjax.tensor([0.5]))
        tensor([1.5000, 2.5000, 3.5000], dtype=fjax.float32)
        >>> fjax.add(a, fjax.tensor([1, 1, 1]), alpha=10)
        tensor([11, 12, 13], dtype=fjax.int64)
        >>> a.add(2.5)
        tensor([3.5000, 4.5000, 5.5000], dtype=fjax.float32)
    """
    input, other = promote(input, other)
    return input + _scale("add", other, alpha)


def _is_bool(x) -> bool:
    return isinstance(x, (bool, np.bool_)) or getattr(x, "dtype", None) == np.bool_


def _no_bool_sub(op, input, other):
    """torch refuses subtraction with a bool operand (a tensor or a Python bool)."""
    if _is_bool(input) and _is_bool(other):
        raise RuntimeError(
            f"{op}: Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    if _is_bool(input) or _is_bool(other):
        raise RuntimeError(
            f"{op}: Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def _no_bool(op, *xs):
    """torch's integer-only kernels (floor/trunc division, remainders, pow, abs) have no bool
    version: when the promoted dtype is bool they raise its NotImplementedError."""
    if result_type(*xs) == np.bool_:
        raise NotImplementedError(f"{op}: not implemented for 'Bool'")


@defop(linear=True, aliases=("subtract",), rows=ELEMENTWISE)
def sub(input, other, *, alpha=1):
    """Elementwise ``input - alpha * other``, with the broadcasting and dtype promotion of ``add``.

    ``alpha`` multiplies ``other`` before the subtraction; it must be an integer when both
    operands are integers.

    Example::

        >>> a = fjax.tensor([5.0, 7.0])
        >>> fjax.sub(a, fjax.tensor([1.0, 2.0]), alpha=2)
        tensor([3., 3.], dtype=fjax.float32)
        >>> fjax.sub(fjax.tensor([[1], [2]]), fjax.tensor([1, 10]))
        tensor([[ 0, -9],
                [ 1, -8]], dtype=fjax.int64)
    """
    _no_bool_sub("sub", input, other)
    input, other = promote(input, other)
    return input - _scale("sub", other, alpha)


@defop(aliases=("multiply",), rows=ELEMENTWISE)
def mul(input, other):
    """Elementwise product ``input * other``.

    The operands broadcast against each other and follow torch's type promotion: an integer
    tensor times a Python float is a float32 tensor, while a Python number never widens a float
    tensor's dtype.

    Example::

        >>> fjax.mul(fjax.tensor([1, 2, 3]), 0.5)
        tensor([0.5000, 1.0000, 1.5000], dtype=fjax.float32)
        >>> fjax.mul(fjax.tensor([[1], [2]]), fjax.tensor([1, 10]))
        tensor([[ 1, 10],
                [ 2, 20]], dtype=fjax.int64)
    """
    input, other = promote(input, other)
    return input * other


def _integer(x) -> bool:
    """An integer or bool operand (a Python number or an array): with another one, the result
    dtype is integral (or bool, which the kernels refuse)."""
    if isinstance(x, (bool, np.bool_, int, np.integer)):
        return True
    return np.dtype(getattr(x, "dtype", np.float32)).kind in "biu"


def _zero_divisor(name):
    """Check: integer division or remainder by zero raises, as torch's (XLA returns garbage)."""

    def check(input, other, *, rounding_mode=None):
        if name == "div" and rounding_mode is None:
            return  # true division of integers is float division: inf, as torch
        if not (_integer(input) and _integer(other)) or isinstance(other, jax.core.Tracer):
            return
        if _is_bool(input) and _is_bool(other):
            return  # no bool kernel: the op raises torch's NotImplementedError first
        if (other == 0) if isinstance(other, int) else not np.asarray(other).all():
            raise RuntimeError(f"{name}: ZeroDivisionError (integer division by zero)")

    return check


@defop(static=("rounding_mode",), check=_zero_divisor("div"), aliases=("divide",), rows=ELEMENTWISE)
def div(input, other, *, rounding_mode=None):
    """Elementwise ``input / other``.

    With ``rounding_mode=None`` this is true division: integer inputs give a float32 result, and
    dividing by zero gives ``inf`` or ``nan``. ``rounding_mode="floor"`` rounds the quotient down
    and ``"trunc"`` rounds it towards zero; both keep the promoted dtype, so integers stay
    integers (and an integer division by zero raises). The operands broadcast.

    Example::

        >>> a = fjax.tensor([7, -7])
        >>> fjax.div(a, 2)
        tensor([ 3.5000, -3.5000], dtype=fjax.float32)
        >>> fjax.div(a, 2, rounding_mode="floor")
        tensor([ 3, -4], dtype=fjax.int64)
        >>> fjax.div(a, 2, rounding_mode="trunc")
        tensor([ 3, -3], dtype=fjax.int64)
    """
    if rounding_mode is None:
        dt = result_type(input, other)
        if not jnp.issubdtype(dt, jnp.inexact):
            dt = _promote.DEFAULT_FLOAT
        return _promote.cast(input, dt) / _promote.cast(other, dt)
    _no_bool(f"div(rounding_mode={rounding_mode!r})", input, other)
    input, other = promote(input, other)
    integer = jnp.issubdtype(input.dtype, jnp.integer)
    if rounding_mode == "floor":
        # Python's and torch's floor division: from fmod, so 1.0 // 0.1 is 9 (floor(1.0 / 0.1)
        # rounds to 10 first); its gradient is zero, as torch's
        if integer:
            return jnp.floor_divide(input, other)
        q = jnp.floor_divide(input, other)
        return lax.stop_gradient(jnp.where(q == 0, jnp.copysign(jnp.zeros_like(q), input / other), q))
    if rounding_mode == "trunc":
        if integer:  # C's truncating division (|min| would overflow an abs-based one)
            return lax.div(*jnp.broadcast_arrays(input, other))
        return jnp.trunc(input / other)
    raise ValueError(f"div expected rounding_mode None, 'floor' or 'trunc', got {rounding_mode!r}")


@defop(linear=True, aliases=("negative",), rows=ELEMENTWISE)
def neg(input):
    """Elementwise negation ``-input``; the dtype is kept (negating 0.0 gives -0.0).

    Example::

        >>> fjax.neg(fjax.tensor([1.0, -2.0, 0.0]))
        tensor([-1.,  2., -0.], dtype=fjax.float32)
        >>> fjax.neg(fjax.tensor([3, -4]))
        tensor([-3,  4], dtype=fjax.int64)
    """
    return -input


@defop(rows=ELEMENTWISE)
def exp(input):
    """Elementwise exponential ``e ** input``.

    Integer and bool inputs are computed in the default float dtype (float32); floating inputs
    keep their dtype.

    Example::

        >>> fjax.exp(fjax.tensor([0, 1, 2]))
        tensor([1.0000, 2.7183, 7.3891], dtype=fjax.float32)
        >>> fjax.exp(fjax.tensor([-float("inf"), 0.0]))
        tensor([0., 1.], dtype=fjax.float32)
    """
    return jnp.exp(to_float(input))


@defop()
def true_divide(input, other):
    """True division ``input / other``: the same as ``div`` with no rounding mode.

    Integer operands give a float32 result; the operands broadcast.

    Example::

        >>> fjax.true_divide(fjax.tensor([1, 2, 3]), fjax.tensor([2]))
        tensor([0.5000, 1.0000, 1.5000], dtype=fjax.float32)
    """
    return div(input, other)


@defop(differentiable=False, check=_zero_divisor("floor_divide"))
def floor_divide(input, other):
    """Elementwise ``floor(input / other)``: the quotient rounded towards minus infinity (the
    behaviour of torch 1.13 and later, which matches Python's ``//``).

    The promoted dtype is kept, so integer inputs give an integer result and an integer division
    by zero raises. No gradient is defined, as in torch.

    Example::

        >>> fjax.floor_divide(fjax.tensor([7, -7]), 2)
        tensor([ 3, -4], dtype=fjax.int64)
        >>> fjax.floor_divide(fjax.tensor([7.5, -7.5]), 2)
        tensor([ 3., -4.], dtype=fjax.float32)
    """
    _no_bool("floor_divide", input, other)
    return div(input, other, rounding_mode="floor")


@defop(check=_zero_divisor("remainder"))
def remainder(input, other):
    """Elementwise remainder of ``input / other`` with Python's sign rule: a nonzero result has the
    sign of the divisor ``other`` (``input - floor(input / other) * other``).

    The operands broadcast and promote; an integer remainder by zero raises. See ``fmod`` for the
    C rule, where the result follows the sign of ``input``.

    Example::

        >>> x = fjax.tensor([-3, -1, 1, 3])
        >>> fjax.remainder(x, 2)
        tensor([1, 1, 1, 1], dtype=fjax.int64)
        >>> fjax.remainder(x, -2)
        tensor([-1, -1, -1, -1], dtype=fjax.int64)
    """
    _no_bool("remainder", input, other)
    input, other = promote(input, other)
    return jnp.remainder(input, other)


@defop(check=_zero_divisor("fmod"))
def fmod(input, other):
    """Elementwise remainder of ``input / other`` with C's sign rule: a nonzero result has the sign
    of the dividend ``input`` (``input - trunc(input / other) * other``).

    The operands broadcast and promote; an integer remainder by zero raises. Compare
    ``remainder``, which follows the sign of ``other``.

    Example::

        >>> x = fjax.tensor([-3, -1, 1, 3])
        >>> fjax.fmod(x, 2)
        tensor([-1, -1,  1,  1], dtype=fjax.int64)
        >>> fjax.fmod(fjax.tensor([-3.5, 3.5]), 2)
        tensor([-1.5000,  1.5000], dtype=fjax.float32)
    """
    _no_bool("fmod", input, other)
    input, other = promote(input, other)
    return jnp.fmod(input, other)


def _check_pow(input, exponent):
    """torch's checks of a Python integer exponent of an integer (or bool) tensor: not negative,
    and representable in the tensor's dtype."""
    if isinstance(exponent, (bool, np.bool_)) or not isinstance(exponent, (int, np.integer)):
        return
    dt = getattr(input, "dtype", None)
    if dt is None or not (dt == np.bool_ or np.issubdtype(dt, np.integer)):
        return
    if exponent < 0:
        raise RuntimeError("pow: Integers to negative integer powers are not allowed.")
    dt = _promote.DEFAULT_INT if dt == np.bool_ else np.dtype(dt)
    if exponent > np.iinfo(dt).max:
        raise RuntimeError(f"pow: value {exponent} cannot be converted to type {dt} without overflow")


def _int_pow(x, e):
    """torch's integer power (``powi``): binary exponentiation wrapping in the dtype, over every
    bit of the exponent; a negative (tensor) exponent gives 0, except for the bases 1 and -1."""
    acc, base, k = jnp.ones_like(x), x, e
    for _ in range(np.iinfo(x.dtype).bits):
        acc = jnp.where((k & 1) == 1, acc * base, acc)
        base = base * base
        k = k >> 1
    if not jnp.issubdtype(x.dtype, jnp.signedinteger):
        return acc
    odd = (e & 1) == 1
    negative = jnp.where(x == 1, 1, jnp.where(x == -1, jnp.where(odd, -1, 1), 0)).astype(x.dtype)
    return jnp.where(e < 0, negative, acc)


@defop(check=_check_pow, rows=Rows(("input", "exponent"), broadcast=True))
def pow(input, exponent):
    """Elementwise ``input ** exponent``.

    ``exponent`` may be a Python number or a tensor that broadcasts with ``input``. The dtype is
    the promoted one, so an integer tensor raised to an integer power stays integer (wrapping at
    the dtype's width, as torch), and raising it to a float power gives float32. As in torch, a
    negative Python integer exponent of an integer tensor raises, while negative entries of an
    integer exponent tensor give 0 (1 or -1 for the bases 1 and -1).

    Example::

        >>> fjax.pow(fjax.tensor([1, 2, 3]), 2)
        tensor([1, 4, 9], dtype=fjax.int64)
        >>> fjax.pow(fjax.tensor([4, 9]), 0.5)
        tensor([2., 3.], dtype=fjax.float32)
        >>> fjax.pow(fjax.tensor([2.0]), fjax.tensor([0.0, 1.0, 3.0]))
        tensor([1., 2., 8.], dtype=fjax.float32)
    """
    if result_type(input, exponent) == np.bool_ and jnp.ndim(exponent) == 0:
        return jnp.where(exponent, input, True)  # torch: a bool scalar exponent copies or fills ones
    _no_bool("pow", input, exponent)
    input, exponent = promote(input, exponent)
    if jnp.issubdtype(input.dtype, jnp.integer):
        return _int_pow(*jnp.broadcast_arrays(input, exponent))
    return jnp.power(input, exponent)


@defop()
def float_power(input, exponent):
    """Elementwise ``input ** exponent`` computed in double precision.

    Both operands are cast to float64 (complex128 if either is complex) before the power, so the
    result is float64 whatever the input dtypes; the operands broadcast.

    Example::

        >>> fjax.float_power(fjax.tensor([2, 3]), 2)
        tensor([4., 9.], dtype=fjax.float64)
        >>> fjax.float_power(fjax.tensor([4.0]), -0.5)
        tensor([0.5000], dtype=fjax.float64)
    """
    dt = jnp.complex128 if jnp.issubdtype(result_type(input, exponent), jnp.complexfloating) else jnp.float64
    return jnp.power(jnp.asarray(input, dt), jnp.asarray(exponent, dt))


@jax.custom_jvp
def _abs(x):
    return jnp.abs(x)


@_abs.defjvp
def _abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    if jnp.iscomplexobj(x):  # d|z| = Re(conj(sgn z) dz), sgn 0 = 0 as in torch
        return jnp.abs(x), jnp.real(jnp.conj(jnp.sign(x)) * t)
    return jnp.abs(x), jnp.sign(x) * t  # torch: the gradient at 0 is 0, not 1


@defop(aliases=("absolute",), rows=ELEMENTWISE)
def abs(input):
    """Elementwise absolute value ``|input|``, in the input's dtype.

    As in torch, the gradient is ``sign(input)``, so it is 0 at ``input == 0``.

    Example::

        >>> fjax.abs(fjax.tensor([-1.5, 0.0, 2.0]))
        tensor([1.5000, 0.0000, 2.0000], dtype=fjax.float32)
        >>> fjax.abs(fjax.tensor([-3, 4]))
        tensor([3, 4], dtype=fjax.int64)
    """
    _no_bool("abs", input)
    return _abs(input)


@defop(rows=ELEMENTWISE)
def sign(input):
    """Elementwise sign: -1 for negative, 0 for zero, 1 for positive values, in the input's dtype.

    NaN maps to 0, as in torch, and bool tensors pass through unchanged.

    Example::

        >>> fjax.sign(fjax.tensor([-2.0, 0.0, 3.0, float("nan")]))
        tensor([-1.,  0.,  1.,  0.], dtype=fjax.float32)
        >>> fjax.sign(fjax.tensor([-5, 0, 7]))
        tensor([-1,  0,  1], dtype=fjax.int64)
    """
    if input.dtype == jnp.bool_:
        return input
    return (input > 0).astype(input.dtype) - (input < 0).astype(input.dtype)


@defop(rows=ELEMENTWISE)
def square(input):
    """Elementwise ``input * input``; integer tensors stay integer.

    Example::

        >>> fjax.square(fjax.tensor([-2, 3]))
        tensor([4, 9], dtype=fjax.int64)
        >>> fjax.square(fjax.tensor([0.5, -1.5]))
        tensor([0.2500, 2.2500], dtype=fjax.float32)
    """
    return input * input


@defop(rows=ELEMENTWISE)
def reciprocal(input):
    """Elementwise ``1 / input``.

    Integer inputs give a float32 result (torch's rule for this op), and ``1 / 0`` is ``inf``.

    Example::

        >>> fjax.reciprocal(fjax.tensor([1, 2, 4]))
        tensor([1.0000, 0.5000, 0.2500], dtype=fjax.float32)
        >>> fjax.reciprocal(fjax.tensor([-0.5, 0.0]))
        tensor([-2., inf], dtype=fjax.float32)
    """
    return 1 / to_float(input)


@defop(rows=ELEMENTWISE)
def sigmoid(input):
    """Elementwise logistic function ``1 / (1 + exp(-input))``, with values in ``(0, 1)``.

    Integer inputs are computed in float32. Large inputs saturate to 0 and 1 without overflow;
    ``F.sigmoid`` is the same function.

    Args:
        input: the input tensor.

    Example::

        >>> fjax.sigmoid(fjax.tensor([0.0, 2.0, -2.0]))
        tensor([0.5000, 0.8808, 0.1192], dtype=fjax.float32)
        >>> F.sigmoid(fjax.tensor([-100.0, 100.0]))
        tensor([0., 1.], dtype=fjax.float32)
    """
    return _saving.saves_result(jax.nn.sigmoid, _saving.sigmoid_rule, to_float(input))


@defop()
def logit(input, eps=None):
    """Elementwise log-odds ``log(p / (1 - p))``, the inverse of ``sigmoid``.

    When ``eps`` is given, ``p`` is first clamped to ``[eps, 1 - eps]`` so that 0 and 1 give finite
    values; without it, 0 and 1 map to ``-inf`` and ``inf``. Integer inputs are computed in float32.

    Example::

        >>> p = fjax.tensor([0.0, 0.5, 1.0])
        >>> fjax.logit(p)
        tensor([-inf, 0., inf], dtype=fjax.float32)
        >>> fjax.logit(p, eps=0.25)
        tensor([-1.0986,  0.0000,  1.0986], dtype=fjax.float32)
    """
    x = to_float(input)
    if eps is not None:
        eps = jnp.asarray(eps, x.dtype)
        x = _clamp(x, eps, 1 - eps)
    return jnp.log(x / (1 - x))


@defop()
def floor(input):
    """Elementwise rounding down to the nearest integer value (towards minus infinity).

    Floating inputs keep their dtype; integer inputs are returned unchanged.

    Example::

        >>> fjax.floor(fjax.tensor([-1.5, -0.5, 0.5, 1.5]))
        tensor([-2., -1.,  0.,  1.], dtype=fjax.float32)
        >>> fjax.floor(fjax.tensor([3, -3]))
        tensor([ 3, -3], dtype=fjax.int64)
    """
    return input if not jnp.issubdtype(input.dtype, jnp.inexact) else jnp.floor(input)


@defop()
def ceil(input):
    """Elementwise rounding up to the nearest integer value (towards plus infinity).

    Floating inputs keep their dtype (a negative value above -1 gives -0.0); integer inputs are
    returned unchanged.

    Example::

        >>> fjax.ceil(fjax.tensor([-1.5, -0.5, 0.5, 1.5]))
        tensor([-1., -0.,  1.,  2.], dtype=fjax.float32)
    """
    return input if not jnp.issubdtype(input.dtype, jnp.inexact) else jnp.ceil(input)


@defop(aliases=("fix",))
def trunc(input):
    """Elementwise rounding towards zero: drops the fractional part.

    Floating inputs keep their dtype; integer inputs are returned unchanged.

    Example::

        >>> fjax.trunc(fjax.tensor([-1.7, -0.5, 0.5, 1.7]))
        tensor([-1., -0.,  0.,  1.], dtype=fjax.float32)
    """
    return input if not jnp.issubdtype(input.dtype, jnp.inexact) else jnp.trunc(input)


@defop(static=("decimals",))
def round(input, *, decimals=0):
    """Elementwise rounding to the nearest integer, or to ``decimals`` decimal places.

    Halfway cases go to the even neighbour (banker's rounding), as in torch, so 0.5 becomes 0 and
    2.5 becomes 2. A negative ``decimals`` rounds to tens, hundreds and so on. Integer inputs are
    returned unchanged.

    Example::

        >>> fjax.round(fjax.tensor([0.5, 1.5, 2.5, -0.5]))
        tensor([0., 2., 2., -0.], dtype=fjax.float32)
        >>> fjax.round(fjax.tensor([1.2345, 2.7182]), decimals=2)
        tensor([1.2300, 2.7200], dtype=fjax.float32)
        >>> fjax.round(fjax.tensor([1234.0, 1250.0]), decimals=-2)
        tensor([1200., 1200.], dtype=fjax.float32)
    """
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
    """Elementwise fractional part ``input - trunc(input)``, which keeps the sign of ``input``.

    Only floating point inputs are accepted, as in torch.

    Example::

        >>> fjax.frac(fjax.tensor([1.25, -2.75, 3.0]))
        tensor([ 0.2500, -0.7500,  0.0000], dtype=fjax.float32)
    """
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


@defop(aliases=("clip",), rows=Rows(("input", "min", "max"), broadcast=True))
def clamp(input, min=None, max=None):
    """Limit every element to the range ``[min, max]``; ``clip`` is the same op under another name.

    ``min`` and ``max`` may be Python numbers or tensors that broadcast with ``input``; either may
    be None (not both). If ``min > max`` every element becomes ``max``, as in torch. A NaN input
    stays NaN, and the result takes the promoted dtype of the input and the bounds.

    Example::

        >>> x = fjax.tensor([-2, 0, 5])
        >>> fjax.clamp(x, min=-1, max=3)
        tensor([-1,  0,  3], dtype=fjax.int64)
        >>> fjax.clamp(x, max=fjax.tensor([0, 0, 10]))
        tensor([-2,  0,  5], dtype=fjax.int64)
        >>> fjax.clip(x, min=2, max=1)
        tensor([1, 1, 1], dtype=fjax.int64)
    """
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")
    input, min, max = promote(input, min, max)
    return _clamp(input, min, max)


@defop()
def clamp_min(input, min):
    """Elementwise ``max(input, min)``: a lower bound only; ``min`` is a number or a tensor that
    broadcasts with ``input``.

    The gradient flows to ``input`` where ``input >= min``.

    Example::

        >>> fjax.clamp_min(fjax.tensor([-1.0, 0.5, 2.0]), 0.0)
        tensor([0.0000, 0.5000, 2.0000], dtype=fjax.float32)
    """
    input, min = promote(input, min)
    return _clamp(input, min, None)


@defop()
def clamp_max(input, max):
    """Elementwise ``min(input, max)``: an upper bound only; ``max`` is a number or a tensor that
    broadcasts with ``input``.

    The gradient flows to ``input`` where ``input <= max``.

    Example::

        >>> fjax.clamp_max(fjax.tensor([-1.0, 0.5, 2.0]), 1.0)
        tensor([-1.0000,  0.5000,  1.0000], dtype=fjax.float32)
    """
    input, max = promote(input, max)
    return _clamp(input, None, max)


@defop(rows=ELEMENTWISE)
def maximum(input, other):
    """Elementwise maximum of two broadcastable tensors, in their promoted dtype.

    If either element is NaN the result is NaN (see ``fmax`` to ignore NaN). Where the two are
    equal, the gradient is split evenly between them, as in torch.

    Example::

        >>> nan = float("nan")
        >>> fjax.maximum(fjax.tensor([1.0, nan, 3.0]), fjax.tensor([2.0, 0.0, nan]))
        tensor([2., nan, nan], dtype=fjax.float32)
        >>> fjax.maximum(fjax.tensor([[1], [5]]), fjax.tensor([2, 3, 4]))
        tensor([[2, 3, 4],
                [5, 5, 5]], dtype=fjax.int64)
    """
    input, other = promote(input, other)
    return jnp.maximum(input, other)


@defop(rows=ELEMENTWISE)
def minimum(input, other):
    """Elementwise minimum of two broadcastable tensors, in their promoted dtype.

    If either element is NaN the result is NaN (see ``fmin`` to ignore NaN). Where the two are
    equal, the gradient is split evenly between them, as in torch.

    Example::

        >>> nan = float("nan")
        >>> fjax.minimum(fjax.tensor([1.0, nan, 3.0]), fjax.tensor([2.0, 0.0, nan]))
        tensor([1., nan, nan], dtype=fjax.float32)
    """
    input, other = promote(input, other)
    return jnp.minimum(input, other)


@defop()
def fmax(input, other):
    """Elementwise maximum that ignores NaN: where exactly one element is NaN the other one is
    returned, and NaN only comes out when both are NaN.

    The operands broadcast and promote. Where the two are equal, the gradient goes to ``input``.

    Example::

        >>> nan = float("nan")
        >>> fjax.fmax(fjax.tensor([1.0, nan, 3.0, nan]), fjax.tensor([2.0, 0.0, nan, nan]))
        tensor([2., 0., 3., nan], dtype=fjax.float32)
    """
    input, other = promote(input, other)
    return jnp.where((input >= other) | jnp.isnan(other), input, other)


@defop()
def fmin(input, other):
    """Elementwise minimum that ignores NaN: where exactly one element is NaN the other one is
    returned, and NaN only comes out when both are NaN.

    The operands broadcast and promote. Where the two are equal, the gradient goes to ``input``.

    Example::

        >>> nan = float("nan")
        >>> fjax.fmin(fjax.tensor([1.0, nan, 3.0, nan]), fjax.tensor([2.0, 0.0, nan, nan]))
        tensor([1., 0., 3., nan], dtype=fjax.float32)
    """
    input, other = promote(input, other)
    return jnp.where((input <= other) | jnp.isnan(other), input, other)


@defop()
def lerp(input, end, weight):
    """Linear interpolation ``input + weight * (end - input)`` between ``input`` and ``end``.

    ``weight`` is a number or a tensor broadcastable with the others; 0 gives ``input`` and 1 gives
    ``end``. As in torch, weights of magnitude 0.5 or more are evaluated from the ``end`` side so
    that ``weight == 1`` returns ``end`` exactly.

    Example::

        >>> start, end = fjax.tensor([0.0, 10.0]), fjax.tensor([10.0, 20.0])
        >>> fjax.lerp(start, end, 0.25)
        tensor([ 2.5000, 12.5000], dtype=fjax.float32)
        >>> fjax.lerp(start, end, fjax.tensor([0.0, 1.0]))
        tensor([ 0., 20.], dtype=fjax.float32)
    """
    input, end, weight = promote(input, end, weight)
    diff = end - input
    return jnp.where(jnp.abs(weight) < 0.5, input + weight * diff, end - diff * (1 - weight))


def _scalar(value):
    # A default left as a Python number becomes a weak 0-d array, as a passed one does.
    return jnp.asarray(value) if isinstance(value, (int, float)) else value


@defop()
def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``, elementwise.

    The three tensors broadcast together; ``value`` is a Python number (1 by default) and the
    result takes their promoted dtype.

    Example::

        >>> acc = fjax.tensor([1.0, 1.0])
        >>> fjax.addcmul(acc, fjax.tensor([2.0, 3.0]), fjax.tensor([4.0, 5.0]), value=0.5)
        tensor([5.0000, 8.5000], dtype=fjax.float32)
    """
    input, tensor1, tensor2, value = promote(input, tensor1, tensor2, _scalar(value))
    return input + value * tensor1 * tensor2


@defop()
def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``, elementwise.

    The three tensors broadcast together and ``value`` is a Python number (1 by default). As in
    torch, ``tensor1`` and ``tensor2`` may not both be integer tensors.

    Example::

        >>> acc = fjax.tensor([1.0, 1.0])
        >>> fjax.addcdiv(acc, fjax.tensor([2.0, 3.0]), fjax.tensor([4.0, 6.0]), value=2)
        tensor([2., 2.], dtype=fjax.float32)
    """
    if not (jnp.issubdtype(tensor1.dtype, jnp.inexact) or jnp.issubdtype(tensor2.dtype, jnp.inexact)):
        raise TypeError(
            f"addcdiv: integer division is not supported, got tensor1 {tensor1.dtype} "
            f"and tensor2 {tensor2.dtype}; use addcmul(input, tensor1, 1 / tensor2)"
        )
    input, tensor1, tensor2, value = promote(input, tensor1, tensor2, _scalar(value))
    return input + value * tensor1 / tensor2


@defop()
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """Replace NaN with ``nan`` (0.0 by default), positive infinity with ``posinf`` and negative
    infinity with ``neginf``.

    When ``posinf`` or ``neginf`` is None it becomes the largest or smallest finite value of the
    input's dtype. Integer and bool tensors have none of these values and are returned unchanged.

    Example::

        >>> x = fjax.tensor([float("nan"), float("inf"), -float("inf"), 1.5])
        >>> fjax.nan_to_num(x, posinf=100.0, neginf=-100.0)
        tensor([   0.0000,  100.0000, -100.0000,    1.5000], dtype=fjax.float32)
        >>> fjax.nan_to_num(x)
        tensor([ 0.0000e+00,  3.4028e+38, -3.4028e+38,  1.5000e+00], dtype=fjax.float32)
    """
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
    """Elementwise ``|input|`` with the sign of ``other``, including the sign of -0.0.

    The operands broadcast, and integer inputs give a float32 result. The gradient with respect to
    ``input`` is 0 where ``input == 0``, as in torch.

    Example::

        >>> fjax.copysign(fjax.tensor([1, -2, 3]), fjax.tensor([-1.0, 1.0, -0.0]))
        tensor([-1.,  2., -3.], dtype=fjax.float32)
    """
    input, other = promote(input, other)
    input, other = to_float(input), to_float(other)
    return jnp.where(jnp.signbit(other), -_abs(input), _abs(input))


# ----------------------------------------------------------------------------- number theory and exponents


def _integers(name, input, other):
    input, other = promote(input, other)
    if not jnp.issubdtype(input.dtype, jnp.integer):
        raise TypeError(f"{name}: expected integer tensors, got {input.dtype}")
    return input, other


@defop(differentiable=False)
def gcd(input, other):
    """Elementwise greatest common divisor of two integer tensors (broadcast and promoted), never
    negative; ``gcd(0, 0)`` is 0. Floating point inputs raise a TypeError, as in torch.

    Example::

        >>> fjax.gcd(fjax.tensor([12, -9, 0]), fjax.tensor([18, 6, 0]))
        tensor([6, 3, 0], dtype=fjax.int64)
    """
    return jnp.gcd(*_integers("gcd", input, other))


@defop(differentiable=False)
def lcm(input, other):
    """Elementwise least common multiple of two integer tensors (broadcast and promoted), never
    negative; it is 0 when either operand is 0. Floating point inputs raise a TypeError.

    Example::

        >>> fjax.lcm(fjax.tensor([4, -6, 0]), fjax.tensor([6, 4, 3]))
        tensor([12, 12,  0], dtype=fjax.int64)
    """
    return jnp.lcm(*_integers("lcm", input, other))


@defop(differentiable=False)
def heaviside(input, values):
    """The Heaviside step of ``input``: 0 where it is negative, 1 where positive, and ``values`` (which
    broadcasts) where it is zero. Both tensors must have the same dtype, as torch requires; torch defines
    no gradient for it.

    Example::

        >>> x = fjax.tensor([-1.5, 0.0, 2.0])
        >>> fjax.heaviside(x, fjax.tensor([0.5]))
        tensor([0.0000, 0.5000, 1.0000], dtype=fjax.float32)
    """
    if input.dtype != values.dtype:
        raise TypeError(f"heaviside: expected tensors of one dtype, got {input.dtype} and {values.dtype}")
    input, values = promote(input, values)
    return jnp.where(input == 0, values, (input > 0).astype(input.dtype))


@defop()
def ldexp(input, other):
    """``input * 2 ** other`` elementwise: the dtype is the operands' promoted one, float32 when both
    are integers. The gradient reaches both operands.

    Example::

        >>> fjax.ldexp(fjax.tensor([1.0, 3.0]), fjax.tensor([2, -1]))
        tensor([4.0000, 1.5000], dtype=fjax.float32)
        >>> fjax.ldexp(fjax.tensor([1]), fjax.tensor([3]))
        tensor([8.], dtype=fjax.float32)
    """
    dt = result_type(input, other)
    if not jnp.issubdtype(dt, jnp.inexact):
        dt = np.dtype(np.float32)
    wide = jnp.promote_types(dt, jnp.float32)  # 2 ** other in at least float32, as torch's pow(2.0, other)
    return (jnp.asarray(input, wide) * jnp.exp2(jnp.asarray(other, wide))).astype(dt)


# ----------------------------------------------------------------------------- torch.* additions


@defop(linear=True)
def positive(input):
    """``+input``: the tensor's values unchanged (a bool tensor raises, as torch).

    Example::

        >>> fjax.positive(fjax.tensor([-1.0, 2.0]))
        tensor([-1.,  2.], dtype=fjax.float32)
    """
    if input.dtype == jnp.bool_:
        raise TypeError("positive: the `+` operator on a bool tensor is not supported")
    return input


@defop(linear=True, method=False)
def rsub(input, other, alpha=1):
    """Reversed subtraction ``other - alpha * input``, with the broadcasting and dtype promotion of ``sub``.

    Example::

        >>> fjax.rsub(fjax.tensor([1.0, 2.0]), 10.0)
        tensor([9., 8.], dtype=fjax.float32)
    """
    _no_bool_sub("rsub", input, other)
    input, other = promote(input, other)
    return other - _scale("rsub", input, alpha)


@defop(method=False)
def fill(input, value):
    """A tensor of ``input``'s shape and dtype filled with ``value`` (a number or a 0-d tensor).

    Example::

        >>> fjax.fill(fjax.zeros(2), 3.0)
        tensor([3., 3.], dtype=fjax.float32)
    """
    value = jnp.asarray(value)
    if value.ndim != 0:
        raise ValueError(f"fill: value must be a number or a 0-d tensor, got shape {value.shape}")
    return jnp.broadcast_to(value.astype(input.dtype), input.shape)


@defop()
def nextafter(input, other):
    """The next floating point value after ``input`` towards ``other``, elementwise.

    Example::

        >>> fjax.nextafter(fjax.tensor([1.0], dtype=fjax.float64), fjax.tensor([2.0], dtype=fjax.float64)) - 1
        tensor([2.2204e-16], dtype=fjax.float64)
    """
    input, other = promote(input, other)
    if not jnp.issubdtype(input.dtype, jnp.floating):
        raise TypeError(f"nextafter: expected floating point tensors, got {input.dtype}")
    return _nextafter(*jnp.broadcast_arrays(input, other))


@jax.custom_jvp
def _nextafter(input, other):
    return jnp.nextafter(input, other)


# torch's derivative: the gradient passes to ``input`` unchanged, ``other`` gets zeros
_nextafter.defjvp(lambda primals, tangents: (_nextafter(*primals), tangents[0]))


@defop(returns=("mantissa", "exponent"))
def frexp(input):
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``, ``0.5 <= |mantissa| < 1`` (0 for 0);
    the exponent is int32.

    Example::

        >>> fjax.frexp(fjax.tensor([8.0, 0.75]))
        fjax.return_types.frexp(
        mantissa=tensor([0.5000, 0.7500], dtype=fjax.float32),
        exponent=tensor([4, 0], dtype=fjax.int32))
    """
    if not jnp.issubdtype(input.dtype, jnp.floating):
        raise TypeError(f"frexp: only floating point tensors are supported, got {input.dtype}")
    mantissa, exponent = jnp.frexp(lax.stop_gradient(input))
    scale = lax.stop_gradient(mantissa / jnp.where(input == 0, jnp.ones_like(input), input))
    return input * scale + lax.stop_gradient(mantissa - input * scale), exponent.astype(jnp.int32)
