"""nn.functional wrappers and ATen-level ops whose behaviour the op-table oracle does not see:
random draws, in-place running statistics, argument forms (lists for lengths), edge shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fjax
import fjax._toplevel as top
import fjax.nn.functional as F

from .helper import SEED, close, rng


def _both(x, dtype=np.float32):
    x = np.asarray(x, dtype)
    return fjax.tensor(x), torch.from_numpy(x.copy())


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_draws_its_samples(nd):
    a, b = _both(rng().standard_normal((2, 3) + (7,) * nd))
    out, idx = getattr(F, f"fractional_max_pool{nd}d")(a, 2, output_size=3, return_indices=True)
    ref, ref_idx = getattr(TF, f"fractional_max_pool{nd}d")(b, 2, output_size=3, return_indices=True)
    assert out.shape == ref.shape and idx.dtype == fjax.int64
    picked = a.reshape(2, 3, -1).gather(2, idx.reshape(2, 3, -1)).reshape(out.shape)
    close(out, picked, "pooled values are the input at the indices", 0, 0)
    unbatched = getattr(F, f"fractional_max_pool{nd}d")(a[0], 2, output_ratio=(0.5,) * nd)
    assert unbatched.shape == (3,) + (3,) * nd


def test_max_unpool_rejects_bad_indices_and_sizes():
    x = fjax.ones(1, 1, 2)
    with pytest.raises(IndexError, match="max_unpool1d: index 9"):
        F.max_unpool1d(x, fjax.tensor([[[0, 9]]]), 2)
    with pytest.raises(ValueError, match="output_size"):
        F.max_unpool1d(x, fjax.tensor([[[0, 3]]]), 2, output_size=[7])


def test_max_pool2d_with_indices():
    a, b = _both(rng().standard_normal((2, 3, 6, 7)))
    for mine, theirs in zip(F.max_pool2d_with_indices(a, 3, 2, 1), TF.max_pool2d_with_indices(b, 3, 2, 1)):
        close(mine, theirs, "max_pool2d_with_indices", 0, 0)


@pytest.mark.parametrize("name", ["native_batch_norm", "_native_batch_norm_legit"])
def test_native_batch_norm_updates_running_stats(name):
    x, tx = _both(rng().standard_normal((4, 3, 5)))
    (rm, trm), (rv, trv) = _both(rng(1).standard_normal(3)), _both(rng(2).uniform(0.5, 2, 3))
    outs = getattr(top, name)(x, None, None, rm, rv, True, 0.3, 1e-5)
    refs = getattr(torch, name)(tx, None, None, trm, trv, True, 0.3, 1e-5)
    for i, (mine, theirs) in enumerate(zip(outs, refs)):
        close(mine, theirs, f"{name} output {i}", 1e-5, 1e-5)
    close(rm, trm, f"{name} running_mean", 1e-5, 1e-6)
    close(rv, trv, f"{name} running_var", 1e-5, 1e-6)
    out, mean, invstd = top._native_batch_norm_legit(x, None, None, True, 0.3, 1e-5)
    assert mean.shape == (3,) and invstd.shape == (3,)
    *_, reserve = top._batch_norm_with_update(x, None, None, rm, rv, 0.3, 1e-5)
    assert reserve.shape == (0,) and reserve.dtype == fjax.uint8


def test_batch_norm_of_an_empty_input_is_empty():
    rm, rv = fjax.zeros(3), fjax.ones(3)
    assert F.batch_norm(fjax.zeros(0), None, None, training=True).shape == (0,)
    assert F.batch_norm(fjax.zeros(0, 3, 2), rm, rv, training=True).shape == (0, 3, 2)
    assert rm.tolist() == [0.0] * 3 and rv.tolist() == [1.0] * 3  # torch leaves them too


def test_unfold_of_an_empty_batch():
    x = fjax.zeros(0, 1, 5, 5, requires_grad=True)
    assert F.unfold(x, 2, 1, 1, (1, 2)).shape == TF.unfold(torch.zeros(0, 1, 5, 5), 2, 1, 1, (1, 2)).shape


def test_cosine_similarity_of_0d_inputs():
    assert F.cosine_similarity(fjax.tensor(2.0), fjax.tensor(-3.0), dim=0).item() == -1.0


def test_scaled_dot_product_attention_dropout():
    fjax.manual_seed(SEED)
    q, k = fjax.zeros(1, 4), fjax.zeros(4000, 4)
    weights = F.scaled_dot_product_attention(q, k, fjax.eye(4000), dropout_p=0.25)  # each kept weight: 1/4000/0.75
    kept = (weights != 0).float().mean().item()
    assert abs(kept - 0.75) < 0.03, f"kept fraction {kept} (seed={SEED})"
    assert np.allclose(weights[weights != 0].numpy(), 1 / 4000 / 0.75)
    with pytest.raises(ValueError, match="dropout probability"):
        F.scaled_dot_product_attention(q, k, k, dropout_p=1.5)


def test_ctc_loss_takes_lists_and_reductions():
    lp, tlp = _both(np.log(rng().dirichlet(np.ones(5), (8, 2))))
    targets, ttargets = _both(rng(1).integers(1, 5, (2, 3)), np.int64)
    for reduction in ("mean", "sum", "none"):
        mine = F.ctc_loss(lp, targets, [8, 6], [3, 2], reduction=reduction)
        close(mine, TF.ctc_loss(tlp, ttargets, [8, 6], [3, 2], reduction=reduction), reduction, 1e-5, 1e-5)


@pytest.mark.filterwarnings("ignore:`nn.functional.upsample")  # torch deprecates the wrappers
def test_upsample_wrappers_and_antialias():
    a, b = _both(rng().standard_normal((2, 3, 9, 8)))
    close(F.upsample_bilinear(a, scale_factor=1.5), TF.upsample_bilinear(b, scale_factor=1.5), "bilinear", 1e-5, 1e-5)
    close(F.upsample_nearest(a, size=[4, 5]), TF.upsample_nearest(b, size=[4, 5]), "nearest", 0, 0)
    mine, theirs = F.upsample(a, size=[4, 5], mode="bicubic"), TF.upsample(b, size=[4, 5], mode="bicubic")
    close(mine, theirs, "bicubic", 1e-5, 1e-5)
    close(F.interpolate(a, size=(3, 5), mode="bilinear", antialias=True),
          TF.interpolate(b, size=(3, 5), mode="bilinear", antialias=True), "antialias", 1e-5, 1e-6)  # fmt: skip
    with pytest.raises(NotImplementedError, match="antialias"):
        F.interpolate(a, size=(3, 5), mode="bicubic", antialias=True)


def test_embedding_bag_rejects_unsupported_arguments():
    w = fjax.ones(5, 2)
    with pytest.raises(NotImplementedError, match="max_norm"):
        F.embedding_bag(fjax.tensor([[0, 1]]), w, max_norm=1.0)
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        F.embedding_bag(fjax.tensor([[0, 1]]), w, mode="max", per_sample_weights=fjax.ones(1, 2))


def test_linear_cross_entropy_matches_its_reference():
    x, tx = _both(rng().standard_normal((6, 4)))
    w, tw = _both(rng(1).standard_normal((5, 4)))
    t, tt = _both(rng(2).integers(0, 5, 6), np.int64)
    kwargs = dict(reduction="sum", label_smoothing=0.1)
    close(F.linear_cross_entropy(x, w, t, **kwargs), TF.linear_cross_entropy(tx, tw, tt, **kwargs), "lce", 1e-5, 1e-5)


def test_pooling_layer_twins_match_torch():
    # fjax.nn.modules.pooling: nn/modules/__init__ does not list these layers yet
    from fjax.nn.modules import pooling

    a, b = _both(rng().standard_normal((2, 3, 6, 7)))
    out, idx = pooling.AdaptiveMaxPool3d((2, 3, 4), return_indices=True)(a.unsqueeze(0))
    ref, ref_idx = torch.nn.AdaptiveMaxPool3d((2, 3, 4), return_indices=True)(b.unsqueeze(0))
    close(out, ref, "AdaptiveMaxPool3d", 0, 0)
    close(idx, ref_idx, "AdaptiveMaxPool3d indices", 0, 0)
    pooled, indices = F.max_pool2d(a, 2, return_indices=True)
    ref_pooled, ref_indices = TF.max_pool2d(b, 2, return_indices=True)
    unpooled = pooling.MaxUnpool2d(2)(pooled, indices, output_size=[6, 7])
    close(unpooled, torch.nn.MaxUnpool2d(2)(ref_pooled, ref_indices, output_size=[6, 7]), "MaxUnpool2d", 0, 0)
    samples = fjax.rand(2, 3, 2)
    mine = pooling.FractionalMaxPool2d(2, output_size=(3, 4), _random_samples=samples)(a)
    theirs = torch.nn.FractionalMaxPool2d(2, output_size=(3, 4), _random_samples=torch.from_numpy(samples.numpy()))(b)
    close(mine, theirs, "FractionalMaxPool2d", 0, 0)
