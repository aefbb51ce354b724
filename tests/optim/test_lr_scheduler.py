"""LR schedulers against torch: lr (and momentum/betas) sequences over 35+ steps, state_dict, warmup."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import fjax
import fjax.optim as optim
from fjax.optim import lr_scheduler as fs
from fjax.serialization import load, save

from .helper import fresh_seed

ts = torch.optim.lr_scheduler


def _optimizers(rng, name="SGD", groups=2):
    lrs = rng.uniform(0.01, 1.0, groups).tolist()
    kwargs = dict(momentum=0.9) if name == "SGD" else {}
    f = getattr(optim, name)([{"params": [fjax.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs], **kwargs)
    t = getattr(torch.optim, name)([{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs], **kwargs)
    return f, t


def _check_groups(f_opt, t_opt, what):
    for f_group, t_group in zip(f_opt.param_groups, t_opt.param_groups):
        for key in ("lr", "momentum", "betas", "initial_lr"):
            if key in t_group:
                np.testing.assert_allclose(f_group[key], t_group[key], rtol=1e-12, err_msg=f"{what}: {key}")


def _run(f_opt, t_opt, f_sched, t_sched, what, steps=36, hook=None):
    _check_groups(f_opt, t_opt, f"{what} at construction")
    for i in range(steps):
        f_opt.step()
        t_opt.step()
        f_sched.step()
        t_sched.step()
        np.testing.assert_allclose(f_sched.get_last_lr(), t_sched.get_last_lr(), rtol=1e-12, err_msg=f"{what} step {i}")
        _check_groups(f_opt, t_opt, f"{what} step {i}")
        if hook is not None:
            hook(i)


CASES = {
    "StepLR": lambda m, o, r: m.StepLR(o, step_size=int(r.integers(2, 6)), gamma=float(r.uniform(0.3, 0.9))),
    "MultiStepLR": lambda m, o, r: m.MultiStepLR(o, milestones=[3, 7, 7, 15], gamma=float(r.uniform(0.3, 0.9))),
    "ExponentialLR": lambda m, o, r: m.ExponentialLR(o, gamma=float(r.uniform(0.8, 0.99))),
    "CosineAnnealingLR": lambda m, o, r: m.CosineAnnealingLR(o, T_max=int(r.integers(5, 12)), eta_min=1e-3),
    "LambdaLR": lambda m, o, r: m.LambdaLR(o, [lambda e: 0.95**e, lambda e: 1.0 / (1 + e)]),
    "LinearLR": lambda m, o, r: m.LinearLR(o, start_factor=float(r.uniform(0.1, 0.5)), end_factor=0.9, total_iters=8),
    "ConstantLR": lambda m, o, r: m.ConstantLR(o, factor=float(r.uniform(0.1, 0.9)), total_iters=6),
    "OneCycleLR": lambda m, o, r: m.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=40),
    "OneCycleLR-linear-3phase": lambda m, o, r: m.OneCycleLR(
        o, max_lr=1.5, epochs=4, steps_per_epoch=10, anneal_strategy="linear", three_phase=True, pct_start=0.25
    ),
    "SequentialLR": lambda m, o, r: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.25, total_iters=5), m.ExponentialLR(o, gamma=0.9)], milestones=[5]
    ),
    "ChainedScheduler": lambda m, o, r: m.ChainedScheduler(
        [m.ExponentialLR(o, gamma=0.95), m.StepLR(o, step_size=4, gamma=0.5)]
    ),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_lr_sequence_matches_torch(name, optimizer):
    seed = fresh_seed()
    f_opt, t_opt = _optimizers(np.random.default_rng(seed), optimizer)
    f_sched = CASES[name](fs, f_opt, np.random.default_rng(seed))
    t_sched = CASES[name](ts, t_opt, np.random.default_rng(seed))
    _run(f_opt, t_opt, f_sched, t_sched, f"seed={seed} {name}/{optimizer}", steps=39 if "OneCycle" in name else 36)


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "LinearLR", "ExponentialLR"])
def test_hand_edited_lr_chains_as_torch(name):
    """A user who changes group['lr'] mid-schedule gets torch's chainable continuation."""
    seed = fresh_seed()
    f_opt, t_opt = _optimizers(np.random.default_rng(seed))
    f_sched = CASES[name](fs, f_opt, np.random.default_rng(seed))
    t_sched = CASES[name](ts, t_opt, np.random.default_rng(seed))

    def hook(i):
        if i == 3:
            for opt in (f_opt, t_opt):
                opt.param_groups[1]["lr"] *= 0.5

    _run(f_opt, t_opt, f_sched, t_sched, f"seed={seed} {name}", hook=hook)


def test_closed_form_epoch_argument_matches_torch():
    seed = fresh_seed()
    f_opt, t_opt = _optimizers(np.random.default_rng(seed))
    f_sched, t_sched = fs.StepLR(f_opt, 3, gamma=0.5), ts.StepLR(t_opt, 3, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in (7, 2, 11):
            f_sched.step(epoch)
            t_sched.step(epoch)
            np.testing.assert_allclose(f_sched.get_last_lr(), t_sched.get_last_lr(), rtol=1e-12)


@pytest.mark.parametrize("method", ["linear", "constant"])
@pytest.mark.parametrize("wrapped", [None, "StepLR", "CosineAnnealingLR"])
@pytest.mark.parametrize("prefix", [False, True])
def test_warmup_matches_the_torch_composition(method, wrapped, prefix):
    """WarmupLR == torch's LinearLR/ConstantLR, chained with (or followed by) the wrapped scheduler."""
    if wrapped is None and prefix:
        pytest.skip("warmup_prefix only matters with a wrapped scheduler")
    if wrapped is not None and not prefix:
        pytest.skip("OneFlow's warmup_prefix=False has no torch composition: test_lr_scheduler_oneflow.py checks it")
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    factor, iters = float(rng.uniform(0.05, 0.5)), int(rng.integers(3, 8))
    f_opt, t_opt = _optimizers(rng)
    f_inner = CASES[wrapped](fs, f_opt, np.random.default_rng(seed)) if wrapped else f_opt
    t_inner = CASES[wrapped](ts, t_opt, np.random.default_rng(seed)) if wrapped else None
    f_sched = fs.WarmupLR(f_inner, warmup_factor=factor, warmup_iters=iters, warmup_method=method, warmup_prefix=prefix)
    if method == "linear":
        t_warm = ts.LinearLR(t_opt, start_factor=factor, end_factor=1.0, total_iters=iters)
    else:
        t_warm = ts.ConstantLR(t_opt, factor=factor, total_iters=iters)
    if t_inner is None:
        t_sched = t_warm
    elif prefix:
        t_sched = ts.SequentialLR(t_opt, [t_warm, t_inner], milestones=[iters])
    else:
        t_sched = ts.ChainedScheduler([t_inner, t_warm])
    _run(f_opt, t_opt, f_sched, t_sched, f"seed={seed} WarmupLR({wrapped}, {method}, prefix={prefix})")


def test_warmup_definition():
    """OneFlow: lr(t) = base * (f + (gamma**n - f) * t / n) for t < n, then base * gamma**t (ExponentialLR inside)."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    f_opt, _ = _optimizers(rng, groups=1)
    base, gamma, factor, n = f_opt.param_groups[0]["lr"], 0.9, 0.2, 5
    sched = fs.WarmUpLR(fs.ExponentialLR(f_opt, gamma), warmup_factor=factor, warmup_iters=n)
    for t in range(1, 30):
        sched.step()
        want = base * (factor + (gamma**n - factor) * t / n) if t < n else base * gamma**t
        assert math.isclose(sched.get_last_lr()[0], want, rel_tol=1e-12), f"seed={seed} t={t}"


@pytest.mark.parametrize("name", ["MultiStepLR", "OneCycleLR", "SequentialLR", "LambdaLR"])
def test_state_dict_resume_through_save(name, tmp_path):
    """Optimizer + scheduler state saved with fjax.save and loaded into fresh objects continue identically."""
    seed = fresh_seed()
    f_opt, _ = _optimizers(np.random.default_rng(seed))
    sched = CASES[name](fs, f_opt, np.random.default_rng(seed))
    for _ in range(10):
        f_opt.step()
        sched.step()
    save({"optim": f_opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "ckpt")
    ckpt = load(tmp_path / "ckpt")
    f_opt2, _ = _optimizers(np.random.default_rng(seed))
    sched2 = CASES[name](fs, f_opt2, np.random.default_rng(seed))
    f_opt2.load_state_dict(ckpt["optim"])
    sched2.load_state_dict(ckpt["sched"])
    for i in range(15):
        for o, s in ((f_opt, sched), (f_opt2, sched2)):
            o.step()
            s.step()
        assert sched2.get_last_lr() == sched.get_last_lr(), f"seed={seed} step {i}"


def test_scheduler_errors():
    f_opt, _ = _optimizers(np.random.default_rng(0))
    with pytest.raises(fjax.OpError, match="StepLR: list is not an Optimizer"):
        fs.StepLR([], 3)
    with pytest.raises(KeyError, match="initial_lr"):
        fs.StepLR(f_opt, 3, last_epoch=4)
    with pytest.raises(ValueError, match="one more scheduler than milestones"):
        fs.SequentialLR(f_opt, [fs.ExponentialLR(f_opt, 0.9)], milestones=[3])
    with pytest.raises(ValueError, match="warmup_method must be 'linear' or 'constant'"):
        fs.WarmupLR(f_opt, warmup_method="cosine")
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        fs.LambdaLR(f_opt, [lambda e: 1.0])
    sched = fs.OneCycleLR(f_opt, max_lr=1.0, total_steps=3)
    with pytest.raises(ValueError, match="tried to step 4 times; the specified number of total steps is 3"):
        for _ in range(4):
            sched.step()
