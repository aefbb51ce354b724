"""Normalization, embedding, dropout, attention and pixel shuffling (torch.nn.functional)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ..errors import IndexOutOfRange
from . import _checks, _saving
from ._promote import promote, to_float
from ._registry import Rows, _passes, defop
from .indexing import _check_range, _host


def _affine(x, weight, bias, shape):
    if weight is not None:
        x = x * weight.reshape(shape)
    if bias is not None:
        x = x + bias.reshape(shape)
    return x


def _normalize(x, axes, eps):
    mean = jnp.mean(x, axis=axes, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=axes, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + jnp.asarray(eps, x.dtype))


def _as_shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


_LAYER_NORM_ROWS = Rows(
    ("input",),
    when=lambda s, t: len(t["input"][0]) > len(_as_shape(s["normalized_shape"])),
    dims=_passes(keep=lambda s, shape: len(shape) - len(_as_shape(s["normalized_shape"]))),
)
"""layer_norm's (and rms_norm's) rows are their own where dim 0 is not normalized."""


@defop(static=("normalized_shape",), method=False, rows=_LAYER_NORM_ROWS)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Layer normalization: standardize over the trailing ``normalized_shape`` dims, then
    apply the optional elementwise ``weight`` and ``bias`` (both of ``normalized_shape``).

    Each slice is mapped to ``(x - mean) / sqrt(var + eps)`` with the biased variance, as torch.

    Args:
        input: a tensor whose trailing dims are ``normalized_shape``.
        normalized_shape: the trailing dims normalized over (an int or a tuple).
        weight: optional scale of ``normalized_shape`` (default None).
        bias: optional shift of ``normalized_shape`` (default None).
        eps: added to the variance for stability (default 1e-5).

    Example::

        >>> x = fjax.tensor([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]])
        >>> F.layer_norm(x, (3,))
        tensor([[-1.2247,  0.0000,  1.2247],
                [ 0.0000,  0.0000,  0.0000]], dtype=fjax.float32)
        >>> F.layer_norm(x, (3,), weight=fjax.tensor([1.0, 1.0, 2.0]), bias=fjax.tensor([0.0, 1.0, 0.0]))
        tensor([[-1.2247,  1.0000,  2.4495],
                [ 0.0000,  1.0000,  0.0000]], dtype=fjax.float32)
    """
    shape = _as_shape(normalized_shape)
    if not shape or input.shape[input.ndim - len(shape) :] != shape:
        raise ValueError(f"layer_norm: input {input.shape} does not end with normalized_shape {shape}")
    input, weight, bias = promote(input, weight, bias)
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    return _layer_norm(input, weight, bias, eps, axes, shape)


def _layer_norm(x, w, b, eps, axes, shape):
    """``_affine(_normalize(x, axes, eps), w, b, shape)`` whose derivative reads what torch's
    layer-norm backward saves: the input, the row means and the reciprocal standard
    deviations. The rule (a JVP, run under ``jax.checkpoint`` as ``_saving.saves_inputs``'s)
    forms the normalized input as ``x * rstd - mean * rstd``, not the forward's
    ``(x - mean) * rstd``: inside one compiled program (a fused eager step) XLA would merge the
    two and keep the forward's ``x - mean`` and a broadcast ``rstd`` until the backward, two
    arrays of the input's size beside the input. ``eps`` gets no derivative (torch's is a number)."""
    if not _saving._floating(x):
        return _affine(_normalize(x, axes, eps), w, b, shape)
    have = [a is not None for a in (w, b)]

    def stats(x, eps):
        mean = jnp.mean(x, axis=axes, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=axes, keepdims=True)
        return mean, jax.lax.rsqrt(var + jnp.asarray(eps, x.dtype))

    def affine(y, wb):
        w, b = (wb.pop(0) if h else None for h in have)
        return _affine(y, w, b, shape)

    def rule(x, mean, rstd, wb, tx, twb):
        xhat = x * rstd - mean * rstd
        tm = jnp.mean(tx, axis=axes, keepdims=True)
        ty = rstd * (tx - tm - xhat * jnp.mean(xhat * tx, axis=axes, keepdims=True))
        tw, tb = (twb.pop(0) if h else None for h in have)
        if have[0]:
            ty = ty * wb[0].reshape(shape) + xhat * tw.reshape(shape)
        return ty if tb is None else ty + tb.reshape(shape)

    @jax.custom_jvp
    def op(x, wb, eps):
        mean, rstd = stats(x, eps)
        return affine((x - mean) * rstd, list(wb))

    @op.defjvp
    def _jvp(primals, tangents):
        x, wb, eps = primals
        tx, twb, _ = tangents
        mean, rstd = stats(x, eps)
        y = affine((x - mean) * rstd, list(wb))
        return y, jax.checkpoint(lambda *a: rule(*a[:4], a[4], list(a[5])), prevent_cse=False)(
            x, mean, rstd, list(wb), tx, list(twb)
        )

    return op(x, [a for a in (w, b) if a is not None], eps)


@defop(static=("normalized_shape", "eps"), method=False, rows=_LAYER_NORM_ROWS)
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """RMS normalization: ``x / sqrt(mean(x**2) + eps) * weight`` over the trailing
    ``normalized_shape`` dims (no centering, no bias).

    ``eps=None`` uses the machine epsilon of the input's dtype, as torch does.

    Args:
        input: a tensor whose trailing dims are ``normalized_shape``.
        normalized_shape: the trailing dims normalized over (an int or a tuple).
        weight: optional scale of ``normalized_shape`` (default None).
        eps: added to the mean square (default None: the dtype's machine epsilon).

    Example::

        >>> x = fjax.tensor([[3.0, 4.0], [1.0, 1.0]])
        >>> F.rms_norm(x, (2,))
        tensor([[0.8485, 1.1314],
                [1.0000, 1.0000]], dtype=fjax.float32)
        >>> F.rms_norm(x, (2,), weight=fjax.tensor([2.0, 0.5]))
        tensor([[1.6971, 0.5657],
                [2.0000, 0.5000]], dtype=fjax.float32)
    """
    shape = _as_shape(normalized_shape)
    if not shape or input.shape[input.ndim - len(shape) :] != shape:
        raise ValueError(f"rms_norm: input {input.shape} does not end with normalized_shape {shape}")
    input, weight = promote(input, weight)
    eps = jnp.finfo(input.dtype).eps if eps is None else eps
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    ms = jnp.mean(jnp.square(input), axis=axes, keepdims=True)
    out = input * jax.lax.rsqrt(ms + jnp.asarray(eps, input.dtype))
    return _affine(out, weight, None, shape)


def _moments(x, axes, eps):
    """(normalized x, mean, 1 / sqrt(var + eps)) over ``axes``, the statistics kept as dims of 1."""
    mean = jnp.mean(x, axis=axes, keepdims=True)
    rstd = jax.lax.rsqrt(jnp.mean(jnp.square(x - mean), axis=axes, keepdims=True) + jnp.asarray(eps, x.dtype))
    return (x - mean) * rstd, mean, rstd


@defop(static=("normalized_shape",), method=False)
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """ATen's ``native_layer_norm``: ``layer_norm``'s output with the ``mean`` and ``rstd``
    (``1 / sqrt(var + eps)``) of each normalized slice, shaped ``input.shape[:-k] + (1,) * k``.

    As in torch, gradients reach the inputs through the output only (the statistics are saved
    values for the backward).

    Example::

        >>> out, mean, rstd = fjax.native_layer_norm(fjax.tensor([[1.0, 3.0]]), [2], None, None, 0.0)
        >>> out
        tensor([[-1.,  1.]], dtype=fjax.float32)
        >>> mean, rstd
        (tensor([[2.]], dtype=fjax.float32), tensor([[1.]], dtype=fjax.float32))
    """
    shape = _as_shape(normalized_shape)
    if not shape or input.shape[input.ndim - len(shape) :] != shape:
        raise ValueError(f"native_layer_norm: input {input.shape} does not end with normalized_shape {shape}")
    input, weight, bias = promote(input, weight, bias)
    out, mean, rstd = _moments(input, tuple(range(input.ndim - len(shape), input.ndim)), eps)
    return _affine(out, weight, bias, shape), jax.lax.stop_gradient(mean), jax.lax.stop_gradient(rstd)


@defop(static=("N", "C", "HxW", "group"), method=False)
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """ATen's ``native_group_norm`` of an input with ``N`` samples, ``C`` channels and ``HxW``
    positions: ``group_norm``'s output with each (sample, group)'s ``mean`` and ``rstd``, both
    ``(N, group)``; unlike ``native_layer_norm``'s, gradients flow through them, as in torch.

    Example::

        >>> x = fjax.tensor([[1.0, 3.0, 10.0, 20.0]])
        >>> out, mean, rstd = fjax.native_group_norm(x, None, None, 1, 4, 1, 2, 0.0)
        >>> out, mean
        (tensor([[-1.,  1., -1.,  1.]], dtype=fjax.float32), tensor([[ 2., 15.]], dtype=fjax.float32))
    """
    if input.size != N * C * HxW or C % group:
        raise ValueError(
            f"native_group_norm: input {input.shape} is not N={N} x C={C} x HxW={HxW}, or C is not divisible by "
            f"group={group}"
        )
    input, weight, bias = promote(input, weight, bias)
    out, mean, rstd = _moments(input.reshape(N, group, -1), (2,), eps)
    shape = (C,) + (1,) * (input.ndim - 2)
    out = _affine(out.reshape(input.shape), weight, bias, shape)
    return out, mean.reshape(N, group), rstd.reshape(N, group)


def _channel_shape(name, input):
    if input.ndim < 2:
        raise ValueError(f"{name}: expected input of shape (N, C, ...), got {input.shape}")
    return (input.shape[1],) + (1,) * (input.ndim - 2)


@defop(static=("num_groups",), method=False, rows=Rows(("input",), when=lambda s, t: len(t["input"][0]) >= 2))
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalization of ``(N, C, ...)`` input: the ``C`` channels of each sample are split
    into ``num_groups`` groups, and each group is standardized over its channels and positions.

    ``C`` must be divisible by ``num_groups``; ``weight`` and ``bias`` are per channel.

    Args:
        input: an ``(N, C, *)`` tensor.
        num_groups: the number of groups ``C`` is split into.
        weight: optional ``(C,)`` scale (default None).
        bias: optional ``(C,)`` shift (default None).
        eps: added to the variance for stability (default 1e-5).

    Example::

        >>> x = fjax.tensor([[1.0, 3.0, 10.0, 20.0]])
        >>> F.group_norm(x, 2)
        tensor([[-1.0000,  1.0000, -1.0000,  1.0000]], dtype=fjax.float32)
        >>> F.group_norm(x, 1)
        tensor([[-1.0090, -0.7399,  0.2018,  1.5471]], dtype=fjax.float32)
    """
    shape = _channel_shape("group_norm", input)
    if num_groups == 0:
        raise ZeroDivisionError("group_norm: num_groups must be non-zero, got num_groups=0")
    if input.shape[1] % num_groups:
        raise ValueError(
            f"group_norm: {input.shape[1]} channels of input {input.shape} are not divisible by num_groups={num_groups}"
        )
    input, weight, bias = promote(input, weight, bias)
    grouped = input.reshape(input.shape[0], num_groups, -1)
    out = _normalize(grouped, (2,), eps).reshape(input.shape)
    return _affine(out, weight, bias, shape)


def _running(x, running_mean, running_var, eps, shape):
    mean = jax.lax.stop_gradient(running_mean).astype(x.dtype).reshape(shape)
    var = jax.lax.stop_gradient(running_var).astype(x.dtype).reshape(shape)
    return (x - mean) * jax.lax.rsqrt(var + jnp.asarray(eps, x.dtype))


@defop(static=("use_input_stats",), method=False, rows=Rows(("input",), when=lambda s, t: len(t["input"][0]) >= 3))
def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Instance normalization of ``(N, C, ...)`` input: standardize each channel of each sample
    over its spatial dims, then apply the optional per-channel ``weight`` and ``bias``.

    With ``use_input_stats=False`` the given ``running_mean`` and ``running_var`` are used
    instead. This op never updates the running buffers (``F.instance_norm`` does).

    Example::

        >>> x = fjax.tensor([[[1.0, 2.0, 3.0], [4.0, 4.0, 10.0]]])
        >>> fjax.instance_norm(x)
        tensor([[[-1.2247,  0.0000,  1.2247],
                 [-0.7071, -0.7071,  1.4142]]], dtype=fjax.float32)
    """
    shape = _channel_shape("instance_norm", input)
    input, weight, bias = promote(input, weight, bias)
    if use_input_stats:
        out = _normalize(input, tuple(range(2, input.ndim)), eps)
    elif running_mean is None or running_var is None:
        raise ValueError("instance_norm: use_input_stats=False needs running_mean and running_var")
    else:
        out = _running(input, running_mean, running_var, eps, shape)
    return _affine(out, weight, bias, shape)


def _batch_norm_of_real_rows(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5, *, valid
):
    """``batch_norm`` on a padded batch (``Rows.masked``): a training batch's statistics over
    the ``valid`` rows only."""
    if not training:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    input, weight, bias = promote(input, weight, bias)
    shape = _channel_shape("batch_norm", input)
    axes = (0,) + tuple(range(2, input.ndim))
    keep = valid.reshape((-1,) + (1,) * (input.ndim - 1))
    count = (jnp.sum(valid) * math.prod(input.shape[2:])).astype(input.dtype)
    zero = jnp.zeros((), input.dtype)
    mean = jnp.sum(jnp.where(keep, input, zero), axis=axes, keepdims=True) / count
    var = jnp.sum(jnp.where(keep, jnp.square(input - mean), zero), axis=axes, keepdims=True) / count
    out = (input - mean) * jax.lax.rsqrt(var + jnp.asarray(eps, input.dtype))
    return _affine(out, weight, bias, shape)


@defop(
    static=("training",),
    method=False,
    rows=Rows(("input",), when=lambda s, t: len(t["input"][0]) >= 2, masked=_batch_norm_of_real_rows),
)
def batch_norm(
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-5,
):
    """Batch normalization: standardize each channel (dim 1) by the batch's statistics when
    ``training``, else by ``running_mean`` and ``running_var``; then apply the optional
    per-channel ``weight`` and ``bias``.

    Only the output is returned: unlike ``F.batch_norm``, this op does not update the running
    buffers (modules do that with ``batch_norm_stats``).

    Example::

        >>> x = fjax.tensor([[1.0, 10.0], [3.0, 30.0]])
        >>> fjax.batch_norm(x, None, None, training=True)
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]], dtype=fjax.float32)
        >>> mean, var = fjax.tensor([2.0, 20.0]), fjax.tensor([1.0, 100.0])
        >>> fjax.batch_norm(x, mean, var, weight=fjax.tensor([1.0, 2.0]))
        tensor([[-1.0000, -2.0000],
                [ 1.0000,  2.0000]], dtype=fjax.float32)
    """
    input, weight, bias = promote(input, weight, bias)
    if input.size == 0:  # torch returns an empty copy, whatever the shape
        return input
    shape = _channel_shape("batch_norm", input)
    if training:
        if input.size // input.shape[1] <= 1:
            raise ValueError(
                f"batch_norm: expected more than 1 value per channel when training, got input {input.shape}"
            )
        out = _normalize(input, (0,) + tuple(range(2, input.ndim)), eps)
    elif running_mean is None or running_var is None:
        raise ValueError("batch_norm: training=False needs running_mean and running_var")
    else:
        out = _running(input, running_mean, running_var, eps, shape)
    return _affine(out, weight, bias, shape)


@defop(static=("training",), method=False)
def _native_batch_norm(input, weight, bias, running_mean, running_var, training, eps):
    """``batch_norm``'s output with ATen's saved statistics: the batch ``mean`` and
    ``1 / sqrt(var + eps)`` per channel when ``training``, empty tensors otherwise (no gradient
    flows through them). The running buffers are read, never written: ``fjax.native_batch_norm``
    updates them.

    Example::

        >>> x = fjax.tensor([[1.0, 10.0], [3.0, 30.0]])
        >>> out, mean, invstd = fjax.native_batch_norm(x, None, None, None, None, True, 0.1, 0.0)
        >>> mean, invstd
        (tensor([ 2., 20.], dtype=fjax.float32), tensor([1.0000, 0.1000], dtype=fjax.float32))
    """
    out = batch_norm(input, running_mean, running_var, weight, bias, training, 0.0, eps)
    if not training or input.size == 0:
        empty = jnp.zeros((0,), out.dtype)
        return out, empty, empty
    axes = (0,) + tuple(range(2, input.ndim))
    x = jax.lax.stop_gradient(to_float(input))
    mean = jnp.mean(x, axis=axes)
    invstd = jax.lax.rsqrt(jnp.var(x, axis=axes) + jnp.asarray(eps, x.dtype))
    return out, mean.astype(out.dtype), invstd.astype(out.dtype)


@defop(method=False)
def native_dropout_backward(grad_output, mask, scale):
    """ATen's ``native_dropout_backward``: ``grad_output * mask * scale``, the gradient of a
    dropout whose kept elements (``mask``) were scaled by ``scale``.

    Example::

        >>> fjax.native_dropout_backward(fjax.ones(3), fjax.tensor([True, False, True]), 2.0)
        tensor([2., 0., 2.], dtype=fjax.float32)
    """
    return grad_output * mask.astype(grad_output.dtype) * jnp.asarray(scale, grad_output.dtype)


def batch_norm_stats(input, running_mean, running_var, momentum=0.1, valid=None):
    """The running statistics torch's batch_norm stores after a training step.

    ``new = (1 - momentum) * running + momentum * batch``, with the unbiased batch variance.
    Not an op: modules call it on arrays (no gradient flows through buffers).

    Args:
        input: the ``(N, C, *)`` batch (an array).
        running_mean: the ``(C,)`` running mean.
        running_var: the ``(C,)`` running variance.
        momentum: the update factor (default 0.1).
        valid: a bool mask of the real rows of a padded batch (``fjax._bucket``), or None.

    Returns:
        ``(new_running_mean, new_running_var)`` in the dtypes of the running buffers.

    Example::

        >>> import jax.numpy as jnp
        >>> x = jnp.array([[1.0, 2.0], [3.0, 6.0]], jnp.float32)
        >>> mean, var = F.batch_norm_stats(x, jnp.zeros(2, jnp.float32), jnp.ones(2, jnp.float32), momentum=0.5)
        >>> mean.tolist(), var.tolist()
        ([1.0, 2.0], [1.5, 4.5])
    """
    if momentum is None:
        raise NotImplementedError("batch_norm_stats: momentum=None (cumulative average)")
    x = jax.lax.stop_gradient(input)
    axes = (0,) + tuple(range(2, x.ndim))
    if valid is None:
        n = x.size // x.shape[1]
        mean = jnp.mean(x, axis=axes)
        var = jnp.var(x, axis=axes) * (n / (n - 1))
    else:  # a padded batch (fjax._bucket): the real rows only
        keep = valid.reshape((-1,) + (1,) * (x.ndim - 1))
        n = (jnp.sum(valid) * math.prod(x.shape[2:])).astype(x.dtype)
        zero = jnp.zeros((), x.dtype)
        mean = jnp.sum(jnp.where(keep, x, zero), axis=axes) / n
        centered = jnp.where(keep, jnp.square(x - mean.reshape((1, -1) + (1,) * (x.ndim - 2))), zero)
        var = jnp.sum(centered, axis=axes) / (n - 1)
    new_mean = (1 - momentum) * running_mean + momentum * mean.astype(running_mean.dtype)
    new_var = (1 - momentum) * running_var + momentum * var.astype(running_var.dtype)
    return new_mean, new_var


def _check_embedding(input, weight, *args, **kwargs):
    n = jnp.shape(weight)[0] if jnp.ndim(weight) else 0
    _check_range(
        input, 0, n, IndexOutOfRange, lambda v: f"embedding: index {v} is out of range for a weight with {n} rows"
    )


@defop(
    static=("padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse"),
    method=False,
    check=_check_embedding,
    rows=Rows(
        ("input",),
        when=lambda s, t: not s["scale_grad_by_freq"] and s["max_norm"] is None,
        dims=_passes(keep=lambda s, shape: len(shape) if not s["scale_grad_by_freq"] and s["max_norm"] is None else 0),
    ),
)
def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Look up rows of the 2-d ``weight`` at the integer indices ``input``: the output has
    shape ``input.shape + (embedding_dim,)``.

    Row ``padding_idx`` receives no gradient; repeated indices accumulate theirs. Indices out
    of range raise. ``max_norm``, ``scale_grad_by_freq`` and ``sparse`` are not supported.

    Args:
        input: integer indices of any shape.
        weight: the ``(num_embeddings, embedding_dim)`` table.
        padding_idx: a row that receives no gradient (default None: none).
        max_norm: not supported (raises NotImplementedError unless None).
        norm_type: the p of ``max_norm``'s norm; unused, as ``max_norm`` is unsupported.
        scale_grad_by_freq: not supported (raises NotImplementedError when True).
        sparse: not supported (raises NotImplementedError when True).

    Example::

        >>> w = fjax.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 4.0]], requires_grad=True)
        >>> F.embedding(fjax.tensor([[2, 0], [1, 1]]), w).shape
        fjax.Size([2, 2, 2])
        >>> F.embedding(fjax.tensor([2, 0, 2]), w, padding_idx=0).sum().backward()
        >>> w.grad
        tensor([[0., 0.],
                [0., 0.],
                [2., 2.]], dtype=fjax.float32)
    """
    if max_norm is not None:
        raise NotImplementedError("embedding: max_norm (renormalizes weight in place)")
    if scale_grad_by_freq:
        raise NotImplementedError("embedding: scale_grad_by_freq=True")
    if sparse:
        raise NotImplementedError("embedding: sparse=True (sparse gradients)")
    if not jnp.issubdtype(input.dtype, jnp.integer):
        raise TypeError(f"embedding: expected integer indices, got {input.dtype}")
    if weight.ndim != 2:
        raise ValueError(f"embedding: expected a 2-d weight, got {weight.shape}")
    out = jnp.take(weight, input, axis=0, mode="clip")
    if padding_idx is None:
        return out
    pad = padding_idx + weight.shape[0] if padding_idx < 0 else padding_idx
    if not 0 <= pad < weight.shape[0]:
        raise _checks.ArgumentAssertionError(
            f"embedding: padding_idx={padding_idx} must be within num_embeddings={weight.shape[0]} ({weight.shape})"
        )
    return jnp.where((input == pad)[..., None], jax.lax.stop_gradient(out), out)


def _check_embedding_bag(input, weight, offsets=None, *args, **kwargs):
    _check_embedding(input, weight)
    if offsets is not None:
        n = math.prod(input.shape)
        _check_range(
            offsets, 0, n + 1, IndexOutOfRange, lambda v: f"embedding_bag: offset {v} is out of range for {n} indices"
        )


@defop(static=("mode", "include_last_offset", "padding_idx"), method=False, check=_check_embedding_bag)
def _embedding_bag(
    input, weight, offsets=None, mode="mean", per_sample_weights=None, include_last_offset=False, padding_idx=None
):
    """Sums, means or maxima of bags of ``weight`` rows: the rows of a 2-d ``input``, or the
    segments of a 1-d ``input`` that start at ``offsets``; ``F.embedding_bag`` calls it.

    Empty bags give zeros; indices equal to ``padding_idx`` count for nothing, not even in a
    mean's length; ``per_sample_weights`` (``mode="sum"`` only) scale each row first.

    Example::

        >>> w = fjax.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]])
        >>> F.embedding_bag(fjax.tensor([0, 1, 2]), w, fjax.tensor([0, 2]), mode="sum")
        tensor([[1., 2.],
                [4., 4.]], dtype=fjax.float32)
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights with mode={mode!r} (torch: 'sum' only)")
    if weight.ndim != 2:
        raise ValueError(f"embedding_bag: expected a 2-d weight, got {weight.shape}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets must be None for a 2-d input (each row is a bag)")
        bags, length = input.shape
        segment = jnp.repeat(jnp.arange(bags), length)
    elif input.ndim == 1:
        if offsets is None or offsets.ndim != 1:
            raise ValueError(f"embedding_bag: a 1-d input needs 1-d offsets, got {offsets}")
        bags = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
        segment = jnp.searchsorted(offsets, jnp.arange(input.shape[0]), side="right") - 1
        if include_last_offset:  # indices at or past the last offset belong to no bag
            segment = jnp.where(jnp.arange(input.shape[0]) < offsets[-1], segment, bags)
    else:
        raise ValueError(f"embedding_bag: expected a 1-d or 2-d input, got {input.shape}")
    flat = input.reshape(-1)
    rows = jnp.take(weight, flat, axis=0, mode="clip")
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1).astype(rows.dtype)
    if padding_idx is not None:
        pad = padding_idx + weight.shape[0] if padding_idx < 0 else padding_idx
        segment = jnp.where(flat == pad, bags, segment)
    if mode == "max":
        out = jax.ops.segment_max(rows, segment, num_segments=bags)
        return jnp.where(jnp.isneginf(out), jnp.zeros((), out.dtype), out)
    out = jax.ops.segment_sum(rows, segment, num_segments=bags)
    if mode == "mean":
        count = jax.ops.segment_sum(jnp.ones_like(segment), segment, num_segments=bags)
        out = out / jnp.maximum(count, 1)[:, None].astype(out.dtype)
    return out


def _check_one_hot(tensor, num_classes=-1):
    values = _host(tensor)
    if values is None or values.size == 0:
        return
    if values.min() < 0:
        raise IndexOutOfRange("one_hot: Class values must be non-negative.")
    if num_classes != -1 and values.max() >= num_classes:
        raise IndexOutOfRange(f"one_hot: Class values must be smaller than num_classes ({num_classes}).")


@defop(static=("num_classes",), differentiable=False, method=False, check=_check_one_hot, rows=Rows(("tensor",)))
def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding of the integer ``tensor`` along a new last dim of size
    ``num_classes``.

    Values must lie in ``[0, num_classes)``. ``num_classes=-1`` would read ``max(tensor) + 1``
    from the data, which needs a concrete array: pass it to this op, or use ``F.one_hot``.

    Example::

        >>> fjax.one_hot(fjax.tensor([0, 2, 1]), num_classes=3)
        tensor([[1, 0, 0],
                [0, 0, 1],
                [0, 1, 0]], dtype=fjax.int64)
    """
    if not jnp.issubdtype(tensor.dtype, jnp.integer):
        raise TypeError(f"one_hot: expected an integer tensor, got {tensor.dtype}")
    if num_classes < -1:
        raise IndexOutOfRange(f"one_hot: Class values must be smaller than num_classes, got num_classes={num_classes}")
    if num_classes < 0:
        if isinstance(tensor, jax.core.Tracer):
            raise ValueError("one_hot: num_classes=-1 depends on the data; pass num_classes inside a trace")
        num_classes = int(jnp.max(tensor)) + 1 if tensor.size else 0
    return (tensor[..., None] == jnp.arange(num_classes, dtype=tensor.dtype)).astype(jnp.int64)


def _dropout_key(key):
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    if key.dtype == jnp.uint32 and key.shape == (2,):
        return jax.random.wrap_key_data(key)
    if key.ndim == 0 and jnp.issubdtype(key.dtype, jnp.integer):
        return jax.random.key(key)
    raise TypeError(f"dropout: expected a PRNG key or an integer seed, got {key.dtype}{key.shape}")


@defop(static=("training",), method=False, rows=Rows(("input",)))  # padded: a mask drawn at the bucket's shape
def dropout(input, key, p=0.5, training=True):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``: torch's
    ``input * noise`` with ``noise`` a Bernoulli(1 - p) mask divided by ``1 - p``.

    Args:
        key: a jax PRNG key (typed, or raw ``uint32[2]``) or an integer seed; the Tensor-level
            ``dropout`` draws it from the global generator and checks ``p`` (a kernel argument
            here, so a schedule of ``p`` compiles one kernel).

    Example::

        >>> x = fjax.ones(1000)
        >>> sorted(set(fjax.dropout(x, 0, p=0.5).tolist()))
        [0.0, 2.0]
        >>> bool((fjax.dropout(x, 7, p=0.5) == fjax.dropout(x, 7, p=0.5)).all())
        True
        >>> fjax.dropout(x, 0, p=0.5, training=False).sum()
        tensor(1000., dtype=fjax.float32)
    """
    if not training:
        return input
    input = to_float(input)
    # drawn flat: the same mask, and XLA compiles a flat draw far faster than one of 3 or 4 dims
    # (``fjax.random.flat``)
    keep = jax.random.bernoulli(_dropout_key(key), 1.0 - p, (input.size,)).reshape(input.shape)
    scale = jnp.where(p < 1, 1 / jnp.where(p < 1, 1 - p, 1), 0).astype(input.dtype)
    return _saving.scaled_mask(input, keep, scale)  # the backward reads the mask only, as torch's


@defop(static=("dropout_p", "is_causal", "scale", "enable_gqa"), method=False)
def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False, dropout_key=None
):
    """Attention ``softmax(q @ k^T * scale + mask) @ v`` for query ``(..., L, E)``, key
    ``(..., S, E)`` and value ``(..., S, Ev)``; ``scale`` defaults to ``1 / sqrt(E)``.

    ``attn_mask`` is boolean (True = attend) or additive float, broadcast to ``(..., L, S)``;
    ``is_causal=True`` lets query ``i`` attend to keys ``0..i`` only. A query row whose keys
    are all masked yields zeros. ``dropout_p > 0`` drops attention weights with that
    probability (scaling the rest by ``1 / (1 - dropout_p)``), drawing the mask from
    ``dropout_key`` (a PRNG key or an integer seed, as ``dropout``'s; ``F.`` draws one from the
    default generator).

    Example::

        >>> q = fjax.zeros(2, 2)
        >>> v = fjax.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> F.scaled_dot_product_attention(q, q, v)
        tensor([[2., 3.],
                [2., 3.]], dtype=fjax.float32)
        >>> F.scaled_dot_product_attention(q, q, v, is_causal=True)
        tensor([[1., 2.],
                [2., 3.]], dtype=fjax.float32)
    """
    if dropout_p and dropout_key is None:
        raise ValueError("scaled_dot_product_attention: dropout_p > 0 needs a dropout_key")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: pass either attn_mask or is_causal")
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2 or query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"scaled_dot_product_attention: expected query (..., L, E), key (..., S, E), "
            f"value (..., S, Ev), got {query.shape}, {key.shape}, {value.shape}"
        )
    query, key, value = promote(query, key, value)
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = jnp.repeat(key, rep, axis=-3)
        value = jnp.repeat(value, rep, axis=-3)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = jnp.einsum("...le,...se->...ls", query, key) * jnp.asarray(scale, query.dtype)
    L, S = query.shape[-2], key.shape[-2]
    if is_causal:
        attn_mask = jnp.tril(jnp.ones((L, S), dtype=bool))
    if attn_mask is not None:
        if attn_mask.dtype == jnp.bool_:
            scores = jnp.where(attn_mask, scores, jnp.asarray(-jnp.inf, scores.dtype))
        else:
            scores = scores + attn_mask.astype(scores.dtype)
    # Rows with every key masked attend to nothing (zeros), as torch's safe softmax.
    empty = jnp.max(scores, axis=-1, keepdims=True) == -jnp.inf
    weights = jax.nn.softmax(jnp.where(empty, jnp.zeros((), scores.dtype), scores), axis=-1)
    weights = jnp.where(empty, jnp.zeros((), scores.dtype), weights)
    if dropout_p:
        weights = dropout(weights, dropout_key, dropout_p)
    return jnp.einsum("...ls,...sv->...lv", weights, value)


@defop(static=("upscale_factor",), linear=True, method=False)
def pixel_shuffle(input, upscale_factor):
    """Rearrange ``(*, C * r**2, H, W)`` into ``(*, C, H * r, W * r)`` with
    ``r = upscale_factor``: each group of ``r**2`` channels becomes an ``r x r`` block of pixels.

    Args:
        input: a ``(*, C * r**2, H, W)`` tensor.
        upscale_factor: the factor ``r`` the height and width grow by.

    Example::

        >>> x = fjax.arange(8).reshape(1, 8, 1, 1)
        >>> y = F.pixel_shuffle(x, 2)
        >>> y.shape
        fjax.Size([1, 2, 2, 2])
        >>> y[0, 1]
        tensor([[4, 5],
                [6, 7]], dtype=fjax.int64)
    """
    r = _checks.at_least("pixel_shuffle", "upscale_factor", upscale_factor, 1)
    if input.ndim < 3 or input.shape[-3] % (r * r):
        raise ValueError(f"pixel_shuffle: expected input (*, C * {r * r}, H, W), got {input.shape}")
    *batch, c, h, w = input.shape
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    n = len(batch)
    x = x.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


@defop(static=("downscale_factor",), linear=True, method=False)
def pixel_unshuffle(input, downscale_factor):
    """Rearrange ``(*, C, H * r, W * r)`` into ``(*, C * r**2, H, W)`` with
    ``r = downscale_factor``: the inverse of ``pixel_shuffle``.

    Args:
        input: a ``(*, C, H * r, W * r)`` tensor.
        downscale_factor: the factor ``r`` the height and width shrink by.

    Example::

        >>> x = fjax.arange(16).reshape(1, 1, 4, 4)
        >>> y = F.pixel_unshuffle(x, 2)
        >>> y.shape
        fjax.Size([1, 4, 2, 2])
        >>> y[0, :, 0, 0]
        tensor([0, 1, 4, 5], dtype=fjax.int64)
        >>> bool((F.pixel_shuffle(y, 2) == x).all())
        True
    """
    r = _checks.at_least("pixel_unshuffle", "downscale_factor", downscale_factor, 1)
    if input.ndim < 3 or input.shape[-2] % r or input.shape[-1] % r:
        raise ValueError(f"pixel_unshuffle: expected input (*, C, H * {r}, W * {r}), got {input.shape}")
    *batch, c, h, w = input.shape
    n = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def _channel_shuffle(name, input, groups):
    if input.ndim < 3 or groups <= 0 or input.shape[1] % groups:
        raise ValueError(
            f"{name}: expected an (N, C, *) input whose C is divisible by groups={groups}, got {input.shape}"
        )
    n, c = input.shape[:2]
    x = input.reshape((n, groups, c // groups) + input.shape[2:])
    return jnp.swapaxes(x, 1, 2).reshape(input.shape)


@defop(static=("groups",), linear=True, method=False)
def channel_shuffle(input, groups):
    """Interleave the channels of ``(N, C, *)`` input from ``groups`` groups: the ``C / groups``
    channels of each group are spread out, as ShuffleNet does between grouped convolutions.

    Args:
        input: an ``(N, C, *)`` tensor.
        groups: the number of groups; ``C`` must be divisible by it.

    Example::

        >>> F.channel_shuffle(fjax.arange(6.0).reshape(1, 6, 1), 2).flatten()
        tensor([0., 3., 1., 4., 2., 5.], dtype=fjax.float32)
    """
    return _channel_shuffle("channel_shuffle", input, groups)


@defop(static=("groups",), linear=True, method=False)
def native_channel_shuffle(input, groups):
    """ATen's ``native_channel_shuffle``: ``channel_shuffle`` without a backend choice.

    Args:
        input: an ``(N, C, *)`` tensor.
        groups: the number of groups; ``C`` must be divisible by it.

    Example::

        >>> fjax.native_channel_shuffle(fjax.arange(4.0).reshape(1, 4, 1), 2).flatten()
        tensor([0., 2., 1., 3.], dtype=fjax.float32)
    """
    return _channel_shuffle("native_channel_shuffle", input, groups)


@defop(static=("size",), method=False)
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalization across channels of ``(N, C, *)`` input (AlexNet's LRN):
    ``x / (k + alpha * mean(x**2 over size neighbouring channels)) ** beta``, the window padded
    with zeros at the channel edges.

    Args:
        input: an ``(N, C, *)`` tensor.
        size: the number of neighbouring channels in the window.
        alpha: the multiplicative factor (default 1e-4).
        beta: the exponent (default 0.75).
        k: the additive constant (default 1.0).

    Example::

        >>> x = fjax.tensor([[[1.0], [2.0], [3.0]]])
        >>> F.local_response_norm(x, 2, alpha=1.0, beta=1.0, k=0.0)
        tensor([[[2.0000],
                 [0.8000],
                 [0.4615]]], dtype=fjax.float32)
    """
    if input.ndim < 3:
        raise ValueError(f"local_response_norm: expected a 3-d or higher input (N, C, *), got {input.shape}")
    if input.shape[0] == 0 or input.shape[1] == 0:
        return input
    sq = jnp.square(input)
    window = (1, size) + (1,) * (input.ndim - 2)
    pads = ((0, 0), (size // 2, (size - 1) // 2)) + ((0, 0),) * (input.ndim - 2)
    mean = jax.lax.reduce_window(sq, 0.0, jax.lax.add, window, (1,) * input.ndim, pads) / size
    div = (mean * jnp.asarray(alpha, input.dtype) + jnp.asarray(k, input.dtype)) ** jnp.asarray(beta, input.dtype)
    return input / div
