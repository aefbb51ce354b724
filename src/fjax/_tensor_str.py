"""How a Tensor's values print: torch's formatter (``torch/_tensor_str.py``) over numpy arrays.

``fjax.set_printoptions`` sets the process-wide options read here; the body a Tensor's repr
shows (the part between ``tensor(`` and the first suffix) is the text torch prints for the
same values under the same options.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()

_PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set how tensors print (process-wide), as torch's ``set_printoptions``.

    Args:
        precision: digits after the decimal point of floating values (default 4).
        threshold: more elements than this print summarized, with ``...`` (default 1000).
        edgeitems: items shown at each end of a summarized dimension (default 3).
        linewidth: characters per line before a row wraps (default 80).
        profile: ``"default"``, ``"short"`` or ``"full"``: a preset of the four above, which
            the other arguments then override.
        sci_mode: True or False forces scientific notation on or off; None (what every call
            without it sets, as in torch) lets the values decide.

    Example:
        >>> fjax.set_printoptions(precision=2)
        >>> fjax.tensor([1.12345])
        tensor([1.12], dtype=fjax.float32)
        >>> fjax.set_printoptions(threshold=5)
        >>> fjax.arange(10)
        tensor([0, 1, 2,  ..., 7, 8, 9], dtype=fjax.int64)
        >>> fjax.set_printoptions(profile="default")
        >>> fjax.tensor([1.12345])
        tensor([1.1235], dtype=fjax.float32)
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Context manager that sets print options and restores the previous ones on exit."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """torch's ``_Formatter``: one width and notation for all values of a tensor."""

    def __init__(self, a: np.ndarray):
        self.floating = a.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = a.reshape(-1)
        if not self.floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return
        absval = np.abs(vals)
        lo, hi = float(absval.min()), float(absval.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        p = PRINT_OPTS.precision
        for value in vals.tolist():
            if self.sci_mode:
                width = len(f"{value:.{p}e}")
            elif self.int_mode:
                width = len(f"{value:.0f}") + 1
            else:
                width = len(f"{value:.{p}f}")
            self.max_width = max(self.max_width, width)

    def format(self, value) -> str:
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _value_str(val, f1, f2) -> str:
    if f2 is None:
        return f1.format(val)
    real = f1.format(val.real)
    imag = (f2.format(val.imag) + "j").lstrip()
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector_str(a, indent, summarize, f1, f2) -> str:
    element_length = f1.max_width + 2 + (f2.max_width + 1 if f2 is not None else 0)
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = [_value_str(v, f1, f2) for v in a[:e].tolist()] + [" ..."]
        data += [_value_str(v, f1, f2) for v in a[-e:].tolist()]
    else:
        data = [_value_str(v, f1, f2) for v in a.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _str_with_formatter(a, indent, summarize, f1, f2) -> str:
    if a.ndim == 0:
        return _value_str(a.item(), f1, f2)
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, f1, f2)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        rows = list(range(e)) + [None] + list(range(a.shape[0] - e, a.shape[0]))
    else:
        rows = range(a.shape[0])
    slices = ["..." if i is None else _str_with_formatter(a[i], indent + 1, summarize, f1, f2) for i in rows]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _summarized(a: np.ndarray) -> np.ndarray:
    """The values a summarized print shows (torch's ``get_summarized_data``)."""
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:e], a[-e:]]) if a.shape[0] > 2 * e else a
    if not e:
        return np.empty([0] * a.ndim, a.dtype)
    rows = list(range(e)) + list(range(a.shape[0] - e, a.shape[0])) if a.shape[0] > 2 * e else range(a.shape[0])
    return np.stack([_summarized(a[i]) for i in rows])


def tensor_str(a: np.ndarray, indent: int) -> str:
    """torch's ``_tensor_str``: the printed values of ``a`` (a numpy array), lines after the
    first indented by ``indent`` columns."""
    if a.size == 0:
        return "[]"
    summarize = a.size > PRINT_OPTS.threshold
    if a.dtype.kind == "V" or (a.dtype.kind == "f" and a.dtype.itemsize < 4) or a.dtype.kind not in "biufc":
        a = a.astype(np.float64)  # bfloat16/float8 (ml_dtypes) and float16: values, exactly, as float64
    if a.dtype.kind == "c":
        f1 = _Formatter(_summarized(a.real) if summarize else a.real)
        f2 = _Formatter(_summarized(a.imag) if summarize else a.imag)
        return _str_with_formatter(a, indent, summarize, f1, f2)
    return _str_with_formatter(a, indent, summarize, _Formatter(_summarized(a) if summarize else a), None)
