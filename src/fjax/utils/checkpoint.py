"""``fjax.utils.checkpoint``: activation checkpointing (torch.utils.checkpoint, oneflow.utils.checkpoint).

``checkpoint(function, *args)`` returns what ``function(*args)`` returns, with the same
gradients. With ``use_reentrant=True`` the forward keeps no activations: it runs without
recording, and the backward runs ``function`` again (from the same random state, unless
``preserve_rng_state=False``) and differentiates that. Otherwise (``use_reentrant=False``, or
not given: OneFlow's only form and the one torch recommends) ``function`` runs recorded as usual,
so every gradient, ``autograd.grad`` included, is exact, but activations are kept.
"""

from __future__ import annotations

import warnings

from .._tracing import trace_state
from ..autograd.api import backward as _backward
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad
from ..random import default_generator
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


class _Recompute(Function):
    """The reentrant checkpoint: ``function`` run unrecorded, and again, recorded, in backward."""

    @staticmethod
    def forward(ctx, function, preserve_rng_state, *args):
        ctx.function, ctx.args = function, args
        ctx.rng = default_generator.get_state() if preserve_rng_state else None
        out = function(*args)
        outs = out if isinstance(out, tuple) else (out,)
        if not all(isinstance(o, Tensor) for o in outs):
            raise TypeError(
                "checkpoint(use_reentrant=True): function must return a Tensor or a tuple of Tensors, got "
                + ", ".join(type(o).__name__ for o in outs)
            )
        return out

    @staticmethod
    def backward(ctx, *grads):
        args = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a for a in ctx.args]
        now = None
        if ctx.rng is not None:
            now = default_generator.get_state()
            default_generator.set_state(ctx.rng)
        try:
            with enable_grad():
                out = ctx.function(*args)
        finally:
            if now is not None:
                default_generator.set_state(now)
        outs = out if isinstance(out, tuple) else (out,)
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if pairs:
            _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *[a.grad if isinstance(a, Tensor) and a.requires_grad else None for a in args])


def checkpoint(
    function,
    *args,
    use_reentrant: bool | None = None,
    context_fn=None,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    **kwargs,
):
    """``function(*args, **kwargs)``, trading compute for memory when ``use_reentrant=True``.

    Values and gradients equal those of calling ``function`` directly. ``use_reentrant=True``
    (torch's old default) stores only the inputs: the backward re-runs ``function`` from the
    random state the forward started from (``preserve_rng_state``, so dropout draws the same
    mask), and ``function`` must return a Tensor or a tuple of Tensors and take no keyword
    arguments. As in torch, that form gives no gradient to parameters used inside ``function``
    when no input requires grad, and it puts those gradients into ``.grad`` even under
    ``autograd.grad``. ``use_reentrant=False`` or None (OneFlow's form; torch's ``None``
    warns and picks True) runs ``function`` recorded, keeping its activations. Inside a
    functional transform or an nn.Graph trace ``function`` is simply called.

    ``preserve_rng_state`` is a keyword argument (torch takes it from ``**kwargs`` too).
    ``context_fn``, ``determinism_check`` and ``debug`` (torch's non-reentrant tuning) are
    accepted at their defaults only; ``early_stop`` changes nothing here.

    Example::

        >>> lin = nn.Linear(3, 3)
        >>> x = fjax.randn(2, 3, requires_grad=True)
        >>> from fjax.utils.checkpoint import checkpoint
        >>> y = checkpoint(lin, x, use_reentrant=True)
        >>> bool((y == lin(x)).all())
        True
        >>> y.sum().backward()
        >>> lin.weight.grad.shape
        fjax.Size([3, 3])
    """
    preserve_rng_state = kwargs.pop("preserve_rng_state", True)
    if context_fn is not None and getattr(context_fn, "__name__", "") != "noop_context_fn":
        raise NotImplementedError("checkpoint: a custom context_fn is not supported")
    if determinism_check != "default" or debug:
        raise NotImplementedError(
            f"checkpoint: determinism_check={determinism_check!r}, debug={debug!r} are not supported "
            "(only the defaults 'default', False)"
        )
    if not use_reentrant or trace_state.depth:
        return function(*args, **kwargs)
    if kwargs:
        raise ValueError("checkpoint(use_reentrant=True): unexpected keyword arguments: " + ",".join(kwargs))
    if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn("checkpoint: none of the inputs have requires_grad=True; gradients will be None", stacklevel=2)
    return _Recompute.apply(function, bool(preserve_rng_state), *args)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` (an ``nn.Sequential`` or a list of modules/functions) on ``input`` in
    ``segments`` chunks, each but the last through :func:`checkpoint`.

    Example::

        >>> seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
        >>> x = fjax.randn(3, 4, requires_grad=True)
        >>> from fjax.utils.checkpoint import checkpoint_sequential
        >>> y = checkpoint_sequential(seq, 2, x, use_reentrant=True)
        >>> bool(fjax.allclose(y, seq(x)))
        True
    """
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("checkpoint_sequential: unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    functions = list(functions)
    if not isinstance(segments, int) or segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be a positive int, got {segments!r}")

    def run(start: int, end: int):
        def forward(x):
            for f in functions[start : end + 1]:
                x = f(x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
