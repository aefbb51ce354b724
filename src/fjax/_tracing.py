"""Whether an fjax transform (nn.Graph, autograd.functional, fjax.func) is tracing.

While one is, in-place updates of tensors that live outside the trace (a BatchNorm's running
stats, say) would leave tracers behind in them and their storages; ``Tensor`` logs the old
values before each write and the outermost ``tracing()`` puts them back on exit. Transforms
that keep such updates (nn.Graph returns its buffers as outputs) write the new values after
the trace.
"""

from __future__ import annotations

import contextlib
import threading


class _TraceState(threading.local):
    """Per thread: a trace in one thread leaves other threads' eager code alone."""

    def __init__(self):
        self.depth = 0
        self.undo: list = []
        self.graph_checks = False  # an nn.Graph trace with value checks on (config.graph_index_checks)
        # while an nn.Graph step traces: (its JAX trace, [(ok, check)]); a deferred check of a
        # value of that trace goes there, and the step returns the oks (``graph.step.Step``)
        self.step_checks = None


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
            for obj, saved in reversed(trace_state.undo):
                for name, value in saved:
                    setattr(obj, name, value)
            trace_state.undo = []


def log_inplace(obj, *names) -> None:
    """Called while tracing, before a write replaces attributes ``names`` of ``obj`` (a Tensor
    or its Storage); the outermost trace puts them back."""
    trace_state.undo.append((obj, [(name, getattr(obj, name)) for name in names]))


modules_changed = [0]
"""Bumped by every structural change of any nn.Module (see nn/module.py): functional
transforms re-read the modules they reached, and nn.Graph its modules' training flags."""
