"""``torch.multiprocessing``: Python's ``multiprocessing`` with torch's additions (``spawn``,
``start_processes``, the sharing-strategy settings). A JAX runtime does not survive ``fork``, so
use the ``"spawn"`` start method (``spawn`` always does); tensors cross processes by pickling
(their values are copied, not shared).

Example::

    >>> import fjax.multiprocessing as mp
    >>> mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    True
"""

from __future__ import annotations

import multiprocessing as _mp
from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports the standard module

__all__ = list(_mp.__all__) + [
    "ProcessContext",
    "ProcessExitedException",
    "ProcessRaisedException",
    "get_all_sharing_strategies",
    "get_sharing_strategy",
    "set_sharing_strategy",
    "spawn",
    "start_processes",
]

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = ["file_descriptor"]


def get_all_sharing_strategies() -> set:
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Kept and read back (tensors are pickled across processes either way)."""
    if new_strategy not in _STRATEGIES:
        raise ValueError(
            f"fjax.multiprocessing.set_sharing_strategy: {new_strategy!r} is not one of {sorted(_STRATEGIES)}"
        )
    _strategy[0] = new_strategy


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid


class ProcessRaisedException(ProcessException):
    """A spawned process raised: the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name


def _wrap(fn, i, args, errors):
    import traceback

    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        errors.put((i, traceback.format_exc()))
        raise SystemExit(1) from None


class ProcessContext:
    """The processes ``start_processes`` started; ``join()`` waits and re-raises a failure."""

    def __init__(self, processes, errors):
        self.processes, self.error_queue = processes, errors

    def pids(self) -> list:
        return [p.pid for p in self.processes]

    def join(self, timeout=None) -> bool:
        for p in self.processes:
            p.join(timeout)
        if not self.error_queue.empty():
            i, tb = self.error_queue.get()
            for p in self.processes:
                if p.is_alive():
                    p.terminate()
            raise ProcessRaisedException(
                f"\n\n-- Process {i} terminated with the following error:\n{tb}", i, self.processes[i].pid
            )
        for i, p in enumerate(self.processes):
            if p.exitcode not in (0, None):
                raise ProcessExitedException(
                    f"process {i} terminated with exit code {p.exitcode}", i, p.pid, p.exitcode
                )
        return all(not p.is_alive() for p in self.processes)


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """Run ``fn(i, *args)`` in ``nprocs`` new processes (``i`` = 0 .. nprocs-1); with ``join`` wait
    for them and raise the first failure, else return their ``ProcessContext``."""
    ctx = _mp.get_context(start_method)
    errors = ctx.SimpleQueue()
    processes = []
    for i in range(nprocs):
        p = ctx.Process(target=_wrap, args=(fn, i, args, errors), daemon=daemon)
        p.start()
        processes.append(p)
    context = ProcessContext(processes, errors)
    if not join:
        return context
    context.join()
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """torch.multiprocessing.spawn: ``start_processes`` with the ``"spawn"`` start method."""
    if start_method != "spawn":
        raise ValueError(f"fjax.multiprocessing.spawn: start_method={start_method!r}; use start_processes for it")
    return start_processes(fn, args, nprocs, join, daemon, start_method)
