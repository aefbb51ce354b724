"""Pooling and interpolation (torch.nn.functional), with torch's window and pixel geometry."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax

from ._promote import to_float
from ._registry import defop
from .conv import _batched, _tup


def _pool_geometry(name, size, k, s, p, d, ceil_mode):
    """torch's pooling_output_shape; returns (output size, (pad_lo, pad_hi))."""
    eff = d * (k - 1) + 1
    if p > eff // 2:
        raise ValueError(f"{name}: padding {p} must be at most half of the kernel size {eff}")
    num = size + 2 * p - eff + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    if out < 1:
        raise ValueError(f"{name}: input size {size} is too small for kernel {k} (output {out})")
    return out, (p, max((out - 1) * s + eff - size - p, 0))


def _pool_args(name, nd, kernel_size, stride, padding, dilation):
    kernel = _tup(name, "kernel_size", kernel_size, nd)
    stride = kernel if stride is None or stride == () else _tup(name, "stride", stride, nd)
    padding = _tup(name, "padding", padding, nd)
    dilation = _tup(name, "dilation", dilation, nd)
    return kernel, stride, padding, dilation


def _max_pool(name, nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unbatched = _batched(name, input, nd)
    kernel, stride, padding, dilation = _pool_args(name, nd, kernel_size, stride, padding, dilation)
    spatial = x.shape[2:]
    geo = [
        _pool_geometry(name, n, k, s, p, d, ceil_mode)
        for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)
    ]
    if return_indices:
        out, idx = _windowed_argmax(
            x, [_window_taps(n, k, s, p, d, o) for n, (o, _), k, s, p, d in
                zip(spatial, geo, kernel, stride, padding, dilation)],
        )  # fmt: skip
        return (out[0], idx[0]) if unbatched else (out, idx)
    low = -jnp.inf if jnp.issubdtype(x.dtype, jnp.inexact) else jnp.iinfo(x.dtype).min
    out = lax.reduce_window(
        x, jnp.asarray(low, x.dtype), lax.max, (1, 1) + kernel, (1, 1) + stride,
        ((0, 0), (0, 0)) + tuple(pads for _, pads in geo), window_dilation=(1, 1) + dilation,
    )  # fmt: skip
    out = out[(slice(None), slice(None)) + tuple(slice(o) for o, _ in geo)]
    return out[0] if unbatched else out


def _window_taps(size, k, s, p, d, out):
    """Input indices (out, k) of each pooling window and which of them lie inside the input."""
    idx = np.arange(out)[:, None] * s - p + np.arange(k)[None, :] * d
    return idx, (idx >= 0) & (idx < size)


def _adaptive_taps(size, out):
    """torch's adaptive windows [floor(o * n / out), ceil((o + 1) * n / out)) as padded taps."""
    o = np.arange(out)
    start, end = (o * size) // out, ((o + 1) * size + out - 1) // out
    idx = start[:, None] + np.arange(max(end - start))[None, :]
    return idx, idx < end[:, None]


def _windowed_argmax(x, taps):
    """Max and torch's flat spatial argmax over windows given per spatial dim as taps.

    The first maximum in window order wins and NaN propagates, as in torch.
    """
    nd, spatial = len(taps), x.shape[2:]
    strides = [math.prod(spatial[a + 1 :]) for a in range(nd)]
    flat, valid = np.zeros((1,) * 2 * nd, np.int64), np.ones((1,) * 2 * nd, bool)
    for a, (idx, ok) in enumerate(taps):
        shape = [1] * 2 * nd
        shape[2 * a : 2 * a + 2] = idx.shape
        flat = flat + np.clip(idx, 0, spatial[a] - 1).reshape(shape) * strides[a]
        valid = valid & ok.reshape(shape)
    order = tuple(range(0, 2 * nd, 2)) + tuple(range(1, 2 * nd, 2))
    outs = tuple(idx.shape[0] for idx, _ in taps)
    flat = flat.transpose(order).reshape(outs + (-1,))
    valid = np.broadcast_to(valid, flat.shape if False else valid.shape)
    valid = np.broadcast_to(valid.transpose(order), flat.shape[:-1] + (1,) * 0 + (-1,) and flat.shape)
    vals = x.reshape(x.shape[:2] + (-1,))[:, :, flat]
    vals = jnp.where(valid, vals, jnp.asarray(_lowest(x.dtype), x.dtype))
    arg = jnp.argmax(vals, axis=-1, keepdims=True)
    out = jnp.take_along_axis(vals, arg, axis=-1)[..., 0]
    idx = jnp.take_along_axis(jnp.broadcast_to(jnp.asarray(flat), vals.shape), arg, axis=-1)
    return out, idx[..., 0].astype(jnp.int64)


def _lowest(dtype):
    return -jnp.inf if jnp.issubdtype(dtype, jnp.inexact) else jnp.iinfo(dtype).min
