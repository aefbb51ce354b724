"""compile_from_torch shares parameters and buffers with the torch module both ways, captures once
per mode (dynamic) or per shape (static), keeps ``size`` entries, and refuses what it cannot map
with an error naming the op and the module path."""

from __future__ import annotations

import copy
import logging

import numpy as np
import pytest
import torch
from torch import nn

import fjax


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).mean((2, 3)))


def _x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_parameters_are_torchs_memory():
    tm = Small()
    m = fjax.compile_from_torch(tm)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert list(m.state_dict()) == list(tm.state_dict())
    for (name, p), tp in zip(m.named_parameters(), tm.parameters()):
        assert p._data.unsafe_buffer_pointer() == tp.data_ptr(), name  # zero-copy through DLPack
    assert m.torch_module is tm


@pytest.mark.parametrize("use_graph", [False, True])
def test_torch_side_writes_are_seen_by_the_next_call(use_graph):
    tm = Small().eval()
    m = fjax.compile_from_torch(tm, use_graph=use_graph)
    x = _x(2, 3, 6, 6)
    with torch.no_grad():
        m(x)
    opt = torch.optim.SGD(tm.parameters(), lr=0.5)  # a torch optimizer step
    tm(x).square().sum().backward()
    opt.step()
    with torch.no_grad():
        np.testing.assert_allclose(m(x).numpy(), tm(x).numpy(), rtol=1e-5, atol=1e-6)
        # load_state_dict, in place
        other = Small().eval()
        tm.load_state_dict(other.state_dict())
        np.testing.assert_allclose(m(x).numpy(), other(x).numpy(), rtol=1e-5, atol=1e-6)
        # rebinding .data to a new tensor
        tm.fc.weight.data = torch.ones(2, 4)
        np.testing.assert_allclose(m(x).numpy(), tm(x).numpy(), rtol=1e-5, atol=1e-6)
        assert m.fc.weight.detach().numpy().tolist() == [[1.0] * 4] * 2


def test_fjax_training_writes_into_the_torch_module():
    tm = Small().train()
    expected = copy.deepcopy(tm)
    m = fjax.compile_from_torch(tm)
    x = _x(4, 3, 5, 5, seed=1)
    opt = fjax.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    t_opt = torch.optim.SGD(expected.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        opt.zero_grad()
        m(fjax.tensor(x.numpy())).square().mean().backward()
        opt.step()
        t_opt.zero_grad()
        expected(x).square().mean().backward()
        t_opt.step()
    for (name, p), q in zip(tm.state_dict().items(), expected.state_dict().values()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    # fjax's load_state_dict writes torch's memory too
    m.load_state_dict({k: fjax.zeros_like(v) for k, v in m.state_dict().items()})
    assert all(float(p.abs().sum()) == 0 for p in tm.parameters())


def test_training_inside_a_users_graph_writes_back():
    """A user's nn.Graph donates the parameters it owns: the torch module still ends equal to
    the same steps taken eagerly, and keeps its own memory."""
    tm = Small().train()
    twin = copy.deepcopy(tm)
    m, m_eager = fjax.compile_from_torch(tm, use_graph=False), fjax.compile_from_torch(twin, use_graph=False)
    ptrs = [p.data_ptr() for p in tm.parameters()]

    class Train(fjax.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m
            self.add_optimizer(fjax.optim.SGD(m.parameters(), lr=0.05))

        def build(self, x):
            loss = self.m(x).square().mean()
            loss.backward()
            return loss

    step, opt = Train(), fjax.optim.SGD(m_eager.parameters(), lr=0.05)
    for seed in range(3):
        x = fjax.tensor(_x(2, 3, 5, 5, seed=seed).numpy())
        step(x)
        opt.zero_grad()
        m_eager(x).square().mean().backward()
        opt.step()
    assert [p.data_ptr() for p in tm.parameters()] == ptrs
    for (name, p), q in zip(tm.state_dict().items(), twin.state_dict().values()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_dynamic_captures_once_static_once_per_shape_and_size_bounds_both():
    shapes = [(2, 3, 4, 4), (3, 3, 6, 5), (4, 3, 5, 7)]
    dyn = fjax.compile_from_torch(Small().eval())
    static = fjax.compile_from_torch(Small().eval(), options={"dynamic": False, "size": 2})
    with torch.no_grad():
        for i, shape in enumerate(shapes):
            for m in (dyn, static):
                np.testing.assert_allclose(
                    m(_x(*shape)).numpy(), m.torch_module(_x(*shape)).numpy(), rtol=1e-5, atol=1e-6
                )
            assert len(dyn._programs) == 1
            assert len(static._programs) == min(i + 1, 2)
    with torch.no_grad():  # a batch of one runs the same capture
        got, want = dyn(_x(1, 3, 4, 4)).numpy(), dyn.torch_module(_x(1, 3, 4, 4)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)  # (as above: an output may be near 0)
    assert len(dyn._programs) == 1
    dyn.train()
    with torch.no_grad():
        dyn(_x(*shapes[0]))
    assert len(dyn._programs) == 2  # training mode is another capture (BatchNorm's batch statistics)


def test_a_dimension_torch_specialized_is_captured_again():
    """torch.export fixes a dimension of size 1 in the example (its 0/1 specialization): a capture made
    at batch 1 serves only batch 1, and a batch of 2 is captured anew rather than run wrongly."""

    class Heads(nn.Module):
        def forward(self, x):
            b, t, c = x.shape
            return x.view(b, t, 2, c // 2).transpose(1, 2).reshape(b * 2, t, c // 2)

    m = fjax.compile_from_torch(Heads(), use_graph=False)
    for shape, captures in [((1, 3, 4), 1), ((2, 3, 4), 2), ((1, 5, 4), 2), ((3, 5, 4), 2)]:
        x = _x(*shape)
        np.testing.assert_array_equal(m(x).numpy(), Heads()(x).numpy())
        assert len(m._programs) == captures, shape


def test_fjax_inputs_return_fjax_tensors_torch_inputs_torch_tensors():
    m = fjax.compile_from_torch(nn.Sequential(nn.Linear(3, 2), nn.Tanh()))
    assert isinstance(m(torch.ones(1, 3)), torch.Tensor)
    out = m(fjax.ones(1, 3))
    assert isinstance(out, fjax.Tensor) and out.requires_grad


def test_structured_inputs_and_outputs():
    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 2), nn.Linear(3, 4)

        def forward(self, inputs, scale=2.0):
            return {"a": self.a(inputs["x"]) * scale, "b": (self.b(inputs["y"]), inputs["y"].sum())}

    tm = Pair()
    m = fjax.compile_from_torch(tm, use_graph=False)
    inputs = {"x": _x(2, 3), "y": _x(5, 3, seed=1)}
    out, ref = m(inputs), tm(inputs)
    np.testing.assert_allclose(out["a"].numpy(), ref["a"].detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["b"][0].numpy(), ref["b"][0].detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["b"][1].numpy(), ref["b"][1].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_unsupported_op_names_the_op_and_the_module_path():
    class Inner(nn.Module):
        def forward(self, x):
            return torch.ops.aten._cdist_forward(x, x, 2.0, None)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Sequential(nn.Linear(3, 3), Inner())

        def forward(self, x):
            return self.block(x)

    m = fjax.compile_from_torch(Outer(), use_graph=False)
    with pytest.raises(NotImplementedError, match=r"aten\._cdist_forward\.default used in block\.1 \(Inner\)"):
        m(torch.ones(2, 3))


def test_options_are_checked():
    with pytest.raises(NotImplementedError, match="option 'cache' is not supported"):
        fjax.compile_from_torch(Small(), options={"cache": 3})
    with pytest.raises(ValueError, match=r"options\['size'\] must be a positive int, got 0"):
        fjax.compile_from_torch(Small(), options={"size": 0})
    with pytest.raises(ValueError, match=r"options\['debug'\] must be one of"):
        fjax.compile_from_torch(Small(), options={"debug": 7})
    with pytest.raises(TypeError, match="expected a torch.nn.Module, got Linear"):
        fjax.compile_from_torch(fjax.nn.Linear(2, 2))


def test_debug_levels_log_capture_mapping_and_compile(caplog):
    m = fjax.compile_from_torch(Small().eval(), options={"debug": 1})
    with caplog.at_level(logging.INFO, logger="fjax.compile_from_torch"), torch.no_grad():
        m(_x(1, 3, 4, 4))
    text = caplog.text
    assert "captured Small (every dimension dynamic)" in text
    assert "aten.conv2d.default" in text and "ATen ops mapped" in text
