"""Adamax with torch's semantics (``torch.optim.Adamax``), over optax."""

from __future__ import annotations

import optax

from .optimizer import Optimizer, _check_betas, _check_range, _check_unsupported, _number, _prefix


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

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ):
        _check_range("Adamax", lr=lr, eps=eps, weight_decay=weight_decay)
        _check_betas("Adamax", betas)
        _check_unsupported("Adamax", differentiable=differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    @classmethod
    def _static(cls, group):
        return (bool(group["maximize"]), float(group["weight_decay"]) != 0)

    @classmethod
    def _hyper(cls, group):
        return {k: _number(group[k]) for k in ("lr", "betas", "eps", "weight_decay")}

    @staticmethod
    def _transform(hyper, static, step):
        maximize, decay_on = static
        (b1, b2), eps = hyper["betas"], hyper["eps"]
        parts = _prefix(maximize, decay_on, hyper)
        parts.append(optax.scale_by_adamax(b1, b2, eps))
        parts.append(optax.scale_by_learning_rate(hyper["lr"]))
        return optax.chain(*parts)
