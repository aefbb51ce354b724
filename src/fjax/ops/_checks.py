"""Argument validators shared by ops and layers: each raises torch's error class with a message
naming the op, the argument and its value, before anything is lowered.

They are Python-side checks of static arguments and shapes only (no device work), so they are
free on the hot path. ``OpError`` is a RuntimeError, a ValueError and a TypeError, so one class
matches torch whichever of those it raises.
"""

from __future__ import annotations

from ..errors import OpError


class ArgumentAssertionError(OpError, AssertionError):
    """An argument torch refuses with an ``assert`` (``embed_dim % num_heads``, ``padding_idx``):
    an AssertionError as in torch, and an OpError."""


class IndexOpError(OpError, IndexError):
    """A dim or index out of range: an IndexError as torch raises it, and an OpError."""


_BOUNDS = {0: "non-negative", 1: "greater than zero"}


def _bound(lo) -> str:
    return _BOUNDS.get(lo, f"at least {lo}")


def ints(op: str, arg: str, value, nd: int, lo: int | None = None) -> tuple:
    """``value`` (an int or a sequence of ``nd`` ints; a 1-sequence repeats) as an nd-tuple, each
    at least ``lo`` when given (``lo=1``: positive, ``lo=0``: non-negative)."""
    t = (value,) * nd if isinstance(value, int) else tuple(value)
    if len(t) == 1 and nd > 1:
        t = t * nd
    if len(t) != nd or not all(isinstance(v, int) for v in t):
        raise OpError(f"{op}: expected {arg} to be an int or {nd} ints, got {value!r}")
    if lo is not None and any(v < lo for v in t):
        raise OpError(f"{op}: {arg} should be {_bound(lo)}, but got {arg}={value!r}")
    return t


def at_least(op: str, arg: str, value, lo=1, exc: type = OpError):
    """``value`` itself, checked ``>= lo`` (``lo=1``: positive, ``lo=0``: non-negative)."""
    if value < lo:
        raise exc(f"{op}: {arg} should be {_bound(lo)}, but got {arg}={value!r}")
    return value


def in_range(op: str, arg: str, value, lo, hi, exc: type = OpError):
    """``value`` itself, checked to lie in ``[lo, hi]``."""
    if not lo <= value <= hi:
        raise exc(f"{op}: {arg} must be between {lo} and {hi}, but got {arg}={value!r}")
    return value


def one_of(op: str, arg: str, value, options, exc: type = OpError):
    """``value`` itself, checked to be one of ``options`` (strings: modes, reductions)."""
    if value not in options:
        raise exc(f"{op}: {arg} must be one of {', '.join(map(repr, options))}, but got {arg}={value!r}")
    return value


def divides(op: str, arg: str, value, other: str, total, exc: type = OpError):
    """``value`` itself, checked to be a positive divisor of ``total`` (``other`` names it)."""
    if value <= 0 or total % value:
        raise exc(f"{op}: {other}={total} must be divisible by {arg}={value!r}")
    return value
