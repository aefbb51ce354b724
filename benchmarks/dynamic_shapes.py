"""Shapes that change every step (issue 34): fjax (eager, under ``fjax.mock_torch``) vs torch eager.

    python benchmarks/dynamic_shapes.py [--tokens 256] [--steps 50] [--quick] [--why] [--torch-threads 1] [case ...]

Four programs, each written once below as plain PyTorch and run twice in this one process: once
against real torch and once under ``fjax.mock_torch`` (``import torch`` gives fjax):

- ``decode``: a 2-layer GPT (nanoGPT's model: d=64, 4 heads, vocabulary 65, block size 512) generating
  ``--tokens`` tokens greedily from an 8-token prompt, nanoGPT's ``generate``: the whole sequence
  runs again for each token and the new token is ``torch.cat``-ed on (the sequence grows by one).
- ``moe``: a noisy top-k (k=2) mixture of 4 experts: each expert gathers its routed rows
  (``nonzero`` of the routing), runs its MLP and ``index_add``-s its rows back, plus an
  importance loss; trained ``--steps`` steps with Adam (each expert's row count changes each step).
- ``varbatch``: an MLP trained ``--steps`` steps on batches whose size is drawn in [8, 64] each step.
- ``graph``: a 2-layer message-passing network over a new random graph each step: edges from
  ``adj.nonzero()``, messages gathered at the sources and ``index_add``-ed at the destinations.

Every step ends with a host read (``loss.item()``, or the new token's value: a decode loop that
checks for an end token), so each step's time is its wall-clock time. Each case first runs a
short warm-up on other random data (16 steps or tokens, 3 with ``--quick``; the decode loop's
warm-up generates up to the block size, lengths the measured run does not reach): the first call
of every op compiles there. Then the measured run, which meets sizes the warm-up did not see, then the same run again
(``repeat``: every shape now seen, so what is left is dispatch, not compiles). torch and fjax run
alternately, on the same numpy data and weights. fjax keeps its defaults (eager fusion on).

Columns: the median and the mean ms per step/token of the measured run for torch and fjax and
their ratio (the mean counts the steps that compile, the median shows the typical step), fjax's
XLA compiles per step (``fjax.profiler.compile_count()``), the ``repeat`` run's median, ratio and
compiles per step,
the deltas of ``fjax.profiler.fusion_stats()`` over the measured run (``bwd h/c``: backward fusion
hits/compiles; ``seg h/c``: forward segment hits/compiles), and the padding waste: padded
elements as a fraction of real ones, read from ``fjax.profiler.bucket_stats()`` (a dict with
``padded_elements`` and ``real_elements``) if fjax has it, else ``n/a``.

JAX's persistent compilation cache goes to a fresh temporary folder, so a second run of this
script measures the same compiles as the first (``--persistent-cache`` keeps fjax's default
folder). ``--why`` runs each case once more on fjax under ``fjax.profiler.profile``, on sizes not
seen before (other random data; the decode loop from a longer prompt), and prints the ops that
compiled most (the profiler runs the backward node by node, so its counts are those of an unfused
run).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# ----------------------------------------------------------------------------- the programs
# Plain PyTorch from here to the harness: this file is loaded once against torch and once under
# fjax.mock_torch. Weights and data come from numpy so both runs see the same numbers.


def init_from_numpy(model, rng):
    """Every parameter of ``model`` drawn from ``rng`` (LayerNorm weights 1, biases small)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                value = (1.0 if name.endswith("weight") else 0.0) + 0.02 * rng.standard_normal(p.shape)
            else:
                value = rng.standard_normal(p.shape) / math.sqrt(p.shape[-1])
            p.copy_(torch.from_numpy(np.asarray(value, np.float32)))


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.n_embd = n_head, n_embd
        mask = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        self.register_buffer("bias", mask)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size=65, block_size=512, n_layer=2, n_head=4, n_embd=64):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return self.lm_head(x[:, [-1], :])  # inference: the last position only


def decode(cfg, seed, steps):
    """nanoGPT's ``generate`` with greedy choice: yields once set up, then each new token."""
    rng = np.random.default_rng(seed)
    prompt = cfg.get("prompt", 8)
    model = GPT(block_size=cfg["block_size"])
    init_from_numpy(model, rng)
    model.eval()
    idx = torch.from_numpy(rng.integers(0, 65, size=(1, prompt)))
    yield None
    with torch.no_grad():
        for _ in range(steps):
            idx_cond = idx if idx.size(1) <= model.block_size else idx[:, -model.block_size :]
            logits = model(idx_cond)
            logits = logits[:, -1, :]
            idx_next = torch.argmax(logits, dim=-1, keepdim=True)
            idx = torch.cat((idx, idx_next), dim=1)
            yield idx_next


class NoisyTopKMoE(nn.Module):
    """Shazeer et al.'s noisily gated mixture of experts: top-k of (clean + noise * softplus)
    logits, softmax over the k kept, each expert run on its routed rows only."""

    def __init__(self, d, hidden, n_experts=4, k=2):
        super().__init__()
        self.k = k
        self.w_gate = nn.Parameter(torch.zeros(d, n_experts))
        self.w_noise = nn.Parameter(torch.zeros(d, n_experts))
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, d)) for _ in range(n_experts)]
        )

    def forward(self, x, noise):
        clean = x @ self.w_gate
        std = F.softplus(x @ self.w_noise) + 1e-2
        logits = clean + noise * std
        top_vals, top_idx = logits.topk(self.k, dim=1)
        gates = F.softmax(top_vals, dim=1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            rows, slot = (top_idx == e).nonzero(as_tuple=True)
            if rows.numel() == 0:
                continue
            y = expert(x[rows]) * gates[rows, slot].unsqueeze(1)
            out = out.index_add(0, rows, y)
        importance = torch.zeros_like(logits).scatter(1, top_idx, gates).sum(0)
        balance = importance.var() / (importance.mean() ** 2 + 1e-10)
        return out, balance


def moe(cfg, seed, steps):
    """A noisy top-k MoE layer regressing a fixed random teacher: yields once set up, then each loss."""
    rng = np.random.default_rng(seed)
    d, batch = cfg["moe_d"], cfg["moe_batch"]
    model = NoisyTopKMoE(d, 2 * d)
    init_from_numpy(model, rng)
    teacher = torch.from_numpy((rng.standard_normal((d, d)) / math.sqrt(d)).astype(np.float32))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    yield None
    for _ in range(steps):
        x = torch.from_numpy(rng.standard_normal((batch, d)).astype(np.float32))
        noise = torch.from_numpy(rng.standard_normal((batch, 4)).astype(np.float32))
        out, balance = model(x, noise)
        loss = F.mse_loss(out, torch.tanh(x @ teacher)) + 0.01 * balance
        opt.zero_grad()
        loss.backward()
        opt.step()
        yield loss


def varbatch(cfg, seed, steps):
    """An MLP classifier trained on batches of a random size in [8, 64]: yields once set up, then each loss."""
    rng = np.random.default_rng(seed)
    d = cfg["mlp_d"]
    model = nn.Sequential(nn.Linear(32, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 10))
    init_from_numpy(model, rng)
    teacher = rng.standard_normal((32, 10)).astype(np.float32)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    yield None
    for _ in range(steps):
        batch = int(rng.integers(8, 65))
        x_np = rng.standard_normal((batch, 32)).astype(np.float32)
        x, y = torch.from_numpy(x_np), torch.from_numpy((x_np @ teacher).argmax(1))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        yield loss


class MessagePassing(nn.Module):
    """Mean over the in-neighbours and the node itself, then a Linear: edges from ``adj.nonzero()``."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out)

    def forward(self, h, adj):
        src, dst = adj.nonzero(as_tuple=True)
        agg = torch.zeros_like(h).index_add_(0, dst, h[src])
        deg = torch.zeros(h.size(0)).index_add_(0, dst, torch.ones(src.size(0))) + 1
        return self.lin((agg + h) / deg.unsqueeze(1))


class GraphNet(nn.Module):
    def __init__(self, d_in, d_hidden, n_classes):
        super().__init__()
        self.mp1 = MessagePassing(d_in, d_hidden)
        self.mp2 = MessagePassing(d_hidden, n_classes)

    def forward(self, x, adj):
        return self.mp2(F.relu(self.mp1(x, adj)), adj)


def graph(cfg, seed, steps):
    """Node classification on a new random graph each step: yields once set up, then each loss."""
    rng = np.random.default_rng(seed)
    n = cfg["graph_nodes"]
    model = GraphNet(16, 32, 4)
    init_from_numpy(model, rng)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    yield None
    for _ in range(steps):
        x = torch.from_numpy(rng.standard_normal((n, 16)).astype(np.float32))
        y = torch.from_numpy(rng.integers(0, 4, size=n))
        density = float(rng.uniform(0.02, 0.08))
        adj = torch.from_numpy(rng.random((n, n)).astype(np.float32)) < density
        loss = F.cross_entropy(model(x, adj), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        yield loss


CASES = {"decode": (decode, "token"), "moe": (moe, "step"), "varbatch": (varbatch, "step"), "graph": (graph, "step")}
FULL = {"block_size": 512, "moe_d": 64, "moe_batch": 256, "mlp_d": 256, "graph_nodes": 128}
QUICK = {"block_size": 64, "moe_d": 16, "moe_batch": 32, "mlp_d": 32, "graph_nodes": 32}


# ----------------------------------------------------------------------------- the harness
# Used only when this file runs as a script (or from its test); everything above is the program.


def load(on_fjax: bool):
    """A fresh copy of this file's programs: against real torch, or under ``fjax.mock_torch``."""
    import importlib.util
    import sys

    import fjax.mock_torch as mock_torch

    name = "dynamic_shapes_on_fjax" if on_fjax else "dynamic_shapes_on_torch"
    spec = importlib.util.spec_from_file_location(name, __file__)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if on_fjax:
        with mock_torch.enable():
            spec.loader.exec_module(module)
    else:
        spec.loader.exec_module(module)
    return module


def _value(out):
    return out.tolist()  # a host read: the step's work is done when it returns


def _bucket_stats():
    import fjax

    fn = getattr(fjax.profiler, "bucket_stats", None)
    return dict(fn()) if callable(fn) else None


def run(module, case: str, cfg: dict, seed: int, steps: int, on_fjax: bool) -> dict:
    """One run of ``case`` from ``module`` (see ``load``): per-step seconds and values, and for fjax
    the compiles, fusion-stat deltas and bucket stats over the steps (setup excluded)."""
    import contextlib
    import time

    import fjax
    import fjax.mock_torch as mock_torch

    gen = getattr(module, case)(cfg, seed, steps)
    with mock_torch.enable() if on_fjax else contextlib.nullcontext():
        next(gen)  # model, data and optimizer built
        compiles, fusion, buckets = fjax.profiler.compile_count(), fjax.profiler.fusion_stats(), _bucket_stats()
        times, values = [], []
        start = time.perf_counter()
        for out in gen:
            values.append(_value(out))
            now = time.perf_counter()
            times.append(now - start)
            start = now
        result = {"times": times, "values": values}
        if on_fjax:
            after = fjax.profiler.fusion_stats()
            result["compiles"] = fjax.profiler.compile_count() - compiles
            result["fusion"] = {k: after[k] - fusion[k] for k in after if isinstance(after[k], int)}
            result["buckets"] = (buckets, _bucket_stats())
    return result


def _waste(buckets) -> str:
    before, after = buckets
    if before is None or after is None:
        return "n/a"
    padded = after.get("padded_elements", 0) - before.get("padded_elements", 0)
    real = after.get("real_elements", 0) - before.get("real_elements", 0)
    return f"{padded / real:.1%}" if real else "0.0%"


def _copy_outs(buckets, steps: int) -> str:
    """Padded values whose real block was copied out (``bucket_stats()["unpads"]``) per step."""
    before, after = buckets
    if before is None or after is None or "unpads" not in after:
        return "n/a"
    return f"{(after['unpads'] - before.get('unpads', 0)) / steps:.2f}"


def _warmup_cfg(case: str, cfg: dict, warmup: int) -> dict:
    """The warm-up's settings: the decode loop's warm-up ends at the block size, so its sequence
    lengths are not the measured run's."""
    return dict(cfg, prompt=cfg["block_size"] - warmup) if case == "decode" else cfg


def measure(case: str, cfg: dict, steps: int, warmup: int = 16, on_torch=None, on_fjax=None) -> dict:
    """The table row of ``case``: warm-up (seed 1), the measured run (seed 2) and its repeat,
    torch and fjax alternately."""
    import statistics

    on_torch = on_torch or load(False)
    on_fjax = on_fjax or load(True)
    for module, is_fjax in ((on_torch, False), (on_fjax, True)):
        run(module, case, _warmup_cfg(case, cfg, min(warmup, steps)), 1, min(warmup, steps), is_fjax)
    runs = {}
    for label in ("measured", "repeat"):
        for module, is_fjax in ((on_torch, False), (on_fjax, True)):
            runs[label, is_fjax] = run(module, case, cfg, 2, steps, is_fjax)
    ms = {key: 1e3 * statistics.median(r["times"]) for key, r in runs.items()}
    mean = {key: 1e3 * statistics.fmean(r["times"]) for key, r in runs.items()}
    fj = runs["measured", True]
    return {
        "case": case,
        "unit": CASES[case][1],
        "steps": steps,
        "torch_med": ms["measured", False],
        "fjax_med": ms["measured", True],
        "torch_mean": mean["measured", False],
        "fjax_mean": mean["measured", True],
        "compiles": fj["compiles"] / steps,
        "rep_compiles": runs["repeat", True]["compiles"] / steps,
        "torch_rep": ms["repeat", False],
        "fjax_rep": ms["repeat", True],
        "fusion": fj["fusion"],
        "waste": _waste(fj["buckets"]),
        "copy_outs": _copy_outs(fj["buckets"], steps),
        "same": fj["values"] == runs["measured", False]["values"] if case == "decode" else None,
    }


def _why(case, cfg, steps, warmup, on_fjax, top=10):
    """The ops that compiled most in ``case``'s measured fjax run (after a warm-up), under the profiler."""
    import fjax

    run(on_fjax, case, _warmup_cfg(case, cfg, min(warmup, steps)), 1, min(warmup, steps), True)
    fresh = dict(cfg, prompt=8 + steps) if case == "decode" else cfg  # lengths the measured run did not see
    with fjax.profiler.profile() as prof:
        run(on_fjax, case, fresh, 3, steps, True)
    rows = [r for r in prof.key_averages() if r.compile_count]
    rows.sort(key=lambda r: -r.compile_time_total)
    total = sum(r.compile_count for r in rows)
    print(f"\n{case}: {total} compiles in {steps} {CASES[case][1]}s under the profiler; top ops by compile time")
    print(f"  {'op':<32} {'compiles':>9} {'compile ms':>11} {'ms/compile':>11}")
    for r in rows[:top]:
        ms = r.compile_time_total / 1e3
        print(f"  {r.key[:32]:<32} {r.compile_count:>9} {ms:>11.0f} {ms / r.compile_count:>11.1f}")


def main(argv=None):
    import argparse
    import os
    import platform
    import tempfile
    import time

    import jax

    import fjax

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"cases to run, of {', '.join(CASES)} (default: all)")
    parser.add_argument("--tokens", type=int, default=256, help="tokens the decode loop generates")
    parser.add_argument("--steps", type=int, default=50, help="training steps of the other cases")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run in under 2 minutes")
    parser.add_argument("--why", action="store_true", help="also profile which ops compile in each case")
    parser.add_argument("--persistent-cache", action="store_true", help="keep fjax's compilation cache folder")
    parser.add_argument(
        "--torch-threads", type=int, default=1, help="torch's threads (1: steady on a small shared machine)"
    )
    args = parser.parse_args(argv)
    cases = args.cases or list(CASES)
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}: expected some of {', '.join(CASES)}")
    cfg = QUICK if args.quick else FULL
    tokens, steps = (min(args.tokens, 8), min(args.steps, 6)) if args.quick else (args.tokens, args.steps)
    warmup = 3 if args.quick else 16
    if not args.persistent_cache:
        fjax.config.compilation_cache = tempfile.mkdtemp(prefix="fjax-dynamic-shapes-")
    torch.set_num_threads(args.torch_threads)
    print(
        f"# {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), jax {jax.__version__} ({jax.default_backend()}), "
        f"eager_fusion={fjax.config.eager_fusion}"
    )
    print(f"# cfg {cfg}, decode {tokens} tokens, training {steps} steps; ms per step/token, measured run after warm-up")
    on_torch, on_fjax = load(False), load(True)
    head = (
        f"{'case':<9} {'unit':<5} {'torch med':>9} {'fjax med':>9} {'ratio':>7} {'torch mean':>10} {'fjax mean':>10}"
        f" {'ratio':>7} {'compiles':>8} {'rep fjax':>9} {'rep ratio':>9} {'rep comp':>8}"
        f"  {'fusion bwd h/c, seg h/c':<23} {'waste':>6} {'copy-outs':>9}"
    )
    print(head)
    rows = []
    for case in cases:
        n = tokens if case == "decode" else steps
        r = measure(case, cfg, n, warmup, on_torch=on_torch, on_fjax=on_fjax)
        rows.append(r)
        f = r["fusion"]
        fusion = f"{f['hits']}/{f['compiles']}, {f['segment_hits']}/{f['segment_compiles']}"
        print(
            f"{case:<9} {r['unit']:<5} {r['torch_med']:>9.3f} {r['fjax_med']:>9.2f}"
            f" {r['fjax_med'] / r['torch_med']:>7.0f}"
            f" {r['torch_mean']:>10.3f} {r['fjax_mean']:>10.2f} {r['fjax_mean'] / r['torch_mean']:>7.0f}"
            f" {r['compiles']:>8.2f} {r['fjax_rep']:>9.2f} {r['fjax_rep'] / r['torch_rep']:>9.1f}"
            f" {r['rep_compiles']:>8.2f}  {fusion:<23}"
            f" {r['waste']:>6} {r['copy_outs']:>9}",
            flush=True,
        )
        if r["same"] is False:
            print(f"  warning: {case}: fjax's tokens differ from torch's")
    if args.why:
        for case in cases:
            _why(case, cfg, tokens if case == "decode" else steps, warmup, on_fjax)
    return rows


if __name__ == "__main__":
    main()
