"""Movement ops: reshape, permute, concatenate, split, pad ... with torch's signatures.

Shapes, dims and sizes are static. All of these ops are linear in their tensor inputs.
"""

from __future__ import annotations

import warnings

import jax.lax as lax
import jax.numpy as jnp
import numpy as np

from . import _checks
from ._promote import result_type
from ._registry import Plan, Rows, along, bind, defop


def _wrap(name: str, d: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= d < n:
        raise _checks.IndexOpError(f"{name}: dim {d} is out of range for a tensor of {ndim} dims")
    return d % n


def _ints(name: str, seq) -> tuple:
    if isinstance(seq, (int, np.integer)):
        return (int(seq),)
    try:
        return tuple(int(s) for s in seq)
    except TypeError:
        raise TypeError(f"{name}: expected an int or a sequence of ints, got {seq!r}") from None


# ----------------------------------------------------------------------------- reshaping


def _keeps_batch(statics, tensors) -> bool:
    """``Rows.when`` of reshape and view: the new shape starts with the batch size itself
    (``x.view(x.size(0), -1)``, ``x.reshape(B, T, heads, d)``)."""
    shape, old = statics["shape"], tensors["input"][0]
    try:
        shape = _ints("reshape", shape)
    except Exception:
        return False
    return bool(shape) and bool(old) and shape[0] == old[0] and -1 not in shape[:1]


def _bucket_shape(statics, n, size) -> dict:
    return {"shape": (size, *_ints("reshape", statics["shape"])[1:])}


def _reshape_dims(statics, padded, shapes, n, size):
    """A padded dim that stays its own dim (the elements before it and its length unchanged)
    is the result's; the shape is rewritten for the bucket."""
    if set(padded) != {"input"}:
        return None
    old = shapes["input"][0]
    try:
        shape = list(_ints("reshape", statics["shape"]))
    except Exception:
        return None
    total = int(np.prod(old, dtype=np.int64))
    if shape.count(-1) == 1:
        rest = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
        if rest == 0 or total % rest:
            return None
        shape[shape.index(-1)] = total // rest
    if int(np.prod(shape, dtype=np.int64)) != total:
        return None
    out = []
    for d in padded["input"]:
        before = int(np.prod(old[:d], dtype=np.int64))
        j = next(
            (j for j in range(len(shape)) if int(np.prod(shape[:j], dtype=np.int64)) == before and shape[j] == n), None
        )
        after = int(np.prod(old[d + 1 :], dtype=np.int64))
        if j is None or int(np.prod(shape[j + 1 :], dtype=np.int64)) != after:
            return None
        out.append(j)
    for j in out:
        shape[j] = size
    return Plan(tuple(sorted(out)), static={"shape": tuple(shape)})


_RESHAPE_ROWS = Rows(("input",), when=_keeps_batch, resize=_bucket_shape, dims=_reshape_dims)


@defop(static=("shape",), linear=True, rows=_RESHAPE_ROWS)
def reshape(input, shape):
    """The same elements, in row-major order, with a new ``shape``; one entry may be -1, inferred from
    the element count, which must not change. As in torch, the result shares storage with ``input`` when the
    layout allows it and is a copy otherwise.

    Example::

        >>> x = fjax.arange(6)
        >>> x.reshape(2, 3)
        tensor([[0, 1, 2],
                [3, 4, 5]], dtype=fjax.int64)
        >>> fjax.reshape(x, (3, -1)).shape
        fjax.Size([3, 2])
    """
    shape = _ints("reshape", shape)
    try:
        return jnp.reshape(input, shape)
    except (TypeError, ValueError):
        raise ValueError(f"reshape: shape {list(shape)} is invalid for input of shape {input.shape}") from None


@defop(static=("shape",), linear=True, rows=_RESHAPE_ROWS)
def view(input, shape):
    """``Tensor.view(*shape)``: the same elements with a new ``shape`` (one entry may be -1), sharing
    storage with ``input``, so a write through one shows in the other. Viewing as another dtype is not
    supported.

    Example::

        >>> x = fjax.arange(6)
        >>> x.view(3, 2)
        tensor([[0, 1],
                [2, 3],
                [4, 5]], dtype=fjax.int64)
        >>> v = x.view(-1, 3)
        >>> v[0, 0] = 10
        >>> x
        tensor([10,  1,  2,  3,  4,  5], dtype=fjax.int64)
    """
    if not isinstance(shape, (tuple, list, int)):
        raise NotImplementedError(f"view: viewing as dtype {shape!r} is not supported")
    return reshape(input, shape)


def _permute_keeps_first(statics, tensors) -> bool:
    try:
        return _wrap("", _ints("permute", statics["dims"])[0], len(tensors["input"][0])) == 0
    except Exception:
        return False


@defop(static=("start_dim", "end_dim"), linear=True, rows=along("start_dim"))
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim`` through ``end_dim`` (both included; negative dims count from the end)
    into one. A 0-d input becomes a 1-D tensor of one element.

    Example::

        >>> x = fjax.zeros(2, 3, 4)
        >>> x.flatten().shape
        fjax.Size([24])
        >>> x.flatten(1).shape
        fjax.Size([2, 12])
        >>> fjax.flatten(x, 0, 1).shape
        fjax.Size([6, 4])
    """
    if input.ndim == 0:
        return input.reshape(1)
    s, e = _wrap("flatten", start_dim, input.ndim), _wrap("flatten", end_dim, input.ndim)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    sh = input.shape
    return input.reshape(sh[:s] + (int(np.prod(sh[s : e + 1])),) + sh[e + 1 :])


@defop(static=("dim", "sizes"), linear=True)
def unflatten(input, dim, sizes):
    """Split dim ``dim`` into several dims of the given ``sizes``, whose product must be that dim's
    size (one entry may be -1). The inverse of ``flatten``.

    Example::

        >>> x = fjax.zeros(2, 12)
        >>> x.unflatten(1, (3, 4)).shape
        fjax.Size([2, 3, 4])
        >>> x.unflatten(-1, (-1, 2)).shape
        fjax.Size([2, 6, 2])
    """
    d = _wrap("unflatten", dim, input.ndim)
    sizes = _ints("unflatten", sizes)
    sub = jnp.reshape(jnp.zeros((input.shape[d],), np.bool_), sizes).shape if sizes else None
    if sub is None:
        raise ValueError("unflatten: sizes must be non-empty")
    return input.reshape(input.shape[:d] + sub + input.shape[d + 1 :])


def _permute_dims(statics, padded, shapes, n, size):
    """A padded dim goes where the permutation puts it."""
    ndim = len(shapes["input"][0])
    try:
        axes = [_wrap("permute", d, ndim) for d in _ints("permute", statics["dims"])]
    except Exception:
        return None
    if sorted(axes) != list(range(ndim)):
        return None
    return Plan(tuple(sorted(axes.index(d) for d in padded.get("input", ()))))


@defop(static=("dims",), linear=True, rows=Rows(("input",), when=_permute_keeps_first, dims=_permute_dims))
def permute(input, dims):
    """Reorder the dims: dim ``i`` of the result is dim ``dims[i]`` of ``input``. ``dims`` names every
    dim exactly once (negative dims count from the end).

    Example::

        >>> x = fjax.zeros(2, 3, 4)
        >>> x.permute(2, 0, 1).shape
        fjax.Size([4, 2, 3])
        >>> fjax.permute(x, (1, 2, 0)).shape
        fjax.Size([3, 4, 2])
    """
    dims = _ints("permute", dims)
    axes = tuple(_wrap("permute", d, input.ndim) for d in dims)
    if sorted(axes) != list(range(input.ndim)):
        raise ValueError(f"permute: dims {list(dims)} is not a permutation of {input.ndim} dims")
    return jnp.transpose(input, axes)


def _transpose_dims(statics, padded, shapes, n, size):
    ndim = len(shapes["input"][0])
    try:
        a, b = _wrap("transpose", statics["dim0"], ndim), _wrap("transpose", statics["dim1"], ndim)
    except Exception:
        return None
    swap = {a: b, b: a}
    return Plan(tuple(sorted(swap.get(d, d) for d in padded.get("input", ()))))


@defop(
    static=("dim0", "dim1"),
    linear=True,
    aliases=("swapdims",),
    rows=Rows(along("dim0", "dim1").params, when=along("dim0", "dim1").when, dims=_transpose_dims),
)
def transpose(input, dim0, dim1):
    """Swap dims ``dim0`` and ``dim1`` (negative dims count from the end); the other dims stay where
    they are. The result shares storage with ``input``.

    Example::

        >>> x = fjax.tensor([[1, 2, 3], [4, 5, 6]])
        >>> x.transpose(0, 1)
        tensor([[1, 4],
                [2, 5],
                [3, 6]], dtype=fjax.int64)
        >>> fjax.zeros(2, 3, 4).transpose(0, -1).shape
        fjax.Size([4, 3, 2])
    """
    a, b = _wrap("transpose", dim0, input.ndim), _wrap("transpose", dim1, input.ndim)
    return jnp.swapaxes(input, a, b) if input.ndim else input


@defop(static=("axis0", "axis1"), linear=True)
def swapaxes(input, axis0, axis1):
    """Alias of ``transpose`` (numpy's name): swap dims ``axis0`` and ``axis1``.

    Example::

        >>> fjax.tensor([[1, 2, 3]]).swapaxes(0, 1)
        tensor([[1],
                [2],
                [3]], dtype=fjax.int64)
    """
    return transpose(input, axis0, axis1)


@defop(linear=True)
def t(input):
    """Transpose a matrix (swap its two dims). 0-d and 1-D tensors come back as they are; more than two
    dims is an error.

    Example::

        >>> fjax.tensor([[1, 2, 3], [4, 5, 6]]).t()
        tensor([[1, 4],
                [2, 5],
                [3, 6]], dtype=fjax.int64)
        >>> fjax.tensor([1, 2, 3]).t()
        tensor([1, 2, 3], dtype=fjax.int64)
    """
    if input.ndim > 2:
        raise ValueError(f"t: expected a tensor of at most 2 dims, got shape {input.shape}")
    return input.T


@defop(static=("source", "destination"), linear=True, aliases=("moveaxis",))
def movedim(input, source, destination):
    """Move dim(s) ``source`` to position(s) ``destination`` (ints, or tuples of equal length); the
    other dims keep their relative order.

    Example::

        >>> x = fjax.zeros(2, 3, 4)
        >>> x.movedim(0, -1).shape
        fjax.Size([3, 4, 2])
        >>> x.movedim((0, 1), (2, 0)).shape
        fjax.Size([3, 4, 2])
    """
    src, dst = _ints("movedim", source), _ints("movedim", destination)
    if len(src) != len(dst):
        raise ValueError(f"movedim: source {src} and destination {dst} differ in length")
    n = input.ndim
    return (
        jnp.moveaxis(input, [_wrap("movedim", d, n) for d in src], [_wrap("movedim", d, n) for d in dst])
        if n
        else input
    )


def _squeeze_dims(statics, padded, shapes, n, size):
    """Dims of size 1 go, and padded dims past them move down; a padded dim of real length 1 would
    go too: not taken (its bucket is longer)."""
    shape = shapes["input"][0]
    dim = statics.get("dim")
    try:
        named = range(len(shape)) if dim is None else {_wrap("squeeze", d, len(shape)) for d in _ints("squeeze", dim)}
    except Exception:
        return None
    own = padded.get("input", ())
    if n == 1 and any(d in named for d in own):
        return None
    gone = [d for d in named if shape[d] == 1]
    return Plan(tuple(d - sum(g < d for g in gone) for d in own))


@defop(static=("dim",), linear=True, rows=along(none=True, padded=_squeeze_dims))
def squeeze(input, dim=None):
    """Remove dims of size 1: all of them when ``dim`` is None, otherwise those listed in ``dim`` (an int
    or a tuple). As in torch, a listed dim whose size is not 1 is kept, without an error.

    Example::

        >>> x = fjax.zeros(2, 1, 3, 1)
        >>> x.squeeze().shape
        fjax.Size([2, 3])
        >>> x.squeeze(1).shape
        fjax.Size([2, 3, 1])
        >>> x.squeeze(0).shape
        fjax.Size([2, 1, 3, 1])
        >>> x.squeeze((1, 3)).shape
        fjax.Size([2, 3])
    """
    if dim is None:
        return jnp.squeeze(input)
    axes = {_wrap("squeeze", d, input.ndim) for d in _ints("squeeze", dim)}
    return jnp.squeeze(input, tuple(a for a in axes if input.ndim and input.shape[a] == 1))


def _unsqueeze_dims(statics, padded, shapes, n, size):
    """Padded dims at or past the new dim move up one."""
    try:
        new = _wrap("unsqueeze", statics["dim"], len(shapes["input"][0]) + 1)
    except Exception:
        return None
    return Plan(tuple(d + (d >= new) for d in padded.get("input", ())))


@defop(static=("dim",), linear=True, rows=along(extra=1, padded=_unsqueeze_dims))
def unsqueeze(input, dim):
    """Insert a dim of size 1 at position ``dim``, which ranges over ``-input.dim() - 1 ..
    input.dim()``: -1 appends a trailing dim.

    Example::

        >>> x = fjax.tensor([1, 2, 3])
        >>> x.unsqueeze(0)
        tensor([[1, 2, 3]], dtype=fjax.int64)
        >>> x.unsqueeze(-1).shape
        fjax.Size([3, 1])
    """
    return jnp.expand_dims(input, _wrap("unsqueeze", dim, input.ndim + 1))


# ----------------------------------------------------------------------------- broadcasting


def _expand_shape(name, shape, size):
    size = _ints(name, size)
    lead = len(size) - len(shape)
    if lead < 0:
        raise ValueError(f"{name}: cannot expand shape {shape} to fewer dims {list(size)}")
    out = []
    for i, s in enumerate(size):
        if s == -1:
            if i < lead:
                raise ValueError(f"{name}: -1 is not allowed for a new leading dim ({list(size)})")
            s = shape[i - lead]
        elif i >= lead and shape[i - lead] not in (1, s):
            raise ValueError(f"{name}: cannot expand shape {shape} to {list(size)}")
        out.append(s)
    return tuple(out)


@defop(static=("size",), linear=True)
def expand(input, size):
    """``Tensor.expand(*sizes)``: broadcast size-1 dims to a larger size, and add leading dims, without
    copying (the result shares storage). -1 keeps a dim's size; only size-1 dims can grow.

    Example::

        >>> x = fjax.tensor([[1], [2]])
        >>> x.expand(2, 3)
        tensor([[1, 1, 1],
                [2, 2, 2]], dtype=fjax.int64)
        >>> x.expand(4, -1, 2).shape
        fjax.Size([4, 2, 2])
    """
    return jnp.broadcast_to(input, _expand_shape("expand", input.shape, size))


@defop(linear=True)
def expand_as(input, other):
    """``input.expand(other.size())``: broadcast ``input`` to ``other``'s shape.

    Example::

        >>> fjax.tensor([1, 2]).expand_as(fjax.zeros(3, 2))
        tensor([[1, 2],
                [1, 2],
                [1, 2]], dtype=fjax.int64)
    """
    return jnp.broadcast_to(input, _expand_shape("expand_as", input.shape, other.shape))


@defop(static=("size",), linear=True)
def broadcast_to(input, size):
    """Broadcast ``input`` to the shape ``size`` under torch's broadcasting rules, as ``expand``
    (-1 keeps a dim's size).

    Example::

        >>> fjax.broadcast_to(fjax.tensor([1, 2, 3]), (2, 3))
        tensor([[1, 2, 3],
                [1, 2, 3]], dtype=fjax.int64)
    """
    return jnp.broadcast_to(input, _expand_shape("broadcast_to", input.shape, size))


@defop(static=("repeats",), linear=True)
def repeat(input, repeats):
    """``Tensor.repeat(*repeats)``: tile the whole tensor, ``repeats[i]`` copies along dim ``i``. Extra
    leading repeats add new dims; fewer repeats than dims is an error (``tile`` pads them with 1s instead).
    To repeat each element in place, see ``repeat_interleave``.

    Example::

        >>> x = fjax.tensor([1, 2])
        >>> x.repeat(2)
        tensor([1, 2, 1, 2], dtype=fjax.int64)
        >>> x.repeat(2, 2)
        tensor([[1, 2, 1, 2],
                [1, 2, 1, 2]], dtype=fjax.int64)
        >>> x.repeat(3, 1, 1).shape
        fjax.Size([3, 1, 2])
    """
    reps = _ints("repeat", repeats)
    if len(reps) < input.ndim:
        raise ValueError(f"repeat: {len(reps)} repeats is fewer than the {input.ndim} dims")
    return jnp.tile(input, reps)


@defop(static=("dims",), linear=True)
def tile(input, dims):
    """Tile ``input``: ``dims[i]`` copies along dim ``i``. Unlike ``Tensor.repeat``, a ``dims`` shorter
    than the number of dims is padded with leading 1s; a longer one adds leading dims.

    Example::

        >>> x = fjax.tensor([[1, 2]])
        >>> x.tile((2,))
        tensor([[1, 2, 1, 2]], dtype=fjax.int64)
        >>> fjax.tile(x, (2, 1))
        tensor([[1, 2],
                [1, 2]], dtype=fjax.int64)
    """
    return jnp.tile(input, _ints("tile", dims))


@defop(static=("repeats", "dim", "output_size"), linear=True)
def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times in place (``[1, 2]`` becomes ``[1, 1, 2, 2]``)
    along ``dim``, or over the flattened input when ``dim`` is None. ``repeats`` is an int or a sequence
    (or 1-dim integer tensor) of per-element counts along that dim.

    Example::

        >>> x = fjax.tensor([[1, 2], [3, 4]])
        >>> x.repeat_interleave(2)
        tensor([1, 1, 2, 2, 3, 3, 4, 4], dtype=fjax.int64)
        >>> x.repeat_interleave(2, dim=0)
        tensor([[1, 2],
                [1, 2],
                [3, 4],
                [3, 4]], dtype=fjax.int64)
        >>> x.repeat_interleave(fjax.tensor([1, 2]), dim=0)
        tensor([[1, 2],
                [3, 4],
                [3, 4]], dtype=fjax.int64)
    """
    if dim is None:
        input, dim = input.reshape(-1), 0
    axis = _wrap("repeat_interleave", dim, input.ndim)
    if isinstance(repeats, (int, np.integer)):
        return jnp.repeat(input, repeats, axis=axis)
    counts = np.asarray(repeats, dtype=np.int64).reshape(-1)
    if counts.size == 1:
        counts = np.repeat(counts, input.shape[axis])
    if counts.size != input.shape[axis] or (counts < 0).any():
        raise ValueError(
            f"repeat_interleave: repeats must be non-negative and have one count per element along dim {dim} "
            f"(size {input.shape[axis]}), got {counts.tolist()}"
        )
    return jnp.repeat(input, counts, axis=axis, total_repeat_length=int(counts.sum()))


# ----------------------------------------------------------------------------- joining


def _common(name, tensors):
    if not tensors:
        raise ValueError(f"{name}: expected a non-empty list of tensors")
    dt = result_type(*[jnp.zeros((1,), t.dtype) for t in tensors])
    return [jnp.asarray(t, dt) for t in tensors]


def _cat_dim(statics, shapes):
    """``Rows.grows`` of cat: the dim it concatenates along (dim 0 too: a sequence-first cache)."""
    first = shapes.get("tensors[0]")
    if first is None or len(shapes) != 2 or "tensors[1]" not in shapes:
        return None
    nd, d = len(first[0]), statics.get("dim", 0)
    if type(d) is not int or not -nd <= d < nd:
        return None
    return d % nd


def _cat_grown(tensors, dim=0, *, n, size):
    """``cat((x, y), dim)`` into a buffer of ``size`` along ``dim``: ``x`` (real length ``n``)
    padded with zeros, ``y`` written at ``n``."""
    x, y = _common("cat", tensors)
    d = _wrap("cat", dim, x.ndim)
    if x.shape[d] < size:
        x = jnp.pad(x, [(0, size - x.shape[d]) if k == d else (0, 0) for k in range(x.ndim)])
    start = [jnp.zeros((), jnp.int32)] * x.ndim
    start[d] = jnp.asarray(n, jnp.int32)
    return lax.dynamic_update_slice(x, y.astype(x.dtype), start)


def _cat_alike(statics, padded, shapes):
    """``cat`` along a dim no tensor is padded along, every tensor padded alike: the result is."""
    tensors = [p for p in shapes if p.startswith("tensors[")]
    if not padded or set(padded) != set(tensors):
        return None
    axes, nd, d = padded["tensors[0]"], len(shapes["tensors[0]"][0]), statics.get("dim", 0)
    if type(d) is not int or not -nd <= d < nd or d % nd in axes:
        return None
    if any(padded[p] != axes or len(shapes[p][0]) != nd for p in tensors):
        return None
    return Plan(axes)


def _cat_dims(statics, padded, shapes, n, size):
    """Along a padded dim (or a growing one, ``Rows.grows``): the first tensor takes the others,
    real ones, at its real length, in a buffer of the new length's bucket. Along another dim:
    tensors padded alike keep their padded dims (``_cat_alike``)."""
    alike = _cat_alike(statics, padded, shapes)
    if alike is not None:
        return alike
    d = _cat_dim(statics, shapes)
    if d is None:
        return None
    x, y = shapes["tensors[0]"][0], shapes["tensors[1]"][0]
    if set(padded) - {"tensors[0]"} or padded.get("tensors[0]", (d,)) != (d,):
        return None
    if x[:d] + x[d + 1 :] != y[:d] + y[d + 1 :] or shapes["tensors[0]"][1] != shapes["tensors[1]"][1]:
        return None
    return Plan((d,), kernel=_cat_grown, grow=y[d], n=x[d] if n is None else None)


@defop(
    static=("dim",),
    linear=True,
    keyword_aliases={"inputs": "tensors"},
    rows=Rows(("tensors",), when=along(params=("tensors",)).when, dims=_cat_dims, grows=_cat_dim),
)
def cat(tensors, dim=0):
    """Concatenate ``tensors`` along the existing dim ``dim``; their shapes must agree in every other dim.
    Mixed dtypes promote to a common one, and 1-D empty tensors are skipped, as in torch.

    Example::

        >>> a = fjax.tensor([[1, 2]])
        >>> fjax.cat([a, fjax.tensor([[3, 4]])])
        tensor([[1, 2],
                [3, 4]], dtype=fjax.int64)
        >>> fjax.cat([a, fjax.tensor([[0.5]])], dim=1)
        tensor([[1.0000, 2.0000, 0.5000]], dtype=fjax.float32)
    """
    ts = _common("cat", tensors)
    kept = [t for t in ts if t.shape != (0,)] or ts[:1]
    ref = kept[0]
    if ref.ndim == 0:
        raise ValueError("cat: zero-dimensional tensors cannot be concatenated")
    d = _wrap("cat", dim, ref.ndim)
    for t in kept:
        if t.ndim != ref.ndim or t.shape[:d] + t.shape[d + 1 :] != ref.shape[:d] + ref.shape[d + 1 :]:
            raise ValueError(f"cat: shapes {[t.shape for t in kept]} differ outside dim {dim}")
    return jnp.concatenate(kept, axis=d)


@defop(static=("dim",), linear=True, keyword_aliases={"inputs": "tensors"})
def concat(tensors, dim=0):
    """Alias of ``cat``: concatenate ``tensors`` along the existing dim ``dim``.

    Example::

        >>> fjax.concat([fjax.tensor([1, 2]), fjax.tensor([3])])
        tensor([1, 2, 3], dtype=fjax.int64)
    """
    return cat(tensors, dim)


@defop(static=("axis", "dim"), linear=True)
def concatenate(tensors, axis=0, *, dim=None):
    """Alias of ``cat`` with numpy's argument name: concatenate ``tensors`` along the existing dim ``axis``
    (``dim=`` is accepted as well).

    Example::

        >>> fjax.concatenate([fjax.tensor([[1], [2]]), fjax.tensor([[3], [4]])], axis=1)
        tensor([[1, 3],
                [2, 4]], dtype=fjax.int64)
    """
    return cat(tensors, axis if dim is None else dim)


@defop(static=("dim",), linear=True, keyword_aliases={"inputs": "tensors"}, rows=along(params=("tensors",), extra=1))
def stack(tensors, dim=0):
    """Join equal-shaped ``tensors`` along a new dim inserted at ``dim``, so the result has one more dim
    than each input; mixed dtypes promote.

    Example::

        >>> a, b = fjax.tensor([1, 2]), fjax.tensor([3, 4])
        >>> fjax.stack([a, b])
        tensor([[1, 2],
                [3, 4]], dtype=fjax.int64)
        >>> fjax.stack([a, b], dim=1)
        tensor([[1, 3],
                [2, 4]], dtype=fjax.int64)
    """
    ts = _common("stack", tensors)
    if len({t.shape for t in ts}) > 1:
        raise ValueError(f"stack: expected equal shapes, got {[t.shape for t in ts]}")
    return jnp.stack(ts, axis=_wrap("stack", dim, ts[0].ndim + 1))


@defop(linear=True)
def hstack(tensors):
    """Concatenate ``tensors`` horizontally: along dim 1, or along dim 0 when they are 1-D (0-d
    inputs become 1-D first).

    Example::

        >>> fjax.hstack([fjax.tensor([1, 2]), fjax.tensor([3])])
        tensor([1, 2, 3], dtype=fjax.int64)
        >>> fjax.hstack([fjax.tensor([[1], [2]]), fjax.tensor([[3], [4]])])
        tensor([[1, 3],
                [2, 4]], dtype=fjax.int64)
    """
    ts = [jnp.atleast_1d(t) for t in _common("hstack", tensors)]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


@defop(linear=True)
def vstack(tensors):
    """Concatenate ``tensors`` vertically along dim 0, after making 0-d and 1-D inputs rows of shape
    ``(1, n)``.

    Example::

        >>> fjax.vstack([fjax.tensor([1, 2]), fjax.tensor([3, 4])])
        tensor([[1, 2],
                [3, 4]], dtype=fjax.int64)
    """
    return cat([jnp.atleast_2d(t) for t in _common("vstack", tensors)], 0)


@defop(linear=True)
def dstack(tensors):
    """Concatenate ``tensors`` in depth along dim 2, after making each at least 3-D: ``(n,)`` becomes
    ``(1, n, 1)`` and ``(m, n)`` becomes ``(m, n, 1)``.

    Example::

        >>> fjax.dstack([fjax.tensor([1, 2]), fjax.tensor([3, 4])])
        tensor([[[1, 3],
                 [2, 4]]], dtype=fjax.int64)
    """
    return cat([jnp.atleast_3d(t) for t in _common("dstack", tensors)], 2)


# ----------------------------------------------------------------------------- splitting


def _split_at(input, sizes, d):
    offsets = np.cumsum((0,) + tuple(sizes)).tolist()
    return tuple(lax.slice_in_dim(input, a, b, axis=d) for a, b in zip(offsets[:-1], offsets[1:]))


def _split_dims(statics, padded, shapes, n, size):
    """Split along a dim that is not padded: each piece keeps the padded dims."""
    ndim = len(shapes["tensor"][0])
    try:
        d = _wrap("split", statics["dim"], ndim)
    except Exception:
        return None
    axes = padded.get("tensor", ())
    return None if d in axes or set(padded) != {"tensor"} else Plan(axes)


@defop(
    static=("split_size_or_sections", "dim"),
    linear=True,
    rows=Rows(("tensor",), when=along(params=("tensor",)).when, dims=_split_dims),
)
def split(tensor, split_size_or_sections, dim=0):
    """Split ``tensor`` along ``dim``: into chunks of ``split_size_or_sections`` elements (the last may be
    smaller) when it is an int, or into pieces of the listed sizes, which must add up to the dim's size.
    Returns a tuple of views.

    Example::

        >>> x = fjax.arange(5)
        >>> x.split(2)
        (tensor([0, 1], dtype=fjax.int64), tensor([2, 3], dtype=fjax.int64), tensor([4], dtype=fjax.int64))
        >>> fjax.split(x, [1, 4])
        (tensor([0], dtype=fjax.int64), tensor([1, 2, 3, 4], dtype=fjax.int64))
    """
    d = _wrap("split", dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size <= 0 and n:
            raise ValueError(f"split: split_size must be positive, got {size}")
        sizes = [min(size, n - i) for i in range(0, n, size)] if n else [0]
    else:
        sizes = _ints("split", split_size_or_sections)
        if sum(sizes) != n or min(sizes, default=0) < 0:
            raise ValueError(f"split: sections {list(sizes)} do not sum to dim size {n}")
    return _split_at(tensor, sizes, d)


@defop(static=("chunks", "dim"), linear=True, rows=along())
def chunk(input, chunks, dim=0):
    """Split along ``dim`` into at most ``chunks`` pieces of ``ceil(n / chunks)`` elements (the last may
    be smaller). As in torch, this can give fewer than ``chunks`` pieces; ``tensor_split`` gives exactly that
    many.

    Example::

        >>> fjax.arange(5).chunk(3)
        (tensor([0, 1], dtype=fjax.int64), tensor([2, 3], dtype=fjax.int64), tensor([4], dtype=fjax.int64))
        >>> len(fjax.arange(6).chunk(4))
        3
    """
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    d = _wrap("chunk", dim, input.ndim)
    n = input.shape[d]
    size = -(-n // chunks)
    if n == 0:
        return _split_at(input, [0] * chunks, d)
    return _split_at(input, [min(size, n - i) for i in range(0, n, size)], d)


@defop(static=("dim",), linear=True)
def unbind(input, dim=0):
    """Remove dim ``dim`` and return the tuple of all slices along it: ``x.unbind(0)`` is
    ``(x[0], x[1], ...)``.

    Example::

        >>> fjax.tensor([[1, 2], [3, 4]]).unbind(1)
        (tensor([1, 3], dtype=fjax.int64), tensor([2, 4], dtype=fjax.int64))
    """
    d = _wrap("unbind", dim, input.ndim)
    return tuple(jnp.take(input, i, axis=d) for i in range(input.shape[d]))


# ----------------------------------------------------------------------------- reading a padded dim
# A slice, an int or a narrow along a dim padded to a bucket (``fjax._dims.PaddedDims``, real
# length ``n``) reads the bucket array: a position or start counted from the end is ``n`` plus it
# (traced), so one kernel serves every length of the bucket.


def on_padded(e, n: int):
    """How the basic index entry ``e`` (an int, or ``("slice", start, stop, step)``) reads a dim of
    real length ``n`` padded to a bucket: ``("at", a, k)`` the position ``a + k*n`` (the dim goes);
    ``("fixed", a, k, length)`` ``length`` positions from ``a + k*n``; ``("grow", a, g)`` the
    positions from ``a`` to the end, ``n + g`` of them (the result's dim is padded: ``g`` 0 keeps
    it whole). None where that is not one form for every length (a step, a bound clamped at this
    length, an empty slice, a start from the end with a stop from the start)."""
    if type(e) is int:
        return ("at", e, 0) if 0 <= e < n else ("at", e, 1) if -n <= e < 0 else None
    if not (type(e) is tuple and len(e) == 4 and e[0] == "slice") or e[3] not in (None, 1):
        return None
    s, t = e[1], e[2]
    if s is None or 0 <= s <= n:
        start = (s or 0, 0)
    elif -n <= s < 0:
        start = (s, 1)
    else:
        return None
    if t is None or t >= n:
        stop = (0, 1)
    elif 0 <= t:
        stop = (t, 0)
    elif -n <= t:
        stop = (t, 1)
    else:
        return None
    if start[1] == stop[1]:
        length = stop[0] - start[0]
        return ("fixed", start[0], start[1], length) if length > 0 else None
    if start[1] == 1:
        return None
    g = stop[0] - start[0]
    return ("grow", start[0], g) if n + g > 0 else None


def read_padded(y, d: int, how, n, size: int):
    """``on_padded``'s read ``how`` of dim ``d`` of bucket array ``y`` (real length ``n``, traced);
    ``size``: the bucket of a ``"grow"`` read's real length."""
    if how[0] == "at":
        _, a, k = how
        return lax.dynamic_index_in_dim(y, n + a, d, keepdims=False) if k else lax.index_in_dim(y, a, d, keepdims=False)
    if how[0] == "fixed":
        _, a, k, length = how
        return lax.dynamic_slice_in_dim(y, n + a, length, d) if k else lax.slice_in_dim(y, a, a + length, axis=d)
    a = how[1]
    if a + size > y.shape[d]:
        y = jnp.pad(y, [(0, a + size - y.shape[d]) if i == d else (0, 0) for i in range(y.ndim)])
    return lax.slice_in_dim(y, a, a + size, axis=d)


def _narrow_padded(input, dim, start, length, *, n, size, how):
    return read_padded(input, _wrap("narrow", dim, input.ndim), how, n, size)


def _narrow_dims(statics, padded, shapes, n, size):
    """``narrow`` of a tensor padded along its sequence dim: along another dim the padded dims pass
    through; along a padded dim it reads ``length`` positions of the bucket from ``start`` (from
    ``n + start`` for a negative one), one kernel per bucket."""
    if set(padded) != {"input"}:
        return None
    axes, nd = padded["input"], len(shapes["input"][0])
    dim, start, length = statics.get("dim"), statics.get("start"), statics.get("length")
    if type(dim) is not int or type(start) is not int or type(length) is not int or not -nd <= dim < nd:
        return None
    d = dim % nd
    if d not in axes:
        return Plan(axes)
    if length == n and start in (0, -n):
        how = ("grow", 0, 0)
    elif 0 < length and (-n <= start < 0 and start + length <= 0 or 0 <= start and start + length <= n):
        how = ("fixed", start, 1 if start < 0 else 0, length)
    else:
        return None
    if how[0] == "grow":  # the whole dim (its length this step's): one entry for every length
        return Plan(axes, kernel=bind(_narrow_padded, how=how), static={"start": 0, "length": -1})
    return Plan(tuple(a for a in axes if a != d), kernel=bind(_narrow_padded, how=how))


@defop(
    static=("dim", "start", "length"),
    linear=True,
    rows=Rows(lambda statics: (), dims=_narrow_dims),
)
def narrow(input, dim, start, length):
    """The ``length`` elements of dim ``dim`` starting at ``start`` (a negative start counts from the
    end), sharing storage with ``input``.

    Example::

        >>> x = fjax.tensor([[1, 2, 3], [4, 5, 6]])
        >>> x.narrow(1, 1, 2)
        tensor([[2, 3],
                [5, 6]], dtype=fjax.int64)
        >>> x.narrow(-1, -1, 1)
        tensor([[3],
                [6]], dtype=fjax.int64)
    """
    d = _wrap("narrow", dim, input.ndim)
    n = input.shape[d]
    s = start + n if start < 0 else start
    if not (0 <= s <= n and 0 <= length and s + length <= n):
        raise ValueError(f"narrow: start {start} + length {length} exceeds dim {dim} of size {n}")
    return input[(slice(None),) * d + (slice(s, s + length),)]


# ----------------------------------------------------------------------------- reordering


@defop(static=("dims",), linear=True)
def flip(input, dims):
    """Reverse the order of elements along each dim in ``dims`` (an int or a tuple).

    Example::

        >>> x = fjax.tensor([[1, 2], [3, 4]])
        >>> x.flip(0)
        tensor([[3, 4],
                [1, 2]], dtype=fjax.int64)
        >>> x.flip((0, 1))
        tensor([[4, 3],
                [2, 1]], dtype=fjax.int64)
    """
    axes = tuple(_wrap("flip", d, input.ndim) for d in _ints("flip", dims))
    return jnp.flip(input, axes) if input.ndim else input


@defop(linear=True)
def fliplr(input):
    """Reverse the order of the columns (dim 1); needs at least 2 dims.

    Example::

        >>> fjax.fliplr(fjax.tensor([[1, 2], [3, 4]]))
        tensor([[2, 1],
                [4, 3]], dtype=fjax.int64)
    """
    if input.ndim < 2:
        raise ValueError(f"fliplr: expected at least 2 dims, got shape {input.shape}")
    return jnp.flip(input, 1)


@defop(linear=True)
def flipud(input):
    """Reverse the order of the rows (dim 0); needs at least 1 dim.

    Example::

        >>> fjax.flipud(fjax.tensor([[1, 2], [3, 4]]))
        tensor([[3, 4],
                [1, 2]], dtype=fjax.int64)
    """
    if input.ndim < 1:
        raise ValueError(f"flipud: expected at least 1 dim, got shape {input.shape}")
    return jnp.flip(input, 0)


@defop(static=("dims",), linear=True)
def roll(input, shifts, dims=None):
    """Shift elements by ``shifts`` along ``dims``, wrapping around: what falls off one end comes back at
    the other. With ``dims`` None the tensor rolls as if flattened and keeps its shape; otherwise ``shifts``
    and ``dims`` pair up. The shifts are kernel arguments, so a loop over shifts compiles one kernel.

    Example::

        >>> x = fjax.tensor([[1, 2], [3, 4]])
        >>> x.roll(1)
        tensor([[4, 1],
                [2, 3]], dtype=fjax.int64)
        >>> x.roll(1, 1)
        tensor([[2, 1],
                [4, 3]], dtype=fjax.int64)
        >>> x.roll((1, -1), (0, 1))
        tensor([[4, 3],
                [2, 1]], dtype=fjax.int64)
    """
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    for s in shifts:
        if not jnp.issubdtype(jnp.result_type(s), jnp.integer):
            raise TypeError(f"roll: shifts must be ints, got {jnp.result_type(s)}")
    if dims is None:
        if len(shifts) != 1:
            raise ValueError(f"roll: expected one shift without dims, got {len(shifts)} shifts")
        return jnp.roll(input.reshape(-1), shifts[0]).reshape(input.shape)
    axes = tuple(_wrap("roll", d, input.ndim) for d in _ints("roll", dims))
    if len(axes) != len(shifts):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} dims")
    return jnp.roll(input, shifts, axes)


@defop(static=("k", "dims"), linear=True)
def rot90(input, k=1, dims=(0, 1)):
    """Rotate by ``k`` quarter turns in the plane of the two ``dims``, from the direction of ``dims[0]``
    towards ``dims[1]``: counter-clockwise for positive ``k`` and the default ``(0, 1)``, clockwise for
    negative ``k``.

    Example::

        >>> x = fjax.tensor([[1, 2], [3, 4]])
        >>> x.rot90()
        tensor([[2, 4],
                [1, 3]], dtype=fjax.int64)
        >>> x.rot90(-1)
        tensor([[3, 1],
                [4, 2]], dtype=fjax.int64)
    """
    axes = tuple(_wrap("rot90", d, input.ndim) for d in _ints("rot90", dims))
    if len(axes) != 2 or axes[0] == axes[1] or input.ndim < 2:
        raise ValueError(f"rot90: expected two distinct dims of a >=2-D tensor, got {dims}")
    return jnp.rot90(input, k, axes)


@defop(static=("diagonal",), linear=True)
def tril(input, diagonal=0):
    """The lower triangle of the matrices in the last two dims: elements above diagonal ``diagonal``
    become zero. 0 is the main diagonal; positive values move it up, negative values down.

    Example::

        >>> x = fjax.ones(3, 3)
        >>> x.tril()
        tensor([[1., 0., 0.],
                [1., 1., 0.],
                [1., 1., 1.]], dtype=fjax.float32)
        >>> x.tril(-1)
        tensor([[0., 0., 0.],
                [1., 0., 0.],
                [1., 1., 0.]], dtype=fjax.float32)
    """
    if input.ndim < 2:
        raise ValueError(f"tril: expected at least 2 dims, got shape {input.shape}")
    return jnp.tril(input, diagonal)


@defop(static=("diagonal",), linear=True)
def triu(input, diagonal=0):
    """The upper triangle of the matrices in the last two dims: elements below diagonal ``diagonal``
    become zero. 0 is the main diagonal; positive values move it up, negative values down.

    Example::

        >>> x = fjax.tensor([[1, 2, 3], [4, 5, 6]])
        >>> x.triu()
        tensor([[1, 2, 3],
                [0, 5, 6]], dtype=fjax.int64)
        >>> x.triu(1)
        tensor([[0, 2, 3],
                [0, 0, 6]], dtype=fjax.int64)
    """
    if input.ndim < 2:
        raise ValueError(f"triu: expected at least 2 dims, got shape {input.shape}")
    return jnp.triu(input, diagonal)


# ----------------------------------------------------------------------------- padding

_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@defop(static=("pad", "mode"), method=False)
def pad(input, pad, mode="constant", value=None):
    """Pad ``input`` (torch.nn.functional.pad). ``pad`` lists ``(before, after)`` amounts from the last dim
    backwards: ``(1, 2)`` pads the last dim, ``(1, 2, 3, 4)`` the last two. ``mode`` is ``'constant'`` (fill
    with ``value``, default 0; negative amounts crop), ``'reflect'`` (mirror, not repeating the edge),
    ``'replicate'`` (repeat the edge) or ``'circular'`` (wrap around).

    Args:
        input: the tensor to pad.
        pad: ``(before, after)`` amounts, from the last dim backwards.
        mode: ``'constant'`` (default), ``'reflect'``, ``'replicate'`` or ``'circular'``.
        value: the fill value of ``'constant'`` mode (default None: 0).

    Example::

        >>> x = fjax.tensor([[1.0, 2.0, 3.0]])
        >>> F.pad(x, (1, 2))
        tensor([[0., 1., 2., 3., 0., 0.]], dtype=fjax.float32)
        >>> F.pad(x, (0, 0, 1, 0), value=9.0)
        tensor([[9., 9., 9.],
                [1., 2., 3.]], dtype=fjax.float32)
        >>> F.pad(x, (2, 1), mode='reflect')
        tensor([[3., 2., 1., 2., 3., 2.]], dtype=fjax.float32)
        >>> F.pad(x, (2, 1), mode='replicate')
        tensor([[1., 1., 1., 2., 3., 3.]], dtype=fjax.float32)
    """
    pad = _ints("pad", pad)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"pad: expected an even number of at most {2 * input.ndim} pads, got {pad}")
    pairs = [(0, 0)] * (input.ndim - len(pad) // 2) + [
        (pad[2 * i], pad[2 * i + 1]) for i in reversed(range(len(pad) // 2))
    ]
    if mode == "constant":
        fill = jnp.zeros((), input.dtype) if value is None else jnp.asarray(value, input.dtype)
        return lax.pad(input, fill, [(lo, hi, 0) for lo, hi in pairs])
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad: mode must be constant, reflect, replicate or circular, got mode={mode!r}")
    if value is not None:
        raise ValueError(f"pad: value is only allowed in constant mode, got mode {mode!r}")
    if input.ndim not in (len(pad) // 2 + 1, len(pad) // 2 + 2):  # torch: (un)batched (N, C, *padded dims)
        raise NotImplementedError(
            f"pad: padding size {len(pad)} is not supported for {input.ndim}D input of shape {input.shape} in "
            f"{mode} mode: expected {len(pad) // 2 + 1}D or {len(pad) // 2 + 2}D input"
        )
    if mode == "replicate" and any(lo < 0 or hi < 0 for lo, hi in pairs):  # torch's rule: clamp each index
        for d, ((lo, hi), n) in enumerate(zip(pairs, input.shape)):
            if n + lo + hi <= 0:
                raise ValueError(f"pad: pads {pad} leave no elements in dim {d} of the input of shape {input.shape}")
            input = jnp.take(input, np.clip(np.arange(n + lo + hi) - lo, 0, n - 1), axis=d)
        return input
    if any(lo < 0 or hi < 0 for lo, hi in pairs):
        raise NotImplementedError(f"pad: negative pads {pad} in {mode} mode")
    for (lo, hi), n in zip(pairs, input.shape):
        if mode == "reflect" and (lo >= n or hi >= n) and (lo or hi):
            raise ValueError(f"pad: reflect pads {pad} must be smaller than the dims {input.shape}")
        if mode == "circular" and (lo > n or hi > n):
            raise ValueError(f"pad: circular pads {pad} must not exceed the dims {input.shape}")
    return jnp.pad(input, pairs, mode=_PAD_MODES[mode])


_pad = pad  # constant_pad_nd's parameter is named pad too


@defop(static=("pad",), method=False)
def constant_pad_nd(input, pad, value=0):
    """``F.pad(input, pad, value=value)``: constant padding, negative amounts crop.

    Example::

        >>> fjax.constant_pad_nd(fjax.tensor([1.0, 2.0]), (1, -1), 7.0)
        tensor([7., 1.], dtype=fjax.float32)
    """
    return _pad(input, pad, "constant", value)


# ----------------------------------------------------------------------------- grids, diagonals and stacks


def _tensors(args):
    """torch's ``f(a, b)`` and ``f([a, b])`` forms of a varargs op, as a list."""
    return list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)


@defop(linear=True, method=False)
def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 0-d or 1-D ``tensors`` (also accepted as one list), all of one dtype: output
    ``i`` repeats tensor ``i`` along its own dim of a grid whose shape lists the tensors' sizes. With
    ``indexing='xy'`` the first two dims are swapped (Cartesian, as numpy's default); without
    ``indexing`` it is ``'ij'``, with torch's warning that the argument will become required.

    Example::

        >>> x, y = fjax.tensor([1, 2, 3]), fjax.tensor([4, 5])
        >>> gx, gy = fjax.meshgrid(x, y, indexing="ij")
        >>> gx
        tensor([[1, 1],
                [2, 2],
                [3, 3]], dtype=fjax.int64)
        >>> fjax.meshgrid(x, y, indexing="xy")[0]
        tensor([[1, 2, 3],
                [1, 2, 3]], dtype=fjax.int64)
    """
    ts = _tensors(tensors)
    if indexing is None:
        warnings.warn(
            "fjax.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    if not ts:
        raise ValueError("meshgrid: expected at least one tensor")
    if len({np.dtype(t.dtype) for t in ts}) > 1:
        raise TypeError(f"meshgrid: expected all tensors to have the same dtype, got {[str(t.dtype) for t in ts]}")
    if any(t.ndim > 1 for t in ts):
        raise ValueError(f"meshgrid: expected 0-d or 1-D tensors, got shapes {[t.shape for t in ts]}")
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    ts = [jnp.reshape(t, (-1,)) for t in ts]
    shape = tuple(t.shape[0] for t in ts)
    n = len(ts)
    outs = [jnp.broadcast_to(t.reshape((1,) * i + (-1,) + (1,) * (n - i - 1)), shape) for i, t in enumerate(ts)]
    if swap:
        outs[0], outs[1] = outs[1], outs[0]
    return tuple(outs)


def _tri_indices(name, tri, row, col, offset, dtype):
    if row < 0 or col < 0:
        raise ValueError(f"{name}: row and col must be non-negative, got {row} and {col}")
    dt = np.dtype("int64") if dtype is None else np.dtype(dtype)
    if not np.issubdtype(dt, np.integer):
        raise TypeError(f"{name}: dtype must be an integer type, got {dt}")
    return jnp.asarray(np.stack(tri(row, offset, col)), dt).reshape(2, -1)


@defop(static=("row", "col", "offset", "dtype"), differentiable=False, method=False)
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The coordinates of the lower triangle (on and below diagonal ``offset``) of a ``row`` x ``col``
    matrix, as a ``(2, N)`` tensor of row indices then column indices, in row-major order; int64 unless
    ``dtype`` says otherwise. ``device`` and ``layout`` are accepted for torch's signature.

    Example::

        >>> fjax.tril_indices(3, 3)
        tensor([[0, 1, 1, 2, 2, 2],
                [0, 0, 1, 0, 1, 2]], dtype=fjax.int64)
        >>> fjax.tril_indices(3, 2, -1)
        tensor([[1, 2, 2],
                [0, 0, 1]], dtype=fjax.int64)
    """
    return _tri_indices("tril_indices", np.tril_indices, row, col, offset, dtype)


@defop(static=("row", "col", "offset", "dtype"), differentiable=False, method=False)
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The coordinates of the upper triangle (on and above diagonal ``offset``) of a ``row`` x ``col``
    matrix, as a ``(2, N)`` tensor of row indices then column indices, in row-major order; int64 unless
    ``dtype`` says otherwise. ``device`` and ``layout`` are accepted for torch's signature.

    Example::

        >>> fjax.triu_indices(3, 3)
        tensor([[0, 0, 0, 1, 1, 2],
                [0, 1, 2, 1, 2, 2]], dtype=fjax.int64)
        >>> fjax.triu_indices(2, 3, 1)
        tensor([[0, 0, 1],
                [1, 2, 2]], dtype=fjax.int64)
    """
    return _tri_indices("triu_indices", np.triu_indices, row, col, offset, dtype)


@defop(static=("offset", "dim1", "dim2"), linear=True)
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Place the last dim of ``input`` on diagonal ``offset`` of new square matrices spanning dims
    ``dim1`` and ``dim2`` of the result (which has one dim more than ``input``), zeros elsewhere: a
    batched ``diag``. The inverse of ``diagonal`` with the same arguments.

    Example::

        >>> fjax.diag_embed(fjax.tensor([[1, 2], [3, 4]]))
        tensor([[[1, 0],
                 [0, 2]],
        <BLANKLINE>
                [[3, 0],
                 [0, 4]]], dtype=fjax.int64)
        >>> fjax.diag_embed(fjax.tensor([1.0, 2.0]), offset=1).shape
        fjax.Size([3, 3])
    """
    if input.ndim == 0:
        raise ValueError("diag_embed: expected a tensor with at least one dim")
    nd = input.ndim + 1
    d1, d2 = _wrap("diag_embed", dim1, nd), _wrap("diag_embed", dim2, nd)
    if d1 == d2:
        raise ValueError(f"diag_embed: dim1 and dim2 must differ, got {dim1} and {dim2}")
    n = input.shape[-1]
    m = n + abs(offset)
    rows = np.arange(n) + max(-offset, 0)
    cols = np.arange(n) + max(offset, 0)
    out = jnp.zeros(input.shape[:-1] + (m, m), input.dtype).at[..., rows, cols].set(input)
    return jnp.moveaxis(out, (-2, -1), (d1, d2))


@defop(static=("offset",), linear=True)
def diagflat(input, offset=0):
    """A square matrix with the flattened ``input`` on diagonal ``offset`` (0 the main one, positive
    above it, negative below) and zeros elsewhere, for an input of any shape.

    Example::

        >>> fjax.diagflat(fjax.tensor([[1, 2], [3, 4]]))
        tensor([[1, 0, 0, 0],
                [0, 2, 0, 0],
                [0, 0, 3, 0],
                [0, 0, 0, 4]], dtype=fjax.int64)
        >>> fjax.diagflat(fjax.tensor([5.0]), 1)
        tensor([[0., 5.],
                [0., 0.]], dtype=fjax.float32)
    """
    return jnp.diag(jnp.reshape(input, (-1,)), k=offset)


@defop(linear=True)
def ravel(input):
    """The elements of ``input`` in row-major order as a 1-D tensor (``reshape(-1)``). Unlike torch,
    the result is a copy rather than a view of a contiguous input.

    Example::

        >>> fjax.tensor([[1, 2], [3, 4]]).ravel()
        tensor([1, 2, 3, 4], dtype=fjax.int64)
    """
    return jnp.reshape(input, (-1,))


@defop(linear=True, method=False)
def clone(input, *, memory_format=None):
    """A copy of ``input`` with its own storage, recorded in autograd (the gradient passes through
    unchanged); later in-place changes of either do not show in the other. ``memory_format`` is
    accepted for torch's signature.

    Example::

        >>> x = fjax.tensor([1.0, 2.0])
        >>> y = fjax.clone(x)
        >>> y[0] = 5.0
        >>> x, y
        (tensor([1., 2.], dtype=fjax.float32), tensor([5., 2.], dtype=fjax.float32))
    """
    return jnp.array(input, copy=True)


def _atleast(fn, tensors):
    if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)):
        return fn(tensors[0])
    return tuple(fn(t) for t in _tensors(tensors))


@defop(linear=True, method=False)
def atleast_1d(*tensors):
    """Each tensor with at least one dim (a 0-d one becomes shape ``(1,)``); one tensor gives one
    tensor, several (or a list) give a tuple.

    Example::

        >>> fjax.atleast_1d(fjax.tensor(1.5))
        tensor([1.5000], dtype=fjax.float32)
        >>> [t.shape for t in fjax.atleast_1d(fjax.tensor(1), fjax.ones(2, 3))]
        [fjax.Size([1]), fjax.Size([2, 3])]
    """
    return _atleast(jnp.atleast_1d, tensors)


@defop(linear=True, method=False)
def atleast_2d(*tensors):
    """Each tensor with at least two dims: 0-d becomes ``(1, 1)`` and ``(n,)`` becomes ``(1, n)``; one
    tensor gives one tensor, several (or a list) give a tuple.

    Example::

        >>> fjax.atleast_2d(fjax.tensor([1, 2]))
        tensor([[1, 2]], dtype=fjax.int64)
    """
    return _atleast(jnp.atleast_2d, tensors)


@defop(linear=True, method=False)
def atleast_3d(*tensors):
    """Each tensor with at least three dims: 0-d becomes ``(1, 1, 1)``, ``(n,)`` becomes ``(1, n, 1)``
    and ``(m, n)`` becomes ``(m, n, 1)``; one tensor gives one tensor, several (or a list) a tuple.

    Example::

        >>> fjax.atleast_3d(fjax.ones(2, 3)).shape
        fjax.Size([2, 3, 1])
        >>> fjax.atleast_3d(fjax.tensor([1, 2])).shape
        fjax.Size([1, 2, 1])
    """
    return _atleast(jnp.atleast_3d, tensors)


@defop(linear=True, method=False)
def column_stack(tensors):
    """Join ``tensors`` as columns: 0-d and 1-D inputs become columns of shape ``(n, 1)``, then all are
    concatenated along dim 1; dtypes promote.

    Example::

        >>> fjax.column_stack([fjax.tensor([1, 2]), fjax.tensor([3, 4])])
        tensor([[1, 3],
                [2, 4]], dtype=fjax.int64)
    """
    ts = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in _common("column_stack", tensors)]
    return cat(ts, 1)


@defop(linear=True, method=False)
def row_stack(tensors):
    """Alias of ``vstack``: join ``tensors`` as rows along dim 0, 0-d and 1-D inputs becoming rows of
    shape ``(1, n)``.

    Example::

        >>> fjax.row_stack([fjax.tensor([1, 2]), fjax.tensor([3, 4])])
        tensor([[1, 2],
                [3, 4]], dtype=fjax.int64)
    """
    return vstack(tensors)


def _split_dir(name, input, indices_or_sections, dim, min_ndim):
    if input.ndim < min_ndim:
        raise ValueError(f"{name}: expected a tensor with at least {min_ndim} dims, got {input.ndim}")
    size = input.shape[dim]
    if isinstance(indices_or_sections, int):
        if indices_or_sections <= 0 or size % indices_or_sections:
            raise ValueError(
                f"{name}: dim {dim} of size {size} is not divisible into {indices_or_sections} equal sections"
            )
        step = size // indices_or_sections
        cuts = [step * i for i in range(1, indices_or_sections)]
    else:
        cuts = [min(max(c if c >= 0 else c + size, 0), size) for c in _ints(name, indices_or_sections)]
    bounds = [0] + cuts + [size]
    return tuple(lax.slice_in_dim(input, a, max(a, b), axis=dim) for a, b in zip(bounds[:-1], bounds[1:]))


@defop(static=("indices_or_sections",), linear=True)
def vsplit(input, indices_or_sections):
    """Split a tensor of at least 2 dims along dim 0: into that many equal pieces when
    ``indices_or_sections`` is an int (it must divide the size), or cut before each listed index.
    Returns a tuple (copies, not views as in torch); also the method ``x.vsplit(sections)``.

    Example::

        >>> x = fjax.arange(8).reshape(4, 2)
        >>> [t.shape for t in fjax.vsplit(x, 2)]
        [fjax.Size([2, 2]), fjax.Size([2, 2])]
        >>> [t.shape for t in fjax.vsplit(x, [1, 3])]
        [fjax.Size([1, 2]), fjax.Size([2, 2]), fjax.Size([1, 2])]
    """
    return _split_dir("vsplit", input, indices_or_sections, 0, 2)


@defop(static=("indices_or_sections",), linear=True)
def hsplit(input, indices_or_sections):
    """Split a tensor along dim 1 (dim 0 when it is 1-D): into that many equal pieces when
    ``indices_or_sections`` is an int (it must divide the size), or cut before each listed index.
    Returns a tuple (copies, not views as in torch); also the method ``x.hsplit(sections)``.

    Example::

        >>> x = fjax.arange(6).reshape(2, 3)
        >>> fjax.hsplit(x, 3)[1]
        tensor([[1],
                [4]], dtype=fjax.int64)
        >>> fjax.hsplit(fjax.arange(4), [1])
        (tensor([0], dtype=fjax.int64), tensor([1, 2, 3], dtype=fjax.int64))
    """
    return _split_dir("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


@defop(static=("indices_or_sections",), linear=True)
def dsplit(input, indices_or_sections):
    """Split a tensor of at least 3 dims along dim 2: into that many equal pieces when
    ``indices_or_sections`` is an int (it must divide the size), or cut before each listed index.
    Returns a tuple (copies, not views as in torch); also the method ``x.dsplit(sections)``.

    Example::

        >>> x = fjax.zeros(2, 2, 4)
        >>> [t.shape for t in fjax.dsplit(x, 2)]
        [fjax.Size([2, 2, 2]), fjax.Size([2, 2, 2])]
    """
    return _split_dir("dsplit", input, indices_or_sections, 2, 3)


@defop(linear=True, method=False)
def cartesian_prod(*tensors):
    """All combinations of the elements of the 1-D ``tensors`` (of one dtype), as a ``(N, k)`` tensor
    in row-major order, like ``itertools.product``; a single tensor comes back as it is.

    Example::

        >>> fjax.cartesian_prod(fjax.tensor([1, 2]), fjax.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]], dtype=fjax.int64)
    """
    ts = _tensors(tensors)
    if any(t.ndim != 1 for t in ts):
        raise ValueError(f"cartesian_prod: expected 1-D tensors, got shapes {[t.shape for t in ts]}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return jnp.stack([g.reshape(-1) for g in grids], axis=1)


@defop(linear=True, method=False)
def block_diag(*tensors):
    """A block diagonal matrix with the given tensors (0-d, 1-D as one row, or 2-D) as its blocks, top
    left to bottom right, zeros elsewhere; dtypes promote.

    Example::

        >>> fjax.block_diag(fjax.tensor([[1, 2]]), fjax.tensor(3), fjax.tensor([[4], [5]]))
        tensor([[1, 2, 0, 0],
                [0, 0, 3, 0],
                [0, 0, 0, 4],
                [0, 0, 0, 5]], dtype=fjax.int64)
    """
    ts = _tensors(tensors)
    if not ts:
        return jnp.zeros((1, 0), np.float32)
    if any(t.ndim > 2 for t in ts):
        raise ValueError(f"block_diag: expected tensors of at most 2 dims, got shapes {[t.shape for t in ts]}")
    ts = [jnp.atleast_2d(t) for t in _common("block_diag", ts)]
    out = jnp.zeros((sum(t.shape[0] for t in ts), sum(t.shape[1] for t in ts)), ts[0].dtype)
    r = c = 0
    for t in ts:
        out = out.at[r : r + t.shape[0], c : c + t.shape[1]].set(t)
        r, c = r + t.shape[0], c + t.shape[1]
    return out


# ----------------------------------------------------------------------------- torch.* additions


@defop(linear=True, method=False)
def broadcast_tensors(*tensors):
    """The tensors broadcast to their common shape, as a tuple (torch returns views; fjax copies).

    Example::

        >>> a, b = fjax.broadcast_tensors(fjax.tensor([[1], [2]]), fjax.tensor([3, 4, 5]))
        >>> a.shape, b.shape
        (fjax.Size([2, 3]), fjax.Size([2, 3]))
    """
    return tuple(jnp.broadcast_arrays(*tensors))


@defop(linear=True)
def reshape_as(input, other):
    """``input.reshape(other.size())``.

    Example::

        >>> fjax.arange(6).reshape_as(fjax.zeros(2, 3)).shape
        fjax.Size([2, 3])
    """
    return jnp.reshape(input, other.shape)


@defop(static=("split_size_or_sections", "dim"), linear=True)
def split_with_sizes(tensor, split_size_or_sections, dim=0):
    """Split along ``dim`` into pieces of the listed sizes, which must add up to the dim's size.

    Example::

        >>> fjax.arange(5).split_with_sizes([2, 3])
        (tensor([0, 1], dtype=fjax.int64), tensor([2, 3, 4], dtype=fjax.int64))
    """
    if isinstance(split_size_or_sections, (int, np.integer)):
        raise TypeError("split_with_sizes: split_sizes must be a list of ints")
    return split(tensor, list(split_size_or_sections), dim)


@defop(static=("split_size_or_sections", "dim"), linear=True, method=False)
def unsafe_split(tensor, split_size_or_sections, dim=0):
    """``split`` without torch's view-aliasing checks (fjax's pieces are the same values).

    Example::

        >>> fjax.unsafe_split(fjax.arange(4), 3)
        (tensor([0, 1, 2], dtype=fjax.int64), tensor([3], dtype=fjax.int64))
    """
    return split(tensor, split_size_or_sections, dim)


@defop(static=("chunks", "dim"), linear=True)
def unsafe_chunk(input, chunks, dim=0):
    """``chunk`` without torch's view-aliasing checks (fjax's pieces are the same values).

    Example::

        >>> fjax.unsafe_chunk(fjax.arange(4), 2)
        (tensor([0, 1], dtype=fjax.int64), tensor([2, 3], dtype=fjax.int64))
    """
    return chunk(input, chunks, dim)


@defop(static=("offset", "dim1", "dim2"))
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with its ``offset`` diagonal in dims ``dim1``, ``dim2`` replaced by ``src`` (shaped
    as ``input.diagonal(offset, dim1, dim2)``).

    Example::

        >>> fjax.diagonal_scatter(fjax.zeros(2, 2), fjax.ones(2))
        tensor([[1., 0.],
                [0., 1.]], dtype=fjax.float32)
    """
    d1, d2 = _wrap("diagonal_scatter", dim1, input.ndim), _wrap("diagonal_scatter", dim2, input.ndim)
    if d1 == d2:
        raise ValueError(f"diagonal_scatter: dim1 and dim2 cannot be the same ({dim1}, {dim2})")
    x = jnp.moveaxis(input, (d1, d2), (-2, -1))
    rows, cols = x.shape[-2], x.shape[-1]
    n = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    expected = x.shape[:-2] + (n,)
    if tuple(src.shape) != expected:
        raise ValueError(f"diagonal_scatter: src must have shape {list(expected)}, got {list(src.shape)}")
    i = np.arange(n)
    x = x.at[..., i + max(-offset, 0), i + max(offset, 0)].set(src.astype(x.dtype))
    return jnp.moveaxis(x, (-2, -1), (d1, d2))


@defop(static=("dim", "index"))
def select_scatter(input, src, dim, index):
    """A copy of ``input`` with the slice ``input.select(dim, index)`` replaced by ``src``.

    Example::

        >>> fjax.select_scatter(fjax.zeros(2, 2), fjax.ones(2), 0, 1)
        tensor([[0., 0.],
                [1., 1.]], dtype=fjax.float32)
    """
    d = _wrap("select_scatter", dim, input.ndim)
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select_scatter: index {index} is out of range for dim {dim} of size {n}")
    expected = input.shape[:d] + input.shape[d + 1 :]
    if tuple(src.shape) != expected:
        raise ValueError(f"select_scatter: src must have shape {list(expected)}, got {list(src.shape)}")
    return input.at[(slice(None),) * d + (index % n,)].set(src.astype(input.dtype))


@defop(static=("dim", "start", "end", "step"))
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` with the slice ``start:end:step`` of dim ``dim`` replaced by ``src``.

    Example::

        >>> fjax.slice_scatter(fjax.zeros(4), fjax.ones(2), start=1, end=3)
        tensor([0., 1., 1., 0.], dtype=fjax.float32)
    """
    d = _wrap("slice_scatter", dim, input.ndim)
    if step <= 0:
        raise ValueError(f"slice_scatter: step must be positive, got {step}")
    idx = (slice(None),) * d + (slice(start, end, step),)
    expected = input[idx].shape
    if tuple(src.shape) != tuple(expected):
        raise ValueError(f"slice_scatter: src must have shape {list(expected)}, got {list(src.shape)}")
    return input.at[idx].set(src.astype(input.dtype))


@defop(static=("r", "with_replacement"), method=False)
def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of a 1-D tensor, as the rows of an ``(N, r)`` tensor in
    ``itertools.combinations`` order (``combinations_with_replacement`` when ``with_replacement``).

    Example::

        >>> fjax.combinations(fjax.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]], dtype=fjax.int64)
    """
    import itertools

    if input.ndim != 1:
        raise ValueError(f"combinations: expected a 1-D tensor, got {input.ndim}-D")
    if r < 0:
        raise ValueError(f"combinations: r must be non-negative, got {r}")
    if r == 0:
        return jnp.zeros((0,), input.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.asarray(list(pick(range(input.shape[0]), r)), np.int64).reshape(-1, r)
    return input[rows]
