"""Embedding against torch: lookup, padding_idx gradient, from_pretrained."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax
from fjax import nn

from ..helper import check_module, close, rng


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding(padding_idx):
    idx = rng().integers(0, 7, (3, 5))
    idx[0, :2] = [2, 6]  # make sure the padding row is looked up
    fj, th = nn.Embedding(7, 4, padding_idx=padding_idx), torch.nn.Embedding(7, 4, padding_idx=padding_idx)
    assert repr(fj) == repr(th)
    check_module(fj, th, [idx])


def test_embedding_padding_row_initialised_to_zero():
    emb = nn.Embedding(6, 3, padding_idx=4)
    assert float(emb.weight[4].abs().sum()) == 0.0


def test_from_pretrained():
    w = rng().standard_normal((5, 3)).astype(np.float32)
    fj = nn.Embedding.from_pretrained(fjax.tensor(w))
    th = torch.nn.Embedding.from_pretrained(torch.from_numpy(w))
    assert not fj.weight.requires_grad
    idx = np.array([[0, 4], [2, 2]])
    close(fj(fjax.tensor(idx)), th(torch.from_numpy(idx)), "from_pretrained lookup", 0, 0)
    assert nn.Embedding.from_pretrained(fjax.tensor(w), freeze=False).weight.requires_grad


def test_unsupported_arguments():
    with pytest.raises(NotImplementedError, match="max_norm"):
        nn.Embedding(5, 3, max_norm=1.0)
    with pytest.raises(NotImplementedError, match="sparse"):
        nn.Embedding(5, 3, sparse=True)
