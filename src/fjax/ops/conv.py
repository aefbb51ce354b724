"""Convolutions, transposed convolutions and im2col/col2im (torch.nn.functional)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ._promote import promote
from ._registry import defop

_SPEC = {1: ("NCH", "OIH", "NCH"), 2: ("NCHW", "OIHW", "NCHW"), 3: ("NCDHW", "OIDHW", "NCDHW")}


def _tup(name, arg, value, nd):
    """An int or an nd-sequence as an nd-tuple."""
    t = (value,) * nd if isinstance(value, int) else tuple(value)
    if len(t) == 1 and nd > 1:
        t = t * nd
    if len(t) != nd or not all(isinstance(v, int) for v in t):
        raise ValueError(f"{name}: expected {arg} to be an int or {nd} ints, got {value!r}")
    return t


def _batched(name, input, nd):
    """``input`` with a batch dim, and whether one was added (torch accepts unbatched input)."""
    if input.ndim == nd + 1:
        return input[None], True
    if input.ndim != nd + 2:
        raise ValueError(f"{name}: expected a {nd + 1}-d (unbatched) or {nd + 2}-d (batched) input, got {input.shape}")
    return input, False


def _conv_padding(name, padding, kernel, stride, dilation):
    nd = len(kernel)
    if padding == "valid":
        return [(0, 0)] * nd
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError(f"{name}: padding='same' needs stride 1, got stride {stride}")
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return [(t // 2, t - t // 2) for t in total]
    if isinstance(padding, str):
        raise ValueError(f"{name}: padding must be 'same', 'valid' or ints, got {padding!r}")
    return [(p, p) for p in _tup(name, "padding", padding, nd)]


def _conv(name, nd, input, weight, bias, stride, padding, dilation, groups):
    x, unbatched = _batched(name, input, nd)
    c_in = x.shape[1]
    if weight.ndim != nd + 2 or weight.shape[1] * groups != c_in or weight.shape[0] % groups:
        raise ValueError(
            f"{name}: weight {weight.shape} does not fit input {input.shape} with groups={groups} "
            f"(expected (C_out, {c_in // max(groups, 1)}, *kernel) with C_out divisible by groups)"
        )
    x, weight, bias = promote(x, weight, bias)
    stride = _tup(name, "stride", stride, nd)
    dilation = _tup(name, "dilation", dilation, nd)
    pads = _conv_padding(name, padding, weight.shape[2:], stride, dilation)
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], pads))
    reach = tuple(d * (k - 1) + 1 for d, k in zip(dilation, weight.shape[2:]))
    if any(r > n for r, n in zip(reach, padded)):
        raise ValueError(
            f"{name}: Calculated padded input size per channel: {padded}. Kernel size: {reach}. "
            "Kernel size can't be greater than actual input size"
        )
    out = lax.conv_general_dilated(
        x,
        weight,
        stride,
        pads,
        rhs_dilation=dilation,
        dimension_numbers=_SPEC[nd],
        feature_group_count=groups,
    )
    if bias is not None:
        out = out + bias.reshape((-1,) + (1,) * nd)
    return out[0] if unbatched else out


@defop(static=("stride", "padding", "dilation", "groups"), method=False)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d cross-correlation of ``(N, C_in, L)`` with ``(C_out, C_in / groups, k)``."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@defop(static=("stride", "padding", "dilation", "groups"), method=False)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d cross-correlation of ``(N, C_in, H, W)`` with ``(C_out, C_in / groups, kh, kw)``."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@defop(static=("stride", "padding", "dilation", "groups"), method=False)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d cross-correlation of ``(N, C_in, D, H, W)`` with ``(C_out, C_in / groups, *k)``."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(name, nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    x, unbatched = _batched(name, input, nd)
    c_in = x.shape[1]
    if weight.ndim != nd + 2 or weight.shape[0] != c_in or c_in % groups:
        raise ValueError(
            f"{name}: weight {weight.shape} does not fit input {input.shape} with groups={groups} "
            f"(expected ({c_in}, C_out / groups, *kernel))"
        )
    x, weight, bias = promote(x, weight, bias)
    stride = _tup(name, "stride", stride, nd)
    padding = _tup(name, "padding", padding, nd)
    output_padding = _tup(name, "output_padding", output_padding, nd)
    dilation = _tup(name, "dilation", dilation, nd)
    if any(op >= max(s, d) for op, s, d in zip(output_padding, stride, dilation)):
        raise ValueError(
            f"{name}: output_padding {output_padding} must be smaller than stride {stride} or dilation {dilation}"
        )
    kernel = weight.shape[2:]
    # The transpose of a strided conv is a conv over the stride-dilated input with the
    # flipped kernel, its in/out channels swapped within each group.
    w = weight.reshape((groups, c_in // groups, weight.shape[1]) + kernel)
    w = jnp.swapaxes(w, 1, 2).reshape((groups * weight.shape[1], c_in // groups) + kernel)
    w = jnp.flip(w, axis=tuple(range(2, nd + 2)))
    pads = [(d * (k - 1) - p, d * (k - 1) - p + op) for k, d, p, op in zip(kernel, dilation, padding, output_padding)]
    out = lax.conv_general_dilated(
        x,
        w,
        (1,) * nd,
        pads,
        lhs_dilation=stride,
        rhs_dilation=dilation,
        dimension_numbers=_SPEC[nd],
        feature_group_count=groups,
    )
    if bias is not None:
        out = out + bias.reshape((-1,) + (1,) * nd)
    return out[0] if unbatched else out


_TRANSPOSE_STATIC = ("stride", "padding", "output_padding", "groups", "dilation")


@defop(static=_TRANSPOSE_STATIC, method=False)
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-d convolution; ``weight`` is ``(C_in, C_out / groups, k)``."""
    return _conv_transpose(
        "conv_transpose1d",
        1,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


@defop(static=_TRANSPOSE_STATIC, method=False)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-d convolution; ``weight`` is ``(C_in, C_out / groups, kh, kw)``."""
    return _conv_transpose(
        "conv_transpose2d",
        2,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


@defop(static=_TRANSPOSE_STATIC, method=False)
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-d convolution; ``weight`` is ``(C_in, C_out / groups, kd, kh, kw)``."""
    return _conv_transpose(
        "conv_transpose3d",
        3,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


def _im2col(name, input, kernel_size, dilation, padding, stride):
    x, unbatched = _batched(name, input, 2)
    kernel = _tup(name, "kernel_size", kernel_size, 2)
    dilation = _tup(name, "dilation", dilation, 2)
    padding = _tup(name, "padding", padding, 2)
    stride = _tup(name, "stride", stride, 2)
    patches = lax.conv_general_dilated_patches(
        x,
        kernel,
        stride,
        [(p, p) for p in padding],
        rhs_dilation=dilation,
        dimension_numbers=_SPEC[2],
        precision=lax.Precision.HIGHEST,
    )
    cols = patches.reshape(patches.shape[:2] + (-1,))
    return cols[0] if unbatched else cols


@defop(static=("kernel_size", "dilation", "padding", "stride"), linear=True, method=False)
def im2col(input, kernel_size, dilation=1, padding=0, stride=1):
    """``torch.nn.functional.unfold``: sliding ``(N, C, H, W)`` blocks as ``(N, C * kh * kw, L)``."""
    return _im2col("im2col", input, kernel_size, dilation, padding, stride)


@defop(
    static=("output_size", "kernel_size", "dilation", "padding", "stride"),
    linear=True,
    method=False,
)
def col2im(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """``torch.nn.functional.fold``: sum ``(N, C * kh * kw, L)`` blocks into ``(N, C, H, W)``."""
    unbatched = input.ndim == 2
    cols = input[None] if unbatched else input
    kernel = _tup("col2im", "kernel_size", kernel_size, 2)
    size = _tup("col2im", "output_size", output_size, 2)
    if cols.ndim != 3 or cols.shape[1] % (kernel[0] * kernel[1]):
        raise ValueError(f"col2im: expected input (N, C * {kernel[0] * kernel[1]}, L), got {input.shape}")
    image = jax.ShapeDtypeStruct((cols.shape[0], cols.shape[1] // (kernel[0] * kernel[1])) + size, cols.dtype)
    unfold = jax.linear_transpose(lambda x: _im2col("col2im", x, kernel, dilation, padding, stride), image)
    expected = jax.eval_shape(lambda x: _im2col("col2im", x, kernel, dilation, padding, stride), image)
    if expected.shape != cols.shape:
        raise ValueError(f"col2im: input {input.shape} does not match {expected.shape} blocks of output_size {size}")
    (out,) = unfold(cols)
    return out[0] if unbatched else out
