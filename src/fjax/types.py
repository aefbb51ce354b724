"""``torch.types``: the type aliases annotations name (``from torch.types import Number``)."""

from __future__ import annotations

import os
from typing import IO, Union

from .device import device as _device_cls
from .dtypes import dtype as _dtype_cls

__all__ = ["Device", "FileLike", "Number", "Storage"]

_int = int
_float = float
_bool = bool
_complex = complex
_dtype = _dtype_cls
_device = _device_cls
_size = Union[tuple, list]
_TensorOrTensors = Union["Tensor", tuple]  # noqa: F821 - a forward reference, as torch writes it
Number = Union[int, float, bool]
Device = Union[_device_cls, str, int, None]
FileLike = Union[str, os.PathLike, IO[bytes]]
Storage = object  # fjax tensors live in XLA buffers: no storage class to name
