"""Tracing in one thread leaves eager code in other threads alone: trace state, the RNG stream
and in-place updates are per thread; graphs built and called from several threads are right."""

from __future__ import annotations

import threading

import jax
import numpy as np

import fjax
from fjax import nn


class _Net(nn.Graph):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, 3)
        self.drop = nn.Dropout(0.5)

    def build(self, x):
        return self.drop(self.lin(x)).sum()


def test_graph_tracing_in_one_thread_leaves_eager_code_in_another_alone():
    stop = threading.Event()
    errors = []

    def tracer():  # new graphs: every call traces and compiles
        try:
            for width in range(3, 9):
                g = _Net(width)
                g(fjax.ones(2, width))
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)
        finally:
            stop.set()

    t = threading.Thread(target=tracer)
    t.start()
    acc = fjax.zeros(4)
    steps = 0
    while not stop.is_set() or steps < 50:
        r = fjax.randn(4)  # a concrete draw, never a tracer
        assert not isinstance(r._data, jax.core.Tracer)
        assert np.isfinite(r.numpy()).all()
        acc.add_(1.0)  # in place: kept, not undone by the other thread's trace
        steps += 1
    t.join()
    assert not errors, errors
    np.testing.assert_array_equal(acc.numpy(), np.full(4, float(steps)))


def test_graphs_in_threads_give_the_eager_results():
    results = {}

    def run(width):
        lin = nn.Linear(width, 2)

        class G(nn.Graph):
            def __init__(self):
                super().__init__()
                self.lin = lin

            def build(self, x):
                return self.lin(x).tanh().sum()

        x = fjax.tensor(np.linspace(-1, 1, 3 * width, dtype=np.float32).reshape(3, width))
        results[width] = (float(G()(x)), float(lin(x).tanh().sum()))

    threads = [threading.Thread(target=run, args=(w,)) for w in (3, 4, 5, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [3, 4, 5, 6]
    for width, (graph, eager) in results.items():
        assert abs(graph - eager) < 1e-5, (width, graph, eager)
