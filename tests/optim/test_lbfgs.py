"""LBFGS against torch: parameters after each step() (fixed step and strong Wolfe), state_dict, errors.

The 20-step comparisons run in float64: near its minimum a float32 loss cannot tell points
~1e-4 apart, so two correct float32 runs legitimately wander apart there.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax
import fjax.optim as optim

from .helper import fresh_seed


class _Problem:
    """A ridge regression (convex) or ``sum(cos(w) + 0.1 w^4)`` (negative curvature: pairs get rejected)."""

    def __init__(self, seed: int, kind: str, dtype=np.float64):
        rng = np.random.default_rng(seed)
        self.seed, self.kind = seed, kind
        self.x = rng.standard_normal((30, 6)).astype(dtype)
        self.y = rng.standard_normal(30).astype(dtype)
        self.init = [rng.uniform(0.1, 0.5, 6).astype(dtype), rng.standard_normal(1).astype(dtype)]

    def loss(self, lib, w, b):
        if self.kind == "cos":
            return (lib.cos(w) + 0.1 * w**4).sum() + (b**2).sum()
        x, y = lib.tensor(self.x), lib.tensor(self.y)
        return ((x @ w + b - y) ** 2).mean() + 0.1 * (w**2).mean()

    def setup(self, lib, opt_cls, **kwargs):
        params = [lib.tensor(a, requires_grad=True) for a in self.init]
        opt = opt_cls(params, **kwargs)

        def closure():
            opt.zero_grad()
            loss = self.loss(lib, *params)
            loss.backward()
            return loss

        return params, opt, closure


def _assert_close(fp, tp, what, rtol=1e-7, atol=1e-9):
    for j, (a, b) in enumerate(zip(fp, tp)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol, err_msg=f"{what} p{j}")


CASES = [
    ("ridge", dict(max_iter=3)),
    ("ridge", dict(max_iter=3, history_size=2, lr=0.5)),
    ("ridge", dict(max_iter=3, line_search_fn="strong_wolfe")),
    ("cos", dict(max_iter=4, lr=0.5)),
    ("cos", dict(max_iter=4, history_size=2, line_search_fn="strong_wolfe")),
]


@pytest.mark.parametrize("kind,kwargs", CASES, ids=[f"{k}-{'-'.join(map(str, v.values()))}" for k, v in CASES])
def test_matches_torch(kind, kwargs):
    problem = _Problem(fresh_seed(), kind)
    fp, f_opt, f_closure = problem.setup(fjax, optim.LBFGS, **kwargs)
    tp, t_opt, t_closure = problem.setup(torch, torch.optim.LBFGS, **kwargs)
    for i in range(20):
        f_loss, t_loss = f_opt.step(f_closure), t_opt.step(t_closure)
        what = f"seed={problem.seed} step {i}"
        # float64; the sums' order differs (XLA's threaded reductions vs torch): ~1e-10 apart
        np.testing.assert_allclose(float(f_loss), t_loss.item(), rtol=1e-8, err_msg=what)
        _assert_close(fp, tp, what)
    assert f_opt.state[fp[0]]["n_iter"] == t_opt.state[tp[0]]["n_iter"]


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_float32_early_steps(line_search_fn):
    """float32 against the float64 answer, as close as torch's float32 run is (within 4x).

    The two float32 runs sum in different orders, and LBFGS divides by curvature estimates,
    so they can sit ~2e-6 apart while each is within a few 1e-6 of float64.
    """
    seed = fresh_seed()
    runs = {}
    for name, lib, dtype in [("fjax", fjax, np.float32), ("torch", torch, np.float32), ("f64", torch, np.float64)]:
        opt_cls = optim.LBFGS if lib is fjax else torch.optim.LBFGS
        runs[name] = _Problem(seed, "ridge", dtype).setup(lib, opt_cls, max_iter=2, line_search_fn=line_search_fn)
    for i in range(2):
        for _, opt, closure in runs.values():
            opt.step(closure)
        exact = [p.detach().numpy() for p in runs["f64"][0]]
        f_err, t_err = (
            max(float(np.abs(p.detach().numpy() - e).max()) for p, e in zip(runs[name][0], exact))
            for name in ("fjax", "torch")
        )
        assert f_err <= 4 * max(t_err, 1e-6), f"seed={seed} step {i}: fjax's error {f_err:.2e}, torch's {t_err:.2e}"
    fp, f_opt = runs["fjax"][:2]
    assert fp[0].dtype == fjax.float32 and f_opt.state_dict()["state"][0]["d"].dtype == fjax.float32


def _np(v):
    if isinstance(v, list):
        return [_np(e) for e in v]
    if isinstance(v, torch.Tensor):
        return v.detach().numpy()
    if isinstance(v, fjax.Tensor):
        return v.numpy()
    return v


def test_state_dict_matches_torch_and_resumes():
    problem = _Problem(fresh_seed(), "ridge")
    kwargs = dict(max_iter=4, history_size=3)
    fp, f_opt, f_closure = problem.setup(fjax, optim.LBFGS, **kwargs)
    tp, t_opt, t_closure = problem.setup(torch, torch.optim.LBFGS, **kwargs)
    for _ in range(2):
        f_opt.step(f_closure)
        t_opt.step(t_closure)
    f_state, t_state = f_opt.state_dict()["state"][0], t_opt.state_dict()["state"][0]
    assert sorted(f_state) == sorted(k for k in t_state if k != "al")  # 'al' is torch's scratch space
    for key in f_state:
        np.testing.assert_allclose(
            np.asarray(_np(f_state[key]), np.float64),
            np.asarray(_np(t_state[key]), np.float64),
            rtol=1e-7,
            atol=1e-10,
            err_msg=f"seed={problem.seed} state[{key!r}]",
        )
    assert f_opt.state_dict()["param_groups"] == t_opt.state_dict()["param_groups"]

    # torch's state continues in a fresh fjax optimizer exactly as in torch
    fp2, f_opt2, f_closure2 = problem.setup(fjax, optim.LBFGS, **kwargs)
    for p, t in zip(fp2, tp):
        p._data = fjax.tensor(t.detach().numpy())._data
    f_opt2.load_state_dict(t_opt.state_dict())
    for i in range(3):
        f_opt2.step(f_closure2)
        t_opt.step(t_closure)
        _assert_close(fp2, tp, f"seed={problem.seed} resumed step {i}")


def test_errors():
    w = fjax.zeros(3, requires_grad=True)
    with pytest.raises(fjax.OpError, match="LBFGS.step: a closure that re-evaluates the model"):
        optim.LBFGS([w]).step(None)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": [w]}, {"params": [fjax.zeros(2, requires_grad=True)]}])
    with pytest.raises(ValueError, match="only 'strong_wolfe' is supported"):
        optim.LBFGS([w], line_search_fn="armijo")
