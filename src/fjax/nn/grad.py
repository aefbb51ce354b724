"""``torch.nn.grad``: the gradients of a convolution with respect to its input and its weight,
as functions (a custom ``autograd.Function``'s backward calls them). Each is the VJP of the
convolution (JAX's, through the tape), which is linear in the argument it differentiates; the
result is differentiable in the other arguments, as torch's.

Example::

    >>> x, w = fjax.randn(1, 2, 5, 5), fjax.randn(3, 2, 3, 3)
    >>> g = fjax.randn(1, 3, 3, 3)
    >>> tuple(fjax.nn.grad.conv2d_input(x.shape, w, g).shape), tuple(fjax.nn.grad.conv2d_weight(x, w.shape, g).shape)
    ((1, 2, 5, 5), (3, 2, 3, 3))
"""

from __future__ import annotations

from .. import autograd
from ..creation import zeros
from ..errors import OpError
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]

_CONVS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _input_grad(dims, input_size, weight, grad_output, stride, padding, dilation, groups):
    size = tuple(input_size)
    if len(size) != dims + 2:
        raise OpError(f"conv{dims}d_input: input_size must have {dims + 2} entries (N, C, spatial...), got {size}")
    x = zeros(size, dtype=weight.dtype, requires_grad=True)
    with autograd.enable_grad():
        out = _CONVS[dims](x, weight, None, stride, padding, dilation, groups)
        _check_grad_output(f"conv{dims}d_input", out, grad_output)
        return autograd.grad(out, x, grad_output, create_graph=weight.requires_grad or grad_output.requires_grad)[0]


def _weight_grad(dims, input, weight_size, grad_output, stride, padding, dilation, groups):
    size = tuple(weight_size)
    if len(size) != dims + 2:
        raise OpError(
            f"conv{dims}d_weight: weight_size must have {dims + 2} entries (out, in/groups, kernel...), got {size}"
        )
    w = zeros(size, dtype=input.dtype, requires_grad=True)
    with autograd.enable_grad():
        out = _CONVS[dims](input, w, None, stride, padding, dilation, groups)
        _check_grad_output(f"conv{dims}d_weight", out, grad_output)
        return autograd.grad(out, w, grad_output, create_graph=input.requires_grad or grad_output.requires_grad)[0]


def _check_grad_output(op, out, grad_output):
    if tuple(grad_output.shape) != tuple(out.shape):
        raise OpError(
            f"{op}: grad_output has shape {tuple(grad_output.shape)}, but the convolution's output has shape "
            f"{tuple(out.shape)}"
        )


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv1d`` with respect to an input of ``input_size``."""
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """The gradient of ``conv1d`` with respect to a weight of ``weight_size``."""
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv2d`` with respect to an input of ``input_size``."""
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """The gradient of ``conv2d`` with respect to a weight of ``weight_size``."""
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv3d`` with respect to an input of ``input_size``."""
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """The gradient of ``conv3d`` with respect to a weight of ``weight_size``."""
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
