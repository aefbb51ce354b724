"""``fjax.config``: process-wide settings of the eager runtime.

Each setting starts from an environment variable, so a script can be tuned without editing it::

    FJAX_EAGER_CACHE_SIZE=256 FJAX_EAGER_CACHE_BYTES=268435456 FJAX_LOG_COMPILES=1 python train.py

or from code::

    >>> import fjax
    >>> fjax.config.log_compiles = False
    >>> fjax.config.eager_cache_size >= 1
    True
"""

from __future__ import annotations

import contextlib
import os
import threading
import time


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
        self._eager_cache_bytes = _env_int("FJAX_EAGER_CACHE_BYTES", 1 << 30)
        self.log_compiles = os.environ.get("FJAX_LOG_COMPILES", "") not in ("", "0", "false", "False")
        """Print one line to stderr per XLA compile: the op, its inputs and why the cache missed."""
        self.eager_fusion = os.environ.get("FJAX_EAGER_FUSION", "1") not in ("0", "false", "False")
        """Eager fusion: a backward runs as one compiled XLA program instead of one kernel per
        node; a later backward of the same tape structure (the next training step) reuses it.
        Off: ``FJAX_EAGER_FUSION=0`` (every node its own kernel, as before)."""
        self.bucketing = os.environ.get("FJAX_BUCKETING", "1") not in ("0", "false", "False")
        """Bucketed dimensions (``fjax._bucket``): an op that declares its rows (Linear,
        elementwise ops, softmax over the last dim, losses, ...) and has met new sizes of its
        batch dimension in three different steps runs from then on with it padded to a bucket size
        (``bucket_size``), so a batch that changes every step compiles once per bucket, not once
        per size. Off: ``FJAX_BUCKETING=0``."""
        self.bucket_sizes = None
        """The bucket sizes (a sorted list of ints), or None for the default ladder: powers of two
        and their 1.5x midpoints (8, 12, 16, 24, 32, 48, ...) from ``bucket_floor`` up. A size
        above the last listed one is not padded."""
        self.bucket_floor = _env_int("FJAX_BUCKET_FLOOR", 8)
        """The smallest bucket of the default ladder."""
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

    @property
    def eager_cache_bytes(self) -> int:
        """A bound on the process memory that compiled eager programs hold, in bytes (default
        1 GiB, ``FJAX_EAGER_CACHE_BYTES``), beside the count bound ``eager_cache_size``. Each
        compile is sized by the process memory it added (from its trace to its executable); past
        the bound the least recently used op kernels are dropped (they recompile if they come
        back), and JAX's caches are swept of what dropped programs left, at least every quarter
        of the bound compiled. ``fjax.dispatch.kernel_cache_bytes()`` reads the figure."""
        return self._eager_cache_bytes

    @eager_cache_bytes.setter
    def eager_cache_bytes(self, n: int) -> None:
        if type(n) is not int or n < 1:
            raise ValueError(f"fjax.config.eager_cache_bytes: expected an int >= 1 (bytes), got {n!r}")
        self._eager_cache_bytes = n

    @property
    def compilation_cache(self) -> str | None:
        """The folder of JAX's persistent compilation cache, where every XLA program fjax compiles
        (eager kernels too) is kept across processes, so a script's second run does not compile
        again; None when off. On by default in ``$XDG_CACHE_HOME/fjax/xla`` (``~/.cache/fjax/xla``),
        bounded by ``FJAX_COMPILATION_CACHE_MAX_BYTES`` (default 4 GiB: at most once an hour, a
        background thread drops the programs written longest ago beyond it; see ``bound_cache``).
        ``FJAX_COMPILATION_CACHE=/path`` moves it, ``=0`` turns it off; setting this attribute
        to a path or None does the same from code. A folder set through
        ``jax.config.update("jax_compilation_cache_dir", ...)`` before fjax is imported is kept."""
        import jax

        return jax.config.jax_compilation_cache_dir if jax.config.jax_enable_compilation_cache else None

    @compilation_cache.setter
    def compilation_cache(self, path: str | None) -> None:
        import jax

        from . import _jax_compat

        if path is None:
            jax.config.update("jax_enable_compilation_cache", False)
        else:
            os.makedirs(path, exist_ok=True)
            jax.config.update("jax_enable_compilation_cache", True)
            jax.config.update("jax_compilation_cache_dir", str(path))
        _jax_compat.reset_persistent_cache()  # (JAX reads both once per process: now again)

    def __repr__(self):
        return (
            f"fjax.config(eager_cache_size={self.eager_cache_size}, eager_cache_bytes={self.eager_cache_bytes}, "
            f"eager_fusion={self.eager_fusion}, "
            f"log_compiles={self.log_compiles}, bucketing={self.bucketing}, "
            f"graph_index_checks={self.graph_index_checks}, compilation_cache={self.compilation_cache!r})"
        )


def _default_compilation_cache() -> None:
    """At import: JAX's persistent compilation cache on, unless the environment or an earlier
    ``jax.config`` setting says otherwise. Eager kernels compile in ~10-50 ms each, so programs
    are kept from 10 ms of compile time up (JAX's default, 1 s, would keep none of them)."""
    import jax

    setting = os.environ.get("FJAX_COMPILATION_CACHE", "")
    if setting.strip().lower() in ("0", "off", "false", "no"):
        config.compilation_cache = None
        return
    if jax.config.jax_compilation_cache_dir is None or setting:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        try:
            config.compilation_cache = setting or os.path.join(base, "fjax", "xla")
        except OSError:  # a read-only home: no cache, as before
            return
        if jax.config.jax_persistent_cache_min_compile_time_secs >= 1.0:  # JAX's default: not the user's
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.01)
        if jax.config.jax_compilation_cache_max_size == -1:  # a folder fjax chose gets fjax's bound
            global cache_limit
            cache_limit = int(os.environ.get("FJAX_COMPILATION_CACHE_MAX_BYTES", str(4 << 30)))
            threading.Thread(target=bound_cache, args=(config.compilation_cache, cache_limit), daemon=True).start()


cache_limit = None  # bytes: the bound ``bound_cache`` keeps fjax's cache folder within (None: not fjax's folder)


_CACHE_SUFFIX, _ATIME_SUFFIX = "-cache", "-atime"  # the names of JAX's cache entries (its lru_cache module)


def bound_cache(path: str, limit: int, every: float = 3600.0) -> int:
    """Keep the compilation cache folder ``path`` within ``limit`` bytes: when over, delete the
    programs written longest ago until it holds at most 90% of it. Runs at most once per
    ``every`` seconds per folder (a stamp file's age), so a process start costs a folder scan
    about once an hour. Returns the number of programs deleted.

    Not JAX's own bound (``jax_compilation_cache_max_size``): that one scans every entry under a
    file lock at each write, which with the ten thousand programs an eager user soon keeps made
    every new compile 2.7 s slower (a 0.2 s compile took 2.9 s). fjax's folder therefore runs
    JAX's cache unbounded and bounds it here."""
    stamp = os.path.join(path, ".fjax-bounded")
    try:
        if time.time() - os.path.getmtime(stamp) < every:
            return 0
    except OSError:
        pass
    try:
        with open(stamp, "w"):
            pass
        entries, total = [], 0
        with os.scandir(path) as it:
            for e in it:
                if e.name.endswith(_CACHE_SUFFIX):
                    st = e.stat()
                    entries.append((max(st.st_mtime, st.st_atime), st.st_size, e.path))
                    total += st.st_size
        if total <= limit:
            return 0
        entries.sort()
        dropped = 0
        for _, size, name in entries:
            if total <= 0.9 * limit:
                break
            with contextlib.suppress(OSError):
                os.remove(name)
                total -= size
                dropped += 1
            with contextlib.suppress(OSError):
                os.remove(name[: -len(_CACHE_SUFFIX)] + _ATIME_SUFFIX)
        return dropped
    except OSError:  # a folder another process cleared, a read-only one: nothing to do
        return 0


config = _Config()
_default_compilation_cache()
