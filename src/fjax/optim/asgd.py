"""ASGD (averaged SGD) with torch's semantics (``torch.optim.ASGD``), as an optax transform."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from ._hyper import accepted, flag, nonzero, number, unsupported
from .optimizer import Optimizer


class ASGDState(NamedTuple):
    """State of :func:`asgd_update`: the step size ``eta`` and averaging weight ``mu`` of the
    next step (float32 scalars, as torch keeps them) and the running average ``ax``."""

    eta: jax.Array
    mu: jax.Array
    ax: optax.Updates


def asgd_update(lr, lambd, alpha, t0, step) -> optax.GradientTransformation:
    """torch's ASGD step as an optax transform, ``step`` being the number of previous updates.

    The update is ``-(lambd * eta * p + eta * g)`` (``p * (1 - lambd * eta) - eta * g`` is the
    new parameter); then ``ax`` moves to the new parameter by ``mu`` (is set to it while ``mu
    == 1``), and the next ``eta = lr / (1 + lambd * lr * t)**alpha`` and ``mu = 1 / max(1, t -
    t0)`` are computed in float64 at ``t = step + 1``. optax has no averaged SGD.
    """

    def init(params):
        return ASGDState(jnp.asarray(lr, jnp.float32), jnp.ones([], jnp.float32), optax.tree.zeros_like(params))

    def update(updates, state, params):
        eta = state.eta.astype(jnp.float64)

        def new_param(g, p):
            return p * (1.0 - lambd * eta).astype(p.dtype) - eta.astype(p.dtype) * g

        moved = jax.tree.map(new_param, updates, params)
        ax = jax.tree.map(
            lambda a, q: jnp.where(state.mu != 1, a + (q - a) * state.mu.astype(a.dtype), q), state.ax, moved
        )
        t = jnp.asarray(step, jnp.float64) + 1.0
        next_eta = lr / (1.0 + lambd * lr * t) ** alpha
        next_mu = 1.0 / jnp.maximum(1.0, t - t0)
        out = jax.tree.map(lambda q, p: q - p, moved, params)
        return out, ASGDState(next_eta.astype(state.eta.dtype), next_mu.astype(state.mu.dtype), ax)

    return optax.GradientTransformation(init, update)


class ASGD(Optimizer):
    """Averaged SGD, ``torch.optim.ASGD``.

    Each step moves the parameter to ``p * (1 - lambd * eta) - eta * g`` and updates the
    average ``ax += mu * (p - ax)`` (``ax = p`` while ``mu == 1``, i.e. before step ``t0``),
    then sets ``eta = lr / (1 + lambd * lr * t)**alpha`` and ``mu = 1 / max(1, t - t0)`` for
    the next step. ``weight_decay`` adds an L2 term to ``g`` and ``maximize`` negates it first.
    As in torch, the averaged parameters are kept in ``state[p]['ax']`` and not written back.
    ``foreach`` and ``capturable`` are accepted and change nothing.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.01).
        lambd: the decay term (default 0.0001).
        alpha: the power of the ``eta`` update (default 0.75).
        t0: the step at which averaging starts (default 1000000.0).
        weight_decay: L2 penalty coefficient, added to the gradient as ``weight_decay * p`` (default 0).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        maximize: if True, maximize the objective (the gradient is negated) (default False).
        differentiable: not supported: True raises NotImplementedError (default False).
        capturable: accepted for torch compatibility; no effect (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., -2.]))
        >>> opt = fjax.optim.ASGD([w], lr=0.1, lambd=0.5)
        >>> (w ** 2).sum().backward()
        >>> opt.step()  # w * (1 - 0.5 * 0.1) - 0.1 * 2 * w
        >>> w.data
        tensor([ 0.7500, -1.5000], dtype=fjax.float32)
        >>> opt.state[w]['ax']
        tensor([ 0.7500, -1.5000], dtype=fjax.float32)
    """

    _state_names = {"eta": "eta", "mu": "mu", "ax": "ax"}
    _lr_outside = False
    _hypers = (
        number("lr", 1e-2),
        number("lambd", 1e-4, check=None),
        number("alpha", 0.75, check=None),
        number("t0", 1e6, check=None),
        number("weight_decay", 0, static=nonzero),
        accepted("foreach"),
        flag("maximize"),
        unsupported("differentiable"),
        accepted("capturable", False),
    )

    @classmethod
    def _direction(cls, hyper, static, step):
        return [asgd_update(hyper["lr"], hyper["lambd"], hyper["alpha"], hyper["t0"], step)]
