"""nn.Graph: OneFlow's static graph as one ``jax.jit`` of the eager code in ``build``.

``Graph.__call__`` turns ``build`` into a pure step

    step(state, opt_states, rng, hyper, inputs) -> (state', opt_states', outputs)

by swapping every parameter and buffer of the graph's modules, the optimizer states and the
RNG stream for tracers, running ``build`` through the ordinary dispatch path (so eager and
graph share one semantics; ``loss.backward()`` inside ``build`` fills ``.grad`` tracers), then
running gradient clipping and every added optimizer on those gradients. The step is jitted
once per input signature with the state buffers donated, and cached in an LRU.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .. import _codegen
from .._config import config
from .._tracing import trace_state, tracing
from ..autograd._reuse import modules_changed
from ..autograd.grad_mode import enable_grad, no_grad
from ..errors import OpError
from ..profiler import _state as _pstate
from ..profiler import span
from ..random import default_generator
from ..tensor import Tensor
from . import compile as _compile
from .config import GraphConfig
from .modules import GraphModule, _checkpointer, _ModuleProxy


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


@dataclass
class _Compiled:
    """One cached executable, what its trace learned, and (``__post_init__``) its generated
    per-call work: ``read()`` gives the state and optimizer-state arguments, ``write(state,
    opt_states)`` puts the results back into the Tensors and optimizers, ``unwrap(outputs)``
    gives ``build``'s return structure (see ``fjax._codegen``)."""

    compiled: object
    lowered: object
    times: _compile.StageTimes
    record: dict
    state_tensors: list
    plan: list
    layout: dict | None
    first_run_done: bool = False

    def __post_init__(self):
        bound: dict = {}

        def bind(prefix, obj):
            name = f"{prefix}{len(bound)}"
            bound[name] = obj
            return name

        tensors = [bind("t", t) for t in self.state_tensors]
        groups = [(bind("o", opt), [bind("p", p) for p in group["params"]]) for opt, group, _ in self.plan]
        state = ", ".join(_codegen.tensor_data(t) for t in tensors)
        opt_states = ", ".join(f"[{', '.join(f'{o}._state[{p}]' for p in ps)}]" for o, ps in groups)
        self.read = _codegen.function("read", "", [f"return [{state}], [{opt_states}]"], bound)
        body = []
        for i, t in enumerate(tensors):  # ``t._data = state[i]`` without the property call
            body += [f"if {t}._st is None: {t}._arr = state[{i}]", f"else: {t}._write(state[{i}])"]
            body.append(f"{t}._vc[0] += 1")
        for g, (o, ps) in enumerate(groups):
            body += [f"s = {o}._state"] + [f"s[{p}] = opt_states[{g}][{i}]" for i, p in enumerate(ps)]
        self.write = _codegen.function("write", "state, opt_states", body or ["pass"], bound)
        out_tree, out_static = self.record["out_tree"], self.record["out_static"]
        if out_static == [None] and out_tree == jax.tree_util.tree_structure(0):  # one Tensor
            self.unwrap = lambda outputs: Tensor._wrap(outputs[0])
        else:

            def unwrap(outputs):
                it = iter(outputs)
                flat = [Tensor._wrap(next(it)) if s is None else s for s in out_static]
                return jax.tree_util.tree_unflatten(out_tree, flat)

            self.unwrap = unwrap


class Graph:
    """OneFlow's ``nn.Graph``: subclass, assign modules in ``__init__``, override ``build``.

    Example::

        class TrainGraph(fjax.nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                self.add_optimizer(optimizer)

            def build(self, x, y):
                loss = loss_fn(self.model(x), y)
                loss.backward()
                return loss

        g = TrainGraph()
        loss = g(x, y)   # one compiled XLA step: forward, backward, optimizer update

    A runnable one, an inference graph::

        >>> class Double(fjax.nn.Graph):
        ...     def __init__(self, model):
        ...         super().__init__()
        ...         self.model = model
        ...     def build(self, x):
        ...         return self.model(x) * 2
        >>> Double(nn.Identity())(fjax.tensor([1.0, 2.0]))
        tensor([2., 4.], dtype=fjax.float32)
    """

    def __init__(self):
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_optimizers", [])
        object.__setattr__(self, "_lr_schedulers", [])
        object.__setattr__(self, "_cache", OrderedDict())
        object.__setattr__(self, "_first_key", None)
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "config", GraphConfig())
        object.__setattr__(self, "name", f"{type(self).__name__}_{id(self) & 0xFFFF:x}")
        object.__setattr__(self, "_debug_level", _compile.debug_level_from_env())
        object.__setattr__(self, "_reports", [])
        object.__setattr__(self, "_last_key", None)
        object.__setattr__(self, "_last_call", None)
        object.__setattr__(self, "_module_options", {})

    # -- construction -------------------------------------------------------------------
    def __setattr__(self, name, value):
        from ..nn.module import Module
        from ..optim.optimizer import Optimizer

        if isinstance(value, Module):
            self._modules[name] = value
            object.__setattr__(self, name, _ModuleProxy(value, self, name))
        elif isinstance(value, Optimizer):
            raise AttributeError(
                f"nn.Graph: '{name}' is an optimizer; register it with self.add_optimizer({name}) instead"
            )
        elif isinstance(value, Tensor):
            raise AttributeError(
                f"nn.Graph: '{name}' is a Tensor; a Graph may hold modules, not bare tensors: "
                "register it as a parameter or buffer of a module"
            )
        else:
            object.__setattr__(self, name, value)

    def add_optimizer(self, optimizer, *, lr_sch=None, is_sparse: bool = False) -> None:
        """Run ``optimizer`` (and step ``lr_sch``) after ``build`` on every call of this graph."""
        if is_sparse:
            raise NotImplementedError("nn.Graph.add_optimizer: is_sparse=True is not supported")
        self._optimizers.append(optimizer)
        if lr_sch is not None:
            self._lr_schedulers.append(lr_sch)

    def _options_for(self, module, name) -> GraphModule:
        entry = self._module_options.get(id(module))
        if entry is None:
            entry = self._module_options[id(module)] = (module, GraphModule(name))
        return entry[1]

    def build(self, *args, **kwargs):
        raise NotImplementedError(f"nn.Graph {type(self).__name__} must override build(self, *args)")

    @property
    def training(self) -> bool:
        return bool(self._optimizers)

    @property
    def is_compiled(self) -> bool:
        return bool(self._cache)

    def debug(self, v_level: int = 0, *, ranks=None, max_py_stack_depth: int = 2) -> None:
        """Log one line per compile stage (trace, lower, compile, first run) with seconds and RSS;
        ``v_level=-1`` turns it off."""
        object.__setattr__(self, "_debug_level", v_level)

    def with_dynamic_input_shape(self, size: int = 9) -> "Graph":
        """Keep up to ``size`` compiled input signatures (LRU; the first is never evicted)."""
        if size < 1:
            raise ValueError(f"nn.Graph.with_dynamic_input_shape: size must be >= 1, got {size}")
        self.config.cache_size = size
        return self

    # -- state ----------------------------------------------------------------------------
    def _state_tensors(self) -> list:
        """Every parameter and buffer of the graph's modules, each once, in a fixed order."""
        return [t for _, t in self._named_state()]

    def _named_state(self) -> list:
        seen, out = set(), []
        for attr, module in self._modules.items():
            for name, t in list(module.named_parameters()) + list(module.named_buffers()):
                if id(t) not in seen:
                    seen.add(id(t))
                    out.append((f"{attr}.{name}", t))
        return out

    def _layout(self, state_tensors, plan):
        """Shardings from the mesh config: state storage, optimizer-state leaves, gradients."""
        mesh = self.config.mesh
        if mesh is None:
            return None
        names = {id(t): n for n, t in self._named_state()}
        storage = [mesh.storage(names[id(t)], tuple(t.shape)) for t in state_tensors]
        grads = [mesh.gradient(names[id(t)], tuple(t.shape)) for t in state_tensors]
        opt = [
            [
                jax.tree.map(
                    lambda leaf, p=p: mesh.optimizer_state(names[id(p)], tuple(p.shape), np.shape(leaf)), opt._state[p]
                )
                for p in group["params"]
            ]
            for opt, group, _ in plan
        ]
        return {"storage": storage, "grads": grads, "opt": opt, "mesh": mesh}

    def _opt_plan(self, state_tensors):
        """For each optimizer group: the indices of its params in ``state_tensors``."""
        index = {id(t): i for i, t in enumerate(state_tensors)}
        plan = []
        for opt in self._optimizers:
            opt._init_state()
            for group in opt.param_groups:
                idx = []
                for p in group["params"]:
                    if id(p) not in index:
                        raise OpError(
                            f"nn.Graph {self.name}: an optimizer parameter of shape {tuple(p.shape)} belongs "
                            "to no module of this graph; assign its module as a graph attribute"
                        )
                    idx.append(index[id(p)])
                plan.append((opt, group, idx))
        return plan

    def state_dict(self) -> dict:
        """Modules' and optimizers' state dicts, keyed by attribute name / ``optimizer{i}``."""
        out = {name: m.state_dict() for name, m in self._modules.items()}
        for i, opt in enumerate(self._optimizers):
            out[f"optimizer{i}"] = opt.state_dict()
        return out

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> None:
        for name, m in self._modules.items():
            if name in state_dict:
                m.load_state_dict(state_dict[name], strict=strict)
            elif strict:
                raise KeyError(f"nn.Graph.load_state_dict: missing key {name!r}; have {sorted(state_dict)}")
        for i, opt in enumerate(self._optimizers):
            if f"optimizer{i}" in state_dict:
                opt.load_state_dict(state_dict[f"optimizer{i}"])

    # -- the traced step ------------------------------------------------------------------
    def _step_fn(self, in_tree, statics, record: dict):
        """The pure step for one input structure; ``record`` receives what the trace learns."""
        state_tensors = self._state_tensors()
        plan = self._opt_plan(state_tensors)
        layout = self._layout(state_tensors, plan)
        constrain = jax.lax.with_sharding_constraint
        training = self.training
        amp = self.config.amp_dtype
        n_acc = self.config.grad_acc_steps if training else 1

        def run_build(arrays):
            leaves, it = [], iter(arrays)
            for s in statics:
                leaves.append(Tensor._wrap(next(it)) if s is _TENSOR else s)
            args, kwargs = jax.tree_util.tree_unflatten(in_tree, leaves)
            with enable_grad() if training else no_grad():
                out = self.build(*args, **kwargs)
            flat, out_tree = jax.tree_util.tree_flatten(out, is_leaf=_is_tensor)
            record["out_tree"] = out_tree
            record["out_static"] = [None if isinstance(x, Tensor) else x for x in flat]
            return [x._data for x in flat if isinstance(x, Tensor)]

        def cast_inputs(arrays):
            if amp is None:
                return arrays
            return [a.astype(amp.dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a for a in arrays]

        def step(state, opt_states, rng, hyper, inputs):
            key, counter = rng
            saved = [(t, t._data, t.grad, t._node) for t in state_tensors]
            checkpointed = [(m, o.name) for m, o in self._module_options.values() if o.activation_checkpointing]
            with tracing(), default_generator._tracing(jax.random.wrap_key_data(key), counter):
                checks, trace_state.graph_checks = trace_state.graph_checks, config.graph_index_checks
                try:
                    for m, name in checkpointed:
                        object.__setattr__(m, "_graph_call", _checkpointer(name))
                    masters = list(state)
                    for t, a in zip(state_tensors, state):
                        t._data, t.grad, t._node = a, None, None
                        if amp is not None and t.requires_grad and jnp.issubdtype(a.dtype, jnp.floating):
                            t._data = a.astype(amp.dtype)
                    if n_acc == 1:
                        outputs = run_build(cast_inputs(inputs))
                        grads = [None if t.grad is None else t.grad._data for t in state_tensors]
                    else:
                        grads, outputs = self._accumulate(state_tensors, inputs, n_acc, run_build, cast_inputs)
                    record["draws"] = default_generator._counter
                    new_state = []
                    for t, master in zip(state_tensors, masters):
                        if amp is not None and t.requires_grad and t._data.dtype == amp.dtype:
                            new_state.append(master)  # parameters: the float32 master copy
                        else:
                            new_state.append(t._data)
                    if layout is not None:
                        grads = [
                            g if g is None or sh is None else constrain(g, sh) for g, sh in zip(grads, layout["grads"])
                        ]
                    new_opt_states = list(opt_states)
                    for gi, (opt, group, idx) in enumerate(plan):
                        live = [i for i in idx if grads[i] is not None]
                        if not live:
                            continue
                        g = [grads[i].astype(new_state[i].dtype) for i in live]
                        g = _clip(group, g)
                        pos = {i: k for k, i in enumerate(idx)}
                        sub_states = [opt_states[gi][pos[i]] for i in live]
                        new_p, new_s = opt._functional_step(
                            group, [new_state[i] for i in live], g, sub_states, hyper[gi]
                        )
                        group_states = list(opt_states[gi])
                        for i, p_new, s_new in zip(live, new_p, new_s):
                            new_state[i] = p_new
                            group_states[pos[i]] = s_new
                        new_opt_states[gi] = group_states
                    if layout is not None:
                        new_state = [constrain(a, sh) for a, sh in zip(new_state, layout["storage"])]
                        new_opt_states = [
                            [jax.tree.map(constrain, st, sh) for st, sh in zip(group_st, group_sh)]
                            for group_st, group_sh in zip(new_opt_states, layout["opt"])
                        ]
                    return new_state, new_opt_states, outputs
                finally:
                    trace_state.graph_checks = checks
                    for m, _ in checkpointed:
                        object.__delattr__(m, "_graph_call")
                    for t, data, grad, node in saved:
                        t._data, t.grad, t._node = data, grad, node

        return step, state_tensors, plan, layout

    def _accumulate(self, state_tensors, inputs, n, run_build, cast_inputs):
        """Gradient accumulation: ``lax.scan`` over ``n`` micro-batches (compile time flat in n)."""
        for a in inputs:
            if a.ndim == 0 or a.shape[0] % n:
                raise OpError(
                    f"nn.Graph {self.name}: gradient accumulation over {n} micro-batches needs every input's "
                    f"dim 0 divisible by {n}, got an input of shape {tuple(a.shape)}"
                )
        micro = [a.reshape((n, a.shape[0] // n) + a.shape[1:]) for a in inputs]
        params = [t._data for t in state_tensors]
        grad_mask = [t.requires_grad and jnp.issubdtype(t._data.dtype, jnp.inexact) for t in state_tensors]
        base_key = default_generator._key

        def body(carry, xs):
            i, bufs, acc = carry
            for t, p, b, m in zip(state_tensors, params, bufs, grad_mask):
                t._data, t.grad, t._node = (p if m else b), None, None
            default_generator._key = jax.random.fold_in(base_key, i)
            outs = run_build(cast_inputs(list(xs)))
            new_acc = [
                a + (t.grad._data.astype(a.dtype) / n if t.grad is not None else 0) for t, a in zip(state_tensors, acc)
            ]
            return (i + 1, [t._data for t in state_tensors], new_acc), outs

        zeros = [jnp.zeros_like(p) for p in params]
        (_, bufs, acc), outs = jax.lax.scan(body, (jnp.asarray(0), params, zeros), micro)
        for t, p, b, m in zip(state_tensors, params, bufs, grad_mask):
            t._data, t.grad, t._node = (p if m else b), None, None
        grads = [a if m else None for a, m in zip(acc, grad_mask)]
        return grads, outs

    # -- calling ------------------------------------------------------------------------
    def _signature(self, args, kwargs):
        leaves, in_tree = jax.tree_util.tree_flatten((args, kwargs), is_leaf=_is_tensor)
        arrays, statics, sig = [], [], []
        for x in leaves:
            if isinstance(x, Tensor):
                arrays.append(x._data)
                statics.append(_TENSOR)
                sig.append((x._data.shape, x._data.dtype, getattr(x._data, "sharding", None)))
            else:
                try:
                    hash(x)
                except TypeError:
                    raise OpError(f"nn.Graph {self.name}: input {x!r} is neither a Tensor nor hashable") from None
                statics.append(x)
                sig.append(x)
        key = (in_tree, tuple(sig), self._training_modes(), self._optimizers_now()[0], self._config_key())
        return key, in_tree, statics, arrays

    def _config_key(self) -> tuple:
        """The config settings that select the compiled step (part of the signature)."""
        cfg = self.config
        return (cfg.amp_dtype, cfg.grad_acc_steps, id(cfg.mesh))

    def _training_modes(self) -> tuple:
        """Every submodule's ``training`` flag (part of the signature), recomputed only after a
        module changed (``train``/``eval``, assignments: they bump ``modules_changed``)."""
        version = modules_changed[0]
        cached = self.__dict__.get("_modes")
        if cached is None or cached[0] != version:
            modes = tuple(m.training for module in self._modules.values() for m in module.modules())
            cached = (version, modes)
            object.__setattr__(self, "_modes", cached)
        return cached[1]

    def _args(self, state_tensors, plan, arrays, layout=None, optimizers_now=None):
        if layout is not None:
            from ..distributed.mesh import place

            for t, a in zip(state_tensors, place([t._data for t in state_tensors], layout["storage"])):
                t._data = a
            for (opt, group, _), group_sh in zip(plan, layout["opt"]):
                for p, sh in zip(group["params"], group_sh):
                    opt._state[p] = jax.tree.map(lambda a, s: place([a], [s])[0], opt._state[p], sh)
            arrays = place(arrays, [layout["mesh"].batch(tuple(a.shape)) for a in arrays])
        state = [t._data for t in state_tensors]
        opt_states = [[opt._state[p] for p in group["params"]] for opt, group, _ in plan]
        _, counter, hyper = optimizers_now or self._optimizers_now()
        return state, opt_states, (default_generator.base_key_data(), counter), hyper, arrays

    def _optimizers_now(self):
        """``(key, counter, hyper)``: the optimizers' structure (each group's class, static
        flags, parameters and clipping: part of the compile key), and as device arrays the RNG
        counter and every group's hyper-parameters, read from ``param_groups`` as they are now
        (a scheduler, an assignment or ``load_state_dict`` may have changed them).

        Every Python scalar argument of a compiled call is a fresh host-to-device copy, which made
        an MLP step 5% slower than a hand-written ``jax.jit``: each value goes to the device once.
        And as this runs before the dispatch, where every microsecond delays the step, a call
        whose sources (the generator's counter, each optimizer's ``param_groups`` and every entry
        of every group) are the very objects of the last call reuses the last result without
        reading them; ``__call__`` refreshes it right after each dispatch, for the next call.
        """
        gen = default_generator
        memo = self.__dict__.get("_opt_memo")
        if memo is not None and memo.counter == (gen._counter, gen._offset) and memo.unchanged(self._optimizers):
            return memo.result
        groups = [(opt, group) for opt in self._optimizers for group in opt.param_groups]
        key = tuple(
            (
                type(opt),
                opt._static(group),
                tuple(id(p) for p in group["params"]),
                group.get("clip_grad_max_norm"),
                group.get("clip_grad_norm_type"),
            )
            for opt, group in groups
        )
        if memo is not None and key == memo.result[0] and memo.same_groups():
            key = memo.result[0]  # the same object: a repeat (``_repeater``) compares it by identity
        else:
            # a loaded or added group's parameters may have no state yet; a parameter whose
            # group's flags changed needs its state converted
            for opt in self._optimizers:
                opt._init_state()
        scalars = (np.uint32(gen._counter + gen._offset), [opt._hyper(group) for opt, group in groups])
        leaves, tree = jax.tree.flatten(scalars)
        if not all(isinstance(x, (float, int, np.generic)) for x in leaves):
            on_device, values = scalars, None  # a Tensor hyper-parameter: already on the device
        else:
            values = (tree, tuple((type(x), x) for x in leaves))
            same = memo is not None and memo.values == values
            on_device = memo.result[1:] if same else jax.device_put(scalars)
        memo = _OptimizersMemo(self._optimizers, groups, (gen._counter, gen._offset), (key, *on_device), values)
        object.__setattr__(self, "_opt_memo", memo)
        return memo.result

    def _compile(self, key, in_tree, statics, arrays) -> _Compiled:
        record: dict = {}
        step, state_tensors, plan, layout = self._step_fn(in_tree, statics, record)
        jitted = jax.jit(step, donate_argnums=(0, 1))
        sig = ", ".join(f"{tuple(a.shape)}:{a.dtype}" for a in arrays)
        compiled, lowered, times = _compile.compile_stages(
            jitted, self._args(state_tensors, plan, arrays, layout), self.name, sig, self._debug_level
        )
        return _Compiled(compiled, lowered, times, record, state_tensors, plan, layout)

    def _lookup(self, key, in_tree, statics, arrays) -> _Compiled:
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None:
                self._cache.move_to_end(key)
                return entry
        entry = self._compile(key, in_tree, statics, arrays)
        with self._lock:
            if self._first_key is None:
                object.__setattr__(self, "_first_key", key)
            self._cache[key] = entry
            self._reports.append(entry.times)
            while len(self._cache) > self.config.cache_size:
                victim = next(k for k in self._cache if k != self._first_key)
                del self._cache[victim]
        return entry

    def __call__(self, *args, **kwargs):
        if _pstate.on:  # one profiler event per step; compiles nest inside it
            with span(f"nn.Graph {self.name}", "graph"):
                return self._call(*args, **kwargs)
        return self._call(*args, **kwargs)

    def _call(self, *args, **kwargs):
        repeat = self.__dict__.get("_repeat")
        hit = None if repeat is None else repeat(args, kwargs)
        if hit is not None:
            entry, call_args = hit
            return self._after(entry, entry.compiled(*call_args))
        version = modules_changed[0]  # what the signature's module modes were read at
        key, in_tree, statics, arrays = self._signature(args, kwargs)
        entry = self._lookup(key, in_tree, statics, arrays)
        call_args = self._args(entry.state_tensors, entry.plan, arrays, entry.layout, self._opt_memo.result)
        first = not entry.first_run_done
        if first:
            call_args = _distinct_buffers(call_args)
        start = _compile.time.perf_counter()
        results = entry.compiled(*call_args)
        if first:
            jax.block_until_ready(results[2])
            entry.times.record(self.name, "first run", _compile.time.perf_counter() - start, self._debug_level)
            entry.first_run_done = True
        self._remember(entry, key, in_tree, statics, args, kwargs, arrays, version)
        return self._after(entry, results)

    def _after(self, entry, results):
        """Everything after the dispatch (it overlaps the step; everything before delays it):
        the new state into the Tensors and optimizers, the entry marked most recent, the RNG
        stream and schedulers advanced, the next call's optimizer read, outputs wrapped."""
        new_state, new_opt, outputs = results
        entry.write(new_state, new_opt)
        with self._lock:  # the most recent entry of the LRU (a repeat skipped ``_lookup``)
            if self._cache.get(self._last_key) is entry:
                self._cache.move_to_end(self._last_key)
        default_generator._counter += entry.record["draws"]
        for sch in self._lr_schedulers:
            sch.step()
        self._optimizers_now()  # the next call's, while this one runs
        return entry.unwrap(outputs)

    def _remember(self, entry, key, in_tree, statics, args, kwargs, arrays, version):
        """Keep what ``save``, ``memory_report`` and ``stablehlo`` need of this call
        (``version``: ``modules_changed`` when its signature was read), and ``_repeat``, the
        check that lets a call like this one skip building its key."""
        object.__setattr__(self, "_last_key", key)
        object.__setattr__(self, "_last_call", (key, in_tree, statics, [(a.shape, a.dtype) for a in arrays]))
        repeat = None
        if not kwargs and all(isinstance(a, Tensor) for a in args):
            avals = tuple((a._data.aval, a._data.sharding) for a in args)
            repeat = self._repeater(entry, avals, version, self._config_key(), self._optimizers_now()[0])
        object.__setattr__(self, "_repeat", repeat)

    def _repeater(self, entry, avals, version, config, opt_key):
        """``repeat(args, kwargs)``: ``(entry, call_args)`` for a call like the last one
        (positional Tensors of the same avals and shardings, the same module modes, config
        and optimizer structure), checked without building its key; None otherwise
        (``_signature`` and ``_lookup`` decide).

        This runs before the dispatch: on CPU, microseconds of Python there cost several times
        their length, as XLA's worker threads spin or sleep meanwhile; so everything it needs
        is bound here once."""
        n, read, gen, now, layout = len(avals), entry.read, default_generator, self._optimizers_now, entry.layout

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
            if modules_changed[0] != version or optimizers[0] is not opt_key or self._config_key() != config:
                return None
            if layout is not None:  # global tensors: placed as the step's shardings ask
                return entry, self._args(entry.state_tensors, entry.plan, arrays, layout, optimizers)
            state, opt_states = read()  # what ``_args`` returns, from the step's generated read
            return entry, (state, opt_states, (gen.base_key_data(), optimizers[1]), optimizers[2], arrays)

        return repeat

    def warmup(self, *example_inputs, threads: int = 4) -> None:
        """Compile several input signatures ahead of use; XLA compiles run in parallel threads.

        Each example is a tuple of call arguments (Tensors; values are not used).
        """
        pending = []
        for example in example_inputs:
            example = example if isinstance(example, tuple) else (example,)
            key, in_tree, statics, arrays = self._signature(example, {})
            if key in self._cache:
                continue
            record: dict = {}
            step, state_tensors, plan, layout = self._step_fn(in_tree, statics, record)
            jitted = jax.jit(step, donate_argnums=(0, 1))
            times = _compile.StageTimes(", ".join(f"{tuple(a.shape)}:{a.dtype}" for a in arrays))
            start = _compile.time.perf_counter()
            lowered = jitted.trace(*self._args(state_tensors, plan, arrays, layout)).lower()
            times.record(self.name, "trace+lower", _compile.time.perf_counter() - start, self._debug_level)
            pending.append((key, lowered, times, dict(record), state_tensors, plan, layout))

        def build(item):
            key, lowered, times, record, state_tensors, plan, layout = item
            start = _compile.time.perf_counter()
            compiled = lowered.compile()
            times.record(self.name, "XLA compile", _compile.time.perf_counter() - start, self._debug_level)
            return key, _Compiled(compiled, lowered, times, record, state_tensors, plan, layout)

        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            for key, entry in pool.map(build, pending):
                with self._lock:
                    if self._first_key is None:
                        object.__setattr__(self, "_first_key", key)
                    self._cache[key] = entry
                    self._reports.append(entry.times)

    # -- reports --------------------------------------------------------------------------
    def compile_report(self) -> list[dict]:
        """Per compiled signature: seconds and RSS after trace, lower, compile and first run."""
        return [t.as_dict() for t in self._reports]

    def memory_report(self) -> dict:
        """XLA's memory analysis (bytes) of the most recently used compiled step."""
        if self._last_key is None or self._last_key not in self._cache:
            raise RuntimeError(f"nn.Graph {self.name}: memory_report() needs a compiled graph; call it first")
        return _compile.memory_report(self._cache[self._last_key].compiled)

    def stablehlo(self) -> str:
        """The StableHLO text of the most recently used compiled step."""
        if self._last_key is None or self._last_key not in self._cache:
            raise RuntimeError(f"nn.Graph {self.name}: stablehlo() needs a compiled graph; call it first")
        return self._cache[self._last_key].lowered.as_text()

    def save(self, path: str) -> None:
        """Serialise the compiled step (``jax.export``) and its state, runnable without this code."""
        from .export import save_graph

        save_graph(self, path)

    @staticmethod
    def load(path: str):
        """A callable that runs a graph saved with ``save`` (no model code needed)."""
        from .export import LoadedGraph

        return LoadedGraph(path)

    def __repr__(self):
        lines = [f"({self.name}): {type(self).__name__}("]
        lines.append(f"  (config): {self.config!r}")
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        for i, opt in enumerate(self._optimizers):
            lines.append(f"  (optimizer{i}): {type(opt).__name__}")
        for key, entry in self._cache.items():
            ins = ", ".join(f"{tuple(s[0])}:{np.dtype(s[1]).name}" for s in key[1] if isinstance(s, tuple))
            n_out = sum(1 for s in entry.record["out_static"] if s is None)
            lines.append(f"  (compiled): inputs [{ins}] -> {n_out} tensor output(s)")
        lines.append(")")
        return "\n".join(lines)


class _TensorSlot:
    def __repr__(self):
        return "<tensor>"


_TENSOR = _TensorSlot()


def _distinct_buffers(call_args):
    """Donated state must not share a device buffer (PJRT refuses ``f(donate(a), donate(a))``);
    freshly made state sometimes does, so the first call of a step copies any repeat."""
    seen = set()

    def distinct(a):
        try:
            ptr = a.addressable_shards[0].data.unsafe_buffer_pointer()  # sharded arrays: the first shard
        except (ValueError, RuntimeError):  # JaxRuntimeError is a RuntimeError
            return a  # multi-process layouts hide the buffer: nothing to compare
        if ptr in seen:
            return jnp.array(a, copy=True)
        seen.add(ptr)
        return a

    state, opt_states, *rest = call_args
    return (jax.tree.map(distinct, state), jax.tree.map(distinct, opt_states), *rest)


class _OptimizersMemo:
    """``Graph._optimizers_now``'s last result and the objects it was read from."""

    def __init__(self, optimizers, groups, counter, result, values):
        self.lists = [(opt, opt.param_groups, len(opt.param_groups)) for opt in optimizers]
        self.groups = [(group, tuple(group.values())) for _, group in groups]
        self.counter, self.result, self.values = counter, result, values
        # a mutable entry (a Tensor lr, a list) may change in place: read everything again each call
        self.reusable = values is not None and all(
            _immutable(v) for group, vals in self.groups for k, v in zip(group, vals) if k not in _NOT_HYPER
        )

    def same_groups(self) -> bool:
        """Whether every optimizer still has the same group dicts (not loaded or added)."""
        now = [g for opt, _, _ in self.lists for g in opt.param_groups]
        return len(now) == len(self.groups) and all(g is h for g, (h, _) in zip(now, self.groups))

    def unchanged(self, optimizers) -> bool:
        """Whether the optimizers' ``param_groups`` and every group entry are the objects read
        (plain loops: this runs before every repeated call's dispatch)."""
        if not self.reusable or len(optimizers) != len(self.lists):
            return False
        for opt, groups, n in self.lists:
            if opt.param_groups is not groups or len(groups) != n:
                return False
        for group, values in self.groups:
            if len(group) != len(values) or not all(map(operator.is_, group.values(), values)):
                return False
        return True


_NOT_HYPER = ("params", "param_names")


def _immutable(value) -> bool:
    return isinstance(value, (float, int, str, np.generic, type(None))) or (
        isinstance(value, tuple) and all(_immutable(v) for v in value)
    )


def _clip(group, grads):
    """OneFlow's per-group ``clip_grad_max_norm`` / ``clip_grad_norm_type`` (torch's formula)."""
    max_norm = group.get("clip_grad_max_norm")
    if max_norm is None:
        return grads
    p = float(group.get("clip_grad_norm_type", 2.0))
    if p == float("inf"):
        total = jnp.max(jnp.stack([jnp.max(jnp.abs(g)) for g in grads]))
    else:
        total = jnp.sum(jnp.stack([jnp.sum(jnp.abs(g.astype(jnp.float32)) ** p) for g in grads])) ** (1.0 / p)
    scale = jnp.minimum(1.0, max_norm / (total + 1e-6))
    return [(g * scale).astype(g.dtype) for g in grads]
