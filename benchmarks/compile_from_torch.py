"""fjax.compile_from_torch vs torch.compile: first compile, each new input shape, steady-state inference.

    python benchmarks/compile_from_torch.py [--models resnet50 gpt] [--reps 5] [--quick]

For a ResNet-50 (four image shapes) and a GPT-2-style decoder (three sequence lengths), in one run:
- compile: the first call (capture + trace + XLA compile + run) and each call at a new shape, for
  ``compile_from_torch`` with ``dynamic`` False and True and for ``torch.compile`` (inductor, CPU
  C++ codegen) with ``dynamic`` False and True, every one on a fresh copy of the model with JAX's
  and inductor's in-memory caches cleared;
- steady state: the median inference time at each shape of torch eager, torch.compile and
  compile_from_torch (graph), all under ``torch.no_grad()``.
Ratios: torch.compile / fjax for the first compile; torch eager / fjax for steady-state calls
(> 1: fjax is faster). The models are tests/compile_from_torch/models.py's.
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import platform
import statistics
import sys
import time

import jax
import torch

import fjax

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from tests.compile_from_torch.models import GPT, resnet50  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "gpt"], choices=["resnet50", "gpt"])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small shapes (a smoke run)")
    args = parser.parse_args()
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
