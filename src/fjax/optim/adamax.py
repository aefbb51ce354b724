"""Adamax with torch's semantics (``torch.optim.Adamax``), over optax."""

from __future__ import annotations

import optax

from ._hyper import KW, accepted, betas, flag, nonzero, number, unsupported
from .optimizer import Optimizer


class Adamax(Optimizer):
    """Adamax, ``torch.optim.Adamax``: Adam with the infinity norm in place of the second moment.

    Each step sets ``exp_avg = beta1 * exp_avg + (1 - beta1) * g`` and ``exp_inf =
    max(beta2 * exp_inf, |g| + eps)``, then moves by ``lr / (1 - beta1**t) * exp_avg /
    exp_inf``; ``weight_decay`` adds an L2 term to ``g`` and ``maximize`` negates it first. The
    update is ``optax.scale_by_adamax``, whose math is torch's. ``foreach`` and ``capturable``
    are accepted and change nothing.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.002).
        betas: the decay rates of the gradient average and of the infinity norm (default (0.9, 0.999)).
        eps: added to the denominator for numerical stability (default 1e-08).
        weight_decay: L2 penalty coefficient, added to the gradient as ``weight_decay * p`` (default 0).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        maximize: if True, maximize the objective (the gradient is negated) (default False).
        differentiable: not supported: True raises NotImplementedError (default False).
        capturable: accepted for torch compatibility; no effect (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., -2.]))
        >>> opt = fjax.optim.Adamax([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> opt.step()
        >>> w.data  # the first step moves each entry by lr against its gradient's sign
        tensor([ 0.9000, -1.9000], dtype=fjax.float32)
        >>> opt.state[w]['exp_inf']
        tensor([2., 4.], dtype=fjax.float32)
    """

    _state_names = {"exp_avg": "mu", "exp_inf": "nu"}
    _hypers = (
        number("lr", 2e-3),
        number("betas", (0.9, 0.999), check=betas),
        number("eps", 1e-8),
        number("weight_decay", 0, static=nonzero),
        accepted("foreach"),
        KW,
        flag("maximize"),
        unsupported("differentiable"),
        accepted("capturable", False),
    )

    @classmethod
    def _direction(cls, hyper, static, step):
        (b1, b2), eps = hyper["betas"], hyper["eps"]
        return [optax.scale_by_adamax(b1, b2, eps)]
