"""``python -m fjax``: the OneFlow report's LSTM training script, in fjax with nn.Graph.

An LSTM(16, 8, bias=False) on batch 100, MSE loss, SGD (momentum 0.99, nesterov, weight decay
1e-5), compiled as one nn.Graph training step at sequence lengths 150, 300 and 10,000 (OneFlow
unrolled every time step and took ~19 s / ~42 s to compile the first two). Prints compile
time, median step time and loss per length.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
from tqdm import tqdm

import fjax
import fjax.nn as nn
import fjax.optim as optim


class LSTMTrainGraph(nn.Graph):
    """One compiled step: forward, MSE loss, backward, SGD update."""

    def __init__(self, model: nn.Module, optimizer: optim.Optimizer):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)

    def build(self, x, y):
        out, _ = self.model(x)
        loss = nn.functional.mse_loss(out, y)
        loss.backward()
        return loss


def train(seq_len: int, steps: int, batch: int = 100) -> dict:
    """Train at one sequence length; returns compile seconds, median step seconds and losses."""
    fjax.manual_seed(0)
    model = nn.LSTM(16, 8, bias=False, batch_first=True)
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.99, nesterov=True, weight_decay=1e-5)
    graph = LSTMTrainGraph(model, opt)
    x = fjax.randn(batch, seq_len, 16)
    y = (x[..., :8] * 0.5).tanh()  # a target the LSTM can learn: a squashed view of its input
    losses, times = [], []
    for _ in tqdm(range(steps), desc=f"LSTM seq {seq_len}", unit="step", leave=False):
        start = time.perf_counter()
        loss = graph(x, y)
        losses.append(loss.item())  # a host read per step, for the progress of the loss
        times.append(time.perf_counter() - start)
    stages = graph.compile_report()[0]["stages"]
    compile_s = sum(v["seconds"] for k, v in stages.items() if k != "first run")
    return {"compile_s": compile_s, "step_s": statistics.median(times[1:]), "losses": losses}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[150, 300, 10_000])
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args(argv)
    print(f"fjax {fjax.__version__} on jax {jax.__version__}; devices: {[str(d) for d in jax.devices()]}")
    print(f"{'seq len':>8s} {'compile s':>10s} {'step ms':>9s} {'loss first':>11s} {'loss last':>10s}")
    for seq_len in args.lengths:
        r = train(seq_len, args.steps)
        print(
            f"{seq_len:8d} {r['compile_s']:10.2f} {r['step_s'] * 1e3:9.2f} "
            f"{r['losses'][0]:11.5f} {r['losses'][-1]:10.5f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
