"""``Tensor.register_post_accumulate_grad_hook`` against torch: the hook sees the leaf after its
``.grad`` was accumulated (an optimizer step inside backward), in every backward path; torch's
errors for non-leaves and tensors without grad; the handle removes it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax


@pytest.mark.parametrize("path", ["backward", "autograd.backward(inputs=)", "create_graph"])
def test_hook_runs_after_accumulation_as_torch(path):
    rng = np.random.default_rng(int(np.random.SeedSequence().entropy % 2**31))
    # |w @ x| <= 2 keeps tanh unsaturated: from |z| ~ 8 XLA's tanh is exactly 1 where torch's is
    # 1 - 6e-8, and the gradients (1 - y^2) would differ by all of their value
    a, x = rng.uniform(-0.5, 0.5, (3, 4)).astype(np.float32), rng.uniform(-1, 1, 4).astype(np.float32)
    results = {}
    for L in (fjax, torch):
        w = L.tensor(a, requires_grad=True)
        seen = []

        def step(p, seen=seen, L=L):  # an SGD step in the hook, as optimizer-in-backward code does
            seen.append(p.grad.clone())
            with L.no_grad():
                p.sub_(0.1 * p.grad)

        handle = w.register_post_accumulate_grad_hook(step)
        for _ in range(2):
            loss = (w @ L.tensor(x)).tanh().sum()
            if path == "backward":
                loss.backward()
            elif path == "create_graph":
                loss.backward(create_graph=True)
            else:
                L.autograd.backward(loss, inputs=[w])
        handle.remove()
        (w @ L.tensor(x)).sum().backward()  # removed: no third call
        assert len(seen) == 2
        results[L.__name__] = (w.detach().numpy(), [s.detach().numpy() for s in seen])
    np.testing.assert_allclose(results["fjax"][0], results["torch"][0], rtol=1e-5, atol=1e-6)
    for g, t in zip(results["fjax"][1], results["torch"][1]):
        np.testing.assert_allclose(g, t, rtol=1e-5, atol=1e-6)


def test_errors_as_torch():
    for L in (fjax, torch):
        with pytest.raises(RuntimeError, match="doesn't require gradient"):
            L.ones(2).register_post_accumulate_grad_hook(lambda p: None)
        with pytest.raises(RuntimeError, match="non-leaf"):
            (L.ones(2, requires_grad=True) * 2).register_post_accumulate_grad_hook(lambda p: None)
