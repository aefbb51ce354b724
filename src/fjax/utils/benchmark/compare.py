"""``Compare``: many Measurements as tables, one per label, rows by sub-label/statement (grouped by
thread count and env), columns by description (torch.utils.benchmark's ``Compare``)."""

from __future__ import annotations

import enum
import itertools
import math

from .common import Measurement, _log10_f32, ordered_unique, select_unit, trim_sigfig, unit_to_english

__all__ = ["Colorize", "Compare"]

_BEST, _GOOD, _BAD, _VERY_BAD = "\033[92m", "\033[34m", "\033[2m\033[91m", "\033[31m"
_BOLD, _END = "\033[1m", "\033[0m"


class Colorize(enum.Enum):
    """How ``Compare`` colours its cells: not at all, against the best of each column, or of each row.

    Example:
        >>> from fjax.utils.benchmark import Colorize
        >>> Colorize("rowwise")
        <Colorize.ROWWISE: 'rowwise'>
    """

    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _paint(cell: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return _BEST + _BOLD + cell + _END * 2
    if value <= best * 1.1:
        return _GOOD + _BOLD + cell + _END * 2
    if value >= best * 5:
        return _VERY_BAD + _BOLD + cell + _END * 2
    if value >= best * 2:
        return _BAD + cell + _END * 2
    return cell


class _Column:
    """How one column prints its numbers: a common width and number of decimals."""

    def __init__(self, groups, scale: float, trim: bool, highlight: bool):
        self.groups = groups  # per thread-count group of rows: that column's measurements (or None)
        flat = [m for m in itertools.chain.from_iterable(groups)]
        self.trim = trim
        self.highlight = highlight and any(m.has_warnings for m in flat if m)
        digits = [(int(math.ceil(_log10_f32(m.median / scale))), m) for m in flat if m]
        integer = max(d for d, _ in digits)
        decimals = min(max(m.significant_figures - d, 0) for d, m in digits) if trim else 1
        width = integer + decimals + (1 if decimals else 0)
        self.template = f"{{:>{width}.{decimals}f}}{{:>{7 if self.highlight else 0}}}"

    def cell(self, value, sigfigs: int, spread) -> str:
        if value is None:
            return " " * len(self.cell(1, sigfigs, None))
        if self.trim:
            value = trim_sigfig(value, sigfigs)
        note = f" (! {spread * 100:.0f}%)" if self.highlight and spread is not None else ""
        return self.template.format(value, note)


class _Table:
    """One label's measurements laid out as rows (thread count, env, row name) by description columns."""

    def __init__(self, results: list[Measurement], colorize: Colorize, trim: bool, highlight: bool):
        if len({r.label for r in results}) != 1:
            raise AssertionError("Compare: all results of a table must share the same label")
        self.results, self.colorize, self.highlight = results, colorize, highlight
        self.label = results[0].label
        self.unit, self.scale = select_unit(min(r.median for r in results))
        self.row_keys = ordered_unique((r.num_threads, r.env, r.as_row_name) for r in results)
        self.row_keys.sort(key=lambda k: k[:2])  # stable: statements keep their order
        self.col_keys = ordered_unique(r.description for r in results)
        grid = [[None] * len(self.col_keys) for _ in self.row_keys]
        rpos = {k: i for i, k in enumerate(self.row_keys)}
        cpos = {k: j for j, k in enumerate(self.col_keys)}
        for r in results:
            grid[rpos[(r.num_threads, r.env, r.as_row_name)]][cpos[r.description]] = r
        self.grid = grid
        envs = {r.env for r in results}
        self.show_env = len(envs) > 1
        self.env_width = max(len(e) for e in envs) if self.show_env else 0
        # rows are grouped by thread count; a row shows its env when it differs from the row above
        self.group_of, self.thread_header, self.env_shown = [], [], []
        prior_threads, prior_env, group = -1, "", -1
        for threads, env, _ in self.row_keys:
            if threads != prior_threads:
                prior_threads, prior_env, group = threads, "", group + 1
                self.thread_header.append(threads)
            else:
                self.thread_header.append(None)
            self.group_of.append(group)
            self.env_shown.append(self.show_env and env != prior_env)
            prior_env = env
        self.columns = []
        for j in range(len(self.col_keys)):
            groups = [tuple(row[j] for row, g in zip(grid, self.group_of) if g == k) for k in range(group + 1)]
            self.columns.append(_Column(groups, self.scale, trim, highlight))

    def _row_cells(self, i: int) -> list[str]:
        row = self.grid[i]
        first = next(m for m in row if m is not None)
        env = f"({first.env})" if self.env_shown[i] else ""
        cells = ["  " + env.ljust(self.env_width + 4) + first.as_row_name]
        for m, col in zip(row, self.columns):
            if m is None:
                cells.append(col.cell(None, 1, None))
            else:
                spread = m.iqr / m.median if m.has_warnings else None
                cells.append(col.cell(m.median / self.scale, m.significant_figures, spread))
        return cells

    def _best(self, i: int) -> list:
        row = self.grid[i]
        if self.colorize == Colorize.ROWWISE:
            return [min(m.median for m in row if m is not None)] * len(row)
        if self.colorize == Colorize.COLUMNWISE:
            best = []
            for col in self.columns:
                medians = [m.median for m in col.groups[self.group_of[i]] if m is not None]
                best.append(min(medians) if medians else None)
            return best
        return [None] * len(row)

    def render(self) -> str:
        table = [[""] + list(self.col_keys)] + [self._row_cells(i) for i in range(len(self.grid))]
        ncols = max(len(r) for r in table)
        table = [r + [""] * (ncols - len(r)) for r in table]
        widths = [max(len(c) for c in col) for col in zip(*table)]
        header = "  |  ".join(c.center(w) for c, w in zip(table[0], widths))
        lines = [header]
        for i, cells in enumerate(table[1:]):
            if self.thread_header[i] is not None:
                lines.append(f"{self.thread_header[i]} threads: ".ljust(len(header), "-"))
            out = [cells[0].ljust(widths[0])]
            for cell, w, m, best in zip(cells[1:], widths[1:], self.grid[i], self._best(i)):
                cell = cell.center(w)
                if self.colorize != Colorize.NONE and m is not None and best is not None:
                    cell = _paint(cell, m.median, best)
                out.append(cell)
            lines.append("  |  ".join(out))
        title = f"[{(' ' + (self.label or '') + ' ').center(len(header) - 2, '-')}]"
        text = f"{title}\n" + "\n".join(lines) + f"\n\nTimes are in {unit_to_english(self.unit)}s ({self.unit}).\n"
        if self.highlight and any(r.has_warnings for r in self.results):
            text += "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
        return text


class Compare:
    """Print many Measurements as tables: one per ``label``, a row per ``sub_label`` (or statement)
    grouped by thread count and ``env``, a column per ``description``; replicates of a task are
    pooled. The layout and digits are torch's.

    Args:
        results: the ``Measurement``\\ s to show.

    Example:
        >>> from fjax.utils.benchmark import Compare, Measurement, TaskSpec
        >>> ms = [
        ...     Measurement(1, [t * 1e-6] * 4, TaskSpec("f(x)", "pass", label="f", sub_label=s, description=d))
        ...     for s, d, t in [("a", "n=1", 2.0), ("a", "n=2", 3.0), ("b", "n=1", 5.0), ("b", "n=2", 7.0)]
        ... ]
        >>> print(Compare(ms))
        [--------- f ---------]
                 |  n=1  |  n=2
        1 threads: ------------
              a  |  2.0  |  3.0
              b  |  5.0  |  7.0
        <BLANKLINE>
        Times are in microseconds (us).
        <BLANKLINE>
    """

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results) -> None:
        """Add more measurements.

        Args:
            results: ``Measurement``\\ s (anything else raises ``ValueError``).

        Example:
            >>> from fjax.utils.benchmark import Compare, Measurement, TaskSpec
            >>> c = Compare([])
            >>> c.extend_results([Measurement(1, [1e-3], TaskSpec("f()", "pass"))])
        """
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Compare: expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Round each cell to the digits its measurement supports (``Measurement.significant_figures``).

        Example:
            >>> from fjax.utils.benchmark import Compare
            >>> Compare([]).trim_significant_figures()
        """
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Colour the cells against the best of their column (or, with ``rowwise``, of their row).

        Args:
            rowwise: compare within rows instead of columns.

        Example:
            >>> from fjax.utils.benchmark import Compare
            >>> Compare([]).colorize(rowwise=True)
        """
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark the cells of measurements with a large spread with ``(! XX%)``.

        Example:
            >>> from fjax.utils.benchmark import Compare
            >>> Compare([]).highlight_warnings()
        """
        self._highlight_warnings = True

    def print(self) -> None:
        """Print the tables.

        Example:
            >>> from fjax.utils.benchmark import Compare
            >>> Compare([]).print()
            <BLANKLINE>
        """
        print(str(self))

    def _render(self) -> list[str]:
        by_label: dict = {}
        for r in Measurement.merge(self._results):
            by_label.setdefault(r.label, []).append(r)
        return [
            _Table(group, self._colorize, self._trim_significant_figures, self._highlight_warnings).render()
            for group in by_label.values()
        ]
