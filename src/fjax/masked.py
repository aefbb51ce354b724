"""``fjax.masked``: torch.masked's reductions and normalizations of a tensor with a boolean ``mask``.

Each function takes ``mask`` (keyword-only; broadcast to ``input``'s shape and read as bool): the
elements where it is ``False`` are *masked out*. A reduction replaces them by its identity before
reducing — ``0`` for ``sum``/``cumsum``/``norm``, ``1`` for ``prod``/``cumprod``, ``-inf`` (the
dtype's smallest integer) for ``amax``/``argmax``/``logsumexp``/``softmax``/``log_softmax``, ``+inf``
for ``amin``/``argmin``/``softmin``, ``nan`` for ``median`` — so a fully masked-out slice gives what
torch gives: the identity (``-inf`` for ``amax``, ``0`` for ``sum``), ``nan`` for ``mean``/``var``/
``std``/``median``/``softmax``. ``mask=None`` keeps every element. ``dim`` may be an int, a tuple
or ``None`` (all dims); ``dtype`` casts the result (``mean`` and ``argmax`` included, as in torch).

These are compositions of fjax's ops (``where`` then the plain reduction), so gradients flow to the
kept elements as in torch; masked-out elements get a zero gradient.

Example::

    >>> x = fjax.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> m = fjax.tensor([[True, False, True], [False, False, False]])
    >>> fjax.masked.sum(x, 1, mask=m)
    tensor([4., 0.], dtype=fjax.float32)
    >>> fjax.masked.amax(x, 1, mask=m)
    tensor([3., -inf], dtype=fjax.float32)
    >>> fjax.masked.mean(x, 1, mask=m)
    tensor([2., nan], dtype=fjax.float32)
"""

from __future__ import annotations

import builtins
import math
import numbers

import numpy as np

from . import dtypes as _dt
from . import linalg as _linalg
from .dispatch import functions as _f
from .errors import IndexOutOfRange, OpError
from .tensor import Tensor

__all__ = [
    "amax",
    "amin",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "log_softmax",
    "logaddexp",
    "logsumexp",
    "mean",
    "median",
    "norm",
    "normalize",
    "prod",
    "softmax",
    "softmin",
    "std",
    "sum",
    "var",
]

# integer dtypes that sum and prod promote to int64, as torch.sum does
_SMALL_INTEGERS = (_dt.bool, _dt.uint8, _dt.int8, _dt.int16, _dt.int32)


def _is_float(dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def _check_input(op: str, input) -> None:
    if not isinstance(input, Tensor):
        raise OpError(f"masked.{op}: expected input to be a Tensor, got {type(input).__name__}")


def _dims(op: str, dim, ndim: int) -> tuple:
    """``dim`` as a sorted tuple of non-negative dims; ``None`` and ``()`` mean every dim."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    rank = builtins.max(ndim, 1)
    dims = []
    for d in (dim,) if isinstance(dim, numbers.Integral) else dim:
        if not -rank <= d < rank:
            raise IndexOutOfRange(
                f"masked.{op}: dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got {d})"
            )
        if d % rank in dims:
            raise OpError(f"masked.{op}: dim={d} appears multiple times in the list of dims {dim}")
        dims.append(d % rank)
    return tuple(sorted(dims))


def _input_mask(input: Tensor, *args, mask=None, **kwargs) -> Tensor:
    """The canonical mask: ``mask`` broadcast to ``input``'s shape, as bool."""
    if mask is None:
        raise OpError("masked: _input_mask requires an explicit mask")
    if not isinstance(mask, Tensor):
        raise OpError(f"masked: mask must be a Tensor, got {type(mask).__name__}")
    if mask.ndim > input.ndim:
        raise OpError(
            f"masked: expected a mask broadcastable to the input's shape {tuple(input.shape)}, "
            f"got a mask of higher dimensionality, shape {tuple(mask.shape)}"
        )
    if tuple(mask.shape) != tuple(input.shape):
        mask = _f.broadcast_to(mask, tuple(input.shape))
    return mask if mask.dtype == _dt.bool else mask.to(_dt.bool)


def _identity(op: str, input: Tensor, ord=2.0):
    """The value a masked-out element takes in reduction ``op`` (torch.masked's identities)."""
    dtype = input.dtype
    if op in ("sum", "cumsum", "normalize"):
        return 0
    if op in ("prod", "cumprod"):
        return 1
    if op == "norm":
        return math.inf if ord == -math.inf else 0
    if op == "median":
        return math.nan
    largest = op in ("amax", "argmax", "logaddexp", "logsumexp", "softmax", "log_softmax")
    if largest or op in ("amin", "argmin", "softmin"):
        if dtype.is_floating_point:
            return -math.inf if largest else math.inf
        if op == "logsumexp" and dtype.is_complex:
            return complex(-math.inf, 0.0)
        if dtype != _dt.bool and not dtype.is_complex:
            info = np.iinfo(dtype.dtype)
            return info.min if largest else info.max
    raise OpError(f"masked.{op}: no identity for a {dtype} input (its masked-out elements have no value)")


def _combine(op: str, input: Tensor, mask, ord=2.0) -> Tensor:
    """``input`` with its masked-out elements replaced by the identity of ``op``."""
    if mask is None:
        return input
    return _f.where(_input_mask(input, mask=mask), input, _identity(op, input, ord))


def _any(mask: Tensor, dims: tuple, keepdim: bool) -> Tensor:
    for d in reversed(dims):
        mask = _f.any(mask, d, keepdim)
    return mask


def _output_mask(op, input: Tensor, *args, **kwargs) -> Tensor:
    """Where the result of ``op(input, *args, **kwargs)`` is defined: for a reduction, the slices
    with at least one kept element; for a normalization, the kept elements."""
    name = getattr(op, "__name__", None)
    if name in ("sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm", "var", "std", "logsumexp"):
        if name == "norm" and args:
            args = args[1:]  # ord
        dim = args[0] if args else kwargs.get("dim")
        mask = _input_mask(input, *args, **kwargs)
        return _any(mask, _dims(name, dim, input.ndim), bool(kwargs.get("keepdim", False)))
    if name in ("softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod"):
        return _input_mask(input, *args, **kwargs)
    raise OpError(f"masked._output_mask: expected a masked operation, got {op!r}")


def _reduce_dim(dims: tuple, ndim: int):
    """The ``dim`` argument of a plain reduction over ``dims`` (``None`` for a 0-d input)."""
    return dims if ndim else None


def sum(input: Tensor, dim=None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The sum over ``dim`` of the kept elements (masked-out ones count as 0).

    Integer and bool inputs sum in int64 unless ``dtype`` is given, as ``torch.sum``.

    Example::

        >>> x = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fjax.masked.sum(x, 0, mask=fjax.tensor([[True, False], [True, False]]))
        tensor([4., 0.], dtype=fjax.float32)
    """
    _check_input("sum", input)
    if dtype is None:
        dtype = _dt.int64 if input.dtype in _SMALL_INTEGERS else input.dtype
    dims = _dims("sum", dim, input.ndim)
    return _f.sum(_combine("sum", input, mask), _reduce_dim(dims, input.ndim), bool(keepdim), dtype=dtype)


def prod(input: Tensor, dim=None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The product over ``dim`` of the kept elements (masked-out ones count as 1).

    Example::

        >>> x = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fjax.masked.prod(x, 1, mask=fjax.tensor([[True, True], [False, True]]))
        tensor([2., 4.], dtype=fjax.float32)
    """
    _check_input("prod", input)
    if dtype is None:
        dtype = _dt.int64 if input.dtype in _SMALL_INTEGERS else input.dtype
    dims = _dims("prod", dim, input.ndim)
    result = _combine("prod", input, mask).to(dtype)
    for d in reversed(dims):
        result = _f.prod(result, d, bool(keepdim))
    return result


def _along_dim(name: str, input: Tensor, dim: int, dtype, mask) -> Tensor:
    """``_f.<name>(input, dim, dtype=dtype)`` with the masked-out elements replaced by ``name``'s
    identity (the scans and the softmax family)."""
    _check_input(name, input)
    (d,) = _dims(name, dim, input.ndim)
    return getattr(_f, name)(_combine(name, input, mask), d, dtype=input.dtype if dtype is None else dtype)


def cumsum(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The cumulative sum along ``dim``, masked-out elements counting as 0.

    Example::

        >>> x = fjax.tensor([1.0, 2.0, 3.0])
        >>> fjax.masked.cumsum(x, 0, mask=fjax.tensor([True, False, True]))
        tensor([1., 1., 4.], dtype=fjax.float32)
    """
    return _along_dim("cumsum", input, dim, dtype, mask)


def cumprod(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The cumulative product along ``dim``, masked-out elements counting as 1.

    Example::

        >>> x = fjax.tensor([2.0, 3.0, 4.0])
        >>> fjax.masked.cumprod(x, 0, mask=fjax.tensor([True, False, True]))
        tensor([2., 2., 8.], dtype=fjax.float32)
    """
    return _along_dim("cumprod", input, dim, dtype, mask)


def amax(input: Tensor, dim=None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The maximum over ``dim`` of the kept elements; ``-inf`` (an integer dtype's minimum) where none is kept.

    Example::

        >>> x = fjax.tensor([[1.0, 5.0], [3.0, 4.0]])
        >>> fjax.masked.amax(x, 1, mask=fjax.tensor([[True, False], [False, False]]))
        tensor([1., -inf], dtype=fjax.float32)
    """
    _check_input("amax", input)
    if dtype is None:
        dtype = input.dtype
    dims = _dims("amax", dim, input.ndim)
    return _f.amax(_combine("amax", input, mask), dims, bool(keepdim)).to(dtype)


def amin(input: Tensor, dim=None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The minimum over ``dim`` of the kept elements; ``inf`` (an integer dtype's maximum) where none is kept.

    Example::

        >>> x = fjax.tensor([[1.0, 5.0], [3.0, 4.0]])
        >>> fjax.masked.amin(x, 1, mask=fjax.tensor([[False, True], [False, False]]))
        tensor([5., inf], dtype=fjax.float32)
    """
    _check_input("amin", input)
    if dtype is None:
        dtype = input.dtype
    dims = _dims("amin", dim, input.ndim)
    return _f.amin(_combine("amin", input, mask), dims, bool(keepdim)).to(dtype)


def argmax(
    input: Tensor, dim: int | None = None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None
) -> Tensor:
    """The index of the largest kept element along ``dim`` (of the flattened input when ``dim`` is ``None``).

    As in torch, the result has ``input``'s dtype unless ``dtype`` is given.

    Example::

        >>> x = fjax.tensor([[1.0, 5.0, 3.0]])
        >>> fjax.masked.argmax(x, 1, mask=fjax.tensor([[True, False, True]]), dtype=fjax.int64)
        tensor([2], dtype=fjax.int64)
    """
    _check_input("argmax", input)
    if dtype is None:
        dtype = input.dtype
    return _f.argmax(_combine("argmax", input, mask), dim, bool(keepdim)).to(dtype)


def argmin(
    input: Tensor, dim: int | None = None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None
) -> Tensor:
    """The index of the smallest kept element along ``dim`` (of the flattened input when ``dim`` is ``None``).

    As in torch, the result has ``input``'s dtype unless ``dtype`` is given.

    Example::

        >>> x = fjax.tensor([[1.0, 5.0, 3.0]])
        >>> fjax.masked.argmin(x, 1, mask=fjax.tensor([[False, True, True]]), dtype=fjax.int64)
        tensor([2], dtype=fjax.int64)
    """
    _check_input("argmin", input)
    if dtype is None:
        dtype = input.dtype
    return _f.argmin(_combine("argmin", input, mask), dim, bool(keepdim)).to(dtype)


def _count(input: Tensor, dims: tuple, keepdim: bool, mask) -> Tensor | int:
    """How many elements each slice keeps: a Python int without a mask, else an int64 tensor."""
    if mask is None:
        return math.prod(input.shape[d] for d in dims) if input.ndim else 1
    return _f.sum(mask, _reduce_dim(dims, input.ndim), keepdim, dtype=_dt.int64)


def mean(input: Tensor, dim=None, *, keepdim: bool | None = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The mean over ``dim`` of the kept elements; ``nan`` where none is kept.

    The dtype (``input``'s unless given) must be floating point or complex.

    Example::

        >>> x = fjax.tensor([[1.0, 2.0, 6.0], [3.0, 4.0, 5.0]])
        >>> fjax.masked.mean(x, 1, mask=fjax.tensor([[True, False, True], [False, False, False]]))
        tensor([3.5000,    nan], dtype=fjax.float32)
    """
    _check_input("mean", input)
    given = dtype is not None
    dtype = _dt.to_dtype(dtype) if given else input.dtype
    if not _is_float(dtype):
        source = "the given" if given else "the input's"
        raise OpError(f"masked.mean: {source} dtype must be floating point or complex, got {dtype}")
    dims = _dims("mean", dim, input.ndim)
    inmask = None if mask is None else _input_mask(input, mask=mask)
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / _count(input, dims, bool(keepdim), inmask)


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The median along ``dim`` of the kept elements (the lower of the two middle ones for an even count);
    ``nan`` where none is kept.

    Integer inputs are computed in float32 and converted back; a fully masked-out slice then raises.

    Example::

        >>> x = fjax.tensor([[1.0, 9.0, 3.0, 4.0]])
        >>> fjax.masked.median(x, 1, mask=fjax.tensor([[True, False, True, True]]))
        tensor([3.], dtype=fjax.float32)
    """
    _check_input("median", input)
    if dtype is None:
        dtype = input.dtype
    (d,) = _dims("median", dim, input.ndim)
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(_dt.float32)
    output = _f.nanmedian(_combine("median", input, mask), d, keepdim).values
    if is_float:
        return output
    if bool(_f.isnan(output).any()):
        raise OpError("masked.median: expects no fully masked-out slices when the input is not floating point")
    return output.to(dtype)


def logsumexp(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim`` of the kept elements; ``-inf`` where none is kept.

    Example::

        >>> x = fjax.tensor([[0.0, 5.0, 0.0]])
        >>> fjax.masked.logsumexp(x, 1, mask=fjax.tensor([[True, False, True]]))
        tensor([0.6931], dtype=fjax.float32)
    """
    _check_input("logsumexp", input)
    if dtype is None:
        dtype = input.dtype
    dims = _dims("logsumexp", dim, input.ndim)
    return _f.logsumexp(_combine("logsumexp", input, mask), dims, keepdim).to(dtype)


def logaddexp(
    input: Tensor, other: Tensor, *, dtype=None, input_mask: Tensor | None = None, other_mask: Tensor | None = None
) -> Tensor:
    """Elementwise ``log(exp(input) + exp(other))``, a masked-out element of either taken as ``-inf``.

    Example::

        >>> a, b = fjax.tensor([0.0, 1.0]), fjax.tensor([0.0, 2.0])
        >>> fjax.masked.logaddexp(a, b, input_mask=fjax.tensor([True, False]), other_mask=fjax.tensor([True, True]))
        tensor([0.6931, 2.0000], dtype=fjax.float32)
    """
    _check_input("logaddexp", input)
    _check_input("logaddexp", other)
    if dtype is None:
        dtype = input.dtype
    a = _combine("logaddexp", input, input_mask)
    b = _combine("logaddexp", other, other_mask)
    return _f.logaddexp(a, b).to(dtype)


def norm(
    input: Tensor,
    ord: float | None = 2.0,
    dim=None,
    *,
    keepdim: bool | None = False,
    dtype=None,
    mask: Tensor | None = None,
) -> Tensor:
    """The vector ``ord``-norm over ``dim`` of the kept elements (masked-out ones count as 0, or as ``inf``
    for ``ord=-inf``).

    Example::

        >>> x = fjax.tensor([[3.0, 7.0, 4.0]])
        >>> fjax.masked.norm(x, 2.0, 1, mask=fjax.tensor([[True, False, True]]))
        tensor([5.], dtype=fjax.float32)
    """
    _check_input("norm", input)
    if dtype is None:
        dtype = input.dtype
    dims = _dims("norm", dim, input.ndim)
    return _linalg.vector_norm(_combine("norm", input, mask, ord), ord, dims, bool(keepdim), dtype=dtype)


def _std_var(op: str, input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt) -> Tensor:
    if unbiased is not None and correction is not None:
        raise OpError(f"masked.{op}: only one of unbiased and correction may be given")
    corr = 1.0 if unbiased is None else float(bool(unbiased))
    if correction is not None:
        corr = float(correction)
    if dtype is None:
        dtype = input.dtype if _is_float(input.dtype) else _dt.float32
    dtype = _dt.to_dtype(dtype)
    compute = dtype if _is_float(dtype) else _dt.float32
    dims = _dims(op, dim, input.ndim)
    inmask = None if mask is None else _input_mask(input, mask=mask)
    count = _count(input, dims, True, inmask)
    centred = input - sum(input, dim, keepdim=True, dtype=dtype, mask=inmask) / count
    total = sum(centred * centred.conj(), dim, keepdim=keepdim, dtype=compute, mask=inmask)
    if isinstance(count, Tensor) and not keepdim:
        count = count.reshape(tuple(total.shape))
    if corr != 0:
        if isinstance(count, Tensor):
            real = _dt.float32 if compute == _dt.complex64 else _dt.float64 if compute == _dt.complex128 else compute
            count = _f.clamp_min(count.to(real) - corr, 0)
        else:
            count = builtins.max(count - corr, 0.0)
    output = (total / count).to(dtype)
    return _f.sqrt(output) if take_sqrt else output


def var(
    input: Tensor,
    dim=None,
    unbiased: bool | None = None,
    *,
    correction: int | float | None = None,
    keepdim: bool | None = False,
    dtype=None,
    mask: Tensor | None = None,
) -> Tensor:
    """The variance over ``dim`` of the kept elements, divided by ``count - correction`` (``correction``
    is 1 unless ``unbiased=False`` or ``correction`` says otherwise); ``nan`` where none is kept.

    Example::

        >>> x = fjax.tensor([[1.0, 9.0, 3.0]])
        >>> fjax.masked.var(x, 1, mask=fjax.tensor([[True, False, True]]))
        tensor([2.], dtype=fjax.float32)
    """
    _check_input("var", input)
    return _std_var("var", input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(
    input: Tensor,
    dim=None,
    unbiased: bool | None = None,
    *,
    correction: int | None = None,
    keepdim: bool | None = False,
    dtype=None,
    mask: Tensor | None = None,
) -> Tensor:
    """The standard deviation over ``dim`` of the kept elements (the square root of ``masked.var``).

    Example::

        >>> x = fjax.tensor([[1.0, 9.0, 3.0]])
        >>> fjax.masked.std(x, 1, mask=fjax.tensor([[True, False, True]]), unbiased=False)
        tensor([1.], dtype=fjax.float32)
    """
    _check_input("std", input)
    return _std_var("std", input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


def softmax(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Softmax along ``dim`` over the kept elements: masked-out ones get 0; a fully masked-out slice ``nan``.

    Example::

        >>> x = fjax.tensor([1.0, 5.0, 1.0])
        >>> fjax.masked.softmax(x, 0, mask=fjax.tensor([True, False, True]))
        tensor([0.5000, 0.0000, 0.5000], dtype=fjax.float32)
    """
    return _along_dim("softmax", input, dim, dtype, mask)


def log_softmax(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Log-softmax along ``dim`` over the kept elements: masked-out ones get ``-inf``.

    Example::

        >>> x = fjax.tensor([1.0, 5.0, 1.0])
        >>> fjax.masked.log_softmax(x, 0, mask=fjax.tensor([True, False, True]))
        tensor([-0.6931,    -inf, -0.6931], dtype=fjax.float32)
    """
    return _along_dim("log_softmax", input, dim, dtype, mask)


def softmin(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Softmin (softmax of ``-input``) along ``dim`` over the kept elements: masked-out ones get 0.

    Example::

        >>> x = fjax.tensor([1.0, -5.0, 1.0])
        >>> fjax.masked.softmin(x, 0, mask=fjax.tensor([True, False, True]))
        tensor([0.5000, 0.0000, 0.5000], dtype=fjax.float32)
    """
    return _along_dim("softmin", input, dim, dtype, mask)


def normalize(
    input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype=None, mask: Tensor | None = None
) -> Tensor:
    """``input`` divided by its masked ``ord``-norm along ``dim`` (at least ``eps``); masked-out elements
    become 0.

    Example::

        >>> x = fjax.tensor([3.0, 7.0, 4.0])
        >>> fjax.masked.normalize(x, 2.0, 0, mask=fjax.tensor([True, False, True]))
        tensor([0.6000, 0.0000, 0.8000], dtype=fjax.float32)
    """
    _check_input("normalize", input)
    if dtype is None:
        dtype = input.dtype
    kept = _combine("normalize", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return kept / _f.clamp_min(nrm, eps)
