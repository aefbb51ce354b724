"""Train the small GPT of gpt.py under a mesh configuration given on the command line.

    python examples/gpt_mesh.py --mesh dp_tp --steps 50
    python examples/gpt_mesh.py --mesh my_mesh.yaml      # or .json: {"mesh": {"data": 4, "model": 2}, ...}

``--mesh`` is a preset of gpt.py (dp, zero1, zero3, tp, dp_tp), a JSON/YAML file, or ``none``
(one device, no mesh). The model code is the same in every case; only the config changes.
Without an accelerator the script runs on 8 virtual CPU devices (it sets XLA_FLAGS itself,
before JAX starts, unless you set it).
"""

from __future__ import annotations

import glob
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", "") and not glob.glob("/dev/nvidia[0-9]*"):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from gpt import GPT, PRESETS, TrainGraph  # noqa: E402
from tqdm import tqdm  # noqa: E402

import fjax  # noqa: E402
from fjax.distributed.mesh import MeshConfig  # noqa: E402


def batches(rng: np.random.Generator, batch: int, seq: int, vocab: int):
    """Endless synthetic batches: each sequence counts up by its own stride (mod vocab)."""
    while True:
        start = rng.integers(0, vocab, (batch, 1))
        stride = rng.integers(1, 4, (batch, 1))
        tokens = (start + stride * np.arange(seq + 1)) % vocab
        yield fjax.tensor(tokens[:, :-1]), fjax.tensor(tokens[:, 1:])


def load_mesh(name: str):
    """A preset name, a JSON/YAML path, or ``none``."""
    if name == "none":
        return None
    if name in PRESETS:
        return MeshConfig.load(PRESETS[name])
    if os.path.exists(name):
        return MeshConfig.load(name)
    raise SystemExit(f"gpt_mesh.py: --mesh {name!r} is neither a preset {sorted(PRESETS)}, 'none', nor a file")


def main(argv=None) -> list[float]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mesh", default="dp", help="preset name, JSON/YAML path, or none")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    mesh = load_mesh(args.mesh)
    fjax.manual_seed(args.seed)
    model = GPT(vocab=args.vocab, dim=args.dim, heads=args.heads, layers=args.layers, max_len=args.seq)
    graph = TrainGraph(model, args.lr, mesh)
    where = "1 device" if mesh is None else f"mesh {mesh.axes} ({len(mesh.mesh.devices.flat)} devices)"
    n_params = sum(p.numel() for p in model.parameters())
    print(f"GPT with {n_params} parameters on {where}; config {args.mesh}", flush=True)

    data = batches(np.random.default_rng(args.seed), args.batch, args.seq, args.vocab)
    losses = []
    start = time.perf_counter()
    with tqdm(range(1, args.steps + 1), desc="train", unit="step") as bar:
        for step in bar:
            loss = graph(*next(data)).item()
            losses.append(loss)
            if step == 1:
                compile_s = time.perf_counter() - start
                memory = graph.memory_report()
                tqdm.write(
                    f"compiled in {compile_s:.1f} s; per device: {memory.get('argument_bytes', 0) / 2**10:.0f} KiB "
                    f"arguments, {memory.get('temp_bytes', 0) / 2**10:.0f} KiB temporaries"
                )
            bar.set_postfix(loss=f"{loss:.4f}")
            tqdm.write(f"step {step}/{args.steps} loss {loss:.4f}")
    if model.head.weight.is_global:
        print(f"head.weight sbp: {model.head.weight.sbp}; blocks.0.fc1.weight sbp: {model.blocks[0].fc1.weight.sbp}")
    print(json.dumps({"config": args.mesh, "first_loss": losses[0], "last_loss": losses[-1]}))
    return losses


if __name__ == "__main__":
    main()
