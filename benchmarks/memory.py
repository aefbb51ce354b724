"""Peak memory of a training step: torch eager, fjax eager, fjax nn.Graph with each checkpoint
policy and with a memory budget; and the graph's attributed memory report.

    python benchmarks/memory.py [--models transformer lstm] [--budget-fraction 0.8]

For a small Transformer (2 encoder layers, d_model 128, 4 heads, feed-forward 512, batch 16 x 64
tokens, Adam) and an LSTM (2 layers, 64 -> 256, batch 32 x 50 steps, Adam), one training step
(forward, loss, backward, optimizer update) after a warm-up step, on the CPU:

- **torch eager**: the bytes of the tensors alive before the step (parameters, gradients,
  optimizer state, inputs) plus the peak of the bytes allocated and not yet freed during the
  step, from the allocation and free events (``[memory]``, ``nbytes``) that
  ``torch.profiler.profile(profile_memory=True)`` records, in time order;
- **fjax eager**: ``fjax.cuda.reset_peak_memory_stats()`` then ``max_memory_allocated()`` after
  the step (live-array accounting on the CPU: sampled at each backward's start and end, and
  before each fused segment with what its compiled program allocates: temporaries and results);
- **fjax nn.Graph**: XLA's predicted peak of the compiled step (``memory_report()['peak_bytes']``:
  arguments + outputs not written in place + temporaries + code) with no checkpointing, with
  each policy on every block (``GraphModule.activation_checkpointing``), and with
  ``config.memory_budget(fraction x the no-policy peak)``, which reports the blocks it chose.

The ratio column is each row over torch eager. The graph rows run with
``XLA_FLAGS=--xla_cpu_enable_concurrency_optimized_scheduler=false`` (set here before JAX loads
unless XLA_FLAGS is already set): XLA:CPU's default scheduler moves recomputation next to the
forward pass, which gives the savings back (see ``GraphModule``).

``--resources`` prints, instead, what eager mode keeps over a run (issues 36 and 37):

- **tape**: the bytes the eager tape of a 4-layer MLP (256 x 128, each activation) holds before
  backward, against the bytes torch's backward saves (``saved_tensors_hooks``);
- **detached**: device arrays alive after 2,000 forwards that keep only ``loss.detach()``,
  beyond those 2,000 scalars and the parameters and inputs (``jax.live_arrays()``);
- **per shape**: process memory (RSS) added per new input shape over 200 shapes, fjax eager
  (fused and op by op) against raw ``jax.jit`` of the same ops, each in a fresh process;
- **train step**: the RSS high-water mark of one step of the Transformer and the LSTM above the
  step's start (so parameters, optimizer state and inputs are not in it), fjax against torch;
- **chain peak**: the RSS high-water mark of one forward and backward over 8 layers of
  2048 x 1024 activations above the step's start, plus parameters and input, fjax against torch
  (fresh processes run with ``MALLOC_MMAP_THRESHOLD_=65536``: every large buffer is its own
  mapping, so RSS follows the live bytes; torch's figure matches its profiler's).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import warnings

_USER_XLA_FLAGS = os.environ.get("XLA_FLAGS")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_enable_concurrency_optimized_scheduler=false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import fjax  # noqa: E402
import fjax.nn as fnn  # noqa: E402
import fjax.nn.functional as F  # noqa: E402

POLICIES = [True, "dots_saveable", "dots_with_no_batch_dims_saveable", "nothing_saveable"]


# -- models: the same architecture in both frameworks ---------------------------------------------
def transformer(nn, d=128, heads=4, ff=512, layers=2, vocab=1000):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(
                [nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True) for _ in range(layers)]
            )
            self.head = nn.Linear(d, vocab)

        def forward(self, x):
            h = self.embed(x)
            for layer in self.layers:
                h = layer(h)
            return self.head(h)

    return Net()


def lstm(nn, inp=64, hidden=256, layers=2):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(
                [nn.LSTM(inp if i == 0 else hidden, hidden, batch_first=True) for i in range(layers)]
            )
            self.head = nn.Linear(hidden, inp)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)[0]
            return self.head(x)

    return Net()


MODELS = {
    # name: (builder, input maker (rng, lib) -> (x, y), loss)
    "transformer": (
        transformer,
        lambda r: (r.integers(0, 1000, (16, 64)), r.integers(0, 1000, (16, 64))),
        "ce",
    ),
    "lstm": (
        lstm,
        lambda r: (
            r.standard_normal((32, 50, 64)).astype(np.float32),
            r.standard_normal((32, 50, 64)).astype(np.float32),
        ),
        "mse",
    ),
}


def _loss(lib_f, out, y, kind):
    if kind == "ce":
        return lib_f.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return lib_f.mse_loss(out, y)


# -- torch eager ------------------------------------------------------------------------------------
def _tensor_bytes(ts) -> int:
    seen, total = set(), 0
    for t in ts:
        if t is None or t.data_ptr() in seen:
            continue
        seen.add(t.data_ptr())
        total += t.numel() * t.element_size()
    return total


def train_step(lib, name, x, y):
    """Model ``name`` built on ``lib`` (torch or fjax) from seed 0, its Adam, the inputs as
    ``lib`` tensors, and ``step()``: one training step returning its loss (not read)."""
    build, _, kind = MODELS[name]
    lib.manual_seed(0)
    model = build(lib.nn)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    xs, ys = lib.tensor(x), lib.tensor(y)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = _loss(lib.nn.functional, model(xs), ys, kind)
        loss.backward()
        opt.step()
        return loss

    return step, model, opt, xs, ys


def torch_peak(name, x, y) -> int:
    step, model, opt, xt, yt = train_step(torch, name, x, y)
    step()  # optimizer state and gradients exist from here on
    state = [s for st in opt.state.values() for s in st.values() if torch.is_tensor(s)]
    base = _tensor_bytes([*model.parameters(), *(p.grad for p in model.parameters()), *state, xt, yt])
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]")
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return base + peak


# -- fjax -------------------------------------------------------------------------------------------------
def fjax_eager_peak(name, x, y) -> int:
    step = train_step(fjax, name, x, y)[0]
    step().item()
    fjax.cuda.reset_peak_memory_stats()
    step().item()
    return fjax.cuda.max_memory_allocated()


def _graph(name, policy=None, budget=None):
    build, _, kind = MODELS[name]
    fjax.manual_seed(0)
    model = build(fnn)

    class Train(fnn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(fjax.optim.Adam(model.parameters(), lr=1e-3))
            if policy is not None:
                for i in range(len(model.layers)):
                    self.model.layers[i].to(fnn.graph.GraphModule).activation_checkpointing = policy
            if budget is not None:
                self.config.memory_budget(budget)

        def build(self, x, y):
            loss = _loss(F, self.model(x), y, kind)
            loss.backward()
            return loss

    return Train()


def graph_row(name, x, y, policy=None, budget=None):
    g = _graph(name, policy, budget)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss = g(fjax.tensor(x), fjax.tensor(y)).item()
    report = g.memory_report()
    warned = any("saves no memory" in str(w.message) for w in caught)
    return report, loss, warned


def run(names, fraction):
    rows, tables = {name: [] for name in names}, {}
    inputs = {name: MODELS[name][1](np.random.default_rng(0)) for name in names}
    # the eager rows first: fjax's eager figure counts every live array of the device, and the
    # graphs built below keep theirs (compiled steps, parameters) alive for the rest of the run
    for name in names:
        x, y = inputs[name]
        rows[name].append((name, "torch eager", torch_peak(name, x, y), ""))
        rows[name].append((name, "fjax eager", fjax_eager_peak(name, x, y), ""))
    for name in names:
        x, y = inputs[name]
        base, loss0, _ = graph_row(name, x, y)
        rows[name].append((name, "fjax nn.Graph, no checkpointing", base["peak_bytes"], ""))
        tables[name] = base
        lowest = base["peak_bytes"]
        for policy in POLICIES:
            rep, loss, warned = graph_row(name, x, y, policy=policy)
            note = "warned: saves nothing" if warned else ""
            if abs(loss - loss0) > 1e-4 * max(1.0, abs(loss0)):
                note += f" LOSS DIFFERS {loss} vs {loss0}"
            rows[name].append((name, f"fjax nn.Graph, every layer {policy!r}", rep["peak_bytes"], note))
            if policy is True:
                lowest = rep["peak_bytes"]
        # ``fraction`` of the plain step's peak, and a budget halfway between recomputing every
        # block and none, which the step can meet only by choosing some blocks
        for budget in dict.fromkeys([int(base["peak_bytes"] * fraction), (base["peak_bytes"] + lowest) // 2]):
            try:
                rep, _, _ = graph_row(name, x, y, budget=budget)
                chosen = ", ".join(rep.get("checkpointing") or []) or "nothing"
                fits = "fits" if rep["peak_bytes"] <= budget else "OVER"
                rows[name].append(
                    (name, f"fjax nn.Graph, memory_budget({budget})", rep["peak_bytes"], f"{fits}; recomputes {chosen}")
                )
                tables.setdefault(f"{name} with the budget", rep)
            except fjax.errors.OpError as e:
                rows[name].append((name, f"fjax nn.Graph, memory_budget({budget})", 0, f"error: {e}"))
    return [row for name in names for row in rows[name]], tables


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--budget-fraction", type=float, default=0.8)
    parser.add_argument("--plot", help="also draw the peaks as a bar chart into this PNG file (matplotlib)")
    parser.add_argument("--resources", action="store_true", help="eager tape, leaks and per-shape memory instead")
    args = parser.parse_args(argv)
    torch.set_num_threads(os.cpu_count() or 1)
    if args.resources:
        return resources()
    rows, tables = run(args.models, args.budget_fraction)
    print(f"# peak memory of one training step, {platform.node()} ({os.cpu_count()} CPUs), {datetime.date.today()}")
    print(f"# fjax {fjax.__version__}, torch {torch.__version__}, XLA_FLAGS={os.environ.get('XLA_FLAGS')}")
    print(f"{'model':<12} {'run':<52} {'MiB':>9} {'/ torch':>8}  note")
    torch_of = {r[0]: r[2] for r in rows if r[1] == "torch eager"}
    for name, what, nbytes, note in rows:
        ratio = nbytes / torch_of[name] if torch_of.get(name) else float("nan")
        print(f"{name:<12} {what:<52} {nbytes / 2**20:9.2f} {ratio:8.2f}  {note}")
    for name, report in tables.items():
        print(f"\n## {name}: nn.Graph memory_report()\n{report}")
    if args.plot:
        plot(rows, args.plot)
    return 0


# -- --resources: what eager mode keeps over a run ---------------------------------------------------
ACTIVATIONS = {
    "relu": lambda lib, z: z.relu(),
    "tanh": lambda lib, z: z.tanh(),
    "sigmoid": lambda lib, z: z.sigmoid(),
    "gelu": lambda lib, z: lib.nn.functional.gelu(z),
    "silu": lambda lib, z: lib.nn.functional.silu(z),
    "layer_norm+relu": lambda lib, z: lib.nn.functional.layer_norm(z, (z.shape[-1],)).relu(),
    "softmax": lambda lib, z: z.softmax(-1),
    "x + ones (a constant)": lambda lib, z: z + lib.ones(*z.shape),
}


def _mlp(lib, x, ws, act):
    h = x
    for w in ws:
        h = ACTIVATIONS[act](lib, h @ w)
    return (h * h).mean()


def tape_bytes(act, rows=256, width=128, layers=4):
    """(bytes fjax's tape holds before backward, bytes torch's backward saves)."""
    import jax

    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((rows, width)).astype(np.float32)
    ws = [(rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32) for _ in range(layers)]
    saved = {}

    def pack(t):
        if t.dim():
            saved[t.data_ptr()] = t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        _mlp(torch, torch.tensor(x0), [torch.tensor(w, requires_grad=True) for w in ws], act)
    loss = _mlp(fjax, fjax.tensor(x0), [fjax.tensor(w, requires_grad=True) for w in ws], act)
    fjax.sync()
    held, stack, seen = {}, [loss._node], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for a in [*jax.tree_util.tree_leaves(node.vjp), *node.inputs]:
            if isinstance(a, jax.Array) and a.ndim:
                held[a.unsafe_buffer_pointer()] = a.nbytes
        stack.extend(node.parents())
    return sum(held.values()), sum(saved.values())


def detached_extra(steps=2000) -> int:
    """Device arrays alive after ``steps`` training steps that keep ``loss.detach()``, beyond those."""
    import gc

    import jax

    fjax.manual_seed(0)
    model = fnn.Sequential(fnn.Linear(32, 64), fnn.ReLU(), fnn.Linear(64, 1))
    opt = fjax.optim.Adam(model.parameters(), lr=1e-3)
    x, t = fjax.randn(16, 32), fjax.randn(16, 1)

    def live():
        fjax.sync()
        gc.collect()
        return len(jax.live_arrays())

    def step():
        opt.zero_grad()
        loss = F.mse_loss(model(x), t)
        loss.backward()
        opt.step()
        return loss.detach()

    step()
    base = live()
    kept = [step() for _ in range(steps)]
    return live() - base - len(kept)


_SHAPES_CODE = """
import gc, sys
which, n = sys.argv[1], int(sys.argv[2])
def rss():
    gc.collect()
    return int(open("/proc/self/statm").read().split()[1]) * 4096
if which == "jax.jit":
    import jax, jax.numpy as jnp
    f = jax.jit(jax.value_and_grad(lambda w, x: jnp.tanh(x @ w + 1.0).sum()))
    w = jnp.ones((16, 16))
    def run(k):
        f(w, jnp.ones((k, 16)))[0].block_until_ready()
else:
    import fjax
    fjax.config.bucketing = False  # every shape its own programs: the cache's work
    fjax.config.eager_fusion = which == "fjax eager"
    w = fjax.ones(16, 16, requires_grad=True)
    def run(k):
        y = (fjax.ones(k, 16) @ w + 1.0).tanh().sum()
        y.backward()
        w.grad = None
        y.item()
for k in range(1, 21):
    run(k)
r0 = rss()
for k in range(21, 21 + n):
    run(k)
print((rss() - r0) / n)
"""

_CHAIN_CODE = """
import os, sys, numpy as np
which, act = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from memory import ACTIVATIONS
B, D, L = 2048, 1024, 8
rng = np.random.default_rng(0)
ws = [(rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32) for _ in range(L)]
x0 = rng.standard_normal((B, D)).astype(np.float32)
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
if which == "torch":
    import torch
    torch.set_num_threads(os.cpu_count() or 1)
    lib, W, x = torch, [torch.tensor(w, requires_grad=True) for w in ws], torch.tensor(x0)
    def done():
        pass
else:
    import fjax
    fjax.config.eager_fusion = which == "fjax eager"
    lib, W, x = fjax, [fjax.tensor(w, requires_grad=True) for w in ws], fjax.tensor(x0)
    def done():
        for w in W:
            w.grad._data.block_until_ready()
def step():
    h = x
    for w in W:
        h = ACTIVATIONS[act](lib, h @ w)
    (h * h).mean().backward()
    done()
    for w in W:
        w.grad = None
for _ in range(3):
    step()
import gc; gc.collect()
if which != "torch":
    fjax.sync()
r0 = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")  # restart the high-water mark here
step()
print(status("VmHWM") - r0 + sum(w.nbytes for w in ws) + x0.nbytes)
sys.stdout.flush()
os._exit(0)  # (skip teardown)
"""


_STEP_CODE = """
import os, sys
which, name = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
import numpy as np
import memory as m
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
x, y = m.MODELS[name][1](np.random.default_rng(0))
if which == "torch":
    train = m.train_step(m.torch, name, x, y)[0]
    def step():
        train().item()
else:
    m.fjax.config.eager_fusion = which == "fjax eager"
    train = m.train_step(m.fjax, name, x, y)[0]
    def step():
        train().item()
        m.fjax.sync()
for _ in range(3):
    step()
import gc; gc.collect()
r0 = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")
step()
print(status("VmHWM") - r0)
sys.stdout.flush()
os._exit(0)
"""


def _subprocess(code, *args, env=None) -> float:
    """Run ``code`` in a fresh process; its last printed number. Eager mode runs with XLA's own
    flags (the graph rows' scheduler flag, set at this module's import, is not passed on)."""
    import subprocess

    env = {**os.environ, "XLA_FLAGS": _USER_XLA_FLAGS or "", **(env or {})}
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=900, env=env)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return float(out.stdout.split()[-1])


def resources() -> int:
    MiB = 2**20
    print(f"# eager resources, {platform.node()} ({os.cpu_count()} CPUs), {datetime.date.today()}")
    print(f"# fjax {fjax.__version__}, torch {torch.__version__}")
    print("\n## tape: bytes held for backward by a 4-layer MLP (256 x 128), fjax's tape / torch's saved tensors")
    for act in ACTIVATIONS:
        f, t = tape_bytes(act)
        print(f"{act:<24} fjax {f / MiB:7.2f} MiB   torch {t / MiB:7.2f} MiB   ratio {f / t:5.2f}")
    print("\n## detached outputs: device arrays alive after 2,000 steps keeping loss.detach(), beyond those")
    print(f"extra arrays: {detached_extra()}")
    print("\n## per shape: process memory added per new input shape (200 shapes, tanh(x @ w + 1).sum() and its grad)")
    base = _subprocess(
        _SHAPES_CODE, "jax.jit", "200", env={"FJAX_COMPILATION_CACHE": "0", "JAX_ENABLE_COMPILATION_CACHE": "0"}
    )
    print(f"{'raw jax.jit (value_and_grad)':<32} {base / MiB:6.2f} MiB")
    for which in ("fjax eager", "fjax eager, op by op"):
        b = _subprocess(_SHAPES_CODE, which, "200", env={"FJAX_COMPILATION_CACHE": "0"})
        print(f"{which:<32} {b / MiB:6.2f} MiB   / jax.jit {b / base:5.2f}")
    print("\n## train step: RSS high-water of one step above its start (Adam; parameters, state, inputs excluded)")
    here = os.path.dirname(os.path.abspath(__file__))
    env = {"MALLOC_MMAP_THRESHOLD_": "65536"}
    for name in MODELS:
        t = _subprocess(_STEP_CODE, "torch", name, here, env=env)
        cells = [f"torch {t / MiB:6.1f} MiB"]
        for which in ("fjax eager", "fjax eager, op by op"):
            f = _subprocess(_STEP_CODE, which, name, here, env=env)
            cells.append(f"{which} {f / MiB:6.1f} MiB ({f / t:4.2f}x)")
        print(f"{name:<18} " + "   ".join(cells))
    print("\n## chain peak: RSS high-water of forward + backward, 8 layers of 2048 x 1024 (8 MiB) activations")
    for act in ("relu", "tanh", "gelu", "layer_norm+relu"):
        t = _subprocess(_CHAIN_CODE, "torch", act, here, env=env)
        cells = [f"torch {t / MiB:6.1f} MiB"]
        for which in ("fjax eager", "fjax eager, op by op"):
            f = _subprocess(_CHAIN_CODE, which, act, here, env=env)
            cells.append(f"{which} {f / MiB:6.1f} MiB ({f / t:4.2f}x)")
        print(f"{act:<18} " + "   ".join(cells))
    return 0


def plot(rows, path) -> None:
    """One panel per model: a bar per run, its peak in MiB."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r[0] for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.5), squeeze=False)
    for ax, name in zip(axes[0], names):
        mine = [r for r in rows if r[0] == name and r[2]]
        labels = [r[1].replace("fjax nn.Graph, ", "graph: ").replace("every layer ", "") for r in mine]
        ax.barh(range(len(mine)), [r[2] / 2**20 for r in mine], color="tab:blue")
        ax.set_yticks(range(len(mine)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("peak MiB per training step")
        ax.set_title(name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
