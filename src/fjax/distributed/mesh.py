"""Mesh configurations: a mesh (axis name -> size) and the sharding strategies over it; no model rewrite.

A configuration is a ``MeshConfig`` of strategy objects (``distributed/strategy.py``)::

    from fjax.distributed import DataParallel, MeshConfig, TensorParallel, ZeRO
    MeshConfig.of({"data": 4, "model": 2}, DataParallel(), ZeRO(1),
                  TensorParallel(column=["*.fc1", "*.qkv"], row=["*.fc2", "*.proj"]))

or the same as a dict or a JSON/YAML file, which builds those strategies::

    {"mesh": {"data": 4, "model": 2},
     "tensor_parallel": {"column": ["*.fc1", "*.qkv"], "row": ["*.fc2", "*.proj"]},
     "rules": {"*.embed.weight": [null, "model"]},
     "zero_stage": 1}

- ``mesh``: axis name -> size (the product is the number of devices used).
- ``rules`` (``Rules``): glob on the parameter's name (``module.sub.weight`` as the graph names it) ->
  one mesh-axis name (or null) per tensor dim. First match wins; unmatched params replicate.
- ``tensor_parallel`` (``TensorParallel``): Megatron-style shorthand. ``column`` modules (Linear:
  weight ``(out, in)``) split ``out`` over ``axis`` (default ``model``), with their bias; ``row``
  modules split ``in``; ``"sequence_parallel": true`` also splits the activations between them
  along the sequence (Megatron's sequence parallelism, see ``TensorParallel``).
- ``zero_stage`` (``ZeRO``): 1 shards optimizer state over ``data``, 2 also the gradients, 3 also the
  parameters (OneFlow's ``enable_zero``); XLA inserts the reduce-scatters and all-gathers.
- ``batch_axis`` (``DataParallel``, default ``data`` when the mesh has it): inputs are split on dim 0 over it.
- ``pipeline`` (``PipelineParallel``): how a ``pipe`` axis runs the model's repeated blocks, which
  nn.Graph finds by itself (``graph/auto_pipeline.py``): ``{"schedule": "gpipe" | "1f1b" |
  "gpipe_table" | "interleaved", "microbatches": M, "virtual_stages": V, "axis": "pipe"}``
  (defaults: gpipe, 1 micro-batch with a warning, V = 2 when interleaved, axis ``pipe``); a ``pipe``
  axis without these settings pipelines with the defaults.

A configuration is a value: ``key()`` (nn.Graph's compile key) is the mesh and the strategies, and
``replace``/``without`` give a new configuration (``graph.config.enable_zero`` swaps the ``ZeRO``).
``sbp(name, shape)`` says where a parameter lives as OneFlow's sbp tuple on ``placement``, and
``shard_module`` makes a module's parameters global tensors laid out so.

With several processes (``jax.distributed``), the graph places each process's parameters and
inputs with ``jax.device_put``, which assumes every process holds the same values: seed all
processes alike (inputs that differ per process should be made global first with
``Tensor.to_global``, which treats them as this process's piece).
"""

from __future__ import annotations

import builtins
import json
import math
import numbers
import os

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from ..errors import OpError
from .placement import placement as _placement
from .placement import sbp_of
from .strategy import DataParallel, PipelineParallel, Rules, Strategy, TensorParallel, ZeRO

_KEYS = {"mesh", "rules", "tensor_parallel", "zero_stage", "batch_axis", "type", "pipeline"}
_UNSET = object()


def _legacy(axes, rules, zero_stage, zero_min_size, batch_axis, pipeline) -> list:
    """The strategies of the keyword form ``MeshConfig(axes, rules, zero_stage, ...)``."""
    pipeline = dict(pipeline or {})
    unknown = set(pipeline) - {"schedule", "microbatches", "virtual_stages", "axis"}
    if unknown:
        raise OpError(f"mesh config: unknown pipeline keys {sorted(unknown)}")
    if zero_stage not in (0, 1, 2, 3) or isinstance(zero_stage, bool):
        raise OpError(f"mesh config: zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    out = [Rules(rules)] if rules else []
    if batch_axis is not None and batch_axis in axes:
        out.append(DataParallel(batch_axis))
    if zero_stage:
        out.append(ZeRO(zero_stage, int(zero_min_size)))
    if pipeline:
        out.append(PipelineParallel(**pipeline))
    return out


class MeshConfig:
    """A mesh and the sharding strategies over it (see the module docstring).

    ``MeshConfig.of(axes, *strategies)`` is the strategy form; ``MeshConfig(axes, rules=...,
    zero_stage=..., zero_min_size=..., batch_axis="data", type="cuda", pipeline=...)`` the keyword
    form (it builds the strategies), and ``MeshConfig(axes, strategies=[...])`` the two together.

    Example:
        >>> from fjax.distributed import DataParallel, MeshConfig, ZeRO
        >>> cfg = MeshConfig.of({"data": 1}, DataParallel(), ZeRO(2))
        >>> cfg.zero_stage, cfg.key() == MeshConfig.load({"mesh": {"data": 1}, "zero_stage": 2}).key()
        (2, True)
    """

    def __init__(self, axes: dict, rules=None, zero_stage=None, zero_min_size=None, batch_axis=_UNSET,
                 type: str = "cuda", pipeline=None, *, strategies=None):  # noqa: A002  # fmt: skip
        axes = dict(axes)
        for name, size in axes.items():
            if (
                not isinstance(name, str)
                or not isinstance(size, numbers.Integral)
                or isinstance(size, bool)
                or size < 1
            ):
                raise OpError(f"mesh config: mesh axes map names to sizes >= 1, got {name!r}: {size!r}")
        axes = {name: int(size) for name, size in axes.items()}
        legacy = (rules, zero_stage, zero_min_size, pipeline)
        if strategies is None:
            batch_axis = "data" if batch_axis is _UNSET else batch_axis
            strategies = _legacy(axes, rules, zero_stage or 0, zero_min_size or 0, batch_axis, pipeline)
        elif any(v is not None for v in legacy) or batch_axis is not _UNSET:
            raise OpError(
                "mesh config: give strategies= or the keywords rules/zero_stage/batch_axis/pipeline, not both"
            )
        strategies = tuple(strategies)
        for s in strategies:
            if not isinstance(s, Strategy):
                raise OpError(f"mesh config: {s!r} is not a sharding strategy (fjax.distributed.strategy)")
        kinds = [builtins.type(s) for s in strategies]
        if len(set(kinds)) != len(kinds):
            raise OpError(f"mesh config: one strategy of each kind, got {list(strategies)}")
        for s in strategies:
            s.check(axes)
        self.axes, self.type = axes, type
        self.strategies = tuple(sorted(strategies, key=lambda s: s.order))  # stable: same order, same key
        tp, pp = self.strategy(TensorParallel), self.strategy(PipelineParallel)
        if tp is not None and tp.sequence_parallel and axes.get("pipe" if pp is None else pp.axis, 1) > 1:
            raise NotImplementedError(
                f"mesh config: {tp!r} with a pipe axis: sequence parallelism inside a pipeline is not implemented"
            )
        n = math.prod(axes.values())
        self.placement = _placement(type, np.arange(n).reshape(tuple(axes.values())), tuple(axes))
        self.mesh = self.placement.mesh

    @classmethod
    def of(cls, axes: dict, *strategies: Strategy, type: str = "cuda") -> "MeshConfig":  # noqa: A002
        """The configuration of a mesh (axis name -> size) and strategies.

        Args:
            axes: mesh axis name -> size.
            *strategies: ``DataParallel``, ``ZeRO``, ``TensorParallel``, ``PipelineParallel``, ``Rules``...
            type: the devices, ``"cuda"`` or ``"cpu"``.

        Example:
            >>> from fjax.distributed import MeshConfig, TensorParallel
            >>> MeshConfig.of({"model": 1}, TensorParallel(column=["*.fc1"])).param_spec("m.fc1.weight", (4, 2))
            ('model', None)
        """
        return cls(axes, type=type, strategies=strategies)

    @classmethod
    def load(cls, source) -> "MeshConfig":
        """From a MeshConfig, a dict, or a path to a .json / .yaml / .yml file."""
        if isinstance(source, MeshConfig):
            return source
        if isinstance(source, (str, os.PathLike)):
            with open(source) as f:
                text = f.read()
            if str(source).endswith((".yaml", ".yml")):
                try:
                    import yaml
                except ImportError:
                    raise OpError(f"mesh config {source}: reading YAML needs PyYAML (pip install pyyaml)") from None
                source = yaml.safe_load(text)
            else:
                source = json.loads(text)
        if not isinstance(source, dict) or "mesh" not in source:
            raise OpError(f"mesh config: expected a dict with a 'mesh' entry (axis name -> size), got {source!r}")
        unknown = set(source) - _KEYS
        if unknown:
            raise OpError(f"mesh config: unknown keys {sorted(unknown)}")
        axes = dict(source["mesh"])
        tp = dict(source.get("tensor_parallel") or {})
        unknown = set(tp) - {"column", "row", "axis", "sequence_parallel"}
        if unknown:
            raise OpError(f"mesh config: unknown tensor_parallel keys {sorted(unknown)}")
        strategies = _legacy(axes, list(dict(source.get("rules", {})).items()), int(source.get("zero_stage", 0)), 0,
                             source.get("batch_axis", "data"), source.get("pipeline"))  # fmt: skip
        if tp:
            strategies.append(TensorParallel(**tp))
        return cls(axes, type=source.get("type", "cuda"), strategies=strategies)

    # -- the strategies -------------------------------------------------------------------
    def strategy(self, kind: type):
        """This configuration's strategy of class ``kind`` (None when it has none).

        Example:
            >>> from fjax.distributed import MeshConfig, ZeRO
            >>> MeshConfig.load({"mesh": {"data": 1}, "zero_stage": 3}).strategy(ZeRO)
            ZeRO(stage=3, min_size=0, axis='data')
        """
        return next((s for s in self.strategies if isinstance(s, kind)), None)

    def replace(self, *strategies: Strategy) -> "MeshConfig":
        """A new configuration with ``strategies`` in place of this one's of the same classes.

        Example:
            >>> from fjax.distributed import MeshConfig, ZeRO
            >>> MeshConfig.load({"mesh": {"data": 1}, "zero_stage": 1}).replace(ZeRO(3)).zero_stage
            3
        """
        kinds = {type(s) for s in strategies}
        kept = [s for s in self.strategies if type(s) not in kinds]
        return MeshConfig(self.axes, type=self.type, strategies=[*kept, *strategies])

    def without(self, kind: type) -> "MeshConfig":
        """A new configuration without the strategy of class ``kind``.

        Example:
            >>> from fjax.distributed import MeshConfig, ZeRO
            >>> MeshConfig.load({"mesh": {"data": 1}, "zero_stage": 1}).without(ZeRO).zero_stage
            0
        """
        return MeshConfig(self.axes, type=self.type, strategies=[s for s in self.strategies if not isinstance(s, kind)])

    # the keyword form's attributes, read from the strategies
    @property
    def rules(self) -> list:
        """``(glob, spec)`` pairs of ``Rules`` then ``TensorParallel`` (first match wins)."""
        return [r for s in self.strategies if isinstance(s, (Rules, TensorParallel)) for r in s.rules]

    @property
    def zero_stage(self) -> int:
        """The ``ZeRO`` strategy's stage (0 without one)."""
        z = self.strategy(ZeRO)
        return 0 if z is None else z.stage

    @property
    def zero_min_size(self) -> int:
        """The ``ZeRO`` strategy's ``min_size`` (0 without one)."""
        z = self.strategy(ZeRO)
        return 0 if z is None else z.min_size

    @property
    def batch_axis(self) -> str | None:
        """The ``DataParallel`` strategy's axis (None without one)."""
        dp = self.strategy(DataParallel)
        return None if dp is None else dp.axis

    @property
    def pipeline(self) -> dict:
        """The ``PipelineParallel`` settings as the dict form's ``pipeline`` entry ({} without one)."""
        pp = self.strategy(PipelineParallel)
        if pp is None:
            return {}
        return {k: getattr(pp, k) for k in ("schedule", "microbatches", "virtual_stages", "axis")
                if getattr(pp, k) is not None}  # fmt: skip

    # -- shardings ------------------------------------------------------------------------
    def _sharding(self, spec) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec(*spec))

    def _check(self, strategy, name, shape, spec):
        what = f"mesh config: {strategy!r} for {name!r} of shape {tuple(shape)}"
        if len(spec) != len(shape):
            raise OpError(f"{what}: the spec {spec} has {len(spec)} entries for a tensor of {len(shape)} dims")
        for dim, axis in zip(shape, spec):
            if axis is not None and axis not in self.axes:
                raise OpError(f"{what}: the spec {spec} names mesh axis {axis!r}; the mesh has {list(self.axes)}")
            if axis is not None and dim % self.axes[axis]:
                raise OpError(f"{what}: cannot split a dim of {dim} over axis {axis!r} "
                              f"of size {self.axes[axis]}")  # fmt: skip
        return spec

    def _chain(self, hook: str, name, shape, spec, *extra):
        for s in self.strategies:
            new = getattr(s, hook)(self.axes, name, shape, spec, *extra)
            if new is not None and new != spec:
                spec = self._check(s, name, shape, tuple(new))
        return spec

    def param_spec(self, name: str, shape: tuple) -> tuple:
        """Where a parameter is split while the step computes (replicated when no strategy places it)."""
        shape = tuple(shape)
        spec = self._chain("param_spec", name, shape, None)
        return (None,) * len(shape) if spec is None else spec

    def storage(self, name: str, shape: tuple) -> NamedSharding:
        """Where a parameter lives between steps (sharded over data too under ZeRO-3)."""
        shape = tuple(shape)
        return self._sharding(self._chain("storage", name, shape, self.param_spec(name, shape)))

    def optimizer_state(self, name: str, shape: tuple, leaf_shape: tuple) -> NamedSharding:
        """Where an optimizer-state leaf of a parameter lives (ZeRO >= 1: sharded over data)."""
        if tuple(leaf_shape) != tuple(shape):
            return self._sharding(())
        shape = tuple(shape)
        return self._sharding(self._chain("optimizer_state", name, shape, self.param_spec(name, shape)))

    def gradient(self, name: str, shape: tuple) -> NamedSharding | None:
        """Where a gradient is reduced to before the update (ZeRO >= 2: reduce-scattered over
        data); None leaves it to XLA."""
        shape = tuple(shape)
        spec, out = self.param_spec(name, shape), None
        for s in self.strategies:
            new = s.gradient(self.axes, name, shape, spec if out is None else out)
            if new is not None:
                out = self._check(s, name, shape, tuple(new))
        return None if out is None else self._sharding(out)

    def batch(self, shape: tuple) -> NamedSharding:
        """Inputs: dim 0 over the batch axis when it divides, else replicated."""
        shape, spec = tuple(shape), ()
        for s in self.strategies:
            spec = tuple(s.batch(self.axes, shape, spec))
        return self._sharding(spec)

    def activation(self, name: str, shape: tuple, where: str = "out") -> NamedSharding | None:
        """Inside nn.Graph: the sharding the input (``where="in"``) or output (``"out"``) of module
        ``name`` (``<graph attribute>.<path>``) is constrained to (``TensorParallel(sequence_parallel=True)``),
        its batch dim over the batch axis; None leaves it to XLA."""
        shape = tuple(shape)
        spec = self._chain("activation", name, shape, None, where)
        if spec is None:
            return None
        for s in self.strategies:
            spec = self._check(s, name, shape, tuple(s.batch(self.axes, shape, spec)))
        return self._sharding(spec)

    @property
    def constrains_activations(self) -> bool:
        """Whether a strategy may constrain module outputs (nn.Graph then checks each one)."""
        return any(s.constrains_activations for s in self.strategies)

    def sbp(self, name: str, shape: tuple) -> tuple:
        """Where a parameter lives between steps as OneFlow's sbp tuple on ``placement`` (one
        ``split(dim)`` or ``broadcast`` per mesh axis).

        Example:
            >>> from fjax.distributed import MeshConfig, TensorParallel
            >>> MeshConfig.of({"model": 1}, TensorParallel(row=["*.fc2"])).sbp("m.fc2.weight", (2, 4))
            (fjax.sbp.split(dim=1),)
        """
        return sbp_of(self.storage(name, shape), len(tuple(shape)))

    def key(self) -> tuple:
        """The configuration's value, hashable (an nn.Graph's cache key): the mesh and the strategies."""
        return (tuple(self.axes.items()), self.type, self.strategies)

    def __eq__(self, other):
        return isinstance(other, MeshConfig) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return f"MeshConfig.of({', '.join(map(repr, (self.axes, *self.strategies)))})"


def shard_module(module, config, prefix: str = ""):
    """Make ``module``'s parameters and buffers global tensors laid out as ``config`` says (its
    ``sbp`` on its ``placement``), in place, as an nn.Graph with that configuration places them.

    Args:
        module: an ``nn.Module``.
        config: a ``MeshConfig``, its dict or a JSON/YAML path.
        prefix: put before each parameter's name when matching globs (an nn.Graph names a
            parameter ``<graph attribute>.<name>``: ``prefix="model"`` for ``self.model``).

    Example:
        >>> from fjax.distributed import MeshConfig, TensorParallel, shard_module
        >>> cfg = MeshConfig.of({"model": 1}, TensorParallel(column=["fc"]), type="cpu")
        >>> m = shard_module(nn.Linear(4, 2), cfg, prefix="fc")
        >>> m.weight.sbp, m.bias.sbp
        ((fjax.sbp.split(dim=0),), (fjax.sbp.split(dim=0),))
    """
    config = MeshConfig.load(config)
    named = list(module.named_parameters()) + list(module.named_buffers())
    for name, t in named:
        full = f"{prefix}.{name}" if prefix and name else prefix or name
        t._data = t.detach().to_global(config.placement, config.sbp(full, tuple(t.shape)))._data
        t._vc[0] += 1
    return module


def place(arrays: list, shardings: list) -> list:
    """``jax.device_put`` each array where it belongs (a no-op for arrays already there)."""
    return [a if getattr(a, "sharding", None) == s else jax.device_put(a, s) for a, s in zip(arrays, shardings)]
