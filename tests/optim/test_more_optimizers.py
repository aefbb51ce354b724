"""Adamax, NAdam, RAdam, ASGD, Rprop, Adafactor, Muon (and SparseAdam's refusal) against torch; torch's
constructor signatures for every optimizer; MultiplicativeLR, CyclicLR and chained PolynomialLR against torch."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
import torch

import fjax
import fjax.nn as nn
import fjax.optim as optim
from fjax.graph import Graph
from fjax.optim import lr_scheduler as fs

from .helper import Problem, assert_params_close, fresh_seed, run_both

ts = torch.optim.lr_scheduler
NEW = ["Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "Adafactor"]

CASES = [
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.02)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.05)),  # rho_t > 5 (the rectified update) from step 6 on: RAdam runs 10 steps
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.8))),  # from step 7 on
    ("RAdam", dict(lr=0.05, betas=(0.8, 0.85), weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, betas=(0.8, 0.85), weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.1, alpha=0.5, t0=2, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=3, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.01, etas=(0.3, 1.5), step_sizes=(1e-3, 0.015))),
    ("Rprop", dict(lr=0.1, step_sizes=(1e-6, 0.05), maximize=True)),  # lr above the maximum: clamped at once
    ("Adafactor", dict(lr=0.05)),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-4, 1e-2), d=1.5, weight_decay=0.1, maximize=True)),
]


def _ids(cases):
    return [f"{n}-{'-'.join(k)}" for n, k in cases]


@pytest.mark.parametrize("name,kwargs", CASES, ids=_ids(CASES))
def test_matches_torch(name, kwargs):
    problem = Problem(fresh_seed(), steps=10 if name == "RAdam" else 6)
    fp, tp = problem.fjax_params(), problem.torch_params()
    f_opt, t_opt = getattr(optim, name)(fp, **kwargs), getattr(torch.optim, name)(tp, **kwargs)
    run_both(problem, f_opt, t_opt, fp, tp)


def test_adafactor_relative_step_size_on_given_gradients():
    """lr above 1 / sqrt(t): the step size becomes ``1 / sqrt(t)``. Adafactor divides by the gradients'
    RMS, so on a model with such large steps float32 noise in small gradients grows: fixed gradients here."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal((3, 5, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)]
    fp = [fjax.tensor(a, requires_grad=True) for a in init]
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    kw = dict(lr=0.8, beta2_decay=-0.6, eps=(1e-5, 1e-2), d=1.2, weight_decay=0.1)
    f_opt, t_opt = optim.Adafactor(fp, **kw), torch.optim.Adafactor(tp, **kw)
    for i in range(8):
        grads = [rng.standard_normal(a.shape).astype(np.float32) for a in init]
        for f, t, g in zip(fp, tp, grads):
            f.grad, t.grad = fjax.tensor(g), torch.tensor(g)
        f_opt.step()
        t_opt.step()
        assert_params_close(fp, tp, f"seed={seed} step={i}", 1e-5, 1e-6)
    assert sorted(f_opt.state[fp[0]]) == ["col_var", "row_var", "step"]
    assert f_opt.state[fp[0]]["row_var"].shape == (3, 5, 1) and f_opt.state[fp[0]]["col_var"].shape == (3, 1, 4)


@pytest.mark.parametrize("name", NEW)
def test_performance_flags_and_tensor_lr(name):
    """foreach/capturable change nothing (torch's foreach path as the oracle; torch has no capturable
    on the CPU); lr may be a Tensor."""
    problem = Problem(fresh_seed(), steps=5)
    fp, tp = problem.fjax_params(), problem.torch_params()
    capturable = {"capturable": True} if name != "Adafactor" else {}  # Adafactor has no such flag
    f_opt = getattr(optim, name)(fp, lr=fjax.tensor(0.02), foreach=True, **capturable)
    t_opt = getattr(torch.optim, name)(tp, lr=0.02, foreach=True)
    run_both(problem, f_opt, t_opt, fp, tp)


@pytest.mark.parametrize("name", NEW)
def test_groups_with_their_own_lr_and_skipped_params(name):
    """Two groups with different lr, lr changed between steps, one parameter without grad on some steps;
    a structural flag (weight decay on, or maximize for Rprop) switched on mid-run keeps the state."""
    problem = Problem(fresh_seed(), steps=8)
    fp, tp = problem.fjax_params(), problem.torch_params()

    def groups(p):
        return [{"params": [p[0], p[1]], "lr": 0.03}, {"params": [p[2]]}]

    f_opt, t_opt = getattr(optim, name)(groups(fp), lr=0.01), getattr(torch.optim, name)(groups(tp), lr=0.01)

    flag, value = ("maximize", True) if name == "Rprop" else ("weight_decay", 0.1)

    def hook(i):
        for opt in (f_opt, t_opt):
            opt.param_groups[0]["lr"] *= 0.8
            if i == 3:
                opt.param_groups[1][flag] = value

    run_both(problem, f_opt, t_opt, fp, tp, hook=hook, uses=lambda i: (0, 1, 2) if i % 2 == 0 else (0, 2))


def _np(value):
    return value.detach().numpy() if isinstance(value, torch.Tensor) else np.asarray(value.numpy())


def _train(opt, params, loss_fn, batches):
    for x, y in batches:
        opt.zero_grad()
        loss_fn(params, x, y).backward()
        opt.step()


STATE_CASES = [
    ("Adamax", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9))),  # rectified from step 6: the last steps continue rectified
    ("ASGD", dict(lr=0.05, t0=2)),
    ("Rprop", dict(lr=0.01)),
    ("Adafactor", dict(lr=0.05)),  # row_var/col_var for the matrices, variance for the bias
]


@pytest.mark.parametrize("name,kwargs", STATE_CASES, ids=_ids(STATE_CASES))
def test_state_dict_matches_and_continues_across_frameworks(name, kwargs):
    """state_dict has torch's layout and values; torch's continues in fjax and fjax's in torch."""
    problem = Problem(fresh_seed(), steps=7)
    first, rest = problem.batches[:3], problem.batches[3:]
    fp, tp = problem.fjax_params(), problem.torch_params()
    f_opt, t_opt = getattr(optim, name)(fp, **kwargs), getattr(torch.optim, name)(tp, **kwargs)
    _train(f_opt, fp, problem.fjax_loss, first)
    _train(t_opt, tp, problem.torch_loss, first)
    f_sd, t_sd = f_opt.state_dict(), t_opt.state_dict()
    assert f_sd["param_groups"] == t_sd["param_groups"]
    assert list(f_sd["state"]) == list(t_sd["state"])
    for idx, t_entry in t_sd["state"].items():
        assert list(f_sd["state"][idx]) == list(t_entry), f"seed={problem.seed} param {idx}"
        for key, value in t_entry.items():
            got = _np(f_sd["state"][idx][key])
            assert got.shape == _np(value).shape
            np.testing.assert_allclose(got, _np(value), rtol=1e-4, atol=1e-6, err_msg=f"seed={problem.seed} {key}")

    # torch's trajectory from here on is the oracle for both loaded optimizers
    f_from_torch = [fjax.tensor(p.detach().numpy(), requires_grad=True) for p in tp]
    t_from_fjax = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in tp]
    f_opt2 = getattr(optim, name)(f_from_torch, **kwargs)
    f_opt2.load_state_dict(t_opt.state_dict())
    t_opt2 = getattr(torch.optim, name)(t_from_fjax, **kwargs)
    fjax_sd = f_opt.state_dict()
    t_opt2.load_state_dict(
        {
            "state": {i: {k: torch.tensor(_np(v)) for k, v in e.items()} for i, e in fjax_sd["state"].items()},
            "param_groups": fjax_sd["param_groups"],
        }
    )
    f_copy = [fjax.tensor(p.detach().numpy(), requires_grad=True) for p in fp]
    f_opt3 = getattr(optim, name)(f_copy, **kwargs)  # fjax -> fjax round trip
    f_opt3.load_state_dict(fjax_sd)
    for a, b in zip(fjax_sd["state"].values(), f_opt3.state_dict()["state"].values()):
        for key in a:
            np.testing.assert_array_equal(_np(a[key]), _np(b[key]))
    problem.batches = rest
    run_both(problem, f_opt2, t_opt, f_from_torch, tp)
    _train(t_opt2, t_from_fjax, problem.torch_loss, rest)
    assert_params_close(t_from_fjax, tp, f"seed={problem.seed}: fjax state_dict continued in torch", 1e-4, 1e-5)
    _train(f_opt, fp, problem.fjax_loss, rest)
    _train(f_opt3, f_copy, problem.fjax_loss, rest)
    assert_params_close(f_copy, fp, f"seed={problem.seed}: fjax state_dict continued in fjax", 1e-6, 1e-7)


@pytest.mark.parametrize("name", ["NAdam", "Rprop"])
def test_closure(name):
    problem = Problem(fresh_seed(), steps=4)
    fp, tp = problem.fjax_params(), problem.torch_params()
    f_opt, t_opt = getattr(optim, name)(fp, lr=0.02), getattr(torch.optim, name)(tp, lr=0.02)
    for x, y in problem.batches:

        def f_closure(x=x, y=y):
            f_opt.zero_grad()
            loss = problem.fjax_loss(fp, x, y)
            loss.backward()
            return loss

        def t_closure(x=x, y=y):
            t_opt.zero_grad()
            loss = problem.torch_loss(tp, x, y)
            loss.backward()
            return loss

        f_loss, t_loss = f_opt.step(f_closure), t_opt.step(t_closure)
        np.testing.assert_allclose(f_loss.item(), t_loss.item(), rtol=1e-5)
        assert_params_close(fp, tp, f"seed={problem.seed}", 1e-4, 1e-5)


class _Train(Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = ((self.model(x) - y) ** 2).mean()
        loss.backward()
        return loss


GRAPH_CASES = [
    ("Adamax", dict(lr=0.02, weight_decay=0.1)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.02, betas=(0.9, 0.9))),
    ("ASGD", dict(lr=0.05, t0=2, lambd=0.01)),
    ("Rprop", dict(lr=0.01)),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1)),
    ("Muon", dict(lr=0.02)),
]


@pytest.mark.parametrize("name,kw", GRAPH_CASES, ids=_ids(GRAPH_CASES))
def test_graph_step_matches_eager(name, kw):
    """The same optimizer in an nn.Graph training step (add_optimizer) and eagerly."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    batches = [
        (
            fjax.tensor(rng.standard_normal((8, 5)).astype(np.float32)),
            fjax.tensor(rng.standard_normal((8, 3)).astype(np.float32)),
        )
        for _ in range(7)
    ]

    def run(use_graph):
        fjax.manual_seed(seed)
        bias = name != "Muon"  # Muon takes matrices only
        model = nn.Sequential(nn.Linear(5, 7, bias=bias), nn.Tanh(), nn.Linear(7, 3, bias=bias))
        params = list(model.parameters())
        half = len(params) // 2
        opt = getattr(optim, name)([{"params": params[:half]}, {"params": params[half:], "lr": kw["lr"] / 2}], **kw)
        graph = _Train(model, opt) if use_graph else None
        for x, y in batches:
            if use_graph:
                graph(x, y)
                continue
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
        return [p.detach().numpy() for p in params], opt.state_dict()

    (eager, e_sd), (graphed, g_sd) = run(False), run(True)
    for j, (a, b) in enumerate(zip(graphed, eager)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"seed={seed} param {j}")
    for idx, entry in e_sd["state"].items():
        assert sorted(g_sd["state"][idx]) == sorted(entry)
        for key, value in entry.items():
            np.testing.assert_allclose(_np(g_sd["state"][idx][key]), _np(value), rtol=1e-4, atol=1e-6)


def test_constructor_errors_match_torch():
    w = fjax.zeros(3, 2, requires_grad=True)
    tw = torch.zeros(3, 2, requires_grad=True)
    bad = [
        ("Adamax", dict(betas=(0.9, 1.0)), "beta parameter at index 1"),
        ("NAdam", dict(momentum_decay=-1.0), "momentum_decay value"),
        ("RAdam", dict(eps=-1.0), "epsilon value|eps value"),
        ("ASGD", dict(weight_decay=-0.1), "weight_decay value"),
        ("Rprop", dict(etas=(1.1, 1.2)), "eta values"),
        ("Rprop", dict(lr=-1.0), "learning rate|lr value"),
        ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0"),
        ("Adafactor", dict(d=0.5), "threshold d should be >= 1"),
        ("Muon", dict(adjust_lr_fn="sqrt"), "(?i)adjust learning rate function sqrt is not supported"),
    ]
    for name, kwargs, pattern in bad:
        with pytest.raises(ValueError, match=pattern):
            getattr(torch.optim, name)([tw], **kwargs)
        with pytest.raises(ValueError, match=pattern):
            getattr(optim, name)([w], **kwargs)
    for name in NEW[:-1]:  # Adafactor has no differentiable flag
        with pytest.raises(NotImplementedError, match=f"{name}: differentiable=True is not supported"):
            getattr(optim, name)([w], differentiable=True)
    with pytest.raises(ValueError, match=r"Muon only supports 2D parameters whereas param 1 has size \(3,\)"):
        optim.Muon([w, fjax.zeros(3, requires_grad=True)])


MUON_CONFIGS = [dict(lr=0.02), dict(lr=0.05, nesterov=False, weight_decay=0.1, adjust_lr_fn="match_rms_adamw")]


def _muon_pair(problem, kw):
    kw = dict(kw)
    fp, tp = problem.fjax_params(), problem.torch_params()
    f_opt = optim.Muon([fp[0], fp[2]], adjust_lr_fn=kw.pop("adjust_lr_fn", None), **kw)
    t_opt = torch.optim.Muon([tp[0], tp[2]], adjust_lr_fn=f_opt.defaults["adjust_lr_fn"], **kw)
    return f_opt, t_opt, fp, tp


@pytest.mark.parametrize("kw", MUON_CONFIGS)
def test_muon_momentum_scaling_and_decay_match_torch_exactly(kw):
    """With ``ns_steps=0`` the update is the bfloat16 direction over its norm: momentum, Nesterov's
    lerp, the learning-rate adjustment and the decoupled decay agree to float32 rounding (a rare
    bfloat16 tie may move an entry by ``lr`` times one bfloat16 ulp, ~1e-4)."""
    problem = Problem(fresh_seed(), steps=5)
    f_opt, t_opt, fp, tp = _muon_pair(problem, dict(kw, ns_steps=0))
    run_both(problem, f_opt, t_opt, fp, tp, rtol=0, atol=3e-4)
    assert list(f_opt.state_dict()["state"][0]) == list(t_opt.state_dict()["state"][0]) == ["momentum_buffer"]


@pytest.mark.parametrize("kw", MUON_CONFIGS)
def test_muon_newton_schulz_matches_torch_per_step(kw):
    """The quintic Newton-Schulz iteration runs in bfloat16 in both and magnifies its smallest
    singular directions ~3.4**5 times, so a float32-level difference in the gradient that rounds one
    bfloat16 entry the other way moves the result by up to ~10% of ``lr`` (measured: 0.0024 at most over
    100 seeds). Each step therefore starts from torch's parameters and is compared to 0.01, well
    below the ~lr (0.02) a missing or wrong iteration moves them."""
    problem = Problem(fresh_seed(), steps=5)
    f_opt, t_opt, fp, tp = _muon_pair(problem, kw)

    def resync(step):
        with fjax.no_grad():
            for f, t in zip(fp, tp):
                f.copy_(fjax.tensor(t.detach().numpy()))

    run_both(problem, f_opt, t_opt, fp, tp, hook=resync, rtol=0, atol=1e-2)


def test_sparse_adam_is_refused_clearly():
    with pytest.raises(NotImplementedError, match="SparseAdam: fjax has no sparse gradients"):
        optim.SparseAdam([fjax.zeros(3, requires_grad=True)], lr=0.1, betas=(0.9, 0.99), eps=1e-8, maximize=False)


def test_every_torch_optimizer_has_torchs_signature():
    """Same parameter names, kinds (positional / keyword-only), order and defaults as torch 2.13."""
    names = [n for n in dir(torch.optim) if isinstance(getattr(torch.optim, n), type)]
    names = [n for n in names if issubclass(getattr(torch.optim, n), torch.optim.Optimizer) and n != "Optimizer"]
    assert {"Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "SparseAdam", "LBFGS", "Adafactor", "Muon"} <= set(names)
    for name in names:
        t_params = inspect.signature(getattr(torch.optim, name).__init__).parameters
        f_params = inspect.signature(getattr(optim, name).__init__).parameters
        f_list = list(f_params)
        for i, (key, t) in enumerate(t_params.items()):
            assert key in f_params, f"{name}: missing argument {key}"
            f = f_params[key]
            assert (f.kind, f.default) == (t.kind, t.default), f"{name}.{key}"
            assert f_list[i] == key, f"{name}: argument {i} is {f_list[i]}, torch's is {key}"


def test_no_op_flags_of_existing_optimizers_are_accepted():
    w = fjax.zeros(3, requires_grad=True)
    for name, flags in [
        ("SGD", dict(foreach=True, fused=True, nesterov=True, momentum=0.9, maximize=True)),
        ("Adam", dict(foreach=False, fused=True, capturable=True, amsgrad=True, maximize=True)),
        ("AdamW", dict(foreach=True, fused=False, capturable=True, amsgrad=True)),
        ("Adagrad", dict(foreach=True, fused=True, maximize=True)),
        ("RMSprop", dict(foreach=True, capturable=True, centered=True, maximize=True)),
        ("Adadelta", dict(foreach=True, capturable=True, maximize=True)),
    ]:
        opt = getattr(optim, name)([w], lr=fjax.tensor(0.1), **flags)
        assert all(opt.param_groups[0][k] == v for k, v in flags.items())
        with pytest.raises(NotImplementedError, match="differentiable=True"):
            getattr(optim, name)([w], differentiable=True)


def test_every_torch_scheduler_exists():
    for name in ts.__all__:
        assert isinstance(getattr(fs, name), type), name
        assert name in fs.__all__, name


# -- schedulers ---------------------------------------------------------------------------------


def _optimizers(name="SGD", lrs=(0.3, 0.7)):
    kwargs = dict(momentum=0.9) if name == "SGD" else {}
    f = getattr(optim, name)([{"params": [fjax.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs], **kwargs)
    t = getattr(torch.optim, name)([{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs], **kwargs)
    return f, t


def _run(f_opt, t_opt, f_sched, t_sched, what, steps=30, hook=None):
    for i in range(-1, steps):
        if i >= 0:
            f_opt.step()
            t_opt.step()
            f_sched.step()
            t_sched.step()
        np.testing.assert_allclose(f_sched.get_last_lr(), t_sched.get_last_lr(), rtol=1e-12, err_msg=f"{what} {i}")
        for f_group, t_group in zip(f_opt.param_groups, t_opt.param_groups):
            for key in ("lr", "momentum", "betas", "initial_lr", "max_momentum", "base_momentum"):
                if key in t_group:
                    np.testing.assert_allclose(f_group[key], t_group[key], rtol=1e-12, err_msg=f"{what} {i}: {key}")
        if hook is not None:
            hook(i)


class _Factor:
    """A callable object: its __dict__ is saved by state_dict (torch's rule)."""

    def __init__(self, base):
        self.base = base

    def __call__(self, step):
        return self.base + 0.01 * (step % 3)


SCHEDULERS = {
    "MultiplicativeLR": lambda m, o, r: m.MultiplicativeLR(o, lambda e: float(r.uniform(0.85, 0.99))),
    "MultiplicativeLR-per-group": lambda m, o, r: m.MultiplicativeLR(o, [_Factor(0.9), lambda e: 0.95 + 0.001 * e]),
    "CyclicLR": lambda m, o, r: m.CyclicLR(o, base_lr=[0.1, 0.2], max_lr=1.0, step_size_up=4, step_size_down=3),
    "CyclicLR-triangular2": lambda m, o, r: m.CyclicLR(o, 0.05, [0.5, 0.8], 3, mode="triangular2", base_momentum=0.7),
    "CyclicLR-exp_range": lambda m, o, r: m.CyclicLR(o, 0.1, 1.0, 5, 2, mode="exp_range", gamma=0.93),
    "CyclicLR-scale_fn": lambda m, o, r: m.CyclicLR(
        o, 0.1, 1.0, 3, scale_fn=lambda x: 0.8**x, scale_mode="iterations", cycle_momentum=False
    ),
    "PolynomialLR-chained": lambda m, o, r: m.ChainedScheduler(
        [m.PolynomialLR(o, total_iters=12, power=2.0), m.ExponentialLR(o, gamma=0.9)]
    ),
}


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_matches_torch(name, optimizer):
    seed = fresh_seed()
    f_opt, t_opt = _optimizers(optimizer)
    f_sched = SCHEDULERS[name](fs, f_opt, np.random.default_rng(seed))
    t_sched = SCHEDULERS[name](ts, t_opt, np.random.default_rng(seed))
    _run(f_opt, t_opt, f_sched, t_sched, f"seed={seed} {name}/{optimizer}")


@pytest.mark.parametrize("name", ["MultiplicativeLR", "PolynomialLR", "CyclicLR"])
def test_hand_edited_lr_continues_as_torch(name):
    f_opt, t_opt = _optimizers()
    make = {
        "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.9),
        "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=10, power=1.5),
        "CyclicLR": lambda m, o: m.CyclicLR(o, 0.1, 1.0, 4),  # not chainable in torch: the edit is overwritten
    }[name]
    f_sched, t_sched = make(fs, f_opt), make(ts, t_opt)

    def hook(i):
        if i == 3:
            for opt in (f_opt, t_opt):
                opt.param_groups[1]["lr"] *= 0.5

    _run(f_opt, t_opt, f_sched, t_sched, name, hook=hook)


@pytest.mark.parametrize("name", ["MultiplicativeLR-per-group", "CyclicLR-triangular2"])
def test_scheduler_state_dict_resume(name):
    """Optimizer and scheduler state loaded into fresh objects continue exactly as the originals."""
    seed = fresh_seed()
    f_opt, t_opt = _optimizers()
    sched = SCHEDULERS[name](fs, f_opt, np.random.default_rng(seed))
    t_sched = SCHEDULERS[name](ts, t_opt, np.random.default_rng(seed))
    for _ in range(7):
        for o, s in ((f_opt, sched), (t_opt, t_sched)):
            o.step()
            s.step()
    f_sd, t_sd = sched.state_dict(), t_sched.state_dict()
    t_sd = {k: v for k, v in t_sd.items() if not k.startswith("_get_lr")}
    shared = set(f_sd) & set(t_sd)
    assert set(t_sd) - shared <= {"_is_initial"}, sorted(set(t_sd) - shared)
    f_opt2, _ = _optimizers()
    sched2 = SCHEDULERS[name](fs, f_opt2, np.random.default_rng(seed))
    f_opt2.load_state_dict(f_opt.state_dict())
    sched2.load_state_dict(f_sd)
    for i in range(12):
        for o, s in ((f_opt, sched), (f_opt2, sched2), (t_opt, t_sched)):
            o.step()
            s.step()
        assert sched2.get_last_lr() == sched.get_last_lr(), f"seed={seed} step {i}"
        np.testing.assert_allclose(sched2.get_last_lr(), t_sched.get_last_lr(), rtol=1e-12)


def test_scheduler_errors():
    f_opt, _ = _optimizers()
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        fs.MultiplicativeLR(f_opt, [lambda e: 1.0])
    with pytest.raises(TypeError, match="lr_lambda should be a function"):
        fs.MultiplicativeLR(f_opt, 0.5)
    with pytest.raises(ValueError, match="mode 'cosine' is invalid and scale_fn is None"):
        fs.CyclicLR(f_opt, 0.1, 1.0, mode="cosine")
    with pytest.raises(ValueError, match="max_lr must have the same length as optimizer.param_groups"):
        fs.CyclicLR(f_opt, 0.1, [1.0, 2.0, 3.0])
    f_adagrad = optim.Adagrad([fjax.zeros(2, requires_grad=True)])
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        fs.CyclicLR(f_adagrad, 0.1, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fs.CyclicLR(f_adagrad, 0.1, 1.0, cycle_momentum=False).step()
