"""Every private JAX API fjax uses, in one place, each with what fjax does without it.

fjax is written against JAX's public API; where that API lacks something fjax needs (a jaxpr
trace without ``make_jaxpr``'s per-function cache, a jit cache with a capacity, LAPACK's
``geqrf``), the private name is imported here and nowhere else (but ``fjax.env``, which the
launcher loads as a file before fjax exists), so a JAX upgrade has one file to check. Each
name is None where this JAX does not have it, and its user falls back to the public path.

``normalize_jaxpr`` also hides the two conventions JAX has used for a traced function's
captured values: as constvars with their values returned beside the jaxpr (jax 0.10), or as
leading inputs of the jaxpr (seen on jax 0.11). ``normalize_jaxpr`` turns the second into the
first, which is what fjax's transforms read.
"""

from __future__ import annotations

import functools
import importlib
from typing import Sequence

import jax

try:  # tracing without make_jaxpr's cache keyed by the Python function object
    from jax._src.interpreters.partial_eval import trace_to_jaxpr_dynamic
except ImportError:  # pragma: no cover - checked at import of the transforms
    trace_to_jaxpr_dynamic = None

try:  # a C++ LRU of (function, input signature) -> executable, the one jax.jit fills
    from jax._src import config as _jax_config
    from jax._src import pjit as _pjit

    make_jit_cpp_cache = _pjit.make_jit_cpp_cache
    jit_cpp_cache_obj = _jax_config.jax_jit_cpp_cache_obj
except (ImportError, AttributeError):  # pragma: no cover - jax.jit's own global cache
    make_jit_cpp_cache = jit_cpp_cache_obj = None

try:  # LAPACK's geqrf (Householder reflectors): not re-exported by jax.lax.linalg before 0.11
    from jax._src.lax.linalg import geqrf as lapack_geqrf
except ImportError:  # pragma: no cover
    import jax.lax.linalg

    lapack_geqrf = getattr(jax.lax.linalg, "geqrf", None)


try:  # the class of concrete arrays (``type(jnp.zeros(()))`` without making one: that would
    # compile, and start JAX's persistent cache before fjax or the user configured it)
    from jax._src.array import ArrayImpl
except ImportError:  # pragma: no cover
    ArrayImpl = None

try:  # the class of typed PRNG key arrays (``jax.random.key``'s; its module moved in jax 0.8)
    from jax._src.random.prng import PRNGKeyArray
except ImportError:  # pragma: no cover
    try:
        from jax._src.prng import PRNGKeyArray
    except ImportError:
        PRNGKeyArray = None


try:  # a host array onto one device in one C++ call (jax.device_put's Python path costs ~20x as much)
    from jax._src import core as _core
    from jax._src.lib import xla_client as _xc

    _put = _xc.batched_device_put
    _Shaped = _core.ShapedArray
except (ImportError, AttributeError):  # pragma: no cover
    _put = None

_shardings: dict = {}  # device -> its SingleDeviceSharding


def host_to_device(host, device=None, committed: bool = False):
    """``jax.device_put(host, device)`` of a numpy array of one of fjax's dtypes: the same array
    (uncommitted on the default device unless ``committed``), made by the C++ transfer JAX's own
    path ends in. Falls back to ``jax.device_put`` where this JAX lacks it, or for a
    non-contiguous array, a default device set through ``jax_default_device``, or 64-bit types
    off (``jax_enable_x64``). The array may share ``host``'s memory, as ``jax.device_put``'s may:
    pass a copy the caller does not write."""
    if (
        _put is None
        or not host.flags.c_contiguous
        or jax.config.jax_default_device is not None
        or not jax.config.jax_enable_x64  # (device_put would narrow 64-bit dtypes)
    ):
        return jax.device_put(host, device)
    if device is None:
        device = default_device()
    sharding = _shardings.get(device)
    if sharding is None:
        sharding = _shardings[device] = jax.sharding.SingleDeviceSharding(device)
    return _put(_Shaped(host.shape, host.dtype), sharding, [host], [device], committed)


@functools.lru_cache(maxsize=1)
def default_device():
    """Where ``jax.device_put`` puts an array by default: this process's first device."""
    return jax.local_devices()[0]


def trace_of(x):
    """The JAX trace the tracer ``x`` belongs to (identity tells an outer trace's values from an
    inner transform's: a ``jax.checkpoint``, a ``scan`` body); None for a non-tracer, or where this
    JAX does not say."""
    return getattr(x, "_trace", None) if isinstance(x, jax.core.Tracer) else None


def jit_cache_size(fn) -> int:
    """How many compiled kernels the jitted ``fn`` holds now (1 where JAX cannot say, or for a
    function that is not jitted)."""
    size = getattr(fn, "_cache_size", None)
    try:
        return size() if size is not None else 1
    except Exception:  # pragma: no cover - a JAX whose private method changed
        return 1


def private(name: str):
    """The private module ``jax._src.<name>``, or None where this JAX has none of that name
    (the caller then takes the public path)."""
    try:
        return importlib.import_module(f"jax._src.{name}")
    except ImportError:  # pragma: no cover
        return None


def reset_persistent_cache() -> None:
    """Make JAX read its persistent-cache settings again at the next compile: it decides once per
    process whether the cache is used and in which folder, so a later
    ``jax_enable_compilation_cache`` or ``jax_compilation_cache_dir`` update is ignored without
    this."""
    cc = private("compilation_cache")
    if cc is not None and hasattr(cc, "reset_cache"):
        cc.reset_cache()


def clear_jax_caches() -> None:
    """Drop what JAX's Python-side caches hold (traces, lowerings); nothing where it cannot."""
    util = private("util")
    if util is not None and hasattr(util, "clear_all_caches"):
        util.clear_all_caches()


def backends_are_initialized() -> bool:
    """Whether XLA's backends have started (after which ``XLA_FLAGS`` no longer applies); True
    where this JAX cannot say, so a caller does not rely on a flag being read."""
    xla_bridge = private("xla_bridge")
    return xla_bridge.backends_are_initialized() if hasattr(xla_bridge, "backends_are_initialized") else True


def normalize_jaxpr(jaxpr, consts: Sequence, n_inputs: int):
    """``(jaxpr, consts)`` with the captured values as constvars, whichever convention the trace
    used: already so (``len(jaxpr.constvars) == len(consts)``), or as the leading inputs of a
    jaxpr with no constvars (``len(jaxpr.invars) == len(consts) + n_inputs``). Raises
    RuntimeError for any other form, naming the counts."""
    if len(jaxpr.invars) == n_inputs and len(jaxpr.constvars) == len(consts):
        return jaxpr, list(consts)
    if not jaxpr.constvars and len(jaxpr.invars) == n_inputs + len(consts):
        k = len(consts)
        return jaxpr.replace(constvars=list(jaxpr.invars[:k]), invars=list(jaxpr.invars[k:])), list(consts)
    raise RuntimeError(
        f"a traced jaxpr with {len(jaxpr.constvars)} constvars and {len(jaxpr.invars)} inputs for "
        f"{len(consts)} captured values and {n_inputs} arguments: a form fjax does not read "
        "(this JAX's trace_to_jaxpr_dynamic changed again)"
    )
