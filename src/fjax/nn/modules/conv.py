"""Convolutions: Conv1d/2d/3d (with padding modes) and ConvTranspose1d/2d/3d."""

from __future__ import annotations

import math

from ...creation import empty
from ...ops import _checks
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter, UninitializedParameter
from ._utils import _pair, _single, _triple, module_error
from .lazy import LazyModuleMixin

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    _nd = 0
    _tuple = staticmethod(_single)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride,
        padding,
        dilation,
        transposed: bool,
        output_padding,
        groups: int,
        bias: bool,
        padding_mode: str,
        device=None,
        dtype=None,
    ):
        super().__init__()
        name = type(self).__name__
        if groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups}")
        if in_channels % groups:
            raise ValueError(f"{name}: in_channels={in_channels} must be divisible by groups={groups}")
        if out_channels % groups:
            raise ValueError(f"{name}: out_channels={out_channels} must be divisible by groups={groups}")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}")
        kernel_size = self._tuple(kernel_size)
        if self._nd:
            kernel_size = _checks.ints(name, "kernel_size", kernel_size, self._nd)
        stride = self._tuple(stride)
        dilation = self._tuple(dilation)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: padding must be 'same', 'valid' or ints, got {padding!r}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
        else:
            padding = self._tuple(padding)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = self._tuple(output_padding)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's (left, right) pairs from the last dim backwards, for non-zero padding modes.
        if padding == "same":
            pads = []
            for d, k in zip(reversed(dilation), reversed(kernel_size)):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
            self._reversed_padding_repeated_twice = tuple(pads)
        elif padding == "valid":
            self._reversed_padding_repeated_twice = (0, 0) * len(kernel_size)
        else:
            self._reversed_padding_repeated_twice = tuple(p for p in reversed(padding) for _ in range(2))
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(empty(*shape, *kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _check_input(self, input: Tensor) -> None:
        nd = self._nd
        spatial = ("L",) if nd == 1 else ("H", "W") if nd == 2 else ("D", "H", "W")
        if input.ndim not in (nd + 1, nd + 2) or input.shape[-nd - 1] != self.in_channels:
            layout = ", ".join((str(self.in_channels),) + spatial)
            raise module_error(self, f"expected input of shape (N, {layout}) or ({layout}), got {tuple(input.shape)}")

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if isinstance(self.padding, str) or self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _conv = None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
            padding_mode, device, dtype,
        )  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:
        self._check_input(input)
        conv = type(self)._conv
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-d convolution (cross-correlation, as in torch) over ``(N, C_in, L)`` or ``(C_in, L)``
    input, with weight ``(C_out, C_in / groups, kernel_size)``. ``stride``, ``padding`` (ints,
    ``'same'`` or ``'valid'``), ``dilation``, ``groups``, ``bias`` and ``padding_mode``
    (``'zeros'``, ``'reflect'``, ``'replicate'``, ``'circular'``) follow torch.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the filter size, an int or a 1-tuple.
        stride: the step of the filter, an int or a 1-tuple (default 1).
        padding: padding on each side, an int or a 1-tuple, or ``'valid'`` / ``'same'`` (default 0).
        dilation: the spacing of the filter taps, an int or a 1-tuple (default 1).
        groups: the number of independent channel groups (default 1).
        bias: if True, learn an ``(out_channels,)`` bias (default True).
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'`` padding (default 'zeros').
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> m = nn.Conv1d(in_channels=1, out_channels=1, kernel_size=2, bias=False)
        >>> _ = m.weight.data.fill_(1.0)
        >>> m(fjax.tensor([[[1., 2., 3., 4.]]]))  # sums of neighbours
        tensor([[[3., 5., 7.]]], dtype=fjax.float32, grad_fn=...)
        >>> nn.Conv1d(4, 8, 3, stride=2, padding=1)(fjax.ones(2, 4, 10)).shape
        fjax.Size([2, 8, 5])
    """

    _nd = 1
    _tuple = staticmethod(_single)
    _conv = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-d convolution over ``(N, C_in, H, W)``; weight ``(C_out, C_in / groups, kh, kw)``.

    ``kernel_size``, ``stride``, ``padding`` and ``dilation`` take an int or a pair; the other
    arguments are those of :class:`Conv1d`. Each output size is
    ``floor((size + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1``.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the filter size, an int or an ``(h, w)`` pair.
        stride: the step of the filter, an int or an ``(h, w)`` pair (default 1).
        padding: padding on each side, an int or an ``(h, w)`` pair, or ``'valid'`` / ``'same'`` (default 0).
        dilation: the spacing of the filter taps, an int or an ``(h, w)`` pair (default 1).
        groups: the number of independent channel groups (default 1).
        bias: if True, learn an ``(out_channels,)`` bias (default True).
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'`` padding (default 'zeros').
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> m = nn.Conv2d(in_channels=3, out_channels=8, kernel_size=3, padding=1)
        >>> m.weight.shape
        fjax.Size([8, 3, 3, 3])
        >>> m(fjax.ones(2, 3, 16, 16)).shape
        fjax.Size([2, 8, 16, 16])
        >>> nn.Conv2d(4, 4, (3, 5), stride=2, groups=4)(fjax.ones(1, 4, 9, 9)).shape
        fjax.Size([1, 4, 4, 3])
    """

    _nd = 2
    _tuple = staticmethod(_pair)
    _conv = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-d convolution over ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)`` input, with weight
    ``(C_out, C_in / groups, kd, kh, kw)``; arguments as in :class:`Conv2d`, ints or triples.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the filter size, an int or a ``(d, h, w)`` triple.
        stride: the step of the filter, an int or a ``(d, h, w)`` triple (default 1).
        padding: padding on each side, an int or a ``(d, h, w)`` triple, or ``'valid'`` / ``'same'`` (default 0).
        dilation: the spacing of the filter taps, an int or a ``(d, h, w)`` triple (default 1).
        groups: the number of independent channel groups (default 1).
        bias: if True, learn an ``(out_channels,)`` bias (default True).
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'`` padding (default 'zeros').
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> m = nn.Conv3d(2, 4, kernel_size=3, padding=1)
        >>> m.weight.shape
        fjax.Size([4, 2, 3, 3, 3])
        >>> m(fjax.ones(1, 2, 4, 4, 4)).shape
        fjax.Size([1, 4, 4, 4, 4])
        >>> nn.Conv3d(2, 4, kernel_size=(1, 3, 3))(fjax.ones(1, 2, 4, 4, 4)).shape
        fjax.Size([1, 4, 4, 2, 2])
    """

    _nd = 3
    _tuple = staticmethod(_triple)
    _conv = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _conv = None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {type(self).__name__}, got padding_mode={padding_mode!r}'
            )
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be ints, got {padding!r}")
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding, groups,
            bias, padding_mode, device, dtype,
        )  # fmt: skip

    def _output_padding(self, input: Tensor, output_size) -> tuple:
        """The output_padding that makes the output ``output_size`` (torch's rule)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        output_size = tuple(output_size)
        batch_dims = 2 if input.ndim == nd + 2 else 1
        if len(output_size) == nd + batch_dims:
            output_size = output_size[batch_dims:]
        if len(output_size) != nd:
            raise module_error(self, f"output_size must have {nd} or {nd + batch_dims} elements, got {output_size}")
        result = []
        for d in range(nd):
            smallest = (
                (input.shape[d + batch_dims] - 1) * self.stride[d]
                - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1)
                + 1
            )
            if not smallest <= output_size[d] < smallest + self.stride[d]:
                raise module_error(
                    self,
                    f"requested an output size of {output_size}, but valid sizes along dim {d} range "
                    f"from {smallest} to {smallest + self.stride[d] - 1} (for an input of {tuple(input.shape)})",
                )
            result.append(output_size[d] - smallest)
        return tuple(result)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        self._check_input(input)
        output_padding = self._output_padding(input, output_size)
        return type(self)._conv(
            input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation
        )


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-d convolution (the gradient of :class:`Conv1d`), with weight
    ``(C_in, C_out / groups, kernel_size)``. The output length is
    ``(L - 1) * stride - 2 * padding + dilation * (kernel_size - 1) + output_padding + 1``;
    only ``padding_mode='zeros'`` is supported, as in torch.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the filter size, an int or a 1-tuple.
        stride: the step of the scatter, an int or a 1-tuple (default 1).
        padding: removed from each side of the output, an int or a 1-tuple (default 0).
        output_padding: extra size added to one side of the output, an int or a 1-tuple (default 0).
        groups: the number of independent channel groups (default 1).
        bias: if True, learn an ``(out_channels,)`` bias (default True).
        dilation: the spacing of the filter taps, an int or a 1-tuple (default 1).
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'`` padding (default 'zeros').
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> m = nn.ConvTranspose1d(in_channels=1, out_channels=1, kernel_size=2, stride=2, bias=False)
        >>> _ = m.weight.data.fill_(1.0)
        >>> m(fjax.tensor([[[1., 2., 3.]]]))
        tensor([[[1., 1., 2., 2., 3., 3.]]], dtype=fjax.float32, grad_fn=...)
        >>> nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1)(fjax.ones(1, 4, 5)).shape
        fjax.Size([1, 2, 10])
    """

    _nd = 1
    _tuple = staticmethod(_single)
    _conv = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-d convolution with weight ``(C_in, C_out / groups, kh, kw)``; arguments as in
    :class:`ConvTranspose1d`, ints or pairs. ``forward(input, output_size=...)`` picks the
    ``output_padding`` that yields that size when a stride makes it ambiguous.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the filter size, an int or an ``(h, w)`` pair.
        stride: the step of the scatter, an int or an ``(h, w)`` pair (default 1).
        padding: removed from each side of the output, an int or an ``(h, w)`` pair (default 0).
        output_padding: extra size added to one side of the output, an int or an ``(h, w)`` pair (default 0).
        groups: the number of independent channel groups (default 1).
        bias: if True, learn an ``(out_channels,)`` bias (default True).
        dilation: the spacing of the filter taps, an int or an ``(h, w)`` pair (default 1).
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'`` padding (default 'zeros').
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> m = nn.ConvTranspose2d(in_channels=8, out_channels=3, kernel_size=3, stride=2, padding=1)
        >>> m.weight.shape
        fjax.Size([8, 3, 3, 3])
        >>> x = fjax.ones(1, 8, 5, 5)
        >>> m(x).shape
        fjax.Size([1, 3, 9, 9])
        >>> m(x, output_size=(10, 10)).shape
        fjax.Size([1, 3, 10, 10])
    """

    _nd = 2
    _tuple = staticmethod(_pair)
    _conv = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-d convolution with weight ``(C_in, C_out / groups, kd, kh, kw)``; arguments as in
    :class:`ConvTranspose2d`, ints or triples.

    Args:
        in_channels: the number of input channels.
        out_channels: the number of output channels.
        kernel_size: the filter size, an int or a ``(d, h, w)`` triple.
        stride: the step of the scatter, an int or a ``(d, h, w)`` triple (default 1).
        padding: removed from each side of the output, an int or a ``(d, h, w)`` triple (default 0).
        output_padding: extra size added to one side of the output, an int or a ``(d, h, w)`` triple (default 0).
        groups: the number of independent channel groups (default 1).
        bias: if True, learn an ``(out_channels,)`` bias (default True).
        dilation: the spacing of the filter taps, an int or a ``(d, h, w)`` triple (default 1).
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'`` padding (default 'zeros').
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> m = nn.ConvTranspose3d(4, 2, kernel_size=2, stride=2)
        >>> m.weight.shape
        fjax.Size([4, 2, 2, 2, 2])
        >>> m(fjax.ones(1, 4, 3, 3, 3)).shape
        fjax.Size([1, 2, 6, 6, 6])
    """

    _nd = 3
    _tuple = staticmethod(_triple)
    _conv = staticmethod(F.conv_transpose3d)


class _LazyConvXdMixin(LazyModuleMixin):
    """A convolution whose ``in_channels`` comes from the first input's channel dim."""

    def _lazy_params(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args, **kwargs) -> None:
        if not self.has_uninitialized_params():
            if self.in_channels == 0:  # the parameters came from a loaded state_dict
                w = self.weight.shape
                self.in_channels = w[0] if self.transposed else w[1] * self.groups
            return
        nd = self._nd
        if input.ndim not in (nd + 1, nd + 2):
            raise module_error(self, f"expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input, got {input.ndim}D")
        self.in_channels = input.shape[0 if input.ndim == nd + 1 else 1]
        if self.in_channels % self.groups:
            raise module_error(self, f"in_channels={self.in_channels} must be divisible by groups={self.groups}")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        self.weight.materialize(shape)
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


def _lazy_conv_doc(cls_name: str, transposed: bool, shape: str, out: str) -> str:
    extra = "        output_padding: extra size added to one side of the output (default 0).\n" if transposed else ""
    order = (
        "        groups: blocked connections from input to output channels (default 1).\n"
        "        bias: if True (default), learn an additive bias.\n"
        "        dilation: the spacing of the kernel's elements (default 1).\n"
        if transposed
        else "        dilation: the spacing of the kernel's elements (default 1).\n"
        "        groups: blocked connections from input to output channels (default 1).\n"
        "        bias: if True (default), learn an additive bias.\n"
    )
    return (
        f"A :class:`{cls_name}` whose ``in_channels`` is the first input's channel count: its weight and\n"
        f"    bias are uninitialized until then, and the layer then becomes a ``{cls_name}``.\n\n"
        "    Args:\n"
        "        out_channels: the number of output channels.\n"
        "        kernel_size: the size of the kernel.\n"
        "        stride: the step of the kernel (default 1).\n"
        "        padding: the padding added to the input (default 0).\n"
        f"{extra}{order}"
        "        padding_mode: ``'zeros'`` (default), ``'reflect'``, ``'replicate'`` or ``'circular'``.\n"
        "        device: the device of the parameters (default None: the default device).\n"
        "        dtype: the dtype of the parameters (default None: the default float dtype).\n\n"
        "    Example::\n\n"
        f"        >>> m = nn.Lazy{cls_name}(4, 1)\n"
        f"        >>> m(fjax.ones({shape})).shape, type(m).__name__, m.in_channels\n"
        f"        ({out}, '{cls_name}', 3)\n"
    )


def _lazy_conv(base, nd: int):
    class LazyConv(_LazyConvXdMixin, base):
        cls_to_become = base

        def __init__(
            self,
            out_channels: int,
            kernel_size,
            stride=1,
            padding=0,
            dilation=1,
            groups: int = 1,
            bias: bool = True,
            padding_mode: str = "zeros",
            device=None,
            dtype=None,
        ) -> None:
            super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
            self._lazy_params(out_channels, bias, device, dtype)

    shape = ", ".join(["2", "3"] + ["5"] * nd)
    out = "fjax.Size([" + ", ".join(["2", "4"] + ["5"] * nd) + "])"
    LazyConv.__name__ = LazyConv.__qualname__ = f"Lazy{base.__name__}"
    LazyConv.__doc__ = _lazy_conv_doc(base.__name__, False, shape, out)
    return LazyConv


def _lazy_conv_transpose(base, nd: int):
    class LazyConvTranspose(_LazyConvXdMixin, base):
        cls_to_become = base

        def __init__(
            self,
            out_channels: int,
            kernel_size,
            stride=1,
            padding=0,
            output_padding=0,
            groups: int = 1,
            bias: bool = True,
            dilation=1,
            padding_mode: str = "zeros",
            device=None,
            dtype=None,
        ) -> None:
            super().__init__(
                0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode, device,
                dtype,
            )  # fmt: skip
            self._lazy_params(out_channels, bias, device, dtype)

    shape = ", ".join(["2", "3"] + ["5"] * nd)
    out = "fjax.Size([" + ", ".join(["2", "4"] + ["5"] * nd) + "])"
    LazyConvTranspose.__name__ = LazyConvTranspose.__qualname__ = f"Lazy{base.__name__}"
    LazyConvTranspose.__doc__ = _lazy_conv_doc(base.__name__, True, shape, out)
    return LazyConvTranspose


LazyConv1d = _lazy_conv(Conv1d, 1)
LazyConv2d = _lazy_conv(Conv2d, 2)
LazyConv3d = _lazy_conv(Conv3d, 3)
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d, 2)
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d, 3)
