"""Movement ops: reshape, permute, concatenate, split, pad ... with torch's signatures.

Shapes, dims and sizes are static. All of these ops are linear in their tensor inputs.
"""

from __future__ import annotations

import jax.lax as lax
import jax.numpy as jnp
import numpy as np

from ._promote import result_type
from ._registry import defop


def _wrap(name: str, d: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= d < n:
        raise ValueError(f"{name}: dim {d} is out of range for a tensor of {ndim} dims")
    return d % n


def _ints(name: str, seq) -> tuple:
    if isinstance(seq, (int, np.integer)):
        return (int(seq),)
    try:
        return tuple(int(s) for s in seq)
    except TypeError:
        raise TypeError(f"{name}: expected an int or a sequence of ints, got {seq!r}") from None


# ----------------------------------------------------------------------------- reshaping


@defop(static=("shape",), linear=True)
def reshape(input, shape):
    """Same data in a new ``shape`` (one entry may be -1)."""
    shape = _ints("reshape", shape)
    try:
        return jnp.reshape(input, shape)
    except (TypeError, ValueError):
        raise ValueError(f"reshape: shape {list(shape)} is invalid for input of shape {input.shape}") from None


@defop(static=("shape",), linear=True)
def view(input, shape):
    """``Tensor.view(shape)``: in fjax the same as reshape (arrays are never aliased)."""
    if not isinstance(shape, (tuple, list, int)):
        raise NotImplementedError(f"view: viewing as dtype {shape!r} is not supported")
    return reshape(input, shape)


@defop(static=("start_dim", "end_dim"), linear=True)
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one."""
    if input.ndim == 0:
        return input.reshape(1)
    s, e = _wrap("flatten", start_dim, input.ndim), _wrap("flatten", end_dim, input.ndim)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    sh = input.shape
    return input.reshape(sh[:s] + (int(np.prod(sh[s : e + 1])),) + sh[e + 1 :])


@defop(static=("dim", "sizes"), linear=True)
def unflatten(input, dim, sizes):
    """Split dim ``dim`` into ``sizes`` (one entry may be -1)."""
    d = _wrap("unflatten", dim, input.ndim)
    sizes = _ints("unflatten", sizes)
    sub = jnp.reshape(jnp.zeros((input.shape[d],), np.bool_), sizes).shape if sizes else None
    if sub is None:
        raise ValueError("unflatten: sizes must be non-empty")
    return input.reshape(input.shape[:d] + sub + input.shape[d + 1 :])


@defop(static=("dims",), linear=True)
def permute(input, dims):
    """Reorder the dims: output dim i is input dim ``dims[i]``."""
    dims = _ints("permute", dims)
    axes = tuple(_wrap("permute", d, input.ndim) for d in dims)
    if sorted(axes) != list(range(input.ndim)):
        raise ValueError(f"permute: dims {list(dims)} is not a permutation of {input.ndim} dims")
    return jnp.transpose(input, axes)


@defop(static=("dim0", "dim1"), linear=True)
def transpose(input, dim0, dim1):
    """Swap dims ``dim0`` and ``dim1``."""
    a, b = _wrap("transpose", dim0, input.ndim), _wrap("transpose", dim1, input.ndim)
    return jnp.swapaxes(input, a, b) if input.ndim else input


@defop(static=("axis0", "axis1"), linear=True)
def swapaxes(input, axis0, axis1):
    """Alias of transpose."""
    return transpose(input, axis0, axis1)


@defop(static=("dim0", "dim1"), linear=True)
def swapdims(input, dim0, dim1):
    """Alias of transpose."""
    return transpose(input, dim0, dim1)


@defop(linear=True)
def t(input):
    """Transpose a tensor of at most 2 dims."""
    if input.ndim > 2:
        raise ValueError(f"t: expected a tensor of at most 2 dims, got shape {input.shape}")
    return input.T


@defop(static=("source", "destination"), linear=True)
def movedim(input, source, destination):
    """Move dims ``source`` to positions ``destination`` (ints or tuples)."""
    src, dst = _ints("movedim", source), _ints("movedim", destination)
    if len(src) != len(dst):
        raise ValueError(f"movedim: source {src} and destination {dst} differ in length")
    n = input.ndim
    return (
        jnp.moveaxis(input, [_wrap("movedim", d, n) for d in src], [_wrap("movedim", d, n) for d in dst])
        if n
        else input
    )


@defop(static=("source", "destination"), linear=True)
def moveaxis(input, source, destination):
    """Alias of movedim."""
    return movedim(input, source, destination)


@defop(static=("dim",), linear=True)
def squeeze(input, dim=None):
    """Drop size-1 dims (only those in ``dim`` when given; others are kept silently)."""
    if dim is None:
        return jnp.squeeze(input)
    axes = {_wrap("squeeze", d, input.ndim) for d in _ints("squeeze", dim)}
    return jnp.squeeze(input, tuple(a for a in axes if input.ndim and input.shape[a] == 1))


@defop(static=("dim",), linear=True)
def unsqueeze(input, dim):
    """Insert a size-1 dim at ``dim``."""
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
    """``Tensor.expand(size)``: broadcast to ``size``; -1 keeps a dim."""
    return jnp.broadcast_to(input, _expand_shape("expand", input.shape, size))


@defop(linear=True)
def expand_as(input, other):
    """Broadcast ``input`` to ``other``'s shape."""
    return jnp.broadcast_to(input, _expand_shape("expand_as", input.shape, other.shape))


@defop(static=("size",), linear=True)
def broadcast_to(input, size):
    """Broadcast to ``size``; -1 keeps a dim."""
    return jnp.broadcast_to(input, _expand_shape("broadcast_to", input.shape, size))


@defop(static=("repeats",), linear=True)
def repeat(input, repeats):
    """``Tensor.repeat(repeats)``: tile, with at least as many repeats as dims."""
    reps = _ints("repeat", repeats)
    if len(reps) < input.ndim:
        raise ValueError(f"repeat: {len(reps)} repeats is fewer than the {input.ndim} dims")
    return jnp.tile(input, reps)


@defop(static=("dims",), linear=True)
def tile(input, dims):
    """Tile ``input`` (missing leading repeats count as 1)."""
    return jnp.tile(input, _ints("tile", dims))


@defop(static=("repeats", "dim", "output_size"), linear=True)
def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times (an int) along ``dim`` (flattened when None)."""
    if not isinstance(repeats, (int, np.integer)):
        raise NotImplementedError("repeat_interleave: only int repeats are supported")
    if dim is None:
        return jnp.repeat(input.reshape(-1), repeats)
    return jnp.repeat(input, repeats, axis=_wrap("repeat_interleave", dim, input.ndim))


# ----------------------------------------------------------------------------- joining


def _common(name, tensors):
    if not tensors:
        raise ValueError(f"{name}: expected a non-empty list of tensors")
    dt = result_type(*[jnp.zeros((1,), t.dtype) for t in tensors])
    return [jnp.asarray(t, dt) for t in tensors]


@defop(static=("dim",), linear=True)
def cat(tensors, dim=0):
    """Concatenate along ``dim``; 1-D empty tensors are skipped, as in torch."""
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


@defop(static=("dim",), linear=True)
def concat(tensors, dim=0):
    """Alias of cat."""
    return cat(tensors, dim)


@defop(static=("dim",), linear=True)
def concatenate(tensors, dim=0):
    """Alias of cat."""
    return cat(tensors, dim)


@defop(static=("dim",), linear=True)
def stack(tensors, dim=0):
    """Stack equal-shaped tensors along a new dim ``dim``."""
    ts = _common("stack", tensors)
    if len({t.shape for t in ts}) > 1:
        raise ValueError(f"stack: expected equal shapes, got {[t.shape for t in ts]}")
    return jnp.stack(ts, axis=_wrap("stack", dim, ts[0].ndim + 1))


@defop(linear=True)
def hstack(tensors):
    """Concatenate along dim 1 (dim 0 for 1-D tensors)."""
    ts = [jnp.atleast_1d(t) for t in _common("hstack", tensors)]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


@defop(linear=True)
def vstack(tensors):
    """Concatenate along dim 0 after making tensors at least 2-D."""
    return cat([jnp.atleast_2d(t) for t in _common("vstack", tensors)], 0)


@defop(linear=True)
def dstack(tensors):
    """Concatenate along dim 2 after making tensors at least 3-D."""
    return cat([jnp.atleast_3d(t) for t in _common("dstack", tensors)], 2)


# ----------------------------------------------------------------------------- splitting


def _split_at(input, sizes, d):
    offsets = np.cumsum((0,) + tuple(sizes)).tolist()
    return tuple(lax.slice_in_dim(input, a, b, axis=d) for a, b in zip(offsets[:-1], offsets[1:]))


@defop(static=("split_size_or_sections", "dim"), linear=True)
def split(tensor, split_size_or_sections, dim=0):
    """Split into chunks of one size (last may be smaller) or of the listed sizes."""
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


@defop(static=("chunks", "dim"), linear=True)
def chunk(input, chunks, dim=0):
    """Split into at most ``chunks`` pieces of size ``ceil(n / chunks)``."""
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
    """Remove dim ``dim``, returning a tuple of all slices along it."""
    d = _wrap("unbind", dim, input.ndim)
    return tuple(jnp.take(input, i, axis=d) for i in range(input.shape[d]))


@defop(static=("dim", "start", "length"), linear=True)
def narrow(input, dim, start, length):
    """``length`` elements of dim ``dim`` starting at ``start`` (may be negative)."""
    d = _wrap("narrow", dim, input.ndim)
    n = input.shape[d]
    s = start + n if start < 0 else start
    if not (0 <= s <= n and 0 <= length and s + length <= n):
        raise ValueError(f"narrow: start {start} + length {length} exceeds dim {dim} of size {n}")
    return input[(slice(None),) * d + (slice(s, s + length),)]


# ----------------------------------------------------------------------------- reordering


@defop(static=("dims",), linear=True)
def flip(input, dims):
    """Reverse the order of elements along ``dims``."""
    axes = tuple(_wrap("flip", d, input.ndim) for d in _ints("flip", dims))
    return jnp.flip(input, axes) if input.ndim else input


@defop(linear=True)
def fliplr(input):
    """Flip dim 1 (needs at least 2 dims)."""
    if input.ndim < 2:
        raise ValueError(f"fliplr: expected at least 2 dims, got shape {input.shape}")
    return jnp.flip(input, 1)


@defop(linear=True)
def flipud(input):
    """Flip dim 0 (needs at least 1 dim)."""
    if input.ndim < 1:
        raise ValueError(f"flipud: expected at least 1 dim, got shape {input.shape}")
    return jnp.flip(input, 0)


@defop(static=("dims",), linear=True)
def roll(input, shifts, dims=None):
    """Roll elements along ``dims`` (over the flattened tensor when None); the shifts are kernel
    arguments, so a loop over shifts compiles one kernel."""
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
    """Rotate by ``k`` quarter turns in the plane of ``dims`` (from dims[0] to dims[1])."""
    axes = tuple(_wrap("rot90", d, input.ndim) for d in _ints("rot90", dims))
    if len(axes) != 2 or axes[0] == axes[1] or input.ndim < 2:
        raise ValueError(f"rot90: expected two distinct dims of a >=2-D tensor, got {dims}")
    return jnp.rot90(input, k, axes)


@defop(static=("diagonal",), linear=True)
def tril(input, diagonal=0):
    """Zero the elements above diagonal ``diagonal`` of the last two dims."""
    if input.ndim < 2:
        raise ValueError(f"tril: expected at least 2 dims, got shape {input.shape}")
    return jnp.tril(input, diagonal)


@defop(static=("diagonal",), linear=True)
def triu(input, diagonal=0):
    """Zero the elements below diagonal ``diagonal`` of the last two dims."""
    if input.ndim < 2:
        raise ValueError(f"triu: expected at least 2 dims, got shape {input.shape}")
    return jnp.triu(input, diagonal)


# ----------------------------------------------------------------------------- padding

_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@defop(static=("pad", "mode"), method=False)
def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: ``pad`` lists (left, right) pairs from the last dim backwards."""
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
        raise ValueError(f"pad: mode must be constant, reflect, replicate or circular, got {mode!r}")
    if value is not None:
        raise ValueError(f"pad: value is only allowed in constant mode, got mode {mode!r}")
    if any(lo < 0 or hi < 0 for lo, hi in pairs):
        raise NotImplementedError(f"pad: negative pads in {mode} mode")
    for (lo, hi), n in zip(pairs, input.shape):
        if mode == "reflect" and (lo >= n or hi >= n) and (lo or hi):
            raise ValueError(f"pad: reflect pads {pad} must be smaller than the dims {input.shape}")
        if mode == "circular" and (lo > n or hi > n):
            raise ValueError(f"pad: circular pads {pad} must not exceed the dims {input.shape}")
    return jnp.pad(input, pairs, mode=_PAD_MODES[mode])
