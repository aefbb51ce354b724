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
- ``compile.py``, ``config.py``, ``modules.py``: stage timing, ``GraphConfig``, ``GraphModule``.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..profiler import _state as _pstate
from ..profiler import span
from ..tensor import Tensor
from . import compile as _compile
from .config import GraphConfig
from .executable import Executables
from .modules import GraphModule, _ModuleProxy


class Graph:
    """OneFlow's ``nn.Graph``: subclass, assign modules in ``__init__``, override ``build``.

    Each call runs ``build`` as one compiled XLA step (for a training graph: forward, backward,
    gradient clipping and every added optimizer's update), compiled once per input signature.

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

    def __init__(self):
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_optimizers", [])
        object.__setattr__(self, "_lr_schedulers", [])
        object.__setattr__(self, "config", GraphConfig())
        object.__setattr__(self, "name", f"{type(self).__name__}_{id(self) & 0xFFFF:x}")
        object.__setattr__(self, "_debug_level", _compile.debug_level_from_env())
        object.__setattr__(self, "_module_options", {})
        object.__setattr__(self, "_executables", Executables(self))

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
        return bool(self._executables.cache)

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

    # -- calling --------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _pstate.on:  # one profiler event per step; compiles nest inside it
            with span(f"nn.Graph {self.name}", "graph"):
                return self._executables.call(args, kwargs)
        return self._executables.call(args, kwargs)

    def warmup(self, *example_inputs, threads: int = 4) -> None:
        """Compile several input signatures ahead of use; XLA compiles run in parallel threads.

        Each example is a tuple of call arguments (Tensors; values are not used).
        """
        examples = [example if isinstance(example, tuple) else (example,) for example in example_inputs]
        self._executables.warmup(examples, threads)

    # -- reports --------------------------------------------------------------------------
    def compile_report(self) -> list[dict]:
        """Per compiled signature: seconds and RSS after trace, lower, compile and first run."""
        return [t.as_dict() for t in self._executables.reports]

    def memory_report(self) -> dict:
        """XLA's memory analysis (bytes) of the most recently used compiled step."""
        return _compile.memory_report(self._executables.last("memory_report").compiled)

    def stablehlo(self) -> str:
        """The StableHLO text of the most recently used compiled step."""
        return self._executables.last("stablehlo").lowered.as_text()

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
        for key, entry in self._executables.cache.items():
            ins = ", ".join(f"{tuple(s[0])}:{np.dtype(s[1]).name}" for s in key[1] if isinstance(s, tuple))
            n_out = sum(1 for s in entry.record["out_static"] if s is None)
            lines.append(f"  (compiled): inputs [{ins}] -> {n_out} tensor output(s)")
        lines.append(")")
        return "\n".join(lines)
