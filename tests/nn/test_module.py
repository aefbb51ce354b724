"""Module API against torch: registration, traversal, state_dict/load_state_dict, hooks,
modes, conversion, repr and copying."""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import torch

import fjax
from fjax import nn

from .helper import close, copy_weights, rng


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(2, 3, 3)
            self.bn = lib.nn.BatchNorm2d(3)
            self.head = lib.nn.Sequential(
                OrderedDict(fc=lib.nn.Linear(3, 4), act=lib.nn.ReLU(), out=lib.nn.Linear(4, 2))
            )
            self.register_buffer("scale", lib.ones(2))
            self.register_buffer("cache", lib.zeros(2), persistent=False)
            self.gain = lib.nn.Parameter(lib.ones(1))

        def forward(self, x):
            h = self.bn(self.conv(x)).mean((2, 3))
            return self.head(h) * self.scale * self.gain

    return Net()


def test_names_and_traversal_match_torch():
    fj, th = _net(fjax), _net(torch)
    for method in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        assert [n for n, _ in getattr(fj, method)()] == [n for n, _ in getattr(th, method)()], method
    assert list(fj.state_dict()) == list(th.state_dict())
    assert [n for n, _ in fj.named_parameters(prefix="m", recurse=False)] == ["m.gain"]
    assert [n for n, _ in fj.head.named_parameters("head")] == [n for n, _ in th.head.named_parameters("head")]
    assert [type(m).__name__ for m in fj.modules()] == [type(m).__name__ for m in th.modules()]
    assert fj.get_submodule("head.fc") is fj.head.fc and fj.get_parameter("head.out.bias") is fj.head.out.bias
    assert fj.get_buffer("bn.running_var") is fj.bn.running_var


def test_forward_and_grads_after_loading_torch_weights():
    fj, th = _net(fjax), _net(torch)
    copy_weights(fj, th)
    x = rng().standard_normal((2, 2, 5, 5)).astype(np.float32)
    fj_out, th_out = fj(fjax.tensor(x)), th(torch.from_numpy(x))
    close(fj_out, th_out, "Net output", 1e-4, 1e-5)
    fj_out.sum().backward()
    th_out.sum().backward()
    for (name, p), (_, q) in zip(fj.named_parameters(), th.named_parameters()):
        close(p.grad, q.grad, f"grad of {name}", 1e-3, 1e-4)
    for (name, b), (_, c) in zip(fj.named_buffers(), th.named_buffers()):
        close(b, c, f"buffer {name}", 1e-4, 1e-5)


def test_shared_modules_and_tied_parameters():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = self.a
            self.c = nn.Linear(2, 2)
            self.c.weight = self.a.weight

    m = Tied()
    assert len(list(m.parameters())) == 3  # a.weight, a.bias, c.bias
    assert list(m.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias", "c.weight", "c.bias"]
    assert len(list(m.named_parameters(remove_duplicate=False))) == 6
    m.load_state_dict({k: v.numpy() for k, v in m.state_dict().items()})


def test_load_state_dict_copies_in_place_and_casts():
    lin = nn.Linear(3, 2)
    weight = lin.weight
    w = rng().standard_normal((2, 3))  # float64 input is cast to the parameter's float32
    result = lin.load_state_dict({"weight": w, "bias": fjax.zeros(2)})
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert lin.weight is weight and lin.weight.dtype == fjax.float32 and lin.weight.requires_grad
    close(lin.weight, w.astype(np.float32), "loaded weight", 0, 0)
    src = fjax.ones(2)
    lin.load_state_dict({"weight": w, "bias": src}, assign=True)
    assert isinstance(lin.bias, nn.Parameter) and lin.bias.requires_grad


def test_load_state_dict_errors_name_keys_and_shapes():
    net = _net(fjax)
    state = {k: v.numpy() for k, v in net.state_dict().items()}
    missing = dict(state)
    del missing["head.fc.bias"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "head.fc.bias"') as err:
        net.load_state_dict(missing)
    assert "Error(s) in loading state_dict for Net" in str(err.value)
    extra = dict(state, **{"head.fc.extra": np.ones(1), "bogus": np.ones(1)})
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "bogus", "head.fc.extra"'):
        net.load_state_dict(extra)
    result = net.load_state_dict(extra, strict=False)
    assert result.unexpected_keys == ["bogus", "head.fc.extra"] and result.missing_keys == []
    assert net.load_state_dict(missing, strict=False).missing_keys == ["head.fc.bias"]
    wrong = dict(state, **{"conv.weight": np.ones((3, 2, 2, 2))})
    expected = (
        "size mismatch for conv.weight: copying a param with shape fjax.Size([3, 2, 2, 2]) from checkpoint, "
        "the shape in current model is fjax.Size([3, 2, 3, 3])."
    )
    for strict in (True, False):
        with pytest.raises(RuntimeError) as err:
            net.load_state_dict(wrong, strict=strict)
        assert expected in str(err.value)
    with pytest.raises(TypeError, match="dict-like"):
        net.load_state_dict([1, 2])


def test_failed_load_changes_nothing():
    lin = nn.Linear(2, 2)
    before = lin.weight.detach().numpy().copy()
    with pytest.raises(RuntimeError):
        lin.load_state_dict({"weight": np.zeros((2, 2)), "bias": np.zeros(3)})
    np.testing.assert_array_equal(lin.weight.detach().numpy(), before)


def test_state_dict_values_are_detached_and_keep_vars():
    lin = nn.Linear(2, 2)
    sd = lin.state_dict()
    assert not sd["weight"].requires_grad
    assert lin.state_dict(keep_vars=True)["weight"] is lin.weight
    assert list(lin.state_dict(prefix="enc.")) == ["enc.weight", "enc.bias"]


def test_setattr_registration_rules():
    m = nn.Module()
    m.w = nn.Parameter(fjax.ones(2))
    m.sub = nn.Linear(1, 1)
    m.register_buffer("buf", fjax.zeros(1))
    m.plain = 3
    assert [n for n, _ in m.named_parameters()] == ["w", "sub.weight", "sub.bias"]
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'w'"):
        m.w = fjax.ones(2)
    with pytest.raises(TypeError, match="as buffer 'buf'"):
        m.buf = 3
    m.w = None
    assert "w" not in dict(m.named_parameters())
    del m.sub
    assert not hasattr(m, "sub")
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'missing'"):
        _ = m.missing
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("plain", fjax.zeros(1))
    with pytest.raises(KeyError, match=r'contain "\."'):
        m.register_parameter("a.b", None)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(fjax.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_train_eval_requires_grad_zero_grad_apply():
    net = _net(fjax)
    assert net.training and net.head.fc.training
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    out = net(fjax.randn(2, 2, 5, 5)).sum()
    out.backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen[0] == "Conv2d"


def test_to_dtype_converts_floating_state_only():
    net = _net(fjax)
    w = net.conv.weight
    net.to(fjax.float64)
    assert net.conv.weight is w and w.dtype == fjax.float64 and w.requires_grad
    assert net.bn.running_mean.dtype == fjax.float64 and net.bn.num_batches_tracked.dtype == fjax.int64
    assert net(fjax.randn(2, 2, 5, 5, dtype=fjax.float64)).dtype == fjax.float64
    net.float()
    assert w.dtype == fjax.float32
    net.to("cpu")
    with pytest.raises(TypeError, match="floating point or complex"):
        net.to(fjax.int64)


def test_forward_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(tuple(out.shape)) or out + 1)
    h3 = lin.register_forward_pre_hook(
        lambda m, args, kwargs: calls.append("kw") or None, with_kwargs=True, prepend=True
    )
    out = lin(fjax.randn(3, 2))
    assert calls == ["kw", (3, 2)]
    close(out, (lin.bias + 1).detach().expand(3, 2), "hooked output", 1e-6, 1e-6)
    for h in (h1, h2, h3):
        h.remove()
    x = fjax.randn(3, 2)
    close(lin(x), x @ lin.weight.detach().t() + lin.bias.detach(), "unhooked output", 1e-6, 1e-6)
    with lin.register_forward_hook(lambda m, a, kw, out: out * 0, with_kwargs=True):
        assert float(lin(x).abs().sum()) == 0
    assert float(lin(x).abs().sum()) > 0


def test_missing_forward():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward"'):
        nn.Module()(1)


def test_repr_matches_torch():
    assert repr(_net(fjax)) == repr(_net(torch))
    layers = [
        ("Linear", (3, 4)), ("Linear", (3, 4, False)), ("Bilinear", (2, 3, 4)), ("Conv2d", (3, 4, 3)),
        ("Conv1d", (4, 4, 3, 2, "same" and 1, 2, 2, False, "circular")),
        ("Conv2d", (3, 4, 3)), ("ConvTranspose2d", (3, 4, 3, 2, 1, 1, 1, False, 2)),
        ("BatchNorm1d", (3,)), ("BatchNorm2d", (3, 1e-3, None, False)), ("LayerNorm", ((2, 3),)),
        ("GroupNorm", (2, 4)), ("RMSNorm", (4,)), ("InstanceNorm2d", (3,)), ("Embedding", (5, 3, -1)),
        ("Dropout", (0.2,)), ("Dropout2d", ()), ("AlphaDropout", (0.1, True)), ("Flatten", ()),
        ("Unflatten", (1, (2, 3))), ("MaxPool2d", (3, 2, 1)), ("AvgPool1d", (2,)), ("AvgPool2d", (3,)),
        ("AdaptiveAvgPool2d", ((2, None),)), ("MSELoss", ()), ("CrossEntropyLoss", ()),
        ("MultiheadAttention", (8, 2)), ("TransformerEncoderLayer", (8, 2, 16)),
        ("TransformerDecoderLayer", (8, 2, 16)), ("Identity", ()),
    ]  # fmt: skip
    for name, args in layers:
        assert repr(getattr(nn, name)(*args)) == repr(getattr(torch.nn, name)(*args)), name
    th_stack = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16), 2, enable_nested_tensor=False)
    assert repr(nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2)) == repr(th_stack)


def test_deepcopy_and_pickle_keep_parameters():
    net = _net(fjax)
    clone = copy.deepcopy(net)
    params = dict(clone.named_parameters())
    assert list(params) == [n for n, _ in net.named_parameters()]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in params.values())
    assert params["conv.weight"] is not net.conv.weight
    close(params["conv.weight"].detach(), net.conv.weight.detach(), "copied weight", 0, 0)
    assert "cache" in dict(clone.named_buffers()) and "cache" not in clone.state_dict()
    seq = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    loaded = pickle.loads(pickle.dumps(seq))
    assert all(isinstance(p, nn.Parameter) for p in loaded.parameters())
    for (name, a), b in zip(seq.state_dict().items(), loaded.state_dict().values()):
        close(a, b, f"unpickled {name}", 0, 0)
