"""Save a compiled nn.Graph step with ``jax.export`` plus its state; run it without model code."""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import threading
import zipfile
import zlib

import jax
import numpy as np

from .. import _artifact, _atomic
from ..dispatch import without_deferred_checks
from ..errors import OpError
from ..tensor import Tensor
from .step import Step

_FORMAT = "fjax-graph-1"
_WHO = "nn.Graph.load"
_PROGRAM = "the program (step.bin)"


def save_graph(graph, path: str) -> None:
    """Write ``path/`` (a folder): ``step.bin`` (serialised StableHLO), ``state.npz``, ``meta.json``.

    The folder is written under a temporary name and swapped into place (``_atomic``): a crash
    at any point leaves the previous save or the new one at ``path``, whole. Saves from several
    threads are serialised (tracing the step is not thread-safe); saves from several processes
    end with one complete save.
    """
    if graph._executables.last_key is None:
        raise RuntimeError(f"nn.Graph {graph.name}: save() needs a graph that has been called once")
    with _SAVE_LOCK:
        _save_graph(graph, path)


_SAVE_LOCK = threading.Lock()


def _save_graph(graph, path: str) -> None:
    executables = graph._executables
    entry = executables.cache[executables.last_key]
    _, in_tree, statics, inputs = executables.last_call
    step = Step(graph, in_tree, statics)
    specs = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in inputs]
    args = step.state.step_args(specs, executables.optimizers.now())  # unplaced: specs, not arrays
    flat_args, args_tree = jax.tree_util.tree_flatten(args)

    def flat_step(*leaves):
        state, opt_states, rng, hyper, inputs = jax.tree_util.tree_unflatten(args_tree, list(leaves))
        new_state, new_opt, outputs = step(state, opt_states, rng, hyper, inputs)
        return jax.tree_util.tree_leaves((new_state, new_opt)), list(outputs)

    specs = [
        jax.ShapeDtypeStruct(a.shape, a.dtype) if hasattr(a, "dtype") else jax.ShapeDtypeStruct((), np.asarray(a).dtype)
        for a in flat_args
    ]
    with without_deferred_checks():  # jax.export cannot serialise their host callbacks
        exported = jax.export.export(jax.jit(flat_step))(*specs)
    n_inputs = len(jax.tree_util.tree_leaves(args[4]))
    n_carry = len(flat_args) - n_inputs
    step_bytes = bytes(exported.serialize())
    state = io.BytesIO()
    np.savez(state, *[np.asarray(a) for a in flat_args[:n_carry]])
    meta = {
        "format": _FORMAT,
        "graph": graph.name,
        "n_carry": n_carry,
        "n_state_out": len(jax.tree_util.tree_leaves((args[0], args[1]))),
        "rng_positions": _rng_positions(args, flat_args),
        "draws": int(entry.record["draws"]),
        "outputs_single": entry.record["out_tree"].num_leaves == 1 and entry.record["out_tree"].num_nodes == 1,
        "n_outputs": len(exported.out_avals) - len(jax.tree_util.tree_leaves((args[0], args[1]))),
        "inputs": [[list(s.shape), np.dtype(s.dtype).name] for s in specs[n_carry:]],
        "bytes": {"step.bin": len(step_bytes), "state.npz": len(state.getvalue())},
        "sha256": {"step.bin": _artifact.sha256(step_bytes), "state.npz": _artifact.sha256(state.getvalue())},
    }
    meta["meta_sha256"] = _meta_digest(meta)
    tmp = _atomic.temp_dir_beside(path)
    try:
        with open(os.path.join(tmp, "step.bin"), "wb") as f:
            f.write(step_bytes)
        with open(os.path.join(tmp, "state.npz"), "wb") as f:
            f.write(state.getvalue())
        with open(os.path.join(tmp, "meta.json"), "w") as f:
            json.dump(meta, f)
        _atomic.replace_dir(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _meta_digest(meta: dict) -> str:
    """The checksum of ``meta.json``'s fields (all but itself), in a canonical form."""
    fields = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return _artifact.sha256(json.dumps(fields, sort_keys=True).encode())


def _rng_positions(args, flat_args):
    """Flat positions of the RNG key data and counter (they advance between calls)."""
    before = len(jax.tree_util.tree_leaves((args[0], args[1])))
    return [before, before + 1]


class LoadedGraph:
    """A saved graph step: call it with the same input tensors as the original graph.

    Its state (parameters, buffers, optimizer state, RNG) lives inside and advances with
    every call, as the original graph's did.
    """

    def __init__(self, path: str):
        path = _atomic.resolve(os.fspath(path))
        if not os.path.isdir(path):
            problem = "missing folder" if not os.path.exists(path) else "a file, not the folder Graph.save writes"
            raise _artifact.corrupt(_WHO, path, f"{problem}: not an fjax graph archive")
        meta_path, step_path, state_path = (os.path.join(path, n) for n in ("meta.json", "step.bin", "state.npz"))
        meta = _read_meta(meta_path)
        intact = meta.get("meta_sha256") == _meta_digest(meta)  # else: edited or corrupt, found below
        files = {step_path: _artifact.read_bytes(_WHO, step_path, "the compiled step")}
        files[state_path] = _artifact.read_bytes(_WHO, state_path, "the graph's state")
        for file, data in files.items() if intact and "sha256" in meta else ():
            size = meta.get("bytes", {}).get(os.path.basename(file), len(data))
            if len(data) != size:
                problem = "truncated" if len(data) < size else "longer than saved"
                raise _artifact.corrupt(_WHO, file, f"{problem}: expected {size} bytes, found {len(data)}")
            if _artifact.sha256(data) != meta["sha256"].get(os.path.basename(file)):
                raise _artifact.corrupt(
                    _WHO,
                    file,
                    f"{len(data)} bytes that do not match the checksum meta.json records: "
                    "truncated, overwritten, or a file of another save",
                )
        exported = _deserialize(step_path, files[step_path])
        carry = _read_state(state_path, files[state_path])
        _check_program(meta_path, step_path, state_path, meta, exported, carry)
        if "meta_sha256" in meta and not intact:
            raise _artifact.corrupt(
                _WHO, meta_path, "its fields do not match the checksum it records (meta_sha256): edited or corrupt"
            )
        self.meta, self._exported, self._carry = meta, exported, carry
        self._call = jax.jit(self._exported.call)

    def __call__(self, *inputs):
        arrays = [x._data if isinstance(x, Tensor) else np.asarray(x) for x in inputs]
        expected = self._exported.in_avals[len(self._carry) :]
        name = self.meta["graph"]
        if len(arrays) != len(expected):
            raise OpError(
                f"nn.Graph.load ({name}): the saved step takes {len(expected)} input tensors "
                f"({', '.join(_aval(a) for a in expected)}), got {len(arrays)}"
            )
        for i, (a, e) in enumerate(zip(arrays, expected)):
            if tuple(a.shape) != tuple(e.shape) or np.dtype(a.dtype) != np.dtype(e.dtype):
                raise OpError(
                    f"nn.Graph.load ({name}): input {i} must be {_aval(e)} as when the graph was saved, got {_aval(a)}"
                )
        state_out, outputs = self._call(*self._carry, *arrays)
        n = self.meta["n_state_out"]
        key_pos, counter_pos = self.meta["rng_positions"]
        self._carry = list(state_out[:n]) + self._carry[n:]
        self._carry[counter_pos] = np.asarray(self._carry[counter_pos]) + self.meta["draws"]
        outs = [Tensor._wrap(o) for o in outputs]
        return outs[0] if self.meta["outputs_single"] else tuple(outs)


def _aval(a) -> str:
    return f"{np.dtype(a.dtype).name}{list(a.shape)}"


# -- validating a saved graph before anything runs --------------------------------------------------
def _read_meta(path: str) -> dict:
    """``meta.json``, checked field by field (types, format); its agreement with the program is
    checked by ``_check_program``."""
    meta = _artifact.parse_json(_WHO, path, _artifact.read_bytes(_WHO, path, "the graph's metadata"), "metadata")
    if not isinstance(meta, dict):
        raise _artifact.corrupt(_WHO, path, f"the metadata is a JSON {type(meta).__name__}, not an fjax graph archive")
    if meta.get("format") != _FORMAT:
        raise _artifact.corrupt(
            _WHO, path, f"format {meta.get('format')!r:.60}, expected {_FORMAT!r}: not an fjax graph archive"
        )
    _artifact.check_fields(
        _WHO,
        path,
        meta,
        {
            "graph": _artifact.text,
            "n_carry": _artifact.count,
            "n_state_out": _artifact.count,
            "rng_positions": _two_counts,
            "draws": _uint32,
            "outputs_single": _artifact.flag,
        },
        "metadata",
    )
    optional = {
        "n_outputs": _artifact.count,
        "inputs": _specs_record,
        "bytes": _sizes,
        "sha256": _digests,
        "meta_sha256": _artifact.text,
    }
    _artifact.check_fields(_WHO, path, meta, {k: v for k, v in optional.items() if k in meta}, "metadata")
    return meta


def _two_counts(value) -> bool:
    """a list of two counts"""
    return isinstance(value, list) and len(value) == 2 and all(_artifact.count(v) for v in value)


def _uint32(value) -> bool:
    """a count below 2**32"""
    return _artifact.count(value) and value < 2**32


def _specs_record(value) -> bool:
    """a list of [shape, dtype name] pairs"""
    return isinstance(value, list) and all(
        isinstance(v, list)
        and len(v) == 2
        and isinstance(v[0], list)
        and all(_artifact.count(d) for d in v[0])
        and isinstance(v[1], str)
        for v in value
    )


def _sizes(value) -> bool:
    """an object of file name -> size in bytes"""
    return isinstance(value, dict) and all(_artifact.count(v) for v in value.values())


def _digests(value) -> bool:
    """an object of file name -> SHA-256"""
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


# what a corrupt flatbuffer (the serialised jax.export.Exported) or StableHLO bytecode raises while
# being decoded: the reader follows offsets read from the file, so any of these means a broken file
_DECODE_ERRORS = (
    struct.error,
    IndexError,
    KeyError,
    TypeError,
    ValueError,
    UnicodeDecodeError,
    AttributeError,
    AssertionError,
    OverflowError,
    jax.errors.JaxRuntimeError,
)


def _deserialize(path: str, data: bytes):
    """The ``jax.export.Exported`` in ``data``, its StableHLO parsed now (not at the first call)."""
    if not data:
        raise _artifact.corrupt(_WHO, path, "empty file (truncated): expected a serialised jax.export program")
    try:
        exported = jax.export.deserialize(bytearray(data))
        exported.in_avals, exported.out_avals, exported.out_tree, exported.platforms  # noqa: B018 - decoded lazily
        exported.mlir_module()
    except _DECODE_ERRORS as err:
        raise _artifact.corrupt(
            _WHO, path, f"not a readable jax.export program ({len(data)} bytes; {type(err).__name__}: {err})"[:400]
        ) from None
    return exported


_NPZ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, ValueError, KeyError, OSError, struct.error)


def _read_state(path: str, data: bytes) -> list:
    """The state arrays of ``state.npz`` (``arr_0`` ...), in order."""
    if data[:4] != b"PK\x03\x04":
        found = "empty file (truncated)" if not data else f"{len(data)} bytes that are not an .npz (zip) archive"
        raise _artifact.corrupt(_WHO, path, f"{found}: expected the graph's state arrays")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            names = sorted(z.files, key=lambda n: (len(n), n))
            arrays = {name: z[name] for name in names}
    except _NPZ_ERRORS as err:
        raise _artifact.corrupt(_WHO, path, f"a corrupt .npz archive ({type(err).__name__}: {err})"[:400]) from None
    expected = [f"arr_{i}" for i in range(len(names))]
    if names != expected:
        raise _artifact.corrupt(_WHO, path, f"holds arrays {names[:8]}, expected {expected[:8]}")
    return list(arrays.values())


def _check_program(meta_path, step_path, state_path, meta: dict, exported, carry: list) -> None:
    """The metadata, the program and the state must agree (counts, shapes, dtypes) before the step runs."""
    in_avals, out_avals = exported.in_avals, exported.out_avals
    n_carry, n_state = meta["n_carry"], meta["n_state_out"]
    children = exported.out_tree.children()
    if len(children) != 2:
        raise _artifact.corrupt(_WHO, step_path, f"the program returns {exported.out_tree}, not (state, outputs)")
    n_out = children[1].num_leaves
    if children[0].num_leaves != n_state:
        raise _artifact.corrupt(
            _WHO, meta_path, f"metadata says {n_state} state outputs, {_PROGRAM} has {children[0].num_leaves}"
        )
    if n_carry > len(in_avals):
        raise _artifact.corrupt(
            _WHO, meta_path, f"metadata says {n_carry} state inputs, {_PROGRAM} takes {len(in_avals)} inputs in all"
        )
    if len(carry) != n_carry:
        raise _artifact.corrupt(_WHO, meta_path, f"metadata says {n_carry} state arrays, state.npz holds {len(carry)}")
    if meta["rng_positions"] != [n_state, n_state + 1] or n_state + 2 > n_carry:
        raise _artifact.corrupt(
            _WHO,
            meta_path,
            f"rng_positions {meta['rng_positions']} must be [{n_state}, {n_state + 1}] (after the "
            f"{n_state} state values) within the {n_carry} state inputs",
        )
    for i, (array, aval) in enumerate(zip(carry, in_avals)):
        if tuple(array.shape) != tuple(aval.shape) or np.dtype(array.dtype) != np.dtype(aval.dtype):
            raise _artifact.corrupt(
                _WHO, state_path, f"state array {i} is {_aval(array)}, {_PROGRAM} takes {_aval(aval)}"
            )
    for i in range(n_state):
        if tuple(out_avals[i].shape) != tuple(in_avals[i].shape) or out_avals[i].dtype != in_avals[i].dtype:
            raise _artifact.corrupt(
                _WHO, step_path, f"state {i} goes in as {_aval(in_avals[i])} and comes out as {_aval(out_avals[i])}"
            )
    counter = in_avals[n_state + 1]
    if counter.shape != () or not np.issubdtype(np.dtype(counter.dtype), np.unsignedinteger):
        raise _artifact.corrupt(_WHO, meta_path, f"rng_positions name a {_aval(counter)} input, not the RNG counter")
    if "n_outputs" in meta and meta["n_outputs"] != n_out:
        raise _artifact.corrupt(_WHO, meta_path, f"metadata says {meta['n_outputs']} outputs, {_PROGRAM} has {n_out}")
    if meta["outputs_single"] and n_out != 1:
        raise _artifact.corrupt(_WHO, meta_path, f"metadata says the graph returns one tensor, {_PROGRAM} has {n_out}")
    inputs = in_avals[n_carry:]
    if "inputs" in meta:
        recorded = [f"{dtype}{shape}" for shape, dtype in meta["inputs"]]
        actual = [_aval(a) for a in inputs]
        if recorded != actual:
            raise _artifact.corrupt(
                _WHO, meta_path, f"metadata says the inputs are {recorded}, {_PROGRAM} takes {actual}"
            )
