"""``autograd.grad``'s and ``backward``'s full torch signatures: ``only_inputs`` (deprecated,
ignored), ``is_grads_batched`` (one VJP per row of the grad_outputs) and ``grad_variables``, each
compared with torch on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax


def _pair(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return fjax.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("create_graph", [False, True])
def test_is_grads_batched_matches_torch(create_graph):
    seed = int(np.random.SeedSequence().entropy % 2**31)
    (x, tx), (w, tw) = _pair((3, 4), seed), _pair((4, 5), seed + 1)
    v = np.random.default_rng(seed + 2).standard_normal((6, 3, 5)).astype(np.float32)
    got = fjax.autograd.grad((x @ w).tanh(), (x, w), fjax.tensor(v), is_grads_batched=True, create_graph=create_graph)
    want = torch.autograd.grad(
        (tx @ tw).tanh(), (tx, tw), torch.tensor(v), is_grads_batched=True, create_graph=create_graph
    )
    for g, t in zip(got, want):
        assert tuple(g.shape) == tuple(t.shape) == (6, *t.shape[1:])
        np.testing.assert_allclose(g.numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)  # float32 sums of terms near 1
    if create_graph:  # the batched gradients are differentiable further
        (h,) = fjax.autograd.grad(got[0].square().sum(), w)
        (th,) = torch.autograd.grad(want[0].square().sum(), tw)
        np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-4, atol=1e-5)


def test_is_grads_batched_needs_batched_grad_outputs():
    x, _ = _pair((3,), 0)
    with pytest.raises(RuntimeError, match="is_grads_batched"):
        fjax.autograd.grad(x.sum(), x, is_grads_batched=True)
    with pytest.raises(RuntimeError, match="first dimension"):
        fjax.autograd.grad((x * 2, x * 3), x, (fjax.ones(2, 3), fjax.ones(4, 3)), is_grads_batched=True)


def test_only_inputs_is_accepted_and_ignored():
    (x, tx) = _pair((4,), 1)
    (g,) = fjax.autograd.grad((x**3).sum(), x, only_inputs=True)
    (tg,) = torch.autograd.grad((tx**3).sum(), tx, only_inputs=True)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-6, atol=1e-6)
    with pytest.warns(UserWarning, match="only_inputs"):
        fjax.autograd.grad((x**3).sum(), x, only_inputs=False)


def test_backward_grad_variables_is_grad_tensors():
    (x, tx) = _pair((4,), 2)
    v = np.random.default_rng(3).standard_normal(4).astype(np.float32)
    fjax.autograd.backward([x.sin()], grad_variables=[fjax.tensor(v)])
    torch.autograd.backward([tx.sin()], grad_variables=[torch.tensor(v)])
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="grad_variables"):
        fjax.autograd.backward([x.sin()], grad_tensors=[fjax.tensor(v)], grad_variables=[fjax.tensor(v)])
