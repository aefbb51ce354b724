"""Muon with torch's semantics (``torch.optim.Muon``), as an optax transform."""

from __future__ import annotations

import math

import jax.numpy as jnp
import optax

from ..errors import OpError
from ._hyper import flag, number
from .optimizer import Optimizer

_ADJUST_LR_FNS = (None, "original", "match_rms_adamw")


def _adjust_lr_fn_check(opt: str, name: str, value) -> None:
    if value not in _ADJUST_LR_FNS:
        raise ValueError(f"fjax.optim.{opt}: adjust learning rate function {value} is not supported")


def _adjust_lr_fn(value):
    """The static flag: a group's ``adjust_lr_fn``, checked again since groups may be edited."""
    if value not in _ADJUST_LR_FNS:
        raise OpError(f"fjax.optim.Muon: adjust learning rate function {value} is not supported")
    return value


def _coefficients(opt: str, name: str, value) -> None:
    if len(value) != 3:
        raise ValueError(f"fjax.optim.{opt}: ns_coefficients must be a tuple of exactly 3 values")


def _ns_steps(opt: str, name: str, value) -> None:
    if not 0 <= int(value) < 100:
        raise ValueError(f"fjax.optim.{opt}: number of Newton-Schulz steps must be less than 100")


def newton_schulz(g, coefficients, steps: int, eps):
    """torch's orthogonalisation of a 2-D update: ``steps`` quintic Newton-Schulz iterations in
    bfloat16 (matrix products accumulate in float32) on ``g / max(||g||, eps)``, wide side last."""
    a, b, c = coefficients
    x = g.astype(jnp.bfloat16)
    tall = g.shape[0] > g.shape[1]
    if tall:
        x = x.T
    norm = jnp.sqrt(jnp.sum(jnp.square(x.astype(jnp.float32)))).astype(jnp.bfloat16)
    x = x / jnp.maximum(norm, jnp.asarray(eps, jnp.bfloat16))

    def mm(u, v):
        return jnp.matmul(u, v, preferred_element_type=jnp.float32)

    for _ in range(steps):
        gram = mm(x, x.T).astype(jnp.bfloat16)
        poly = (b * gram.astype(jnp.float32) + c * mm(gram, gram)).astype(jnp.bfloat16)
        x = (a * x.astype(jnp.float32) + mm(poly, x)).astype(jnp.bfloat16)
    return x.T if tall else x


def _lr_ratio(adjust_lr_fn, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn in (None, "original"):
        return math.sqrt(max(1, rows / cols))
    return 0.2 * math.sqrt(max(rows, cols))


def _lerp(start, end, weight):
    """``torch.lerp`` with its rounding: the formula is anchored at the nearer end."""
    return jnp.where(weight < 0.5, start + weight * (end - start), end - (end - start) * (1.0 - weight))


def muon_update(lr, weight_decay, momentum, nesterov, coefficients, eps, steps, adjust_lr_fn):
    """torch's Muon step as an optax transform: ``buf`` is an EMA of the gradient (``buf +=
    (1 - momentum) * (g - buf)``); the Nesterov direction is ``g + momentum * (buf - g)``; its
    Newton-Schulz orthogonalisation moves the parameter by ``lr * ratio`` (``ratio`` from
    ``adjust_lr_fn`` and the shape) after a decoupled decay ``p *= 1 - lr * weight_decay``.
    ``optax.contrib.muon`` keeps a plain momentum trace and other defaults, so it is not used."""

    def init(params):
        return optax.TraceState(trace=jnp.zeros_like(params))

    def update(g, state, p):
        buf = _lerp(state.trace, g, 1.0 - momentum)
        direction = _lerp(g, buf, momentum) if nesterov else buf
        ortho = newton_schulz(direction, coefficients, steps, eps).astype(p.dtype)
        out = -(lr * _lr_ratio(adjust_lr_fn, p.shape)) * ortho - (lr * weight_decay) * p
        return out.astype(p.dtype), optax.TraceState(trace=buf.astype(state.trace.dtype))

    return optax.GradientTransformation(init, update)


class Muon(Optimizer):
    """Muon, ``torch.optim.Muon``: momentum whose update is orthogonalised by Newton-Schulz
    iterations, for 2-D parameters (hidden-layer weight matrices) only.

    Each step sets ``momentum_buffer += (1 - momentum) * (g - momentum_buffer)``, takes the
    Nesterov direction ``g + momentum * (buf - g)`` (or ``buf`` itself), orthogonalises it with
    ``ns_steps`` Newton-Schulz iterations in bfloat16 (coefficients ``ns_coefficients``),
    shrinks the parameter by ``lr * weight_decay`` and moves it by ``lr * ratio``, ``ratio``
    being ``sqrt(max(1, rows / cols))`` (``adjust_lr_fn`` None or ``"original"``) or ``0.2 *
    sqrt(max(rows, cols))`` (``"match_rms_adamw"``). As in torch the products run in bfloat16
    (accumulating in float32), so results agree with torch's to bfloat16 precision, not bit for bit.

    Args:
        params: an iterable of parameters, or of dicts defining parameter groups.
        lr: the learning rate (default 0.001).
        weight_decay: decoupled decay: the parameter shrinks by ``lr * weight_decay`` (default 0.1).
        momentum: the momentum factor (default 0.95).
        nesterov: if True, use the Nesterov direction (default True).
        ns_coefficients: the Newton-Schulz polynomial's coefficients (default (3.4445, -4.775, 2.0315)).
        eps: the lower bound of the norm the update is divided by (default 1e-07).
        ns_steps: the number of Newton-Schulz iterations (default 5).
        adjust_lr_fn: the per-shape lr ratio: None or ``'original'``, or ``'match_rms_adamw'`` (default None).

    Example::

        >>> w = nn.Parameter(fjax.tensor([[3., 0.], [0., 1.]]))
        >>> opt = fjax.optim.Muon([w], lr=0.1, weight_decay=0.0)
        >>> (w ** 2).sum().backward()
        >>> opt.step()  # the orthogonalised gradient: roughly the identity (singular values 0.75, 1.13)
        >>> w.data
        tensor([[2.9250, 0.0000],
                [0.0000, 0.8867]], dtype=fjax.float32)
        >>> sorted(opt.state[w])
        ['momentum_buffer']
    """

    _state_names = {"momentum_buffer": "trace"}
    _has_step = False

    _hypers = (
        number("lr", 1e-3),
        number("weight_decay", 0.1),
        number("momentum", 0.95),
        flag("nesterov", True),
        number("ns_coefficients", (3.4445, -4.775, 2.0315), check=_coefficients),
        number("eps", 1e-7, check=None),
        flag("ns_steps", 5, static=int, check=_ns_steps, annotation="int"),
        flag("adjust_lr_fn", None, static=_adjust_lr_fn, check=_adjust_lr_fn_check, annotation="str | None"),
    )

    def _check_param(self, p, index: int) -> None:
        super()._check_param(p, index)
        if p.ndim != 2:
            raise ValueError(
                f"fjax.optim.Muon: Muon only supports 2D parameters whereas param {index} has size {tuple(p.shape)}; "
                "optimize biases, embeddings and other parameters with e.g. AdamW"
            )

    @classmethod
    def _transform(cls, hyper, static, step):
        return muon_update(
            hyper["lr"],
            hyper["weight_decay"],
            hyper["momentum"],
            static.nesterov,
            hyper["ns_coefficients"],
            hyper["eps"],
            static.ns_steps,
            static.adjust_lr_fn,
        )
