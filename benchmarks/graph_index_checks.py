"""What nn.Graph's in-graph index checks cost (``fjax.config.graph_index_checks``).

    python benchmarks/graph_index_checks.py [--steps 200] [--repeats 5]

A small language-model training step (embedding, LSTM-free MLP, cross entropy over 1,000
classes, SGD): the index checks of the embedding lookup and the loss targets are on (the
default) or off. Prints the median step time of each and their ratio, measured in one run.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import jax
import numpy as np

import fjax
from fjax import nn


def _step_time(checks: bool, steps: int, repeats: int) -> float:
    fjax.config.graph_index_checks = checks
    fjax.manual_seed(0)
    model = nn.Sequential(nn.Embedding(1000, 64), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1000))
    opt = fjax.optim.SGD(model.parameters(), lr=0.1)

    class Step(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, tokens, targets):
            loss = nn.functional.cross_entropy(self.model(tokens).reshape(-1, 1000), targets.reshape(-1))
            loss.backward()
            return loss

    step = Step()
    rng = np.random.default_rng(0)
    tokens = fjax.tensor(rng.integers(0, 1000, (32, 16)))
    targets = fjax.tensor(rng.integers(0, 1000, (32, 16)))
    for _ in range(5):
        step(tokens, targets)
    jax.block_until_ready(step(tokens, targets)._data)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            loss = step(tokens, targets)
        jax.block_until_ready(loss._data)
        fjax.asyncs.wait()
        samples.append((time.perf_counter() - start) / steps * 1e6)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"# nn.Graph index checks — {platform.node()} {platform.machine()}, {time.strftime('%Y-%m-%d')}, "
        f"jax {jax.__version__} ({jax.default_backend()})"
    )
    off = _step_time(False, args.steps, args.repeats)
    on = _step_time(True, args.steps, args.repeats)
    off2 = _step_time(False, args.steps, args.repeats)  # again: the machine drifts
    off = min(off, off2)
    print(f"{'checks':8s} {'step us':>9s}")
    print(f"{'off':8s} {off:9.1f}")
    print(f"{'on':8s} {on:9.1f}")
    print(f"on/off: {on / off:.2f}")


if __name__ == "__main__":
    main()
