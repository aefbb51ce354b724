"""The part of ``torch._dynamo`` programs touch, over ``fjax.compile`` (see ``fjax.compiler``).

``torch._dynamo.config`` takes any setting (``suppress_errors``, ``cache_size_limit``, ...) and
keeps it; fjax's compiler reads only ``recompile_limit``, since XLA compiles whole traced programs.
"""

from __future__ import annotations

from .compiler import allow_in_graph, assume_constant_result, disable, is_compiling, reset
from .compiler import dynamo_config as config

__all__ = [
    "allow_in_graph",
    "assume_constant_result",
    "config",
    "disable",
    "is_compiling",
    "mark_dynamic",
    "mark_static",
    "reset",
]


def mark_dynamic(t, index, *, min=None, max=None) -> None:  # noqa: A002 - torch's names
    """torch's hint that dimension ``index`` of ``t`` varies; fjax compiles per shape (no effect)."""


def mark_static(t, index=None) -> None:
    """torch's hint that ``t``'s shape is fixed; fjax compiles per shape anyway (no effect)."""
