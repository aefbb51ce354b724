"""Pooling and interpolation (torch.nn.functional), with torch's window and pixel geometry."""

from __future__ import annotations

import itertools
import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..errors import IndexOutOfRange
from . import _checks
from ._promote import promote, to_float
from ._registry import batch_of, defop
from .conv import _batched, _tup
from .indexing import _check_range


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
    kernel = _tup(name, "kernel_size", kernel_size, nd, 1)
    stride = kernel if stride is None or stride == () else _tup(name, "stride", stride, nd, 1)
    padding = _tup(name, "padding", padding, nd, 0)
    dilation = _tup(name, "dilation", dilation, nd, 1)
    return kernel, stride, padding, dilation


def _max_pool(name, nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unbatched = _batched(name, input, nd)
    kernel, stride, padding, dilation = _pool_args(name, nd, kernel_size, stride, padding, dilation)
    spatial = x.shape[2:]
    geo = [
        _pool_geometry(name, n, k, s, p, d, ceil_mode)
        for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)
    ]
    if return_indices or any(d != 1 for d in dilation):
        # jax has no VJP for dilated max windows; gathering the windows also yields indices.
        taps = [
            _window_taps(n, k, s, p, d, o)
            for n, (o, _), k, s, p, d in zip(spatial, geo, kernel, stride, padding, dilation)
        ]
        out, idx = _windowed_argmax(x, taps)
        if unbatched:
            out, idx = out[0], idx[0]
        return (out, idx) if return_indices else out
    out = lax.reduce_window(
        x,
        _lowest(x.dtype),
        lax.max,
        (1, 1) + kernel,
        (1, 1) + stride,
        ((0, 0), (0, 0)) + tuple(pads for _, pads in geo),
        window_dilation=(1, 1) + dilation,
    )
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
    valid = valid.transpose(order).reshape(outs + (-1,))
    vals = x.reshape(x.shape[:2] + (-1,))[:, :, flat]
    vals = jnp.where(valid, vals, jnp.asarray(_lowest(x.dtype), x.dtype))
    arg = jnp.argmax(vals, axis=-1, keepdims=True)
    out = jnp.take_along_axis(vals, arg, axis=-1)[..., 0]
    idx = jnp.take_along_axis(jnp.broadcast_to(jnp.asarray(flat), vals.shape), arg, axis=-1)
    return out, idx[..., 0].astype(jnp.int64)


def _lowest(dtype):
    """The identity of max, as a Python scalar (reduce_window differentiates only those)."""
    return -math.inf if jnp.issubdtype(dtype, jnp.inexact) else int(jnp.iinfo(dtype).min)


_MAX_STATIC = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")


@defop(static=_MAX_STATIC, method=False, rows=batch_of(1))
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over sliding windows of an ``(N, C, L)`` or ``(C, L)`` input.

    ``stride`` defaults to ``kernel_size``; padding counts as ``-inf``. With ``ceil_mode`` a last,
    partial window is kept. ``return_indices=True`` also returns the int64 position of each
    maximum in the input (the first one on ties; NaN wins, as in torch).

    Args:
        input: the ``(N, C, L)`` or ``(C, L)`` input.
        kernel_size: the window size, an int or a 1-tuple.
        stride: the window step (default None: ``kernel_size``).
        padding: ``-inf`` padding added on each side (default 0).
        dilation: the spacing of the window's elements (default 1).
        ceil_mode: keep a last, partial window (default False).
        return_indices: also return the int64 positions of the maxima (default False).

    Example::

        >>> x = fjax.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]])
        >>> F.max_pool1d(x, 2)
        tensor([[[3., 5.]]], dtype=fjax.float32)
        >>> F.max_pool1d(x, 2, ceil_mode=True)
        tensor([[[3., 5., 4.]]], dtype=fjax.float32)
        >>> F.max_pool1d(x, 3, stride=1, return_indices=True)
        (tensor([[[3., 5., 5.]]], dtype=fjax.float32), tensor([[[1, 3, 3]]], dtype=fjax.int64))
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@defop(static=_MAX_STATIC, method=False, rows=batch_of(2))
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over sliding ``kh x kw`` windows of an ``(N, C, H, W)`` or ``(C, H, W)`` input.

    ``stride`` defaults to ``kernel_size``. With ``return_indices=True`` it also returns where
    each maximum came from, as an int64 index flattened over ``H * W``.

    Args:
        input: the ``(N, C, H, W)`` or ``(C, H, W)`` input.
        kernel_size: the window size, an int or an ``(h, w)`` pair.
        stride: the window step (default None: ``kernel_size``).
        padding: ``-inf`` padding added on each side (default 0).
        dilation: the spacing of the window's elements (default 1).
        ceil_mode: keep a last, partial window (default False).
        return_indices: also return the int64 positions of the maxima (default False).

    Example::

        >>> x = fjax.tensor([[[[1.0, 2.0, 5.0, 6.0], [3.0, 4.0, 7.0, 8.0]]]])
        >>> F.max_pool2d(x, 2)
        tensor([[[[4., 8.]]]], dtype=fjax.float32)
        >>> F.max_pool2d(x, 2, return_indices=True)[1]
        tensor([[[[5, 7]]]], dtype=fjax.int64)
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@defop(static=_MAX_STATIC, method=False, rows=batch_of(3))
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over sliding ``kd x kh x kw`` windows of an ``(N, C, D, H, W)`` or ``(C, D, H, W)``
    input; ``stride`` defaults to ``kernel_size``, and ``return_indices=True`` adds int64 argmax
    indices flattened over ``D * H * W``.

    Args:
        input: the ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input.
        kernel_size: the window size, an int or a ``(d, h, w)`` triple.
        stride: the window step (default None: ``kernel_size``).
        padding: ``-inf`` padding added on each side (default 0).
        dilation: the spacing of the window's elements (default 1).
        ceil_mode: keep a last, partial window (default False).
        return_indices: also return the int64 positions of the maxima (default False).

    Example::

        >>> F.max_pool3d(fjax.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
        tensor([[[[[7.]]]]], dtype=fjax.float32)
        >>> F.max_pool3d(fjax.ones(1, 3, 4, 4, 4), kernel_size=2, stride=1).shape
        fjax.Size([1, 3, 3, 3, 3])
    """
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_divisor(size, k, s, p, out, count_include_pad):
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if not count_include_pad:
        start, end = np.maximum(start, 0), np.minimum(end, size)
    return end - start


def _avg_pool(name, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor):
    x, unbatched = _batched(name, to_float(input), nd)
    kernel, stride, padding, _ = _pool_args(name, nd, kernel_size, stride, padding, 1)
    spatial = x.shape[2:]
    geo = [_pool_geometry(name, n, k, s, p, 1, ceil_mode) for n, k, s, p in zip(spatial, kernel, stride, padding)]
    out = lax.reduce_window(
        x,
        0.0,
        lax.add,
        (1, 1) + kernel,
        (1, 1) + stride,
        ((0, 0), (0, 0)) + tuple(pads for _, pads in geo),
    )
    out = out[(slice(None), slice(None)) + tuple(slice(o) for o, _ in geo)]
    if divisor == 0:
        raise _checks.OpError(f"{name}: divisor_override must be non-zero, got divisor_override={divisor}")
    if divisor is None:
        counts = [
            _avg_divisor(n, k, s, p, o, count_include_pad)
            for n, k, s, p, (o, _) in zip(spatial, kernel, stride, padding, geo)
        ]
        divisor = np.ones((), np.int64)
        for c in counts:
            divisor = np.multiply.outer(divisor, c)
    out = out / jnp.asarray(divisor, x.dtype)
    return out[0] if unbatched else out


_AVG_STATIC = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")


@defop(static=_AVG_STATIC, method=False, rows=batch_of(1))
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over sliding windows of an ``(N, C, L)`` or ``(C, L)`` input (integer input is
    averaged in float).

    ``stride`` defaults to ``kernel_size``. Zero padding is counted in the divisor unless
    ``count_include_pad=False``; ``ceil_mode`` keeps a last, partial window.

    Args:
        input: the ``(N, C, L)`` or ``(C, L)`` input.
        kernel_size: the window size, an int or a 1-tuple.
        stride: the window step (default None: ``kernel_size``).
        padding: zeros added on each side (default 0).
        ceil_mode: keep a last, partial window (default False).
        count_include_pad: count the zero padding in the divisor (default True).

    Example::

        >>> x = fjax.tensor([[[1.0, 2.0, 3.0]]])
        >>> F.avg_pool1d(x, 2, padding=1)
        tensor([[[0.5000, 2.5000]]], dtype=fjax.float32)
        >>> F.avg_pool1d(x, 2, padding=1, count_include_pad=False)
        tensor([[[1.0000, 2.5000]]], dtype=fjax.float32)
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


@defop(static=_AVG_STATIC + ("divisor_override",), method=False, rows=batch_of(2))
def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Mean over sliding ``kh x kw`` windows of an ``(N, C, H, W)`` or ``(C, H, W)`` input.

    ``stride`` defaults to ``kernel_size``; ``count_include_pad`` and ``ceil_mode`` work as in
    ``avg_pool1d``. ``divisor_override`` divides each window's sum by that number instead of the
    window size.

    Args:
        input: the ``(N, C, H, W)`` or ``(C, H, W)`` input.
        kernel_size: the window size, an int or an ``(h, w)`` pair.
        stride: the window step (default None: ``kernel_size``).
        padding: zeros added on each side (default 0).
        ceil_mode: keep a last, partial window (default False).
        count_include_pad: count the zero padding in the divisor (default True).
        divisor_override: divide each window's sum by this instead of its size (default None).

    Example::

        >>> x = fjax.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
        >>> F.avg_pool2d(x, 2)
        tensor([[[[2.5000]]]], dtype=fjax.float32)
        >>> F.avg_pool2d(x, 2, divisor_override=1)
        tensor([[[[10.]]]], dtype=fjax.float32)
    """
    return _avg_pool(
        "avg_pool2d",
        2,
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


@defop(static=_AVG_STATIC + ("divisor_override",), method=False, rows=batch_of(3))
def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Mean over sliding ``kd x kh x kw`` windows of an ``(N, C, D, H, W)`` or ``(C, D, H, W)``
    input; the options are those of ``avg_pool2d``.

    Args:
        input: the ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input.
        kernel_size: the window size, an int or a ``(d, h, w)`` triple.
        stride: the window step (default None: ``kernel_size``).
        padding: zeros added on each side (default 0).
        ceil_mode: keep a last, partial window (default False).
        count_include_pad: count the zero padding in the divisor (default True).
        divisor_override: divide each window's sum by this instead of its size (default None).

    Example::

        >>> F.avg_pool3d(fjax.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
        tensor([[[[[3.5000]]]]], dtype=fjax.float32)
    """
    return _avg_pool(
        "avg_pool3d",
        3,
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


def _apply_taps(x, axis, idx, weights=None):
    """``sum_t x[..., idx[o, t], ...] * weights[o, t]`` along ``axis`` (a static linear map)."""
    g = jnp.take(x, jnp.asarray(idx.reshape(-1)), axis=axis)
    g = g.reshape(x.shape[:axis] + idx.shape + x.shape[axis + 1 :])
    if weights is None:
        return jnp.squeeze(g, axis + 1)
    w = jnp.asarray(weights, x.dtype).reshape(idx.shape + (1,) * (x.ndim - axis - 1))
    return jnp.sum(g * w, axis=axis + 1)


def _output_size(name, output_size, spatial):
    nd = len(spatial)
    size = (output_size,) * nd if not isinstance(output_size, tuple) else output_size
    if len(size) != nd or not all(o is None or (isinstance(o, int) and o > 0) for o in size):
        raise ValueError(f"{name}: expected output_size of {nd} positive ints, got {output_size!r}")
    return tuple(n if o is None else o for o, n in zip(size, spatial))


def _adaptive_avg(name, nd, input, output_size):
    x, unbatched = _batched(name, to_float(input), nd)
    size = _output_size(name, output_size, x.shape[2:])
    for axis, (n, o) in enumerate(zip(x.shape[2:], size)):
        idx, ok = _adaptive_taps(n, o)
        x = _apply_taps(x, axis + 2, np.minimum(idx, n - 1), ok / ok.sum(1, keepdims=True))
    return x[0] if unbatched else x


@defop(static=("output_size",), method=False, rows=batch_of(1))
def adaptive_avg_pool1d(input, output_size):
    """Mean over ``output_size`` windows that tile an ``(N, C, L)`` or ``(C, L)`` input.

    Window ``i`` spans ``[floor(i * L / out), ceil((i + 1) * L / out))``, so windows may differ
    in length and overlap when ``L`` is not a multiple of ``output_size``.

    Args:
        input: the ``(N, C, L)`` or ``(C, L)`` input.
        output_size: the output's spatial size, an int or a 1-tuple.

    Example::

        >>> F.adaptive_avg_pool1d(fjax.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]]), 2)
        tensor([[[2., 4.]]], dtype=fjax.float32)
    """
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


@defop(static=("output_size",), method=False, rows=batch_of(2))
def adaptive_avg_pool2d(input, output_size):
    """Mean over adaptive windows giving an ``(N, C, *output_size)`` result from any
    ``(N, C, H, W)`` or ``(C, H, W)`` input; an int means a square output, and ``None`` in
    ``output_size`` keeps that dim's input size. ``output_size=1`` is global average pooling.

    Args:
        input: the ``(N, C, H, W)`` or ``(C, H, W)`` input.
        output_size: the output's spatial size, an int or an ``(h, w)`` pair (None keeps a size).

    Example::

        >>> F.adaptive_avg_pool2d(fjax.arange(16.0).reshape(1, 1, 4, 4), 1)
        tensor([[[[7.5000]]]], dtype=fjax.float32)
        >>> F.adaptive_avg_pool2d(fjax.ones(1, 3, 7, 5), (2, None)).shape
        fjax.Size([1, 3, 2, 5])
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


@defop(static=("output_size",), method=False, rows=batch_of(3))
def adaptive_avg_pool3d(input, output_size):
    """Mean over adaptive windows giving an ``(N, C, *output_size)`` result from an
    ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input; ``None`` in ``output_size`` keeps that size.

    Args:
        input: the ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input.
        output_size: the output's spatial size, an int or a ``(d, h, w)`` triple (None keeps a size).

    Example::

        >>> F.adaptive_avg_pool3d(fjax.ones(2, 3, 5, 6, 7), 1).shape
        fjax.Size([2, 3, 1, 1, 1])
    """
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _adaptive_max(name, nd, input, output_size, return_indices):
    x, unbatched = _batched(name, input, nd)
    size = _output_size(name, output_size, x.shape[2:])
    out, idx = _windowed_argmax(x, [_adaptive_taps(n, o) for n, o in zip(x.shape[2:], size)])
    if unbatched:
        out, idx = out[0], idx[0]
    return (out, idx) if return_indices else out


@defop(static=("output_size", "return_indices"), method=False, rows=batch_of(1))
def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Maximum over ``output_size`` windows that tile an ``(N, C, L)`` or ``(C, L)`` input (the
    windows of ``adaptive_avg_pool1d``); ``return_indices=True`` also returns int64 argmax
    positions along ``L``.

    Args:
        input: the ``(N, C, L)`` or ``(C, L)`` input.
        output_size: the output's spatial size, an int or a 1-tuple.
        return_indices: also return the int64 positions of the maxima (default False).

    Example::

        >>> x = fjax.tensor([[[1.0, 5.0, 3.0, 4.0, 2.0]]])
        >>> F.adaptive_max_pool1d(x, 2, return_indices=True)
        (tensor([[[5., 4.]]], dtype=fjax.float32), tensor([[[1, 3]]], dtype=fjax.int64))
    """
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


@defop(static=("output_size", "return_indices"), method=False, rows=batch_of(2))
def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Maximum over adaptive windows giving an ``(N, C, *output_size)`` result from an
    ``(N, C, H, W)`` or ``(C, H, W)`` input; ``None`` in ``output_size`` keeps that size, and
    ``return_indices=True`` adds int64 argmax indices flattened over ``H * W``.

    Args:
        input: the ``(N, C, H, W)`` or ``(C, H, W)`` input.
        output_size: the output's spatial size, an int or an ``(h, w)`` pair (None keeps a size).
        return_indices: also return the int64 positions of the maxima (default False).

    Example::

        >>> F.adaptive_max_pool2d(fjax.arange(16.0).reshape(1, 1, 4, 4), 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]], dtype=fjax.float32)
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


@defop(static=("output_size", "return_indices"), method=False, rows=batch_of(3))
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Maximum over adaptive windows giving an ``(N, C, *output_size)`` result from an
    ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input; ``None`` in ``output_size`` keeps that size, and
    ``return_indices=True`` adds int64 argmax indices flattened over ``D * H * W``.

    Args:
        input: the ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input.
        output_size: the output's spatial size, an int or a ``(d, h, w)`` triple (None keeps a size).
        return_indices: also return the int64 positions of the maxima (default False).

    Example::

        >>> F.adaptive_max_pool3d(fjax.arange(8.0).reshape(1, 1, 2, 2, 2), 1, return_indices=True)
        (tensor([[[[[7.]]]]], dtype=fjax.float32), tensor([[[[[7]]]]], dtype=fjax.int64))
    """
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


# -- max unpooling -------------------------------------------------------------------------------
def _unpool_size(name, nd, input, kernel_size, stride, padding, output_size):
    """The spatial output size: MaxPool's input size, from ``output_size`` or the geometry (torch
    bounds no argument here, only the size they give)."""
    kernel = _tup(name, "kernel_size", kernel_size, nd)
    stride = kernel if stride is None or stride == () else _tup(name, "stride", stride, nd)
    padding = _tup(name, "padding", padding, nd)
    spatial = jnp.shape(input)[-nd:]
    default = tuple((n - 1) * s - 2 * p + k for n, k, s, p in zip(spatial, kernel, stride, padding))
    if output_size is None:
        if any(d < 0 for d in default):
            raise ValueError(
                f"{name}: output_size must contain non-negative spatial dimensions, but kernel_size={kernel}, "
                f"stride={stride}, padding={padding} give {default} for input {jnp.shape(input)}"
            )
        return default
    size = tuple(output_size)[-nd:] if len(output_size) in (nd, nd + 2) else None
    if size is None or not all(d - s < o < d + s for o, d, s in zip(size, default, stride)):
        raise ValueError(
            f"{name}: invalid output_size {tuple(output_size)} for input {jnp.shape(input)}: each of the last {nd} "
            f"sizes must lie strictly between {tuple(d - s for d, s in zip(default, stride))} "
            f"and {tuple(d + s for d, s in zip(default, stride))}"
        )
    return size


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def _scatter_last(x, idx, length):
    """``out[n, c, idx[n, c, j]] = x[n, c, j]`` into zeros of length ``length``; the gradient
    gathers at ``idx`` for every ``j``, duplicates included, as torch's max_unpool does."""
    n, c = np.ogrid[: x.shape[0], : x.shape[1]]
    return jnp.zeros(x.shape[:2] + (length,), x.dtype).at[n[..., None], c[..., None], idx].set(x)


def _scatter_last_fwd(x, idx, length):
    return _scatter_last(x, idx, length), idx


def _scatter_last_bwd(length, idx, g):
    return jnp.take_along_axis(g, idx, axis=2), None


_scatter_last.defvjp(_scatter_last_fwd, _scatter_last_bwd)


def _max_unpool(name, nd, input, indices, kernel_size, stride, padding, output_size):
    x, unbatched = _batched(name, input, nd)
    if jnp.shape(indices) != jnp.shape(input) or not jnp.issubdtype(indices.dtype, jnp.integer):
        raise ValueError(
            f"{name}: expected integer indices of the input's shape {jnp.shape(input)}, "
            f"got {jnp.shape(indices)} {indices.dtype}"
        )
    size = _unpool_size(name, nd, input, kernel_size, stride, padding, output_size)
    flat = x.reshape(x.shape[:2] + (-1,))
    idx = indices.reshape(flat.shape).astype(jnp.int32 if math.prod(size) < 2**31 else jnp.int64)
    out = _scatter_last(flat, idx, math.prod(size)).reshape(x.shape[:2] + size)
    return out[0] if unbatched else out


def _check_unpool(nd):
    name = f"max_unpool{nd}d"

    def check(input, indices, kernel_size, stride=None, padding=0, output_size=None):
        length = math.prod(_unpool_size(name, nd, input, kernel_size, stride, padding, output_size))
        _check_range(indices, 0, length, IndexOutOfRange, lambda v: f"{name}: index {v} is out of range for {length}")

    return check


_UNPOOL_STATIC = ("kernel_size", "stride", "padding", "output_size")


@defop(static=_UNPOOL_STATIC, method=False, check=_check_unpool(1))
def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """A partial inverse of ``max_pool1d``: each value goes back to the position its index names
    (as ``max_pool1d(..., return_indices=True)`` returns them), every other position is 0.

    The output length is ``(L - 1) * stride - 2 * padding + kernel_size`` unless ``output_size``
    (with or without the ``N, C`` dims) picks one of the lengths that pool to ``L``.

    Args:
        input: the pooled ``(N, C, L)`` or ``(C, L)`` values.
        indices: the positions ``max_pool1d(..., return_indices=True)`` returned.
        kernel_size: the pooling window size, an int or a 1-tuple.
        stride: the pooling step (default None: ``kernel_size``).
        padding: the pooling padding (default 0).
        output_size: the output's size, with or without the ``N, C`` dims (default None: the smallest).

    Example::

        >>> x = fjax.tensor([[[1.0, 3.0, 2.0, 5.0]]])
        >>> out, idx = F.max_pool1d(x, 2, return_indices=True)
        >>> F.max_unpool1d(out, idx, 2)
        tensor([[[0., 3., 0., 5.]]], dtype=fjax.float32)
        >>> F.max_unpool1d(out, idx, 2, output_size=[5]).shape
        fjax.Size([1, 1, 5])
    """
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


@defop(static=_UNPOOL_STATIC, method=False, check=_check_unpool(2))
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """A partial inverse of ``max_pool2d`` for ``(N, C, H, W)`` or ``(C, H, W)`` input: values go
    to their indices (flattened over the output's ``H * W``), zeros elsewhere.

    Args:
        input: the pooled ``(N, C, H, W)`` or ``(C, H, W)`` values.
        indices: the positions ``max_pool2d(..., return_indices=True)`` returned.
        kernel_size: the pooling window size, an int or an ``(h, w)`` pair.
        stride: the pooling step (default None: ``kernel_size``).
        padding: the pooling padding (default 0).
        output_size: the output's size, with or without the ``N, C`` dims (default None: the smallest).

    Example::

        >>> x = fjax.tensor([[[[1.0, 2.0], [4.0, 3.0]]]])
        >>> out, idx = F.max_pool2d(x, 2, return_indices=True)
        >>> F.max_unpool2d(out, idx, 2)
        tensor([[[[0., 0.],
                  [4., 0.]]]], dtype=fjax.float32)
    """
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


@defop(static=_UNPOOL_STATIC, method=False, check=_check_unpool(3))
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """A partial inverse of ``max_pool3d`` for ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input:
    values go to their indices (flattened over ``D * H * W``), zeros elsewhere.

    Args:
        input: the pooled ``(N, C, D, H, W)`` or ``(C, D, H, W)`` values.
        indices: the positions ``max_pool3d(..., return_indices=True)`` returned.
        kernel_size: the pooling window size, an int or a ``(d, h, w)`` triple.
        stride: the pooling step (default None: ``kernel_size``).
        padding: the pooling padding (default 0).
        output_size: the output's size, with or without the ``N, C`` dims (default None: the smallest).

    Example::

        >>> out, idx = F.max_pool3d(fjax.arange(8.0).reshape(1, 1, 2, 2, 2), 2, return_indices=True)
        >>> F.max_unpool3d(out, idx, 2).flatten()
        tensor([0., 0., 0., 0., 0., 0., 0., 7.], dtype=fjax.float32)
    """
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


# -- fractional max pooling ----------------------------------------------------------------------
def _fractional_starts(samples, size, out, k):
    """torch's pseudo-random window starts (Graham's fractional pooling): ``(N, C, out)``."""
    if out == 1:
        return jnp.full(samples.shape + (1,), size - k, jnp.int32)
    alpha = (size - k) / (out - 1)
    u = samples.astype(jnp.float64 if samples.dtype == jnp.float64 else jnp.float32)[..., None]
    i = jnp.arange(out, dtype=u.dtype)
    starts = (jnp.floor((i + u) * alpha) - jnp.floor(u * alpha)).astype(jnp.int32)
    return starts.at[..., -1].set(size - k)


def _fractional_max_pool(name, nd, input, kernel_size, output_size, output_ratio, return_indices, samples):
    x, unbatched = _batched(name, input, nd)
    if samples is None:
        raise ValueError(f"{name}: the op needs _random_samples (F.{name} draws them)")
    kernel = _tup(name, "kernel_size", kernel_size, nd, 1)
    spatial = x.shape[2:]
    if (output_size is None) == (output_ratio is None):
        raise ValueError(f"{name}: pass exactly one of output_size and output_ratio")
    if output_size is None:
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * nd
        if len(ratio) != nd or not all(0 < r < 1 for r in ratio):
            raise ValueError(f"{name}: output_ratio must lie in (0, 1), got {output_ratio}")
        output_size = tuple(int(n * r) for n, r in zip(spatial, ratio))
    out = _tup(name, "output_size", output_size, nd, 0)
    if not all(o + k - 1 <= n for o, k, n in zip(out, kernel, spatial)):
        raise ValueError(f"{name}: output_size {out} + kernel_size {kernel} - 1 exceeds the input size {spatial}")
    if 0 in out:  # torch gives an empty result
        empty = jnp.zeros(x.shape[:2] + out, x.dtype)
        result, idx = (empty[0], empty[0].astype(jnp.int64)) if unbatched else (empty, empty.astype(jnp.int64))
        return (result, idx) if return_indices else result
    samples = samples.reshape(x.shape[:2] + (nd,))
    strides = [math.prod(spatial[a + 1 :]) for a in range(nd)]
    flat = jnp.zeros(x.shape[:2] + (1,) * 2 * nd, jnp.int32)
    for a in range(nd):  # torch: sample 0 drives W (then H) in 2-d, T (then H, W) in 3-d
        starts = _fractional_starts(samples[..., 1 - a if nd == 2 else a], spatial[a], out[a], kernel[a])
        taps = (starts[..., :, None] + jnp.arange(kernel[a])) * strides[a]
        shape = [1] * 2 * nd
        shape[a], shape[nd + a] = out[a], kernel[a]
        flat = flat + taps.reshape(x.shape[:2] + tuple(shape))
    flat = flat.reshape(x.shape[:2] + out + (-1,))
    vals = jnp.take_along_axis(x.reshape(x.shape[:2] + (-1,)), flat.reshape(x.shape[:2] + (-1,)), axis=-1)
    vals = vals.reshape(flat.shape)
    arg = jnp.argmax(vals, axis=-1, keepdims=True)
    result = jnp.take_along_axis(vals, arg, axis=-1)[..., 0]
    idx = jnp.take_along_axis(flat, arg, axis=-1)[..., 0].astype(jnp.int64)
    if unbatched:
        result, idx = result[0], idx[0]
    return (result, idx) if return_indices else result


_FRACTIONAL_STATIC = ("kernel_size", "output_size", "output_ratio", "return_indices")


@defop(static=_FRACTIONAL_STATIC, method=False)
def fractional_max_pool2d(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None
):
    """Fractional max pooling of ``(N, C, H, W)`` or ``(C, H, W)`` input: maxima over
    ``kernel_size`` windows whose pseudo-random starts step by a non-integer stride, so that the
    output has ``output_size`` (or ``output_ratio`` times the input size).

    ``_random_samples`` (``(N, C, 2)``, uniform in ``[0, 1)``) place the windows; ``F.`` draws
    them from the default generator when not given.

    Args:
        input: the ``(N, C, H, W)`` or ``(C, H, W)`` input.
        kernel_size: the window size, an int or an ``(h, w)`` pair.
        output_size: the output's spatial size, an int or a tuple; give this or ``output_ratio``.
        output_ratio: the output size as a fraction of the input size, in ``(0, 1)``.
        return_indices: also return the int64 positions of the maxima (default False).
        _random_samples: ``(N, C, 2)`` uniform samples in ``[0, 1)`` placing the windows (``F.`` draws them when None).

    Example::

        >>> x = fjax.arange(25.0).reshape(1, 1, 5, 5)
        >>> F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=fjax.zeros(1, 1, 2))
        tensor([[[[ 6.,  9.],
                  [21., 24.]]]], dtype=fjax.float32)
    """
    return _fractional_max_pool(
        "fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )


@defop(static=_FRACTIONAL_STATIC, method=False)
def fractional_max_pool3d(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None
):
    """Fractional max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (see
    ``fractional_max_pool2d``); ``_random_samples`` has shape ``(N, C, 3)``.

    Args:
        input: the ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input.
        kernel_size: the window size, an int or a ``(d, h, w)`` triple.
        output_size: the output's spatial size, an int or a tuple; give this or ``output_ratio``.
        output_ratio: the output size as a fraction of the input size, in ``(0, 1)``.
        return_indices: also return the int64 positions of the maxima (default False).
        _random_samples: ``(N, C, 3)`` uniform samples in ``[0, 1)`` placing the windows (``F.`` draws them when None).

    Example::

        >>> x = fjax.arange(27.0).reshape(1, 1, 3, 3, 3)
        >>> F.fractional_max_pool3d(x, 2, output_size=1, _random_samples=fjax.zeros(1, 1, 3))
        tensor([[[[[26.]]]]], dtype=fjax.float32)
    """
    return _fractional_max_pool(
        "fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )


_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _source_index(dst, scale, align_corners, cubic):
    """torch's area_pixel_compute_source_index."""
    if align_corners:
        return scale * dst
    src = scale * (dst + dst.dtype.type(0.5)) - dst.dtype.type(0.5)
    return src if cubic else np.maximum(src, 0)


def _cubic_weights(t, a=-0.75):
    """torch's get_cubic_upsample_coefficients (Keys kernel with A = -0.75)."""

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=1)


def _interp_taps(mode, size, out, scale_factor, align_corners, dtype):
    """(indices, weights) of one spatial dim, computed in ``dtype`` like torch's kernels."""
    dst = np.arange(out, dtype=dtype)
    if scale_factor is not None and scale_factor > 0:
        scale = dtype.type(1.0 / scale_factor)
    else:
        scale = dtype.type(size) / dtype.type(out)
    if mode in ("nearest", "nearest-exact"):
        if mode == "nearest":
            src = np.floor(dst * scale)
        else:
            src = np.floor((dst + dtype.type(0.5)) * scale)
        return np.minimum(src.astype(np.int64), size - 1)[:, None], None
    if align_corners:
        scale = dtype.type(size - 1) / dtype.type(out - 1) if out > 1 else dtype.type(0)
    src = _source_index(dst, scale, align_corners, mode == "bicubic")
    base = np.floor(src).astype(np.int64)
    t = (src - base).astype(dtype)
    if mode == "bicubic":
        idx = np.clip(base[:, None] + np.arange(-1, 3)[None, :], 0, size - 1)
        return idx, _cubic_weights(t)
    lam = np.clip(t, 0, 1)
    idx = np.stack([base, np.minimum(base + 1, size - 1)], axis=1)
    return idx, np.stack([1 - lam, lam], axis=1)


def _antialias_taps(size, out, scale_factor, align_corners, dtype):
    """(indices, weights) of antialiased bilinear resizing along one dim: a triangle filter
    stretched by the downscaling factor (PIL's convention, which torch follows), normalized."""
    if align_corners:
        scale = dtype.type((size - 1) / (out - 1) if out > 1 else 0.0)
    else:
        scale = dtype.type(1.0 / scale_factor if scale_factor else size / out)
    stretch = max(scale, dtype.type(1))
    half = dtype.type(0.5)
    center = scale * (np.arange(out, dtype=dtype) + half)
    lo = np.maximum((center - stretch + half).astype(np.int64), 0)
    hi = np.minimum((center + stretch + half).astype(np.int64), size)
    idx = lo[:, None] + np.arange(max(int((hi - lo).max()), 1))[None, :]
    w = np.maximum(0, 1 - np.abs((idx.astype(dtype) - center[:, None] + half) / stretch)) * (idx < hi[:, None])
    total = w.sum(1, keepdims=True, dtype=dtype)
    return np.minimum(idx, size - 1), (w / np.where(total > 0, total, 1)).astype(dtype)


def _resize_antialiased(name, input, out, scales, align_corners):
    x = to_float(input)
    dtype = np.dtype(np.float32) if x.dtype in (jnp.float16, jnp.bfloat16) else np.dtype(x.dtype)
    for axis, (n, o, s) in enumerate(zip(x.shape[2:], out, scales)):
        idx, w = _antialias_taps(n, o, s, align_corners, dtype)
        x = _apply_taps(x, axis + 2, idx, w)
    return x


@defop(static=("output_size", "align_corners", "scale_factors", "scales_h", "scales_w"), method=False)
def _upsample_bilinear2d_aa(input, output_size, align_corners, scale_factors=None, scales_h=None, scales_w=None):
    """ATen's antialiased bilinear resize of ``(N, C, H, W)`` input to ``output_size`` (or by
    ``scale_factors``): when shrinking, each output pixel averages all the input pixels under
    its stretched triangle filter, so no input pixel is skipped (``F.interpolate(...,
    mode="bilinear", antialias=True)``). ATen's two overloads: ``scale_factors`` (instead of
    ``output_size``), or ``output_size`` with the ``scales_h``/``scales_w`` that made it.

    Example::

        >>> x = fjax.tensor([[[[0.0, 1.0, 2.0, 3.0]]]])
        >>> F.interpolate(x, size=(1, 2), mode="bilinear", antialias=True)
        tensor([[[[0.7143, 2.2857]]]], dtype=fjax.float32)
    """
    if input.ndim != 4:
        raise ValueError(f"_upsample_bilinear2d_aa: expected a 4-d input, got {input.shape}")
    if (output_size is None) == (scale_factors is None):
        raise ValueError("_upsample_bilinear2d_aa: pass exactly one of output_size and scale_factors")
    scales = (scales_h, scales_w) if scale_factors is None else tuple(scale_factors)
    if output_size is None:
        output_size = tuple(math.floor(n * float(f)) for n, f in zip(input.shape[2:], scales))
    return _resize_antialiased("_upsample_bilinear2d_aa", input, tuple(output_size), scales, bool(align_corners))


@defop(
    static=("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor", "antialias"),
    method=False,
)
def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """Resize the spatial dims of ``(N, C, *spatial)`` with torch's pixel conventions.

    Give exactly one of ``size`` (the output's spatial size) and ``scale_factor`` (output size
    ``floor(input size * scale)``). Modes: ``nearest`` (torch's default, which picks
    ``floor(i / scale)``), ``nearest-exact``, ``linear`` (3-d), ``bilinear``/``bicubic`` (4-d),
    ``trilinear`` (5-d) and ``area`` (adaptive average pooling). ``align_corners=True`` maps the
    corner pixels of input and output onto each other; the default (False) aligns pixel edges.

    Args:
        input: the ``(N, C, *spatial)`` tensor (3-d, 4-d or 5-d).
        size: the output's spatial size (an int or a tuple); give this or ``scale_factor``.
        scale_factor: multiplier of each spatial size (a float or a tuple).
        mode: ``'nearest'`` (default), ``'nearest-exact'``, ``'linear'``, ``'bilinear'``, ``'bicubic'``,
            ``'trilinear'`` or ``'area'``.
        align_corners: for the linear and cubic modes, map corner pixels onto corner pixels (default None: False).
        recompute_scale_factor: if True, compute from the output size instead of using ``scale_factor``.
        antialias: antialiased resizing, ``mode='bilinear'`` only (default False).

    Example::

        >>> x = fjax.tensor([[[1.0, 2.0]]])
        >>> F.interpolate(x, scale_factor=2)
        tensor([[[1., 1., 2., 2.]]], dtype=fjax.float32)
        >>> F.interpolate(x, scale_factor=2, mode="linear")
        tensor([[[1.0000, 1.2500, 1.7500, 2.0000]]], dtype=fjax.float32)
        >>> F.interpolate(x, size=4, mode="linear", align_corners=True)
        tensor([[[1.0000, 1.3333, 1.6667, 2.0000]]], dtype=fjax.float32)
    """
    nd = input.ndim - 2
    if nd not in (1, 2, 3):
        raise ValueError(f"interpolate: expected a 3-d, 4-d or 5-d input, got {input.shape}")
    if antialias and mode != "bilinear":
        raise NotImplementedError(f"interpolate: antialias=True with mode={mode!r} (only 'bilinear')")
    if mode in _MODE_DIMS and _MODE_DIMS[mode] != nd:
        raise NotImplementedError(
            f"interpolate: mode {mode!r} needs a {_MODE_DIMS[mode] + 2}-d input, got {input.shape}"
        )
    if mode not in _MODE_DIMS and mode not in ("nearest", "nearest-exact", "area"):
        raise NotImplementedError(
            f"interpolate: mode={mode!r} is not one of 'nearest', 'linear', 'bilinear', 'bicubic', 'trilinear', "
            "'area', 'nearest-exact'"
        )
    if align_corners is not None and mode not in _MODE_DIMS:
        raise ValueError(f"interpolate: align_corners is only for linear modes, not {mode!r}")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: pass exactly one of size and scale_factor")
    spatial = input.shape[2:]
    if size is not None:
        out = _tup("interpolate", "size", size, nd)
        scales = (None,) * nd
    else:
        scales = (scale_factor,) * nd if not isinstance(scale_factor, tuple) else scale_factor
        if len(scales) != nd:
            raise ValueError(f"interpolate: expected {nd} scale factors, got {scale_factor!r}")
        out = tuple(math.floor(n * float(s)) for n, s in zip(spatial, scales))
        if recompute_scale_factor:
            scales = (None,) * nd
    if any(o < 1 for o in out):
        raise _checks.OpError(
            f"interpolate: input and output sizes should be greater than 0, but got input {tuple(spatial)} and "
            f"output {out} (size={size!r}, scale_factor={scale_factor!r})"
        )
    if mode == "area":
        return _adaptive_avg("interpolate", nd, input, out)
    if antialias:
        return _resize_antialiased("interpolate", input, out, scales, bool(align_corners))
    x = input if mode.startswith("nearest") else to_float(input)
    dtype = np.dtype(x.dtype) if jnp.issubdtype(x.dtype, jnp.inexact) else np.dtype(np.float32)
    if dtype == np.float16 or x.dtype == jnp.bfloat16:
        dtype = np.dtype(np.float32)
    for axis, (n, o, s) in enumerate(zip(spatial, out, scales)):
        idx, w = _interp_taps(mode, n, o, s, bool(align_corners), dtype)
        x = _apply_taps(x, axis + 2, idx, w)
    return x


# -- grid sampling -----------------------------------------------------------------------------------


def _reflect(x, lo, hi):
    """Reflect ``x`` into ``[lo, hi]`` off both ends, as often as needed."""
    span = hi - lo
    if span <= 0:
        return jnp.zeros_like(x)
    d = jnp.abs(x - lo)
    flips = jnp.floor(d / span)
    extra = d - flips * span
    return jnp.where(flips % 2 == 0, lo + extra, hi - extra)


def _grid_bound(coord, size, padding, align_corners):
    """A source coordinate after torch's padding rule (zeros keeps it; border clips; reflection
    reflects, then clips)."""
    if padding == 1:
        return jnp.clip(coord, 0, size - 1)
    if padding == 2:
        coord = _reflect(coord, 0, size - 1) if align_corners else _reflect(coord, -0.5, size - 0.5)
        return jnp.clip(coord, 0, size - 1)
    return coord


def _grid_sample(name, nd, input, grid, interpolation_mode, padding_mode, align_corners):
    if input.ndim != nd + 2 or grid.ndim != nd + 2 or grid.shape[-1] != nd or grid.shape[0] != input.shape[0]:
        raise ValueError(
            f"{name}: expected input (N, C, {nd} spatial dims) and grid (N, {nd} output dims, {nd}) with the same N, "
            f"got {input.shape} and {grid.shape}"
        )
    if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
        raise ValueError(f"{name}: unknown interpolation_mode {interpolation_mode} or padding_mode {padding_mode}")
    if interpolation_mode == 2 and nd != 2:
        raise ValueError(f"{name}: bicubic interpolation needs a 4-d input, got {input.shape}")
    input, grid = promote(to_float(input), to_float(grid))
    n, c = input.shape[:2]
    spatial = input.shape[2:]
    out_shape = grid.shape[1:-1]
    src = []  # per spatial dim (D, H, W order): unnormalized source coordinates, (N, *out)
    for a, size in enumerate(spatial):
        g = grid[..., nd - 1 - a]
        src.append(((g + 1) / 2) * (size - 1) if align_corners else ((g + 1) * size - 1) / 2)
    if interpolation_mode == 2:  # padding applies to each of the 4 x 4 taps
        taps_per_dim = []
        for coord, size in zip(src, spatial):
            base = jnp.floor(coord)
            t = coord - base
            a = -0.75
            w = [
                ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
                ((a + 2) * t - (a + 3)) * t * t + 1,
                ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
                ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a,
            ]
            taps_per_dim.append(
                [(_grid_bound(base + k - 1, size, padding_mode, align_corners), wk) for k, wk in enumerate(w)]
            )
    else:
        src = [_grid_bound(coord, size, padding_mode, align_corners) for coord, size in zip(src, spatial)]
        taps_per_dim = []
        for coord in src:
            if interpolation_mode == 1:
                taps_per_dim.append([(jnp.round(coord), None)])
            else:
                base = jnp.floor(coord)
                t = coord - base
                taps_per_dim.append([(base, 1 - t), (base + 1, t)])
    flat_input = input.reshape(n, c, -1)
    strides = [math.prod(spatial[a + 1 :]) for a in range(nd)]
    out = jnp.zeros((n, c, math.prod(out_shape)), input.dtype)
    for combo in itertools.product(*taps_per_dim):
        flat = jnp.zeros(grid.shape[:-1], jnp.int32)
        weight = jnp.ones(grid.shape[:-1], input.dtype)
        inside = jnp.ones(grid.shape[:-1], bool)
        for (pos, w), size, stride in zip(combo, spatial, strides):
            inside = inside & (pos >= 0) & (pos <= size - 1)
            flat = flat + jnp.clip(pos, 0, size - 1).astype(jnp.int32) * stride
            if w is not None:
                weight = weight * w
        weight = jnp.where(inside, weight, 0).reshape(n, 1, -1)
        vals = jnp.take_along_axis(flat_input, flat.reshape(n, 1, -1), axis=2)
        out = out + vals * weight
    return out.reshape((n, c) + out_shape)


_GRID_STATIC = ("interpolation_mode", "padding_mode", "align_corners")


@defop(static=_GRID_STATIC, method=False)
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``grid_sampler_2d`` or ``grid_sampler_3d`` by the input's rank: torch's ``grid_sampler``
    with integer modes (interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros,
    1 border, 2 reflection). ``F.grid_sample`` takes the names.

    Example::

        >>> x = fjax.arange(4.0).reshape(1, 1, 2, 2)
        >>> fjax.grid_sampler(x, fjax.zeros(1, 1, 1, 2), 0, 0, False)
        tensor([[[[1.5000]]]], dtype=fjax.float32)
    """
    nd = input.ndim - 2
    return _grid_sample("grid_sampler", nd, input, grid, interpolation_mode, padding_mode, align_corners)


@defop(static=_GRID_STATIC, method=False)
def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """Sample ``(N, C, H, W)`` input at the ``(N, H_out, W_out, 2)`` grid's ``(x, y)`` points,
    given in ``[-1, 1]`` (``align_corners`` puts -1 and 1 at the corner pixels' centres,
    otherwise at their outer edges); modes as ``grid_sampler``'s integers.

    Example::

        >>> x = fjax.arange(4.0).reshape(1, 1, 2, 2)
        >>> fjax.grid_sampler_2d(x, fjax.tensor([[[[1.0, -1.0]]]]), 0, 0, True)
        tensor([[[[1.]]]], dtype=fjax.float32)
    """
    return _grid_sample("grid_sampler_2d", 2, input, grid, interpolation_mode, padding_mode, align_corners)


@defop(static=_GRID_STATIC, method=False)
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """Sample ``(N, C, D, H, W)`` input at the ``(N, D_out, H_out, W_out, 3)`` grid's
    ``(x, y, z)`` points in ``[-1, 1]`` (bilinear 0 or nearest 1; padding as ``grid_sampler``'s).

    Example::

        >>> x = fjax.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> fjax.grid_sampler_3d(x, fjax.zeros(1, 1, 1, 1, 3), 0, 0, False)
        tensor([[[[[3.5000]]]]], dtype=fjax.float32)
    """
    return _grid_sample("grid_sampler_3d", 3, input, grid, interpolation_mode, padding_mode, align_corners)
