"""SGD with torch's momentum, dampening, Nesterov, weight decay and maximize, over optax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from ._hyper import KW, accepted, flag, nonzero, number, oneflow, unsupported
from .optimizer import Optimizer


class SGD(Optimizer):
    """Stochastic gradient descent, ``torch.optim.SGD``.

    The update is ``optax.chain(add_decayed_weights, scale(dampening), trace(momentum,
    nesterov), scale_by_learning_rate)``; torch's first momentum step stores the undampened
    gradient, so the dampening scale is 1 on a parameter's first step (OneFlow instead starts
    the buffer at zero and dampens every step, so its first buffer is ``(1 - dampening) * grad``;
    the two agree when ``dampening=0``). OneFlow's ``contiguous_params`` (a memory-layout hint
    there) is accepted and has no effect.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.001).
        momentum: the momentum factor (default 0).
        dampening: dampening of the momentum (default 0).
        weight_decay: L2 penalty coefficient, added to the gradient as ``weight_decay * p`` (default 0).
        nesterov: if True, use Nesterov momentum (default False). torch refuses it without a
            momentum or with a dampening; fjax accepts both, as OneFlow does: without momentum it is
            plain SGD, and with a dampening the buffer is ``momentum * buf + (1 - dampening) * g``
            from zero on every step and the step direction ``g + momentum * buf`` (OneFlow's rule).
        maximize: if True, maximize the objective (the gradient is negated) (default False).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        differentiable: not supported: True raises NotImplementedError (default False).
        fused: accepted for torch compatibility; no effect (default None).
        contiguous_params: OneFlow's memory-layout hint; accepted, no effect (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., 2.]))
        >>> opt = fjax.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> (w ** 2).sum().backward()  # grad 2 * w = [2, 4]
        >>> opt.step()
        >>> w.data  # w - lr * grad
        tensor([0.8000, 1.6000], dtype=fjax.float32)
        >>> opt.zero_grad()
        >>> (w ** 2).sum().backward()
        >>> opt.step()
        >>> w.data  # buf = 0.9 * [2, 4] + [1.6, 3.2]
        tensor([0.4600, 0.9200], dtype=fjax.float32)
    """

    _state_names = {"momentum_buffer": "trace"}
    _has_step = False
    _hypers = (
        number("lr", 1e-3),
        number("momentum", 0, static=nonzero),
        number("dampening", 0, check=None),
        number("weight_decay", 0, static=nonzero),
        flag("nesterov"),
        KW,
        flag("maximize"),
        accepted("foreach"),
        unsupported("differentiable"),
        accepted("fused"),
        oneflow("contiguous_params"),
    )

    @classmethod
    def _direction(cls, hyper, static, step):
        if static.momentum and static.nesterov:
            return [_nesterov(hyper["momentum"], hyper["dampening"])]
        if static.momentum:
            return [optax.scale(jnp.where(step == 0, 1.0, 1.0 - hyper["dampening"])), optax.trace(hyper["momentum"])]
        return []


def _nesterov(momentum, dampening) -> optax.GradientTransformation:
    """Nesterov momentum as OneFlow's ``momentum_update`` computes it: ``buf = momentum * buf +
    (1 - dampening) * g`` (from a zero buffer), update ``g + momentum * buf``. With zero dampening
    (the only case torch allows) it is torch's rule; the state is optax's ``TraceState``, as
    ``optax.trace`` keeps it."""

    def init(params):
        return optax.TraceState(trace=jax.tree.map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        buf = jax.tree.map(lambda g, b: momentum * b + (1.0 - dampening) * g, updates, state.trace)
        return jax.tree.map(lambda g, b: g + momentum * b, updates, buf), optax.TraceState(trace=buf)

    return optax.GradientTransformation(init, update)
