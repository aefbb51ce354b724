"""OneFlow/torch autograd odds and ends: ``autograd.graph`` (Node, saved_tensors_hooks,
save_on_cpu, disable_saved_tensors_hooks), ``utils.checkpoint`` against torch, and OneFlow's
``nn.Dropout(p, inplace, generator)`` with ``forward(x, addend)``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import fjax as flow
from fjax.utils.checkpoint import checkpoint, checkpoint_sequential


# -- autograd.graph ---------------------------------------------------------------------
def test_grad_fn_is_a_graph_node():
    x = flow.ones(2, requires_grad=True)
    assert isinstance((x * 2).grad_fn, flow.autograd.graph.Node)
    assert x.grad_fn is None


def test_saved_tensors_hooks_pack_and_unpack_like_torch():
    """pack sees every tensor a backward reads (here the same shapes as torch's) and the backward
    uses what unpack gives back: a round trip through numpy, as an offloading hook would do. Which
    tensors an op saves follows its JAX VJP (inputs), so a hook that changes values can differ
    from torch where torch saves an output (tanh)."""
    rng = np.random.default_rng(0)
    x0, w0 = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(4, 2)).astype(np.float32)
    results = []
    for lib in (flow, torch):
        shapes = []

        def pack(t, shapes=shapes):
            shapes.append(tuple(t.shape))
            return t.detach().numpy().copy()

        x, w = lib.tensor(x0, requires_grad=True), lib.tensor(w0, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, lib.from_numpy):
            y = (x @ w).tanh().sum()
        y.backward()
        results.append((sorted(shapes), x.grad.detach().numpy(), w.grad.detach().numpy()))
    (fs, fx, fw), (ts, tx, tw) = results
    assert fs == ts
    np.testing.assert_allclose(fx, tx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fw, tw, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="callables"):
        flow.autograd.graph.saved_tensors_hooks(1, lambda t: t)


def test_save_on_cpu_keeps_values_and_gradients():
    rs = np.random.RandomState(3)
    a, b = rs.randn(3, 4).astype("f4"), rs.randn(4, 2).astype("f4")
    grads = {}
    for lib in (torch, flow):
        x, w = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        with lib.autograd.graph.save_on_cpu(pin_memory=False):
            y = (x @ w).tanh().sum()
        y.backward()
        grads[lib.__name__] = (y.item(), x.grad.numpy(), w.grad.numpy())
    (yt, xt, wt), (yf, xf, wf) = grads["torch"], grads["fjax"]
    assert abs(yt - yf) < 1e-4
    np.testing.assert_allclose(xf, xt, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(wf, wt, rtol=1e-5, atol=1e-6)


def test_disable_saved_tensors_hooks_message():
    graph = flow.autograd.graph
    with graph.disable_saved_tensors_hooks("hooks are off"):
        with pytest.raises(RuntimeError, match="hooks are off"):
            with graph.save_on_cpu():
                pass
    with graph.save_on_cpu():  # enabled again outside
        pass


# -- utils.checkpoint -------------------------------------------------------------------
def _pair(seed):
    rs = np.random.RandomState(seed)
    layers = [(rs.randn(o, i).astype("f4"), rs.randn(o).astype("f4")) for i, o in ((4, 6), (6, 2))]
    nets = []
    for lib in (torch, flow):
        net = lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.GELU(), lib.nn.Linear(6, 2), lib.nn.Sigmoid())
        with lib.no_grad():
            for lin, (w, b) in zip((net[0], net[2]), layers):
                lin.weight.copy_(lib.tensor(w))
                lin.bias.copy_(lib.tensor(b))
        nets.append(net)
    return nets, rs.randn(5, 4).astype("f4")


@pytest.mark.parametrize("use_reentrant", [True, False])
@pytest.mark.parametrize("x_requires_grad", [True, False])
def test_checkpoint_matches_torch(use_reentrant, x_requires_grad):
    (tnet, fnet), x = _pair(5)
    out = {}
    for lib, net, cp in ((torch, tnet, tcp.checkpoint), (flow, fnet, checkpoint)):
        xt = lib.tensor(x, requires_grad=x_requires_grad)
        y = cp(net, xt, use_reentrant=use_reentrant)
        if y.requires_grad:
            (y * y).sum().backward()
        out[lib.__name__] = (
            y.detach().numpy(),
            None if xt.grad is None else xt.grad.numpy(),
            [None if p.grad is None else p.grad.numpy() for p in net.parameters()],
        )
    (yt, gxt, gpt), (yf, gxf, gpf) = out["torch"], out["fjax"]
    np.testing.assert_allclose(yf, yt, rtol=1e-5, atol=1e-6)
    assert (gxf is None) == (gxt is None)
    if gxt is not None:
        np.testing.assert_allclose(gxf, gxt, rtol=1e-4, atol=1e-6)
    for a, b in zip(gpf, gpt):
        assert (a is None) == (b is None)  # reentrant, no input with grad: no parameter grads either
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_checkpoint_preserves_dropout_mask():
    lin = flow.nn.Linear(8, 8)
    drop = flow.nn.Dropout(0.5)
    x = flow.randn(16, 8, requires_grad=True)

    def fn(t):
        return drop(lin(t)).relu()

    state = flow.get_rng_state()
    y = checkpoint(fn, x, use_reentrant=True)
    y.sum().backward()
    gx, gw = x.grad.numpy(), lin.weight.grad.numpy()
    after = flow.get_rng_state()
    x.grad = None
    lin.zero_grad()
    flow.set_rng_state(state)
    y2 = fn(x)
    y2.sum().backward()
    assert flow.get_rng_state().tolist() == after.tolist()  # the recompute did not advance the stream
    np.testing.assert_array_equal(y.numpy(), y2.numpy())
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gw, lin.weight.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_checkpoint_oneflow_form_and_kwargs():
    lin = flow.nn.Linear(3, 3)
    x = flow.randn(2, 3)  # OneFlow's form: no use_reentrant; the input needs no grad
    checkpoint(lambda t, scale=1.0: lin(t) * scale, x, scale=2.0).sum().backward()
    assert lin.weight.grad is not None
    with pytest.raises(ValueError, match="unexpected keyword arguments: scale"):
        checkpoint(lambda t, scale=1.0: t, x, use_reentrant=True, scale=2.0)
    with pytest.raises(NotImplementedError, match="determinism_check"):
        checkpoint(lin, x, determinism_check="none")


@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential_matches_torch(segments):
    (tnet, fnet), x = _pair(9)
    out = {}
    for lib, net, cps in ((torch, tnet, tcp.checkpoint_sequential), (flow, fnet, checkpoint_sequential)):
        xt = lib.tensor(x, requires_grad=True)
        y = cps(net, segments, xt, use_reentrant=True)
        y.sum().backward()
        out[lib.__name__] = (y.detach().numpy(), xt.grad.numpy(), net[0].weight.grad.numpy())
    for a, b in zip(out["fjax"], out["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


# -- nn.Dropout with OneFlow's generator and addend -------------------------------------
def test_dropout_generator_reproducible_and_separate_from_default():
    x = flow.ones(1000)
    a = flow.nn.Dropout(0.3, generator=flow.Generator().manual_seed(7))(x)
    state = flow.get_rng_state()
    b = flow.nn.Dropout(0.3, generator=flow.Generator().manual_seed(7))(x)
    assert flow.get_rng_state().tolist() == state.tolist()  # the default stream is untouched
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    kept = a.numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.1
    np.testing.assert_allclose(a.numpy()[kept], 1 / 0.7, rtol=1e-6, atol=1e-6)


def test_dropout_1d_input_grad_and_addend():
    gen = flow.Generator().manual_seed(1)
    drop = flow.nn.Dropout(p=0.5, generator=gen)
    x = flow.ones(64, requires_grad=True)
    addend = flow.full((64,), 3.0, requires_grad=True)
    y = drop(x, addend)
    y.sum().backward()
    mask = (y.numpy() - 3.0) != 0
    np.testing.assert_allclose(x.grad.numpy(), mask * 2.0)
    np.testing.assert_allclose(addend.grad.numpy(), np.ones(64))
    drop.eval()
    np.testing.assert_allclose(drop(x, addend).detach().numpy(), np.full(64, 4.0))
    assert drop(x) is x
    assert "p=0.5" in repr(drop)
