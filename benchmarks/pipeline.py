"""Pipeline parallelism (fjax.distributed.pipeline): bubble, in-flight activations, compile time, step time.

On 8 virtual CPU devices (XLA_FLAGS is set here before JAX starts), a stack of residual MLP
blocks (``h + gelu(h @ w1) @ w2``) trained with ``jax.value_and_grad`` of ``pipeline_loss``:

1. bubble: the idle fraction of each schedule's table (the table drives the compiled program,
   one ``lax.switch`` per tick and stage) against the theory (S-1)/(M+S-1);
2. in flight: the most micro-batches a stage holds (table), and XLA's per-device temp bytes of
   the compiled step (``memory_analysis``): GPipe keeps every micro-batch's residuals, 1F1B at
   most S stage inputs;
3. compile time (trace + lower + XLA compile) of the 1F1B and GPipe steps as the pipe axis
   grows 1 -> 2 -> 4 -> 8 (8 layers), against the one-device step (the peer);
4. step time per schedule (medians; the virtual devices share this machine's cores, so this
   shows the overhead of the schedule machinery, not a speed-up).

Run: ``python benchmarks/pipeline.py [--repeats 5] [--microbatches 16]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import datetime  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh  # noqa: E402

from fjax.distributed.pipeline import SCHEDULES, Schedule, pipeline_loss, theory_bubble  # noqa: E402

jax.config.update("jax_enable_compilation_cache", False)  # fjax turns the persistent cache on: measure compiles


def block(p, h):
    return h + jax.nn.gelu(h @ p["w1"]) @ p["w2"]


def loss_fn(lp, h, target):
    return ((h @ lp - target) ** 2).mean()


def _problem(layers, micro, mb, dim, seed=0):
    rng = np.random.default_rng(seed)
    f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
    params = {
        "w1": f32(rng.standard_normal((layers, dim, 4 * dim)) / np.sqrt(dim)),
        "w2": f32(rng.standard_normal((layers, 4 * dim, dim)) / np.sqrt(8 * dim)),
    }
    head = f32(rng.standard_normal((dim, 8)) / np.sqrt(dim))
    x = f32(rng.standard_normal((micro, mb, dim)))
    target = f32(rng.standard_normal((micro, mb, 8)))
    return params, x, head, target


def _step(stages, schedule):
    if stages == 0:  # the one-device peer: scan over layers, vmap over micro-batches

        def total(params, x, head, target):
            def one(x_m, t_m):
                return loss_fn(head, jax.lax.scan(lambda h, p: (block(p, h), None), x_m, params)[0], t_m)

            return jax.vmap(one)(x, target).mean()

    else:
        mesh = Mesh(np.array(jax.devices()[:stages]), ("pipe",))

        def total(params, x, head, target):
            return pipeline_loss(block, params, x, loss_fn, head, target, mesh=mesh, schedule=schedule)

    return jax.jit(jax.value_and_grad(total, argnums=(0, 2)))


def _compile(stages, schedule, args):
    """Process CPU seconds (robust on a busy machine) to trace, lower and compile, and the result."""
    start = time.process_time()
    compiled = _step(stages, schedule).trace(*args).lower().compile()
    return time.process_time() - start, compiled


def _median_time(fn, args, repeats):
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--microbatches", type=int, default=16)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--micro-batch", type=int, default=16)
    a = parser.parse_args()
    M = a.microbatches
    print(f"# benchmarks/pipeline.py  {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")
    print(f"# {platform.machine()} {os.cpu_count()} cores, jax {jax.__version__}, {jax.device_count()} CPU devices")
    print(f"# residual MLP blocks, dim {a.dim}, micro-batch {a.micro_batch}, float32\n")

    print("## bubble (idle fraction of the schedule table) vs theory (S-1)/(M+S-1)")
    print(f"{'S':>3} {'M':>4} {'theory':>8} " + " ".join(f"{n:>12}" for n in SCHEDULES) + "   ticks (1f1b)")
    for S in (2, 4, 8):
        for m in (S, 2 * S, 4 * S):
            row = [Schedule.make(n, S, m).bubble_fraction() for n in SCHEDULES]
            ticks = Schedule.make("1f1b", S, m).ticks
            print(f"{S:>3} {m:>4} {theory_bubble(S, m):>8.3f} " + " ".join(f"{b:>12.3f}" for b in row) + f"   {ticks}")

    print(f"\n## in flight and compiled memory: S=4, M={M}, 8 layers (per device)")
    args = _problem(8, M, a.micro_batch, a.dim)
    print(f"{'schedule':>12} {'peak in flight':>15} {'temp MiB':>9} {'vs gpipe':>9}")
    temps = {}
    for name in SCHEDULES:
        _, compiled = _compile(4, name, args)
        temps[name] = compiled.memory_analysis().temp_size_in_bytes / 2**20
    for name in SCHEDULES:
        inflight = Schedule.make(name, 4, M).peak_in_flight()
        print(f"{name:>12} {inflight:>15} {temps[name]:>9.2f} {temps[name] / temps['gpipe']:>9.2f}")

    print(f"\n## compile CPU seconds (trace+lower+XLA, median of {a.repeats}) vs pipe stages, 8 layers, M={M}")
    _compile(2, "1f1b", args)  # warm Python-side caches
    base = statistics.median(_compile(0, None, args)[0] for _ in range(a.repeats))
    print(f"one device (peer): {base:.2f} s")
    print(f"{'S':>3} {'1f1b s':>8} {'ratio':>6} {'gpipe s':>8} {'ratio':>6}")
    for S in (1, 2, 4, 8):
        t1 = statistics.median(_compile(S, "1f1b", args)[0] for _ in range(a.repeats))
        tg = statistics.median(_compile(S, "gpipe", args)[0] for _ in range(a.repeats))
        print(f"{S:>3} {t1:>8.2f} {t1 / base:>6.2f} {tg:>8.2f} {tg / base:>6.2f}")

    print(f"\n## step time (median of {a.repeats}), S=4, M={M}; ratio vs the one-device step")
    peer = _median_time(_step(0, None), args, a.repeats)
    print(f"{'one device':>12} {peer * 1e3:>9.1f} ms {1:>6.2f}")
    for name in SCHEDULES:
        t = _median_time(_step(4, name), args, a.repeats)
        print(f"{name:>12} {t * 1e3:>9.1f} ms {t / peer:>6.2f}")


if __name__ == "__main__":
    main()
