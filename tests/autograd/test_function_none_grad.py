"""A custom ``autograd.Function`` whose backward returns None for an input gives that input nothing,
as in torch: a leaf's ``.grad`` stays None unless another path reaches it, a non-leaf's history is
not walked for it, and ``autograd.grad`` reports it unused. Generated cases against torch: random
numbers of inputs, which of them get None, leaves and non-leaves, inputs shared with other paths,
several outputs, repeated backward with ``retain_graph``. A gradient on another device than its input
raises torch's error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax


def _function(lib, n, none_at, n_out):
    """``forward(*xs)``: ``n_out`` outputs, output j = sum_i (i + j + 1) * xs[i] ** 2; backward
    gives None at the positions in ``none_at``."""

    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, *xs):
            ctx.save_for_backward(*xs)
            outs = tuple(sum((i + j + 1) * x * x for i, x in enumerate(xs)) for j in range(n_out))
            return outs if n_out > 1 else outs[0]

        @staticmethod
        def backward(ctx, *gs):
            xs = ctx.saved_tensors
            grads = []
            for i, x in enumerate(xs):
                if i in none_at:
                    grads.append(None)
                else:
                    grads.append(sum(2 * (i + j + 1) * x * g for j, g in enumerate(gs)))
            return tuple(grads) if n > 1 else grads[0]

    return F


def _case(rng):
    n = int(rng.integers(1, 5))
    none_at = {i for i in range(n) if rng.random() < 0.5}
    return {
        "n": n,
        "none_at": none_at,
        "n_out": int(rng.integers(1, 3)),
        "nonleaf": [bool(rng.random() < 0.4) for _ in range(n)],  # input i = leaf_i * 3 instead of leaf_i
        "also": [bool(rng.random() < 0.3) for _ in range(n)],  # leaf_i also feeds the loss directly
        "shape": tuple(int(s) for s in rng.integers(1, 4, int(rng.integers(0, 3)))),
        "data": [rng.standard_normal(4).astype(np.float32) for _ in range(n)],
        "twice": bool(rng.random() < 0.3),
    }


def _run(lib, c):
    leaves = [lib.tensor(np.resize(d, c["shape"]), requires_grad=True) for d in c["data"]]
    xs = [leaf * 3 if nl else leaf for leaf, nl in zip(leaves, c["nonleaf"])]
    F = _function(lib, c["n"], c["none_at"], c["n_out"])
    out = F.apply(*xs)
    outs = out if c["n_out"] > 1 else (out,)
    loss = sum(o.sum() for o in outs) + sum(leaf.sum() * 5 for leaf, a in zip(leaves, c["also"]) if a)
    loss.backward(retain_graph=c["twice"])
    if c["twice"]:
        loss.backward()
    return [None if leaf.grad is None else leaf.grad.numpy() for leaf in leaves]


def test_none_gradients_leave_grad_none_as_torch():
    rng = np.random.default_rng(3701)
    seen = {"none": 0, "value": 0}
    for _ in range(60):
        c = _case(rng)
        theirs, ours = _run(torch, c), _run(fjax, c)
        for i, (t, f) in enumerate(zip(theirs, ours)):
            what = f"input {i} of {c}"
            if t is None:
                assert f is None, f"{what}: torch leaves .grad None, fjax gave {f}"
                seen["none"] += 1
            else:
                assert f is not None, what
                np.testing.assert_allclose(f, t, rtol=1e-5, atol=1e-6, err_msg=what)
                seen["value"] += 1
    assert seen["none"] > 15 and seen["value"] > 30, seen


def test_autograd_grad_reports_a_none_gradient_unused():
    for lib in (torch, fjax):
        F = _function(lib, 2, {1}, 1)
        a, b = lib.ones(3, requires_grad=True), lib.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="allow_unused"):
            lib.autograd.grad(F.apply(a, b).sum(), [a, b])
        ga, gb = lib.autograd.grad(F.apply(a, b).sum(), [a, b], allow_unused=True)
        assert gb is None
        np.testing.assert_allclose(ga.numpy(), np.full(3, 2.0))


def test_a_none_gradient_does_not_walk_the_input_history():
    """The node that made the input gets no cotangent: its own backward never runs."""
    ran = []

    class Spy(fjax.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            ran.append(True)
            return g

    F = _function(fjax, 2, {0}, 1)
    a, b = fjax.randn(3, requires_grad=True), fjax.randn(3, requires_grad=True)
    F.apply(Spy.apply(a), b).sum().backward()
    assert not ran and a.grad is None and b.grad is not None


def test_none_gradient_with_materialize_grads_off():
    for lib in (torch, fjax):

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.set_materialize_grads(False)
                return x * 2, y * 3

            @staticmethod
            def backward(ctx, gx, gy):
                return (None if gx is None else gx * 2), (None if gy is None else gy * 3)

        x, y = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        u, _ = Two.apply(x, y)
        u.sum().backward()
        assert y.grad is None, lib.__name__
        np.testing.assert_allclose(x.grad.numpy(), np.full(2, 2.0))


@pytest.mark.parametrize("dev_in,dev_grad", [("cpu", "meta"), ("meta", "cpu")])
def test_a_gradient_on_another_device_raises_as_torch(dev_in, dev_grad):
    """torch checks the device of each gradient a backward returns (the only other device a CPU
    machine has is meta; on GPU machines the same check compares cuda and cpu)."""
    shape = tuple(int(s) for s in np.random.default_rng(5).integers(1, 4, 2))
    errors = []
    for lib in (torch, fjax):

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g, lib=lib):
                return lib.ones(shape, device=dev_grad)

        a = lib.ones(shape, requires_grad=True, device=dev_in)
        with pytest.raises(RuntimeError) as err:
            F.apply(a).sum().backward()
        errors.append(str(err.value))
        assert a.grad is None
    assert errors[1] == errors[0]  # "... invalid gradient at index 0 - expected device cpu but got meta"
