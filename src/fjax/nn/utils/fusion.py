"""Fold an eval-mode BatchNorm into the preceding conv or linear layer (``torch.nn.utils.fusion``)."""

from __future__ import annotations

import copy

from ...creation import ones_like, zeros_like
from ...tensor import Tensor
from ..module import Module
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of ``conv`` whose weight and bias include the eval-mode ``bn`` that follows it.

    Both modules must be in eval mode; ``fused(x) == bn(conv(x))`` up to rounding.

    Args:
        conv: a convolution (``Conv*d`` or, with ``transpose``, ``ConvTranspose*d``).
        bn: the BatchNorm applied to its output, with running statistics.
        transpose: ``conv`` is a transposed convolution (its output channels are dim 1 of the weight).

    Returns:
        The fused convolution (a new module).

    Example:
        >>> conv, bn = nn.Conv2d(2, 3, 3).eval(), nn.BatchNorm2d(3).eval()
        >>> x = fjax.randn(1, 2, 5, 5)
        >>> fused = nn.utils.fuse_conv_bn_eval(conv, bn)
        >>> bool(fjax.allclose(fused(x), bn(conv(x)), atol=1e-5))
        True
    """
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_conv = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose
    )
    return fused_conv


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a convolution followed by an eval-mode BatchNorm, as one convolution.

    ``w' = w * bn_w / sqrt(bn_rv + eps)`` (per output channel) and
    ``b' = (b - bn_rm) * bn_w / sqrt(bn_rv + eps) + bn_b``.

    Args:
        conv_w: the convolution's weight.
        conv_b: its bias, or None.
        bn_rm: the BatchNorm's running mean.
        bn_rv: its running variance.
        bn_eps: its eps.
        bn_w: its weight, or None (ones).
        bn_b: its bias, or None (zeros).
        transpose: the weight is a transposed convolution's (output channels on dim 1).

    Returns:
        ``(weight, bias)`` as Parameters.

    Example:
        >>> w, b = nn.utils.fuse_conv_bn_weights(fjax.ones(2, 1, 1, 1), None, fjax.zeros(2), fjax.full((2,), 3.0),
        ...                                      1.0, None, None)
        >>> w.flatten().tolist(), b.tolist()
        ([0.5, 0.5], [0.0, 0.0])
    """
    conv_weight_dtype = conv_w.dtype
    conv_bias_dtype = conv_b.dtype if conv_b is not None else conv_weight_dtype
    if conv_b is None:
        conv_b = zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ones_like(bn_rm)
    if bn_b is None:
        bn_b = zeros_like(bn_rm)
    bn_var_rsqrt = (bn_rv + bn_eps).rsqrt()
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (len(conv_w.shape) - 2)
    fused_conv_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(dtype=conv_weight_dtype)
    fused_conv_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(dtype=conv_bias_dtype)
    return Parameter(fused_conv_w, conv_w.requires_grad), Parameter(fused_conv_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of ``linear`` whose weight and bias include the eval-mode ``bn`` that follows it.

    ``bn.num_features`` must equal ``linear.out_features`` (or be 1).

    Args:
        linear: the linear layer.
        bn: the BatchNorm applied to its output, with running statistics.

    Returns:
        The fused linear layer (a new module).

    Example:
        >>> lin, bn = nn.Linear(4, 3).eval(), nn.BatchNorm1d(3).eval()
        >>> x = fjax.randn(5, 4)
        >>> bool(fjax.allclose(nn.utils.fuse_linear_bn_eval(lin, bn)(x), bn(lin(x)), atol=1e-5))
        True
    """
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_linear = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}"
        )
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    return fused_linear


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a linear layer followed by an eval-mode BatchNorm, as one linear layer.

    Args:
        linear_w: the linear layer's weight.
        linear_b: its bias, or None.
        bn_rm: the BatchNorm's running mean.
        bn_rv: its running variance.
        bn_eps: its eps.
        bn_w: its weight.
        bn_b: its bias.

    Returns:
        ``(weight, bias)`` as Parameters.

    Example:
        >>> w, b = nn.utils.fuse_linear_bn_weights(fjax.ones(2, 3), None, fjax.zeros(2), fjax.full((2,), 3.0),
        ...                                        1.0, fjax.ones(2), fjax.ones(2))
        >>> w[0].tolist(), b.tolist()
        ([0.5, 0.5, 0.5], [1.0, 1.0])
    """
    linear_weight_dtype = linear_w.dtype
    linear_bias_dtype = linear_b.dtype if linear_b is not None else linear_weight_dtype
    if linear_b is None:
        linear_b = zeros_like(bn_rm)
    bn_scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=linear_weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=linear_bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
