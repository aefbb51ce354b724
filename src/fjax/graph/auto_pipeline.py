"""A mesh configuration's ``pipe`` axis over a plain model: nn.Graph finds the repeated blocks.

With ``config.set_mesh({"mesh": {"pipe": S, ...}, "pipeline": {...}})`` and no ``set_stage`` or
``PipelineStack``, ``plan(graph)`` looks through every ``nn.Sequential`` and ``nn.ModuleList`` of
the graph's modules for the run of consecutive children that repeats a unit of ``period``
children (a GPT's ``ModuleList`` of blocks: period 1; ``Sequential(Linear, Tanh, Linear, Tanh,
...)``: period 2) built alike (same classes, parameter and buffer names, shapes and dtypes,
same public attributes, no hooks) and picks the run holding the most parameter elements.

While the step traces, ``AutoPipeline.installed()`` replaces the run's modules' calls: the first
module of the first unit runs the whole run as ``distributed.pipeline.run_units`` (the units'
tensors stacked inside the step, split over the pipe axis, the schedule and micro-batches of
the configuration's ``"pipeline"`` entry) and returns the last unit's output; every later
module of the run checks that it is called next, on the previous one's output, and passes it
on. So the run must be called in order, each module on the previous one's output (as
``Sequential`` does and ``for block in self.blocks: x = block(x)`` does), and the outputs of
its inner modules exist only for the next module (reading one otherwise raises, ``_Inner``). The parameters stay
the modules' own: state_dict, ``.grad`` and optimizer state keep their per-block names.
"""

from __future__ import annotations

import contextlib
import math
import warnings

from ..distributed.strategy import PipelineParallel
from ..errors import OpError


def _signature(module) -> tuple:
    """What must match for two modules to be stacked: classes, tensor names/shapes/dtypes and
    public attributes of every submodule; a module with hooks is unique (never stacked)."""
    subs = []
    for name, m in module.named_modules():
        d = m.__dict__
        if any(d.get(h) for h in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")):
            return (id(module),)
        attrs = tuple(sorted((k, repr(v)) for k, v in d.items() if not k.startswith("_")))
        subs.append((name, type(m), attrs))
    params = tuple((n, tuple(p.shape), str(p.dtype), p.requires_grad) for n, p in module.named_parameters())
    buffers = tuple((n, tuple(b.shape), str(b.dtype)) for n, b in module.named_buffers())
    return tuple(subs), params, buffers


def _size(modules) -> int:
    return sum(math.prod(p.shape) for m in modules for p in m.parameters())


def _runs(container) -> list:
    """``(elements, children, start, period, units)`` of every run of 2 or more repeated units."""
    children = list(container)
    sigs = [_signature(c) for c in children]
    n, out = len(children), []
    for period in range(1, n // 2 + 1):
        start = 0
        while start + 2 * period <= n:
            unit = sigs[start : start + period]
            end = start + period
            while end + period <= n and sigs[end : end + period] == unit:
                end += period
            members = children[start:end]
            if end - start >= 2 * period and len({id(c) for c in members}) == len(members) and _size(members):
                units = [children[i : i + period] for i in range(start, end, period)]
                out.append((_size(members), end - start, start, period, units))
            start += 1
    return out


def find(graph):
    """The run to pipeline: ``(container path, container, start, period, units)``, or None."""
    from ..nn.containers import ModuleList, Sequential

    best, seen = None, set()
    for attr, module in graph._modules.items():
        for sub_name, sub in module.named_modules():
            if id(sub) in seen or not isinstance(sub, (Sequential, ModuleList)):
                continue
            seen.add(id(sub))
            path = f"{attr}.{sub_name}" if sub_name else attr
            for size, count, start, period, units in _runs(sub):
                rank = (size, count, bool(list(units[0][0].parameters())), -start)
                if best is None or rank > best[0]:
                    best = (rank, (path, sub, start, period, units))
    return None if best is None else best[1]


class _Inner:
    """The value of an inner module's output of a pipelined run: reading it raises."""

    def __init__(self, what):
        self.what = what

    def _fail(self, *_):
        raise OpError(
            f"{self.what} is not computed: only the next module of the run may take it (the pipeline "
            "computes the run's last output). Use a module's output elsewhere only outside a pipe axis"
        )

    shape = dtype = ndim = weak_type = aval = property(_fail)
    __jax_array__ = __array__ = _fail


class AutoPipeline:
    """The pipelined run of one compiled step (see the module docstring)."""

    def __init__(self, graph, mesh, path, container, start, period, units):
        self.graph, self.mesh = graph, mesh
        pp = _settings(mesh)
        self.axis, self.schedule, self.virtual_stages = pp.axis, pp.schedule, pp.virtual_stages
        self.microbatches = pp.microbatches or 1
        self.units, self.modules = units, [m for u in units for m in u]
        names = list(container._modules)[start : start + len(self.modules)]  # "0", "1", ... or Sequential's keys
        self.paths = [f"{path}.{n}" for n in names]
        kinds = "+".join(type(m).__name__ for m in units[0])
        self.where = f"'{self.paths[0]}'..'{self.paths[-1]}' ({len(units)} x {kinds})"
        self.name = f"nn.Graph {graph.name}: the pipelined layers {self.where}"
        self.next, self.last, self.out, self.inside, self.ran = 0, None, None, False, False

    def _run(self, x):
        from ..distributed.pipeline import run_units

        return run_units(self.units, x, self.mesh.mesh, microbatches=self.microbatches, axis=self.axis,
                         schedule=self.schedule, virtual_stages=self.virtual_stages, name=self.name,
                         around=self._inside)  # fmt: skip

    @contextlib.contextmanager
    def _inside(self):
        """While the pipeline traces a layer (in the forward, or later in the backward)."""
        before, self.inside = self.inside, True
        try:
            yield
        finally:
            self.inside = before

    def _call(self, k, module, args, kwargs, own):
        from ..tensor import Tensor

        if self.inside:  # the pipeline's layers run the first unit's modules themselves
            return own(module, args, kwargs)
        where = f"nn.Graph {self.graph.name}: '{self.paths[k]}' (pipelined over the pipe axis)"
        if len(args) != 1 or kwargs or not isinstance(args[0], Tensor):
            raise OpError(f"{where} must be called on one tensor, module(h) -> h; got {len(args)} positional and "
                          f"{len(kwargs)} keyword argument(s)")  # fmt: skip
        if k != self.next:
            raise OpError(
                f"{where} is called out of order: the run {self.where} must be called in order, each module on "
                f"the previous one's output; expected '{self.paths[self.next]}' next"
            )
        if k == 0:
            self.out, self.ran = self._run(args[0]), True
        elif args[0] is not self.last:
            raise OpError(
                f"{where} is called on a tensor that is not '{self.paths[k - 1]}''s output; the run {self.where} "
                "must be called in order, each module on the previous one's output"
            )
        self.next = (k + 1) % len(self.modules)
        if self.next == 0:
            self.last = self.out
            return self.out
        # an inner module's output does not exist (the run computes the last one only): a
        # tensor that only the next module takes, and that raises if anything else reads it
        self.last = Tensor._wrap(_Inner(f"{where}: its output inside the pipelined run {self.where}"))
        return self.last

    def finish(self) -> None:
        """After ``build``: the run must have run, and run to its end."""
        if self.next:
            raise OpError(
                f"{self.name}: build stopped after '{self.paths[self.next - 1]}'; the whole run must be called "
                "in order, each module on the previous one's output"
            )
        if not self.ran:
            raise OpError(f"{self.name}: build never called '{self.paths[0]}', so nothing ran over the pipe axis")

    @contextlib.contextmanager
    def installed(self):
        """While the step traces: the run's modules' calls replaced (see ``_call``)."""
        saved = [(m, m.__dict__.get("_graph_call")) for m in self.modules]
        self.next, self.last, self.ran = 0, None, False

        def make(k, previous):
            def own(module, args, kwargs):  # the module's own call (the step's named scope, if any)
                try:
                    if previous is not None:
                        return previous(module, args, kwargs)  # it puts itself back: ``call`` goes back below
                    object.__delattr__(module, "_graph_call")
                    return module(*args, **kwargs)
                finally:
                    object.__setattr__(module, "_graph_call", call)

            def call(module, args, kwargs):
                return self._call(k, module, args, kwargs, own)

            return call

        try:
            for k, (m, previous) in enumerate(saved):
                object.__setattr__(m, "_graph_call", make(k, previous))
            yield self
        finally:
            for m, previous in saved:
                if previous is None:
                    m.__dict__.pop("_graph_call", None)
                else:
                    object.__setattr__(m, "_graph_call", previous)


def _settings(mesh) -> PipelineParallel:
    """The configuration's ``PipelineParallel`` (a pipe axis alone: the defaults)."""
    return mesh.strategy(PipelineParallel) or PipelineParallel()


def plan(graph, warn: bool = False) -> AutoPipeline | None:
    """The run a mesh configuration's pipe axis pipelines (None without a pipe axis of size > 1,
    or when the graph has ``set_stage`` stages or a ``PipelineStack``); raises naming the modules
    and numbers when there is none to pipeline or it cannot split. ``warn``: warn about one
    micro-batch (the step being compiled)."""
    from ..distributed.pipeline import PipelineStack, check_split
    from . import stages as _stages

    mesh = graph.config.mesh
    axis = "pipe" if mesh is None else _settings(mesh).axis
    if mesh is None or mesh.axes.get(axis, 1) == 1 or _stages._staged(graph):
        return None
    if any(isinstance(m, PipelineStack) for mod in graph._modules.values() for m in mod.modules()):
        return None
    S = mesh.axes[axis]
    found = find(graph)
    if found is None:
        raise OpError(
            f"nn.Graph {graph.name}: the mesh's pipe axis {axis!r} has {S} stages, but no nn.Sequential or "
            "nn.ModuleList of the graph's modules holds 2 or more consecutive blocks built alike (same class, "
            "parameter names, shapes and dtypes, buffers, attributes); give the model such a stack, or set "
            "stages with set_stage, or wrap the blocks in PipelineStack"
        )
    auto = AutoPipeline(graph, mesh, *found)
    V = (2 if auto.virtual_stages is None else int(auto.virtual_stages)) if auto.schedule == "interleaved" else 1
    check_split(auto.name, len(auto.units), S, V)
    if warn and auto.microbatches == 1:
        warnings.warn(
            f"{auto.name} run over {S} pipeline stages with 1 micro-batch, one stage at a time; set "
            f'"pipeline": {{"microbatches": {2 * S}}} in the mesh configuration (at least the number of stages) so '
            "that micro-batches fill the pipeline (the gradient accumulation steps of "
            "config.set_gradient_accumulation_steps run one after another, each through the whole pipeline)",
            stacklevel=3,
        )
    return auto
