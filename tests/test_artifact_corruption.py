"""Corrupt or mismatched artifacts raise one clear error: ``fjax.errors.CorruptArtifactError``
naming the file and what is wrong, before anything runs or is restored.

Real artifacts are saved (an nn.Graph with Linear + BatchNorm, ``fjax.save`` of a state_dict in
fjax's safetensors format and in torch's zip format, an orbax checkpoint of a model and its
optimizer), then each of their files is truncated at several offsets, overwritten with seeded
random garbage, deleted, swapped with another artifact's file, or has its metadata edited to
wrong but well-formed values (counts, shapes, dtypes).

A load must raise ``CorruptArtifactError`` whose message names the broken file, or, where a
byte carries no meaning (a zip entry's padding, orbax's ``commit_success.txt`` markers, the
per-process copies orbax keeps after merging them) or a format has no checksum, load and give
exactly the saved values. Never a raw library exception, never a silent run on wrong data.
Which files are checked how:

- nn.Graph: ``meta.json`` records the size and SHA-256 of ``step.bin`` and ``state.npz`` and
  of its own fields; every corruption raises. Metadata edits are caught by comparing the
  metadata with the program (``metadata says 3 outputs, the program has 2``), also in a save
  without checksums.
- fjax.save: fjax's safetensors files record a CRC-32 per tensor and of the structure record;
  torch zip files have zip CRC-32s (a flip in an entry's padding or the serialization id loads
  the same values).
- orbax: JSON records are parsed by fjax first (bounded, named); tensorstore's OCDBT files are
  checksummed by tensorstore; the ``ocdbt.process_*`` folders are unused after the merge.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import shutil
import zipfile

import numpy as np
import pytest

import fjax
from fjax import nn
from fjax.distributed import checkpoint
from fjax.errors import CorruptArtifactError

SEED = 20250


class _Net(nn.Graph):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)
        self.bn = nn.BatchNorm1d(n_out)

    def build(self, x):
        return self.bn(self.lin(x))


class _TwoOut(nn.Graph):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def build(self, x):
        y = self.lin(x)
        return y, y.sum()


def _files(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def _truncate(path: str, cut: int) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(cut)


def _garbage(path: str, rng: random.Random) -> None:
    data = bytearray(open(path, "rb").read())
    if not data:
        return
    start = rng.randrange(len(data))
    length = min(rng.randint(1, 16), len(data) - start)
    data[start : start + length] = bytes(rng.randrange(256) for _ in range(length))
    open(path, "wb").write(bytes(data))


def _expect_error(load, file: str):
    """``load()`` raises CorruptArtifactError naming ``file`` (a path, or the end of one)."""
    with pytest.raises(CorruptArtifactError) as info:
        load()
    assert file in str(info.value), (file, str(info.value))
    return info.value


def _error_or_same(load, file: str, same) -> str:
    """``load()`` raises CorruptArtifactError naming ``file``, or loads what was saved (``same(result)``)."""
    try:
        result = load()
    except CorruptArtifactError as err:
        assert file in str(err), (file, str(err))
        return "error"
    same(result)
    return "loaded"


# -- nn.Graph -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    root = tmp_path_factory.mktemp("graphs")
    fjax.manual_seed(0)
    x = fjax.randn(5, 4)
    g = _Net(4, 3)
    g(x)
    g.save(str(root / "g"))
    other = _Net(4, 6)  # same files, other shapes: for swapping
    other(x)
    other.save(str(root / "other"))
    two = _TwoOut()
    two(x)
    two.save(str(root / "two"))
    expected = nn.Graph.load(str(root / "g"))(x).numpy()
    return root, x, expected


def _graph_case(graphs, tmp_path, mutate):
    root, x, expected = graphs
    work = tmp_path / "case"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(root / "g", work)
    mutate(str(work))
    return lambda: nn.Graph.load(str(work))(x), expected


def test_graph_truncated_garbage_deleted_swapped(graphs, tmp_path):
    rng = random.Random(SEED)
    root = graphs[0]
    for name in ("meta.json", "step.bin", "state.npz"):
        size = os.path.getsize(root / "g" / name)
        for cut in (0, 1, size // 2, size - 1):
            load, _ = _graph_case(graphs, tmp_path, lambda d, cut=cut, name=name: _truncate(os.path.join(d, name), cut))
            err = _expect_error(load, name)
            if name != "meta.json" and cut:
                assert f"truncated: expected {size} bytes, found {cut}" in str(err)
        for _ in range(4):
            load, expected = _graph_case(graphs, tmp_path, lambda d, name=name: _garbage(os.path.join(d, name), rng))
            _error_or_same(load, name, lambda out, e=expected: np.testing.assert_array_equal(out.numpy(), e))
        load, _ = _graph_case(graphs, tmp_path, lambda d, name=name: os.remove(os.path.join(d, name)))
        assert "missing file" in str(_expect_error(load, name))
        load, _ = _graph_case(
            graphs, tmp_path, lambda d, name=name: shutil.copy(root / "other" / name, os.path.join(d, name))
        )
        _expect_error(load, name)


def _edit_meta(**fields):
    def mutate(d):
        path = os.path.join(d, "meta.json")
        meta = json.load(open(path))
        meta.update(fields)
        json.dump(meta, open(path, "w"))

    return mutate


def _strip_checksums(d):
    """A save as fjax wrote it before checksums: only the program can catch wrong metadata."""
    path = os.path.join(d, "meta.json")
    meta = json.load(open(path))
    for key in ("bytes", "sha256", "meta_sha256"):
        meta.pop(key)
    json.dump(meta, open(path, "w"))


@pytest.mark.parametrize("checksums", [True, False])
def test_graph_metadata_that_disagrees_with_the_program(graphs, tmp_path, checksums):
    meta = json.load(open(graphs[0] / "g" / "meta.json"))
    n_carry, n_state = meta["n_carry"], meta["n_state_out"]
    edits = {
        "n_carry": ([n_carry - 1, n_carry + 1], r"metadata says \d+ state arrays, state.npz holds"),
        "n_state_out": ([n_state - 1, n_state + 2], r"metadata says \d+ state outputs, the program \(step.bin\) has"),
        "n_outputs": ([3, 0], r"metadata says \d+ outputs, the program \(step.bin\) has 1"),
        "inputs": ([[[[6, 4], "float32"]], [[[5, 4], "float64"]], []], "metadata says the inputs are"),
        "rng_positions": ([[0, 1], [n_state, n_state + 5]], "rng_positions"),
        "draws": ([-1, "2"], "'draws'"),
        "format": (["fjax-graph-0"], "not an fjax graph archive"),
        "graph": ([None], "'graph'"),
    }
    for field, (values, message) in edits.items():
        for value in values:

            def mutate(d, field=field, value=value):
                if not checksums:
                    _strip_checksums(d)
                _edit_meta(**{field: value})(d)

            load, _ = _graph_case(graphs, tmp_path, mutate)
            err = _expect_error(load, "meta.json")
            assert re.search(message, str(err)), (field, value, str(err))
    # fields the program cannot check (the RNG draws per call, the output's nesting): the checksum
    load, _ = _graph_case(graphs, tmp_path, _edit_meta(outputs_single=False))
    assert "meta_sha256" in str(_expect_error(load, "meta.json"))


def test_graph_structure_records(graphs, tmp_path):
    for text, message in [
        ("[" * 100_000 + "]" * 100_000, "nests 100000 levels deep, more than the 1000 allowed"),
        ("[1, 2]", "is a JSON list"),
        ('{"format": "fjax-graph-1"}', "has no field"),
        ("", "empty"),
    ]:
        load, _ = _graph_case(graphs, tmp_path, lambda d, t=text: open(os.path.join(d, "meta.json"), "w").write(t))
        assert message in str(_expect_error(load, "meta.json"))
    # a program with two outputs under the metadata of a one-output graph
    root = graphs[0]

    def swap_program(d):
        _strip_checksums(d)
        for name in ("step.bin", "state.npz"):
            shutil.copy(root / "two" / name, os.path.join(d, name))

    load, _ = _graph_case(graphs, tmp_path, swap_program)
    err = _expect_error(load, "meta.json")
    assert "the program (step.bin)" in str(err)
    load, _ = _graph_case(graphs, tmp_path, lambda d: shutil.rmtree(d))
    assert "missing folder" in str(_expect_error(load, "case"))


def test_graph_error_is_the_callers_types():
    err = CorruptArtifactError("x", "/p")
    assert isinstance(err, fjax.OpError) and isinstance(err, RuntimeError) and isinstance(err, ValueError)
    assert isinstance(err, __import__("pickle").UnpicklingError) and err.path == "/p"


# -- fjax.save / fjax.load --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("saved")
    fjax.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    obj = {"model": model.state_dict(), "epoch": 3, "extra": (1, [2.0, None])}
    for ext in ("safetensors", "pt"):
        fjax.save(obj, str(root / f"sd.{ext}"))
    expected = {k: v.numpy() for k, v in model.state_dict().items()}
    return root, expected


def _same_state(expected):
    def check(loaded):
        assert loaded["epoch"] == 3 and loaded["extra"] == (1, [2.0, None])
        assert sorted(loaded["model"]) == sorted(expected)
        for k, v in expected.items():
            np.testing.assert_array_equal(loaded["model"][k].numpy(), v)

    return check


@pytest.mark.parametrize("ext", ["safetensors", "pt"])
def test_fjax_load_truncated_and_garbage(saved, tmp_path, ext):
    root, expected = saved
    rng = random.Random(SEED + len(ext))
    src, path = root / f"sd.{ext}", str(tmp_path / f"x.{ext}")
    size = os.path.getsize(src)
    for cut in (0, 1, 8, 9, size // 2, size - 1):
        shutil.copy(src, path)
        _truncate(path, cut)
        _expect_error(lambda: fjax.load(path), path)
    outcomes = []
    for _ in range(25):
        shutil.copy(src, path)
        _garbage(path, rng)
        outcomes.append(_error_or_same(lambda: fjax.load(path), path, _same_state(expected)))
    assert outcomes.count("error") >= 10, outcomes
    if ext == "safetensors":  # CRC-32s: no flip loads
        assert set(outcomes) == {"error"}, outcomes
    os.remove(path)
    with pytest.raises(FileNotFoundError, match="no such file"):  # torch's type for a missing file
        fjax.load(path)


def _rewrite_safetensors(src, dst, edit, fix_crc: bool):
    import safetensors.numpy

    from fjax import serialization

    with open(src, "rb") as fh:
        data = fh.read()
    n = int.from_bytes(data[:8], "little")
    metadata = json.loads(data[8 : 8 + n])["__metadata__"]
    arrays = safetensors.numpy.load(data)
    metadata["structure"] = edit(metadata["structure"])
    if fix_crc:  # a consistent-looking edit: the checksums match the edited record
        metadata["crc32"] = json.dumps(serialization._checksums(arrays, metadata["structure"]))
    safetensors.numpy.save_file(arrays, dst, metadata=metadata)


@pytest.mark.parametrize("fix_crc", [True, False])
def test_fjax_load_structure_records(saved, tmp_path, fix_crc):
    src, dst = saved[0] / "sd.safetensors", str(tmp_path / "edited.safetensors")
    edits = {
        "names a tensor the file does not hold": (
            lambda s: s.replace('"model.0.weight"', '"model.9.weight"', 1),
            "the file does not hold",
        ),
        "nested 5000 deep": (lambda s: "[" * 5000 + "]" * 5000, "nests 5000 levels deep"),
        "not JSON": (lambda s: s[: len(s) // 2], "not valid JSON"),
        "unknown record": (lambda s: s.replace('"$tu"', '"$zz"'), "unknown record"),
        "unhashable key": (lambda s: s.replace('["epoch", 3]', '[["epoch"], 3]'), "unhashable"),
        "flag of the wrong type": (lambda s: s.replace('"rg": ', '"rg": 3, "was": ', 1), "'rg'"),
    }
    for edit, message in edits.values():
        _rewrite_safetensors(src, dst, edit, fix_crc)
        err = _expect_error(lambda: fjax.load(dst), dst)
        assert (message if fix_crc else "CRC-32") in str(err), str(err)


def test_fjax_load_deep_torch_pickle(tmp_path):
    # 3000 nested lists, written opcode by opcode (pickle itself recurses): EMPTY_LIST x3000, APPEND x2999
    payload = b"\x80\x02" + b"]" * 3000 + b"a" * 2999 + b"."
    path = str(tmp_path / "deep.pt")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/version", "3\n")
    open(path, "wb").write(buf.getvalue())
    assert "nests too deeply" in str(_expect_error(lambda: fjax.load(path), path))


# -- orbax checkpoints ----------------------------------------------------------------------------
def _target(n_out=3, groups=1):
    fjax.manual_seed(7)
    model = nn.Sequential(nn.Linear(4, n_out), nn.BatchNorm1d(n_out))
    params = list(model.parameters())
    if groups == 1:
        opt = fjax.optim.Adam(params, lr=0.01)
    else:
        opt = fjax.optim.Adam([{"params": params[:2]}, {"params": params[2:]}], lr=0.01)
    return {"model": model, "opt": opt}


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpts")
    fjax.manual_seed(3)
    saved = _target()
    with fjax.no_grad():
        for p in saved["model"].parameters():
            p.add_(1.5)
    checkpoint.save(str(root / "ck"), saved, step=1)
    checkpoint.save(str(root / "other"), _target(n_out=5, groups=2), step=1)
    expected = {k: v.numpy() for k, v in saved["model"].state_dict().items()}
    return root, expected


def _ckpt_load(ckpts, tmp_path, mutate):
    root, expected = ckpts
    work = tmp_path / "ck"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(root / "ck", work)
    mutate(str(work / "1"))
    target = _target()
    before = {k: v.numpy() for k, v in target["model"].state_dict().items()}

    def load():
        try:
            checkpoint.load(str(work), target)
        except CorruptArtifactError:  # nothing was restored
            for k, v in target["model"].state_dict().items():
                np.testing.assert_array_equal(v.numpy(), before[k])
            raise
        return target

    def same(loaded):
        for k, v in loaded["model"].state_dict().items():
            np.testing.assert_array_equal(v.numpy(), expected[k])
        assert loaded["opt"].param_groups[0]["lr"] == 0.01

    return load, same


# files whose loss is harmless: markers, and the per-process databases orbax merged into state/
_UNUSED = ("commit_success.txt", "ocdbt.process_")
_OPTIONAL = ("_CHECKPOINT_METADATA", "_sharding", "array_metadatas")


def test_orbax_checkpoint_files(ckpts, tmp_path):
    root = ckpts[0]
    rng = random.Random(SEED)
    files = _files(str(root / "ck" / "1"))
    assert any(f.startswith(os.path.join("state", "d")) for f in files), files
    unused = [f for f in files if any(u in f for u in _UNUSED)]
    used = [f for f in files if f not in unused]
    for name in used + rng.sample(unused, 2):
        size = os.path.getsize(root / "ck" / "1" / name)
        harmless = name in unused
        cases = [lambda p: _truncate(p, 0), lambda p, size=size: _truncate(p, size // 2), lambda p: _garbage(p, rng)]
        cases.append(lambda p: os.remove(p))
        for i, mutate in enumerate(cases):
            load, same = _ckpt_load(ckpts, tmp_path, lambda d, m=mutate, name=name: m(os.path.join(d, name)))
            # fjax names the JSON records; for tensorstore's files, the step folder (tensorstore names the file)
            record = name.startswith(("meta", "_", os.path.join("state", "_"), os.path.join("state", "array")))
            shown = os.path.join("ck", "1", name) if record else os.path.join("ck", "1")
            if harmless or (i == 3 and any(o in name for o in _OPTIONAL)):
                _error_or_same(load, shown, same)
            else:
                _expect_error(load, shown)


def test_orbax_metadata_that_disagrees_with_the_target(ckpts, tmp_path):
    root = ckpts[0]

    def edit_json(rel, change):
        def mutate(d):
            path = os.path.join(d, rel)
            record = json.load(open(path))
            change(record)
            json.dump(record, open(path, "w"))

        return mutate

    def shape_of(record, key, shape):
        record["tree_metadata"][key]["value_metadata"]["write_shape"] = shape

    meta_file, tree_file = os.path.join("meta", "metadata"), os.path.join("state", "_METADATA")
    weight = "('model', '0', 'weight')"
    cases = [
        (meta_file, edit_json(meta_file, lambda r: r["opt"].append(dict(r["opt"][0]))), "saved with 2 parameter group"),
        (meta_file, edit_json(meta_file, lambda r: r["opt"][0].update(lr="fast")), "'lr' is 'fast'"),
        (meta_file, edit_json(meta_file, lambda r: r["opt"][0].update(betas=[0.9])), "'betas'"),
        (meta_file, edit_json(meta_file, lambda r: r.pop("opt")), "no hyper-parameters for optimizer"),
        (tree_file, edit_json(tree_file, lambda r: shape_of(r, weight, [3, 40])), "shards of shape [3, 40]"),
        (tree_file, edit_json(tree_file, lambda r: shape_of(r, weight, [3])), "shards of shape [3]"),
        (tree_file, edit_json(tree_file, lambda r: r.pop("tree_metadata")), "no tree_metadata"),
        (tree_file, lambda d: open(os.path.join(d, tree_file), "w").write("[" * 50_000), "nests 50000 levels"),
        (meta_file, lambda d: shutil.copy(root / "other" / "1" / meta_file, os.path.join(d, meta_file)), "group"),
        (tree_file, lambda d: shutil.copy(root / "other" / "1" / tree_file, os.path.join(d, tree_file)), "shape"),
    ]
    for file, mutate, message in cases:
        load, _ = _ckpt_load(ckpts, tmp_path, mutate)
        err = _expect_error(load, file)
        assert message in str(err), (message, str(err))
    # the target has another layout than the checkpoint: a mismatch named with the step folder
    with pytest.raises(CorruptArtifactError, match=r"ck/1: .*weight: saved \(3, 4\):float32, expected \(5, 4\)"):
        checkpoint.load(str(root / "ck"), _target(n_out=5))
