"""Ops whose VJP saves what torch's backward saves, and no more.

An eager tape node keeps its op's VJP residuals (``dispatch._Residuals``). JAX's own rules often
save more than torch does: ``tanh`` saves two arrays computed from its result, ``relu`` a mask and
a full array of zeros, ``gelu`` three or five intermediates, ``silu`` two. On a chain of large
activations that is up to 3x torch's memory. These wrappers give an op a JVP rule that reads
only its result (``saves_result``: relu, tanh, sigmoid, softmax, as torch's backward does) or only
its inputs (``saves_inputs``: gelu, silu, layer_norm), with the rest recomputed in the backward:
the rule runs under ``jax.checkpoint``, so linearizing it saves the rule's arguments alone, and
a result or input saved is the very array the op returned or took (no copy).

The checkpoint is taken with ``prevent_cse=False``: inside one compiled program (nn.Graph) XLA
may then merge the recomputation with the forward's values, which keeps the program as JAX's own
rules would make it, and lets a checkpoint policy around a block recompute the block as before
(with CSE prevented, the inner checkpoint's barrier kept the block's values saved whatever the
policy).

The rules are JVPs, so forward mode (``fjax.func.jvp``), higher derivatives and vmap work as for
any JAX function. They apply to real floating inputs; other dtypes take the op's plain function.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _floating(x) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.floating)


def saves_result(f, rule, x):
    """``f(x)``, whose VJP saves only the result ``y``: the derivative is ``rule(y, t)`` (linear in
    the tangent ``t``) and reads nothing else of the forward. ``f`` and ``rule`` must not close
    over arrays (inside a trace they would be tracers that the custom rule cannot capture)."""
    if not _floating(x):
        return f(x)

    @jax.custom_jvp
    def op(x):
        return f(x)

    @op.defjvp
    def _jvp(primals, tangents):
        y = f(*primals)
        return y, jax.checkpoint(rule, prevent_cse=False)(y, *tangents)

    return op(x)


def saves_inputs(f, *args):
    """``f(*args)`` (None args stay None), whose VJP saves only its inputs: the derivative is
    recomputed from them in the backward (torch's gelu, silu and layer_norm save their input).
    Every array ``f`` reads (a slope, a threshold) must be one of ``args``, not a closure."""
    if not _floating(args[0]):
        return f(*args)
    where = [i for i, a in enumerate(args) if a is not None]

    def g(*arrays):
        full = list(args)
        for i, a in zip(where, arrays):
            full[i] = a
        return f(*full)

    op = jax.custom_jvp(g)

    @op.defjvp
    def _jvp(primals, tangents):
        def tangent(primals, tangents):
            return jax.jvp(g, primals, tangents)[1]

        return g(*primals), jax.checkpoint(tangent, prevent_cse=False)(primals, tangents)

    return op(*[args[i] for i in where])


def scaled_mask(x, keep, scale):
    """``x * where(keep, scale, 0)`` (dropout), whose VJP saves only the boolean mask ``keep`` and
    the scalar ``scale``, as torch's dropout saves its mask; the gradient flows to ``x`` alone."""
    if not _floating(x):
        return x * jnp.where(keep, scale, jnp.zeros((), x.dtype))

    def rule(keep, scale, t):
        return t * jnp.where(keep, scale, jnp.zeros((), t.dtype))

    @jax.custom_jvp
    def op(x, keep, scale):
        return x * jnp.where(keep, scale, jnp.zeros((), x.dtype))

    @op.defjvp
    def _jvp(primals, tangents):
        x, keep, scale = primals
        return op(x, keep, scale), jax.checkpoint(rule, prevent_cse=False)(keep, scale, tangents[0])

    return op(x, keep, scale)


# -- the rules, in torch's formulas (tools/autograd/derivatives.yaml) -------------------------------
def relu_rule(y, t):
    """threshold_backward(grad, result, 0): zero where the result is <= 0 (NaN passes the gradient)."""
    return jnp.where(y <= 0, jnp.zeros((), t.dtype), t)


def tanh_rule(y, t):
    """tanh_backward: ``grad * (1 - y * y)``."""
    return t * (1 - y * y)


def sigmoid_rule(y, t):
    """sigmoid_backward: ``grad * (1 - y) * y``."""
    return t * (1 - y) * y


def sqrt_rule(y, t):
    """``grad / (2 * result)``."""
    return t / (2 * y)


def softmax_rule(axis):
    """_softmax_backward_data: ``y * (grad - sum(grad * y))`` along ``axis``."""

    def rule(y, t):
        return y * (t - jnp.sum(t * y, axis=axis, keepdims=True))

    return rule


def log_softmax_rule(axis):
    """_log_softmax_backward_data: ``grad - exp(y) * sum(grad)`` along ``axis`` (as a JVP:
    ``t - sum(exp(y) * t)``)."""

    def rule(y, t):
        return t - jnp.sum(jnp.exp(y) * t, axis=axis, keepdims=True)

    return rule
