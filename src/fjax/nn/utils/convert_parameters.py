"""``parameters_to_vector`` / ``vector_to_parameters``: all parameters as one flat vector and back."""

from __future__ import annotations

from typing import Iterable

from ...dispatch import functions as _F
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_param_device(param: Tensor, old_param_device: int | None) -> int:
    device = param.device.index if param.device.type == "cuda" and param.device.index is not None else -1
    if param.device.type == "cuda" and device == -1:
        device = 0
    if old_param_device is None:
        return device
    if device != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Flatten and concatenate ``parameters`` into one vector (differentiable, as in torch).

    Args:
        parameters: an iterable of tensors, e.g. ``model.parameters()``.

    Returns:
        A 1-d tensor of all their elements, in order.

    Example:
        >>> nn.utils.parameters_to_vector(nn.Linear(3, 2).parameters()).shape
        fjax.Size([8])
    """
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.reshape(-1))
    return _F.cat(vec)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into ``parameters`` (each takes its own number of elements).

    As torch's, it sets each parameter's ``.data`` (not recorded by autograd).

    Args:
        vec: a 1-d tensor with as many elements as the parameters together.
        parameters: an iterable of tensors, e.g. ``model.parameters()``.

    Example:
        >>> m = nn.Linear(2, 1)
        >>> nn.utils.vector_to_parameters(fjax.tensor([1.0, 2.0, 3.0]), m.parameters())
        >>> m.weight.tolist(), m.bias.tolist()
        ([[1.0, 2.0]], [3.0])
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected fjax.Tensor, but got: {type(vec).__name__}")
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        num_param = param.numel()
        param.data = vec[pointer : pointer + num_param].view_as(param).data
        pointer += num_param
