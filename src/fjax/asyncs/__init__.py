"""``fjax.asyncs``: host-side work on worker threads, so logging and checks never stall the device.

JAX dispatches device work asynchronously; what stalls a training loop is Python waiting for
a value (``print(loss)``, ``loss.item()``, ``if total_norm.isnan()``). These calls hand the
value to a worker thread instead, which waits for it there, in submission order:

    >>> for step in range(n):
    ...     loss = train_step(x, y)
    ...     fjax.asyncs.print("step", step, "loss", loss)
    ...     fjax.asyncs.check(loss.isfinite(), "loss is not finite")
    >>> fjax.asyncs.wait()   # drains the workers, re-raises the first failed check

``with fjax.asyncs.thread(t):`` picks the worker for a block; ``@fjax.asyncs.thread(t)`` runs a
function on ``t`` and returns a Future. Environment: ``FJAX_WORKER_THREAD_LIMIT`` (live Thread
handles, default 16), ``FJAX_WORKER_QUEUE_SIZE`` (tasks a producer may run ahead, default 64).
"""

from ._ops import CheckError, check, check_finite, log, print, synchronize, wait
from ._worker import Thread, current, thread

__all__ = [
    "CheckError",
    "Thread",
    "check",
    "check_finite",
    "current",
    "log",
    "print",
    "synchronize",
    "thread",
    "wait",
]
