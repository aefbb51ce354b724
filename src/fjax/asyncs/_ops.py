"""Non-blocking host reads: print, log, check, check_finite, and wait/synchronize.

Each call hands the tensors' jax arrays to the current worker and returns at once; the worker
does the blocking device-to-host read (``np.asarray``), in submission order. Inside a trace
(nn.Graph, functional transforms) the values reach the worker through ``jax.debug.callback``
when the compiled step produces them.
"""

from __future__ import annotations

import builtins
import functools
import os
import sys
import threading
from typing import Any, Callable

import jax
import numpy as np

from ..tensor import Tensor
from ._worker import _check_not_worker, current, drain_all, raise_pending


class CheckError(RuntimeError):
    """A deferred ``fjax.asyncs.check`` failed; raised at the next synchronisation point.

    Attributes:
        message: the message given to ``check``.
        step: which call from that call site failed (0 for the first), or the ``step=`` given.
        site: ``"file:line"`` of the call.
    """

    def __init__(self, message: str, step: int, site: str):
        super().__init__(f"fjax.asyncs.check failed at step {step} ({site}): {message}")
        self.message, self.step, self.site = message, step, site


CheckError.__module__ = "fjax.asyncs"


class IndexCheckError(CheckError, IndexError):
    """A deferred index bounds check (inside an nn.Graph) failed: a CheckError and, as torch's
    error for an out-of-range index is, an IndexError."""


IndexCheckError.__module__ = "fjax.asyncs"


_steps: dict[tuple[str, int], int] = {}
_steps_lock = threading.Lock()


def _caller(depth: int) -> tuple[str, int]:
    frame = sys._getframe(depth + 1)
    return frame.f_code.co_filename, frame.f_lineno


def _stamp(site: tuple[str, int], step: int | None) -> Callable[[], tuple[int, str]]:
    """When called (at submission, or when a traced step runs): the step number and the site."""
    where = f"{os.path.basename(site[0])}:{site[1]}"

    def stamp():
        if step is not None:
            return step, where
        with _steps_lock:
            n = _steps.get(site, 0)
            _steps[site] = n + 1
        return n, where

    return stamp


def _read(arr: jax.Array, op: str) -> np.ndarray:
    if arr.is_deleted():
        raise RuntimeError(
            f"fjax.asyncs.{op}: a {arr.dtype}{list(arr.shape)} value was donated to a later step (nn.Graph) "
            "before the worker could read it; pass tensor.clone() to keep a copy"
        )
    return np.asarray(arr)


def _submit(op: str, values: tuple, run: Callable[[Any, list], None], stamp: Callable[[], Any] = lambda: None):
    """Queue ``run(stamp(), host_values)`` on the current worker, jax arrays read there."""
    raise_pending()
    worker = current()
    leaves = [v._data if isinstance(v, Tensor) else v for v in values]
    idx = [i for i, v in enumerate(leaves) if isinstance(v, (jax.Array, jax.core.Tracer))]
    if any(isinstance(leaves[i], jax.core.Tracer) for i in idx):

        def on_host(*arrays):
            host = list(leaves)
            for i, a in zip(idx, arrays):
                host[i] = np.asarray(a)
            # the device may be waiting on this callback: never block it on a full queue
            worker._queue.put(functools.partial(run, stamp(), host), block=False)

        jax.debug.callback(on_host, *(leaves[i] for i in idx))
        return
    meta = stamp()

    def task():
        host = list(leaves)
        for i in idx:
            host[i] = _read(host[i], op)
        run(meta, host)

    worker._queue.put(task)


def print(*values, sep: str = " ", end: str = "\n", file=None, flush: bool = False) -> None:
    """``print`` that returns at once: the current worker prints when the values are ready, in order.

    Tensors print as their values (a 0-d tensor as a Python number, like ``.item()``).

    Example::

        >>> fjax.asyncs.print("step", step, "loss", loss)   # later, on the worker: step 3 loss 0.6931
    """
    out = sys.stdout if file is None else file

    def run(_, host):
        shown = [v.item() if isinstance(v, np.ndarray) and v.ndim == 0 else v for v in host]
        builtins.print(*shown, sep=sep, end=end, file=out, flush=flush)

    _submit("print", values, run)


def log(callback: Callable[..., Any], *values) -> None:
    """Call ``callback(*values)`` on the current worker once the values are ready; tensors arrive as numpy.

    Example::

        >>> history = []
        >>> fjax.asyncs.log(lambda step, l: history.append((step, float(l))), step, loss)
    """
    if not callable(callback):
        raise TypeError(f"fjax.asyncs.log: callback must be callable, got {type(callback).__name__}")
    _submit("log", values, lambda _, host: callback(*host))


def _condition_arg(value, op: str):
    if isinstance(value, (Tensor, jax.Array, jax.core.Tracer, np.ndarray, np.generic, bool, int, float)):
        return value
    raise TypeError(f"fjax.asyncs.{op}: expected a tensor or a bool, got {type(value).__name__}")


def check(condition, message: str, *, step: int | None = None) -> None:
    """A deferred assertion: if not every element of ``condition`` is true, the next
    ``fjax.asyncs`` call or ``wait()`` raises ``CheckError`` naming ``message`` and the step.

    Args:
        condition: a bool tensor (or anything numpy can reduce with ``all``).
        message: what went wrong, in the user's words.
        step: the step to report; by default, how many times this line called ``check`` before
            (0 for the first call, so it matches ``for step in range(n)``).

    Example::

        >>> for step in range(n):
        ...     loss = train_step()
        ...     fjax.asyncs.check(loss.isfinite(), "loss is not finite")
        >>> fjax.asyncs.wait()   # CheckError: fjax.asyncs.check failed at step 41 (train.py:4): loss ...
    """
    _submit_check("check", _condition_arg(condition, "check"), message, step, lambda h: bool(np.all(h)))


def check_finite(value, message: str, *, step: int | None = None) -> None:
    """A deferred ``check`` that every element of ``value`` is finite (no NaN or inf).

    No device work is added: the worker reads ``value`` and tests it on the host. Used by
    ``clip_grad_norm_(..., error_if_nonfinite=True)`` so the check does not stall the step.
    """
    if not isinstance(value, (Tensor, jax.Array, jax.core.Tracer, np.ndarray)):
        raise TypeError(f"fjax.asyncs.check_finite: expected a tensor, got {type(value).__name__}")
    _submit_check("check_finite", value, message, step, lambda h: bool(np.isfinite(h).all()))


def _submit_check(
    op: str,
    value,
    message: str,
    step: int | None,
    passes: Callable[[np.ndarray], bool],
    error: type = CheckError,
    depth: int = 2,
) -> None:
    if not isinstance(message, str):
        raise TypeError(f"fjax.asyncs.{op}: message must be a str, got {type(message).__name__}")

    def run(meta, host):
        if not passes(host[0]):
            raise error(message, *meta)

    _submit(op, (value,), run, _stamp(_caller(depth), step))


def step_check(message: str, error: type, depth: int = 2) -> tuple:
    """A deferred check that a compiled step returns the value of (an nn.Graph step's index
    checks: see ``submit_step_checks``): ``(message, error, stamp)``, the site read now."""
    return message, error, _stamp(_caller(depth), None)


def submit_step_checks(checks: list, oks) -> None:
    """Queue one run's ``checks`` (``step_check``'s) on the current worker: ``oks``, the boolean
    vector the step returned, is read there and the first failed check raises at the next
    synchronisation point, as a host callback's would. Each check's step number counts now."""
    metas = [stamp() for _, _, stamp in checks]
    worker = current()

    def task():
        for ok, (message, error, _), meta in zip(_read(oks, "check"), checks, metas):
            if not ok:
                raise error(message, *meta)

    worker._queue.put(task)


def wait() -> None:
    """Block until every worker has run all work queued so far; re-raise the first deferred error.

    Also waits for values that compiled steps send to workers (``jax.effects_barrier``).
    """
    _check_not_worker("wait")
    jax.effects_barrier()
    drain_all()
    raise_pending()


synchronize = wait
