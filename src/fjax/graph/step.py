"""A graph's ``build`` traced into one pure step function.

``Step(graph, in_tree, statics)`` is, for one input structure,

    step(state, opt_states, rng, hyper, inputs) -> (state', opt_states', outputs)

with the arguments of ``GraphState.step_args``. Calling it (on tracers, under ``jax.jit``) swaps
every parameter and buffer of the graph's modules, the optimizer states and the RNG stream for
its arguments, runs ``build`` through the ordinary dispatch path (so eager and graph share one
semantics; ``loss.backward()`` inside ``build`` fills ``.grad`` tracers), then gradient
clipping and every added optimizer's functional update on those gradients; the tensors get
their own values back afterwards. ``step.record`` receives what the trace learns: ``out_tree``
and ``out_static`` (``build``'s return structure), ``draws`` (random numbers drawn per call) and
``changed`` (the positions in ``state`` the step writes: an inference step changes none, and
``Executables`` then neither donates, returns nor writes back the others).
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp

from .. import _jax_compat
from .._config import config
from .._tracing import trace_state, tracing
from ..autograd.grad_mode import enable_grad, no_grad
from ..dispatch import call_pure
from ..distributed import global_tensor as _global
from ..errors import OpError
from ..random import default_generator
from ..tensor import Tensor
from . import auto_pipeline as _auto_pipeline
from . import stages as _stages
from .memory import OPTIMIZER_SCOPE, module_paths
from .modules import _checkpointer, _scoped
from .state import GraphState


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


class _TensorSlot:
    def __repr__(self):
        return "<tensor>"


TENSOR = _TensorSlot()
"""The placeholder in ``statics`` for an input leaf that is a Tensor (its array is an input)."""


class Step:
    """The pure step of ``graph.build`` for inputs of structure ``in_tree`` (see the module docstring).

    ``statics``: one entry per input leaf, ``TENSOR`` for a Tensor, else the (hashable) value.
    """

    def __init__(self, graph, in_tree, statics):
        self.graph, self.in_tree, self.statics = graph, in_tree, statics
        self.state = GraphState.of(graph)
        self.stage_devices = _stages.devices_of(graph)  # to_global between stages keeps values in place
        self.auto_pipeline = _auto_pipeline.plan(graph, warn=True)  # a mesh pipe axis over repeated blocks
        self.training = graph.training
        self.amp = graph.config.amp_dtype
        self.n_acc = graph.config.grad_acc_steps if self.training else 1
        self.record: dict = {}
        self.__name__ = "step"  # the name jax gives the compiled module: ``jit_step``

    def __call__(self, state, opt_states, rng, hyper, inputs):
        key, counter = rng
        with tracing(), default_generator._tracing(jax.random.wrap_key_data(key), counter), self._swapped():
            self._load(state)
            trace_state.step_checks = (_jax_compat.trace_of(key), [])
            if self.n_acc == 1:
                outputs = self._run_build(self._cast_inputs(inputs))
                grads = [None if t.grad is None else t.grad._data for t in self.state.tensors]
            else:
                grads, outputs = self._accumulate(inputs, state)
            # the index checks of this trace's values: one boolean each, after build's outputs
            # (``Executable.unwrap`` reads only build's), checked on the host after each run
            oks = trace_state.step_checks[1]
            self.record["checks"] = [check for _, check in oks]
            if oks:
                outputs = [*outputs, jnp.stack([jnp.all(ok) for ok, _ in oks])]
            self.record["draws"] = default_generator._counter
            new_state = self._new_state(state)
            new_state, new_opt_states = self._update(new_state, self._constrain_grads(grads), opt_states, hyper)
            # the state entries the step changes: an unchanged one comes out as its very input tracer
            self.record["changed"] = tuple(i for i, (a, b) in enumerate(zip(state, new_state)) if a is not b)
            return *self._constrain_state(new_state, new_opt_states), outputs

    @contextlib.contextmanager
    def _swapped(self):
        """Inside: the configured index checks and the checkpointed modules' calls; after: every
        state tensor's data, grad and tape node as before."""
        saved = [(t, t._data, t.grad, t._node) for t in self.state.tensors]
        policies = {id(m): o.activation_checkpointing for m, o in self.graph._module_options.values()}
        # every module call runs under jax.named_scope(<its path>): memory_report reads it back from the HLO
        paths = module_paths(self.graph)
        checks, trace_state.graph_checks = trace_state.graph_checks, config.graph_index_checks
        step_checks = trace_state.step_checks
        staged, _global.staged.devices = _global.staged.devices, self.stage_devices
        installed = []
        layout = self.state.layout
        constrained = layout is not None and layout.mesh.constrains_activations  # sequence parallelism
        try:
            for m, path in paths:
                policy = policies.get(id(m))
                call = _checkpointer(path, policy) if policy else _scoped(path)
                installed.append((m, m.__dict__.get("_graph_call")))  # (Module.compile's, restored after)
                object.__setattr__(m, "_graph_call", _constrained(call, layout.mesh, path) if constrained else call)
            with self.auto_pipeline.installed() if self.auto_pipeline else contextlib.nullcontext():
                yield
        finally:
            trace_state.graph_checks, trace_state.step_checks = checks, step_checks
            _global.staged.devices = staged
            for m, previous in installed:
                if previous is None:
                    object.__delattr__(m, "_graph_call")
                else:
                    object.__setattr__(m, "_graph_call", previous)
            for t, data, grad, node in saved:
                t._data, t.grad, t._node = data, grad, node

    def _amp_param(self, t, a) -> bool:
        """Whether ``t`` (with value ``a``) is a parameter computed in the AMP dtype."""
        return self.amp is not None and t.requires_grad and jnp.issubdtype(a.dtype, jnp.floating)

    def _load(self, state) -> None:
        for t, a in zip(self.state.tensors, state):
            t._data, t.grad, t._node = a, None, None
            if self._amp_param(t, a):
                t._data = a.astype(self.amp.dtype)

    def _new_state(self, masters) -> list:
        """The tensors' values after ``build``; AMP parameters keep their float32 master copy."""
        amp = self.amp
        return [
            master if amp is not None and t.requires_grad and t._data.dtype == amp.dtype else t._data
            for t, master in zip(self.state.tensors, masters)
        ]

    def _run_build(self, arrays) -> list:
        it = iter(arrays)
        leaves = [Tensor._wrap(next(it)) if s is TENSOR else s for s in self.statics]
        args, kwargs = jax.tree_util.tree_unflatten(self.in_tree, leaves)
        with enable_grad() if self.training else no_grad():
            out = self.graph.build(*args, **kwargs)
        if self.auto_pipeline is not None:
            self.auto_pipeline.finish()
        flat, out_tree = jax.tree_util.tree_flatten(out, is_leaf=is_tensor)
        self.record["out_tree"] = out_tree
        self.record["out_static"] = [None if isinstance(x, Tensor) else x for x in flat]
        return [x._data for x in flat if isinstance(x, Tensor)]

    def _cast_inputs(self, arrays) -> list:
        if self.amp is None:
            return arrays
        return [a.astype(self.amp.dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a for a in arrays]

    def _accumulate(self, inputs, masters):
        """Gradient accumulation as OneFlow runs it: ``lax.scan`` over ``n`` micro-batches (dim 0 of
        every input split in ``n``; compile time flat in n). Each micro-batch's gradients are scaled
        by ``1/n`` and summed in the dtype of ``masters`` (the state as the step got it: float32
        under AMP), buffers carry from one micro-batch to the next, random numbers continue the
        stream in order (micro-batch ``i`` draws where ``i - 1`` stopped, as an eager loop over the
        micro-batches does), and every output is packed on dim 0 (OneFlow's ``pack``: a scalar
        becomes shape ``(n,)``, shape ``(b, ...)`` becomes ``(n * b, ...)``)."""
        n, tensors = self.n_acc, self.state.tensors
        for a in inputs:
            if a.ndim == 0 or a.shape[0] % n:
                raise OpError(
                    f"nn.Graph {self.graph.name}: gradient accumulation over {n} micro-batches needs every input's "
                    f"dim 0 divisible by {n}, got an input of shape {tuple(a.shape)}"
                )
        micro = [a.reshape((n, a.shape[0] // n) + a.shape[1:]) for a in inputs]
        params = [t._data for t in tensors]
        grad_mask = [t.requires_grad and jnp.issubdtype(t._data.dtype, jnp.inexact) for t in tensors]
        gen = default_generator
        offset = gen._offset  # the traced position of this step's first draw in the eager stream

        def reset(bufs):
            for t, p, b, m in zip(tensors, params, bufs, grad_mask):
                t._data, t.grad, t._node = (p if m else b), None, None

        def body(carry, xs):
            position, bufs, acc = carry
            reset(bufs)
            gen._counter, gen._offset = 0, position
            outs = self._run_build(self._cast_inputs(list(xs)))
            self.record["micro_draws"] = gen._counter
            new_acc = [
                a + (t.grad._data.astype(a.dtype) / n if t.grad is not None else 0) for t, a in zip(tensors, acc)
            ]
            return (position + gen._counter, [t._data for t in tensors], new_acc), outs

        # gradients add up in the master dtype (float32 under AMP), not in the compute dtype
        zeros = [jnp.zeros(a.shape, a.dtype) for a in masters]
        (_, bufs, acc), outs = jax.lax.scan(body, (offset, params, zeros), micro)
        reset(bufs)
        gen._counter, gen._offset = n * self.record["micro_draws"], offset
        packed = [o.reshape((-1,) + o.shape[2:]) if o.ndim > 1 else o for o in outs]
        return [a if m else None for a, m in zip(acc, grad_mask)], packed

    def _update(self, new_state, grads, opt_states, hyper):
        """Clip and apply each optimizer group's functional step to the parameters with a gradient."""
        with jax.named_scope(OPTIMIZER_SCOPE):  # memory_report's optimizer temporaries
            return self._update_groups(new_state, grads, opt_states, hyper)

    def _update_groups(self, new_state, grads, opt_states, hyper):
        new_opt_states = list(opt_states)
        for gi, (opt, group, idx) in enumerate(self.state.groups):
            live = [i for i in idx if grads[i] is not None]
            if not live:
                continue
            g = _clip(group, [grads[i].astype(new_state[i].dtype) for i in live])
            pos = {i: k for k, i in enumerate(idx)}
            sub_states = [opt_states[gi][pos[i]] for i in live]
            new_p, new_s = opt._functional_step(group, [new_state[i] for i in live], g, sub_states, hyper[gi])
            group_states = list(opt_states[gi])
            for i, p_new, s_new in zip(live, new_p, new_s):
                new_state[i] = p_new
                group_states[pos[i]] = s_new
            new_opt_states[gi] = group_states
        return new_state, new_opt_states

    def _constrain_grads(self, grads) -> list:
        layout = self.state.layout
        if layout is None:
            return grads
        constrain = jax.lax.with_sharding_constraint
        return [g if g is None or sh is None else constrain(g, sh) for g, sh in zip(grads, layout.grads)]

    def _constrain_state(self, new_state, new_opt_states) -> tuple:
        layout = self.state.layout
        if layout is None:
            return new_state, new_opt_states
        constrain = jax.lax.with_sharding_constraint
        new_state = [constrain(a, sh) for a, sh in zip(new_state, layout.storage)]
        new_opt_states = [
            [jax.tree.map(constrain, st, sh) for st, sh in zip(group_st, group_sh)]
            for group_st, group_sh in zip(new_opt_states, layout.opt)
        ]
        return new_state, new_opt_states


def _constrained(inner, mesh, path: str):
    """A ``Module._graph_call`` around ``inner`` that constrains the module's first argument and
    its output to the shardings the mesh configuration's strategies give them (``MeshConfig.activation``:
    sequence parallelism); each gradient is constrained alike (the transpose of a constraint)."""

    def constrain(t, where):
        sharding = mesh.activation(path, tuple(t.shape), where) if isinstance(t, Tensor) else None
        if sharding is None:
            return t
        return call_pure(f"shard[{path}]", lambda a: jax.lax.with_sharding_constraint(a, sharding), [t])

    def call(module, args, kwargs):
        if args:
            args = (constrain(args[0], "in"), *args[1:])
        try:
            out = inner(module, args, kwargs)
        finally:
            object.__setattr__(module, "_graph_call", call)  # (inner reinstalls itself)
        return constrain(out, "out")

    return call


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
