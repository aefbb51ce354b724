"""Compile time of the GPT training step (nn.Graph) under DP and DP x TP with 1, 8, 32 devices.

OneFlow compiled one plan per device, so its compile time grew with the device count (DP128:
over 20 minutes). fjax compiles one SPMD program whatever the mesh size; XLA's partitioner
adds the collectives. Target: 32 devices within 1.5x of 1 device.

Each device count runs in its own process (virtual CPU devices need XLA_FLAGS before JAX
starts). In it, every configuration is compiled once to warm Python-side caches, then
``--repeats`` fresh graphs are compiled (trace + lower + XLA compile, no run) and the median
is reported, as wall seconds and as process CPU seconds (robust on a busy machine).

Run: ``python benchmarks/compile_vs_devices.py [--devices 1 8 32] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

MODES = ("DP", "DPxTP")


def _mesh(mode: str, n: int) -> dict:
    from gpt import TENSOR_PARALLEL

    if mode == "DP":
        return {"mesh": {"data": n}}
    model = 2 if n % 2 == 0 else 1
    return {"mesh": {"data": n // model, "model": model}, "tensor_parallel": TENSOR_PARALLEL}


def _measure(n: int, repeats: int, dim: int, layers: int, batch: int, seq: int) -> list[dict]:
    """In a process with ``n`` devices: median compile times of each mode."""
    import numpy as np
    from gpt import GPT, TrainGraph

    import fjax

    rng = np.random.default_rng(0)
    x = fjax.tensor(rng.integers(0, 64, (batch, seq)))
    y = fjax.tensor(rng.integers(0, 64, (batch, seq)))
    rows = []
    for mode in MODES:
        walls, cpus, stages = [], [], []
        for i in range(repeats + 1):
            graph = TrainGraph(GPT(dim=dim, layers=layers, max_len=seq), 1e-3, _mesh(mode, n))
            wall, cpu = time.perf_counter(), time.process_time()
            graph.warmup((x, y), threads=1)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if i:  # the first compile only warms caches
                walls.append(wall)
                cpus.append(cpu)
                stages.append({k: v["seconds"] for k, v in graph.compile_report()[0]["stages"].items()})
        rows.append(
            {
                "mode": mode,
                "devices": n,
                "mesh": _mesh(mode, n)["mesh"],
                "wall": float(np.median(walls)),
                "cpu": float(np.median(cpus)),
                "trace_lower": float(np.median([s["trace+lower"] for s in stages])),
                "xla": float(np.median([s["XLA compile"] for s in stages])),
            }
        )
    return rows


def _child(n: int, args) -> list[dict]:
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={n}", "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    command = [sys.executable, __file__, "--child", str(n), "--repeats", str(args.repeats)]
    for name in ("dim", "layers", "batch", "seq"):
        command += [f"--{name}", str(getattr(args, name))]
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"compile_vs_devices: the {n}-device process failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32, help="divisible by every device count")
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
    if args.child is not None:
        print(json.dumps(_measure(args.child, args.repeats, args.dim, args.layers, args.batch, args.seq)))
        return

    import jax

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# fjax compile time vs device count, {datetime.datetime.now():%Y-%m-%d %H:%M}")
    print(
        f"# {platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load {load:.1f}, jax {jax.__version__}, virtual CPU devices"
    )
    print(
        f"# GPT(dim={args.dim}, layers={args.layers}) + AdamW, batch {args.batch}x{args.seq}; "
        f"median of {args.repeats} fresh compiles (trace + lower + XLA compile), seconds"
    )
    header = (
        f"{'mode':<6} {'devices':>7} {'mesh':<22} {'trace+lower':>11} {'XLA':>7} {'wall':>7} {'cpu':>7} "
        f"{'wall/1dev':>9} {'cpu/1dev':>9}"
    )
    print(header)
    print("-" * len(header), flush=True)
    base = {}
    for n in sorted(args.devices):
        for row in _child(n, args):
            first = base.setdefault(row["mode"], row)
            mesh = " x ".join(f"{k}={v}" for k, v in row["mesh"].items())
            print(
                f"{row['mode']:<6} {row['devices']:>7} {mesh:<22} {row['trace_lower']:>11.2f} {row['xla']:>7.2f} "
                f"{row['wall']:>7.2f} {row['cpu']:>7.2f} {row['wall'] / first['wall']:>9.2f} "
                f"{row['cpu'] / first['cpu']:>9.2f}",
                flush=True,
            )
    print("# target: 32 devices within 1.5x of 1 device")


if __name__ == "__main__":
    main()
