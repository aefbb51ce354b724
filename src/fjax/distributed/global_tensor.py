"""Global tensors: a Tensor whose array carries a NamedSharding over a placement's mesh.

The logical value is the array itself, so every op on global tensors is the same op on local
tensors, partitioned by XLA's SPMD partitioner. ``partial_sum`` is kept as a label on the
reduced value: converting it to any other sbp is exact, and ``to_local`` gives the part of
each rank (rank 0 holds the sum, the others zeros).
"""

from __future__ import annotations

import sys
import threading

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding

from .. import _lazy
from ..device import MetaArray
from ..dispatch import functions as F
from ..errors import OpError
from ..tensor import Tensor, _Above
from .placement import _PartialSum, as_sbp_tuple, partial_sum, partition_spec, placement, sbp_of


def is_global(t: Tensor) -> bool:
    a = t._meta
    if type(a) is _lazy.Pending and a.seg is not None and not a.seg.reads_global():
        return False  # (no flush: a value computed from local arrays only is local)
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


class _Staged(threading.local):
    """``devices``: while an nn.Graph with pipeline stages traces, the ids of its devices (its
    step is one program over all of them: ``to_global`` onto a stage's placement keeps values)."""

    devices = None


staged = _Staged()


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
    if staged.devices is not None and {d.id for d in placement.mesh.devices.flat} <= staged.devices:
        return t  # between the stages of a staged nn.Graph: one program, values stay in place
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


# -- OneFlow's global mode (fjax.utils.global_view.global_mode) and creation ops' placement= ---------
class _Mode(threading.local):
    """This thread's stack of global modes: ``(enabled, placement, sbp tuple)`` entries."""

    def __init__(self):
        self.stack = []


_mode = _Mode()


def push_mode(enabled: bool, placement_=None, sbp=None) -> None:
    """Enter a global mode (``global_mode.__enter__``): validated here, popped by ``pop_mode``."""
    if enabled:
        if not isinstance(placement_, placement) or sbp is None:
            raise OpError(
                f"global_mode: an enabled global mode needs a placement and an sbp, got placement={placement_!r}, "
                f"sbp={sbp!r}"
            )
        sbp = as_sbp_tuple(sbp, placement_, "global_mode")
    _mode.stack.append((bool(enabled), placement_ if enabled else None, sbp if enabled else None))


def pop_mode() -> None:
    """Leave the innermost global mode (``global_mode.__exit__``)."""
    _mode.stack.pop()


def current_mode() -> tuple:
    """``(enabled, placement, sbp tuple)`` of the innermost global mode of this thread."""
    return _mode.stack[-1] if _mode.stack else (False, None, None)


def created(op: str, t: Tensor, placement_=None, sbp=None, device=None, random: bool = False) -> Tensor:
    """A creation op's result: ``t`` (its logical value) as a global tensor when ``placement=``
    and ``sbp=`` are given or a global mode is on, else ``t`` itself.

    The value is the same whatever the sbp: a random op draws the whole logical tensor from one
    key and each device keeps its piece (OneFlow draws each split piece with its own seed: the
    same distribution, other numbers). With several processes each one computes the same
    logical value (seed them alike) and keeps its own pieces.
    """
    if placement_ is None and sbp is None:
        enabled, placement_, sbp = current_mode()
        if not enabled or isinstance(t._data, MetaArray):  # meta tensors stay local
            return t
    elif placement_ is None:
        raise OpError(f"{op}: sbp={sbp!r} needs placement= too (a global tensor needs both)")
    elif sbp is None:
        raise OpError(f"{op}: placement={placement_!r} needs sbp= too (a global tensor needs both)")
    elif device is not None:
        raise OpError(f"{op}: give device= for a local tensor or placement=/sbp= for a global one, not both")
    if not isinstance(placement_, placement):
        raise OpError(f"{op}: placement must be a fjax.placement, got {type(placement_).__name__}")
    if isinstance(t._data, MetaArray):
        raise NotImplementedError(f"{op}: a global tensor on the meta device is not supported")
    sbp = as_sbp_tuple(sbp, placement_, op)
    partial = tuple(i for i, s in enumerate(sbp) if isinstance(s, _PartialSum))
    if partial and random:
        raise OpError(f"{op}: a random op makes split or broadcast global tensors, not partial_sum (as OneFlow)")
    sharding = NamedSharding(placement_.mesh, partition_spec(sbp, placement_, tuple(t.shape), op))
    value = t._data
    if jax.process_count() > 1 and not isinstance(value, jax.core.Tracer):
        out = Tensor._wrap(jax.make_array_from_callback(value.shape, sharding, lambda index: value[index]))
    else:
        out = F._to_device(t.detach(), device=sharding)
    if partial:
        out._partial = partial
    if t.requires_grad:
        out.requires_grad = True
    return out


def module_to_global(module, placement: placement, sbp) -> None:
    """Make every parameter and buffer of ``module`` global, in place: ``module.to_global``."""
    return module.to_global(placement, sbp)


_Above.global_tensor = sys.modules[__name__]
