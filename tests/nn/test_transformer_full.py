"""nn.Transformer against torch: torch's weights loaded by name, outputs and gradients with masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax
from fjax import nn

from .helper import check_module, close, rng

D, H, FF = 8, 2, 16


def _pair(**kw):
    args = dict(d_model=D, nhead=H, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=FF, **kw)
    return nn.Transformer(**args), torch.nn.Transformer(**args)


def _masks(r, n, s, t, kind):
    """src/tgt/memory masks and key padding masks; no query row is fully masked."""
    src_kpm = np.zeros((n, s), bool)
    src_kpm[0, s - 2 :] = True
    tgt_kpm = np.zeros((n, t), bool)
    tgt_kpm[-1, t - 1] = True
    src_mask = r.random((s, s)) < 0.3
    np.fill_diagonal(src_mask, False)
    memory_mask = np.zeros((t, s), bool)
    memory_mask[:, 1] = True
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(t).numpy()
    if kind == "bool":
        tgt_mask = np.isinf(tgt_mask)
    else:
        src_mask = np.where(src_mask, -1e4, r.standard_normal((s, s))).astype(np.float32)
        memory_mask = np.where(memory_mask, float("-inf"), 0.0).astype(np.float32)
    return dict(
        src_mask=src_mask,
        tgt_mask=tgt_mask,
        memory_mask=memory_mask,
        src_key_padding_mask=src_kpm,
        tgt_key_padding_mask=tgt_kpm,
        memory_key_padding_mask=src_kpm,
    )


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_matches_torch_with_masks(batch_first, norm_first):
    r = rng()
    fj, th = _pair(batch_first=batch_first, norm_first=norm_first)
    assert list(fj.state_dict()) == list(th.state_dict())
    n, s, t = 2, 5, 4
    src, tgt = r.standard_normal((n, s, D)), r.standard_normal((n, t, D))
    if not batch_first:
        src, tgt = src.transpose(1, 0, 2), tgt.transpose(1, 0, 2)
    kind = "bool" if norm_first else "float"
    check_module(fj, th, [src, tgt], train=False, kwargs=_masks(r, n, s, t, kind), grad_inputs=(0, 1))


def test_without_masks_gelu_no_bias():
    r = rng(1)
    fj, th = _pair(activation="gelu", bias=False, layer_norm_eps=1e-3)
    check_module(fj, th, [r.standard_normal((5, 2, D)), r.standard_normal((4, 2, D))], train=False)


def test_causal_hints_and_custom_parts():
    r = rng(2)
    fj, th = _pair(batch_first=True)
    mask = nn.Transformer.generate_square_subsequent_mask(4).numpy()
    kw = dict(src_mask=np.triu(np.ones((4, 4), bool), 1), tgt_mask=mask, src_is_causal=True, tgt_is_causal=True)
    inputs = [r.standard_normal((2, 4, D)), r.standard_normal((2, 4, D))]
    check_module(fj, th, inputs, train=False, kwargs=kw, grad_inputs=(0, 1))

    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF, dropout=0.0), 1)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, H, FF, dropout=0.0), 1)
    model = nn.Transformer(D, H, custom_encoder=enc, custom_decoder=dec)
    assert model.encoder is enc and model.decoder is dec
    assert list(model.state_dict())[0] == "encoder.layers.0.self_attn.in_proj_weight"


def test_generate_square_subsequent_mask():
    for dtype, th_dtype in [(None, None), (fjax.float64, torch.float64)]:
        a = nn.Transformer.generate_square_subsequent_mask(5, dtype=dtype)
        b = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=th_dtype)
        assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
        close(a, b, "generate_square_subsequent_mask", 0, 0)


def test_default_init_and_attributes():
    model = nn.Transformer(16, 4, 1, 1, 32)
    assert (model.d_model, model.nhead, model.batch_first) == (16, 4, False)
    w = model.encoder.layers[0].linear1.weight.detach().numpy()
    bound = np.sqrt(6 / (16 + 32))  # xavier-uniform, not Linear's kaiming bound
    assert 0.9 * bound < np.abs(w).max() <= bound
    assert isinstance(model.encoder.norm, nn.LayerNorm) and isinstance(model.decoder.norm, nn.LayerNorm)
    th = torch.nn.Transformer(16, 4, 1, 1, 32)
    assert [tuple(p.shape) for p in model.parameters()] == [tuple(p.shape) for p in th.parameters()]


def test_shape_errors_name_the_shapes():
    model = nn.Transformer(D, H, 1, 1, FF)
    with pytest.raises(RuntimeError, match="batch number of src and tgt must be equal"):
        model(fjax.zeros(5, 2, D), fjax.zeros(4, 3, D))
    with pytest.raises(RuntimeError, match="feature number of src and tgt must be equal to d_model=8"):
        model(fjax.zeros(5, 2, D), fjax.zeros(4, 2, 6))
