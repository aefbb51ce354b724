"""``Timer``: timeit with replicates, warm-up and fjax's asynchronous dispatch accounted for
(torch.utils.benchmark's ``Timer``)."""

from __future__ import annotations

import enum
import sys
import textwrap
import timeit
from typing import Any, Callable

import numpy as np

from .common import Measurement, TaskSpec, set_torch_threads

__all__ = ["Language", "Timer", "timer"]


def timer() -> float:
    """``timeit.default_timer()`` once the work fjax has dispatched is done.

    JAX runs operations asynchronously on every backend (the CPU too), so a clock read straight
    after a statement would time only its dispatch: this waits for all live arrays first
    (``fjax.cuda.synchronize()``).

    Example:
        >>> from fjax.utils.benchmark import timer
        >>> t0 = timer()
        >>> y = fjax.ones(8) * 2
        >>> timer() >= t0
        True
    """
    from ... import cuda

    cuda.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    """The language of a ``Timer``'s statement: fjax times ``PYTHON`` only (``CPP`` is torch's C++ path).

    Example:
        >>> from fjax.utils.benchmark import Language
        >>> Language.PYTHON.value
        0
    """

    PYTHON = 0
    CPP = 1


class Timer:
    """Time a Python statement: ``setup`` runs once, ``stmt`` in timed blocks, and each block ends
    with a wait for fjax's asynchronous work (the default ``timer``), so a Measurement counts the
    computation, not just its dispatch.

    ``globals`` gives ``stmt`` its variables; ``fjax`` is always there, and so is ``torch``
    (meaning fjax), so statements written for torch's Timer run unchanged.

    Args:
        stmt: the statement to time (a string of Python code).
        setup: code run once before timing, e.g. to make inputs.
        global_setup: torch's C++-only top-level code; must be empty.
        timer: the clock; the default waits for dispatched work before reading ``timeit.default_timer``.
        globals: the variables ``stmt`` and ``setup`` see.
        label: the title of the ``Compare`` table the result goes in.
        sub_label: the row label.
        description: the column label.
        env: a tag keeping otherwise identical tasks apart.
        num_threads: the thread count to run with (see ``set_torch_threads``).
        language: ``Language.PYTHON`` (or ``"py"``/``"python"``); C++ raises ``NotImplementedError``.

    Example:
        >>> from fjax.utils.benchmark import Timer
        >>> t = Timer("x @ x", setup="x = fjax.ones(16, 16)", label="matmul")
        >>> m = t.timeit(10)
        >>> m.number_per_run, m.median > 0
        (10, True)
    """

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = timer,
        globals: dict[str, Any] | None = None,
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
    ) -> None:
        if not isinstance(stmt, str):
            raise ValueError(f"Timer: only a `str` stmt is supported, got {type(stmt).__name__}")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("Timer: language='cpp' (C++ statements) is not supported by fjax")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Timer: invalid language `{language}`")
        if global_setup:
            raise ValueError(
                f"Timer: global_setup is C++ only, got `{global_setup}`. Most likely this code can simply be moved "
                "to `setup`."
            )
        fjax = sys.modules["fjax"]  # the namespace a statement runs in (read, not imported: it is above us)
        self._globals = dict(globals or {})
        self._globals.setdefault("fjax", fjax)
        self._globals.setdefault("torch", fjax)
        self._language = Language.PYTHON
        stmt, setup = (self._clean(s) for s in (stmt, setup))
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description, env, num_threads)

    @staticmethod
    def _clean(code: str) -> str:
        code = textwrap.dedent(code)
        return (code[1:] if code.startswith("\n") else code).rstrip()

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        """Run ``stmt`` ``number`` times (after a warm-up of ``number // 100``, at least 2) and
        measure the whole block once, as ``timeit.Timer.timeit``.

        Args:
            number: how many times to run the statement.

        Example:
            >>> from fjax.utils.benchmark import Timer
            >>> Timer("x + 1", setup="x = fjax.ones(4)").timeit(5).number_per_run
            5
        """
        with set_torch_threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))
            return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        """Not provided (as in torch): use ``blocked_autorange``.

        Args:
            repeat: unused.
            number: unused.

        Example:
            >>> from fjax.utils.benchmark import Timer
            >>> Timer().repeat()
            Traceback (most recent call last):
            NotImplementedError: See `Timer.blocked_autorange.`
        """
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], None] | None = None) -> None:
        """Not provided (as in torch): use ``blocked_autorange``.

        Args:
            callback: unused.

        Example:
            >>> from fjax.utils.benchmark import Timer
            >>> Timer().autorange()
            Traceback (most recent call last):
            NotImplementedError: See `Timer.blocked_autorange.`
        """
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time: float) -> int:
        """Runs per block: grow by 10x until the clock's overhead is under 0.01% of a block and a
        block takes at least ``min_run_time / 1000`` (or one block exceeds ``min_run_time``)."""
        with set_torch_threads(self._task_spec.num_threads):
            overhead = float(np.sort(np.asarray([self._timeit(0) for _ in range(5)], np.float32))[2])
            number = 1
            while True:
                took = self._timeit(number)
                if (overhead / took <= 1e-4 and took >= min_run_time / 1000) or took > min_run_time:
                    return number
                if number * 10 > 2147483647:
                    return number
                number *= 10

    def _loop(self, number, stop, min_run_time, max_run_time=None, callback=None) -> list[float]:
        times: list[float] = []
        total, can_stop = 0.0, False
        with set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                took = self._timeit(number)
                times.append(took)
                total += took
                if callback:
                    callback(number, took)
                can_stop = stop(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def blocked_autorange(
        self, callback: Callable[[int, float], None] | None = None, min_run_time: float = 0.2
    ) -> Measurement:
        """Time blocks of ``stmt`` until ``min_run_time`` seconds are spent; the block size is
        chosen first so the clock's overhead (and the wait for async work) is negligible.

        Args:
            callback: called as ``callback(number, seconds)`` after each block.
            min_run_time: the total seconds of measured blocks to collect.

        Example:
            >>> from fjax.utils.benchmark import Timer
            >>> m = Timer("x * 2", setup="x = fjax.ones(4)").blocked_autorange(min_run_time=0.01)
            >>> len(m.times) >= 1 and m.median > 0
            True
        """
        number = self._block_size(min_run_time)
        times = self._loop(number, lambda _: True, min_run_time, callback=callback)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(
        self,
        threshold: float = 0.1,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
        callback: Callable[[int, float], None] | None = None,
    ) -> Measurement:
        """As ``blocked_autorange``, but keep measuring until there are more than 3 blocks whose
        ``iqr / median`` is below ``threshold`` (and ``min_run_time`` is spent), or until
        ``max_run_time``.

        Args:
            threshold: the relative spread (IQR over median) to reach.
            min_run_time: seconds to spend before the spread may stop the loop.
            max_run_time: seconds after which it stops regardless.
            callback: called as ``callback(number, seconds)`` after each block.

        Example:
            >>> from fjax.utils.benchmark import Timer
            >>> m = Timer("x * 2", setup="x = fjax.ones(4)").adaptive_autorange(max_run_time=0.05)
            >>> len(m.times) >= 1
            True
        """
        number = self._block_size(0.05)

        def stop(times):
            return len(times) > 3 and Measurement(number, times, self._task_spec).meets_confidence(threshold)

        times = self._loop(number, stop, min_run_time, max_run_time, callback)
        return Measurement(number, times, self._task_spec)

    def collect_callgrind(self, number: int = 100, *, repeats=None, collect_baseline=True, retain_out_file=False):
        """Not supported: Valgrind instruction counts of fjax statements are not provided.

        Args:
            number: unused.
            repeats: unused.
            collect_baseline: unused.
            retain_out_file: unused.

        Example:
            >>> from fjax.utils.benchmark import Timer
            >>> Timer().collect_callgrind()
            Traceback (most recent call last):
            NotImplementedError: Timer.collect_callgrind: Callgrind instruction counts are not supported by fjax
        """
        raise NotImplementedError("Timer.collect_callgrind: Callgrind instruction counts are not supported by fjax")
