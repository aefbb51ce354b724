"""Long-sequence LSTM: compile time that does not grow with length, and training-step time vs torch.

    python benchmarks/lstm.py [--tables step compile] [--repeats 5]

Two tables, measured in one run:

1. ``compile_time_table``: trace+lower / XLA compile seconds and peak host RSS of the nn.Graph
   training step of the OneFlow report's script (LSTM(16, 8, bias=False), batch 100, MSE loss,
   SGD momentum 0.99 nesterov weight_decay 1e-5) at sequence lengths 150 ... 100,000; the
   report's 12-LSTM network (6 blocks of LSTM(16, 64) -> LSTM(64, 16) with residual adds) at 300
   and 10,000; and a deliberately unrolled JAX LSTM (a Python loop over time steps, what a
   graph compiler that unrolls produces) at 50, 100, 150. Each row runs in a fresh process so
   its peak RSS is its own.
2. ``step_time_table``: one training step (forward, MSE loss, backward, SGD update) of torch
   ``nn.LSTM`` and of fjax in eager mode and under nn.Graph, both on the CPU with all cores,
   medians over interleaved repeats (so machine load hits both alike), ratio torch / fjax.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch

import fjax
import fjax.nn.functional as F
from fjax.nn import LSTM

STEP_CONFIGS = [  # (input, hidden, batch, seq, num_layers, bidirectional)
    (16, 8, 100, 150, 1, False),
    (16, 8, 100, 1000, 1, False),
    (256, 512, 64, 100, 1, False),
    (1024, 1024, 32, 50, 1, False),
    (256, 256, 32, 200, 2, True),
]
SGD = dict(lr=1e-3, momentum=0.99, nesterov=True, weight_decay=1e-5)


class _Residual12(fjax.nn.Module):
    """The OneFlow report's 12-LSTM network: 6 blocks of LSTM(io, h) -> LSTM(h, io), residual adds."""

    def __init__(self, io: int = 16, hidden: int = 64, blocks: int = 6):
        super().__init__()
        self.inner = fjax.nn.ModuleList([LSTM(io, hidden, batch_first=True) for _ in range(blocks)])
        self.outer = fjax.nn.ModuleList([LSTM(hidden, io, batch_first=True) for _ in range(blocks)])

    def forward(self, x):
        for a, b in zip(self.inner, self.outer):
            x = x + b(a(x)[0])[0]
        return x


def _train_graph(model):
    optimizer = fjax.optim.SGD(model.parameters(), **SGD)

    class TrainGraph(fjax.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(optimizer)

        def build(self, x, y):
            out = self.model(x)
            loss = F.mse_loss(out[0] if isinstance(out, tuple) else out, y)
            loss.backward()
            return loss

    return TrainGraph()


# -- table 1: compile time ------------------------------------------------------------------


def _status_mb(field: str) -> float:
    """``VmHWM`` (peak RSS of this process image; unlike ru_maxrss not inherited across exec) or
    ``VmRSS`` (current) from /proc, in MB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _compile_row_graph(model_name: str, seq: int) -> dict:
    """One nn.Graph compile (trace, lower, XLA compile; the step is not run), in this process."""
    batch = 100
    model = LSTM(16, 8, bias=False, batch_first=True) if model_name == "lstm" else _Residual12()
    out_size = 8 if model_name == "lstm" else 16
    x = fjax.zeros(batch, seq, 16)
    y = fjax.zeros(batch, seq, out_size)
    graph = _train_graph(model)
    base = _status_mb("VmRSS")
    graph.warmup((x, y), threads=1)
    stages = graph.compile_report()[-1]["stages"]
    return {
        "trace+lower": stages["trace+lower"]["seconds"],
        "compile": stages["XLA compile"]["seconds"],
        "peak_rss_mb": _status_mb("VmHWM"),
        "rss_growth_mb": _status_mb("VmHWM") - base,
    }


def _compile_row_unrolled(seq: int) -> dict:
    """A JAX LSTM unrolled over time in Python (one copy of the cell per step), SGD-momentum step."""
    batch, inp, hid = 100, 16, 8
    params = [jnp.zeros((4 * hid, inp), jnp.float32), jnp.zeros((4 * hid, hid), jnp.float32)]
    moments = [jnp.zeros_like(p) for p in params]
    x = jnp.zeros((batch, seq, inp), jnp.float32)
    y = jnp.zeros((batch, seq, hid), jnp.float32)

    def loss(params, x, y):
        w_ih, w_hh = params
        h = c = jnp.zeros((batch, hid), jnp.float32)
        outs = []
        for t in range(seq):
            i, f, g, o = jnp.split(x[:, t] @ w_ih.T + h @ w_hh.T, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            outs.append(h)
        return jnp.mean((jnp.stack(outs, 1) - y) ** 2)

    def step(params, moments, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        grads = [g + SGD["weight_decay"] * p for g, p in zip(grads, params)]
        moments = [SGD["momentum"] * m + g for m, g in zip(moments, grads)]
        updates = [g + SGD["momentum"] * m for g, m in zip(grads, moments)]
        return [p - SGD["lr"] * u for p, u in zip(params, updates)], moments, value

    base = _status_mb("VmRSS")
    jitted = jax.jit(step, donate_argnums=(0, 1))
    t0 = time.perf_counter()
    lowered = jitted.trace(params, moments, x, y).lower()
    t1 = time.perf_counter()
    lowered.compile()
    t2 = time.perf_counter()
    return {
        "trace+lower": t1 - t0,
        "compile": t2 - t1,
        "peak_rss_mb": _status_mb("VmHWM"),
        "rss_growth_mb": _status_mb("VmHWM") - base,
    }


COMPILE_ROWS = (
    [("LSTM(16, 8) nn.Graph", "lstm", s) for s in (150, 300, 1_000, 10_000, 100_000)]
    + [("12-LSTM network nn.Graph", "net12", s) for s in (300, 10_000)]
    + [("unrolled JAX LSTM(16, 8)", "unrolled", s) for s in (50, 100, 150)]
)


def _run_row_in_child(kind: str, seq: int) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--row", kind, str(seq)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compile_time_table(rows=COMPILE_ROWS) -> list[tuple]:
    """Table 1: per row, trace / lower / compile seconds and peak RSS, each in a fresh process."""
    print("\n## Compile time of the training step (seconds; peak RSS and its growth while compiling, MB; ")
    print("each row a fresh process; the step is compiled, not run)\n")
    print("| model | seq len | trace + lower | XLA compile | total | peak RSS | RSS growth |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    results = []
    for label, kind, seq in rows:
        r = _run_row_in_child(kind, seq)
        results.append((label, seq, r))
        if "error" in r:
            print(f"| {label} | {seq:,} | failed: {r['error']} ||||||", flush=True)
            continue
        total = r["trace+lower"] + r["compile"]
        print(
            f"| {label} | {seq:,} | {r['trace+lower']:.2f} | {r['compile']:.2f} | {total:.2f} "
            f"| {r['peak_rss_mb']:.0f} | {r['rss_growth_mb']:.0f} |",
            flush=True,
        )
    return results


# -- table 2: training-step time --------------------------------------------------------------


def _torch_step(cfg, x, y):
    inp, hid, batch, seq, layers, bidir = cfg
    model = torch.nn.LSTM(inp, hid, num_layers=layers, bidirectional=bidir, batch_first=True)
    opt = torch.optim.SGD(model.parameters(), **SGD)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(tx)[0], ty)
        loss.backward()
        opt.step()
        return loss

    return step, model


def _fjax_eager_step(cfg, state_dict, x, y):
    inp, hid, batch, seq, layers, bidir = cfg
    model = LSTM(inp, hid, num_layers=layers, bidirectional=bidir, batch_first=True)
    model.load_state_dict(state_dict)
    opt = fjax.optim.SGD(model.parameters(), **SGD)
    fx, fy = fjax.tensor(x), fjax.tensor(y)

    def step():
        opt.zero_grad()
        loss = F.mse_loss(model(fx)[0], fy)
        loss.backward()
        opt.step()
        return [p._data for p in model.parameters()]  # eager work is asynchronous: wait for all of it

    return step, model


def _fjax_graph_step(cfg, state_dict, x, y):
    inp, hid, batch, seq, layers, bidir = cfg
    model = LSTM(inp, hid, num_layers=layers, bidirectional=bidir, batch_first=True)
    model.load_state_dict(state_dict)
    graph = _train_graph(model)
    fx, fy = fjax.tensor(x), fjax.tensor(y)
    return lambda: graph(fx, fy), model


def _sync(out):
    """Wait until a step's results exist (torch runs synchronously; fjax dispatches asynchronously)."""
    if isinstance(out, fjax.Tensor):
        out = out._data
    if not isinstance(out, torch.Tensor):
        jax.block_until_ready(out)


def step_time_table(configs=STEP_CONFIGS, repeats: int = 5, graph: bool = True) -> list[tuple]:
    """Table 2: median training-step time of torch nn.LSTM and fjax (eager, nn.Graph); torch / fjax."""
    torch.set_num_threads(os.cpu_count())
    print(f"\n## Training-step time, ms (median of {repeats}; torch threads {torch.get_num_threads()})\n")
    head = "| (input, hidden, batch, seq) | layers | bidir | torch | fjax eager | torch/eager |"
    if graph:
        head += " fjax nn.Graph | torch/graph |"
    print(head)
    print("|---|---:|---|---:|---:|---:|" + ("---:|---:|" if graph else ""))
    rng = np.random.default_rng(0)
    results = []
    for cfg in configs:
        inp, hid, batch, seq, layers, bidir = cfg
        x = rng.standard_normal((batch, seq, inp)).astype(np.float32)
        y = rng.standard_normal((batch, seq, hid * (2 if bidir else 1))).astype(np.float32)
        t_step, t_model = _torch_step(cfg, x, y)
        state = {k: v.detach().numpy() for k, v in t_model.state_dict().items()}
        runners = {"torch": t_step, "eager": _fjax_eager_step(cfg, state, x, y)[0]}
        if graph:
            runners["graph"] = _fjax_graph_step(cfg, state, x, y)[0]
        for fn in runners.values():  # warm-up: compiles, first-touch allocations
            _sync(fn())
        times = {k: [] for k in runners}
        for _ in range(repeats):
            for name, fn in runners.items():
                t0 = time.perf_counter()
                _sync(fn())
                times[name].append(time.perf_counter() - t0)
        med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        row = (
            f"| {(inp, hid, batch, seq)} | {layers} | {bidir} | {med['torch']:.1f} | {med['eager']:.1f} | "
            f"{med['torch'] / med['eager']:.2f} |"
        )
        if graph:
            row += f" {med['graph']:.1f} | {med['torch'] / med['graph']:.2f} |"
        print(row, flush=True)
        results.append((cfg, med))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=["step", "compile"], choices=["step", "compile"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--row", nargs=2, metavar=("KIND", "SEQ"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.row:
        kind, seq = args.row[0], int(args.row[1])
        row = _compile_row_unrolled(seq) if kind == "unrolled" else _compile_row_graph(kind, seq)
        print(json.dumps(row))
        return
    print(
        f"# benchmarks/lstm.py — {datetime.date.today()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, jax {jax.__version__}, "
        f"torch {torch.__version__}, fjax {fjax.__version__}"
    )
    if "step" in args.tables:
        step_time_table(repeats=args.repeats)
    if "compile" in args.tables:
        compile_time_table()


if __name__ == "__main__":
    main()
