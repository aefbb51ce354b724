"""Pooling layers: MaxPool, AvgPool, AdaptiveAvgPool, AdaptiveMaxPool (1d/2d/3d), MaxUnpool, FractionalMaxPool."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module
from ._utils import _single


class _MaxPoolNd(Module):
    _pool = None

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False, ceil_mode: bool = False
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor):
        return type(self)._pool(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """1-d max pooling over the last dim of ``(N, C, L)`` or ``(C, L)`` input. ``stride`` defaults
    to ``kernel_size``; ``padding`` pads with ``-inf``; ``ceil_mode=True`` keeps a last partial
    window; ``return_indices=True`` also returns the flat argmax positions (for ``MaxUnpool``).

    Args:
        kernel_size: the window size, an int or a 1-tuple.
        stride: the window step (default None: ``kernel_size``).
        padding: ``-inf`` padding added on each side (default 0).
        dilation: the spacing of the window's elements (default 1).
        return_indices: also return the int64 positions of the maxima (default False).
        ceil_mode: keep a last, partial window (default False).

    Example::

        >>> x = fjax.tensor([[[1., 3., 2., 5., 4.]]])
        >>> nn.MaxPool1d(kernel_size=2, stride=2)(x)
        tensor([[[3., 5.]]], dtype=fjax.float32)
        >>> nn.MaxPool1d(2, ceil_mode=True)(x)
        tensor([[[3., 5., 4.]]], dtype=fjax.float32)
        >>> out, idx = nn.MaxPool1d(2, return_indices=True)(x)
        >>> idx
        tensor([[[1, 3]]], dtype=fjax.int64)
    """

    _pool = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-d max pooling over the last two dims of ``(N, C, H, W)`` or ``(C, H, W)`` input.
    ``kernel_size``, ``stride`` (default ``kernel_size``), ``padding`` and ``dilation`` take an
    int or a pair; ``ceil_mode`` and ``return_indices`` as in :class:`MaxPool1d`.

    Args:
        kernel_size: the window size, an int or an ``(h, w)`` pair.
        stride: the window step (default None: ``kernel_size``).
        padding: ``-inf`` padding added on each side (default 0).
        dilation: the spacing of the window's elements (default 1).
        return_indices: also return the int64 positions of the maxima (default False).
        ceil_mode: keep a last, partial window (default False).

    Example::

        >>> x = fjax.arange(16.).reshape(1, 1, 4, 4)
        >>> nn.MaxPool2d(kernel_size=2)(x)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]], dtype=fjax.float32)
        >>> nn.MaxPool2d(3, stride=1, padding=1)(x).shape
        fjax.Size([1, 1, 4, 4])
    """

    _pool = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """3-d max pooling over the last three dims of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input;
    arguments as in :class:`MaxPool2d`, with ints or triples.

    Args:
        kernel_size: the window size, an int or a ``(d, h, w)`` triple.
        stride: the window step (default None: ``kernel_size``).
        padding: ``-inf`` padding added on each side (default 0).
        dilation: the spacing of the window's elements (default 1).
        return_indices: also return the int64 positions of the maxima (default False).
        ceil_mode: keep a last, partial window (default False).

    Example::

        >>> x = fjax.arange(8.).reshape(1, 1, 2, 2, 2)
        >>> nn.MaxPool3d(kernel_size=2)(x)
        tensor([[[[[7.]]]]], dtype=fjax.float32)
    """

    _pool = staticmethod(F.max_pool3d)


class AvgPool1d(Module):
    """1-d average pooling over the last dim of ``(N, C, L)`` or ``(C, L)`` input. ``stride``
    defaults to ``kernel_size``; zero ``padding`` counts in the divisor unless
    ``count_include_pad=False``; ``ceil_mode=True`` keeps a last partial window.

    Args:
        kernel_size: the window size, an int or a 1-tuple.
        stride: the window step (default None: ``kernel_size``).
        padding: zeros added on each side (default 0).
        ceil_mode: keep a last, partial window (default False).
        count_include_pad: count the zero padding in the divisor (default True).

    Example::

        >>> x = fjax.tensor([[[1., 2., 3., 4., 5.]]])
        >>> nn.AvgPool1d(kernel_size=2)(x)
        tensor([[[1.5000, 3.5000]]], dtype=fjax.float32)
        >>> nn.AvgPool1d(3, stride=1, padding=1)(x)
        tensor([[[1., 2., 3., 4., 3.]]], dtype=fjax.float32)
        >>> nn.AvgPool1d(3, stride=1, padding=1, count_include_pad=False)(x)
        tensor([[[1.5000, 2.0000, 3.0000, 4.0000, 4.5000]]], dtype=fjax.float32)
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    _pool = None

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._pool(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
            self.divisor_override,
        )  # fmt: skip

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """2-d average pooling over the last two dims of ``(N, C, H, W)`` or ``(C, H, W)`` input.
    Arguments as in :class:`AvgPool1d`, ints or pairs; ``divisor_override`` replaces the window
    size as the divisor.

    Args:
        kernel_size: the window size, an int or an ``(h, w)`` pair.
        stride: the window step (default None: ``kernel_size``).
        padding: zeros added on each side (default 0).
        ceil_mode: keep a last, partial window (default False).
        count_include_pad: count the zero padding in the divisor (default True).
        divisor_override: divide each window's sum by this instead of its size (default None).

    Example::

        >>> x = fjax.arange(16.).reshape(1, 1, 4, 4)
        >>> nn.AvgPool2d(kernel_size=2)(x)
        tensor([[[[ 2.5000,  4.5000],
                  [10.5000, 12.5000]]]], dtype=fjax.float32)
        >>> nn.AvgPool2d(2, divisor_override=1)(x)
        tensor([[[[10., 18.],
                  [42., 50.]]]], dtype=fjax.float32)
    """

    _pool = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """3-d average pooling over the last three dims of ``(N, C, D, H, W)`` or ``(C, D, H, W)``
    input; arguments as in :class:`AvgPool2d`, with ints or triples.

    Args:
        kernel_size: the window size, an int or a ``(d, h, w)`` triple.
        stride: the window step (default None: ``kernel_size``).
        padding: zeros added on each side (default 0).
        ceil_mode: keep a last, partial window (default False).
        count_include_pad: count the zero padding in the divisor (default True).
        divisor_override: divide each window's sum by this instead of its size (default None).

    Example::

        >>> x = fjax.arange(8.).reshape(1, 1, 2, 2, 2)
        >>> nn.AvgPool3d(kernel_size=2)(x)
        tensor([[[[[3.5000]]]]], dtype=fjax.float32)
        >>> nn.AvgPool3d((1, 2, 2))(x).shape
        fjax.Size([1, 1, 2, 1, 1])
    """

    _pool = staticmethod(F.avg_pool3d)


class _AdaptivePool(Module):
    _pool = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._pool(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Average pooling of ``(N, C, L)`` or ``(C, L)`` input to a fixed length ``output_size``.
    Window ``i`` spans ``[floor(i * L / out), ceil((i + 1) * L / out))``, as in torch, so
    windows may overlap when ``L`` is not a multiple of ``out``.

    Args:
        output_size: the output's spatial size, an int or a 1-tuple.

    Example::

        >>> x = fjax.tensor([[[1., 2., 3., 4., 5.]]])
        >>> nn.AdaptiveAvgPool1d(output_size=2)(x)
        tensor([[[2., 4.]]], dtype=fjax.float32)
        >>> nn.AdaptiveAvgPool1d(1)(x)
        tensor([[[3.]]], dtype=fjax.float32)
    """

    _pool = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average pooling of ``(N, C, H, W)`` or ``(C, H, W)`` input to a fixed ``output_size``, an int
    or a pair ``(H_out, W_out)``; ``None`` in the pair keeps that input size. Windows as in
    :class:`AdaptiveAvgPool1d`; ``AdaptiveAvgPool2d(1)`` is global average pooling.

    Args:
        output_size: the output's spatial size, an int or an ``(h, w)`` pair (None keeps that size).

    Example::

        >>> x = fjax.arange(16.).reshape(1, 1, 4, 4)
        >>> nn.AdaptiveAvgPool2d((2, 1))(x)
        tensor([[[[ 3.5000],
                  [11.5000]]]], dtype=fjax.float32)
        >>> nn.AdaptiveAvgPool2d((None, 2))(x).shape
        fjax.Size([1, 1, 4, 2])
    """

    _pool = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptivePool):
    """Average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input to a fixed ``output_size``,
    an int or a triple (``None`` keeps that input size).

    Args:
        output_size: the output's spatial size, an int or a ``(d, h, w)`` triple (None keeps that size).

    Example::

        >>> x = fjax.ones(2, 3, 4, 5, 6)
        >>> nn.AdaptiveAvgPool3d((1, 2, 3))(x).shape
        fjax.Size([2, 3, 1, 2, 3])
        >>> nn.AdaptiveAvgPool3d(1)(x).shape
        fjax.Size([2, 3, 1, 1, 1])
    """

    _pool = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        return type(self)._pool(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """Max pooling of ``(N, C, L)`` or ``(C, L)`` input to a fixed length ``output_size``, with the
    windows of :class:`AdaptiveAvgPool1d`. ``return_indices=True`` also returns the argmax
    positions.

    Args:
        output_size: the output's spatial size, an int or a 1-tuple.
        return_indices: also return the int64 positions of the maxima (default False).

    Example::

        >>> x = fjax.tensor([[[1., 5., 2., 4., 3.]]])
        >>> nn.AdaptiveMaxPool1d(2)(x)
        tensor([[[5., 4.]]], dtype=fjax.float32)
        >>> out, idx = nn.AdaptiveMaxPool1d(2, return_indices=True)(x)
        >>> idx
        tensor([[[1, 3]]], dtype=fjax.int64)
    """

    _pool = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """Max pooling of ``(N, C, H, W)`` or ``(C, H, W)`` input to a fixed ``output_size``, an int or
    a pair; ``return_indices`` as in :class:`AdaptiveMaxPool1d`.

    Args:
        output_size: the output's spatial size, an int or an ``(h, w)`` pair (None keeps that size).
        return_indices: also return the int64 positions of the maxima (default False).

    Example::

        >>> x = fjax.arange(16.).reshape(1, 1, 4, 4)
        >>> nn.AdaptiveMaxPool2d((1, 2))(x)
        tensor([[[[13., 15.]]]], dtype=fjax.float32)
        >>> nn.AdaptiveMaxPool2d(3)(x).shape
        fjax.Size([1, 1, 3, 3])
    """

    _pool = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    """Max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input to a fixed ``output_size``, an
    int or a triple (``None`` keeps that input size); ``return_indices`` as in
    :class:`AdaptiveMaxPool1d`.

    Args:
        output_size: the output's spatial size, an int or a ``(d, h, w)`` triple (None keeps that size).
        return_indices: also return the int64 positions of the maxima (default False).

    Example::

        >>> nn.AdaptiveMaxPool3d((1, 2, 1))(fjax.arange(8.).reshape(1, 1, 2, 2, 2)).flatten()
        tensor([5., 7.], dtype=fjax.float32)
    """

    _pool = staticmethod(F.adaptive_max_pool3d)


class _MaxUnpoolNd(Module):
    _unpool = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return type(self)._unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """A partial inverse of :class:`MaxPool1d`: ``forward(input, indices, output_size=None)`` puts
    each value back where its index says and zeros elsewhere; ``output_size`` picks among the
    lengths that pool to the input's.

    Args:
        kernel_size: the pooling window size, an int or a 1-tuple.
        stride: the pooling step (default None: ``kernel_size``).
        padding: the pooling padding (default 0).

    Example::

        >>> out, idx = nn.MaxPool1d(2, return_indices=True)(fjax.tensor([[[1., 3., 2., 5.]]]))
        >>> nn.MaxUnpool1d(2)(out, idx)
        tensor([[[0., 3., 0., 5.]]], dtype=fjax.float32)
    """

    _unpool = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """A partial inverse of :class:`MaxPool2d` (see :class:`MaxUnpool1d`).

    Args:
        kernel_size: the pooling window size, an int or an ``(h, w)`` pair.
        stride: the pooling step (default None: ``kernel_size``).
        padding: the pooling padding (default 0).

    Example::

        >>> out, idx = nn.MaxPool2d(2, return_indices=True)(fjax.tensor([[[[1., 2.], [4., 3.]]]]))
        >>> nn.MaxUnpool2d(2)(out, idx)
        tensor([[[[0., 0.],
                  [4., 0.]]]], dtype=fjax.float32)
    """

    _unpool = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """A partial inverse of :class:`MaxPool3d` (see :class:`MaxUnpool1d`).

    Args:
        kernel_size: the pooling window size, an int or a ``(d, h, w)`` triple.
        stride: the pooling step (default None: ``kernel_size``).
        padding: the pooling padding (default 0).

    Example::

        >>> out, idx = nn.MaxPool3d(2, return_indices=True)(fjax.arange(8.).reshape(1, 1, 2, 2, 2))
        >>> nn.MaxUnpool3d(2)(out, idx).flatten()
        tensor([0., 0., 0., 0., 0., 0., 0., 7.], dtype=fjax.float32)
    """

    _unpool = staticmethod(F.max_unpool3d)


class _FractionalMaxPoolNd(Module):
    _pool = None

    def __init__(
        self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False, _random_samples=None
    ):
        super().__init__()
        if (output_size is None) == (output_ratio is None):
            raise ValueError(f"{type(self).__name__}: pass exactly one of output_size and output_ratio")
        self.kernel_size = kernel_size
        self.output_size = output_size
        self.output_ratio = output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input: Tensor):
        return type(self)._pool(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices, self._random_samples
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of ``(N, C, H, W)`` or ``(C, H, W)`` input (Graham, 2014): windows of
    ``kernel_size`` at pseudo-random, non-integer strides, so the output has ``output_size`` or
    ``output_ratio`` times the input size. Each call draws new window positions from the default
    generator unless ``_random_samples`` fixes them.

    Args:
        kernel_size: the window size, an int or an ``(h, w)`` pair.
        output_size: the output's spatial size, an int or a tuple; give this or ``output_ratio`` (default None).
        output_ratio: the output size as a fraction of the input size, in ``(0, 1)`` (default None).
        return_indices: also return the int64 positions of the maxima (default False).
        _random_samples: ``(N, C, 2)`` uniform samples in ``[0, 1)`` placing the windows (default None: drawn per call).

    Example::

        >>> pool = nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))
        >>> pool(fjax.randn(2, 4, 10, 12)).shape
        fjax.Size([2, 4, 5, 6])
    """

    _pool = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (see
    :class:`FractionalMaxPool2d`).

    Args:
        kernel_size: the window size, an int or a ``(d, h, w)`` triple.
        output_size: the output's spatial size, an int or a tuple; give this or ``output_ratio`` (default None).
        output_ratio: the output size as a fraction of the input size, in ``(0, 1)`` (default None).
        return_indices: also return the int64 positions of the maxima (default False).
        _random_samples: ``(N, C, 3)`` uniform samples in ``[0, 1)`` placing the windows (default None: drawn per call).

    Example::

        >>> nn.FractionalMaxPool3d(2, output_size=(2, 3, 3))(fjax.randn(1, 2, 5, 6, 7)).shape
        fjax.Size([1, 2, 2, 3, 3])
    """

    _pool = staticmethod(F.fractional_max_pool3d)


class _LPPoolNd(Module):
    _pool = None

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._pool(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """1-d power-average pooling over ``(N, C, L)`` or ``(C, L)``: ``(sum over each window of
    x ** p) ** (1 / p)``, ``p = norm_type`` (``inf`` gives max pooling, 1 sum pooling).

    Args:
        norm_type: the power ``p``.
        kernel_size: the window size.
        stride: the window step (default None: ``kernel_size``).
        ceil_mode: keep a last, partial window (default False).

    Example::

        >>> nn.LPPool1d(2, 2)(fjax.tensor([[[3.0, 4.0, 1.0, 0.0]]]))
        tensor([[[5., 1.]]], dtype=fjax.float32)
    """

    _pool = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """2-d power-average pooling over ``(N, C, H, W)`` or ``(C, H, W)``: ``(sum over each window
    of x ** p) ** (1 / p)``, ``p = norm_type``.

    Args:
        norm_type: the power ``p``.
        kernel_size: the window size, an int or an ``(h, w)`` pair.
        stride: the window step (default None: ``kernel_size``).
        ceil_mode: keep a last, partial window (default False).

    Example::

        >>> nn.LPPool2d(1, 2)(fjax.arange(4.0).reshape(1, 1, 2, 2))
        tensor([[[[6.]]]], dtype=fjax.float32)
    """

    _pool = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """3-d power-average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``: ``(sum over each
    window of x ** p) ** (1 / p)``, ``p = norm_type``.

    Args:
        norm_type: the power ``p``.
        kernel_size: the window size, an int or a ``(d, h, w)`` triple.
        stride: the window step (default None: ``kernel_size``).
        ceil_mode: keep a last, partial window (default False).

    Example::

        >>> nn.LPPool3d(1, 2)(fjax.ones(1, 1, 2, 2, 2)).flatten()
        tensor([8.], dtype=fjax.float32)
    """

    _pool = staticmethod(F.lp_pool3d)
