"""Rprop with torch's semantics (``torch.optim.Rprop``), as an optax transform."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from ._hyper import KW, accepted, flag, number, unsupported
from .optimizer import Optimizer


def _etas(opt: str, name: str, value) -> None:
    if not 0.0 < float(value[0]) < 1.0 < float(value[1]):
        raise ValueError(f"fjax.optim.{opt}: invalid eta values: {value[0]}, {value[1]}")


class RpropState(NamedTuple):
    """State of ``rprop_update``: the previous (masked) gradient and the per-element step sizes."""

    prev: optax.Updates
    step_size: optax.Updates


def rprop_update(lr, etas, step_sizes) -> optax.GradientTransformation:
    """torch's Rprop step: ``step_size *= etaplus / etaminus / 1`` where ``g * prev`` is
    positive / negative / zero, clamped to ``step_sizes`` every step; the update is
    ``-sign(g) * step_size``, with ``g`` zeroed (and stored so) where the sign flipped.

    ``optax.scale_by_rprop`` differs in two ways that change numbers or state: it leaves a
    step size unclamped where ``g * prev == 0`` (so an ``lr`` outside ``step_sizes`` is
    used as is on the first step), and it keeps ``step_size * sign(g)`` as the previous
    update where torch keeps the gradient itself (torch's ``state['prev']``).
    """
    (eta_minus, eta_plus), (lo, hi) = etas, step_sizes

    def init(params):
        return RpropState(
            optax.tree.zeros_like(params), jax.tree.map(lambda p: jnp.full_like(p, jnp.asarray(lr, p.dtype)), params)
        )

    def update(updates, state, params=None):
        del params

        def new_size(sign, size):
            factor = jnp.where(sign > 0, eta_plus, jnp.where(sign < 0, eta_minus, 1.0)).astype(size.dtype)
            return jnp.clip(size * factor, jnp.asarray(lo, size.dtype), jnp.asarray(hi, size.dtype))

        sign = jax.tree.map(lambda g, prev: jnp.sign(g * prev), updates, state.prev)
        size = jax.tree.map(new_size, sign, state.step_size)
        prev = jax.tree.map(lambda s, g: jnp.where(s < 0, jnp.zeros_like(g), g), sign, updates)
        new_updates = jax.tree.map(lambda g, sz: -jnp.sign(g) * sz, prev, size)
        return new_updates, RpropState(prev, size)

    return optax.GradientTransformation(init, update)


class Rprop(Optimizer):
    """Resilient backpropagation, ``torch.optim.Rprop``: per-element step sizes driven by the
    sign of the gradient only.

    Each element's step size (starting at ``lr``) is multiplied by ``etas[1]`` when its gradient
    kept its sign since the last step and by ``etas[0]`` when it flipped, then clamped to
    ``step_sizes``; the parameter moves by ``-sign(g) * step_size``, except that an element
    whose sign flipped does not move and counts as a zero gradient at the next step.
    ``maximize`` negates ``g``. ``lr`` is only the initial step size, as in torch. The update is
    a small optax transform (``rprop_update``); ``optax.scale_by_rprop`` clamps and stores
    its state differently. ``foreach`` and ``capturable`` are accepted and change nothing.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the initial step size (default 0.01).
        etas: ``(etaminus, etaplus)``, the step-size factors on a sign flip and on a kept sign (default (0.5, 1.2)).
        step_sizes: ``(min, max)`` bounds of the step size (default (1e-06, 50)).
        capturable: accepted for torch compatibility; no effect (default False).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        maximize: if True, maximize the objective (the gradient is negated) (default False).
        differentiable: not supported: True raises NotImplementedError (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., -2.]))
        >>> opt = fjax.optim.Rprop([w], lr=0.1)
        >>> for _ in range(2):
        ...     opt.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     opt.step()
        >>> w.data  # 0.1, then 0.1 * 1.2 against the gradient's sign
        tensor([ 0.7800, -1.7800], dtype=fjax.float32)
        >>> opt.state[w]['step_size']
        tensor([0.1200, 0.1200], dtype=fjax.float32)
    """

    _state_names = {"prev": "prev", "step_size": "step_size"}
    _lr_outside = False
    _hypers = (
        number("lr", 1e-2),
        number("etas", (0.5, 1.2), check=_etas),
        number("step_sizes", (1e-6, 50), check=None),
        KW,
        accepted("capturable", False),
        accepted("foreach"),
        flag("maximize"),
        unsupported("differentiable"),
    )

    @classmethod
    def _direction(cls, hyper, static, step):
        return [rprop_update(hyper["lr"], hyper["etas"], hyper["step_sizes"])]
