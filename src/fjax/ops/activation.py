"""Activations, softmax family and vector similarities (torch.nn.functional)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from . import _checks, _saving
from ._promote import promote, to_float
from ._registry import ELEMENTWISE, Plan, Rows, defop


def _clip(x, lo, hi):
    """``min(max(x, lo), hi)`` with zero gradient at and beyond both bounds, as torch's hardtanh."""
    lo, hi = jnp.asarray(lo, x.dtype), jnp.asarray(hi, x.dtype)
    return jnp.where(x <= lo, lo, jnp.where(x >= hi, hi, x))


@defop(rows=ELEMENTWISE)
def relu(input):
    """Rectified linear unit, ``max(input, 0)`` elementwise, keeping the input's dtype.

    As in torch, NaN and ``-0.0`` pass through unchanged, and the gradient is 0 where
    ``input <= 0`` (and 1 at NaN).

    Args:
        input: the input tensor.

    Example::

        >>> x = fjax.tensor([-1.0, 0.0, 2.0, float("nan")])
        >>> fjax.relu(x)
        tensor([0., 0., 2., nan], dtype=fjax.float32)
        >>> fjax.tensor([-3, 5]).relu()
        tensor([0, 5], dtype=fjax.int64)
    """

    def f(x):
        zero = jnp.zeros((), x.dtype)
        return jnp.where(x <= 0, jnp.where(x < 0, zero, jax.lax.stop_gradient(x)), x)

    return _saving.saves_result(f, _saving.relu_rule, input)  # the backward reads the result only, as torch's


@defop(method=False, rows=ELEMENTWISE)
def relu6(input):
    """ReLU capped at 6: ``min(max(input, 0), 6)`` elementwise.

    The gradient is 0 at and beyond both bounds, as in torch.

    Args:
        input: the input tensor.

    Example::

        >>> F.relu6(fjax.tensor([-2.0, 3.0, 8.0]))
        tensor([0., 3., 6.], dtype=fjax.float32)
    """
    return _clip(input, 0, 6)


@defop(method=False, rows=ELEMENTWISE)
def leaky_relu(input, negative_slope=0.01):
    """Leaky ReLU: ``input`` where it is positive, else ``negative_slope * input``.

    Args:
        input: the input tensor.
        negative_slope: the slope of the negative half (default 0.01).

    Example::

        >>> F.leaky_relu(fjax.tensor([-2.0, 0.0, 3.0]), negative_slope=0.1)
        tensor([-0.2000,  0.0000,  3.0000], dtype=fjax.float32)
    """
    input = to_float(input)
    return jnp.where(input > 0, input, input * jnp.asarray(negative_slope, input.dtype))


def _elu(x, alpha, scale=1.0, input_scale=1.0):
    def f(x, alpha, scale, input_scale):
        # where, not minimum: at 0 torch takes the negative branch's slope (minimum would halve it)
        neg = alpha * jnp.expm1(jnp.where(x > 0, 0, x) * input_scale)
        return scale * jnp.where(x > 0, x, neg.astype(x.dtype))

    return _saving.saves_inputs(f, to_float(x), alpha, scale, input_scale)


@defop(method=False, rows=ELEMENTWISE)
def elu(input, alpha=1.0):
    """Exponential linear unit: ``input`` where it is positive, else ``alpha * (exp(input) - 1)``.

    The negative half saturates at ``-alpha`` (default 1.0).

    Args:
        input: the input tensor.
        alpha: the value the negative half saturates at, as ``-alpha`` (default 1.0).

    Example::

        >>> x = fjax.tensor([-1.0, 0.0, 2.0])
        >>> F.elu(x)
        tensor([-0.6321,  0.0000,  2.0000], dtype=fjax.float32)
        >>> F.elu(x, alpha=2.0)
        tensor([-1.2642,  0.0000,  2.0000], dtype=fjax.float32)
    """
    return _elu(input, alpha)


@defop(method=False, rows=ELEMENTWISE)
def selu(input):
    """Scaled ELU: ``scale * elu(input, alpha)`` with the fixed self-normalizing constants
    ``alpha ~ 1.6733`` and ``scale ~ 1.0507``.

    Args:
        input: the input tensor.

    Example::

        >>> F.selu(fjax.tensor([-1.0, 0.0, 1.0]))
        tensor([-1.1113,  0.0000,  1.0507], dtype=fjax.float32)
    """
    return _elu(input, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946)


def _check_celu(input, alpha=1.0):
    if isinstance(alpha, (int, float)) and alpha == 0:
        raise _checks.OpError("celu: ZeroDivisionError: alpha cannot be 0 for CELU, got alpha=0")


@defop(method=False, check=_check_celu, rows=ELEMENTWISE)
def celu(input, alpha=1.0):
    """Continuously differentiable ELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Unlike ``elu``, the slope at 0 is 1 for every ``alpha``.

    Args:
        input: the input tensor.
        alpha: the scale of the negative half (default 1.0).

    Example::

        >>> F.celu(fjax.tensor([-1.0, 0.0, 2.0]), alpha=2.0)
        tensor([-0.7869,  0.0000,  2.0000], dtype=fjax.float32)
    """
    return _elu(input, alpha, 1.0, 1.0 / alpha)


@defop(static=("approximate",), method=False, rows=ELEMENTWISE)
def gelu(input, approximate="none"):
    """Gaussian error linear unit ``x * Phi(x)``, with ``Phi`` the standard normal CDF.

    ``approximate='none'`` (default) uses the exact erf form; ``'tanh'`` uses the tanh
    approximation. Any other value raises ValueError.

    Args:
        input: the input tensor.
        approximate: ``'none'`` (default, the erf form) or ``'tanh'``.

    Example::

        >>> x = fjax.tensor([-1.0, 0.0, 1.0])
        >>> F.gelu(x)
        tensor([-0.1587,  0.0000,  0.8413], dtype=fjax.float32)
        >>> F.gelu(x, approximate="tanh")
        tensor([-0.1588,  0.0000,  0.8412], dtype=fjax.float32)
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _saving.saves_inputs(lambda x: jax.nn.gelu(x, approximate=approximate == "tanh"), to_float(input))


@defop(method=False, rows=ELEMENTWISE)
def silu(input):
    """SiLU (swish): ``input * sigmoid(input)`` elementwise.

    Args:
        input: the input tensor.

    Example::

        >>> F.silu(fjax.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.2689,  0.0000,  0.7311], dtype=fjax.float32)
    """
    return _saving.saves_inputs(jax.nn.silu, to_float(input))


@defop(method=False, rows=ELEMENTWISE)
def mish(input):
    """Mish: ``input * tanh(softplus(input))`` elementwise.

    Args:
        input: the input tensor.

    Example::

        >>> F.mish(fjax.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.3034,  0.0000,  0.8651], dtype=fjax.float32)
    """
    return _saving.saves_inputs(lambda x: x * jnp.tanh(jax.nn.softplus(x)), to_float(input))


@defop(method=False, rows=ELEMENTWISE)
def softplus(input, beta=1.0, threshold=20.0):
    """Smooth ReLU ``log(1 + exp(beta * x)) / beta``, computed without overflow.

    Where ``beta * x > threshold`` (default 20) the result is ``x`` itself, as in torch.

    Args:
        input: the input tensor.
        beta: the sharpness ``beta`` (default 1.0).
        threshold: above this value of ``beta * input`` the result is ``input`` (default 20.0).

    Example::

        >>> F.softplus(fjax.tensor([-1.0, 0.0, 30.0]))
        tensor([ 0.3133,  0.6931, 30.0000], dtype=fjax.float32)
        >>> F.softplus(fjax.tensor([1.0, 12.0]), beta=2.0, threshold=10.0)
        tensor([ 1.0635, 12.0000], dtype=fjax.float32)
    """

    def f(x, beta, threshold):
        bx = x * beta
        soft = (jnp.logaddexp(bx, 0) / beta).astype(x.dtype)
        return jnp.where(bx > threshold, x, soft)

    return _saving.saves_inputs(f, to_float(input), beta, threshold)


@defop(method=False)
def softsign(input):
    """Softsign: ``input / (1 + |input|)``, a squashing into ``(-1, 1)``.

    Args:
        input: the input tensor.

    Example::

        >>> F.softsign(fjax.tensor([-3.0, 0.0, 1.0]))
        tensor([-0.7500,  0.0000,  0.5000], dtype=fjax.float32)
    """
    input = to_float(input)
    return input / (1 + jnp.abs(input))


def _check_hardtanh(input, min_val=-1.0, max_val=1.0):
    if isinstance(min_val, (int, float)) and isinstance(max_val, (int, float)) and min_val > max_val:
        raise ValueError(f"hardtanh: min_val cannot be greater than max_val, got min_val={min_val}, max_val={max_val}")


@defop(method=False, check=_check_hardtanh, rows=ELEMENTWISE)
def hardtanh(input, min_val=-1.0, max_val=1.0):
    """Clamp to ``[min_val, max_val]`` (default ``[-1, 1]``).

    The gradient is 1 strictly inside the interval and 0 at and beyond its ends, as in torch.

    Args:
        input: the input tensor.
        min_val: the lower end of the clamp (default -1.0).
        max_val: the upper end of the clamp (default 1.0).

    Example::

        >>> x = fjax.tensor([-2.0, 0.5, 3.0])
        >>> F.hardtanh(x)
        tensor([-1.0000,  0.5000,  1.0000], dtype=fjax.float32)
        >>> F.hardtanh(x, min_val=0.0, max_val=2.0)
        tensor([0.0000, 0.5000, 2.0000], dtype=fjax.float32)
    """
    return _clip(to_float(input), min_val, max_val)


@defop(method=False, rows=ELEMENTWISE)
def hardsigmoid(input):
    """Piecewise-linear sigmoid: ``relu6(x + 3) / 6``, so 0 below -3 and 1 above 3.

    Args:
        input: the input tensor.

    Example::

        >>> F.hardsigmoid(fjax.tensor([-4.0, 0.0, 1.5, 4.0]))
        tensor([0.0000, 0.5000, 0.7500, 1.0000], dtype=fjax.float32)
    """
    input = to_float(input)
    return _clip(input + 3, 0, 6) / 6


@defop(method=False, rows=ELEMENTWISE)
def hardswish(input):
    """Hard swish: ``x * relu6(x + 3) / 6``, i.e. ``x * hardsigmoid(x)``.

    Args:
        input: the input tensor.

    Example::

        >>> F.hardswish(fjax.tensor([-1.0, 1.0, 4.0]))
        tensor([-0.3333,  0.6667,  4.0000], dtype=fjax.float32)
    """
    return _saving.saves_inputs(lambda x: x * _clip(x + 3, 0, 6) / 6, to_float(input))


@defop(method=False, rows=ELEMENTWISE)
def logsigmoid(input):
    """``log(sigmoid(input))`` elementwise, computed without underflow for large negative inputs.

    Args:
        input: the input tensor.

    Example::

        >>> F.logsigmoid(fjax.tensor([-200.0, 0.0, 1.0]))
        tensor([-200.0000,   -0.6931,   -0.3133], dtype=fjax.float32)
    """
    return jax.nn.log_sigmoid(to_float(input))


@defop(method=False)
def tanhshrink(input):
    """Tanh shrink: ``input - tanh(input)`` elementwise.

    Args:
        input: the input tensor.

    Example::

        >>> F.tanhshrink(fjax.tensor([-1.0, 0.0, 2.0]))
        tensor([-0.2384,  0.0000,  1.0360], dtype=fjax.float32)
    """
    input = to_float(input)
    return input - jnp.tanh(input)


@defop(method=False)
def softshrink(input, lambd=0.5):
    """Soft shrinkage: move each value towards 0 by ``lambd`` (default 0.5).

    Values inside ``[-lambd, lambd]`` become 0; the others become ``x - lambd`` or ``x + lambd``.

    Args:
        input: the input tensor.
        lambd: the shrinkage amount (default 0.5).

    Example::

        >>> F.softshrink(fjax.tensor([-1.0, 0.2, 0.5, 2.0]))
        tensor([-0.5000,  0.0000,  0.0000,  1.5000], dtype=fjax.float32)
    """
    lambd = jnp.asarray(lambd, input.dtype)
    # inside the band torch gives input * 0: -0.0 for a negative input, NaN stays NaN
    return jnp.where(input > lambd, input - lambd, jnp.where(input < -lambd, input + lambd, input * 0))


@defop()
def hardshrink(input, lambd=0.5):
    """Hard shrinkage: keep ``input`` where ``|input| > lambd`` (default 0.5), else 0.

    Values equal to ``lambd`` in magnitude become 0.

    Args:
        input: the input tensor.
        lambd: the magnitude at or below which values become 0 (default 0.5).

    Example::

        >>> x = fjax.tensor([-1.0, 0.2, 0.5, 2.0])
        >>> fjax.hardshrink(x)
        tensor([-1.,  0.,  0.,  2.], dtype=fjax.float32)
        >>> x.hardshrink(lambd=1.5)
        tensor([0., 0., 0., 2.], dtype=fjax.float32)
    """
    inside = (input >= -lambd) & (input <= lambd)  # as torch: NaN is not inside, so it stays NaN
    return jnp.where(inside, jnp.zeros((), input.dtype), input)


@defop(method=False)
def threshold(input, threshold, value):
    """Keep ``input`` where ``input > threshold``, and replace every other element by ``value``.

    The comparison is strict, so elements equal to ``threshold`` are replaced too.

    Args:
        input: the input tensor.
        threshold: elements not above it are replaced.
        value: the replacement value.

    Example::

        >>> F.threshold(fjax.tensor([0.5, 1.0, 2.0]), 1.0, -1.0)
        tensor([-1., -1.,  2.], dtype=fjax.float32)
    """
    return jnp.where(input <= threshold, jnp.asarray(value, input.dtype), input)  # NaN stays NaN, as torch


@defop(static=("dim",), method=False)
def glu(input, dim=-1):
    """Gated linear unit: split ``input`` in two halves ``a, b`` along ``dim`` (default -1)
    and return ``a * sigmoid(b)``.

    The size of ``dim`` must be even; the output has half of it.

    Args:
        input: a tensor whose size along ``dim`` is even.
        dim: the dimension split in halves (default -1).

    Example::

        >>> F.glu(fjax.tensor([[1.0, 2.0, 0.0, 0.0]]))
        tensor([[0.5000, 1.0000]], dtype=fjax.float32)
        >>> F.glu(fjax.tensor([[1.0, 2.0], [0.0, 0.0]]), dim=0)
        tensor([[0.5000, 1.0000]], dtype=fjax.float32)
    """
    if not -max(input.ndim, 1) <= dim < max(input.ndim, 1):
        raise _checks.IndexOpError(f"glu: dim {dim} is out of range for a {input.ndim}-d input")
    if input.ndim == 0 or input.shape[dim] % 2:
        raise ValueError(f"glu: dim {dim} of input {input.shape} must have an even size")
    a, b = jnp.split(to_float(input), 2, axis=dim)
    return a * jax.nn.sigmoid(b)


@defop()
def prelu(input, weight):
    """Parametric ReLU: ``input`` where positive, else ``weight * input``.

    ``weight`` holds either one slope shared by all channels or one slope per channel of
    dim 1 (inputs of fewer than 2 dims take a single slope).

    Args:
        input: the input tensor.
        weight: the slopes of the negative half: one element, or one per channel of dim 1.

    Example::

        >>> x = fjax.tensor([[-1.0, 2.0], [-3.0, 4.0]])
        >>> F.prelu(x, fjax.tensor([0.25]))
        tensor([[-0.2500,  2.0000],
                [-0.7500,  4.0000]], dtype=fjax.float32)
        >>> F.prelu(x, fjax.tensor([0.1, 0.5]))
        tensor([[-0.1000,  2.0000],
                [-0.3000,  4.0000]], dtype=fjax.float32)
    """
    input, weight = promote(input, weight)
    if weight.size != 1:
        channels = input.shape[1] if input.ndim >= 2 else 1
        if weight.ndim != 1 or weight.size != channels:
            raise ValueError(
                f"prelu: expected a weight of 1 or {channels} elements for input {input.shape}, got {weight.shape}"
            )
        weight = weight.reshape((-1,) + (1,) * (input.ndim - 2))
    elif input.ndim < weight.ndim:
        weight = weight.reshape(())
    return jnp.where(input > 0, input, weight * input)


@defop(static=("training",), method=False)
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """Randomized leaky ReLU, evaluation mode: negative values are scaled by the fixed slope
    ``(lower + upper) / 2``.

    ``training=True`` (a random slope per element) is not supported by this op; use
    ``F.rrelu``, which draws the slopes from the global generator.

    Example::

        >>> fjax.rrelu(fjax.tensor([-3.0, 1.0]), lower=0.125, upper=0.375)
        tensor([-0.7500,  1.0000], dtype=fjax.float32)
    """
    if training:
        raise NotImplementedError("rrelu: training=True (random slopes) is not supported")
    input = to_float(input)
    return jnp.where(input > 0, input, input * jnp.asarray((lower + upper) / 2, input.dtype))


def _softmax_dim(name, ndim, dim):
    if dim is None:
        return 0 if ndim in (0, 1, 3) else 1
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise _checks.IndexOpError(f"{name}: dim {dim} is out of range for a {ndim}-d input")
    return dim


def _softmax_input(name, input, dim, dtype):
    if dtype is not None:
        input = input.astype(dtype)
    elif not jnp.issubdtype(input.dtype, jnp.inexact):
        raise TypeError(f"{name}: expected a floating point input, got {input.dtype}")
    return input, _softmax_dim(name, input.ndim, dim)


def _not_over_rows(statics, shapes):
    """softmax's rows are its own unless it normalizes over dim 0 (or ``dim`` is implicit)."""
    dim, ndim = statics.get("dim"), len(shapes["input"][0])
    return dim is not None and ndim >= 2 and dim % ndim != 0


def _softmax_dims(statics, padded, shapes, n, size):
    """Padded dims pass through; over a padded dim its padding holds -inf (exp gives 0)."""
    dim, ndim = statics.get("dim"), len(shapes["input"][0])
    if set(padded) != {"input"} or dim is None or not -ndim <= dim < ndim:
        return None
    fill = {"input": {dim % ndim: float("-inf")}} if dim % ndim in padded["input"] else {}
    return Plan(padded["input"], fill=fill)


_ROWS_BUT_DIM = Rows(("input",), when=_not_over_rows, dims=_softmax_dims)


@defop(static=("dim", "dtype"), rows=_ROWS_BUT_DIM)
def softmax(input, dim=None, dtype=None):
    """Softmax ``exp(x) / sum(exp(x))`` along ``dim``: the slices along ``dim`` sum to 1.

    ``dtype`` casts the input first; otherwise the input must be floating point. Pass ``dim``
    explicitly: when omitted, torch's legacy rule picks 0 for 0-, 1- and 3-d inputs, else 1.

    Example::

        >>> x = fjax.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
        >>> fjax.softmax(x, dim=1)
        tensor([[0.0900, 0.2447, 0.6652],
                [0.3333, 0.3333, 0.3333]], dtype=fjax.float32)
        >>> fjax.tensor([0, 1]).softmax(0, dtype=fjax.float64)
        tensor([0.2689, 0.7311], dtype=fjax.float64)
    """
    input, dim = _softmax_input("softmax", input, dim, dtype)
    axis = dim if input.ndim else None
    return _saving.saves_result(lambda x: jax.nn.softmax(x, axis=axis), _saving.softmax_rule(axis), input)


@defop(static=("dim", "dtype"), rows=_ROWS_BUT_DIM)
def log_softmax(input, dim=None, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed without forming the softmax (no underflow).

    ``dim`` and ``dtype`` behave as in ``softmax``.

    Example::

        >>> x = fjax.tensor([1.0, 2.0, 3.0])
        >>> fjax.log_softmax(x, dim=0)
        tensor([-2.4076, -1.4076, -0.4076], dtype=fjax.float32)
        >>> x.log_softmax(dim=0).exp().sum()
        tensor(1., dtype=fjax.float32)
    """
    input, dim = _softmax_input("log_softmax", input, dim, dtype)
    axis = dim if input.ndim else None
    return _saving.saves_result(lambda x: jax.nn.log_softmax(x, axis=axis), _saving.log_softmax_rule(axis), input)


@defop(static=("dim", "dtype"), method=False)
def _safe_softmax(input, dim, dtype=None):
    """ATen's ``_safe_softmax``: ``softmax``, except that a slice whose entries are all ``-inf``
    gives zeros instead of NaN (attention rows with every key masked).

    Example::

        >>> x = fjax.tensor([[0.0, 0.0], [-float("inf"), -float("inf")]])
        >>> fjax.dispatch.functions._safe_softmax(x, 1)
        tensor([[0.5000, 0.5000],
                [0.0000, 0.0000]], dtype=fjax.float32)
    """
    input, dim = _softmax_input("_safe_softmax", input, dim, dtype)
    axis = dim if input.ndim else None

    def f(x):
        masked = jnp.all(x == -jnp.inf, axis=axis, keepdims=True)
        out = jax.nn.softmax(jnp.where(masked, jnp.zeros((), x.dtype), x), axis=axis)
        return jnp.where(masked, jnp.zeros((), out.dtype), out)

    # softmax's backward from the result alone (a masked row's zeros pass no gradient), as torch's
    return _saving.saves_result(f, _saving.softmax_rule(axis), input)


@defop(static=("dim", "input_dtype"), method=False)
def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """ATen's ``_softmax_backward_data``: the gradient of ``softmax`` at its ``output``,
    ``output * (grad_output - sum(grad_output * output, dim))``, in ``grad_output``'s dtype, or
    in ``input_dtype`` where that is a half-precision float (a softmax computed in float32).

    Example::

        >>> y = fjax.tensor([0.5, 0.5])
        >>> fjax.dispatch.functions._softmax_backward_data(fjax.tensor([1.0, 0.0]), y, 0, fjax.float32)
        tensor([ 0.2500, -0.2500], dtype=fjax.float32)
    """
    dim = _softmax_dim("_softmax_backward_data", output.ndim, dim)
    axis = dim if output.ndim else None
    grad = output * (grad_output - jnp.sum(grad_output * output, axis=axis, keepdims=True))
    return grad.astype(input_dtype) if jnp.dtype(input_dtype) in (jnp.float16, jnp.bfloat16) else grad


@defop(static=("dim", "dtype"), method=False)
def softmin(input, dim=None, *, dtype=None):
    """``softmax(-x)`` along ``dim``: the smallest value gets the largest weight.

    ``dim`` and ``dtype`` behave as in ``softmax``.

    Example::

        >>> fjax.softmin(fjax.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([0.6652, 0.2447, 0.0900], dtype=fjax.float32)
    """
    input, dim = _softmax_input("softmin", input, dim, dtype)
    return jax.nn.softmax(-input, axis=dim if input.ndim else None)


def vector_norm(x, p, axis, keepdims=False):
    """p-norm along ``axis`` whose gradient at a zero vector is 0, as torch's."""
    ax = jnp.abs(x)
    if p == math.inf:
        return jnp.max(ax, axis=axis, keepdims=keepdims)
    if p == -math.inf:
        return jnp.min(ax, axis=axis, keepdims=keepdims)
    if p == 0:
        return jnp.sum((x != 0).astype(x.dtype), axis=axis, keepdims=keepdims)
    if p == 1:
        return jnp.sum(ax, axis=axis, keepdims=keepdims)
    s = jnp.sum(ax**p if p != 2 else x * x, axis=axis, keepdims=keepdims)
    nonzero = s != 0  # NaN must stay NaN
    root = jnp.where(nonzero, s, 1) ** (1.0 / p) if p != 2 else jnp.sqrt(jnp.where(nonzero, s, 1))
    return jnp.where(nonzero, root, 0)


@defop(static=("p", "dim"), method=False)
def normalize(input, p=2.0, dim=1, eps=1e-12):
    """Divide ``input`` by its ``p``-norm along ``dim``: ``input / max(||input||_p, eps)``.

    Defaults are ``p=2`` and ``dim=1``; ``eps`` keeps an all-zero slice at zero instead of NaN.

    Args:
        input: the input tensor.
        p: the norm degree (default 2.0).
        dim: the dimension normalized along (default 1).
        eps: the lower bound of the norm (default 1e-12).

    Example::

        >>> F.normalize(fjax.tensor([[3.0, 4.0], [0.0, 0.0]]))
        tensor([[0.6000, 0.8000],
                [0.0000, 0.0000]], dtype=fjax.float32)
        >>> F.normalize(fjax.tensor([1.0, 3.0]), p=1.0, dim=0)
        tensor([0.2500, 0.7500], dtype=fjax.float32)
    """
    input = to_float(input)
    if isinstance(dim, int) and input.ndim:
        _softmax_dim("normalize", input.ndim, dim)
    norm = vector_norm(input, p, dim if input.ndim else None, keepdims=True)
    return input / jnp.maximum(norm, jnp.asarray(eps, input.dtype))


@defop(static=("dim",), method=False)
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (default 1).

    The inputs broadcast against each other and ``dim`` is removed from the result. Each norm
    is clamped to at least ``eps`` without changing its gradient, exactly as torch does.

    Args:
        x1: the first tensor.
        x2: the second tensor, broadcast against ``x1``.
        dim: the dimension the cosine is taken along (default 1).
        eps: the lower bound of each norm (default 1e-8).

    Example::

        >>> a = fjax.tensor([[1.0, 0.0], [1.0, 1.0], [-2.0, -2.0]])
        >>> F.cosine_similarity(a, fjax.tensor([1.0, 1.0]))
        tensor([ 0.7071,  1.0000, -1.0000], dtype=fjax.float32)
    """
    x1, x2 = promote(to_float(x1), to_float(x2))
    x1, x2 = jnp.broadcast_arrays(x1, x2)
    if x1.ndim == 0:  # torch takes a 0-d input as one element along dim 0 (or -1)
        return cosine_similarity(x1[None], x2[None], 0 if dim in (0, -1) else dim, eps)
    _softmax_dim("cosine_similarity", x1.ndim, dim)
    eps = jnp.asarray(eps, x1.dtype)

    def unit(x):
        n = vector_norm(x, 2, dim, keepdims=True)
        return x / (n + jax.lax.stop_gradient(jnp.maximum(n, eps) - n))

    return jnp.sum(unit(x1) * unit(x2), axis=dim)


@defop(static=("p", "keepdim"), method=False)
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """Distance ``||x1 - x2 + eps||_p`` between matching rows, taken along the last dimension.

    ``x1`` and ``x2`` broadcast; ``eps`` (default 1e-6) is added to the difference, as torch
    does, and ``keepdim=True`` keeps the reduced dimension with size 1.

    Args:
        x1: the first tensor.
        x2: the second tensor, broadcast against ``x1``.
        p: the norm degree (default 2.0).
        eps: added to the difference (default 1e-6).
        keepdim: keep the reduced last dimension with size 1 (default False).

    Example::

        >>> a = fjax.tensor([[0.0, 0.0], [1.0, 1.0]])
        >>> F.pairwise_distance(a, fjax.tensor([[3.0, 4.0], [1.0, 2.0]]))
        tensor([5.0000, 1.0000], dtype=fjax.float32)
        >>> F.pairwise_distance(a, fjax.tensor([3.0, 4.0]), p=1.0, keepdim=True)
        tensor([[7.0000],
                [5.0000]], dtype=fjax.float32)
    """
    x1, x2 = promote(to_float(x1), to_float(x2))
    diff = x1 - x2 + jnp.asarray(eps, x1.dtype)
    if diff.ndim == 0:
        return vector_norm(diff, p, None, keepdims=keepdim)
    return vector_norm(diff, p, -1, keepdims=keepdim)


@defop(static=("p",), method=False)
def pdist(input, p=2.0):
    """The ``p``-norm distances between every pair of rows of an ``(N, M)`` input: the upper
    triangle of the distance matrix, row by row, as a vector of ``N * (N - 1) / 2``.

    Args:
        input: an ``(N, M)`` tensor of ``N`` rows.
        p: the norm degree, at least 0 (default 2.0).

    Example::

        >>> F.pdist(fjax.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]]))
        tensor([ 5., 10.,  5.], dtype=fjax.float32)
    """
    if input.ndim != 2:
        raise ValueError(f"pdist: expected a 2-d input (N, M), got {input.shape}")
    if p < 0:
        raise ValueError(f"pdist: p must be non-negative, got {p}")
    input = to_float(input)
    i, j = np.triu_indices(input.shape[0], 1)
    diff = input[i] - input[j]
    return vector_norm(diff, p, -1) if diff.shape[0] else diff[:, 0]
