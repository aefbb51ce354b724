"""Loss functions (torch.nn.functional), with torch's reductions and conventions."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from ..errors import IndexOutOfRange
from . import _checks
from ._promote import promote, to_float
from ._registry import Rows, defop
from .activation import pairwise_distance
from .indexing import _check_range

_LEGACY = ("size_average", "reduce", "reduction")
_REDUCTION_ENUM = {0: "none", 1: "mean", 2: "sum"}  # torch's Reduction enum, the top-level ops' int


def _reduction(name, size_average, reduce, reduction):
    """torch's legacy_get_string: the old size_average/reduce flags override ``reduction``."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else "mean" if size_average else "sum"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{name}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return jnp.mean(loss)
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


def _pair(name, input, target):
    """Float input and target broadcast together, as torch's pointwise losses do."""
    input, target = promote(to_float(input), to_float(target))
    try:
        return jnp.broadcast_arrays(input, target)
    except ValueError:
        raise ValueError(f"{name}: target {target.shape} does not broadcast with input {input.shape}") from None


def _class_dim(name, input, target):
    if input.ndim == 0:
        raise ValueError(f"{name}: expected input of shape (C,) or (N, C, ...), got ()")
    return 0 if input.ndim == 1 else 1


def _logits_nll(x, target, dim):
    """``-log_softmax(x, dim)`` picked at the class indices ``target`` (``dim`` dropped), without
    the log-softmax as a full array: the forward keeps ``x`` and two row statistics (the max
    and the log of the shifted sum), and the derivative is torch's cross-entropy backward,
    ``exp(log_softmax(x)) * g - onehot(target) * g``, one elementwise expression of ``x`` (no
    scatter). The values are those of ``jax.nn.log_softmax`` picked by ``take_along_axis``
    (the same operations on the same numbers). Inside one compiled program (a fused eager step)
    XLA then holds the logits and the gradient at the loss's backward, where JAX's own rules
    held the log-softmax, its exponential, a dense scatter of the picks and the gradient.

    The rule is a JVP linear in the tangent, run under ``jax.checkpoint`` (as
    ``_saving.saves_inputs``): linearizing saves its arguments alone, and forward mode, higher
    derivatives and vmap work as for any JAX function."""

    def value(x, at):  # (``at`` an argument: a custom_jvp function may not close over a tracer)
        m = jax.lax.stop_gradient(jnp.max(x, dim, initial=-jnp.inf, keepdims=True))
        logs = jnp.log(jnp.sum(jnp.exp(x - m), dim, keepdims=True))
        picked = jnp.take_along_axis(x, at, axis=dim) - m
        return -jnp.squeeze(picked - logs, dim), m, logs

    def rule(x, m, logs, at, t):
        hit = jax.lax.broadcasted_iota(at.dtype, x.shape, dim) == at
        p = jnp.exp((x - m) - logs)
        return jnp.sum(p * t, axis=dim) - jnp.sum(jnp.where(hit, t, jnp.zeros((), t.dtype)), axis=dim)

    @jax.custom_jvp
    def op(x, at):
        return value(x, at)[0]

    @op.defjvp
    def _jvp(primals, tangents):
        x, at = primals
        y, m, logs = value(x, at)
        return y, jax.checkpoint(rule, prevent_cse=False)(x, m, logs, at, tangents[0])

    return op(x, jnp.expand_dims(target, dim))


def _nll(name, logp, target, weight, ignore_index, reduction, logits=False):
    """Negative log-likelihood of class-index targets; also returns the per-element weights.
    With ``logits``, ``logp`` holds unnormalized logits and the loss is their cross entropy
    (``_logits_nll``: the same values as of their log-softmax)."""
    dim = _class_dim(name, logp, target)
    expected = logp.shape[:dim] + logp.shape[dim + 1 :]
    if target.shape != expected:
        raise ValueError(f"{name}: expected target of shape {expected}, got {target.shape}")
    if not jnp.issubdtype(target.dtype, jnp.integer):
        raise TypeError(f"{name}: expected integer class indices, got {target.dtype}")
    n_classes = logp.shape[dim]
    if weight is not None and weight.shape != (n_classes,):
        raise ValueError(f"{name}: expected weight of shape ({n_classes},), got {weight.shape}")
    ignored = target == ignore_index
    safe = jnp.where(ignored, 0, target)
    if logits:
        nll = _logits_nll(logp, safe, dim)
    else:
        nll = -jnp.squeeze(jnp.take_along_axis(logp, jnp.expand_dims(safe, dim), axis=dim), dim)
    w = jnp.ones((), logp.dtype) if weight is None else weight.astype(logp.dtype)[safe]
    w = jnp.where(ignored, jnp.zeros((), logp.dtype), w)
    loss = nll * w
    if reduction == "mean":
        return jnp.sum(loss) / jnp.sum(jnp.broadcast_to(w, loss.shape)), w
    return _reduce(loss, reduction), w


def _check_targets(name):
    def check(input, target, weight=None, size_average=None, ignore_index=-100, *args, **kwargs):
        if jnp.ndim(input) == 0:
            return
        n = jnp.shape(input)[0 if jnp.ndim(input) == 1 else 1]
        _check_range(target, 0, n, IndexOutOfRange, lambda v: f"{name}: Target {v} is out of bounds.", ignore_index)

    return check


@defop(static=("ignore_index",) + _LEGACY, method=False, check=_check_targets("nll_loss"))
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood ``-weight[t] * input[t]`` of log-probabilities ``input``
    (``(C,)`` or ``(N, C, ...)``, classes on dim 1) and integer class indices ``t``.

    Targets equal to ``ignore_index`` (default -100) add nothing. ``reduction='mean'`` divides
    by the summed weights of the targets that are not ignored, not by their count.

    Args:
        input: log-probabilities, ``(C,)`` or ``(N, C, d_1, ...)``.
        target: integer class indices, ``()`` or ``(N, d_1, ...)``.
        weight: optional ``(C,)`` per-class weight (default None: all 1).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        ignore_index: a target value that adds nothing to the loss (default -100).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default: divided by the summed weights) or ``'sum'``.

    Example::

        >>> logp = fjax.tensor([[-0.5, -1.0, -2.0], [-3.0, -0.1, -1.0]])
        >>> F.nll_loss(logp, fjax.tensor([0, 2]), reduction="none")
        tensor([0.5000, 1.0000], dtype=fjax.float32)
        >>> F.nll_loss(logp, fjax.tensor([0, -100]))
        tensor(0.5000, dtype=fjax.float32)
        >>> F.nll_loss(logp, fjax.tensor([0, 2]), weight=fjax.tensor([1.0, 1.0, 3.0]))
        tensor(0.8750, dtype=fjax.float32)
    """
    reduction = _reduction("nll_loss", size_average, reduce, reduction)
    input, weight = promote(to_float(input), weight)
    return _nll("nll_loss", input, target, weight, ignore_index, reduction)[0]


@defop(
    static=("ignore_index", "label_smoothing") + _LEGACY,
    method=False,
    check=_check_targets("cross_entropy"),
    rows=Rows(
        ("input", "target"),
        pad=lambda s: {"target": s["ignore_index"]},  # its own mean leaves padding rows out, weighted or not
        out=lambda s: s["reduction"] == "none",
        when=lambda s, t: (
            len(t["input"][0]) >= 2
            and jnp.issubdtype(t["target"][1], jnp.integer)
            and s["size_average"] is None
            and s["reduce"] is None
        ),
    ),
)
def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """Cross entropy of unnormalized logits ``(C,)`` or ``(N, C, ...)`` (classes on dim 1):
    ``nll_loss(log_softmax(input, 1), target)``.

    Integer targets are class indices (``ignore_index``, ``weight``, ``label_smoothing``
    as torch); float targets of the input's shape are class probabilities.

    Args:
        input: unnormalized logits, ``(C,)`` or ``(N, C, d_1, ...)``.
        target: class indices (``()`` or ``(N, d_1, ...)``) or class probabilities of ``input``'s shape.
        weight: optional ``(C,)`` per-class weight (default None: all 1).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        ignore_index: a class-index target value that adds nothing to the loss (default -100).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.
        label_smoothing: amount in ``[0, 1]`` of uniform smoothing of the targets (default 0.0).

    Example::

        >>> logits = fjax.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
        >>> F.cross_entropy(logits, fjax.tensor([0, 1]))
        tensor(0.6691, dtype=fjax.float32)
        >>> F.cross_entropy(logits, fjax.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
        tensor(0.6691, dtype=fjax.float32)
        >>> F.cross_entropy(logits, fjax.tensor([0, 1]), reduction="none", label_smoothing=0.1)
        tensor([0.3729, 1.0986], dtype=fjax.float32)
    """
    reduction = _reduction("cross_entropy", size_average, reduce, reduction)
    input, weight = promote(to_float(input), weight)
    dim = _class_dim("cross_entropy", input, target)
    n_classes = input.shape[dim]
    if label_smoothing > 1.0:
        raise _checks.OpError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    if weight is not None and weight.shape != (n_classes,):
        raise ValueError(f"cross_entropy: expected weight of shape ({n_classes},), got {weight.shape}")
    if not jnp.issubdtype(target.dtype, jnp.floating) and label_smoothing == 0:
        return _nll("cross_entropy", input, target, weight, ignore_index, reduction, logits=True)[0]
    logp = jax.nn.log_softmax(input, axis=dim)
    wshape = (n_classes,) + (1,) * (input.ndim - dim - 1)
    if jnp.issubdtype(target.dtype, jnp.floating):
        if target.shape != input.shape:
            raise ValueError(
                f"cross_entropy: probability targets must have the input's shape {input.shape}, got {target.shape}"
            )
        if ignore_index >= 0:
            raise ValueError("cross_entropy: ignore_index is not supported for probability targets")
        target = target.astype(input.dtype)
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        if reduction == "mean":
            return -jnp.sum(prod) / (input.size // n_classes)
        return -jnp.sum(prod) if reduction == "sum" else -jnp.sum(prod, axis=dim)
    nll, w = _nll("cross_entropy", logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0:
        return nll
    smooth = -jnp.sum(logp if weight is None else logp * weight.reshape(wshape), axis=dim)
    ignored = target == ignore_index
    smooth = jnp.where(ignored, jnp.zeros((), smooth.dtype), smooth)
    if reduction == "mean":
        denom = jnp.sum(jnp.broadcast_to(w, smooth.shape)) if weight is not None else jnp.sum(~ignored)
        smooth = jnp.sum(smooth) / denom.astype(smooth.dtype)
    else:
        smooth = _reduce(smooth, reduction)
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / n_classes)


def _weighted(name, loss, weight):
    if weight is None:
        return loss
    weight = weight.astype(loss.dtype)
    if jnp.broadcast_shapes(loss.shape, weight.shape) != loss.shape:
        raise ValueError(f"{name}: weight {weight.shape} does not broadcast to {loss.shape}")
    return loss * weight


def _elementwise_weighted(name, loss, shape, weight, reduction, by_weight_sum):
    """torch's optional elementwise ``weight`` of mse/l1/huber (same shape as the input)."""
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != shape:
        raise ValueError(f"{name}: weight {weight.shape} must have the input's shape {shape}")
    loss = loss * weight.astype(loss.dtype)
    if reduction == "mean" and by_weight_sum:
        return jnp.sum(loss) / jnp.sum(weight.astype(loss.dtype))
    return _reduce(loss, reduction)


@defop(
    static=_LEGACY,
    method=False,
    rows=Rows(("input", "target"), reduce="reduction", when=lambda s, t: "weight" not in t),
)
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Squared error ``(input - target) ** 2``, reduced by ``reduction`` (``'mean'``, ``'sum'``
    or ``'none'``).

    ``target`` broadcasts against ``input``; an optional ``weight`` of the input's shape scales
    each term, and ``'mean'`` then divides by the sum of the weights.

    Args:
        input: the predictions.
        target: the targets, broadcast against ``input``.
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.
        weight: optional per-element weight of ``input``'s shape (default None).

    Example::

        >>> x, y = fjax.tensor([1.0, 2.0, 3.0]), fjax.tensor([1.0, 0.0, 0.0])
        >>> F.mse_loss(x, y)
        tensor(4.3333, dtype=fjax.float32)
        >>> F.mse_loss(x, y, reduction="sum")
        tensor(13., dtype=fjax.float32)
    """
    reduction = _reduction("mse_loss", size_average, reduce, reduction)
    shape = input.shape
    input, target = _pair("mse_loss", input, target)
    loss = jnp.square(input - target)
    return _elementwise_weighted("mse_loss", loss, shape, weight, reduction, True)


@defop(static=_LEGACY, method=False)
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Absolute error ``|input - target|``, reduced by ``reduction`` (``'mean'``, ``'sum'`` or
    ``'none'``).

    ``target`` broadcasts against ``input``; an optional ``weight`` of the input's shape scales
    each term, and ``'mean'`` then divides by the sum of the weights.

    Args:
        input: the predictions.
        target: the targets, broadcast against ``input``.
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.
        weight: optional per-element weight of ``input``'s shape (default None).

    Example::

        >>> x, y = fjax.tensor([1.0, 2.0, 3.0]), fjax.tensor([1.0, 0.0, 0.0])
        >>> F.l1_loss(x, y)
        tensor(1.6667, dtype=fjax.float32)
        >>> F.l1_loss(x, y, reduction="none")
        tensor([0., 2., 3.], dtype=fjax.float32)
    """
    reduction = _reduction("l1_loss", size_average, reduce, reduction)
    shape = input.shape
    input, target = _pair("l1_loss", input, target)
    loss = jnp.abs(input - target)
    return _elementwise_weighted("l1_loss", loss, shape, weight, reduction, True)


def _smooth_l1(diff, beta):
    ad = jnp.abs(diff)
    if beta == 0:
        return ad
    return jnp.where(ad < beta, 0.5 * diff * diff / beta, ad - 0.5 * beta)


@defop(static=_LEGACY + ("beta",), method=False)
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Smooth L1 loss of ``d = input - target``: ``0.5 * d**2 / beta`` where ``|d| < beta``,
    else ``|d| - 0.5 * beta``; reduced by ``reduction``.

    ``beta=0`` gives the plain L1 loss.

    Args:
        input: the predictions.
        target: the targets, broadcast against ``input``.
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.
        beta: where the loss turns from quadratic to linear (default 1.0).

    Example::

        >>> x, y = fjax.tensor([0.5, 3.0]), fjax.tensor([0.0, 0.0])
        >>> F.smooth_l1_loss(x, y, reduction="none")
        tensor([0.1250, 2.5000], dtype=fjax.float32)
        >>> F.smooth_l1_loss(x, y, reduction="none", beta=2.0)
        tensor([0.0625, 2.0000], dtype=fjax.float32)
    """
    reduction = _reduction("smooth_l1_loss", size_average, reduce, reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    input, target = _pair("smooth_l1_loss", input, target)
    return _reduce(_smooth_l1(input - target, beta), reduction)


@defop(static=("reduction", "delta"), method=False)
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Huber loss of ``d = input - target``: ``0.5 * d**2`` where ``|d| < delta``, else
    ``delta * (|d| - 0.5 * delta)``; reduced by ``reduction``.

    It equals ``delta * smooth_l1_loss(input, target, beta=delta)``.

    Args:
        input: the predictions.
        target: the targets, broadcast against ``input``.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.
        delta: where the loss turns from quadratic to linear (default 1.0).
        weight: optional per-element weight of ``input``'s shape (default None).

    Example::

        >>> x, y = fjax.tensor([0.5, 3.0]), fjax.tensor([0.0, 0.0])
        >>> F.huber_loss(x, y, reduction="none", delta=2.0)
        tensor([0.1250, 4.0000], dtype=fjax.float32)
    """
    reduction = _reduction("huber_loss", None, None, reduction)
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    shape = input.shape
    input, target = _pair("huber_loss", input, target)
    d = input - target
    ad = jnp.abs(d)
    loss = jnp.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))
    return _elementwise_weighted("huber_loss", loss, shape, weight, reduction, False)


@defop(static=_LEGACY, method=False)
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross entropy ``-(t * log(x) + (1 - t) * log(1 - x))`` of probabilities ``x``
    and targets ``t`` of the same shape, reduced by ``reduction``.

    As in torch, each log is clamped at -100, so a confident wrong prediction costs 100, not inf.

    Args:
        input: probabilities in ``[0, 1]``.
        target: targets of ``input``'s shape.
        weight: optional weight of each element's loss, broadcast to ``input`` (default None).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> p, t = fjax.tensor([0.8, 0.2, 1.0]), fjax.tensor([1.0, 0.0, 0.0])
        >>> F.binary_cross_entropy(p, t, reduction="none")
        tensor([  0.2231,   0.2231, 100.0000], dtype=fjax.float32)
    """
    reduction = _reduction("binary_cross_entropy", size_average, reduce, reduction)
    if input.shape != target.shape:
        raise ValueError(f"binary_cross_entropy: target {target.shape} must have the input's shape {input.shape}")
    input, target = promote(to_float(input), to_float(target))
    low = jnp.asarray(-100, input.dtype)
    loss = -(target * jnp.maximum(jnp.log(input), low) + (1 - target) * jnp.maximum(jnp.log1p(-input), low))
    return _reduce(_weighted("binary_cross_entropy", loss, weight), reduction)


@defop(static=_LEGACY, method=False)
def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably from logits.

    ``pos_weight`` scales the positive term: ``-(pw * t * log σ(x) + (1 - t) log(1 - σ(x)))``.

    Args:
        input: logits.
        target: targets of ``input``'s shape.
        weight: optional weight of each element's loss, broadcast to ``input`` (default None).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.
        pos_weight: optional weight of the positive term, broadcast along the last dim (default None).

    Example::

        >>> x, t = fjax.tensor([0.0, 2.0, -2.0]), fjax.tensor([1.0, 1.0, 0.0])
        >>> F.binary_cross_entropy_with_logits(x, t, reduction="none")
        tensor([0.6931, 0.1269, 0.1269], dtype=fjax.float32)
        >>> F.binary_cross_entropy_with_logits(x, t, reduction="none", pos_weight=fjax.tensor(2.0))
        tensor([1.3863, 0.2539, 0.1269], dtype=fjax.float32)
        >>> F.binary_cross_entropy_with_logits(fjax.tensor([-200.0]), fjax.tensor([1.0]))
        tensor(200., dtype=fjax.float32)
    """
    reduction = _reduction("binary_cross_entropy_with_logits", size_average, reduce, reduction)
    if input.shape != target.shape:
        raise ValueError(
            f"binary_cross_entropy_with_logits: target {target.shape} must have the input's shape {input.shape}"
        )
    input, target = promote(to_float(input), to_float(target))
    log_sig = jax.nn.log_sigmoid(input)
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight.astype(input.dtype) - 1) * target + 1)
    loss = (1 - target) * input - log_sig
    return _reduce(_weighted("binary_cross_entropy_with_logits", loss, weight), reduction)


@defop(static=_LEGACY + ("log_target",), method=False)
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence ``target * (log(target) - input)`` for log-probabilities
    ``input``; with ``log_target=True`` the target is given as log-probabilities too.

    ``reduction='batchmean'`` divides the sum by the batch size (the true KL divergence);
    the default ``'mean'`` divides by the number of elements instead.

    Args:
        input: log-probabilities.
        target: probabilities (log-probabilities if ``log_target``).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default), ``'batchmean'`` or ``'sum'``.
        log_target: if True, ``target`` is given as log-probabilities (default False).

    Example::

        >>> logq = fjax.tensor([[0.5, 0.5], [0.5, 0.5]]).log()
        >>> p = fjax.tensor([[0.25, 0.75], [0.5, 0.5]])
        >>> F.kl_div(logq, p, reduction="batchmean")
        tensor(0.0654, dtype=fjax.float32)
        >>> F.kl_div(logq, p)
        tensor(0.0327, dtype=fjax.float32)
    """
    batchmean = reduction == "batchmean"
    reduction = _reduction("kl_div", size_average, reduce, "sum" if batchmean else reduction)
    input, target = _pair("kl_div", input, target)
    if log_target:
        loss = jnp.exp(target) * (target - input)
    else:
        loss = jax.scipy.special.xlogy(target, target) - target * input
    out = _reduce(loss, reduction)
    return out / input.shape[0] if batchmean and input.ndim else out


@defop(static=_LEGACY, method=False)
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """Cosine embedding loss of ``(N, D)`` or ``(D,)`` pairs: ``1 - cos(x1, x2)`` where
    ``target == 1`` and ``max(0, cos(x1, x2) - margin)`` where ``target == -1``.

    Args:
        input1: ``(N, D)`` or ``(D,)`` first embeddings.
        input2: second embeddings, of ``input1``'s shape.
        target: labels in ``{1, -1}``, ``(N,)`` or ``()``.
        margin: the margin of the ``-1`` case (default 0).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> a = fjax.tensor([[1.0, 0.0], [1.0, 0.0]])
        >>> b = fjax.tensor([[1.0, 1.0], [1.0, 1.0]])
        >>> F.cosine_embedding_loss(a, b, fjax.tensor([1, -1]), reduction="none")
        tensor([0.2929, 0.7071], dtype=fjax.float32)
        >>> F.cosine_embedding_loss(a, b, fjax.tensor([1, -1]), margin=0.5, reduction="none")
        tensor([0.2929, 0.2071], dtype=fjax.float32)
    """
    reduction = _reduction("cosine_embedding_loss", size_average, reduce, reduction)
    input1, input2 = promote(to_float(input1), to_float(input2))
    if input1.ndim not in (1, 2) or input1.shape != input2.shape:
        raise ValueError(
            f"cosine_embedding_loss: expected inputs of one shape (N, D) or (D,), got {input1.shape} and {input2.shape}"
        )
    dim = input1.ndim - 1
    eps = jnp.asarray(1e-12, input1.dtype)
    prod = jnp.sum(input1 * input2, axis=dim)
    mag = (jnp.sum(input1 * input1, axis=dim) + eps) * (jnp.sum(input2 * input2, axis=dim) + eps)
    cos = prod / jnp.sqrt(mag)
    zero = jnp.zeros((), cos.dtype)
    loss = jnp.where(target == 1, 1 - cos, zero)
    loss = loss + jnp.where(target == -1, jnp.maximum(cos - margin, 0), zero)
    return _reduce(loss, reduction)


@defop(static=_LEGACY, method=False)
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """Ranking loss ``max(0, -target * (input1 - input2) + margin)``: ``target = 1`` asks for
    ``input1`` to rank higher than ``input2`` by ``margin``, ``target = -1`` for the reverse.

    Args:
        input1: the first scores.
        input2: the second scores.
        target: labels in ``{1, -1}``.
        margin: the required score gap (default 0).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> x1, x2 = fjax.tensor([1.0, 2.0, 3.0]), fjax.tensor([2.0, 2.0, 2.0])
        >>> F.margin_ranking_loss(x1, x2, fjax.tensor([1.0, 1.0, -1.0]), reduction="none")
        tensor([1., 0., 1.], dtype=fjax.float32)
        >>> F.margin_ranking_loss(x1, x2, fjax.tensor([1.0, 1.0, -1.0]), margin=0.5)
        tensor(1.1667, dtype=fjax.float32)
    """
    reduction = _reduction("margin_ranking_loss", size_average, reduce, reduction)
    if not jnp.ndim(input1) == jnp.ndim(input2) == jnp.ndim(target):
        raise _checks.OpError(
            f"margin_ranking_loss: all input tensors should have the same dimension, got input1 "
            f"{jnp.shape(input1)}, input2 {jnp.shape(input2)} and target {jnp.shape(target)}"
        )
    input1, input2, target = promote(to_float(input1), to_float(input2), target)
    return _reduce(jnp.maximum(-target * (input1 - input2) + margin, 0), reduction)


@defop(static=_LEGACY, method=False)
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """Hinge embedding loss of distances ``input`` and labels ``target`` in ``{1, -1}``:
    ``input`` where ``target == 1`` and ``max(0, margin - input)`` where ``target == -1``.

    Args:
        input: the distances.
        target: labels in ``{1, -1}``.
        margin: the margin of the ``-1`` case (default 1.0).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> x = fjax.tensor([0.3, 2.0, 0.5])
        >>> F.hinge_embedding_loss(x, fjax.tensor([1, -1, -1]), reduction="none")
        tensor([0.3000, 0.0000, 0.5000], dtype=fjax.float32)
    """
    reduction = _reduction("hinge_embedding_loss", size_average, reduce, reduction)
    input = to_float(input)
    zero = jnp.zeros((), input.dtype)
    loss = jnp.where(target != 1, jnp.maximum(margin - input, 0), zero)
    return _reduce(loss + jnp.where(target != -1, input, zero), reduction)


@defop(static=_LEGACY, method=False)
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Two-class logistic loss ``log(1 + exp(-target * input))`` for labels in ``{1, -1}``,
    computed without overflow and reduced by ``reduction``.

    Args:
        input: the scores.
        target: labels in ``{1, -1}``, of ``input``'s shape.
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> F.soft_margin_loss(fjax.tensor([2.0, -1.0]), fjax.tensor([1.0, 1.0]), reduction="none")
        tensor([0.1269, 1.3133], dtype=fjax.float32)
    """
    reduction = _reduction("soft_margin_loss", size_average, reduce, reduction)
    input, target = _pair("soft_margin_loss", input, target)
    return _reduce(jnp.logaddexp(0, -target * input), reduction)


@defop(static=_LEGACY, method=False)
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Multi-label loss of ``(N, C)`` logits and 0/1 targets: the binary cross entropy with
    logits of each class, averaged over the ``C`` classes, then reduced over samples.

    Args:
        input: ``(N, C)`` logits.
        target: 0/1 labels of ``input``'s shape.
        weight: optional ``(C,)`` per-class weight (default None).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> x = fjax.tensor([[0.0, 2.0], [0.0, 0.0]])
        >>> F.multilabel_soft_margin_loss(x, fjax.tensor([[1.0, 0.0], [1.0, 1.0]]), reduction="none")
        tensor([1.4100, 0.6931], dtype=fjax.float32)
    """
    reduction = _reduction("multilabel_soft_margin_loss", size_average, reduce, reduction)
    input, target = _pair("multilabel_soft_margin_loss", input, target)
    loss = -(target * jax.nn.log_sigmoid(input) + (1 - target) * jax.nn.log_sigmoid(-input))
    loss = _weighted("multilabel_soft_margin_loss", loss, weight)
    return _reduce(jnp.mean(loss, axis=input.ndim - 1), reduction)


@defop(static=("log_input", "full") + _LEGACY, method=False)
def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    """Poisson negative log-likelihood: ``exp(x) - t * x`` (or ``x - t log(x + eps)``).

    The first form is for ``log_input=True`` (``input`` is the log-rate), the second for
    ``log_input=False`` (``input`` is the rate). ``full`` adds Stirling's approximation of
    ``log(t!)`` where ``t > 1``.

    Args:
        input: the log-rate (``log_input=True``) or the rate.
        target: the observed counts.
        log_input: whether ``input`` is the log-rate (default True).
        full: if True, add Stirling's approximation of ``log(target!)`` (default False).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        eps: added to ``input`` inside the log when ``log_input=False`` (default 1e-8).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> t = fjax.tensor([1.0, 2.0])
        >>> F.poisson_nll_loss(fjax.tensor([0.0, 1.0]), t, reduction="none")
        tensor([1.0000, 0.7183], dtype=fjax.float32)
        >>> F.poisson_nll_loss(fjax.tensor([1.0, 2.0]), t, log_input=False, reduction="none")
        tensor([1.0000, 0.6137], dtype=fjax.float32)
    """
    reduction = _reduction("poisson_nll_loss", size_average, reduce, reduction)
    input, target = _pair("poisson_nll_loss", input, target)
    if log_input:
        loss = jnp.exp(input) - target * input
    else:
        loss = input - target * jnp.log(input + jnp.asarray(eps, input.dtype))
    if full:
        safe = jnp.where(target > 1, target, 2)
        stirling = safe * jnp.log(safe) - safe + 0.5 * jnp.log(2 * math.pi * safe)
        loss = loss + jnp.where(target > 1, stirling, jnp.zeros((), loss.dtype))
    return _reduce(loss, reduction)


@defop(static=("full", "reduction"), method=False)
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log-likelihood ``0.5 * (log(var) + (input - target) ** 2 / var)``,
    with ``var`` clamped to at least ``eps``.

    ``var`` has the input's shape, or lacks (or has size 1 in) its last dim. The clamp leaves
    the gradient of ``var`` unchanged, as in torch; ``full`` adds ``0.5 * log(2 * pi)``.

    Args:
        input: the predicted means.
        target: the targets.
        var: the predicted variances, of ``input``'s shape or without (or size 1 in) its last dim.
        full: if True, add the constant ``0.5 * log(2 * pi)`` (default False).
        eps: the lower clamp of ``var`` (default 1e-6).
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> x, t = fjax.tensor([1.0, 2.0]), fjax.tensor([1.0, 0.0])
        >>> F.gaussian_nll_loss(x, t, fjax.tensor([1.0, 4.0]), reduction="none")
        tensor([0.0000, 1.1931], dtype=fjax.float32)
    """
    reduction = _reduction("gaussian_nll_loss", None, None, reduction)
    shape, vshape = jnp.shape(input), jnp.shape(var)
    if vshape and vshape not in (shape, shape[:-1]) and (vshape[:-1] != shape[:-1] or vshape[-1] != 1):
        raise ValueError(f"gaussian_nll_loss: var is of incorrect size: var {vshape} does not fit input {shape}")
    input, target = _pair("gaussian_nll_loss", input, target)
    var = jnp.asarray(var, input.dtype)
    if var.ndim and var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var[..., None]
        elif not (input.shape[:-1] == var.shape[:-1] and var.shape[-1] == 1):
            raise ValueError(f"gaussian_nll_loss: var {var.shape} does not fit input {input.shape}")
    var = var + jax.lax.stop_gradient(jnp.maximum(var, eps) - var)
    loss = 0.5 * (jnp.log(var) + jnp.square(input - target) / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@defop(static=("p", "swap") + _LEGACY, method=False)
def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """Triplet loss ``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the ``p``-norm
    ``pairwise_distance`` (``eps`` included).

    ``swap=True`` uses ``min(d(a, n), d(p, n))`` as the negative distance.

    Args:
        anchor: the anchor embeddings, ``(N, D)`` or ``(D,)``.
        positive: the positive embeddings.
        negative: the negative embeddings.
        margin: the required distance gap (default 1.0).
        p: the norm degree of the distance (default 2).
        eps: added inside the distance for stability (default 1e-6).
        swap: if True, use ``min(d(a, n), d(p, n))`` as the negative distance (default False).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> a = fjax.tensor([[0.0, 0.0], [0.0, 0.0]])
        >>> pos = fjax.tensor([[0.0, 1.0], [0.0, 1.0]])
        >>> neg = fjax.tensor([[0.0, 3.0], [0.0, 1.5]])
        >>> F.triplet_margin_loss(a, pos, neg, reduction="none")
        tensor([0.0000, 0.5000], dtype=fjax.float32)
    """
    reduction = _reduction("triplet_margin_loss", size_average, reduce, reduction)
    if not jnp.ndim(anchor) == jnp.ndim(positive) == jnp.ndim(negative):
        raise _checks.OpError(
            f"triplet_margin_loss: the anchor, positive and negative tensors are expected to have the same number "
            f"of dimensions, got {jnp.shape(anchor)}, {jnp.shape(positive)} and {jnp.shape(negative)}"
        )
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = jnp.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(jnp.maximum(d_pos - d_neg + margin, 0), reduction)


def _margin_inputs(name, input, target):
    """(input as (N, C), target as (N, ...), batched?) for the multi-class margin losses."""
    if input.ndim > 2 or target.ndim > 2 or not jnp.issubdtype(target.dtype, jnp.integer):
        raise ValueError(
            f"{name}: expected input (C,) or (N, C) and an integer target, got {input.shape} and "
            f"{target.shape} {target.dtype}"
        )
    return jnp.atleast_2d(input), input.ndim == 2


def _check_class_target(name, lo=0):
    def check(input, target, *args, **kwargs):
        c = max(jnp.shape(input)[-1] if jnp.ndim(input) else 1, 1)
        _check_range(target, lo, c, IndexOutOfRange, lambda v: f"{name}: target {v} is out of bounds for {c} classes")

    return check


@defop(static=("p",) + _LEGACY, method=False, check=_check_class_target("multi_margin_loss"))
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Multi-class hinge loss: for each sample, ``sum_{i != y} max(0, margin - x[y] + x[i]) ** p / C``
    (times ``weight[y]`` when given), for input ``(N, C)`` or ``(C,)`` and class targets ``y``.

    Args:
        input: ``(N, C)`` or ``(C,)`` scores.
        target: class indices, ``(N,)`` or ``()``.
        p: the power of each hinge term, 1 (default) or 2.
        margin: the margin (default 1.0).
        weight: optional ``(C,)`` per-class weight (default None).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> x = fjax.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> F.multi_margin_loss(x, fjax.tensor([3]))
        tensor(0.3250, dtype=fjax.float32)
    """
    reduction = _reduction("multi_margin_loss", size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 are supported, got {p}")
    x, batched = _margin_inputs("multi_margin_loss", input, target)
    x = to_float(x)
    y = target.reshape(-1)
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"multi_margin_loss: input {input.shape} and target {target.shape} differ in batch size")
    c = x.shape[1]
    picked = jnp.take_along_axis(x, y[:, None], axis=1)
    hinge = jnp.maximum(jnp.asarray(margin, x.dtype) - picked + x, 0)
    hinge = hinge**p if p == 2 else hinge
    if weight is not None:
        hinge = hinge * weight.astype(x.dtype)[y][:, None]
    hinge = jnp.where(jnp.arange(c)[None, :] == y[:, None], 0, hinge)
    loss = jnp.sum(hinge, axis=1) / c
    return _reduce(loss if batched else loss.reshape(()), reduction)


@defop(static=_LEGACY, method=False, check=_check_class_target("multilabel_margin_loss", -1))
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss: ``target`` lists each sample's classes, ended by the first -1;
    each pair (listed class ``j``, unlisted class ``i``) adds ``max(0, 1 - (x[j] - x[i])) / C``.

    Args:
        input: ``(N, C)`` or ``(C,)`` scores.
        target: integer class lists of ``input``'s shape, each ended by the first -1.
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch.
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch.
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.

    Example::

        >>> x = fjax.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> F.multilabel_margin_loss(x, fjax.tensor([[3, 0, -1, 1]]))
        tensor(0.8500, dtype=fjax.float32)
    """
    reduction = _reduction("multilabel_margin_loss", size_average, reduce, reduction)
    x, batched = _margin_inputs("multilabel_margin_loss", input, target)
    x = to_float(x)
    y = jnp.atleast_2d(target)
    if y.shape != x.shape:
        raise ValueError(f"multilabel_margin_loss: target {target.shape} must have the input's shape {input.shape}")
    c = x.shape[1]
    listed_slot = jnp.cumprod(y >= 0, axis=1).astype(bool)  # slots before the first -1
    classes = jnp.arange(c)
    is_target = jnp.any(listed_slot[:, :, None] & (y[:, :, None] == classes), axis=1)  # (N, C)
    picked = jnp.take_along_axis(x, jnp.where(listed_slot, y, 0), axis=1)  # x[j] per slot
    hinge = jnp.maximum(1 - (picked[:, :, None] - x[:, None, :]), 0)  # (N, slot, i)
    hinge = jnp.where(listed_slot[:, :, None] & ~is_target[:, None, :], hinge, 0)
    loss = jnp.sum(hinge, axis=(1, 2)) / c
    return _reduce(loss if batched else loss.reshape(()), reduction)


def _logsumexp(*xs):
    """log(sum(exp(x))) of arrays that may all be -inf, with finite gradients there."""
    m = jax.lax.stop_gradient(functools.reduce(jnp.maximum, xs))
    m = jnp.where(jnp.isfinite(m), m, 0)
    total = sum(jnp.exp(x - m) for x in xs)
    positive = total > 0
    return jnp.where(positive, jnp.log(jnp.where(positive, total, 1)) + m, -jnp.inf)


def _ctc_nll(log_probs, labels, label_lengths, input_lengths, blank):
    """-log p(labels | log_probs) per sample by the CTC forward recursion (log space, a scan over time).

    log_probs ``(T, N, C)``, labels ``(N, S)`` padded; returns ``(N,)``."""
    t_max, n = log_probs.shape[:2]
    s_ext = 2 * labels.shape[1] + 1
    ext = jnp.full((n, s_ext), blank, labels.dtype).at[:, 1::2].set(labels)  # blank, l1, blank, l2, ...
    skip = jnp.concatenate([jnp.zeros((n, 2), bool), (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])], axis=1)
    emit = jnp.take_along_axis(log_probs, jnp.broadcast_to(ext[None], (t_max, n, s_ext)), axis=2)  # (T, N, S')
    neg = jnp.asarray(-jnp.inf, log_probs.dtype)
    start = jnp.where(jnp.arange(s_ext) < 2, emit[0], neg)

    def step(alpha, inputs):
        t, e = inputs
        prev1 = jnp.concatenate([jnp.full((n, 1), neg), alpha[:, :-1]], axis=1)
        prev2 = jnp.concatenate([jnp.full((n, 2), neg), alpha[:, :-2]], axis=1)
        new = _logsumexp(alpha, prev1, jnp.where(skip, prev2, neg)) + e
        return jnp.where((t < input_lengths)[:, None], new, alpha), None

    alpha, _ = jax.lax.scan(step, start, (jnp.arange(1, t_max), emit[1:]))
    last = jnp.take_along_axis(alpha, 2 * label_lengths[:, None], axis=1)[:, 0]
    before = jnp.take_along_axis(alpha, jnp.maximum(2 * label_lengths - 1, 0)[:, None], axis=1)[:, 0]
    return -_logsumexp(last, jnp.where(label_lengths > 0, before, neg))


@defop(static=("blank", "reduction", "zero_infinity"), method=False)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss: ``-log`` of the total probability of every
    alignment of ``targets`` to ``log_probs`` (``(T, N, C)`` or ``(T, C)``, log-softmaxed).

    ``targets`` are ``(N, S)`` padded or all sequences concatenated (1-d); ``input_lengths`` and
    ``target_lengths`` give each sample's lengths. ``reduction="mean"`` divides each loss by its
    target length before averaging; ``zero_infinity`` zeroes impossible alignments' losses and
    gradients. The gradient w.r.t. ``log_probs`` is torch's, which assumes they come from a
    log_softmax.

    Example::

        >>> lp = fjax.tensor([[[0.5, 0.5]], [[0.5, 0.5]]]).log()
        >>> F.ctc_loss(lp, fjax.tensor([[1]]), fjax.tensor([2]), fjax.tensor([1]), reduction="sum")
        tensor(0.2877, dtype=fjax.float32)
    """
    reduction = _REDUCTION_ENUM.get(reduction, reduction) if isinstance(reduction, int) else reduction
    reduction = _reduction("ctc_loss", None, None, reduction)
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs, targets = log_probs[:, None], targets[None]
        input_lengths, target_lengths = input_lengths.reshape(1), target_lengths.reshape(1)
    if log_probs.ndim != 3 or not jnp.issubdtype(targets.dtype, jnp.integer):
        raise ValueError(
            f"ctc_loss: expected log_probs (T, N, C) and integer targets, got {log_probs.shape}, {targets.dtype}"
        )
    if not 0 <= blank < log_probs.shape[2]:
        raise _checks.OpError(f"ctc_loss: blank must be in label range [0, {log_probs.shape[2]}), got blank={blank}")
    if input_lengths.shape != (log_probs.shape[1],) or target_lengths.shape != (log_probs.shape[1],):
        raise _checks.OpError(
            f"ctc_loss: input_lengths {input_lengths.shape} and target_lengths {target_lengths.shape} must be of "
            f"size batch_size={log_probs.shape[1]}"
        )
    log_probs = to_float(log_probs)
    input_lengths, target_lengths = input_lengths.astype(jnp.int32), target_lengths.astype(jnp.int32)
    if targets.ndim == 1:  # concatenated: cut each sample's labels out at its offset
        starts = jnp.cumsum(target_lengths) - target_lengths
        pos = starts[:, None] + jnp.arange(max(targets.shape[0], 1))
        labels = jnp.take(targets, jnp.clip(pos, 0, max(targets.shape[0] - 1, 0)), axis=0, mode="clip")
    else:
        labels = targets
    labels = jnp.where(jnp.arange(labels.shape[1]) < target_lengths[:, None], labels, blank)
    nll = _ctc_nll(log_probs, labels, target_lengths, input_lengths, blank)
    # torch's gradient is exp(log_probs) - posterior over the valid steps: the first term is what
    # differentiating through a log_softmax adds; here it enters with a zero value
    valid = (jnp.arange(log_probs.shape[0])[:, None] < input_lengths)[..., None]
    soft = jnp.sum(jnp.where(valid, jnp.exp(log_probs), 0), axis=(0, 2))
    loss = nll + (soft - jax.lax.stop_gradient(soft))
    if zero_infinity:
        loss = jnp.where(jnp.isinf(nll), jnp.zeros((), loss.dtype), loss)
    if reduction == "mean":
        return jnp.mean(loss / jnp.maximum(target_lengths, 1).astype(loss.dtype))
    if reduction == "sum":
        return jnp.sum(loss)
    return loss[0] if unbatched else loss
