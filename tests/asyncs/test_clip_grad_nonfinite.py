"""clip_grad_norm_(..., error_if_nonfinite=True): eager raises at once, before any gradient changes
(as torch); inside nn.Graph the check runs on a worker and the error surfaces at wait()."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax
import fjax.asyncs as asyncs
import fjax.nn as nn
import fjax.optim as optim
from fjax.graph import Graph


def _torch_message(grads):
    params = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = torch.tensor(g)
    with pytest.raises(RuntimeError) as info:
        torch.nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    return str(info.value)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_eager_nonfinite_norm_raises_at_once_with_torchs_message(bad):
    seed = int(np.random.randint(2**31))
    rng = np.random.default_rng(seed)
    grads = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)]
    params = [fjax.zeros(*g.shape, requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = fjax.tensor(g)
    total = nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    expected = np.linalg.norm(np.concatenate([g.ravel() for g in grads]))
    np.testing.assert_allclose(total.item(), expected, rtol=1e-5, err_msg=f"seed={seed}")
    asyncs.wait()  # finite: nothing to raise
    grads[1][int(rng.integers(4))] = bad
    for p, g in zip(params, grads):
        p.grad = fjax.tensor(g)
    with pytest.raises(RuntimeError) as info:
        nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert _torch_message(grads).split("non-finite")[0].lower() in str(info.value).lower(), f"seed={seed}"
    for p, g in zip(params, grads):  # untouched
        np.testing.assert_array_equal(p.grad.numpy(), g)


def test_nonfinite_norm_inside_a_compiled_graph():
    model = nn.Linear(3, 2)

    class G(Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(optim.SGD(model.parameters(), lr=0.1))

        def build(self, x):
            loss = self.model(x).sum()
            loss.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), 1.0, error_if_nonfinite=True)
            return loss

    g = G()
    x = np.ones((2, 3), np.float32)
    g(fjax.tensor(x))
    asyncs.wait()
    x[0, 0] = np.inf
    g(fjax.tensor(x))
    with pytest.raises(asyncs.CheckError, match="non-finite"):
        asyncs.wait()
