"""Shared oracle for optimizer tests: one small model, the same data and initial values in fjax and torch."""

from __future__ import annotations

import numpy as np
import torch

import fjax


def fresh_seed() -> int:
    """A new random seed per run; tests put it in every assertion message."""
    return int(np.random.SeedSequence().entropy % (2**31))


class Problem:
    """``mean((tanh(x @ W + b) @ V - y) ** 2)`` on fresh random data, ``steps`` batches."""

    def __init__(self, seed: int, steps: int = 20):
        rng = np.random.default_rng(seed)
        self.seed = seed
        self.init = [
            # W and b at half scale keep tanh's inputs well inside (-8, 8): XLA's tanh rounds to exactly
            # +-1 from |z| ~ 8 where torch's is still 1 - 6e-8, so a saturated unit's gradient is 0 in
            # one framework and 1e-7 in the other, and an adaptive step (g / sqrt(v)) turns that into
            # lr-sized differences. Saturation is not what these tests are about.
            (0.5 * rng.standard_normal((5, 4))).astype(np.float32),
            (0.5 * rng.standard_normal(4)).astype(np.float32),
            rng.standard_normal((4, 2)).astype(np.float32),
        ]
        self.batches = [
            (rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32))
            for _ in range(steps)
        ]

    def fjax_params(self) -> list:
        return [fjax.tensor(a, requires_grad=True) for a in self.init]

    def torch_params(self) -> list:
        return [torch.tensor(a, requires_grad=True) for a in self.init]

    @staticmethod
    def fjax_loss(params, x, y):
        w, b, v = params
        return ((fjax.tanh(fjax.tensor(x) @ w + b) @ v - fjax.tensor(y)) ** 2).mean()

    @staticmethod
    def torch_loss(params, x, y):
        w, b, v = params
        return ((torch.tanh(torch.tensor(x) @ w + b) @ v - torch.tensor(y)) ** 2).mean()


def assert_params_close(fp, tp, what: str, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    for j, (a, b) in enumerate(zip(fp, tp)):
        np.testing.assert_allclose(
            a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol, err_msg=f"{what}, param {j}"
        )


def run_both(problem: Problem, f_opt, t_opt, fp, tp, *, uses=None, hook=None, rtol=1e-4, atol=1e-5) -> None:
    """Step both optimizers on every batch and compare all parameters after each step.

    Args:
        uses: ``uses(step) -> indices`` of the parameters that get a gradient at that step
            (the others keep ``grad=None``); default all.
        hook: ``hook(step)`` runs after each step (e.g. to change hyper-parameters in both).
    """
    for i, (x, y) in enumerate(problem.batches):
        f_opt.zero_grad()
        t_opt.zero_grad()
        live = range(len(fp)) if uses is None else uses(i)
        f_in = [p if j in live else p.detach() for j, p in enumerate(fp)]
        t_in = [p if j in live else p.detach() for j, p in enumerate(tp)]
        problem.fjax_loss(f_in, x, y).backward()
        problem.torch_loss(t_in, x, y).backward()
        f_opt.step()
        t_opt.step()
        assert_params_close(fp, tp, f"seed={problem.seed} step={i}", rtol, atol)
        if hook is not None:
            hook(i)
