"""fjax.func.stack_module_state and torch's model-ensembling idiom (vmap over stacked states
with functional_call on a meta-device copy of the model), against torch.func."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.func as TF

import fjax
import fjax.func as FF


def _net(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(6, 8)
            self.bn = nn.BatchNorm1d(8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(lib.relu(self.bn(self.fc1(x))))

    return Net


def _ensembles(n=4):
    torch.manual_seed(0)
    torch_net, fjax_net = _net(torch), _net(fjax)
    theirs = [torch_net() for _ in range(n)]
    ours = []
    for m in theirs:
        m.bn.running_mean.normal_()
        m.bn.running_var.uniform_(0.5, 2.0)
        m.eval()
        f = fjax_net()
        f.load_state_dict({k: v.numpy() for k, v in m.state_dict().items()})
        ours.append(f.eval())
    return ours, theirs


def test_stack_module_state_matches_torch():
    ours, theirs = _ensembles()
    ours[0].fc2.bias.requires_grad_(False)  # per name, all or none: mixed raises
    with pytest.raises(RuntimeError, match="Expected fc2.bias from each model to have the same .requires_grad"):
        FF.stack_module_state(ours)
    for m in (*ours, *theirs):
        m.fc2.bias.requires_grad_(False)
    (op, ob), (tp, tb) = FF.stack_module_state(ours), TF.stack_module_state(theirs)
    for got, want in ((op, tp), (ob, tb)):
        assert list(got) == list(want)
        for k in want:
            assert tuple(got[k].shape) == tuple(want[k].shape), k
            assert (got[k].requires_grad, got[k].is_leaf) == (want[k].requires_grad, want[k].is_leaf), k
            np.testing.assert_array_equal(got[k].detach().numpy(), want[k].detach().numpy(), err_msg=k)
    assert op["fc1.weight"].grad_fn is None and not op["fc2.bias"].requires_grad
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        FF.stack_module_state([])
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        FF.stack_module_state([ours[0], copy.deepcopy(ours[1]).train()])
    with pytest.raises(RuntimeError, match="same class"):
        FF.stack_module_state([fjax.nn.Linear(2, 2), fjax.nn.Bilinear(2, 2, 2)])


def test_model_ensembling_idiom_matches_torch():
    ours, theirs = _ensembles()
    (op, ob), (tp, tb) = FF.stack_module_state(ours), TF.stack_module_state(theirs)
    base, tbase = copy.deepcopy(ours[0]).to("meta"), copy.deepcopy(theirs[0]).to("meta")
    assert base.fc1.weight.is_meta and not ours[0].fc1.weight.is_meta

    def fmodel(params, buffers, x):
        return FF.functional_call(base, (params, buffers), (x,))

    def tmodel(params, buffers, x):
        return TF.functional_call(tbase, (params, buffers), (x,))

    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    out = FF.vmap(fmodel, in_dims=(0, 0, None))(op, ob, fjax.tensor(x))
    want = TF.vmap(tmodel, in_dims=(0, 0, None))(tp, tb, torch.tensor(x))
    assert tuple(out.shape) == (4, 5, 3)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    # gradients reach the stacked parameters, as torch's
    out.square().sum().backward()
    want.square().sum().backward()
    for k in tp:
        np.testing.assert_allclose(op[k].grad.numpy(), tp[k].grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=k)
    # one minibatch per model
    xs = rng.standard_normal((4, 5, 6)).astype(np.float32)
    out = FF.vmap(fmodel)(op, ob, fjax.tensor(xs))
    want = TF.vmap(tmodel)(tp, tb, torch.tensor(xs))
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert base.fc1.weight.is_meta  # functional_call put the meta tensors back


def test_top_level_vmap_is_func_vmap():
    assert fjax.vmap is FF.vmap  # src/fjax/__init__.py: from .func import vmap
    x, w = fjax.ones(5, 3), fjax.arange(3.0)
    np.testing.assert_array_equal(fjax.vmap(fjax.dot, in_dims=(0, None))(x, w).numpy(), np.full(5, 3.0))
