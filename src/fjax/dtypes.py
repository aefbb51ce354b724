"""fjax dtypes: torch's names over numpy/jax dtypes."""

from __future__ import annotations

import builtins

import jax.numpy as jnp
import numpy as np

from . import _public


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
        if self.dtype.kind == "V":  # ml_dtypes' bfloat16 and float8 types
            return self.name != "float8_e8m0fnu"
        return self.dtype.kind in "fic"

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes.

        Example:
            >>> fjax.float16.itemsize, fjax.float64.itemsize
            (2, 8)
        """
        return self.dtype.itemsize

    def to_complex(self) -> "dtype":
        """The complex type whose parts are this floating type (``float32`` -> ``complex64``); a
        complex type is itself.

        Example:
            >>> fjax.float32.to_complex(), fjax.float64.to_complex()
            (fjax.complex64, fjax.complex128)
        """
        if self.is_complex:
            return self
        pairs = {"float32": "complex64", "float64": "complex128"}
        if self.name not in pairs:
            raise RuntimeError(f"Unknown Complex ScalarType for {self.name} (fjax has complex64 and complex128)")
        return globals()[pairs[self.name]]

    def to_real(self) -> "dtype":
        """The floating type of a complex type's parts (``complex64`` -> ``float32``); any other
        type is itself.

        Example:
            >>> fjax.complex128.to_real(), fjax.int64.to_real()
            (fjax.float64, fjax.int64)
        """
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def __repr__(self):
        return f"{_public.NAME}.{self.name}"

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
uint16 = dtype("uint16", jnp.uint16)
uint32 = dtype("uint32", jnp.uint32)
uint64 = dtype("uint64", jnp.uint64)
bool = dtype("bool", jnp.bool_)
# torch's float8 types (ml_dtypes' through jax); torch.complex32 has no jax counterpart
float8_e4m3fn = dtype("float8_e4m3fn", jnp.float8_e4m3fn)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", jnp.float8_e4m3fnuz)
float8_e5m2 = dtype("float8_e5m2", jnp.float8_e5m2)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", jnp.float8_e5m2fnuz)
float8_e8m0fnu = dtype("float8_e8m0fnu", jnp.float8_e8m0fnu)

_FLOAT8 = [float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu]
_ALL = [float16, bfloat16, float32, float64, complex64, complex128, int8, int16, int32, int64, uint8, bool]
_ALL += [uint16, uint32, uint64, *_FLOAT8]
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
    _DEFAULT[0] = new
    for listener in _default_listeners:  # promotion's defaults; caches of code traced under the old one
        listener(new)


_default_listeners: list = []  # set by the layers above (ops._promote, dispatch, _transforms) at import


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
        return f"{_public.NAME}.{self.name}"


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
        return f"{_public.NAME}.{self.name}"


contiguous_format = memory_format("contiguous_format")
legacy_contiguous_format = contiguous_format  # torch's alias (its old default of some ops)
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def check_memory_format(op: str, value) -> None:
    """Raise TypeError unless ``value`` is None or a memory format."""
    if value is not None and not isinstance(value, memory_format):
        raise TypeError(f"{op}: memory_format must be a fjax.memory_format, got {value!r}")


class finfo:  # noqa: N801 - torch's name
    """Machine limits of a floating-point dtype (torch.finfo), as Python floats.

    Attributes: ``bits``, ``eps`` (gap between 1 and the next value), ``max``, ``min``, ``tiny``
    and ``smallest_normal`` (smallest positive normal value), ``resolution`` (``10 ** -digits``
    with ``digits = floor(-log10(eps))``) and ``dtype`` (the name, e.g. ``'float32'``; a complex
    dtype gives its real part's limits).

    Args:
        type: a floating or complex fjax dtype; None: the default dtype.

    Example:
        >>> fjax.finfo(fjax.float16).max, fjax.finfo().dtype
        (65504.0, 'float32')
    """

    def __init__(self, type=None):  # noqa: A002 - torch's name
        import math

        import ml_dtypes

        d = get_default_dtype() if type is None else to_dtype(type)
        if not (d.is_floating_point or d.is_complex):
            raise TypeError(f"fjax.finfo() requires a floating point input type, got {d}. Use fjax.iinfo for {d}")
        np_dtype = np.dtype(np.finfo(d.dtype).dtype) if d.is_complex else d.dtype
        info = ml_dtypes.finfo(np_dtype)
        self.bits = builtins.int(info.bits)
        self.eps = builtins.float(info.eps)
        if d is float8_e5m2fnuz:
            self.eps = 0.125  # torch's value (c10's numeric_limits); ml_dtypes gives 2 ** -2
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = self.smallest_normal = builtins.float(info.smallest_normal)
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))
        self.dtype = _BY_NP[np_dtype].name

    def __eq__(self, other):
        return isinstance(other, finfo) and vars(self) == vars(other)

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
            f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - torch's name
    """Machine limits of an integer dtype (torch.iinfo): ``bits``, ``min``, ``max`` (Python ints)
    and ``dtype`` (the name, e.g. ``'int32'``).

    Args:
        type: an integer fjax dtype (not bool).

    Example:
        >>> fjax.iinfo(fjax.int8).min, fjax.iinfo(fjax.uint8).max, fjax.iinfo(fjax.int32).bits
        (-128, 255, 32)
    """

    def __init__(self, type):  # noqa: A002 - torch's name
        d = to_dtype(type)
        if d.dtype.kind not in "iu":
            raise TypeError(f"fjax.iinfo: {d} is not supported by fjax.iinfo; expected an integer dtype")
        info = np.iinfo(d.dtype)
        self.bits, self.min, self.max, self.dtype = (
            builtins.int(info.bits),
            builtins.int(info.min),
            builtins.int(info.max),
            d.name,
        )

    def __eq__(self, other):
        return isinstance(other, iinfo) and vars(self) == vars(other)

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return f"iinfo(min={builtins.float(self.min):g}, max={builtins.float(self.max):g}, dtype={self.dtype})"


_UNPROMOTABLE_UINTS = ("uint16", "uint32", "uint64")


def _real_float(d: dtype) -> builtins.bool:
    return d.is_floating_point and d not in _FLOAT8


def promote_types(type1, type2) -> dtype:
    """The smallest dtype both dtypes convert to without losing category (torch.promote_types);
    float8 types promote only with themselves, uint16/uint32/uint64 with themselves and the other
    floating types, as in torch.

    Args:
        type1: a dtype.
        type2: a dtype.

    Example:
        >>> fjax.promote_types(fjax.int32, fjax.float32), fjax.promote_types(fjax.uint8, fjax.int8)
        (fjax.float32, fjax.int16)
    """
    a, b = to_dtype(type1), to_dtype(type2)
    if a == b:
        return a
    float8 = [d.name for d in _FLOAT8]
    if a.name in float8 or b.name in float8:
        kind = "Float8"
    elif (a.name in _UNPROMOTABLE_UINTS and not _real_float(b)) or (
        b.name in _UNPROMOTABLE_UINTS and not _real_float(a)
    ):
        kind = "uint16, uint32, uint64"
    else:
        kind = None
    if kind is not None:
        raise TypeError(f"promote_types: promotion for {kind} types is not supported, attempted to promote {a} and {b}")
    return _BY_NP[np.dtype(jnp.promote_types(a.dtype, b.dtype))]


def _kind_rank(d: dtype) -> builtins.int:
    return 0 if d is bool else 3 if d.is_complex else 2 if d.is_floating_point else 1


def can_cast(from_, to) -> builtins.bool:
    """Whether torch's casting rules allow ``from_`` to become ``to`` in type promotion
    (torch.can_cast): never to a lower category (complex > floating > integer > bool).

    Args:
        from_: the source dtype.
        to: the target dtype.

    Example:
        >>> fjax.can_cast(fjax.float64, fjax.float16), fjax.can_cast(fjax.float32, fjax.int32)
        (True, False)
    """
    return _kind_rank(to_dtype(from_)) <= _kind_rank(to_dtype(to))
