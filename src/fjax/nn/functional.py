"""Tensor-level ``torch.nn.functional``: the op table's nn ops, plus wrappers where torch's API
differs from the pure op (``inplace=``, dropout's random key, batch_norm's running statistics).

Example::

    >>> import fjax.nn.functional as F
    >>> F.relu(fjax.tensor([-1.0, 2.0]))
    tensor([0., 2.], dtype=fjax.float32)
"""

from __future__ import annotations

import inspect
import math

import jax
import jax.numpy as jnp

from ..autograd.grad_mode import no_grad
from ..creation import full as _full
from ..dispatch import functions as _F
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
    sig = inspect.signature(op)
    inplace_param = inspect.Parameter("inplace", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=False)
    sig = sig.replace(parameters=[*sig.parameters.values(), inplace_param])

    n_params = len(sig.parameters) - 1

    def fn(*args, **kwargs):
        inplace = kwargs.pop("inplace", False) if kwargs else False
        if len(args) > n_params:
            if len(args) > n_params + 1 or "inplace" in kwargs:
                sig.bind(*args, **kwargs)  # raises torch's TypeError for the extra argument
            args, inplace = args[:n_params], args[n_params]
        out = op(*args, **kwargs)
        return (args[0] if args else kwargs["input"])._set_(out, name + "_") if inplace else out

    fn.__name__ = fn.__qualname__ = name
    fn.__signature__ = sig
    fn.__doc__ = f"{op.__doc__}\n\n``inplace=True`` writes the result into ``input``."
    return fn


# Examples of the in-place aliases (``relu_`` ...), appended to their docstrings.
_INPLACE_EXAMPLES = {
    "relu_": """
    >>> x = fjax.tensor([-1.0, 2.0])
    >>> F.relu_(x) is x
    True
    >>> x
    tensor([0., 2.], dtype=fjax.float32)""",
    "elu_": """
    >>> x = fjax.tensor([-1.0, 2.0])
    >>> _ = F.elu_(x)
    >>> x
    tensor([-0.6321,  2.0000], dtype=fjax.float32)""",
    "selu_": """
    >>> x = fjax.tensor([-1.0, 2.0])
    >>> _ = F.selu_(x)
    >>> x
    tensor([-1.1113,  2.1014], dtype=fjax.float32)""",
    "celu_": """
    >>> x = fjax.tensor([-1.0, 2.0])
    >>> _ = F.celu_(x, alpha=2.0)
    >>> x
    tensor([-0.7869,  2.0000], dtype=fjax.float32)""",
    "leaky_relu_": """
    >>> x = fjax.tensor([-1.0, 2.0])
    >>> _ = F.leaky_relu_(x, 0.5)
    >>> x
    tensor([-0.5000,  2.0000], dtype=fjax.float32)""",
    "hardtanh_": """
    >>> x = fjax.tensor([-2.0, 0.5, 3.0])
    >>> _ = F.hardtanh_(x)
    >>> x
    tensor([-1.0000,  0.5000,  1.0000], dtype=fjax.float32)""",
    "threshold_": """
    >>> x = fjax.tensor([0.5, 1.0, 2.0])
    >>> _ = F.threshold_(x, 1.0, 0.0)
    >>> x
    tensor([0., 0., 2.], dtype=fjax.float32)""",
    "rrelu_": """
    >>> x = fjax.tensor([-3.0, 2.0])
    >>> _ = F.rrelu_(x, 0.1, 0.3)
    >>> x
    tensor([-0.6000,  2.0000], dtype=fjax.float32)""",
}


def _inplace_alias(fn):
    def fn_(*args, **kwargs):
        return fn(*args, inplace=True, **kwargs)

    fn_.__name__ = fn_.__qualname__ = fn.__name__ + "_"
    sig = inspect.signature(fn)
    fn_.__signature__ = sig.replace(parameters=[q for q in sig.parameters.values() if q.name != "inplace"])
    fn_.__doc__ = (
        f"In-place ``{fn.__name__}``: ``{fn.__name__}(input, ..., inplace=True)``, which overwrites "
        f"``input`` with the result and returns ``input`` itself.\n\nExample::\n{_INPLACE_EXAMPLES[fn_.__name__]}\n"
    )
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
    """Randomized leaky ReLU: ``input`` where it is positive, else ``input * slope``.

    When ``training``, each element draws its own ``slope`` uniformly from ``[lower, upper]``
    (from the default generator); otherwise the slope is the fixed ``(lower + upper) / 2``.
    ``training`` defaults to False, as in torch's functional form.

    Example::

        >>> F.rrelu(fjax.tensor([-3.0, 2.0]))
        tensor([-0.6875,  2.0000], dtype=fjax.float32)
        >>> _ = fjax.manual_seed(0)
        >>> y = F.rrelu(fjax.tensor([-3.0, -3.0]), 0.1, 0.3, training=True)
        >>> bool(((y >= -0.9) & (y <= -0.3)).all())
        True
    """
    if training:
        slopes = _rand(*input.shape, dtype=input.dtype) * (upper - lower) + lower
        out = _F.where(input > 0, input, input * slopes)
    else:
        out = _F.rrelu(input, lower, upper, False)
    return input._set_(out, "rrelu_") if inplace else out


rrelu_ = _inplace_alias(rrelu)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Softmax along ``dim``: ``exp(x) / exp(x).sum(dim, keepdim=True)``, computed stably (the
    maximum is subtracted first), so each slice along ``dim`` is positive and sums to 1.

    Give ``dim`` explicitly (torch deprecates guessing it). ``dtype`` casts the input first, e.g.
    to compute an integer or half input's softmax in a wider float.

    Example::

        >>> x = fjax.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
        >>> F.softmax(x, dim=1)
        tensor([[0.0900, 0.2447, 0.6652],
                [0.3333, 0.3333, 0.3333]], dtype=fjax.float32)
        >>> F.softmax(fjax.tensor([1, 2]), dim=0, dtype=fjax.float64)
        tensor([0.2689, 0.7311], dtype=fjax.float64)
    """
    return _F.softmax(input, dim, dtype=dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Softmin along ``dim``: ``softmax(-x, dim)``, which gives the smallest values the largest
    weights. ``dtype`` casts the input first, as in ``softmax``.

    Example::

        >>> F.softmin(fjax.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([0.6652, 0.2447, 0.0900], dtype=fjax.float32)
    """
    return _F.softmin(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``log(softmax(x, dim))``, computed as ``x - logsumexp(x, dim)`` so that it stays finite
    where ``softmax`` underflows to 0. ``dtype`` casts the input first. Pair it with
    ``F.nll_loss`` (or use ``F.cross_entropy``, which combines both).

    Example::

        >>> F.log_softmax(fjax.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([-2.4076, -1.4076, -0.4076], dtype=fjax.float32)
        >>> F.log_softmax(fjax.tensor([0.0, 1000.0]), dim=0)
        tensor([-1000.,     0.], dtype=fjax.float32)
    """
    return _F.log_softmax(input, dim, dtype=dtype)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """One-hot encode an integer tensor: a new last dim of length ``num_classes`` holds 1 at each
    value's index and 0 elsewhere; the result is int64.

    With the default ``num_classes=-1`` the length is ``tensor.max() + 1``, read from the data
    (a device-to-host sync); pass ``num_classes`` where that matters.

    Example::

        >>> F.one_hot(fjax.tensor([0, 2, 1]))
        tensor([[1, 0, 0],
                [0, 0, 1],
                [0, 1, 0]], dtype=fjax.int64)
        >>> F.one_hot(fjax.tensor([0, 2]), num_classes=4)
        tensor([[1, 0, 0, 0],
                [0, 0, 1, 0]], dtype=fjax.int64)
    """
    if num_classes < 0:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    return _F.one_hot(tensor, num_classes)


# -- dropout ------------------------------------------------------------------------------------
def _check_p(name: str, p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    Scaling keeps the expected value of each element unchanged. The mask is drawn from
    ``fjax.random.default_generator`` (``fjax.manual_seed`` fixes it). ``training`` defaults to
    True in this functional form: pass ``training=False`` (``nn.Dropout`` passes ``self.training``)
    to get ``input`` back unchanged.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> x = fjax.ones(8)
        >>> sorted(set(F.dropout(x, p=0.5).tolist()))
        [0.0, 2.0]
        >>> F.dropout(x, p=0.5, training=False) is x
        True
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
    """Channel dropout for ``(N, C, L)`` or ``(C, L)`` input: each channel is zeroed as a whole
    with probability ``p`` and the kept channels are scaled by ``1 / (1 - p)``.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = F.dropout1d(fjax.ones(2, 4, 3), p=0.5)
        >>> bool((y == y[..., :1]).all())  # each channel is all 0 or all 2
        True
        >>> sorted(set(y.flatten().tolist()))
        [0.0, 2.0]
    """
    if input.ndim not in (2, 3):
        raise ValueError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input")
    return _feature_dropout("dropout1d", input, p, training, inplace, 2)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for ``(N, C, H, W)`` input: each ``H x W`` feature map is zeroed as a whole
    with probability ``p`` and the kept ones are scaled by ``1 / (1 - p)``.

    A 3-d input is taken as ``(N, C, L)`` (torch's historical behaviour), not as unbatched.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = F.dropout2d(fjax.ones(2, 4, 3, 3), p=0.5)
        >>> bool((y == y[..., :1, :1]).all())
        True
        >>> sorted(set(y.flatten().tolist()))
        [0.0, 2.0]
    """
    return _feature_dropout("dropout2d", input, p, training, inplace, None)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input: each volume is zeroed as
    a whole with probability ``p`` and the kept ones are scaled by ``1 / (1 - p)``.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = F.dropout3d(fjax.ones(1, 4, 2, 2, 2), p=0.5)
        >>> y.shape, sorted(set(y.flatten().tolist()))
        (fjax.Size([1, 4, 2, 2, 2]), [0.0, 2.0])
    """
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
    """Dropout for SELU networks: keeps a zero-mean, unit-variance input at zero mean and unit
    variance.

    Dropped elements are set to SELU's saturation value ``-1.7581`` instead of 0, and an affine
    correction then restores the mean and variance. ``training`` defaults to False here, as in
    torch; outside training the input is returned unchanged.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = F.alpha_dropout(fjax.zeros(6), p=0.5, training=True)
        >>> sorted(set(y.tolist()))
        [-0.77919..., 0.77919...]
    """
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """``alpha_dropout`` of whole channels: each channel of an ``(N, C, *)`` input is dropped (to
    SELU's saturation value, then affinely corrected) as a whole with probability ``p``.
    ``training`` defaults to False, as in torch.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = F.feature_alpha_dropout(fjax.zeros(2, 3, 4), p=0.5, training=True)
        >>> bool((y == y[..., :1]).all())
        True
    """
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

    Computes ``(x - mean) / sqrt(var + eps) * weight + bias`` per channel, the statistics taken
    over every dim but 1. When training with running buffers, they are updated in place:
    ``running = (1 - momentum) * running + momentum * batch`` (with the unbiased batch variance,
    while the output uses the biased one). ``training`` defaults to False: the running buffers
    are then used and must be given.

    Example::

        >>> x = fjax.tensor([[1.0, 10.0], [3.0, 30.0]])
        >>> rm, rv = fjax.zeros(2), fjax.ones(2)
        >>> F.batch_norm(x, rm, rv, training=True)
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]], dtype=fjax.float32)
        >>> rm, rv
        (tensor([0.2000, 2.0000], dtype=fjax.float32), tensor([ 1.1000, 20.9000], dtype=fjax.float32))
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

    For an ``(N, C, *)`` input each ``(sample, channel)`` slice is normalized to zero mean and
    unit (biased) variance, then scaled by ``weight`` and shifted by ``bias`` per channel. With
    ``use_input_stats`` and running buffers, the buffers move towards the per-instance
    statistics averaged over the batch, as in torch.

    Example::

        >>> x = fjax.tensor([[[1.0, 3.0], [10.0, 30.0]]])
        >>> F.instance_norm(x)
        tensor([[[-1.0000,  1.0000],
                 [-1.0000,  1.0000]]], dtype=fjax.float32)
    """
    if not use_input_stats:
        return _F.instance_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    out = _F.instance_norm(input, None, None, weight, bias, True, momentum, eps)
    if running_mean is not None and running_var is not None:
        _update_running("instance_norm", _instance_stats, input, running_mean, running_var, momentum)
    return out


def depend(input: Tensor, depend) -> Tensor:
    """OneFlow's ``F.depend(input, depend)``: ``input`` itself, with ``depend`` (a Tensor or a
    list of them) ordered before its later uses in an nn.Graph. XLA schedules a compiled step by
    data dependence alone, so fjax returns ``input`` unchanged: values never differ.

    Example::

        >>> x, y = fjax.ones(2), fjax.zeros(2)
        >>> F.depend(x, y) is x
        True
    """
    return input
