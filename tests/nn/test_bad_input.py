"""Bad input into layers raises an fjax error naming the module and what it expected."""

from __future__ import annotations

import re

import pytest

import fjax
from fjax import nn


def _raises(module, *inputs, match, **kwargs):
    with pytest.raises(fjax.OpError, match=re.escape(match)):
        module(*inputs, **kwargs)


def test_linear_and_bilinear():
    _raises(
        nn.Linear(3, 4),
        fjax.randn(2, 5),
        match="Linear(in_features=3, out_features=4, bias=True): expected input of shape (*, 3), got (2, 5)",
    )
    _raises(nn.Linear(3, 4), fjax.tensor(1.0), match="expected input of shape (*, 3), got ()")
    _raises(
        nn.Bilinear(2, 3, 4),
        fjax.randn(5, 2),
        fjax.randn(4, 3),
        match="Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True): expected inputs of shapes "
        "(*, 2) and (*, 3) with the same leading dims, got (5, 2) and (4, 3)",
    )


def test_conv():
    conv = nn.Conv2d(3, 8, 3)
    prefix = "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1)): "
    _raises(
        conv,
        fjax.randn(2, 4, 8, 8),
        match=prefix + "expected input of shape (N, 3, H, W) or (3, H, W), got (2, 4, 8, 8)",
    )
    _raises(conv, fjax.randn(8, 8), match=prefix + "expected input of shape (N, 3, H, W) or (3, H, W), got (8, 8)")
    _raises(nn.Conv1d(2, 2, 3), fjax.randn(1, 3, 5), match="expected input of shape (N, 2, L) or (2, L), got (1, 3, 5)")
    _raises(
        nn.ConvTranspose3d(2, 2, 3),
        fjax.randn(2, 2, 3),
        match="expected input of shape (N, 2, D, H, W) or (2, D, H, W)",
    )


def test_norms():
    _raises(
        nn.LayerNorm(4),
        fjax.randn(3, 5),
        match="LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True): "
        "expected input of shape (*, 4), got (3, 5)",
    )
    _raises(nn.LayerNorm((2, 4)), fjax.randn(4), match="expected input of shape (*, 2, 4), got (4,)")
    _raises(
        nn.RMSNorm(3),
        fjax.randn(3, 2),
        match="RMSNorm((3,), eps=None, elementwise_affine=True): expected input of shape (*, 3)",
    )
    _raises(
        nn.BatchNorm2d(3),
        fjax.randn(2, 3, 4),
        match="BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True): "
        "expected 4D input (got 3D input of shape (2, 3, 4))",
    )
    _raises(nn.BatchNorm1d(3), fjax.randn(2, 4), match="expected 3 channels at dim 1, got input of shape (2, 4)")
    _raises(
        nn.GroupNorm(2, 4),
        fjax.randn(2, 6, 3),
        match="GroupNorm(2, 4, eps=1e-05, affine=True, bias=True): expected input of shape (N, 4, *), got (2, 6, 3)",
    )
    with pytest.raises(ValueError, match="num_channels=5 must be divisible by num_groups=2"):
        nn.GroupNorm(2, 5)


def test_embedding():
    _raises(
        nn.Embedding(10, 3),
        fjax.randn(2, 2),
        match="Embedding(10, 3): expected integer indices (int32 or int64), got a fjax.float32 tensor of shape (2, 2)",
    )


def test_multihead_attention():
    mha = nn.MultiheadAttention(8, 2)
    x = fjax.randn(4, 2, 8)
    _raises(
        mha,
        fjax.randn(4, 2, 6),
        x,
        x,
        match="MultiheadAttention(embed_dim=8, num_heads=2, batch_first=False): expected query",
    )
    _raises(
        mha,
        fjax.randn(4, 2, 6),
        x,
        x,
        match="expected query, key and value with last dims (embed_dim, kdim, vdim) = (8, 8, 8), "
        "got shapes (4, 2, 6), (4, 2, 8) and (4, 2, 8)",
    )
    _raises(mha, x, x, x, attn_mask=fjax.zeros(4, 3), match="the 2D attn_mask should be (4, 4), got (4, 3)")
    _raises(mha, x, x, x, attn_mask=fjax.zeros(3, 4, 4), match="the 3D attn_mask should be (4, 4, 4), got (3, 4, 4)")
    _raises(
        mha,
        x,
        x,
        x,
        key_padding_mask=fjax.zeros(4, 2, dtype=fjax.bool),
        match="expected key_padding_mask of shape (2, 4), got (4, 2)",
    )
    _raises(mha, x, fjax.randn(5, 3, 8), fjax.randn(5, 3, 8), match="must match query (4, 2, 8) in batch size")
    _raises(
        mha,
        x,
        x,
        x,
        attn_mask=fjax.zeros(4, 4, dtype=fjax.int64),
        match="only bool and floating types of attn_mask are supported, got fjax.int64",
    )
    _raises(mha, x, x, x, is_causal=True, match="is_causal=True needs attn_mask")
    with pytest.raises(ValueError, match="embed_dim=10 must be divisible by num_heads=3"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="activation should be relu/gelu, not swish"):
        nn.TransformerEncoderLayer(8, 2, activation="swish")
