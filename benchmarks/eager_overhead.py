"""Eager per-op overhead: fjax vs jax.numpy vs torch, measured in one run.

    python benchmarks/eager_overhead.py [--repeats 7] [--iters 2000] [--decode-tokens 20]

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


def _mlp_cases(grad: bool, p: float = 0.0):
    """A 3-layer MLP's forward (and, with ``grad``, its backward and SGD update); ``p``: dropout
    after each hidden layer (torch's ``F.dropout``; JAX's a bernoulli mask from a folded key)."""
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
            if p:
                h = fjax.nn.functional.dropout(h, p)
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

    key, draws = jax.random.key(0), [0]

    def loss_jax(params):
        h = jx
        for w in params[:-1]:
            h = jax.nn.relu(h @ w)
            if p:
                draws[0] += 1
                keep = jax.random.bernoulli(jax.random.fold_in(key, draws[0]), 1 - p, h.shape)
                h = jnp.where(keep, h / (1 - p), 0)
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
                if p:
                    h = torch.nn.functional.dropout(h, p)
            loss = ((h @ tw[-1]) ** 2).mean()
        if grad:
            loss.backward()
            with torch.no_grad():
                for w in tw:
                    w -= lr * w.grad
                    w.grad = None
        return loss

    if grad:  # eager autodiff has no per-op pre-jitted counterpart
        return f_fjax, f_jax, f_torch
    mm, relu, sq, mean = (jax.jit(f) for f in (jnp.matmul, jax.nn.relu, jnp.square, jnp.mean))

    def f_floor():  # the same ops, each a pre-jitted JAX function
        h = jx
        for w in jw[:-1]:
            h = relu(mm(h, w))
        return mean(sq(mm(h, jw[-1])))

    return f_fjax, f_jax, f_torch, f_floor


def _unfused(case):
    """``case`` with fjax's eager fusion off (every backward node its own kernel)."""
    f_fjax, *rest = case

    def f():
        fjax.config.eager_fusion = False
        try:
            return f_fjax()
        finally:
            fjax.config.eager_fusion = True

    return (f, *rest)


def _binary_cases(shape, op):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    fa, fb = fjax.tensor(a), fjax.tensor(b)
    ja, jb = jnp.asarray(a), jnp.asarray(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    if op == "add":
        floor = jax.jit(jnp.add)
        return (lambda: fa + fb), (lambda: ja + jb), (lambda: ta + tb), (lambda: floor(ja, jb))
    floor = jax.jit(jnp.matmul)
    return (lambda: fa @ fb), (lambda: ja @ jb), (lambda: ta @ tb), (lambda: floor(ja, jb))


def _grad_binary_cases(shape):
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    fa, fb = fjax.tensor(a, requires_grad=True), fjax.tensor(b)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b)
    ja, jb = jnp.asarray(a), jnp.asarray(b)
    floor = jax.jit(lambda a, b: jax.vjp(jnp.multiply, a, b))
    return (lambda: fa * fb), (lambda: jax.vjp(jnp.multiply, ja, jb)[0]), (lambda: ta * tb), (lambda: floor(ja, jb)[0])


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

    floor = jax.jit(lambda a, i: jax.lax.dynamic_slice_in_dim(a, i, 35))
    return window(fa), window(ja), window(ta), (lambda: floor(ja, position()))


def _new_value_cases(pattern: str):
    """One op whose Python number is new on every call (a kernel argument in fjax)."""
    a = np.random.default_rng(4).standard_normal((256, 64)).astype(np.float32)
    fa, ja, ta = fjax.tensor(a), jnp.asarray(a), torch.tensor(a)
    step = [0]

    def i():
        step[0] = (step[0] + 1) % 250
        return step[0]

    if pattern == "index":
        f = lambda x: lambda: x[i()]  # noqa: E731
        floor = jax.jit(lambda a, i: jax.lax.dynamic_index_in_dim(a, i, keepdims=False))
    elif pattern == "narrow":
        f = lambda x: lambda: x.narrow(0, i(), 4) if not isinstance(x, jax.Array) else x[(k := i()) : k + 4]  # noqa: E731
        floor = jax.jit(lambda a, i: jax.lax.dynamic_slice_in_dim(a, i, 4))
    elif pattern == "scalar":
        f = lambda x: lambda: x * (1e-3 * i())  # noqa: E731
        floor = jax.jit(jnp.multiply)
    else:  # roll
        f = lambda x: lambda: x.roll(i(), 0) if not isinstance(x, jax.Array) else jnp.roll(x, i(), 0)  # noqa: E731
        floor = jax.jit(lambda a, i: jnp.roll(a, i, 0))
    scalar = pattern == "scalar"
    return f(fa), f(ja), f(ta), (lambda: floor(ja, 1e-3 * i() if scalar else i()))


def _decode(n_tokens: int):
    """Microseconds per token of a decode loop whose sequence grows by one token per step:
    attention of the last token over the sequence, a projection, ``cat`` (every step is a
    new shape)."""
    rng = np.random.default_rng(5)
    d = 32
    start = 40 + int(time.time_ns() % 500)  # lengths this process has not compiled
    w, seq = rng.standard_normal((d, d)).astype(np.float32) / 6, rng.standard_normal((start, d)).astype(np.float32)

    def loop(lib, seq, w):
        for _ in range(n_tokens):
            q = seq[-1:]
            att = lib.softmax((q @ seq.T) / d**0.5, -1) @ seq
            seq = lib.cat([seq, lib.tanh(att @ w)], 0)
        return seq

    class _J:
        softmax, tanh = staticmethod(jax.nn.softmax), staticmethod(jnp.tanh)
        cat = staticmethod(jnp.concatenate)

    class _T:
        softmax, tanh, cat = staticmethod(torch.softmax), staticmethod(torch.tanh), staticmethod(torch.cat)

    class _F:
        softmax, tanh, cat = staticmethod(fjax.softmax), staticmethod(fjax.tanh), staticmethod(fjax.cat)

    out = {}
    for name, lib, conv, sync in [
        ("torch", _T, torch.tensor, _sync_torch),
        ("jnp", _J, jnp.asarray, _sync_jax),
        ("fjax", _F, fjax.tensor, _sync_fjax),
    ]:
        begin = time.perf_counter()
        sync(loop(lib, conv(seq), conv(w)))
        out[name] = (time.perf_counter() - begin) / n_tokens * 1e6
    return out


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
    parser.add_argument("--decode-tokens", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))

    cases = [
        ("add (4,4)", _binary_cases((4, 4), "add"), args.iters),
        ("matmul 64x64", _binary_cases((64, 64), "matmul"), args.iters),
        ("mul (4,4), input requires grad", _grad_binary_cases((4, 4)), args.iters),
        ("3-layer MLP forward, no grad", _mlp_cases(False), args.iters // 4),
        ("3-layer MLP fwd+bwd+SGD step", _mlp_cases(True), args.iters // 10),
        ("  the same, eager fusion off", _unfused(_mlp_cases(True)), args.iters // 10),
        ("  the same, dropout 0.1", _mlp_cases(True, 0.1), args.iters // 10),
        ("  dropout 0.1, eager fusion off", _unfused(_mlp_cases(True, 0.1)), args.iters // 10),
        ("window data[i:i+35], same i", _window_cases(False), args.iters),
        ("window data[i:i+35], new i", _window_cases(True), 900),
        ("x[i], new i", _new_value_cases("index"), 1000),
        ("x.narrow(0, i, 4), new i", _new_value_cases("narrow"), 1000),
        ("x * (1e-3 * i), new i", _new_value_cases("scalar"), 1000),
        ("x.roll(i, 0), new i", _new_value_cases("roll"), 1000),
    ]
    print(
        f"# eager overhead — {platform.node()} {platform.machine()}, {time.strftime('%Y-%m-%d')}, "
        f"jax {jax.__version__} ({jax.default_backend()}), torch {torch.__version__}"
    )
    head = f"{'case':34s} {'fjax us':>9s} {'floor us':>9s} {'jnp us':>9s} {'torch us':>9s}"
    print(head + f" {'fjax/floor':>10s} {'fjax/jnp':>9s} {'fjax/torch':>10s}")
    for name, (f_fjax, f_jax, f_torch, *floor), iters in cases:
        tf = _time(f_fjax, iters, args.repeats, _sync_fjax)
        tj = _time(f_jax, iters, args.repeats, _sync_jax)
        tt = _time(f_torch, iters, args.repeats, _sync_torch)
        tl = _time(floor[0], iters, args.repeats, _sync_jax) if floor else float("nan")
        print(f"{name:34s} {tf:9.1f} {tl:9.1f} {tj:9.1f} {tt:9.1f} {tf / tl:10.2f} {tf / tj:9.2f} {tf / tt:10.2f}")
    first = _first_call(args.repeats)
    print(
        f"{'first call at a new shape (3 ops)':34s} {first['fjax']:9.0f} {'':9s} {first['jnp']:9.0f} "
        f"{first['torch']:9.0f} {'':10s} {first['fjax'] / first['jnp']:9.2f} {first['fjax'] / first['torch']:10.2f}"
    )
    dec = _decode(args.decode_tokens)
    print(
        f"{'decode loop, growing seq (per token)':34s} {dec['fjax']:9.0f} {'':9s} {dec['jnp']:9.0f} "
        f"{dec['torch']:9.0f} {'':10s} {dec['fjax'] / dec['jnp']:9.2f} {dec['fjax'] / dec['torch']:10.2f}"
    )
    print("floor: the same op(s) as a pre-jitted JAX function called on the same arrays (nan: no single floor).")
    print("jnp column for the MLP step: un-jitted jax.value_and_grad + SGD (JAX's eager autodiff).")
    print("new-i rows: jnp compiles per value where its index is static (slices, roll); fjax passes it to the kernel.")


if __name__ == "__main__":
    main()
