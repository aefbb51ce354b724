"""What an nn.Graph holds, in the order its compiled step takes it.

``GraphState.of(graph)`` is the protocol for code outside ``fjax.graph`` (checkpoints, exports,
tools) that needs a graph's state; it replaces reaching into the graph's private attributes:

- ``modules`` / ``optimizers``: the graph's modules by attribute name and its optimizers, in
  ``add_optimizer`` order (``parts()``: both, keyed as in ``Graph.state_dict``);
- ``names`` / ``tensors``: every parameter and buffer of those modules, each once, in the order
  of the step's ``state`` argument (``"<attribute>.<name>"``);
- ``groups``: one ``OptGroup(optimizer, group, index)`` per optimizer parameter group, ``index``
  giving the positions of the group's parameters in ``tensors``: the step's ``opt_states``
  argument is ``[[optimizer._state[p] for p in group["params"]] for each group]``;
- ``layout``: ``None``, or with a mesh configuration (``graph.config.set_mesh``) the ``Layout``
  of shardings the step gives the state, the gradients and the optimizer state;
  ``tensor_shardings()`` / ``optimizer_shardings()`` key them by tensor / parameter.

A GraphState is a snapshot of the structure (which tensors, which groups), not of the values: it
reads ``t._data`` when asked (``step_args``). Building one creates any missing optimizer state.

``OptimizersNow`` is the per-call half: the optimizers' structure (part of the compile key) and
their hyper-parameters as device values, read from ``param_groups`` as they are now.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import jax
import numpy as np

from ..errors import OpError
from ..random import default_generator


class OptGroup(NamedTuple):
    """One optimizer parameter group and the positions of its parameters in ``GraphState.tensors``."""

    optimizer: object
    group: dict
    index: list


class Layout(NamedTuple):
    """Shardings from a mesh configuration: ``storage`` and ``grads`` (one per state tensor),
    ``opt`` (per group, per parameter: a tree like its optimizer state), and the ``mesh``."""

    storage: list
    grads: list
    opt: list
    mesh: object


class GraphState:
    """A graph's modules, optimizers, state tensors, optimizer groups and shardings (see the module
    docstring); ``GraphState.of(graph)`` builds one."""

    def __init__(self, modules: dict, optimizers: list, mesh, graph_name: str):
        self.modules, self.optimizers = dict(modules), list(optimizers)
        named = _named_state(self.modules)
        self.names = [n for n, _ in named]
        self.tensors = [t for _, t in named]
        self.groups = _groups(self.tensors, self.optimizers, graph_name)
        self.layout = None if mesh is None else _layout(mesh, self.names, self.tensors, self.groups)

    @classmethod
    def of(cls, graph) -> GraphState:
        from .stages import mesh_of  # config.mesh, or the one pipeline stages imply

        return cls(graph._modules, graph._optimizers, mesh_of(graph), graph.name)

    def parts(self) -> dict:
        """The modules by attribute name and the optimizers as ``optimizer{i}`` (``state_dict``'s keys)."""
        return {**self.modules, **{f"optimizer{i}": opt for i, opt in enumerate(self.optimizers)}}

    def tensor_shardings(self) -> dict:
        """``{id(tensor): sharding}`` of the state tensors ({} without a mesh)."""
        if self.layout is None:
            return {}
        return {id(t): s for t, s in zip(self.tensors, self.layout.storage)}

    def optimizer_shardings(self) -> dict:
        """``{id(parameter): tree of shardings like its optimizer state}`` ({} without a mesh)."""
        if self.layout is None:
            return {}
        return {id(p): sh for g, shs in zip(self.groups, self.layout.opt) for p, sh in zip(g.group["params"], shs)}

    def place(self, arrays: list) -> list:
        """With a layout: move the state and optimizer state onto their shardings (in place) and
        return ``arrays`` (the inputs) on the batch sharding; without one, ``arrays`` unchanged."""
        if self.layout is None:
            return arrays
        from ..distributed.mesh import place

        for t, a in zip(self.tensors, place([t._data for t in self.tensors], self.layout.storage)):
            t._data = a
        for (opt, group, _), group_sh in zip(self.groups, self.layout.opt):
            for p, sh in zip(group["params"], group_sh):
                opt._state[p] = jax.tree.map(lambda a, s: place([a], [s])[0], opt._state[p], sh)
        return place(arrays, [self.layout.mesh.batch(tuple(a.shape)) for a in arrays])

    def step_args(self, arrays: list, now: tuple) -> tuple:
        """The step's arguments ``(state, opt_states, rng, hyper, inputs)`` as the tensors and
        optimizers hold them now; ``now`` is ``OptimizersNow()``'s ``(key, counter, hyper)``."""
        state = [t._data for t in self.tensors]
        opt_states = [[opt._state[p] for p in group["params"]] for opt, group, _ in self.groups]
        _, counter, hyper = now
        return state, opt_states, (default_generator.base_key_data(), counter), hyper, arrays


def _named_state(modules: dict) -> list:
    seen, out = set(), []
    for attr, module in modules.items():
        for name, t in list(module.named_parameters()) + list(module.named_buffers()):
            if id(t) not in seen:
                seen.add(id(t))
                out.append((f"{attr}.{name}", t))
    return out


def _groups(tensors: list, optimizers: list, graph_name: str) -> list:
    index = {id(t): i for i, t in enumerate(tensors)}
    groups = []
    for opt in optimizers:
        opt._init_state()
        for group in opt.param_groups:
            for p in group["params"]:
                if id(p) not in index:
                    raise OpError(
                        f"nn.Graph {graph_name}: an optimizer parameter of shape {tuple(p.shape)} belongs "
                        "to no module of this graph; assign its module as a graph attribute"
                    )
            groups.append(OptGroup(opt, group, [index[id(p)] for p in group["params"]]))
    return groups


def _layout(mesh, names: list, tensors: list, groups: list) -> Layout:
    by_id = {id(t): n for n, t in zip(names, tensors)}
    storage = [mesh.storage(n, tuple(t.shape)) for n, t in zip(names, tensors)]
    grads = [mesh.gradient(n, tuple(t.shape)) for n, t in zip(names, tensors)]

    def opt_leaves(opt, p):
        name, shape = by_id[id(p)], tuple(p.shape)
        return jax.tree.map(lambda leaf: mesh.optimizer_state(name, shape, np.shape(leaf)), opt._state[p])

    opt = [[opt_leaves(o, p) for p in group["params"]] for o, group, _ in groups]
    return Layout(storage, grads, opt, mesh)


class OptimizersNow:
    """``now()``: ``(key, counter, hyper)``: the optimizers' structure (each group's class, static
    flags, parameters and clipping: part of the compile key), and as device arrays the RNG
    counter and every group's hyper-parameters, read from ``param_groups`` as they are now
    (a scheduler, an assignment or ``load_state_dict`` may have changed them).

    Every Python scalar argument of a compiled call is a fresh host-to-device copy, which made
    an MLP step 5% slower than a hand-written ``jax.jit``: each value goes to the device once.
    And as this runs before the dispatch, where every microsecond delays the step, a call
    whose sources (the generator's counter, each optimizer's ``param_groups`` and every entry
    of every group) are the very objects of the last call reuses the last result without
    reading them; the graph refreshes it right after each dispatch, for the next call.
    """

    def __init__(self, optimizers: list):
        self.optimizers = optimizers  # the graph's own list: ``add_optimizer`` appends to it
        self.memo = None

    def now(self) -> tuple:
        gen, memo = default_generator, self.memo
        if memo is not None and memo.counter == (gen._counter, gen._offset) and memo.unchanged(self.optimizers):
            return memo.result
        groups = [(opt, group) for opt in self.optimizers for group in opt.param_groups]
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
            key = memo.result[0]  # the same object: a repeat compares it by identity
        else:
            # a loaded or added group's parameters may have no state yet; a parameter whose
            # group's flags changed needs its state converted
            for opt in self.optimizers:
                opt._init_state()
        scalars = (np.uint32(gen._counter + gen._offset), [opt._hyper(group) for opt, group in groups])
        leaves, tree = jax.tree.flatten(scalars)
        if not all(isinstance(x, (float, int, np.generic)) for x in leaves):
            on_device, values = scalars, None  # a Tensor hyper-parameter: already on the device
        else:
            values = (tree, tuple((type(x), x) for x in leaves))
            same = memo is not None and memo.values == values
            on_device = memo.result[1:] if same else jax.device_put(scalars)
        self.memo = _OptimizersMemo(self.optimizers, groups, (gen._counter, gen._offset), (key, *on_device), values)
        return self.memo.result


class _OptimizersMemo:
    """``OptimizersNow.now``'s last result and the objects it was read from."""

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
