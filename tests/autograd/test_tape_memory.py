"""The eager tape keeps what backward reads and no more, compared with torch's saved tensors.

torch's saved tensors are read with ``saved_tensors_hooks`` (pack sees each tensor a backward
saves); fjax's tape with the buffers its nodes hold (their VJP residuals and any raw input).
"""

from __future__ import annotations

import gc

import jax
import numpy as np
import pytest
import torch

import fjax


def _fjax_tape_bytes(root) -> int:
    """Bytes of the distinct buffers the tape behind ``root`` holds."""
    fjax.sync()
    seen: dict = {}
    stack, visited = [root._node], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in visited:
            continue
        visited.add(id(node))
        held = list(jax.tree_util.tree_leaves(node.vjp))
        held += [x for x in node.inputs if isinstance(x, jax.Array)]
        for a in held:
            if isinstance(a, jax.Array) and a.ndim:
                seen[a.unsafe_buffer_pointer()] = a.nbytes
        stack.extend(node.parents())
    return sum(seen.values())


def _torch_saved(fn, *args):
    """(bytes of the distinct tensors torch's backward of ``fn(*args)`` saves, their shapes)."""
    saved: dict = {}

    def pack(t):
        if t.dim():
            saved[t.data_ptr()] = (t.numel() * t.element_size(), tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(torch, *args)
    return sum(b for b, _ in saved.values()), sorted(s for _, s in saved.values()), out


B, D = 256, 128

# each chain: an MLP of 4 layers whose activation (and friends) torch saves a known way
CHAINS = {
    "relu": lambda lib, h, w: (h @ w).relu(),
    "tanh": lambda lib, h, w: (h @ w).tanh(),
    "sigmoid": lambda lib, h, w: (h @ w).sigmoid(),
    "gelu": lambda lib, h, w: lib.nn.functional.gelu(h @ w),
    "gelu_tanh": lambda lib, h, w: lib.nn.functional.gelu(h @ w, approximate="tanh"),
    "silu": lambda lib, h, w: lib.nn.functional.silu(h @ w),
    "mish": lambda lib, h, w: lib.nn.functional.mish(h @ w),
    "softplus": lambda lib, h, w: lib.nn.functional.softplus(h @ w),
    "elu": lambda lib, h, w: lib.nn.functional.elu(h @ w),
    "hardswish": lambda lib, h, w: lib.nn.functional.hardswish(h @ w),
    "layer_norm_relu": lambda lib, h, w: lib.nn.functional.layer_norm(h @ w, (D,)).relu(),
    "softmax": lambda lib, h, w: (h @ w).softmax(-1),
    "_safe_softmax": lambda lib, h, w: (torch._safe_softmax if lib is torch else fjax.dispatch.functions._safe_softmax)(
        h @ w, -1
    ),
    "log_softmax": lambda lib, h, w: (h @ w).log_softmax(-1),
    "exp": lambda lib, h, w: (h @ w * 0.01).exp(),
    "sqrt": lambda lib, h, w: ((h @ w) ** 2 + 1).sqrt(),
    "add_const": lambda lib, h, w: (h @ w) + lib.ones(B, D),
}


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_tape_of_an_activation_chain_holds_no_more_than_torch_saves(chain):
    step = CHAINS[chain]
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((B, D)).astype(np.float32)
    ws = [(rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32) for _ in range(4)]

    def forward(lib, x, W):
        h = x
        for w in W:
            h = step(lib, h, w)
        return (h * h).mean()

    t_bytes, _, t_loss = _torch_saved(forward, torch.tensor(x0), [torch.tensor(w, requires_grad=True) for w in ws])
    W = [fjax.tensor(w, requires_grad=True) for w in ws]
    loss = forward(fjax, fjax.tensor(x0), W)
    f_bytes = _fjax_tape_bytes(loss)
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-4)
    # torch's saved bytes are the reference: fjax's tape may hold a mask where torch holds a float
    # tensor (less), never a second copy of an activation (more)
    assert f_bytes <= 1.05 * t_bytes, f"{chain}: the tape holds {f_bytes} bytes, torch saves {t_bytes}"
    loss.backward()
    for w in W:
        assert w.grad is not None


def test_node_holds_only_its_vjps_residuals():
    """A node's buffers are exactly the residuals ``jax.vjp`` of the op keeps (its inputs and result
    shared, not copied): exp keeps its result, x * c keeps c, x + c keeps nothing."""
    rng = np.random.default_rng(1)
    x = fjax.tensor(rng.standard_normal((64, 64)).astype(np.float32), requires_grad=True)
    c = fjax.tensor(rng.standard_normal((64, 64)).astype(np.float32))
    for fn, expected in [
        (lambda x, c: x.exp(), "out"),
        (lambda x, c: x * c, "c"),
        (lambda x, c: x + c, None),
        (lambda x, c: x @ c, "c"),
        (lambda x, c: x.tanh(), "out"),
        (lambda x, c: x.relu(), "out"),
        (lambda x, c: fjax.nn.functional.gelu(x), "x"),
    ]:
        y = fn(x, c)
        fjax.sync()
        node = y._node
        held = {a.unsafe_buffer_pointer() for a in jax.tree_util.tree_leaves(node.vjp) if a.ndim}
        held |= {a.unsafe_buffer_pointer() for a in node.inputs if isinstance(a, jax.Array)}
        want = {"out": {y._data.unsafe_buffer_pointer()}, "c": {c._data.unsafe_buffer_pointer()}, None: set()}
        want["x"] = {x._data.unsafe_buffer_pointer()}
        assert held == want[expected], (node, expected)


def _alive(ptr) -> bool:
    gc.collect()
    return any(not a.is_deleted() and a.unsafe_buffer_pointer() == ptr for a in jax.live_arrays())


def test_an_input_backward_does_not_read_is_freed_with_python_s_last_reference():
    x = fjax.randn(1000, requires_grad=True)
    c = fjax.randn(1000)
    y = (x + c).sum()
    fjax.sync()
    ptr = c._data.unsafe_buffer_pointer()
    del c
    assert not _alive(ptr), "the tape kept x + c's constant alive: add's backward never reads it"
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones(1000))

    c = fjax.randn(1000)  # x * c reads c: it stays until the backward
    y = (x * c).sum()
    fjax.sync()
    ptr = c._data.unsafe_buffer_pointer()
    expect = c.numpy().copy()
    del c
    assert _alive(ptr)
    x.grad = None
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), expect)


def test_create_graph_through_an_unread_input_matches_torch_or_says_what_to_keep():
    x0 = np.linspace(-1, 1, 5).astype(np.float32)
    results = []
    for lib in (torch, fjax):
        x = lib.tensor(x0, requires_grad=True)
        c = lib.tensor(x0 * 3)
        y = ((x + c) ** 3).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        results.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5)

    x = fjax.tensor(x0, requires_grad=True)
    h = x + fjax.tensor(x0 * 3)  # the temporary constant is gone once the line ends
    y = (h**3).sum()
    with pytest.raises(RuntimeError, match="keep a reference to it"):
        fjax.autograd.grad(y, x, create_graph=True)


def _packed_shapes(lib, fn, x0, c0):
    shapes = []

    def pack(t):
        shapes.append(tuple(t.shape))
        return t.detach().numpy().copy()

    x = lib.tensor(x0, requires_grad=True)
    c = lib.tensor(c0)
    with lib.autograd.graph.saved_tensors_hooks(pack, lambda a: lib.from_numpy(a)):
        y = fn(lib, x, c)
    y.sum().backward()
    return sorted(shapes), x.grad.numpy()


@pytest.mark.parametrize(
    "name",
    ["add_const", "mul_const", "matmul", "exp", "relu", "tanh", "sigmoid", "softmax", "sin", "sum"],
)
def test_saved_tensors_hooks_see_what_torch_packs(name):
    fn = {
        "add_const": lambda lib, x, c: x + c,
        "mul_const": lambda lib, x, c: x * c,
        "matmul": lambda lib, x, c: x @ c.T,
        "exp": lambda lib, x, c: x.exp(),
        "relu": lambda lib, x, c: x.relu(),
        "tanh": lambda lib, x, c: x.tanh(),
        "sigmoid": lambda lib, x, c: x.sigmoid(),
        "softmax": lambda lib, x, c: x.softmax(-1),
        "sin": lambda lib, x, c: x.sin(),
        "sum": lambda lib, x, c: x.sum(0),
    }[name]
    rng = np.random.default_rng(2)
    x0, c0 = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((5, 6)).astype(np.float32)
    if name in ("add_const", "mul_const"):
        c0 = c0[:4]
    t_shapes, t_grad = _packed_shapes(torch, fn, x0, c0)
    f_shapes, f_grad = _packed_shapes(fjax, fn, x0, c0)
    assert f_shapes == t_shapes
    np.testing.assert_allclose(f_grad, t_grad, rtol=1e-5, atol=1e-6)


def test_a_pack_hook_that_offloads_releases_the_device_arrays():
    """With a pack hook that moves saved tensors to numpy, the tape keeps no device array of the
    chain's activations (before, the hooked VJP kept every input alive besides the packed copy)."""
    rng = np.random.default_rng(3)
    ws = [fjax.tensor(rng.standard_normal((64, 64)).astype(np.float32) / 8, requires_grad=True) for _ in range(6)]
    x = fjax.tensor(rng.standard_normal((32, 64)).astype(np.float32))
    gc.collect()
    before = {id(a) for a in jax.live_arrays()}
    with fjax.autograd.graph.saved_tensors_hooks(lambda t: t.numpy().copy(), fjax.from_numpy):
        h = x
        for w in ws:
            h = (h @ w).tanh()
        loss = (h * h).mean()
    del h
    fjax.sync()
    gc.collect()
    new = [a for a in jax.live_arrays() if id(a) not in before and a.ndim and a.shape == (32, 64)]
    assert not new, f"{len(new)} activations stayed on the device under an offloading pack hook"
    loss.backward()
    assert all(w.grad is not None for w in ws)
