"""Pipeline stages of an nn.Graph (OneFlow's ``graph.m.to(GraphModule).set_stage(stage_id, placement)``).

A graph with stages compiles to ONE program over every stage's devices (the union of the
stage placements, ranks ``0..n-1``, or the mesh of ``config.set_mesh``): the state lives
replicated on those devices and ``to_global`` between stage placements inside ``build`` keeps
values where they are (``global_tensor.staged``), so OneFlow's pipeline scripts (stage modules
moved to their placements, activations moved between stages, gradient accumulation) run and
give the one-device numbers. Splitting a repeated block's parameters over the stages and
overlapping micro-batches is ``fjax.distributed.pipeline``'s SPMD program.

``plan(graph)`` checks the stages (each error names the module and the numbers: a module in two
stages, stages out of module order or skipping an id, one stage on two placements, a placement
outside the mesh, a ``pipe`` axis larger than the staged layers) and gives the ``StagePlan``;
``key(graph)`` is its part of the compile key.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

from ..errors import OpError

stage_version = [0]  # bumped by every ``set_stage``: the cached ``key`` is read again


class StagePlan(NamedTuple):
    """``stages``: per stage id, ``(placement, [module paths])``; ``ranks``: every stage device
    (sorted); ``mesh``: the MeshConfig the step compiles with."""

    stages: list
    ranks: tuple
    mesh: object


def _staged(graph) -> list:
    """``(path, stage_id, placement)`` of every module with a stage, in module order."""
    out = []
    for attr, module in graph._modules.items():
        for sub_name, sub in module.named_modules():
            entry = graph._module_options.get(id(sub))
            if entry is not None and entry[1].stage_id is not None:
                out.append((f"{attr}.{sub_name}" if sub_name else attr, entry[1].stage_id, entry[1].stage_placement))
    return out


def key(graph) -> tuple:
    """The stages as a hashable value (part of the graph's compile key), recomputed only after a
    ``set_stage`` or a module change."""
    from .._tracing import modules_changed

    version = (stage_version[0], modules_changed[0])
    cached = graph.__dict__.get("_stage_key")
    if cached is None or cached[0] != version:
        value = tuple((path, s, None if p is None else (p.type, str(p._ranks))) for path, s, p in _staged(graph))
        cached = (version, value)
        object.__setattr__(graph, "_stage_key", cached)
    return cached[1]


def plan(graph, warn: bool = False) -> StagePlan | None:
    """Check the graph's stages and give their plan (None when no module has a stage); ``warn``:
    warn when several stages run with one micro-batch (the step being compiled)."""
    staged = _staged(graph)
    if not staged:
        return None
    name = f"nn.Graph {graph.name}"
    outer = []
    for path, stage, p in staged:
        parent = next((o for o in outer if path.startswith(o[0] + ".")), None)
        if parent is not None:
            if parent[1] != stage:
                raise OpError(
                    f"{name}: module '{path}' is set to stage {stage} inside '{parent[0]}' of stage {parent[1]}; "
                    "a module belongs to one stage"
                )
            continue
        if p is None and any(q is not None for _, _, q in staged):
            raise OpError(
                f"{name}: module '{path}' has stage {stage} but no placement; use set_stage(stage_id, placement)"
            )
        if outer and stage < outer[-1][1]:
            raise OpError(
                f"{name}: stages out of order: module '{path}' (stage {stage}) comes after "
                f"'{outer[-1][0]}' (stage {outer[-1][1]}); stages must not decrease in module order"
            )
        outer.append((path, stage, p))
    if all(p is None for _, _, p in outer):
        return None  # stages recorded without placements (OneFlow allows it): the step is unchanged
    stages: dict = {}
    for path, stage, p in outer:
        placement, paths = stages.setdefault(stage, (p, []))
        if placement != p:
            raise OpError(
                f"{name}: stage {stage} has two placements: ranks {placement._ranks} ('{paths[0]}') and "
                f"ranks {p._ranks} ('{path}')"
            )
        paths.append(path)
    missing = sorted(set(range(max(stages) + 1)) - set(stages))
    if missing:
        raise OpError(f"{name}: stages {sorted(stages)} skip stage(s) {missing}; stage ids run 0, 1, ..., S-1")
    ranks = tuple(sorted({r for p, _ in stages.values() for r in p.ranks.ravel().tolist()}))
    mesh = graph.config.mesh
    if mesh is None:
        from ..distributed.mesh import MeshConfig

        if ranks != tuple(range(len(ranks))):
            raise NotImplementedError(
                f"{name}: stage placements over ranks {list(ranks)}: a staged graph without set_mesh runs on ranks "
                f"0..n-1; give the stages ranks 0..{len(ranks) - 1} or set a mesh"
            )
        mesh = MeshConfig(axes={"pipe": len(ranks)}, batch_axis=None, type=stages[0][0].type)
    n = len(mesh.placement.ranks.ravel())
    for stage, (p, paths) in stages.items():
        outside = [r for r in p.ranks.ravel().tolist() if r >= n]
        if outside:
            raise OpError(
                f"{name}: stage {stage} of '{paths[0]}' is placed on ranks {p.ranks.ravel().tolist()}, outside the "
                f"mesh {mesh.axes} of ranks 0..{n - 1}"
            )
    pipe = mesh.axes.get("pipe")
    if graph.config.mesh is not None and pipe is not None and pipe > len(outer):
        raise OpError(
            f"{name}: the mesh's pipe axis has {pipe} stages, more than the {len(outer)} module(s) with a stage "
            f"({', '.join(p for p, _, _ in outer)})"
        )
    if warn and graph.training and graph.config.grad_acc_steps == 1 and len(stages) > 1:
        warnings.warn(
            f"{name}: {len(stages)} pipeline stages with gradient accumulation of 1 micro-batch; set "
            f"graph.config.set_gradient_accumulation_steps({2 * len(stages)}) (at least the number of stages) "
            "so that micro-batches fill the pipeline",
            stacklevel=2,
        )
    return StagePlan([stages[s] for s in range(len(stages))], ranks, mesh)


def mesh_of(graph):
    """The mesh configuration the graph's step compiles with: ``config.mesh``, or the stages' own."""
    if graph.config.mesh is not None:
        return graph.config.mesh
    found = plan(graph)
    return None if found is None else found.mesh


def devices_of(graph) -> frozenset | None:
    """The stage devices' ids, or None without stages (``global_tensor.staged`` while tracing);
    warns when several stages run with one micro-batch (called once per compiled step)."""
    found = plan(graph, warn=True)
    if found is None:
        return None
    return frozenset(d.id for d in found.mesh.mesh.devices.flat)
