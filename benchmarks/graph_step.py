"""nn.Graph training step vs a hand-written jax.jit step, fjax eager and torch eager.

    python benchmarks/graph_step.py [--steps 100] [--compile-reps 5] [--models mlp cnn transformer]

For an MLP, a small CNN and a small Transformer (the same layer code builds the torch and the
fjax model: fjax.nn mirrors torch.nn), one run measures:
- fjax nn.Graph: compile seconds (trace + lower + XLA compile) and median step time;
- raw JAX: ``jax.jit(value_and_grad + optax.adam)`` over the same model (its forward is the
  model's pure function via ``fjax.func.functional_call``), donated state, same sizes;
- fjax eager (tape autograd + optim.Adam) and torch eager, median step time.
Ratios: graph/jax step and compile (the fjax overhead), eager/graph, torch/graph.

Compile seconds are the median of ``--compile-reps`` compiles, graph and jax alternating, each
from cleared JAX caches (so neither reuses the other's traces of the same ops) and with Python's
garbage collector off while timed, as ``timeit`` does: a full collection of this process's heap
(torch, jax, every model so far: ~0.25 s) otherwise lands in whichever compile trips it.
"""

from __future__ import annotations

import argparse
import gc
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


def _median_steps(steps: int, budget: float = 1.0, **fns) -> dict:
    """Median seconds per call of each ``fn`` (it must return once its work is done), measured
    round-robin so that load changes on this shared machine hit every column alike: at least
    ``steps`` rounds, and until every column has run ``budget`` seconds (a 1 ms MLP step needs
    hundreds of samples before its median settles on this noisy machine)."""
    times: dict = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # warm up
    while min(len(ts) for ts in times.values()) < steps or min(sum(ts) for ts in times.values()) < budget:
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def _cold_compile(compile_fn):
    """``compile_fn()`` (returns ``(result, seconds)``) from cleared JAX caches, GC off."""
    jax.clear_caches()
    gc.collect()
    gc.disable()
    try:
        return compile_fn()
    finally:
        gc.enable()


def bench(kind, steps, compile_reps):
    rng = np.random.default_rng(0)
    x, y = data(kind, rng)
    build = {"mlp": mlp, "cnn": cnn, "transformer": transformer}[kind]
    fx, fy = fjax.tensor(x), fjax.tensor(y)

    def compile_graph():  # fjax nn.Graph
        fjax.manual_seed(0)
        model = build(fnn)
        graph = TrainGraph(model, foptim.Adam(model.parameters(), lr=1e-3))
        graph(fx, fy)
        stages = graph.compile_report()[0]["stages"]
        return graph, sum(v["seconds"] for k, v in stages.items() if k != "first run")

    def compile_jax():  # raw JAX over the same model
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

        # Donated like nn.Graph's state. optax's init may hand out one zeros buffer for several
        # leaves, which PJRT refuses to donate twice, so every leaf gets its own copy first.
        jitted = jax.jit(jax_step, donate_argnums=(0, 1))
        state = jax.tree.map(lambda a: jax.numpy.array(a, copy=True), [params, tx.init(params)])
        start = time.perf_counter()
        compiled = jitted.lower(state[0], state[1], fx._data, fy._data).compile()
        seconds = time.perf_counter() - start

        def run_jax():
            state[0], state[1], loss = compiled(state[0], state[1], fx._data, fy._data)
            return loss

        return run_jax, seconds

    graph_compiles, jax_compiles = [], []
    for _ in range(compile_reps):
        graph, seconds = _cold_compile(compile_graph)
        graph_compiles.append(seconds)
        run_jax, seconds = _cold_compile(compile_jax)
        jax_compiles.append(seconds)
    graph_compile, jax_compile = statistics.median(graph_compiles), statistics.median(jax_compiles)

    # fjax eager
    fjax.manual_seed(0)
    emodel = build(fnn)
    eopt = foptim.Adam(emodel.parameters(), lr=1e-3)

    def run_eager():
        loss = fnn.functional.cross_entropy(emodel(fx), fy)
        loss.backward()
        eopt.step()
        eopt.zero_grad()
        jax.block_until_ready([p._data for p in emodel.parameters()])

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

    # graph and jax alternate; torch runs on its own (its idle OpenMP threads keep spinning for
    # a while after each step and would slow whatever runs next on these 2 cores)
    t = _median_steps(
        steps, graph=lambda: jax.block_until_ready(graph(fx, fy)._data), jax=lambda: run_jax().block_until_ready()
    )
    t.update(_median_steps(max(5, steps // 3), eager=run_eager))
    t.update(_median_steps(steps, torch=run_torch))
    return t["graph"], graph_compile, t["jax"], jax_compile, t["eager"], t["torch"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--steps",
        type=int,
        default=100,
        help="least rounds per column (with 30, about 38 rounds of the ~27 ms CNN step read 0.98-1.06x "
        "from run to run under load, where 150 rounds read 1.013-1.020x)",
    )
    parser.add_argument("--compile-reps", type=int, default=5, help="compiles per model and side (median)")
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn", "transformer"])
    args = parser.parse_args()
    print(
        f"# nn.Graph step — {platform.node()} {platform.machine()}, {time.strftime('%Y-%m-%d')}, "
        f"jax {jax.__version__} ({jax.default_backend()}), torch {torch.__version__} "
        f"({torch.get_num_threads()} threads)"
    )
    head = ("model", "graph ms", "jax ms", "graph/jax", "graph cmp s", "jax cmp s", "cmp ratio", "eager ms",
            "eager/graph", "torch ms", "torch/graph")  # fmt: skip
    print(" ".join(f"{h:>11s}" for h in head))
    for kind in args.models:
        g, g_cmp, j, j_cmp, e, t = bench(kind, args.steps, args.compile_reps)
        row = [kind, g * 1e3, j * 1e3, g / j, g_cmp, j_cmp, g_cmp / j_cmp, e * 1e3, e / g, t * 1e3, t / g]
        print(" ".join(f"{v:>11s}" if isinstance(v, str) else f"{v:11.3f}" for v in row), flush=True)


if __name__ == "__main__":
    main()
