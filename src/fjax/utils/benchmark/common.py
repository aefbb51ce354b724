"""What a benchmark measured (``TaskSpec``, ``Measurement``) and the number-formatting helpers that
``Timer`` and ``Compare`` share (torch.utils.benchmark's ``common``).

Figures that torch computes in float32 tensors (units, significant figures, trimming) are computed in
float32 here too, so the same times print the same digits as torch's.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import textwrap
from typing import Any, Iterable, Iterator

import numpy as np

__all__ = [
    "Measurement",
    "TaskSpec",
    "ordered_unique",
    "select_unit",
    "set_torch_threads",
    "trim_sigfig",
    "unit_to_english",
]

_MAX_SIGFIGS = 4
_MIN_CI = 25e-9  # seconds: no measurement is trusted to better than 25 ns
_IQR_WARN = 0.1
_IQR_GROSS_WARN = 0.25
_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}


def _t(x):
    """``x`` as the number torch makes of it with ``torch.tensor(x)``: a numpy float keeps its
    precision, a Python number becomes float32."""
    return x if isinstance(x, np.floating) else np.float32(x)


def _log10_f32(x: float) -> float:
    """torch's ``tensor(x).log10()``: the correctly rounded log10 at ``x``'s tensor precision
    (numpy's float32 log10 is up to an ulp off, which moves unit boundaries such as 1e-6)."""
    x = _t(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(x.dtype.type(np.log10(np.float64(x))))


@dataclasses.dataclass(frozen=True, eq=True, repr=False)
class TaskSpec:
    """What a ``Timer`` runs and how it is labelled (everything but its globals).

    Args:
        stmt: the timed statement.
        setup: the statement run once before timing.
        global_setup: C++ only in torch; always ``""`` for fjax's Python timers.
        label: the table a ``Compare`` puts the measurement in.
        sub_label: the row label beside ``stmt``/``label``.
        description: the column a ``Compare`` puts the measurement in.
        env: a tag that keeps otherwise identical tasks apart.
        num_threads: the thread count the statement ran with.

    Example:
        >>> from fjax.utils.benchmark import TaskSpec
        >>> TaskSpec("x + 1", "x = 1", label="add", sub_label="int").title
        'add: int'
    """

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or the one-line statement) with the sub-label, for reprs and tables."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        """The setup as a repr line (``""`` for none).

        Example:
            >>> from fjax.utils.benchmark import TaskSpec
            >>> TaskSpec("y = x", "x = 1").setup_str()
            'setup: x = 1'
        """
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, description and setup, one per line, as a ``Measurement``'s repr shows them.

        Example:
            >>> from fjax.utils.benchmark import TaskSpec
            >>> print(TaskSpec("y = x", "x = 1", description="n=1").summarize())
            y = x
            n=1
            setup: x = 1
        """
        parts = [p for p in (self.title, self.description or "", self.setup_str()) if p]
        return "\n".join(p + "\n" if "\n" in p else p for p in parts)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(repr=False)
class Measurement:
    """The times a ``Timer`` took: ``raw_times[i]`` seconds for ``number_per_run`` runs of the
    statement, with statistics per run (``median``, ``mean``, ``iqr``) and torch's repr.

    The ``TaskSpec`` fields (``stmt``, ``label``, ``num_threads``, ...) read through as attributes.

    Args:
        number_per_run: how many times the statement ran per entry of ``raw_times``.
        raw_times: the measured seconds, one per block of ``number_per_run`` runs.
        task_spec: what was run.
        metadata: anything the caller wants to keep with it.

    Example:
        >>> from fjax.utils.benchmark import Measurement, TaskSpec
        >>> m = Measurement(10, [1e-3, 2e-3, 4e-3, 8e-3], TaskSpec("f()", "pass"))
        >>> [round(t, 6) for t in m.times], round(m.median, 6), round(m.iqr, 6)
        ([0.0001, 0.0002, 0.0004, 0.0008], 0.0003, 0.000325)
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None

    def __post_init__(self) -> None:
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @property
    def times(self) -> list[float]:
        """Seconds per single run of the statement, one per measured block."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        """The median of ``times``."""
        self._stats()
        return self._median

    @property
    def mean(self) -> float:
        """The mean of ``times``."""
        self._stats()
        return self._mean

    @property
    def iqr(self) -> float:
        """The interquartile range (75th minus 25th percentile) of ``times``."""
        self._stats()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """How many digits of the median to trust (1 to 4), from a 90% confidence interval of the
        middle half of ``times``; ``Compare.trim_significant_figures`` rounds to it."""
        self._stats()
        n = len(self._sorted_times)
        middle = self._sorted_times[n // 4 : int(math.ceil(np.float32(3 * n / 4)))]
        std = float(np.std(np.asarray(middle, np.float32)))
        sqrt_n = float(np.sqrt(np.float32(len(middle))))
        ci = max(1.645 * std / sqrt_n, _MIN_CI)
        figures = int(math.floor(_log10_f32(self._median / ci)))
        return min(max(figures, 1), _MAX_SIGFIGS)

    @property
    def has_warnings(self) -> bool:
        """Whether the spread (IQR over median) is large enough to warn about."""
        self._stats()
        return bool(self._warnings)

    def _stats(self) -> None:
        if not self.raw_times or self._sorted_times:
            return
        self._sorted_times = tuple(sorted(self.times))
        t = np.asarray(self._sorted_times, np.float64)
        self._median, self._mean = float(np.quantile(t, 0.5)), float(t.mean())
        self._p25, self._p75 = float(np.quantile(t, 0.25)), float(np.quantile(t, 0.75))
        if not self.meets_confidence(_IQR_GROSS_WARN):
            why = "This suggests significant environmental influence."
        elif not self.meets_confidence(_IQR_WARN):
            why = "This could indicate system fluctuation."
        else:
            return
        rel = self.iqr / self.median * 100
        self._warnings += (
            f"  WARNING: Interquartile range is {rel:.1f}% of the median measurement.\n           {why}",
        )

    def meets_confidence(self, threshold: float = _IQR_WARN) -> bool:
        """Whether ``iqr / median`` is below ``threshold``.

        Args:
            threshold: the largest relative spread accepted.

        Example:
            >>> from fjax.utils.benchmark import Measurement, TaskSpec
            >>> Measurement(1, [1.0, 1.01, 1.02, 1.0], TaskSpec("f()", "pass")).meets_confidence(0.1)
            True
        """
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        """The task's title (``TaskSpec.title``)."""
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        """The task's ``env`` tag."""
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        """The row name in a ``Compare`` table: the sub-label, else the statement."""
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._stats()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self), self.task_spec.summarize()]
        lines.append(f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}")
        if n >= 4:
            lines.append(
                f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to {self._p75 / scale:.2f})"
            )
        lines.append(
            f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
            f"{'per measurement,' if n > 1 else ','} {self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        )
        lines.append("\n".join(self._warnings))
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """Pool the replicates of each task into one ``Measurement`` with ``number_per_run=1``
        (per-run times; metadata is dropped), in the order the tasks first appear.

        Args:
            measurements: measurements, several of which may share a ``TaskSpec``.

        Example:
            >>> from fjax.utils.benchmark import Measurement, TaskSpec
            >>> spec = TaskSpec("f()", "pass")
            >>> [m.times for m in Measurement.merge([Measurement(2, [1.0], spec), Measurement(1, [3.0], spec)])]
            [[0.5, 3.0]]
        """
        groups: dict[TaskSpec, list[float]] = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].extend(m.times)
        return [Measurement(1, times, spec) for spec, times in groups.items()]


def select_unit(t: float) -> tuple[str, float]:
    """The time unit (``"ns"``, ``"us"``, ``"ms"`` or ``"s"``) that shows ``t`` seconds with 1 to 3
    integer digits, and its size in seconds.

    Args:
        t: a time in seconds (positive).

    Example:
        >>> from fjax.utils.benchmark import select_unit
        >>> select_unit(2.5e-5)
        ('us', 1e-06)
    """
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(_log10_f32(t) // 3), "s")
    return unit, _UNITS[unit]


def unit_to_english(u: str) -> str:
    """The English name of a time unit.

    Args:
        u: ``"ns"``, ``"us"``, ``"ms"`` or ``"s"``.

    Example:
        >>> from fjax.utils.benchmark import unit_to_english
        >>> unit_to_english("us")
        'microsecond'
    """
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (in float32, as torch rounds it).

    Args:
        x: the number.
        n: how many significant figures to keep (an integer).

    Example:
        >>> from fjax.utils.benchmark import trim_sigfig
        >>> round(trim_sigfig(3.14159, 2), 5)
        3.1
    """
    if n != int(n):
        raise AssertionError(f"trim_sigfig: number of significant figures must be an integer, got {n}")
    magnitude = int(math.ceil(_log10_f32(abs(_t(x)))))
    scale = 10 ** (magnitude - n)
    rounded = np.round(_t(x / scale))
    return float(rounded * rounded.dtype.type(scale))


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    """The distinct elements in the order they first appear.

    Args:
        elements: hashable items.

    Example:
        >>> from fjax.utils.benchmark import ordered_unique
        >>> ordered_unique([3, 1, 3, 2, 1])
        [3, 1, 2]
    """
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Within the block, ``fjax.get_num_threads()`` is ``n`` (restored after).

    fjax runs on XLA, whose CPU thread pool is sized when the backend starts; where fjax has no
    ``set_num_threads`` the block changes nothing.

    Args:
        n: the thread count to set.

    Example:
        >>> from fjax.utils.benchmark import set_torch_threads
        >>> with set_torch_threads(1):
        ...     pass
    """
    from ..._settings import get_num_threads as get
    from ..._settings import set_num_threads as put

    prior = get()
    try:
        put(n)
        yield
    finally:
        put(prior)
