"""Tensor creation: tensor, zeros/ones/full/empty (+ _like), arange, linspace, eye."""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import sys

import jax
import jax.numpy as jnp
import numpy as np

from . import _jax_compat
from . import dtypes as _dt
from ._tracing import trace_state
from .device import MetaArray
from .device import device as _device
from .errors import OpError
from .tensor import Tensor, _Above

_PY_KIND = {"b": _dt.bool, "i": _dt.int64, "u": _dt.int64}  # "f" and "c": the default dtype (_py_kind)


def _py_kind(kind: str):
    """The dtype torch gives Python values of numpy ``kind`` (floats: the default dtype)."""
    if kind == "f":
        return _dt.get_default_dtype()
    if kind == "c":
        return _dt.complex128 if _dt.get_default_dtype() is _dt.float64 else _dt.complex64
    return _PY_KIND[kind]


def _place(arr, device, requires_grad=False) -> Tensor:
    if device is not None and not isinstance(arr, jax.core.Tracer):
        device = _device(device)
        arr = MetaArray.like(arr) if device.type == "meta" else jax.device_put(arr, device.jax_device())
    t = Tensor._wrap(arr)
    if requires_grad:
        t.requires_grad = True
    return t


def _global(op, t, placement, sbp, device=None, random=False) -> Tensor:
    """OneFlow's ``placement=``/``sbp=`` keywords of the creation ops (and an enclosing
    ``fjax.utils.global_view.global_mode``): ``t``, the logical value, as a global tensor."""
    gt = _Above.global_tensor
    if gt is None:  # fjax.distributed not loaded yet (only while fjax itself imports)
        if placement is not None or sbp is not None:
            raise OpError(f"{op}: placement=/sbp= need fjax.distributed")
        return t
    return gt.created(op, t, placement, sbp, device, random)


def _np_dtype(dtype):
    return None if dtype is None else _dt.to_dtype(dtype).dtype


def tensor(data, dtype=None, device=None, requires_grad: bool = False, placement=None, sbp=None) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, numpy or jax arrays).

    Python floats become float32, Python ints int64 and bools bool, as in torch (a mix of ints
    and floats is float32); numpy and jax arrays keep their dtype. ``dtype`` converts the data,
    and ``requires_grad=True`` makes the result a leaf that autograd tracks. OneFlow's
    ``placement=`` and ``sbp=`` (both, instead of ``device``) make a global tensor whose logical
    value is ``data``; so does an enclosing ``fjax.utils.global_view.global_mode``.

    Example::

        >>> fjax.tensor([[1, 2]]).dtype
        fjax.int64
        >>> fjax.tensor([1.5, 2])
        tensor([1.5000, 2.0000], dtype=fjax.float32)
        >>> fjax.tensor([1, 2], dtype=fjax.float16)
        tensor([1., 2.], dtype=fjax.float16)
        >>> fjax.tensor([1, 2], placement=fjax.placement("cpu", [0]), sbp=fjax.sbp.broadcast).sbp
        (fjax.sbp.broadcast,)
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
        arr = host if dtype is not None else host.astype(_py_kind(host.dtype.kind).dtype)
    dt = _np_dtype(dtype)
    if dt is None and isinstance(arr, np.ndarray | np.generic) and arr.dtype not in _dt._BY_NP:
        raise OpError(f"tensor: unsupported numpy dtype {arr.dtype}")
    if placement is not None or sbp is not None:
        device = _check_global_device("tensor", device, placement)
    if isinstance(arr, np.ndarray | np.generic) and jax.config.jax_enable_x64:
        # host data: a transfer of a copy (jnp.array would compile a conversion per shape)
        arr = _jax_compat.host_to_device(np.array(arr, dtype=dt, copy=True))
    else:
        arr = jnp.array(arr, dtype=dt)
    return _global("tensor", _place(arr, device, requires_grad), placement, sbp, device)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Convert ``data`` to a Tensor, copying only when needed: a Tensor that already has the
    requested ``dtype`` (and no ``device`` is asked for) is returned as is; anything else goes
    through ``fjax.tensor``.

    Example::

        >>> t = fjax.tensor([1.0, 2.0])
        >>> fjax.as_tensor(t) is t
        True
        >>> fjax.as_tensor(t, dtype=fjax.float64)
        tensor([1., 2.], dtype=fjax.float64)
    """
    if isinstance(data, Tensor) and (dtype is None or data.dtype == _dt.to_dtype(dtype)) and device is None:
        return data
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor with the values, shape and dtype of a numpy array.

    Unlike torch, the result does not share memory with the array: jax arrays are immutable, so
    later writes to the numpy array are not seen by the tensor.

    Example::

        >>> import numpy as np
        >>> fjax.from_numpy(np.array([1, 2], dtype=np.int32))
        tensor([1, 2], dtype=fjax.int32)
    """
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


def size_keyword(fn):
    """Let ``fn(*size, ...)`` also take its size as torch's parser allows, ``size=(2, 3)``
    (``torch.zeros(size=...)``); ``inspect.signature`` still shows ``fn``'s own. For a method
    ``fn(self, *size, ...)`` the same."""
    params = list(inspect.signature(fn).parameters.values())
    method = params[0].name == "self"

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if "size" in kwargs:
            if len(args) > method:
                raise TypeError(f"{fn.__name__}() got multiple values for argument 'size'")
            args = (*args, kwargs.pop("size"))
        return fn(*args, **kwargs)

    return call


def _check_layout(op, layout) -> None:
    """torch's ``layout=`` argument: fjax creates dense (``fjax.strided``) tensors only."""
    if layout is not None and layout is not _dt.strided:
        raise NotImplementedError(f"{op}: layout={layout!r} is not supported (fjax creates fjax.strided tensors)")


def _check_global_device(op, device, placement):
    """``device`` given together with ``placement``: OneFlow's error; else ``device`` (None)."""
    if device is not None and placement is not None:
        raise OpError(f"{op}: give device= for a local tensor or placement=/sbp= for a global one, not both")
    return device


def _is_meta_device(device) -> bool:
    return device is not None and _device(device).type == "meta"


def _filled(op, size, value, dtype, device, requires_grad, placement=None, sbp=None):
    dt = _np_dtype(dtype) or _dt.get_default_dtype().dtype
    size = _size(size, op)
    if _is_meta_device(device):  # no values: nothing is allocated
        return _global(op, _place(MetaArray(size, dt), None, requires_grad), placement, sbp, device)
    device = _check_global_device(op, device, placement)
    return _global(op, _place(_full(size, value, dt, device), device, requires_grad), placement, sbp, device)


def _full(size, value, dt, device):
    """``jnp.full``; in eager, for an array that lands on the CPU, a transfer of numpy's (a size
    that changes every step, ``torch.ones(len(idx))``, compiles nothing)."""
    if trace_state.depth or (_device(device).type if device is not None else jax.default_backend()) != "cpu":
        return jnp.full(size, value, dt)
    return _jax_compat.host_to_device(np.full(size, value, dt))


@size_keyword
def zeros(
    *size, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False, placement=None, sbp=None
) -> Tensor:
    """A tensor of zeros of the given size, float32 unless ``dtype`` says otherwise.

    The size may be given as separate ints or as one tuple/list. OneFlow's ``placement=`` and
    ``sbp=`` (both) make a global tensor instead of a local one on ``device``.

    Example::

        >>> fjax.zeros(2, 3)
        tensor([[0., 0., 0.],
                [0., 0., 0.]], dtype=fjax.float32)
        >>> fjax.zeros((2,), dtype=fjax.int64)
        tensor([0, 0], dtype=fjax.int64)
        >>> fjax.zeros(2, placement=fjax.placement("cpu", [0]), sbp=fjax.sbp.split(0)).is_global
        True
    """
    _check_layout("zeros", layout)
    return _filled("zeros", size, 0, dtype, device, requires_grad, placement, sbp)


@size_keyword
def ones(
    *size, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False, placement=None, sbp=None
) -> Tensor:
    """A tensor of ones of the given size (ints or one tuple), float32 unless ``dtype`` says otherwise;
    global with OneFlow's ``placement=`` and ``sbp=``.

    Example::

        >>> fjax.ones(2, 2)
        tensor([[1., 1.],
                [1., 1.]], dtype=fjax.float32)
        >>> fjax.ones(3, dtype=fjax.bool)
        tensor([True, True, True], dtype=fjax.bool)
    """
    _check_layout("ones", layout)
    return _filled("ones", size, 1, dtype, device, requires_grad, placement, sbp)


@size_keyword
def empty(
    *size,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
    memory_format=None,
    placement=None,
    sbp=None,
) -> Tensor:
    """A tensor of the given size whose values are not meant to be read.

    torch leaves the memory uninitialised; XLA has no uninitialised buffers, so fjax fills it with
    zeros. Do not rely on that: write before you read. On ``device="meta"`` the tensor has a shape
    and a dtype but no values (and nothing is allocated). OneFlow's ``placement=`` and ``sbp=``
    make it global.

    Example::

        >>> fjax.empty(2, 3).shape
        fjax.Size([2, 3])
        >>> fjax.empty(2, 3, device="meta")
        tensor(..., device='meta', size=(2, 3), dtype=fjax.float32)
    """
    _check_layout("empty", layout)
    _dt.check_memory_format("empty", memory_format)
    return _filled("empty", size, 0, dtype, device, requires_grad, placement, sbp)


def full(
    size,
    fill_value,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
    placement=None,
    sbp=None,
) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value``.

    Without ``dtype`` the result's dtype follows the value's Python type, as in torch: bool for
    a bool, int64 for an int and float32 for a float. OneFlow's ``placement=`` and ``sbp=``
    make it global.

    Example::

        >>> fjax.full((2, 2), 7)
        tensor([[7, 7],
                [7, 7]], dtype=fjax.int64)
        >>> fjax.full((2,), 0.5)
        tensor([0.5000, 0.5000], dtype=fjax.float32)
    """
    if dtype is None:
        dtype = (
            _dt.bool
            if isinstance(fill_value, bool)
            else _dt.int64
            if isinstance(fill_value, int)
            else _py_kind("c")
            if isinstance(fill_value, complex)
            else None
        )
    _check_layout("full", layout)
    return _filled("full", (size,), fill_value, dtype, device, requires_grad, placement, sbp)


def _like_global(input, device, placement, sbp) -> tuple:
    """OneFlow's ``*_like`` rule: a global ``input`` gives a global result with its placement and
    sbp, unless ``device`` asks for a local one; a missing one of ``placement``/``sbp`` is the input's."""
    if device is None and isinstance(input, Tensor) and input.is_global:
        placement = input.placement if placement is None else placement
        sbp = input.sbp if sbp is None else sbp
    return placement, sbp


def _like(op, input, value, dtype, device, requires_grad, layout=None, memory_format=None, placement=None, sbp=None):
    _check_layout(op, layout)
    _dt.check_memory_format(op, memory_format)
    dtype = dtype or input.dtype
    if device is None and input.is_meta:  # torch: a meta input gives a meta result
        device = "meta"
    placement, sbp = _like_global(input, device, placement, sbp)
    return _filled(op, input._meta.shape, value, dtype, device, requires_grad, placement, sbp)


def zeros_like(
    input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None, placement=None, sbp=None
) -> Tensor:
    """A tensor of zeros with the shape of ``input`` and, unless ``dtype`` is given, its dtype.

    Example::

        >>> fjax.zeros_like(fjax.tensor([[1, 2], [3, 4]]))
        tensor([[0, 0],
                [0, 0]], dtype=fjax.int64)
    """
    return _like("zeros_like", input, 0, dtype, device, requires_grad, layout, memory_format, placement, sbp)


def ones_like(
    input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None, placement=None, sbp=None
) -> Tensor:
    """A tensor of ones with the shape of ``input`` and, unless ``dtype`` is given, its dtype.

    Example::

        >>> x = fjax.tensor([[1, 2], [3, 4]])
        >>> fjax.ones_like(x, dtype=fjax.float32)
        tensor([[1., 1.],
                [1., 1.]], dtype=fjax.float32)
    """
    return _like("ones_like", input, 1, dtype, device, requires_grad, layout, memory_format, placement, sbp)


def empty_like(
    input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None, placement=None, sbp=None
) -> Tensor:
    """A tensor with the shape and dtype of ``input`` whose values are not meant to be read
    (fjax fills it with zeros; see ``fjax.empty``).

    Example::

        >>> fjax.empty_like(fjax.tensor([[1, 2], [3, 4]])).shape
        fjax.Size([2, 2])
    """
    return _like("empty_like", input, 0, dtype, device, requires_grad, layout, memory_format, placement, sbp)


def full_like(
    input,
    fill_value,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    memory_format=None,
    placement=None,
    sbp=None,
) -> Tensor:
    """A tensor with the shape of ``input`` filled with ``fill_value``.

    The dtype is ``input``'s unless ``dtype`` is given, whatever the value's type: a float value
    in an integer tensor is truncated, as in torch.

    Example::

        >>> fjax.full_like(fjax.tensor([1.0, 2.0]), 7)
        tensor([7., 7.], dtype=fjax.float32)
        >>> fjax.full_like(fjax.tensor([1, 2]), 2.7)
        tensor([2, 2], dtype=fjax.int64)
    """
    return _like("full_like", input, fill_value, dtype, device, requires_grad, layout, memory_format, placement, sbp)


def arange(
    start=0, end=None, step=1, *, dtype=None, layout=None, device=None, requires_grad=False, placement=None, sbp=None
) -> Tensor:
    """Values from ``start`` (inclusive) to ``end`` (exclusive) spaced by ``step``;
    ``arange(n)`` counts ``0 .. n - 1``.

    The dtype is int64 when ``start``, ``end`` and ``step`` are all ints, else float32, as in
    torch. With a fractional ``step`` rounding can make the length surprising; prefer
    ``linspace`` when the end point matters.

    Example::

        >>> fjax.arange(5)
        tensor([0, 1, 2, 3, 4], dtype=fjax.int64)
        >>> fjax.arange(1, 2.5, 0.5)
        tensor([1.0000, 1.5000, 2.0000], dtype=fjax.float32)
    """
    _check_layout("arange", layout)
    if end is None:
        start, end = 0, start
    start, end, step = (x.item() if isinstance(x, Tensor) else x for x in (start, end, step))
    if step == 0:
        raise OpError("arange: step must be nonzero")
    if dtype is None:
        ints = all(isinstance(x, int) for x in (start, end, step))
        dtype = _dt.int64 if ints else _dt.get_default_dtype()
    n = max(0, math.ceil((end - start) / step))
    dt = _np_dtype(dtype)
    device = _check_global_device("arange", device, placement)
    values = jnp.asarray(start + step * np.arange(n, dtype=np.float64 if dt.kind == "f" else np.int64), dt)
    return _global("arange", _place(values, device, requires_grad), placement, sbp, device)


def _scalars(op, **values):
    """Python numbers from numbers or one-element tensors (torch's tensor overloads)."""
    out = []
    for name, v in values.items():
        if isinstance(v, Tensor):
            if v.numel() != 1:
                raise OpError(f"{op}: {name} must be a number or a 0-dim tensor, got shape {tuple(v.shape)}")
            v = v.item()
        out.append(v)
    return out


def linspace_array(start, end, steps: int, dtype):
    """torch's linspace values: in a floating ``dtype``, ``start + i * step`` for the first half and
    ``end - (steps - 1 - i) * step`` for the rest, so both ends are exact (``jnp.linspace`` rounds
    differently, which moves values that sit on bin edges in ``histogram``)."""
    steps = int(steps)
    if steps < 0:
        raise OpError(f"linspace: number of steps must be non-negative, got {steps}")
    if not np.issubdtype(np.dtype(dtype), np.floating) or steps < 2:
        return jnp.linspace(start, end, steps, dtype=dtype)
    start, end = jnp.asarray(start, dtype), jnp.asarray(end, dtype)
    step = (end - start) / (steps - 1)
    # torch's kernel computes each value with one fused multiply-add (one rounding): float64 arithmetic
    # on the float32 operands rounds the same way
    wide = jnp.float64 if np.dtype(dtype).itemsize < 8 else dtype
    i = jnp.arange(steps, dtype=wide)
    start, end, step = start.astype(wide), end.astype(wide), step.astype(wide)
    return jnp.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i)).astype(dtype)


def linspace(
    start, end, steps, *, dtype=None, layout=None, device=None, requires_grad=False, placement=None, sbp=None
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included (float32 unless
    ``dtype`` says otherwise).

    Example::

        >>> fjax.linspace(0, 1, 5)
        tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000], dtype=fjax.float32)
    """
    _check_layout("linspace", layout)
    start, end, steps = _scalars("linspace", start=start, end=end, steps=steps)
    dt = _np_dtype(dtype) or _dt.get_default_dtype().dtype
    device = _check_global_device("linspace", device, placement)
    return _global("linspace", _place(linspace_array(start, end, steps, dt), device, requires_grad), placement, sbp)


def logspace(
    start, end, steps, base=10.0, *, dtype=None, layout=None, device=None, requires_grad=False, placement=None, sbp=None
) -> Tensor:
    """``steps`` values spaced evenly on a log scale: ``base ** linspace(start, end, steps)``
    (``base`` defaults to 10).

    Example::

        >>> fjax.logspace(0, 2, 3)
        tensor([  1.,  10., 100.], dtype=fjax.float32)
        >>> fjax.logspace(0, 3, 4, base=2)
        tensor([1., 2., 4., 8.], dtype=fjax.float32)
    """
    _check_layout("logspace", layout)
    start, end, steps, base = _scalars("logspace", start=start, end=end, steps=steps, base=base)
    dt = _np_dtype(dtype) or _dt.get_default_dtype().dtype
    device = _check_global_device("logspace", device, placement)
    values = jnp.logspace(start, end, steps, base=base, dtype=dt)
    return _global("logspace", _place(values, device, requires_grad), placement, sbp)


def eye(
    n, m=None, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False, placement=None, sbp=None
) -> Tensor:
    """An ``n x m`` matrix (``m`` defaults to ``n``) with ones on the main diagonal and zeros
    elsewhere; float32 unless ``dtype`` says otherwise.

    Example::

        >>> fjax.eye(2, 3, dtype=fjax.int64)
        tensor([[1, 0, 0],
                [0, 1, 0]], dtype=fjax.int64)
    """
    _check_layout("eye", layout)
    dt = _np_dtype(dtype) or _dt.get_default_dtype().dtype
    device = _check_global_device("eye", device, placement)
    return _global("eye", _place(jnp.eye(n, m, dtype=dt), device, requires_grad), placement, sbp)


def empty_strided(
    size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
) -> Tensor:
    """``empty(size)``: a tensor not meant to be read before it is written (see ``fjax.empty``).
    fjax tensors made here are row-major, so ``stride`` is checked for length only.

    Example::

        >>> fjax.empty_strided((2, 3), (1, 2)).shape
        fjax.Size([2, 3])
    """
    if len(tuple(stride)) != len(tuple(size)):
        raise OpError(f"empty_strided: size {tuple(size)} and stride {tuple(stride)} differ in length")
    _check_layout("empty_strided", layout)
    return _filled("empty_strided", (size,), 0, dtype, device, requires_grad)


def empty_permuted(
    size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
) -> Tensor:
    """``empty(size)`` (torch lays it out in ``physical_layout`` order; fjax row-major).

    Example::

        >>> fjax.empty_permuted((2, 3, 4), (0, 2, 1)).shape
        fjax.Size([2, 3, 4])
    """
    if sorted(physical_layout) != list(range(len(tuple(size)))):
        raise OpError(f"empty_permuted: physical_layout {tuple(physical_layout)} is not a permutation of the dims")
    _check_layout("empty_permuted", layout)
    return _filled("empty_permuted", (size,), 0, dtype, device, requires_grad)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A 0-dim tensor holding ``s``, float32 unless ``dtype`` says otherwise (whatever ``s``'s type).

    Example::

        >>> fjax.scalar_tensor(3)
        tensor(3., dtype=fjax.float32)
    """
    _check_layout("scalar_tensor", layout)
    (s,) = _scalars("scalar_tensor", s=s)
    return _filled("scalar_tensor", ((),), s, dtype, device, requires_grad)


_Above.creation = sys.modules[__name__]
