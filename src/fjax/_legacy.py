"""torch's legacy typed-tensor classes (``torch.FloatTensor`` ...), which older programs still
use to build tensors, to convert them (``x.type(torch.LongTensor)``) and in ``isinstance``."""

from __future__ import annotations

from . import _public
from . import dtypes as _dt
from .tensor import Tensor


class _TypedTensorMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype

    def __call__(cls, *args, device=None):
        return Tensor(*args, dtype=cls.dtype, device=device)

    def __repr__(cls) -> str:
        return f"<class '{_public.NAME}.{cls.__name__}'>"


def _typed(name: str, dtype) -> type:
    doc = f"""torch's legacy ``{name}``: ``{name}(*sizes)`` (zeros, where torch leaves memory
    uninitialised), ``{name}(data)``, and ``isinstance(t, {name})`` for a {dtype} tensor.

    Example::

        >>> fjax.{name}([1, 0]).dtype == fjax.{dtype}
        True
        >>> isinstance(fjax.zeros(2, dtype=fjax.{dtype}), fjax.{name})
        True
    """
    return _TypedTensorMeta(name, (), {"dtype": getattr(_dt, dtype), "__doc__": doc, "__module__": "fjax"})


_DTYPES = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "ByteTensor": "uint8",
    "CharTensor": "int8",
    "ShortTensor": "int16",
    "IntTensor": "int32",
    "LongTensor": "int64",
    "BoolTensor": "bool",
}
TYPES = {name: _typed(name, dtype) for name, dtype in _DTYPES.items()}


def dtype_of(name):
    """The dtype a ``Tensor.type`` argument names: a typed-tensor class or its name
    (``"torch.FloatTensor"``, ``"fjax.LongTensor"``, ``"torch.cuda.FloatTensor"``); None otherwise."""
    if isinstance(name, _TypedTensorMeta):
        return name.dtype
    if isinstance(name, str) and name.rsplit(".", 1)[-1] in TYPES:
        return TYPES[name.rsplit(".", 1)[-1]].dtype
    return None


def type_name(t: Tensor) -> str:
    """``Tensor.type()``: ``fjax.FloatTensor`` and the like."""
    for name, cls in TYPES.items():
        if cls.dtype == t.dtype:
            return f"{_public.NAME}.{name}"
    return f"{_public.NAME}.{type(t).__name__}"


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """``x.type()``: the type name (``fjax.FloatTensor``); ``x.type(t)``: ``x`` converted to ``t``, a
    dtype, a typed-tensor class or its name (``"torch.LongTensor"``).

    Example::

        >>> x = fjax.tensor([1.5, 2.5])
        >>> x.type(), x.type("torch.LongTensor"), x.type(fjax.DoubleTensor).dtype
        ('fjax.FloatTensor', tensor([1, 2], dtype=fjax.int64), fjax.float64)
    """
    if dtype is None:
        return type_name(self)
    named = dtype_of(dtype)
    return self.to(named if named is not None else dtype, non_blocking=non_blocking, **kwargs)


Tensor.type = _type
