"""Padding layers (torch.nn.modules.padding): constant, zero, reflection, replication and circular
padding of the last 1, 2 or 3 dims, each a Module over ``F.pad``."""

from __future__ import annotations

from ...errors import OpError
from ...tensor import Tensor
from .. import functional as F
from ..module import Module
from ._utils import _ntuple


class _PadNd(Module):
    """``F.pad(input, padding, mode)``; ``padding`` is one int for every side or a tuple of
    ``2 * dims`` amounts ``(left, right, top, bottom, front, back)``, last dim first."""

    _dims = 1
    _mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(2 * self._dims, "_pad")(padding)
        if len(self.padding) != 2 * self._dims:
            raise OpError(
                f"{type(self).__name__}: padding must be an int or a tuple of {2 * self._dims} ints, got {padding!r}"
            )

    def forward(self, input: Tensor) -> Tensor:
        if self._mode == "circular" and input.ndim not in (self._dims + 1, self._dims + 2):
            raise ValueError(
                f"{type(self).__name__}: expected {self._dims + 1}D or {self._dims + 2}D input "
                f"(got {input.ndim}D input of shape {tuple(input.shape)})"
            )
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``: ``padding`` is an int or ``(left, right)``.

    Args:
        padding: one int for every side, or ``(left, right)``.
        value: the fill value.

    Example::

        >>> nn.ConstantPad1d((1, 2), 3.5)(fjax.tensor([[1., 2.]]))
        tensor([[3.5000, 1.0000, 2.0000, 3.5000, 3.5000]], dtype=fjax.float32)
    """

    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value``: ``padding`` is an int or ``(left, right, top, bottom)``.

    Args:
        padding: one int for every side, or ``(left, right, top, bottom)``.
        value: the fill value.

    Example::

        >>> nn.ConstantPad2d(1, 9.)(fjax.ones(1, 1, 2)).shape
        fjax.Size([1, 3, 4])
    """

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with ``value``: an int or ``(left, right, top, bottom, front, back)``.

    Args:
        padding: one int for every side, or ``(left, right, top, bottom, front, back)``.
        value: the fill value.

    Example::

        >>> nn.ConstantPad3d((1, 0, 0, 1, 2, 0), 0.5)(fjax.ones(1, 2, 2, 2)).shape
        fjax.Size([1, 4, 3, 3])
    """

    _dims = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros: ``padding`` is an int or ``(left, right)``.

    Args:
        padding: one int for every side, or ``(left, right)``.

    Example::

        >>> nn.ZeroPad1d(1)(fjax.tensor([[1., 2.]]))
        tensor([[0., 1., 2., 0.]], dtype=fjax.float32)
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dims with zeros: ``padding`` is an int or ``(left, right, top, bottom)``.

    Args:
        padding: one int for every side, or ``(left, right, top, bottom)``.

    Example::

        >>> nn.ZeroPad2d((1, 1, 0, 1))(fjax.ones(1, 2, 2))
        tensor([[[0., 1., 1., 0.],
                 [0., 1., 1., 0.],
                 [0., 0., 0., 0.]]], dtype=fjax.float32)
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last three dims with zeros: an int or ``(left, right, top, bottom, front, back)``.

    Args:
        padding: one int for every side, or ``(left, right, top, bottom, front, back)``.

    Example::

        >>> nn.ZeroPad3d(1)(fjax.ones(1, 1, 1, 1)).shape
        fjax.Size([1, 3, 3, 3])
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Mirror the last dim at its edges (the edge itself is not repeated).

    Args:
        padding: one int for every side, or ``(left, right)``.

    Example::

        >>> nn.ReflectionPad1d(2)(fjax.tensor([[1., 2., 3.]]))
        tensor([[3., 2., 1., 2., 3., 2., 1.]], dtype=fjax.float32)
    """

    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Mirror the last two dims at their edges; ``padding`` is an int or ``(left, right, top, bottom)``.

    Args:
        padding: one int for every side, or ``(left, right, top, bottom)``.

    Example::

        >>> nn.ReflectionPad2d((1, 0, 1, 0))(fjax.tensor([[[1., 2.], [3., 4.]]]))
        tensor([[[4., 3., 4.],
                 [2., 1., 2.],
                 [4., 3., 4.]]], dtype=fjax.float32)
    """

    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Mirror the last three dims at their edges.

    Args:
        padding: one int for every side, or ``(left, right, top, bottom, front, back)``.

    Example::

        >>> nn.ReflectionPad3d(1)(fjax.ones(1, 2, 2, 2)).shape
        fjax.Size([1, 4, 4, 4])
    """

    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Repeat the edge values of the last dim.

    Args:
        padding: one int for every side, or ``(left, right)``.

    Example::

        >>> nn.ReplicationPad1d((2, 1))(fjax.tensor([[1., 2., 3.]]))
        tensor([[1., 1., 1., 2., 3., 3.]], dtype=fjax.float32)
    """

    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Repeat the edge values of the last two dims.

    Args:
        padding: one int for every side, or ``(left, right, top, bottom)``.

    Example::

        >>> nn.ReplicationPad2d(1)(fjax.ones(1, 2, 2)).shape
        fjax.Size([1, 4, 4])
    """

    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Repeat the edge values of the last three dims.

    Args:
        padding: one int for every side, or ``(left, right, top, bottom, front, back)``.

    Example::

        >>> nn.ReplicationPad3d(1)(fjax.ones(1, 1, 2, 2, 2)).shape
        fjax.Size([1, 1, 4, 4, 4])
    """

    _dims, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Wrap the last dim around: the left pad is taken from the right end and vice versa.

    Args:
        padding: one int for every side, or ``(left, right)``.

    Example::

        >>> nn.CircularPad1d((1, 2))(fjax.tensor([[1., 2., 3.]]))
        tensor([[3., 1., 2., 3., 1., 2.]], dtype=fjax.float32)
    """

    _dims, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Wrap the last two dims around.

    Args:
        padding: one int for every side, or ``(left, right, top, bottom)``.

    Example::

        >>> nn.CircularPad2d(1)(fjax.ones(1, 1, 2, 2)).shape
        fjax.Size([1, 1, 4, 4])
    """

    _dims, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    """Wrap the last three dims around.

    Args:
        padding: one int for every side, or ``(left, right, top, bottom, front, back)``.

    Example::

        >>> nn.CircularPad3d(1)(fjax.ones(1, 1, 2, 2, 2)).shape
        fjax.Size([1, 1, 4, 4, 4])
    """

    _dims, _mode = 3, "circular"
