"""fjax.save / fjax.load: round trips, safetensors interop, atomic writes, corrupt files, torch.save files."""

from __future__ import annotations

import io
import math
import os
import pickle
import zipfile
from collections import OrderedDict

import jax.numpy as jnp
import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch

import fjax
import fjax.optim
from fjax import serialization
from fjax.nn.parameter import Parameter
from fjax.serialization import load, save

from .optim.helper import fresh_seed

DTYPES = [
    np.float32,
    np.float64,
    np.float16,
    jnp.bfloat16,
    np.int64,
    np.int32,
    np.int8,
    np.uint8,
    np.bool_,
    np.complex64,
    np.complex128,
]


def _random(rng, shape, dtype):
    a = rng.standard_normal(shape) * 3
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return np.asarray(a > 0 if dtype == np.bool_ else a).astype(dtype)


def _same(a, b, where="obj"):
    """Exact equality of values, types, dtypes, shapes and container kinds."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, fjax.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad, where
        np.testing.assert_array_equal(np.asarray(a._data), np.asarray(b._data), err_msg=where)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, where


def _nested(rng):
    tensors = {f"t_{np.dtype(d).name}": fjax.tensor(_random(rng, (2, 3), d)) for d in DTYPES}
    return {
        "tensors": tensors,
        "scalar": fjax.tensor(_random(rng, (), np.float32)),
        "empty": fjax.tensor(_random(rng, (0, 4), np.float32)),
        "param": Parameter(fjax.tensor(_random(rng, (3,), np.float32))),
        "frozen": Parameter(fjax.tensor(_random(rng, (3,), np.float32)), requires_grad=False),
        "leaf": fjax.tensor(_random(rng, (2,), np.float64), requires_grad=True),
        "numpy": _random(rng, (2, 2), np.float32),
        "optimizer": {
            "state": {0: {"step": fjax.tensor(3.0), "exp_avg": fjax.tensor(_random(rng, (3,), np.float32))}},
            "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "foreach": None, "params": [0], "amsgrad": False}],
        },
        "scalars": [1, -2.5, float("inf"), float("nan"), True, None, "text", "ü"],
        "tuple": (1, (2, [3])),
        (1, "a"): "tuple key",
        3: "int key",
        None: "none key",
        "a.b": fjax.tensor([1.0]),
        "a": {"b": fjax.tensor([2.0])},  # the same dotted name as "a.b": stored under a unique one
        "dtype": fjax.bfloat16,
    }


def test_roundtrip_nested(tmp_path):
    seed = fresh_seed()
    obj = _nested(np.random.default_rng(seed))
    save(obj, tmp_path / "ckpt.safetensors")
    _same(obj, load(tmp_path / "ckpt.safetensors"), f"seed={seed}")
    buffer = io.BytesIO()
    save(obj, buffer)
    _same(obj, load(io.BytesIO(buffer.getvalue())), f"seed={seed} (file object)")


def test_state_dict_file_is_plain_safetensors(tmp_path):
    """Other safetensors readers see a flat state_dict under its own keys; fjax reads their files back."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    sd = {
        "layer.weight": fjax.tensor(_random(rng, (4, 3), np.float32)),
        "layer.bias": fjax.tensor(_random(rng, (4,), np.float16)),
    }
    save(sd, tmp_path / "model.safetensors")
    theirs = safetensors.numpy.load_file(tmp_path / "model.safetensors")
    assert sorted(theirs) == sorted(sd)
    for k, v in sd.items():
        np.testing.assert_array_equal(theirs[k], v.numpy(), err_msg=f"seed={seed} {k}")
    torch_sd = {"w": torch.randn(3, 2).bfloat16(), "n": torch.arange(5), "m": torch.rand(2) > 0.5}
    safetensors.torch.save_file(torch_sd, tmp_path / "torch.safetensors")
    ours = load(tmp_path / "torch.safetensors")
    assert sorted(ours) == sorted(torch_sd)
    for k, v in torch_sd.items():
        assert str(ours[k].dtype).split(".")[1] == str(v.dtype).split(".")[1]
        np.testing.assert_array_equal(np.asarray(ours[k]._data, np.float32), v.float().numpy())


def test_crash_mid_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    v1 = {"w": fjax.tensor(np.arange(1000, dtype=np.float32)), "step": 1}
    save(v1, path)

    def crash(tmp, arrays, metadata):
        with open(tmp, "wb") as fh:
            fh.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(serialization, "_write_file", crash)
    with pytest.raises(OSError, match="disk full"):
        save({"w": fjax.zeros(1000), "step": 2}, path)
    _same(v1, load(path))
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]  # the temporary file is gone


def test_corrupt_files_raise_naming_the_path(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    save({"w": fjax.ones((64, 64)), "x": [1, 2]}, path)
    data = path.read_bytes()
    for cut in (4, 20, len(data) // 2, len(data) - 1):
        bad = tmp_path / f"cut{cut}.safetensors"
        bad.write_bytes(data[:cut])
        with pytest.raises(fjax.OpError, match=f"fjax.load: .*cut{cut}.safetensors.*(corrupt|truncated|neither)"):
            load(bad)
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01 not a checkpoint at all")
    with pytest.raises(fjax.OpError, match="junk.bin.*neither a safetensors file nor a torch.save zip file"):
        load(junk)
    bad_structure = tmp_path / "structure.safetensors"
    bad_structure.write_bytes(
        safetensors.numpy.save({"w": np.ones(2)}, metadata={"format": serialization._FORMAT, "structure": '{"$x": 1}'})
    )
    with pytest.raises(fjax.OpError, match="structure.safetensors has a corrupt structure record"):
        load(bad_structure)
    with pytest.raises(FileNotFoundError, match="no such file .*missing.pt"):
        load(tmp_path / "missing.pt")


def test_save_rejects_what_it_cannot_store(tmp_path):
    with pytest.raises(fjax.OpError, match=r"cannot save obj\['a'\]\[1\] of type builtins.set"):
        save({"a": [1, {2}]}, tmp_path / "x")
    with pytest.raises(fjax.OpError, match=r"obj\['b'\] has a key of type object"):
        save({"b": {object(): 1}}, tmp_path / "x")
    with pytest.raises(fjax.OpError, match=r"obj\['c'\] has dtype uint16, which fjax checkpoints do not store"):
        save({"c": np.zeros(2, np.uint16)}, tmp_path / "x")
    with pytest.raises(NotImplementedError, match="map_location"):
        load(tmp_path / "x", map_location=lambda s, loc: s)
    assert not (tmp_path / "x").exists()


def _torch_checkpoint(rng):
    torch.manual_seed(int(rng.integers(1 << 30)))
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    opt = torch.optim.Adam(model.parameters(), lr=0.01, amsgrad=True)
    model(torch.randn(8, 4)).square().sum().backward()
    opt.step()
    base = torch.randn(4, 6)
    return {
        "model": model.state_dict(),
        "optim": opt.state_dict(),
        "param": torch.nn.Parameter(torch.randn(2, 2)),
        "frozen": torch.nn.Parameter(torch.randn(2), requires_grad=False),
        "transposed": base.t(),  # non-contiguous
        "views": [base[1], base[2:, ::2]],  # offsets and strides into one shared storage
        "dtypes": [torch.randn(3).to(d) for d in (torch.float16, torch.bfloat16, torch.float64, torch.complex64)]
        + [
            torch.arange(4),
            torch.arange(4, dtype=torch.int32),
            torch.rand(3) > 0.5,
            torch.arange(3, dtype=torch.uint8),
        ],
        "meta": {"epoch": 3, "name": "run", "shape": (2, 3), "none": None, "dtype": torch.float16, "blob": b"\x00\xff"},
    }


def _to_numpy(obj):
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    if isinstance(obj, fjax.Tensor):
        a = np.asarray(obj._data)
        return a.astype(np.float32) if a.dtype == jnp.bfloat16 else a
    raise TypeError(type(obj))


def _same_as_torch(ours, theirs, where):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, fjax.Tensor), where
        assert isinstance(ours, Parameter) == isinstance(theirs, torch.nn.Parameter), where
        assert ours.requires_grad == theirs.requires_grad, where
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1], where
        assert tuple(ours.shape) == tuple(theirs.shape), where
        np.testing.assert_array_equal(_to_numpy(ours), _to_numpy(theirs), err_msg=where)
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs), where
        for k in theirs:
            _same_as_torch(ours[k], theirs[k], f"{where}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _same_as_torch(a, b, f"{where}[{i}]")
    elif isinstance(theirs, torch.dtype):
        assert ours == getattr(fjax, str(theirs).split(".")[1]), where
    else:
        assert ours == theirs, where


def test_loads_torch_save_files(tmp_path):
    seed = fresh_seed()
    ckpt = _torch_checkpoint(np.random.default_rng(seed))
    torch.save(ckpt, tmp_path / "torch.pt")
    ours = load(tmp_path / "torch.pt", map_location="cpu")
    _same_as_torch(ours, ckpt, f"seed={seed}")
    assert ours["model"]._metadata == ckpt["model"]._metadata


def test_torch_optimizer_checkpoint_continues_in_fjax(tmp_path):
    """torch.save(opt.state_dict()) -> fjax.load -> fjax optimizer: same next steps as torch."""
    from .optim.helper import Problem, run_both

    problem = Problem(fresh_seed(), steps=8)
    tp = problem.torch_params()
    t_opt = torch.optim.AdamW(tp, lr=0.05, amsgrad=True)
    for x, y in problem.batches[:3]:
        t_opt.zero_grad()
        problem.torch_loss(tp, x, y).backward()
        t_opt.step()
    torch.save({"params": [p.detach() for p in tp], "optim": t_opt.state_dict()}, tmp_path / "ckpt.pt")
    ckpt = load(tmp_path / "ckpt.pt")
    fp = [fjax.tensor(p, requires_grad=True) for p in ckpt["params"]]
    f_opt = fjax.optim.AdamW(fp, lr=0.05, amsgrad=True)
    f_opt.load_state_dict(ckpt["optim"])
    problem.batches = problem.batches[3:]
    run_both(problem, f_opt, t_opt, fp, tp)


def _zip_with_pickle(path, payload: bytes, storages=None):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/byteorder", "little")
        for key, raw in (storages or {}).items():
            zf.writestr(f"archive/data/{key}", raw)


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_torch_loader_refuses_code_and_bad_layouts(tmp_path):
    marker = tmp_path / "pwned"
    _zip_with_pickle(tmp_path / "evil.pt", pickle.dumps({"w": _Exploit(marker)}, protocol=2))
    with pytest.raises(
        fjax.OpError, match=r"evil.pt'?: UnpicklingError: global '(posix|os|nt)\.system' is not allowed"
    ):
        load(tmp_path / "evil.pt")
    assert not marker.exists()

    class _Storage:
        pass

    class _Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", "cpu", 4) if isinstance(obj, _Storage) else None

    class _Tensor:
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, (_Storage(), 0, (100,), (1,), False, OrderedDict()))

    buffer = io.BytesIO()
    _Pickler(buffer, protocol=2).dump({"w": _Tensor()})
    _zip_with_pickle(tmp_path / "oob.pt", buffer.getvalue(), {"0": np.zeros(4, np.float32).tobytes()})
    with pytest.raises(fjax.OpError, match=r"oob.pt'?: .*tensor of size \(100,\) reads past its storage of 4 elements"):
        load(tmp_path / "oob.pt")
    _zip_with_pickle(tmp_path / "short.pt", buffer.getvalue(), {"0": np.zeros(2, np.float32).tobytes()})
    with pytest.raises(fjax.OpError, match=r"short.pt'?: .*storage 0 has 8 bytes, expected 16"):
        load(tmp_path / "short.pt")


def test_truncated_and_legacy_torch_files(tmp_path):
    torch.save({"w": torch.randn(50, 50)}, tmp_path / "good.pt")
    data = (tmp_path / "good.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(fjax.OpError, match="cannot read torch checkpoint .*cut.pt"):
        load(tmp_path / "cut.pt")
    torch.save({"w": torch.randn(2)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(fjax.OpError, match="legacy.pt is in torch's legacy"):
        load(tmp_path / "legacy.pt")


def _pickle_ops(*parts: bytes) -> bytes:
    """A protocol-2 pickle from raw opcodes (what a hostile file holds)."""
    return b"\x80\x02" + b"".join(parts) + b"."


def _text(s: str) -> bytes:
    return b"X" + len(s).to_bytes(4, "little") + s.encode()


def test_a_hostile_torch_file_changes_no_process_state(tmp_path):
    """BUILD opcodes on the globals a weights-only load hands out (a dtype, the rebuild
    functions) must not reach fjax's own objects."""
    before = (fjax.get_default_dtype(), repr(fjax.float32), np.dtype(fjax.float32), fjax.randn(2).dtype)
    payloads = {
        # setattr(<dtype float32>, "dtype", <dtype float64>); setattr(..., "name", "float64")
        "dtype": _pickle_ops(
            b"ctorch\nfloat32\n",
            b"N}",
            _text("name"),
            _text("float64"),
            b"s",
            _text("dtype"),
            b"ctorch\nfloat64\n",
            b"s\x86b",
        ),
        # setattr(_rebuild_tensor_v2, "__defaults__", (0,)) and its __dict__
        "function": _pickle_ops(
            b"ctorch._utils\n_rebuild_tensor_v2\n", b"N}", _text("__defaults__"), b"K\x00\x85s\x86b"
        ),
        "encode": _pickle_ops(b"c_codecs\nencode\n", b"}", _text("__kwdefaults__"), b"}s", b"b"),
    }
    for name, payload in payloads.items():
        _zip_with_pickle(tmp_path / f"{name}.pt", payload)
        try:
            load(tmp_path / f"{name}.pt")
        except fjax.OpError:
            pass  # refusing is fine; changing fjax is not
        after = (fjax.get_default_dtype(), repr(fjax.float32), np.dtype(fjax.float32), fjax.randn(2).dtype)
        assert after == before, f"{name}: {after} != {before}"
    # a real file still loads after the attempts
    torch.save({"w": torch.arange(6.0).reshape(2, 3)}, tmp_path / "good.pt")
    np.testing.assert_array_equal(load(tmp_path / "good.pt")["w"].numpy(), np.arange(6.0).reshape(2, 3))


def test_a_tiny_file_cannot_make_load_allocate_much(tmp_path):
    class _Storage:
        pass

    class _Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", "cpu", 1) if isinstance(obj, _Storage) else None

    class _Expanded:  # 10^8 elements from a 1-element storage: 400 MB if materialized
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, (_Storage(), 0, (10_000, 10_000), (0, 0), False, OrderedDict()))

    buffer = io.BytesIO()
    _Pickler(buffer, protocol=2).dump({"w": _Expanded()})
    _zip_with_pickle(tmp_path / "expand.pt", buffer.getvalue(), {"0": np.zeros(1, np.float32).tobytes()})
    assert (tmp_path / "expand.pt").stat().st_size < 2000
    with pytest.raises(fjax.OpError, match=r"expand.pt'?: .*would materialize 100000000 elements from a storage of 1"):
        load(tmp_path / "expand.pt")
    # a zip bomb: a small compressed entry that would decompress to 200 MB
    with zipfile.ZipFile(tmp_path / "bomb.pt", "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("archive/data.pkl", pickle.dumps({}, protocol=2))
        zf.writestr("archive/data/0", b"\0" * (200 << 20))
    assert (tmp_path / "bomb.pt").stat().st_size < 1 << 20
    with pytest.raises(fjax.OpError, match=r"bomb.pt declares \d+ bytes of entries .* refusing"):
        load(tmp_path / "bomb.pt")
    # expanded tensors torch saves (stride 0, moderate size) still load, as torch gives them
    torch.save({"e": torch.arange(3.0).expand(4, 3)}, tmp_path / "ok.pt")
    np.testing.assert_array_equal(load(tmp_path / "ok.pt")["e"].numpy(), np.tile(np.arange(3.0), (4, 1)))


_SAVE_LOOP = """
import sys, numpy as np, fjax
k = 0
while True:
    fjax.save({"w": fjax.tensor(np.full(200_000, float(k), np.float32)), "step": k}, sys.argv[1])
    print(k, flush=True)
    k += 1
"""


def test_a_process_killed_while_saving_leaves_a_whole_checkpoint(tmp_path):
    import random
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "ckpt.safetensors"
    rng = random.Random(os.getpid())
    for _ in range(3):
        child = subprocess.Popen([sys.executable, "-c", _SAVE_LOOP, str(path)], stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip().isdigit()  # one save done
        time.sleep(rng.uniform(0.0, 0.5))
        child.send_signal(signal.SIGKILL)
        child.wait()
        loaded = load(path)
        w = loaded["w"].numpy()
        assert (w == loaded["step"]).all(), "a mix of two saves"
        for name in os.listdir(tmp_path):  # only the target, or temporaries of the killed save
            assert name == "ckpt.safetensors" or (name.startswith(".ckpt.safetensors.") and name.endswith(".tmp"))
