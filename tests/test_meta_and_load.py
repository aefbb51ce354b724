"""The meta device (shapes and dtypes without values) and fjax.load's torch semantics
(weights_only=False, safe globals, torch-format files both ways), each against torch."""

from __future__ import annotations

import argparse
import collections
import copy
import io
import pickle
import zipfile

import numpy as np
import pytest
import torch

import fjax
import fjax.nn.functional as F
from fjax import nn
from fjax.nn.parameter import Parameter
from fjax.serialization import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

# -- the meta device ------------------------------------------------------------------------


def _same_meta(ours, theirs, where=""):
    """Both meta, same shape and dtype (recursing into tuples)."""
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _same_meta(a, b, f"{where}[{i}]")
        return
    assert theirs.is_meta and ours.is_meta, where
    assert ours.device == fjax.device("meta") and str(ours.device) == str(theirs.device), where
    assert tuple(ours.shape) == tuple(theirs.shape), f"{where}: {tuple(ours.shape)} != {tuple(theirs.shape)}"
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1], where


def test_meta_device_and_creation():
    d = fjax.device("meta")
    assert (repr(d), str(d), d.type, d.index) == ("device(type='meta')", "meta", "meta", None)
    assert d == "meta" and d != "cpu"
    with pytest.raises(RuntimeError, match="meta device has no jax device"):
        d.jax_device()
    cases = [
        (lambda lib: lib.empty(2, 3, device="meta"), "empty"),
        (lambda lib: lib.zeros((4,), dtype=lib.int64, device="meta"), "zeros"),
        (lambda lib: lib.ones(2, 2, dtype=lib.float64, device=lib.device("meta")), "ones"),
        (lambda lib: lib.full((3,), 7, device="meta"), "full"),
        (lambda lib: lib.randn(5, 2, device="meta"), "randn"),
        (lambda lib: lib.tensor([1.0, 2.0], device="meta"), "tensor"),
        (lambda lib: lib.arange(6, device="meta"), "arange"),
        (lambda lib: lib.empty(0, device="meta"), "empty0"),
        (lambda lib: lib.zeros_like(lib.empty(2, 3, device="meta")), "zeros_like"),
        (lambda lib: lib.empty(2, 3).to("meta"), "to"),
    ]
    for make, where in cases:
        _same_meta(make(fjax), make(torch), where)
    t = fjax.zeros(2, 3, device="meta", requires_grad=True)
    assert t.requires_grad and t.is_leaf
    assert repr(t) == "tensor(..., device='meta', size=(2, 3), dtype=fjax.float32, requires_grad=True)"
    assert not fjax.zeros(2).is_meta
    assert not fjax.empty_like(fjax.empty(2, device="meta"), device="cpu").is_meta


def test_ops_on_meta_tensors_give_torch_shapes():
    def ops(lib, fn):
        x = lib.empty(4, 6, device="meta")
        w = lib.empty(6, 3, device="meta")
        img = lib.empty(2, 3, 8, 8, device="meta")
        k = lib.empty(5, 3, 3, 3, device="meta")
        return {
            "add": x + 1,
            "add0d": x * lib.tensor(2.0),
            "matmul": x @ w,
            "sum": x.sum(1),
            "max": tuple(x.max(0)),
            "view": x.view(2, 12),
            "t": x.t(),
            "slice": x[1:, ::2],
            "index": x[2],
            "cat": lib.cat([x, x], 0),
            "stack": lib.stack([x, x]),
            "softmax": fn.softmax(x, dim=-1),
            "conv": fn.conv2d(img, k, padding=1),
            "linear": fn.linear(x, lib.empty(2, 6, device="meta")),
            "cast": x.to(lib.float64),
            "argmax": x.argmax(1),
            "clone": x.clone(),
            "expand": x[:, :1].expand(4, 5),
            "split": x.split(4, dim=1),
            "compare": x > 0,
        }

    ours, theirs = ops(fjax, F), ops(torch, torch.nn.functional)
    for name in theirs:
        _same_meta(ours[name], theirs[name], name)


def test_reading_meta_values_raises_torch_errors():
    x = fjax.empty(2, 3, device="meta")
    s = fjax.empty((), device="meta")
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        x.cpu()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        x.to("cpu")
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        x.tolist()
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
        x.numpy()
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
        np.asarray(x)
    for read in (s.item, lambda: float(s), lambda: bool(s)):
        with pytest.raises(RuntimeError, match=r"Tensor.item\(\) cannot be called on meta tensors"):
            read()
    # torch: a meta tensor mixes with 0-d tensors of other devices, not with others
    with pytest.raises(RuntimeError, match="Tensor on device cpu is not on the expected device meta"):
        x + fjax.ones(3)
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        fjax.ones(2, 3).copy_(x)
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        fjax.save({"x": x}, io.BytesIO())


def test_meta_autograd_and_in_place_writes():
    for lib in (fjax, torch):
        w = lib.randn(3, 2, device="meta", requires_grad=True)
        y = (lib.empty(5, 3, device="meta") @ w).relu()
        assert y.requires_grad and y.grad_fn is not None and y.is_meta
        y.sum().backward()
        assert w.grad.is_meta and tuple(w.grad.shape) == (3, 2)
        x = lib.ones(4, device="meta")
        v = x[1:3]
        v.add_(1)  # a view of a meta storage
        x.copy_(lib.ones(4))  # writing values into a meta tensor keeps it meta (nothing is stored)
        with lib.no_grad():
            x.uniform_(-1, 1)
        assert x.is_meta and v.is_meta and tuple(v.shape) == (2,)


def _nets(lib):
    n = lib.nn
    return n.Sequential(n.Conv2d(3, 4, 3, padding=1), n.BatchNorm2d(4), n.ReLU(), n.Flatten(), n.Linear(4 * 6 * 6, 5))


def test_module_to_meta_to_empty_and_skip_init():
    ours, theirs = _nets(fjax), _nets(torch)
    weight = ours[0].weight
    assert ours.to("meta") is ours and theirs.to("meta") is theirs
    assert ours[0].weight is weight and isinstance(weight, Parameter)  # converted in place
    for (name, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        _same_meta(p, tp, name)
        assert p.requires_grad == tp.requires_grad
    for (name, b), (_, tb) in zip(ours.named_buffers(), theirs.named_buffers()):
        _same_meta(b, tb, name)
    # eval: fjax's training-mode batch_norm updates its running stats outside the op table
    ours.eval(), theirs.eval()
    _same_meta(ours(fjax.empty(2, 3, 6, 6, device="meta")), theirs(torch.empty(2, 3, 6, 6, device="meta")), "fwd")
    _same_meta(copy.deepcopy(ours)[4].weight, copy.deepcopy(theirs)[4].weight, "deepcopy")

    assert ours.to_empty(device="cpu") is ours
    theirs.to_empty(device="cpu")
    assert ours[0].weight is weight and weight.requires_grad and not weight.is_meta
    for (name, t), (_, tt) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert tuple(t.shape) == tuple(tt.shape) and t.device == fjax.device("cpu"), name
    ours.load_state_dict({k: v.numpy() for k, v in _nets(torch).eval().state_dict().items()})
    assert ours.eval()(fjax.randn(2, 3, 6, 6)).shape == (2, 5)

    partial = nn.Sequential(nn.Linear(2, 2)).to("meta")
    partial.to_empty(device="cpu", recurse=False)
    assert partial[0].weight.is_meta  # only the module's own parameters (it has none)

    m, tm = nn.utils.skip_init(nn.Linear, 5, 1), torch.nn.utils.skip_init(torch.nn.Linear, 5, 1)
    assert isinstance(m, nn.Linear) and tuple(m.weight.shape) == tuple(tm.weight.shape) == (1, 5)
    assert not m.weight.is_meta and m.weight.requires_grad and m.bias.device == fjax.device("cpu")
    m2 = nn.utils.skip_init(nn.Linear, in_features=6, out_features=2, bias=False, device="cpu")
    assert tuple(m2.weight.shape) == (2, 6) and m2.bias is None
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
        nn.utils.skip_init(nn.ReLU)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int)


# -- fjax.load: weights_only=False, safe globals, torch files ---------------------------------


def _torch_checkpoint():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(8, 4)).square().sum().backward()
    opt.step()
    return {
        "args": argparse.Namespace(lr=0.1, arch="mlp", scale=torch.tensor([2.0, 3.0])),
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "epoch": 7,
        "param": torch.nn.Parameter(torch.randn(2, 2)),
        "dtype": torch.bfloat16,
        "size": torch.Size([2, 3]),
        "device": torch.device("cpu"),
        "tags": {"a", "b"},
        "counts": collections.Counter("aab"),
        "half": torch.randn(3).half(),
    }


def _same_as_torch(ours, theirs, where="obj"):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, fjax.Tensor), where
        assert isinstance(ours, Parameter) == isinstance(theirs, torch.nn.Parameter), where
        assert ours.requires_grad == theirs.requires_grad, where
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1], where
        t = theirs.detach()
        ref = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
        np.testing.assert_array_equal(np.asarray(ours.detach().float() if t.dtype == torch.bfloat16 else ours), ref)
    elif isinstance(theirs, dict):
        assert type(ours).__name__ == type(theirs).__name__ and list(ours) == list(theirs), where
        for k in theirs:
            _same_as_torch(ours[k], theirs[k], f"{where}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _same_as_torch(a, b, f"{where}[{i}]")
    elif isinstance(theirs, argparse.Namespace):
        assert type(ours) is argparse.Namespace, where
        _same_as_torch(vars(ours), vars(theirs), where)
    elif isinstance(theirs, (torch.dtype, torch.device)):
        assert str(ours).split(".")[-1] == str(theirs).split(".")[-1], where
    else:
        assert ours == theirs, where


def test_torch_checkpoint_with_objects_loads_with_weights_only_false(tmp_path):
    ckpt = _torch_checkpoint()
    torch.save(ckpt, tmp_path / "ckpt.pt")
    with pytest.raises(fjax.OpError, match=r"argparse.Namespace' is not allowed .*add_safe_globals"):
        fjax.load(tmp_path / "ckpt.pt")  # weights_only=True, torch's default
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module"):
        fjax.load(tmp_path / "ckpt.pt", pickle_module=pickle)
    ours = fjax.load(tmp_path / "ckpt.pt", weights_only=False)
    _same_as_torch(ours, ckpt)
    assert isinstance(ours["size"], fjax.Size) and ours["dtype"] is fjax.bfloat16
    assert ours["device"] == fjax.device("cpu") and type(ours["counts"]) is collections.Counter
    assert ours["model"]._metadata == ckpt["model"]._metadata
    _same_as_torch(fjax.load(tmp_path / "ckpt.pt", pickle_module=pickle, weights_only=False), ckpt)
    # the model and optimizer state continue in fjax
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    model.load_state_dict(ours["model"])
    opt = fjax.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.load_state_dict(ours["optimizer"])
    assert ours["epoch"] == 7 and ours["args"].arch == "mlp"


def test_safe_globals_allow_a_weights_only_load(tmp_path):
    ckpt = _torch_checkpoint()
    torch.save(ckpt, tmp_path / "ckpt.pt")
    assert get_safe_globals() == []
    with safe_globals([argparse.Namespace]):
        assert get_safe_globals() == [argparse.Namespace]
        ours = fjax.load(tmp_path / "ckpt.pt")
    assert get_safe_globals() == []
    _same_as_torch(ours, ckpt)
    assert isinstance(ours["args"].scale, fjax.Tensor)  # tensors inside allowed objects are placed too
    try:
        add_safe_globals([(argparse.Namespace, "argparse.Namespace")])
        _same_as_torch(fjax.load(tmp_path / "ckpt.pt", map_location="cpu"), ckpt)
        meta = fjax.load(tmp_path / "ckpt.pt", map_location="meta")
        assert meta["param"].is_meta and isinstance(meta["param"], Parameter) and meta["param"].shape == (2, 2)
    finally:
        clear_safe_globals()
    assert get_safe_globals() == []
    with pytest.raises(TypeError, match="module.name"):
        add_safe_globals([(argparse.Namespace, 1)])


class _Flag:
    pass


def test_weights_only_keeps_safe_classes_and_process_state_intact(tmp_path):
    """A hostile file that names an allowed class may build instances of it, never change it."""

    def write(name, payload):
        with zipfile.ZipFile(tmp_path / name, "w") as zf:
            zf.writestr("archive/data.pkl", b"\x80\x02" + payload + b".")
        return tmp_path / name

    glob = f"c{__name__}\n_Flag\n".encode()
    text = b"X\x04\x00\x00\x00evil"
    # BUILD on the class itself: setattr(_Flag, "evil", None)
    on_class = write("class.pt", glob + b"N}" + text + b"Ns\x86b")
    # REDUCE on an instance (not a global the pickle was handed)
    on_instance = write("call.pt", glob + b")\x81" + b")R")
    # APPENDS into an allowed class object
    appends = write("append.pt", glob + b"(K\x01e")
    with safe_globals([_Flag]):
        for path in (on_class, on_instance, appends):
            with pytest.raises(fjax.OpError, match="UnpicklingError"):
                fjax.load(path)
        good = write("good.pt", glob + b")\x81}" + text + b"K\x01sb")  # an instance with state: allowed
        assert fjax.load(good).evil == 1
    assert not hasattr(_Flag, "evil")


def test_fjax_save_pt_files_load_in_torch(tmp_path):
    model = nn.Linear(3, 2)
    obj = {
        "model": model.state_dict(),
        "weight": model.weight,
        "frozen": Parameter(fjax.ones(2), requires_grad=False),
        "args": argparse.Namespace(lr=0.5, name="run"),
        "epoch": 3,
        "dtype": fjax.bfloat16,
        "size": model.weight.shape,
        "device": fjax.device("cpu"),
        "tensors": [
            fjax.tensor([1.5, -2.0], dtype=fjax.bfloat16),
            fjax.arange(6).reshape(2, 3).t(),
            fjax.tensor([True, False]),
            fjax.tensor([1 + 2j], dtype=fjax.complex128),
            fjax.tensor(3.0, requires_grad=True),
        ],
    }
    fjax.save(obj, tmp_path / "ckpt.pt")
    theirs = torch.load(tmp_path / "ckpt.pt", weights_only=False)
    _same_as_torch(obj, theirs)
    assert isinstance(theirs["weight"], torch.nn.Parameter) and theirs["size"] == torch.Size([2, 3])
    with torch.serialization.safe_globals([argparse.Namespace]):
        _same_as_torch(obj["model"], torch.load(tmp_path / "ckpt.pt", mmap=True)["model"])
    t_model = torch.nn.Linear(3, 2)
    t_model.load_state_dict(theirs["model"])
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(
        t_model(torch.tensor(x)).detach().numpy(), model(fjax.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6
    )
    # and back into fjax, both ways of loading
    _same_as_torch(fjax.load(tmp_path / "ckpt.pt", weights_only=False), theirs)
    with safe_globals([argparse.Namespace]):
        _same_as_torch(fjax.load(tmp_path / "ckpt.pt"), theirs)
    # a .pth path with a plain state_dict: torch's default weights_only load reads it
    fjax.save(model.state_dict(), tmp_path / "model.pth")
    _same_as_torch(model.state_dict(), torch.load(tmp_path / "model.pth"))


def test_torch_format_save_keeps_zero_dim_tensors(tmp_path):
    path = tmp_path / "scalars.pt"
    fjax.save({"step": fjax.tensor(5.0), "w": fjax.ones(2, 3).t()}, path)
    for loaded in (fjax.load(path), torch.load(path)):
        assert tuple(loaded["step"].shape) == () and float(loaded["step"]) == 5.0
        assert tuple(loaded["w"].shape) == (3, 2)


def test_save_to_an_open_pt_file_writes_torch_format(tmp_path):
    """``with open("model.pt", "wb") as f: torch.save(model, f)``, the word-language-model idiom."""
    model = fjax.nn.LSTM(4, 3)
    path = tmp_path / "model.pt"
    with open(path, "wb") as f:
        fjax.save(model, f)
    with open(path, "rb") as f:
        loaded = fjax.load(f, weights_only=False)
    assert type(loaded) is fjax.nn.LSTM
    np.testing.assert_array_equal(loaded.weight_ih_l0.detach().numpy(), model.weight_ih_l0.detach().numpy())
    with open(path, "wb") as f:
        fjax.save({"step": fjax.tensor(3.0)}, f)
    assert tuple(torch.load(path)["step"].shape) == ()


def test_new_tensors_of_a_meta_tensor_are_meta():
    x = fjax.empty(2, 3, device="meta")
    for made in (
        x.new_zeros(4, 5),
        x.new_ones(2),
        x.new_empty(3),
        x.new_full((2,), 7.0),
        fjax.ones(2).new_zeros(2, device="meta"),
    ):
        assert made.is_meta and made.dtype == fjax.float32
    assert x.new_zeros(4, 5).shape == (4, 5)
    assert not fjax.ones(2).new_zeros(2).is_meta


def test_random_ops_and_init_on_meta_draw_nothing():
    state = fjax.random.default_generator.get_state()
    huge = fjax.randn(100_000, 100_000, device="meta")  # 40 GB if it were drawn
    assert huge.is_meta and huge.shape == (100_000, 100_000)
    for t in (fjax.rand(2, device="meta"), fjax.randint(0, 5, (3,), device="meta"), fjax.randperm(4, device="meta")):
        assert t.is_meta
    layer = fjax.nn.Linear(50_000, 50_000, device="meta")
    fjax.nn.init.kaiming_uniform_(layer.weight)
    fjax.nn.init.normal_(layer.bias)
    assert layer.weight.is_meta and layer.bias.is_meta
    assert bool((fjax.random.default_generator.get_state() == state).all())  # the generator did not advance
