"""Adam and AdamW (with AMSGrad) with torch's semantics and OneFlow's options, over optax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from ._hyper import KW, accepted, betas, fixed, flag, nonzero, number, oneflow, unsupported
from .optimizer import Optimizer


def scale_by_adam_uncorrected(b1, b2, eps) -> optax.GradientTransformation:
    """``optax.scale_by_adam`` without bias correction: ``m / (sqrt(v) + eps)`` (OneFlow's
    ``do_bias_correction=False``); the state is optax's ``ScaleByAdamState``, so the moments
    keep their names (``mu``, ``nu``, ``count``)."""
    base = optax.scale_by_adam(b1, b2, eps)

    def update(updates, state, params=None):
        del params
        mu = optax.tree.update_moment(updates, state.mu, b1, 1)
        nu = optax.tree.update_moment_per_elem_norm(updates, state.nu, b2, 2)
        out = jax.tree.map(lambda m, v: m / (jnp.sqrt(v) + eps), mu, nu)
        return out, optax.ScaleByAdamState(count=optax.safe_increment(state.count), mu=mu, nu=nu)

    return optax.GradientTransformation(base.init, update)


def adam_moments(b1, b2, eps, amsgrad: bool, bias_correction: bool, step) -> list:
    """The Adam direction as optax parts: torch's (bias-corrected) or OneFlow's uncorrected one.

    Uncorrected AMSGrad is ``scale_by_amsgrad`` with both corrections off: ``m / (sqrt(v_max) + eps)``.
    """
    if not bias_correction:
        if amsgrad:
            return [optax.scale_by_amsgrad(b1, b2, eps, bias_correction_mu=False, bias_correction_nu=False)]
        return [scale_by_adam_uncorrected(b1, b2, eps)]
    if amsgrad:
        c2_sqrt = jnp.sqrt(1.0 - b2 ** (step + 1))
        return [optax.scale_by_amsgrad(b1, b2, eps=eps * c2_sqrt, bias_correction_nu=False), optax.scale(c2_sqrt)]
    return [optax.scale_by_adam(b1, b2, eps)]


class Adam(Optimizer):
    """Adam, ``torch.optim.Adam`` (L2 weight decay; ``decoupled_weight_decay=True`` is AdamW).

    The update is ``optax.scale_by_adam`` (bias-corrected moments, eps outside the root as
    torch). AMSGrad uses ``optax.scale_by_amsgrad(bias_correction_nu=False)``: torch keeps the
    maximum of the *raw* second moment and divides it by the current bias correction
    ``c2 = 1 - beta2**t``; with ``eps' = eps*sqrt(c2)`` and a final ``scale(sqrt(c2))``,
    ``sqrt(c2)*m_hat/(sqrt(v_max) + eps*sqrt(c2)) = m_hat/(sqrt(v_max/c2) + eps)`` is exactly
    torch's update.

    ``foreach``, ``fused`` and ``capturable`` are accepted and change nothing: every group's
    update is one fused XLA computation and the step counts live on the device. OneFlow's
    ``do_bias_correction=False`` drops both bias corrections (``lr * m / (sqrt(v) + eps)``);
    OneFlow's ``contiguous_params`` (a memory-layout hint there) is accepted and has no effect.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.001).
        betas: the decay rates of the running averages of the gradient and of its square (default (0.9, 0.999)).
        eps: added to the denominator for numerical stability (default 1e-08).
        weight_decay: L2 penalty coefficient, added to the gradient as ``weight_decay * p`` (default 0).
        amsgrad: if True, use the maximum of the past second moments (AMSGrad) (default False).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        maximize: if True, maximize the objective (the gradient is negated) (default False).
        capturable: accepted for torch compatibility; no effect (default False).
        differentiable: not supported: True raises NotImplementedError (default False).
        fused: accepted for torch compatibility; no effect (default None).
        decoupled_weight_decay: if True, shrink the parameter by ``lr * weight_decay`` (no L2 term) (default False).
        do_bias_correction: OneFlow's option: False drops both bias corrections (default True).
        contiguous_params: OneFlow's memory-layout hint; accepted, no effect (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., -2.]))
        >>> opt = fjax.optim.Adam([w], lr=0.1, betas=(0.9, 0.999), eps=1e-8)
        >>> (w ** 2).sum().backward()
        >>> opt.step()
        >>> w.data  # the first step moves each entry by lr against its gradient's sign
        tensor([ 0.9000, -1.9000], dtype=fjax.float32)
        >>> sorted(opt.state[w])
        ['exp_avg', 'exp_avg_sq', 'step']
    """

    _state_names = {"exp_avg": "mu", "exp_avg_sq": "nu", "max_exp_avg_sq": "nu_max"}
    _hypers = (
        number("lr", 1e-3),
        number("betas", (0.9, 0.999), check=betas, convert=tuple),
        number("eps", 1e-8),
        number("weight_decay", 0, static=nonzero),
        flag("amsgrad"),
        KW,
        accepted("foreach"),
        flag("maximize"),
        accepted("capturable", False),
        unsupported("differentiable"),
        accepted("fused"),
        flag("decoupled_weight_decay"),
        oneflow("do_bias_correction", True, static=bool),
        oneflow("contiguous_params"),
    )

    @classmethod
    def _direction(cls, hyper, static, step):
        (b1, b2), eps = hyper["betas"], hyper["eps"]
        return adam_moments(b1, b2, eps, static.amsgrad, static.do_bias_correction, step)


class AdamW(Adam):
    """AdamW, ``torch.optim.AdamW``: Adam with decoupled weight decay (default 1e-2).

    Each step first shrinks every parameter by ``lr * weight_decay * param``, then applies the
    plain Adam update, so the decay does not pass through the moment estimates. OneFlow's
    ``do_bias_correction`` and ``contiguous_params`` work as in :class:`Adam`.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.001).
        betas: the decay rates of the running averages of the gradient and of its square (default (0.9, 0.999)).
        eps: added to the denominator for numerical stability (default 1e-08).
        weight_decay: decoupled decay: the parameter shrinks by ``lr * weight_decay`` (default 0.01).
        amsgrad: if True, use the maximum of the past second moments (AMSGrad) (default False).
        maximize: if True, maximize the objective (the gradient is negated) (default False).
        foreach: accepted for torch compatibility; no effect (one XLA update per group) (default None).
        capturable: accepted for torch compatibility; no effect (default False).
        differentiable: not supported: True raises NotImplementedError (default False).
        fused: accepted for torch compatibility; no effect (default None).
        do_bias_correction: OneFlow's option: False drops both bias corrections (default True).
        contiguous_params: OneFlow's memory-layout hint; accepted, no effect (default False).

    Example::

        >>> w = nn.Parameter(fjax.tensor([1., -2.]))
        >>> opt = fjax.optim.AdamW([w], lr=0.1, weight_decay=0.5)
        >>> (w ** 2).sum().backward()
        >>> opt.step()
        >>> w.data  # w * (1 - 0.1 * 0.5) - 0.1 * sign(grad)
        tensor([ 0.8500, -1.8000], dtype=fjax.float32)
    """

    _hypers = (
        number("lr", 1e-3),
        number("betas", (0.9, 0.999), check=betas, convert=tuple),
        number("eps", 1e-8),
        number("weight_decay", 1e-2, static=nonzero),
        flag("amsgrad"),
        KW,
        flag("maximize"),
        accepted("foreach"),
        accepted("capturable", False),
        unsupported("differentiable"),
        accepted("fused"),
        fixed("decoupled_weight_decay", True, static=bool),
        oneflow("do_bias_correction", True, static=bool),
        oneflow("contiguous_params"),
    )
