"""Which outputs of a pure function structurally depend on which inputs (``strict=True``).

torch decides "independent" from its autograd graph; the JAX equivalent is the JVP: an output
whose tangent is not computed from any input tangent (stop_gradient, integer ops, unused
inputs, constants) is independent. We trace the JVP and propagate input-tangent reachability
through its equations, entering calls (``jit``, custom rules) to stay precise.
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax
import numpy as np
from jax.extend import core as jcore

_CALL_PARAMS = ("jaxpr", "call_jaxpr")


def dependence(fn: Callable, args: Sequence) -> np.ndarray:
    """``D[o, i]``: output ``o`` of ``fn(*args)`` (a tuple of arrays) depends on input ``i``."""
    n = len(args)

    def tangents_out(*primals_and_tangents):
        _, t = jax.jvp(lambda *xs: tuple(fn(*xs)), primals_and_tangents[:n], primals_and_tangents[n:])
        return t

    specs = [jax.ShapeDtypeStruct(np.shape(a), jax.typeof(a).dtype) for a in args]
    closed = jax.make_jaxpr(tangents_out)(*specs, *specs)
    masks = _reach(closed.jaxpr, [0] * n + [1 << i for i in range(n)])
    return np.array([[bool(m >> i & 1) for i in range(n)] for m in masks], dtype=bool).reshape(len(masks), n)


def _reach(jaxpr: jcore.Jaxpr, in_masks: list[int]) -> list[int]:
    """Propagate bit masks (one bit per traced input) from ``jaxpr.invars`` to its outputs."""
    env: dict = dict(zip(jaxpr.invars, in_masks))

    def read(a):
        return 0 if isinstance(a, jcore.Literal) else env.get(a, 0)

    for eqn in jaxpr.eqns:
        ins = [read(a) for a in eqn.invars]
        inner = next((eqn.params[p] for p in _CALL_PARAMS if p in eqn.params), None)
        if isinstance(inner, jcore.ClosedJaxpr):
            inner = inner.jaxpr
        if isinstance(inner, jcore.Jaxpr) and len(inner.invars) == len(ins):
            outs = _reach(inner, ins)
        else:
            union = 0
            for m in ins:
                union |= m
            outs = [union] * len(eqn.outvars)
        for v, m in zip(eqn.outvars, outs):
            env[v] = m
    return [read(a) for a in jaxpr.outvars]
