"""Per-module graph options and activation checkpointing (``jax.checkpoint``) inside nn.Graph."""

from __future__ import annotations

import functools

import jax

from ..autograd.grad_mode import no_grad
from ..dispatch import call_pure
from ..tensor import Tensor


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


class _GraphBlock:
    """What ``proxy.to(GraphModule)`` / ``proxy.to(GraphTensor)`` returns: a graph member's name
    (``name_prefix + name`` is its dotted path in the graph), its ``type`` and its stage."""

    def __init__(self, path: str, kind: str):
        prefix, _, name = path.rpartition(".")
        self._name, self._name_prefix, self._type = name, f"{prefix}." if prefix else "", kind
        self._stage_id, self._stage_placement = None, None

    name = property(lambda self: self._name, doc="The member's attribute name.")
    name_prefix = property(lambda self: self._name_prefix, doc="The dotted path of its parent, ending in '.'.")
    type = property(lambda self: self._type, doc="``'MODULE'``, ``'PARAMETER'`` or ``'BUFFER'``.")

    def set_stage(self, stage_id: int | None = None, placement=None) -> None:
        """Put this member in pipeline stage ``stage_id`` on ``placement`` (OneFlow's pipeline
        parallelism). The graph then compiles one program over every stage's devices (see
        ``fjax.graph.stages``); ``None`` removes the stage.

        Args:
            stage_id: the stage, an int >= 0 (stages run 0, 1, ..., S-1 in module order), or None.
            placement: the stage's ``fjax.placement``.

        Example:
            >>> class G(fjax.nn.Graph):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
            ...
            ...     def build(self, x):
            ...         return self.m(x)
            >>> block = G().m[1].to(fjax.nn.graph.GraphModule)
            >>> block.set_stage(0, fjax.placement("cpu", ranks=[0]))
            >>> block.stage_id, block.stage_placement.ranks.tolist()
            (0, [0])
        """
        from ..distributed.placement import placement as _placement
        from .stages import stage_version

        if stage_id is not None and (not isinstance(stage_id, int) or isinstance(stage_id, bool) or stage_id < 0):
            raise ValueError(
                f"set_stage: '{self._name_prefix}{self._name}': stage_id must be an int >= 0, got {stage_id!r}"
            )
        if placement is not None and not isinstance(placement, _placement):
            raise TypeError(
                f"set_stage: '{self._name_prefix}{self._name}': placement must be an fjax.placement, "
                f"got {type(placement).__name__}"
            )
        self._stage_id, self._stage_placement = stage_id, placement
        stage_version[0] += 1

    @property
    def stage_id(self):
        """The pipeline stage given with ``set_stage`` (or None)."""
        return self._stage_id

    @stage_id.setter
    def stage_id(self, value):
        self.set_stage(value, self._stage_placement)

    @property
    def stage_placement(self):
        """The placement given with ``set_stage`` (or None)."""
        return self._stage_placement


class GraphModule(_GraphBlock):
    """Per-module options inside a Graph (``graph.m.to(GraphModule)``): ``name``/``name_prefix``,
    ``type`` (``"MODULE"``), ``set_stage``, ``debug``, and ``activation_checkpointing = True``,
    which recomputes that module's activations in the backward pass (``jax.checkpoint``), or a
    JAX policy by name or callable (``"dots_saveable"``, ``save_only_these_names("h")``, see
    ``fjax.utils.checkpoint``) that saves part of them; a setting that leaves the compiled
    step's memory unchanged warns when the step compiles.

    On CPU, XLA's default concurrency-optimized scheduler hoists the recomputation next to the
    forward pass, which gives the memory back; run with
    ``XLA_FLAGS=--xla_cpu_enable_concurrency_optimized_scheduler=false`` to keep the savings
    there (GPU schedulers are memory-aware).

    Example::

        >>> class G(fjax.nn.Graph):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.m = nn.Sequential(nn.Linear(2, 2))
        ...
        ...     def build(self, x):
        ...         return self.m(x)
        >>> block = G().m[0].to(fjax.nn.graph.GraphModule)
        >>> block.name, block.name_prefix, block.type, block.activation_checkpointing
        ('0', 'm.', 'MODULE', False)
    """

    def __init__(self, name: str):
        super().__init__(name, "MODULE")
        self._checkpointing = False
        self._debug_level = -1

    @property
    def activation_checkpointing(self):
        """False, True (recompute the module's activations in the backward), or a JAX checkpoint
        policy (a name such as ``"dots_saveable"`` or a callable, see ``fjax.utils.checkpoint``)."""
        return self._checkpointing

    @activation_checkpointing.setter
    def activation_checkpointing(self, value):
        if not isinstance(value, bool) and value is not None:
            from ..utils.checkpoint import resolve_policy

            resolve_policy(value)  # an unknown name raises here, listing the valid ones
        self._checkpointing = False if value is None else value

    @property
    def path(self) -> str:
        return self._name_prefix + self._name

    def debug(
        self,
        v_level: int = 0,
        *,
        ranks=None,
        max_py_stack_depth: int = 2,
        only_user_py_stack: bool = True,
        op_repr_with_py_stack: bool = False,
    ) -> None:
        """OneFlow's per-module debug switch: the level is kept (``graph.debug`` sets it on every
        module); fjax logs compile stages per graph, not per module."""
        _check_debug_args(v_level, max_py_stack_depth)
        self._debug_level = v_level

    def __repr__(self):
        return f"GraphModule({self.path}, activation_checkpointing={self.activation_checkpointing})"


class GraphTensor(_GraphBlock):
    """A parameter's or buffer's graph view (``graph.m.weight.to(GraphTensor)``): ``name``,
    ``name_prefix``, ``type`` (``"PARAMETER"`` or ``"BUFFER"``) and ``set_stage``.

    Example::

        >>> class G(fjax.nn.Graph):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.m = nn.BatchNorm1d(2)
        ...
        ...     def build(self, x):
        ...         return self.m(x)
        >>> g = G()
        >>> g.m.weight.to(fjax.nn.graph.GraphTensor).type, g.m.running_mean.to(fjax.nn.graph.GraphTensor).type
        ('PARAMETER', 'BUFFER')
    """

    def __repr__(self):
        return f"GraphTensor({self._name_prefix}{self._name}, type={self._type})"


def _check_debug_args(v_level, max_py_stack_depth) -> None:
    if not isinstance(v_level, int) or isinstance(v_level, bool) or not -1 <= v_level <= 3:
        raise ValueError(f"nn.Graph.debug: v_level must be an int from -1 (off) to 3, got {v_level!r}")
    if not isinstance(max_py_stack_depth, int) or max_py_stack_depth < 0:
        raise ValueError(f"nn.Graph.debug: max_py_stack_depth must be an int >= 0, got {max_py_stack_depth!r}")


class Proxy:
    """OneFlow's ``nn.graph.Proxy``: what a graph's module attributes (and their submodules,
    parameters and buffers) are outside ``build``. ``proxy.to(GraphModule)`` /
    ``proxy.to(GraphTensor)`` gives the graph options, ``proxy.to(nn.Module)`` /
    ``proxy.to(Tensor)`` the object itself; any other ``to(...)`` is the object's own.

    Example::

        >>> class G(fjax.nn.Graph):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.m = nn.Linear(2, 2)
        ...
        ...     def build(self, x):
        ...         return self.m(x)
        >>> g = G()
        >>> isinstance(g.m, fjax.nn.graph.Proxy), isinstance(g.m.weight, fjax.nn.graph.Proxy)
        (True, True)
        >>> g.m.to(nn.Module).in_features, tuple(g.m.weight.to(fjax.Tensor).shape)
        (2, (2, 2))
    """

    __slots__ = ("_origin", "_block", "_graph")

    def __init__(self, origin, block, graph):
        object.__setattr__(self, "_origin", origin)
        object.__setattr__(self, "_block", block)
        object.__setattr__(self, "_graph", graph)

    def to(self, *args, **kwargs):
        from ..nn.module import Module

        if len(args) == 1 and not kwargs and isinstance(args[0], type):
            if issubclass(args[0], _GraphBlock):
                if not isinstance(self._block, args[0]):
                    raise TypeError(
                        f"nn.Graph: {self._block.path if isinstance(self._block, GraphModule) else self._block!r} "
                        f"is a {self._block.type}, not a {args[0].__name__}"
                    )
                return self._block
            if args[0] is Module or args[0] is Tensor:
                return self._origin
        return self._origin.to(*args, **kwargs)

    def __repr__(self):
        return repr(self._origin)


class ProxyModule(Proxy):
    """A module of a Graph outside ``build`` (see ``Proxy``): calls and attributes reach the module;
    submodules, parameters and buffers come back as proxies; inside ``build`` parameters and
    buffers are the tensors and ``__class__`` is the module's class (as in OneFlow)."""

    __slots__ = ()

    def __init__(self, module, graph, name):
        super().__init__(module, graph._options_for(module, name), graph)

    @property
    def __class__(self):
        return type(self._origin) if getattr(self._graph, "_building", 0) else type(self)

    def _wrap(self, value, name):
        from ..nn.module import Module

        path = f"{self._block.path}.{name}"
        if isinstance(value, Module):
            return ProxyModule(value, self._graph, path)
        if isinstance(value, Tensor) and not getattr(self._graph, "_building", 0):
            module = self._origin
            if name in module.__dict__.get("_parameters", {}):
                return ProxyTensor(value, GraphTensor(path, "PARAMETER"), self._graph)
            if name in module.__dict__.get("_buffers", {}):
                return ProxyTensor(value, GraphTensor(path, "BUFFER"), self._graph)
        return value

    def __call__(self, *args, **kwargs):
        return self._origin(*args, **kwargs)

    def __getattr__(self, name):
        if name == "config" and not hasattr(self._origin, "config"):
            return self._block  # OneFlow's older ``graph.m.config.set_stage(...)`` / ``.config.stage_id = i``
        return self._wrap(getattr(self._origin, name), name)

    def __getitem__(self, index):
        return self._wrap(self._origin[index], index)

    def __iter__(self):
        return (self._wrap(m, i) for i, m in enumerate(self._origin))

    def __len__(self):
        return len(self._origin)

    def __setattr__(self, name, value):
        setattr(self._origin, name, value)


class ProxyTensor(Proxy):
    """A parameter or buffer of a Graph's module, outside ``build`` (see ``Proxy``): attributes
    and methods reach the tensor (``proxy.numpy()``, ``proxy.shape``); ``to(Tensor)`` gives it."""

    __slots__ = ()

    def __getattr__(self, name):
        return getattr(self._origin, name)

    def numpy(self):
        return self._origin.numpy()


def _scoped(path):
    """The ``Module._graph_call`` that nn.Graph installs while tracing: the call under
    ``jax.named_scope(path)``, so the HLO names each op's module (``Graph.memory_report``)."""

    def call(module, args, kwargs):
        object.__delattr__(module, "_graph_call")  # the inner call runs the module itself
        try:
            with jax.named_scope(path):
                return module(*args, **kwargs)
        finally:
            object.__setattr__(module, "_graph_call", call)

    return call


def _checkpointer(name, policy=True):
    """The ``Module._graph_call`` that nn.Graph installs on checkpointed modules while tracing;
    ``policy``: True (recompute everything) or what ``fjax.utils.checkpoint.resolve_policy`` takes."""
    from ..utils.checkpoint import recompute, resolve_policy

    resolved = None if policy is True else resolve_policy(policy)

    def call(module, args, kwargs):
        object.__delattr__(module, "_graph_call")  # the inner call runs the module itself
        try:
            with jax.named_scope(name):
                return _checkpointed_call(module, name, args, kwargs, functools.partial(recompute, policy=resolved))
        finally:
            object.__setattr__(module, "_graph_call", call)

    return call


def _checkpointed_call(module, name, args, kwargs, remat):
    """Run ``module`` as one tape node whose VJP recomputes the forward (``remat(pure)``:
    ``fjax.utils.checkpoint.recompute`` at the module's policy)."""
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
            out_tree.append((otree, [None if isinstance(x, Tensor) else x for x in flat]))  # non-Tensors pass as-is
            return tuple(x._data for x in flat if isinstance(x, Tensor)) + tuple(b._data for b in buffers)
        finally:
            for t, data, node, rg in saved:
                t._data, t._node, t._requires_grad = data, node, rg

    results = call_pure(f"checkpoint[{name}]", remat(pure, fixed=len(params)), params + [leaves[i] for i in tensor_idx])
    results = results if isinstance(results, tuple) else (results,)
    n_out = len(results) - len(buffers)
    for b, r in zip(buffers, results[n_out:]):
        b._data = r._data
    otree, statics = out_tree[-1]
    tensors = iter(results[:n_out])
    return jax.tree_util.tree_unflatten(otree, [next(tensors) if s is None else s for s in statics])
