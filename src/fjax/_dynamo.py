"""The part of ``torch._dynamo`` programs touch, over ``fjax.compile`` (see ``fjax.compiler``).

``torch._dynamo.config`` takes any setting (``suppress_errors``, ``cache_size_limit``, ...) and
keeps it; fjax's compiler reads only ``recompile_limit``, since XLA compiles whole traced programs.
"""

from __future__ import annotations

from .compiler import allow_in_graph, assume_constant_result, disable, is_compiling, reset

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


class _Config:
    """``torch._dynamo.config``: settings are kept and read back; fjax's compiler reads
    ``recompile_limit`` (the default of ``fjax.compile``'s), no other."""

    def __init__(self):
        self.__dict__.update(
            suppress_errors=False, recompile_limit=8, cache_size_limit=8, verbose=False, optimize_ddp=True
        )


config = _Config()


def mark_dynamic(t, index, *, min=None, max=None) -> None:  # noqa: A002 - torch's names
    """torch's hint that dimension ``index`` of ``t`` varies; fjax compiles per shape (no effect)."""


def mark_static(t, index=None) -> None:
    """torch's hint that ``t``'s shape is fixed; fjax compiles per shape anyway (no effect)."""
