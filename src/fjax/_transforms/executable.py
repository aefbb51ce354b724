"""The compile cache of functional transforms: one jitted executable per (transform, program).

A transform (``jax.jacrev`` of the program, an HVP, ...) is built once per traced program and
cached under ``(spec, program.key)``: ``spec`` names the transform and its options, the
program key is the traced function's jaxpr (see ``program``). The compiled function takes the
program's captured values as arguments, so a fresh but identical lambda, or new parameter
values, reuse the executable.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, NamedTuple, Sequence

import jax

from .. import _lazy
from .. import dtypes as _dt
from .._tracing import trace_state
from ..dispatch import _vjp_of, run
from ..tensor import Tensor
from .program import Program


class Compiled:
    """One transform of one program: ``pure(*consts, *args)`` and its jit (dispatch.run's entry).

    ``transform(program, *args)`` returns a flat sequence of arrays, where
    ``program(*inputs)`` evaluates the traced function (a list of output arrays).
    """

    __slots__ = ("pure", "jit", "vjps", "effects")
    rows, bucketing, takes_padded = None, False, False  # never padded (``fjax._bucket``)

    def __init__(self, jaxpr, transform: Callable):
        n_consts = len(jaxpr.constvars)

        def pure(*flat):
            consts = flat[:n_consts]

            def program(*inputs):
                return jax.core.eval_jaxpr(jaxpr, consts, *inputs)

            return tuple(transform(program, *flat[n_consts:]))

        self.pure = pure
        self.jit = jax.jit(pure)
        self.vjps: dict = {}
        self.effects = bool(jaxpr.effects)  # (callbacks, prints: they run at the call, not later)

    def vjp(self, diff_idx):
        """The jitted forward-with-VJP for the arguments at ``diff_idx`` (create_graph=True)."""
        f = self.vjps.get(diff_idx)
        if f is None:
            f = self.vjps[diff_idx] = jax.jit(_vjp_of(self.pure, diff_idx))
        return f


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int


class _Cache:
    def __init__(self, maxsize: int):
        self.entries: OrderedDict = OrderedDict()
        self.maxsize = maxsize
        self.hits = self.misses = 0

    def get(self, spec, program: Program, transform: Callable) -> Compiled:
        key = (spec, program.key)
        entry = self.entries.get(key)
        if entry is not None:
            self.hits += 1
            self.entries.move_to_end(key)
            return entry
        self.misses += 1
        entry = self.entries[key] = Compiled(program.jaxpr, transform)
        if len(self.entries) > self.maxsize:
            self.entries.popitem(last=False)
        return entry


_cache = _Cache(maxsize=512)


def cache_info() -> CacheInfo:
    """Hits, misses and size of the functional-transform compile cache (like functools.lru_cache).

    Example:
        >>> from fjax.autograd import functional
        >>> functional.cache_clear()
        >>> _ = functional.vjp(lambda x: x * 2, fjax.ones(2), fjax.ones(2))
        >>> _ = functional.vjp(lambda x: x * 2, fjax.ones(2), fjax.ones(2))  # the same program: a hit
        >>> functional.cache_info()
        CacheInfo(hits=1, misses=1, maxsize=512, currsize=1)
    """
    return CacheInfo(_cache.hits, _cache.misses, _cache.maxsize, len(_cache.entries))


def clear() -> None:
    _cache.entries.clear()
    _cache.hits = _cache.misses = 0


_dt._default_listeners.append(lambda _: clear())  # programs traced under the old default dtype


def compiled(spec, program: Program, transform: Callable) -> Compiled:
    """The cached ``Compiled`` of ``transform`` (named by ``spec``) of ``program``."""
    return _cache.get(spec, program, transform)


def call(name: str, entry: Compiled, consts: Sequence, sources: Sequence, args: Sequence, record: bool = False):
    """Run ``entry`` (a transform of a program) on its constants ``consts`` (arrays) and ``args``
    (Tensors); returns a tuple of Tensors. ``sources``: the program's ``sources``.

    With ``record=True`` the whole computation becomes one tape node (JAX's VJP of it), so
    the results can be differentiated again eagerly (``create_graph=True``). Without it the
    results are detached, also for an enclosing JAX transform (``stop_gradient`` on tracers).
    """
    if record:  # captured Tensors that require grad are inputs of the tape node, as in torch
        held = [s if s is not None and s.requires_grad else c for c, s in zip(consts, sources)]
        return run(name, entry, [*held, *consts[len(held) :], *args])
    if not (trace_state.depth or entry.effects) and any(type(a._meta) is _lazy.Pending for a in args):
        return run(name, entry, [*consts, *args], differentiable=False)  # recorded: nothing flushes
    outs = entry.jit(*consts, *[a._data for a in args])
    if trace_state.depth and any(isinstance(o, jax.core.Tracer) for o in outs):
        outs = jax.lax.stop_gradient(outs)
    return tuple(Tensor._wrap(o) for o in outs)
