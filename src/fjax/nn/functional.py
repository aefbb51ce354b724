"""Tensor-level ``torch.nn.functional``: the op table's nn ops, plus wrappers where torch's API
differs from the pure op (``inplace=``, dropout's random key, batch_norm's running statistics).

Example::

    >>> import fjax.nn.functional as F
    >>> F.relu(fjax.tensor([-1.0, 2.0]))
    tensor([0., 2.], dtype=fjax.float32)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ..autograd.grad_mode import no_grad
from ..creation import full as _full
from ..dispatch import functions as _F
from ..ops._registry import OPS
from ..ops.nn import batch_norm_stats
from ..random import bernoulli as _bernoulli
from ..random import default_generator
from ..random import rand as _rand
from ..tensor import Tensor

# -- ops whose Tensor-level signature is torch's -------------------------------------------
linear = _F.linear
bilinear = _F.bilinear
conv1d = _F.conv1d
conv2d = _F.conv2d
conv3d = _F.conv3d
conv_transpose1d = _F.conv_transpose1d
conv_transpose2d = _F.conv_transpose2d
conv_transpose3d = _F.conv_transpose3d
unfold = _F.im2col
fold = _F.col2im
avg_pool1d = _F.avg_pool1d
avg_pool2d = _F.avg_pool2d
avg_pool3d = _F.avg_pool3d
max_pool1d = _F.max_pool1d
max_pool2d = _F.max_pool2d
max_pool3d = _F.max_pool3d
adaptive_avg_pool1d = _F.adaptive_avg_pool1d
adaptive_avg_pool2d = _F.adaptive_avg_pool2d
adaptive_avg_pool3d = _F.adaptive_avg_pool3d
adaptive_max_pool1d = _F.adaptive_max_pool1d
adaptive_max_pool2d = _F.adaptive_max_pool2d
layer_norm = _F.layer_norm
group_norm = _F.group_norm
rms_norm = _F.rms_norm


embedding = _F.embedding


pad = _F.pad
interpolate = _F.interpolate
pixel_shuffle = _F.pixel_shuffle
pixel_unshuffle = _F.pixel_unshuffle
normalize = _F.normalize
cosine_similarity = _F.cosine_similarity
pairwise_distance = _F.pairwise_distance
scaled_dot_product_attention = _F.scaled_dot_product_attention

sigmoid = _F.sigmoid
tanh = _F.tanh
gelu = _F.gelu
glu = _F.glu
logsigmoid = _F.logsigmoid
hardshrink = _F.hardshrink
tanhshrink = _F.tanhshrink
softsign = _F.softsign
softplus = _F.softplus
softshrink = _F.softshrink
prelu = _F.prelu

nll_loss = _F.nll_loss
cross_entropy = _F.cross_entropy
mse_loss = _F.mse_loss
l1_loss = _F.l1_loss
smooth_l1_loss = _F.smooth_l1_loss
huber_loss = _F.huber_loss
binary_cross_entropy = _F.binary_cross_entropy
binary_cross_entropy_with_logits = _F.binary_cross_entropy_with_logits
kl_div = _F.kl_div
cosine_embedding_loss = _F.cosine_embedding_loss
margin_ranking_loss = _F.margin_ranking_loss
hinge_embedding_loss = _F.hinge_embedding_loss
soft_margin_loss = _F.soft_margin_loss
multilabel_soft_margin_loss = _F.multilabel_soft_margin_loss
poisson_nll_loss = _F.poisson_nll_loss
gaussian_nll_loss = _F.gaussian_nll_loss
triplet_margin_loss = _F.triplet_margin_loss


# -- activations with torch's ``inplace`` flag ------------------------------------------------
def _with_inplace(name: str):
    """``op(input, ..., inplace=False)``: torch's trailing ``inplace`` (positional or keyword)."""
    op = getattr(_F, name)
    n_params = len(OPS[name].params)

    def fn(*args, inplace: bool = False, **kwargs):
        if len(args) > n_params:
            args, inplace = args[:n_params], args[n_params]
        out = op(*args, **kwargs)
        if not inplace:
            return out
        return (args[0] if args else kwargs["input"])._set_(out, name + "_")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{op.__doc__}\n\n``inplace=True`` writes the result into ``input``."
    return fn


def _inplace_alias(fn):
    def fn_(*args, **kwargs):
        return fn(*args, inplace=True, **kwargs)

    fn_.__name__ = fn_.__qualname__ = fn.__name__ + "_"
    fn_.__doc__ = f"In-place ``{fn.__name__}``."
    return fn_


relu = _with_inplace("relu")
relu6 = _with_inplace("relu6")
elu = _with_inplace("elu")
selu = _with_inplace("selu")
celu = _with_inplace("celu")
leaky_relu = _with_inplace("leaky_relu")
hardtanh = _with_inplace("hardtanh")
threshold = _with_inplace("threshold")
hardsigmoid = _with_inplace("hardsigmoid")
hardswish = _with_inplace("hardswish")
silu = _with_inplace("silu")
mish = _with_inplace("mish")
relu_ = _inplace_alias(relu)
elu_ = _inplace_alias(elu)
selu_ = _inplace_alias(selu)
celu_ = _inplace_alias(celu)
leaky_relu_ = _inplace_alias(leaky_relu)
hardtanh_ = _inplace_alias(hardtanh)
threshold_ = _inplace_alias(threshold)


def rrelu(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
) -> Tensor:
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element when training,
    and is ``(lower + upper) / 2`` otherwise."""
    if training:
        slopes = _rand(*input.shape, dtype=input.dtype) * (upper - lower) + lower
        out = _F.where(input > 0, input, input * slopes)
    else:
        out = _F.rrelu(input, lower, upper, False)
    return input._set_(out, "rrelu_") if inplace else out


rrelu_ = _inplace_alias(rrelu)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    return _F.softmax(input, dim, dtype=dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``softmax(-x)`` along ``dim``."""
    return _F.softmin(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably."""
    return _F.log_softmax(input, dim, dtype=dtype)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dim; ``num_classes=-1`` reads ``max + 1`` (a host sync)."""
    if num_classes < 0:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    return _F.one_hot(tensor, num_classes)


# -- dropout ------------------------------------------------------------------------------------
def _check_p(name: str, p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    The mask is drawn from ``fjax.random.default_generator`` (``fjax.manual_seed`` fixes it).
    """
    _check_p("dropout", p)
    if not training or p == 0.0:
        return input
    out = _F.dropout(input, default_generator.next_key(), p, True)
    return input._set_(out, "dropout_") if inplace else out


def _noise(input: Tensor, p: float, feature: bool) -> Tensor:
    """Bernoulli(1 - p) keep-mask: per element, or per (sample, channel) when ``feature``."""
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)
    return _bernoulli(_full(shape, 1.0 - p, dtype=input.dtype))


def _feature_dropout(name: str, input: Tensor, p: float, training: bool, inplace: bool, unbatched_ndim: int | None):
    _check_p(name, p)
    if not training or p == 0.0:
        return input
    if input.ndim < 2:
        raise ValueError(f"{name}: expected an input with a channel dimension, got shape {tuple(input.shape)}")
    x = input.unsqueeze(0) if input.ndim == unbatched_ndim else input
    out = x * 0 if p == 1.0 else x * (_noise(x, p, True) / (1.0 - p))
    if input.ndim == unbatched_ndim:
        out = out.squeeze(0)
    return input._set_(out, name + "_") if inplace else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` input with probability ``p``."""
    if input.ndim not in (2, 3):
        raise ValueError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input")
    return _feature_dropout("dropout1d", input, p, training, inplace, 2)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, H, W)`` input; a 3-d input is taken as ``(N, C, L)``, as torch does."""
    return _feature_dropout("dropout2d", input, p, training, inplace, None)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p``."""
    return _feature_dropout("dropout3d", input, p, training, inplace, 4)


_SELU_ALPHA = 1.7580993408473766  # -selu_scale * selu_alpha, the value SELU saturates at


def _alpha_dropout(name: str, input: Tensor, p: float, training: bool, inplace: bool, feature: bool) -> Tensor:
    _check_p(name, p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0
    else:
        keep = _noise(input, p, feature)
        a = 1.0 / math.sqrt((_SELU_ALPHA**2 * p + 1) * (1 - p))
        out = input * (keep * a) + ((keep - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p)
    return input._set_(out, name + "_") if inplace else out


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalizing mean and variance (dropped values -> -alpha')."""
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """``alpha_dropout`` of whole channels."""
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, True)


# -- normalization with running statistics -------------------------------------------------------
_batch_stats = jax.jit(batch_norm_stats)


@jax.jit
def _instance_stats(x, running_mean, running_var, momentum):
    n, c = x.shape[:2]
    flat = x.reshape((1, n * c) + x.shape[2:])
    mean, var = batch_norm_stats(flat, jnp.tile(running_mean, n), jnp.tile(running_var, n), momentum)
    return mean.reshape(n, c).mean(0), var.reshape(n, c).mean(0)


def _update_running(op: str, stats, input: Tensor, running_mean: Tensor, running_var: Tensor, momentum) -> None:
    if isinstance(momentum, Tensor):  # BatchNorm's cumulative average: 1 / num_batches_tracked
        momentum = momentum._data
    with no_grad():
        mean, var = stats(input._data, running_mean._data, running_var._data, momentum)
        running_mean._set_(Tensor._wrap(mean), op)
        running_var._set_(Tensor._wrap(var), op)


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel (dim 1) by batch statistics (training) or the running ones.

    When training with running buffers, they are updated in place:
    ``running = (1 - momentum) * running + momentum * batch`` (unbiased batch variance).
    """
    if training:
        out = _F.batch_norm(input, None, None, weight, bias, True, momentum, eps)
        if running_mean is not None and running_var is not None:
            _update_running("batch_norm", _batch_stats, input, running_mean, running_var, momentum)
        return out
    return _F.batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel of each sample over its spatial dims (or by running statistics).

    With ``use_input_stats`` and running buffers, the buffers move towards the per-instance
    statistics averaged over the batch, as in torch.
    """
    if not use_input_stats:
        return _F.instance_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    out = _F.instance_norm(input, None, None, weight, bias, True, momentum, eps)
    if running_mean is not None and running_var is not None:
        _update_running("instance_norm", _instance_stats, input, running_mean, running_var, momentum)
    return out
