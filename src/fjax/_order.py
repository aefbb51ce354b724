"""``after``: values that a compiled program computes only once others exist.

XLA orders a program's ops by their data alone. Some of fjax's programs need an order the data
do not give: a recomputed block's forward must wait for its output's gradient (``nn.Graph``'s
activation checkpointing), and a node of a fused backward must not read its residuals before
its cotangent exists, or XLA starts every node's work at once and holds all of it.
``jax.lax.optimization_barrier`` says so on a GPU or TPU, but XLA:CPU removes barriers early in
its pipeline, before it eliminates common subexpressions and schedules, so on the CPU the
dependence is made real: the values pass through a loop whose trip count is computed from the
awaited values and is never positive. The loop never runs and XLA cannot prove it, so the
values are the same and the order holds.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def after(tree, awaited):
    """``tree`` (a pytree), whose floating arrays a compiled program computes only once every
    non-empty floating array of ``awaited`` exists; the same values. Outside a trace (ops run in
    order anyway), or with nothing floating on either side, ``tree`` as it is.

        >>> import jax, jax.numpy as jnp
        >>> f = jax.jit(lambda x, y: after([x * 2], y)[0] + 1)
        >>> f(jnp.ones(2), jnp.zeros(3)).tolist()
        [3.0, 3.0]
    """
    waits = [a for a in jax.tree_util.tree_leaves(awaited) if _floating(a) and a.size]
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    at = [i for i, x in enumerate(leaves) if _floating(x)]
    if not at or not waits or not any(isinstance(a, jax.core.Tracer) for a in waits):
        return tree
    held = [leaves[i] for i in at]
    if jax.default_backend() != "cpu":
        held, _ = jax.lax.optimization_barrier((held, waits))
    else:
        held = _held(held, jnp.stack([jnp.real(jnp.ravel(a)[0]).astype(jnp.float32) for a in waits]))
    for i, x in zip(at, held):
        leaves[i] = x
    return jax.tree_util.tree_unflatten(treedef, leaves)


@jax.custom_jvp
def _held(arrays, elements):
    """``arrays`` through a loop that never runs: its trip count is ``min(0, bits of each of
    elements)`` (a minimum, not a sum, which could overflow to a positive count)."""
    trips = jnp.minimum(0, jnp.min(jax.lax.bitcast_convert_type(elements, jnp.int32)))
    return jax.lax.while_loop(lambda c: c[0] < trips, lambda c: (c[0] + 1, [x + 1 for x in c[1]]), (0, arrays))[1]


@_held.defjvp
def _held_jvp(primals, tangents):  # the identity's: differentiable either way (a loop is not in reverse mode)
    return _held(*primals), tangents[0]


def _floating(x) -> bool:
    return isinstance(x, (jax.Array, jax.core.Tracer)) and jnp.issubdtype(x.dtype, jnp.inexact)
