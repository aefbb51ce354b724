"""NAdam with torch's momentum-decay schedule (``torch.optim.NAdam``), as an optax transform."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from ._hyper import KW, accepted, betas, flag, nonzero, number, unsupported
from .optimizer import Optimizer


class ScaleByNAdamState(NamedTuple):
    """State of ``scale_by_nadam``: the update count, the running product of the momentum
    coefficients (a float32 scalar, as torch keeps it) and the two moments."""

    count: jax.Array
    mu_product: jax.Array
    mu: optax.Updates
    nu: optax.Updates


def scale_by_nadam(b1, b2, eps, momentum_decay) -> optax.GradientTransformation:
    """torch's NAdam direction (Dozat's Nesterov Adam with a momentum schedule).

    At step ``t`` the momentum coefficient is ``mu_t = b1 * (1 - 0.5 * 0.96**(t * momentum_decay))``
    and ``mu_product`` multiplies the ``mu_t`` so far; the direction is
    ``((1 - mu_t) / (1 - mu_product) * g + mu_{t+1} / (1 - mu_product * mu_{t+1}) * m) / (sqrt(v_hat) + eps)``.
    ``optax.scale_by_adam(nesterov=True)`` is the same idea with a constant ``b1`` (no
    schedule), so its numbers differ from torch's: this is a separate transform. The scalar
    coefficients are computed in float64 as torch computes them in Python.
    """

    def init(params):
        zeros = optax.tree.zeros_like(params)
        return ScaleByNAdamState(jnp.zeros([], jnp.int32), jnp.ones([], jnp.float32), zeros, zeros)

    def update(updates, state, params=None):
        del params
        count = optax.safe_increment(state.count)
        t = count.astype(jnp.float64)
        mu_t = b1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1.0) * momentum_decay))
        mu_product = state.mu_product * jnp.asarray(mu_t).astype(state.mu_product.dtype)  # float32, as torch
        product = mu_product.astype(jnp.float64)
        c_grad = (1.0 - mu_t) / (1.0 - product)
        c_avg = mu_next / (1.0 - product * mu_next)
        bc2 = 1.0 - b2**t
        mu = optax.tree.update_moment(updates, state.mu, b1, 1)
        nu = optax.tree.update_moment_per_elem_norm(updates, state.nu, b2, 2)

        def direction(g, m, v):
            denom = jnp.sqrt(v / jnp.asarray(bc2).astype(v.dtype)) + eps
            return (c_grad.astype(g.dtype) * g + c_avg.astype(g.dtype) * m) / denom

        out = jax.tree.map(direction, updates, mu, nu)
        return out, ScaleByNAdamState(count, mu_product, mu, nu)

    return optax.GradientTransformation(init, update)


class NAdam(Optimizer):
    """NAdam, ``torch.optim.NAdam``: Adam with Nesterov momentum and a momentum-decay schedule.

    Each step updates ``exp_avg``/``exp_avg_sq`` as Adam, sets ``mu_t = beta1 * (1 - 0.5 *
    0.96**(t * momentum_decay))``, multiplies it into ``mu_product`` and moves by ``lr *
    ((1 - mu_t) / (1 - mu_product) * g + mu_{t+1} / (1 - mu_product * mu_{t+1}) * exp_avg) /
    (sqrt(exp_avg_sq / (1 - beta2**t)) + eps)``. ``weight_decay`` adds an L2 term to ``g``, or
    with ``decoupled_weight_decay=True`` shrinks the parameter by ``lr * weight_decay`` first
    (NAdamW); ``maximize`` negates ``g``. The direction is a small optax transform
    (``scale_by_nadam``): ``optax.scale_by_adam(nesterov=True)`` has no momentum schedule.
    ``foreach`` and ``capturable`` are accepted and change nothing.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.002).
        betas: the decay rates of the running averages of the gradient and of its square (default (0.9, 0.999)).
        eps: added to the denominator for numerical stability (default 1e-08).
        weight_decay: L2 penalty coefficient, added to the gradient as ``weight_decay * p`` (default 0).
        momentum_decay: the momentum schedule's decay ``psi`` (default 0.004).
        decoupled_weight_decay: if True, shrink the parameter by ``lr * weight_decay`` (no L2 term) (default False).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        maximize: if True, maximize the objective (the gradient is negated) (default False).
        capturable: accepted for torch compatibility; no effect (default False).
        differentiable: not supported: True raises NotImplementedError (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., -2.]))
        >>> opt = fjax.optim.NAdam([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> opt.step()
        >>> w.data
        tensor([ 0.8944, -1.8944], dtype=fjax.float32)
        >>> sorted(opt.state[w])
        ['exp_avg', 'exp_avg_sq', 'mu_product', 'step']
    """

    _state_names = {"mu_product": "mu_product", "exp_avg": "mu", "exp_avg_sq": "nu"}
    _hypers = (
        number("lr", 2e-3),
        number("betas", (0.9, 0.999), check=betas),
        number("eps", 1e-8),
        number("weight_decay", 0, static=nonzero),
        number("momentum_decay", 4e-3),
        flag("decoupled_weight_decay"),
        KW,
        accepted("foreach"),
        flag("maximize"),
        accepted("capturable", False),
        unsupported("differentiable"),
    )

    @classmethod
    def _direction(cls, hyper, static, step):
        (b1, b2), eps = hyper["betas"], hyper["eps"]
        return [scale_by_nadam(b1, b2, eps, hyper["momentum_decay"])]
