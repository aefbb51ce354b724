"""Normalization layers: BatchNorm, InstanceNorm (1d/2d/3d), LayerNorm, GroupNorm, RMSNorm."""

from __future__ import annotations

import math
import numbers
import warnings

from ...creation import empty, ones, tensor, zeros
from ...dtypes import int64
from ...tensor import Size, Tensor  # noqa: F401 - Size: torch's module namespace
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from ._utils import module_error
from .lazy import LazyModuleMixin


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

    _version = 2  # as torch's: older checkpoints may lack num_batches_tracked (Module.load_state_dict)
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
        """Reset the running statistics, and the weight to ones and the bias to zeros (if affine).

        Example:
            >>> m = nn.BatchNorm1d(3)
            >>> m.reset_parameters()
            >>> m.weight.tolist()
            [1.0, 1.0, 1.0]
        """
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

    In training mode each channel is normalized with the batch mean and biased variance, then
    scaled by ``weight`` and shifted by ``bias`` (``affine=True``). With
    ``track_running_stats=True`` the running mean and unbiased variance are updated as
    ``(1 - momentum) * running + momentum * batch`` (``momentum=None``: cumulative average),
    and eval mode normalizes with them instead.

    Args:
        num_features: the number of channels ``C`` (dim 1).
        eps: added to the variance for stability (default 1e-05).
        momentum: the running statistics' update factor (None: a cumulative average) (default 0.1).
        affine: if True, learn a per-channel ``weight`` and ``bias`` (default True).
        track_running_stats: if True, keep running mean/variance buffers and use them in eval mode (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).
        bias: with ``affine``, also learn the ``bias`` (False: weight only) (default True).

    Example::

        >>> bn = nn.BatchNorm1d(num_features=2, eps=1e-5, momentum=0.1)
        >>> x = fjax.tensor([[1., 10.], [3., 30.]])
        >>> bn(x)
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]], dtype=fjax.float32, grad_fn=...)
        >>> bn.running_mean
        tensor([0.2000, 2.0000], dtype=fjax.float32)
        >>> bn.eval()(x)
        tensor([[0.7628, 1.7499],
                [2.6697, 6.1247]], dtype=fjax.float32, grad_fn=...)
    """

    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of each channel of ``(N, C, H, W)`` input over ``N``, ``H`` and ``W``;
    arguments and running statistics as in :class:`BatchNorm1d`.

    Args:
        num_features: the number of channels ``C`` (dim 1).
        eps: added to the variance for stability (default 1e-05).
        momentum: the running statistics' update factor (None: a cumulative average) (default 0.1).
        affine: if True, learn a per-channel ``weight`` and ``bias`` (default True).
        track_running_stats: if True, keep running mean/variance buffers and use them in eval mode (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).
        bias: with ``affine``, also learn the ``bias`` (False: weight only) (default True).

    Example::

        >>> bn = nn.BatchNorm2d(num_features=3, momentum=0.1)
        >>> y = bn(fjax.arange(24.).reshape(2, 3, 2, 2))
        >>> y.mean(dim=(0, 2, 3)).abs().max().item() < 1e-6
        True
        >>> bn.running_mean
        tensor([0.7500, 1.1500, 1.5500], dtype=fjax.float32)
        >>> bn.num_batches_tracked
        tensor(1, dtype=fjax.int64)
    """

    _ndims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of each channel of ``(N, C, D, H, W)`` input over ``N``, ``D``, ``H`` and
    ``W``; arguments and running statistics as in :class:`BatchNorm1d`.

    Args:
        num_features: the number of channels ``C`` (dim 1).
        eps: added to the variance for stability (default 1e-05).
        momentum: the running statistics' update factor (None: a cumulative average) (default 0.1).
        affine: if True, learn a per-channel ``weight`` and ``bias`` (default True).
        track_running_stats: if True, keep running mean/variance buffers and use them in eval mode (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).
        bias: with ``affine``, also learn the ``bias`` (False: weight only) (default True).

    Example::

        >>> bn = nn.BatchNorm3d(3, affine=False)
        >>> bn(fjax.ones(2, 3, 2, 2, 2)).shape
        fjax.Size([2, 3, 2, 2, 2])
        >>> bn.weight is None
        True
    """

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

    def _check_input(self, input: Tensor) -> None:
        """torch's rules: without affine parameters or running stats a channel count other than
        ``num_features`` only warns; the statistics need more than one spatial element."""
        if self.affine or self.track_running_stats or input.ndim not in self._ndims:
            super()._check_input(input)
        else:
            channels = input.shape[0 if input.ndim == self._no_batch_ndim else 1]
            if channels != self.num_features:
                warnings.warn(
                    f"{type(self).__name__}: input has {channels} channels, not num_features={self.num_features}; "
                    "normalizing them anyway (no affine parameters or running stats use num_features)",
                    stacklevel=3,
                )
        spatial = input.shape[1 if input.ndim == self._no_batch_ndim else 2 :]
        if (self.training or not self.track_running_stats) and math.prod(spatial) <= 1:
            raise module_error(
                self, f"expected more than 1 spatial element when training, got input of shape {tuple(input.shape)}"
            )

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
    """Instance normalization: each channel of each sample of ``(N, C, L)`` or ``(C, L)`` input is
    normalized over ``L`` with its own mean and biased variance. Unlike batch norm the defaults
    are ``affine=False`` and ``track_running_stats=False``, as in torch.

    Args:
        num_features: the number of channels ``C`` (dim 1).
        eps: added to the variance for stability (default 1e-05).
        momentum: the running statistics' update factor (default 0.1).
        affine: if True, learn a per-channel ``weight`` and ``bias`` (default False).
        track_running_stats: if True, keep running mean/variance buffers and use them in eval mode (default False).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).
        bias: with ``affine``, also learn the ``bias`` (False: weight only) (default True).

    Example::

        >>> m = nn.InstanceNorm1d(num_features=2)
        >>> m(fjax.tensor([[[1., 2., 3.], [0., 0., 6.]]]))
        tensor([[[-1.2247,  0.0000,  1.2247],
                 [-0.7071, -0.7071,  1.4142]]], dtype=fjax.float32)
    """

    _ndims = (2, 3)
    _no_batch_ndim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of ``(N, C, H, W)`` or ``(C, H, W)`` input: each ``H x W`` map is
    normalized on its own; arguments as in :class:`InstanceNorm1d`.

    Args:
        num_features: the number of channels ``C`` (dim 1).
        eps: added to the variance for stability (default 1e-05).
        momentum: the running statistics' update factor (default 0.1).
        affine: if True, learn a per-channel ``weight`` and ``bias`` (default False).
        track_running_stats: if True, keep running mean/variance buffers and use them in eval mode (default False).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).
        bias: with ``affine``, also learn the ``bias`` (False: weight only) (default True).

    Example::

        >>> m = nn.InstanceNorm2d(3, affine=True)
        >>> m(fjax.ones(2, 3, 4, 4)).shape
        fjax.Size([2, 3, 4, 4])
        >>> m.weight.shape
        fjax.Size([3])
    """

    _ndims = (3, 4)
    _no_batch_ndim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input: each ``D x H x W``
    volume is normalized on its own; arguments as in :class:`InstanceNorm1d`.

    Args:
        num_features: the number of channels ``C`` (dim 1).
        eps: added to the variance for stability (default 1e-05).
        momentum: the running statistics' update factor (default 0.1).
        affine: if True, learn a per-channel ``weight`` and ``bias`` (default False).
        track_running_stats: if True, keep running mean/variance buffers and use them in eval mode (default False).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).
        bias: with ``affine``, also learn the ``bias`` (False: weight only) (default True).

    Example::

        >>> m = nn.InstanceNorm3d(3)
        >>> m(fjax.ones(2, 3, 2, 2, 2)).shape
        fjax.Size([2, 3, 2, 2, 2])
        >>> m(fjax.ones(3, 2, 2, 2)).shape
        fjax.Size([3, 2, 2, 2])
    """

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
    """Normalize over the trailing ``normalized_shape`` dims (an int or a shape) with the mean and
    biased variance of each sample, then scale and shift by per-element ``weight`` and ``bias``
    (``elementwise_affine=True``; ``bias=False`` drops the shift). No running statistics.

    Args:
        normalized_shape: the trailing dims normalized over (an int or a shape).
        eps: added to the variance for stability (default 1e-05).
        elementwise_affine: if True, learn a per-element ``weight`` and ``bias`` (default True).
        bias: with ``elementwise_affine``, also learn the ``bias`` (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> m = nn.LayerNorm(normalized_shape=3, eps=1e-5)
        >>> m(fjax.tensor([[1., 2., 3.], [2., 2., 8.]]))
        tensor([[-1.2247,  0.0000,  1.2247],
                [-0.7071, -0.7071,  1.4142]], dtype=fjax.float32, grad_fn=...)
        >>> nn.LayerNorm([2, 3], elementwise_affine=False)(fjax.ones(4, 2, 3)).shape
        fjax.Size([4, 2, 3])
    """

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
        """Set the weight to ones and the bias (if any) to zeros.

        Example:
            >>> m = nn.LayerNorm(3)
            >>> m.reset_parameters()
            >>> m.weight.tolist()
            [1.0, 1.0, 1.0]
        """
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
    """Group normalization: the channels (dim 1) of each sample are split into ``num_groups``
    groups, each normalized over its channels and spatial dims; then a per-channel affine map
    (``affine=True``). ``num_channels`` must be divisible by ``num_groups``.

    Args:
        num_groups: the number of groups the channels are split into.
        num_channels: the number of channels ``C``, divisible by ``num_groups``.
        eps: added to the variance for stability (default 1e-05).
        affine: if True, learn a per-channel ``weight`` and ``bias`` (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).
        bias: with ``affine``, also learn the ``bias`` (default True).

    Example::

        >>> m = nn.GroupNorm(num_groups=2, num_channels=4)
        >>> x = fjax.tensor([1., 3., 10., 30.]).reshape(1, 4, 1)
        >>> m(x).flatten()
        tensor([-1.0000,  1.0000, -1.0000,  1.0000], dtype=fjax.float32, grad_fn=...)
    """

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
        if num_groups == 0:
            raise ZeroDivisionError(f"GroupNorm: num_groups must be non-zero, got num_groups={num_groups}")
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels={num_channels} must be divisible by num_groups={num_groups}")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, num_channels, affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set the weight to ones and the bias (if any) to zeros.

        Example:
            >>> m = nn.GroupNorm(1, 3)
            >>> m.reset_parameters()
            >>> m.weight.tolist()
            [1.0, 1.0, 1.0]
        """
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

    ``eps=None`` uses the input dtype's machine epsilon, as in torch. There is no mean
    subtraction and no bias; ``weight`` starts at ones (``elementwise_affine=True``).

    Args:
        normalized_shape: the trailing dims normalized over (an int or a shape).
        eps: added to the mean square (default None: the dtype's machine epsilon).
        elementwise_affine: if True, learn a per-element ``weight`` (default True).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).

    Example::

        >>> m = nn.RMSNorm(normalized_shape=2)
        >>> m(fjax.tensor([[3., 4.], [1., -1.]]))
        tensor([[ 0.8485,  1.1314],
                [ 1.0000, -1.0000]], dtype=fjax.float32, grad_fn=...)
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
        """Set the weight (if elementwise_affine) to ones.

        Example:
            >>> m = nn.RMSNorm(3)
            >>> m.reset_parameters()
            >>> m.weight.tolist()
            [1.0, 1.0, 1.0]
        """
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        _check_trailing(self, input, self.normalized_shape)
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Local response normalization across channels of ``(N, C, *)`` input (AlexNet's LRN):
    ``x / (k + alpha * mean of x**2 over size neighbouring channels) ** beta``.

    Args:
        size: the number of neighbouring channels in the window.
        alpha: the multiplicative factor (default 1e-4).
        beta: the exponent (default 0.75).
        k: the additive constant (default 1.0).

    Example::

        >>> nn.LocalResponseNorm(2, alpha=1.0, beta=1.0, k=0.0)(fjax.tensor([[[1.0], [2.0], [3.0]]]))
        tensor([[[2.0000],
                 [0.8000],
                 [0.4615]]], dtype=fjax.float32)
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """torch's legacy cross-channel LRN of 4-d ``(N, C, H, W)`` input:
    ``x * (k + alpha / size * sum of x**2 over the channel window) ** -beta``.

    The window of channel ``c`` is ``[c - p + 1, c + p - 1]`` with ``p = (size - 1) // 2 + 1``,
    clipped at the edges; as torch's running-sum implementation, channel 0 is never dropped from
    the windows past it.

    Args:
        size: the channel window size.
        alpha: the multiplicative factor (default 1e-4).
        beta: the exponent (default 0.75).
        k: the additive constant (default 1).

    Example::

        >>> nn.CrossMapLRN2d(3, alpha=3.0, beta=1.0, k=0.0)(fjax.tensor([[[[1.0]], [[1.0]]]])).flatten()
        tensor([0.5000, 0.5000], dtype=fjax.float32)
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim != 4:
            raise module_error(self, f"expected 4D input (N, C, H, W), got {input.ndim}D of shape {tuple(input.shape)}")
        if self.size == 0:
            raise ZeroDivisionError(f"CrossMapLRN2d: size must be non-zero, got size={self.size}")
        channels = input.shape[1]
        pre = (self.size - 1) // 2 + 1
        square = input * input
        cum = F.pad(square.cumsum(1), (0, 0, 0, 0, 1, 0))  # cum[:, j] = sum of channels < j
        hi = [min(c + pre, channels) for c in range(channels)]
        lo = [max(c - pre + 1, 0) for c in range(channels)]
        window = cum[:, hi] - cum[:, lo]
        stuck = [float(c >= pre) for c in range(channels)]  # torch never subtracts channel 0
        if any(stuck):
            window = window + square[:, :1] * tensor(stuck, dtype=input.dtype).reshape(1, channels, 1, 1)
        return input * (window * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over ``(N, C, *)`` input whose statistics torch reduces across the
    processes of ``process_group``. fjax runs one process (a multi-device step is one XLA
    program, whose batch axis the statistics already span), so it computes ``BatchNorm``'s values.

    Args:
        num_features: the number of channels ``C``.
        eps: added to the variance for stability (default 1e-5).
        momentum: the running statistics' update factor; None for a cumulative average (default 0.1).
        affine: if True (default), learn a per-channel weight and bias.
        track_running_stats: if True (default), keep running mean and variance buffers.
        process_group: torch's process group of the reduction; accepted and kept (default None).
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).
        bias: if False, no bias is learned (default True).

    Example::

        >>> m = nn.SyncBatchNorm(2)
        >>> m(fjax.tensor([[1.0, 2.0], [3.0, 6.0]])).round().tolist()
        [[-1.0, -1.0], [1.0, 1.0]]
        >>> type(nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm1d(2)))[0]).__name__
        'SyncBatchNorm'
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group=None,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise module_error(self, f"expected at least 2D input (got {input.ndim}D input)")
        if input.shape[1] != self.num_features:
            raise module_error(
                self, f"expected {self.num_features} channels at dim 1, got input of shape {tuple(input.shape)}"
            )

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """``module`` with every BatchNorm layer in it replaced by a SyncBatchNorm sharing its
        parameters and running statistics (the module itself if it is one).

        Args:
            module: the module (tree) to convert.
            process_group: the process group the new layers keep (default None).

        Example:
            >>> net = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)))
            >>> [type(m).__name__ for m in net]
            ['Linear', 'SyncBatchNorm']
        """
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
                bias=module.bias is not None,
            )
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """A norm layer whose ``num_features`` comes from the first input's channel dim."""

    def __init__(
        self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *, bias=True
    ) -> None:
        kw = dict(device=device, dtype=dtype)
        super().__init__(0, eps, momentum, False, False, **kw, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(**kw)
            if bias:
                self.bias = UninitializedParameter(**kw)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(**kw)
            self.running_var = UninitializedBuffer(**kw)
            self.num_batches_tracked = tensor(0, dtype=int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if not self.has_uninitialized_params():
            if self.num_features == 0:  # the parameters came from a loaded state_dict
                loaded = self.weight if self.weight is not None else self.running_mean
                self.num_features = loaded.shape[0] if loaded is not None else input.shape[1]
            return
        self.num_features = input.shape[0 if input.ndim == self._no_batch_ndim else 1]
        for name in ("weight", "bias", "running_mean", "running_var"):
            t = getattr(self, name)
            if t is not None:
                t.materialize((self.num_features,))
        self.reset_parameters()


def _lazy_doc(cls_name: str, shape: str, out: str) -> str:
    return f"""A :class:`{cls_name}` whose ``num_features`` is the first input's channel count: its weight,
    bias and running statistics are uninitialized until then, and the layer then becomes a ``{cls_name}``.

    Args:
        eps: added to the variance for stability (default 1e-5).
        momentum: the running statistics' update factor; None for a cumulative average (default 0.1).
        affine: if True, learn a per-channel weight and bias.
        track_running_stats: if True, keep running mean and variance buffers.
        device: the device of the parameters and buffers (default None: the default device).
        dtype: the dtype of the parameters and buffers (default None: the default float dtype).
        bias: if False, no bias is learned (default True).

    Example::

        >>> m = nn.Lazy{cls_name}()
        >>> m(fjax.ones({shape})).shape, type(m).__name__, m.num_features
        ({out}, '{cls_name}', 3)
    """


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    __doc__ = _lazy_doc("BatchNorm1d", "2, 3", "fjax.Size([2, 3])")
    cls_to_become = BatchNorm1d
    _ndims, _no_batch_ndim = BatchNorm1d._ndims, BatchNorm1d._no_batch_ndim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    __doc__ = _lazy_doc("BatchNorm2d", "2, 3, 1, 1", "fjax.Size([2, 3, 1, 1])")
    cls_to_become = BatchNorm2d
    _ndims, _no_batch_ndim = BatchNorm2d._ndims, BatchNorm2d._no_batch_ndim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    __doc__ = _lazy_doc("BatchNorm3d", "2, 3, 1, 1, 1", "fjax.Size([2, 3, 1, 1, 1])")
    cls_to_become = BatchNorm3d
    _ndims, _no_batch_ndim = BatchNorm3d._ndims, BatchNorm3d._no_batch_ndim


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    __doc__ = _lazy_doc("InstanceNorm1d", "2, 3, 4", "fjax.Size([2, 3, 4])")
    cls_to_become = InstanceNorm1d
    _ndims, _no_batch_ndim = InstanceNorm1d._ndims, InstanceNorm1d._no_batch_ndim


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    __doc__ = _lazy_doc("InstanceNorm2d", "2, 3, 2, 2", "fjax.Size([2, 3, 2, 2])")
    cls_to_become = InstanceNorm2d
    _ndims, _no_batch_ndim = InstanceNorm2d._ndims, InstanceNorm2d._no_batch_ndim


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    __doc__ = _lazy_doc("InstanceNorm3d", "2, 3, 2, 2, 2", "fjax.Size([2, 3, 2, 2, 2])")
    cls_to_become = InstanceNorm3d
    _ndims, _no_batch_ndim = InstanceNorm3d._ndims, InstanceNorm3d._no_batch_ndim
