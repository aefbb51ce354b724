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

from .. import _artifact
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
    check: Callable[[dict, bool, str], None] | None = None  # (meta, strict, meta file): raises before any apply


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

    def check(meta, strict, meta_file):
        if key in meta:
            _check_groups(opt, meta[key], key or "the optimizer", meta_file)
        elif strict:
            raise _artifact.corrupt(_WHO, meta_file, f"no hyper-parameters for optimizer {key!r}")

    def apply(values, meta, strict):
        for p, (treedef, paths) in trees.items():
            if all(path in values for path in paths):
                opt._state[p] = jax.tree_util.tree_unflatten(treedef, [values[path] for path in paths])
        if key in meta:
            _load_groups(opt, meta[key])

    unit.apply, unit.check = apply, check
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


def _check_groups(opt, groups, where: str, meta_file: str) -> None:
    """The saved hyper-parameters of ``opt`` must be one object per parameter group, each value of
    the kind the optimizer holds (a number for a number, a list as long for a tuple ...)."""
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise _artifact.corrupt(_WHO, meta_file, f"the hyper-parameters of {where} are not a list of objects")
    if len(groups) != len(opt.param_groups):
        raise _artifact.corrupt(
            _WHO,
            meta_file,
            f"{where} was saved with {len(groups)} parameter group(s), the optimizer has {len(opt.param_groups)}",
        )
    for i, (group, saved) in enumerate(zip(opt.param_groups, groups)):
        for k, v in saved.items():
            if k in group and not _same_kind(group[k], v):
                raise _artifact.corrupt(
                    _WHO, meta_file, f"{where} group {i} {k!r} is {v!r:.60}, the optimizer holds {group[k]!r:.60}"
                )


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _same_kind(current, saved) -> bool:
    if isinstance(current, bool):
        return isinstance(saved, bool)
    if isinstance(current, (int, float, np.number)):
        return _number(saved)
    if isinstance(current, Tensor):
        return _number(saved) or (isinstance(saved, list) and current.numel() == len(saved))
    if isinstance(current, (tuple, list)):
        return isinstance(saved, list) and len(saved) == len(current)
    if isinstance(current, str):
        return isinstance(saved, str)
    return current is None or saved is None or isinstance(saved, (bool, int, float, str))


def _load_groups(opt, groups: list) -> None:
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
        raise _artifact.corrupt(_WHO, directory, "no checkpoint folder (missing folder)")
    units = _units(target)
    arrays = {path: array for unit in units for path, array in unit.arrays.items()}
    shardings = {path: s for unit in units for path, s in unit.shardings.items()}
    with _locked(directory, exclusive=False):
        step, restored = _restore(directory, arrays, shardings, step, strict, units)
    values, meta = _flatten(restored["state"]), restored["meta"] or {}
    for unit in units:
        unit.apply(values, meta, strict)
    return int(step)


_WHO = "checkpoint.load"

# what orbax and tensorstore raise for a step whose files are truncated, overwritten or missing
# (tensorstore's errors are ValueErrors that name the file: DATA_LOSS, OUT_OF_RANGE, NOT_FOUND ...)
_READ_ERRORS = (ValueError, OSError, KeyError, TypeError, EOFError)


def _restore(directory, arrays, shardings, step, strict, units=()):
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
        folder = os.path.join(os.path.abspath(os.fspath(directory)), str(step))
        records = _read_records(folder)  # before orbax reads them: bounded, and a broken one is named
        meta_file, tree_file = os.path.join(folder, "meta", "metadata"), os.path.join(folder, "state", "_METADATA")
        if not isinstance(records[tree_file].get("tree_metadata"), dict):
            raise _artifact.corrupt(_WHO, tree_file, "no tree_metadata object")
        for unit in units:
            if unit.check is not None:
                unit.check(records[meta_file], strict, meta_file)
        try:
            metadata = manager.item_metadata(step)["state"]
        except _READ_ERRORS as err:
            raise _artifact.corrupt(_WHO, folder, f"unreadable state metadata: {_short(err)}") from None
        if metadata is None or getattr(metadata, "tree", None) is None:
            raise _artifact.corrupt(_WHO, os.path.join(folder, "state", "_METADATA"), "missing or empty file")
        saved = _flatten(metadata.tree)
        _check_records(folder, records, saved)
        if not strict:
            arrays = {path: a for path, a in arrays.items() if path in saved}
            saved = {path: m for path, m in saved.items() if path in arrays}
        _check_compatible(saved, arrays, step, folder)
        abstract = _nest(
            {path: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=shardings[path]) for path, a in arrays.items()}
        )
        state = ocp.args.PyTreeRestore(
            abstract, restore_args=ocp.checkpoint_utils.construct_restore_args(abstract), partial_restore=not strict
        )
        try:
            restored = manager.restore(step, args=ocp.args.Composite(state=state, meta=ocp.args.JsonRestore()))
        except OpError:
            raise
        except _READ_ERRORS as err:
            raise _artifact.corrupt(_WHO, folder, f"cannot read the saved arrays: {_short(err)}") from None
    finally:
        manager.close()
    return step, restored


def _short(err: BaseException) -> str:
    text = str(err)
    return f"{type(err).__name__}: {text[:400]}{' ...' if len(text) > 400 else ''}"


# the JSON records of a step: (path inside the step folder, required)
_RECORDS = (
    ("_CHECKPOINT_METADATA", False),
    ("meta/metadata", True),
    ("state/_METADATA", True),
    ("state/_sharding", False),
)


def _read_records(folder: str) -> dict:
    """Every JSON record of the step in ``folder``, parsed with bounded size and depth; a missing
    required one, or a broken one, raises naming it."""
    names = [(name, required) for name, required in _RECORDS]
    metas = os.path.join(folder, "state", "array_metadatas")
    if os.path.isdir(metas):
        names += [(f"state/array_metadatas/{n}", False) for n in sorted(os.listdir(metas))]
    records = {}
    for name, required in names:
        path = os.path.join(folder, *name.split("/"))
        if not required and not os.path.exists(path):
            continue
        record = _artifact.parse_json(_WHO, path, _artifact.read_bytes(_WHO, path, "a checkpoint record"), "record")
        if not isinstance(record, dict):
            raise _artifact.corrupt(_WHO, path, f"the record is a JSON {type(record).__name__}, expected an object")
        records[path] = record
    return records


def _check_records(folder: str, records: dict, saved: dict) -> None:
    """The shapes ``_METADATA`` and ``array_metadatas`` record must be those of the stored arrays."""
    tree_file = os.path.join(folder, "state", "_METADATA")
    tree = records[tree_file].get("tree_metadata")
    if not isinstance(tree, dict):
        raise _artifact.corrupt(_WHO, tree_file, "no tree_metadata object")
    recorded = {}
    for entry in tree.values():
        try:
            path = tuple(str(k["key"]) for k in entry["key_metadata"])
            shape = entry["value_metadata"].get("write_shape")
        except (KeyError, TypeError, AttributeError) as err:
            raise _artifact.corrupt(_WHO, tree_file, f"a malformed tree_metadata entry ({_short(err)})") from None
        recorded[path] = (tree_file, shape)
    for file, record in records.items():
        if f"{os.sep}array_metadatas{os.sep}" in file:
            entries = record.get("array_metadatas")
            if not isinstance(entries, list):
                raise _artifact.corrupt(_WHO, file, "no array_metadatas list")
            for entry in entries:
                meta = entry.get("array_metadata") if isinstance(entry, dict) else None
                if not isinstance(meta, dict) or not isinstance(meta.get("param_name"), str):
                    raise _artifact.corrupt(_WHO, file, f"a malformed array_metadatas entry {entry!r:.80}")
                recorded[("#", meta["param_name"])] = (file, meta.get("write_shape"))
    by_name = {".".join(p): m for p, m in saved.items()}
    for path, (file, shape) in recorded.items():
        name = path[1] if path[0] == "#" and len(path) == 2 else ".".join(path)
        if name not in by_name:
            if path[0] != "#":
                raise _artifact.corrupt(_WHO, file, f"records {name!r}, which the stored arrays do not hold")
            continue
        stored = tuple(by_name[name].shape)
        if shape is not None and not _fits(shape, stored):  # write_shape: the shape of one shard
            raise _artifact.corrupt(
                _WHO, file, f"records {name!r} with shards of shape {shape!r:.60}, the stored array is {stored}"
            )


def _fits(shard, shape: tuple) -> bool:
    """``shard`` (a JSON value) is the shape of a shard of an array of ``shape``."""
    return (
        isinstance(shard, list)
        and len(shard) == len(shape)
        and all(_artifact.count(w) and (w <= d or d == 0) for w, d in zip(shard, shape))
    )


def _check_compatible(saved: dict, arrays: dict, step: int, folder: str = "") -> None:
    missing = sorted(".".join(p) for p in arrays.keys() - saved.keys())
    unexpected = sorted(".".join(p) for p in saved.keys() - arrays.keys())
    wrong = [
        f"{'.'.join(p)}: saved {tuple(saved[p].shape)}:{saved[p].dtype}, expected {tuple(a.shape)}:{a.dtype}"
        for p, a in arrays.items()
        if p in saved and (tuple(saved[p].shape) != tuple(a.shape) or np.dtype(saved[p].dtype) != np.dtype(a.dtype))
    ]
    if missing or unexpected or wrong:
        raise _artifact.corrupt(
            _WHO,
            folder,
            f"step {step} does not match the target: missing keys {missing}, "
            f"unexpected keys {unexpected}, mismatched {wrong}",
        )
