"""Adafactor with torch's semantics (``torch.optim.Adafactor``), as an optax transform."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from ._hyper import KW, _number, accepted, flag, nonnegative, nonzero, number
from .optimizer import Optimizer


def _eps(opt: str, name: str, value) -> None:
    nonnegative(opt, "eps2", value[1])
    if value[0] is not None:
        nonnegative(opt, "eps1", value[0])


def _beta2_decay(opt: str, name: str, value) -> None:
    if not float(value) <= 0.0:
        raise ValueError(f"fjax.optim.{opt}: beta2_decay should be <= 0 but is: {value}")


def _d(opt: str, name: str, value) -> None:
    if not float(value) >= 1.0:
        raise ValueError(f"fjax.optim.{opt}: clipping threshold d should be >= 1 but is: {value}")


class FactoredState(NamedTuple):
    """Adafactor's second-moment factors of a parameter with two or more dimensions: the row
    means (last dimension kept as 1) and the column means (second-to-last kept as 1)."""

    row_var: jax.Array
    col_var: jax.Array


class VectorState(NamedTuple):
    """Adafactor's second moment of a parameter with fewer than two dimensions."""

    variance: jax.Array


def _norm(x):
    return jnp.sqrt(jnp.sum(jnp.square(x)))


def adafactor_update(lr, beta2_decay, eps1, eps2, d, weight_decay, step) -> optax.GradientTransformation:
    """torch's Adafactor step as an optax transform (``step``: the number of previous updates).

    At ``t = step + 1`` the moments move towards this step's squared gradient by ``t**beta2_decay``;
    a parameter with two or more dimensions keeps only row and column means (their outer product
    over the mean row is the variance estimate). The update ``g / sqrt(max(var, eps1**2))`` is
    scaled down to an RMS of at most ``d``, and the parameter moves by ``alpha = max(eps2,
    RMS(p)) * min(lr, 1 / sqrt(t))`` times it, after a decoupled decay ``p *= 1 - lr *
    weight_decay``. ``optax.scale_by_factored_rms`` factors only large dimensions, adds its
    epsilon to ``g**2`` and starts its decay schedule differently, so its numbers are not torch's.
    """

    def init(params):
        if params.ndim > 1:
            return FactoredState(
                jnp.zeros((*params.shape[:-1], 1), params.dtype),
                jnp.zeros((*params.shape[:-2], 1, params.shape[-1]), params.dtype),
            )
        return VectorState(jnp.zeros_like(params))

    def update(g, state, p):
        t = jnp.asarray(step, jnp.float64) + 1.0
        weight = jnp.asarray(t**beta2_decay).astype(g.dtype)
        rho = jnp.minimum(lr, 1.0 / jnp.sqrt(t))
        alpha = jnp.maximum(eps2, _norm(p).astype(jnp.float64) / (p.size**0.5)) * rho
        eps = jnp.finfo(p.dtype).eps if eps1 is None else eps1
        if p.ndim > 1:
            row_mean = jnp.sum(jnp.square(g), axis=-1, keepdims=True) / g.shape[-1]
            col_mean = jnp.sum(jnp.square(g), axis=-2, keepdims=True) / g.shape[-2]
            row_var = state.row_var + weight * (row_mean - state.row_var)
            col_var = state.col_var + weight * (col_mean - state.col_var)
            var = (row_var @ col_var) / jnp.maximum(jnp.mean(row_var, axis=-2, keepdims=True), eps)
            new_state = FactoredState(row_var, col_var)
        else:
            var = state.variance + weight * (jnp.square(g) - state.variance)
            new_state = VectorState(var)
        direction = jax.lax.rsqrt(jnp.maximum(var, eps * eps)) * g
        denom = jnp.maximum(1.0, _norm(direction).astype(jnp.float64) / ((direction.size**0.5) * d))
        out = -(alpha / denom).astype(p.dtype) * direction
        if weight_decay is not None:
            out = out - (lr * weight_decay) * p
        return out.astype(p.dtype), new_state

    return optax.GradientTransformation(init, update)


class Adafactor(Optimizer):
    """Adafactor, ``torch.optim.Adafactor``: Adam-like steps from a factored second moment.

    A parameter with two or more dimensions keeps only the row and column means of its squared
    gradients (``row_var``, ``col_var``), a vector keeps the full ``variance``; they decay with
    the step as ``1 - t**beta2_decay``. The step is ``g / sqrt(var)`` clipped to an RMS of ``d``
    and scaled by ``max(eps[1], RMS(p)) * min(lr, 1 / sqrt(t))``; ``eps[0]`` (default: the
    dtype's machine epsilon) bounds the variance from below. ``weight_decay`` is decoupled,
    ``maximize`` negates the gradient. The update is a small optax transform
    (``adafactor_update``), which follows torch rather than ``optax.adafactor``. ``foreach``
    is accepted and changes nothing.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.01).
        beta2_decay: the exponent of the second moment's decay ``t**beta2_decay`` (default -0.8).
        eps: ``(eps1, eps2)``: the variance floor (None: the dtype's machine epsilon) and the floor of
            the parameter RMS (default (None, 0.001)).
        d: the clipping threshold of the update's RMS (default 1.0).
        weight_decay: decoupled decay: the parameter shrinks by ``lr * weight_decay`` (default 0.0).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        maximize: if True, maximize the objective (the gradient is negated) (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([[1., -2.], [3., 4.]]))
        >>> opt = fjax.optim.Adafactor([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> opt.step()  # first step: RMS(w) * min(lr, 1) = 0.2739 times a direction of RMS <= 1
        >>> w.data
        tensor([[ 0.7879, -1.7000],
                [ 2.7154,  3.7317]], dtype=fjax.float32)
        >>> sorted(opt.state[w])
        ['col_var', 'row_var', 'step']
    """

    _state_names = {"row_var": "row_var", "col_var": "col_var", "variance": "variance"}
    _hypers = (
        number("lr", 1e-2),
        number("beta2_decay", -0.8, check=_beta2_decay),
        number(
            "eps",
            (None, 1e-3),
            check=_eps,
            traced=lambda eps: (0.0 if eps[0] is None else _number(eps[0]), _number(eps[1])),
            static=lambda eps: eps[0] is None,  # the variance floor is the dtype's machine epsilon
            annotation="tuple[float | None, float]",
        ),
        number("d", 1.0, check=_d),
        number("weight_decay", 0.0, static=nonzero),
        KW,
        accepted("foreach"),
        flag("maximize"),
    )

    @classmethod
    def _transform(cls, hyper, static, step):
        (eps1, eps2), decay_on = hyper["eps"], static.weight_decay
        parts = [optax.scale(-1.0)] if static.maximize else []
        parts.append(
            adafactor_update(
                hyper["lr"],
                hyper["beta2_decay"],
                None if static.eps else eps1,
                eps2,
                hyper["d"],
                hyper["weight_decay"] if decay_on else None,
                step,
            )
        )
        return optax.chain(*parts)
