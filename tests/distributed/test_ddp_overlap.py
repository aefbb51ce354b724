"""DistributedDataParallel's bucketed gradient all-reduce overlapped with backward.

Buckets are checked against torch's own assignment function; two processes on this machine
(joined through jax.distributed, as in test_process_group.py) train with DDP with the overlap on
and off, with eager fusion on and off, and with the old one-all-reduce-per-parameter path:
gradients must be bit-identical where the local gradients are, equal to one process's
whole-batch gradients, and the all-reduces must be issued before the backward's last op.

Run as ``python -m tests.distributed.test_ddp_overlap worker OUT SEED`` (``ranks.run_ranks``) this file is one rank.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import sys

import numpy as np
import pytest

from .ranks import run_ranks

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))
WIDTH, DEPTH, CAP_MB = 32, 6, 0.004  # 4 KiB weights, 4 KiB buckets: one layer per bucket


def _model(nn):
    layers = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(WIDTH, WIDTH))  # one shape: one compile of each bucket program


def _data(seed: int, rows: int):
    rng = np.random.default_rng(seed)
    return [
        (rng.standard_normal((rows, WIDTH)).astype(np.float32), rng.standard_normal((rows, WIDTH)).astype(np.float32))
        for _ in range(2)
    ]


def test_bucket_assignment_matches_torch():
    import torch
    import torch.distributed as tdist

    import fjax
    from fjax.nn.parallel.reducer import compute_bucket_assignment

    rng = random.Random(SEED)
    for _ in range(20):
        shapes = [(rng.randint(1, 300),) * rng.randint(1, 2) for _ in range(rng.randint(1, 12))]
        dtypes = [rng.choice(["float32", "float64", "float16"]) for _ in shapes]
        limits = sorted(rng.sample(range(64, 200_000), rng.randint(1, 3)))
        ours = [fjax.zeros(*s, dtype=getattr(fjax, d)) for s, d in zip(shapes, dtypes)]
        ours = compute_bucket_assignment(ours, limits)
        theirs, _ = tdist._compute_bucket_assignment_by_size(
            [torch.zeros(*s, dtype=getattr(torch, d)) for s, d in zip(shapes, dtypes)], limits
        )
        assert ours == [list(b) for b in theirs], (shapes, dtypes, limits)
    with pytest.raises(ValueError, match="bucket size limits must be positive"):
        compute_bucket_assignment([fjax.zeros(2)], [0])


def test_reducer_buckets_reverse_order_small_first():
    import doctest

    import fjax
    from fjax import nn
    from fjax.nn.parallel import reducer
    from fjax.nn.parallel.reducer import FIRST_BUCKET_BYTES, Reducer

    assert doctest.testmod(reducer, extraglobs={"fjax": fjax, "nn": nn}).failed == 0

    model = nn.Sequential(*[nn.Linear(256, 256) for _ in range(20)])  # 256 KiB weights
    params = list(model.parameters())
    r = Reducer(params, world=1, bucket_cap_mb=2.0)
    assert [i for b in r.buckets for i in b] == list(range(len(params)))[::-1]
    sizes = [sum(params[i].numel() * 4 for i in b) for b in r.buckets]
    assert sizes[0] >= FIRST_BUCKET_BYTES and sizes[0] - params[r.buckets[0][-1]].numel() * 4 < FIRST_BUCKET_BYTES
    assert all(s < 2 * 1024 * 1024 + 256 * 256 * 4 for s in sizes) and len(sizes) > 2
    # world of one: marking every parameter ready launches every bucket, the .grads are the local ones
    grads = [fjax.randn(*p.shape) for p in params]
    for i, p in enumerate(params):
        p.grad = grads[i]
    for i in reversed(range(len(params))):
        r.mark_ready(i, params[i].grad._data)
        r.accumulated(i)
    assert [e[1] for e in r.log] == list(range(len(r.buckets)))
    for p, g in zip(params, grads):
        np.testing.assert_array_equal(p.grad.numpy(), g.numpy())
    assert r.pending() == []


def _worker(out: str, seed: int) -> None:
    """One rank: join the run before fjax starts JAX, then train the same steps several ways."""
    import time

    t0 = time.perf_counter()
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        f"127.0.0.1:{os.environ['MASTER_PORT']}", int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    )
    import fjax
    import fjax.distributed as dist
    from fjax import nn
    from fjax.autograd import engine
    from fjax.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    data = _data(seed, 4 * size)
    rows = slice(4 * rank, 4 * rank + 4)
    log: list = []
    apply, fused = engine.Node.apply, engine._fused_backward

    def counting_apply(node, cts):  # backward progress: one entry per backward op of the model run
        out = apply(node, cts)
        if "Alias" not in str(node.name):  # not DDP's own parameter aliases
            log.append(("node",))
        return out

    def counting_fused(*args):
        out = fused(*args)
        if out is not None:
            log.append(("node",))  # the fused program: the whole backward as one op
        return out

    engine.Node.apply, engine._fused_backward = counting_apply, counting_fused
    report = {}
    print("start", f"{time.perf_counter() - t0:.1f} s", flush=True)
    for name, fusion, overlap, unused in [
        ("overlap", False, True, False),
        ("after", False, False, False),
        ("per_param", False, True, True),
        ("overlap_fused", True, True, False),
        ("after_fused", True, False, False),
        ("direct_overlap", False, True, False),
        ("direct_after", False, False, False),
        ("auto", False, None, False),
        ("auto_fused", True, None, False),
    ]:
        fjax.config.eager_fusion = fusion
        fjax.manual_seed(rank)  # different initial weights: DDP starts every rank from rank 0's
        model = DDP(_model(nn), bucket_cap_mb=CAP_MB, find_unused_parameters=unused)
        model.overlap_grad_reduce = overlap
        (x0, y0), (x1, y1) = data
        with model.no_sync():  # a local accumulation step, then a synchronized one
            ((model(fjax.tensor(x0[rows])) - fjax.tensor(y0[rows])) ** 2).mean().backward()
        if model.reducer is not None:
            model.reducer.log = log
        log.clear()
        loss = ((model(fjax.tensor(x1[rows])) - fjax.tensor(y1[rows])) ** 2).mean()
        if name.startswith("direct"):  # a loss term reading a parameter outside DDP's forward
            loss = loss + (model.module[2].weight ** 2).sum() * (0.1 + rank)
        loss.backward()
        grads = {k: p.grad.numpy() for k, p in model.module.named_parameters()}
        entry = {"grads": {k: g.view(np.uint32).tolist() for k, g in grads.items()}}
        if model.reducer is not None:
            last = max(j for j, e in enumerate(log) if e[0] == "node")
            launches = [(j, e[2]) for j, e in enumerate(log) if e[0] == "launch"]
            entry["buckets"] = len(model.reducer.buckets)
            entry["launched"] = len(launches)
            entry["early_bytes"] = sum(b for j, b in launches if j < last)
            entry["bytes"] = sum(b for _, b in launches)
        report[name] = entry
        print(name, f"{time.perf_counter() - t0:.1f} s", flush=True)

    # a parameter the backward leaves out: torch's error at the next forward, naming it
    fjax.config.eager_fusion = False

    class Partly(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(WIDTH, WIDTH), nn.Linear(WIDTH, WIDTH)

        def forward(self, x):
            return self.a(x)

    model = DDP(Partly(), bucket_cap_mb=CAP_MB)
    model(fjax.ones(2, WIDTH)).sum().backward()
    try:
        model(fjax.ones(2, WIDTH))
        report["unused_error"] = None
    except RuntimeError as err:
        report["unused_error"] = str(err)
    print("unused", f"{time.perf_counter() - t0:.1f} s", flush=True)
    pathlib.Path(out, f"rank{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


def test_two_processes_overlapped_buckets_bit_identical(tmp_path):
    seed = SEED % 10000
    reports = run_ranks(__spec__.name, tmp_path, str(seed), timeout=180)

    import fjax
    from fjax import nn

    fjax.manual_seed(0)  # rank 0's initial weights, the whole batch, both steps on one process
    model = _model(nn)
    for x, y in _data(seed, 8):
        ((model(fjax.tensor(x)) - fjax.tensor(y)) ** 2).mean().backward()
    fjax.manual_seed(0)  # the same with the direct term (its rank-average weight: mean of 0.1, 1.1)
    direct = _model(nn)
    for step, (x, y) in enumerate(_data(seed, 8)):
        loss = ((direct(fjax.tensor(x)) - fjax.tensor(y)) ** 2).mean()
        if step == 1:
            loss = loss + (direct[2].weight ** 2).sum() * 0.6
        loss.backward()
    for rep in reports:
        for name, entry in rep.items():
            if name == "unused_error":
                continue
            ref = direct if name.startswith("direct") else model
            for k, p in ref.named_parameters():
                got = np.array(entry["grads"][k], dtype=np.uint32).view(np.float32)
                np.testing.assert_allclose(got, p.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{name} {k} {seed}")
        # the same local gradients give the same bits, overlapped or not, bucketed or not
        for name in ("after", "per_param"):
            assert rep[name]["grads"] == rep["overlap"]["grads"], (name, seed)
        # fused, the launches split the recorded backward into other programs, which may round the
        # last bits differently (within tolerance, checked above); without overlap, the same bits
        assert rep["auto_fused"]["grads"] == rep["after_fused"]["grads"]
        assert rep["direct_after"]["grads"] == rep["direct_overlap"]["grads"], seed
        for name in ("overlap", "after", "overlap_fused", "after_fused", "direct_after"):
            e = rep[name]
            assert e["buckets"] == DEPTH + 1 and e["launched"] == e["buckets"], (name, e)
        assert rep["direct_overlap"]["launched"] == DEPTH + 2  # the bucket of model[2] again, whole
        for name in ("overlap", "overlap_fused"):  # every bucket but the last before the last backward op
            e = rep[name]
            assert e["early_bytes"] / e["bytes"] >= (e["buckets"] - 1) / e["buckets"], (name, e)
            assert e["early_bytes"] < e["bytes"]  # the first layer's bucket waits for its gradient
        for name in ("after", "after_fused", "auto_fused"):  # auto: no overlap with eager fusion on
            assert rep[name]["early_bytes"] == 0
        assert rep["auto"] == rep["overlap"]  # eager fusion off: auto overlaps
        # (with eager fusion on, the forward's fused segments may round differently from one sight
        # to the next, so two fused runs are compared with the one-process gradients above only)
        assert "Expected to have finished reduction" in rep["unused_error"] and "b.weight" in rep["unused_error"]
    for name in reports[0]:
        assert reports[0][name] == reports[1][name], name
    print({name: (e["early_bytes"], e["bytes"], e["buckets"]) for name, e in reports[0].items() if "bytes" in e})


if __name__ == "__main__" and sys.argv[1:2] == ["worker"]:
    _worker(sys.argv[2], int(sys.argv[3]))
