"""MultiheadAttention and the transformer layers against torch: layouts, masks, variants."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax
from fjax import nn

from ..helper import check_module, close, copy_weights, rng


class _SelfAttention(torch.nn.Module):
    """``mha(x, x, x)`` with one input object (torch's packed self-attention path)."""

    def __init__(self, mha, **kw):
        super().__init__()
        self.mha, self.kw = mha, kw

    def forward(self, x, **masks):
        return self.mha(x, x, x, **self.kw, **masks)


class _FjSelfAttention(nn.Module):
    def __init__(self, mha, **kw):
        super().__init__()
        self.mha, self.kw = mha, kw

    def forward(self, x, **masks):
        return self.mha(x, x, x, **self.kw, **masks)


def _pair(**kw):
    return nn.MultiheadAttention(8, 2, **kw), torch.nn.MultiheadAttention(8, 2, **kw)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_self_attention(batch_first, need_weights, average):
    fj, th = _pair(batch_first=batch_first)
    kw = dict(need_weights=need_weights, average_attn_weights=average)
    check_module(_FjSelfAttention(fj, **kw), _SelfAttention(th, **kw), [rng().standard_normal((3, 5, 8))])


@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_masks(mask_kind):
    r = rng()
    fj, th = _pair(batch_first=True, bias=False)
    kpm = r.random((2, 6)) < 0.3
    kpm[:, 0] = False  # every query attends to something
    attn = np.triu(np.ones((4, 6), bool), 1)
    if mask_kind == "float":
        kpm, attn = np.where(kpm, -1e4, 0.0), r.standard_normal((4, 6))
    inputs = [r.standard_normal((2, 4, 8)), r.standard_normal((2, 6, 8)), r.standard_normal((2, 6, 8))]
    check_module(fj, th, inputs, kwargs=dict(key_padding_mask=kpm, attn_mask=attn))


def test_per_head_mask_unbatched_and_extras():
    r = rng()
    kw = dict(kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True)
    fj, th = _pair(**kw)
    assert [n for n, _ in fj.named_parameters()] == [n for n, _ in th.named_parameters()]
    mask = r.random((2 * 2, 4, 6)) < 0.2
    inputs = [r.standard_normal((4, 2, 8)), r.standard_normal((6, 2, 3)), r.standard_normal((6, 2, 5))]
    check_module(fj, th, inputs, kwargs=dict(attn_mask=mask, average_attn_weights=False))
    check_module(fj, th, [x[:, 0] for x in inputs], kwargs=dict(key_padding_mask=r.random(6) < 0.3), copy=False)


def test_attention_dropout_is_identity_in_eval():
    fj, th = _pair(dropout=0.5)
    x = rng().standard_normal((5, 2, 8))
    check_module(_FjSelfAttention(fj), _SelfAttention(th), [x], train=False)
    fj.train()
    out, weights = fj(*(fjax.tensor(x.astype(np.float32)),) * 3)
    w = weights.detach().numpy()
    assert np.isclose(w, 0).any() and out.shape == (5, 2, 8)


ENCODER = [
    dict(),
    dict(norm_first=True, activation="gelu", batch_first=True),
    dict(activation=torch.nn.functional.silu, bias=False, layer_norm_eps=1e-3),
]


@pytest.mark.parametrize("kw", ENCODER, ids=["post-ln", "pre-ln-gelu", "silu-nobias"])
def test_encoder_layer(kw):
    fj_kw = dict(kw)
    if "activation" in kw and not isinstance(kw["activation"], str):
        fj_kw["activation"] = nn.functional.silu
    fj = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **fj_kw)
    th = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw)
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    kpm = np.zeros((3, 5), bool)
    kpm[1, 3:] = True
    shape = (3, 5, 8) if kw.get("batch_first") else (5, 3, 8)
    check_module(fj, th, [rng().standard_normal(shape)], kwargs=dict(src_mask=mask, src_key_padding_mask=kpm))


def test_encoder_layer_dropout_eval_and_causal():
    fj = nn.TransformerEncoderLayer(8, 2, 16)
    th = torch.nn.TransformerEncoderLayer(8, 2, 16)
    mask = np.triu(np.ones((4, 4), bool), 1)
    check_module(fj, th, [rng().standard_normal((4, 2, 8))], train=False, kwargs=dict(src_mask=mask, is_causal=True))


def test_encoder_stack_with_norm():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    fj = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
    th_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    th = torch.nn.TransformerEncoder(th_layer, 2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False)
    assert list(fj.state_dict()) == list(th.state_dict())
    assert fj.layers[0].linear1.weight is not fj.layers[1].linear1.weight
    assert isinstance(fj.layers[1].linear1.weight, nn.Parameter)
    check_module(fj, th, [rng().standard_normal((2, 5, 8))])


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder(norm_first):
    r = rng()
    fj_layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first)
    th_layer = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first)
    tgt_mask = np.triu(np.ones((4, 4), bool), 1)
    mem_kpm = np.zeros((2, 6), bool)
    mem_kpm[0, 4:] = True
    inputs = [r.standard_normal((4, 2, 8)), r.standard_normal((6, 2, 8))]
    kw = dict(tgt_mask=tgt_mask, memory_key_padding_mask=mem_kpm)
    check_module(fj_layer, th_layer, inputs, kwargs=kw)
    fj, th = nn.TransformerDecoder(fj_layer, 2), torch.nn.TransformerDecoder(th_layer, 2)
    check_module(fj, th, inputs, kwargs=kw)


def test_default_init_matches_torch_scheme():
    """in_proj: xavier-uniform bounds; biases zero; out_proj: Linear's kaiming bounds."""
    fj = nn.MultiheadAttention(16, 4)
    w = fj.in_proj_weight.detach().numpy()
    bound = np.sqrt(6 / (16 + 48))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not fj.in_proj_bias.detach().numpy().any() and not fj.out_proj.bias.detach().numpy().any()
    th = torch.nn.MultiheadAttention(16, 4)
    copy_weights(fj, th)
    close(fj.in_proj_weight, th.in_proj_weight, "in_proj_weight after load", 0, 0)


def test_attention_uses_out_proj_weights_without_calling_it():
    fj, th = _pair(batch_first=True)
    copy_weights(fj, th)
    calls = []
    fj.out_proj.register_forward_hook(lambda *a: calls.append(1))  # torch's MHA never calls out_proj
    th.out_proj.register_forward_hook(lambda *a: calls.append(2))
    x = rng(5).standard_normal((2, 4, 8)).astype(np.float32)
    fx, tx = fjax.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fo, fw = fj(fx, fx, fx)
    (fo.sum() + fw.sum()).backward()
    to, tw = th(tx, tx, tx)
    (to.sum() + tw.sum()).backward()
    assert calls == []
    close(fo, to, "output", 1e-5, 1e-5)
    close(fx.grad, tx.grad, "input grad", 1e-4, 1e-5)
    close(fj.out_proj.weight.grad, th.out_proj.weight.grad, "out_proj grad", 1e-4, 1e-5)


def test_attention_without_dropout_is_one_op_shared_by_every_instance():
    import copy
    import pickle

    fj, th = _pair(batch_first=True)
    copy_weights(fj, th)
    x = rng(6).standard_normal((2, 4, 8)).astype(np.float32)
    fx, tx = fjax.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    with fjax.profiler.profile() as prof:
        fo, fw = fj(fx, fx, fx)
        (fo.sum() + fw.sum()).backward()
    names = [e.key for e in prof.key_averages()]
    assert "MultiheadAttention" in names and "matmul" not in names and "transpose" not in names, names
    to, tw = th(tx, tx, tx)
    (to.sum() + tw.sum()).backward()
    close(fw, tw, "weights", 1e-5, 1e-5)
    close(fx.grad, tx.grad, "input grad", 1e-4, 1e-5)
    close(fj.in_proj_weight.grad, th.in_proj_weight.grad, "in_proj grad", 1e-4, 1e-5)
    # a new instance and a deep copy reuse the kernel: nothing compiles
    twin, fresh = copy.deepcopy(fj), nn.MultiheadAttention(8, 2, batch_first=True)
    before = fjax.profiler.compile_count()
    close(twin(fx, fx, fx)[1], tw, "a copy's weights", 1e-5, 1e-5)
    fresh(fx, fx, fx)
    assert fjax.profiler.compile_count() == before
    # a setting the computation reads is part of the kernel's key
    for m in (fj, th):
        m.num_heads, m.head_dim = 4, 2
    close(fj(fx, fx, fx)[1], th(tx, tx, tx)[1], "weights with 4 heads", 1e-5, 1e-5)
    close(pickle.loads(pickle.dumps(fresh))(fx, fx, fx)[0], fresh(fx, fx, fx)[0].detach(), "unpickled", 1e-6, 1e-6)
    # attention dropout in training draws a mask per call (op by op)
    drop = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    a, b = drop(fx, fx, fx)[1], drop(fx, fx, fx)[1]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())


def test_attention_kernel_steps_aside_under_autocast():
    """The attention's kernel was traced outside autocast; under autocast its matmuls cast as
    torch's do (``kernel_of`` runs the function as written there)."""
    fj, th = _pair(batch_first=True)
    copy_weights(fj, th)
    x = rng(7).standard_normal((2, 4, 8)).astype(np.float32)
    fx, tx = fjax.tensor(x), torch.tensor(x)
    fj(fx, fx, fx)
    with fjax.autocast("cpu", dtype=fjax.bfloat16), torch.autocast("cpu", dtype=torch.bfloat16):
        fo, to = fj(fx, fx, fx)[0], th(tx, tx, tx)[0]
    assert str(fo.dtype).split(".")[-1] == str(to.dtype).split(".")[-1] == "bfloat16"
    close(fo.float(), to.float(), "bfloat16 output", 2e-2, 2e-2)
