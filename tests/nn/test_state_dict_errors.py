"""Generated ``load_state_dict`` faults against torch: random module trees, and state dicts with
non-tensor values, wrong shapes, other dtypes, missing and unexpected keys (several at once, with
and without torch's ``_metadata``, strict or not). fjax must fail where torch fails, with torch's
message (``torch.`` read as ``fjax.``), which names each offending key, and otherwise load the
same values and return the same missing and unexpected keys."""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import fjax

SEED = 61


def _spec(rng, depth=0):
    """A random module tree, as a list of (name, kind, args)."""
    out, width = [], int(rng.integers(2, 4))
    for k in range(int(rng.integers(1, 4))):
        kind = rng.choice(["linear", "bn", "conv", "seq"] if depth < 2 else ["linear", "bn", "conv"])
        name = str(k) if rng.random() < 0.6 else f"m{k}"
        if kind == "linear":
            out.append((name, kind, (width, int(rng.integers(1, 4)), bool(rng.random() < 0.7))))
        elif kind == "bn":
            out.append((name, kind, (width, bool(rng.random() < 0.8))))
        elif kind == "conv":
            out.append((name, kind, (width, int(rng.integers(1, 3)), int(rng.integers(1, 3)))))
        else:
            out.append((name, kind, _spec(rng, depth + 1)))
    return out


def _build(lib, spec):
    layers = OrderedDict()
    for name, kind, args in spec:
        if kind == "linear":
            layers[name] = lib.nn.Linear(*args[:2], bias=args[2])
        elif kind == "bn":
            layers[name] = lib.nn.BatchNorm1d(args[0], track_running_stats=args[1])
        elif kind == "conv":
            layers[name] = lib.nn.Conv1d(*args)
        else:
            layers[name] = _build(lib, args)
    return lib.nn.Sequential(layers)


def _values(rng, model):
    """Fresh values for every entry of ``model.state_dict()`` (numpy, by key)."""
    out = {}
    for k, v in model.state_dict().items():
        shape = tuple(v.shape)
        if v.dtype == torch.int64:
            out[k] = rng.integers(0, 9, shape).astype(np.int64)
        else:
            out[k] = rng.standard_normal(shape).astype(np.float32)
    return out


NON_TENSORS = ["hello", None, 1.5, 3, [1.0, 2.0], {"a": 1}]
DTYPES = [np.float64, np.int64, np.int32, np.bool_, np.float16]


def _faults(rng, values):
    """Edits to the state dict: (kind, key, new value or None)."""
    keys, edits = list(values), []
    for _ in range(int(rng.choice([1, 1, 2, 3]))):
        kind = rng.choice(["non_tensor", "shape", "dtype", "missing", "unexpected"])
        key = keys[int(rng.integers(len(keys)))]
        a = values[key]
        if kind == "non_tensor":
            edits.append((kind, key, NON_TENSORS[int(rng.integers(len(NON_TENSORS)))]))
        elif kind == "shape":
            shape = list(a.shape)
            if shape and rng.random() < 0.7:
                d = int(rng.integers(len(shape)))
                shape[d] += 1
            else:
                shape.append(int(rng.integers(1, 3)))  # one dim more (0-d entry, (1,) value: torch unwraps it)
            edits.append((kind, key, rng.standard_normal(shape).astype(a.dtype)))
        elif kind == "dtype":
            dtype = DTYPES[int(rng.integers(len(DTYPES)))]
            edits.append((kind, key, np.asarray(rng.standard_normal(a.shape) * 3).astype(dtype)))
        elif kind == "missing":
            edits.append((kind, key, None))
        else:
            stem = key.rsplit(".", 1)[0] if "." in key else ""
            new = rng.choice(["extra", f"{stem}.extra" if stem else "zz", f"{key}.sub", "99.weight", f"{stem}.99.bias"])
            edits.append((kind, str(new).lstrip("."), rng.standard_normal(2).astype(np.float32)))
    return edits


def _state(lib, values, edits, metadata):
    sd = OrderedDict((k, lib.tensor(v)) for k, v in values.items())
    for kind, key, value in edits:
        if kind == "missing":
            sd.pop(key, None)
        else:
            sd[key] = lib.tensor(value) if isinstance(value, np.ndarray) else value
    if metadata is not None:
        sd._metadata = metadata
    return sd


def _load(lib, model, sd, strict):
    try:
        return "ok", model.load_state_dict(sd, strict=strict)
    except Exception as err:  # noqa: BLE001 - the class and message are what is compared
        return type(err), err


def _snapshot(model):
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("trial", range(40))
def test_load_state_dict_faults_match_torch(trial):
    rng = np.random.default_rng([SEED, trial])
    spec = _spec(rng)
    fmodel, tmodel = _build(fjax, spec), _build(torch, spec)
    values = _values(rng, tmodel)
    assert list(values) == list(fmodel.state_dict()), "the two trees name their entries alike"
    edits = _faults(rng, values)
    strict = bool(rng.random() < 0.5)
    with_metadata = rng.random() < 0.5  # without: torch's BatchNorm accepts a missing num_batches_tracked
    tmeta = getattr(tmodel.state_dict(), "_metadata", None) if with_metadata else None
    fmeta = getattr(fmodel.state_dict(), "_metadata", None) if with_metadata else None
    assert (tmeta is None) == (fmeta is None) and (tmeta is None or dict(tmeta) == dict(fmeta))
    before = _snapshot(fmodel)
    with warnings.catch_warnings():  # torch warns copying a complex value into a real one: not compared here
        warnings.simplefilter("ignore")
        theirs = _load(torch, tmodel, _state(torch, values, edits, tmeta), strict)
    ours = _load(fjax, fmodel, _state(fjax, values, edits, fmeta), strict)
    what = f"trial {trial}: strict={strict}, metadata={with_metadata}, edits={[(k, key) for k, key, _ in edits]}"
    if theirs[0] != "ok":
        assert ours[0] != "ok", f"{what}: fjax loaded, torch raised {theirs[1]}"
        assert issubclass(ours[0], theirs[0]), f"{what}: {ours[1]!r} vs torch {theirs[1]!r}"
        assert str(ours[1]) == str(theirs[1]).replace("torch.", "fjax."), what
        for _kind, key, _ in edits:  # each offending key is named (torch names it too)
            if f'"{key}"' in str(theirs[1]) or f" {key}:" in str(theirs[1]):
                assert key in str(ours[1]), what
        after = _snapshot(fmodel)  # a failed load changes nothing (torch may have loaded part)
        assert all(np.array_equal(after[k], before[k]) for k in before), what
        return
    assert ours[0] == "ok", f"{what}: fjax raised {ours[1]!r}, torch loaded"
    assert ours[1].missing_keys == theirs[1].missing_keys, what
    assert ours[1].unexpected_keys == theirs[1].unexpected_keys, what
    loaded, missing = _snapshot(fmodel), {key for kind, key, _ in edits if kind == "missing"}
    for k, v in tmodel.state_dict().items():
        if k in missing:
            continue  # each keeps its own initial value
        np.testing.assert_array_equal(loaded[k], v.detach().numpy(), err_msg=f"{what}: {k}")


def test_every_fault_kind_is_generated_and_raises_somewhere():
    rng = np.random.default_rng(SEED)
    kinds = set()
    for _ in range(60):
        model = _build(torch, _spec(rng))
        kinds |= {k for k, _, _ in _faults(rng, _values(rng, model))}
    assert kinds == {"non_tensor", "shape", "dtype", "missing", "unexpected"}


@pytest.mark.parametrize("value", NON_TENSORS, ids=[type(v).__name__ for v in NON_TENSORS])
def test_a_non_tensor_value_is_named_not_blamed_on_its_shape(value):
    model = fjax.nn.Sequential(fjax.nn.Linear(2, 3), fjax.nn.BatchNorm1d(3))
    sd = dict(model.state_dict(), **{"1.bias": value})
    with pytest.raises(RuntimeError) as err:
        model.load_state_dict(sd)
    assert 'While copying the parameter named "1.bias", expected fjax.Tensor or Tensor-like object' in str(err.value)
    assert "size mismatch" not in str(err.value) and "0." not in str(err.value)
