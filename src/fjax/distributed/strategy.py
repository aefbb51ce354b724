"""Sharding strategies: data parallel, ZeRO, tensor parallel, pipeline parallel and explicit rules,
each one small frozen dataclass (a hashable value) acting on its own mesh axis.

A ``MeshConfig`` (``distributed/mesh.py``) is a mesh (axis name -> size) and a tuple of these; nn.Graph,
``MeshConfig.sbp`` (a parameter's OneFlow sbp tuple) and ``shard_module`` read the shardings the
strategies compose. Each strategy implements the hooks of ``Strategy`` it needs; every hook gets
the mesh's ``axes`` and the spec the strategies before it gave (one mesh-axis name or None per
tensor dim), and returns the new spec:

- ``param_spec(axes, name, shape, spec)``: where a parameter is split while the step computes
  (``spec`` is None while no strategy placed it: the first one to place it wins; unplaced
  parameters replicate);
- ``storage``: where it lives between steps; ``optimizer_state``: where its optimizer state lives;
  ``gradient``: where its gradient is reduced to before the update (None: left to XLA);
- ``batch(axes, shape, spec)``: an input's sharding (starts replicated);
- ``activation(axes, name, shape, spec, where)``: inside nn.Graph, the sharding the input
  (``where="in"``, its first tensor argument) or the output (``"out"``) of the module ``name`` is
  constrained to (starts None: no constraint; the batch dim then follows ``batch``);
- ``check(axes)``: raise when the mesh lacks an axis the strategy names.

Strategies run in ``order`` (explicit ``Rules`` first, then ``TensorParallel``, ``DataParallel``,
``ZeRO``, ``PipelineParallel``, then new ones in the order given), so the same strategies give the
same configuration and the same nn.Graph cache key in any order.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field

from ..errors import OpError


def _axis_error(strategy, axis, axes) -> OpError:
    return OpError(f"mesh config: {strategy!r} names mesh axis {axis!r}; the mesh has {list(axes)}")


class Strategy:
    """The hooks a sharding strategy may implement (each default leaves the spec as it is).

    Example:
        >>> from fjax.distributed.strategy import Strategy
        >>> Strategy().storage({"data": 2}, "w", (4,), (None,))
        (None,)
    """

    order = 50  # where it runs among the others (see the module docstring)
    constrains_activations = False  # True when ``activation`` may constrain (nn.Graph then asks it)

    def axes_used(self) -> tuple:
        return ()

    def check(self, axes: dict) -> None:
        for axis in self.axes_used():
            if axis not in axes:
                raise _axis_error(self, axis, axes)

    def param_spec(self, axes: dict, name: str, shape: tuple, spec):
        return spec

    def storage(self, axes: dict, name: str, shape: tuple, spec: tuple) -> tuple:
        return spec

    def optimizer_state(self, axes: dict, name: str, shape: tuple, spec: tuple) -> tuple:
        return spec

    def gradient(self, axes: dict, name: str, shape: tuple, spec: tuple):
        return None

    def batch(self, axes: dict, shape: tuple, spec: tuple) -> tuple:
        return spec

    def activation(self, axes: dict, name: str, shape: tuple, spec, where: str):
        return spec


def _spec(owner: str, pattern: str, spec) -> tuple:
    if isinstance(spec, str) or not isinstance(spec, (list, tuple)):
        raise OpError(
            f"mesh config: {owner} rule {pattern!r}: expected a list of mesh-axis names or None, got {spec!r}"
        )
    for axis in spec:
        if axis is not None and not isinstance(axis, str):
            raise OpError(f"mesh config: {owner} rule {pattern!r}: {axis!r} is not a mesh-axis name or None")
    return tuple(spec)


def _first_match(rules: tuple, name: str):
    for pattern, spec in rules:
        if fnmatch.fnmatchcase(name, pattern):
            return spec
    return None


@dataclass(frozen=True)
class Rules(Strategy):
    """Explicit per-parameter specs: parameter-name glob -> one mesh-axis name (or None) per dim;
    the first matching glob wins, before every other strategy.

    Example:
        >>> from fjax.distributed.strategy import Rules
        >>> Rules({"*.embed.weight": [None, "model"]}).rules
        (('*.embed.weight', (None, 'model')),)
    """

    rules: tuple = ()
    order = 0

    def __post_init__(self):
        pairs = self.rules.items() if isinstance(self.rules, dict) else self.rules
        object.__setattr__(self, "rules", tuple((str(p), _spec("Rules", p, s)) for p, s in pairs))

    def axes_used(self) -> tuple:
        return tuple(dict.fromkeys(a for _, spec in self.rules for a in spec if a is not None))

    def check(self, axes: dict) -> None:
        for pattern, spec in self.rules:
            for axis in spec:
                if axis is not None and axis not in axes:
                    raise OpError(f"mesh config: rule {pattern!r} names axis {axis!r}; the mesh has {list(axes)}")

    def param_spec(self, axes, name, shape, spec):
        return spec if spec is not None else _first_match(self.rules, name)


def _globs(kind: str, value) -> tuple:
    value = (value,) if isinstance(value, str) else tuple(value)
    for v in value:
        if not isinstance(v, str):
            raise OpError(f"mesh config: TensorParallel {kind}: expected module-name globs, got {v!r}")
    return value


@dataclass(frozen=True)
class TensorParallel(Strategy):
    """Megatron-style tensor parallelism over ``axis``: ``column`` modules (a Linear's weight
    ``(out, in)``) split ``out`` with their bias, ``row`` modules split ``in`` (module-name globs).

    ``sequence_parallel=True`` is Megatron's sequence parallelism: inside nn.Graph the output of
    each ``row`` module, ``(batch, seq, ...)``, is constrained to be split along ``seq`` over
    ``axis`` (when it divides) and the input of each ``column`` module to hold the whole
    sequence, so XLA reduce-scatters the row output instead of all-reducing it (XLA:CPU
    all-reduces and slices), runs what follows (residual adds, norms, dropout) on a piece of the
    sequence, and all-gathers the sequence before the next column module.

    Example:
        >>> from fjax.distributed.strategy import TensorParallel
        >>> tp = TensorParallel(column=["*.fc1"], row=["*.fc2"])
        >>> tp.param_spec({"model": 2}, "m.fc1.weight", (8, 4), None), tp.param_spec({"model": 2}, "m.fc2.weight", (4, 8), None)
        (('model', None), (None, 'model'))
    """  # noqa: E501

    column: tuple = ()
    row: tuple = ()
    axis: str = "model"
    sequence_parallel: bool = False
    rules: tuple = field(init=False, repr=False, compare=False)
    order = 10

    def __post_init__(self):
        object.__setattr__(self, "column", _globs("column", self.column))
        object.__setattr__(self, "row", _globs("row", self.row))
        a = self.axis
        rules = [r for p in self.column for r in ((f"{p}.weight", (a, None)), (f"{p}.bias", (a,)))]
        rules += [(f"{p}.weight", (None, a)) for p in self.row]
        object.__setattr__(self, "rules", tuple(rules))

    def axes_used(self) -> tuple:
        return (self.axis,)

    def param_spec(self, axes, name, shape, spec):
        return spec if spec is not None else _first_match(self.rules, name)

    @property
    def constrains_activations(self) -> bool:
        return self.sequence_parallel

    def activation(self, axes, name, shape, spec, where):
        if not self.sequence_parallel or spec is not None or len(shape) < 3 or shape[1] % axes[self.axis]:
            return spec
        if _first_match(tuple((p, True) for p in (self.row if where == "out" else self.column)), name) is None:
            return spec
        if where == "in":  # a column module's input: the whole sequence (all-gathered)
            return (None,) * len(shape)
        return (None, self.axis) + (None,) * (len(shape) - 2)  # a row module's output: reduce-scattered


@dataclass(frozen=True)
class DataParallel(Strategy):
    """Inputs split on dim 0 over ``axis`` (replicated when it does not divide); XLA all-reduces
    the gradients of parameters replicated over it.

    Example:
        >>> from fjax.distributed.strategy import DataParallel
        >>> DataParallel().batch({"data": 4}, (8, 3), ()), DataParallel().batch({"data": 4}, (6, 3), ())
        (('data',), ())
    """

    axis: str = "data"
    order = 20

    def axes_used(self) -> tuple:
        return (self.axis,)

    def batch(self, axes, shape, spec):
        if not shape or shape[0] % axes[self.axis]:
            return spec
        return (self.axis, *tuple(spec)[1:])


@dataclass(frozen=True)
class ZeRO(Strategy):
    """ZeRO over ``axis``: stage 1 shards optimizer state, 2 also the gradients, 3 also the
    parameters (OneFlow's ``enable_zero``), each on its first free dim the axis divides; tensors
    with fewer than ``min_size`` elements stay whole. XLA inserts the reduce-scatters and all-gathers.

    Example:
        >>> from fjax.distributed.strategy import ZeRO
        >>> ZeRO(3).storage({"data": 4}, "w", (8, 6), (None, None)), ZeRO(1).storage({"data": 4}, "w", (8, 6), (None, None))
        (('data', None), (None, None))
    """  # noqa: E501

    stage: int = 1
    min_size: int = 0
    axis: str = "data"
    order = 30

    def __post_init__(self):
        if self.stage not in (1, 2, 3) or isinstance(self.stage, bool):
            raise OpError(f"mesh config: ZeRO stage must be 1, 2 or 3, got {self.stage!r}")
        if not isinstance(self.min_size, int) or isinstance(self.min_size, bool) or self.min_size < 0:
            raise OpError(f"mesh config: ZeRO min_size must be an int >= 0, got {self.min_size!r}")

    def axes_used(self) -> tuple:
        return (self.axis,)

    def _shard(self, axes, shape, spec) -> tuple:
        """``spec`` plus the axis on the first free dim it divides."""
        if self.axis in spec or math.prod(shape) < self.min_size:
            return spec
        for d, (dim, axis) in enumerate(zip(shape, spec)):
            if axis is None and dim > 0 and dim % axes[self.axis] == 0:
                return spec[:d] + (self.axis,) + spec[d + 1 :]
        return spec

    def storage(self, axes, name, shape, spec):
        return self._shard(axes, shape, spec) if self.stage >= 3 else spec

    def optimizer_state(self, axes, name, shape, spec):
        return self._shard(axes, shape, spec)

    def gradient(self, axes, name, shape, spec):
        return self._shard(axes, shape, spec) if self.stage >= 2 else None


SCHEDULES = ("gpipe", "1f1b", "gpipe_table", "interleaved")


@dataclass(frozen=True)
class PipelineParallel(Strategy):
    """The ``axis`` mesh axis runs the model's repeated blocks as pipeline stages (nn.Graph finds
    them: ``graph/auto_pipeline.py``), with ``schedule`` over ``microbatches`` micro-batches (None:
    1, with a warning) and ``virtual_stages`` per device (interleaved; None: 2).

    Example:
        >>> from fjax.distributed.strategy import PipelineParallel
        >>> PipelineParallel("1f1b", microbatches=4)
        PipelineParallel(schedule='1f1b', microbatches=4, virtual_stages=None, axis='pipe')
    """

    schedule: str = "gpipe"
    microbatches: int | None = None
    virtual_stages: int | None = None
    axis: str = "pipe"
    order = 40

    def __post_init__(self):
        for k in ("microbatches", "virtual_stages"):
            v = getattr(self, k)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise OpError(f"mesh config: pipeline {k} must be an int >= 1, got {v!r}")
        if self.schedule not in SCHEDULES:
            raise OpError(f"mesh config: pipeline schedule {self.schedule!r} is not one of {list(SCHEDULES)}")

    def axes_used(self) -> tuple:
        return (self.axis,)

    def check(self, axes: dict) -> None:
        if self.axis not in axes:
            raise OpError(
                f"mesh config: the pipeline settings ({self!r}) need a {self.axis!r} mesh axis; the mesh has "
                f"{list(axes)}"
            )
