"""Optimizer hooks (step pre/post, state_dict and load_state_dict pre/post, the global step hooks)
against torch's: which hooks run, in what order, with which arguments, and what a returned value
replaces."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax


def _run(mod, kind):
    """The events a fixed script of hooks records on ``mod`` (torch or fjax), and the result."""
    import importlib

    optimizer_module = importlib.import_module(f"{mod.__name__}.optim.optimizer")
    events = []
    w = mod.nn.Parameter(mod.tensor([1.0, 2.0]))
    opt = getattr(mod.optim, kind)([w], lr=0.1)
    handles = [
        optimizer_module.register_optimizer_step_pre_hook(
            lambda o, a, k: events.append(("global pre", len(a), sorted(k)))
        ),
        optimizer_module.register_optimizer_step_post_hook(lambda o, a, k: events.append(("global post",))),
        opt.register_step_pre_hook(lambda o, a, k: events.append(("pre", o is opt))),
        opt.register_step_post_hook(lambda o, a, k: events.append(("post", [round(v, 5) for v in w.tolist()]))),
        opt.register_state_dict_pre_hook(lambda o: events.append(("sd pre",))),
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1}),
        opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"}),
        opt.register_load_state_dict_post_hook(lambda o: events.append(("loaded", o.param_groups[0]["lr"]))),
    ]
    try:
        w.grad = mod.tensor([0.5, -1.0])
        opt.step()
        removed = opt.register_step_pre_hook(lambda o, a, k: events.append(("removed",)))
        removed.remove()
        w.grad = mod.tensor([0.5, -1.0])
        opt.step()
        sd = opt.state_dict()
        events.append(("extra" in sd,))
        opt.load_state_dict(sd)
    finally:
        for h in handles:
            h.remove()
    w.grad = mod.tensor([1.0, 1.0])
    opt.step()  # no hook runs any more
    return events, [round(v, 5) for v in w.tolist()]


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_hooks_run_as_torch(kind):
    assert _run(fjax, kind) == _run(torch, kind)


def test_a_pre_hook_may_replace_the_arguments_and_a_bad_return_raises():
    results = {}
    for mod in (torch, fjax):
        w = mod.nn.Parameter(mod.tensor([1.0]))
        opt = mod.optim.LBFGS([w], lr=0.5)

        def closure(w=w, opt=opt):
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss

        h = opt.register_step_pre_hook(lambda o, a, k, c=closure: ((o, c), {}))  # args[0] is the optimizer
        loss = opt.step(None)  # the hook supplies the closure
        h.remove()
        results[mod.__name__] = (float(loss), round(w.item(), 5))
        opt.register_step_pre_hook(lambda o, a, k: 3)
        with pytest.raises(RuntimeError, match="must return None or a tuple"):
            opt.step(closure)
    assert results["fjax"] == results["torch"]
    np.testing.assert_allclose(results["fjax"][0], 1.0)
