"""``convert_conv2d_weight_memory_format`` / ``convert_conv3d_weight_memory_format`` (torch.nn.utils).

fjax tensors are JAX arrays, whose physical layout XLA chooses per computation; there is no
per-tensor memory format to convert. The functions keep torch's signature and return value and
leave the weights' values unchanged.
"""

from __future__ import annotations

from ...dtypes import memory_format as _memory_format
from ..module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(name: str, module: Module, memory_format) -> Module:
    if not isinstance(memory_format, _memory_format):
        raise TypeError(
            f"{name}: expected a fjax.memory_format (e.g. fjax.channels_last), got {type(memory_format).__name__}"
        )
    return module


def convert_conv2d_weight_memory_format(module: Module, memory_format) -> Module:
    """Convert the weights of ``module``'s ``Conv2d``/``ConvTranspose2d`` layers to ``memory_format``.

    A no-op in fjax (XLA picks array layouts itself); the module is returned unchanged, as
    torch returns it converted.

    Args:
        module: the module (searched recursively).
        memory_format: ``fjax.channels_last`` or ``fjax.contiguous_format``.

    Returns:
        ``module``.

    Example:
        >>> m = nn.Sequential(nn.Conv2d(3, 4, 3))
        >>> nn.utils.convert_conv2d_weight_memory_format(m, fjax.channels_last) is m
        True
    """
    return _convert("convert_conv2d_weight_memory_format", module, memory_format)


def convert_conv3d_weight_memory_format(module: Module, memory_format) -> Module:
    """Convert the weights of ``module``'s ``Conv3d``/``ConvTranspose3d`` layers to ``memory_format``.

    A no-op in fjax (XLA picks array layouts itself); the module is returned unchanged.

    Args:
        module: the module (searched recursively).
        memory_format: ``fjax.channels_last_3d`` or ``fjax.contiguous_format``.

    Returns:
        ``module``.

    Example:
        >>> m = nn.Sequential(nn.Conv3d(3, 4, 3))
        >>> nn.utils.convert_conv3d_weight_memory_format(m, fjax.channels_last_3d) is m
        True
    """
    return _convert("convert_conv3d_weight_memory_format", module, memory_format)
