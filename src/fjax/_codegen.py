"""Straight-line Python generated for work that runs on every repeated call.

Checking that a repeated call may reuse a compiled computation, and moving its arrays in and
out of Tensors, costs microseconds of Python per call, and on CPU each microsecond before a
dispatch delays the computation several times over (XLA's worker threads spin or sleep while
Python runs). A loop over a list of places costs ~100 ns a place; the same work written out
as one function with every object a fast local (a default argument) costs ~30 ns. fjax
writes such functions once per compiled computation, as torch.dynamo does its guards.
"""

from __future__ import annotations

from typing import Callable


def function(name: str, params: str, body: list[str], bound: dict) -> Callable:
    """``def name(params)`` with ``body`` (lines of Python), where the names in ``bound`` are
    default arguments holding those objects (callers pass ``params`` only).

    Example::

        >>> f = function("first", "xs", ["return xs[0] is o"], {"o": None})
        >>> f([None])
        True
    """
    signature = ", ".join([params] * bool(params) + [f"{k}={k}" for k in bound])
    src = "\n".join([f"def {name}({signature}):", *(f"    {line}" for line in body)]) + "\n"
    namespace: dict = {}
    exec(compile(src, f"<fjax generated {name}>", "exec"), dict(bound), namespace)  # noqa: S102
    return namespace[name]
