"""Per-module graph options and activation checkpointing (``jax.checkpoint``) inside nn.Graph."""

from __future__ import annotations

import jax

from ..autograd.grad_mode import no_grad
from ..dispatch import call_pure
from ..tensor import Tensor


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


class GraphModule:
    """Per-module options inside a Graph: ``self.m.to(GraphModule).activation_checkpointing = True``
    recomputes that module's activations in the backward pass (``jax.checkpoint``).

    On CPU, XLA's default concurrency-optimized scheduler hoists the recomputation next to the
    forward pass, which gives the memory back; run with
    ``XLA_FLAGS=--xla_cpu_enable_concurrency_optimized_scheduler=false`` to keep the savings
    there (GPU schedulers are memory-aware).
    """

    def __init__(self, name: str):
        self.name = name
        self.activation_checkpointing = False

    def __repr__(self):
        return f"GraphModule({self.name}, activation_checkpointing={self.activation_checkpointing})"


class _ModuleProxy:
    """What ``graph.<name>`` (and its submodules, items) return: module access plus graph options."""

    def __init__(self, module, graph, name):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_graph", graph)
        object.__setattr__(self, "_name", name)

    def to(self, target, *args, **kwargs):
        if target is GraphModule:
            return self._graph._options_for(self._module, self._name)
        return self._module.to(target, *args, **kwargs)

    def _wrap(self, value, name):
        from ..nn.module import Module

        return _ModuleProxy(value, self._graph, f"{self._name}.{name}") if isinstance(value, Module) else value

    def __call__(self, *args, **kwargs):
        return self._module(*args, **kwargs)

    def __getattr__(self, name):
        return self._wrap(getattr(self._module, name), name)

    def __getitem__(self, index):
        return self._wrap(self._module[index], index)

    def __iter__(self):
        return (self._wrap(m, i) for i, m in enumerate(self._module))

    def __len__(self):
        return len(self._module)

    def __setattr__(self, name, value):
        setattr(self._module, name, value)

    def __repr__(self):
        return repr(self._module)


def _checkpointer(name):
    """The ``Module._graph_call`` that nn.Graph installs on checkpointed modules while tracing."""

    def call(module, args, kwargs):
        object.__delattr__(module, "_graph_call")  # the inner call runs the module itself
        try:
            return _checkpointed_call(module, name, args, kwargs)
        finally:
            object.__setattr__(module, "_graph_call", call)

    return call


def _checkpointed_call(module, name, args, kwargs):
    """Run ``module`` as one tape node whose VJP recomputes the forward (``jax.checkpoint``)."""
    params = [p for p in module.parameters() if p.requires_grad]
    buffers = list(module.buffers())
    leaves, tree = jax.tree_util.tree_flatten((args, kwargs), is_leaf=_is_tensor)
    tensor_idx = [i for i, x in enumerate(leaves) if isinstance(x, Tensor)]
    out_tree = []

    def pure(*arrays):
        n = len(params)
        saved = [(t, t._data, t._node, t._requires_grad) for t in params + buffers]
        try:
            for p, a in zip(params, arrays[:n]):
                p._data, p._node = a, None
            call_leaves = list(leaves)
            for i, a in zip(tensor_idx, arrays[n:]):
                call_leaves[i] = Tensor._wrap(a)
            a2, k2 = jax.tree_util.tree_unflatten(tree, call_leaves)
            with no_grad():
                out = module(*a2, **k2)
            flat, otree = jax.tree_util.tree_flatten(out, is_leaf=_is_tensor)
            out_tree.append(otree)
            return tuple(x._data for x in flat) + tuple(b._data for b in buffers)
        finally:
            for t, data, node, rg in saved:
                t._data, t._node, t._requires_grad = data, node, rg

    results = call_pure(f"checkpoint[{name}]", jax.checkpoint(pure), params + [leaves[i] for i in tensor_idx])
    results = results if isinstance(results, tuple) else (results,)
    n_out = len(results) - len(buffers)
    for b, r in zip(buffers, results[n_out:]):
        b._data = r._data
    return jax.tree_util.tree_unflatten(out_tree[-1], list(results[:n_out]))
