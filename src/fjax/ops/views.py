"""Views: torch's strided geometry of a tensor over its storage, and the kernels that read a
view out of a storage and write one back into it.

A geometry is ``(shape, strides, offset)`` in elements of a flat storage, as torch's
``size()``, ``stride()`` and ``storage_offset()``. ``RULES`` maps every view op of the op table
to the geometry of its output(s) from the geometry of its input; ``Tensor`` (``fjax.tensor``)
keeps the storage and the geometries, these functions only compute them.

The kernels index the flat storage with ``offset + sum(iota_d * stride_d)`` built inside the
compiled function (no index constants), so one kernel serves every offset: the offset is an
argument. A view that is one contiguous run of the storage reads and writes with
``dynamic_slice``/``dynamic_update_slice`` instead of a gather/scatter.
"""

from __future__ import annotations

import functools

import jax
import jax.lax as lax
import jax.numpy as jnp
import numpy as np

from .. import _dims
from ._registry import Plan, Rows, bind, defop
from .shape import _split_at, _wrap, on_padded, read_padded

# ----------------------------------------------------------------------------- geometry


@functools.lru_cache(maxsize=4096)
def contiguous_strides(shape: tuple) -> tuple:
    """torch's strides of a contiguous tensor of ``shape`` (size-0/1 dims count as 1)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def is_contiguous(shape, strides) -> bool:
    """torch's ``is_contiguous``: row-major order, size-1 dims' strides ignored."""
    if 0 in shape:
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 1:
            continue
        if s != expected:
            return False
        expected *= n
    return True


def overlaps(shape, strides) -> bool:
    """torch's ``has_internal_overlap`` YES case: a stride-0 dim of size > 1 (an expanded view)."""
    return any(s == 0 and n > 1 for n, s in zip(shape, strides))


def view_strides(old_shape, old_strides, new_shape):
    """The strides of ``new_shape`` viewing memory laid out as ``(old_shape, old_strides)``, or
    None when no such view exists (torch's ``computeStride``: then ``view`` raises and
    ``reshape`` copies)."""
    if 0 in old_shape:
        return contiguous_strides(new_shape) if tuple(old_shape) != tuple(new_shape) else tuple(old_strides)
    if not old_shape:
        return (1,) * len(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1 and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


# ----------------------------------------------------------------------------- view rules
# rule(geometry, out_shapes, *op_args, **op_kwargs) -> [geometry per output] or None (a copy)


def _reshape_rule(g, outs, *args, **kwargs):
    shape, strides, offset = g
    new = view_strides(shape, strides, outs[0])
    return None if new is None else [(outs[0], new, offset)]


def _permuted(g, perm):
    shape, strides, offset = g
    return [(tuple(shape[p] for p in perm), tuple(strides[p] for p in perm), offset)]


def _swap(n, d0, d1):
    perm = list(range(n))
    if n:
        a, b = _wrap("transpose", d0, n), _wrap("transpose", d1, n)
        perm[a], perm[b] = perm[b], perm[a]
    return perm


def _movedim_perm(n, source, destination):
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [_wrap("movedim", s, n) for s in src]
    dst = [_wrap("movedim", d, n) for d in dst]
    perm = [-1] * n
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(d for d in range(n) if d not in src)
    return [p if p >= 0 else next(rest) for p in perm]


def _squeeze_rule(g, outs, input, dim=None):
    shape, strides, offset = g
    if dim is None:
        keep = [d for d, n in enumerate(shape) if n != 1]
    else:
        dims = {_wrap("squeeze", d, len(shape)) for d in ((dim,) if isinstance(dim, int) else dim)} if shape else set()
        keep = [d for d in range(len(shape)) if not (d in dims and shape[d] == 1)]
    return [(tuple(shape[d] for d in keep), tuple(strides[d] for d in keep), offset)]


def _unsqueeze_rule(g, outs, input, dim):
    shape, strides, offset = tuple(g[0]), tuple(g[1]), g[2]
    d = _wrap("unsqueeze", dim, len(shape) + 1)
    stride = 1 if d >= len(shape) else shape[d] * strides[d]
    return [(shape[:d] + (1,) + shape[d:], strides[:d] + (stride,) + strides[d:], offset)]


def _expand_rule(g, outs, *args, **kwargs):
    shape, strides, offset = g
    out = outs[0]
    lead = len(out) - len(shape)
    new = [0] * lead + [0 if n == 1 and m != 1 else s for n, m, s in zip(shape, out[lead:], strides)]
    return [(tuple(out), tuple(new), offset)]


def _pieces(g, outs, dim):
    """split, chunk, tensor_split: the outputs are consecutive pieces along ``dim``."""
    shape, strides, offset = g
    d = _wrap("split", dim, len(shape))
    out, start = [], 0
    for o in outs:
        out.append((tuple(o), tuple(strides), offset + start * strides[d]))
        start += o[d]
    return out


def _select(g, d, i):
    shape, strides, offset = g
    i = i + shape[d] if i < 0 else i
    return (shape[:d] + shape[d + 1 :], strides[:d] + strides[d + 1 :], offset + i * strides[d])


def _unbind_rule(g, outs, input, dim=0):
    d = _wrap("unbind", dim, len(g[0]))
    return [_select(g, d, i) for i in range(g[0][d])]


def _padded(outs, input) -> bool:
    """A window read (``outs`` None: dispatch's ``_window``) of a tensor padded along dims past
    dim 0 (``fjax._dims.PaddedDims``): there is none, the op itself runs on the bucket
    (``Rows.dims``: no copy-out of the real block), and its result is then made a view
    (``outs`` given)."""
    return outs is None and type(getattr(input, "_meta", None)) is _dims.PaddedDims


def _select_rule(g, outs, input, dim, index):
    d = _wrap("select", dim, len(g[0]))
    if not -g[0][d] <= index < g[0][d]:
        raise IndexError(f"select: index {index} out of range for tensor of size {list(g[0])} at dimension {dim}")
    return None if _padded(outs, input) else [_select(g, d, index)]


def _narrow_rule(g, outs, input, dim, start, length):
    shape, strides, offset = g
    d = _wrap("narrow", dim, len(shape))
    n = shape[d]
    s = start + n if start < 0 else start
    if not (0 <= s <= n and 0 <= length and s + length <= n):
        raise ValueError(f"narrow: start {start} + length {length} exceeds dim {dim} of size {n}")
    if _padded(outs, input):
        return None
    return [(shape[:d] + (length,) + shape[d + 1 :], strides, offset + s * strides[d])]


def _diagonal_rule(g, outs, input, offset=0, dim1=0, dim2=1):
    shape, strides, base = g
    d1, d2 = _wrap("diagonal", dim1, len(shape)), _wrap("diagonal", dim2, len(shape))
    if offset >= 0:
        size = max(min(shape[d1], shape[d2] - offset), 0)
        start = offset * strides[d2]
    else:
        size = max(min(shape[d1] + offset, shape[d2]), 0)
        start = -offset * strides[d1]
    keep = [d for d in range(len(shape)) if d not in (d1, d2)]
    return [
        (
            tuple(shape[d] for d in keep) + (size,),
            tuple(strides[d] for d in keep) + (strides[d1] + strides[d2],),
            base + (start if size else 0),
        )
    ]


def _unfold_rule(g, outs, input, dimension, size, step):
    shape, strides, offset = g
    if not shape:
        return [((size,), (1,), offset)]
    d = _wrap("unfold", dimension, len(shape))
    n = (shape[d] - size) // step + 1
    return [
        (
            shape[:d] + (n,) + shape[d + 1 :] + (size,),
            strides[:d] + (step * strides[d],) + strides[d + 1 :] + (strides[d],),
            offset,
        )
    ]


def _getitem_rule(g, outs, input, arrays, index):
    """Basic indexing (ints, slices, None, Ellipsis) is a view; any tensor index copies."""
    if arrays or any(isinstance(i, str) for i in index) or _padded(outs, input):
        return None
    shape, strides, offset = list(g[0]), list(g[1]), g[2]
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    out_shape, out_strides, d = [], [], 0
    for i in index:
        if i is Ellipsis:
            for _ in range(len(shape) - consumed):
                out_shape.append(shape[d])
                out_strides.append(strides[d])
                d += 1
        elif i is None:
            out_shape.append(1)
            out_strides.append(shape[d] * strides[d] if d < len(shape) else 1)
        elif isinstance(i, int):
            offset += (i + shape[d] if i < 0 else i) * strides[d]
            d += 1
        else:
            start, stop, step = slice(*i[1:]).indices(shape[d])
            if step <= 0:
                return None
            n = max(0, -(-(stop - start) // step))
            offset += start * strides[d] if n else 0
            out_shape.append(n)
            out_strides.append(strides[d] * step)
            d += 1
    out_shape += shape[d:]
    out_strides += strides[d:]
    return [(tuple(out_shape), tuple(out_strides), offset)]


def _permute(n, dims):
    return [_wrap("permute", d, n) for d in dims]


RULES = {
    "view": _reshape_rule,
    "reshape": _reshape_rule,
    "flatten": _reshape_rule,
    "unflatten": _reshape_rule,
    "view_as": _reshape_rule,
    "permute": lambda g, outs, input, dims: _permuted(g, _permute(len(g[0]), dims)),
    "transpose": lambda g, outs, input, dim0, dim1: _permuted(g, _swap(len(g[0]), dim0, dim1)),
    "swapaxes": lambda g, outs, input, axis0, axis1: _permuted(g, _swap(len(g[0]), axis0, axis1)),
    "t": lambda g, outs, input: _permuted(g, _swap(2, 0, 1) if len(g[0]) == 2 else range(len(g[0]))),
    "movedim": lambda g, outs, input, source, destination: _permuted(g, _movedim_perm(len(g[0]), source, destination)),
    "squeeze": _squeeze_rule,
    "unsqueeze": _unsqueeze_rule,
    "expand": _expand_rule,
    "expand_as": _expand_rule,
    "broadcast_to": _expand_rule,
    "split": lambda g, outs, tensor, split_size_or_sections, dim=0: _pieces(g, outs, dim),
    "chunk": lambda g, outs, input, chunks, dim=0: _pieces(g, outs, dim),
    "tensor_split": lambda g, outs, input, sections, dim=0: _pieces(g, outs, dim),
    "unbind": _unbind_rule,
    "select": _select_rule,
    "narrow": _narrow_rule,
    "diagonal": _diagonal_rule,
    "unfold": _unfold_rule,
    "getitem": _getitem_rule,
}
"""Every view op of the op table: its output geometry from its input's (None: a copy)."""

WINDOWS = frozenset({"getitem", "narrow", "select"})
"""View ops whose position is a Python number (an index, a start): their value is read at a
dynamic offset (``_view_read``), so a loop over positions compiles one kernel, not one each."""


def _split_node(tensor, split_size_or_sections, dim=0):
    return "Split" if isinstance(split_size_or_sections, int) else "SplitWithSizes"


NODES = {"split": _split_node, "chunk": lambda *a, **k: "Split", "unbind": lambda *a, **k: "Unbind"}
"""View ops with several outputs whose outputs torch forbids to modify in place with grad: a
function of the call's arguments giving torch's node name (in its error message)."""

# ----------------------------------------------------------------------------- kernels


def _index(shape, strides, offset, size):
    dtype = jnp.int32 if size < 2**31 else jnp.int64
    idx = jnp.asarray(offset, dtype)
    for d, (n, s) in enumerate(zip(shape, strides)):
        idx = idx + lax.broadcasted_iota(dtype, tuple(shape), d) * jnp.asarray(s, dtype) if n != 1 else idx
    return jnp.broadcast_to(idx, tuple(shape))


def _start(offset, size):
    return jnp.asarray(offset, jnp.int32 if size < 2**31 else jnp.int64)


def _run(shape, strides) -> bool:
    """Whether the geometry is one contiguous run of the flat storage."""
    return is_contiguous(shape, strides)


def read(flat, offset, shape, strides):
    """The view ``(shape, strides, offset)`` of a flat storage array."""
    n = int(np.prod(shape, dtype=np.int64))
    if n == 0:
        return jnp.zeros(shape, flat.dtype)
    if _run(shape, strides):
        return lax.dynamic_slice(
            flat, (jnp.asarray(offset, jnp.int32 if flat.size < 2**31 else jnp.int64),), (n,)
        ).reshape(shape)
    return flat.at[_index(shape, strides, offset, flat.size)].get(mode="promise_in_bounds")


def write(flat, values, offset, shape, strides):
    """The flat storage with the view ``(shape, strides, offset)`` replaced by ``values``."""
    n = int(np.prod(shape, dtype=np.int64))
    if n == 0:
        return flat
    values = jnp.broadcast_to(values, tuple(shape)).astype(flat.dtype)
    if _run(shape, strides):
        return lax.dynamic_update_slice(flat, values.reshape(-1), (_start(offset, flat.size),))
    idx = _index(shape, strides, offset, flat.size)
    return flat.at[idx].set(values, mode="promise_in_bounds", unique_indices=True)


def _image(base, storage, base_offset, base_shape, base_strides):
    """The flat storage as ``base`` (a view of it) says it is now."""
    if storage is None:
        return base.reshape(-1)
    return write(storage.reshape(-1), base, base_offset, base_shape, base_strides)


_GEOM = ("base_shape", "base_strides", "shape", "strides")


@defop(static=_GEOM, method=False, linear=True)
def _view_read(base, storage, base_offset, offset, *, base_shape, base_strides, shape, strides):
    """The view ``(shape, strides, offset)`` of the storage that ``base`` views: a differentiable
    read (``storage`` and ``base_offset`` are None when ``base`` covers it contiguously)."""
    return read(_image(base, storage, base_offset, base_shape, base_strides), offset, shape, strides)


@defop(static=_GEOM, method=False, linear=True)
def _view_write(base, src, storage, base_offset, offset, *, base_shape, base_strides, shape, strides):
    """``base`` after writing ``src`` into its storage at ``(shape, strides, offset)``: torch's
    CopySlices, differentiable in both."""
    image = write(_image(base, storage, base_offset, base_shape, base_strides), src, offset, shape, strides)
    if storage is None:  # base_offset is None: the base is the whole storage
        return image.reshape(base.shape)
    return read(image, base_offset, base_shape, base_strides)


@functools.lru_cache(maxsize=4096)
def storage_reader(shape, strides):
    """The jitted ``read(storage, offset)`` of the view ``(shape, strides)`` from a storage array of
    any shape (eager views re-derived after a write); one function per geometry, so eager fusion
    can record it (``fjax._lazy.then``)."""
    return jax.jit(lambda storage, offset: read(storage.reshape(-1), offset, shape, strides))


@functools.lru_cache(maxsize=4096)
def storage_writer(shape, strides):
    """The jitted ``write(storage, values, offset)`` into a storage array of any shape, keeping its
    shape; one function per geometry, as ``storage_reader``."""
    return jax.jit(
        lambda storage, values, offset: write(storage.reshape(-1), values, offset, shape, strides).reshape(
            storage.shape
        )
    )


# ----------------------------------------------------------------------------- view ops that
# exist only as views


def _select_padded(input, dim, index, *, n, size, how):
    return read_padded(input, _wrap("select", dim, input.ndim), how, n, size)


def _select_dims(statics, padded, shapes, n, size):
    """``select`` of a tensor padded along its sequence dim: along another dim the padded dims pass
    through (moved down past it); along a padded dim it reads position ``index`` of the bucket
    (``n + index`` for a negative one), one kernel per bucket."""
    if set(padded) != {"input"}:
        return None
    axes, nd = padded["input"], len(shapes["input"][0])
    dim, index = statics.get("dim"), statics.get("index")
    if type(dim) is not int or type(index) is not int or not -nd <= dim < nd:
        return None
    d = dim % nd
    out = tuple(a - (a > d) for a in axes if a != d)
    if d not in axes:
        return Plan(out)
    how = on_padded(index, n)
    return None if how is None else Plan(out, kernel=bind(_select_padded, how=how))


@defop(static=("dim", "index"), linear=True, rows=Rows(lambda statics: (), dims=_select_dims))
def select(input, dim, index):
    """The slice at ``index`` along ``dim``, with that dim removed: ``x.select(0, i)`` is ``x[i]`` and
    ``x.select(1, i)`` is ``x[:, i]``. A negative index counts from the end; the result shares storage.

    Example::

        >>> x = fjax.tensor([[1, 2], [3, 4]])
        >>> x.select(1, 0)
        tensor([1, 3], dtype=fjax.int64)
        >>> x.select(0, -1)
        tensor([3, 4], dtype=fjax.int64)
    """
    d = _wrap("select", dim, input.ndim)
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select: index {index} is out of range for dimension {dim} with size {n}")
    return lax.index_in_dim(input, index % n, axis=d, keepdims=False)


@defop(linear=True)
def view_as(input, other):
    """``input.view(other.size())``: ``input``'s elements with ``other``'s shape, sharing storage.

    Example::

        >>> fjax.arange(6).view_as(fjax.zeros(2, 3))
        tensor([[0, 1, 2],
                [3, 4, 5]], dtype=fjax.int64)
    """
    return jnp.reshape(input, other.shape)


@defop(static=("dimension", "size", "step"), linear=True)
def unfold(input, dimension, size, step):
    """``Tensor.unfold(dimension, size, step)``: every window of ``size`` consecutive elements along
    ``dimension``, ``step`` apart, as a view. ``dimension`` then counts the windows, and a new last dim of
    length ``size`` holds each one.

    Example::

        >>> x = fjax.arange(6)
        >>> x.unfold(0, 2, 2)
        tensor([[0, 1],
                [2, 3],
                [4, 5]], dtype=fjax.int64)
        >>> x.unfold(0, 3, 2)
        tensor([[0, 1, 2],
                [2, 3, 4]], dtype=fjax.int64)
    """
    if input.ndim == 0:
        if size > 1:
            raise ValueError(f"unfold: size {size} exceeds the size 1 of a 0-d tensor")
        return input.reshape(1)
    d = _wrap("unfold", dimension, input.ndim)
    n = input.shape[d]
    if size > n or step <= 0 or size < 0:
        raise ValueError(f"unfold: size {size} and step {step} do not fit dimension {dimension} of size {n}")
    count = (n - size) // step + 1
    starts = np.arange(count) * step
    windows = jnp.stack([lax.slice_in_dim(input, s, s + size, axis=d) for s in starts.tolist()], axis=d)
    return jnp.moveaxis(windows, d + 1, -1)


_SECTIONS = {"indices_or_sections": "sections", "indices": "sections", "tensor_indices_or_sections": "sections"}
"""tensor_split's other names for ``sections``: OneFlow's and torch's other overloads'."""


@defop(static=("sections", "dim"), linear=True, keyword_aliases=_SECTIONS)
def tensor_split(input, sections, dim=0):
    """Split along ``dim`` into exactly ``sections`` pieces when it is an int (the first
    ``n % sections`` pieces get one more element), or cut before each listed index when it is a list, as
    numpy's array_split. Returns a tuple of views.

    Example::

        >>> x = fjax.arange(7)
        >>> x.tensor_split(3)
        (tensor([0, 1, 2], dtype=fjax.int64), tensor([3, 4], dtype=fjax.int64), tensor([5, 6], dtype=fjax.int64))
        >>> x.tensor_split([1, 4])
        (tensor([0], dtype=fjax.int64), tensor([1, 2, 3], dtype=fjax.int64), tensor([4, 5, 6], dtype=fjax.int64))
    """
    d = _wrap("tensor_split", dim, input.ndim)
    n = input.shape[d]
    if isinstance(sections, int):
        if sections <= 0:
            raise ValueError(f"tensor_split: number of sections must be positive, got {sections}")
        q, r = divmod(n, sections)
        bounds = np.cumsum([0] + [q + (i < r) for i in range(sections)]).tolist()
    else:
        bounds = [0] + [min(max(int(i) + (n if i < 0 else 0), 0), n) for i in sections] + [n]
        bounds = [max(b, a) for a, b in zip([0] + bounds[:-1], bounds)]
    return _split_at(input, [b - a for a, b in zip(bounds[:-1], bounds[1:])], d)


# -- the *_copy variants of view ops: the same values, never sharing storage ----------------------


@defop(static=("size", "implicit"), linear=True, method=False)
def expand_copy(self, size, *, implicit=False):
    """``input.expand(size)`` as a new tensor.

    Example::

        >>> fjax.expand_copy(fjax.tensor([1, 2]), (2, 2))
        tensor([[1, 2],
                [1, 2]], dtype=fjax.int64)
    """
    from .shape import expand

    return expand(self, tuple(size))


@defop(static=("dims",), linear=True, method=False)
def permute_copy(self, dims):
    """``input.permute(dims)`` as a new tensor.

    Example::

        >>> fjax.permute_copy(fjax.zeros(2, 3), (1, 0)).shape
        fjax.Size([3, 2])
    """
    from .shape import permute

    return permute(self, tuple(dims))


@defop(static=("offset", "dim1", "dim2"), linear=True, method=False)
def diagonal_copy(self, offset=0, dim1=0, dim2=1):
    """``input.diagonal(offset, dim1, dim2)`` as a new tensor.

    Example::

        >>> fjax.diagonal_copy(fjax.eye(2))
        tensor([1., 1.], dtype=fjax.float32)
    """
    from .linalg import diagonal

    return diagonal(self, offset, dim1, dim2)


@defop(linear=True, method=False)
def alias_copy(self):
    """A copy of ``input`` (torch's ``alias`` is a view of the whole tensor).

    Example::

        >>> fjax.alias_copy(fjax.tensor([1, 2]))
        tensor([1, 2], dtype=fjax.int64)
    """
    return jnp.array(self, copy=True)


@defop(static=("dim", "start", "length"), linear=True)
def narrow_copy(input, dim, start, length):
    """``input.narrow(dim, start, length)`` as a new tensor.

    Example::

        >>> fjax.narrow_copy(fjax.arange(5), 0, 1, 3)
        tensor([1, 2, 3], dtype=fjax.int64)
    """
    from .shape import narrow

    return narrow(input, dim, start, length)


@defop(static=("split_sizes", "dim"), linear=True, method=False)
def split_with_sizes_copy(self, split_sizes, dim=0):
    """``input.split_with_sizes(split_sizes, dim)`` as new tensors.

    Example::

        >>> fjax.split_with_sizes_copy(fjax.arange(3), [1, 2])
        (tensor([0], dtype=fjax.int64), tensor([1, 2], dtype=fjax.int64))
    """
    from .shape import split

    return split(self, list(split_sizes), dim)


@defop(static=("dim",), linear=True, method=False)
def unbind_copy(self, dim=0):
    """``input.unbind(dim)`` as new tensors.

    Example::

        >>> fjax.unbind_copy(fjax.tensor([[1, 2], [3, 4]]))
        (tensor([1, 2], dtype=fjax.int64), tensor([3, 4], dtype=fjax.int64))
    """
    from .shape import unbind

    return unbind(self, dim)


@defop(static=("dimension", "size", "step"), linear=True, method=False)
def unfold_copy(self, dimension, size, step):
    """``input.unfold(dimension, size, step)`` as a new tensor.

    Example::

        >>> fjax.unfold_copy(fjax.arange(4), 0, 2, 2)
        tensor([[0, 1],
                [2, 3]], dtype=fjax.int64)
    """
    return unfold(self, dimension, size, step)


@defop(static=("dim",), linear=True, method=False)
def squeeze_copy(self, dim=None):
    """``input.squeeze(dim)`` as a new tensor.

    Example::

        >>> fjax.squeeze_copy(fjax.zeros(1, 2, 1)).shape
        fjax.Size([2])
    """
    from .shape import squeeze

    return squeeze(self, dim)


@defop(static=("dim",), linear=True, method=False)
def unsqueeze_copy(self, dim):
    """``input.unsqueeze(dim)`` as a new tensor.

    Example::

        >>> fjax.unsqueeze_copy(fjax.zeros(2), 0).shape
        fjax.Size([1, 2])
    """
    from .shape import unsqueeze

    return unsqueeze(self, dim)


@defop(static=("dim0", "dim1"), linear=True, method=False)
def transpose_copy(self, dim0, dim1):
    """``input.transpose(dim0, dim1)`` as a new tensor.

    Example::

        >>> fjax.transpose_copy(fjax.zeros(2, 3), 0, 1).shape
        fjax.Size([3, 2])
    """
    from .shape import transpose

    return transpose(self, dim0, dim1)


@defop(linear=True, method=False)
def t_copy(self):
    """``input.t()`` as a new tensor.

    Example::

        >>> fjax.t_copy(fjax.zeros(2, 3)).shape
        fjax.Size([3, 2])
    """
    from .shape import t

    return t(self)


@defop(static=("size",), linear=True, method=False)
def view_copy(self, size):
    """``input.view(size)`` as a new tensor.

    Example::

        >>> fjax.view_copy(fjax.arange(4), (2, 2))
        tensor([[0, 1],
                [2, 3]], dtype=fjax.int64)
    """
    from .shape import view

    return view(self, tuple(size) if isinstance(size, (tuple, list)) else (size,))


def _strided_index(op, shape, size, stride, storage_offset):
    """Flat indices into a contiguous array of ``shape`` that torch's ``as_strided(size, stride,
    storage_offset)`` reads, checked against its bounds."""
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    offset = 0 if storage_offset is None else int(storage_offset)
    if len(size) != len(stride):
        raise ValueError(f"{op}: size {list(size)} and stride {list(stride)} differ in length")
    numel = int(np.prod(shape, dtype=np.int64))
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if 0 not in size and (offset < 0 or min(stride, default=0) < 0 or last >= numel):
        raise ValueError(
            f"{op}: size {list(size)}, stride {list(stride)} and offset {offset} reach outside an input of "
            f"{numel} elements (shape {tuple(shape)})"
        )
    index = np.full(size, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        index += (np.arange(n) * s).reshape((n,) + (1,) * (len(size) - d - 1))
    return index


@defop(static=("size", "stride", "storage_offset"), linear=True, method=False)
def as_strided_copy(self, size, stride, storage_offset=None):
    """The elements torch's ``input.as_strided(size, stride, storage_offset)`` views, as a new tensor
    (``input`` read as contiguous, in row-major order).

    Example::

        >>> fjax.as_strided_copy(fjax.arange(6), (2, 2), (1, 2))
        tensor([[0, 2],
                [1, 3]], dtype=fjax.int64)
    """
    return self.reshape(-1)[_strided_index("as_strided_copy", self.shape, size, stride, storage_offset)]


@defop(static=("size", "stride", "storage_offset"))
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` (read as contiguous) with ``src`` written where ``input.as_strided(size,
    stride, storage_offset)`` would view.

    Example::

        >>> fjax.as_strided_scatter(fjax.zeros(4), fjax.ones(2), (2,), (2,))
        tensor([1., 0., 1., 0.], dtype=fjax.float32)
    """
    index = _strided_index("as_strided_scatter", input.shape, size, stride, storage_offset)
    if tuple(src.shape) != index.shape:
        raise ValueError(f"as_strided_scatter: src has shape {tuple(src.shape)}, expected {index.shape}")
    return input.reshape(-1).at[index.reshape(-1)].set(src.reshape(-1).astype(input.dtype)).reshape(input.shape)
