"""Optimizer API against torch: state_dict layout, loading across frameworks, groups, errors, tracing."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import torch

import fjax
import fjax.optim as optim
from fjax._tracing import trace_state
from fjax.nn.parameter import Parameter
from fjax.tensor import Tensor

from .helper import Problem, assert_params_close, fresh_seed, run_both

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("AdamW", dict(lr=0.05)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.1)),
]


def _np(value):
    if isinstance(value, Tensor):
        return np.asarray(value._data)
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return value


def _train(problem, opt, params, loss_fn, batches):
    for x, y in batches:
        opt.zero_grad()
        loss_fn(params, x, y).backward()
        opt.step()


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{'-'.join(k)}" for n, k in CONFIGS])
def test_state_dict_has_torchs_layout_and_values(name, kwargs):
    problem = Problem(fresh_seed(), steps=3)
    fp, tp = problem.fjax_params(), problem.torch_params()
    f_opt, t_opt = getattr(optim, name)(fp, **kwargs), getattr(torch.optim, name)(tp, **kwargs)
    _train(problem, f_opt, fp, problem.fjax_loss, problem.batches)
    _train(problem, t_opt, tp, problem.torch_loss, problem.batches)
    f_sd, t_sd = f_opt.state_dict(), t_opt.state_dict()
    assert f_sd["param_groups"] == t_sd["param_groups"]
    assert list(f_sd["state"]) == list(t_sd["state"])
    for idx, t_entry in t_sd["state"].items():
        f_entry = f_sd["state"][idx]
        assert sorted(f_entry) == sorted(t_entry), f"seed={problem.seed} param {idx}"
        for key, value in t_entry.items():
            want = _np(value)
            scale = float(np.max(np.abs(want))) if np.size(want) else 1.0  # float32 error grows with magnitude
            np.testing.assert_allclose(
                _np(f_entry[key]),
                want,
                rtol=1e-4,  # (centered RMSprop's buffers divide by sqrt(E[g^2] - E[g]^2): seen 4e-5 on 14)
                atol=1e-5 * max(1.0, scale),
                err_msg=f"seed={problem.seed} {idx}.{key}",
            )
            assert np.shape(_np(f_entry[key])) == np.shape(_np(value))


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{'-'.join(k)}" for n, k in CONFIGS])
def test_state_dict_loads_across_frameworks(name, kwargs):
    """torch's state_dict continues in fjax, and fjax's continues in torch, on the same trajectory."""
    problem = Problem(fresh_seed(), steps=12)
    first, rest = problem.batches[:4], problem.batches[4:]
    tp = problem.torch_params()
    t_opt = getattr(torch.optim, name)(tp, **kwargs)
    _train(problem, t_opt, tp, problem.torch_loss, first)

    fp = [fjax.tensor(p.detach().numpy(), requires_grad=True) for p in tp]
    f_opt = getattr(optim, name)(fp, **kwargs)
    f_opt.load_state_dict(t_opt.state_dict())  # torch tensors are accepted as values
    tp2 = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in tp]
    t_opt2 = getattr(torch.optim, name)(tp2, **kwargs)
    t_opt2.load_state_dict(
        {
            "state": {
                i: {k: torch.tensor(_np(v)) for k, v in e.items()} for i, e in f_opt.state_dict()["state"].items()
            },
            "param_groups": f_opt.state_dict()["param_groups"],
        }
    )
    problem.batches = rest
    run_both(problem, f_opt, t_opt, fp, tp)
    _train(problem, t_opt2, tp2, problem.torch_loss, rest)
    assert_params_close(tp2, tp, f"seed={problem.seed}: fjax state_dict loaded into torch")


def test_load_state_dict_restores_hyperparameters():
    p = [fjax.zeros(3, requires_grad=True)]
    src = optim.Adam(p, lr=0.5, betas=(0.8, 0.9))
    dst = optim.Adam([fjax.zeros(3, requires_grad=True)], lr=0.1)
    dst.load_state_dict(src.state_dict())
    assert dst.param_groups[0]["lr"] == 0.5 and dst.param_groups[0]["betas"] == (0.8, 0.9)


def test_load_state_dict_errors():
    p = [fjax.zeros(3, requires_grad=True), fjax.zeros(2, requires_grad=True)]
    opt = optim.Adam(p, lr=0.1)
    p[0].grad, p[1].grad = fjax.ones(3), fjax.ones(2)
    opt.step()
    good = opt.state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": good["param_groups"] * 2})
    bad = {"state": {}, "param_groups": [dict(good["param_groups"][0], params=[0])]}
    with pytest.raises(
        ValueError, match="doesn't match the size of optimizer's group: group 0 has 1 params, expected 2"
    ):
        opt.load_state_dict(bad)
    wrong_shape = {"state": {0: dict(good["state"][0], exp_avg=fjax.zeros(4))}, "param_groups": good["param_groups"]}
    with pytest.raises(fjax.OpError, match=r"state of param 0, key 'exp_avg': expected shape \(3,\), got \(4,\)"):
        opt.load_state_dict(wrong_shape)
    extra = {"state": {1: dict(good["state"][1], momentum_buffer=fjax.zeros(2))}, "param_groups": good["param_groups"]}
    with pytest.raises(fjax.OpError, match=r"state of param 1: unexpected keys \['momentum_buffer'\]"):
        opt.load_state_dict(extra)
    with pytest.raises(fjax.OpError, match=r"state for param indices \[7\]"):
        opt.load_state_dict({"state": {7: good["state"][0]}, "param_groups": good["param_groups"]})
    with pytest.raises(fjax.OpError, match=r"expected a dict with keys \['param_groups', 'state'\]"):
        opt.load_state_dict({"state": {}})


def test_bad_params_are_rejected_with_clear_errors():
    w = fjax.zeros(3, requires_grad=True)
    with pytest.raises(
        fjax.OpError, match=r"optim.SGD: optimizer can only optimize Tensors .* param 1 is a numpy.ndarray"
    ):
        optim.SGD([w, np.zeros(3)], lr=0.1)
    with pytest.raises(fjax.OpError, match=r"param 0 .* is a Tensor that does not require grad"):
        optim.Adam([fjax.zeros(3)])
    with pytest.raises(fjax.OpError, match="can't optimize a non-leaf Tensor"):
        optim.Adam([w * 2])
    with pytest.raises(fjax.OpError, match="param 0 has dtype fjax.int64"):
        optim.Adam([Parameter(fjax.zeros(3, dtype=fjax.int64), requires_grad=False)])
    with pytest.raises(fjax.OpError, match="ordered collections"):
        optim.SGD({w}, lr=0.1)
    with pytest.raises(fjax.OpError, match="should be an iterable of Tensors or dicts"):
        optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    # SGD(nesterov=True) without momentum or with dampening is accepted, as OneFlow does
    # (tests/oneflow_compat/test_oneflow_surface.py)
    with pytest.raises(ValueError, match="invalid beta parameter at index 1"):
        optim.Adam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="invalid lr value: -1"):
        optim.RMSprop([w], lr=-1)
    with pytest.raises(NotImplementedError, match="param 0 is complex .* complex parameters are not supported"):
        optim.Adam([fjax.tensor(np.array([1j]), requires_grad=True)])
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        optim.Adam([w], differentiable=True)
    frozen = Parameter(fjax.zeros(3), requires_grad=False)  # frozen Parameters are allowed, as in torch
    assert optim.SGD([frozen], lr=0.1).param_groups[0]["params"] == [frozen]


def test_named_params_and_add_param_group():
    a, b = fjax.zeros(2, requires_grad=True), fjax.zeros(3, requires_grad=True)
    opt = optim.SGD([("a", a)], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": [("b", b)], "lr": 0.5})
    assert [g["param_names"] for g in opt.param_groups] == [["a"], ["b"]]
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["lr"] == 0.5
    with pytest.raises(ValueError, match="with/without names"):
        opt.add_param_group({"params": [fjax.zeros(1, requires_grad=True)]})


def test_repr_and_state_view_match_torch():
    problem = Problem(fresh_seed(), steps=2)
    fp, tp = problem.fjax_params(), problem.torch_params()
    f_opt, t_opt = optim.Adam(fp, lr=0.01), torch.optim.Adam(tp, lr=0.01)
    assert repr(f_opt) == repr(t_opt)
    _train(problem, f_opt, fp, problem.fjax_loss, problem.batches)
    _train(problem, t_opt, tp, problem.torch_loss, problem.batches)
    np.testing.assert_allclose(
        _np(f_opt.state[fp[0]]["exp_avg"]), _np(t_opt.state[tp[0]]["exp_avg"]), rtol=1e-4, atol=1e-7
    )
    with pytest.raises(TypeError):
        f_opt.state[fp[0]] = {}


def test_zero_grad():
    w = fjax.ones(3, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    grad = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is grad and np.all(w.grad.numpy() == 0)
    opt.zero_grad()
    assert w.grad is None


def test_changing_hyperparameters_does_not_recompile():
    w = fjax.ones((4, 3), requires_grad=True)
    opt = optim.Adam([w], lr=0.1, betas=(0.9, 0.99), weight_decay=0.1)
    w.grad = fjax.ones((4, 3))
    opt.step()
    compiled = fjax.profiler.compile_count()
    for i in range(5):
        opt.param_groups[0].update(lr=0.1 / (i + 2), betas=(0.8 + 0.01 * i, 0.99), eps=1e-8 * (i + 1))
        opt.param_groups[0]["weight_decay"] = 0.1 + i
        opt.step()
    assert fjax.profiler.compile_count() == compiled


def test_step_inside_a_trace_matches_eager():
    """nn.Graph's path: step() with tracer params/grads/state, depth > 0, under jax.jit."""
    rng = np.random.default_rng(fresh_seed())
    init, grads = rng.standard_normal((2, 4, 3)).astype(np.float32), rng.standard_normal((3, 2, 4, 3))
    eager = [fjax.tensor(a, requires_grad=True) for a in init]
    traced = [fjax.tensor(a, requires_grad=True) for a in init]
    e_opt, t_opt = optim.AdamW(eager, lr=0.1, amsgrad=True), optim.AdamW(traced, lr=0.1, amsgrad=True)
    t_opt._init_state()

    def graph_step(params, gs, states):
        for p, a, g in zip(traced, params, gs):
            p._data, p.grad = a, Tensor._wrap(g)
        t_opt._state = dict(zip(traced, states))
        trace_state.depth += 1
        try:
            t_opt.step()
        finally:
            trace_state.depth -= 1
        return [p._data for p in traced], [t_opt._state[p] for p in traced]

    step = jax.jit(graph_step)
    params, states = [p._data for p in traced], [t_opt._state[p] for p in traced]
    for g in grads:
        for p, gi in zip(eager, g):
            p.grad = fjax.tensor(gi.astype(np.float32))
        e_opt.step()
        params, states = step(params, [jax.numpy.asarray(gi, np.float32) for gi in g], states)
        for a, p in zip(params, eager):
            np.testing.assert_allclose(np.asarray(a), p.detach().numpy(), rtol=1e-6, atol=1e-7)
