"""Pipeline parallelism (fjax.distributed.pipeline): bubble, in-flight activations, compile time, step time.

On 8 virtual CPU devices (XLA_FLAGS is set here before JAX starts), a stack of residual MLP
blocks (``h + gelu(h @ w1) @ w2``) trained with ``jax.value_and_grad`` of ``pipeline_loss``:

1. bubble: the idle fraction of each schedule's table (the table drives the compiled program,
   one ``lax.switch`` per tick and stage) against the theory (S-1)/(M+S-1), and (S-1)/(VM+S-1)
   for the interleaved schedule (V = 2 chunks per device; its ticks are half a stage's work);
2. in flight: the most micro-batches a stage holds (table), and XLA's per-device temp bytes of
   the compiled step (``memory_analysis``): GPipe keeps every micro-batch's residuals, 1F1B at
   most S stage inputs;
3. compile time (trace + lower + XLA compile) of the 1F1B and GPipe steps as the pipe axis
   grows 1 -> 2 -> 4 -> 8 (8 layers), against the one-device step (the peer);
4. step time per schedule (medians; the virtual devices share this machine's cores, so this
   shows the overhead of the schedule machinery, not a speed-up).

Run: ``python benchmarks/pipeline.py [--repeats 5] [--microbatches 16]``; ``--plot-timeline PNG``
draws each schedule's timeline (S=4, M=8) and ``--plot-mesh PNG`` the DP2 x TP2 x PP2 mesh with
each device's shard (the figures of docs/guides/pipeline.md).
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


def _mesh_3d(stages):
    """All 8 devices as (data, tensor, pipe): the pipe axis ``stages``, tensor 2 where it fits."""
    tensor = 2 if 8 // stages >= 2 else 1
    return Mesh(np.array(jax.devices()[:8]).reshape(8 // stages // tensor, tensor, stages), ("data", "tensor", "pipe"))


def _step_3d(stages, schedule):
    """The 3D step: w1 column- and w2 row-parallel over tensor, micro-batch rows over data."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = _mesh_3d(stages)
    specs = {"w1": P("pipe", None, "tensor"), "w2": P("pipe", "tensor", None)}

    def total(params, x, head, target):
        params = {k: jax.lax.with_sharding_constraint(v, NamedSharding(mesh, specs[k])) for k, v in params.items()}
        x = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P(None, "data")))
        return pipeline_loss(block, params, x, loss_fn, head, target, mesh=mesh, schedule=schedule)

    return jax.jit(jax.value_and_grad(total, argnums=(0, 2)))


def _compile_3d(stages, schedule, args):
    start = time.process_time()
    _step_3d(stages, schedule).trace(*args).lower().compile()
    return time.process_time() - start


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
    parser.add_argument("--plot-timeline", help="draw each schedule's timeline (S=4, M=8) into this PNG")
    parser.add_argument("--plot-mesh", help="draw the DP2 x TP2 x PP2 mesh with each device's shard into this PNG")
    parser.add_argument("--only-plots", action="store_true", help="draw the plots and measure nothing")
    a = parser.parse_args()
    if a.plot_timeline:
        plot_timeline(a.plot_timeline)
    if a.plot_mesh:
        plot_mesh(a.plot_mesh)
    if a.only_plots:
        return
    M = a.microbatches
    print(f"# benchmarks/pipeline.py  {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")
    print(f"# {platform.machine()} {os.cpu_count()} cores, jax {jax.__version__}, {jax.device_count()} CPU devices")
    print(f"# residual MLP blocks, dim {a.dim}, micro-batch {a.micro_batch}, float32\n")

    print("## bubble (idle fraction of the schedule table) vs theory (S-1)/(M+S-1)")
    head = f"{'S':>3} {'M':>4} {'theory':>8} {'V=2 theory':>10} " + " ".join(f"{n:>12}" for n in SCHEDULES)
    print(head + "   ticks (1f1b)")
    for S in (2, 4, 8):
        for m in (S, 2 * S, 4 * S):
            row = [Schedule.make(n, S, m).bubble_fraction() for n in SCHEDULES]
            ticks = Schedule.make("1f1b", S, m).ticks
            theory = f"{theory_bubble(S, m):>8.3f} {theory_bubble(S, m, 2):>10.3f} "
            print(f"{S:>3} {m:>4} {theory}" + " ".join(f"{b:>12.3f}" for b in row) + f"   {ticks}")

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
    print("(3D: all 8 devices as data x tensor x pipe, tensor 2 where it fits; 1F1B runs branch-free there)")
    print(
        f"{'S':>3} {'1f1b s':>8} {'ratio':>6} {'gpipe s':>8} {'ratio':>6} {'3D mesh':>9} {'3D 1f1b s':>10} {'ratio':>6}"
    )
    for S in (1, 2, 4, 8):
        t1 = statistics.median(_compile(S, "1f1b", args)[0] for _ in range(a.repeats))
        tg = statistics.median(_compile(S, "gpipe", args)[0] for _ in range(a.repeats))
        t3 = statistics.median(_compile_3d(S, "1f1b", args) for _ in range(a.repeats))
        shape = "x".join(str(n) for n in _mesh_3d(S).devices.shape)
        print(
            f"{S:>3} {t1:>8.2f} {t1 / base:>6.2f} {tg:>8.2f} {tg / base:>6.2f} {shape:>9} {t3:>10.2f} {t3 / base:>6.2f}"
        )

    print(f"\n## step time (median of {a.repeats}), S=4, M={M}; ratio vs the one-device step")
    peer = _median_time(_step(0, None), args, a.repeats)
    print(f"{'one device':>12} {peer * 1e3:>9.1f} ms {1:>6.2f}")
    for name in SCHEDULES:
        t = _median_time(_step(4, name), args, a.repeats)
        print(f"{name:>12} {t * 1e3:>9.1f} ms {t / peer:>6.2f}")


def plot_timeline(path, stages=4, microbatches=8) -> None:
    """One row of boxes per device and schedule: forward (light) and backward (dark) of each
    micro-batch, the interleaved schedule's second chunk hatched; blank slots are the bubble."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scheds = [Schedule.make(n, stages, microbatches) for n in SCHEDULES]
    width = max(s.ticks for s in scheds)
    fig, axes = plt.subplots(len(scheds), 1, figsize=(11, 1.1 + 0.55 * stages * len(scheds)), sharex=True)
    colors = plt.get_cmap("tab10")
    for ax, sched in zip(axes, scheds):
        virtual = sched.virtual if sched.virtual is not None else np.zeros_like(sched.ops)
        for t, s in zip(*np.nonzero(sched.ops)):
            m, op, v = sched.micro[t, s], sched.ops[t, s], virtual[t, s]
            color = colors(m % 10)
            ax.add_patch(
                plt.Rectangle(
                    (t, s - 0.4), 1, 0.8, facecolor=color, alpha=0.45 if op == 1 else 0.95, hatch="//" if v else None,
                    edgecolor="black", linewidth=0.4,
                )
            )  # fmt: skip
            ax.text(t + 0.5, s, ("F" if op == 1 else "B") + str(m), ha="center", va="center", fontsize=6)
        v = sched.virtual_stages
        ax.set_title(
            f"{sched.name}: {sched.ticks} ticks, bubble {sched.bubble_fraction():.3f} "
            f"(theory {theory_bubble(stages, microbatches, v):.3f}), peak in flight {sched.peak_in_flight()}"
            + (f" chunk inputs (V={v})" if v > 1 else ""),
            fontsize=9,
        )
        ax.set_xlim(0, width)
        ax.set_ylim(stages - 0.5, -0.5)
        ax.set_yticks(range(stages), [f"stage {s}" for s in range(stages)], fontsize=8)
    axes[-1].set_xlabel("tick (one forward or backward of one stage; interleaved: of one chunk, half a stage)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def plot_mesh(path) -> None:
    """The DP2 x TP2 x PP2 mesh of tests/distributed/multidevice/test_pipeline_3d.py: for each device
    the layers (pipe), the columns of a column-parallel weight (tensor) and the rows of each
    micro-batch (data) it holds, read from the placed arrays' shards."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 2, 2), ("data", "tensor", "pipe"))
    layers, dim, rows = 4, 8, 4
    qkv = jax.device_put(jnp.zeros((layers, dim, 3 * dim)), NamedSharding(mesh, P("pipe", None, "tensor")))
    x = jax.device_put(jnp.zeros((8, rows, dim)), NamedSharding(mesh, P(None, "data")))
    held = {}
    for shard in qkv.addressable_shards:
        lay, _, cols = shard.index
        held[shard.device.id] = [f"layers {lay.start}-{lay.stop - 1}", f"qkv cols {cols.start}-{cols.stop - 1}"]
    for shard in x.addressable_shards:
        held[shard.device.id].append(f"micro-batch rows {shard.index[1].start}-{shard.index[1].stop - 1}")
    ids = np.vectorize(lambda d: d.id)(mesh.devices)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for p, ax in enumerate(axes):
        for d in range(2):
            for t in range(2):
                dev = ids[d, t, p]
                ax.add_patch(plt.Rectangle((t, d), 0.95, 0.95, facecolor=plt.get_cmap("Pastel1")(p), edgecolor="k"))
                ax.text(
                    t + 0.47, d + 0.47, f"device {dev}\n" + "\n".join(held[dev]), ha="center", va="center", fontsize=8
                )
        ax.set_xlim(-0.05, 2)
        ax.set_ylim(2, -0.05)
        ax.set_xticks([0.47, 1.47], ["tensor 0", "tensor 1"])
        ax.set_yticks([0.47, 1.47], ["data 0", "data 1"])
        ax.set_title(f"pipe stage {p}", fontsize=10)
    fig.suptitle("DP2 x TP2 x PP2: 4 layers, qkv (4, 8, 24) as P('pipe', None, 'tensor'), x as P(None, 'data')")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    main()
