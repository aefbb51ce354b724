"""Gradient clipping (torch.nn.utils): clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_."""

from __future__ import annotations

import functools
import warnings
from functools import partial
from typing import Iterable

import jax
import jax.numpy as jnp

from ... import _lazy
from ...asyncs import check_finite
from ...autograd.grad_mode import no_grad
from ...ops.activation import vector_norm
from ...tensor import Tensor


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


@partial(jax.jit, static_argnames="norm_type")
def _total_norm(grads: list, norm_type: float):
    return vector_norm(jnp.stack([vector_norm(g, norm_type, None) for g in grads]), norm_type, None)


@jax.jit
def _scale(grads: list, total, max_norm):
    coef = jnp.minimum(max_norm / (total + 1e-6), 1.0)
    return [g * coef.astype(g.dtype) for g in grads]


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale all gradients in place so their joint ``norm_type``-norm is at most ``max_norm``.

    The gradients are multiplied by ``min(max_norm / (total_norm + 1e-6), 1)``, as in torch.
    ``foreach`` is accepted for compatibility (one jitted computation serves every case).

    Args:
        parameters: a tensor or an iterable of tensors whose ``.grad`` to clip.
        max_norm: the largest total norm allowed.
        norm_type: the order of the norm (``inf`` for the max norm).
        error_if_nonfinite: raise if the total norm is nan or inf.
        foreach: accepted for compatibility.

    Returns:
        The total norm of the gradients before clipping (a 0-d tensor).

    Example:
        >>> model = nn.Linear(4, 1)
        >>> model(fjax.ones(2, 4)).sum().backward()
        >>> total = fjax.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        >>> grads = [p.grad for p in model.parameters()]
        >>> round(nn.utils.get_total_norm(grads).item(), 4)
        1.0
    """
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return Tensor._wrap(jnp.zeros((), jnp.float32))
    if error_if_nonfinite:  # checked before any gradient changes, as torch
        total = _checked_total([g._data for g in grads], norm_type, error_if_nonfinite)
        clipped = _scale([g._data for g in grads], total, max_norm)
    else:  # recorded after pending gradients (eager fusion): it does not end a training step's segment
        total, clipped = _lazy.then(_clip(norm_type), [max_norm] + [g._meta for g in grads])
    with no_grad():
        for g, new in zip(grads, clipped):
            g._set_(Tensor._wrap(new), "clip_grad_norm_")
    return Tensor._wrap(total)


@functools.lru_cache(maxsize=None)
def _clip(norm_type: float):
    """``(max_norm, *grads) -> (total norm, clipped grads)``, one jitted function."""

    @jax.jit
    def clip(max_norm, *grads):
        total = _total_norm(list(grads), norm_type=norm_type)
        return total, _scale(list(grads), total, max_norm)

    return clip


def _checked_total(arrays: list, norm_type: float, error_if_nonfinite: bool):
    total = _total_norm(arrays, norm_type=norm_type)
    if error_if_nonfinite:
        message = (
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
            "anyway, set `error_if_nonfinite=False`"
        )
        if not isinstance(total, jax.core.Tracer):  # eager: raise before any gradient changes, as torch
            if not bool(jnp.isfinite(total)):
                raise RuntimeError(message)
        else:  # inside nn.Graph: checked on a worker thread, the error surfaces at fjax.asyncs.wait()
            check_finite(total, message)
    return total


def clip_grad_norm(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_` (torch warns with a FutureWarning, as here).

    Args:
        parameters: a tensor or an iterable of tensors whose ``.grad`` to clip.
        max_norm: the largest total norm allowed.
        norm_type: the order of the norm (``inf`` for the max norm).
        error_if_nonfinite: raise if the total norm is nan or inf.
        foreach: accepted for compatibility.

    Returns:
        The total norm of the gradients before clipping.

    Example:
        >>> import warnings
        >>> w = nn.Parameter(fjax.ones(4))
        >>> (w * 2).sum().backward()
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     total = nn.utils.clip_grad_norm(w, 1.0)
        >>> round(total.item(), 4), round(w.grad.norm().item(), 4)
        (4.0, 1.0)
    """
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def get_total_norm(
    tensors: Tensor | Iterable[Tensor],
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together (the norm of their norms), without gradient.

    Typically the tensors are gradients: ``get_total_norm([p.grad for p in params])``, then
    :func:`clip_grads_with_norm_` (that pair is ``clip_grad_norm_``).

    Args:
        tensors: a tensor or an iterable of tensors.
        norm_type: the order of the norm (``inf`` for the max norm).
        error_if_nonfinite: raise if the total norm is nan or inf.
        foreach: accepted for compatibility (one jitted computation serves every case).

    Returns:
        A 0-d tensor (``tensor(0.)`` for no tensors).

    Example:
        >>> nn.utils.get_total_norm([fjax.tensor([3.0]), fjax.tensor([4.0])])
        tensor(5., dtype=fjax.float32)
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if not tensors:
        return Tensor._wrap(jnp.zeros((), jnp.float32))
    return Tensor._wrap(_checked_total([t._data for t in tensors], float(norm_type), error_if_nonfinite))


def clip_grads_with_norm_(
    parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor, foreach: bool | None = None
) -> None:
    """Scale the gradients of ``parameters`` in place by ``min(max_norm / (total_norm + 1e-6), 1)``.

    ``total_norm`` is typically :func:`get_total_norm` of the gradients (possibly of more
    parameters than these, e.g. across pipeline stages).

    Args:
        parameters: a tensor or an iterable of tensors whose ``.grad`` to scale.
        max_norm: the largest total norm allowed.
        total_norm: the total norm of the gradients.
        foreach: accepted for compatibility.

    Example:
        >>> w = nn.Parameter(fjax.ones(4))
        >>> (w * 2).sum().backward()
        >>> nn.utils.clip_grads_with_norm_([w], 1.0, nn.utils.get_total_norm([w.grad]))
        >>> round(w.grad.norm().item(), 4)
        1.0
    """
    grads = _grads(parameters)
    if not grads:
        return
    total = total_norm._data if isinstance(total_norm, Tensor) else jnp.asarray(total_norm, jnp.float32)
    clipped = _scale([g._data for g in grads], total, float(max_norm))
    with no_grad():
        for g, new in zip(grads, clipped):
            g._set_(Tensor._wrap(new), "clip_grads_with_norm_")


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient in place to ``[-clip_value, clip_value]``.

    Args:
        parameters: a tensor or an iterable of tensors whose ``.grad`` to clamp.
        clip_value: the largest absolute value allowed.
        foreach: accepted for compatibility.

    Example:
        >>> w = nn.Parameter(fjax.ones(2))
        >>> (w * fjax.tensor([3.0, -0.5])).sum().backward()
        >>> nn.utils.clip_grad_value_(w, 1.0)
        >>> w.grad
        tensor([ 1.0000, -0.5000], dtype=fjax.float32)"""
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
