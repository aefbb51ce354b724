"""Sharded checkpoints of global state with orbax-checkpoint: no gather, reshard on load.

``save(directory, target, step)`` writes the parameters, persistent buffers and optimizer
states of ``target`` (a Module, an Optimizer, an nn.Graph, or a dict of them) as step
``step`` of ``directory``. Every process writes only the shards it owns (orbax over
tensorstore: one ``ocdbt.process_<i>`` folder per process), so nothing is gathered on one
host. A step is written to ``<step>.orbax-checkpoint-tmp*`` and renamed to ``<step>`` once
complete, so a save killed half way never touches the steps already there, and
``latest_step`` only sees complete steps.

``load(directory, target, step=None)`` restores in place onto the target's *current*
layout: each tensor is read straight into the sharding it has now (for an nn.Graph with a
mesh configuration, the sharding that configuration gives it), so a checkpoint saved on one
mesh loads onto any other (resharding on load).

Example::

    fjax.distributed.checkpoint.save("ckpt", graph, step=100)
    graph2 = TrainGraph()                       # possibly another mesh config
    step = fjax.distributed.checkpoint.load("ckpt", graph2)
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import numpy as np

from ..errors import OpError

try:
    import fcntl
except ImportError:  # not POSIX: threads are still serialised
    fcntl = None
from ..tensor import Tensor


@dataclass
class _Unit:
    """One object's arrays by path, the shardings to read them into, its JSON metadata, and how
    to put restored values back (``apply(values, meta, strict)``)."""

    arrays: dict = field(default_factory=dict)
    shardings: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    apply: Callable[[dict, dict, bool], None] | None = None


def _set_tensor(t: Tensor, value) -> None:
    t._data = value
    t._vc[0] += 1


def _tensor_unit(t: Tensor, prefix: tuple) -> _Unit:
    def apply(values, meta, strict):
        if prefix in values:
            _set_tensor(t, values[prefix])

    return _Unit({prefix: t._data}, {prefix: t._data.sharding}, apply=apply)


def _module_unit(module, prefix: tuple, storage: dict) -> _Unit:
    """Parameters and persistent buffers, by their state_dict names."""
    tensors = {prefix + tuple(name.split(".")): t for name, t in module.state_dict(keep_vars=True).items()}

    def apply(values, meta, strict):
        for path, t in tensors.items():
            if path in values:
                _set_tensor(t, values[path])

    arrays = {path: t._data for path, t in tensors.items()}
    shardings = {path: storage.get(id(t), t._data.sharding) for path, t in tensors.items()}
    return _Unit(arrays, shardings, apply=apply)


def _path_key(entry) -> str:
    for attr in ("key", "idx", "name"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)


def _optimizer_unit(opt, prefix: tuple, opt_shardings: dict) -> _Unit:
    """Per-parameter states (indexed as in ``state_dict``) and the groups' hyper-parameters."""
    opt._init_state()
    params = list(dict.fromkeys(p for group in opt.param_groups for p in group["params"]))
    unit, trees = _Unit(), {}
    for index, p in enumerate(params):
        leaves, treedef = jax.tree_util.tree_flatten_with_path(opt._state[p])
        target = opt_shardings.get(id(p))
        target_leaves = jax.tree_util.tree_leaves(target) if target is not None else [a.sharding for _, a in leaves]
        paths = []
        for (key_path, array), sharding in zip(leaves, target_leaves):
            path = prefix + ("state", str(index)) + tuple(_path_key(k) for k in key_path)
            unit.arrays[path], unit.shardings[path] = array, sharding
            paths.append(path)
        trees[p] = (treedef, paths)
    key = "/".join(prefix)
    unit.meta[key] = [{k: _json_value(v, k) for k, v in g.items() if k != "params"} for g in opt.param_groups]

    def apply(values, meta, strict):
        for p, (treedef, paths) in trees.items():
            if all(path in values for path in paths):
                opt._state[p] = jax.tree_util.tree_unflatten(treedef, [values[path] for path in paths])
        if key in meta:
            _load_groups(opt, meta[key], key or "the optimizer")
        elif strict:
            raise OpError(f"checkpoint.load: the checkpoint has no hyper-parameters for optimizer {key!r}")

    unit.apply = apply
    return unit


def _json_value(value, key: str):
    if isinstance(value, Tensor):
        return value.tolist()
    if isinstance(value, (tuple, list)):
        return [_json_value(v, key) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    raise OpError(f"checkpoint.save: optimizer hyper-parameter {key!r} = {value!r} is not a number, string or list")


def _load_groups(opt, groups: list, where: str) -> None:
    if len(groups) != len(opt.param_groups):
        raise OpError(
            f"checkpoint.load: {where} was saved with {len(groups)} parameter group(s), "
            f"the optimizer has {len(opt.param_groups)}"
        )
    for group, saved in zip(opt.param_groups, groups):
        for k, v in saved.items():
            current = group.get(k)
            if isinstance(current, Tensor):
                group[k] = Tensor._wrap(jax.numpy.asarray(v, current._data.dtype))
            elif isinstance(current, tuple):
                group[k] = tuple(v)
            else:
                group[k] = v


def _units(target, prefix: tuple = (), layout: tuple = ({}, {})) -> list[_Unit]:
    """Every array of ``target``, keyed by path, with the sharding to restore it into (for a
    Graph with a mesh config: where its ``GraphState`` puts each state tensor and optimizer-state
    leaf)."""
    from ..graph import Graph, GraphState
    from ..nn.module import Module
    from ..optim.optimizer import Optimizer

    if isinstance(target, Graph):
        state = GraphState.of(target)
        layout = (state.tensor_shardings(), state.optimizer_shardings())
        target = state.parts()
    if isinstance(target, dict):
        return [u for k, part in target.items() for u in _units(part, prefix + (str(k),), layout)]
    if isinstance(target, Module):
        return [_module_unit(target, prefix, layout[0])]
    if isinstance(target, Optimizer):
        return [_optimizer_unit(target, prefix, layout[1])]
    if isinstance(target, Tensor):
        return [_tensor_unit(target, prefix)]
    raise OpError(
        f"checkpoint: {'.'.join(prefix) or 'the target'} is a {type(target).__name__}; expected a Module, "
        "an Optimizer, an nn.Graph, a Tensor or a dict of them"
    )


def _nest(flat: dict) -> dict:
    """``{("a", "b"): x}`` -> ``{"a": {"b": x}}`` (orbax's tree; paths never contain dots)."""
    out: dict = {}
    for path, value in flat.items():
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return out


def _flatten(tree, prefix: tuple = ()) -> dict:
    if isinstance(tree, dict):
        out = {}
        for k, v in tree.items():
            out.update(_flatten(v, prefix + (k,)))
        return out
    return {prefix: tree}


def _manager(directory, max_to_keep: int | None = None, create: bool = True):
    import orbax.checkpoint as ocp

    options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=create, enable_async_checkpointing=False)
    handlers = {"state": ocp.PyTreeCheckpointHandler(), "meta": ocp.JsonCheckpointHandler()}
    return ocp.CheckpointManager(os.path.abspath(os.fspath(directory)), options=options, item_handlers=handlers)


_thread_locks: dict = {}
_thread_locks_guard = threading.Lock()


@contextlib.contextmanager
def _locked(directory, exclusive: bool):
    """Serialise work on one checkpoint folder: saves (``exclusive``) run one at a time across
    threads and processes, so ``max_to_keep``'s clean-up of one save never races another's
    write; loads wait for a running save. A thread lock per folder plus ``flock`` on
    ``.<name>.fjax-lock`` beside the folder (where the OS has it)."""
    path = os.path.abspath(os.fspath(directory))
    with _thread_locks_guard:
        lock = _thread_locks.setdefault(path, threading.Lock())
    with lock:
        # a multi-process save is collective (every process writes at once): no file lock then
        if fcntl is None or jax.process_count() > 1 or not (exclusive or os.path.isdir(path)):
            yield
            return
        parent, name = os.path.split(path)
        os.makedirs(parent, exist_ok=True)
        with open(os.path.join(parent, f".{name}.fjax-lock"), "a") as fh:  # beside it: the folder stays clean
            fcntl.flock(fh, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


def save(directory: str | os.PathLike, target, step: int, *, max_to_keep: int | None = None) -> str:
    """Write ``target``'s state as step ``step`` of ``directory``; every process writes its own shards.

    Args:
        directory: the checkpoint folder (one sub-folder per step).
        target: a Module, an Optimizer, an nn.Graph, or a dict of them (and Tensors).
        step: the step number; saving a step that exists raises.
        max_to_keep: keep only the newest this many steps (None keeps all).

    Returns:
        The folder of the written step.
    """
    units = _units(target)
    arrays = {path: array for unit in units for path, array in unit.arrays.items()}
    meta = {k: v for unit in units for k, v in unit.meta.items()}
    _check_arrays(arrays)
    with _locked(directory, exclusive=True):
        return _save(directory, arrays, meta, step, max_to_keep)


def _save(directory, arrays, meta, step, max_to_keep) -> str:
    import orbax.checkpoint as ocp

    manager = _manager(directory, max_to_keep)
    try:
        if step in manager.all_steps():
            raise OpError(f"checkpoint.save: step {step} already exists in {os.fspath(directory)}")
        saved = manager.save(  # force: orbax would skip (silently) a step older than its newest
            int(step),
            args=ocp.args.Composite(state=ocp.args.PyTreeSave(_nest(arrays)), meta=ocp.args.JsonSave(meta)),
            force=True,
        )
        manager.wait_until_finished()
        if not saved:
            raise OpError(f"checkpoint.save: orbax did not save step {step} in {os.fspath(directory)}")
    finally:
        manager.close()
    return os.path.join(os.path.abspath(os.fspath(directory)), str(step))


def _check_arrays(arrays: dict) -> None:
    for path, a in arrays.items():
        if not isinstance(a, jax.Array) or isinstance(a, jax.core.Tracer):
            raise OpError(f"checkpoint.save: {'.'.join(path)} holds {type(a).__name__}, not a concrete jax.Array")


def latest_step(directory: str | os.PathLike) -> int | None:
    """The newest complete step in ``directory`` (None when there is none)."""
    if not os.path.isdir(directory):
        return None
    with _locked(directory, exclusive=False):
        manager = _manager(directory, create=False)
        try:
            return manager.latest_step()
        finally:
            manager.close()


def load(directory: str | os.PathLike, target, step: int | None = None, *, strict: bool = True) -> int:
    """Restore ``target`` in place from step ``step`` (default: the latest) of ``directory``.

    Each tensor is read into the sharding the target gives it now, so the checkpoint may
    come from a different mesh or number of processes. With ``strict=False``, keys that
    only one side has are skipped (e.g. load a model's weights from a model + optimizer
    checkpoint); shapes and dtypes must still match.

    Returns:
        The step that was loaded.
    """
    if not os.path.isdir(directory):
        raise OpError(f"checkpoint.load: no checkpoint folder {os.fspath(directory)!r}")
    units = _units(target)
    arrays = {path: array for unit in units for path, array in unit.arrays.items()}
    shardings = {path: s for unit in units for path, s in unit.shardings.items()}
    with _locked(directory, exclusive=False):
        step, restored = _restore(directory, arrays, shardings, step, strict)
    values, meta = _flatten(restored["state"]), restored["meta"] or {}
    for unit in units:
        unit.apply(values, meta, strict)
    return int(step)


def _restore(directory, arrays, shardings, step, strict):
    import orbax.checkpoint as ocp

    manager = _manager(directory, create=False)
    try:
        steps = manager.all_steps()
        if step is None:
            if not steps:
                raise OpError(f"checkpoint.load: {os.fspath(directory)!r} holds no complete step")
            step = max(steps)
        elif step not in steps:
            raise OpError(f"checkpoint.load: step {step} is not in {os.fspath(directory)!r}; it has {sorted(steps)}")
        saved = _flatten(manager.item_metadata(step)["state"].tree)
        if not strict:
            arrays = {path: a for path, a in arrays.items() if path in saved}
            saved = {path: m for path, m in saved.items() if path in arrays}
        _check_compatible(saved, arrays, step)
        abstract = _nest(
            {path: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=shardings[path]) for path, a in arrays.items()}
        )
        state = ocp.args.PyTreeRestore(
            abstract, restore_args=ocp.checkpoint_utils.construct_restore_args(abstract), partial_restore=not strict
        )
        restored = manager.restore(step, args=ocp.args.Composite(state=state, meta=ocp.args.JsonRestore()))
    finally:
        manager.close()
    return step, restored


def _check_compatible(saved: dict, arrays: dict, step: int) -> None:
    missing = sorted(".".join(p) for p in arrays.keys() - saved.keys())
    unexpected = sorted(".".join(p) for p in saved.keys() - arrays.keys())
    wrong = [
        f"{'.'.join(p)}: saved {tuple(saved[p].shape)}:{saved[p].dtype}, expected {tuple(a.shape)}:{a.dtype}"
        for p, a in arrays.items()
        if p in saved and (tuple(saved[p].shape) != tuple(a.shape) or np.dtype(saved[p].dtype) != np.dtype(a.dtype))
    ]
    if missing or unexpected or wrong:
        raise OpError(
            f"checkpoint.load: step {step} does not match the target: missing keys {missing}, "
            f"unexpected keys {unexpected}, mismatched {wrong}"
        )
