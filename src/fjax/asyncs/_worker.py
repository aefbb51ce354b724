"""Worker threads: a daemon thread per ``Thread`` handle, fed by a bounded FIFO queue.

The queue is the back-pressure: a producer that runs ahead of its worker by ``queue_size``
tasks blocks until the worker catches up, so a long loop holds at most that many pending
values. Tasks never raise into the worker loop; their errors are kept in ``_errors`` and
re-raised on the user's thread at the next synchronisation point.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import sys
import threading
import traceback
import weakref
from collections import deque
from concurrent.futures import Future
from typing import Callable

ENV_THREAD_LIMIT = "FJAX_WORKER_THREAD_LIMIT"
ENV_QUEUE_SIZE = "FJAX_WORKER_QUEUE_SIZE"
_DEFAULT_THREAD_LIMIT = 16
_DEFAULT_QUEUE_SIZE = 64

_lock = threading.RLock()  # reentrant: a handle's finalizer may run (GC) while this thread holds it
_default_lock = threading.Lock()
_live_handles = 0  # user Threads whose handle is still referenced
_serving: set["_TaskQueue"] = set()  # queues whose thread still runs (a dropped handle drains first)
_names = itertools.count()
_local = threading.local()


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"fjax.asyncs: environment variable {name}={raw!r} must be a positive integer") from None
    if value < 1:
        raise ValueError(f"fjax.asyncs: environment variable {name}={raw!r} must be a positive integer")
    return value


class _Errors:
    """The first error a task raised, and how many followed it, until someone re-raises it."""

    def __init__(self):
        self._lock = threading.Lock()
        self.first: BaseException | None = None
        self.more = 0

    def record(self, exc: BaseException) -> None:
        with self._lock:
            if self.first is None:
                self.first = exc
            else:
                self.more += 1

    def take(self) -> tuple[BaseException | None, int]:
        with self._lock:
            first, more = self.first, self.more
            self.first, self.more = None, 0
            return first, more


_errors = _Errors()


def raise_pending() -> None:
    """Re-raise the first error recorded by any worker task (and forget it)."""
    if _errors.first is None:  # the common case, without taking the lock
        return
    first, more = _errors.take()
    if first is None:
        return
    if more and hasattr(first, "add_note"):
        first.add_note(f"fjax.asyncs: {more} more deferred error(s) were raised after this one")
    raise first


class _TaskQueue:
    """A bounded FIFO of callables served in order by one daemon thread."""

    def __init__(self, name: str, maxsize: int):
        self.name = name
        self.maxsize = maxsize
        self.high_water = 0
        self._items: deque[Callable[[], None]] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._done = False  # the thread has left its loop: nothing queued from now on would run
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        with _lock:
            _serving.add(self)
        self.thread.start()

    def __len__(self) -> int:
        return len(self._items)

    def put(self, task: Callable[[], None], block: bool = True) -> None:
        """Queue ``task``; wait while the queue is full unless ``block`` is False.

        The worker itself never waits on its own queue (it would wait forever).
        """
        block = block and threading.current_thread() is not self.thread
        with self._cond:
            if self._closed:
                raise RuntimeError(f"fjax.asyncs: worker thread {self.name!r} was released; create a new Thread")
            while block and len(self._items) >= self.maxsize:
                self._cond.wait()
            self._items.append(task)
            self.high_water = max(self.high_water, len(self._items))
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def drain(self) -> None:
        """Block until every task queued before this call has run."""
        done = threading.Event()
        with self._cond:
            if self._done:
                return
            self._items.append(done.set)  # a barrier ignores the bound: draining must not wait on itself
            self._cond.notify_all()
        done.wait()

    def _serve(self) -> None:
        while True:
            with self._cond:
                while not self._items and not self._closed:
                    self._cond.wait()
                if not self._items:
                    self._done = True
                    break
                task = self._items.popleft()
                self._cond.notify_all()
            try:
                task()
            except BaseException as exc:  # noqa: BLE001 - re-raised on the user's thread by wait()
                _errors.record(exc)
            del task  # drop the task's arrays now, not when the next one arrives
        with _lock:
            _serving.discard(self)


def _release(queue: _TaskQueue, counted: bool) -> None:
    global _live_handles
    queue.close()
    if counted:
        with _lock:
            _live_handles -= 1


class Thread:
    """A named worker thread with a FIFO queue: work submitted to it runs in submission order.

    At most ``FJAX_WORKER_THREAD_LIMIT`` (default 16) handles may be alive at once; dropping
    the handle releases its slot (work already queued still runs). The queue holds at most
    ``queue_size`` tasks (default ``FJAX_WORKER_QUEUE_SIZE`` or 64); a producer that gets
    further ahead waits, so a long loop cannot grow memory.

    Args:
        name: the thread's name (shown by debuggers and ``threading.enumerate()``).
        queue_size: how many tasks may wait before a producer blocks.

    Example::

        >>> t = fjax.asyncs.Thread()
        >>> with fjax.asyncs.thread(t):
        ...     fjax.asyncs.print("loss", loss)   # printed by ``t`` when ``loss`` is ready
    """

    def __init__(self, name: str | None = None, queue_size: int | None = None):
        global _live_handles
        limit = _env_int(ENV_THREAD_LIMIT, _DEFAULT_THREAD_LIMIT)
        with _lock:
            if _live_handles >= limit:
                raise RuntimeError(
                    f"fjax.asyncs.Thread: {_live_handles} worker threads are alive, the limit set by "
                    f"{ENV_THREAD_LIMIT}={limit}; drop a Thread handle (del t) to release one, or raise the limit"
                )
            _live_handles += 1
        try:
            self._start(name, queue_size)
        except BaseException:
            with _lock:
                _live_handles -= 1
            raise
        self._finalizer = weakref.finalize(self, _release, self._queue, True)

    @classmethod
    def _uncounted(cls, name: str) -> "Thread":
        t = object.__new__(cls)
        t._start(name, None)
        t._finalizer = weakref.finalize(t, _release, t._queue, False)
        return t

    def _start(self, name: str | None, queue_size: int | None) -> None:
        size = _env_int(ENV_QUEUE_SIZE, _DEFAULT_QUEUE_SIZE) if queue_size is None else int(queue_size)
        if size < 1:
            raise ValueError(f"fjax.asyncs.Thread: queue_size must be at least 1, got {queue_size}")
        self._queue = _TaskQueue(name or f"fjax-asyncs-{next(_names)}", size)

    @property
    def name(self) -> str:
        return self._queue.name

    @property
    def queue_size(self) -> int:
        """How many tasks may wait before a producer blocks."""
        return self._queue.maxsize

    @property
    def pending(self) -> int:
        """Tasks queued and not yet started."""
        return len(self._queue)

    @property
    def max_pending(self) -> int:
        """The most tasks that were ever waiting at once (never above ``queue_size``)."""
        return self._queue.high_water

    def submit(self, fn: Callable, *args, **kwargs) -> Future:
        """Run ``fn(*args, **kwargs)`` on this worker after everything queued before; returns a Future."""
        future: Future = Future()

        def run():
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # noqa: BLE001 - delivered through the future
                    future.set_exception(exc)

        self._queue.put(run)
        return future

    def wait(self) -> None:
        """Block until this worker has run everything queued so far."""
        _check_not_worker("Thread.wait")
        self._queue.drain()

    def __repr__(self) -> str:
        return f"fjax.asyncs.Thread(name={self.name!r}, pending={self.pending}, queue_size={self.queue_size})"


_default: Thread | None = None


def _default_thread() -> Thread:
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Thread._uncounted("fjax-asyncs-default")
    return _default


def current() -> Thread:
    """The worker that non-blocking operations use here: the innermost ``thread(t)``, else a default one."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else _default_thread()


class thread:
    """Make ``t`` the current worker: ``with thread(t):`` for a block, ``@thread(t)`` for a function.

    As a context manager it is thread-local and nestable. As a decorator, calling the function
    queues it on ``t`` and returns a ``concurrent.futures.Future`` for its result; its errors are
    delivered through that future. The decorated function keeps ``t`` alive.

    Example::

        >>> t = fjax.asyncs.Thread()
        >>> @fjax.asyncs.thread(t)
        ... def save(step, weights):
        ...     np.save(f"w{step}.npy", weights)
        >>> future = save(10, w)      # returns at once; ``t`` runs it
    """

    def __init__(self, t: Thread):
        if not isinstance(t, Thread):
            raise TypeError(f"fjax.asyncs.thread: expected a fjax.asyncs.Thread, got {type(t).__name__}")
        self._thread = t

    def __enter__(self) -> Thread:
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self._thread)
        return self._thread

    def __exit__(self, *exc) -> None:
        _local.stack.pop()

    def __call__(self, fn: Callable) -> Callable[..., Future]:
        worker = self._thread

        @functools.wraps(fn)
        def submit(*args, **kwargs) -> Future:
            return worker.submit(fn, *args, **kwargs)

        return submit


def _check_not_worker(where: str) -> None:
    me = threading.current_thread()
    with _lock:
        mine = any(q.thread is me for q in _serving)
    if mine:
        raise RuntimeError(
            f"fjax.asyncs.{where}: called on a worker thread, where it would wait for itself; "
            "call it from the thread that submits the work"
        )


def drain_all() -> None:
    """Block until every worker (including released ones still draining) has run its queue."""
    with _lock:
        queues = list(_serving)
    for q in queues:
        q.drain()


def _at_exit() -> None:
    drain_all()
    first, more = _errors.take()
    if first is not None:
        sys.stderr.write(
            "fjax.asyncs: a deferred error was never raised (call fjax.asyncs.wait() to see errors in time):\n"
            + "".join(traceback.format_exception(first))
            + (f"... and {more} more\n" if more else "")
        )


atexit.register(_at_exit)
