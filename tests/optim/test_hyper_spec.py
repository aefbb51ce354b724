"""Optimizers declare their hyper-parameters once (``_hypers``): the signature users see, the
constructor's checks, ``defaults``/``param_groups`` and the step's static/traced split all come
from it. Each is compared with torch's optimizer of the same name."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import fjax
from fjax import nn, optim

from .helper import fresh_seed

_ONEFLOW_ONLY = {"do_bias_correction", "contiguous_params"}
_NAMES = [
    n
    for n in optim.__all__
    if isinstance(getattr(optim, n), type) and getattr(optim, n)._spec is not None and hasattr(torch.optim, n)
]


def _params(seed):
    rng = np.random.default_rng(seed)
    return [nn.Parameter(fjax.tensor(rng.standard_normal((3, 2)).astype(np.float32)))]


def test_every_declared_optimizer_is_checked():
    assert set(_NAMES) >= {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam", "Rprop", "ASGD"}, _NAMES


@pytest.mark.parametrize("name", _NAMES)
def test_signature_is_torchs(name):
    ours = list(inspect.signature(getattr(optim, name)).parameters.values())
    theirs = list(inspect.signature(getattr(torch.optim, name)).parameters.values())
    extra = [p.name for p in ours if p.name not in {q.name for q in theirs}]
    assert set(extra) <= _ONEFLOW_ONLY, f"{name}: parameters torch does not have: {extra}"
    kept = [(p.name, p.kind, p.default) for p in ours if p.name not in extra]
    assert kept == [(p.name, p.kind, p.default) for p in theirs], f"{name}: {kept}"
    assert all(p.kind is p.KEYWORD_ONLY for p in ours if p.name in extra), name


@pytest.mark.parametrize("name", _NAMES)
def test_param_groups_are_torchs(name):
    seed = fresh_seed()
    ps = _params(seed)
    kwargs = {"eps": (1e-3, 1e-3)} if name == "Adafactor" else {}
    ours = getattr(optim, name)(ps, **kwargs).param_groups[0]
    theirs = getattr(torch.optim, name)([torch.zeros(3, 2, requires_grad=True)], **kwargs).param_groups[0]
    assert set(ours) == set(theirs), (name, seed, sorted(set(ours) ^ set(theirs)))
    for key in set(ours) - {"params"}:
        assert ours[key] == theirs[key], (name, key, ours[key], theirs[key])


def test_bad_arguments_name_the_optimizer():
    ps = _params(fresh_seed())
    with pytest.raises(TypeError, match=r"fjax\.optim\.Adam: .*unexpected keyword argument 'beta'"):
        optim.Adam(ps, beta=(0.9, 0.99))
    with pytest.raises(TypeError, match=r"fjax\.optim\.SGD: too many positional arguments"):
        optim.SGD(ps, 0.1, 0.9, 0, 0, False, False)
    with pytest.raises(ValueError, match=r"fjax\.optim\.RMSprop: invalid alpha value: -0.5"):
        optim.RMSprop(ps, alpha=-0.5)
    with pytest.raises(ValueError, match=r"fjax\.optim\.NAdam: invalid beta parameter at index 1: 1.0"):
        optim.NAdam(ps, betas=(0.9, 1.0))
    with pytest.raises(NotImplementedError, match=r"fjax\.optim\.Adamax: differentiable=True"):
        optim.Adamax(ps, differentiable=True)
    with pytest.raises(RuntimeError, match=r"fjax\.optim\.LAMB: LAMB does not support the AMSGrad"):
        optim.LAMB(ps, amsgrad=True)


def test_keyword_only_stays_keyword_only():
    ps = _params(fresh_seed())
    with pytest.raises(TypeError, match="too many positional arguments"):
        optim.Adam(ps, 1e-3, (0.9, 0.999), 1e-8, 0, False, None)  # foreach is keyword-only in torch
    opt = optim.Adam(ps, 1e-2, (0.8, 0.9), 1e-6, 0.5, True, maximize=True)
    group = opt.param_groups[0]
    assert (group["lr"], group["betas"], group["eps"], group["weight_decay"], group["amsgrad"], group["maximize"]) == (
        1e-2,
        (0.8, 0.9),
        1e-6,
        0.5,
        True,
        True,
    )


def test_oneflow_options_are_group_keys_only_when_set():
    ps = _params(fresh_seed())
    assert "do_bias_correction" not in optim.Adam(ps).param_groups[0]
    assert optim.Adam(_params(0), do_bias_correction=False).param_groups[0]["do_bias_correction"] is False
    assert optim.SGD(_params(0), contiguous_params=True).param_groups[0]["contiguous_params"] is True


def test_static_and_traced_split():
    ps = _params(fresh_seed())
    opt = optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.0, nesterov=True)
    group = opt.param_groups[0]
    static = opt._static(group)
    assert (static.momentum, static.weight_decay, static.nesterov, static.maximize) == (True, False, True, False)
    assert opt._hyper(group) == {"lr": 0.1, "momentum": 0.9, "dampening": 0.0, "weight_decay": 0.0}
    group["lr"], group["weight_decay"] = 0.5, 0.01  # a number: traced; a number that switches a part on: static
    assert opt._hyper(group)["lr"] == 0.5 and opt._static(group).weight_decay is True
    group["weight_decay"] = 0.0  # remembered flags follow the group's values
    assert opt._static(group).weight_decay is False
    wd = fjax.tensor(0.0)
    group["weight_decay"] = wd  # a Tensor's value may change in place: its flag is not remembered
    assert opt._static(group).weight_decay is False
    wd.fill_(0.5)
    assert opt._static(group).weight_decay is True
    adamw = optim.AdamW(_params(0))
    assert adamw.param_groups[0]["decoupled_weight_decay"] is True and adamw._static(adamw.param_groups[0]).weight_decay


_STEPS = [("AdamW", {"weight_decay": 0.3, "amsgrad": True}), ("Rprop", {}), ("ASGD", {})]


@pytest.mark.parametrize("name,kwargs", _STEPS)
def test_derived_step_matches_torch(name, kwargs):
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    init = rng.standard_normal((4, 3)).astype(np.float32)
    w, tw = nn.Parameter(fjax.tensor(init)), torch.tensor(init, requires_grad=True)
    opt, topt = getattr(optim, name)([w], lr=0.05, **kwargs), getattr(torch.optim, name)([tw], lr=0.05, **kwargs)
    for _ in range(4):
        target = rng.standard_normal((4, 3)).astype(np.float32)
        opt.zero_grad()
        topt.zero_grad()
        ((w - fjax.tensor(target)) ** 2).sum().backward()
        ((tw - torch.tensor(target)) ** 2).sum().backward()
        opt.step()
        topt.step()
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=f"seed {seed}")
