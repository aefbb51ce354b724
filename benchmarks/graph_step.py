"""nn.Graph training step vs a hand-written jax.jit step, fjax eager and torch eager.

    python benchmarks/graph_step.py [--steps 30]

For an MLP, a small CNN and a small Transformer (the same layer code builds the torch and the
fjax model: fjax.nn mirrors torch.nn), one run measures:
- fjax nn.Graph: compile seconds (trace + lower + XLA compile) and median step time;
- raw JAX: ``jax.jit(value_and_grad + optax.adam)`` over the same model (its forward is the
  model's pure function via ``fjax.func.functional_call``), donated state, same sizes;
- fjax eager (tape autograd + optim.Adam) and torch eager, median step time.
Ratios: graph/jax step and compile (the fjax overhead), eager/graph, torch/graph.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import jax
import numpy as np
import optax
import torch

import fjax
import fjax.nn as fnn
import fjax.optim as foptim
from fjax.func import functional_call
from fjax.tensor import Tensor


def mlp(nn):
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def cnn(nn):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 8 * 8, 10),
    )  # fmt: skip


def transformer(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(512, 128)
            self.encoder = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True), num_layers=2
            )
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            return self.head(self.encoder(self.embed(x)).mean(1))

    return Net()


def data(kind, rng):
    y = rng.integers(0, 10, 64)
    if kind == "mlp":
        return rng.standard_normal((64, 256)).astype(np.float32), y
    if kind == "cnn":
        return rng.standard_normal((64, 3, 32, 32)).astype(np.float32), y
    return rng.integers(0, 512, (64, 32)), y


class TrainGraph(fnn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = fnn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


def _median_step(step, steps, sync):
    sync(step())
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        sync(step())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(kind, steps):
    rng = np.random.default_rng(0)
    x, y = data(kind, rng)
    build = {"mlp": mlp, "cnn": cnn, "transformer": transformer}[kind]
    fx, fy = fjax.tensor(x), fjax.tensor(y)

    # fjax nn.Graph
    fjax.manual_seed(0)
    model = build(fnn)
    graph = TrainGraph(model, foptim.Adam(model.parameters(), lr=1e-3))
    graph(fx, fy)
    stages = graph.compile_report()[0]["stages"]
    graph_compile = sum(v["seconds"] for k, v in stages.items() if k != "first run")
    graph_step = _median_step(lambda: graph(fx, fy), steps, lambda t: jax.block_until_ready(t._data))

    # raw JAX over the same model
    fjax.manual_seed(0)
    jmodel = build(fnn)
    params = {k: v._data for k, v in jmodel.named_parameters()}
    tx = optax.adam(1e-3)

    def jax_step(params, opt_state, x, y):
        def loss_fn(p):
            with fjax.no_grad():
                out = functional_call(jmodel, {k: Tensor._wrap(v) for k, v in p.items()}, (Tensor._wrap(x),))
                return fnn.functional.cross_entropy(out, Tensor._wrap(y))._data

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    jitted = jax.jit(jax_step)  # no donation: PJRT refused it here ("same buffer twice") for optax state
    state = [params, tx.init(params)]
    start = time.perf_counter()
    compiled = jitted.lower(state[0], state[1], fx._data, fy._data).compile()
    jax_compile = time.perf_counter() - start

    def run_jax():
        state[0], state[1], loss = compiled(state[0], state[1], fx._data, fy._data)
        return loss

    jax_step_s = _median_step(run_jax, steps, jax.block_until_ready)

    # fjax eager
    fjax.manual_seed(0)
    emodel = build(fnn)
    eopt = foptim.Adam(emodel.parameters(), lr=1e-3)

    def run_eager():
        loss = fnn.functional.cross_entropy(emodel(fx), fy)
        loss.backward()
        eopt.step()
        eopt.zero_grad()
        return [p._data for p in emodel.parameters()]

    eager_step = _median_step(run_eager, max(5, steps // 3), jax.block_until_ready)

    # torch eager
    torch.manual_seed(0)
    tmodel = build(torch.nn)
    topt = torch.optim.Adam(tmodel.parameters(), lr=1e-3)
    tx_, ty_ = torch.tensor(x), torch.tensor(y)

    def run_torch():
        loss = torch.nn.functional.cross_entropy(tmodel(tx_), ty_)
        loss.backward()
        topt.step()
        topt.zero_grad()
        return loss

    torch_step = _median_step(run_torch, steps, lambda _: None)
    return graph_step, graph_compile, jax_step_s, jax_compile, eager_step, torch_step


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    print(
        f"# nn.Graph step — {platform.node()} {platform.machine()}, {time.strftime('%Y-%m-%d')}, "
        f"jax {jax.__version__} ({jax.default_backend()}), torch {torch.__version__} "
        f"({torch.get_num_threads()} threads)"
    )
    head = ("model", "graph ms", "jax ms", "graph/jax", "graph cmp s", "jax cmp s", "cmp ratio", "eager ms",
            "eager/graph", "torch ms", "torch/graph")  # fmt: skip
    print(" ".join(f"{h:>11s}" for h in head))
    for kind in ("mlp", "cnn", "transformer"):
        g, gc, j, jc, e, t = bench(kind, args.steps)
        row = [kind, g * 1e3, j * 1e3, g / j, gc, jc, gc / jc, e * 1e3, e / g, t * 1e3, t / g]
        print(" ".join(f"{v:>11s}" if isinstance(v, str) else f"{v:11.3f}" for v in row), flush=True)


if __name__ == "__main__":
    main()
