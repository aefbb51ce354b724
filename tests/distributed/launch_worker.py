"""Data-parallel training for test_launch.py: run under the launcher, or imported for the 1-process run.

Under ``python -m fjax.distributed.launch --nproc_per_node 2 launch_worker.py OUT`` each process
feeds its half of every batch (``to_global`` from the local shard), trains through nn.Graph with
a DP mesh over both processes' devices, then all processes write one sharded checkpoint.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

import fjax
import fjax.env
import fjax.nn as nn
import fjax.optim as optim
from fjax.distributed import checkpoint

BATCH, STEPS = 8, 4


class TrainGraph(nn.Graph):
    def __init__(self, model, mesh):
        super().__init__()
        self.model = model
        self.add_optimizer(optim.AdamW(model.parameters(), lr=1e-2))
        if mesh is not None:
            self.config.set_mesh(mesh)

    def build(self, x, y):
        loss = nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


def make_graph(world: int) -> TrainGraph:
    fjax.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    return TrainGraph(model, {"mesh": {"data": world}} if world > 1 else None)


def batches(seed: int):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((BATCH, 8)).astype(np.float32), rng.integers(0, 4, BATCH)) for _ in range(STEPS)]


def train(graph: TrainGraph, seed: int, rank: int = 0, world: int = 1) -> list[float]:
    """Every process gives the graph only its rows of each batch; the mesh makes them one batch."""
    losses = []
    lo, hi = rank * BATCH // world, (rank + 1) * BATCH // world
    for x, y in batches(seed):
        x, y = fjax.tensor(x[lo:hi]), fjax.tensor(y[lo:hi])
        if world > 1:
            x = x.to_global(graph.config.mesh.placement, fjax.sbp.split(0))
            y = y.to_global(graph.config.mesh.placement, fjax.sbp.split(0))
        losses.append(graph(x, y).item())
    return losses


def rank_rows(rank: int) -> np.ndarray:
    """The rows process ``rank`` holds of a tensor split over the processes."""
    return np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * rank


def main(out: str, seed: int) -> None:
    rank, world = fjax.env.get_rank(), fjax.env.get_world_size()
    graph = make_graph(world)
    losses = train(graph, seed, rank, world)
    shards = fjax.tensor(rank_rows(rank)).to_global(graph.config.mesh.placement, fjax.sbp.split(0))
    checkpoint.save(os.path.join(out, "ckpt"), {"graph": graph, "shards": shards}, step=STEPS)
    report = {
        "rank": rank,
        "world": world,
        "devices": len(fjax.placement.all("cpu").ranks),
        "local_devices": len(shards._data.addressable_shards),
        "losses": losses,
    }
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(report, f)
    params = {k: v.numpy() for k, v in graph.model.state_dict().items()}
    np.savez(os.path.join(out, f"params{rank}.npz"), **params)


if __name__ == "__main__":
    if sys.argv[1] == "--fail":  # rank 1 fails at once; rank 0 would run for a minute
        with open(os.path.join(sys.argv[2], f"pid{fjax.env.get_rank()}"), "w") as f:
            f.write(str(os.getpid()))
        if fjax.env.get_rank() == 1:
            raise SystemExit(3)
        import time

        time.sleep(60)
    else:
        main(sys.argv[1], int(sys.argv[2]))
