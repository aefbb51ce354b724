"""Tensor creation: tensor, zeros/ones/full/empty (+ _like), arange, linspace, eye."""

from __future__ import annotations

import builtins
import math
import sys

import jax
import jax.numpy as jnp
import numpy as np

from . import dtypes as _dt
from .device import device as _device
from .errors import OpError
from .tensor import Tensor, _Above

_PY_KIND = {"b": _dt.bool, "i": _dt.int64, "u": _dt.int64, "f": _dt.float32, "c": _dt.complex64}


def _place(arr, device, requires_grad=False) -> Tensor:
    if device is not None and not isinstance(arr, jax.core.Tracer):
        arr = jax.device_put(arr, _device(device).jax_device())
    t = Tensor._wrap(arr)
    if requires_grad:
        t.requires_grad = True
    return t


def _np_dtype(dtype):
    return None if dtype is None else _dt.to_dtype(dtype).dtype


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, numpy or jax arrays).

    Python floats become float32, Python ints int64 and bools bool, as in torch; numpy and
    jax arrays keep their dtype.

    Example::

        >>> fjax.tensor([[1, 2]]).dtype
        fjax.int64
    """
    if isinstance(data, Tensor):
        arr = data._data
    elif isinstance(data, (jax.Array, np.ndarray, np.generic)):
        arr = data
    else:
        try:
            host = np.asarray(data)
        except ValueError as err:
            raise OpError(f"tensor: expected rectangular nested sequences of numbers: {err}") from None
        if host.dtype == object:
            raise OpError(f"tensor: could not infer a dtype from {type(data).__name__} data {data!r:.80}")
        arr = host if dtype is not None else host.astype(_PY_KIND[host.dtype.kind].dtype)
    dt = _np_dtype(dtype)
    if dt is None and isinstance(arr, np.ndarray | np.generic) and arr.dtype not in _dt._BY_NP:
        raise OpError(f"tensor: unsupported numpy dtype {arr.dtype}")
    return _place(jnp.array(arr, dtype=dt), device, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but returns ``data`` itself when it already is a matching Tensor."""
    if isinstance(data, Tensor) and (dtype is None or data.dtype == _dt.to_dtype(dtype)) and device is None:
        return data
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor with the values and dtype of a numpy array."""
    if not isinstance(ndarray, np.ndarray):
        raise OpError(f"from_numpy: expected np.ndarray, got {type(ndarray).__name__}")
    return tensor(ndarray)


def _size(size, op) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    try:
        size = tuple(builtins.int(s) for s in size)
    except TypeError:
        raise OpError(f"{op}: expected a size made of ints, got {size!r}") from None
    if any(s < 0 for s in size):
        raise OpError(f"{op}: negative dimension in size {size}")
    return size


def _filled(op, size, value, dtype, device, requires_grad):
    dt = _np_dtype(dtype) or _dt.float32.dtype
    return _place(jnp.full(_size(size, op), value, dt), device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros, float32 unless ``dtype`` says otherwise."""
    return _filled("zeros", size, 0, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones."""
    return _filled("ones", size, 1, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor (fjax fills it with zeros: XLA has no uninitialised buffers)."""
    return _filled("empty", size, 0, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value``; its dtype follows the value's Python type."""
    if dtype is None:
        dtype = _dt.bool if isinstance(fill_value, bool) else _dt.int64 if isinstance(fill_value, int) else None
    return _filled("full", (size,), fill_value, dtype, device, requires_grad)


def _like(op, input, value, dtype, device, requires_grad):
    dtype = dtype or input.dtype
    return _place(jnp.full(input._data.shape, value, _np_dtype(dtype)), device, requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like("zeros_like", input, 0, dtype, device, requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like("ones_like", input, 1, dtype, device, requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like("empty_like", input, 0, dtype, device, requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like("full_like", input, fill_value, dtype, device, requires_grad)


def arange(start=0, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``[start, end)`` in steps: int64 when all bounds are ints, else float32 (torch rule)."""
    if end is None:
        start, end = 0, start
    start, end, step = (x.item() if isinstance(x, Tensor) else x for x in (start, end, step))
    if step == 0:
        raise OpError("arange: step must be nonzero")
    if dtype is None:
        ints = all(isinstance(x, int) for x in (start, end, step))
        dtype = _dt.int64 if ints else _dt.float32
    n = max(0, math.ceil((end - start) / step))
    dt = _np_dtype(dtype)
    return _place(
        jnp.asarray(start + step * np.arange(n, dtype=np.float64 if dt.kind == "f" else np.int64), dt),
        device,
        requires_grad,
    )


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    dt = _np_dtype(dtype) or _dt.float32.dtype
    return _place(jnp.linspace(start, end, steps, dtype=dt), device, requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    dt = _np_dtype(dtype) or _dt.float32.dtype
    return _place(jnp.logspace(start, end, steps, base=base, dtype=dt), device, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The identity matrix (n x m)."""
    dt = _np_dtype(dtype) or _dt.float32.dtype
    return _place(jnp.eye(n, m, dtype=dt), device, requires_grad)


_Above.creation = sys.modules[__name__]
