"""fjax.compile_from_torch vs torch.compile: first compile, each new input shape, steady-state inference.

    python benchmarks/compile_from_torch.py [--models resnet50 gpt] [--reps 5] [--quick]
    python benchmarks/compile_from_torch.py --overhead [--reps 300]

For a ResNet-50 (four image shapes) and a GPT-2-style decoder (three sequence lengths), in one run:
- compile: the first call (capture + trace + XLA compile + run) and each call at a new shape, for
  ``compile_from_torch`` with ``dynamic`` False and True and for ``torch.compile`` (inductor, CPU
  C++ codegen) with ``dynamic`` False and True, every one on a fresh copy of the model with JAX's
  and inductor's in-memory caches cleared;
- steady state: the median inference time at each shape of torch eager, torch.compile and
  compile_from_torch (graph), all under ``torch.no_grad()``.
Ratios: torch.compile / fjax for the first compile; torch eager / fjax for steady-state calls
(> 1: fjax is faster). The models are tests/compile_from_torch/models.py's.

``--overhead``: the per-call cost of ``compile_from_torch`` itself, on a small GPT (d=128, 3
layers, 1x16 tokens) and a small ResNet (one Bottleneck per stage, width 16, 1x3x32x32), eval
and ``torch.no_grad()``, torch at 1 thread: per call (median, µs; the runners interleaved in one
process, so a loaded machine slows all alike) torch eager, fjax (torch tensors in and out), and
the graph's own time (its compiled step, a ``jax.stages.Compiled``, called directly on the same
arguments, waited for: what a ``jax.jit`` call of the step costs), the fast entry's floor (its XLA
executable called on the argument list the entry holds, output exported to torch: no checks, no
input conversion); fjax - own is the overhead (negative where the fast call's direct executable
call beats ``Compiled``'s), in wall-clock and in the calling thread's CPU time, fjax - exe the
overhead over the floor; and the fast call's own Python alone (its compiled step swapped for a
stub), which the machine's load barely moves. The GPT runs twice: with ``fjax.config.graph_index_checks`` (its
embedding lookups' bounds checked on the host: a callback per call) and without.
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import platform
import random
import statistics
import sys
import time

import jax
import torch

import fjax

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from tests.compile_from_torch.models import GPT, ResNet, resnet50  # noqa: E402

SHAPES = {
    "resnet50": [(1, 3, 224, 224), (2, 3, 256, 224), (2, 3, 224, 256), (3, 3, 256, 256)],
    "gpt": [(1, 128), (1, 256), (2, 512)],
}
QUICK = {
    "resnet50": [(1, 3, 64, 64), (2, 3, 96, 64), (2, 3, 64, 96), (3, 3, 96, 96)],
    "gpt": [(1, 32), (1, 64), (2, 96)],
}


def make(name: str):
    torch.manual_seed(0)
    return (resnet50() if name == "resnet50" else GPT(vocab=50257, block_size=1024, dim=768, heads=12, layers=4)).eval()


def example(name: str, shape):
    g = torch.Generator().manual_seed(1)
    return torch.randn(*shape, generator=g) if name == "resnet50" else torch.randint(0, 50257, shape, generator=g)


def timed(fn) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        if isinstance(out, fjax.Tensor):
            out._data.block_until_ready()
        return time.perf_counter() - start
    finally:
        gc.enable()


def clear_caches() -> None:
    jax.clear_caches()
    torch._dynamo.reset()


def compiles(name, shapes, model) -> dict:
    """Seconds of the first call at each shape, per compiler."""
    out = {}
    for label, build in [
        ("fjax dynamic=False", lambda m: fjax.compile_from_torch(m, options={"dynamic": False})),
        ("fjax dynamic=True", lambda m: fjax.compile_from_torch(m, options={"dynamic": True})),
        ("torch.compile dynamic=False", lambda m: torch.compile(m, dynamic=False)),
        ("torch.compile dynamic=True", lambda m: torch.compile(m, dynamic=True)),
    ]:
        clear_caches()
        compiled = build(copy.deepcopy(model))
        with torch.no_grad():
            out[label] = [timed(lambda s=s, c=compiled: c(example(name, s))) for s in shapes]
        print(f"  {label:<28}" + "".join(f"{t:9.2f}" for t in out[label]), flush=True)
    return out


def steady(name, shapes, model, reps: int) -> dict:
    """Median seconds per call at each shape, per runner (each warmed up at that shape first)."""
    runners = {
        "torch eager": model,
        "torch.compile": torch.compile(copy.deepcopy(model), dynamic=False),
        "fjax compile_from_torch": fjax.compile_from_torch(copy.deepcopy(model), options={"dynamic": True}),
    }
    out = {k: [] for k in runners}
    with torch.no_grad():
        for s in shapes:
            x = example(name, s)
            for label, run in runners.items():
                run(x)
                out[label].append(statistics.median(timed(lambda run=run, x=x: run(x)) for _ in range(reps)))
    for label, times in out.items():
        print(f"  {label:<28}" + "".join(f"{t * 1e3:9.1f}" for t in times), flush=True)
    return out


def _graph_own(compiled_model, x):
    """A callable running ``compiled_model``'s compiled step for ``x`` directly (and waiting)."""
    from fjax.framework.infer_compiler import _to_fjax

    graph = next(iter(compiled_model._graphs.values()))
    hit = graph._executables.repeat((_to_fjax(x),), {})
    assert hit is not None, "the graph's last call differs from this input"
    entry, call_args = hit
    assert not entry.record["changed"], "an inference step donates nothing, so it can be rerun on its arguments"

    def own():
        for a in jax.tree.leaves(entry.compiled(*call_args)):
            a.block_until_ready()  # (``jax.block_until_ready`` of the tuple cost ~2 ms more on a ResNet step)

    return own


def _exe(compiled_model, x):
    """A callable running ``compiled_model``'s fast entry for ``x`` as its floor: the XLA executable
    called on the arguments it holds (``_RawStep``: no checks, no input conversion), waited for and
    its output exported to torch; None where the entry has no raw step."""
    fast = next((f for f in compiled_model._fast.values() if f.state is not None and f.raw is not None), None)
    if fast is None:
        return None
    raw, (_, bufs, moves, lo, hi) = fast.raw, fast.template
    bufs = bufs.copy()
    arrays = fast.staged[1] if fast.staged is not None else [jax.numpy.asarray(x.numpy())]
    if moves is None:
        bufs[lo:hi] = arrays
    else:
        for i, slot in moves:
            bufs[slot] = arrays[i]
    execute, handlers, export = raw.execute, raw.handlers, fast.export

    def exe():
        outs = execute(bufs).consume_with_handlers(handlers)
        for o in outs:
            o.block_until_ready()
        return [export(o) for o in outs]

    return exe


def _python_cost(m, x, fx, reps: int = 1000) -> tuple:
    """The fast call's own Python, µs of thread CPU per call (torch inputs, fjax inputs): each fast
    entry's compiled step (and its executable, see ``_exe``) swapped for a stub that returns its
    last outputs at once, less the stub's own cost (min of 5 rounds; the machine's load barely
    moves it)."""
    entries = list(m._fast.values())
    saved = [(f.compiled, f.raw.execute if f.raw is not None else None) for f in entries]
    fast = next(f for f in entries if f.state is not None)
    st, opt_states, kept = fast.state[1]
    args = (st, opt_states, fast.rng, fast.hyper, [jax.numpy.asarray(x.numpy())]) + (() if kept is None else (kept,))
    result = fast.compiled(*args)
    for a in jax.tree.leaves(result):
        a.block_until_ready()

    class _Results:
        def consume_with_handlers(self, handlers, outputs=result[2]):
            return list(outputs)

    def stub(*args, result=result):
        return result

    def stub_execute(bufs, results=_Results()):
        return results

    try:
        for f in entries:
            f.compiled = stub
            if f.raw is not None:
                f.raw.execute = stub_execute
        best = {}
        for label, run in [("stub", stub), ("t", lambda: m(x)), ("f", lambda: m(fx))]:
            for _ in range(5):
                start = time.thread_time()
                for _ in range(reps):
                    run()
                t = (time.thread_time() - start) / reps * 1e6
                best[label] = min(best.get(label, t), t)
    finally:
        for f, (c, e) in zip(entries, saved):
            f.compiled = c
            if f.raw is not None:
                f.raw.execute = e
    return best["t"] - best["stub"], best["f"] - best["stub"]


def _tiny_jit(model, x):
    """The tiny MLP as a hand-written ``jax.jit`` on jax arrays (called and waited for)."""
    import jax.numpy as jnp

    (w1, b1), (w2, b2) = [
        (jnp.asarray(m.weight.detach().numpy()), jnp.asarray(m.bias.detach().numpy())) for m in model[::2]
    ]
    fn = jax.jit(lambda x: jax.nn.relu(x @ w1.T + b1) @ w2.T + b2)
    xj = jnp.asarray(x.numpy())
    return lambda: fn(xj).block_until_ready()


def overhead(reps: int) -> None:
    """Per-call µs of torch eager, jax.jit, the compiled step alone and fjax (see the module docstring)."""
    from fjax.framework.infer_compiler import _to_fjax

    torch.set_num_threads(1)
    torch.manual_seed(0)
    cases = [
        (
            "tiny mlp 8-8-8",
            torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8)),
            torch.randn(2, 8),
        ),
        ("gpt d=128 L=3", GPT(vocab=1000, block_size=64, dim=128, heads=4, layers=3), torch.randint(0, 1000, (1, 16))),
        ("resnet w=16", ResNet((1, 1, 1, 1), num_classes=10, width=16), torch.randn(1, 3, 32, 32)),
    ]
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        f"jax {jax.__version__}, {time.strftime('%Y-%m-%d %H:%M')}"
    )
    print(f"per call, µs (median of {reps}, interleaved); torch threads {torch.get_num_threads()}")
    print("  torch: torch eager; jit: the same math as a hand-written jax.jit (tiny model only); own: the compiled")
    print("  step called directly on its arguments (jax.stages.Compiled, as a jax.jit call); exe: its XLA executable")
    print("  called on the arguments the fast entry holds, output to torch (the floor: no checks, no input import);")
    print("  fjax(t): torch tensors in and out; fjax(f): fjax tensors in and out under fjax.no_grad(); ovh = fjax -")
    print("  own (wall clock; negative: faster than the Compiled call); ovh exe(t) = fjax(t) - exe; cpu ovh: the")
    print("  same as ovh in the calling thread's CPU time (time.thread_time; on a shared VM it counts stolen time")
    print("  too); py(t)/py(f): the fast call's own Python alone (its executable a stub returning the outputs;")
    print("  thread CPU, min of 5 x 1000)")
    print(
        f"  {'model':<30}{'torch':>8}{'jit':>8}{'own':>8}{'exe':>8}{'fjax(t)':>9}{'fjax(f)':>9}"
        f"{'ovh(t)':>8}{'ovh(f)':>8}{'ovh exe(t)':>11}{'cpu ovh(t)':>12}{'cpu ovh(f)':>12}{'py(t)':>7}{'py(f)':>7}"
        f"{'torch/fjax(t)':>15}"
    )
    for name, model, x in cases:
        model.eval()
        variants = [("", True)] + ([(" (index checks off)", False)] if name.startswith("gpt") else [])
        for suffix, checks in variants:
            before = fjax.config.graph_index_checks
            fjax.config.graph_index_checks = checks
            try:
                m = fjax.compile_from_torch(model)
                fx = _to_fjax(x.clone())
                with torch.no_grad(), fjax.no_grad():
                    for _ in range(2):
                        m(x)
                        m(fx)
            finally:
                fjax.config.graph_index_checks = before

            def fjax_in(m=m, fx=fx):
                m(fx)._data.block_until_ready()  # (under fjax.no_grad(), entered once below)

            runners = {"torch": lambda f=model, x=x: f(x), "own": _graph_own(m, x)}
            if _exe(m, x) is not None:
                runners["exe"] = _exe(m, x)
            if name.startswith("tiny"):
                runners["jit"] = _tiny_jit(model, x)
            runners.update({"fjax(t)": lambda m=m, x=x: m(x), "fjax(f)": fjax_in})
            times = {k: [] for k in runners}
            cpu = {k: [] for k in runners}
            with torch.no_grad(), fjax.no_grad():
                for run in runners.values():
                    for _ in range(10):
                        run()
                order, shuffle = list(runners.items()), random.Random(0).shuffle
                for _ in range(reps):
                    # shuffled each round: the first jax call after torch's ran up to ~2 ms slower on a
                    # small ResNet, so no runner may always follow torch (a rotation keeps each
                    # runner's predecessor: ``own`` followed torch in all but one round of n)
                    shuffle(order)
                    for label, run in order:
                        start, start_cpu = time.perf_counter(), time.thread_time()
                        run()
                        times[label].append(time.perf_counter() - start)
                        cpu[label].append(time.thread_time() - start_cpu)
            with torch.no_grad(), fjax.no_grad():
                py = _python_cost(m, x, fx)
            t = {k: statistics.median(v) * 1e6 for k, v in times.items()}
            c = {k: statistics.median(v) * 1e6 for k, v in cpu.items()}
            jit = f"{t['jit']:8.0f}" if "jit" in t else f"{'-':>8}"
            exe, ovh_exe = (f"{t['exe']:8.0f}", f"{t['fjax(t)'] - t['exe']:11.0f}") if "exe" in t else ("-", "-")
            print(
                f"  {name + suffix:<30}{t['torch']:8.0f}{jit}{t['own']:8.0f}{exe:>8}{t['fjax(t)']:9.0f}"
                f"{t['fjax(f)']:9.0f}{t['fjax(t)'] - t['own']:8.0f}{t['fjax(f)'] - t['own']:8.0f}"
                f"{ovh_exe:>11}{c['fjax(t)'] - c['own']:12.0f}{c['fjax(f)'] - c['own']:12.0f}"
                f"{py[0]:7.0f}{py[1]:7.0f}{t['torch'] / t['fjax(t)']:15.2f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "gpt"], choices=["resnet50", "gpt"])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small shapes (a smoke run)")
    parser.add_argument("--overhead", action="store_true", help="per-call overhead on a small GPT and ResNet")
    args = parser.parse_args()
    if args.overhead:
        overhead(args.reps if args.reps != 5 else 300)
        return
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        f"jax {jax.__version__}, torch threads {torch.get_num_threads()}, {time.strftime('%Y-%m-%d %H:%M')}"
    )
    for name in args.models:
        shapes = (QUICK if args.quick else SHAPES)[name]
        model = make(name)
        print(f"\n{name}: first call at each shape, seconds (capture + compile + run)")
        print(" " * 30 + "".join(f"{str(s):>9}" for s in shapes))
        first = compiles(name, shapes, model)
        print(f"{name}: steady-state inference, ms (median of {args.reps})")
        times = steady(name, shapes, model, args.reps)
        fj = first["fjax dynamic=True"]
        print(f"{name} ratios:")
        for label in ("torch.compile dynamic=False", "torch.compile dynamic=True"):
            print(f"  first compile, {label} / fjax dynamic=True: {first[label][0] / fj[0]:.2f}")
        print(
            f"  new shape (max), fjax dynamic=True: {max(fj[1:]):.2f} s; "
            f"dynamic=False: {max(first['fjax dynamic=False'][1:]):.2f} s"
        )
        for i, s in enumerate(shapes):
            eager, tc, f = times["torch eager"][i], times["torch.compile"][i], times["fjax compile_from_torch"][i]
            print(f"  {str(s):<18} torch eager / fjax {eager / f:5.2f}   torch.compile / fjax {tc / f:5.2f}")


if __name__ == "__main__":
    main()
