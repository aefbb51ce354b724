"""Straight-line Python generated for work that runs on every repeated call.

Checking that a repeated call may reuse a compiled computation, and moving its arrays in and
out of Tensors, costs microseconds of Python per call, and on CPU each microsecond before a
dispatch delays the computation several times over (XLA's worker threads spin or sleep while
Python runs). A loop over a list of places costs ~100 ns a place; the same work written out
as one function with every object bound in a closure costs ~30 ns. fjax
writes such functions once per compiled computation, as torch.dynamo does its guards.
"""

from __future__ import annotations

from typing import Callable


def function(name: str, params: str, body: list[str], bound: dict) -> Callable:
    """``def name(params)`` with ``body`` (lines of Python), where the names in ``bound`` are
    free variables holding those objects (closure cells: unlike default arguments, nothing is
    copied per call).

    Example::

        >>> f = function("first", "xs", ["return xs[0] is o"], {"o": None})
        >>> f([None])
        True
    """
    src = "\n".join(
        [f"def _make({', '.join(bound)}):", f"    def {name}({params}):", *(f"        {line}" for line in body)]
    )
    namespace: dict = {}
    exec(compile(f"{src}\n    return {name}\n", f"<fjax generated {name}>", "exec"), {}, namespace)  # noqa: S102
    return namespace["_make"](**bound)


def tensor_data(name: str) -> str:
    """An expression for ``name._data`` (a Tensor's current array) without the property call:
    ~15 ns over a plain attribute read instead of ~50."""
    return f"({name}._arr if {name}._st is None or {name}._gen == {name}._st.gen else {name}._sync())"
