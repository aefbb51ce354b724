"""Adadelta with torch's semantics (``torch.optim.Adadelta``), over optax."""

from __future__ import annotations

import optax

from ._hyper import KW, accepted, flag, nonzero, number, unsupported
from .optimizer import Optimizer


def _rho(opt: str, name: str, value) -> None:
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"fjax.optim.{opt}: invalid rho value: {value}")


class Adadelta(Optimizer):
    """Adadelta, ``torch.optim.Adadelta``: step sizes from running averages of squared
    gradients and squared updates.

    Each step sets ``square_avg = rho * square_avg + (1 - rho) * g**2``, moves by ``lr * delta``
    with ``delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g`` and then updates
    ``acc_delta = rho * acc_delta + (1 - rho) * delta**2``; ``weight_decay`` adds an L2 term to
    ``g`` and ``maximize`` negates it first. The update is ``optax.scale_by_adadelta``, whose
    math is torch's. ``foreach`` and ``capturable`` are accepted and change nothing.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the factor the computed delta is scaled by (default 1.0).
        rho: the decay rate of the running averages (default 0.9).
        eps: added inside the square roots for numerical stability (default 1e-06).
        weight_decay: L2 penalty coefficient, added to the gradient as ``weight_decay * p`` (default 0).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        capturable: accepted for torch compatibility; no effect (default False).
        maximize: if True, maximize the objective (the gradient is negated) (default False).
        differentiable: not supported: True raises NotImplementedError (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., -2.]))
        >>> opt = fjax.optim.Adadelta([w], lr=1.0, rho=0.5, eps=0.25)
        >>> (w ** 2).sum().backward()  # g = [2, -4]
        >>> opt.step()  # delta = sqrt(0.25) / sqrt(0.5 * g**2 + 0.25) * g
        >>> w.data
        tensor([ 0.3333, -1.3037], dtype=fjax.float32)
        >>> opt.state[w]['square_avg']
        tensor([2., 8.], dtype=fjax.float32)
    """

    _state_names = {"square_avg": "e_g", "acc_delta": "e_x"}
    _hypers = (
        number("lr", 1.0),
        number("rho", 0.9, check=_rho),
        number("eps", 1e-6),
        number("weight_decay", 0, static=nonzero),
        accepted("foreach"),
        KW,
        accepted("capturable", False),
        flag("maximize"),
        unsupported("differentiable"),
    )

    @classmethod
    def _direction(cls, hyper, static, step):
        return [optax.scale_by_adadelta(hyper["rho"], hyper["eps"])]
