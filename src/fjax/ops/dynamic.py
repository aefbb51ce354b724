"""Ops whose output shape depends on the values of their input: nonzero, masked_select, unique, bincount.

XLA compiles programs for fixed shapes, so these ops run outside ``jax.jit`` (``defop(jit=False)``):
in eager each computes its result on the device at an upper-bound size (the input's size), reads
the true size back to the host (one small device-to-host read, as torch's CUDA kernels
synchronize), and slices. Inside a trace (nn.Graph, ``fjax.func``, ``autograd.functional``) the
values are not known, so the ops raise an error that names the op and suggests a fixed-size
alternative. ``histc`` has a fixed output shape and also runs inside traces.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import _lazy
from ..errors import OpError
from ._registry import defop

# ----------------------------------------------------------------------------- helpers


def _need_values(name, hint, *arrays):
    """Raise the data-dependent-shape error for ``name`` when one of ``arrays`` is traced."""
    for a in arrays:
        if isinstance(a, jax.core.Tracer):
            raise ValueError(
                f"{name}: its output shape depends on the values of its input, which are unknown while a "
                f"function is traced (nn.Graph, fjax.func, autograd.functional); {hint}"
            )


_WHERE_HINT = (
    "use fjax.where(mask, x, other) or multiply by the mask to keep a fixed shape, or call it outside the trace"
)


def _host_int(a) -> int:
    """A device scalar's value on the host: the one synchronization of these ops."""
    return int(np.asarray(a))


def _eager(fn):
    """Run ``fn`` on concrete arrays, also inside a trace (where a constant tensor is their input):
    there ``jax.jit`` would stage its kernels into the traced program instead of running them."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with jax.ensure_compile_time_eval():
            return fn(*args, **kwargs)

    return run


def _take_leading(a, n):
    """The first ``n`` entries of ``a`` along dim 0 (no copy when ``n`` is all of them). On the
    CPU a numpy copy: a count that changes every call compiles nothing."""
    if a.shape[0] == n:
        return a
    if isinstance(a, jax.core.Tracer):
        return jax.lax.slice_in_dim(a, 0, n, axis=0)
    return _lazy.first_rows(a, n)


def _columns(a) -> tuple:
    """The columns of 2-d ``a`` (on the CPU through numpy, as ``_take_leading``); of a bucket's
    rows (``_lazy.count_rows``), the bucket's columns."""
    if type(a) is _lazy.Padded:
        return tuple(_lazy.Padded((a.shape[0],), c) for c in _columns(a.array))
    if not isinstance(a, jax.core.Tracer) and _lazy.on_cpu(a):
        h = np.asarray(a)
        return tuple(_lazy.like(np.ascontiguousarray(h[:, d]), a) for d in range(h.shape[1]))
    return tuple(a[:, d] for d in range(a.shape[1]))


# ----------------------------------------------------------------------------- nonzero


@jax.jit
def _nonzero_padded(input):
    """Coordinates of the nonzero elements, padded to one row per element, and their count."""
    flat = (input != 0).reshape(-1)
    size = flat.shape[0]
    idx = jnp.nonzero(flat, size=size, fill_value=0)[0]
    if input.ndim:
        coords = jnp.stack([c.astype(jnp.int64) for c in jnp.unravel_index(idx, input.shape)], axis=1)
    else:
        coords = jnp.zeros((size, 0), jnp.int64)
    return coords, jnp.count_nonzero(flat)


@_eager
def _nonzero(name, input):
    _need_values(name, _WHERE_HINT, input)
    if input.size == 0:
        return jnp.zeros((0, input.ndim), jnp.int64)
    coords, n = _nonzero_padded(input)
    n = _host_int(n)
    if n == coords.shape[0] or isinstance(coords, jax.core.Tracer):
        return _take_leading(coords, n)
    # (the rows to index with: once the counts keep changing, a bucket's, which the consumers take as they are)
    return _lazy.count_rows(coords, n, (name, input.shape, input.dtype))


@defop(static=("as_tuple",), differentiable=False, jit=False)
def nonzero(input, *, as_tuple=False):
    """Indices of the nonzero (True) elements of ``input``, in row-major order, as int64.

    By default a 2-D tensor with one row per nonzero element and one column per dim of ``input``;
    with ``as_tuple=True`` a tuple of 1-D tensors, one per dim (a 0-d input counts as 1-D), ready to
    index with. The number of rows depends on the values: eager reads that count from the device
    once, and inside a trace (nn.Graph, fjax.func) the op raises; use ``fjax.where`` there.

    Example::

        >>> x = fjax.tensor([[0.0, 1.5], [2.0, 0.0]])
        >>> fjax.nonzero(x)
        tensor([[0, 1],
                [1, 0]], dtype=fjax.int64)
        >>> x.nonzero(as_tuple=True)
        (tensor([0, 1], dtype=fjax.int64), tensor([1, 0], dtype=fjax.int64))
    """
    coords = _nonzero("nonzero", input)
    if not as_tuple:
        return coords
    if input.ndim == 0:
        return (jnp.zeros(coords.shape[0], jnp.int64),)
    return _columns(coords)


@defop(static=("size", "fill_value"), differentiable=False)
def nonzero_static(input, *, size, fill_value=-1):
    """``nonzero(input)`` with exactly ``size`` rows: the first ``size`` nonzero indices, then rows of
    ``fill_value``. Its shape does not depend on the values, so it also runs inside nn.Graph and fjax.func.

    Example::

        >>> fjax.nonzero_static(fjax.tensor([0.0, 3.0, 0.0, 4.0]), size=3)
        tensor([[ 1],
                [ 3],
                [-1]], dtype=fjax.int64)
    """
    if type(size) is not int or size < 0:
        raise ValueError(f"nonzero_static: size must be a non-negative int, got {size!r}")
    x = input.reshape(1) if input.ndim == 0 else input
    coords = jnp.nonzero(x, size=size, fill_value=fill_value)
    out = jnp.stack(coords, axis=1).astype(jnp.int64)
    return out[:, :0] if input.ndim == 0 else out


@defop(differentiable=False, jit=False)
def argwhere(input):
    """Indices of the nonzero (True) elements of ``input`` as a 2-D int64 tensor: one row per element,
    one column per dim of ``input``, in row-major order (``nonzero(input)``).

    The number of rows depends on the values: eager reads that count from the device once, and
    inside a trace (nn.Graph, fjax.func) the op raises; use ``fjax.where`` there.

    Example::

        >>> fjax.argwhere(fjax.tensor([1, 0, 3]))
        tensor([[0],
                [2]], dtype=fjax.int64)
        >>> fjax.tensor([[True, False], [False, True]]).argwhere()
        tensor([[0, 0],
                [1, 1]], dtype=fjax.int64)
    """
    return _nonzero("argwhere", input)


# ----------------------------------------------------------------------------- masked_select


@jax.jit
def _count_true(mask):
    return jnp.count_nonzero(mask)


@jax.jit
def _masked_select_padded(input, mask):
    """The elements of ``input`` where ``mask`` holds (both broadcast), padded to their full size."""
    shape = jnp.broadcast_shapes(jnp.shape(input), jnp.shape(mask))
    flat_mask = jnp.broadcast_to(mask, shape).reshape(-1)
    idx = jnp.nonzero(flat_mask, size=flat_mask.shape[0], fill_value=0)[0]
    return jnp.broadcast_to(input, shape).reshape(-1)[idx]


@defop(jit=False)
def masked_select(input, mask):
    """The elements of ``input`` where the bool ``mask`` is True, as a 1-D tensor in row-major order.

    ``input`` and ``mask`` broadcast together. The gradient flows back to the selected elements of
    ``input`` (summed over broadcast dims). The length depends on the mask's values: eager reads it
    from the device once, and inside a trace (nn.Graph, fjax.func) a traced mask makes the op raise;
    use ``fjax.where(mask, x, 0)`` there.

    Example::

        >>> x = fjax.tensor([[1.0, -2.0], [3.0, -4.0]])
        >>> fjax.masked_select(x, x > 0)
        tensor([1., 3.], dtype=fjax.float32)
        >>> x.masked_select(fjax.tensor([True, False]))
        tensor([1., 3.], dtype=fjax.float32)
    """
    if mask.dtype != jnp.bool_:
        raise TypeError(f"masked_select: expected a bool mask, got {mask.dtype}")
    try:
        shape = jnp.broadcast_shapes(jnp.shape(input), mask.shape)
    except ValueError:
        raise ValueError(
            f"masked_select: the shape of the mask {list(mask.shape)} must broadcast with the shape of the input "
            f"{list(jnp.shape(input))}"
        ) from None
    _need_values("masked_select", _WHERE_HINT, mask)
    total = int(np.prod(shape))
    if total == 0:
        return jnp.zeros((0,), jnp.result_type(input))
    with jax.ensure_compile_time_eval():
        n = _host_int(_count_true(mask)) * (total // mask.size) if mask.size else 0
    return _take_leading(_masked_select_padded(input, mask), n)


# ----------------------------------------------------------------------------- unique


@functools.partial(jax.jit, static_argnames=("sort",))
def _unique_rows(rows, sort):
    """Groups of equal rows of the 2-D ``rows`` (sorted first when ``sort``): the first row of each
    group, padded to ``len(rows)``; each row's group; each group's size (0 for padding); the count."""
    size = rows.shape[0]
    if sort:
        if rows.shape[1] == 1:
            perm = jnp.argsort(rows[:, 0], stable=True)
        else:
            perm = jnp.lexsort(rows.T[::-1])  # the first column is the primary key
        rows = rows[perm]
    new = jnp.concatenate([jnp.ones(1, bool), jnp.any(rows[1:] != rows[:-1], axis=1)])
    group = jnp.cumsum(new, dtype=jnp.int64) - 1
    starts = jnp.nonzero(new, size=size, fill_value=size)[0]
    values = rows[jnp.minimum(starts, size - 1)]
    ends = jnp.concatenate([starts[1:], jnp.full(1, size, starts.dtype)])
    counts = (ends - starts).astype(jnp.int64)
    inverse = jnp.zeros(size, jnp.int64).at[perm].set(group) if sort else group
    return values, inverse, counts, jnp.count_nonzero(new)


@_eager
def _unique(name, input, sort, return_inverse, return_counts, dim):
    _need_values(
        name,
        "count or compare values with a fixed-size op (fjax.bincount outside the trace, F.one_hot(x, n).sum(0), "
        "or comparisons against known values) instead",
        input,
    )
    if dim is None:
        rows = input.reshape(-1, 1)
        inverse_shape = input.shape

        def restore(v):
            return v.reshape(-1)

    else:
        if input.ndim == 0:
            raise ValueError(f"{name}: dim {dim} is out of range for a tensor of 0 dims")
        if not -input.ndim <= dim < input.ndim:
            raise ValueError(f"{name}: dim {dim} is out of range for a tensor of {input.ndim} dims")
        dim %= input.ndim
        rest = tuple(s for d, s in enumerate(input.shape) if d != dim)
        if 0 in rest:
            raise ValueError(
                f"{name}: there are 0-sized dims other than dim {dim} (shape {list(input.shape)}), "
                "so it cannot be applied"
            )
        moved = jnp.moveaxis(input, dim, 0)
        rows = moved.reshape(moved.shape[0], int(np.prod(rest)))
        inverse_shape = (input.shape[dim],)

        def restore(v):
            return jnp.moveaxis(v.reshape((v.shape[0],) + moved.shape[1:]), 0, dim)

    if rows.shape[0] == 0:
        values, inverse, counts = rows, jnp.zeros(inverse_shape, jnp.int64), jnp.zeros(0, jnp.int64)
    else:
        values, inverse, counts, n = _unique_rows(rows, sort)
        n = _host_int(n)
        values, counts = _take_leading(values, n), _take_leading(counts, n)
        inverse = inverse.reshape(inverse_shape)
    out = (restore(values),)
    if return_inverse:
        out += (inverse,)
    if return_counts:
        out += (counts,)
    return out[0] if len(out) == 1 else out


@defop(static=("sorted", "return_inverse", "return_counts", "dim"), differentiable=False, jit=False)
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of ``input`` in ascending order, as a 1-D tensor; with ``dim``, the distinct
    slices along that dim, in lexicographic order.

    With ``return_inverse`` also each element's (each slice's) position in the result, and with
    ``return_counts`` how often each distinct value occurs: the result is then a tuple ``(values,
    inverse, counts)`` holding those asked for, as torch returns. NaNs are all distinct. The output
    is sorted whatever ``sorted`` says (torch's CPU behaviour). Its length depends on the values:
    eager reads it from the device once, and inside a trace (nn.Graph, fjax.func) the op raises.

    Example::

        >>> x = fjax.tensor([3, 1, 3, 2, 1])
        >>> fjax.unique(x)
        tensor([1, 2, 3], dtype=fjax.int64)
        >>> values, inverse, counts = x.unique(return_inverse=True, return_counts=True)
        >>> inverse, counts
        (tensor([2, 0, 2, 1, 0], dtype=fjax.int64), tensor([2, 1, 2], dtype=fjax.int64))
        >>> fjax.unique(fjax.tensor([[1, 2], [0, 5], [1, 2]]), dim=0)
        tensor([[0, 5],
                [1, 2]], dtype=fjax.int64)
    """
    return _unique("unique", input, True, return_inverse, return_counts, dim)


@defop(static=("return_inverse", "return_counts", "dim"), differentiable=False, jit=False)
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` with each run of equal consecutive values collapsed to one, as a 1-D tensor; with
    ``dim``, runs of equal consecutive slices along that dim.

    ``return_inverse`` adds each element's (each slice's) position in the result and
    ``return_counts`` each run's length; the result is then a tuple ``(values, inverse, counts)`` of
    those asked for, as in torch. The length depends on the values: eager reads it from the device
    once, and inside a trace (nn.Graph, fjax.func) the op raises.

    Example::

        >>> x = fjax.tensor([1, 1, 2, 2, 3, 1, 1])
        >>> fjax.unique_consecutive(x)
        tensor([1, 2, 3, 1], dtype=fjax.int64)
        >>> x.unique_consecutive(return_counts=True)
        (tensor([1, 2, 3, 1], dtype=fjax.int64), tensor([2, 2, 1, 2], dtype=fjax.int64))
    """
    return _unique("unique_consecutive", input, False, return_inverse, return_counts, dim)


# ----------------------------------------------------------------------------- bincount


@jax.jit
def _extrema(input):
    return jnp.stack([jnp.min(input), jnp.max(input)])


@functools.partial(jax.jit, static_argnames=("length",))
def _bincount_kernel(input, weights, length):
    if weights is None:
        return jnp.zeros(length, jnp.int64).at[input].add(1)
    dtype = weights.dtype if weights.dtype in (jnp.float32, jnp.float64) else jnp.float64
    return jnp.zeros(length, dtype).at[input].add(weights.astype(dtype))


@defop(static=("minlength",), differentiable=False, jit=False)
def bincount(input, weights=None, minlength=0):
    """How often each value ``0, 1, 2, ...`` occurs in the 1-D non-negative integer ``input``; with
    ``weights`` (a 1-D tensor as long as ``input``), the sum of the weights of each value's elements.

    The result has ``max(input.max() + 1, minlength)`` entries: int64 counts, or the weights' dtype
    (float32 or float64; float64 for other weights). As in torch, the result carries no gradient.
    Its length depends on the values: eager reads the extremes from the device once, and inside a
    trace (nn.Graph, fjax.func) the op raises; ``F.one_hot(x, n).sum(0)`` is a fixed-size count.

    Example::

        >>> x = fjax.tensor([0, 1, 1, 3])
        >>> fjax.bincount(x)
        tensor([1, 2, 0, 1], dtype=fjax.int64)
        >>> x.bincount(fjax.tensor([0.5, 1.0, 2.0, 0.25]), minlength=6)
        tensor([0.5000, 3.0000, 0.0000, 0.2500, 0.0000, 0.0000], dtype=fjax.float32)
    """
    if not jnp.issubdtype(input.dtype, jnp.integer):
        raise TypeError(f"bincount: expected an integer input, got {input.dtype}")
    if input.ndim != 1:
        raise ValueError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None:
        weights = jnp.asarray(weights)
        if weights.ndim != 1 or weights.shape[0] != input.shape[0]:
            raise ValueError("bincount: weights should be 1-d and have the same length as input")
    if type(minlength) is not int or minlength < 0:
        raise ValueError(f"bincount: minlength should be an int >= 0, got {minlength!r}")
    _need_values(
        "bincount",
        "count into a fixed number of bins instead: F.one_hot(x, n).sum(0), or fjax.zeros(n).scatter_add(0, x, w)",
        input,
    )
    with jax.ensure_compile_time_eval():
        if not input.shape[0]:  # torch's counts, whatever the weights
            return jnp.zeros(minlength, jnp.int64)
        lo, hi = (int(v) for v in np.asarray(_extrema(input)))
        if lo < 0:
            raise ValueError("bincount only supports 1-d non-negative integral inputs.")
        return _bincount_kernel(input, weights, max(hi + 1, minlength))


# ----------------------------------------------------------------------------- histc


def _check_histc(input, bins=100, min=0, max=0):
    """torch's error for a data range that is not finite (read from the input when min == max)."""
    if isinstance(input, jax.core.Tracer) or float(min) != float(max) or not jnp.size(input):
        return
    if not jnp.issubdtype(jnp.result_type(input), jnp.floating):
        return  # the op reports the dtype
    lo, hi = (float(v) for v in np.asarray(_extrema(input)))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise OpError(f"fjax.histc: range of [{lo}, {hi}] is not finite")


@defop(static=("bins", "min", "max"), differentiable=False, check=_check_histc)
def histc(input, bins=100, min=0, max=0):
    """Histogram of the floating-point ``input`` in ``bins`` equal-width bins between ``min`` and ``max``.

    When ``min`` equals ``max`` the range is the data's smallest and largest value (widened by 1 on
    each side when those are equal too). Elements outside the range (and NaNs) are not counted; the
    last bin includes its right edge. The result has ``input``'s dtype and carries no gradient. Its
    shape is ``(bins,)`` whatever the values, so it also runs inside nn.Graph and fjax.func.

    Example::

        >>> fjax.histc(fjax.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3)
        tensor([0., 2., 1., 0.], dtype=fjax.float32)
        >>> fjax.tensor([0.0, 0.5, 1.0, 1.0]).histc(bins=2)
        tensor([1., 3.], dtype=fjax.float32)
    """
    if not jnp.issubdtype(input.dtype, jnp.floating):
        raise TypeError(f"histc: expected a floating-point input, got {input.dtype}")
    if type(bins) is not int or bins <= 0:
        raise ValueError(f"histc: bins must be > 0, got {bins!r}")
    lo, hi = float(min), float(max)
    dtype = input.dtype
    if lo == hi and input.size:
        lo64 = jnp.min(input).astype(jnp.float64)
        hi64 = jnp.max(input).astype(jnp.float64)
        same = lo64 == hi64
        lo_t = jnp.where(same, lo64 - 1, lo64).astype(dtype)
        hi_t = jnp.where(same, hi64 + 1, hi64).astype(dtype)
    else:
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"histc: range of [{lo}, {hi}] is not finite")
        if lo > hi:
            raise ValueError("histc: max must be larger than min")
        lo_t, hi_t = jnp.asarray(lo, dtype), jnp.asarray(hi, dtype)
    valid = (input >= lo_t) & (input <= hi_t)
    # torch's arithmetic, in the input's dtype: (x - lo) * bins / (hi - lo), truncated. XLA would
    # divide by a broadcast scalar as a multiplication by its reciprocal, which moves elements near
    # bin edges to the neighbouring bin: the barrier keeps an elementwise, correctly rounded division.
    scaled = (input - lo_t) * jnp.asarray(bins, dtype)
    scaled, width = jax.lax.optimization_barrier((scaled, jnp.broadcast_to(hi_t - lo_t, input.shape)))
    pos = scaled / width
    pos = jnp.minimum(jnp.where(valid, pos, 0).astype(jnp.int32), bins - 1)
    counts = jnp.zeros(bins, jnp.int64).at[pos.reshape(-1)].add(valid.reshape(-1).astype(jnp.int64))
    return counts.astype(dtype)
