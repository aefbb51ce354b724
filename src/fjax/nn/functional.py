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
import warnings

import jax
import jax.numpy as jnp

from .. import _bucket, _lazy
from .. import dispatch as _dispatch
from ..autograd.grad_mode import no_grad
from ..creation import arange as _arange
from ..creation import empty_like as _empty_like
from ..creation import full as _full
from ..creation import tensor as _tensor
from ..creation import zeros_like as _zeros_like
from ..dispatch import functions as _F
from ..dtypes import bool as _bool
from ..dtypes import int64
from ..errors import OpError
from ..ops import _checks
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
adaptive_max_pool3d = _F.adaptive_max_pool3d
max_unpool1d = _F.max_unpool1d
max_unpool2d = _F.max_unpool2d
max_unpool3d = _F.max_unpool3d
layer_norm = _F.layer_norm
group_norm = _F.group_norm
rms_norm = _F.rms_norm


embedding = _F.embedding


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Sum, mean or max of bags of embeddings without materializing ``embedding``'s output: each
    row of a 2-d ``input`` is a bag, or a 1-d ``input`` is cut into bags starting at ``offsets``
    (with ``include_last_offset`` the last offset ends the last bag).

    ``per_sample_weights`` scales each looked-up row (``mode="sum"`` only); ``padding_idx``
    entries are skipped. ``max_norm``, ``scale_grad_by_freq`` and ``sparse`` are not supported.

    Args:
        input: indices, ``(B, N)`` (each row a bag) or 1-d (cut into bags by ``offsets``).
        weight: the ``(num_embeddings, embedding_dim)`` embedding matrix.
        offsets: 1-d start index of each bag in a 1-d ``input``; None for a 2-d ``input``.
        max_norm: not supported (raises NotImplementedError unless None).
        norm_type: the p of ``max_norm``'s norm; unused, as ``max_norm`` is unsupported.
        scale_grad_by_freq: not supported (raises NotImplementedError when True).
        mode: ``"sum"``, ``"mean"`` (default) or ``"max"`` over each bag.
        sparse: not supported (raises NotImplementedError when True).
        per_sample_weights: optional weights of ``input``'s shape scaling each row (``mode="sum"``).
        include_last_offset: if True, ``offsets`` has one extra entry that ends the last bag.
        padding_idx: an index whose entries are skipped in every bag (default None: none).

    Example::

        >>> w = fjax.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]])
        >>> F.embedding_bag(fjax.tensor([[0, 1], [2, 2]]), w)
        tensor([[0.5000, 1.0000],
                [4.0000, 4.0000]], dtype=fjax.float32)
        >>> F.embedding_bag(fjax.tensor([0, 1, 2]), w, fjax.tensor([0, 1]), mode="max")
        tensor([[1., 0.],
                [4., 4.]], dtype=fjax.float32)
    """
    if max_norm is not None:
        raise NotImplementedError("embedding_bag: max_norm (renormalizes weight in place)")
    if scale_grad_by_freq:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq=True")
    if sparse:
        raise NotImplementedError("embedding_bag: sparse=True (sparse gradients)")
    return _F._embedding_bag(input, weight, offsets, mode, per_sample_weights, include_last_offset, padding_idx)


pad = _F.pad
interpolate = _F.interpolate


def grid_sample(
    input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros", align_corners: bool | None = None
) -> Tensor:
    """Sample ``input`` (``(N, C, H, W)`` or ``(N, C, D, H, W)``) at the points of ``grid``
    (``(N, H_out, W_out, 2)`` or ``(N, D_out, H_out, W_out, 3)``, ``(x, y[, z])`` in ``[-1, 1]``).

    ``mode``: ``"bilinear"``, ``"nearest"`` or ``"bicubic"`` (4-d only); ``padding_mode`` says
    what lies outside: ``"zeros"``, ``"border"`` (the edge pixels) or ``"reflection"``.
    ``align_corners=True`` puts -1 and 1 at the centres of the corner pixels (default False:
    at their outer edges). Gradients flow to ``input`` and ``grid``.

    Args:
        input: the ``(N, C, H, W)`` or ``(N, C, D, H, W)`` tensor to sample.
        grid: sampling points, ``(N, H_out, W_out, 2)`` or ``(N, D_out, H_out, W_out, 3)``, in ``[-1, 1]``.
        mode: ``"bilinear"`` (default), ``"nearest"`` or ``"bicubic"``.
        padding_mode: ``"zeros"`` (default), ``"border"`` or ``"reflection"``.
        align_corners: True maps -1 and 1 to corner pixel centres; None or False to their outer edges.

    Example::

        >>> x = fjax.arange(4.0).reshape(1, 1, 2, 2)
        >>> F.grid_sample(x, fjax.tensor([[[[0.0, 0.0], [1.0, 1.0]]]]), align_corners=True)
        tensor([[[[1.5000, 3.0000]]]], dtype=fjax.float32)
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"grid_sample: mode must be 'bilinear', 'nearest' or 'bicubic', got {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"grid_sample: padding_mode must be 'zeros', 'border' or 'reflection', got {padding_mode!r}")
    modes = {"bilinear": 0, "nearest": 1, "bicubic": 2}
    paddings = {"zeros": 0, "border": 1, "reflection": 2}
    return _F.grid_sampler(input, grid, modes[mode], paddings[padding_mode], bool(align_corners))


pixel_shuffle = _F.pixel_shuffle
channel_shuffle = _F.channel_shuffle
native_channel_shuffle = _F.native_channel_shuffle
local_response_norm = _F.local_response_norm
pdist = _F.pdist
pixel_unshuffle = _F.pixel_unshuffle
normalize = _F.normalize
cosine_similarity = _F.cosine_similarity
pairwise_distance = _F.pairwise_distance

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
multi_margin_loss = _F.multi_margin_loss


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """Connectionist temporal classification loss (see ``fjax.ctc_loss``); ``input_lengths`` and
    ``target_lengths`` may be Tensors or sequences of ints.

    Args:
        log_probs: ``(T, N, C)`` or ``(T, C)`` log-probabilities over ``C`` classes (blank included).
        targets: ``(N, S)`` padded target labels, or 1-d concatenated ones.
        input_lengths: the length of each input sequence (``(N,)``), a Tensor or a sequence of ints.
        target_lengths: the length of each target sequence (``(N,)``), a Tensor or a sequence of ints.
        blank: the blank label (default 0).
        reduction: ``'none'``, ``'mean'`` (default: each loss divided by its target length, then
            averaged) or ``'sum'``.
        zero_infinity: if True, infinite losses (and their gradients) become 0.

    Example::

        >>> lp = fjax.tensor([[[0.5, 0.5]], [[0.5, 0.5]]]).log()
        >>> F.ctc_loss(lp, fjax.tensor([[1]]), [2], [1])
        tensor(0.2877, dtype=fjax.float32)
    """
    if not isinstance(input_lengths, Tensor):
        input_lengths = _tensor(input_lengths, dtype=int64)
    if not isinstance(target_lengths, Tensor):
        target_lengths = _tensor(target_lengths, dtype=int64)
    return _F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity)


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options=None,
) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` for an input
    ``(N, in)`` or ``(in,)`` and a weight ``(C, d_1, ..., d_K, in)``: the logits are
    ``(N, C, d_1, ..., d_K)``. ``ignore_index=None`` means -100.

    ``options`` (torch's ``LinearCrossEntropyOptions``) only choose how torch chunks the batch to
    save memory; fjax computes the same values in one XLA computation and ignores them.

    Args:
        input: the ``(N, in)`` or ``(in,)`` features.
        linear_weight: the ``(C, d_1, ..., d_K, in)`` projection weight.
        target: class indices (or probabilities), as for ``F.cross_entropy``.
        linear_bias: optional bias added to the logits (default None).
        weight: optional ``(C,)`` per-class rescaling weight, as for ``F.cross_entropy``.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.
        ignore_index: a target value that is ignored (default None, meaning -100).
        label_smoothing: amount of smoothing in ``[0, 1]`` (default 0.0).
        options: torch's chunking options; ignored.

    Example::

        >>> x = fjax.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> w = fjax.tensor([[2.0, 0.0], [0.0, 2.0]])
        >>> F.linear_cross_entropy(x, w, fjax.tensor([0, 0]), reduction="none")
        tensor([0.1269, 2.1269], dtype=fjax.float32)
    """
    if input.ndim not in (1, 2) or linear_weight.ndim < 2 or input.shape[-1] != linear_weight.shape[-1]:
        raise ValueError(
            f"linear_cross_entropy: expected input (N, in) or (in,) and linear_weight (C, ..., in), "
            f"got {tuple(input.shape)} and {tuple(linear_weight.shape)}"
        )
    logits = _F.matmul(linear_weight, input.unsqueeze(-1) if input.ndim == 1 else input.t())
    logits = logits.squeeze(-1) if input.ndim == 1 else logits.movedim(-1, 0)
    if linear_bias is not None:
        logits = logits + linear_bias
    ignore = -100 if ignore_index is None else ignore_index
    return _F.cross_entropy(
        logits, target, weight, ignore_index=ignore, reduction=reduction, label_smoothing=label_smoothing
    )


multilabel_margin_loss = _F.multilabel_margin_loss


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    """torch's deprecated ``F.upsample``: ``F.interpolate`` with the same arguments.

    Args:
        input: the ``(N, C, *spatial)`` tensor.
        size: the output spatial size (an int or a tuple); give this or ``scale_factor``.
        scale_factor: multiplier of the spatial size (a float or a tuple).
        mode: the interpolation mode, as for ``F.interpolate`` (default ``"nearest"``).
        align_corners: for the linear modes, whether corner pixels map onto corner pixels.

    Example::

        >>> F.upsample(fjax.tensor([[[1.0, 2.0]]]), scale_factor=2)
        tensor([[[1., 1., 2., 2.]]], dtype=fjax.float32)
    """
    return _F.interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """torch's deprecated ``F.upsample_nearest``: ``F.interpolate(..., mode="nearest")``.

    Args:
        input: the ``(N, C, *spatial)`` tensor.
        size: the output spatial size (an int or a tuple); give this or ``scale_factor``.
        scale_factor: multiplier of the spatial size.

    Example::

        >>> F.upsample_nearest(fjax.tensor([[[1.0, 2.0]]]), size=3)
        tensor([[[1., 1., 2.]]], dtype=fjax.float32)
    """
    return _F.interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """torch's deprecated ``F.upsample_bilinear``: bilinear ``F.interpolate`` with
    ``align_corners=True`` (corner pixels map onto corner pixels).

    Args:
        input: the ``(N, C, H, W)`` tensor.
        size: the output spatial size (an int or a pair); give this or ``scale_factor``.
        scale_factor: multiplier of the spatial size.

    Example::

        >>> F.upsample_bilinear(fjax.tensor([[[[0.0, 3.0]]]]), size=(1, 4))
        tensor([[[[0., 1., 2., 3.]]]], dtype=fjax.float32)
    """
    return _F.interpolate(input, size, scale_factor, "bilinear", True)


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
    doc, at = op.__doc__, op.__doc__.find("\n\n    Example::")
    if "\n    Args:\n" in doc and at > 0:  # list ``inplace`` last in the op's Args section
        fn.__doc__ = f"{doc[:at]}\n        inplace: if True, write the result into ``input`` (default False).{doc[at:]}"
    else:
        fn.__doc__ = f"{doc}\n\n``inplace=True`` writes the result into ``input``."
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
    args = "".join(f"    {name}: as for ``{fn.__name__}``.\n" for name in fn_.__signature__.parameters)
    fn_.__doc__ = (
        f"In-place ``{fn.__name__}``: ``{fn.__name__}(input, ..., inplace=True)``, which overwrites "
        f"``input`` with the result and returns ``input`` itself.\n\nArgs:\n{args}\n"
        f"Example::\n{_INPLACE_EXAMPLES[fn_.__name__]}\n"
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

    Args:
        input: the input tensor.
        lower: lower bound of the random slope (default 1/8).
        upper: upper bound of the random slope (default 1/3).
        training: draw a slope per element if True; else use ``(lower + upper) / 2`` (default False).
        inplace: if True, write the result into ``input``.

    Example::

        >>> F.rrelu(fjax.tensor([-3.0, 2.0]))
        tensor([-0.6875,  2.0000], dtype=fjax.float32)
        >>> _ = fjax.manual_seed(0)
        >>> y = F.rrelu(fjax.tensor([-3.0, -3.0]), 0.1, 0.3, training=True)
        >>> bool(((y >= -0.9) & (y <= -0.3)).all())
        True
    """
    if lower > upper:
        raise OpError(f"rrelu: lower bound should be at most the upper bound, got lower={lower}, upper={upper}")
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

    Args:
        input: the input tensor.
        dim: the dimension the softmax is taken along.
        _stacklevel: torch's warning stack level; unused.
        dtype: if given, ``input`` is cast to it first.

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

    Args:
        input: the input tensor.
        dim: the dimension the softmin is taken along.
        _stacklevel: torch's warning stack level; unused.
        dtype: if given, ``input`` is cast to it first.

    Example::

        >>> F.softmin(fjax.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([0.6652, 0.2447, 0.0900], dtype=fjax.float32)
    """
    return _F.softmin(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``log(softmax(x, dim))``, computed as ``x - logsumexp(x, dim)`` so that it stays finite
    where ``softmax`` underflows to 0. ``dtype`` casts the input first. Pair it with
    ``F.nll_loss`` (or use ``F.cross_entropy``, which combines both).

    Args:
        input: the input tensor.
        dim: the dimension the log-softmax is taken along.
        _stacklevel: torch's warning stack level; unused.
        dtype: if given, ``input`` is cast to it first.

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

    Args:
        tensor: an integer tensor of class values.
        num_classes: the length of the new last dim (default -1: ``tensor.max() + 1``).

    Example::

        >>> F.one_hot(fjax.tensor([0, 2, 1]))
        tensor([[1, 0, 0],
                [0, 0, 1],
                [0, 1, 0]], dtype=fjax.int64)
        >>> F.one_hot(fjax.tensor([0, 2]), num_classes=4)
        tensor([[1, 0, 0, 0],
                [0, 0, 1, 0]], dtype=fjax.int64)
    """
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    return _F.one_hot(tensor, num_classes)


# -- dropout ------------------------------------------------------------------------------------
def _check_p(name: str, p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")


def dropout(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, generator=None, *, addend=None
) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    Scaling keeps the expected value of each element unchanged. The mask is drawn from
    ``generator``, by default ``fjax.random.default_generator`` (``fjax.manual_seed`` fixes it).
    ``training`` defaults to True in this functional form: pass ``training=False`` (``nn.Dropout``
    passes ``self.training``) to get ``input`` back unchanged. OneFlow's ``addend`` is added to the
    result (its fused residual connection).

    Args:
        input: the input tensor.
        p: probability of zeroing an element (default 0.5).
        training: apply dropout if True (default); if False return ``input`` unchanged.
        inplace: if True, write the result into ``input``.
        generator: the ``fjax.Generator`` the mask is drawn from (default: the global one).
        addend: OneFlow's optional tensor added to the result.

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
        return input if addend is None else input + addend
    out = _F.dropout(input, (generator or default_generator)._pending_key(), p, True)
    out = input._set_(out, "dropout_") if inplace else out
    return out if addend is None else out + addend


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

    Args:
        input: an ``(N, C, L)`` or ``(C, L)`` tensor.
        p: probability of zeroing a channel (default 0.5).
        training: apply dropout if True (default); if False return ``input`` unchanged.
        inplace: if True, write the result into ``input``.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = F.dropout1d(fjax.ones(2, 4, 3), p=0.5)
        >>> bool((y == y[..., :1]).all())  # each channel is all 0 or all 2
        True
        >>> sorted(set(y.flatten().tolist()))
        [0.0, 2.0]
    """
    if input.ndim not in (2, 3):
        raise OpError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input")
    return _feature_dropout("dropout1d", input, p, training, inplace, 2)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for ``(N, C, H, W)`` input: each ``H x W`` feature map is zeroed as a whole
    with probability ``p`` and the kept ones are scaled by ``1 / (1 - p)``.

    A 3-d input is taken as ``(N, C, L)`` (torch's historical behaviour), not as unbatched.

    Args:
        input: an ``(N, C, H, W)`` tensor (a 3-d one is taken as ``(N, C, L)``).
        p: probability of zeroing a channel (default 0.5).
        training: apply dropout if True (default); if False return ``input`` unchanged.
        inplace: if True, write the result into ``input``.

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

    Args:
        input: an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` tensor.
        p: probability of zeroing a channel (default 0.5).
        training: apply dropout if True (default); if False return ``input`` unchanged.
        inplace: if True, write the result into ``input``.

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

    Args:
        input: the input tensor.
        p: probability of dropping an element (default 0.5).
        training: apply dropout if True; if False (default) return ``input`` unchanged.
        inplace: if True, write the result into ``input``.

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

    Args:
        input: an ``(N, C, *)`` tensor.
        p: probability of dropping a channel (default 0.5).
        training: apply dropout if True; if False (default) return ``input`` unchanged.
        inplace: if True, write the result into ``input``.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = F.feature_alpha_dropout(fjax.zeros(2, 3, 4), p=0.5, training=True)
        >>> bool((y == y[..., :1]).all())
        True
    """
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, True)


# -- pooling with torch's functional-only signatures ------------------------------------------------
_WITH_INDICES_EXAMPLES = {
    "max_pool1d": "F.max_pool1d_with_indices(fjax.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)[1]",
    "max_pool2d": "F.max_pool2d_with_indices(fjax.tensor([[[[1.0, 3.0], [2.0, 0.0]]]]), 2)[1]",
    "max_pool3d": "F.max_pool3d_with_indices(fjax.arange(8.0).reshape(1, 1, 2, 2, 2), 2)[1].flatten()",
}
_WITH_INDICES_RESULTS = {
    "max_pool1d": "tensor([[[1, 2]]], dtype=fjax.int64)",
    "max_pool2d": "tensor([[[[1]]]], dtype=fjax.int64)",
    "max_pool3d": "tensor([7], dtype=fjax.int64)",
}


def _with_indices(name: str):
    """torch's ``max_pool*d_with_indices``: ``max_pool*d`` with ``return_indices=True`` by default."""
    op = getattr(_F, name)

    def fn(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True):
        return op(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)

    fn.__name__ = fn.__qualname__ = f"{name}_with_indices"
    fn.__doc__ = (
        f"``{name}`` that returns ``(output, indices)`` unless ``return_indices=False``.\n\n"
        f"Args:\n    input, kernel_size, stride, padding, dilation, ceil_mode: as for ``{name}``.\n"
        "    return_indices: also return the int64 positions of the maxima (default True).\n\nExample::\n\n"
        f"    >>> {_WITH_INDICES_EXAMPLES[name]}\n    {_WITH_INDICES_RESULTS[name]}\n"
    )
    return fn


max_pool1d_with_indices = _with_indices("max_pool1d")
max_pool2d_with_indices = _with_indices("max_pool2d")
max_pool3d_with_indices = _with_indices("max_pool3d")


def _fractional(nd: int):
    name = f"fractional_max_pool{nd}d"
    op = getattr(_F, name)

    def fn(input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        if _random_samples is None:
            batch = tuple(input.shape[:-nd]) if input.ndim == nd + 2 else (1, input.shape[0])
            _random_samples = _rand(*batch, nd, dtype=input.dtype)
        return op(input, kernel_size, output_size, output_ratio, return_indices, _random_samples)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = op.__doc__
    return fn


fractional_max_pool2d = _fractional(2)
fractional_max_pool3d = _fractional(3)


def _adaptive_with_indices(nd: int):
    """torch's ``adaptive_max_pool*d_with_indices``: the ``(output, indices)`` pair, whatever ``return_indices``."""
    name = f"adaptive_max_pool{nd}d"
    op = getattr(_F, name)

    def fn(input: Tensor, output_size, return_indices: bool = False):
        return op(input, output_size, True)

    example = {
        1: ("fjax.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2", "tensor([[[1, 2]]], dtype=fjax.int64)"),
        2: ("fjax.tensor([[[[1.0, 3.0], [2.0, 0.0]]]]), 1", "tensor([[[[1]]]], dtype=fjax.int64)"),
        3: ("fjax.arange(8.0).reshape(1, 1, 2, 2, 2), 1", "tensor([[[[[7]]]]], dtype=fjax.int64)"),
    }[nd]
    fn.__name__ = fn.__qualname__ = f"{name}_with_indices"
    fn.__doc__ = (
        f"``{name}`` returning ``(output, indices)``: the maxima and their flat int64 positions.\n\n"
        f"Args:\n    input: the ``(N, C, *)`` or ``(C, *)`` input with {nd} spatial dims.\n"
        "    output_size: the output's spatial size (an int or a tuple; None keeps that dim's size).\n"
        "    return_indices: ignored, as in torch: the pair is always returned.\n\nExample::\n\n"
        f"    >>> F.{name}_with_indices({example[0]})[1]\n    {example[1]}\n"
    )
    return fn


adaptive_max_pool1d_with_indices = _adaptive_with_indices(1)
adaptive_max_pool2d_with_indices = _adaptive_with_indices(2)
adaptive_max_pool3d_with_indices = _adaptive_with_indices(3)


def _fractional_with_indices(nd: int):
    """torch's ``fractional_max_pool*d_with_indices``: the ``(output, indices)`` pair, whatever ``return_indices``."""
    name = f"fractional_max_pool{nd}d"
    pool = globals()[name]

    def fn(input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        return pool(input, kernel_size, output_size, output_ratio, True, _random_samples)

    shape, top = ("4.0).reshape(1, 1, 2, 2", "3.") if nd == 2 else ("8.0).reshape(1, 1, 2, 2, 2", "7.")
    fn.__name__ = fn.__qualname__ = f"{name}_with_indices"
    fn.__doc__ = (
        f"``{name}`` returning ``(output, indices)``: pseudo-random overlapping windows' maxima and positions.\n\n"
        f"Args:\n    input: the ``(N, C, *)`` or ``(C, *)`` input with {nd} spatial dims.\n"
        "    kernel_size: the window size (an int or a tuple).\n"
        "    output_size: the output's spatial size (give it or ``output_ratio``).\n"
        "    output_ratio: the output's size as a fraction of the input's, in ``(0, 1)``.\n"
        "    return_indices: ignored, as in torch: the pair is always returned.\n"
        f"    _random_samples: optional ``(N, C, {nd})`` samples in ``[0, 1)`` placing the windows.\n\nExample::\n\n"
        f"    >>> out, idx = F.{name}_with_indices(fjax.arange({shape}), 2, output_size=1)\n"
        f"    >>> out.flatten()\n    tensor([{top}], dtype=fjax.float32)\n"
    )
    return fn


fractional_max_pool2d_with_indices = _fractional_with_indices(2)
fractional_max_pool3d_with_indices = _fractional_with_indices(3)


def _lp_pool(nd: int):
    """torch's ``lp_pool*d``: ``(sum over each window of x ** p) ** (1 / p)``, through ``avg_pool*d``."""
    name = f"lp_pool{nd}d"
    avg = getattr(_F, f"avg_pool{nd}d")

    def fn(input: Tensor, norm_type, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
        kernel = _checks.ints(name, "kernel_size", kernel_size, nd, 1)
        out = avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
        return (out.sign() * relu(out.abs())).mul(math.prod(kernel)).pow(1.0 / norm_type)

    shape = {1: "1, 1, 4", 2: "1, 1, 2, 2", 3: "1, 1, 2, 2, 1"}[nd]
    kernel = {1: "2", 2: "2", 3: "(2, 2, 1)"}[nd]
    result = {1: "tensor([[[2.2361, 5.0000]]], dtype=fjax.float32)", 2: "tensor([[[[5.4772]]]], dtype=fjax.float32)"}
    result[3] = "tensor([[[[[5.4772]]]]], dtype=fjax.float32)"
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"{nd}-d power-average pooling: ``(sum over each window of x ** p) ** (1 / p)`` (p = ``norm_type``);\n"
        "``p = inf`` is max pooling and ``p = 1`` sum pooling. Windows with a negative sum give 0, as torch.\n\n"
        f"Args:\n    input: the ``(N, C, *)`` or ``(C, *)`` input with {nd} spatial dims.\n"
        "    norm_type: the power ``p``.\n"
        "    kernel_size: the window size (an int or a tuple).\n"
        "    stride: the window step (default None: ``kernel_size``).\n"
        "    ceil_mode: keep a last, partial window (default False).\n\nExample::\n\n"
        f"    >>> F.{name}(fjax.arange(1.0, 5.0).reshape({shape}), 2, {kernel})\n    {result[nd]}\n"
    )
    return fn


lp_pool1d = _lp_pool(1)
lp_pool2d = _lp_pool(2)
lp_pool3d = _lp_pool(3)


def affine_grid(theta: Tensor, size: list[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of an affine transform, for ``grid_sample``: each output pixel's
    normalized ``(x, y[, z], 1)`` coordinates multiplied by ``theta``.

    Args:
        theta: ``(N, 2, 3)`` (2-d) or ``(N, 3, 4)`` (3-d) affine matrices, floating point.
        size: the target ``(N, C, H, W)`` or ``(N, C, D, H, W)`` size.
        align_corners: True puts -1 and 1 at the corner pixels' centres; None (warns, as torch) or
            False at their outer edges.

    Example::

        >>> theta = fjax.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> F.affine_grid(theta, [1, 1, 1, 2], align_corners=False)
        tensor([[[[-0.5000,  0.0000],
                  [ 0.5000,  0.0000]]]], dtype=fjax.float32)
    """
    if align_corners is None:
        warnings.warn(
            "affine_grid: default align_corners changed to False since torch 1.3.0; pass align_corners=True "
            "if the old behavior is desired",
            stacklevel=2,
        )
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"affine_grid: expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    nd = len(size) - 2
    if nd not in (2, 3):
        raise NotImplementedError(f"affine_grid: only 4-d and 5-d sizes (2-d and 3-d grids) are supported, got {size}")
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (nd, nd + 1) or theta.shape[0] != size[0]:
        raise ValueError(
            f"affine_grid: expected theta of shape ({size[0]}, {nd}, {nd + 1}) for size {size}, "
            f"got {tuple(theta.shape)}"
        )
    if min(size) <= 0:
        raise ValueError(f"affine_grid: expected a non-zero, positive output size, got {size}")
    spatial = size[2:][::-1]  # x (W) first, then y (H), then z (D)

    def line(steps: int):
        if steps <= 1:
            return jnp.zeros((steps,))
        r = jnp.linspace(-1.0, 1.0, steps)
        return r if align_corners else r * (steps - 1) / steps

    axes = jnp.meshgrid(*[line(s) for s in spatial[::-1]], indexing="ij")[::-1]  # (D, H, W) grids of x, y, z
    base = jnp.stack([*axes, jnp.ones_like(axes[0])], axis=-1).reshape(1, -1, nd + 1)
    grid = _tensor(base, dtype=theta.dtype, device=theta.device) @ theta.transpose(1, 2)
    return grid.reshape(size[0], *size[2:], nd)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax (Concrete) distribution: ``softmax((logits + g) / tau)``
    with ``g`` Gumbel noise from the default generator; ``hard=True`` returns the one-hot of its
    argmax whose gradient is the soft sample's (straight-through).

    Args:
        logits: ``(..., num_features)`` unnormalized log-probabilities.
        tau: the temperature, > 0 (default 1).
        hard: if True, return one-hot samples with the soft gradient (default False).
        eps: unused, deprecated in torch (default 1e-10).
        dim: the dimension the softmax is taken along (default -1).

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> y = F.gumbel_softmax(fjax.zeros(2, 3), hard=True)
        >>> y.sum(dim=-1)
        tensor([1., 1.], dtype=fjax.float32)
    """
    if eps != 1e-10:
        warnings.warn("gumbel_softmax: `eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -_empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = _zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-d convolution of a time-major ``(T, B, C_in)`` sequence (fairseq's TBC layout).

    Args:
        input: the ``(T, B, C_in)`` sequence.
        weight: the ``(K, C_in, C_out)`` filters.
        bias: the ``(C_out,)`` bias.
        pad: zeros added at both ends of the time dim (default 0).

    Example::

        >>> F.conv_tbc(fjax.ones(3, 1, 1), fjax.ones(2, 1, 1), fjax.zeros(1)).flatten()
        tensor([2., 2.], dtype=fjax.float32)
    """
    if input.ndim != 3 or weight.ndim != 3 or bias.ndim != 1:
        raise ValueError(
            f"conv_tbc: expected input (T, B, C_in), weight (K, C_in, C_out) and bias (C_out,), got "
            f"{tuple(input.shape)}, {tuple(weight.shape)} and {tuple(bias.shape)}"
        )
    if input.shape[2] != weight.shape[1] or weight.shape[2] != bias.shape[0]:
        raise ValueError(
            f"conv_tbc: input {tuple(input.shape)}, weight {tuple(weight.shape)} and bias {tuple(bias.shape)} "
            "disagree in channels"
        )
    out = _F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function=None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """Triplet loss ``max(d(a, p) - d(a, n) + margin, 0)`` with any distance ``d`` (default
    ``pairwise_distance``); ``swap=True`` uses ``min(d(a, n), d(p, n))`` as the negative distance.

    Args:
        anchor: the anchors, ``(N, D)`` or ``(D,)``.
        positive: the positives, the anchors' shape.
        negative: the negatives, the anchors' shape.
        distance_function: a callable ``(x, y) -> distances`` (default None: ``pairwise_distance``).
        margin: the required distance gap, > 0 (default 1.0).
        swap: if True, use ``min(d(a, n), d(p, n))`` as the negative distance (default False).
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> a, p, n = fjax.zeros(1, 2), fjax.tensor([[3.0, 4.0]]), fjax.tensor([[1.0, 0.0]])
        >>> F.triplet_margin_with_distance_loss(a, p, n, distance_function=lambda x, y: (x - y).abs().sum(-1))
        tensor(7., dtype=fjax.float32)
    """
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin > 0, got {margin}")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"triplet_margin_with_distance_loss: {reduction!r} is not a valid value for reduction")
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(
            f"triplet_margin_with_distance_loss: the anchor, positive and negative must have the same number of "
            f"dimensions, got {anchor.ndim}, {positive.ndim} and {negative.ndim}"
        )
    distance = pairwise_distance if distance_function is None else distance_function
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = _F.minimum(dist_neg, distance(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    return loss if reduction == "none" else loss.mean() if reduction == "mean" else loss.sum()


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """Attention ``softmax(q @ k^T * scale + mask) @ v`` (see ``fjax.scaled_dot_product_attention``);
    with ``dropout_p > 0`` the attention weights are dropped with a mask drawn from the default
    generator, as torch applies dropout whatever the module's mode.

    Args:
        query: the ``(..., L, E)`` queries.
        key: the ``(..., S, E)`` keys.
        value: the ``(..., S, Ev)`` values.
        attn_mask: optional mask broadcast to ``(..., L, S)``: boolean (True = attend) or added to the scores.
        dropout_p: probability of dropping an attention weight (default 0.0).
        is_causal: if True, query ``i`` attends to keys ``0..i`` only.
        scale: the score scale (default None: ``1 / sqrt(E)``).
        enable_gqa: if True, key and value may have fewer heads than query (grouped-query attention).

    Returns:
        The ``(..., L, Ev)`` attention output.

    Example::

        >>> q = fjax.zeros(1, 4)
        >>> v = fjax.tensor([[1.0], [3.0]])
        >>> F.scaled_dot_product_attention(q, fjax.zeros(2, 4), v)
        tensor([[2.]], dtype=fjax.float32)
        >>> _ = fjax.manual_seed(0)
        >>> F.scaled_dot_product_attention(q, fjax.zeros(2, 4), v, dropout_p=0.5).item() in (0.0, 1.0, 3.0, 4.0)
        True
    """
    _check_p("scaled_dot_product_attention", dropout_p)
    dropout_key = default_generator._pending_key() if dropout_p > 0 else None
    return _F.scaled_dot_product_attention(
        query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, dropout_key
    )


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
        momentum = momentum._meta
    with no_grad():  # (recorded after pending inputs: a training step's segment goes on)
        a, valid = input._meta, ()
        if type(a) is _lazy.Padded:
            if stats is _batch_stats:  # a bucketed batch: its real rows, in the bucket
                a, valid = a.array, (_bucket._mask(a.shape[0], a.array.shape[0]),)
            else:
                a = input._data
        mean, var = _lazy.then(stats, (a, running_mean._meta, running_var._meta, momentum, *valid))
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

    Args:
        input: an ``(N, C, *)`` tensor.
        running_mean: the ``(C,)`` running mean, or None; updated in place when training.
        running_var: the ``(C,)`` running variance, or None; updated in place when training.
        weight: optional ``(C,)`` scale (default None: 1).
        bias: optional ``(C,)`` shift (default None: 0).
        training: use batch statistics if True; else the running ones (default False).
        momentum: the running statistics' update factor (default 0.1).
        eps: added to the variance for stability (default 1e-5).

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
        if running_mean is not None and running_var is not None and input.numel():
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

    Args:
        input: an ``(N, C, *)`` tensor.
        running_mean: optional ``(C,)`` running mean, updated in place when ``use_input_stats``.
        running_var: optional ``(C,)`` running variance, updated in place when ``use_input_stats``.
        weight: optional ``(C,)`` scale (default None: 1).
        bias: optional ``(C,)`` shift (default None: 0).
        use_input_stats: normalize by each instance's statistics if True (default); else by the running ones.
        momentum: the running statistics' update factor (default 0.1).
        eps: added to the variance for stability (default 1e-5).

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

    Args:
        input: the tensor returned.
        depend: a Tensor or a list of Tensors to order before ``input``'s later uses.

    Example::

        >>> x, y = fjax.ones(2), fjax.zeros(2)
        >>> F.depend(x, y) is x
        True
    """
    return input


def _mha_mask(mask: Tensor | None, name: str, dtype) -> Tensor | None:
    """A boolean mask (True = do not attend) as an additive float one of zeros and -inf."""
    if mask is None or mask.is_floating_point():
        return mask
    if mask.dtype != _bool:
        raise ValueError(f"multi_head_attention_forward: only bool and floating types of {name} are supported")
    return _zeros_like(mask, dtype=dtype).masked_fill(mask, float("-inf"))


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
):
    """The computation of ``nn.MultiheadAttention`` on sequence-first inputs, with the weights
    passed in: project, attend per head, project out. Returns ``(output, weights)``.

    Args:
        query: ``(L, N, E)`` or unbatched ``(L, E)`` queries.
        key: ``(S, N, E_k)`` or ``(S, E_k)`` keys.
        value: ``(S, N, E_v)`` or ``(S, E_v)`` values.
        embed_dim_to_check: the expected ``E``.
        num_heads: the number of heads, dividing ``E``.
        in_proj_weight: the packed ``(3E, E)`` input projection (unless ``use_separate_proj_weight``).
        in_proj_bias: optional packed ``(3E,)`` input projection bias.
        bias_k: optional ``(1, 1, E)`` row appended to the keys.
        bias_v: optional ``(1, 1, E)`` row appended to the values.
        add_zero_attn: if True, append a zero row to the keys and values.
        dropout_p: dropout probability of the attention weights (applied when ``training``).
        out_proj_weight: the ``(E, E)`` output projection.
        out_proj_bias: optional ``(E,)`` output projection bias.
        training: apply dropout if True (default True).
        key_padding_mask: optional ``(N, S)`` mask of keys to ignore (bool True = ignore, or additive float).
        need_weights: also return the attention weights (default True).
        attn_mask: optional ``(L, S)`` or ``(N * num_heads, L, S)`` mask (bool True = do not attend, or additive).
        use_separate_proj_weight: if True, use ``q/k/v_proj_weight`` instead of ``in_proj_weight``.
        q_proj_weight: the ``(E, E)`` query projection (with ``use_separate_proj_weight``).
        k_proj_weight: the ``(E, E_k)`` key projection (with ``use_separate_proj_weight``).
        v_proj_weight: the ``(E, E_v)`` value projection (with ``use_separate_proj_weight``).
        static_k: optional ``(N * num_heads, S, E / num_heads)`` keys used instead of the projected ones.
        static_v: optional ``(N * num_heads, S, E / num_heads)`` values used instead of the projected ones.
        average_attn_weights: return the weights averaged over heads (default True), else per head.
        is_causal: a hint that ``attn_mask`` is the causal mask; it needs ``attn_mask``.

    Example::

        >>> w = fjax.eye(2).repeat(3, 1)
        >>> q = fjax.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])
        >>> out, weights = F.multi_head_attention_forward(
        ...     q, q, q, 2, 1, w, None, None, None, False, 0.0, fjax.eye(2), None)
        >>> weights
        tensor([[[0.6698, 0.3302],
                 [0.3302, 0.6698]]], dtype=fjax.float32)
    """
    args = (query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v)
    args += (add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training, key_padding_mask, need_weights)
    args += (attn_mask, use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, static_k, static_v)
    args += (average_attn_weights, is_causal)
    if training and dropout_p > 0.0:  # (a kernel's trace would fix the dropout's draws)
        return _mha_forward(*args)
    return _mha_kernel(*args)


def _mha_forward(
    query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
    add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training, key_padding_mask, need_weights,
    attn_mask, use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, static_k, static_v,
    average_attn_weights, is_causal,
):  # fmt: skip
    """``multi_head_attention_forward``'s computation, op by op (its kernel traces this)."""
    name = "multi_head_attention_forward"
    if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
        raise ValueError(
            f"{name}: expected query, key and value all 2-d (unbatched) or 3-d (L, N, E), got shapes "
            f"{tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}"
        )
    batched = query.ndim == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise ValueError(f"{name}: was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise ValueError(f"{name}: embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    key_padding_mask = _mha_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError(f"{name}: is_causal=True needs attn_mask (the causal mask itself), as in torch")
    attn_mask = _mha_mask(attn_mask, "attn_mask", query.dtype)
    # project
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise ValueError(f"{name}: use_separate_proj_weight is False but in_proj_weight is None")
        if tuple(key.shape) != tuple(value.shape):
            raise ValueError(f"{name}: key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
        w_q, w_k, w_v = in_proj_weight.chunk(3)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise ValueError(f"{name}: use_separate_proj_weight is True but q/k/v_proj_weight is None")
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
    q, k, v = linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)
    if attn_mask is not None:
        expected = (tgt_len, src_len) if attn_mask.ndim == 2 else (bsz * num_heads, tgt_len, src_len)
        if attn_mask.ndim not in (2, 3) or tuple(attn_mask.shape) != expected:
            raise RuntimeError(
                f"{name}: the shape of the attn_mask is {tuple(attn_mask.shape)}, but should be {expected}"
            )
        if attn_mask.ndim == 2:
            attn_mask = attn_mask.unsqueeze(0)
    if (bias_k is None) != (bias_v is None):
        raise ValueError(f"{name}: bias_k and bias_v must be given together")
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise ValueError(f"{name}: bias cannot be added to static key or value")
        k = _F.cat([k, bias_k.repeat(1, bsz, 1)])
        v = _F.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = pad(attn_mask, (0, 1)) if attn_mask is not None else None
        key_padding_mask = pad(key_padding_mask, (0, 1)) if key_padding_mask is not None else None
    # split the heads: (N * H, len, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    for static, label in ((static_k, "static_k"), (static_v, "static_v")):
        if static is not None and (static.shape[0] != bsz * num_heads or static.shape[2] != head_dim):
            raise ValueError(
                f"{name}: expected {label} of shape ({bsz * num_heads}, S, {head_dim}), got {tuple(static.shape)}"
            )
    k = static_k if static_k is not None else k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = static_v if static_v is not None else v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        k = _F.cat([k, _zeros_like(k[:, :1])], dim=1)
        v = _F.cat([v, _zeros_like(v[:, :1])], dim=1)
        attn_mask = pad(attn_mask, (0, 1)) if attn_mask is not None else None
        key_padding_mask = pad(key_padding_mask, (0, 1)) if key_padding_mask is not None else None
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise ValueError(
                f"{name}: expected key_padding_mask of shape {(bsz, src_len)}, got {tuple(key_padding_mask.shape)}"
            )
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    # attend
    scores = (q * math.sqrt(1.0 / head_dim)) @ k.transpose(-2, -1)
    if attn_mask is not None:
        scores = scores + attn_mask
    # without weights to return torch attends through scaled_dot_product_attention, whose safe
    # softmax gives a query whose keys are all masked zeros (softmax's NaN with need_weights=True)
    weights = softmax(scores, dim=-1) if need_weights else _F._safe_softmax(scores, -1)
    if training and dropout_p > 0.0:
        weights = dropout(weights, p=dropout_p)
    out = (weights @ v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(dim=1)
    return out, weights if batched else weights.squeeze(0)


_mha_kernel = _dispatch.kernel_of("multi_head_attention_forward", _mha_forward)  # without dropout: one op


def grouped_mm(
    mat_a: Tensor, mat_b: Tensor, *, offs: Tensor | None = None, bias: Tensor | None = None, out_dtype=None
) -> Tensor:
    """Grouped matrix multiply (Mixture-of-Experts layers): one matmul per group, the groups
    either a leading dim of both operands or jagged slices of a 2-d one delimited by ``offs``.

    - ``(G, M, K) @ (G, K, N)`` (``offs`` None): a batched matmul, ``(G, M, N)``.
    - ``(M, K) @ (G, K, N)``: rows ``offs[g-1]:offs[g]`` of ``mat_a`` use ``mat_b[g]``, ``(M, N)``
      (rows past ``offs[-1]`` are 0).
    - ``(M, K) @ (K, N)``: ``mat_a[:, s:e] @ mat_b[s:e]`` per group's slice of ``K``, ``(G, M, N)``.

    fjax computes each group's product densely and masks it (XLA's CPU has no grouped GEMM).

    Args:
        mat_a: the left operand, 2-d or 3-d.
        mat_b: the right operand, 2-d or 3-d.
        offs: 1-d increasing int32 ends of the groups along the jagged dim of a 2-d operand.
        bias: not supported (raises NotImplementedError, as torch's "Bias not supported yet").
        out_dtype: the result's dtype (default None: the inputs').

    Example::

        >>> a = fjax.ones(3, 2)
        >>> b = fjax.stack([fjax.ones(2, 2), 2 * fjax.ones(2, 2)])
        >>> F.grouped_mm(a, b, offs=fjax.tensor([1, 3], dtype=fjax.int32))
        tensor([[2., 2.],
                [4., 4.],
                [4., 4.]], dtype=fjax.float32)
    """
    if bias is not None:
        raise NotImplementedError("grouped_mm: bias (torch: 'Bias not supported yet')")
    if mat_a.ndim not in (2, 3) or mat_b.ndim not in (2, 3):
        raise ValueError(f"grouped_mm: expected 2-d or 3-d operands, got {tuple(mat_a.shape)} and {tuple(mat_b.shape)}")
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise ValueError(
            f"grouped_mm: contraction dims differ: {tuple(mat_a.shape)} @ {tuple(mat_b.shape)} "
            f"({mat_a.shape[-1]} != {mat_b.shape[-2]})"
        )
    if (mat_a.ndim == 2 or mat_b.ndim == 2) != (offs is not None):
        raise ValueError("grouped_mm: offs must be given exactly when an operand is 2-d")
    if offs is not None and (offs.ndim != 1 or offs.is_floating_point()):
        raise ValueError(f"grouped_mm: offs must be a 1-d integer tensor, got {tuple(offs.shape)} {offs.dtype}")
    if mat_a.ndim == 3 and mat_b.ndim == 3:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise ValueError(f"grouped_mm: group counts differ: {tuple(mat_a.shape)} and {tuple(mat_b.shape)}")
        out = mat_a @ mat_b
    elif mat_a.ndim == 2 and mat_b.ndim == 3:
        if offs.shape[0] != mat_b.shape[0]:
            raise ValueError(f"grouped_mm: offs has {offs.shape[0]} groups, mat_b {mat_b.shape[0]}")
        rows = _arange(mat_a.shape[0], device=mat_a.device).unsqueeze(1)
        group = (rows >= offs.unsqueeze(0)).sum(1, keepdim=True)  # each row's group; G past offs[-1]
        out = _zeros_like(mat_a[:, :1]) * mat_b[0, :1]
        for g in range(mat_b.shape[0]):
            out = _F.where(group == g, mat_a @ mat_b[g], out)
    elif mat_a.ndim == 2:
        ks = _arange(mat_a.shape[1], device=mat_a.device).unsqueeze(1)
        group = (ks >= offs.unsqueeze(0)).sum(1)  # each K index's group
        out = _F.stack([(mat_a * (group == g).to(mat_a.dtype)) @ mat_b for g in range(offs.shape[0])])
    else:
        raise NotImplementedError("grouped_mm: a 3-d mat_a with a 2-d mat_b")
    return out if out_dtype is None else out.to(out_dtype)
