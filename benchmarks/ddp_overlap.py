"""Gradient all-reduce overlapped with backward: eager DDP over 2 processes, and nn.Graph's schedule.

1. Eager DDP (2 processes on this machine, joined with jax.distributed, gloo CPU collectives):
   an MLP trained with ``overlap_grad_reduce`` on and off, eager fusion on and off, alternating
   in one run. Per configuration: the buckets, the fraction of gradient bytes whose all-reduce is
   issued before the backward's last op (a counter of backward ops run, not timings: goal
   >= (B-1)/B) and the median step time, with its ratio to the non-overlapped step (the peer).
2. nn.Graph data parallel on 8 virtual CPU devices: where the compiled step's all-reduces sit
   among its backward ops (``fjax.nn.parallel.schedule.collective_schedule`` of
   ``compiled.as_text()``), with XLA's all-reduce combiner (``cpu-all-reduce-combiner``) on (default) and off.

Run: ``python benchmarks/ddp_overlap.py [--steps 20] [--width 256] [--depth 8]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

CONFIGS = [("overlap", False, True), ("after", False, False), ("overlap", True, True), ("after", True, False)]


def _rank(out: str, steps: int, width: int, depth: int, cap_mb: float) -> None:
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        f"127.0.0.1:{os.environ['MASTER_PORT']}", int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    )
    import numpy as np

    import fjax
    import fjax.distributed as dist
    from fjax import nn
    from fjax.autograd import engine
    from fjax.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    log: list = []
    apply, fused = engine.Node.apply, engine._fused_backward

    def counting_apply(node, cts):
        result = apply(node, cts)
        if "Alias" not in str(node.name):  # DDP's parameter aliases are not the model's backward ops
            log.append(("node",))
        return result

    def counting_fused(*args):
        result = fused(*args)
        if result is not None:
            log.append(("node",))
        return result

    engine.Node.apply, engine._fused_backward = counting_apply, counting_fused
    from fjax.nn.parallel import reducer as reducer_module

    launch = reducer_module.all_reduce_sum_async
    host = [0.0]

    def timed_launch(flat, world):  # host time a bucket's launch holds the backward up
        t = time.perf_counter()
        result = launch(flat, world)
        host[0] += time.perf_counter() - t
        return result

    reducer_module.all_reduce_sum_async = timed_launch
    rng = np.random.default_rng(dist.get_rank())
    x = fjax.tensor(rng.standard_normal((32, width)).astype(np.float32))
    models = {}
    for name, fusion, overlap in CONFIGS:
        fjax.manual_seed(0)
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.Tanh()]
        m = DDP(nn.Sequential(*layers), bucket_cap_mb=cap_mb)
        m.overlap_grad_reduce = overlap
        m.reducer.log = log
        models[(name, fusion)] = m
    times = {k: [] for k in models}
    hosts = {k: [] for k in models}
    fractions = {}
    for step in range(steps + 2):  # alternate the configurations; the first two steps compile
        for (name, fusion), m in models.items():
            fjax.config.eager_fusion = fusion
            for p in m.parameters():
                p.grad = None
            log.clear()
            host[0] = 0.0
            t = time.perf_counter()
            m(x).square().mean().backward()
            for p in m.parameters():
                p.grad._data.block_until_ready()
            if step >= 2:
                times[(name, fusion)].append(time.perf_counter() - t)
                hosts[(name, fusion)].append(host[0])
            last = max(j for j, e in enumerate(log) if e[0] == "node")
            launched = [(j, e[2]) for j, e in enumerate(log) if e[0] == "launch"]
            fractions[(name, fusion)] = (
                sum(b for j, b in launched if j < last) / sum(b for _, b in launched),
                len(m.reducer.buckets),
            )
    rows = [
        {
            "config": name,
            "fusion": fusion,
            "buckets": fractions[(name, fusion)][1],
            "early": fractions[(name, fusion)][0],
            "median_ms": statistics.median(times[(name, fusion)]) * 1e3,
            "launch_ms": statistics.median(hosts[(name, fusion)]) * 1e3,
        }
        for name, fusion in models
    ]
    if dist.get_rank() == 0:
        pathlib.Path(out, "eager.json").write_text(json.dumps(rows))
    dist.destroy_process_group()


def _graph(out: str, width: int, depth: int) -> None:
    import fjax
    from fjax import nn
    from fjax.nn.parallel.schedule import collective_schedule

    class Train(nn.Graph):
        def __init__(self, model):
            super().__init__()
            self.model = model
            self.add_optimizer(fjax.optim.SGD(model.parameters(), lr=0.1))
            self.config.set_mesh({"mesh": {"data": 8}})

        def build(self, x):
            loss = self.model(x).square().mean()
            loss.backward()
            return loss

    graph = Train(nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)]))
    graph(fjax.randn(32, width))
    text = graph._executables.last("stablehlo").lowered.compile().as_text()
    pathlib.Path(out, "graph.json").write_text(json.dumps(collective_schedule(text)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--bucket-cap-mb", type=float, default=0.5)
    args = ap.parse_args()
    out = tempfile.mkdtemp()
    me = [sys.executable, __file__]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(2):
        env = {
            **os.environ,
            "RANK": str(rank),
            "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
            "JAX_PLATFORMS": "cpu",
        }
        cmd = [*me, "rank", out, str(args.steps), str(args.width), str(args.depth), str(args.bucket_cap_mb)]
        procs.append(subprocess.Popen(cmd, env=env))
    for p in procs:
        p.wait()
    print(
        f"# DDP overlap, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
        f"{os.cpu_count()} CPUs; 2 processes, MLP {args.depth}x{args.width}, bucket_cap_mb {args.bucket_cap_mb}"
    )
    rows = json.loads(pathlib.Path(out, "eager.json").read_text())
    peer = {r["fusion"]: r["median_ms"] for r in rows if r["config"] == "after"}
    print("\n| launch | fusion | B | bytes before last bwd op | (B-1)/B | median ms | vs after | in launches ms |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        b = r["buckets"]
        print(
            f"| {r['config']} | {r['fusion']} | {b} | {r['early']:.3f} | {(b - 1) / b:.3f} | {r['median_ms']:.2f} | "
            f"{r['median_ms'] / peer[r['fusion']]:.2f} | {r['launch_ms']:.2f} |"
        )
    print("\n# nn.Graph DP on 8 virtual CPU devices: the compiled step's all-reduces among its backward ops")
    print("\n| XLA all-reduce combiner | all-reduces | elements each | backward ops before / after each |")
    print("|---|---|---|---|")
    for combiner in (True, False):
        flags = "--xla_force_host_platform_device_count=8"
        if not combiner:
            flags += " --xla_disable_hlo_passes=cpu-all-reduce-combiner"
        env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
        subprocess.run([*me, "graph", out, str(args.width), str(args.depth)], env=env, check=True)
        s = json.loads(pathlib.Path(out, "graph.json").read_text())
        reduces = [c for c in s["collectives"] if c["opcode"].startswith("all-reduce")]
        print(
            f"| {'on' if combiner else 'off'} | {len(reduces)} | {[c['elements'] for c in reduces]} | "
            f"{[(c['after_backward_ops'], c['before_backward_ops']) for c in reduces]} |"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["rank"]:
        _rank(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]))
    elif sys.argv[1:2] == ["graph"]:
        _graph(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
