"""OneFlow's optimizer options and optimizers: do_bias_correction, contiguous_params, per-group
gradient clipping, LAMB and Adadelta. Each is checked against torch where torch has it, else
against a numpy transcription of OneFlow's update kernels (written here, independently of fjax)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import fjax
import fjax.nn as nn
import fjax.optim as optim
from fjax.graph import Graph

from .helper import Problem, assert_params_close, fresh_seed, run_both

# -- numpy references of OneFlow's updates (one parameter, step t counted from 1) --------------


def oneflow_adam(w, g, st, t, lr, betas, eps, l2=0.0, decoupled=0.0, amsgrad=False, do_bias_correction=True):
    """OneFlow's adam_update: L2 into the gradient, decoupled decay ``lr * wd * w`` subtracted."""
    b1, b2 = betas
    g = g + l2 * w
    st["m"] = b1 * st.get("m", 0.0) + (1 - b1) * g
    st["v"] = b2 * st.get("v", 0.0) + (1 - b2) * g * g
    v = st["v"]
    if amsgrad:
        st["vmax"] = v = np.maximum(st.get("vmax", 0.0), v)
    bc1, bc2 = (1 - b1**t, 1 - b2**t) if do_bias_correction else (1.0, 1.0)
    denom = np.sqrt(v) / np.sqrt(bc2) + eps
    return w - lr / bc1 * st["m"] / denom - lr * decoupled * w


def oneflow_lamb(w, g, st, t, lr, betas, eps, weight_decay=0.0, adam_w_mode=True, do_bias_correction=True):
    """OneFlow's lamb_update: Adam direction u, trust ratio ||w|| / ||u||, then ``u + wd * w``."""
    b1, b2 = betas
    wd, l2 = (weight_decay, 0.0) if adam_w_mode else (0.0, weight_decay)
    g = g + l2 * w
    st["m"] = b1 * st.get("m", 0.0) + (1 - b1) * g
    st["v"] = b2 * st.get("v", 0.0) + (1 - b2) * g * g
    if do_bias_correction:
        u = (st["m"] / (1 - b1**t)) / (np.sqrt(st["v"]) / np.sqrt(1 - b2**t) + eps)
    else:
        u = st["m"] / (np.sqrt(st["v"]) + eps)
    w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(u)
    ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    return w - lr * ratio * (u + wd * w)


def run_against_reference(problem, f_opt, fp, update, steps=10, rtol=1e-4, atol=1e-5):
    """fjax's optimizer against ``update(w, g, state, t)`` applied in float64 to every parameter,
    fed fjax's own gradients: only the update rule is compared (without bias correction a tiny
    gradient's rounding is amplified by ``1 / (sqrt(v) + eps)``, so gradients from another
    computation would differ by more than the rule does)."""
    ref = [a.astype(np.float64) for a in problem.init]
    states = [{} for _ in ref]
    for t, (x, y) in enumerate(problem.batches[:steps], start=1):
        f_opt.zero_grad()
        problem.fjax_loss(fp, x, y).backward()
        grads = [p.grad.numpy().astype(np.float64) for p in fp]
        ref = [update(w, g, st, t) for w, g, st in zip(ref, grads, states)]
        f_opt.step()
        for j, (a, b) in enumerate(zip(fp, ref)):
            np.testing.assert_allclose(
                a.detach().numpy(), b, rtol=rtol, atol=atol, err_msg=f"seed={problem.seed} step={t} param {j}"
            )


# -- 1. do_bias_correction ----------------------------------------------------------------------

ADAM_CASES = [
    (name, wd, amsgrad, bc)
    for name in ("Adam", "AdamW")
    for wd in (0.0, 0.1)
    for amsgrad in (False, True)
    for bc in (False, True)
]


@pytest.mark.parametrize("name,wd,amsgrad,bc", ADAM_CASES)
def test_adam_do_bias_correction_matches_oneflow(name, wd, amsgrad, bc):
    problem = Problem(fresh_seed(), steps=10)
    fp = problem.fjax_params()
    kw = dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=wd, amsgrad=amsgrad)
    f_opt = getattr(optim, name)(fp, do_bias_correction=bc, **kw)
    decay = dict(decoupled=wd) if name == "AdamW" else dict(l2=wd)

    def update(w, g, st, t):
        return oneflow_adam(w, g, st, t, 0.05, (0.8, 0.99), 1e-6, amsgrad=amsgrad, do_bias_correction=bc, **decay)

    run_against_reference(problem, f_opt, fp, update)


def test_do_bias_correction_per_group_and_state_dict():
    """A group may switch it off alone; torch's param_groups keys are unchanged while it is on."""
    problem = Problem(fresh_seed(), steps=10)
    fp = problem.fjax_params()
    f_opt = optim.Adam([{"params": fp[:2]}, {"params": fp[2:], "do_bias_correction": False}], lr=0.05)
    assert "do_bias_correction" not in f_opt.param_groups[0]

    def update(w, g, st, t):
        bc = not any(w.shape == p.shape for p in fp[2:])
        return oneflow_adam(w, g, st, t, 0.05, (0.9, 0.999), 1e-8, do_bias_correction=bc)

    run_against_reference(problem, f_opt, fp, update)
    assert f_opt.state_dict()["param_groups"][1]["do_bias_correction"] is False


# -- 2. contiguous_params ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "LAMB"])
def test_contiguous_params_is_accepted_and_changes_nothing(name):
    problem = Problem(fresh_seed(), steps=5)
    fa, fb = problem.fjax_params(), problem.fjax_params()
    kw = dict(lr=0.05, momentum=0.9) if name == "SGD" else dict(lr=0.05)
    opt_a = getattr(optim, name)(fa, contiguous_params=True, **kw)
    opt_b = getattr(optim, name)(fb, contiguous_params=False, **kw)
    assert opt_a.param_groups[0]["contiguous_params"] is True
    assert "contiguous_params" not in opt_b.param_groups[0]
    for x, y in problem.batches:
        for opt, params in ((opt_a, fa), (opt_b, fb)):
            opt.zero_grad()
            problem.fjax_loss(params, x, y).backward()
            opt.step()
    assert_params_close(fa, fb, f"seed={problem.seed}", rtol=0, atol=0)


# -- 3. SGD dampening --------------------------------------------------------------------------


def test_sgd_dampening_follows_torch_not_oneflow():
    """fjax keeps torch's rule (first buffer = grad); OneFlow's momentum_update starts the buffer
    at zero and dampens every step, so its first buffer is (1 - dampening) * grad."""
    problem = Problem(fresh_seed(), steps=10)
    fp, tp = problem.fjax_params(), problem.torch_params()
    kw = dict(lr=0.05, momentum=0.9, dampening=0.5, weight_decay=0.01)
    run_both(problem, optim.SGD(fp, **kw), torch.optim.SGD(tp, **kw), fp, tp)

    def oneflow_sgd(w, g, st, t):
        g = g + 0.01 * w
        st["buf"] = 0.9 * st.get("buf", 0.0) + 0.5 * g
        return w - 0.05 * st["buf"]

    fp = problem.fjax_params()
    with pytest.raises(AssertionError):  # the two rules differ from the first step on
        run_against_reference(problem, optim.SGD(fp, **kw), fp, oneflow_sgd)
    fp = problem.fjax_params()  # with dampening=0 both rules agree
    run_against_reference(problem, optim.SGD(fp, lr=0.05, momentum=0.9, weight_decay=0.01), fp, _oneflow_sgd_undamped)


def _oneflow_sgd_undamped(w, g, st, t):
    g = g + 0.01 * w
    st["buf"] = 0.9 * st.get("buf", 0.0) + g
    return w - 0.05 * st["buf"]


# -- 4. clip_grad_max_norm / clip_grad_norm_type ------------------------------------------------


def _clip_groups(params, norm_type):
    return [
        {"params": params[:2], "clip_grad_max_norm": 0.3, "clip_grad_norm_type": norm_type},
        {"params": params[2:], "lr": 0.02},
    ]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
@pytest.mark.parametrize("explicit", [False, True], ids=["step-alone", "clip_grad-then-step"])
def test_per_group_clipping_matches_torch_clip_grad_norm(norm_type, explicit):
    """OneFlow's eager idiom: ``clip_grad()`` clips the groups with clip_grad_max_norm in place,
    then ``step()``; a ``step()`` alone does not clip (OneFlow clips by itself only in nn.Graph)."""
    problem = Problem(fresh_seed(), steps=10)
    fp, tp = problem.fjax_params(), problem.torch_params()
    f_opt = optim.Adam(_clip_groups(fp, norm_type), lr=0.05)
    t_opt = torch.optim.Adam([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.02}], lr=0.05)
    for i, (x, y) in enumerate(problem.batches):
        for opt in (f_opt, t_opt):
            opt.zero_grad()
        problem.fjax_loss(fp, x, y).backward()
        problem.torch_loss(tp, x, y).backward()
        if explicit:
            torch.nn.utils.clip_grad_norm_(tp[:2], 0.3, norm_type)
            with pytest.warns(UserWarning, match="no 'clip_grad_max_norm'"):  # the second group
                f_opt.clip_grad()
            assert_params_close(  # gradients at parameters 4 steps apart from torch's: their scale
                [p.grad for p in fp], [p.grad for p in tp], f"seed={problem.seed} grads {i}", rtol=1e-4, atol=1e-5
            )
        f_opt.step()
        t_opt.step()
        assert_params_close(fp, tp, f"seed={problem.seed} step={i}", rtol=1e-4, atol=1e-5)


def test_clip_grad_without_max_norm_warns():
    w = nn.Parameter(fjax.tensor([3.0, 4.0]))
    opt = optim.SGD([w], lr=0.1)
    (w**2).sum().backward()
    with pytest.warns(UserWarning, match="clip_grad_max_norm"):
        opt.clip_grad()
    np.testing.assert_allclose(w.grad.numpy(), [6.0, 8.0])


# -- 5. LAMB and Adadelta ------------------------------------------------------------------------

LAMB_CASES = [
    dict(),
    dict(weight_decay=0.1),
    dict(weight_decay=0.1, adam_w_mode=False),
    dict(do_bias_correction=False),
    dict(weight_decay=0.05, do_bias_correction=False, betas=(0.8, 0.95), eps=1e-6),
]


@pytest.mark.parametrize("kw", LAMB_CASES, ids=["-".join(k) or "default" for k in LAMB_CASES])
def test_lamb_matches_oneflow(kw):
    problem = Problem(fresh_seed(), steps=10)
    fp = problem.fjax_params()
    f_opt = optim.LAMB(fp, lr=0.02, **kw)
    ref_kw = dict(betas=(0.9, 0.999), eps=1e-8) | kw

    def update(w, g, st, t):
        return oneflow_lamb(w, g, st, t, 0.02, **ref_kw)

    run_against_reference(problem, f_opt, fp, update)


def test_lamb_rejects_amsgrad_and_keeps_adam_state_names():
    with pytest.raises(RuntimeError, match="AMSGrad"):
        optim.LAMB([nn.Parameter(fjax.ones(2))], amsgrad=True)
    w = nn.Parameter(fjax.ones(2))
    opt = optim.LAMB([w])
    (w**2).sum().backward()
    opt.step()
    assert sorted(opt.state_dict()["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]


ADADELTA_CASES = [
    dict(),
    dict(lr=0.5, rho=0.8, eps=1e-4),
    dict(weight_decay=0.1, maximize=True),
]


@pytest.mark.parametrize("kw", ADADELTA_CASES, ids=["-".join(k) or "default" for k in ADADELTA_CASES])
def test_adadelta_matches_torch(kw):
    problem = Problem(fresh_seed(), steps=10)
    fp, tp = problem.fjax_params(), problem.torch_params()
    f_opt, t_opt = optim.Adadelta(fp, **kw), torch.optim.Adadelta(tp, **kw)
    run_both(problem, f_opt, t_opt, fp, tp)
    f_sd, t_sd = f_opt.state_dict(), t_opt.state_dict()
    assert f_sd["param_groups"] == t_sd["param_groups"]
    for idx, entry in t_sd["state"].items():
        assert sorted(f_sd["state"][idx]) == sorted(entry)
        np.testing.assert_allclose(
            f_sd["state"][idx]["acc_delta"].numpy(), entry["acc_delta"].numpy(), rtol=1e-4, atol=1e-7
        )


# -- inside nn.Graph ---------------------------------------------------------------------------


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
    ("LAMB", dict(lr=0.02, weight_decay=0.1)),
    ("LAMB", dict(lr=0.02, adam_w_mode=False, weight_decay=0.1, do_bias_correction=False)),
    ("Adadelta", dict(lr=1.0, weight_decay=0.05)),
    ("Adam", dict(lr=0.02, do_bias_correction=False, amsgrad=True)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
]


@pytest.mark.parametrize("clip", [False, True], ids=["", "clip"])
@pytest.mark.parametrize("name,kw", GRAPH_CASES, ids=[f"{n}-{'-'.join(k)}" for n, k in GRAPH_CASES])
def test_graph_step_matches_eager(name, kw, clip):
    """The same optimizer (and group clipping) in an nn.Graph training step and eagerly."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    batches = [
        (fjax.tensor(rng.standard_normal((8, 5)), dtype=fjax.float32), fjax.tensor(rng.standard_normal((8, 3))))
        for _ in range(6)
    ]
    batches = [(x, y.float()) for x, y in batches]

    def run(use_graph):
        fjax.manual_seed(seed)
        model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))
        params = list(model.parameters())
        groups = [{"params": params[:2]}, {"params": params[2:]}]
        if clip:
            groups[0].update(clip_grad_max_norm=0.1, clip_grad_norm_type=2.0)
        opt = getattr(optim, name)(groups, **kw)
        graph = _Train(model, opt) if use_graph else None
        for x, y in batches:
            if use_graph:
                graph(x, y)
                continue
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            if clip:  # eager clips when asked (OneFlow's idiom); the graph step clips by itself
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the second group has no clip_grad_max_norm
                    opt.clip_grad()
            opt.step()
        return [p.detach().numpy() for p in params]

    eager, graphed = run(False), run(True)
    for j, (a, b) in enumerate(zip(graphed, eager)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"seed={seed} param {j}")
