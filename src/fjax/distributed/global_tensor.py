"""Global tensors: a Tensor whose array carries a NamedSharding over a placement's mesh.

The logical value is the array itself, so every op on global tensors is the same op on local
tensors, partitioned by XLA's SPMD partitioner. ``partial_sum`` is kept as a label on the
reduced value: converting it to any other sbp is exact, and ``to_local`` gives the part of
each rank (rank 0 holds the sum, the others zeros).
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding

from ..dispatch import functions as F
from ..errors import OpError
from ..tensor import Tensor, _Above
from .placement import _PartialSum, as_sbp_tuple, partial_sum, partition_spec, placement, sbp_of


def is_global(t: Tensor) -> bool:
    return isinstance(getattr(t._data, "sharding", None), NamedSharding)


def get_placement(t: Tensor) -> placement | None:
    return placement.from_mesh(t._data.sharding.mesh) if is_global(t) else None


def get_sbp(t: Tensor) -> tuple | None:
    if not is_global(t):
        return None
    sbp = list(sbp_of(t._data.sharding, t.ndim))
    for axis in t.__dict__.get("_partial", ()):
        sbp[axis] = partial_sum
    return tuple(sbp)


def to_global(t: Tensor, placement: placement | None = None, sbp=None, **kwargs) -> Tensor:
    """This tensor as a global tensor on ``placement`` with ``sbp`` (one entry per mesh axis).

    From a local tensor, the local value is the logical value (one process) or this process's
    piece of it (several processes, jax.distributed). Between two global layouts it is
    OneFlow's boxing: values never change, only where they live.
    """
    for k in kwargs:
        if k not in ("grad_sbp", "check_meta", "copy"):
            raise NotImplementedError(f"to_global: argument {k!r} is not supported")
    if placement is None:
        if not is_global(t):
            raise OpError("to_global: a local tensor needs a placement")
        placement = get_placement(t)
    if sbp is None:
        sbp = get_sbp(t) if is_global(t) else (broadcast_all(placement))
    sbp = as_sbp_tuple(sbp, placement)
    sharding = NamedSharding(placement.mesh, partition_spec(sbp, placement, tuple(t.shape)))
    if jax.process_count() > 1 and not is_global(t):
        arr = jax.make_array_from_process_local_data(sharding, t._data)
        out = Tensor._wrap(arr)
        out._requires_grad = t._requires_grad
    else:
        out = F._to_device(t, device=sharding)
    partial = tuple(i for i, s in enumerate(sbp) if isinstance(s, _PartialSum))
    if partial:
        out._partial = partial
    return out


def broadcast_all(p: placement) -> tuple:
    from .placement import broadcast

    return (broadcast,) * p.mesh.devices.ndim


def to_local(t: Tensor) -> Tensor:
    """This process's piece of a global tensor (its first device's shard), differentiably."""
    if not is_global(t):
        return t
    shard = t._data.addressable_shards[0]
    index = tuple(slice(s.start, s.stop, s.step) for s in shard.index)
    piece = t[index] if index else t
    out = F._to_device(piece, device=shard.device)
    mesh = t._data.sharding.mesh
    coords = {n: int(i) for n, i in zip(mesh.axis_names, jnp.argwhere(mesh.devices == shard.device)[0])}
    if any(coords[mesh.axis_names[a]] != 0 for a in t.__dict__.get("_partial", ())):
        out = out * 0  # a partial_sum holds the whole sum on rank 0 of that axis
    return out


def module_to_global(module, placement: placement, sbp) -> None:
    """Make every parameter and buffer of ``module`` global, in place: ``module.to_global``."""
    return module.to_global(placement, sbp)


_Above.global_tensor = sys.modules[__name__]
