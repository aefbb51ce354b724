"""Custom autograd Functions with torch's API (forward/backward staticmethods and a ctx)."""

from __future__ import annotations

import jax.numpy as jnp

from .engine import Node
from .grad_mode import is_grad_enabled, no_grad


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``; attributes may be set freely."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.saved_tensors = ()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors


class _FunctionNode(Node):
    __slots__ = ("cls", "ctx", "args")

    def apply(self, cts):
        from ..tensor import Tensor

        grads = self.cls.backward(self.ctx, *[Tensor._wrap(c) for c in cts])
        if not isinstance(grads, tuple):
            grads = (grads,)
        if len(grads) != len(self.args):
            raise RuntimeError(
                f"{self.cls.__name__}.backward returned {len(grads)} gradients; expected {len(self.args)} "
                "(one per forward argument, None for non-tensors)"
            )
        out = []
        for g, needs, arg in zip(grads, self.ctx.needs_input_grad, self.args):
            if needs:
                out.append(jnp.zeros_like(arg) if g is None else g._data)
        return out


class Function:
    """Subclass with ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``; call ``apply``.

    Example::

        class Exp(fjax.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y
    """

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("Function subclasses must implement forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("Function subclasses must implement backward(ctx, *grad_outputs)")

    @classmethod
    def apply(cls, *args):
        from ..tensor import Tensor

        record = is_grad_enabled()
        needs = tuple(isinstance(a, Tensor) and a.requires_grad and record for a in args)
        ctx = FunctionCtx(needs)
        with no_grad():
            out = cls.forward(ctx, *args)
        if not any(needs):
            return out
        multi = isinstance(out, tuple)
        outs = out if multi else (out,)
        inputs = tuple(
            ((a._node, a._idx) if a._node is not None else a) if n else a._data
            for a, n in zip(args, needs)
            if isinstance(a, Tensor)
        )
        avals = [(o._data.shape, o._data.dtype) for o in outs]
        node = _FunctionNode(cls.__name__, None, None, inputs, avals if multi else avals[0])
        node.cls, node.ctx = cls, ctx
        node.args = [a._data if isinstance(a, Tensor) else None for a in args]
        wrapped = tuple(Tensor._wrap(o._data, node, i) for i, o in enumerate(outs))
        return wrapped if multi else wrapped[0]
