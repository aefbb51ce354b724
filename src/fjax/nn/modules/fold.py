"""Fold and Unfold (torch.nn.modules.fold): sliding blocks to columns (im2col) and back."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module


class Fold(Module):
    """Sum sliding blocks ``(N, C * prod(kernel_size), L)`` back into an ``(N, C, *output_size)`` image.

    Args:
        output_size: the image's spatial size ``(H, W)`` (an int for a square).
        kernel_size: the block size, an int or an ``(kh, kw)`` pair.
        dilation: the spacing of the block's elements (default 1).
        padding: zeros added on each side of the image (default 0).
        stride: the step between blocks (default 1).

    Example::

        >>> cols = nn.Unfold(kernel_size=2)(fjax.ones(1, 1, 3, 3))
        >>> nn.Fold(output_size=(3, 3), kernel_size=2)(cols)  # each pixel counts its blocks
        tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]], dtype=fjax.float32)
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Unfold(Module):
    """Extract sliding blocks of an ``(N, C, H, W)`` input as columns ``(N, C * prod(kernel_size), L)``.

    Args:
        kernel_size: the block size, an int or an ``(kh, kw)`` pair.
        dilation: the spacing of the block's elements (default 1).
        padding: zeros added on each side of the image (default 0).
        stride: the step between blocks (default 1).

    Example::

        >>> nn.Unfold(kernel_size=(2, 3))(fjax.ones(2, 5, 3, 4)).shape
        fjax.Size([2, 30, 4])
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
