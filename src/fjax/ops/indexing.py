"""Indexing ops: gather/scatter, index_* , masked_fill and ``tensor[index]``.

``getitem``/``setitem`` take a static *index template*: a tuple whose entries are ints,
``("slice", start, stop, step)``, None, Ellipsis, ``"tensor:k"`` for the k-th array of the
traced ``arrays`` tuple, or ``"newtensor:k"`` for a bool scalar (``x[True]``): a new dim there that
the k-th array (length 1 or 0) takes. Integer arrays follow torch's advanced indexing (ints and 0-d
integer arrays select first, then numpy's rule for the array indices).
"""

from __future__ import annotations

import functools
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from .. import _lazy
from ..errors import IndexOutOfRange
from . import _checks
from ._registry import Plan, Rows, _broadcast_dims, along, bind, defop
from .shape import on_padded, read_padded


def _wrap(name: str, d: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= d < n:
        raise _checks.IndexOpError(f"{name}: dim {d} is out of range for a tensor of {ndim} dims")
    return d % n


def _int_index(name: str, index):
    if not jnp.issubdtype(index.dtype, jnp.integer):
        raise TypeError(f"{name}: expected an integer index tensor, got {index.dtype}")
    return index


# ----------------------------------------------------------------------------- eager index checks
# XLA clamps (gather) or drops (scatter) out-of-range indices; torch raises. Each check below is
# an op's ``check``: dispatch runs it in eager before the kernel, on the host copy of the index.


traced_check = None
"""``traced_check(ok, message, exc=None)``: set by dispatch; inside an nn.Graph trace the checks
below hand it the traced condition, and ``fjax.asyncs`` raises at the next synchronization (a
``CheckError`` that is also an ``exc`` where that is an IndexError)."""


def _check_range(index, lo, hi, exc, message, ignore=None):
    """Raise ``exc(message(v))`` for the first index ``v`` outside ``[lo, hi)`` (``ignore``:
    a value that is always allowed); in a trace, defer the check (``traced_check``)."""
    if isinstance(index, jax.core.Tracer):
        if traced_check is not None and jnp.issubdtype(index.dtype, jnp.integer):
            ok = (index >= lo) & (index < hi)
            if ignore is not None:
                ok = ok | (index == ignore)
            traced_check(jnp.all(ok), message("?") + " (checked inside a compiled graph)", exc)
        return
    known = type(index) is _lazy._ARRAY  # (a concrete array: its values never change)
    if known:
        seen = _passed.get(id(index))
        if seen is not None and seen[0]() is index and (lo, hi, ignore) in seen[1]:
            return
    if isinstance(index, _lazy.Padded):
        values = _padded_host(index, lo, hi, exc, message, ignore)
    else:
        values = _host(index)
    if values is not None and ignore is not None:
        values = values[values != ignore]
    v = _first_outside(values, lo, hi)
    if v is not None:
        raise exc(message(v))
    if known and values is not None:
        _remember(index, (lo, hi, ignore))


# id(concrete index array) -> (a weak reference to it, the ranges it passed): a JAX array never
# changes, so an index used every step (a fixed training split, ``x[idx_train]``) is read on the
# host once per range, not once per call
_passed: dict = {}


def _remember(index, bounds) -> None:
    seen = _passed.get(id(index))
    if seen is None or seen[0]() is not index:
        if len(_passed) >= 1024:
            _passed.clear()
        seen = _passed[id(index)] = (weakref.ref(index), set())
    seen[1].add(bounds)


def _padded_host(index, lo, hi, exc, message, ignore):
    """The real block of a padded integer index (``fjax._bucket``: a batch or a sequence padded to
    its bucket) on the host, read from its bucket array, so the real block is not copied out; None
    where the check went into the segment that computes the bucket array (eager fusion:
    ``_lazy.check_later``, the padding left out), or for non-integers. A padded value comes from a
    loop whose shapes kept changing, never a first sight: its check is deferred at once (checked
    now, it would end the segment at each bucket's first steps: a program more per bucket)."""
    array = index.array
    if not np.issubdtype(np.dtype(index.dtype), np.integer):
        return None

    def real_block():
        return np.asarray(_lazy.real(array))[tuple(slice(0, s) for s in index.shape)]

    if type(array) is _lazy.Pending:
        ok = _lazy.then(_inside(lo, hi, ignore), [array, _real_shape(tuple(index.shape))])
        if type(ok) is _lazy.Pending:
            _lazy.check_later(ok, lambda: _check_range(real_block(), lo, hi, exc, message, ignore))
            return None
    return real_block()


@functools.lru_cache(maxsize=256)
def _inside(lo, hi, ignore):
    """The jitted ``ok(bucket, real_shape)``: every entry of the real block in ``[lo, hi)`` (or
    ``ignore``); one function per range, so a segment that records it repeats."""

    def ok(a, real):
        good = (a >= lo) & (a < hi)
        if ignore is not None:
            good = good | (a == ignore)
        for d in range(a.ndim):
            shape = (1,) * d + (a.shape[d],) + (1,) * (a.ndim - d - 1)
            good = good | (jnp.arange(a.shape[d]) >= real[d]).reshape(shape)
        return jnp.all(good)

    return jax.jit(ok)


_real_shapes: dict = {}


def _real_shape(shape):
    """A padded value's real ``shape`` as a device array (a kernel argument, not a constant: one
    program per bucket), one per shape."""
    return _lazy.by_value(_real_shapes, shape, lambda: jax.device_put(np.asarray(shape, np.int32)))


def _host(index):
    """An integer index array's values on the host; None inside a trace or for non-integers."""
    if isinstance(index, jax.core.Tracer):
        return None
    values = np.asarray(index)  # a view of a CPU array; the index only on an accelerator
    return values if np.issubdtype(values.dtype, np.integer) else None


def _first_outside(values, lo, hi):
    """The first of ``values`` outside ``[lo, hi)``, or None."""
    if values is None or values.size == 0 or (values.min() >= lo and values.max() < hi):
        return None
    return int(values[(values < lo) | (values >= hi)].flat[0])


def _along(name, exc, input, dim, index, negative=False):
    shape = jnp.shape(input)
    n_dims = max(len(shape), 1)
    if type(dim) is not int or not -n_dims <= dim < n_dims:
        return  # the op itself reports a bad dim
    d = dim % n_dims
    n = shape[d] if shape else 1
    _check_range(
        index,
        -n if negative else 0,
        n,
        exc,
        lambda v: f"{name}: index {v} is out of bounds for dimension {d} with size {n}",
    )


def _checker(name, exc, negative=False):
    def check(input, dim, index, *args, **kwargs):
        _along(name, exc, input, dim, index, negative)

    return check


def _check_take(input, index):
    n = int(np.prod(jnp.shape(input)))
    _check_range(
        index,
        -n,
        n,
        IndexOutOfRange,
        lambda v: f"take: out of range: tried to access index {v} on a tensor of {n} elements.",
    )


def _check_take_along_dim(input, indices, dim=None):
    if dim is None:
        _check_take(input, indices)
    else:
        _along("take_along_dim", IndexOutOfRange, input, dim, indices)


def _check_index_put(input, indices, values, accumulate=False):
    for k, index in enumerate(indices):
        _along("index_put", IndexOutOfRange, input, k, index, negative=True)


# ----------------------------------------------------------------------------- gather/scatter


def _check_like(name, index, other, what, dim):
    if index.ndim != max(other.ndim, 1) and not (index.ndim == 0 == other.ndim):
        raise ValueError(
            f"{name}: index of shape {index.shape} and {what} of shape {other.shape} must have the same number of dims"
        )
    for d, (i, n) in enumerate(zip(index.shape, other.shape)):
        if i > n and (d != dim or what != "input"):
            raise ValueError(
                f"{name}: index of shape {index.shape} is larger than {what} of shape {other.shape} in dim {d}"
            )


def _coords(index, dim):
    """Full coordinates of each element of a scatter/gather ``index`` along all dims."""
    return tuple(
        index if d == dim else jax.lax.broadcasted_iota(index.dtype, index.shape, d) for d in range(index.ndim)
    )


@defop(static=("dim", "sparse_grad"), check=_checker("gather", IndexOutOfRange), rows=along(params=("input", "index")))
def gather(input, dim, index, *, sparse_grad=False):
    """Pick values along ``dim`` by ``index``: for dim 1, ``out[i][j] = input[i][index[i][j]]``, and
    likewise for other dims. ``index`` is an integer tensor with as many dims as ``input`` and no larger
    outside ``dim``; the result has ``index``'s shape. An out-of-range index raises, as in torch.

    Example::

        >>> x = fjax.tensor([[1, 2], [3, 4]])
        >>> x.gather(1, fjax.tensor([[0, 0], [1, 0]]))
        tensor([[1, 1],
                [4, 3]], dtype=fjax.int64)
        >>> fjax.gather(x, 0, fjax.tensor([[1, 0]]))
        tensor([[3, 2]], dtype=fjax.int64)
    """
    index = _int_index("gather", index)
    d = _wrap("gather", dim, input.ndim)
    x = input.reshape(1) if input.ndim == 0 else input
    idx = index.reshape(1) if index.ndim == 0 else index
    _check_like("gather", idx, x, "input", d)
    out = x[_coords(idx, d)]
    return out.reshape(index.shape)


def _scatter(name, input, dim, index, src, how):
    index = _int_index(name, index)
    d = _wrap(name, dim, input.ndim)
    x = input.reshape(1) if input.ndim == 0 else input
    idx = index.reshape(1) if index.ndim == 0 else index
    _check_like(name, idx, x, "input", d)
    if src.ndim == 0:
        src = jnp.broadcast_to(src, idx.shape)
    else:
        _check_like(name, idx, src, "src", d)
        src = src[tuple(slice(0, n) for n in idx.shape)]
    ref = getattr(x.at[_coords(idx, d)], how)
    return ref(src.astype(x.dtype)).reshape(input.shape)


@defop(static=("dim", "reduce"), check=_checker("scatter", IndexOutOfRange))
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """Out-of-place scatter: a copy of ``input`` where, for dim 0, ``out[index[i][j]][j] = src[i][j]``
    (likewise for other dims). Pass either the tensor ``src``, read over ``index``'s shape, or a scalar
    ``value=``. Which write wins where ``index`` repeats a position is unspecified, as in torch; ``reduce`` is
    not supported.

    Example::

        >>> index = fjax.tensor([[2], [0]])
        >>> fjax.zeros(2, 3).scatter(1, index, fjax.tensor([[5.0], [6.0]]))
        tensor([[0., 0., 5.],
                [6., 0., 0.]], dtype=fjax.float32)
        >>> fjax.zeros(2, 3).scatter(1, index, value=-1.0)
        tensor([[ 0.,  0., -1.],
                [-1.,  0.,  0.]], dtype=fjax.float32)
    """
    if reduce is not None:
        raise NotImplementedError(f"scatter: reduce={reduce!r} is not supported")
    if (src is None) == (value is None):
        raise ValueError("scatter: pass exactly one of src and value")
    return _scatter("scatter", input, dim, index, value if src is None else src, "set")


@defop(static=("dim",), check=_checker("scatter_add", IndexOutOfRange))
def scatter_add(input, dim, index, src):
    """Out-of-place scatter that adds: a copy of ``input`` with ``src[i][j]`` added at
    ``out[index[i][j]][j]`` for dim 0 (likewise for other dims). Repeated indices accumulate.

    Example::

        >>> fjax.zeros(3).scatter_add(0, fjax.tensor([0, 2, 0]), fjax.tensor([1.0, 2.0, 3.0]))
        tensor([4., 0., 2.], dtype=fjax.float32)
    """
    return _scatter("scatter_add", input, dim, index, src, "add")


# ----------------------------------------------------------------------------- index_*


def _dim_index(name, input, dim, index):
    index = _int_index(name, index)
    if index.ndim > 1:
        raise ValueError(f"{name}: expected a 0-d or 1-d index, got shape {index.shape}")
    d = _wrap(name, dim, input.ndim)
    return d, index.reshape(-1)


@defop(
    static=("dim",),
    check=_checker("index_select", IndexOutOfRange),
    rows=Rows(("index",), when=lambda s, t: s["dim"] in (0, -len(t["input"][0])) and len(t["index"][0]) == 1),
)
def index_select(input, dim, index):
    """The entries at positions ``index`` (a 1-D integer tensor; repeats allowed) along ``dim``,
    in that order: the result has ``len(index)`` in place of that dim.

    Example::

        >>> x = fjax.tensor([[1, 2], [3, 4]])
        >>> x.index_select(0, fjax.tensor([1, 0, 1]))
        tensor([[3, 4],
                [1, 2],
                [3, 4]], dtype=fjax.int64)
        >>> x.index_select(1, fjax.tensor([1]))
        tensor([[2],
                [4]], dtype=fjax.int64)
    """
    d, index = _dim_index("index_select", input, dim, index)
    if input.ndim == 0:
        return jnp.take(input.reshape(1), index.reshape(-1), axis=0).reshape(())
    return jnp.take(input, index, axis=d)


def _dim_update(name, input, dim, index, source):
    d, index = _dim_index(name, input, dim, index)
    x = input.reshape(1) if input.ndim == 0 else input
    shape = x.shape[:d] + index.shape + x.shape[d + 1 :]
    if source.shape != shape and not (source.ndim == 0 and shape == (1,)):
        raise ValueError(f"{name}: expected source of shape {shape}, got {source.shape}")
    ref = x.at[(slice(None),) * d + (index,)]
    return ref, source.reshape(shape).astype(x.dtype)


@defop(
    static=("dim",),
    check=_checker("index_add", IndexOutOfRange),
    # the rows of source (and index) are summed into input: padding rows add zeros
    rows=Rows(("index", "source"), pad={"source": 0}, out=lambda s: False, when=lambda s, t: s["dim"] == 0),
)
def index_add(input, dim, index, source, *, alpha=1):
    """A copy of ``input`` with ``alpha * source`` added along ``dim``: slice ``k`` of ``source`` goes
    to position ``index[k]``, and repeated indices accumulate. ``source`` has ``input``'s shape except
    ``len(index)`` in dim ``dim``.

    Example::

        >>> index = fjax.tensor([0, 2, 0])
        >>> fjax.zeros(3).index_add(0, index, fjax.tensor([1.0, 2.0, 3.0]))
        tensor([4., 0., 2.], dtype=fjax.float32)
        >>> fjax.ones(2, 3).index_add(1, fjax.tensor([2]), fjax.tensor([[1.0], [2.0]]), alpha=10)
        tensor([[ 1.,  1., 11.],
                [ 1.,  1., 21.]], dtype=fjax.float32)
    """
    ref, src = _dim_update("index_add", input, dim, index, source)
    return ref.add(src * jnp.asarray(alpha, src.dtype)).reshape(input.shape)


@defop(static=("dim",), check=_checker("index_copy", IndexOutOfRange))
def index_copy(input, dim, index, source):
    """A copy of ``input`` with slice ``k`` of ``source`` written at position ``index[k]`` along
    ``dim``. ``source`` has ``input``'s shape except ``len(index)`` in dim ``dim``.

    Example::

        >>> fjax.zeros(3, 2).index_copy(0, fjax.tensor([2, 0]), fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([[3., 4.],
                [0., 0.],
                [1., 2.]], dtype=fjax.float32)
    """
    ref, src = _dim_update("index_copy", input, dim, index, source)
    return ref.set(src).reshape(input.shape)


@defop(static=("dim",), check=_checker("index_fill", IndexOutOfRange, negative=True))
def index_fill(input, dim, index, value):
    """A copy of ``input`` with every entry at the positions ``index`` along ``dim`` set to the
    scalar ``value``.

    Example::

        >>> x = fjax.tensor([[1, 2, 3], [4, 5, 6]])
        >>> x.index_fill(1, fjax.tensor([0, 2]), -1)
        tensor([[-1,  2, -1],
                [-1,  5, -1]], dtype=fjax.int64)
    """
    d, index = _dim_index("index_fill", input, dim, index)
    x = input.reshape(1) if input.ndim == 0 else input
    out = x.at[(slice(None),) * d + (index,)].set(jnp.asarray(value, x.dtype))
    return out.reshape(input.shape)


@defop(rows=Rows(("input", "mask", "value"), broadcast=True, dims=_broadcast_dims(("input", "mask", "value"))))
def masked_fill(input, mask, value):
    """A copy of ``input`` with ``value`` wherever the bool ``mask`` is True; ``mask`` broadcasts
    to ``input``'s shape, and ``value`` (a scalar or a 0-d tensor) takes ``input``'s dtype. A common use:
    setting masked attention scores to ``-inf``.

    Example::

        >>> x = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.masked_fill(x > 2, 0.0)
        tensor([[1., 2.],
                [0., 0.]], dtype=fjax.float32)
        >>> x.masked_fill(fjax.tensor([True, False]), float('-inf'))
        tensor([[-inf,   2.],
                [-inf,   4.]], dtype=fjax.float32)
    """
    if mask.dtype != np.bool_:
        raise TypeError(f"masked_fill: expected a bool mask, got {mask.dtype}")
    if jnp.ndim(value) != 0:
        raise ValueError(f"masked_fill: expected a 0-d value, got shape {jnp.shape(value)}")
    return jnp.where(mask, jnp.asarray(value, input.dtype), input)


@defop(static=("dim",), check=_check_take_along_dim)
def take_along_dim(input, indices, dim=None):
    """Values of ``input`` at ``indices`` along ``dim``, where ``indices`` has as many dims as
    ``input`` (as ``argsort`` or ``argmax(keepdim=True)`` give). With ``dim`` None both are flattened.

    Example::

        >>> x = fjax.tensor([[10, 30, 20], [60, 40, 50]])
        >>> x.take_along_dim(x.argsort(dim=1), dim=1)
        tensor([[10, 20, 30],
                [40, 50, 60]], dtype=fjax.int64)
        >>> x.take_along_dim(fjax.tensor([5, 0]))
        tensor([50, 10], dtype=fjax.int64)
    """
    indices = _int_index("take_along_dim", indices)
    if dim is None:
        return jnp.take_along_axis(input.reshape(-1), indices.reshape(-1), axis=0)
    d = _wrap("take_along_dim", dim, input.ndim)
    if input.ndim != indices.ndim:
        raise ValueError(
            f"take_along_dim: input of shape {input.shape} and indices of shape "
            f"{indices.shape} must have the same number of dims"
        )
    return jnp.take_along_axis(input, indices, axis=d)


@defop(check=_check_take)
def take(input, index):
    """Values of ``input`` read as a flat, row-major 1-D tensor at the positions ``index`` (negative
    positions count from the end); the result has ``index``'s shape.

    Example::

        >>> x = fjax.tensor([[1, 2], [3, 4]])
        >>> fjax.take(x, fjax.tensor([[0, 3], [-1, 1]]))
        tensor([[1, 4],
                [4, 2]], dtype=fjax.int64)
    """
    index = _int_index("take", index)
    return jnp.take(input.reshape(-1), index)


# ----------------------------------------------------------------------------- tensor[index]


def _expand(name, arrays, index):
    """The index template as a Python index; bool masks become integer arrays when concrete."""
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for e in index:
        if isinstance(e, str) and e.startswith("newtensor:"):
            out.append(("new", arrays[int(e[10:])]))
        elif isinstance(e, str) and e.startswith("tensor:"):
            a = arrays[int(e[7:])]
            if a.dtype == np.bool_:
                if isinstance(a, jax.core.Tracer):
                    raise NotImplementedError(
                        f"{name}: boolean mask indexing has a data-dependent shape and cannot "
                        "be traced; use where/masked_fill"
                    )
                out.extend(("array", i) for i in jnp.nonzero(a))
            elif jnp.issubdtype(a.dtype, jnp.integer):
                out.append(("scalar" if a.ndim == 0 else "array", a))
            else:
                raise TypeError(f"{name}: index tensors must be integer or bool, got {a.dtype}")
        elif isinstance(e, (tuple, list)) and len(e) == 4 and e[0] == "slice":
            out.append(slice(*e[1:]))
        elif e is None or e is Ellipsis:
            out.append(e)
        elif e == "...":
            out.append(Ellipsis)
        elif isinstance(e, (int, np.integer)) and not isinstance(e, bool):
            out.append(int(e))
        else:
            raise TypeError(f"{name}: unsupported index entry {e!r}")
    return out


def _spell_out(ndim, entries):
    """``entries`` with the Ellipsis written as the full slices it stands for: numpy takes an
    Ellipsis between two arrays as a separation even when it stands for no dim, torch does not."""
    if not any(e is Ellipsis for e in entries):
        return entries
    consumed = sum(
        1 for e in entries if e is not None and e is not Ellipsis and not (isinstance(e, tuple) and e[0] == "new")
    )
    out = []
    for e in entries:
        out.extend([slice(None)] * (ndim - consumed) if e is Ellipsis else [e])
    return out


def _split_steps(ndim, entries):
    """Torch applies ints/slices/None first, then the arrays on the dims that remain: ``basic``, the
    0-d arrays that select like ints (``selects``, by dim of the basic result) and ``advanced``."""
    basic, advanced, selects, pos = [], {}, {}, 0
    consumed = sum(
        1 for e in entries if e is not None and e is not Ellipsis and not (isinstance(e, tuple) and e[0] == "new")
    )
    for e in entries:
        if isinstance(e, tuple):  # a bool scalar's new dim, or a dim an array takes
            basic.append(None if e[0] == "new" else slice(None))
            (selects if e[0] == "scalar" else advanced)[pos] = e[1]
            pos += 1
        elif e is Ellipsis:
            basic.append(e)
            pos += ndim - consumed
        else:
            basic.append(e)
            pos += 0 if isinstance(e, int) else 1
    return tuple(basic), advanced, selects


def _numpy_index(entries):
    return tuple(e[1] if isinstance(e, tuple) else e for e in entries)


def _mixed(entries):
    """Ints or 0-d arrays together with arrays, or a bool scalar: torch's result then differs from numpy's rule."""
    arrays = [e for e in entries if isinstance(e, tuple)]
    return bool(arrays) and (any(e[0] != "array" for e in arrays) or any(isinstance(e, int) for e in entries))


def _torch_get(x, entries):
    entries = _spell_out(x.ndim, entries)
    if not _mixed(entries):
        return x[_numpy_index(entries)]
    basic, advanced, selects = _split_steps(x.ndim, entries)
    y = x[basic]
    for d in sorted(selects, reverse=True):  # a 0-d index tensor selects as an int does (torch: its item)
        y = y[(slice(None),) * d + (selects[d],)]
        advanced = {k - (k > d): v for k, v in advanced.items()}
    return y[tuple(advanced.get(d, slice(None)) for d in range(y.ndim))]


_ALL = ("slice", None, None, None)


def _getitem_batch(statics) -> tuple:
    """Where ``x[index]``'s rows come from (``Rows.params``): index tensors that come first,
    followed by full slices (``x[rows]``, ``x[rows, cols]``, ``x[mask]``), give one row per
    index row; a first full slice whose index tensors (if any) stay together and meet no int
    (``x[:, 2:]``, ``x[:, idx]``) keeps the input's rows."""
    index = statics["index"]
    tensors = [k for k, e in enumerate(index) if type(e) is str and e.startswith("tensor:")]
    if tensors and tensors == list(range(len(tensors))):
        return ("arrays",) if all(e == _ALL or e is Ellipsis for e in index[len(tensors) :]) else ()
    if not index or index[0] != _ALL or any(type(e) is str and not e.startswith("tensor:") for e in index):
        return ()
    if tensors and (tensors != list(range(tensors[0], tensors[-1] + 1)) or any(type(e) is int for e in index)):
        return ()
    return ("input",)


def _same_rank_indices(statics, tensors) -> bool:
    """Index tensors that give the rows have one rank (else they broadcast across the batch)."""
    ranks = {len(shape) for name, (shape, _) in tensors.items() if name.startswith("arrays[")}
    return _getitem_batch(statics) != ("arrays",) or len(ranks) == 1


def _getitem_at(input, arrays, index, *, n, size):
    """``input[:, ..., idx, :, ...]`` with ``idx`` (an integer index tensor) on a padded dim:
    negative positions count from its real length ``n``."""
    d = index.index("tensor:0")
    idx = arrays[0]
    idx = jnp.where(idx < 0, idx + n, idx)
    return jnp.take(input, idx, axis=d)


def _getitem_read(input, arrays, index, *, n, size, how):
    """``input[index]`` of basic entries on a bucket array: ``how`` per entry, ``None`` a new dim,
    ``("static", e)`` an entry on a dim that is not padded, else ``on_padded``'s read."""
    y, d = input, 0
    for h in how:
        if h is None:
            y = jnp.expand_dims(y, d)
            d += 1
        elif h[0] == "static":
            e = h[1]
            if type(e) is int:
                y = jax.lax.index_in_dim(y, e % y.shape[d], d, keepdims=False)
            else:
                y = y[(slice(None),) * d + (slice(*e[1:]),)]
                d += 1
        else:
            y = read_padded(y, d, h, n, size)
            d += h[0] != "at"
    return y


def _getitem_basic(index, axes, shape, n):
    """``Rows.dims`` of ``x[index]`` with ints, slices, None and an Ellipsis only (``x[:, :-1]``,
    ``x[..., -1, :]``), ``x`` padded along ``axes``: each padded dim read as ``on_padded`` says, one
    kernel per bucket; the others as they are."""
    if any(type(e) is str for e in index):
        return None
    ndim = len(shape)
    used = sum(1 for e in index if e is not None and e is not Ellipsis)
    entries = []
    for e in index:
        entries.extend([_ALL] * (ndim - used) if e is Ellipsis else [e])
    if Ellipsis not in index:
        entries.extend([_ALL] * (ndim - used))
    how, out, grow, d, o = [], [], None, 0, 0  # d: the input's dim the entry reads, o: the result's
    for e in entries:
        if e is None:
            how.append(None)
            o += 1
            continue
        if d in axes:
            h = on_padded(e, n)
            if h is None:
                return None
            if h[0] == "grow":
                if grow is not None and h[2] != grow:
                    return None
                grow = h[2]
                out.append(o)
        else:
            h = ("static", e)
        how.append(h)
        o += type(e) is not int
        d += 1
    how = tuple(how)
    # the index rewritten as ``how`` (a slice [:T] at the real length T: one entry for every T)
    return Plan(tuple(out), kernel=bind(_getitem_read, how=how), static={"index": how}, grow=grow or 0)


def _getitem_dims(statics, padded, shapes, n, size):
    """One integer index tensor on a padded dim (``x[:, [-1]]``), full slices elsewhere: its
    positions count from the real length; other padded dims pass through. Ints and slices: see
    ``_getitem_basic``."""
    index = statics.get("index")
    if set(padded) != {"input"} or not isinstance(index, tuple):
        return None
    if not any(k.startswith("arrays[") for k in shapes):
        return _getitem_basic(index, padded["input"], shapes["input"][0], n)
    if "arrays[0]" not in shapes or "arrays[1]" in shapes:
        return None
    shape = shapes["input"][0]
    if len(index) > len(shape) or any(e != _ALL for e in index if e != "tensor:0") or index.count("tensor:0") != 1:
        return None
    d = index.index("tensor:0")
    idx_shape, dtype = shapes["arrays[0]"]
    if d not in padded["input"] or not np.issubdtype(np.dtype(dtype), np.integer) or len(idx_shape) != 1:
        return None
    return Plan(tuple(e for e in padded["input"] if e != d), kernel=_getitem_at)


@defop(static=("index",), linear=True, rows=Rows(_getitem_batch, when=_same_rank_indices, dims=_getitem_dims))
def getitem(input, arrays, index):
    """The op behind ``tensor[index]``, with torch's indexing rules: ints and slices (steps included)
    give views, ``None`` adds a dim, ``...`` stands for the remaining dims, and integer or bool tensors select
    elements (advanced indexing, a copy). It takes the index as a template with the index tensors in
    ``arrays``; write ``x[...]`` rather than calling it.

    Example::

        >>> x = fjax.tensor([[1, 2, 3], [4, 5, 6]])
        >>> x[1]
        tensor([4, 5, 6], dtype=fjax.int64)
        >>> x[:, ::2]
        tensor([[1, 3],
                [4, 6]], dtype=fjax.int64)
        >>> x[fjax.tensor([1, 0]), 0]
        tensor([4, 1], dtype=fjax.int64)
        >>> x[x > 4]
        tensor([5, 6], dtype=fjax.int64)
        >>> x[None, ..., 1].shape
        fjax.Size([1, 2])
    """
    return _torch_get(input, _expand("getitem", arrays, index))


@defop(static=("accumulate",), linear=True, check=_check_index_put)
def index_put(input, indices, values, accumulate=False):
    """Out-of-place ``input[indices] = values``: ``indices`` is a tuple of integer tensors, one per
    leading dim, broadcast together, and ``values`` broadcasts over the selected elements. With
    ``accumulate=True`` the values are added instead, and repeated positions accumulate.

    Example::

        >>> x = fjax.zeros(2, 2)
        >>> x.index_put((fjax.tensor([0, 1]), fjax.tensor([1, 1])), fjax.tensor([5.0, 6.0]))
        tensor([[0., 5.],
                [0., 6.]], dtype=fjax.float32)
        >>> x.index_put((fjax.tensor([0, 0]),), fjax.tensor(1.0), accumulate=True)
        tensor([[2., 2.],
                [0., 0.]], dtype=fjax.float32)
    """
    indices = tuple(indices)
    if len(indices) == 1 and indices[0].dtype == jnp.bool_:
        return _index_put_mask(input, indices[0], values, accumulate)
    for i in indices:
        if i.dtype == jnp.bool_:
            raise NotImplementedError("index_put: a boolean index tensor together with other index tensors")
        _int_index("index_put", i)
    if len(indices) > input.ndim:
        raise IndexError(f"index_put: {len(indices)} index tensors for a tensor of shape {input.shape}")
    ref = input.at[indices]
    values = jnp.asarray(values).astype(input.dtype)
    return ref.add(values) if accumulate else ref.set(values)


def _index_put_mask(input, mask, values, accumulate):
    """``index_put`` with one boolean mask over the leading ``mask.ndim`` dims: ``values`` either holds
    one row per selected position (leading dim = number of Trues) or broadcasts to every one of them."""
    k = mask.ndim
    if mask.shape != input.shape[:k]:
        raise IndexError(f"index_put: mask of shape {mask.shape} does not match input of shape {input.shape}")
    values = jnp.asarray(values).astype(input.dtype)
    rest = input.shape[k:]
    if values.ndim > len(rest) and values.shape[0] != 1:  # one row per True: scatter at the Trues
        where = jnp.nonzero(mask, size=values.shape[0])
        ref = input.at[where]
        return ref.add(values) if accumulate else ref.set(values)
    if values.ndim > len(rest):  # leading 1-dims
        values = values.reshape(values.shape[values.ndim - len(rest) :])
    values = jnp.broadcast_to(values, rest)
    m = mask.reshape(mask.shape + (1,) * len(rest))
    return input + jnp.where(m, values, 0) if accumulate else jnp.where(m, values, input)


@defop(static=("index",), linear=True)
def setitem(input, arrays, index, value):
    """The op behind ``tensor[index] = value``: ``value`` is broadcast to the indexed shape, cast to
    ``input``'s dtype and written at ``index``, with the same indexing rules as ``tensor[index]``.

    Example::

        >>> x = fjax.zeros(2, 3)
        >>> x[0] = 1
        >>> x[:, fjax.tensor([2])] = fjax.tensor([[7.0], [8.0]])
        >>> x
        tensor([[1., 1., 7.],
                [0., 0., 8.]], dtype=fjax.float32)
    """
    entries = _spell_out(input.ndim, _expand("setitem", arrays, index))
    value = jnp.asarray(value).astype(input.dtype)
    if not _mixed(entries):
        return input.at[_numpy_index(entries)].set(value)
    where = _torch_get(jnp.arange(input.size).reshape(input.shape), entries)
    value = jnp.broadcast_to(value, where.shape).reshape(-1)
    return input.reshape(-1).at[where.reshape(-1)].set(value).reshape(input.shape)


# ----------------------------------------------------------------------------- reducing scatters

_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")


@jax.custom_jvp
def _scatter_prod(base, target, src):
    """``base`` (1-D) with ``src[i]`` multiplied into ``base[target[i]]``; differentiable with repeated
    targets and zeros (JAX's scatter-multiply has no gradient for repeated targets)."""
    return base.at[target].multiply(src)


@_scatter_prod.defjvp
def _scatter_prod_jvp(primals, tangents):
    # each factor's derivative is the product of the others at its target: the product of the nonzero
    # factors divided by its own value when no factor is 0, that product for the only 0, else 0
    base, target, src = primals
    t_base, _, t_src = tangents
    safe_base, safe_src = jnp.where(base == 0, 1, base), jnp.where(src == 0, 1, src)
    nonzero = safe_base.at[target].multiply(safe_src)
    zeros = (base == 0).astype(jnp.int32).at[target].add((src == 0).astype(jnp.int32))

    def others(value, safe, prod, count):
        return jnp.where(count == 0, prod / safe, jnp.where((count == 1) & (value == 0), prod, 0))

    d_base = others(base, safe_base, nonzero, zeros)
    d_src = others(src, safe_src, nonzero[target], zeros[target])
    tangent = t_base * d_base + jnp.zeros_like(base).at[target].add(t_src * d_src)
    return _scatter_prod(base, target, src), tangent


def _reduce_into(name, x, where, src, reduce, include_self):
    """``x`` with ``src`` reduced into the positions ``where`` (an ``.at[]`` index) by ``reduce``; without
    ``include_self`` the positions hit start from the reduction's identity instead of ``x``."""
    if reduce not in _SCATTER_REDUCES:
        raise ValueError(f"{name}: reduce must be one of {_SCATTER_REDUCES}, got {reduce!r}")
    src = src.astype(x.dtype)
    hit = jnp.zeros(x.shape, jnp.bool_).at[where].set(True)
    if reduce in ("sum", "mean"):
        base = x if include_self else jnp.where(hit, jnp.zeros_like(x), x)
        out = base.at[where].add(src)
        if reduce == "mean":
            count = jnp.zeros(x.shape, x.dtype).at[where].add(jnp.ones_like(src))
            count = count + (1 if include_self else 0)
            count = jnp.where(count == 0, jnp.ones_like(count), count)
            if jnp.issubdtype(x.dtype, jnp.inexact):
                out = out / count
            else:
                out = jnp.floor_divide(out, count)
            out = jnp.where(hit, out, x)
        return out
    if reduce == "prod":
        base = x if include_self else jnp.where(hit, jnp.ones_like(x), x)
        flat = jnp.arange(x.size).reshape(x.shape)[where]  # each src element's target
        return _scatter_prod(base.reshape(-1), flat.reshape(-1), src.reshape(-1)).reshape(x.shape)
    if jnp.issubdtype(x.dtype, jnp.inexact):
        identity = -jnp.inf if reduce == "amax" else jnp.inf
    else:
        info = jnp.iinfo(x.dtype) if x.dtype != jnp.bool_ else None
        identity = (info.min if reduce == "amax" else info.max) if info else (reduce == "amin")
    base = x if include_self else jnp.where(hit, jnp.full_like(x, identity), x)
    ref = base.at[where]
    return ref.max(src) if reduce == "amax" else ref.min(src)


@defop(static=("dim", "reduce", "include_self"), check=_checker("scatter_reduce", IndexOutOfRange))
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """A copy of ``input`` with ``src`` reduced in at the positions ``index`` names along ``dim`` (as
    ``scatter``): ``reduce`` is ``'sum'``, ``'prod'``, ``'mean'``, ``'amax'`` or ``'amin'``; with
    ``include_self=False`` the positions hit ignore ``input``'s own value.

    Example::

        >>> x = fjax.tensor([1.0, 2.0, 3.0])
        >>> x.scatter_reduce(0, fjax.tensor([0, 0, 2]), fjax.tensor([5.0, 7.0, 1.0]), "amax")
        tensor([7., 2., 3.], dtype=fjax.float32)
        >>> x.scatter_reduce(0, fjax.tensor([0, 0]), fjax.tensor([5.0, 7.0]), "mean", include_self=False)
        tensor([6., 2., 3.], dtype=fjax.float32)
    """
    index = _int_index("scatter_reduce", index)
    d = _wrap("scatter_reduce", dim, input.ndim)
    x = input.reshape(1) if input.ndim == 0 else input
    idx = index.reshape(1) if index.ndim == 0 else index
    _check_like("scatter_reduce", idx, x, "input", d)
    src = src.reshape(1) if src.ndim == 0 else src
    _check_like("scatter_reduce", idx, src, "src", d)
    src = src[tuple(slice(0, n) for n in idx.shape)]
    return _reduce_into("scatter_reduce", x, _coords(idx, d), src, reduce, include_self).reshape(input.shape)


@defop(static=("dim", "reduce", "include_self"), check=_checker("index_reduce", IndexOutOfRange))
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of ``input`` with slice ``k`` of ``source`` reduced into position ``index[k]`` along ``dim``:
    ``reduce`` is ``'prod'``, ``'mean'``, ``'amax'`` or ``'amin'``; with ``include_self=False`` the positions
    hit ignore ``input``'s own value.

    Example::

        >>> fjax.ones(3).index_reduce(0, fjax.tensor([0, 0, 2]), fjax.tensor([2.0, 3.0, 4.0]), "prod")
        tensor([6., 1., 4.], dtype=fjax.float32)
    """
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ValueError(f"index_reduce: reduce must be 'prod', 'mean', 'amax' or 'amin', got {reduce!r}")
    d, idx = _dim_index("index_reduce", input, dim, index)
    x = input.reshape(1) if input.ndim == 0 else input
    shape = x.shape[:d] + idx.shape + x.shape[d + 1 :]
    if source.shape != shape and not (source.ndim == 0 and shape == (1,)):
        raise ValueError(f"index_reduce: expected source of shape {shape}, got {source.shape}")
    where = (slice(None),) * d + (idx,)
    return _reduce_into("index_reduce", x, where, source.reshape(shape), reduce, include_self).reshape(input.shape)


@defop(static=("accumulate",), check=lambda input, index, *a, **k: _check_take(input, index))
def put(input, index, source, accumulate=False):
    """A copy of ``input`` with ``source``'s elements written (or, with ``accumulate``, added) at the flat
    positions ``index`` (negative ones count from the end), as if ``input`` were 1-D.

    Example::

        >>> fjax.put(fjax.zeros(2, 2), fjax.tensor([0, 3]), fjax.tensor([1.0, 2.0]))
        tensor([[1., 0.],
                [0., 2.]], dtype=fjax.float32)
    """
    index = _int_index("put", index)
    if index.size != source.size:
        raise ValueError(f"put: index has {index.size} elements, source {source.size}")
    flat = input.reshape(-1)
    i = index.reshape(-1)
    i = jnp.where(i < 0, i + flat.shape[0], i)
    src = source.reshape(-1).astype(input.dtype)
    out = flat.at[i].add(src) if accumulate else flat.at[i].set(src)
    return out.reshape(input.shape)


@defop()
def masked_scatter(input, mask, source):
    """A copy of ``input`` (broadcast with ``mask``) where the positions of ``mask`` that are True take the
    elements of ``source`` in row-major order.

    Example::

        >>> mask = fjax.tensor([True, False, True])
        >>> fjax.masked_scatter(fjax.zeros(3), mask, fjax.tensor([1.0, 2.0, 3.0]))
        tensor([1., 0., 2.], dtype=fjax.float32)
    """
    if mask.dtype != jnp.bool_:
        raise TypeError(f"masked_scatter: expected a bool mask, got {mask.dtype}")
    x, m = jnp.broadcast_arrays(input, mask)
    flat_m = m.reshape(-1)
    pos = jnp.cumsum(flat_m) - 1
    src = source.reshape(-1).astype(x.dtype)
    if src.size == 0:
        return x
    vals = src[jnp.clip(pos, 0, src.size - 1)]
    return jnp.where(flat_m, vals, x.reshape(-1)).reshape(x.shape)
