"""torch.distributed's collectives on Tensors: all_reduce, broadcast, all_gather, reduce_scatter, barrier.

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
    stacked = _gather(tensor._data) if pg.size() > 1 else np.asarray(tensor._data)[None]
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
    stacked = _gather(input_tensor._data) if n > 1 else np.asarray(input_tensor._data)[None]
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
