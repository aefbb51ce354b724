"""LAMB with OneFlow's semantics (``oneflow.optim.LAMB``), over optax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from ._hyper import betas, flag, nonzero, number, oneflow
from .adam import adam_moments
from .optimizer import Optimizer


def _no_amsgrad(opt: str, name: str, value) -> None:
    if value:
        raise RuntimeError(f"fjax.optim.{opt}: LAMB does not support the AMSGrad variant (as in OneFlow)")


def scale_by_lamb_trust_ratio(weight_decay) -> optax.GradientTransformation:
    """OneFlow's LAMB scaling of one parameter's Adam direction ``u``:
    ``(||w|| / ||u||) * (u + weight_decay * w)`` (ratio 1 when either norm is 0).

    Unlike ``optax.lamb`` (``scale_by_trust_ratio`` after ``add_decayed_weights``), the ratio's
    denominator is the norm of ``u`` alone, without the decoupled decay term.
    """

    def update(updates, state, params):
        def one(u, w):
            w_norm, u_norm = jnp.linalg.norm(w.ravel()), jnp.linalg.norm(u.ravel())
            ratio = jnp.where((w_norm > 0) & (u_norm > 0), w_norm / jnp.where(u_norm > 0, u_norm, 1.0), 1.0)
            return (ratio * (u + weight_decay * w)).astype(u.dtype)

        return jax.tree.map(one, updates, params), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


class LAMB(Optimizer):
    """LAMB, ``oneflow.optim.LAMB``: Adam's direction rescaled per parameter by a trust ratio.

    Each step forms the Adam direction ``u = m_hat / (sqrt(v_hat) + eps)`` (``m / (sqrt(v) +
    eps)`` with ``do_bias_correction=False``) and moves by ``lr * ||w|| / ||u|| * (u +
    weight_decay * w)``, the ratio being 1 when either norm is zero. With ``adam_w_mode=False``
    the weight decay is an L2 term added to the gradient instead. The trust-ratio scaling is a
    small custom optax transform: ``optax.lamb`` also counts the decay term in ``||u||``.
    ``amsgrad=True`` is rejected as in OneFlow; ``contiguous_params`` is accepted and has no effect.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.001).
        betas: the decay rates of the running averages of the gradient and of its square (default (0.9, 0.999)).
        eps: added to the denominator for numerical stability (default 1e-08).
        weight_decay: the weight decay coefficient (decoupled when ``adam_w_mode``) (default 0).
        adam_w_mode: if True, decoupled weight decay; if False, an L2 term added to the gradient (default True).
        do_bias_correction: OneFlow's option: False drops both bias corrections (default True).
        amsgrad: not supported: True raises RuntimeError, as in OneFlow (default False).
        contiguous_params: OneFlow's memory-layout hint; accepted, no effect (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([3., -4.]))
        >>> opt = fjax.optim.LAMB([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> opt.step()  # u = [1, -1] (up to eps), ratio = ||w|| / ||u|| = 5 / sqrt(2)
        >>> w.data
        tensor([ 2.6464, -3.6464], dtype=fjax.float32)
        >>> sorted(opt.state[w])
        ['exp_avg', 'exp_avg_sq', 'step']
    """

    _state_names = {"exp_avg": "mu", "exp_avg_sq": "nu"}
    _hypers = (
        number("lr", 1e-3),
        number("betas", (0.9, 0.999), check=betas, convert=tuple),
        number("eps", 1e-8),
        number("weight_decay", 0, static=nonzero),
        flag("adam_w_mode", True),
        flag("do_bias_correction", True),
        flag("amsgrad", check=_no_amsgrad, static=None),
        oneflow("contiguous_params"),
    )

    @classmethod
    def _transform(cls, hyper, static, step):
        (b1, b2), eps = hyper["betas"], hyper["eps"]
        decay_on, adam_w_mode = static.weight_decay, static.adam_w_mode
        parts = [optax.add_decayed_weights(hyper["weight_decay"])] if decay_on and not adam_w_mode else []
        parts.extend(adam_moments(b1, b2, eps, False, static.do_bias_correction, step))
        parts.append(scale_by_lamb_trust_ratio(hyper["weight_decay"] if decay_on and adam_w_mode else 0.0))
        parts.append(optax.scale_by_learning_rate(hyper["lr"]))
        return optax.chain(*parts)
