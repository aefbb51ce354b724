"""Adagrad with torch's lr_decay, initial_accumulator_value and eps, over optax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from ._hyper import KW, accepted, flag, nonzero, number, unsupported
from .optimizer import Optimizer


def _scale_by_rss_eps_outside(initial_accumulator_value, eps) -> optax.GradientTransformation:
    """``optax.scale_by_rss`` with torch's denominator ``sqrt(sum) + eps`` (optax: ``sqrt(sum + eps)``).

    optax's ``g * rsqrt(sum)`` (0 where the sum is 0) times ``sqrt(sum) / (sqrt(sum) + eps)``.
    """
    rss = optax.scale_by_rss(initial_accumulator_value, eps=0.0)

    def update(updates, state, params=None):
        updates, state = rss.update(updates, state, params)
        root = jax.tree.map(jnp.sqrt, state.sum_of_squares)
        return jax.tree.map(lambda u, r: u * (r / (r + eps)), updates, root), state

    return optax.GradientTransformation(rss.init, update)


class Adagrad(Optimizer):
    """Adagrad, ``torch.optim.Adagrad``: state is created for every parameter at construction.

    Each step adds ``grad ** 2`` to the per-element ``sum`` (which starts at
    ``initial_accumulator_value``) and moves by ``clr * grad / (sqrt(sum) + eps)``, with
    ``clr = lr / (1 + (step - 1) * lr_decay)``.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.01).
        lr_decay: the learning-rate decay: ``lr / (1 + (step - 1) * lr_decay)`` (default 0).
        weight_decay: L2 penalty coefficient, added to the gradient as ``weight_decay * p`` (default 0).
        initial_accumulator_value: the starting value of the squared-gradient sum (default 0).
        eps: added to the denominator for numerical stability (default 1e-10).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        maximize: if True, maximize the objective (the gradient is negated) (default False).
        differentiable: not supported: True raises NotImplementedError (default False).
        fused: accepted for torch compatibility; no effect (default None).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., -2.]))
        >>> opt = fjax.optim.Adagrad([w], lr=0.5)
        >>> (w ** 2).sum().backward()
        >>> opt.step()
        >>> w.data
        tensor([ 0.5000, -1.5000], dtype=fjax.float32)
        >>> opt.state[w]['sum']
        tensor([ 4., 16.], dtype=fjax.float32)
    """

    _state_names = {"sum": "sum_of_squares"}
    _state_at_init = True
    _hypers = (
        number("lr", 1e-2),
        number("lr_decay", 0),
        number("weight_decay", 0, static=nonzero),
        number("initial_accumulator_value", 0),
        number("eps", 1e-10),
        accepted("foreach"),
        KW,
        flag("maximize"),
        unsupported("differentiable"),
        accepted("fused"),
    )

    @classmethod
    def _direction(cls, hyper, static, step):
        return [_scale_by_rss_eps_outside(hyper["initial_accumulator_value"], hyper["eps"])]

    @classmethod
    def _lr(cls, hyper, step):
        return hyper["lr"] / (1.0 + step * hyper["lr_decay"])
