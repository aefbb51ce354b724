"""Dropout layers: active in training mode, the identity in eval mode."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{type(self).__name__}: dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` while training; scale the rest by ``1 / (1 - p)``.

    Example::

        >>> drop = fjax.nn.Dropout(0.1)
        >>> drop.eval()(x) is x
        True
    """

    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` input with probability ``p`` while training."""

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)`` input with probability ``p`` while training."""

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` input with probability ``p`` while training."""

    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps zero mean and unit variance of its input."""

    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """``AlphaDropout`` of whole channels."""

    _fn = staticmethod(F.feature_alpha_dropout)
