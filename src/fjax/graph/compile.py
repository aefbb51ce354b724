"""Compile-stage timing with RSS (``StageTimes``; ``executable.py`` runs the stages), the persistent
compilation cache, memory reports."""

from __future__ import annotations

import logging
import os
import resource
from dataclasses import asdict, dataclass, field

import jax

logger = logging.getLogger("fjax.graph")

ENV_DEBUG = "FJAX_DEBUG"
ENV_CACHE = "FJAX_COMPILATION_CACHE"


def rss_mb() -> float:
    """Current resident set size of this process in MiB (peak RSS where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class StageTimes:
    """Seconds and RSS (MiB) after each compile stage of one input signature."""

    signature: str
    stages: dict = field(default_factory=dict)

    def record(self, graph_name: str, stage: str, seconds: float, level: int) -> None:
        rss = rss_mb()
        self.stages[stage] = {"seconds": seconds, "rss_mb": rss}
        if level >= 0:
            line = f"[GraphCompile] {graph_name} {stage}: {seconds:.3f} s, RSS {rss:.0f} MiB ({self.signature})"
            print(line, flush=True)
            logger.info(line)

    def as_dict(self) -> dict:
        return asdict(self)


def debug_level_from_env() -> int:
    """``FJAX_DEBUG=1`` (or any level >= 0) turns the stage log on for every graph."""
    value = os.environ.get(ENV_DEBUG)
    if value is None or value == "":
        return -1
    try:
        return int(value) - 1 if value.isdigit() else 0
    except ValueError:
        return 0


def enable_persistent_cache(path: str | None = None, min_compile_time_secs: float = 0.0) -> str:
    """Turn on JAX's on-disk compilation cache, so a second process compiles nothing.

    Args:
        path: cache folder (default ``$FJAX_COMPILATION_CACHE`` or ``~/.cache/fjax/xla``).
        min_compile_time_secs: cache every executable that took at least this long (0: all).

    Returns:
        The cache folder.
    """
    path = path or os.environ.get(ENV_CACHE) or os.path.expanduser("~/.cache/fjax/xla")
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", min_compile_time_secs)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


def memory_report(compiled) -> dict:
    """XLA's memory analysis of a compiled executable, in bytes."""
    m = compiled.memory_analysis()
    if m is None:
        return {}
    keys = [
        "argument_size_in_bytes",
        "output_size_in_bytes",
        "temp_size_in_bytes",
        "generated_code_size_in_bytes",
        "alias_size_in_bytes",
    ]
    return {k.replace("_size_in_bytes", "_bytes"): int(getattr(m, k, 0) or 0) for k in keys}
