"""fjax dtypes: torch's names over numpy/jax dtypes."""

from __future__ import annotations

import builtins

import jax.numpy as jnp
import numpy as np


class dtype:  # noqa: N801 - torch's name
    """A tensor element type, e.g. ``fjax.float32``. ``np.dtype(fjax.float32)`` works.

    Example:
        >>> fjax.float32, fjax.float32 == fjax.float, fjax.ones(1).dtype is fjax.float32
        (fjax.float32, True, True)
    """

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, np_dtype):
        self.name = name
        self.dtype = np.dtype(np_dtype)

    @property
    def is_floating_point(self) -> bool:
        """Whether this is a floating-point type.

        Example:
            >>> fjax.float16.is_floating_point, fjax.int32.is_floating_point
            (True, False)
        """
        return builtins.bool(jnp.issubdtype(self.dtype, jnp.floating))

    @property
    def is_complex(self) -> bool:
        """Whether this is a complex type.

        Example:
            >>> fjax.complex64.is_complex, fjax.float32.is_complex
            (True, False)
        """
        return builtins.bool(jnp.issubdtype(self.dtype, jnp.complexfloating))

    @property
    def is_signed(self) -> bool:
        """Whether the type holds negative values.

        Example:
            >>> fjax.int8.is_signed, fjax.uint8.is_signed
            (True, False)
        """
        return self.dtype.kind in "fic" or self.dtype == jnp.bfloat16

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes.

        Example:
            >>> fjax.float16.itemsize, fjax.float64.itemsize
            (2, 8)
        """
        return self.dtype.itemsize

    def __repr__(self):
        return f"fjax.{self.name}"

    def __eq__(self, other):
        if isinstance(other, dtype):
            return self.dtype == other.dtype
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.dtype)

    def __reduce__(self):
        return (to_dtype, (self.name,))


float16 = half = dtype("float16", jnp.float16)
bfloat16 = dtype("bfloat16", jnp.bfloat16)
float32 = float = dtype("float32", jnp.float32)
float64 = double = dtype("float64", jnp.float64)
complex64 = cfloat = dtype("complex64", jnp.complex64)
complex128 = cdouble = dtype("complex128", jnp.complex128)
int8 = dtype("int8", jnp.int8)
int16 = short = dtype("int16", jnp.int16)
int32 = int = dtype("int32", jnp.int32)
int64 = long = dtype("int64", jnp.int64)
uint8 = dtype("uint8", jnp.uint8)
bool = dtype("bool", jnp.bool_)

_ALL = [float16, bfloat16, float32, float64, complex64, complex128, int8, int16, int32, int64, uint8, bool]
_BY_NP = {d.dtype: d for d in _ALL}
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, int=int32, long=int64, short=int16)


def to_dtype(x) -> dtype:
    """Convert a fjax dtype, numpy/jax dtype, Python type or name to a fjax dtype."""
    if isinstance(x, dtype):
        return x
    if isinstance(x, str):
        if x.startswith(("fjax.", "torch.")):
            x = x.split(".", 1)[1]
        if x in _BY_NAME:
            return _BY_NAME[x]
        raise TypeError(f"unknown dtype name {x!r}; expected one of {sorted(_BY_NAME)}")
    if x is builtins.float:
        return float32
    if x is builtins.int:
        return int64
    if x is builtins.bool:
        return bool
    try:
        return _BY_NP[np.dtype(x)]
    except (TypeError, KeyError):
        raise TypeError(f"unsupported dtype {x!r}; expected one of {sorted(d.name for d in _ALL)}") from None


_DEFAULT = [float32]  # set_default_dtype's setting


def get_default_dtype() -> dtype:
    """The floating dtype that tensors made from Python floats, and float factories such as
    ``zeros`` or ``rand`` without a ``dtype``, get: float32 unless ``set_default_dtype`` changed it.

    Example::

        >>> fjax.get_default_dtype()
        fjax.float32
        >>> fjax.tensor([1.0]).dtype == fjax.get_default_dtype()
        True
    """
    return _DEFAULT[0]


def set_default_dtype(d) -> None:
    """Make ``d`` the default floating dtype, as ``torch.set_default_dtype``: Python floats,
    float factories without a ``dtype`` (``zeros``, ``rand``, ``arange(0.5)``, layers'
    parameters), integer tensors promoted with a Python float (``x * 1.5``) and float-valued
    functions of integers (``x / 2``) take it; Python complex numbers take the matching complex
    dtype (complex128 for float64). The eager kernels compiled for the old default are dropped.

    Args:
        d: the new default: ``fjax.float32``, ``fjax.float64``, ``fjax.float16`` or ``fjax.bfloat16``.

    Example:
        >>> fjax.set_default_dtype(fjax.float64)
        >>> fjax.tensor([1.5]).dtype, (fjax.arange(3) / 2).dtype
        (fjax.float64, fjax.float64)
        >>> fjax.set_default_dtype(fjax.float32)
    """
    new = to_dtype(d)
    if new not in (float32, float64, float16, bfloat16):
        raise TypeError(
            f"set_default_dtype: only floating-point types are supported as the default type, got {new} "
            "(expected fjax.float32, float64, float16 or bfloat16)"
        )
    if new is _DEFAULT[0]:
        return
    from . import dispatch
    from ._config import config
    from ._transforms import executable, guards
    from .ops import _promote

    _DEFAULT[0] = new
    _promote.DEFAULT_FLOAT = new.dtype
    _promote.DEFAULT_COMPLEX = np.dtype(np.complex128 if new is float64 else np.complex64)
    dispatch.new_kernel_cache(config.eager_cache_size)  # kernels traced under the old default
    executable.clear()
    guards.clear()


class layout:
    """A tensor's memory layout (torch.layout): ``fjax.strided`` for every dense tensor,
    ``fjax.sparse_coo`` for ``fjax.sparse_coo_tensor`` (whose values fjax stores dense).

    Example::

        >>> fjax.zeros(2).layout
        fjax.strided
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"fjax.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")


class memory_format:
    """How torch lays a tensor out in memory (torch.memory_format). fjax tensors are row-major views
    of their storage and XLA picks the physical layout of what it computes, so every format is
    accepted where torch takes one and the values are torch's; the strides are row-major.

    Example::

        >>> fjax.zeros(2, 3).to(memory_format=fjax.contiguous_format).is_contiguous()
        True
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"fjax.{self.name}"


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def check_memory_format(op: str, value) -> None:
    """Raise TypeError unless ``value`` is None or a memory format."""
    if value is not None and not isinstance(value, memory_format):
        raise TypeError(f"{op}: memory_format must be a fjax.memory_format, got {value!r}")
