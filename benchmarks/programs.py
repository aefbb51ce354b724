"""Whole PyTorch programs: training-step time of fjax (eager, under ``fjax.mock_torch``) vs torch.

fjax runs each program twice: eager fusion off (every op and backward node its own kernel) and
on (``fjax.config.eager_fusion``: a repeating backward is one compiled program).

    python benchmarks/programs.py [--repeats 5] [--steps 10] [--torch-threads 1] [program ...]

Runs every ``tests/programs/mock_*.py`` (or the ones named) in this one process: once loaded
against real torch and once under ``fjax.mock_torch`` (where ``import torch`` gives fjax). A
program's ``main(steps, seed)`` builds its model and data, trains ``steps`` steps and evaluates,
so one step's time is measured as the difference ``(T(2 * steps) - T(steps)) / steps``: setup
and the final evaluation cancel out. Both lengths run twice first as warm-up (fjax compiles each
op at its first shape there, and each fused segment at its second sight); each repeat then
times torch and fjax back to back, so machine load hits both alike. Prints milliseconds per step
(median over repeats), fjax/torch, and the XLA compiles per step of the fused runs after the
warm-up (``fjax.profiler.compile_count()``: 0 once every segment and kernel a step needs is
compiled).

``--compile`` adds two columns: the program with each top-level module call (a call made outside
any other module's) going through ``torch.compile(module)`` on torch and through
``fjax.compile(module)`` (``torch.compile`` under mock_torch) on fjax, as a user who writes
``model = torch.compile(model)`` gets; a compiler that fails prints 'n/a' and its reason.

``--first-loss`` instead times what a user waits for: a fresh process that imports the library,
builds the program and trains one step (``main(1, 0)``), for torch, for fjax with an empty
compilation cache (every op compiles) and for fjax again with the cache that run left (JAX's
persistent cache, on by default: a script's second run).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import jax
import torch

import fjax
import fjax.mock_torch as mock_torch

PROGRAMS = Path(__file__).resolve().parent.parent / "tests" / "programs"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # torch.compile's tracer imports the module of each frame by name
    spec.loader.exec_module(module)
    return module


def _timed(main, steps: int, on_fjax: bool) -> float:
    if on_fjax:
        with mock_torch.enable():
            start = time.perf_counter()
            main(steps, 0)
            return time.perf_counter() - start
    start = time.perf_counter()
    main(steps, 0)
    return time.perf_counter() - start


def _with_fusion(main, on: bool):
    """``main`` run with ``fjax.config.eager_fusion`` set to ``on``."""

    def run(steps, seed):
        saved, fjax.config.eager_fusion = fjax.config.eager_fusion, on
        try:
            return main(steps, seed)
        finally:
            fjax.config.eager_fusion = saved

    return run


class _Compiled:
    """``main`` with every top-level module call going through ``compile_fn(module)`` (one per
    module instance): ``Module.__call__`` of ``module_cls`` is patched while ``main`` runs; a call
    made inside another one (the compiled module's own, and its submodules') takes the original
    path. The patch reads the depth only (mutating it outside the compiled call), so a tracing
    compiler sees a plain call."""

    def __init__(self, main, module_cls, compile_fn):
        self.main, self.module_cls, self.compile_fn = main, module_cls, compile_fn

    def __call__(self, steps, seed):
        cls, compile_fn = self.module_cls, self.compile_fn
        original, compiled, depth = cls.__call__, {}, [0]

        def call(module, *args, **kwargs):
            if depth[0]:
                return original(module, *args, **kwargs)
            fn = compiled.get(id(module))
            if fn is None:
                fn = compiled[id(module)] = (module, compile_fn(module))
            depth[0] += 1
            try:
                return fn[1](*args, **kwargs)
            finally:
                depth[0] -= 1

        cls.__call__ = call
        try:
            return self.main(steps, seed)
        finally:
            cls.__call__ = original


def _compile_error(main, on_fjax: bool) -> str | None:
    """``None`` if ``main(2, 0)`` runs, else the error in one line (a compiled column prints 'n/a')."""
    try:
        if on_fjax:
            with mock_torch.enable():
                main(2, 0)
        else:
            main(2, 0)
    except Exception as exc:  # noqa: BLE001 - a compiler that cannot run a program is reported, not fatal
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:70] if str(exc).strip() else ''}"
    return None


def _step_ms(mains: dict, steps: int, repeats: int, compiles: dict | None = None) -> dict:
    """Median over repeats of the marginal step time (ms) of each of ``mains`` (name -> (main,
    on_fjax)); ``compiles`` gets, for each fjax runner, the XLA compiles
    (``fjax.profiler.compile_count()``) per step of its timed runs, after the warm-up."""
    for _ in range(2):  # warm-up at both lengths, twice: a segment first seen in the first round
        for main, on_fjax in mains.values():  # (the evaluation after `steps` steps) compiles at its second sight
            _timed(main, steps, on_fjax)
            _timed(main, 2 * steps, on_fjax)
    samples = {name: [] for name in mains}
    counted = dict.fromkeys((name for name, (_, on_fjax) in mains.items() if on_fjax), 0)
    for _ in range(repeats):
        for name, (main, on_fjax) in mains.items():
            before = fjax.profiler.compile_count()
            short = _timed(main, steps, on_fjax)
            long = _timed(main, 2 * steps, on_fjax)
            samples[name].append((long - short) / steps * 1e3)
            if on_fjax:
                counted[name] += fjax.profiler.compile_count() - before
    if compiles is not None:
        compiles.update({name: n / (3 * steps * repeats) for name, n in counted.items()})
    return {name: statistics.median(s) for name, s in samples.items()}


def _first_error(main) -> str | None:
    """``None`` if ``main(2, 0)`` runs under mock_torch, else the error in one line."""
    with mock_torch.enable():
        try:
            main(2, 0)
        except Exception as exc:  # noqa: BLE001 - a program fjax cannot run yet is reported, not fatal
            return f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
    return None


_FIRST_LOSS = """
import importlib.util, sys, time
start = time.perf_counter()
if sys.argv[2] == "fjax":
    import fjax.mock_torch
    fjax.mock_torch.enable()
import torch
spec = importlib.util.spec_from_file_location("program", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.main(1, 0)
print(time.perf_counter() - start)
"""


def _first_loss(path: Path, lib: str, cache: str) -> float:
    """Seconds from a fresh interpreter to the end of one training step (import included)."""
    env = dict(os.environ, FJAX_COMPILATION_CACHE=cache)
    out = subprocess.run([sys.executable, "-c", _FIRST_LOSS, str(path), lib], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1])
    return float(out.stdout.split()[-1])


def first_loss_table(names: list[str]) -> None:
    print(
        f"# Time to the first loss (fresh process: import, build, one step), seconds — {platform.node()}, "
        f"{time.strftime('%Y-%m-%d')}, jax {jax.__version__}, torch {torch.__version__}"
    )
    print(
        f"{'program':24s} {'torch s':>8s} {'fjax cold':>10s} {'fjax warm':>10s} {'cold/torch':>10s} {'warm/torch':>10s}"
    )
    cold_ratios, warm_ratios = [], []
    for name in names:
        path = PROGRAMS / f"{name}.py"
        with tempfile.TemporaryDirectory() as cache:
            try:
                t = _first_loss(path, "torch", "0")
                cold = _first_loss(path, "fjax", cache)
                warm = _first_loss(path, "fjax", cache)
            except RuntimeError as err:
                print(f"{name:24s} fails: {err}")
                continue
        cold_ratios.append(cold / t)
        warm_ratios.append(warm / t)
        print(f"{name:24s} {t:8.2f} {cold:10.2f} {warm:10.2f} {cold / t:10.2f} {warm / t:10.2f}")
    if cold_ratios:
        med_c, med_w = statistics.median(cold_ratios), statistics.median(warm_ratios)
        print(f"{'median':24s} {'':8s} {'':10s} {'':10s} {med_c:10.2f} {med_w:10.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("programs", nargs="*", help="program names (default: every tests/programs/mock_*.py)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument(
        "--torch-threads", type=int, default=1, help="torch intra-op threads (tiny ops: 1 avoids spinning workers)"
    )
    parser.add_argument("--first-loss", action="store_true", help="time to the first loss in fresh processes")
    parser.add_argument(
        "--compile", action="store_true", help="also time torch.compile and fjax.compile (each top-level module)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.torch_threads)
    warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly disabled")
    names = args.programs or sorted(p.stem for p in PROGRAMS.glob("mock_*.py"))
    if args.first_loss:
        first_loss_table(names)
        return

    print(
        f"# PyTorch programs, ms per training step — {platform.node()} {platform.machine()}, "
        f"{time.strftime('%Y-%m-%d')}, jax {jax.__version__} ({jax.default_backend()}), torch {torch.__version__} "
        f"({torch.get_num_threads()} thread(s)); median of {args.repeats}, (T({2 * args.steps}) - T({args.steps})) "
        f"/ {args.steps} steps"
    )
    compiled_header = f" {'fjax.compile':>12s} {'torch.compile':>13s} {'fc/torch':>8s} {'tc/torch':>8s}"
    print(
        f"{'program':24s} {'torch ms':>9s} {'unfused ms':>10s} {'fused ms':>9s} {'unfused/torch':>13s} "
        f"{'fused/torch':>11s} {'compiles/step':>13s}" + (compiled_header if args.compile else "")
    )
    ratios = {"unfused": [], "fused": [], "fjax.compile": [], "torch.compile": []}
    failures = []
    for name in names:
        path = PROGRAMS / f"{name}.py"
        on_torch = _load(path, f"{name}_on_torch").main
        with mock_torch.enable():
            module = _load(path, f"{name}_on_fjax")
            assert module.torch is fjax
        on_fjax = module.main
        error = _first_error(on_fjax)
        if error is not None:
            ms = _step_ms({"torch": (on_torch, False)}, args.steps, args.repeats)
            print(f"{name:24s} {ms['torch']:9.2f} {'fails':>9s} {'':10s}  ({error})")
            continue
        mains = {
            "torch": (on_torch, False),
            "unfused": (_with_fusion(on_fjax, False), True),
            "fused": (_with_fusion(on_fjax, True), True),
        }
        if args.compile:
            for label, main, on_fjax_side in [
                ("fjax.compile", _Compiled(on_fjax, fjax.nn.Module, fjax.compile), True),
                ("torch.compile", _Compiled(on_torch, torch.nn.Module, torch.compile), False),
            ]:
                error = _compile_error(main, on_fjax_side)
                if error is None:
                    mains[label] = (main, on_fjax_side)
                else:
                    failures.append(f"{name} {label}: {error}")
        compiles: dict = {}
        ms = _step_ms(mains, args.steps, args.repeats, compiles)
        for mode in ratios:
            if mode in ms:
                ratios[mode].append(ms[mode] / ms["torch"])
        line = (
            f"{name:24s} {ms['torch']:9.2f} {ms['unfused']:10.2f} {ms['fused']:9.2f} "
            f"{ms['unfused'] / ms['torch']:13.2f} {ms['fused'] / ms['torch']:11.2f} {compiles['fused']:13.2f}"
        )
        if args.compile:
            cells = [f"{ms[k]:.2f}" if k in ms else "n/a" for k in ("fjax.compile", "torch.compile")]
            cells += [f"{ms[k] / ms['torch']:.2f}" if k in ms else "n/a" for k in ("fjax.compile", "torch.compile")]
            line += f" {cells[0]:>12s} {cells[1]:>13s} {cells[2]:>8s} {cells[3]:>8s}"
        print(line, flush=True)
    if ratios["fused"]:
        u, f = statistics.median(ratios["unfused"]), statistics.median(ratios["fused"])
        line = f"{'median':24s} {'':9s} {'':10s} {'':9s} {u:13.2f} {f:11.2f} {'':13s}"
        if args.compile:
            med = [
                f"{statistics.median(ratios[k]):.2f}" if ratios[k] else "n/a" for k in ("fjax.compile", "torch.compile")
            ]
            line += f" {'':12s} {'':13s} {med[0]:>8s} {med[1]:>8s}"
        print(line)
    for failure in failures:
        print(f"n/a: {failure}")


if __name__ == "__main__":
    main()
