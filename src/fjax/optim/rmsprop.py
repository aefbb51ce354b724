"""RMSprop (centered, momentum) with torch's semantics, over optax."""

from __future__ import annotations

import optax

from ._hyper import accepted, flag, nonzero, number, unsupported
from .optimizer import Optimizer


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
    _hypers = (
        number("lr", 1e-2),
        number("alpha", 0.99),
        number("eps", 1e-8),
        number("weight_decay", 0, static=nonzero),
        number("momentum", 0, static=lambda m: float(m) > 0),
        flag("centered"),
        accepted("capturable", False),
        accepted("foreach"),
        flag("maximize"),
        unsupported("differentiable"),
    )

    @classmethod
    def _direction(cls, hyper, static, step):
        scale_by = optax.scale_by_stddev if static.centered else optax.scale_by_rms
        parts = [scale_by(hyper["alpha"], hyper["eps"], eps_in_sqrt=False)]
        if static.momentum:
            parts.append(optax.trace(hyper["momentum"]))
        return parts
