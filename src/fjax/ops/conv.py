"""Convolutions, transposed convolutions and im2col/col2im (torch.nn.functional)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from . import _checks
from ._promote import promote
from ._registry import batch_of, defop

_SPEC = {1: ("NCH", "OIH", "NCH"), 2: ("NCHW", "OIHW", "NCHW"), 3: ("NCDHW", "OIDHW", "NCDHW")}


def _tup(name, arg, value, nd, lo=None):
    """An int or an nd-sequence as an nd-tuple, each at least ``lo`` when given."""
    return _checks.ints(name, arg, value, nd, lo)


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
    return [(p, p) for p in _tup(name, "padding", padding, nd, 0)]


def _check_weight(name, weight, nd, out_dim):
    """torch refuses an empty kernel and a weight with no output channels."""
    kernel = tuple(weight.shape[2:])
    if any(k < 1 for k in kernel):
        raise _checks.OpError(f"{name}: kernel size should be greater than zero, but got kernel_size={kernel}")
    if weight.shape[out_dim] == 0:
        raise _checks.OpError(f"{name}: expected a weight with at least 1 output channel, got weight {weight.shape}")


def _conv(name, nd, input, weight, bias, stride, padding, dilation, groups):
    x, unbatched = _batched(name, input, nd)
    c_in = x.shape[1]
    if weight.ndim != nd + 2 or weight.shape[1] * groups != c_in or weight.shape[0] % groups:
        raise ValueError(
            f"{name}: weight {weight.shape} does not fit input {input.shape} with groups={groups} "
            f"(expected (C_out, {c_in // max(groups, 1)}, *kernel) with C_out divisible by groups)"
        )
    _check_weight(name, weight, nd, 0)
    x, weight, bias = promote(x, weight, bias)
    stride = _tup(name, "stride", stride, nd, 1)
    dilation = _tup(name, "dilation", dilation, nd, 1)
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


@defop(static=("stride", "padding", "dilation", "groups"), method=False, rows=batch_of(1))
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution (cross-correlation, as in torch: the kernel is not flipped) of an
    ``(N, C_in, L)`` or unbatched ``(C_in, L)`` input with a ``(C_out, C_in / groups, k)`` weight.

    ``bias`` of shape ``(C_out,)`` is added per output channel. ``padding`` is an int, a tuple,
    ``"valid"`` (no padding) or ``"same"`` (output as long as the input; needs ``stride=1``, and
    an odd total puts the extra zero on the right). ``groups`` splits the channels into
    independent convolutions.

    Args:
        input: the ``(N, C_in, L)`` or unbatched ``(C_in, L)`` input.
        weight: the ``(C_out, C_in / groups, k)`` filters.
        bias: optional ``(C_out,)`` bias (default None).
        stride: the step of the filter, an int or a 1-tuple (default 1).
        padding: zeros added on each side, an int or a 1-tuple, or ``"valid"`` / ``"same"`` (default 0).
        dilation: the spacing of the filter taps, an int or a 1-tuple (default 1).
        groups: the number of independent channel groups (default 1).

    Example::

        >>> x = fjax.tensor([[[1.0, 2.0, 3.0, 4.0]]])
        >>> w = fjax.tensor([[[1.0, -1.0]]])
        >>> F.conv1d(x, w)
        tensor([[[-1., -1., -1.]]], dtype=fjax.float32)
        >>> F.conv1d(x, w, padding="same")
        tensor([[[-1., -1., -1.,  4.]]], dtype=fjax.float32)
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@defop(static=("stride", "padding", "dilation", "groups"), method=False, rows=batch_of(2))
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution (cross-correlation) of an ``(N, C_in, H, W)`` or ``(C_in, H, W)`` input
    with a ``(C_out, C_in / groups, kh, kw)`` weight, plus an optional ``(C_out,)`` bias.

    ``stride``, ``padding`` and ``dilation`` take an int or an ``(h, w)`` pair; ``padding`` may
    also be ``"valid"`` or ``"same"``. Each output size is
    ``(size + 2 * padding - dilation * (k - 1) - 1) // stride + 1``.

    Args:
        input: the ``(N, C_in, H, W)`` or unbatched ``(C_in, H, W)`` input.
        weight: the ``(C_out, C_in / groups, kh, kw)`` filters.
        bias: optional ``(C_out,)`` bias (default None).
        stride: the step of the filter, an int or an ``(h, w)`` pair (default 1).
        padding: zeros added on each side, an int or an ``(h, w)`` pair, or ``"valid"`` / ``"same"`` (default 0).
        dilation: the spacing of the filter taps, an int or an ``(h, w)`` pair (default 1).
        groups: the number of independent channel groups (default 1).

    Example::

        >>> x = fjax.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.conv2d(x, fjax.ones(1, 1, 2, 2), stride=2)
        tensor([[[[10., 18.],
                  [42., 50.]]]], dtype=fjax.float32)
        >>> F.conv2d(x, fjax.ones(2, 1, 3, 3), bias=fjax.tensor([0.0, 100.0])).shape
        fjax.Size([1, 2, 2, 2])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@defop(static=("stride", "padding", "dilation", "groups"), method=False, rows=batch_of(3))
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution (cross-correlation) of an ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``
    input with a ``(C_out, C_in / groups, kd, kh, kw)`` weight, plus an optional ``(C_out,)`` bias.

    ``stride``, ``padding`` and ``dilation`` take an int or a triple; with ``groups=g`` the input
    channels split into ``g`` groups, each convolved with its own ``C_out / g`` filters.

    Args:
        input: the ``(N, C_in, D, H, W)`` or unbatched ``(C_in, D, H, W)`` input.
        weight: the ``(C_out, C_in / groups, kd, kh, kw)`` filters.
        bias: optional ``(C_out,)`` bias (default None).
        stride: the step of the filter, an int or a ``(d, h, w)`` triple (default 1).
        padding: zeros added on each side, an int or a ``(d, h, w)`` triple, or ``"valid"`` / ``"same"`` (default 0).
        dilation: the spacing of the filter taps, an int or a ``(d, h, w)`` triple (default 1).
        groups: the number of independent channel groups (default 1).

    Example::

        >>> x = fjax.ones(1, 2, 3, 4, 4)
        >>> F.conv3d(x, fjax.ones(4, 1, 3, 3, 3), groups=2, padding=1).shape
        fjax.Size([1, 4, 3, 4, 4])
    """
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(name, nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    x, unbatched = _batched(name, input, nd)
    c_in = x.shape[1]
    if weight.ndim != nd + 2 or weight.shape[0] != c_in or c_in % groups:
        raise ValueError(
            f"{name}: weight {weight.shape} does not fit input {input.shape} with groups={groups} "
            f"(expected ({c_in}, C_out / groups, *kernel))"
        )
    _check_weight(name, weight, nd, 1)
    x, weight, bias = promote(x, weight, bias)
    stride = _tup(name, "stride", stride, nd, 1)
    padding = _tup(name, "padding", padding, nd, 0)
    output_padding = _tup(name, "output_padding", output_padding, nd, 0)
    dilation = _tup(name, "dilation", dilation, nd, 1)
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


@defop(static=_TRANSPOSE_STATIC, method=False, rows=batch_of(1))
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-d convolution (the gradient of ``conv1d`` with respect to its input), of an
    ``(N, C_in, L)`` or ``(C_in, L)`` input with a ``(C_in, C_out / groups, k)`` weight.

    Each input element scatters ``weight``, scaled by its value, into the output at steps of
    ``stride``; the output length is
    ``(L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    Args:
        input: the ``(N, C_in, L)`` or unbatched ``(C_in, L)`` input.
        weight: the ``(C_in, C_out / groups, k)`` filters.
        bias: optional ``(C_out,)`` bias (default None).
        stride: the step of the scatter, an int or a 1-tuple (default 1).
        padding: an int or a 1-tuple (default 0); the input is padded with
            ``dilation * (k - 1) - padding`` zeros on each side.
        output_padding: extra size added to one side of the output, an int or a 1-tuple (default 0).
        groups: the number of independent channel groups (default 1).
        dilation: the spacing of the filter taps, an int or a 1-tuple (default 1).

    Example::

        >>> x, w = fjax.tensor([[[1.0, 2.0]]]), fjax.tensor([[[1.0, 10.0]]])
        >>> F.conv_transpose1d(x, w)
        tensor([[[ 1., 12., 20.]]], dtype=fjax.float32)
        >>> F.conv_transpose1d(x, w, stride=2)
        tensor([[[ 1., 10.,  2., 20.]]], dtype=fjax.float32)
    """
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


@defop(static=_TRANSPOSE_STATIC, method=False, rows=batch_of(2))
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-d convolution (the gradient of ``conv2d`` with respect to its input), of an
    ``(N, C_in, H, W)`` or ``(C_in, H, W)`` input with a ``(C_in, C_out / groups, kh, kw)`` weight.

    Often used to upsample: ``output_padding`` adds rows/columns on one side so that the output
    can match the input size of the strided ``conv2d`` it inverts.

    Args:
        input: the ``(N, C_in, H, W)`` or unbatched ``(C_in, H, W)`` input.
        weight: the ``(C_in, C_out / groups, kh, kw)`` filters.
        bias: optional ``(C_out,)`` bias (default None).
        stride: the step of the scatter, an int or an ``(h, w)`` pair (default 1).
        padding: an int or an ``(h, w)`` pair (default 0); the input is padded with
            ``dilation * (k - 1) - padding`` zeros on each side.
        output_padding: extra size added to one side of the output, an int or an ``(h, w)`` pair (default 0).
        groups: the number of independent channel groups (default 1).
        dilation: the spacing of the filter taps, an int or an ``(h, w)`` pair (default 1).

    Example::

        >>> F.conv_transpose2d(fjax.ones(1, 1, 2, 2), fjax.ones(1, 1, 2, 2), stride=2)
        tensor([[[[1., 1., 1., 1.],
                  [1., 1., 1., 1.],
                  [1., 1., 1., 1.],
                  [1., 1., 1., 1.]]]], dtype=fjax.float32)
        >>> x, w = fjax.ones(1, 4, 5, 5), fjax.ones(4, 3, 3, 3)
        >>> F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1).shape
        fjax.Size([1, 3, 10, 10])
    """
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


@defop(static=_TRANSPOSE_STATIC, method=False, rows=batch_of(3))
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-d convolution (the gradient of ``conv3d`` with respect to its input), of an
    ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)`` input with a ``(C_in, C_out / groups, kd, kh, kw)``
    weight. Each output size is ``(size - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    Args:
        input: the ``(N, C_in, D, H, W)`` or unbatched ``(C_in, D, H, W)`` input.
        weight: the ``(C_in, C_out / groups, kd, kh, kw)`` filters.
        bias: optional ``(C_out,)`` bias (default None).
        stride: the step of the scatter, an int or a ``(d, h, w)`` triple (default 1).
        padding: an int or a ``(d, h, w)`` triple (default 0); the input is padded with
            ``dilation * (k - 1) - padding`` zeros on each side.
        output_padding: extra size added to one side of the output, an int or a ``(d, h, w)`` triple (default 0).
        groups: the number of independent channel groups (default 1).
        dilation: the spacing of the filter taps, an int or a ``(d, h, w)`` triple (default 1).

    Example::

        >>> x, w = fjax.ones(1, 2, 2, 2, 2), fjax.ones(2, 3, 2, 2, 2)
        >>> F.conv_transpose3d(x, w, stride=2).shape
        fjax.Size([1, 3, 4, 4, 4])
    """
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
    kernel = _tup(name, "kernel_size", kernel_size, 2, 1)
    dilation = _tup(name, "dilation", dilation, 2, 1)
    padding = _tup(name, "padding", padding, 2, 0)
    stride = _tup(name, "stride", stride, 2, 1)
    geometry = zip(x.shape[2:], kernel, dilation, padding, stride)
    blocks = [(n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, d, p, s in geometry]
    if any(b < 1 for b in blocks):
        raise _checks.OpError(
            f"{name}: input of spatial size {tuple(x.shape[2:])} is too small for kernel_size={kernel}, "
            f"dilation={dilation}, padding={padding}, stride={stride} (blocks {tuple(blocks)})"
        )
    if x.size == 0:  # XLA's patch extraction divides by the batch size
        cols = jnp.zeros((x.shape[0], x.shape[1] * kernel[0] * kernel[1], blocks[0] * blocks[1]), x.dtype)
        return cols[0] if unbatched else cols
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
    """Extract sliding ``kh x kw`` blocks of an ``(N, C, H, W)`` (or ``(C, H, W)``) input as the
    columns of an ``(N, C * kh * kw, L)`` tensor, ``L`` being the number of block positions
    (``F.unfold``). ``dilation``, ``padding`` and ``stride`` work as in ``conv2d``; ``F.fold`` is
    its adjoint.

    Args:
        input: the ``(N, C, H, W)`` or ``(C, H, W)`` input.
        kernel_size: the block size, an int or an ``(kh, kw)`` pair.
        dilation: the spacing of the block's elements (default 1).
        padding: zeros added on each side of the input (default 0).
        stride: the step between blocks (default 1).

    Example::

        >>> x = fjax.arange(9.0).reshape(1, 1, 3, 3)
        >>> F.unfold(x, kernel_size=2)
        tensor([[[0., 1., 3., 4.],
                 [1., 2., 4., 5.],
                 [3., 4., 6., 7.],
                 [4., 5., 7., 8.]]], dtype=fjax.float32)
    """
    return _im2col("im2col", input, kernel_size, dilation, padding, stride)


@defop(
    static=("output_size", "kernel_size", "dilation", "padding", "stride"),
    linear=True,
    method=False,
)
def col2im(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum the blocks stored as columns of an ``(N, C * kh * kw, L)`` input into an
    ``(N, C, *output_size)`` image (``F.fold``, the adjoint of ``F.unfold``).

    Where blocks overlap their values add up, so ``fold(unfold(x))`` is ``x`` times the number of
    blocks covering each pixel, not ``x``.

    Args:
        input: the ``(N, C * kh * kw, L)`` or ``(C * kh * kw, L)`` columns.
        output_size: the spatial size ``(H, W)`` of the output (an int for a square).
        kernel_size: the block size, an int or an ``(kh, kw)`` pair.
        dilation: the spacing of the block's elements (default 1).
        padding: the padding the blocks were taken with (default 0).
        stride: the step between blocks (default 1).

    Example::

        >>> F.fold(fjax.ones(1, 4, 4), output_size=(3, 3), kernel_size=2)
        tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]], dtype=fjax.float32)
    """
    unbatched = input.ndim == 2
    cols = input[None] if unbatched else input
    kernel = _tup("col2im", "kernel_size", kernel_size, 2, 1)
    size = _tup("col2im", "output_size", output_size, 2, 1)
    _tup("col2im", "dilation", dilation, 2, 1)
    _tup("col2im", "padding", padding, 2, 0)
    _tup("col2im", "stride", stride, 2, 1)
    if cols.ndim != 3 or cols.shape[1] % (kernel[0] * kernel[1]):
        raise ValueError(f"col2im: expected input (N, C * {kernel[0] * kernel[1]}, L), got {input.shape}")
    image = jax.ShapeDtypeStruct((cols.shape[0], cols.shape[1] // (kernel[0] * kernel[1])) + size, cols.dtype)
    unfold = jax.linear_transpose(lambda x: _im2col("col2im", x, kernel, dilation, padding, stride), image)
    expected = jax.eval_shape(lambda x: _im2col("col2im", x, kernel, dilation, padding, stride), image)
    if expected.shape != cols.shape:
        raise ValueError(f"col2im: input {input.shape} does not match {expected.shape} blocks of output_size {size}")
    (out,) = unfold(cols)
    return out[0] if unbatched else out
