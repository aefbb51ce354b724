"""Whether an fjax transform (nn.Graph, autograd.functional, fjax.func) is tracing.

While one is, in-place updates of tensors that live outside the trace (a BatchNorm's running
stats, say) would leave tracers behind in them; ``Tensor._set_`` logs the old values and the
outermost ``tracing()`` puts them back on exit. Transforms that keep such updates (nn.Graph
returns its buffers as outputs) write the new values after the trace.
"""

from __future__ import annotations

import contextlib

import jax


class _TraceState:
    depth = 0
    undo: list = []


trace_state = _TraceState()


@contextlib.contextmanager
def tracing():
    """Mark a trace; undo in-place updates of outside tensors made inside it."""
    outer = trace_state.depth == 0
    if outer:
        trace_state.undo = []
    trace_state.depth += 1
    try:
        yield
    finally:
        trace_state.depth -= 1
        if outer:
            for tensor, saved in reversed(trace_state.undo):
                tensor._data, tensor._node, tensor._idx, tensor._requires_grad = saved
            trace_state.undo = []


def log_inplace(tensor) -> None:
    """Called by ``Tensor._set_`` before it replaces ``tensor``'s value."""
    if trace_state.depth and not isinstance(tensor._data, jax.core.Tracer):
        trace_state.undo.append((tensor, (tensor._data, tensor._node, tensor._idx, tensor._requires_grad)))
