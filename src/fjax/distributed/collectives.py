"""torch.distributed's collectives on Tensors (all_reduce, broadcast, all_gather, reduce_scatter,
reduce, gather, scatter, all_to_all, barrier) and on picklable Python objects (all_gather_object,
gather_object, broadcast_object_list, scatter_object_list).

Each writes its result into the given tensors in place, as torch does. In a world of one process
they check their arguments as torch does and leave the values as they are. Across processes
they run jax's multi-host collectives (``jax.experimental.multihost_utils``): each call gathers
the tensor from every process and reduces on the host side of the program, synchronously.
"""

from __future__ import annotations

import enum

import jax.numpy as jnp
import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .process_group import ProcessGroup, _group


class ReduceOp(enum.Enum):
    """How ``all_reduce``/``reduce_scatter`` combine the processes' values (torch's ``ReduceOp``).

    Example::

        >>> from fjax.distributed import ReduceOp
        >>> ReduceOp.SUM, ReduceOp.MAX.value
        (<ReduceOp.SUM: 0>, 4)
    """

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7


class Work:
    """The handle ``async_op=True`` returns. fjax's collectives finish before they return, so it is
    already complete.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> work = dist.all_reduce(fjax.ones(2), async_op=True)
        >>> work.wait(), work.is_completed()
        (True, True)
        >>> dist.destroy_process_group()
    """

    def __init__(self, result: list | None = None) -> None:
        self._result = result or []

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def result(self) -> list:
        return self._result


def _done(async_op: bool, tensors: list | None = None) -> Work | None:
    return Work(tensors) if async_op else None


def _check_tensor(op: str, name: str, tensor) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op}: expected parameter `{name}` of type fjax.Tensor, but got {type(tensor)} instead")


def _check_list(op: str, name: str, tensors) -> None:
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"{op}: expected parameter `{name}` to be a list of fjax.Tensors, got {type(tensors)}")


def _gather(array) -> np.ndarray:
    """Every process's ``array`` stacked on a new leading axis, in rank order (needs several processes)."""
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(array, tiled=False))


def _stacked(array, pg: ProcessGroup) -> np.ndarray:
    """Every process's ``array`` stacked on a new leading axis, in rank order (one process: its own)."""
    return _gather(array) if pg.size() > 1 else np.asarray(array)[None]


def _check_root_list(op: str, name: str, role: str, pg: ProcessGroup, root: int, tensor: Tensor, tensors) -> None:
    """A rooted collective's list (``gather_list``, ``scatter_list``): given on the root (``role``:
    destination or source), a world-size list of tensors shaped like ``tensor``; absent elsewhere."""
    if pg.rank() == root:
        if not tensors:
            raise ValueError(f"{op}: Argument ``{name}`` must be specified on {role} rank.")
        _check_list(op, name, tensors)
        if len(tensors) != pg.size():
            raise ValueError(f"{op}: {name} has {len(tensors)} tensors, expected the world size {pg.size()}")
        for i, t in enumerate(tensors):
            _check_same(op, tensor, t, i)
    elif tensors:
        raise ValueError(f"{op}: Argument ``{name}`` must NOT be specified on non-{role} ranks.")


def _write(tensor: Tensor, values) -> None:
    with no_grad():
        tensor.copy_(Tensor._wrap(jnp.asarray(values)))


def _reduce(stacked: np.ndarray, reduce_op: ReduceOp):
    """Combine the per-process values stacked on axis 0."""
    if reduce_op in (ReduceOp.SUM, ReduceOp.AVG):
        out = stacked.sum(axis=0, dtype=stacked.dtype)
        return out / stacked.shape[0] if reduce_op is ReduceOp.AVG else out
    if reduce_op is ReduceOp.PRODUCT:
        return stacked.prod(axis=0, dtype=stacked.dtype)
    if reduce_op is ReduceOp.MIN:
        return stacked.min(axis=0)
    if reduce_op is ReduceOp.MAX:
        return stacked.max(axis=0)
    ufunc = {ReduceOp.BAND: np.bitwise_and, ReduceOp.BOR: np.bitwise_or, ReduceOp.BXOR: np.bitwise_xor}[reduce_op]
    return ufunc.reduce(stacked, axis=0)


def _check_op(op: str, reduce_op, tensor: Tensor) -> None:
    if not isinstance(reduce_op, ReduceOp):
        raise TypeError(f"{op}: op must be a fjax.distributed.ReduceOp (ReduceOp.SUM, ...), got {reduce_op!r}")
    floating = tensor.is_floating_point() or tensor.is_complex()
    if reduce_op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and floating:
        raise RuntimeError(f"{op}: Cannot use ReduceOp.{reduce_op.name} with non-integral dtype {tensor.dtype}")
    if reduce_op is ReduceOp.AVG and not floating:
        raise RuntimeError(f"{op}: ReduceOp.AVG of a {tensor.dtype} tensor: result type Float can't be cast to it")


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None, async_op: bool = False):
    """Combine ``tensor`` across the processes with ``op`` and write the result into it on every process.

    Returns None, or an already completed :class:`Work` with ``async_op=True``.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> t = fjax.tensor([1., 2.])
        >>> dist.all_reduce(t, op=dist.ReduceOp.SUM)  # one process: the sum is t itself
        >>> t
        tensor([1., 2.], dtype=fjax.float32)
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    _check_tensor("all_reduce", "tensor", tensor)
    _check_op("all_reduce", op, tensor)
    if pg.size() > 1:
        stacked = _gather(tensor._data)
        _write(tensor, _reduce(stacked, op))
    return _done(async_op, [tensor])


def broadcast(
    tensor: Tensor,
    src: int | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_src: int | None = None,
):
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every process, in place.

    ``fjax.distributed.broadcast`` is also OneFlow's sbp ``broadcast``; calling it with a tensor
    runs this collective.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> t = fjax.tensor([3., 4.])
        >>> dist.broadcast(t, src=0)
        >>> t
        tensor([3., 4.], dtype=fjax.float32)
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    _check_tensor("broadcast", "tensor", tensor)
    if src is None and group_src is None:
        raise ValueError("broadcast: Must specify global_rank or group_rank")
    if src is not None and group_src is not None:
        raise ValueError("broadcast: Can only specify one of global_rank or group_rank")
    root = src if src is not None else group_src
    if not 0 <= root < pg.size():
        raise RuntimeError(f"broadcast: invalid root rank: {root} (world size {pg.size()})")
    if pg.size() > 1:
        from jax.experimental import multihost_utils

        _write(tensor, multihost_utils.broadcast_one_to_all(tensor._data, is_source=pg.rank() == root))
    return _done(async_op, [tensor])


def _check_same(op: str, expected: Tensor, got: Tensor, index: int) -> None:
    if tuple(got.shape) != tuple(expected.shape):
        raise RuntimeError(
            f"{op}: invalid tensor size at index {index} (expected {tuple(expected.shape)}, got {tuple(got.shape)})"
        )
    if got.dtype != expected.dtype:
        raise ValueError(f"{op}: tensors of different dtypes: found {got.dtype} and {expected.dtype}")


def all_gather(tensor_list: list, tensor: Tensor, group: ProcessGroup | None = None, async_op: bool = False):
    """Write every rank's ``tensor`` into ``tensor_list[rank]`` (a list of world-size tensors shaped like it).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> out = [fjax.zeros(2)]
        >>> dist.all_gather(out, fjax.tensor([5., 6.]))
        >>> out
        [tensor([5., 6.], dtype=fjax.float32)]
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    _check_list("all_gather", "tensor_list", tensor_list)
    _check_tensor("all_gather", "tensor", tensor)
    if len(tensor_list) != pg.size():
        raise RuntimeError(
            f"all_gather: invalid output tensor list (expected length {pg.size()}, the world size, got "
            f"{len(tensor_list)})"
        )
    for i, t in enumerate(tensor_list):
        _check_same("all_gather", tensor, t, i)
    stacked = _stacked(tensor._data, pg)
    for t, values in zip(tensor_list, stacked):
        _write(t, values)
    return _done(async_op, list(tensor_list))


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: ProcessGroup | None = None, async_op: bool = False
):
    """Every rank's ``input_tensor`` into ``output_tensor``, concatenated ``(world * d0, ...)`` or stacked
    ``(world, d0, ...)`` along the first dim.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> out = fjax.zeros(1, 2)
        >>> dist.all_gather_into_tensor(out, fjax.tensor([1., 2.]))
        >>> out
        tensor([[1., 2.]], dtype=fjax.float32)
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    _check_tensor("all_gather_into_tensor", "output_tensor", output_tensor)
    _check_tensor("all_gather_into_tensor", "input_tensor", input_tensor)
    n, shape = pg.size(), tuple(input_tensor.shape)
    allowed = [(n, *shape)] + ([(n * shape[0], *shape[1:])] if shape else [])
    if tuple(output_tensor.shape) not in allowed:
        raise RuntimeError(
            f"all_gather_into_tensor: output_tensor of shape {tuple(output_tensor.shape)} must be one of {allowed} "
            f"for input of shape {shape} and world size {n}"
        )
    if output_tensor.dtype != input_tensor.dtype:
        raise ValueError(
            f"all_gather_into_tensor: tensors of different dtypes: {output_tensor.dtype} and {input_tensor.dtype}"
        )
    stacked = _stacked(input_tensor._data, pg)
    _write(output_tensor, stacked.reshape(tuple(output_tensor.shape)))
    return _done(async_op, [output_tensor])


def reduce_scatter(
    output: Tensor, input_list: list, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None, async_op=False
):
    """Reduce ``input_list[r]`` over the processes with ``op`` and write it into ``output`` on rank ``r``.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> out = fjax.zeros(2)
        >>> dist.reduce_scatter(out, [fjax.tensor([1., 2.])])
        >>> out
        tensor([1., 2.], dtype=fjax.float32)
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    _check_tensor("reduce_scatter", "output", output)
    _check_list("reduce_scatter", "input_list", input_list)
    if len(input_list) != pg.size():
        raise RuntimeError(
            f"reduce_scatter: invalid input tensor list size {len(input_list)}, must be world size {pg.size()}"
        )
    for i, t in enumerate(input_list):
        _check_same("reduce_scatter", output, t, i)
    _check_op("reduce_scatter", op, output)
    mine = input_list[pg.rank()]
    if pg.size() > 1:
        stacked = _gather(jnp.stack([t._data for t in input_list]))[:, pg.rank()]
        _write(output, _reduce(stacked, op))
    else:
        _write(output, mine._data)
    return _done(async_op, [output])


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids=None, timeout=None):
    """Wait until every process of the group reaches this call.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> dist.barrier()
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    if pg.size() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices("fjax.distributed.barrier")
    return _done(async_op)


def _root(op: str, pg: ProcessGroup, rank, group_rank, name: str) -> int:
    """The root of a rooted collective (``dst``/``src`` or ``group_dst``/``group_src``: the same
    in fjax, whose groups span the world), checked as torch checks it."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{op}: Can only specify one of {name} or group_{name}")
    root = rank if rank is not None else group_rank if group_rank is not None else 0
    if not 0 <= root < pg.size():
        raise ValueError(f"{op}: {name}={root} is not a rank of the group (world size {pg.size()})")
    return root


def reduce(
    tensor: Tensor,
    dst: int | None = None,
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_dst: int | None = None,
):
    """Combine ``tensor`` across the processes with ``op`` into ``tensor`` on rank ``dst`` (the
    other ranks' tensors are left as they are).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> t = fjax.tensor([1., 2.])
        >>> dist.reduce(t, dst=0)
        >>> t
        tensor([1., 2.], dtype=fjax.float32)
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    _check_tensor("reduce", "tensor", tensor)
    _check_op("reduce", op, tensor)
    root = _root("reduce", pg, dst, group_dst, "dst")
    if pg.size() > 1:
        stacked = _gather(tensor._data)
        if pg.rank() == root:
            _write(tensor, _reduce(stacked, op))
    return _done(async_op, [tensor])


def gather(
    tensor: Tensor,
    gather_list: list | None = None,
    dst: int | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_dst: int | None = None,
):
    """Every rank's ``tensor`` into ``gather_list[rank]`` on rank ``dst`` (given there only).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> out = [fjax.zeros(2)]
        >>> dist.gather(fjax.tensor([3., 4.]), out, dst=0)
        >>> out
        [tensor([3., 4.], dtype=fjax.float32)]
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    _check_tensor("gather", "tensor", tensor)
    root = _root("gather", pg, dst, group_dst, "dst")
    _check_root_list("gather", "gather_list", "destination", pg, root, tensor, gather_list)
    stacked = _stacked(tensor._data, pg)
    if pg.rank() == root:
        for t, values in zip(gather_list, stacked):
            _write(t, values)
    return _done(async_op, list(gather_list or []))


def scatter(
    tensor: Tensor,
    scatter_list: list | None = None,
    src: int | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
    group_src: int | None = None,
):
    """``scatter_list[rank]`` of rank ``src`` (given there only) into ``tensor`` on every rank.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> t = fjax.zeros(2)
        >>> dist.scatter(t, [fjax.tensor([5., 6.])], src=0)
        >>> t
        tensor([5., 6.], dtype=fjax.float32)
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    _check_tensor("scatter", "tensor", tensor)
    root = _root("scatter", pg, src, group_src, "src")
    _check_root_list("scatter", "scatter_list", "source", pg, root, tensor, scatter_list)
    if pg.size() > 1:
        from jax.experimental import multihost_utils

        mine = pg.rank() == root
        stacked = (
            jnp.stack([t._data for t in scatter_list]) if mine else jnp.zeros((pg.size(), *tensor.shape), tensor.dtype)
        )
        _write(tensor, np.asarray(multihost_utils.broadcast_one_to_all(stacked, is_source=mine))[pg.rank()])
    else:
        _write(tensor, scatter_list[0]._data)
    return _done(async_op, [tensor])


def all_to_all(output_tensor_list: list, input_tensor_list: list, group: ProcessGroup | None = None, async_op=False):
    """``output_tensor_list[j]`` on rank ``i`` becomes ``input_tensor_list[i]`` of rank ``j``.
    Every tensor must have the same shape (torch allows ragged ones: NotImplementedError here).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> out = [fjax.zeros(1)]
        >>> dist.all_to_all(out, [fjax.tensor([9.])])
        >>> out
        [tensor([9.], dtype=fjax.float32)]
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    _check_list("all_to_all", "output_tensor_list", output_tensor_list)
    _check_list("all_to_all", "input_tensor_list", input_tensor_list)
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(
            f"all_to_all: expected {n} (the world size) input and output tensors, got {len(input_tensor_list)} "
            f"and {len(output_tensor_list)}"
        )
    first = input_tensor_list[0]
    if any(tuple(t.shape) != tuple(first.shape) for t in [*input_tensor_list, *output_tensor_list]):
        raise NotImplementedError(
            "all_to_all: tensors of different shapes are not supported (fjax gathers equal shapes)"
        )
    for i, t in enumerate(output_tensor_list):
        _check_same("all_to_all", first, t, i)
    mine = jnp.stack([t._data for t in input_tensor_list])
    stacked = _stacked(mine, pg)  # [source rank, destination rank, ...]
    for j, t in enumerate(output_tensor_list):
        _write(t, stacked[j, pg.rank()])
    return _done(async_op, list(output_tensor_list))


def all_to_all_single(
    output: Tensor,
    input: Tensor,  # noqa: A002 - torch's name
    output_split_sizes=None,
    input_split_sizes=None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
):
    """``all_to_all`` of ``input``'s equal chunks along dim 0 into ``output``'s (uneven
    ``*_split_sizes`` raise NotImplementedError).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> out = fjax.zeros(2)
        >>> dist.all_to_all_single(out, fjax.tensor([1., 2.]))
        >>> out
        tensor([1., 2.], dtype=fjax.float32)
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    _check_tensor("all_to_all_single", "output", output)
    _check_tensor("all_to_all_single", "input", input)
    n = pg.size()
    for name, sizes in (("input_split_sizes", input_split_sizes), ("output_split_sizes", output_split_sizes)):
        if sizes and len(set(sizes)) > 1:
            raise NotImplementedError(f"all_to_all_single: uneven {name}={list(sizes)} are not supported")
    if tuple(output.shape) != tuple(input.shape) or (input.dim() and input.shape[0] % n):
        raise ValueError(
            f"all_to_all_single: input {tuple(input.shape)} and output {tuple(output.shape)} must have the same shape "
            f"with dim 0 divisible by the world size {n}"
        )
    chunks = list(input.reshape(n, -1, *input.shape[1:]).unbind(0))
    outs = [Tensor._wrap(jnp.zeros_like(c._data)) for c in chunks]
    all_to_all(outs, chunks, group)
    _write(output, jnp.concatenate([o._data for o in outs]).reshape(tuple(output.shape)))
    return _done(async_op, [output])


def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op=False,  # noqa: A002
):
    """``reduce_scatter`` of ``input``'s chunks along dim 0 (``input`` is ``(world * d0, ...)``
    for an output ``(d0, ...)``): rank ``r`` gets the reduction of chunk ``r``.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> out = fjax.zeros(2)
        >>> dist.reduce_scatter_tensor(out, fjax.tensor([1., 2.]))
        >>> out
        tensor([1., 2.], dtype=fjax.float32)
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    _check_tensor("reduce_scatter_tensor", "output", output)
    _check_tensor("reduce_scatter_tensor", "input", input)
    n, shape = pg.size(), tuple(output.shape)
    want = (n * shape[0], *shape[1:]) if shape else (n,)
    if tuple(input.shape) != want:
        raise RuntimeError(
            f"reduce_scatter_tensor: input of shape {tuple(input.shape)} must be {want} (world size {n} times the "
            f"output's {shape} along dim 0)"
        )
    chunks = list(input.reshape(n, *shape).unbind(0))
    return reduce_scatter(output, chunks, op, group, async_op)


def monitored_barrier(group: ProcessGroup | None = None, timeout=None, wait_all_ranks: bool = False):
    """``barrier`` (torch's gloo barrier that reports ranks that do not arrive).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> dist.monitored_barrier()
        >>> dist.destroy_process_group()
    """
    return barrier(group)


# -- Python objects: pickled to bytes, gathered as uint8 arrays padded to the longest ------------


def _gather_objects(obj, pg: ProcessGroup) -> list:
    """Every rank's ``obj``, in rank order."""
    import pickle

    if pg.size() == 1:
        return [pickle.loads(pickle.dumps(obj))]  # (a copy, as the round trip through bytes makes)
    data = np.frombuffer(pickle.dumps(obj), np.uint8)
    lengths = _gather(np.array([data.size], np.int64))[:, 0]
    padded = np.zeros(int(lengths.max()), np.uint8)
    padded[: data.size] = data
    stacked = _gather(padded)
    return [pickle.loads(stacked[r, : lengths[r]].tobytes()) for r in range(pg.size())]


def all_gather_object(object_list: list, obj, group: ProcessGroup | None = None) -> None:
    """Every rank's picklable ``obj`` into ``object_list[rank]`` (a list of world size).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> out = [None]
        >>> dist.all_gather_object(out, {"loss": 0.5})
        >>> out
        [{'loss': 0.5}]
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    if len(object_list) != pg.size():
        raise ValueError(
            f"all_gather_object: object_list has {len(object_list)} entries, expected the world size {pg.size()}"
        )
    object_list[:] = _gather_objects(obj, pg)


def gather_object(obj, object_gather_list: list | None = None, dst: int | None = None, group=None, group_dst=None):
    """Every rank's ``obj`` into ``object_gather_list`` on rank ``dst`` (given there only).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> out = [None]
        >>> dist.gather_object(("rank", 0), out, dst=0)
        >>> out
        [('rank', 0)]
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    root = _root("gather_object", pg, dst, group_dst, "dst")
    if pg.rank() == root and (object_gather_list is None or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: object_gather_list must be a list of the world size {pg.size()} on dst")
    objects = _gather_objects(obj, pg)
    if pg.rank() == root:
        object_gather_list[:] = objects


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None, group_src=None) -> None:
    """Rank ``src``'s ``object_list`` entries into ``object_list`` on every rank (same length).

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> objs = ["config", 3]
        >>> dist.broadcast_object_list(objs, src=0)
        >>> objs
        ['config', 3]
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    root = _root("broadcast_object_list", pg, src, group_src, "src")
    if pg.size() > 1:
        object_list[:] = _gather_objects(list(object_list), pg)[root]


def scatter_object_list(
    scatter_object_output_list: list,
    scatter_object_input_list: list | None = None,
    src=None,
    group=None,
    group_src=None,
) -> None:
    """``scatter_object_input_list[rank]`` of rank ``src`` into ``scatter_object_output_list[0]``.

    Example::

        >>> import fjax.distributed as dist
        >>> dist.init_process_group("gloo")
        >>> out = [None]
        >>> dist.scatter_object_list(out, [{"shard": 0}], src=0)
        >>> out
        [{'shard': 0}]
        >>> dist.destroy_process_group()
    """
    pg = _group(group)
    root = _root("scatter_object_list", pg, src, group_src, "src")
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError(
            "scatter_object_list: Expected argument scatter_object_output_list to be a list of size at least 1."
        )
    mine = pg.rank() == root
    if mine and (scatter_object_input_list is None or len(scatter_object_input_list) != pg.size()):
        raise ValueError(f"scatter_object_list: scatter_object_input_list must have the world size {pg.size()} on src")
    sent = _gather_objects(list(scatter_object_input_list) if mine else None, pg)[root]
    scatter_object_output_list[0] = sent[pg.rank()]


def _no_point_to_point(name: str):
    return NotImplementedError(
        f"fjax.distributed.{name}: point-to-point messages are not supported (fjax's collectives are JAX's "
        "multi-host ones, which every rank joins); use broadcast, scatter or all_to_all"
    )


def send(tensor, dst=None, group=None, tag: int = 0, group_dst=None):
    """torch.distributed.send: not supported (raises NotImplementedError); ``broadcast`` or
    ``scatter`` from the sending rank reach every rank.

    Example::

        >>> fjax.distributed.send(fjax.ones(1), dst=1)
        Traceback (most recent call last):
        NotImplementedError: fjax.distributed.send: point-to-point messages are not supported ...
    """
    raise _no_point_to_point("send")


def recv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    """torch.distributed.recv: not supported (raises NotImplementedError).

    Example::

        >>> fjax.distributed.recv(fjax.ones(1), src=0)
        Traceback (most recent call last):
        NotImplementedError: fjax.distributed.recv: point-to-point messages are not supported ...
    """
    raise _no_point_to_point("recv")


def isend(tensor, dst=None, group=None, tag: int = 0, group_dst=None):
    """torch.distributed.isend: not supported (raises NotImplementedError).

    Example::

        >>> fjax.distributed.isend(fjax.ones(1), dst=1)
        Traceback (most recent call last):
        NotImplementedError: fjax.distributed.isend: point-to-point messages are not supported ...
    """
    raise _no_point_to_point("isend")


def irecv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    """torch.distributed.irecv: not supported (raises NotImplementedError).

    Example::

        >>> fjax.distributed.irecv(fjax.ones(1), src=0)
        Traceback (most recent call last):
        NotImplementedError: fjax.distributed.irecv: point-to-point messages are not supported ...
    """
    raise _no_point_to_point("irecv")


def batch_isend_irecv(p2p_op_list):
    """torch.distributed.batch_isend_irecv: not supported (raises NotImplementedError).

    Example::

        >>> fjax.distributed.batch_isend_irecv([])
        Traceback (most recent call last):
        NotImplementedError: fjax.distributed.batch_isend_irecv: point-to-point messages are not supported ...
    """
    raise _no_point_to_point("batch_isend_irecv")
