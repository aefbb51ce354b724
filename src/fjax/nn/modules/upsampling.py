"""Upsample, UpsamplingNearest2d and UpsamplingBilinear2d (torch.nn.modules.upsampling) over ``F.interpolate``."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module


class Upsample(Module):
    """Resize the spatial dims to ``size`` or by ``scale_factor`` (``F.interpolate``'s arguments).

    ``mode`` is ``'nearest'``, ``'linear'``, ``'bilinear'``, ``'bicubic'``, ``'trilinear'`` or another
    mode ``F.interpolate`` accepts; a scale factor is stored as a float (or a tuple of floats).

    Args:
        size: the output's spatial size (an int or a tuple); give this or ``scale_factor`` (default None).
        scale_factor: multiplier of each spatial size (a float or a tuple) (default None).
        mode: the ``F.interpolate`` mode (default 'nearest').
        align_corners: for the linear and cubic modes, map corner pixels onto corner pixels (default None).
        recompute_scale_factor: if True, compute from the output size instead of using ``scale_factor`` (default None).

    Example::

        >>> up = nn.Upsample(scale_factor=2, mode="nearest")
        >>> up
        Upsample(scale_factor=2.0, mode='nearest')
        >>> up(fjax.tensor([[[1., 2.]]]))
        tensor([[[1., 1., 2., 2.]]], dtype=fjax.float32)
    """

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(size, scale_factor, mode='nearest')`` of a 4-D input.

    Args:
        size: the output's spatial size (an int or a tuple); give this or ``scale_factor`` (default None).
        scale_factor: multiplier of each spatial size (a float or a tuple) (default None).

    Example::

        >>> nn.UpsamplingNearest2d(scale_factor=2)(fjax.ones(1, 1, 2, 3)).shape
        fjax.Size([1, 1, 4, 6])
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(size, scale_factor, mode='bilinear', align_corners=True)`` of a 4-D input.

    Args:
        size: the output's spatial size (an int or a tuple); give this or ``scale_factor`` (default None).
        scale_factor: multiplier of each spatial size (a float or a tuple) (default None).

    Example::

        >>> nn.UpsamplingBilinear2d(size=(1, 3))(fjax.tensor([[[[0., 2.]]]]))
        tensor([[[[0., 1., 2.]]]], dtype=fjax.float32)
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
