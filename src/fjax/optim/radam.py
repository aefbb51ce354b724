"""RAdam with torch's semantics (``torch.optim.RAdam``), over optax."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import optax

from ._hyper import KW, accepted, betas, flag, nonzero, number, unsupported
from .optimizer import Optimizer

# torch rectifies when rho_t > 5; optax when rho_t >= threshold: the next float64 above 5.
_THRESHOLD = float(np.nextafter(5.0, np.inf))


class RAdam(Optimizer):
    """RAdam, ``torch.optim.RAdam``: Adam whose adaptive term is switched on (and rectified)
    once the variance of its estimate is tractable.

    Each step updates ``exp_avg``/``exp_avg_sq`` as Adam and computes ``rho_t = rho_inf - 2t *
    beta2**t / (1 - beta2**t)`` with ``rho_inf = 2 / (1 - beta2) - 1``. While ``rho_t <= 5``
    the step is ``lr * m_hat`` (momentum SGD); after it, ``lr * r_t * m_hat * sqrt(1 -
    beta2**t) / (sqrt(exp_avg_sq) + eps)`` with the rectification ``r_t = sqrt((rho_t - 4)
    (rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``. ``weight_decay`` adds an L2
    term to ``g``, or with ``decoupled_weight_decay=True`` shrinks the parameter by ``lr *
    weight_decay`` first; ``maximize`` negates ``g``.

    The update is ``optax.scale_by_radam``. optax puts eps after the bias correction
    (``sqrt(v_hat) + eps``) where torch puts it before; passing ``eps / sqrt(1 - beta2**t)``
    gives torch's value exactly, as :class:`Adam` does for AMSGrad. ``foreach`` and
    ``capturable`` are accepted and change nothing.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.001).
        betas: the decay rates of the running averages of the gradient and of its square (default (0.9, 0.999)).
        eps: added to the denominator for numerical stability (default 1e-08).
        weight_decay: L2 penalty coefficient, added to the gradient as ``weight_decay * p`` (default 0).
        decoupled_weight_decay: if True, shrink the parameter by ``lr * weight_decay`` (no L2 term) (default False).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        maximize: if True, maximize the objective (the gradient is negated) (default False).
        capturable: accepted for torch compatibility; no effect (default False).
        differentiable: not supported: True raises NotImplementedError (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., -2.]))
        >>> opt = fjax.optim.RAdam([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> opt.step()
        >>> w.data  # the first steps are momentum SGD: lr * m_hat = lr * g
        tensor([ 0.8000, -1.6000], dtype=fjax.float32)
        >>> sorted(opt.state[w])
        ['exp_avg', 'exp_avg_sq', 'step']
    """

    _state_names = {"exp_avg": "mu", "exp_avg_sq": "nu"}
    _hypers = (
        number("lr", 1e-3),
        number("betas", (0.9, 0.999), check=betas),
        number("eps", 1e-8),
        number("weight_decay", 0, static=nonzero),
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
        c2_sqrt = jnp.sqrt(1.0 - b2 ** (jnp.asarray(step, jnp.float64) + 1.0))
        return [optax.scale_by_radam(b1, b2, eps / c2_sqrt, threshold=_THRESHOLD)]
