"""PixelShuffle and PixelUnshuffle (torch.nn.modules.pixelshuffle): channels to space and back."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module


class PixelShuffle(Module):
    """``(*, C * r * r, H, W)`` to ``(*, C, H * r, W * r)``, with ``r = upscale_factor``.

    Args:
        upscale_factor: the factor ``r`` the height and width grow by.

    Example::

        >>> nn.PixelShuffle(2)(fjax.arange(8.).reshape(1, 4, 1, 2))
        tensor([[[[0., 2., 1., 3.],
                  [4., 6., 5., 7.]]]], dtype=fjax.float32)
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``(*, C, H * r, W * r)`` to ``(*, C * r * r, H, W)``, with ``r = downscale_factor``: undoes PixelShuffle.

    Args:
        downscale_factor: the factor ``r`` the height and width shrink by.

    Example::

        >>> x = fjax.arange(16.).reshape(1, 1, 4, 4)
        >>> nn.PixelUnshuffle(2)(x).shape
        fjax.Size([1, 4, 2, 2])
        >>> bool((nn.PixelShuffle(2)(nn.PixelUnshuffle(2)(x)) == x).all())
        True
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
