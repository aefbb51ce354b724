"""Normalization layers: BatchNorm, InstanceNorm (1d/2d/3d), LayerNorm, GroupNorm, RMSNorm."""

from __future__ import annotations

import numbers

from ...creation import empty, ones, tensor, zeros
from ...dtypes import int64
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from ._utils import module_error


def _affine_parameters(module: Module, shape, affine: bool, bias: bool, device, dtype) -> None:
    """Register ``weight`` and ``bias`` of ``shape`` (set by ``_reset_affine``); None where the
    module is not affine, or has no bias."""
    module.register_parameter("weight", Parameter(empty(shape, device=device, dtype=dtype)) if affine else None)
    module.register_parameter("bias", Parameter(empty(shape, device=device, dtype=dtype)) if affine and bias else None)


def _reset_affine(module: Module) -> None:
    """Weight ones and bias zeros, as torch initializes its norm layers."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    """Per-channel affine parameters and (optionally) running mean/var buffers."""

    _ndims = ()  # accepted input ranks
    _no_batch_ndim = None  # rank of an unbatched input, where accepted

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input(self, input: Tensor) -> None:
        if input.ndim not in self._ndims:
            ranks = " or ".join(f"{n}D" for n in self._ndims)
            raise module_error(self, f"expected {ranks} input (got {input.ndim}D input of shape {tuple(input.shape)})")
        channel_dim = 0 if input.ndim == self._no_batch_ndim else 1
        if input.shape[channel_dim] != self.num_features:
            raise module_error(
                self,
                f"expected {self.num_features} channels at dim {channel_dim}, got input of shape {tuple(input.shape)}",
            )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average, kept on the device (no sync)
                factor = 1.0 / self.num_batches_tracked
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if keep else None,
            self.running_var if keep else None,
            self.weight,
            self.bias,
            use_batch_stats,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalization over ``(N, C)`` or ``(N, C, L)``; running stats in eval mode.

    Example::

        >>> bn = fjax.nn.BatchNorm1d(4)
        >>> bn(fjax.randn(8, 4)).shape
        fjax.Size([8, 4])
    """

    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over ``(N, C, H, W)``."""

    _ndims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization over ``(N, C, D, H, W)``."""

    _ndims = (5,)


class _InstanceNorm(_NormBase):
    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input(input)
        unbatched = input.ndim == self._no_batch_ndim
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Normalize each channel of each sample of ``(N, C, L)`` or ``(C, L)`` over ``L``."""

    _ndims = (2, 3)
    _no_batch_ndim = 2


class InstanceNorm2d(_InstanceNorm):
    """Normalize each channel of each sample of ``(N, C, H, W)`` or ``(C, H, W)``."""

    _ndims = (3, 4)
    _no_batch_ndim = 3


class InstanceNorm3d(_InstanceNorm):
    """Normalize each channel of each sample of ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""

    _ndims = (4, 5)
    _no_batch_ndim = 4


def _normalized_shape(shape) -> tuple:
    return (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)


def _check_trailing(module: Module, input: Tensor, shape: tuple) -> None:
    if tuple(input.shape[input.ndim - len(shape) :]) != shape or input.ndim < len(shape):
        raise module_error(
            module, f"expected input of shape (*, {', '.join(map(str, shape))}), got {tuple(input.shape)}"
        )


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dims, then scale and shift (per element)."""

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.normalized_shape = _normalized_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        _check_trailing(self, input, self.normalized_shape)
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )


class GroupNorm(Module):
    """Normalize each group of ``num_channels // num_groups`` channels of every sample."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels={num_channels} must be divisible by num_groups={num_groups}")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, num_channels, affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim < 2 or input.shape[1] != self.num_channels:
            raise module_error(self, f"expected input of shape (N, {self.num_channels}, *), got {tuple(input.shape)}")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class RMSNorm(Module):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape`` dims.

    ``eps=None`` uses the input dtype's machine epsilon, as in torch.
    """

    def __init__(
        self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, device=None, dtype=None
    ):
        super().__init__()
        self.normalized_shape = _normalized_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        _check_trailing(self, input, self.normalized_shape)
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
