"""Logging and NaN checks that do not stall training: plain host reads vs fjax.asyncs vs none.

    python benchmarks/asyncs.py [--steps 50] [--repeats 21] [--hidden 896] [--batch 128]

A training loop (MLP, SGD) prints the loss and checks that the gradients' total norm is
finite every step, written three ways, in eager mode and as an nn.Graph step:

  (a) plain:   ``print(loss.item())`` and ``if not math.isfinite(total_norm.item()): raise``
  (b) asyncs:  ``fjax.asyncs.print(loss)`` and ``fjax.asyncs.check_finite(total_norm, ...)``
  (c) none:    no host reads at all (the upper bound)

Prints steps per second (median over short blocks, all variants interleaved in one run) and
the ratios (b)/(c) (target: at least 0.95) and (a)/(c). Loss lines go to os.devnull. The
default MLP makes a compiled step take about 5 ms on a 2-core CPU; on a GPU raise --hidden.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time

import jax
import numpy as np

import fjax
import fjax.asyncs as asyncs
import fjax.nn as nn
import fjax.optim as optim
from fjax.graph import Graph

MESSAGE = "gradients are not finite"


def _model(d_in, hidden, classes):
    return nn.Sequential(
        nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes)
    )


class _TrainGraph(Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        total = nn.utils.clip_grad_norm_(self.model.parameters(), 1e6)
        return loss, total


def _eager_step(model, opt, loss_fn):
    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        total = nn.utils.clip_grad_norm_(model.parameters(), 1e6)
        opt.step()
        return loss, total

    return step


def _loop(step, x, y, n, variant, sink):
    last = None
    for _ in range(n):
        loss, total = step(x, y)
        if variant == "a":
            print(loss.item(), file=sink)
            if not math.isfinite(total.item()):
                raise RuntimeError(MESSAGE)
        elif variant == "b":
            asyncs.print(loss, file=sink)
            asyncs.check_finite(total, MESSAGE)
        last = loss
    return last


def _steps_per_s(step, x, y, n, variant, sink):
    start = time.perf_counter()
    last = _loop(step, x, y, n, variant, sink)
    asyncs.wait()
    jax.block_until_ready(last._data)
    return n / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--hidden", type=int, default=896)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--d-in", type=int, default=256)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x = fjax.tensor(rng.standard_normal((args.batch, args.d_in)), dtype=fjax.float32)
    y = fjax.tensor(rng.integers(0, 10, args.batch))
    steps = {}
    for mode in ("eager", "graph"):
        fjax.manual_seed(0)
        model = _model(args.d_in, args.hidden, 10)
        opt = optim.SGD(model.parameters(), lr=1e-3)
        steps[mode] = _TrainGraph(model, opt) if mode == "graph" else _eager_step(model, opt, nn.CrossEntropyLoss())

    variants = ("a", "b", "c")
    rates = {(m, v): [] for m in steps for v in variants}
    with open(os.devnull, "w") as sink:
        for step in steps.values():  # warm up: compile every path
            for v in variants:
                _steps_per_s(step, x, y, 10, v, sink)
        for r in range(args.repeats):  # short blocks, interleaved in a rotating order, against drift
            for mode, step in steps.items():
                for v in variants[r % 3 :] + variants[: r % 3]:
                    rates[(mode, v)].append(_steps_per_s(step, x, y, args.steps, v, sink))

    print(
        f"# fjax.asyncs — {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}, "
        f"jax {jax.__version__} ({jax.default_backend()}), load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"# MLP {args.d_in}-{args.hidden}-{args.hidden}-10, batch {args.batch}, SGD; {args.repeats} interleaved blocks "
        f"of {args.steps} steps; every step prints the loss and checks the grad norm is finite"
    )
    print("# steps/s: median over blocks; ratios: median over blocks of the paired ratio (same block round)")
    print(
        f"{'mode':6s} {'ms/step (c)':>11s} {'(a) plain/s':>12s} {'(b) asyncs/s':>13s} {'(c) none/s':>11s} "
        f"{'(b)/(c)':>8s} {'(a)/(c)':>8s}"
    )
    for mode in steps:
        a, b, c = (rates[(mode, v)] for v in variants)
        ratio_b = statistics.median(bi / ci for bi, ci in zip(b, c))
        ratio_a = statistics.median(ai / ci for ai, ci in zip(a, c))
        med_a, med_b, med_c = (statistics.median(r) for r in (a, b, c))
        print(f"{mode:6s} {1e3 / med_c:11.2f} {med_a:12.1f} {med_b:13.1f} {med_c:11.1f} {ratio_b:8.3f} {ratio_a:8.3f}")


if __name__ == "__main__":
    main()
