"""Activations, softmax family and vector similarities (torch.nn.functional)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ._promote import promote, to_float
from ._registry import defop


def _clip(x, lo, hi):
    """``min(max(x, lo), hi)`` with zero gradient at and beyond both bounds, as torch's hardtanh."""
    lo, hi = jnp.asarray(lo, x.dtype), jnp.asarray(hi, x.dtype)
    return jnp.where(x <= lo, lo, jnp.where(x >= hi, hi, x))


@defop()
def relu(input):
    """``max(input, 0)`` as torch's: NaN and -0.0 pass through; the gradient is 0 where
    ``input <= 0`` (so 1 at NaN, as torch's)."""
    zero = jnp.zeros((), input.dtype)
    return jnp.where(input <= 0, jnp.where(input < 0, zero, jax.lax.stop_gradient(input)), input)


@defop(method=False)
def relu6(input):
    """``min(max(input, 0), 6)``."""
    return _clip(input, 0, 6)


@defop(method=False)
def leaky_relu(input, negative_slope=0.01):
    """``input`` where positive, else ``negative_slope * input``."""
    input = to_float(input)
    return jnp.where(input > 0, input, input * jnp.asarray(negative_slope, input.dtype))


def _elu(x, alpha, scale=1.0, input_scale=1.0):
    x = to_float(x)
    # where, not minimum: at 0 torch takes the negative branch's slope (minimum would halve it)
    neg = alpha * jnp.expm1(jnp.where(x > 0, 0, x) * input_scale)
    return scale * jnp.where(x > 0, x, neg.astype(x.dtype))


@defop(method=False)
def elu(input, alpha=1.0):
    """``input`` where positive, else ``alpha * (exp(input) - 1)``."""
    return _elu(input, alpha)


@defop(method=False)
def selu(input):
    """Scaled ELU with the self-normalizing constants."""
    return _elu(input, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946)


@defop(method=False)
def celu(input, alpha=1.0):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    return _elu(input, alpha, 1.0, 1.0 / alpha)


@defop(static=("approximate",), method=False)
def gelu(input, approximate="none"):
    """Gaussian error linear unit, exact (``'none'``) or with the tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return jax.nn.gelu(to_float(input), approximate=approximate == "tanh")


@defop(method=False)
def silu(input):
    """``input * sigmoid(input)``."""
    return jax.nn.silu(to_float(input))


@defop(method=False)
def mish(input):
    """``input * tanh(softplus(input))``."""
    input = to_float(input)
    return input * jnp.tanh(jax.nn.softplus(input))


@defop(method=False)
def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    input = to_float(input)
    bx = input * beta
    soft = (jnp.logaddexp(bx, 0) / beta).astype(input.dtype)
    return jnp.where(bx > threshold, input, soft)


@defop(method=False)
def softsign(input):
    """``input / (1 + |input|)``."""
    input = to_float(input)
    return input / (1 + jnp.abs(input))


@defop(method=False)
def hardtanh(input, min_val=-1.0, max_val=1.0):
    """Clamp to ``[min_val, max_val]`` with zero gradient outside the open interval."""
    return _clip(to_float(input), min_val, max_val)


@defop(method=False)
def hardsigmoid(input):
    """``relu6(x + 3) / 6``."""
    input = to_float(input)
    return _clip(input + 3, 0, 6) / 6


@defop(method=False)
def hardswish(input):
    """``x * relu6(x + 3) / 6``."""
    input = to_float(input)
    return input * _clip(input + 3, 0, 6) / 6


@defop(method=False)
def logsigmoid(input):
    """``log(sigmoid(input))``, computed stably."""
    return jax.nn.log_sigmoid(to_float(input))


@defop(method=False)
def tanhshrink(input):
    """``input - tanh(input)``."""
    input = to_float(input)
    return input - jnp.tanh(input)


@defop(method=False)
def softshrink(input, lambd=0.5):
    """Shrink towards 0 by ``lambd``; 0 inside ``[-lambd, lambd]``."""
    lambd = jnp.asarray(lambd, input.dtype)
    zero = jnp.zeros((), input.dtype)
    return jnp.where(input > lambd, input - lambd, jnp.where(input < -lambd, input + lambd, zero))


@defop()
def hardshrink(input, lambd=0.5):
    """``input`` where ``|input| > lambd``, else 0."""
    return jnp.where(jnp.abs(input) > lambd, input, jnp.zeros((), input.dtype))


@defop(method=False)
def threshold(input, threshold, value):
    """``input`` where ``input > threshold``, else ``value``."""
    return jnp.where(input > threshold, input, jnp.asarray(value, input.dtype))


@defop(static=("dim",), method=False)
def glu(input, dim=-1):
    """Gated linear unit: ``a * sigmoid(b)`` for the two halves of ``input`` along ``dim``."""
    if input.ndim == 0 or input.shape[dim] % 2:
        raise ValueError(f"glu: dim {dim} of input {input.shape} must have an even size")
    a, b = jnp.split(to_float(input), 2, axis=dim)
    return a * jax.nn.sigmoid(b)


@defop()
def prelu(input, weight):
    """Leaky ReLU with a learned slope: one for all channels or one per channel (dim 1)."""
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
    """Randomized leaky ReLU in eval mode: slope ``(lower + upper) / 2``."""
    if training:
        raise NotImplementedError("rrelu: training=True (random slopes) is not supported")
    input = to_float(input)
    return jnp.where(input > 0, input, input * jnp.asarray((lower + upper) / 2, input.dtype))


def _softmax_dim(name, ndim, dim):
    if dim is None:
        return 0 if ndim in (0, 1, 3) else 1
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise ValueError(f"{name}: dim {dim} is out of range for a {ndim}-d input")
    return dim


def _softmax_input(name, input, dim, dtype):
    if dtype is not None:
        input = input.astype(dtype)
    elif not jnp.issubdtype(input.dtype, jnp.inexact):
        raise TypeError(f"{name}: expected a floating point input, got {input.dtype}")
    return input, _softmax_dim(name, input.ndim, dim)


@defop(static=("dim", "dtype"))
def softmax(input, dim=None, *, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim`` (optionally casting to ``dtype`` first)."""
    input, dim = _softmax_input("softmax", input, dim, dtype)
    return jax.nn.softmax(input, axis=dim if input.ndim else None)


@defop(static=("dim", "dtype"))
def log_softmax(input, dim=None, *, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed stably."""
    input, dim = _softmax_input("log_softmax", input, dim, dtype)
    return jax.nn.log_softmax(input, axis=dim if input.ndim else None)


@defop(static=("dim", "dtype"), method=False)
def softmin(input, dim=None, *, dtype=None):
    """``softmax(-x)`` along ``dim``."""
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
    """``input / max(||input||_p, eps)`` along ``dim``."""
    input = to_float(input)
    norm = vector_norm(input, p, dim if input.ndim else None, keepdims=True)
    return input / jnp.maximum(norm, jnp.asarray(eps, input.dtype))


@defop(static=("dim",), method=False)
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcast).

    Each norm is clamped to ``eps`` without changing its gradient, exactly as torch does.
    """
    x1, x2 = promote(to_float(x1), to_float(x2))
    x1, x2 = jnp.broadcast_arrays(x1, x2)
    eps = jnp.asarray(eps, x1.dtype)

    def unit(x):
        n = vector_norm(x, 2, dim, keepdims=True)
        return x / (n + jax.lax.stop_gradient(jnp.maximum(n, eps) - n))

    return jnp.sum(unit(x1) * unit(x2), axis=dim)


@defop(static=("p", "keepdim"), method=False)
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` along the last dimension."""
    x1, x2 = promote(to_float(x1), to_float(x2))
    diff = x1 - x2 + jnp.asarray(eps, x1.dtype)
    if diff.ndim == 0:
        return vector_norm(diff, p, None, keepdims=keepdim)
    return vector_norm(diff, p, -1, keepdims=keepdim)
