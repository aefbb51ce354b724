"""Mesh configurations: name mesh axes and map parameter names to shardings; no model rewrite.

A configuration is a dict, a JSON/YAML file or a ``MeshConfig``::

    {"mesh": {"data": 4, "model": 2},
     "tensor_parallel": {"column": ["*.fc1", "*.qkv"], "row": ["*.fc2", "*.proj"]},
     "rules": {"*.embed.weight": [null, "model"]},
     "zero_stage": 1}

- ``mesh``: axis name -> size (the product is the number of devices used).
- ``rules``: glob on the parameter's name (``module.sub.weight`` as the graph names it) ->
  one mesh-axis name (or null) per tensor dim. First match wins; unmatched params replicate.
- ``tensor_parallel``: Megatron-style shorthand. ``column`` modules (Linear: weight
  ``(out, in)``) split ``out`` over ``model``, with their bias; ``row`` modules split ``in``.
- ``zero_stage``: 1 shards optimizer state over ``data``, 2 also the gradients, 3 also the
  parameters (OneFlow's ``enable_zero``); XLA inserts the reduce-scatters and all-gathers.
- ``batch_axis`` (default ``data``): inputs are split on dim 0 over it.
- ``pipeline``: how a ``pipe`` axis runs the model's repeated blocks, which nn.Graph finds by
  itself (``graph/auto_pipeline.py``): ``{"schedule": "gpipe" | "1f1b" | "gpipe_table" |
  "interleaved", "microbatches": M, "virtual_stages": V, "axis": "pipe"}`` (defaults: gpipe,
  1 micro-batch with a warning, V = 2 when interleaved, axis ``pipe``).

With several processes (``jax.distributed``), the graph places each process's parameters and
inputs with ``jax.device_put``, which assumes every process holds the same values: seed all
processes alike (inputs that differ per process should be made global first with
``Tensor.to_global``, which treats them as this process's piece).
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
from dataclasses import dataclass, field

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from ..errors import OpError
from .placement import placement as _placement


@dataclass
class MeshConfig:
    """A parsed mesh configuration (see the module docstring)."""

    axes: dict
    rules: list = field(default_factory=list)
    zero_stage: int = 0
    zero_min_size: int = 0  # ZeRO leaves tensors with fewer elements unsharded (OneFlow's shard_min_size)
    batch_axis: str | None = "data"
    type: str = "cuda"
    pipeline: dict = field(default_factory=dict)  # the pipe axis's schedule and micro-batches

    def __post_init__(self):
        unknown = set(self.pipeline) - {"schedule", "microbatches", "virtual_stages", "axis"}
        if unknown:
            raise OpError(f"mesh config: unknown pipeline keys {sorted(unknown)}")
        for k in ("microbatches", "virtual_stages"):
            v = self.pipeline.get(k)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise OpError(f"mesh config: pipeline {k} must be an int >= 1, got {v!r}")
        if self.pipeline and self.pipeline.get("axis", "pipe") not in self.axes:
            raise OpError(
                f"mesh config: the pipeline settings need a {self.pipeline.get('axis', 'pipe')!r} mesh axis; "
                f"the mesh has {list(self.axes)}"
            )
        if self.zero_stage not in (0, 1, 2, 3):
            raise OpError(f"mesh config: zero_stage must be 0, 1, 2 or 3, got {self.zero_stage!r}")
        if self.batch_axis is not None and self.batch_axis not in self.axes:
            self.batch_axis = None
        for pattern, spec in self.rules:
            for name in spec:
                if name is not None and name not in self.axes:
                    raise OpError(f"mesh config: rule {pattern!r} names axis {name!r}; the mesh has {list(self.axes)}")
        n = math.prod(self.axes.values())
        self.placement = _placement(self.type, np.arange(n).reshape(tuple(self.axes.values())), tuple(self.axes))
        self.mesh = self.placement.mesh

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
        unknown = set(source) - {"mesh", "rules", "tensor_parallel", "zero_stage", "batch_axis", "type", "pipeline"}
        if unknown:
            raise OpError(f"mesh config: unknown keys {sorted(unknown)}")
        rules = [(p, tuple(s)) for p, s in dict(source.get("rules", {})).items()]
        tp = source.get("tensor_parallel") or {}
        axis = tp.get("axis", "model")
        for pattern in tp.get("column", []):
            rules += [(f"{pattern}.weight", (axis, None)), (f"{pattern}.bias", (axis,))]
        for pattern in tp.get("row", []):
            rules += [(f"{pattern}.weight", (None, axis))]
        return cls(
            axes=dict(source["mesh"]),
            rules=rules,
            zero_stage=int(source.get("zero_stage", 0)),
            batch_axis=source.get("batch_axis", "data"),
            type=source.get("type", "cuda"),
            pipeline=dict(source.get("pipeline") or {}),
        )

    # -- shardings ------------------------------------------------------------------------
    def _sharding(self, spec) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec(*spec))

    def _check(self, name, shape, spec):
        if len(spec) != len(shape):
            raise OpError(f"mesh config: rule for {name!r} has {len(spec)} entries for a tensor of shape {shape}")
        for dim, axis in zip(shape, spec):
            if axis is not None and dim % self.axes[axis]:
                raise OpError(
                    f"mesh config: {name!r} of shape {shape} cannot split a dim of {dim} over axis {axis!r} "
                    f"of size {self.axes[axis]}"
                )
        return spec

    def param_spec(self, name: str, shape: tuple) -> tuple:
        """The rule's spec for a parameter (replicated when no rule matches)."""
        for pattern, spec in self.rules:
            if fnmatch.fnmatchcase(name, pattern):
                return self._check(name, shape, spec)
        return (None,) * len(shape)

    def _zero_spec(self, shape: tuple, spec: tuple) -> tuple:
        """``spec`` plus the data axis on the first free dim it divides (ZeRO sharding)."""
        if "data" not in self.axes or "data" in spec or math.prod(shape) < self.zero_min_size:
            return spec
        for d, (dim, axis) in enumerate(zip(shape, spec)):
            if axis is None and dim % self.axes["data"] == 0 and dim > 0:
                return spec[:d] + ("data",) + spec[d + 1 :]
        return spec

    def storage(self, name: str, shape: tuple) -> NamedSharding:
        """Where a parameter lives between steps (sharded over data too under ZeRO-3)."""
        spec = self.param_spec(name, shape)
        return self._sharding(self._zero_spec(shape, spec) if self.zero_stage >= 3 else spec)

    def optimizer_state(self, name: str, shape: tuple, leaf_shape: tuple) -> NamedSharding:
        """Where an optimizer-state leaf of a parameter lives (ZeRO >= 1: sharded over data)."""
        if tuple(leaf_shape) != tuple(shape):
            return self._sharding(())
        spec = self.param_spec(name, shape)
        return self._sharding(self._zero_spec(shape, spec) if self.zero_stage >= 1 else spec)

    def gradient(self, name: str, shape: tuple) -> NamedSharding | None:
        """ZeRO >= 2: gradients are reduce-scattered over data before the update."""
        if self.zero_stage < 2:
            return None
        return self._sharding(self._zero_spec(shape, self.param_spec(name, shape)))

    def batch(self, shape: tuple) -> NamedSharding:
        """Inputs: dim 0 over the batch axis when it divides, else replicated."""
        if self.batch_axis is None or not shape or shape[0] % self.axes[self.batch_axis]:
            return self._sharding(())
        return self._sharding((self.batch_axis,))

    def key(self) -> tuple:
        """The configuration's value, hashable (an nn.Graph's cache key: ``enable_zero`` changes a
        MeshConfig in place, so its identity does not say which step it compiles to)."""
        zero = (self.zero_stage, self.zero_min_size) if self.zero_stage else (0,)
        rules = tuple((pattern, tuple(spec)) for pattern, spec in self.rules)
        pipeline = tuple(sorted(self.pipeline.items()))
        return (tuple(self.axes.items()), rules, zero, self.batch_axis, self.type, pipeline)

    def __repr__(self):
        pipeline = f", pipeline={self.pipeline}" if self.pipeline else ""
        return f"MeshConfig(axes={self.axes}, zero_stage={self.zero_stage}, rules={len(self.rules)}{pipeline})"


def place(arrays: list, shardings: list) -> list:
    """``jax.device_put`` each array where it belongs (a no-op for arrays already there)."""
    return [a if getattr(a, "sharding", None) == s else jax.device_put(a, s) for a, s in zip(arrays, shardings)]
