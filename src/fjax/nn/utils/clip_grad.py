"""Gradient clipping: clip_grad_norm_ and clip_grad_value_ (torch.nn.utils)."""

from __future__ import annotations

from functools import partial
from typing import Iterable

import jax
import jax.numpy as jnp

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

    Returns:
        The total norm of the gradients before clipping (a 0-d tensor).

    Example::

        >>> loss.backward()
        >>> fjax.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    """
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return Tensor._wrap(jnp.zeros((), jnp.float32))
    total = _total_norm([g._data for g in grads], norm_type=norm_type)
    if error_if_nonfinite:
        message = (
            f"clip_grad_norm_: the total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
            "anyway, set `error_if_nonfinite=False`"
        )
        if not isinstance(total, jax.core.Tracer):  # eager: raise before any gradient changes, as torch
            if not bool(jnp.isfinite(total)):
                raise RuntimeError(message)
        else:  # inside nn.Graph: checked on a worker thread, the error surfaces at fjax.asyncs.wait()
            check_finite(total, message)
    clipped = _scale([g._data for g in grads], total, max_norm)
    with no_grad():
        for g, new in zip(grads, clipped):
            g._set_(Tensor._wrap(new), "clip_grad_norm_")
    return Tensor._wrap(total)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient in place to ``[-clip_value, clip_value]``."""
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
