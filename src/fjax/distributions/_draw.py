"""Draws fjax has no op for (gamma, Poisson, binomial), taken from ``jax.random`` with a key from
fjax's default generator, so ``fjax.manual_seed`` controls them as it does ``fjax.randn``.

XLA takes seconds to compile these samplers (rejection loops), once per array shape. So the
parameters are flattened and padded to a bucket size (a power of two from 1024 up to
``_CHUNK``; larger draws go in ``_CHUNK``-sized pieces): a program compiles once per bucket and
dtype, not once per shape.

The gamma draw is differentiable in its concentration by implicit reparametrization: the
sample ``x`` is returned as ``x + (alpha - alpha.detach()) * dx/dalpha``, whose value is ``x``
and whose first derivative is the implicit one (``jax.lax.random_gamma_grad``), all in fjax
ops, so the tape and fjax.func transforms see it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import random as _random
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from .utils import _traced

_CHUNK = 16384


@jax.jit
def _gamma(key, alpha):
    x = jax.random.gamma(key, alpha, dtype=alpha.dtype)
    return jnp.maximum(x, jnp.finfo(alpha.dtype).tiny)


@jax.jit
def _gamma_slope(alpha, x):
    slope = jax.lax.random_gamma_grad(alpha, x)
    return jnp.where(jnp.isfinite(slope), slope, 0)


@jax.jit
def _poisson(key, lam):
    return jax.random.poisson(key, lam, lam.shape).astype(lam.dtype)


@jax.jit
def _binomial(key, n, p):
    return jax.random.binomial(key, n, p, p.shape, p.dtype)


def _bucketed(fn, key, *arrays):
    """``fn(key, *flat_arrays)`` over same-shape ``arrays``, run on padded buckets, reshaped back."""
    shape, n = arrays[0].shape, arrays[0].size
    size = min(_CHUNK, max(1024, 1 << max(n - 1, 0).bit_length()))
    pieces = -(-n // size)
    pad = pieces * size - n
    flat = [jnp.pad(a.reshape(-1), (0, pad), constant_values=1).reshape(pieces, size) for a in arrays]
    if key is None:
        out = [fn(*(f[i] for f in flat)) for i in range(pieces)]
    else:
        out = [fn(jax.random.fold_in(key, i), *(f[i] for f in flat)) for i in range(pieces)]
    return jnp.concatenate(out)[:n].reshape(shape)


def _key():
    return _random.default_generator.next_key()


def standard_gamma(concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) draws of ``concentration``'s shape, differentiable in ``concentration``."""
    alpha = concentration.detach()._data
    x = _bucketed(_gamma, _key(), alpha)
    sample = Tensor._wrap(x)
    if not ((concentration.requires_grad and is_grad_enabled()) or _traced(concentration)):
        return sample
    slope = Tensor._wrap(_bucketed(_gamma_slope, None, alpha, x))
    return sample + (concentration - concentration.detach()) * slope


def poisson(rate: Tensor) -> Tensor:
    """Poisson(rate) draws of ``rate``'s shape and dtype."""
    return Tensor._wrap(_bucketed(_poisson, _key(), rate.detach()._data))


def binomial(total_count: Tensor, probs: Tensor) -> Tensor:
    """Binomial(total_count, probs) draws of their common shape, in ``probs``' dtype."""
    n, p = total_count.detach()._data, probs.detach()._data
    return Tensor._wrap(_bucketed(_binomial, _key(), n.astype(p.dtype), p))
