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


@defop(static=_MAX_STATIC, method=False)
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over sliding windows of an ``(N, C, L)`` or ``(C, L)`` input.

    ``stride`` defaults to ``kernel_size``; padding counts as ``-inf``. With ``ceil_mode`` a last,
    partial window is kept. ``return_indices=True`` also returns the int64 position of each
    maximum in the input (the first one on ties; NaN wins, as in torch).

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


@defop(static=_MAX_STATIC, method=False)
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over sliding ``kh x kw`` windows of an ``(N, C, H, W)`` or ``(C, H, W)`` input.

    ``stride`` defaults to ``kernel_size``. With ``return_indices=True`` it also returns where
    each maximum came from, as an int64 index flattened over ``H * W``.

    Example::

        >>> x = fjax.tensor([[[[1.0, 2.0, 5.0, 6.0], [3.0, 4.0, 7.0, 8.0]]]])
        >>> F.max_pool2d(x, 2)
        tensor([[[[4., 8.]]]], dtype=fjax.float32)
        >>> F.max_pool2d(x, 2, return_indices=True)[1]
        tensor([[[[5, 7]]]], dtype=fjax.int64)
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@defop(static=_MAX_STATIC, method=False)
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over sliding ``kd x kh x kw`` windows of an ``(N, C, D, H, W)`` or ``(C, D, H, W)``
    input; ``stride`` defaults to ``kernel_size``, and ``return_indices=True`` adds int64 argmax
    indices flattened over ``D * H * W``.

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


@defop(static=_AVG_STATIC, method=False)
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over sliding windows of an ``(N, C, L)`` or ``(C, L)`` input (integer input is
    averaged in float).

    ``stride`` defaults to ``kernel_size``. Zero padding is counted in the divisor unless
    ``count_include_pad=False``; ``ceil_mode`` keeps a last, partial window.

    Example::

        >>> x = fjax.tensor([[[1.0, 2.0, 3.0]]])
        >>> F.avg_pool1d(x, 2, padding=1)
        tensor([[[0.5000, 2.5000]]], dtype=fjax.float32)
        >>> F.avg_pool1d(x, 2, padding=1, count_include_pad=False)
        tensor([[[1.0000, 2.5000]]], dtype=fjax.float32)
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


@defop(static=_AVG_STATIC + ("divisor_override",), method=False)
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


@defop(static=_AVG_STATIC + ("divisor_override",), method=False)
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


@defop(static=("output_size",), method=False)
def adaptive_avg_pool1d(input, output_size):
    """Mean over ``output_size`` windows that tile an ``(N, C, L)`` or ``(C, L)`` input.

    Window ``i`` spans ``[floor(i * L / out), ceil((i + 1) * L / out))``, so windows may differ
    in length and overlap when ``L`` is not a multiple of ``output_size``.

    Example::

        >>> F.adaptive_avg_pool1d(fjax.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]]), 2)
        tensor([[[2., 4.]]], dtype=fjax.float32)
    """
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


@defop(static=("output_size",), method=False)
def adaptive_avg_pool2d(input, output_size):
    """Mean over adaptive windows giving an ``(N, C, *output_size)`` result from any
    ``(N, C, H, W)`` or ``(C, H, W)`` input; an int means a square output, and ``None`` in
    ``output_size`` keeps that dim's input size. ``output_size=1`` is global average pooling.

    Example::

        >>> F.adaptive_avg_pool2d(fjax.arange(16.0).reshape(1, 1, 4, 4), 1)
        tensor([[[[7.5000]]]], dtype=fjax.float32)
        >>> F.adaptive_avg_pool2d(fjax.ones(1, 3, 7, 5), (2, None)).shape
        fjax.Size([1, 3, 2, 5])
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


@defop(static=("output_size",), method=False)
def adaptive_avg_pool3d(input, output_size):
    """Mean over adaptive windows giving an ``(N, C, *output_size)`` result from an
    ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input; ``None`` in ``output_size`` keeps that size.

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


@defop(static=("output_size", "return_indices"), method=False)
def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Maximum over ``output_size`` windows that tile an ``(N, C, L)`` or ``(C, L)`` input (the
    windows of ``adaptive_avg_pool1d``); ``return_indices=True`` also returns int64 argmax
    positions along ``L``.

    Example::

        >>> x = fjax.tensor([[[1.0, 5.0, 3.0, 4.0, 2.0]]])
        >>> F.adaptive_max_pool1d(x, 2, return_indices=True)
        (tensor([[[5., 4.]]], dtype=fjax.float32), tensor([[[1, 3]]], dtype=fjax.int64))
    """
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


@defop(static=("output_size", "return_indices"), method=False)
def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Maximum over adaptive windows giving an ``(N, C, *output_size)`` result from an
    ``(N, C, H, W)`` or ``(C, H, W)`` input; ``None`` in ``output_size`` keeps that size, and
    ``return_indices=True`` adds int64 argmax indices flattened over ``H * W``.

    Example::

        >>> F.adaptive_max_pool2d(fjax.arange(16.0).reshape(1, 1, 4, 4), 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]], dtype=fjax.float32)
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


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
    if antialias:
        raise NotImplementedError("interpolate: antialias=True")
    if mode in _MODE_DIMS and _MODE_DIMS[mode] != nd:
        raise ValueError(f"interpolate: mode {mode!r} needs a {_MODE_DIMS[mode] + 2}-d input, got {input.shape}")
    if mode not in _MODE_DIMS and mode not in ("nearest", "nearest-exact", "area"):
        raise ValueError(f"interpolate: unknown mode {mode!r}")
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
    if mode == "area":
        return _adaptive_avg("interpolate", nd, input, out)
    x = input if mode.startswith("nearest") else to_float(input)
    dtype = np.dtype(x.dtype) if jnp.issubdtype(x.dtype, jnp.inexact) else np.dtype(np.float32)
    if dtype == np.float16 or x.dtype == jnp.bfloat16:
        dtype = np.dtype(np.float32)
    for axis, (n, o, s) in enumerate(zip(spatial, out, scales)):
        idx, w = _interp_taps(mode, n, o, s, bool(align_corners), dtype)
        x = _apply_taps(x, axis + 2, idx, w)
    return x
