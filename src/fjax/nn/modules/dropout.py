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

    The expected value is unchanged. In eval mode (``.eval()``) the layer returns its input
    untouched. ``p`` must lie in ``[0, 1]`` (default ``0.5``). Input of any shape, 1-D included.
    OneFlow's extras: ``generator`` (a ``fjax.Generator`` to draw the masks from instead of the
    default one) and ``forward(x, addend=None)``, which adds ``addend`` to the result (OneFlow's
    fused residual connection; in eval mode ``x + addend``).

    Args:
        p: probability of zeroing an element (default 0.5).
        inplace: if True, overwrite the input with the result (default False).
        generator: the ``fjax.Generator`` the mask is drawn from (default None: the global one).

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> drop = nn.Dropout(p=0.5)
        >>> x = fjax.ones(8)
        >>> y = drop(x)
        >>> bool(((y == 0) | (y == 2)).all())
        True
        >>> drop.eval()(x) is x
        True
        >>> a = nn.Dropout(0.5, generator=fjax.Generator().manual_seed(1))(x)
        >>> b = nn.Dropout(0.5, generator=fjax.Generator().manual_seed(1))(x)
        >>> bool((a == b).all())
        True
    """

    def __init__(self, p: float = 0.5, inplace: bool = False, generator=None):
        super().__init__(p, inplace)
        self.generator = generator

    def forward(self, input: Tensor, addend: Tensor | None = None) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace, self.generator, addend=addend)


class Dropout1d(_DropoutNd):
    """Channel dropout for ``(N, C, L)`` or ``(C, L)`` input: while training, each channel is
    zeroed as a whole with probability ``p`` and the kept ones are scaled by ``1 / (1 - p)``;
    the identity in eval mode.

    Args:
        p: probability of zeroing a channel (default 0.5).
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = nn.Dropout1d(p=0.5)(fjax.ones(1, 6, 4))
        >>> bool(((y == 0).all(dim=-1) | (y == 2).all(dim=-1)).all())
        True
    """

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Channel dropout for ``(N, C, H, W)`` or ``(C, H, W)`` input: while training, each
    ``H x W`` feature map is zeroed with probability ``p`` and the kept ones are scaled by
    ``1 / (1 - p)``; the identity in eval mode.

    Args:
        p: probability of zeroing a channel (default 0.5).
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = nn.Dropout2d(p=0.5)(fjax.ones(2, 3, 4, 4))
        >>> bool(((y == 0).all(dim=(2, 3)) | (y == 2).all(dim=(2, 3))).all())
        True
    """

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Channel dropout for ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input: while training, each
    ``D x H x W`` volume is zeroed with probability ``p`` and the kept ones are scaled by
    ``1 / (1 - p)``; the identity in eval mode.

    Args:
        p: probability of zeroing a channel (default 0.5).
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = nn.Dropout3d(p=0.25)(fjax.ones(2, 3, 2, 2, 2))
        >>> y.shape
        fjax.Size([2, 3, 2, 2, 2])
        >>> bool(((y == 0) | (y == 4. / 3)).all())
        True
    """

    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout for :class:`SELU` networks: while training, dropped elements are set to SELU's
    negative saturation value and an affine correction keeps a zero-mean, unit-variance input
    at zero mean and unit variance; the identity in eval mode.

    Args:
        p: probability of dropping an element (default 0.5).
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> drop = nn.AlphaDropout(p=0.2)
        >>> x = fjax.randn(10000)
        >>> y = drop(x)
        >>> abs(y.mean().item()) < 0.05, round(y.std().item(), 1)
        (True, 1.0)
        >>> drop.eval()(x) is x
        True
    """

    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """:class:`AlphaDropout` of whole channels: while training, each channel (dim 1) is masked as a
    unit, then the same affine correction is applied; the identity in eval mode.

    Args:
        p: probability of dropping a channel (default 0.5).
        inplace: if True, overwrite the input with the result (default False).

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = nn.FeatureAlphaDropout(p=0.5)(fjax.zeros(1, 4, 3))
        >>> y.shape
        fjax.Size([1, 4, 3])
        >>> bool((y == y[:, :, :1]).all())
        True
    """

    _fn = staticmethod(F.feature_alpha_dropout)
