"""DataLoader: batches from a dataset, with torch's sampling semantics and background workers.

``num_workers > 0`` starts worker threads (the default: they share the process, so datasets
of device Tensors work as they are) or, when ``multiprocessing_context`` is given, worker
processes (for Python-heavy decoding that would hold the GIL). Workers fetch and collate
batches ahead of time; thread workers also put them on the device, and for process workers a
loader thread of the parent does that, so the training loop only takes ready batches.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import queue
import threading
import time
from typing import Any, Callable, Iterator

import jax
import jax.numpy as jnp

from ...random import Generator, default_generator
from ._worker import Exhausted, Failure, make_fetcher, worker_loop
from .collate import default_collate, default_convert, host_collate, to_device
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _check_generator, _on_host

_STATUS_CHECK_S = 1.0
_JOIN_S = 5.0


class _Nones(Sampler):
    """What an IterableDataset is "sampled" with: only the count per batch matters."""

    def __iter__(self) -> Iterator[None]:
        return itertools.repeat(None)


class DataLoader:
    """Iterate over ``dataset`` in batches (torch's ``DataLoader``).

    Args:
        dataset: a ``Dataset`` (map-style) or an ``IterableDataset``.
        batch_size: samples per batch; ``None`` turns automatic batching off.
        shuffle: a new random order each epoch (a ``RandomSampler`` driven by ``generator``).
        sampler: the keys to fetch, in order (any iterable of keys); excludes ``shuffle``.
        batch_sampler: yields lists of keys; excludes batch_size, shuffle, sampler, drop_last.
        num_workers: background workers (0: load in the iterating thread).
        collate_fn: merges a list of samples into a batch (default ``default_collate``).
        pin_memory: accepted for compatibility; JAX stages host-to-device copies itself.
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a worker's batch before raising (0: forever).
        worker_init_fn: called with the worker id in each worker before loading.
        multiprocessing_context: ``"spawn"``, ``"forkserver"``, ``"fork"`` or a context: use worker
            processes instead of threads. Process workers never initialise an accelerator
            (``JAX_PLATFORMS=cpu``); the dataset, ``collate_fn`` and ``worker_init_fn`` must pickle.
            Prefer ``"spawn"``/``"forkserver"``: a forked child must not use JAX (the parent's JAX
            is multithreaded), so its dataset should stay numpy/Python.
        generator: a ``fjax.Generator`` for the shuffle order and the workers' base seed.
        prefetch_factor: batches each worker loads ahead (default 2 with workers).
        persistent_workers: accepted with thread workers (the default), which are cheap to start:
            each epoch still starts its own, so ``worker_init_fn`` runs each epoch with that
            epoch's seeds, as without persistent workers (threads share the dataset object, so
            state kept on it persists either way); process workers raise NotImplementedError.
        in_order: deliver batches in sampler order; ``False`` delivers each as it is ready.

    Inside a worker, ``get_worker_info()`` gives its id, the worker count and its seed
    (``base_seed + id``); process workers also seed ``random``, numpy and (unless forked) fjax
    with it. Thread workers share the process's random state, so they seed nothing.

    Example::

        >>> loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True,
        ...                     generator=fjax.Generator().manual_seed(0), num_workers=2)
        >>> for xb, yb in loader:
        ...     loss = graph(xb, yb)
    """

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Any = None,
        batch_sampler: Sampler | Any = None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context=None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers option should be non-negative, got {num_workers!r}")
        if timeout < 0:
            raise ValueError(f"DataLoader: timeout option should be non-negative, got {timeout!r}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "DataLoader: prefetch_factor option could only be specified in multiprocessing; "
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None"
            )
        if prefetch_factor is not None and (not isinstance(prefetch_factor, int) or prefetch_factor < 1):
            raise ValueError(
                f"DataLoader: prefetch_factor option should be a positive integer, got {prefetch_factor!r}"
            )
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
        if persistent_workers and multiprocessing_context is not None:
            raise NotImplementedError(
                "DataLoader: persistent_workers=True with process workers (multiprocessing_context) is not "
                "supported; thread workers (the default) accept it"
            )
        if pin_memory_device:
            raise NotImplementedError(f"DataLoader: pin_memory_device={pin_memory_device!r} is not supported")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            for name, value in (("shuffle", shuffle or None), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value is not None:
                    raise ValueError(
                        f"DataLoader with IterableDataset: expected unspecified {name} option, but got {name}={value!r}"
                    )
        elif sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                    "and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "DataLoader: batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
            )
        _check_generator(generator, "DataLoader")
        if sampler is None:
            if self._iterable:
                sampler = _Nones()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = (prefetch_factor or 2) if num_workers else None
        self.collate_fn = collate_fn or (default_convert if batch_sampler is None else default_collate)
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _context(multiprocessing_context)
        self.generator = generator
        self.in_order = in_order
        self.persistent_workers = persistent_workers

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> Iterator:
        if self.num_workers == 0:
            return _SingleIter(self)
        return _PoolIter(self)

    def __len__(self) -> int:
        if not self._iterable:
            return len(self._index_sampler)
        n = len(self.dataset)
        if self.batch_size is not None:
            n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return n


def _context(ctx):
    if ctx is None or isinstance(ctx, multiprocessing.context.BaseContext):
        return ctx
    if isinstance(ctx, str):
        methods = multiprocessing.get_all_start_methods()
        if ctx not in methods:
            raise ValueError(f"DataLoader: multiprocessing_context={ctx!r} is not one of {methods}")
        return multiprocessing.get_context(ctx)
    raise TypeError(
        f"DataLoader: multiprocessing_context must be a start method name or a multiprocessing context, "
        f"got {type(ctx).__name__}"
    )


class _SingleIter:
    """``num_workers=0``: fetch and collate in the iterating thread, as torch does."""

    def __init__(self, loader: DataLoader):
        # the draw of the workers' base seed skipped, not made (~1 ms of dispatch an epoch here), so
        # num_workers never changes the order
        (loader.generator or default_generator)._skip()
        self._len = len(loader) if hasattr(loader.dataset, "__len__") else None
        self._indices = iter(loader._index_sampler)
        self._fetch = make_fetcher(
            loader.dataset, loader._iterable, loader._auto_collation, loader.collate_fn, loader.drop_last
        )

    def __iter__(self):
        return self

    def __next__(self):
        return self._fetch(next(self._indices))

    def __len__(self) -> int:
        return self._len


@contextlib.contextmanager
def _cpu_only_children():
    """Worker processes started in this block see ``JAX_PLATFORMS=cpu``: they never claim the GPU."""
    old = os.environ.get("JAX_PLATFORMS")
    os.environ["JAX_PLATFORMS"] = "cpu"
    try:
        yield
    finally:
        if old is None:
            del os.environ["JAX_PLATFORMS"]
        else:
            os.environ["JAX_PLATFORMS"] = old


def _forward(source, sink: queue.Queue, finish: Callable | None, stopped: threading.Event) -> None:
    """The parent's loader thread for process workers: put their host batches on the device."""
    while not stopped.is_set():
        try:
            idx, data = source.get(timeout=_STATUS_CHECK_S)
        except queue.Empty:
            continue
        if finish is not None and not isinstance(data, (Exhausted, Failure)):
            try:
                data = finish(data)
            except Exception as exc:  # noqa: BLE001 - re-raised by the iterating thread
                data = Failure(exc, "in the DataLoader loader thread", keep_object=True)
        sink.put((idx, data))
        del data


def _base_seed(generator: Generator | None) -> int:
    key = (generator or default_generator).next_key
    return _on_host(lambda: jax.random.randint(key(), (), 0, 2**62, jnp.int64))


class _PoolIter:
    """``num_workers > 0``: tasks go round-robin to workers, batches come back in order
    (torch's scheme, so an IterableDataset sharded with ``get_worker_info`` gives the same
    sequence of batches as torch)."""

    def __init__(self, loader: DataLoader):
        n = self._num_workers = loader.num_workers
        self._len = len(loader) if hasattr(loader.dataset, "__len__") else None
        self._indices = iter(loader._index_sampler)
        self._in_order = loader.in_order
        self._timeout = loader.timeout
        self._max_tasks = loader.prefetch_factor * n
        self._closed = False
        seed = _base_seed(loader.generator)
        ctx = loader.multiprocessing_context
        collate = loader.collate_fn
        self._stopped = threading.Event()
        if ctx is None:
            spec = (loader._iterable, loader._auto_collation, collate, loader.drop_last)
            self._results = queue.Queue()
            self._index_queues = [queue.Queue() for _ in range(n)]
            self._workers = [
                threading.Thread(
                    target=worker_loop,
                    args=("thread", loader.dataset, q, self._results, spec, i, n, seed + i, loader.worker_init_fn),
                    name=f"fjax-dataloader-worker-{i}",
                    daemon=True,
                )
                for i, q in enumerate(self._index_queues)
            ]
            for w in self._workers:
                w.start()
            self._forwarder = None
        else:
            # default collation is split: numpy batches in the worker, device_put in the parent
            split = {default_collate: host_collate, default_convert: _identity}
            spec = (loader._iterable, loader._auto_collation, split.get(collate, collate), loader.drop_last)
            host_results = self._host_results = ctx.Queue()
            self._index_queues = [ctx.Queue() for _ in range(n)]
            self._workers, self._forwarder = [], None
            kind = "fork" if ctx.get_start_method() == "fork" else "process"
            with _cpu_only_children():
                for i, q in enumerate(self._index_queues):
                    w = ctx.Process(
                        target=worker_loop,
                        args=(kind, loader.dataset, q, host_results, spec, i, n, seed + i, loader.worker_init_fn),
                        kwargs={"parent": os.getpid()},
                        daemon=True,
                    )
                    try:
                        w.start()
                    except Exception as exc:
                        if hasattr(exc, "add_note"):
                            exc.add_note(
                                "DataLoader: process workers need a picklable dataset, collate_fn and "
                                "worker_init_fn; leave multiprocessing_context=None for thread workers"
                            )
                        self._shutdown()
                        raise
                    self._workers.append(w)
            self._results = queue.Queue()
            finish = to_device if collate in split else None
            self._forwarder = threading.Thread(
                target=_forward, args=(host_results, self._results, finish, self._stopped), daemon=True
            )
            self._forwarder.start()
        self._active = [True] * n
        self._cycle = itertools.cycle(range(n))
        self._task_info: dict[int, tuple] = {}
        self._send_idx = self._rcvd_idx = self._outstanding = 0
        for _ in range(self._max_tasks):
            self._try_put_index()

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return self._len

    def _try_put_index(self) -> None:
        if self._outstanding >= self._max_tasks:
            return
        for _ in range(self._num_workers):
            worker = next(self._cycle)
            if self._active[worker]:
                break
        else:
            return
        try:
            index = next(self._indices)
        except StopIteration:
            return
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._outstanding += 1
        self._send_idx += 1

    def _get(self):
        start = time.monotonic()
        while True:
            wait = _STATUS_CHECK_S if not self._timeout else min(_STATUS_CHECK_S, self._timeout)
            try:
                return self._results.get(timeout=wait)
            except queue.Empty:
                dead = [w for w, on in zip(self._workers, self._active) if on and not w.is_alive()]
                if dead:
                    self._shutdown()
                    names = ", ".join(
                        f"pid {w.pid}, exit code {w.exitcode}" if hasattr(w, "pid") else w.name for w in dead
                    )
                    raise RuntimeError(f"DataLoader worker ({names}) exited unexpectedly") from None
                if self._timeout and time.monotonic() - start >= self._timeout:
                    self._shutdown()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None

    def _deliver(self, data):
        self._try_put_index()
        if isinstance(data, Failure):
            data.reraise()
        return data

    def __next__(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)  # delivered early, or its worker ran dry
                self._rcvd_idx += 1
            else:
                self._shutdown()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._deliver(data)
            idx, data = self._get()
            self._outstanding -= 1
            if isinstance(data, Exhausted):
                self._active[data.worker_id] = False
                self._index_queues[data.worker_id].put(None)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx and self._in_order:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            if idx == self._rcvd_idx:
                self._rcvd_idx += 1
            return self._deliver(data)

    def _shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stopped.set()
        for q, on in zip(self._index_queues, getattr(self, "_active", [True] * len(self._index_queues))):
            if on:
                q.put(None)
        for w in self._workers:
            w.join(_JOIN_S)
            if w.is_alive() and hasattr(w, "terminate"):
                w.terminate()
        if self._forwarder is not None:
            self._forwarder.join(_JOIN_S)
        for q in [*self._index_queues, getattr(self, "_host_results", None)]:
            if hasattr(q, "cancel_join_thread"):
                q.cancel_join_thread()
                q.close()

    def __del__(self):
        if hasattr(self, "_closed"):
            self._shutdown()


def _identity(x):
    return x
