"""OneFlow-style ``add_optimizer(opt, lr_sch=...)``: the lr a graph step uses follows the scheduler
exactly as an eager loop (``opt.step(); sch.step()``) and OneFlow's formulas (or torch's, where
OneFlow's scheduler is torch's)."""

import bisect
import math

import numpy as np
import pytest
import torch

import fjax as flow

STEPS = 50
BASE = 0.5
LRS = flow.optim.lr_scheduler


def _oneflow_step(t):  # StepLR(step_size=7, gamma=0.5)
    return BASE * 0.5 ** (t // 7)


def _oneflow_cosine_decay(t, decay_steps=20, alpha=0.1):
    t = min(t, decay_steps)
    return BASE * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * t / decay_steps)) + alpha)


def _oneflow_polynomial(t, decay_batch=30, end=0.01, power=2.0):
    t = min(t, decay_batch)
    return (BASE - end) * (1 - t / decay_batch) ** power + end


def _oneflow_polynomial_cycle(t, decay_batch=12, end=0.01, power=1.0):
    t = max(t, 1)
    length = decay_batch * math.ceil(t / decay_batch)
    return (BASE - end) * (1 - t / length) ** power + end


def _oneflow_warmup_step(t, factor=0.1, iters=5):
    # WarmupLR(StepLR(...), linear, warmup_prefix=False): a straight line from factor * base to the
    # wrapped scheduler's lr at step ``iters``, then the wrapped scheduler at the global step
    if t < iters:
        end = _oneflow_step(iters) / BASE
        return BASE * (factor + (end - factor) * t / iters)
    return _oneflow_step(t)


def _oneflow_warmup_prefix_cosine(t, factor=0.2, iters=6):
    if t < iters:
        return BASE * (factor + (1 - factor) * t / iters)
    return _oneflow_cosine_decay(t - iters)


def _oneflow_multistep(t):
    return BASE * 0.3 ** bisect.bisect_right([5, 12, 30], t)


def _oneflow_linear(t, start=0.25, end=1.0, total=10):
    return BASE * (start + (end - start) * min(t, total) / total)


CASES = {
    "StepLR": (lambda o: LRS.StepLR(o, step_size=7, gamma=0.5), _oneflow_step),
    "MultiStepLR": (lambda o: LRS.MultiStepLR(o, milestones=[5, 12, 30], gamma=0.3), _oneflow_multistep),
    "CosineDecayLR": (lambda o: LRS.CosineDecayLR(o, decay_steps=20, alpha=0.1), _oneflow_cosine_decay),
    "PolynomialLR": (
        lambda o: LRS.PolynomialLR(o, decay_batch=30, end_learning_rate=0.01, power=2.0),
        _oneflow_polynomial,
    ),
    "PolynomialLR-cycle": (
        lambda o: LRS.PolynomialLR(o, decay_batch=12, end_learning_rate=0.01, power=1.0, cycle=True),
        _oneflow_polynomial_cycle,
    ),
    "LinearLR": (lambda o: LRS.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=10), _oneflow_linear),
    "WarmupLR(StepLR)": (
        lambda o: LRS.WarmupLR(LRS.StepLR(o, step_size=7, gamma=0.5), warmup_factor=0.1, warmup_iters=5),
        _oneflow_warmup_step,
    ),
    "WarmupLR(CosineDecayLR, prefix)": (
        lambda o: LRS.WarmupLR(
            LRS.CosineDecayLR(o, decay_steps=20, alpha=0.1), warmup_factor=0.2, warmup_iters=6, warmup_prefix=True
        ),
        _oneflow_warmup_prefix_cosine,
    ),
}

# where OneFlow's scheduler is torch's, torch's own scheduler is the reference sequence
TORCH_CASES = {
    "SequentialLR": (
        lambda o: LRS.SequentialLR(
            o, [LRS.LinearLR(o, start_factor=0.2, total_iters=5), LRS.StepLR(o, step_size=6, gamma=0.7)], [5]
        ),
        lambda o: torch.optim.lr_scheduler.SequentialLR(
            o,
            [
                torch.optim.lr_scheduler.LinearLR(o, start_factor=0.2, total_iters=5),
                torch.optim.lr_scheduler.StepLR(o, step_size=6, gamma=0.7),
            ],
            [5],
        ),
    ),
    "ChainedScheduler": (
        lambda o: LRS.ChainedScheduler([LRS.LinearLR(o, start_factor=0.5, total_iters=8), LRS.ExponentialLR(o, 0.95)]),
        lambda o: torch.optim.lr_scheduler.ChainedScheduler(
            [
                torch.optim.lr_scheduler.LinearLR(o, start_factor=0.5, total_iters=8),
                torch.optim.lr_scheduler.ExponentialLR(o, 0.95),
            ]
        ),
    ),
    "PolynomialLR(total_iters)": (
        lambda o: LRS.PolynomialLR(o, total_iters=20, power=1.5),
        lambda o: torch.optim.lr_scheduler.PolynomialLR(o, total_iters=20, power=1.5),
    ),
}


def _graph_lrs(make_scheduler) -> list:
    """The lr each of STEPS graph steps used, read off a parameter whose gradient is all ones."""
    model = flow.nn.Linear(3, 1, bias=False)
    opt = flow.optim.SGD(model.parameters(), lr=BASE)
    sch = make_scheduler(opt)

    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt, lr_sch=sch)

        def build(self, x):
            loss = self.model(x).sum()
            loss.backward()
            return loss

    graph, x, used = TrainGraph(), flow.ones(1, 3), []
    for _ in range(STEPS):
        before = model.weight.numpy().astype(np.float64)
        graph(x)
        used.append(float((before - model.weight.numpy())[0, 0]))
    return used


def _eager_lrs(make_scheduler) -> list:
    model = flow.nn.Linear(3, 1, bias=False)
    opt = flow.optim.SGD(model.parameters(), lr=BASE)
    sch = make_scheduler(opt)
    out = []
    for _ in range(STEPS):
        out.append(opt.param_groups[0]["lr"])
        model(flow.ones(1, 3)).sum().backward()
        opt.step()
        opt.zero_grad()
        sch.step()
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_graph_lr_sequence_is_eager_and_oneflow_formula(name):
    make, formula = CASES[name]
    expected = [formula(t) for t in range(STEPS)]
    np.testing.assert_allclose(_eager_lrs(make), expected, rtol=1e-9, err_msg="eager")
    np.testing.assert_allclose(_graph_lrs(make), expected, rtol=2e-5, atol=1e-7, err_msg="graph")


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_graph_lr_sequence_is_eager_and_torch(name):
    make, make_torch = TORCH_CASES[name]
    topt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=BASE)
    tsch = make_torch(topt)
    expected = []
    for _ in range(STEPS):
        expected.append(topt.param_groups[0]["lr"])
        topt.step()
        tsch.step()
    np.testing.assert_allclose(_eager_lrs(make), expected, rtol=1e-9, err_msg="eager")
    np.testing.assert_allclose(_graph_lrs(make), expected, rtol=2e-5, atol=1e-7, err_msg="graph")


def test_add_optimizer_checks_its_scheduler():
    model = flow.nn.Linear(2, 1)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    other = flow.optim.SGD(model.parameters(), lr=0.1)

    class G(flow.nn.Graph):
        def build(self, x):
            return x

    with pytest.raises(ValueError, match="lr_sch's optimizer"):
        G().add_optimizer(opt, lr_sch=LRS.StepLR(other, step_size=2))
    with pytest.raises(TypeError, match="Optimizer"):
        G().add_optimizer(model)
    with pytest.raises(NotImplementedError, match="is_sparse"):
        G().add_optimizer(opt, is_sparse=True)
