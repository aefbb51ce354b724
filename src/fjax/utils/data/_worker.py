"""DataLoader workers: the loop each worker thread or process runs, and what it sends back."""

from __future__ import annotations

import itertools
import os
import pickle
import queue
import random
import threading
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

_info = threading.local()
_PARENT_CHECK_S = 1.0


@dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


def get_worker_info() -> WorkerInfo | None:
    """Inside a DataLoader worker (thread or process): its id, the worker count, its seed and
    its copy of the dataset; ``None`` elsewhere. Use it to shard an ``IterableDataset``.

    Example::

        >>> def __iter__(self):
        ...     info = fjax.utils.data.get_worker_info()
        ...     start, step = (0, 1) if info is None else (info.id, info.num_workers)
        ...     return iter(self.items[start::step])
    """
    return getattr(_info, "value", None)


class Exhausted:
    """An IterableDataset worker ran out of samples."""

    def __init__(self, worker_id: int):
        self.worker_id = worker_id


class Failure:
    """An exception raised in a worker, carried to the thread that iterates the DataLoader."""

    def __init__(self, exc: BaseException, where: str, keep_object: bool):
        self.text = "".join(traceback.format_exception(exc))
        self.where = where
        self.exc = exc if keep_object else None
        self.exc_type = type(exc)
        if not keep_object:
            try:
                pickle.dumps(self.exc_type)
            except Exception:  # noqa: BLE001 - a local exception class: fall back to RuntimeError
                self.exc_type = RuntimeError

    def reraise(self):
        header = f"Caught {self.exc_type.__name__} {self.where}."
        if self.exc is not None:
            if hasattr(self.exc, "add_note"):
                self.exc.add_note(header)
            raise self.exc
        msg = f"{header}\nOriginal {self.text}"
        try:
            exc = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - its constructor wants other arguments
            exc = RuntimeError(msg)
        raise exc


def make_fetcher(dataset, iterable: bool, auto_collation: bool, collate_fn: Callable, drop_last: bool):
    """``fetch(index) -> batch``; for an IterableDataset ``index`` only says how many samples,
    and StopIteration means the stream is exhausted."""
    if iterable:
        stream = iter(dataset)

        def fetch(index):
            if not auto_collation:
                return collate_fn(next(stream))
            data = list(itertools.islice(stream, len(index)))
            if not data or (drop_last and len(data) < len(index)):
                raise StopIteration
            return collate_fn(data)

        return fetch

    getitems = getattr(dataset, "__getitems__", None)

    def fetch(index):
        if not auto_collation:
            return collate_fn(dataset[index])
        return collate_fn(getitems(index) if getitems else [dataset[i] for i in index])

    return fetch


def _seed_process(seed: int, forked: bool) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if not forked:  # JAX must not run in a child forked from a multithreaded JAX process
        from ... import random as fjax_random

        fjax_random.manual_seed(seed)


def _get(index_queue, in_process: bool, parent: int | None):
    """The next task; a process worker whose parent died gets ``None`` (stop)."""
    if not in_process:
        return index_queue.get()
    while True:
        try:
            return index_queue.get(timeout=_PARENT_CHECK_S)
        except queue.Empty:
            if os.getppid() != parent:
                return None


def worker_loop(kind, dataset, index_queue, result_queue, spec, worker_id, num_workers, seed, init_fn, parent=None):
    """Serve ``(idx, index)`` tasks until a ``None`` arrives; send back ``(idx, batch)``.

    ``kind`` is ``"thread"``, ``"process"`` or ``"fork"`` (a forked process); ``spec`` is
    ``(iterable, auto_collation, collate_fn, drop_last)``. Errors travel back as ``Failure``;
    an exhausted IterableDataset answers ``Exhausted``.
    """
    in_process = kind != "thread"
    if in_process:
        _seed_process(seed, forked=kind == "fork")
    _info.value = WorkerInfo(worker_id, num_workers, seed, dataset)
    where = f"in DataLoader worker {'process' if in_process else 'thread'} {worker_id}"
    failed = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetch = make_fetcher(dataset, *spec)
    except Exception as exc:  # noqa: BLE001 - every task then reports it
        failed = Failure(exc, where, keep_object=not in_process)
    iterable = spec[0]
    while (task := _get(index_queue, in_process, parent)) is not None:
        idx, index = task
        if failed is not None:
            data = failed
        else:
            try:
                data = fetch(index)
            except StopIteration as exc:
                data = Exhausted(worker_id) if iterable else Failure(exc, where, not in_process)
            except Exception as exc:  # noqa: BLE001 - re-raised by the iterating thread
                data = Failure(exc, where, keep_object=not in_process)
        result_queue.put((idx, data))
        del data
