"""Segment reductions: ``torch.segment_reduce`` as a pure function of jax arrays.

Segments are consecutive runs along ``axis`` given by their ``lengths`` or ``offsets``; the
leading dims of those (before the last) are ``data``'s dims before ``axis``, each row its own
segmentation. Each position's segment is found by ``searchsorted`` on the offsets, and the
reduction is ``jax.ops.segment_*`` over the flattened (batch, segment) ids.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import OpError
from ._registry import defop

_REDUCE = {"sum": "sum", "mean": "mean", "max": "max", "amax": "max", "min": "min", "amin": "min", "prod": "prod"}


def _axis(data, axis: int) -> int:
    nd = max(jnp.ndim(data), 1)
    if not -nd <= axis < nd:
        raise OpError(f"segment_reduce: axis {axis} is out of range for data of {jnp.ndim(data)} dims")
    return axis % nd


def _check_segment_reduce(
    data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None
):
    if reduce not in _REDUCE:
        raise OpError(f"segment_reduce: reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if indices is not None:
        raise NotImplementedError("segment_reduce: indices (indices based reduction is not supported yet, as in torch)")
    seg = offsets if offsets is not None else lengths
    if seg is None:
        raise OpError("segment_reduce(): Either lengths or offsets must be defined.")
    name = "offsets" if offsets is not None else "lengths"
    if not jnp.issubdtype(jnp.result_type(seg), jnp.integer):
        raise OpError(f"segment_reduce: {name} must be an integer tensor, got {jnp.result_type(seg)}")
    if not jnp.issubdtype(jnp.result_type(data), jnp.floating):
        raise OpError(f"segment_reduce: data must be a floating tensor, got {jnp.result_type(data)}")
    ax = _axis(data, axis)
    if ax != jnp.ndim(seg) - 1:
        raise OpError(f"segment_reduce(): Expected axis to be the last dimension of {name} but got {ax}.")
    if tuple(jnp.shape(seg)[:-1]) != tuple(jnp.shape(data)[:ax]):
        raise OpError(
            f"segment_reduce: {name} of shape {tuple(jnp.shape(seg))} must lead with data's dims before axis "
            f"{ax}, {tuple(jnp.shape(data)[:ax])}"
        )
    if offsets is not None and jnp.shape(seg)[-1] < 1:
        raise OpError("segment_reduce: offsets must hold at least one entry along its last dim")
    if isinstance(seg, jax.core.Tracer):
        return
    values = np.asarray(seg)
    steps = values if offsets is None else np.diff(values, axis=-1)
    if steps.size and steps.min() < 0:
        raise OpError(f"segment_reduce: {name} must give non-negative segment lengths, got {values.tolist()}")
    if offsets is None and not unsafe and values.size and np.any(values.sum(-1) != jnp.shape(data)[ax]):
        raise OpError(
            "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) "
            f"when !unsafe (data.size({ax}) = {jnp.shape(data)[ax]}, lengths sum to {values.sum(-1).tolist()})."
        )


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def _segment_prod(x, ids, n):
    return jax.ops.segment_prod(x, ids, num_segments=n)


def _segment_prod_fwd(x, ids, n):
    return _segment_prod(x, ids, n), (x, ids)


def _segment_prod_bwd(n, res, g):
    """The exact gradient, zeros included: an element's gradient is the product of the others in its
    segment (the product of the non-zero ones when it is the only zero, zero past one zero)."""
    x, ids = res
    zero = x == 0
    nonzero_prod = jax.ops.segment_prod(jnp.where(zero, jnp.ones_like(x), x), ids, num_segments=n)
    zeros = jax.ops.segment_sum(zero.astype(jnp.int32), ids, num_segments=n)
    gp = jnp.take(g * nonzero_prod, ids, axis=0, mode="fill", fill_value=0)
    z = jnp.take(zeros, ids, axis=0, mode="fill", fill_value=0)
    grad = jnp.where(zero, jnp.where(z == 1, gp, 0), jnp.where(z == 0, gp / jnp.where(zero, 1, x), 0))
    return grad.astype(x.dtype), None


_segment_prod.defvjp(_segment_prod_fwd, _segment_prod_bwd)


@defop(static=("reduce", "axis", "unsafe", "initial"), method=False, check=_check_segment_reduce)
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """Reduce consecutive segments of ``data`` along ``axis``: the segments are given by their
    ``lengths`` or by ``offsets`` (``offsets[..., i]`` to ``offsets[..., i + 1]``).

    An empty segment gives ``initial`` when given, else the reduction's identity (0 for sum, 1 for
    prod, ``-inf``/``inf`` for max/min, NaN for mean); ``initial`` also enters every segment's
    reduction (a mean is ``(initial + sum) / length``). Max/min gradients are shared evenly among
    tied extremes (torch's CPU kernel shares only positive ones and gives negative ones to each in full).

    Args:
        data: the floating tensor to reduce.
        reduce: ``"sum"``, ``"mean"``, ``"max"`` (or ``"amax"``), ``"min"`` (or ``"amin"``) or ``"prod"``.
        lengths: the integer lengths of the segments, of shape ``data.shape[:axis] + (segments,)``.
        indices: not supported (raises NotImplementedError, as torch's does).
        offsets: the integer segment boundaries, of shape ``data.shape[:axis] + (segments + 1,)``;
            taken over ``lengths`` when both are given.
        axis: the dim reduced (the last dim of ``lengths``/``offsets``).
        unsafe: skip the check that ``lengths`` sum to ``data.shape[axis]``.
        initial: the start value of every segment's reduction (a number), or None.

    Example::

        >>> data = fjax.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> fjax.segment_reduce(data, "max", lengths=fjax.tensor([2, 1]))
        tensor([[3., 4.],
                [5., 6.]], dtype=fjax.float32)
        >>> fjax.segment_reduce(data, "sum", offsets=fjax.tensor([0, 1, 1, 3]))
        tensor([[ 1.,  2.],
                [ 0.,  0.],
                [ 8., 10.]], dtype=fjax.float32)
    """
    kind = _REDUCE[reduce]
    ax = _axis(data, axis)
    if offsets is None:
        zero = jnp.zeros(lengths.shape[:-1] + (1,), lengths.dtype)
        offsets = jnp.concatenate([zero, jnp.cumsum(lengths, axis=-1)], axis=-1)
    segments = offsets.shape[-1] - 1
    batch = int(np.prod(data.shape[:ax], dtype=np.int64))
    size = data.shape[ax]
    rows = offsets.reshape(batch, segments + 1)
    pos = jnp.arange(size)

    def ids_of(row):  # each position's segment; positions outside [row[0], row[-1]) in none (= segments)
        seg = jnp.searchsorted(row[1:], pos, side="right")
        return jnp.where(pos < row[0], segments, seg)

    ids = jax.vmap(ids_of)(rows)  # (batch, size)
    ids = jnp.where(ids < segments, ids + segments * jnp.arange(batch)[:, None], batch * segments).reshape(-1)
    x = data.reshape((batch * size,) + data.shape[ax + 1 :])
    n = batch * segments
    if kind in ("sum", "mean"):
        out = jax.ops.segment_sum(x, ids, num_segments=n)
        if initial is not None:
            out = out + jnp.asarray(initial, out.dtype)
        if kind == "mean":
            count = jax.ops.segment_sum(jnp.ones_like(ids), ids, num_segments=n)
            count = count.reshape((n,) + (1,) * (x.ndim - 1)).astype(out.dtype)
            out = out / count if initial is None else jnp.where(count > 0, out / jnp.maximum(count, 1), out)
    elif kind == "prod":
        out = _segment_prod(x, ids, n)
        if initial is not None:
            out = out * jnp.asarray(initial, out.dtype)
    else:
        segment_op = jax.ops.segment_max if kind == "max" else jax.ops.segment_min
        out = segment_op(x, ids, num_segments=n)
        if initial is not None:  # torch: the gradient goes to the data's extremes only, never split with it
            init = jnp.asarray(initial, out.dtype)
            out = jnp.where((init > out) if kind == "max" else (init < out), init, out)
    return out.reshape(data.shape[:ax] + (segments,) + data.shape[ax + 1 :])
