"""nn.Graph: OneFlow's static graph as one ``jax.jit`` of the eager code in ``build``.

The user-facing ``Graph`` class lives here: module and optimizer registration, ``config``,
``debug``, ``warmup``, the reports, ``state_dict`` and the save/load entry points. The work is
elsewhere in ``fjax.graph``:

- ``state.py``: ``GraphState``, the graph's state in the order the step takes it (the protocol
  for code outside this package, e.g. ``fjax.distributed.checkpoint``), and ``OptimizersNow``;
- ``step.py``: ``Step``, ``build`` traced into the pure
  ``step(state, opt_states, rng, hyper, inputs) -> (state', opt_states', outputs)``;
- ``executable.py``: ``Executables``, the compiled steps cached by input signature (state
  buffers donated), the one compile path (trace, lower, XLA compile) and the call;
- ``export.py``: ``save``/``load`` of a compiled step with ``jax.export``;
- ``compile.py``, ``config.py``, ``modules.py``: stage timing, ``GraphConfig``, ``GraphModule``;
- ``memory.py``: the attributed ``memory_report``, ``config.memory_budget``'s choice of blocks to recompute.
"""

from __future__ import annotations

import functools
import weakref
from collections import OrderedDict

import numpy as np

from .. import _lazy, _memory
from ..profiler import _state as _pstate
from ..profiler import span
from ..tensor import Tensor
from . import compile as _compile
from .config import GraphConfig
from .executable import Executables
from .modules import GraphModule, ProxyModule, _check_debug_args


class _DynamicInputShape:
    """``nn.Graph.with_dynamic_input_shape``: on the class, OneFlow's decorator of ``__init__``
    (``@nn.Graph.with_dynamic_input_shape(size=4)``); on an instance, a method returning it.
    Either way the graph keeps up to ``size`` compiled input signatures (an LRU; the first is
    never evicted), so inputs of changing shapes compile once per shape. ``enable_shared``
    (OneFlow's sharing of one plan between shapes) is accepted: every signature's step reads
    the same state tensors.

    Example:
        >>> graph = nn.Graph.trace(lambda x: x.sum())
        >>> graph.with_dynamic_input_shape(size=2) is graph, graph.config.cache_size
        (True, 2)
    """

    def __get__(self, graph, cls=None):
        if graph is None:
            return _dynamic_input_shape_decorator

        def with_dynamic_input_shape(size: int = 10, enable_shared: bool = True):
            _set_cache_size(graph, size)
            return graph

        return with_dynamic_input_shape


def _set_cache_size(graph, size) -> None:
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"nn.Graph.with_dynamic_input_shape: size must be an int >= 1, got {size!r}")
    graph.config.cache_size = size


def _dynamic_input_shape_decorator(*, size: int = 10, enable_shared: bool = True):
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"nn.Graph.with_dynamic_input_shape: size must be an int >= 1, got {size!r}")

    def decorate(init):
        @functools.wraps(init)
        def graph_init(self, *args, **kwargs):
            init(self, *args, **kwargs)
            _set_cache_size(self, size)

        return graph_init

    return decorate


_lazy_depth = [0]  # > 0 while some graph's build runs: OneFlow's lazy mode (_oneflow_internal.lazy_mode)


class Graph:
    """OneFlow's ``nn.Graph``: subclass, assign modules in ``__init__``, override ``build``.

    Each call runs ``build`` as one compiled XLA step (for a training graph: forward, backward,
    gradient clipping and every added optimizer's update), compiled once per input signature.

    Args:
        enable_get_runtime_state_dict: not supported: True raises NotImplementedError (default False).
        debug_v_level: if not -1, call ``debug`` with this level at construction (default -1).
        debug_ranks: ``debug``'s ``ranks`` (default None: rank 0).
        debug_max_py_stack_depth: ``debug``'s ``max_py_stack_depth`` (default 2).
        debug_only_user_py_stack: ``debug``'s ``only_user_py_stack`` (default True).
        debug_op_repr_with_py_stack: ``debug``'s ``op_repr_with_py_stack`` (default False).

    Example:

        >>> model = nn.Linear(4, 2)
        >>> optimizer = fjax.optim.SGD(model.parameters(), lr=0.1)
        >>> class TrainGraph(nn.Graph):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.model = model
        ...         self.add_optimizer(optimizer)
        ...
        ...     def build(self, x, y):
        ...         loss = F.mse_loss(self.model(x), y)
        ...         loss.backward()
        ...         return loss
        >>> graph = TrainGraph()
        >>> x, y = fjax.randn(8, 4), fjax.randn(8, 2)
        >>> first = graph(x, y)  # compiles, then runs: the optimizer updated the model
        >>> second = graph(x, y)  # the same signature: the compiled step runs again
        >>> bool(second < first), graph.is_compiled, len(graph.compile_report())
        (True, True, 1)
    """

    _child_init_cnt: dict = {}  # per class name: how many graphs of it were made (OneFlow's graph names)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is not None and not getattr(build, "_fjax_marks_building", False):

            @functools.wraps(build)
            def marked_build(self, *args, **kwargs):
                # inside build (traced, or called directly) module proxies give tensors, as OneFlow's do
                object.__setattr__(self, "_building", self._building + 1)
                _lazy_depth[0] += 1
                try:
                    return build(self, *args, **kwargs)
                finally:
                    _lazy_depth[0] -= 1
                    object.__setattr__(self, "_building", self._building - 1)

            marked_build._fjax_marks_building = True
            cls.build = marked_build

    def __init__(
        self,
        *,
        enable_get_runtime_state_dict: bool = False,
        debug_v_level: int = -1,
        debug_ranks=None,
        debug_max_py_stack_depth: int = 2,
        debug_only_user_py_stack: bool = True,
        debug_op_repr_with_py_stack: bool = False,
    ):
        if enable_get_runtime_state_dict:
            raise NotImplementedError(
                "nn.Graph: enable_get_runtime_state_dict=True is not supported (runtime_state_dict is OneFlow's "
                "compiled-plan format); use graph.save(path) / nn.Graph.load(path) instead"
            )
        cls_name = type(self).__name__
        count = Graph._child_init_cnt.get(cls_name, 0)
        Graph._child_init_cnt[cls_name] = count + 1
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_optimizers", [])
        object.__setattr__(self, "_lr_schedulers", [])
        object.__setattr__(self, "config", GraphConfig())
        self.config._graph = weakref.ref(self)
        object.__setattr__(self, "name", f"{cls_name}_{count}")
        object.__setattr__(self, "_debug_level", _compile.debug_level_from_env())
        object.__setattr__(self, "_building", 0)  # > 0 while ``build`` is traced: proxies give tensors
        object.__setattr__(self, "_module_options", {})
        object.__setattr__(self, "_executables", Executables(self))
        if debug_v_level != -1:
            self.debug(
                debug_v_level,
                ranks=debug_ranks,
                max_py_stack_depth=debug_max_py_stack_depth,
                only_user_py_stack=debug_only_user_py_stack,
                op_repr_with_py_stack=debug_op_repr_with_py_stack,
            )

    # -- construction -------------------------------------------------------------------
    def __setattr__(self, name, value):
        from ..nn.module import Module
        from ..optim.optimizer import Optimizer

        if isinstance(value, Module):
            self._modules[name] = value
            object.__setattr__(self, name, ProxyModule(value, self, name))
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
        """Run ``optimizer`` (and step ``lr_sch``) after ``build`` on every call of this graph.

        Args:
            optimizer: an ``fjax.optim.Optimizer`` over the graph's modules' parameters.
            lr_sch: a scheduler of ``optimizer``, stepped after each call.
            is_sparse: OneFlow's sparse updates; not supported (``True`` raises).

        Example:
            >>> model = nn.Linear(2, 1)
            >>> opt = optim.SGD(model.parameters(), lr=0.1)
            >>> class Train(nn.Graph):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.model = model
            ...         self.add_optimizer(opt, lr_sch=optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5))
            ...
            ...     def build(self, x):
            ...         loss = self.model(x).sum()
            ...         loss.backward()
            ...         return loss
            >>> graph = Train()
            >>> _ = graph(fjax.ones(3, 2))
            >>> graph.training, opt.param_groups[0]["lr"]
            (True, 0.05)
        """
        from ..optim.lr_scheduler import LRScheduler
        from ..optim.optimizer import Optimizer

        if is_sparse:
            raise NotImplementedError("nn.Graph.add_optimizer: is_sparse=True is not supported")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"nn.Graph.add_optimizer: expected an fjax.optim.Optimizer, got {type(optimizer).__name__}")
        if lr_sch is not None:
            if not isinstance(lr_sch, LRScheduler):
                raise TypeError(f"nn.Graph.add_optimizer: lr_sch must be an LRScheduler, got {type(lr_sch).__name__}")
            if lr_sch.optimizer is not optimizer:
                raise ValueError("nn.Graph.add_optimizer: lr_sch's optimizer must be the optimizer added with it")
        self._optimizers.append(optimizer)
        if lr_sch is not None:
            self._lr_schedulers.append(lr_sch)

    def _options_for(self, module, name) -> GraphModule:
        entry = self._module_options.get(id(module))
        if entry is None:
            entry = self._module_options[id(module)] = (module, GraphModule(name))
            if self._debug_level >= 0:
                entry[1].debug(min(self._debug_level, 3))
        return entry[1]

    def build(self, *args, **kwargs):
        """The step each call runs; a subclass overrides it (calling ``loss.backward()`` when it trains).

        Args:
            args, kwargs: the arguments the graph is called with.

        Example:
            >>> class Double(nn.Graph):
            ...     def build(self, x):
            ...         return x * 2
            >>> Double()(fjax.ones(2))
            tensor([2., 2.], dtype=fjax.float32)
        """
        raise NotImplementedError(f"nn.Graph {type(self).__name__} must override build(self, *args)")

    @property
    def training(self) -> bool:
        """Whether the graph trains: ``True`` once an optimizer was added with ``add_optimizer``.

        Example:
            >>> nn.Graph.trace(lambda x: x * 2).training
            False
        """
        return bool(self._optimizers)

    @property
    def is_compiled(self) -> bool:
        """Whether at least one input signature has been compiled.

        Example:
            >>> graph = nn.Graph.trace(lambda x: x * 2)
            >>> graph.is_compiled
            False
            >>> _ = graph(fjax.ones(2))
            >>> graph.is_compiled
            True
        """
        return bool(self._executables.cache)

    def debug(
        self,
        v_level: int = 0,
        *,
        ranks=None,
        max_py_stack_depth: int = 2,
        only_user_py_stack: bool = True,
        op_repr_with_py_stack: bool = False,
    ) -> None:
        """Log one line per compile stage (trace, lower, compile, first run) with seconds and RSS
        for ``v_level`` 0 to 3; ``v_level=-1`` turns it off. The level is also set on every
        module's ``GraphModule``.

        Args:
            v_level: the log level, 0 to 3; -1 turns logging off (default 0).
            ranks: the process ranks that log: an int, a list, or -1 for all (default None: rank 0).
            max_py_stack_depth: OneFlow's stack depth of op logs, an int >= 0; checked, otherwise unused (default 2).
            only_user_py_stack: OneFlow's stack filter of op logs; accepted, no effect (default True).
            op_repr_with_py_stack: OneFlow's op-log option; accepted, no effect (default False).

        Example:
            >>> graph = nn.Graph.trace(lambda x: x * 2)
            >>> graph.debug(-1)  # off; 0 to 3 log each compile stage
        """
        _check_debug_args(v_level, max_py_stack_depth)
        if ranks is None:
            ranks = [0]
        elif isinstance(ranks, int) and not isinstance(ranks, bool):
            ranks = [ranks]
        elif not isinstance(ranks, list):
            raise ValueError(f"nn.Graph.debug: ranks must be an int or a list of ints, got {ranks!r}")
        import jax

        if -1 in ranks or jax.process_index() in ranks:
            object.__setattr__(self, "_debug_level", v_level)
            for name, module in self._modules.items():
                for sub_name, sub in module.named_modules():
                    path = f"{name}.{sub_name}" if sub_name else name
                    self._options_for(sub, path).debug(v_level, max_py_stack_depth=max_py_stack_depth)

    with_dynamic_input_shape = _DynamicInputShape()

    @staticmethod
    def trace(func):
        """Turn a function of tensors into a graph (OneFlow's ``nn.Graph.trace``): calling the
        result runs ``func`` compiled, once per input signature.

        Args:
            func: a function of tensors, compiled once per input signature.

        Returns:
            A graph that, called with ``func``'s arguments, runs ``func`` compiled.

        Example::

            >>> @fjax.nn.Graph.trace
            ... def double(x):
            ...     return x * 2
            >>> double(fjax.tensor([1.0, 2.0]))
            tensor([2., 4.], dtype=fjax.float32)
        """
        import inspect

        if not inspect.isfunction(func):
            raise TypeError(f"nn.Graph.trace: expected a function, got {type(func).__name__}")

        def build(self, *args, **kwargs):
            return func(*args, **kwargs)

        cls = type(f"{func.__name__}_graph", (Graph,), {"build": build, "__doc__": func.__doc__})
        return cls()

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Modules' and optimizers' state dicts, keyed by attribute name / ``optimizer{i}``.

        Example:
            >>> class Eval(nn.Graph):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.model = nn.Linear(2, 2)
            ...
            ...     def build(self, x):
            ...         return self.model(x)
            >>> {name: list(sd) for name, sd in Eval().state_dict().items()}
            {'model': ['weight', 'bias']}
        """
        out = {name: m.state_dict() for name, m in self._modules.items()}
        for i, opt in enumerate(self._optimizers):
            out[f"optimizer{i}"] = opt.state_dict()
        return out

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> None:
        """Load a ``state_dict()`` of this graph into its modules and optimizers.

        Args:
            state_dict: module state dicts by attribute name, optimizer ones as ``optimizer{i}``.
            strict: whether a missing module or key raises.

        Example:
            >>> class Eval(nn.Graph):
            ...     def __init__(self, model):
            ...         super().__init__()
            ...         self.model = model
            ...
            ...     def build(self, x):
            ...         return self.model(x)
            >>> m1, m2 = nn.Linear(2, 2), nn.Linear(2, 2)
            >>> Eval(m2).load_state_dict(Eval(m1).state_dict())
            >>> bool((m2.weight == m1.weight).all())
            True
        """
        for name, m in self._modules.items():
            if name in state_dict:
                m.load_state_dict(state_dict[name], strict=strict)
            elif strict:
                raise KeyError(f"nn.Graph.load_state_dict: missing key {name!r}; have {sorted(state_dict)}")
        for i, opt in enumerate(self._optimizers):
            if f"optimizer{i}" in state_dict:
                opt.load_state_dict(state_dict[f"optimizer{i}"])

    # -- calling --------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        _lazy.flush()  # recorded eager ops may read state the step donates
        if _pstate.on:  # one profiler event per step; compiles nest inside it
            with span(f"nn.Graph {self.name}", "graph"):
                return self._executables.call(args, kwargs)
        if _memory.due():  # fjax.cuda.reset_peak_memory_stats asked for CPU peaks: sample after each step
            before = _memory.before_program()
            out = self._executables.call(args, kwargs)
            compiled = self._executables.last("__call__").compiled  # (and the bytes it allocated while it ran)
            _memory.program(compiled, compiled.runtime_executable().local_devices(), before)
            _memory.sample_armed()
            return out
        return self._executables.call(args, kwargs)

    def warmup(self, *example_inputs, threads: int = 4) -> None:
        """Compile several input signatures ahead of use; XLA compiles run in parallel threads.

        Each example is a tuple of call arguments (Tensors; values are not used).

        Args:
            example_inputs: one tuple of call arguments per signature (a lone tensor is a 1-tuple).
            threads: how many compiles run at once.

        Example:
            >>> graph = nn.Graph.trace(lambda x: x * 2)
            >>> graph.warmup((fjax.ones(2),), (fjax.ones(3),))
            >>> len(graph.compile_report())
            2
        """
        examples = [example if isinstance(example, tuple) else (example,) for example in example_inputs]
        self._executables.warmup(examples, threads)

    # -- reports --------------------------------------------------------------------------
    def compile_report(self) -> list[dict]:
        """Per compiled signature: seconds and RSS after trace, lower, compile and first run.

        Example:
            >>> graph = nn.Graph.trace(lambda x: x * 2)
            >>> _ = graph(fjax.ones(2))
            >>> sorted(graph.compile_report()[0])
            ['signature', 'stages']
        """
        return [t.as_dict() for t in self._executables.reports]

    def memory_report(self):
        """The most recently used compiled step's memory per device, attributed: a dict that
        prints as a table (``graph.memory.MemoryReport``).

        XLA's totals keep their keys (``argument_bytes``, ``output_bytes``, ``temp_bytes``,
        ``generated_code_bytes``, ``alias_bytes``); ``buckets`` splits their sum
        (``total_bytes``: arguments + outputs not written in place + temporaries) into
        parameters, buffers, optimizer state, inputs, other arguments, outputs, gradients, saved
        activations by module path (``activations: <path>``), backward, optimizer and other
        temporaries, and heap fragmentation; ``unattributed`` holds whatever could not be named.
        Also ``donated_bytes`` (state updated in place), ``host_offloaded_bytes``, ``peak_bytes``
        (the predicted peak: total + generated code), ``attributed_fraction``, ``devices`` (a
        sharded step's numbers are per device) and, with ``config.memory_budget``,
        ``checkpointing`` (the modules chosen for recomputation). See ``graph/memory.py``.

        Example:
            >>> model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
            >>> class Train(nn.Graph):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.model = model
            ...         self.add_optimizer(fjax.optim.Adam(model.parameters()))
            ...
            ...     def build(self, x):
            ...         loss = self.model(x).square().mean()
            ...         loss.backward()
            ...         return loss
            >>> graph = Train()
            >>> _ = graph(fjax.randn(64, 8))
            >>> report = graph.memory_report()
            >>> report["buckets"]["parameters"], report["buckets"]["optimizer state"]
            (1284, 2584)
            >>> report["attributed_fraction"] >= 0.99
            True
        """
        from .memory import report

        return report(self, self._executables.last("memory_report"))

    def stablehlo(self) -> str:
        """The StableHLO text of the most recently used compiled step.

        Example:
            >>> graph = nn.Graph.trace(lambda x: x * 2)
            >>> _ = graph(fjax.ones(2))
            >>> graph.stablehlo().startswith("module")
            True
        """
        return self._executables.last("stablehlo").lowered.as_text()

    def save(self, path: str) -> None:
        """Serialise the compiled step (``jax.export``) and its state, runnable without this code.

        The saved step runs without the value checks a graph defers to the host (index bounds of
        ``cross_entropy`` labels, embedding lookups, gathers and scatters): ``jax.export`` cannot
        serialise their callbacks. Out-of-range indices then give XLA's results (clamped reads,
        dropped writes) instead of an error; this graph itself keeps its checks.

        Args:
            path: the file to write; ``nn.Graph.load(path)`` reads it back.

        Example:
            >>> import os, tempfile
            >>> graph = nn.Graph.trace(lambda x: x * 2)
            >>> _ = graph(fjax.ones(2))
            >>> path = os.path.join(tempfile.mkdtemp(), "double")
            >>> graph.save(path)
            >>> nn.Graph.load(path)(fjax.tensor([1.0, 3.0]))
            tensor([2., 6.], dtype=fjax.float32)
        """
        from .export import save_graph

        save_graph(self, path)

    @staticmethod
    def load(path: str):
        """A callable that runs a graph saved with ``save`` (no model code needed).

        Args:
            path: a file written by ``Graph.save``.

        Example:
            >>> import os, tempfile
            >>> graph = nn.Graph.trace(lambda x: x + 1)
            >>> _ = graph(fjax.ones(2))
            >>> path = os.path.join(tempfile.mkdtemp(), "add_one")
            >>> graph.save(path)
            >>> nn.Graph.load(path)(fjax.zeros(2))
            tensor([1., 1.], dtype=fjax.float32)
        """
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
        for key, entry in self._executables.cache.items():
            ins = ", ".join(f"{tuple(s[0])}:{np.dtype(s[1]).name}" for s in key[1] if isinstance(s, tuple))
            n_out = sum(1 for s in entry.record["out_static"] if s is None)
            lines.append(f"  (compiled): inputs [{ins}] -> {n_out} tensor output(s)")
        lines.append(")")
        return "\n".join(lines)
