"""Loss functions (torch.nn.functional), with torch's reductions and conventions."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ..errors import IndexOutOfRange
from ._promote import promote, to_float
from ._registry import defop
from .activation import pairwise_distance
from .indexing import _check_range

_LEGACY = ("size_average", "reduce", "reduction")


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


def _nll(name, logp, target, weight, ignore_index, reduction):
    """Negative log-likelihood of class-index targets; also returns the per-element weights."""
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
    picked = jnp.take_along_axis(logp, jnp.expand_dims(safe, dim), axis=dim)
    picked = jnp.squeeze(picked, dim)
    w = jnp.ones((), logp.dtype) if weight is None else weight.astype(logp.dtype)[safe]
    w = jnp.where(ignored, jnp.zeros((), logp.dtype), w)
    loss = -picked * w
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
    """``-weight[t] * input[t]`` for log-probabilities ``(N, C, ...)`` and class indices ``t``.

    ``mean`` divides by the summed weights of the targets that are not ``ignore_index``.
    """
    reduction = _reduction("nll_loss", size_average, reduce, reduction)
    input, weight = promote(to_float(input), weight)
    return _nll("nll_loss", input, target, weight, ignore_index, reduction)[0]


@defop(static=("ignore_index", "label_smoothing") + _LEGACY, method=False, check=_check_targets("cross_entropy"))
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
    """Cross entropy of logits ``(N, C, ...)`` with class indices or class probabilities.

    Integer targets are class indices (``ignore_index``, ``weight``, ``label_smoothing``
    as torch); float targets of the input's shape are class probabilities.
    """
    reduction = _reduction("cross_entropy", size_average, reduce, reduction)
    input, weight = promote(to_float(input), weight)
    dim = _class_dim("cross_entropy", input, target)
    n_classes = input.shape[dim]
    if weight is not None and weight.shape != (n_classes,):
        raise ValueError(f"cross_entropy: expected weight of shape ({n_classes},), got {weight.shape}")
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


@defop(static=_LEGACY, method=False)
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """``(input - target) ** 2``, optionally weighted, reduced."""
    reduction = _reduction("mse_loss", size_average, reduce, reduction)
    shape = input.shape
    input, target = _pair("mse_loss", input, target)
    loss = jnp.square(input - target)
    return _elementwise_weighted("mse_loss", loss, shape, weight, reduction, True)


@defop(static=_LEGACY, method=False)
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """``|input - target|``, optionally weighted, reduced."""
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
    """Quadratic below ``beta`` (``0.5 d**2 / beta``), linear above (``|d| - 0.5 beta``)."""
    reduction = _reduction("smooth_l1_loss", size_average, reduce, reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    input, target = _pair("smooth_l1_loss", input, target)
    return _reduce(_smooth_l1(input - target, beta), reduction)


@defop(static=("reduction", "delta"), method=False)
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``delta * smooth_l1(d, beta=delta)``: quadratic below ``delta``, linear above."""
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
    """``-(t log x + (1 - t) log(1 - x))`` for probabilities ``x``; logs clamped at -100."""
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
    """``target * (log(target) - input)`` for log-probabilities ``input``.

    ``reduction='batchmean'`` divides the sum by the batch size (the true KL divergence).
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
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos - margin)`` where it is -1."""
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
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _reduction("margin_ranking_loss", size_average, reduce, reduction)
    input1, input2, target = promote(to_float(input1), to_float(input2), target)
    return _reduce(jnp.maximum(-target * (input1 - input2) + margin, 0), reduction)


@defop(static=_LEGACY, method=False)
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``input`` where ``target != -1`` plus ``max(0, margin - input)`` where ``target != 1``."""
    reduction = _reduction("hinge_embedding_loss", size_average, reduce, reduction)
    input = to_float(input)
    zero = jnp.zeros((), input.dtype)
    loss = jnp.where(target != 1, jnp.maximum(margin - input, 0), zero)
    return _reduce(loss + jnp.where(target != -1, input, zero), reduction)


@defop(static=_LEGACY, method=False)
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``."""
    reduction = _reduction("soft_margin_loss", size_average, reduce, reduction)
    input, target = _pair("soft_margin_loss", input, target)
    return _reduce(jnp.logaddexp(0, -target * input), reduction)


@defop(static=_LEGACY, method=False)
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per-class binary logistic loss of ``(N, C)`` logits, averaged over classes."""
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

    ``full`` adds Stirling's approximation of ``log(t!)`` where ``t > 1``.
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
    """``0.5 * (log(var) + (input - target) ** 2 / var)``; ``var`` clamped to ``eps``.

    The clamp leaves the gradient of ``var`` unchanged, as in torch.
    """
    reduction = _reduction("gaussian_nll_loss", None, None, reduction)
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
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the p-norm pairwise distance."""
    reduction = _reduction("triplet_margin_loss", size_average, reduce, reduction)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = jnp.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(jnp.maximum(d_pos - d_neg + margin, 0), reduction)
