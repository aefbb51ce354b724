"""DistributedDataParallel's gradient reducer: torch's buckets, each all-reduced asynchronously
as soon as its last gradient is ready during backward.

Buckets follow torch's reducer once it has rebuilt its buckets in the order gradients become
ready: parameters in reverse order (the order a backward usually produces their gradients),
grouped by dtype and device, a bucket closed once it holds ``first_bucket_bytes`` (1 MiB) for
the first bucket and ``bucket_cap_mb`` (25 MB) for the others. A bucket's gradients are
concatenated into one flat array and summed over the processes by one jitted program over a
global array (one device per process); JAX dispatch is asynchronous, so launching it returns
at once and the backward continues while the collective runs. ``finalize`` splits each reduced
bucket back into the parameters' ``.grad``, divided by the world size.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

FIRST_BUCKET_BYTES = 1024 * 1024  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
DEFAULT_BUCKET_CAP_MB = 25.0


def _nbytes(p) -> int:
    return int(np.prod(tuple(p.shape), dtype=np.int64)) * np.dtype(p._data.dtype).itemsize


def compute_bucket_assignment(params, limits) -> list[list[int]]:
    """Indices of ``params`` per bucket, torch's ``_compute_bucket_assignment_by_size``.

    Parameters are taken in the given order and grouped by (dtype, device); a group's open
    bucket is closed once its bytes reach the current limit, and the limit then moves to the
    next of ``limits`` (the last one repeats). Buckets come out ordered by their first index.

    Args:
        params: the tensors, in the order their gradients are expected to be ready.
        limits: byte limits, the first bucket's first (e.g. ``[1 MiB, 25 MB]``).

    Example:
        >>> from fjax.nn.parallel.reducer import compute_bucket_assignment
        >>> ps = [fjax.zeros(100), fjax.zeros(100), fjax.zeros(10)]
        >>> compute_bucket_assignment(ps, [400, 800])
        [[0], [1, 2]]
    """
    limits = [int(x) for x in limits]
    if not limits or any(x <= 0 for x in limits):
        raise ValueError(f"DistributedDataParallel: bucket size limits must be positive byte counts, got {limits}")
    open_: dict = {}  # (dtype, device) -> [indices, bytes, limit position]
    done: list[list[int]] = []
    for i, p in enumerate(params):
        key = (np.dtype(p._data.dtype).str, str(p.device))
        b = open_.setdefault(key, [[], 0, 0])
        b[0].append(i)
        b[1] += _nbytes(p)
        if b[1] >= limits[b[2]]:
            done.append(b[0])
            open_[key] = [[], 0, min(b[2] + 1, len(limits) - 1)]
    done.extend(b[0] for b in open_.values() if b[0])
    return sorted(done, key=lambda idx: idx[0])


@functools.lru_cache(maxsize=None)
def _pack(n: int):
    return jax.jit(lambda *gs: jnp.concatenate([g.reshape(-1) for g in gs]) if n > 1 else gs[0].reshape(-1))


@functools.lru_cache(maxsize=None)
def _unpack(shapes: tuple, world: int):
    offsets = np.cumsum([0] + [int(np.prod(s, dtype=np.int64)) for s in shapes])

    def split(flat):
        return [flat[a:b].reshape(s) / world for a, b, s in zip(offsets[:-1], offsets[1:], shapes)]

    return jax.jit(split)


@functools.lru_cache(maxsize=None)
def _summer(mesh: Mesh):
    return jax.jit(lambda x: x.sum(axis=0), out_shardings=NamedSharding(mesh, P()))


def _process_mesh(device) -> Mesh:
    """One device per process, this process's being ``device``, in process order."""
    per = {}
    for d in jax.devices():
        if d.process_index == jax.process_index():
            continue
        per.setdefault(d.process_index, d)
    per[jax.process_index()] = device
    return Mesh(np.array([per[i] for i in sorted(per)]), ("ddp",))


def all_reduce_sum_async(flat, world: int):
    """The sum of ``flat`` (a 1-d local array) over the ``world`` processes, as a local array whose
    computation has been dispatched, not waited for."""
    if world == 1:
        return flat
    (device,) = flat.devices()
    mesh = _process_mesh(device)
    if mesh.devices.size != world:
        raise RuntimeError(
            f"DistributedDataParallel: the process group has {world} processes but JAX sees {mesh.devices.size}"
        )
    glob = jax.make_array_from_single_device_arrays(
        (world, flat.shape[0]), NamedSharding(mesh, P("ddp")), [flat.reshape(1, -1)]
    )
    return _summer(mesh)(glob).addressable_data(0)


class Reducer:
    """Bucketed, asynchronous gradient averaging for DistributedDataParallel.

    ``mark_ready(i, grad)`` hands over parameter ``i``'s local gradient (its whole ``.grad`` after
    this backward's accumulation); the bucket that gets its last gradient is launched at once.
    ``accumulated(i)`` is called once ``params[i].grad`` holds this backward's sum (the
    post-accumulate-grad hook); a launched bucket's averages are written into the ``.grad`` of
    its parameters as they accumulate. ``log`` records ``("launch", bucket, bytes)`` entries in
    issue order; a caller may append its own progress entries to it.

    Args:
        params: the parameters, in ``module.parameters()`` order.
        world: the number of processes averaged over.
        bucket_cap_mb: the cap of every bucket but the first, in MB (torch's default 25).
        first_bucket_bytes: the first bucket's cap (torch's 1 MiB).
        bucket_caps_bytes: explicit per-bucket caps (torch's ``bucket_cap_mb_list``), overriding both.

    Example:
        >>> from fjax.nn.parallel.reducer import Reducer
        >>> r = Reducer(list(nn.Linear(3, 2).parameters()), world=1)
        >>> r.buckets  # the bias (last parameter) first
        [[1, 0]]
    """

    def __init__(
        self,
        params,
        world: int,
        bucket_cap_mb: float | None = None,
        first_bucket_bytes: int = FIRST_BUCKET_BYTES,
        bucket_caps_bytes=None,
    ) -> None:
        self.params = list(params)
        self.world = world
        cap = DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        if bucket_caps_bytes:
            limits = list(bucket_caps_bytes)
        else:
            cap_bytes = int(cap * 1024 * 1024)
            limits = [first_bucket_bytes, cap_bytes] if first_bucket_bytes < cap_bytes else [cap_bytes]
        order = list(range(len(self.params)))[::-1]
        self.buckets = [
            [order[j] for j in b] for b in compute_bucket_assignment([self.params[i] for i in order], limits)
        ]
        self.bucket_of = {i: k for k, b in enumerate(self.buckets) for i in b}
        self.log: list = []
        self._reset()

    def _reset(self) -> None:
        self._ready: dict = {}  # param index -> local gradient array
        self._left = [len(b) for b in self.buckets]
        self._out: dict = {}  # bucket -> list of averaged arrays
        self._acc: set = set()  # params whose .grad holds this backward's sum
        self._written: set = set()

    def pending(self) -> list[int]:
        """Indices of the parameters missing from a partly ready bucket: a backward left them out."""
        if not self._ready:
            return []
        return [i for k, b in enumerate(self.buckets) if k not in self._out for i in b if i not in self._ready]

    def is_ready(self, i: int) -> bool:
        return i in self._ready

    def mark_ready(self, i: int, grad, replace: bool = False) -> None:
        """Parameter ``i``'s local gradient is ``grad``; ``replace=True`` corrects one marked
        before (a launched bucket is launched again with it)."""
        if replace and i in self._ready:
            self._ready[i] = grad
            k = self.bucket_of[i]
            if k in self._out:
                self._written.difference_update(self.buckets[k])
                self._launch(k)
            return
        if i in self._ready:
            raise RuntimeError(
                f"DistributedDataParallel: parameter {i} (shape {tuple(self.params[i].shape)}) was marked ready twice "
                "in one backward; a parameter used in several forwards before one backward needs no_sync() or "
                "static graphs, as in torch"
            )
        self._ready[i] = grad
        k = self.bucket_of[i]
        self._left[k] -= 1
        if self._left[k] == 0:
            self._launch(k)

    def _launch(self, k: int) -> None:
        idx = self.buckets[k]
        grads = [self._ready[i] for i in idx]
        flat = _pack(len(grads))(*grads)
        total = all_reduce_sum_async(flat, self.world)
        self._out[k] = _unpack(tuple(tuple(g.shape) for g in grads), self.world)(total)
        self.log.append(("launch", k, int(flat.size) * flat.dtype.itemsize))
        self._write(k)
        self._finish_if_done()

    def accumulated(self, i: int) -> None:
        self._acc.add(i)
        self._write(self.bucket_of[i])
        self._finish_if_done()

    def _write(self, k: int) -> None:
        from ...tensor import Tensor

        out = self._out.get(k)
        if out is None:
            return
        for i, avg in zip(self.buckets[k], out):
            if i in self._acc and i not in self._written:
                self.params[i].grad = Tensor._wrap(avg)
                self._written.add(i)

    def _finish_if_done(self) -> None:
        if len(self._written) == len(self.params):
            self._reset()
