"""OneFlow's LR schedulers: names, arguments, values (against torch where torch has them, else the
documented formula written out here), ``last_step``, state dicts, and stepping inside nn.Graph."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import fjax
import fjax.nn as nn
import fjax.optim as optim
from fjax.optim import lr_scheduler as fs

from .helper import fresh_seed

ts = torch.optim.lr_scheduler
STEPS = 32


def _pair(rng, groups=2, same_lr=False):
    lrs = [float(rng.uniform(0.05, 1.0))] * groups if same_lr else rng.uniform(0.05, 1.0, groups).tolist()
    f = optim.SGD([{"params": [fjax.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs], momentum=0.9)
    t = torch.optim.SGD([{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs], momentum=0.9)
    return f, t, lrs


def _lrs(sched, steps=STEPS):
    """The lr of every group at steps 0..steps-1 (read before each step)."""
    out = []
    for _ in range(steps):
        out.append(list(sched.get_last_lr()))
        sched.step()
    return np.array(out)


def _formula(bases, fn, steps=STEPS):
    return np.array([[fn(b, t) for b in bases] for t in range(steps)])


# -- against torch ------------------------------------------------------------------------------

TORCH_CASES = {
    "WarmRestarts-T0=3": (
        lambda o: fs.CosineAnnealingWarmRestarts(o, T_0=3),
        lambda o: ts.CosineAnnealingWarmRestarts(o, T_0=3),
    ),
    "WarmRestarts-T0=2-Tmult=2-eta": (
        lambda o: fs.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.01),
        lambda o: ts.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.01),
    ),
    "WarmRestarts-T0=1-Tmult=3": (
        lambda o: fs.CosineAnnealingWarmRestarts(o, 1, 3, 0.02),
        lambda o: ts.CosineAnnealingWarmRestarts(o, 1, 3, 0.02),
    ),
    "Polynomial-total_iters": (
        lambda o: fs.PolynomialLR(o, total_iters=10, power=2.0),
        lambda o: ts.PolynomialLR(o, total_iters=10, power=2.0),
    ),
    "Polynomial-decay_batch-end0": (
        lambda o: fs.PolynomialLR(o, decay_batch=25, end_learning_rate=0.0, power=0.5),
        lambda o: ts.PolynomialLR(o, total_iters=25, power=0.5),
    ),
    "Polynomial-steps-end0": (
        lambda o: fs.PolynomialLR(o, steps=7, end_learning_rate=0.0),
        lambda o: ts.PolynomialLR(o, total_iters=7),
    ),
    "Sequential-interval_rescaling=True": (
        lambda o: fs.SequentialLR(
            o, [fs.ConstantLR(o, 0.2, 4), fs.StepLR(o, 3, 0.5)], milestones=[4], interval_rescaling=True
        ),
        lambda o: ts.SequentialLR(o, [ts.ConstantLR(o, 0.2, 4), ts.StepLR(o, 3, 0.5)], milestones=[4]),
    ),
    "Sequential-interval_rescaling-positional": (  # OneFlow's 4th parameter; torch's is last_epoch
        lambda o: fs.SequentialLR(o, [fs.ConstantLR(o, 0.2, 4), fs.StepLR(o, 3, 0.5)], [4], True),
        lambda o: ts.SequentialLR(o, [ts.ConstantLR(o, 0.2, 4), ts.StepLR(o, 3, 0.5)], milestones=[4]),
    ),
    "Sequential-3-interval_rescaling=True": (
        lambda o: fs.SequentialLR(
            o,
            [fs.LinearLR(o, 0.1, 1.0, 5), fs.CosineAnnealingLR(o, 8, 0.01), fs.ExponentialLR(o, 0.9)],
            milestones=[5, 20],
            interval_rescaling=[True, True],
        ),
        lambda o: ts.SequentialLR(
            o,
            [ts.LinearLR(o, 0.1, 1.0, 5), ts.CosineAnnealingLR(o, 8, 0.01), ts.ExponentialLR(o, 0.9)],
            milestones=[5, 20],
        ),
    ),
    # torch's schedulers under OneFlow's argument name ``last_step``
    "StepLR-last_step": (lambda o: fs.StepLR(o, 4, 0.5, last_step=-1), lambda o: ts.StepLR(o, 4, 0.5)),
    "MultiStepLR-last_step": (
        lambda o: fs.MultiStepLR(o, [3, 9, 9], 0.3, last_step=-1),
        lambda o: ts.MultiStepLR(o, [3, 9, 9], 0.3),
    ),
    "ExponentialLR-last_step": (lambda o: fs.ExponentialLR(o, 0.93, last_step=-1), lambda o: ts.ExponentialLR(o, 0.93)),
    "CosineAnnealingLR-last_step": (
        lambda o: fs.CosineAnnealingLR(o, 7, 0.05, last_step=-1),
        lambda o: ts.CosineAnnealingLR(o, 7, 0.05),
    ),
    "LinearLR-last_step": (
        lambda o: fs.LinearLR(o, 0.25, 0.8, 9, last_step=-1),
        lambda o: ts.LinearLR(o, 0.25, 0.8, 9),
    ),
    "ConstantLR-last_step": (lambda o: fs.ConstantLR(o, 0.4, 6, last_step=-1), lambda o: ts.ConstantLR(o, 0.4, 6)),
    "LambdaLR-last_step": (
        lambda o: fs.LambdaLR(o, lambda t: 1 / (1 + t), last_step=-1),
        lambda o: ts.LambdaLR(o, lambda t: 1 / (1 + t)),
    ),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_matches_torch(name):
    seed = fresh_seed()
    f_opt, t_opt, _ = _pair(np.random.default_rng(seed))
    make_f, make_t = TORCH_CASES[name]
    f_sched, t_sched = make_f(f_opt), make_t(t_opt)
    for i in range(STEPS):
        np.testing.assert_allclose(f_sched.get_last_lr(), t_sched.get_last_lr(), rtol=1e-10, err_msg=f"{name} {i}")
        np.testing.assert_allclose(
            [g["lr"] for g in f_opt.param_groups], [g["lr"] for g in t_opt.param_groups], rtol=1e-10
        )
        f_opt.step()
        t_opt.step()
        f_sched.step()
        t_sched.step()


PLATEAU = [
    dict(),
    dict(mode="max", factor=0.5, patience=2, threshold=0.05),
    dict(mode="min", factor=0.3, patience=1, threshold=0.1, threshold_mode="abs", cooldown=2, min_lr=[0.01, 0.2]),
    dict(mode="max", factor=0.7, patience=0, threshold_mode="abs", cooldown=1, min_lr=0.03, eps=1e-3),
]


@pytest.mark.parametrize("kwargs", PLATEAU, ids=range(len(PLATEAU)))
def test_reduce_on_plateau_matches_torch(kwargs):
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    f_opt, t_opt, _ = _pair(rng)
    f_sched, t_sched = fs.ReduceLROnPlateau(f_opt, **kwargs), ts.ReduceLROnPlateau(t_opt, **kwargs)
    metrics = np.concatenate([np.linspace(3, 1, 6), np.full(8, 1.0), rng.uniform(0.5, 1.5, 40)])
    for i, m in enumerate(metrics):
        # a 0-d fjax Tensor as the metric on odd steps, as a loss would be passed
        f_sched.step(fjax.tensor(float(m)) if i % 2 else float(m))
        t_sched.step(float(m))
        np.testing.assert_allclose(f_sched.get_last_lr(), t_sched.get_last_lr(), rtol=1e-12, err_msg=f"seed={seed} {i}")
        assert f_sched.num_bad_epochs == t_sched.num_bad_epochs
        assert f_sched.cooldown_counter == t_sched.cooldown_counter
        assert f_sched.last_epoch == f_sched.last_step == t_sched.last_epoch


# -- OneFlow-only: the documented formulas ------------------------------------------------------


@pytest.mark.parametrize("decay_steps,alpha", [(10, 0.0), (7, 0.25), (40, 0.9), (1, 0.5)])
def test_cosine_decay_formula(decay_steps, alpha):
    f_opt, _, bases = _pair(np.random.default_rng(fresh_seed()))

    def want(b, t):
        t = min(t, decay_steps)
        return b * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * t / decay_steps)) + alpha)

    np.testing.assert_allclose(_lrs(fs.CosineDecayLR(f_opt, decay_steps, alpha)), _formula(bases, want), rtol=1e-12)


@pytest.mark.parametrize(
    "T_0,T_mult,eta_min,decay_rate,restart_limit",
    [(4, 1, 0.0, 0.5, 0), (3, 2, 0.01, 0.8, 0), (5, 1, 0.02, 1.0, 3), (2, 3, 0.0, 0.7, 2)],
)
def test_warm_restarts_formula(T_0, T_mult, eta_min, decay_rate, restart_limit):  # noqa: N803
    f_opt, _, bases = _pair(np.random.default_rng(fresh_seed()))

    def want(b, t):
        # cycle i spans [T_0 * (T_mult**i - 1) / (T_mult - 1), ...) (T_0 * i when T_mult == 1)
        i = 0
        start = lambda k: T_0 * k if T_mult == 1 else T_0 * (T_mult**k - 1) // (T_mult - 1)  # noqa: E731
        while start(i + 1) <= t:
            i += 1
        if restart_limit and i >= restart_limit:
            return eta_min
        t_i, t_cur = T_0 * T_mult**i, t - start(i)
        return eta_min + (b * decay_rate**i - eta_min) * 0.5 * (1 + math.cos(math.pi * t_cur / t_i))

    sched = fs.CosineAnnealingWarmRestarts(f_opt, T_0, T_mult, eta_min, decay_rate, restart_limit)
    np.testing.assert_allclose(_lrs(sched), _formula(bases, want), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("decay_batch,end,power,cycle", [(10, 1e-4, 1.0, False), (6, 0.01, 2.0, False),
                                                        (5, 0.02, 1.5, True), (8, 1e-4, 1.0, True)])  # fmt: skip
def test_polynomial_formula(decay_batch, end, power, cycle):
    f_opt, _, bases = _pair(np.random.default_rng(fresh_seed()))

    def want(b, t):
        if cycle:
            horizon = decay_batch * math.ceil(max(t, 1) / decay_batch)  # OneFlow takes step 0 as step 1
            t = max(t, 1)
        else:
            horizon, t = decay_batch, min(t, decay_batch)
        return (b - end) * (1 - t / horizon) ** power + end

    sched = fs.PolynomialLR(f_opt, decay_batch, end_learning_rate=end, power=power, cycle=cycle)
    np.testing.assert_allclose(_lrs(sched), _formula(bases, want), rtol=1e-12, atol=1e-15)


def test_polynomial_defaults_and_aliases():
    f_opt, _, _ = _pair(np.random.default_rng(0))
    assert fs.PolynomialLR(f_opt, 5).end_learning_rate == 0.0001  # OneFlow's default
    assert fs.PolynomialLR(f_opt, steps=5).end_learning_rate == 0.0001
    assert fs.PolynomialLR(f_opt, total_iters=5).end_learning_rate == 0.0  # torch's keyword, torch's end
    with pytest.raises(ValueError, match="decay length once"):
        fs.PolynomialLR(f_opt, 5, steps=5)
    with pytest.raises(ValueError, match="decay_batch must be positive"):
        fs.PolynomialLR(f_opt, 0)


def _inner(kind, opt):
    return {
        "CosineDecayLR": lambda: fs.CosineDecayLR(opt, decay_steps=20, alpha=0.1),
        "StepLR": lambda: fs.StepLR(opt, step_size=4, gamma=0.5),
        "CosineAnnealingLR": lambda: fs.CosineAnnealingLR(opt, T_max=9, eta_min=0.01),
        "PolynomialLR": lambda: fs.PolynomialLR(opt, 15, end_learning_rate=0.01, power=2.0),
    }[kind]()


def _inner_formula(kind):
    return {
        "CosineDecayLR": lambda b, t: b * (0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 20) / 20)) + 0.1),
        "StepLR": lambda b, t: b * 0.5 ** (t // 4),
        "CosineAnnealingLR": lambda b, t: 0.01 + (b - 0.01) * 0.5 * (1 + math.cos(math.pi * t / 9)),
        "PolynomialLR": lambda b, t: (b - 0.01) * (1 - min(t, 15) / 15) ** 2.0 + 0.01,
    }[kind]


@pytest.mark.parametrize("method", ["linear", "constant"])
@pytest.mark.parametrize("prefix", [False, True])
@pytest.mark.parametrize("inner", [None, "CosineDecayLR", "StepLR", "CosineAnnealingLR", "PolynomialLR"])
def test_warmup_formula(method, prefix, inner):
    """OneFlow's WarmupLR = SequentialLR([LinearLR or ConstantLR, inner], [n], interval_rescaling=[prefix]);
    the linear ramp ends at inner(n) / base when prefix is False, at 1 otherwise."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    f_opt, _, bases = _pair(rng)
    factor, n = float(rng.uniform(0.05, 0.6)), int(rng.integers(2, 8))
    wrapped = f_opt if inner is None else _inner(inner, f_opt)
    sched = fs.WarmupLR(wrapped, warmup_factor=factor, warmup_iters=n, warmup_method=method, warmup_prefix=prefix)
    g = (lambda b, t: b) if inner is None else _inner_formula(inner)

    def want(b, t):
        if t < n:
            if method == "constant":
                return b * factor
            end = g(b, n) / b if inner is not None and not prefix else 1.0
            return b * (factor + (end - factor) * t / n)
        return g(b, t - n if prefix else t)

    np.testing.assert_allclose(_lrs(sched), _formula(bases, want), rtol=1e-12, err_msg=f"seed={seed}")


def test_warmup_oneflow_docstring_numbers():
    """OneFlow's WarmupLR docstring: CosineDecayLR(5, alpha=0.1) after a 2-step linear warmup from 0.5 gives
    0.000689 then 0.000410 at steps 2 and 3 (lr=0.001); the constant/linear examples without a scheduler too."""
    opt = optim.SGD([fjax.zeros(1, requires_grad=True)], lr=0.001)
    lrs = _lrs(fs.WarmUpLR(fs.CosineDecayLR(opt, decay_steps=5, alpha=0.1), warmup_factor=0.5, warmup_iters=2), 4)
    np.testing.assert_allclose(lrs[2:, 0], [0.000689, 0.000410], atol=1e-6)
    opt = optim.SGD([fjax.zeros(1, requires_grad=True)], lr=0.001)
    lrs = _lrs(fs.WarmupLR(opt, warmup_factor=0.5, warmup_iters=5, warmup_method="constant"), 7)
    np.testing.assert_allclose(lrs[:, 0], [0.0005] * 5 + [0.001] * 2, rtol=1e-12)
    opt = optim.SGD([fjax.zeros(1, requires_grad=True)], lr=0.001)
    lrs = _lrs(fs.WarmupLR(opt, warmup_factor=0.5, warmup_iters=5, warmup_method="linear"), 7)
    np.testing.assert_allclose(lrs[:, 0], [0.0005, 0.0006, 0.0007, 0.0008, 0.0009, 0.001, 0.001], rtol=1e-12)


def test_sequential_shared_step():
    """interval_rescaling=False (OneFlow's default there): the later scheduler sees the global step."""
    f_opt, _, bases = _pair(np.random.default_rng(fresh_seed()))
    sched = fs.SequentialLR(
        f_opt,
        [fs.ConstantLR(f_opt, 0.1, 3), fs.ExponentialLR(f_opt, 0.9), fs.CosineDecayLR(f_opt, 30, 0.2)],
        milestones=[3, 12],
        interval_rescaling=[False, True],
    )

    def want(b, t):
        if t < 3:
            return b * 0.1
        if t < 12:
            return b * 0.9**t
        return b * (0.8 * 0.5 * (1 + math.cos(math.pi * (t - 12) / 30)) + 0.2)

    np.testing.assert_allclose(_lrs(sched), _formula(bases, want), rtol=1e-12)


# -- last_step and state dicts -----------------------------------------------------------------

ALL = {
    "CosineDecayLR": lambda o, **k: fs.CosineDecayLR(o, 10, 0.1, **k),
    "CosineAnnealingWarmRestarts": lambda o, **k: fs.CosineAnnealingWarmRestarts(o, 3, 2, 0.01, 0.9, **k),
    "PolynomialLR": lambda o, **k: fs.PolynomialLR(o, 12, 0.01, 2.0, True, **k),
    "WarmupLR": lambda o, **k: fs.WarmupLR(fs.CosineDecayLR(o, 20), 0.2, 4, **k),
    "StepLR": lambda o, **k: fs.StepLR(o, 3, 0.5, **k),
    "LinearLR": lambda o, **k: fs.LinearLR(o, 0.2, 1.0, 6, **k),
    "SequentialLR": lambda o, **k: fs.SequentialLR(
        o, [fs.ConstantLR(o, 0.5, 2), fs.ExponentialLR(o, 0.9)], [2], interval_rescaling=False, **k
    ),
}


@pytest.mark.parametrize("name", list(ALL))
def test_last_step_and_state_dict(name):
    f_opt, _, _ = _pair(np.random.default_rng(fresh_seed()), same_lr=True)
    sched = ALL[name](f_opt, last_step=-1)
    for _ in range(9):
        sched.step()
    assert sched.last_step == sched.last_epoch == 9
    state = sched.state_dict()
    assert state["last_step"] == state["last_epoch"] == 9
    group_lrs = [g["lr"] for g in f_opt.param_groups]  # an optimizer state dict carries these
    lrs = _lrs(sched, 10)
    # a OneFlow-style state dict (``last_step`` only) resumes a fresh scheduler at the same point
    f_opt2, _, _ = _pair(np.random.default_rng(0), same_lr=True)
    for g, g0 in zip(f_opt2.param_groups, f_opt.param_groups):
        g["lr"] = g0["initial_lr"]
    sched2 = ALL[name](f_opt2)
    state = {k: v for k, v in state.items() if k != "last_epoch"}
    sched2.load_state_dict(state)
    for g, lr in zip(f_opt2.param_groups, group_lrs):  # torch's chainable schedulers continue from the group's lr
        g["lr"] = lr
    assert sched2.last_step == 9
    sched2.step()
    np.testing.assert_allclose(_lrs(sched2, 10)[:-1], lrs[1:], rtol=1e-12)
    sched.last_step = 3  # the attribute is writable under OneFlow's name
    assert sched.last_epoch == 3


def test_resume_with_last_step():
    f_opt, _, bases = _pair(np.random.default_rng(fresh_seed()))
    fs.CosineDecayLR(f_opt, 10)  # records initial_lr
    sched = fs.CosineDecayLR(f_opt, 10, last_step=4)  # resumes: the first step goes to step 5
    want = [b * 0.5 * (1 + math.cos(math.pi * 5 / 10)) for b in bases]
    np.testing.assert_allclose(sched.get_last_lr(), want, rtol=1e-12)
    with pytest.raises(ValueError, match="disagree"):
        fs.StepLR(f_opt, 3, last_epoch=2, last_step=4)


# -- inside nn.Graph ---------------------------------------------------------------------------


class _OneWeight(nn.Graph):
    def __init__(self, model, opt, sch):
        super().__init__()
        self.model = model
        self.add_optimizer(opt, lr_sch=sch)

    def build(self, x):
        loss = self.model(x).sum()  # d loss / d w = x = 1: plain SGD moves w by exactly -lr
        loss.backward()
        return loss


GRAPH_CASES = {
    "StepLR": lambda o: fs.StepLR(o, 3, 0.5),
    "CosineDecayLR": lambda o: fs.CosineDecayLR(o, 12, 0.1),
    "CosineAnnealingWarmRestarts": lambda o: fs.CosineAnnealingWarmRestarts(o, 4, 2, 0.01, 0.8),
    "PolynomialLR": lambda o: fs.PolynomialLR(o, 10, 0.05, 2.0),
    "WarmupLR(CosineDecayLR)": lambda o: fs.WarmupLR(fs.CosineDecayLR(o, 15, 0.1), 0.2, 5),
    "WarmupLR-prefix-constant": lambda o: fs.WarmupLR(fs.ExponentialLR(o, 0.9), 0.3, 4, "constant", True),
    "LinearLR": lambda o: fs.LinearLR(o, 0.1, 1.0, 8),
    "SequentialLR": lambda o: fs.SequentialLR(o, [fs.ConstantLR(o, 0.5, 3), fs.CosineAnnealingLR(o, 6)], [3]),
}


@pytest.mark.parametrize("name", list(GRAPH_CASES))
def test_graph_steps_the_scheduler(name):
    """The k-th graph call updates with the lr an eager loop would use at step k (scheduler stepped after it)."""
    base, steps = 0.5, 20
    eager_opt = optim.SGD([fjax.zeros(1, requires_grad=True)], lr=base)
    eager = _lrs(GRAPH_CASES[name](eager_opt), steps)[:, 0]

    model = nn.Linear(1, 1, bias=False)
    with fjax.no_grad():
        model.weight.fill_(0.0)
    opt = optim.SGD(model.parameters(), lr=base)
    graph = _OneWeight(model, opt, GRAPH_CASES[name](opt))
    x = fjax.ones(1, 1)
    used = []
    for _ in range(steps):
        before = float(model.weight.numpy()[0, 0])
        graph(x)
        used.append(before - float(model.weight.numpy()[0, 0]))
    np.testing.assert_allclose(used, eager, rtol=1e-5, atol=2e-6, err_msg=name)
