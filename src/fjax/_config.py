"""``fjax.config``: process-wide settings of the eager runtime.

Each setting starts from an environment variable, so a script can be tuned without editing it::

    FJAX_EAGER_CACHE_SIZE=256 FJAX_LOG_COMPILES=1 python train.py

or from code::

    >>> import fjax
    >>> fjax.config.log_compiles = False
    >>> fjax.config.eager_cache_size >= 1
    True
"""

from __future__ import annotations

import os


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    if not value:
        return default
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"fjax.config: environment variable {name}={value!r} is not an integer") from None
    if n < 1:
        raise ValueError(f"fjax.config: environment variable {name}={value!r} must be at least 1")
    return n


class _Config:
    """The settings (attributes of ``fjax.config``)."""

    def __init__(self):
        self._cache_size_listeners = []  # dispatch's new_kernel_cache (it imports this module)
        self._eager_cache_size = _env_int("FJAX_EAGER_CACHE_SIZE", 1024)
        self.log_compiles = os.environ.get("FJAX_LOG_COMPILES", "") not in ("", "0", "false", "False")
        """Print one line to stderr per XLA compile: the op, its inputs and why the cache missed."""
        self.graph_index_checks = os.environ.get("FJAX_GRAPH_INDEX_CHECKS", "1") not in ("0", "false", "False")
        """Inside nn.Graph steps, check indices (gather, embedding, loss targets, ...) as eager
        does; a bad one raises ``fjax.asyncs.CheckError`` at the next synchronization. Off
        (``FJAX_GRAPH_INDEX_CHECKS=0``) for production steps that must not pay for it."""

    @property
    def eager_cache_size(self) -> int:
        """How many compiled eager kernels (an op at one set of input shapes, dtypes and static
        arguments) are kept; the least recently used beyond it are dropped and recompile if
        they come back. Setting it starts a new, empty cache."""
        return self._eager_cache_size

    @eager_cache_size.setter
    def eager_cache_size(self, n: int) -> None:
        if type(n) is not int or n < 1:
            raise ValueError(f"fjax.config.eager_cache_size: expected an int >= 1, got {n!r}")
        self._eager_cache_size = n
        for listener in self._cache_size_listeners:
            listener(n)

    def __repr__(self):
        return (
            f"fjax.config(eager_cache_size={self.eager_cache_size}, log_compiles={self.log_compiles}, "
            f"graph_index_checks={self.graph_index_checks})"
        )


config = _Config()
