"""Names that were pending in the public surface, against torch: ``torch.embedding_bag`` (ATen's form, four
outputs), ``torch.istft`` / ``Tensor.istft`` and the functional RNN entry points."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def _close(a, b, tol=1e-5):
    assert tuple(a.shape) == tuple(b.shape), (tuple(a.shape), tuple(b.shape))
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


# -- embedding_bag ---------------------------------------------------------------------------------


def _bags(seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((10, 3)).astype(dtype)
    idx = rng.integers(0, 10, 9)
    idx[4:6] = 2  # a padding candidate, repeated
    return w, idx, np.array([0, 4, 4, 6])  # bag 1 empty


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_bag_outputs(mode, padding_idx):
    w, idx, offs = _bags(mode + 3 * abs(padding_idx or 0))
    tw, fw = torch.tensor(w, requires_grad=True), fjax.tensor(w, requires_grad=True)
    args = (False, mode, False, None, False, padding_idx)
    ref = torch.embedding_bag(tw, torch.tensor(idx), torch.tensor(offs), *args)
    out = fjax.embedding_bag(fw, fjax.tensor(idx), fjax.tensor(offs), *args)
    assert isinstance(out, tuple) and len(out) == 4
    for o, r in zip(out, ref):
        _close(o, r)
        assert str(o.dtype).split(".")[-1] == str(r.dtype).split(".")[-1]
    g = np.random.default_rng(1).standard_normal(tuple(ref[0].shape)).astype(np.float32)
    ref[0].backward(torch.tensor(g))
    out[0].backward(fjax.tensor(g))
    _close(fw.grad, tw.grad)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_include_last_offset_and_float64(mode):
    w, idx, _ = _bags(7, np.float64)
    offs = np.array([0, 3, 5, 9])
    ref = torch.embedding_bag(torch.tensor(w), torch.tensor(idx), torch.tensor(offs), False, mode, False, None, True)
    out = fjax.embedding_bag(fjax.tensor(w), fjax.tensor(idx), fjax.tensor(offs), False, mode, False, None, True)
    for o, r in zip(out, ref):
        _close(o, r)


def test_embedding_bag_per_sample_weights_keywords():
    w, idx, offs = _bags(11)
    psw = np.random.default_rng(2).random(idx.shape).astype(np.float32)
    tp, fp = torch.tensor(psw, requires_grad=True), fjax.tensor(psw, requires_grad=True)
    ref = torch.embedding_bag(torch.tensor(w), torch.tensor(idx), torch.tensor(offs), mode=0, per_sample_weights=tp)
    out = fjax.embedding_bag(
        weight=fjax.tensor(w), indices=fjax.tensor(idx), offsets=fjax.tensor(offs), mode=0, per_sample_weights=fp
    )
    for o, r in zip(out, ref):
        _close(o, r)
    ref[0].sum().backward()
    out[0].sum().backward()
    _close(fp.grad, tp.grad)


def test_embedding_bag_errors():
    w = fjax.randn(4, 2)
    with pytest.raises(ValueError, match="embedding_bag: mode"):
        fjax.embedding_bag(w, fjax.tensor([0, 1]), fjax.tensor([0]), mode=3)
    with pytest.raises(TypeError, match="embedding_bag: offsets"):
        fjax.embedding_bag(w, fjax.tensor([0, 1]), None)
    with pytest.raises(NotImplementedError, match="scale_grad_by_freq"):
        fjax.embedding_bag(w, fjax.tensor([0, 1]), fjax.tensor([0]), True)
