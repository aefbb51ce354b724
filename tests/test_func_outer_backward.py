"""functorch's composition with the tape: the outputs of ``func.grad``/``vjp``/``jacrev``/``jvp``
are differentiable by an outer ``backward()`` in the tensors of the outer tape, whether those are
arguments of the transformed function or closed over, with and without ``vmap`` (the
meta-learning pattern), with torch's numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax

RNG = np.random.default_rng(7)
W0 = RNG.standard_normal((3, 3)).astype(np.float32)
X0 = RNG.standard_normal((4, 3)).astype(np.float32)


def _loss(lib, w, x):
    return ((x @ w).tanh() ** 2).sum()


def _inner(lib, transform, w, x, closure):
    """The transform's output, as a function of ``w`` (an argument or closed over)."""
    f = (lambda x_: _loss(lib, w, x_)) if closure else (lambda w_: _loss(lib, w_, x))
    arg = x if closure else w
    if transform == "grad":
        return lib.func.grad(f)(arg)
    if transform == "vjp":
        out, pull = lib.func.vjp(f, arg)
        return pull(lib.ones_like(out))[0]
    if transform == "jacrev":
        return lib.func.jacrev(f)(arg)
    if transform == "jvp":
        return lib.func.jvp(f, (arg,), (lib.ones_like(arg),))[1]
    raise AssertionError(transform)


def _outer_grad(lib, transform, closure, vmapped):
    w = lib.tensor(W0, requires_grad=True)
    x = lib.tensor(X0)
    if vmapped:
        g = lib.func.vmap(lambda xi: _inner(lib, transform, w, xi[None], closure))(x)
    else:
        g = _inner(lib, transform, w, x, closure)
    (g**2).sum().backward()
    return w.grad.detach().numpy() if lib is torch else w.grad.numpy()


@pytest.mark.parametrize("vmapped", [False, True], ids=["plain", "vmap"])
@pytest.mark.parametrize("closure", [False, True], ids=["argument", "closure"])
@pytest.mark.parametrize("transform", ["grad", "vjp", "jacrev", "jvp"])
def test_outer_backward_through_a_transform(transform, closure, vmapped):
    expected = _outer_grad(torch, transform, closure, vmapped)
    assert np.abs(expected).max() > 0  # the case really depends on w
    got = _outer_grad(fjax, transform, closure, vmapped)
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-5)


def _maml(lib):
    w = lib.tensor(W0, requires_grad=True)
    x = lib.tensor(X0)
    fast = w - 0.1 * lib.func.grad(lambda p: _loss(lib, p, x))(w)
    _loss(lib, fast, x * 2).backward()
    return w.grad.detach().numpy() if lib is torch else w.grad.numpy()


def test_maml_step_updates_the_original_parameters():
    """An inner gradient step on a copy, an outer loss, backward: ``.grad`` on the original."""
    np.testing.assert_allclose(_maml(fjax), _maml(torch), rtol=2e-5, atol=1e-5)


class _Holder:
    def __init__(self, w):
        self.w = w


_CFG: dict = {}


def _reached(lib, reach, vmapped):
    w = lib.tensor(W0, requires_grad=True)
    x = lib.tensor(X0)
    if reach == "module":
        lin = lib.nn.Linear(3, 3, bias=False)
        with lib.no_grad():
            lin.weight.copy_(w.detach())
        w = lin.weight
        lin.config = {"scale": 2.0}  # arbitrary module state: unguardable
        get = lambda: lin.weight  # noqa: E731
    elif reach == "object attribute":
        box = _Holder(w)
        get = lambda: box.w  # noqa: E731
    elif reach == "global dict":
        _CFG["w"] = w
        get = lambda: _CFG["w"]  # noqa: E731
    else:
        cell = [w]
        get = lambda: cell[0]  # noqa: E731

    def f(x_):
        return ((x_ @ get()).tanh() ** 2).sum()

    g = lib.func.vmap(lib.func.grad(f))(x[:, None, :]) if vmapped else lib.func.grad(f)(x)
    (g**2).sum().backward()
    return w.grad.detach().numpy() if lib is torch else w.grad.numpy()


@pytest.mark.parametrize("vmapped", [False, True], ids=["plain", "vmap"])
@pytest.mark.parametrize("reach", ["global dict", "list in a closure", "object attribute", "module"])
def test_captured_tensor_reached_through_anything(reach, vmapped):
    """A function fjax cannot guard (it reads a dict, a list, an object: traced on every call)
    still makes the tensors it captures inputs of its tape node."""
    expected = _reached(torch, reach, vmapped)
    np.testing.assert_allclose(_reached(fjax, reach, vmapped), expected, rtol=2e-5, atol=1e-5)
