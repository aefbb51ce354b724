"""torch.nn.utils (parametrize, parametrizations, prune, weight/spectral norm, fusion, ...) and
torch.optim.swa_utils against torch: same weights, same inputs, same numbers."""

from __future__ import annotations

import copy
import doctest
import importlib
import warnings

import numpy as np
import pytest
import torch
import torch.nn.utils.prune
import torch.optim.swa_utils

import fjax
import fjax.nn.functional as F
from fjax import nn, optim
from fjax.nn.utils import parametrizations as PZ
from fjax.nn.utils import parametrize as P
from fjax.nn.utils import prune

from .helper import SEED, close, copy_weights, rng

TP = torch.nn.utils.parametrize
TPZ = torch.nn.utils.parametrizations
TPR = torch.nn.utils.prune
TOL = (1e-5, 1e-5)


def _pair(fj_cls, th_cls, *args, **kwargs):
    fj, th = fj_cls(*args, **kwargs), th_cls(*args, **kwargs)
    copy_weights(fj, th)
    return fj, th


def _x(*shape, salt=0):
    v = rng(salt).standard_normal(shape).astype(np.float32)
    return fjax.tensor(v), torch.tensor(v)


def _check_call(fj, th, xf, xt, what):
    """Forward, then gradients of every parameter (by name) after a sum-of-squares loss."""
    yf, yt = fj(xf), th(xt)
    close(yf, yt, f"{what}: forward", *TOL)
    (yf**2).sum().backward()
    (yt**2).sum().backward()
    fp, tp = dict(fj.named_parameters()), dict(th.named_parameters())
    assert list(fp) == list(tp), f"{what}: parameters {list(fp)} != torch {list(tp)}"
    for name in tp:
        close(fp[name].grad, tp[name].grad, f"{what}: grad of {name}", 1e-4, 1e-5)


def _sgd_step(fj, th, xf, xt, what):
    optim.SGD(fj.parameters(), lr=0.1, momentum=0.9).step()
    torch.optim.SGD(th.parameters(), lr=0.1, momentum=0.9).step()
    # (atol at the outputs' scale, ~1: an element near 0 after the step carries the rounding of
    # the whole row; a seed gave 1.4e-5 on 0.0286 with outputs up to 2.6)
    close(fj(xf), th(xt), f"{what}: forward after an SGD step", 1e-4, 1e-4)


def _state_keys(fj, th, what):
    assert list(fj.state_dict()) == list(th.state_dict()), f"{what}: {list(fj.state_dict())} != torch"


# -- parametrize ---------------------------------------------------------------------------
class _SymF(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, X):
        return X.triu()


class _SymT(torch.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, X):
        return X.triu()


class _ScaleF(nn.Module):
    def forward(self, X):
        return 3 * X

    def right_inverse(self, Y):
        return Y / 3


class _ScaleT(torch.nn.Module):
    def forward(self, X):
        return 3 * X

    def right_inverse(self, Y):
        return Y / 3


class _RankOneF(nn.Module):
    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        return Z[:, 0].clone(), Z[0, :].clone()


class _RankOneT(torch.nn.Module):
    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        return Z[:, 0].clone(), Z[0, :].clone()


def test_register_parametrization_chained_forward_grads_step_and_removal():
    fj, th = _pair(nn.Linear, torch.nn.Linear, 4, 4)
    P.register_parametrization(fj, "weight", _ScaleF())
    TP.register_parametrization(th, "weight", _ScaleT())
    P.register_parametrization(fj, "weight", _SymF())
    TP.register_parametrization(th, "weight", _SymT())
    assert type(fj).__name__ == "ParametrizedLinear" and isinstance(fj, nn.Linear)
    assert P.type_before_parametrizations(fj) is nn.Linear and P.is_parametrized(fj, "weight")
    assert not P.is_parametrized(fj, "bias")
    _state_keys(fj, th, "chained")
    close(fj.parametrizations.weight.original, th.parametrizations.weight.original, "original (right_inverse)", *TOL)
    xf, xt = _x(5, 4)
    _check_call(fj, th, xf, xt, "chained")
    _sgd_step(fj, th, xf, xt, "chained")
    fj.weight = fjax.tensor(th.weight.detach().numpy() * 0 + 1.5)  # the right_inverse chain, torch's
    with torch.no_grad():
        th.weight = torch.full((4, 4), 1.5)
    close(fj.parametrizations.weight.original, th.parametrizations.weight.original, "after assignment", *TOL)
    clone = copy.deepcopy(fj)
    close(clone(xf), fj(xf), "deepcopy", *TOL)
    assert clone.parametrizations.weight.original is not fj.parametrizations.weight.original
    for leave in (True, False):
        a, b = _pair(nn.Linear, torch.nn.Linear, 4, 4)
        P.register_parametrization(a, "weight", _ScaleF())
        TP.register_parametrization(b, "weight", _ScaleT())
        original = a.parametrizations.weight.original
        P.remove_parametrizations(a, "weight", leave_parametrized=leave)
        TP.remove_parametrizations(b, "weight", leave_parametrized=leave)
        assert type(a) is nn.Linear and list(a.state_dict()) == ["bias", "weight"] and a.weight is original
        close(a.weight, b.weight, f"removed (leave_parametrized={leave})", *TOL)


def test_parametrization_of_several_tensors_and_of_a_buffer():
    fj, th = _pair(nn.Linear, torch.nn.Linear, 3, 3)
    P.register_parametrization(fj, "weight", _RankOneF())
    TP.register_parametrization(th, "weight", _RankOneT())
    _state_keys(fj, th, "rank one")
    xf, xt = _x(2, 3)
    _check_call(fj, th, xf, xt, "rank one")
    with pytest.raises(ValueError, match="sequence of tensors"):
        P.remove_parametrizations(fj, "weight", leave_parametrized=False)
    bf, bt = _pair(nn.BatchNorm1d, torch.nn.BatchNorm1d, 3)
    P.register_parametrization(bf, "running_var", _ScaleF())
    TP.register_parametrization(bt, "running_var", _ScaleT())
    _state_keys(bf, bt, "buffer")
    close(bf.eval()(xf), bt.eval()(xt), "parametrized buffer", *TOL)
    with pytest.raises(ValueError, match="does not have a parameter"):
        P.register_parametrization(nn.Linear(2, 2), "nope", _SymF())


def test_cached_and_transfer():
    fj = P.register_parametrization(nn.Linear(3, 3), "weight", _SymF())
    assert fj.weight is not fj.weight
    with P.cached():
        w = fj.weight
        assert fj.weight is w
    assert fj.weight is not w
    fj2 = P.transfer_parametrizations_and_params(fj, nn.Linear(3, 3))
    assert P.is_parametrized(fj2, "weight")
    assert fj2.parametrizations.weight.original is fj.parametrizations.weight.original
    close(fj2.weight, fj.weight, "transferred", 0, 0)


# -- parametrizations ----------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization(dim):
    fj, th = _pair(nn.Conv2d, torch.nn.Conv2d, 2, 3, 3)
    PZ.weight_norm(fj, dim=dim)
    TPZ.weight_norm(th, dim=dim)
    _state_keys(fj, th, "weight_norm")
    for i in (0, 1):
        close(
            getattr(fj.parametrizations.weight, f"original{i}"),
            getattr(th.parametrizations.weight, f"original{i}"),
            f"original{i}",
            *TOL,
        )
    xf, xt = _x(2, 2, 5, 5)
    _check_call(fj, th, xf, xt, "weight_norm")
    _sgd_step(fj, th, xf, xt, "weight_norm")


def test_orthogonal_default_is_exact_without_copying_state():
    fj, th = _pair(nn.Linear, torch.nn.Linear, 4, 4)
    PZ.orthogonal(fj)
    TPZ.orthogonal(th)
    _state_keys(fj, th, "orthogonal")
    close(fj.weight, th.weight, "orthogonalised weight", 1e-4, 1e-5)
    xf, xt = _x(3, 4)
    _check_call(fj, th, xf, xt, "orthogonal")
    _sgd_step(fj, th, xf, xt, "orthogonal")
    w = fj.weight.detach()
    close(w @ w.T, np.eye(4, dtype=np.float32), "orthogonality after a step", 1e-4, 1e-5)


@pytest.mark.parametrize(
    "shape,orthogonal_map,triv",
    [
        ((4, 4), "cayley", True),
        ((5, 3), "householder", True),
        ((3, 5), None, True),
        ((5, 3), "matrix_exp", True),
        ((5, 3), "householder", False),
    ],
)
def test_orthogonal_maps(shape, orthogonal_map, triv):
    fj, th = _pair(nn.Linear, torch.nn.Linear, shape[1], shape[0])
    PZ.orthogonal(fj, orthogonal_map=orthogonal_map, use_trivialization=triv)
    TPZ.orthogonal(th, orthogonal_map=orthogonal_map, use_trivialization=triv)
    _state_keys(fj, th, "orthogonal")
    copy_weights(fj, th)  # the non-square starting point draws random columns
    xf, xt = _x(2, shape[1])
    _check_call(fj, th, xf, xt, f"orthogonal {orthogonal_map}")


def test_spectral_norm_parametrization_power_iteration_train_and_eval():
    fj, th = _pair(nn.Linear, torch.nn.Linear, 5, 4)
    PZ.spectral_norm(fj, n_power_iterations=2)
    TPZ.spectral_norm(th, n_power_iterations=2)
    _state_keys(fj, th, "spectral_norm")
    copy_weights(fj, th)  # u and v start random
    xf, xt = _x(3, 5)
    for _ in range(3):
        close(fj(xf), th(xt), "spectral_norm train forward", *TOL)
    close(fj.parametrizations.weight[0]._u, th.parametrizations.weight[0]._u, "u after iterations", 1e-4, 1e-5)
    _check_call(fj, th, xf, xt, "spectral_norm")
    fj.eval(), th.eval()
    u = fj.parametrizations.weight[0]._u.clone()
    close(fj(xf), th(xt), "spectral_norm eval", 1e-4, 1e-5)
    close(fj.parametrizations.weight[0]._u, u, "eval leaves u", 0, 0)
    cf, ct = _pair(nn.ConvTranspose2d, torch.nn.ConvTranspose2d, 3, 2, 3)
    PZ.spectral_norm(cf)
    TPZ.spectral_norm(ct)
    assert cf.parametrizations.weight[0].dim == ct.parametrizations.weight[0].dim == 1
    assert cf.parametrizations.weight[0]._u.shape == ct.parametrizations.weight[0]._u.shape


# -- hook-based weight_norm / spectral_norm ------------------------------------------------
def test_old_weight_norm():
    fj, th = _pair(nn.Linear, torch.nn.Linear, 4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nn.utils.weight_norm(fj, dim=1)
        torch.nn.utils.weight_norm(th, dim=1)
    _state_keys(fj, th, "old weight_norm")
    close(fj.weight_g, th.weight_g, "weight_g", *TOL)
    xf, xt = _x(2, 4)
    _check_call(fj, th, xf, xt, "old weight_norm")
    _sgd_step(fj, th, xf, xt, "old weight_norm")
    nn.utils.remove_weight_norm(fj)
    torch.nn.utils.remove_weight_norm(th)
    _state_keys(fj, th, "removed weight_norm")
    close(fj.weight, th.weight, "weight after removal", 1e-4, 1e-5)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(fj)
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(nn.Linear(2, 2))


def test_old_spectral_norm():
    fj, th = _pair(nn.Conv2d, torch.nn.Conv2d, 2, 3, 3)
    nn.utils.spectral_norm(fj)
    torch.nn.utils.spectral_norm(th)
    _state_keys(fj, th, "old spectral_norm")
    copy_weights(fj, th)
    xf, xt = _x(2, 2, 5, 5)
    for _ in range(2):
        close(fj(xf), th(xt), "old spectral_norm forward", 1e-4, 1e-5)
    close(fj.weight_u, th.weight_u, "weight_u", 1e-4, 1e-5)
    _check_call(fj, th, xf, xt, "old spectral_norm")
    fj.eval(), th.eval()
    close(fj(xf), th(xt), "old spectral_norm eval", 1e-4, 1e-5)
    nn.utils.remove_spectral_norm(fj)
    torch.nn.utils.remove_spectral_norm(th)
    _state_keys(fj, th, "removed spectral_norm")
    close(fj.weight, th.weight, "weight after removal", 1e-4, 1e-5)


# -- small nn.utils functions ---------------------------------------------------------------
def test_fusion():
    cf, ct = _pair(nn.Conv2d, torch.nn.Conv2d, 2, 3, 3)
    bf, bt = _pair(nn.BatchNorm2d, torch.nn.BatchNorm2d, 3)
    r = rng(1)
    stats = {k: r.uniform(0.5, 2.0, 3).astype(np.float32) for k in ("weight", "bias", "running_mean", "running_var")}
    bf.load_state_dict({**bf.state_dict(), **stats})
    bt.load_state_dict({**bt.state_dict(), **{k: torch.tensor(v) for k, v in stats.items()}})
    for m in (cf, ct, bf, bt):
        m.eval()
    fused_f, fused_t = nn.utils.fuse_conv_bn_eval(cf, bf), torch.nn.utils.fuse_conv_bn_eval(ct, bt)
    close(fused_f.weight, fused_t.weight, "fused conv weight", *TOL)
    close(fused_f.bias, fused_t.bias, "fused conv bias", *TOL)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        nn.utils.fuse_conv_bn_eval(cf.train(), bf)
    tf, tt = _pair(nn.ConvTranspose2d, torch.nn.ConvTranspose2d, 3, 3, 2)
    wf = nn.utils.fuse_conv_bn_weights(tf.weight, None, bf.running_mean, bf.running_var, 1e-5, None, bf.bias, True)
    wt = torch.nn.utils.fuse_conv_bn_weights(
        tt.weight, None, bt.running_mean, bt.running_var, 1e-5, None, bt.bias, True
    )
    for a, b in zip(wf, wt):
        close(a, b, "fused transposed conv", *TOL)
    lf, lt = _pair(nn.Linear, torch.nn.Linear, 4, 3)
    bf1, bt1 = _pair(nn.BatchNorm1d, torch.nn.BatchNorm1d, 3)
    bf1.load_state_dict({**bf1.state_dict(), **stats})
    bt1.load_state_dict({**bt1.state_dict(), **{k: torch.tensor(v) for k, v in stats.items()}})
    ff = nn.utils.fuse_linear_bn_eval(lf.eval(), bf1.eval())
    ft = torch.nn.utils.fuse_linear_bn_eval(lt.eval(), bt1.eval())
    xf, xt = _x(5, 4)
    close(ff(xf), ft(xt), "fused linear", 1e-4, 1e-5)
    assert isinstance(ff.weight, nn.Parameter) and ff.weight.requires_grad


def test_parameters_vector_norms_and_small_helpers():
    fj, th = _pair(nn.Linear, torch.nn.Linear, 3, 2)
    vf = nn.utils.parameters_to_vector(fj.parameters())
    close(vf, torch.nn.utils.parameters_to_vector(th.parameters()), "parameters_to_vector", 0, 0)
    vf.sum().backward()
    close(fj.weight.grad, np.ones((2, 3), np.float32), "parameters_to_vector is differentiable", 0, 0)
    new = rng(2).standard_normal(8).astype(np.float32)
    nn.utils.vector_to_parameters(fjax.tensor(new), fj.parameters())
    torch.nn.utils.vector_to_parameters(torch.tensor(new), th.parameters())
    close(fj.weight, th.weight, "vector_to_parameters", 0, 0)
    with pytest.raises(TypeError, match="expected fjax.Tensor"):
        nn.utils.vector_to_parameters(new, fj.parameters())
    gs = [rng(3 + i).standard_normal(s).astype(np.float32) for i, s in enumerate([(3,), (2, 2)])]
    for p in (2.0, 1.0, float("inf")):
        close(
            nn.utils.get_total_norm([fjax.tensor(g) for g in gs], p),
            torch.nn.utils.get_total_norm([torch.tensor(g) for g in gs], p),
            f"get_total_norm p={p}",
            *TOL,
        )
    pf, pt = [nn.Parameter(fjax.zeros(g.shape)) for g in gs], [torch.nn.Parameter(torch.zeros(g.shape)) for g in gs]
    for a, b, g in zip(pf, pt, gs):
        a.grad, b.grad = fjax.tensor(g), torch.tensor(g)
    nn.utils.clip_grads_with_norm_(pf, 0.5, fjax.tensor(3.0))
    torch.nn.utils.clip_grads_with_norm_(pt, 0.5, torch.tensor(3.0))
    for a, b in zip(pf, pt):
        close(a.grad, b.grad, "clip_grads_with_norm_", *TOL)
    with pytest.warns(FutureWarning):
        total = nn.utils.clip_grad_norm(pf, 0.1)
    close(total, torch.nn.utils.clip_grad_norm_(pt, 0.1), "clip_grad_norm", *TOL)
    perm = rng(4).permutation(6)
    close(
        nn.utils.rnn.invert_permutation(fjax.tensor(perm)),
        torch.nn.utils.rnn.invert_permutation(torch.tensor(perm)),
        "invert_permutation",
        0,
        0,
    )
    assert nn.utils.rnn.invert_permutation(None) is None
    conv = nn.Sequential(nn.Conv2d(2, 2, 1))
    w = conv[0].weight.detach().clone()
    assert nn.utils.convert_conv2d_weight_memory_format(conv, fjax.channels_last) is conv
    assert nn.utils.convert_conv3d_weight_memory_format(conv, fjax.channels_last_3d) is conv
    close(conv[0].weight, w, "memory format conversion keeps values", 0, 0)
    with pytest.raises(TypeError, match="memory_format"):
        nn.utils.convert_conv2d_weight_memory_format(conv, "channels_last")
    xf, xt = _x(2, 3)
    params = {"weight": fjax.tensor(th.weight.detach().numpy() * 2), "bias": fjax.tensor(th.bias.detach().numpy())}
    with pytest.warns(FutureWarning):
        out = nn.utils.stateless.functional_call(fj, params, (xf,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.nn.utils.stateless.functional_call(
            th, {"weight": th.weight.detach() * 2, "bias": th.bias.detach()}, (xt,)
        )
    close(out, ref, "stateless.functional_call", *TOL)


# -- prune ----------------------------------------------------------------------------------
def _masks_equal(fj, th, name, what):
    close(getattr(fj, name + "_mask"), getattr(th, name + "_mask"), f"{what}: {name}_mask", 0, 0)


def test_prune_masks_combine_like_torch_and_train():
    fj, th = _pair(nn.Conv2d, torch.nn.Conv2d, 3, 4, 3)
    steps = [
        ("l1_unstructured", dict(amount=0.3)),
        ("ln_structured", dict(amount=1, n=2, dim=0)),
        ("ln_structured", dict(amount=0.5, n=1, dim=1)),
        ("l1_unstructured", dict(amount=7)),
        ("ln_structured", dict(amount=1, n=float("inf"), dim=-1)),
    ]
    for fn, kw in steps:
        getattr(prune, fn)(fj, "weight", **kw)
        getattr(TPR, fn)(th, "weight", **kw)
        _masks_equal(fj, th, "weight", f"{fn}{kw}")
    hook = next(iter(fj._forward_pre_hooks.values()))
    assert isinstance(hook, prune.PruningContainer) and len(hook) == len(steps)
    scores = rng(5).standard_normal(4).astype(np.float32)
    prune.l1_unstructured(fj, "bias", amount=2, importance_scores=fjax.tensor(scores))
    TPR.l1_unstructured(th, "bias", amount=2, importance_scores=torch.tensor(scores))
    _masks_equal(fj, th, "bias", "importance_scores")
    _state_keys(fj, th, "pruned")
    xf, xt = _x(2, 3, 6, 6)
    _check_call(fj, th, xf, xt, "pruned conv")
    _sgd_step(fj, th, xf, xt, "pruned conv")
    assert prune.is_pruned(fj)
    prune.remove(fj, "weight")
    TPR.remove(th, "weight")
    _state_keys(fj, th, "weight pruning removed")
    close(fj.weight, th.weight, "weight after remove", 1e-4, 1e-5)
    assert isinstance(fj.weight, nn.Parameter) and prune.is_pruned(fj)
    prune.remove(fj, "bias")
    assert not prune.is_pruned(fj)
    with pytest.raises(ValueError, match="has to be pruned"):
        prune.remove(fj, "weight")


def test_prune_global_custom_identity_and_random():
    fj = nn.Sequential(nn.Linear(4, 5), nn.Linear(5, 3))
    th = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Linear(5, 3))
    copy_weights(fj, th)
    prune.identity(fj[1], "bias")
    TPR.identity(th[1], "bias")
    prune.l1_unstructured(fj[0], "weight", amount=3)
    TPR.l1_unstructured(th[0], "weight", amount=3)
    pf = [(fj[0], "weight"), (fj[1], "weight"), (fj[1], "bias")]
    pt = [(th[0], "weight"), (th[1], "weight"), (th[1], "bias")]
    prune.global_unstructured(pf, prune.L1Unstructured, amount=0.4)
    TPR.global_unstructured(pt, TPR.L1Unstructured, amount=0.4)
    for (a, n), (b, _) in zip(pf, pt):
        _masks_equal(a, b, n, "global_unstructured")
    mask = (rng(6).random((3, 5)) > 0.5).astype(np.float32)
    prune.custom_from_mask(fj[1], "weight", fjax.tensor(mask))
    TPR.custom_from_mask(th[1], "weight", torch.tensor(mask))
    _masks_equal(fj[1], th[1], "weight", "custom_from_mask")
    xf, xt = _x(2, 4)
    _check_call(fj, th, xf, xt, "globally pruned")
    with pytest.raises(TypeError, match="unstructured"):
        prune.global_unstructured(pf, prune.LnStructured, amount=1, n=2, dim=0)
    m = prune.random_unstructured(nn.Linear(6, 5), "weight", amount=0.4)
    assert int((m.weight_mask == 0).sum()) == 12
    prune.random_unstructured(m, "weight", amount=3)
    assert int((m.weight_mask == 0).sum()) == 15
    m = prune.random_structured(nn.Linear(6, 5), "weight", amount=2, dim=1)
    pruned_cols = (m.weight_mask.sum(0) == 0).numpy()
    assert pruned_cols.sum() == 2 and bool((m.weight_mask.sum(0)[~pruned_cols] == 5).all())
    with pytest.raises(ValueError, match="amount=7 should be smaller"):
        prune.l1_unstructured(nn.Linear(2, 3), "weight", amount=7)
    with pytest.raises(ValueError, match="float in the range"):
        prune.L1Unstructured(1.5)
    with pytest.raises(ValueError, match="multidimensional"):
        prune.ln_structured(nn.Linear(2, 3), "bias", amount=1, n=2, dim=0)


# -- optim.swa_utils --------------------------------------------------------------------------
def _net_pair():
    fj = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    th = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    copy_weights(fj, th)
    return fj, th


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_fn", "swa_fn_buffers"])
def test_averaged_model(kind):
    fj, th = _net_pair()
    S, TS = optim.swa_utils, torch.optim.swa_utils
    kw = {
        "swa": ({}, {}),
        "ema_multi": ({"multi_avg_fn": S.get_ema_multi_avg_fn(0.9)}, {"multi_avg_fn": TS.get_ema_multi_avg_fn(0.9)}),
        "ema_fn": ({"avg_fn": S.get_ema_avg_fn(0.8)}, {"avg_fn": TS.get_ema_avg_fn(0.8)}),
        "swa_fn_buffers": (
            {"avg_fn": S.get_swa_avg_fn(), "use_buffers": True},
            {"avg_fn": TS.get_swa_avg_fn(), "use_buffers": True},
        ),
    }[kind]
    af, at = S.AveragedModel(fj, **kw[0]), TS.AveragedModel(th, **kw[1])
    of, ot = optim.SGD(fj.parameters(), lr=0.1), torch.optim.SGD(th.parameters(), lr=0.1)
    for step in range(3):
        xf, xt = _x(6, 3, salt=10 + step)
        fj(xf).pow(2).sum().backward()
        th(xt).pow(2).sum().backward()
        of.step(), ot.step()
        of.zero_grad(), ot.zero_grad()
        af.update_parameters(fj)
        at.update_parameters(th)
    _state_keys(af, at, "AveragedModel")
    for (k, a), (_, b) in zip(af.state_dict().items(), at.state_dict().items()):
        close(a, b, f"{kind}: averaged {k}", 1e-4, 1e-5)
    xf, xt = _x(4, 3, salt=20)
    close(af.eval()(xf), at.eval()(xt), f"{kind}: averaged model forward", 1e-4, 1e-5)


def test_update_bn_and_swalr():
    fj, th = _net_pair()
    batches = [rng(30 + i).standard_normal((5, 3)).astype(np.float32) for i in range(3)]
    fj.eval(), th.eval()
    optim.swa_utils.update_bn([(fjax.tensor(b), 0) for b in batches], fj)
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], th)
    assert not fj.training and fj[1].momentum == 0.1
    for (k, a), (_, b) in zip(fj.state_dict().items(), th.state_dict().items()):
        close(a, b, f"update_bn {k}", 1e-4, 1e-5)
    for strategy, epochs in (("cos", 3), ("linear", 2), ("cos", 0)):
        pf, pt = nn.Parameter(fjax.zeros(1)), torch.nn.Parameter(torch.zeros(1))
        of = optim.SGD([{"params": [pf]}, {"params": [nn.Parameter(fjax.zeros(1))], "lr": 0.5}], lr=1.0)
        ot = torch.optim.SGD([{"params": [pt]}, {"params": [torch.nn.Parameter(torch.zeros(1))], "lr": 0.5}], lr=1.0)
        sf = optim.swa_utils.SWALR(of, swa_lr=[0.05, 0.2], anneal_epochs=epochs, anneal_strategy=strategy)
        st = torch.optim.swa_utils.SWALR(ot, swa_lr=[0.05, 0.2], anneal_epochs=epochs, anneal_strategy=strategy)
        for _ in range(5):
            np.testing.assert_allclose(sf.get_last_lr(), st.get_last_lr(), rtol=1e-6, err_msg=f"SWALR {strategy}")
            of.step(), ot.step()
            sf.step(), st.step()
    with pytest.raises(ValueError, match="anneal_strategy"):
        optim.swa_utils.SWALR(of, swa_lr=0.1, anneal_strategy="step")


def test_doctests_of_the_new_modules():
    globs = {"fjax": fjax, "nn": nn, "F": F, "optim": optim}
    names = [
        "parametrize",
        "parametrizations",
        "prune",
        "weight_norm",
        "spectral_norm",
        "fusion",
        "convert_parameters",
        "memory_format",
        "clip_grad",
        "stateless",
        "rnn",
    ]
    mods = [importlib.import_module(f"fjax.nn.utils.{n}") for n in names] + [optim.swa_utils]
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mod in mods:
            for t in doctest.DocTestFinder().find(mod, mod.__name__, globs=dict(globs)):
                runner.run(t)
    assert runner.failures == 0, f"{runner.failures} doctest failures (seed={SEED})"


def test_swap_in_optimizer_params_and_state():
    r = rng(40)
    live = [r.standard_normal(s).astype(np.float32) for s in ((3,), (2, 2))]
    ext = [r.standard_normal(s).astype(np.float32) for s in ((3,), (2, 2))]
    grads = [r.standard_normal(s).astype(np.float32) for s in ((3,), (2, 2))]
    lf, lt = [nn.Parameter(fjax.tensor(v)) for v in live], [torch.nn.Parameter(torch.tensor(v)) for v in live]
    of = optim.Adam([{"params": [lf[0]]}, {"params": [lf[1]], "lr": 0.01}], lr=0.1)
    ot = torch.optim.Adam([{"params": [lt[0]]}, {"params": [lt[1]], "lr": 0.01}], lr=0.1)
    for a, b, g in zip(lf, lt, grads):
        a.grad, b.grad = fjax.tensor(g), torch.tensor(g)
    of.step(), ot.step()
    before_f = {k: v["exp_avg"].numpy().copy() for k, v in of.state_dict()["state"].items()}
    ef, et = [nn.Parameter(fjax.tensor(v)) for v in ext], [torch.nn.Parameter(torch.tensor(v)) for v in ext]
    for a, b, g in zip(ef, et, grads):
        a.grad, b.grad = fjax.tensor(g * 2), torch.tensor(g * 2)

    def external(lib, mk):
        groups = [
            {**{k: v for k, v in g.items() if k != "params"}, "params": [i], "lr": 0.05 * (i + 1)}
            for i, g in enumerate((of if lib is fjax else ot).state_dict()["param_groups"])
        ]
        state = {
            i: {"step": mk(np.float32(3.0)), "exp_avg": mk(grads[i] * 0.5), "exp_avg_sq": mk(grads[i] ** 2)}
            for i in (0, 1)
        }
        return {"state": state, "param_groups": groups}

    sf, st = external(fjax, fjax.tensor), external(torch, torch.tensor)
    with optim.swap_in_optimizer_params_and_state(of, {"a": ef[0], "b": ef[1]}, sf):
        assert of.param_groups[1]["lr"] == 0.1
        of.step()
    with torch.optim.swap_in_optimizer_params_and_state(ot, {"a": et[0], "b": et[1]}, st):
        ot.step()
    for a, b in zip(ef, et):
        close(a, b, "swapped-in parameter after a step", 1e-5, 1e-6)
    for i in (0, 1):
        for key in ("step", "exp_avg", "exp_avg_sq"):
            close(sf["state"][i][key], st["state"][i][key], f"swapped-in state {i} {key} written back", 1e-5, 1e-6)
    assert [g["lr"] for g in of.param_groups] == [0.1, 0.01] and of.param_groups[0]["params"][0] is lf[0]
    for k, v in of.state_dict()["state"].items():
        close(v["exp_avg"], before_f[k], "live state restored", 0, 0)
    with pytest.raises(RuntimeError, match="initialized optimizer state"):
        with optim.swap_in_optimizer_params_and_state(optim.SGD([nn.Parameter(fjax.ones(1))]), {}, sf):
            pass
