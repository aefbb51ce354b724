"""A graph's compiled steps: the cache keyed by input signature, the one compile path, the call.

``Executables(graph)`` serves ``Graph.__call__``. A call's signature (input structure, shapes,
dtypes and shardings, the modules' training flags, the optimizers' structure, the config
settings that change the step) selects an ``Executable`` in an LRU cache (the first signature is
never evicted); a miss compiles one in stages, each timed in a ``StageTimes`` (and logged with
``graph.debug(0)``):

    Step(graph, ...)  ->  jax.jit(step).trace  ->  .lower (StableHLO)  ->  .compile (XLA)

``lower`` and ``finish`` are the only compile path: a call's cache miss runs both in turn,
``warmup`` runs every ``lower`` first and the ``finish``es in parallel threads. The first run of
an executable is timed too ("first run"). A call like the previous one (positional Tensors of the
same avals and shardings, nothing else changed) skips building its key: ``repeat``, bound once
per call site by ``_repeater``, checks it in microseconds (see there).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from .._tracing import modules_changed
from ..amp import _state as _amp
from ..asyncs import _ops
from ..errors import OpError
from ..random import default_generator
from ..tensor import Tensor
from . import stages as _stages
from .compile import StageTimes
from .memory import checkpoint_choice
from .state import GraphState, OptimizersNow
from .step import TENSOR, Step, is_tensor


@dataclass
class Executable:
    """One compiled step, what its trace learned, and (``__post_init__``) its per-call work:
    ``read()`` gives the state and optimizer-state arguments, ``write(state, opt_states)`` puts
    the results back into the Tensors and optimizers, ``unwrap(outputs)`` gives ``build``'s
    return structure.

    Only the state the step changes (``record["changed"]``) is donated, returned and written
    back (and its version bumped); where that is not all of it, the compiled step takes the
    rest, read-only, as a last argument: ``(changed, opt_states, rng, hyper, inputs, kept)``
    (``arrange`` turns ``GraphState.step_args`` into that). An inference step writes nothing.
    """

    compiled: object
    lowered: object
    times: StageTimes
    record: dict
    state: GraphState
    first_run_done: bool = False

    def __post_init__(self):
        tensors = list(self.state.tensors)
        groups = [(opt, list(group["params"])) for opt, group, _ in self.state.groups]
        changed = self.record["changed"]
        kept = _kept(changed, len(tensors))
        written = [tensors[i] for i in changed]
        kept_tensors = [tensors[i] for i in kept]

        if kept:

            def read():
                opt_states = [[opt._state[p] for p in ps] for opt, ps in groups]
                return [t._data for t in written], opt_states, [t._data for t in kept_tensors]

            def arrange(args):
                state, opt_states, rng, hyper, inputs = args
                return [state[i] for i in changed], opt_states, rng, hyper, inputs, [state[i] for i in kept]

        else:

            def read():
                return [t._data for t in tensors], [[opt._state[p] for p in ps] for opt, ps in groups], None

            def arrange(args):
                return args

        def write(state, opt_states):
            for t, value in zip(written, state):
                t._write(value)
                t._vc[0] += 1  # a step changes its state in place, as torch's optimizer does
            for (opt, ps), values in zip(groups, opt_states):
                opt_state = opt._state
                for p, value in zip(ps, values):
                    opt_state[p] = value

        self.read, self.write, self.arrange = read, write, arrange
        out_tree, out_static = self.record["out_tree"], self.record["out_static"]
        if out_static == [None] and out_tree == jax.tree_util.tree_structure(0):  # one Tensor
            self.unwrap = lambda outputs: Tensor._wrap(outputs[0])
        else:

            def unwrap(outputs):
                it = iter(outputs)
                flat = [Tensor._wrap(next(it)) if s is None else s for s in out_static]
                return jax.tree_util.tree_unflatten(out_tree, flat)

            self.unwrap = unwrap


class Executables:
    """``graph``'s compiled steps and its call path (see the module docstring)."""

    def __init__(self, graph):
        self.graph = graph
        self.cache: OrderedDict = OrderedDict()
        self.first_key = None
        self.lock = threading.Lock()
        self.reports: list = []  # StageTimes of every compile, in order
        self.last_key = None  # the most recent call's key, and what ``save`` needs of that call
        self.last_call = None  # (key, in_tree, statics, [(shape, dtype) of each input array])
        self.repeat = None
        self.modes = None
        self.optimizers = OptimizersNow(graph._optimizers)

    # -- the signature --------------------------------------------------------------------
    def signature(self, args, kwargs):
        """``(key, in_tree, statics, arrays)`` of a call: its cache key, input structure, the
        non-Tensor leaves (``TENSOR`` for Tensors) and the Tensors' arrays."""
        leaves, in_tree = jax.tree_util.tree_flatten((args, kwargs), is_leaf=is_tensor)
        arrays, statics, sig = [], [], []
        for x in leaves:
            if isinstance(x, Tensor):
                arrays.append(x._data)
                statics.append(TENSOR)
                sig.append((x._data.shape, x._data.dtype, getattr(x._data, "sharding", None)))
            else:
                try:
                    hash(x)
                except TypeError:
                    raise OpError(f"nn.Graph {self.graph.name}: input {x!r} is neither a Tensor nor hashable") from None
                statics.append(x)
                sig.append(x)
        key = (in_tree, tuple(sig), self.training_modes(), self.optimizers.now()[0], self.config_key())
        return key, in_tree, statics, arrays

    def config_key(self) -> tuple:
        """The config settings that select the compiled step (part of the signature)."""
        cfg = self.graph.config
        mesh = None if cfg.mesh is None else cfg.mesh.key()  # by value: the mesh and its strategies
        amp = _amp.key() if _amp.flag.on else ()
        return (cfg.amp_dtype, cfg.grad_acc_steps, mesh, amp, cfg._memory_budget, _stages.key(self.graph))

    def training_modes(self) -> tuple:
        """Every submodule's ``training`` flag (part of the signature), recomputed only after a
        module changed (``train``/``eval``, assignments: they bump ``modules_changed``)."""
        version = modules_changed[0]
        if self.modes is None or self.modes[0] != version:
            modes = tuple(m.training for module in self.graph._modules.values() for m in module.modules())
            self.modes = (version, modes)
        return self.modes[1]

    # -- the compile path -----------------------------------------------------------------
    def lower(self, in_tree, statics, arrays):
        """Trace the step for these inputs and lower it to StableHLO: ``(step, lowered, times)``."""
        step = Step(self.graph, in_tree, statics)
        jitted = jax.jit(step, donate_argnums=(0, 1))
        times = StageTimes(", ".join(f"{tuple(a.shape)}:{a.dtype}" for a in arrays))
        args = step.state.step_args(step.state.place(arrays), self.optimizers.now())
        start = time.perf_counter()
        traced = jitted.trace(*args)
        changed = step.record["changed"]
        if len(changed) < len(args[0]):  # some state is only read: traced again, taking it undonated
            traced = _pruned(traced, changed, len(args[0])).trace(*_arrange(args, changed))
        self._stage(times, "trace", start)
        start = time.perf_counter()
        lowered = traced.lower()
        self._stage(times, "lower to StableHLO", start)
        return step, lowered, times

    def finish(self, step, lowered, times) -> Executable:
        """XLA-compile a lowered step (thread-safe: ``warmup`` runs several at once)."""
        start = time.perf_counter()
        compiled = lowered.compile()
        self._stage(times, "XLA compile", start)
        return Executable(compiled, lowered, times, dict(step.record), step.state)

    def _stage(self, times, stage, start) -> None:
        times.record(self.graph.name, stage, time.perf_counter() - start, self.graph._debug_level)

    def add(self, key, entry: Executable, evict: bool = True) -> None:
        with self.lock:
            if self.first_key is None:
                self.first_key = key
            self.cache[key] = entry
            self.reports.append(entry.times)
            while evict and len(self.cache) > self.graph.config.cache_size:
                victim = next(k for k in self.cache if k != self.first_key)
                del self.cache[victim]

    def lookup(self, key, in_tree, statics, arrays) -> Executable:
        with self.lock:
            entry = self.cache.get(key)
            if entry is not None:
                self.cache.move_to_end(key)
                return entry
        entry = self.finish(*self.lower(in_tree, statics, arrays))
        entry = checkpoint_choice(self, entry, in_tree, statics, arrays)  # memory budget / policy check
        self.add(key, entry)
        return entry

    def warmup(self, examples, threads: int) -> None:
        """Compile the signatures of ``examples`` (tuples of call arguments) not compiled yet:
        trace and lower each in turn, XLA-compile them in ``threads`` parallel threads."""
        pending = {}
        for example in examples:
            key, in_tree, statics, arrays = self.signature(example, {})
            if key not in self.cache and key not in pending:
                pending[key] = self.lower(in_tree, statics, arrays)
        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            for key, entry in zip(pending, pool.map(lambda item: self.finish(*item), pending.values())):
                self.add(key, entry, evict=False)

    def last(self, what: str) -> Executable:
        """The most recently called executable (``what`` names the asking method in the error)."""
        if self.last_key is None or self.last_key not in self.cache:
            raise RuntimeError(f"nn.Graph {self.graph.name}: {what}() needs a compiled graph; call it first")
        return self.cache[self.last_key]

    # -- the call ---------------------------------------------------------------------------
    def call(self, args, kwargs):
        repeat = self.repeat
        hit = None if repeat is None else repeat(args, kwargs)
        if hit is not None:
            entry, call_args = hit
            return self._after(entry, entry.compiled(*call_args))
        version = modules_changed[0]  # what the signature's module modes were read at
        key, in_tree, statics, arrays = self.signature(args, kwargs)
        entry = self.lookup(key, in_tree, statics, arrays)
        call_args = entry.arrange(entry.state.step_args(entry.state.place(arrays), self.optimizers.memo.result))
        if entry.first_run_done:
            results = entry.compiled(*call_args)
        else:
            results = self._first_run(entry, call_args)
        self._remember(entry, key, in_tree, statics, args, kwargs, arrays, version)
        return self._after(entry, results)

    def _first_run(self, entry, call_args):
        call_args = _distinct_buffers(call_args)
        start = time.perf_counter()
        results = entry.compiled(*call_args)
        jax.block_until_ready(results[2])
        self._stage(entry.times, "first run", start)
        entry.first_run_done = True
        return results

    def _after(self, entry, results):
        """Everything after the dispatch (it overlaps the step; everything before delays it):
        the new state into the Tensors and optimizers, the entry marked most recent, the RNG
        stream and schedulers advanced, the next call's optimizer read, outputs wrapped."""
        new_state, new_opt, outputs = results
        entry.write(new_state, new_opt)
        if entry.record["checks"]:  # the step's index checks: its last output
            _ops.submit_step_checks(entry.record["checks"], outputs[-1])
        with self.lock:  # the most recent entry of the LRU (a repeat skipped ``lookup``)
            if self.cache.get(self.last_key) is entry:
                self.cache.move_to_end(self.last_key)
        default_generator._counter += entry.record["draws"]
        for sch in self.graph._lr_schedulers:
            sch.step()
        self.optimizers.now()  # the next call's, while this one runs
        return entry.unwrap(outputs)

    def _remember(self, entry, key, in_tree, statics, args, kwargs, arrays, version):
        """Keep what ``save``, ``memory_report`` and ``stablehlo`` need of this call
        (``version``: ``modules_changed`` when its signature was read), and ``repeat``, the
        check that lets a call like this one skip building its key."""
        self.last_key = key
        self.last_call = (key, in_tree, statics, [(a.shape, a.dtype) for a in arrays])
        repeat = None
        if not kwargs and all(isinstance(a, Tensor) for a in args):
            avals = tuple((a._data.aval, a._data.sharding) for a in args)
            repeat = self._repeater(entry, avals, version, self.config_key(), self.optimizers.now()[0])
        self.repeat = repeat

    def _repeater(self, entry, avals, version, config, opt_key):
        """``repeat(args, kwargs)``: ``(entry, call_args)`` for a call like the last one
        (positional Tensors of the same avals and shardings, the same module modes, config
        and optimizer structure), checked without building its key; None otherwise
        (``signature`` and ``lookup`` decide).

        This runs before the dispatch: on CPU, microseconds of Python there cost several times
        their length, as XLA's worker threads spin or sleep meanwhile; so everything it needs
        is bound here once."""
        n, read, gen, now, state = len(avals), entry.read, default_generator, self.optimizers.now, entry.state
        arrange = entry.arrange
        layout, config_key = state.layout, self.config_key

        def repeat(args, kwargs):
            if kwargs or len(args) != n:
                return None
            arrays = []
            for a, (aval, sharding) in zip(args, avals):
                if not isinstance(a, Tensor):
                    return None
                data = a._arr if a._st is None or a._gen == a._st.gen else a._sync()  # a._data, written out
                if data.aval is not aval and data.aval != aval:
                    return None
                if data.sharding is not sharding and data.sharding != sharding:
                    return None
                arrays.append(data)
            optimizers = now()
            if modules_changed[0] != version or optimizers[0] is not opt_key or config_key() != config:
                return None
            if layout is not None:  # global tensors: placed as the step's shardings ask
                return entry, arrange(state.step_args(state.place(arrays), optimizers))
            st, opt_states, kept = read()  # what ``arrange(step_args(...))`` returns, from the generated read
            rng = (gen.base_key_data(), optimizers[1])
            if kept is None:
                return entry, (st, opt_states, rng, optimizers[2], arrays)
            return entry, (st, opt_states, rng, optimizers[2], arrays, kept)

        return repeat


def _kept(changed: tuple, n: int) -> list:
    """The state positions a step only reads (not in ``changed``)."""
    written = set(changed)
    return [i for i in range(n) if i not in written]


def _arrange(args, changed):
    """``GraphState.step_args``'s tuple as a pruned step (``_pruned``) takes it."""
    state, opt_states, rng, hyper, inputs = args
    return [state[i] for i in changed], opt_states, rng, hyper, inputs, [state[i] for i in _kept(changed, len(state))]


def _pruned(traced, changed: tuple, n: int):
    """The traced step with only its ``changed`` state entries donated and returned: it takes
    ``(changed, opt_states, rng, hyper, inputs, kept)`` and returns ``(changed', opt_states',
    outputs)``. It replays the traced program (its jaxpr), not ``build``."""
    kept = _kept(changed, n)

    def step(changed_state, opt_states, rng, hyper, inputs, kept_state):
        state = [None] * n
        for i, a in zip(changed, changed_state):
            state[i] = a
        for i, a in zip(kept, kept_state):
            state[i] = a
        new_state, new_opt_states, outputs = traced(state, opt_states, rng, hyper, inputs)
        return [new_state[i] for i in changed], new_opt_states, outputs

    step.__name__ = "step"  # the compiled module stays ``jit_step``
    return jax.jit(step, donate_argnums=(0, 1))


def _distinct_buffers(call_args):
    """Donated state must not share a device buffer (PJRT refuses ``f(donate(a), donate(a))``,
    and a donated buffer that another argument also passes); freshly made state sometimes does,
    so the first call of a step copies any repeat among the donated ones (arguments 0 and 1)."""
    seen = set()

    def pointer(a):
        try:
            shard = a.addressable_shards[0].data  # sharded arrays: the first shard
            shard.block_until_ready()  # releases the GIL; ``unsafe_buffer_pointer`` would wait holding it
            return shard.unsafe_buffer_pointer()
        except (ValueError, RuntimeError):  # JaxRuntimeError is a RuntimeError
            return None  # multi-process layouts hide the buffer: nothing to compare

    def distinct(a):
        ptr = pointer(a)
        if ptr is None:
            return a
        if ptr in seen:
            return jnp.array(a, copy=True)
        seen.add(ptr)
        return a

    state, opt_states, *rest = call_args
    if len(rest) == 4:  # a pruned step: its read-only state must not be donated as well
        for a in jax.tree.leaves(rest[3]):
            seen.add(pointer(a))
    return (jax.tree.map(distinct, state), jax.tree.map(distinct, opt_states), *rest)
