"""Save a compiled nn.Graph step with ``jax.export`` plus its state; run it without model code."""

from __future__ import annotations

import json
import os
import shutil
import threading

import jax
import numpy as np

from .. import _atomic
from ..dispatch import without_deferred_checks
from ..errors import OpError
from ..tensor import Tensor
from .step import Step

_FORMAT = "fjax-graph-1"


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
    meta = {
        "format": _FORMAT,
        "graph": graph.name,
        "n_carry": n_carry,
        "n_state_out": len(jax.tree_util.tree_leaves((args[0], args[1]))),
        "rng_positions": _rng_positions(args, flat_args),
        "draws": int(entry.record["draws"]),
        "outputs_single": entry.record["out_tree"].num_leaves == 1 and entry.record["out_tree"].num_nodes == 1,
    }
    tmp = _atomic.temp_dir_beside(path)
    try:
        with open(os.path.join(tmp, "step.bin"), "wb") as f:
            f.write(exported.serialize())
        np.savez(os.path.join(tmp, "state.npz"), *[np.asarray(a) for a in flat_args[:n_carry]])
        with open(os.path.join(tmp, "meta.json"), "w") as f:
            json.dump(meta, f)
        _atomic.replace_dir(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


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
        path = _atomic.resolve(path)
        try:
            with open(os.path.join(path, "meta.json")) as f:
                self.meta = json.load(f)
            with open(os.path.join(path, "step.bin"), "rb") as f:
                self._exported = jax.export.deserialize(bytearray(f.read()))
            with np.load(os.path.join(path, "state.npz")) as z:
                self._carry = [z[f"arr_{i}"] for i in range(len(z.files))]
        except (OSError, ValueError, KeyError) as err:
            raise RuntimeError(f"nn.Graph.load: {path!r} is not a readable saved graph: {err}") from None
        if self.meta.get("format") != _FORMAT:
            raise RuntimeError(f"nn.Graph.load: {path!r} has format {self.meta.get('format')!r}, expected {_FORMAT}")
        self._call = jax.jit(self._exported.call)

    def __call__(self, *inputs):
        arrays = [x._data if isinstance(x, Tensor) else np.asarray(x) for x in inputs]
        expected = self._exported.in_avals[len(self._carry) :]
        name = self.meta.get("graph", "graph")
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
