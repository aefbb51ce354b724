"""Op-table samples: normalization, embedding, dropout, attention, convolution and pooling."""

import numpy as np
import torch
import torch.nn.functional as F_

from .spec import B, D, F, I, S


def _detached(fn):
    """torch's batch/instance norm with running stats as buffers (no grad, private copies)."""

    def call(input, running_mean=None, running_var=None, *args, **kwargs):
        rm = None if running_mean is None else running_mean.detach().clone()
        rv = None if running_var is None else running_var.detach().clone()
        return fn(input, rm, rv, *args, **kwargs)

    return call


def _dropout_cmp(p):
    """Masks differ from torch's: compare the dropped fraction and the scaling of kept values."""

    def check(ours, theirs):
        for out in (ours, theirs):
            frac = np.mean(out == 0)
            assert abs(frac - p) < 0.05, f"dropped fraction {frac}, expected {p}"
        both = (ours != 0) & (theirs != 0)
        np.testing.assert_allclose(ours[both], theirs[both], rtol=1e-5)

    return check


def _dropout_torch(input, seed, p=0.5, training=True):
    return F_.dropout(input, p, training)


# max_unpool indices as max_pool returns them: distinct positions within each (sample, channel)
_UNPOOL_1D = np.broadcast_to(np.arange(4) * 2 + np.array([0, 1, 1, 0]), (2, 3, 4)).copy()
_UNPOOL_2D = np.broadcast_to(np.array([[0, 3, 4], [8 + 8, 11 + 8, 12 + 8]]), (2, 3, 2, 3)).copy()
_UNPOOL_3D = np.broadcast_to(np.array([0, 3, 13, 14, 20, 23, 57, 62]).reshape(2, 2, 2), (1, 2, 2, 2, 2)).copy()


def _fractional_torch(nd):
    """torch's fractional max pooling; its _random_samples take no gradient (fjax's get zeros)."""
    fn = getattr(F_, f"fractional_max_pool{nd}d")

    def call(input, kernel_size, output_size, output_ratio, return_indices, samples):
        return fn(input, kernel_size, output_size, output_ratio, return_indices, samples.detach())

    return call


def _embedding_bag_torch(input, weight, offsets, mode, per_sample_weights=None, last=False, padding_idx=None):
    """F.embedding_bag in the private op's argument order."""
    return F_.embedding_bag(
        input,
        weight,
        offsets,
        mode=mode,
        per_sample_weights=per_sample_weights,
        include_last_offset=last,
        padding_idx=padding_idx,
    )


def _native_batch_norm_torch(input, weight, bias, running_mean, running_var, training, eps):
    """torch.native_batch_norm on private copies of the running buffers (fjax's op reads them only)."""
    rm = None if running_mean is None else running_mean.detach().clone()
    rv = None if running_var is None else running_var.detach().clone()
    return torch.native_batch_norm(input, weight, bias, rm, rv, training, 0.1, eps)


_STAT = F((3,), 0.5, 2.0)
_MEAN = F((3,), -1.0, 1.0)

SAMPLES = {
    "layer_norm": [
        S((3, 4), [4]),
        S((2, 3, 4), [3, 4], (3, 4), (3, 4)),
        S((5, 6), [6], None, (6,)),
        S((2, 5), [5], (5,), eps=1e-3),
        S((0, 4), [4], (4,), (4,)),
    ],
    "rms_norm": [
        S((3, 4), [4]),
        S((2, 3, 4), [3, 4], (3, 4)),
        S((2, 5), [5], (5,), eps=1e-3),
        S((2, 5), [5], eps=1e-6),
    ],
    "group_norm": [
        S((2, 6, 5), 3),
        S((2, 6, 4, 4), 2, (6,), (6,)),
        S((3, 4), 2, (4,), (4,)),
        S((2, 4, 3), 1, eps=1e-3),
    ],
    "instance_norm": [
        S((2, 3, 5)),
        S((2, 3, 4, 4), weight=(3,), bias=(3,)),
        S((2, 3, 5), _MEAN, _STAT, (3,), (3,), use_input_stats=False),
        S((2, 3, 2, 2, 3), eps=1e-3),
    ],
    "batch_norm": [
        S((4, 3), _MEAN, _STAT),
        S((4, 3), _MEAN, _STAT, (3,), (3,), training=True),
        S((2, 3, 5), _MEAN, _STAT, (3,), (3,), False, 0.1, 1e-3),
        S((2, 3, 4, 4), None, None, (3,), (3,), True),
        S((2, 3, 4, 4), _MEAN, _STAT, training=True, momentum=0.3),
    ],
    "native_layer_norm": [
        S((2, 3, 4), [4], (4,), (4,), 1e-5, _torch=torch.native_layer_norm),
        S((2, 3, 4), [3, 4], None, None, 0.5, _torch=torch.native_layer_norm),
    ],
    "native_group_norm": [
        S((2, 6, 3), (6,), (6,), 2, 6, 3, 3, 1e-5, _torch=torch.native_group_norm),
        S((2, 4, 2, 3), None, None, 2, 4, 6, 1, 0.5, _torch=torch.native_group_norm),
    ],
    "_native_batch_norm": [
        S((4, 3), (3,), (3,), None, None, True, 1e-5, _torch=_native_batch_norm_torch),
        S((2, 3, 5), (3,), None, _MEAN, _STAT, False, 1e-3, _torch=_native_batch_norm_torch),
        S((2, 3, 4, 4), None, None, _MEAN, _STAT, True, 0.5, _torch=_native_batch_norm_torch),
    ],
    "native_dropout_backward": [
        S((3, 4), B((3, 4)), 2.0, _torch=torch.ops.aten.native_dropout_backward),
        S((5,), B((5,)), 0.5, _torch=torch.ops.aten.native_dropout_backward),
    ],
    "embedding": [
        S(I((4,), 0, 10), (10, 3)),
        S(I((2, 5), 0, 6), (6, 4), 0),
        S(I((7,), 0, 4), (4, 2), -1),
        S(I((), 0, 5), (5, 3)),
        S(I((3, 4), 0, 3), (3, 2), padding_idx=2),
    ],
    "one_hot": [
        S(I((5,), 0, 4), 4, _grad=False),
        S(I((2, 3), 0, 6), num_classes=6, _grad=False),
        S(I((), 0, 3), 3, _grad=False),
    ],
    "dropout": [
        S((100, 100), 0, 0.5, _grad=False, _torch=_dropout_torch, _cmp=_dropout_cmp(0.5)),
        S((50, 40), 7, p=0.2, _grad=False, _torch=_dropout_torch, _cmp=_dropout_cmp(0.2)),
        S((3, 4), 1, 0.5, False, _torch=_dropout_torch),
        S((3, 4), 1, 0.0, _torch=_dropout_torch),
        S((3, 4), 1, 1.0, _torch=_dropout_torch),
    ],
    "scaled_dot_product_attention": [
        S((2, 3, 4), (2, 5, 4), (2, 5, 6)),
        S((2, 2, 3, 4), (2, 2, 3, 4), (2, 2, 3, 4), is_causal=True),
        S((2, 3, 4), (2, 5, 4), (2, 5, 6), B((3, 5))),
        S((2, 3, 4), (2, 5, 4), (2, 5, 6), (2, 3, 5)),
        S((3, 4), (5, 4), (5, 2), scale=0.3),
        S((1, 4, 3, 8), (1, 2, 5, 8), (1, 2, 5, 8), enable_gqa=True),
        S((2, 4, 4), (2, 6, 4), (2, 6, 3), attn_mask=B((4, 6)), scale=1.0),
    ],
    "pixel_shuffle": [S((2, 8, 3, 3), 2), S((9, 2, 2), 3), S((1, 2, 4, 3, 2), 2)],
    "pixel_unshuffle": [S((2, 2, 4, 6), 2), S((1, 6, 6), 3), S((1, 2, 1, 4, 2), 2)],
    "channel_shuffle": [S((2, 6, 3, 3), 3), S((1, 4, 5), 2), S((2, 6, 2, 2, 2), 2)],
    "native_channel_shuffle": [S((2, 6, 3, 3), 2, _torch=torch.native_channel_shuffle, _grad=False)],
    "local_response_norm": [
        S((2, 6, 3), 2),
        S((2, 5, 4, 4), 3, alpha=1e-2, beta=0.5, k=2.0),
        S((1, 4, 2, 3, 3), 4, 0.1, 1.0, 1.5),
    ],
    "conv1d": [
        S((2, 3, 9), (4, 3, 3)),
        S((2, 3, 9), (4, 3, 3), (4,), 2, 1),
        S((3, 10), (2, 3, 4)),
        S((2, 4, 11), (6, 2, 3), (6,), stride=2, padding=2, dilation=2, groups=2),
        S((2, 3, 8), (4, 3, 4), padding="same"),
        S((2, 3, 8), (4, 3, 3), padding="valid", dilation=2),
        S((1, 2, 7), (2, 2, 3), padding="same", dilation=2),
    ],
    "conv2d": [
        S((2, 3, 6, 5), (4, 3, 3, 3)),
        S((2, 3, 7, 7), (4, 3, 3, 2), (4,), [2, 1], [1, 0]),
        S((3, 5, 5), (2, 3, 2, 2)),
        S((2, 4, 8, 8), (4, 1, 3, 3), (4,), padding="same", groups=4),
        S((1, 4, 9, 9), (6, 2, 3, 3), stride=2, padding=1, dilation=[2, 1], groups=2),
    ],
    "conv3d": [
        S((1, 2, 4, 5, 5), (3, 2, 2, 3, 3)),
        S((2, 2, 5, 5, 5), (4, 1, 3, 3, 3), (4,), 2, 1, 1, 2),
        S((2, 4, 4, 4), (2, 2, 3, 3, 3), padding="same"),
    ],
    "conv_transpose1d": [
        S((2, 3, 5), (3, 4, 3)),
        S((2, 3, 5), (3, 2, 3), (2,), 2, 1, 1),
        S((3, 6), (3, 2, 4)),
        S((2, 4, 5), (4, 3, 3), (6,), stride=3, padding=2, output_padding=1, groups=2, dilation=2),
    ],
    "conv_transpose2d": [
        S((2, 3, 4, 5), (3, 2, 3, 3)),
        S((2, 4, 3, 3), (4, 2, 3, 2), (4,), 2, 1, [1, 0], 2),
        S((3, 3, 4), (3, 2, 2, 2), stride=2),
        S((1, 2, 4, 4), (2, 3, 3, 3), dilation=2, padding=[1, 2]),
    ],
    "conv_transpose3d": [S((1, 2, 3, 3, 3), (2, 3, 2, 2, 2)), S((1, 2, 3, 4, 3), (2, 2, 3, 3, 3), (2,), 2, 1, 1)],
    "im2col": [
        S((2, 3, 5, 6), 2, _torch=F_.unfold),
        S((2, 3, 6, 6), [3, 2], 1, 1, 2, _torch=F_.unfold),
        S((2, 5, 5), 3, dilation=2, padding=1, _torch=F_.unfold),
    ],
    "col2im": [
        S((2, 12, 20), [5, 6], 2, _torch=F_.fold),
        S((2, 18, 12), [6, 6], [3, 2], 1, 1, 2, _torch=F_.fold),
        S((45, 9), [5, 5], 3, dilation=2, padding=1, _torch=F_.fold),
    ],
    "max_pool1d": [
        S((2, 3, 9), 3),
        S((2, 3, 9), 3, 2, 1),
        S((3, 10), 4, ceil_mode=True, stride=3),
        S((2, 3, 10), 3, 2, 1, 2, True),
        S((2, 3, 9), 2, return_indices=True),
        S((2, 2, 11), 3, 2, 1, 2, True, True),
    ],
    "max_pool2d": [
        S((2, 3, 6, 6), 2),
        S((2, 3, 7, 6), [3, 2], [2, 1], 1),
        S((3, 7, 7), 3, 2, ceil_mode=True),
        S((2, 3, 9, 9), 3, 2, 1, 2),
        S((2, 3, 6, 7), 2, return_indices=True),
        S((1, 2, 9, 8), 3, 2, 1, [2, 1], True, True),
    ],
    "max_pool3d": [
        S((1, 2, 4, 4, 4), 2),
        S((1, 2, 5, 6, 5), 3, 2, 1, ceil_mode=True),
        S((1, 2, 4, 4, 4), 2, return_indices=True),
    ],
    "avg_pool1d": [
        S((2, 3, 9), 3),
        S((2, 3, 9), 3, 2, 1),
        S((3, 10), 4, 3, ceil_mode=True),
        S((2, 3, 10), 3, 2, 1, True, False),
        S((2, 3, 11), 4, 3, 2, count_include_pad=False),
    ],
    "avg_pool2d": [
        S((2, 3, 6, 6), 2),
        S((2, 3, 7, 6), [3, 2], [2, 1], 1),
        S((3, 7, 7), 3, 2, ceil_mode=True),
        S((2, 3, 9, 8), 3, 2, 1, True, False),
        S((2, 3, 6, 6), 3, 2, 1, divisor_override=4),
        S((1, 2, 8, 7), 3, 3, 1, True, True),
    ],
    "avg_pool3d": [
        S((1, 2, 4, 4, 4), 2),
        S((1, 2, 5, 6, 5), 3, 2, 1, ceil_mode=True, count_include_pad=False),
        S((1, 2, 4, 4, 4), 2, divisor_override=3),
    ],
    "adaptive_avg_pool1d": [S((2, 3, 10), 4), S((3, 7), 7), S((2, 3, 5), 8), S((2, 3, 9), 1)],
    "adaptive_avg_pool2d": [
        S((2, 3, 7, 9), [3, 4]),
        S((3, 6, 6), 2),
        S((2, 3, 5, 7), [None, 3]),
        S((1, 2, 4, 4), [6, 5]),
    ],
    "adaptive_avg_pool3d": [S((1, 2, 5, 6, 7), [2, 3, 4]), S((1, 2, 4, 4, 4), 1)],
    "adaptive_max_pool1d": [S((2, 3, 10), 4), S((3, 7), 3), S((2, 3, 9), 4, True)],
    "adaptive_max_pool2d": [
        S((2, 3, 7, 9), [3, 4]),
        S((3, 6, 6), 2),
        S((2, 3, 5, 7), [None, 3], True),
        S((1, 2, 4, 4), [6, 5], return_indices=True),
    ],
    "adaptive_max_pool3d": [S((1, 2, 5, 6, 7), [2, 3, 4]), S((2, 4, 4, 4), [3, None, 2], True)],
    "max_unpool1d": [
        S((2, 3, 4), _UNPOOL_1D, 2),
        S((3, 4), _UNPOOL_1D[0], 2, output_size=[9]),
        S((2, 3, 4), _UNPOOL_1D + 1, 3, 2, 1, [2, 3, 8]),
    ],
    "max_unpool2d": [
        S((2, 3, 2, 3), _UNPOOL_2D, 2),
        S((2, 3, 2, 3), _UNPOOL_2D, 2, output_size=[5, 7]),
        S((3, 2, 3), _UNPOOL_2D[0], [3, 2], [2, 2]),
    ],
    "max_unpool3d": [S((1, 2, 2, 2, 2), _UNPOOL_3D, 2), S((2, 2, 2, 2), _UNPOOL_3D[0], 2, output_size=[5, 4, 5])],
    "fractional_max_pool2d": [
        S((2, 3, 9, 9), 3, 4, None, False, F((2, 3, 2), 0.0, 1.0)),
        S((2, 3, 9, 7), [2, 3], None, [0.5, 0.6], False, F((2, 3, 2), 0.0, 1.0)),
        S((3, 8, 8), 2, [3, 5], None, True, F((1, 3, 2), 0.0, 1.0)),
    ],
    "fractional_max_pool3d": [
        S((2, 2, 5, 6, 7), 2, [3, 4, 2], None, False, F((2, 2, 3), 0.0, 1.0)),
        S((2, 5, 5, 6), [2, 1, 3], None, [0.5, 0.5, 0.5], True, F((1, 2, 3), 0.0, 1.0)),
    ],
    "grid_sampler": [
        S((2, 3, 5, 6), F((2, 4, 3, 2), -1.2, 1.2), 0, 0, False, _torch=torch.grid_sampler),
        S((1, 2, 3, 4, 5), F((1, 2, 3, 2, 3), -1.2, 1.2), 1, 1, True, _torch=torch.grid_sampler, _grad=False),
    ],
    "grid_sampler_2d": [  # _torch: torch.grid_sampler_2d (set below)
        S((2, 3, 5, 6), F((2, 4, 3, 2), -1.2, 1.2), 0, 0, False),
        S((2, 3, 5, 6), F((2, 4, 3, 2), -1.5, 1.5), 0, 1, True),
        S((2, 3, 5, 6), F((2, 4, 3, 2), -2.5, 2.5), 0, 2, False),
        S((2, 3, 5, 6), F((2, 4, 3, 2), -2.5, 2.5), 0, 2, True),
        S((2, 3, 5, 6), F((2, 4, 3, 2), -1.2, 1.2), 1, 0, False, _grad=False),
        S((2, 3, 5, 6), F((2, 4, 3, 2), -1.2, 1.2), 2, 0, False),
        S((2, 3, 5, 6), F((2, 4, 3, 2), -1.5, 1.5), 2, 1, True),
        S((2, 3, 5, 6), F((2, 4, 3, 2), -2.5, 2.5), 2, 2, False),
    ],
    "grid_sampler_3d": [
        S((2, 3, 4, 5, 6), F((2, 3, 2, 2, 3), -1.2, 1.2), 0, 0, False),
        S((1, 2, 4, 5, 3), F((1, 2, 3, 2, 3), -2.5, 2.5), 0, 2, True),
        S((1, 2, 4, 5, 3), F((1, 2, 3, 2, 3), -1.5, 1.5), 1, 1, False, _grad=False),
    ],
    "_embedding_bag": [
        S(I((6,), 0, 5), (5, 3), np.array([0, 2, 2]), "sum", F((6,), 0.5, 1.5), _torch=_embedding_bag_torch),
        S(I((3, 4), 0, 5), (5, 3), None, "mean", None, False, 1, _torch=_embedding_bag_torch),
        S(I((6,), 0, 5), (5, 3), np.array([0, 1, 4, 6]), "max", None, True, _torch=_embedding_bag_torch),
    ],
    "_upsample_bilinear2d_aa": [
        S((2, 3, 10, 12), [4, 5], False, _torch=torch.ops.aten._upsample_bilinear2d_aa),
        S((2, 3, 6, 8), [9, 5], True, _torch=torch.ops.aten._upsample_bilinear2d_aa),
        S((1, 2, 10, 12), None, False, [0.3, 1.6], _torch=torch.ops.aten._upsample_bilinear2d_aa),
        S((1, 2, 10, 12), [3, 19], False, scales_h=0.3, scales_w=1.6, _torch=torch.ops.aten._upsample_bilinear2d_aa),
    ],
    "interpolate": [
        S((2, 3, 5), 8),
        S((2, 3, 5, 4), [7, 9]),
        S((2, 3, 4, 4), scale_factor=2),
        S((2, 3, 7, 6), scale_factor=0.5),
        S((1, 2, 5, 7), scale_factor=[1.7, 0.6]),
        S((1, 2, 3, 4, 5), [5, 6, 4]),
        S((2, 3, 5), 8, mode="linear"),
        S((2, 3, 9), 4, mode="linear", align_corners=True),
        S((2, 3, 5, 4), [7, 9], mode="bilinear"),
        S((2, 3, 5, 4), [7, 3], mode="bilinear", align_corners=True),
        S((2, 3, 5, 6), scale_factor=1.5, mode="bilinear"),
        S((2, 3, 5, 6), scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
        S((2, 3, 5, 4), [8, 9], mode="bicubic"),
        S((1, 2, 6, 6), [4, 9], mode="bicubic", align_corners=True),
        S((1, 2, 6, 7), scale_factor=[0.7, 1.3], mode="bicubic"),
        S((1, 2, 3, 4, 5), [5, 6, 4], mode="trilinear"),
        S((1, 2, 3, 4, 5), scale_factor=2, mode="trilinear", align_corners=True),
        S((2, 3, 7, 5), [4, 8], mode="nearest-exact"),
        S((2, 3, 7, 9), [3, 4], mode="area"),
        S((2, 3, 5, 5), [1, 1], mode="bilinear", align_corners=True),
        S(D(I((1, 2, 3, 3), 0, 9), "uint8"), scale_factor=2, _grad=False),
        S((2, 3, 9, 8), [4, 11], mode="bilinear", antialias=True),
        S((2, 3, 9, 8), scale_factor=0.4, mode="bilinear", align_corners=True, antialias=True),
    ],
}

for _nd in (2, 3):
    for _case in SAMPLES[f"grid_sampler_{_nd}d"]:
        _case.options.setdefault("_torch", getattr(torch, f"grid_sampler_{_nd}d"))
    for _case in SAMPLES[f"fractional_max_pool{_nd}d"]:
        _case.options["_torch"] = _fractional_torch(_nd)
for _name in ("batch_norm", "instance_norm"):
    for _case in SAMPLES[_name]:
        _case.options.setdefault("_torch", _detached(getattr(F_, _name)))
for _name, _cases in SAMPLES.items():
    for _case in _cases:
        if "_torch" not in _case.options:
            _case.options["_torch"] = getattr(F_, _name)
