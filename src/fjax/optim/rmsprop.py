"""RMSprop (centered, momentum) with torch's semantics, over optax."""

from __future__ import annotations

import optax

from .optimizer import Optimizer, _check_range, _check_unsupported, _number, _prefix


class RMSprop(Optimizer):
    """RMSprop, ``torch.optim.RMSprop``.

    The update is ``optax.scale_by_rms`` (``scale_by_stddev`` when centered) with torch's eps
    outside the root (``eps_in_sqrt=False``), then ``optax.trace(momentum)`` when momentum > 0.
    Per element: ``square_avg = alpha * square_avg + (1 - alpha) * grad ** 2`` and the step is
    ``lr * grad / (sqrt(square_avg) + eps)``.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.01).
        alpha: the decay rate of the squared-gradient average (default 0.99).
        eps: added to the denominator for numerical stability (default 1e-08).
        weight_decay: L2 penalty coefficient, added to the gradient as ``weight_decay * p`` (default 0).
        momentum: the momentum factor (default 0).
        centered: if True, divide by the gradient's estimated variance rather than its second moment (default False).
        capturable: accepted for torch compatibility; no effect (default False).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        maximize: if True, maximize the objective (the gradient is negated) (default False).
        differentiable: not supported: True raises NotImplementedError (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., -2.]))
        >>> opt = fjax.optim.RMSprop([w], lr=0.01, alpha=0.99)
        >>> (w ** 2).sum().backward()
        >>> opt.step()
        >>> w.data  # first step: lr * grad / sqrt(0.01 * grad ** 2) = 0.1 * sign(grad)
        tensor([ 0.9000, -1.9000], dtype=fjax.float32)
    """

    _state_names = {"square_avg": "nu", "grad_avg": "mu", "momentum_buffer": "trace"}

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        _check_range("RMSprop", lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        _check_unsupported("RMSprop", differentiable=differentiable)
        defaults = dict(
            lr=lr,
            momentum=momentum,
            alpha=alpha,
            eps=eps,
            centered=centered,
            weight_decay=weight_decay,
            capturable=capturable,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    @classmethod
    def _static(cls, group):
        return (
            float(group["momentum"]) > 0,
            bool(group["centered"]),
            bool(group["maximize"]),
            float(group["weight_decay"]) != 0,
        )

    @classmethod
    def _hyper(cls, group):
        return {k: _number(group[k]) for k in ("lr", "alpha", "eps", "weight_decay", "momentum")}

    @staticmethod
    def _transform(hyper, static, step):
        momentum_on, centered, maximize, decay_on = static
        parts = _prefix(maximize, decay_on, hyper)
        scale_by = optax.scale_by_stddev if centered else optax.scale_by_rms
        parts.append(scale_by(hyper["alpha"], hyper["eps"], eps_in_sqrt=False))
        if momentum_on:
            parts.append(optax.trace(hyper["momentum"]))
        parts.append(optax.scale_by_learning_rate(hyper["lr"]))
        return optax.chain(*parts)
