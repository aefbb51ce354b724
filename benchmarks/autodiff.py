"""Functional autodiff: fjax vs torch.autograd.functional vs torch.func vs raw jitted JAX.

f(x) = sum(tanh(W2 tanh(W1 x))) and the vector function g(x) = tanh(W2 tanh(W1 x)), x in R^N.
Rows: the gradient of f through fjax.func.grad and through autograd.functional.vjp, the
jacobian of g, hessian/hvp/vhp of f, for N in {100, 1000}. Columns (ms per call: medians
of samples that each average up to 20 interleaved calls, see ``_medians_ms``):

- fjax first: the first call (trace + compile);
- fjax: repeated calls with the same function; fjax fresh: a new lambda on every call;
- torch AF: torch.autograd.functional (vectorize=False / True); torch.func;
- jax: jitted raw JAX computing what fjax returns (hvp/vhp: ``f(x)`` and the product, as
  torch.autograd.functional does; ``jax.jvp``/``jax.vjp`` of ``value_and_grad`` with the value as aux).

Ratios: fjax/jax (target <= 1.2), torch AF(vectorize=False)/fjax, torch.func/fjax fresh.
Run: ``python benchmarks/autodiff.py [--sizes 100 1000] [--budget 0.5] [--sync-dispatch]``.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.autograd.functional as TAF
import torch.func as TF

import fjax
import fjax.autograd.functional as FAF
import fjax.func as FF

_GROUPS = (("fjax", "fresh", "jax"), ("taf", "taf_vec", "tfunc"))
"""Columns timed together, round-robin. torch's runs apart: after each call its idle OpenMP
threads keep spinning for a while, and on this 2-core machine that takes a core from whatever
runs next; interleaved with torch, fjax's Python work before and after each XLA call could no
longer overlap XLA's worker thread and jacobian N=100 measured 1.22x raw JAX instead of 1.09x
(graph_step.py separates torch the same way)."""


def _medians_ms(fns: dict, budget: float, stat=np.median, min_reps: int = 3, max_reps: int = 2000) -> dict:
    """``stat`` (median) ms per call of each callable over samples that each average up to
    ``_PER_SAMPLE`` calls (about ``_SAMPLE_SECONDS`` of them; one call for slow columns): a
    median of means.

    Calls run round-robin, one per column per round in a shuffled order, so load bursts hit
    every column alike and what runs right after a cache-heavy column is not always the same
    column. A sample averages calls of successive rounds because at N=100 single calls are
    bimodal on this 2-core machine: the thread hand-off of JAX's asynchronous CPU dispatch
    takes ~27 or ~50 us a call, each about half the time, for raw JAX as for fjax (1 us of
    Python before a raw JAX call moves calls from one mode to the other). The median of single
    calls jumps between the modes when the fast fraction crosses one half (fast fractions of
    0.47 against 0.58 read 1.4x; 0.53 against 0.61 read 1.16x by medians, 1.11x by means); the
    mean of a sample moves in proportion to it, and the median of the samples still ignores
    load bursts.
    """
    per_sample = {}
    for k, fn in fns.items():
        fn()  # warm-up (compiles, fills caches)
        start = time.perf_counter()
        fn()
        per_sample[k] = max(1, min(_PER_SAMPLE, int(_SAMPLE_SECONDS / (time.perf_counter() - start))))
    samples: dict = {k: [] for k in fns}
    pending: dict = {k: [] for k in fns}
    order = np.random.default_rng(0)

    def needed(k):
        spent = sum(samples[k]) * per_sample[k]
        return len(samples[k]) < max_reps and (len(samples[k]) < min_reps or spent < budget)

    while todo := [k for k in fns if needed(k)]:
        order.shuffle(todo)
        for k in todo:
            t0 = time.perf_counter()
            fns[k]()
            pending[k].append(time.perf_counter() - t0)
            if len(pending[k]) == per_sample[k]:
                samples[k].append(float(np.mean(pending[k])))
                pending[k] = []
    return {k: float(stat(v)) * 1e3 for k, v in samples.items()}


_PER_SAMPLE, _SAMPLE_SECONDS = 20, 1e-3


def _first_ms(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def _block(x):
    """Wait for fjax/JAX results (torch CPU results are ready when returned)."""
    leaves = jax.tree_util.tree_leaves(x, is_leaf=lambda t: isinstance(t, fjax.Tensor))
    for leaf in leaves:
        if isinstance(leaf, fjax.Tensor):
            leaf._data.block_until_ready()
        elif isinstance(leaf, jax.Array):
            leaf.block_until_ready()
    return x


def _problem(n: int, seed: int):
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    w2 = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    v = rng.standard_normal(n).astype(np.float32)
    return w1, w2, x, v


def _cases(n: int, seed: int):
    """Per row: callables for every column (None where the peer has no such function)."""
    w1, w2, x, v = _problem(n, seed)
    W1, W2, X, V = (fjax.tensor(a) for a in (w1, w2, x, v))
    tw1, tw2, tx, tv = (torch.tensor(a) for a in (w1, w2, x, v))
    jw1, jw2, jx, jv = (jnp.asarray(a) for a in (w1, w2, x, v))

    def g(x):
        return fjax.tanh(W2 @ fjax.tanh(W1 @ x))

    def f(x):
        return g(x).sum()

    def tg(x):
        return torch.tanh(tw2 @ torch.tanh(tw1 @ x))

    def tf(x):
        return tg(x).sum()

    def jg(x):
        return jnp.tanh(jw2 @ jnp.tanh(jw1 @ x))

    def jf(x):
        return jg(x).sum()

    def grad_and_value(x):
        value, grad = jax.value_and_grad(jf)(x)
        return grad, value

    # the peers compute what fjax returns: hvp and vhp give (f(x), product), as torch's API does
    @jax.jit
    def hvp_j(x, v):
        _, hv, value = jax.jvp(grad_and_value, (x,), (v,), has_aux=True)
        return value, hv

    @jax.jit
    def vhp_j(x, v):
        _, pull, value = jax.vjp(grad_and_value, x, has_aux=True)
        return value, pull(v)[0]

    jac_j = jax.jit(jax.jacrev(jg))
    hes_j = jax.jit(jax.hessian(jf))
    grad_j = jax.jit(jax.grad(jf))
    f_grad = FF.grad(f)
    return {
        "func.grad": dict(  # torch.func's API; "torch AF" is torch.autograd.functional.vjp of f
            fjax=lambda: f_grad(X),
            fresh=lambda: FF.grad(lambda x: fjax.tanh(W2 @ fjax.tanh(W1 @ x)).sum())(X),
            taf=lambda: TAF.vjp(tf, tx)[1],
            taf_vec=None,
            tfunc=lambda: TF.grad(tf)(tx),
            jax=lambda: grad_j(jx),
        ),
        "AF.vjp of f": dict(  # the same gradient through torch.autograd.functional's API
            fjax=lambda: FAF.vjp(f, X)[1],
            fresh=lambda: FAF.vjp(lambda x: fjax.tanh(W2 @ fjax.tanh(W1 @ x)).sum(), X)[1],
            taf=lambda: TAF.vjp(tf, tx)[1],
            taf_vec=None,
            tfunc=lambda: TF.grad(tf)(tx),
            jax=lambda: grad_j(jx),
        ),
        "jacobian": dict(
            fjax=lambda: FAF.jacobian(g, X),
            fresh=lambda: FAF.jacobian(lambda x: fjax.tanh(W2 @ fjax.tanh(W1 @ x)), X),
            taf=lambda: TAF.jacobian(tg, tx),
            taf_vec=lambda: TAF.jacobian(tg, tx, vectorize=True),
            tfunc=lambda: TF.jacrev(tg)(tx),
            jax=lambda: jac_j(jx),
        ),
        "hessian": dict(
            fjax=lambda: FAF.hessian(f, X),
            fresh=lambda: FAF.hessian(lambda x: fjax.tanh(W2 @ fjax.tanh(W1 @ x)).sum(), X),
            taf=lambda: TAF.hessian(tf, tx),
            taf_vec=lambda: TAF.hessian(tf, tx, vectorize=True),
            tfunc=lambda: TF.hessian(tf)(tx),
            jax=lambda: hes_j(jx),
        ),
        "hvp": dict(
            fjax=lambda: FAF.hvp(f, X, V),
            fresh=lambda: FAF.hvp(lambda x: fjax.tanh(W2 @ fjax.tanh(W1 @ x)).sum(), X, V),
            taf=lambda: TAF.hvp(tf, tx, tv),
            taf_vec=None,
            tfunc=lambda: TF.jvp(TF.grad(tf), (tx,), (tv,))[1],
            jax=lambda: hvp_j(jx, jv),
        ),
        "vhp": dict(
            fjax=lambda: FAF.vhp(f, X, V),
            fresh=lambda: FAF.vhp(lambda x: fjax.tanh(W2 @ fjax.tanh(W1 @ x)).sum(), X, V),
            taf=lambda: TAF.vhp(tf, tx, tv),
            taf_vec=None,
            tfunc=lambda: TF.vjp(TF.grad(tf), tx)[1](tv)[0],
            jax=lambda: vhp_j(jx, jv),
        ),
    }


def _check(name: str, c: dict) -> None:
    """The numbers compared must agree (fjax vs torch.func vs jax) before they are timed."""
    ours, peer = _block(c["fjax"]()), c["jax"]()
    if isinstance(ours, tuple):  # hvp/vhp: (f(x), product)
        np.testing.assert_allclose(np.asarray(peer[0]), ours[0].numpy(), rtol=1e-5, err_msg=name)
        ours, peer = ours[1], peer[1]
    theirs = c["tfunc"]().detach().numpy()
    np.testing.assert_allclose(np.asarray(ours._data), theirs, rtol=2e-3, atol=2e-4, err_msg=name)
    np.testing.assert_allclose(np.asarray(peer), theirs, rtol=2e-3, atol=2e-4, err_msg=name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--budget", type=float, default=0.5, help="seconds of repeats per cell")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    parser.add_argument(
        "--stat", choices=["median", "min"], default="median", help="min: best of the repeats, for a busy machine"
    )
    parser.add_argument(
        "--sync-dispatch",
        action="store_true",
        help="turn JAX's asynchronous CPU dispatch off for every column: each call then runs to "
        "completion before returning, which shows fjax's per-call Python plainly (with async "
        "dispatch it overlaps XLA's work, and the thread hand-offs make N=100 timings bimodal)",
    )
    args = parser.parse_args()
    if args.sync_dispatch:
        jax.config.update("jax_cpu_enable_async_dispatch", False)  # before the CPU client exists

    print(f"# fjax functional autodiff benchmark, {datetime.datetime.now():%Y-%m-%d %H:%M}")
    print(
        f"# {platform.node()}: {platform.processor() or platform.machine()}, jax {jax.__version__} "
        f"on {jax.devices()[0].platform}, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"seed {args.seed}{', async dispatch off' if args.sync_dispatch else ''}"
    )
    print(f"# {args.stat}s of sample means (up to 20 interleaved calls each) in ms; fjax/jax: fjax repeated over")
    print("# raw jitted JAX; AF/fjax: torch.autograd.functional (vectorize=False) over fjax repeated; func/fresh:")
    print("# torch.func over fjax with a fresh lambda per call")
    cols = ["fjax first", "fjax", "fjax fresh", "torch AF", "AF vector", "torch.func", "jax"]
    header = f"{'row':<18}" + "".join(f"{c:>12}" for c in cols) + f"{'fjax/jax':>10}{'AF/fjax':>10}{'func/fresh':>11}"
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        for name, c in _cases(n, args.seed).items():
            FAF.cache_clear()
            first = _first_ms(lambda c=c: _block(c["fjax"]()))  # noqa: B023
            _check(name, c)
            stat = np.median if args.stat == "median" else np.min
            timed = {}
            for group in _GROUPS:  # JAX's columns, then torch's: see _GROUPS
                fns = {k: (lambda fn=fn: _block(fn())) for k, fn in c.items() if fn and k in group}
                timed.update(_medians_ms(fns, args.budget, stat))
            t = {k: timed.get(k, float("nan")) for k in c}
            cells = [first, t["fjax"], t["fresh"], t["taf"], t["taf_vec"], t["tfunc"], t["jax"]]
            row = f"{name + ' N=' + str(n):<18}" + "".join(f"{v:>12.3f}" for v in cells)
            row += f"{t['fjax'] / t['jax']:>10.2f}{t['taf'] / t['fjax']:>10.1f}{t['tfunc'] / t['fresh']:>11.2f}"
            print(row, flush=True)


if __name__ == "__main__":
    main()
