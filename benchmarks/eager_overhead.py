"""Eager per-op overhead: fjax vs jax.numpy vs torch, measured in one run.

    python benchmarks/eager_overhead.py [--repeats 7] [--iters 2000]

Prints microseconds per call (median over repeats) and the ratios fjax/jnp and fjax/torch,
plus the first-call latency of an op at a shape never seen before (what a notebook user feels
when a new shape needs a compile).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch

import fjax


def _time(fn, iters, repeats, sync):
    for _ in range(max(10, iters // 20)):
        fn()
    sync(fn())
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iters):
            out = fn()
        sync(out)
        samples.append((time.perf_counter() - start) / iters * 1e6)
    return statistics.median(samples)


def _sync_fjax(t):
    jax.block_until_ready(t._data if isinstance(t, fjax.Tensor) else t)


def _sync_jax(a):
    jax.block_until_ready(a)


def _sync_torch(_):
    return None


def _mlp_cases(grad: bool):
    rng = np.random.default_rng(0)
    shapes = [(64, 128), (128, 128), (128, 10)]
    ws = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for s in shapes]
    x = rng.standard_normal((32, 64)).astype(np.float32)
    lr = 1e-3

    fw = [fjax.tensor(w, requires_grad=grad) for w in ws]
    fx = fjax.tensor(x)

    def f_fjax():
        h = fx
        for w in fw[:-1]:
            h = (h @ w).relu()
        loss = ((h @ fw[-1]) ** 2).mean()
        if grad:
            loss.backward()
            with fjax.no_grad():
                for w in fw:
                    w -= lr * w.grad
                    w.grad = None
        return loss

    jw = [jnp.asarray(w) for w in ws]
    jx = jnp.asarray(x)

    def loss_jax(params):
        h = jx
        for w in params[:-1]:
            h = jax.nn.relu(h @ w)
        return jnp.mean((h @ params[-1]) ** 2)

    value_and_grad = jax.value_and_grad(loss_jax)

    def f_jax():
        nonlocal jw
        if not grad:
            return loss_jax(jw)
        loss, gs = value_and_grad(jw)
        jw = [w - lr * g for w, g in zip(jw, gs)]
        return loss

    tw = [torch.tensor(w, requires_grad=grad) for w in ws]
    tx = torch.tensor(x)

    def f_torch():
        with torch.set_grad_enabled(grad):
            h = tx
            for w in tw[:-1]:
                h = (h @ w).relu()
            loss = ((h @ tw[-1]) ** 2).mean()
        if grad:
            loss.backward()
            with torch.no_grad():
                for w in tw:
                    w -= lr * w.grad
                    w.grad = None
        return loss

    return f_fjax, f_jax, f_torch


def _binary_cases(shape, op):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    fa, fb = fjax.tensor(a), fjax.tensor(b)
    ja, jb = jnp.asarray(a), jnp.asarray(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    if op == "add":
        return (lambda: fa + fb), (lambda: ja + jb), (lambda: ta + tb)
    return (lambda: fa @ fb), (lambda: ja @ jb), (lambda: ta @ tb)


def _grad_binary_cases(shape):
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    fa, fb = fjax.tensor(a, requires_grad=True), fjax.tensor(b)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b)
    ja, jb = jnp.asarray(a), jnp.asarray(b)
    return (lambda: fa * fb), (lambda: jax.vjp(jnp.multiply, ja, jb)[0]), (lambda: ta * tb)


def _window_cases(new_position: bool):
    """``data[i:i + 35]`` over a (1000, 100) corpus: ``i`` new on every call, or always 7."""
    a = np.random.default_rng(3).standard_normal((1000, 100)).astype(np.float32)
    fa, ja, ta = fjax.tensor(a), jnp.asarray(a), torch.tensor(a)
    step = [0]

    def position():
        step[0] = (step[0] + 1) % 900 if new_position else 7
        return step[0]

    def window(x):
        return lambda: x[(i := position()) : i + 35]

    return window(fa), window(ja), window(ta)


def _first_call(repeats):
    """Microseconds for the first call of three ops at a never-seen shape (median of repeats)."""
    rows = {"fjax": [], "jnp": [], "torch": []}
    for i in range(repeats):
        n = 1000 + 17 * i + int(time.time_ns() % 997)
        a = np.ones((n, 3), np.float32)
        fa, ja, ta = fjax.tensor(a), jnp.asarray(a), torch.tensor(a)
        for name, x, fn, sync in [
            ("fjax", fa, lambda x: (x * 2 + 1).tanh(), _sync_fjax),
            ("jnp", ja, lambda x: jnp.tanh(x * 2 + 1), _sync_jax),
            ("torch", ta, lambda x: (x * 2 + 1).tanh(), _sync_torch),
        ]:
            start = time.perf_counter()
            sync(fn(x))
            rows[name].append((time.perf_counter() - start) * 1e6)
    return {k: statistics.median(v) for k, v in rows.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--iters", type=int, default=2000)
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))

    cases = [
        ("add (4,4)", _binary_cases((4, 4), "add"), args.iters),
        ("matmul 64x64", _binary_cases((64, 64), "matmul"), args.iters),
        ("mul (4,4), input requires grad", _grad_binary_cases((4, 4)), args.iters),
        ("3-layer MLP forward, no grad", _mlp_cases(False), args.iters // 4),
        ("3-layer MLP fwd+bwd+SGD step", _mlp_cases(True), args.iters // 10),
        ("window data[i:i+35], same i", _window_cases(False), args.iters),
        ("window data[i:i+35], new i", _window_cases(True), 900),
    ]
    print(
        f"# eager overhead — {platform.node()} {platform.machine()}, {time.strftime('%Y-%m-%d')}, "
        f"jax {jax.__version__} ({jax.default_backend()}), torch {torch.__version__}"
    )
    print(f"{'case':34s} {'fjax us':>9s} {'jnp us':>9s} {'torch us':>9s} {'fjax/jnp':>9s} {'fjax/torch':>10s}")
    for name, (f_fjax, f_jax, f_torch), iters in cases:
        tf = _time(f_fjax, iters, args.repeats, _sync_fjax)
        tj = _time(f_jax, iters, args.repeats, _sync_jax)
        tt = _time(f_torch, iters, args.repeats, _sync_torch)
        print(f"{name:34s} {tf:9.1f} {tj:9.1f} {tt:9.1f} {tf / tj:9.2f} {tf / tt:10.2f}")
    first = _first_call(args.repeats)
    print(
        f"{'first call at a new shape (3 ops)':34s} {first['fjax']:9.0f} {first['jnp']:9.0f} {first['torch']:9.0f} "
        f"{first['fjax'] / first['jnp']:9.2f} {first['fjax'] / first['torch']:10.2f}"
    )
    print("jnp column for the MLP step: un-jitted jax.value_and_grad + SGD (JAX's eager autodiff).")
    print("window rows: a new i costs jnp a compile per position (its slice bounds are static).")


if __name__ == "__main__":
    main()
