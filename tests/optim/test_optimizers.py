"""Every optimizer and option against torch: 20 steps, parameters compared after each step."""

from __future__ import annotations

import pytest
import torch

import fjax.optim as optim

from .helper import Problem, fresh_seed, run_both

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.8, weight_decay=0.05)),
    ("SGD", dict(lr=0.01, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, maximize=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.2, amsgrad=True)),
    ("AdamW", dict(lr=0.05, maximize=True, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.7)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.3)),
    ("Adagrad", dict(lr=0.1, eps=1e-2)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{'-'.join(k)}" for n, k in CASES])
def test_matches_torch(name, kwargs):
    problem = Problem(fresh_seed())
    fp, tp = problem.fjax_params(), problem.torch_params()
    f_opt = getattr(optim, name)(fp, **kwargs)
    t_opt = getattr(torch.optim, name)(tp, **kwargs)
    run_both(problem, f_opt, t_opt, fp, tp)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_param_without_grad_keeps_its_own_step_count(name):
    """A parameter left out of some steps (grad None) is skipped, as in torch (bias corrections per param)."""
    problem = Problem(fresh_seed())
    fp, tp = problem.fjax_params(), problem.torch_params()
    # a large eps keeps the adaptive steps well conditioned: with the default, a gradient entry
    # near 0 (rounded differently by the two frameworks) moves by ~lr * sign(g) either way.
    # RMSprop's first step divides by sqrt(0.01 g^2) + eps, so d(step)/dg = lr / eps at g = 0:
    # eps=1e-3 turns a 2e-7 gradient rounding into 1e-5 (the tolerance); 1e-2 keeps it at 1e-6.
    eps = 1e-2 if name == "RMSprop" else 1e-3
    kwargs = dict(lr=0.05, momentum=0.9) if name == "SGD" else dict(lr=0.05, eps=eps)
    f_opt, t_opt = getattr(optim, name)(fp, **kwargs), getattr(torch.optim, name)(tp, **kwargs)
    run_both(problem, f_opt, t_opt, fp, tp, uses=lambda i: (0, 1, 2) if i % 3 == 0 else (0, 2))


def test_groups_with_changing_hyperparameters():
    """Two groups with their own lr; lr, betas and weight_decay change between steps in both frameworks."""
    problem = Problem(fresh_seed())
    fp, tp = problem.fjax_params(), problem.torch_params()

    def groups(p):
        return [{"params": [p[0], p[1]], "lr": 0.02}, {"params": [p[2]], "weight_decay": 0.1}]

    f_opt, t_opt = optim.Adam(groups(fp), lr=0.05, amsgrad=True), torch.optim.Adam(groups(tp), lr=0.05, amsgrad=True)

    def hook(i):
        for opt in (f_opt, t_opt):
            opt.param_groups[0]["lr"] *= 0.9
            opt.param_groups[1]["betas"] = (0.9 - 0.01 * i, 0.999)
            opt.param_groups[1]["weight_decay"] = 0.1 + 0.01 * i

    run_both(problem, f_opt, t_opt, fp, tp, hook=hook)


def test_structural_change_between_steps():
    """Turning SGD momentum on mid-run starts a fresh (undampened) buffer, as torch."""
    problem = Problem(fresh_seed())
    fp, tp = problem.fjax_params(), problem.torch_params()
    f_opt, t_opt = optim.SGD(fp, lr=0.1, dampening=0.5), torch.optim.SGD(tp, lr=0.1, dampening=0.5)

    def hook(i):
        if i == 4:
            for opt in (f_opt, t_opt):
                opt.param_groups[0]["momentum"] = 0.9

    run_both(problem, f_opt, t_opt, fp, tp, hook=hook)
