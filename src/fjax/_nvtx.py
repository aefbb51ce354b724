"""``torch.cuda.nvtx``: named ranges for profilers. Each range is a ``jax.profiler``
``TraceAnnotation``, so it shows in JAX's trace (``fjax.profiler.profile(with_jax_trace=dir)``,
XProf, TensorBoard) where NVTX ranges show in Nsight.

Example::

    >>> fjax.cuda.nvtx.range_push("forward")
    0
    >>> fjax.cuda.nvtx.range_pop()
    0
    >>> with fjax.cuda.nvtx.range("step {}", 3):
    ...     pass
"""

from __future__ import annotations

import contextlib
import itertools
import threading

import jax

__all__ = ["mark", "range", "range_end", "range_pop", "range_push", "range_start"]

_local = threading.local()
_ids = itertools.count(1)
_started: dict = {}


def _stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def range_push(msg: str) -> int:
    """Open a nested range; returns its depth (0 for the outermost)."""
    annotation = jax.profiler.TraceAnnotation(str(msg))
    annotation.__enter__()
    stack = _stack()
    stack.append(annotation)
    return len(stack) - 1


def range_pop() -> int:
    """Close the innermost range this thread opened; returns its depth (-1 if none was open)."""
    stack = _stack()
    if not stack:
        return -1
    stack.pop().__exit__(None, None, None)
    return len(stack)


def range_start(msg: str) -> int:
    """Open a range that any thread may end (``range_end`` with the returned id)."""
    annotation = jax.profiler.TraceAnnotation(str(msg))
    annotation.__enter__()
    rid = next(_ids)
    _started[rid] = annotation
    return rid


def range_end(range_id: int) -> None:
    annotation = _started.pop(range_id, None)
    if annotation is not None:
        annotation.__exit__(None, None, None)


def mark(msg: str) -> None:
    """An instant event: a range of no length."""
    with jax.profiler.TraceAnnotation(str(msg)):
        pass


@contextlib.contextmanager
def range(msg: str, *args, **kwargs):  # noqa: A001 - torch's name
    """A range around the block; ``msg.format(*args, **kwargs)`` names it."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
