"""torch.distributed's process-group API and DistributedDataParallel against torch (one process, gloo),
and two processes on this machine joined by ``init_process_group`` through jax.distributed.

Run as ``python -m tests.distributed.test_process_group worker OUT SEED`` (``ranks.run_ranks``)
this file is one rank of the two-process test.
"""

from __future__ import annotations

import copy
import doctest
import inspect
import json
import os
import pathlib
import random
import sys

import numpy as np
import pytest

import fjax
import fjax.distributed as dist
from fjax import nn
from fjax.distributed import collectives, process_group
from fjax.nn.modules.utils import consume_prefix_in_state_dict_if_present
from fjax.nn.parallel import DistributedDataParallel as DDP
from fjax.nn.parallel import data_parallel
from fjax.nn.parallel import distributed as ddp_module

from .ranks import free_port, run_ranks

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))


@pytest.fixture
def world():
    """A default group of one process for the test, destroyed after it."""
    dist.init_process_group("gloo")
    yield
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def torch_dist():
    """torch.distributed with a gloo group of one process: the oracle."""
    import torch
    import torch.distributed as tdist

    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    yield torch, tdist
    tdist.destroy_process_group()


def test_before_init_every_call_raises_torchs_error():
    assert not dist.is_initialized() and dist.is_available() and dist.GroupMember.WORLD is None
    for call in (dist.get_rank, dist.get_world_size, dist.get_backend, dist.barrier, dist.new_group):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(fjax.ones(2))
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DDP(nn.Linear(2, 2))


def test_init_records_the_group_and_refuses_a_second_init():
    dist.init_process_group()
    try:
        assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "undefined")  # torch's value
        assert dist.group.WORLD is dist.GroupMember.WORLD is not None
        with pytest.raises(ValueError, match="initialize the default process group twice"):
            dist.init_process_group("gloo")
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()
    dist.init_process_group("NCCL", world_size=1, rank=0)
    assert dist.get_backend() == "nccl" and dist.Backend("GLOO") == dist.Backend.GLOO == "gloo"
    dist.destroy_process_group()
    with pytest.raises(ValueError, match="unknown backend type 'foo'"):
        dist.init_process_group("foo")
    with pytest.raises(ValueError, match="rank must be in"):
        dist.init_process_group("gloo", world_size=1, rank=1)
    assert not dist.is_initialized()


def _outcome(fn):
    """What a call did: ('ok', values of the tensors it returned) or ('raised', exception type)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the type is the outcome
        return ("raised", type(e).__name__)
    return ("ok", [np.asarray(t.tolist()) for t in out])


# (name, call) run on both frameworks: call(dist, tensor) returns the tensors to compare.
ORACLE = [
    ("all_reduce sum", lambda d, T: (d.all_reduce(t := T([1.0, 2.0])), t)[1:]),
    ("all_reduce max", lambda d, T: (d.all_reduce(t := T([1.0, -2.0]), op=d.ReduceOp.MAX), t)[1:]),
    ("all_reduce avg", lambda d, T: (d.all_reduce(t := T([1.0, -2.0]), op=d.ReduceOp.AVG), t)[1:]),
    ("all_reduce product int", lambda d, T: (d.all_reduce(t := T([3, 4]), op=d.ReduceOp.PRODUCT), t)[1:]),
    ("all_reduce bor int", lambda d, T: (d.all_reduce(t := T([3, 4]), op=d.ReduceOp.BOR), t)[1:]),
    ("all_reduce band float", lambda d, T: d.all_reduce(T([1.0]), op=d.ReduceOp.BAND)),
    ("all_reduce avg int", lambda d, T: d.all_reduce(T([1, 2]), op=d.ReduceOp.AVG)),
    ("all_reduce a list", lambda d, T: d.all_reduce([T([1.0])])),
    ("all_reduce op string", lambda d, T: d.all_reduce(T([1.0]), op="sum")),
    ("broadcast", lambda d, T: (d.broadcast(t := T([5.0, 6.0]), 0), t)[1:]),
    ("broadcast bad src", lambda d, T: d.broadcast(T([5.0]), 1)),
    ("broadcast no src", lambda d, T: d.broadcast(T([5.0]))),
    ("all_gather", lambda d, T: (d.all_gather(out := [T([0.0, 0.0])], T([7.0, 8.0])), *out)[1:]),
    ("all_gather too many", lambda d, T: d.all_gather([T([0.0]), T([0.0])], T([7.0]))),
    ("all_gather wrong shape", lambda d, T: d.all_gather([T([0.0, 0.0])], T([7.0]))),
    ("all_gather_into_tensor", lambda d, T: (d.all_gather_into_tensor(o := T([0.0, 0.0]), T([1.0, 2.0])), o)[1:]),
    ("all_gather_into_tensor bad", lambda d, T: d.all_gather_into_tensor(T([0.0, 0.0, 0.0]), T([1.0, 2.0]))),
    ("reduce_scatter", lambda d, T: (d.reduce_scatter(o := T([0.0, 0.0]), [T([1.0, 2.0])]), o)[1:]),
    ("reduce_scatter two inputs", lambda d, T: d.reduce_scatter(T([0.0]), [T([1.0]), T([1.0])])),
    ("barrier", lambda d, T: (d.barrier(),)[1:]),
    ("async work", lambda d, T: [T([float(w.wait()), float(w.is_completed())]) for w in [d.barrier(async_op=True)]]),
    ("new_group world", lambda d, T: [T([d.get_rank(g), d.get_world_size(g)]) for g in [d.new_group([0])]]),
    ("new_group bad rank", lambda d, T: d.new_group([1])),
    ("reduce", lambda d, T: (d.reduce(t := T([1.0, 2.0]), dst=0), t)[1:]),
    ("reduce max int", lambda d, T: (d.reduce(t := T([3, -4]), dst=0, op=d.ReduceOp.MAX), t)[1:]),
    ("reduce bad dst", lambda d, T: d.reduce(T([1.0]), dst=1)),
    ("gather", lambda d, T: (d.gather(T([3.0, 4.0]), g := [T([0.0, 0.0])], dst=0), *g)[1:]),
    ("gather no list on dst", lambda d, T: d.gather(T([3.0]), None, dst=0)),
    ("gather wrong shape", lambda d, T: d.gather(T([3.0]), [T([0.0, 0.0])], dst=0)),
    ("scatter", lambda d, T: (d.scatter(t := T([0.0, 0.0]), [T([5.0, 6.0])], src=0), t)[1:]),
    ("scatter no list on src", lambda d, T: d.scatter(T([0.0]), None, src=0)),
    ("all_to_all", lambda d, T: (d.all_to_all(o := [T([0.0, 0.0])], [T([1.0, 2.0])]), *o)[1:]),
    ("all_to_all_single", lambda d, T: (d.all_to_all_single(o := T([0.0, 0.0, 0.0]), T([1.0, 2.0, 3.0])), o)[1:]),
    ("reduce_scatter_tensor", lambda d, T: (d.reduce_scatter_tensor(o := T([0.0, 0.0]), T([1.0, 2.0])), o)[1:]),
    ("reduce_scatter_tensor stacked", lambda d, T: (d.reduce_scatter_tensor(o := T([0.0]), T([[4.0]])), o)[1:]),
    ("monitored_barrier", lambda d, T: (d.monitored_barrier(),)[1:]),
    (
        "global and group rank",
        lambda d, T: [T([d.get_global_rank(d.group.WORLD, 0), d.get_group_rank(d.group.WORLD, 0)])],
    ),
    ("global rank of the world", lambda d, T: [T([d.get_global_rank(d.group.WORLD, 3)])]),  # torch checks none
    (
        "object collectives",
        lambda d, T: [
            T([len(a), a[0]["n"], *b, c[0], g[0]])
            for a, b, c, g in [([None], [1, 2], [None], [None])]
            if d.all_gather_object(a, {"n": 7}) is None
            and d.broadcast_object_list(b, src=0) is None
            and d.scatter_object_list(c, [9], src=0) is None
            and d.gather_object(4, g, dst=0) is None
        ],
    ),
]


@pytest.mark.parametrize("name,call", ORACLE, ids=[n for n, _ in ORACLE])
def test_single_process_collectives_match_torch(name, call, torch_dist, world):
    torch, tdist = torch_dist
    ours = _outcome(lambda: call(dist, fjax.tensor))
    theirs = _outcome(lambda: call(tdist, torch.tensor))
    assert ours[0] == theirs[0], f"{name}: fjax {ours}, torch {theirs}"
    if ours[0] == "ok":
        assert len(ours[1]) == len(theirs[1]), name
        for a, b in zip(ours[1], theirs[1]):
            np.testing.assert_array_equal(a, b, err_msg=name)


def test_broadcast_is_still_the_sbp_value(world):
    assert dist.broadcast is fjax.sbp.broadcast and repr(dist.broadcast) == "fjax.sbp.broadcast"
    x = fjax.arange(4.0).to_global(fjax.placement("cpu", [0]), dist.broadcast)
    assert x.sbp == (fjax.sbp.broadcast,)
    t = fjax.tensor([1.0, 2.0], requires_grad=True)  # a leaf: written without autograd, as torch
    assert dist.broadcast(t, src=0) is None and t.tolist() == [1.0, 2.0] and t.requires_grad


def _public(module) -> list:
    """The public functions and classes ``module`` defines."""
    objs = [getattr(module, n) for n in sorted(vars(module)) if not n.startswith("_")]
    return [o for o in objs if getattr(o, "__module__", None) == module.__name__ and callable(o)]


DOCUMENTED = [o for m in (process_group, collectives, data_parallel, ddp_module) for o in _public(m)]


@pytest.mark.parametrize("obj", [*DOCUMENTED, DDP.no_sync], ids=lambda o: o.__qualname__)
def test_examples_run(obj):
    """The examples of the process-group API and the parallel wrappers (each leaves no group behind)."""
    doc = inspect.getdoc(obj)
    assert ">>>" in doc, f"{obj.__name__} has no example"
    test = doctest.DocTestParser().get_doctest(doc, {"fjax": fjax, "nn": nn}, obj.__name__, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
    assert not dist.is_initialized()


def _train(model, opt, batches, sync=None):
    for i, (x, y) in enumerate(batches):
        loss = ((model(fjax.tensor(x)) - fjax.tensor(y)) ** 2).mean()
        loss.backward()
        if sync is None or i % 2 == 1:
            opt.step()
            opt.zero_grad()


def _batches(seed: int, n: int = 4, rows: int = 6):
    r = np.random.default_rng(seed)
    return [(r.standard_normal((rows, 3)).astype(np.float32), r.standard_normal((rows, 2)).astype(np.float32))] * n


def test_ddp_in_one_process_is_the_module_exactly(world):
    fjax.manual_seed(SEED % 1000)
    plain = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 2))
    wrapped = DDP(copy.deepcopy(plain))
    assert isinstance(wrapped.module, nn.Sequential) and wrapped.broadcast_buffers is True
    batches = _batches(SEED)
    for model in (plain, wrapped):
        _train(model, fjax.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), batches)
    sd, wsd = plain.state_dict(), wrapped.state_dict()
    assert list(wsd) == ["module." + k for k in sd]
    for k, v in sd.items():
        np.testing.assert_array_equal(wsd["module." + k].numpy(), v.numpy(), err_msg=f"{k} seed={SEED}")
    consume_prefix_in_state_dict_if_present(wsd, "module.")
    fresh = copy.deepcopy(plain)
    fresh.load_state_dict(wsd)


def test_ddp_matches_torch_ddp(world, torch_dist):
    torch, _ = torch_dist
    th = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2))
    fj = DDP(nn.Linear(3, 2))
    fj.load_state_dict({k: v.detach().numpy() for k, v in th.state_dict().items()})
    x = np.random.default_rng(SEED).standard_normal((5, 3)).astype(np.float32)
    with fj.no_sync():
        fj(fjax.tensor(x)).pow(2).sum().backward()
    fj(fjax.tensor(x)).pow(2).sum().backward()
    with th.no_sync():
        th(torch.tensor(x)).pow(2).sum().backward()
    th(torch.tensor(x)).pow(2).sum().backward()
    for (name, a), (_, b) in zip(fj.named_parameters(), th.named_parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"{name} {SEED}")


def test_ddp_and_data_parallel_checks(world, torch_dist):
    torch, _ = torch_dist
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a gradient"):
        DDP(nn.ReLU())
    frozen = nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="doesn't have any parameter"):
        DDP(frozen)
    dp, tdp = nn.DataParallel(nn.Linear(3, 2)), torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert list(dp.state_dict()) == list(tdp.state_dict()) and repr(dp).splitlines()[0] == "DataParallel("
    dp.load_state_dict({k: v.detach().numpy() for k, v in tdp.state_dict().items()})
    x = np.ones((4, 3), np.float32)
    np.testing.assert_allclose(
        dp(fjax.tensor(x)).detach().numpy(), tdp(torch.tensor(x)).detach().numpy(), rtol=1e-6, atol=1e-6
    )


def _worker(out: str) -> None:
    """One rank of the two-process run: join with init_process_group, run collectives, train with DDP."""
    import jax

    dist.init_process_group("gloo")  # before any tensor: JAX's devices start after joining
    rank, size = dist.get_rank(), dist.get_world_size()
    report = {"rank": rank, "size": size, "devices": len(jax.devices())}
    t = fjax.tensor([1.0 + rank, 10.0 * (rank + 1)])
    dist.all_reduce(t)
    m = fjax.tensor([1.0 + rank, -float(rank)])
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    b = fjax.tensor([float(rank)] * 2)
    dist.broadcast(b, src=1)
    gathered = [fjax.zeros(2), fjax.zeros(2)]
    dist.all_gather(gathered, fjax.tensor([float(rank), 5.0]))
    rs = fjax.zeros(1)
    dist.reduce_scatter(rs, [fjax.tensor([1.0 + rank]), fjax.tensor([10.0 * (rank + 1)])])
    dist.barrier()
    report.update(
        sum=t.tolist(), max=m.tolist(), bcast=b.tolist(), gathered=[g.tolist() for g in gathered], rs=rs.tolist()
    )
    red = fjax.tensor([2.0 + rank])
    dist.reduce(red, dst=1)
    got = [fjax.zeros(2), fjax.zeros(2)] if rank == 0 else None
    dist.gather(fjax.tensor([float(rank), 1.0]), got, dst=0)
    sc = fjax.zeros(2)
    dist.scatter(sc, [fjax.tensor([1.0, 2.0]), fjax.tensor([3.0, 4.0])] if rank == 1 else None, src=1)
    a2a = [fjax.zeros(1), fjax.zeros(1)]
    dist.all_to_all(a2a, [fjax.tensor([10.0 * rank]), fjax.tensor([10.0 * rank + 1])])
    a2as = fjax.zeros(2)
    dist.all_to_all_single(a2as, fjax.tensor([10.0 * rank, 10.0 * rank + 1]))
    rst = fjax.zeros(1)
    dist.reduce_scatter_tensor(rst, fjax.tensor([1.0 + rank, 10.0 + rank]))
    objs = [None, None]
    dist.all_gather_object(objs, {"rank": rank, "text": "x" * (3 + 5 * rank)})
    bol = [f"from {rank}", rank]
    dist.broadcast_object_list(bol, src=1)
    sol = [None]
    dist.scatter_object_list(sol, [{"to": 0}, {"to": 1}] if rank == 0 else None, src=0)
    gol = [None, None] if rank == 1 else None
    dist.gather_object(("r", rank), gol, dst=1)
    report.update(
        reduce=red.tolist(),
        gather=[g.tolist() for g in got] if got else None,
        scatter=sc.tolist(),
        a2a=[x.tolist() for x in a2a],
        a2as=a2as.tolist(),
        rst=rst.tolist(),
        objs=objs,
        bol=bol,
        sol=sol,
        gol=gol,
    )

    fjax.manual_seed(rank)  # different initial weights: DDP starts every rank from rank 0's
    model = DDP(nn.Linear(3, 2))
    opt = fjax.optim.SGD(model.parameters(), lr=0.1)
    x, y = _batches(int(sys.argv[3]), n=1, rows=8)[0]
    rows = slice(4 * rank, 4 * rank + 4)
    with model.no_sync():  # an accumulation step, then a synchronized one
        ((model(fjax.tensor(x[rows])) - fjax.tensor(y[rows])) ** 2).mean().backward()
    ((model(fjax.tensor(x[rows])) - fjax.tensor(y[rows])) ** 2).mean().backward()
    report["grads"] = {k: p.grad.tolist() for k, p in model.module.named_parameters()}
    opt.step()
    report["params"] = {k: v.tolist() for k, v in model.module.state_dict().items()}
    pathlib.Path(out, f"rank{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


def test_two_processes_join_and_average_gradients(tmp_path):
    seed = SEED % 10000
    reports = run_ranks(__spec__.name, tmp_path, str(seed), timeout=120)
    for r, rep in enumerate(reports):
        assert (rep["rank"], rep["size"], rep["devices"]) == (r, 2, 2)
        assert rep["sum"] == [3.0, 30.0] and rep["max"] == [2.0, 0.0] and rep["bcast"] == [1.0, 1.0]
        assert rep["gathered"] == [[0.0, 5.0], [1.0, 5.0]]
        assert rep["rs"] == [[3.0], [30.0]][r]
        assert rep["reduce"] == [[2.0], [5.0]][r]  # on dst (1) the sum; rank 0's own value
        assert rep["gather"] == ([[0.0, 1.0], [1.0, 1.0]] if r == 0 else None)
        assert rep["scatter"] == [[1.0, 2.0], [3.0, 4.0]][r]
        assert rep["a2a"] == [[0.0 + r], [10.0 + r]] and rep["a2as"] == [0.0 + r, 10.0 + r]
        assert rep["rst"] == [[3.0], [21.0]][r]  # chunk r of [1 + rank, 10 + rank], summed
        assert rep["objs"] == [{"rank": 0, "text": "xxx"}, {"rank": 1, "text": "x" * 8}]
        assert rep["bol"] == ["from 1", 1] and rep["sol"] == [{"to": r}]
        assert rep["gol"] == ([["r", 0], ["r", 1]] if r == 1 else None)

    # One process, rank 0's initial weights, the whole batch: the gradient DDP averaged.
    fjax.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = _batches(seed, n=1, rows=8)[0]
    for _ in range(2):  # the no_sync step and the synchronized step
        ((model(fjax.tensor(x)) - fjax.tensor(y)) ** 2).mean().backward()
    for rep in reports:
        for k, p in model.named_parameters():
            np.testing.assert_allclose(rep["grads"][k], p.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{k} {seed}")
    np.testing.assert_allclose(reports[0]["params"]["weight"], reports[1]["params"]["weight"], rtol=0, atol=0)


if __name__ == "__main__" and sys.argv[1:2] == ["worker"]:
    _worker(sys.argv[2])
