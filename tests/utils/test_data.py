"""fjax.utils.data against torch.utils.data: same sampler, same batches; workers; samplers."""

from __future__ import annotations

import collections
import threading
import time
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import fjax
from fjax.utils import data as fud

from ._datasets import Numbered, seed_numpy


@pytest.fixture
def seed():
    return int(np.random.randint(2**31))


def _np(x):
    if isinstance(x, fjax.Tensor):
        return x.numpy(), str(x.dtype).split(".")[-1]
    if isinstance(x, torch.Tensor):
        return x.numpy(), str(x.dtype).split(".")[-1]
    return x, type(x).__name__


def assert_same_batches(ours, theirs, context):
    """Batches equal in structure, values and dtypes (fjax Tensor vs torch Tensor)."""
    assert len(ours) == len(theirs), context
    for i, (a, b) in enumerate(zip(ours, theirs)):
        _assert_same(a, b, f"{context}, batch {i}")


def _assert_same(a, b, context):
    if isinstance(b, torch.Tensor):
        assert isinstance(a, fjax.Tensor), f"{context}: expected a Tensor, got {type(a).__name__}"
        (av, ad), (bv, bd) = _np(a), _np(b)
        assert ad == bd, f"{context}: dtype {ad} != torch {bd}"
        np.testing.assert_array_equal(av, bv, err_msg=context)
    elif isinstance(b, dict):
        assert type(a) is type(b) and list(a) == list(b), context
        for k in b:
            _assert_same(a[k], b[k], f"{context}[{k!r}]")
    elif isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), context
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{context}[{i}]")
    else:
        assert a == b, context


class Records:
    """A map-style dataset of mixed samples (numpy array, int, float, str in a dict)."""

    def __init__(self, rng, n):
        self.x = rng.standard_normal((n, 3)).astype(np.float32)
        self.y = rng.integers(0, 10, n)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"x": self.x[i], "label": int(self.y[i]), "w": float(self.x[i, 0]), "name": f"s{i}", "ok": i % 2 == 0}


class OurRecords(Records, fud.Dataset):
    pass


class TheirRecords(Records, tud.Dataset):
    pass


@pytest.mark.parametrize("num_workers", [0, 2])
def test_map_dataset_batches_match_torch(seed, num_workers):
    rng = np.random.default_rng(seed)
    n, batch_size, drop_last = int(rng.integers(10, 40)), int(rng.integers(1, 8)), bool(rng.integers(2))
    order = rng.permutation(n).tolist()  # the same explicit sampler for both
    ours = fud.DataLoader(
        OurRecords(np.random.default_rng(seed), n),
        batch_size=batch_size,
        sampler=order,
        drop_last=drop_last,
        num_workers=num_workers,
    )
    theirs = tud.DataLoader(
        TheirRecords(np.random.default_rng(seed), n), batch_size=batch_size, sampler=order, drop_last=drop_last
    )
    assert len(ours) == len(theirs)
    ctx = f"seed={seed} n={n} batch_size={batch_size} drop_last={drop_last}"
    assert_same_batches(list(ours), list(theirs), ctx)


def test_tensor_dataset_batches_match_torch(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((23, 2, 3)).astype(np.float32), rng.integers(0, 5, 23)
    order = rng.permutation(23).tolist()
    ours = fud.TensorDataset(fjax.tensor(x), fjax.tensor(y))
    theirs = tud.TensorDataset(torch.tensor(x), torch.tensor(y))
    assert_same_batches(ours[3], theirs[3], f"seed={seed} item")
    for workers in (0, 2):
        got = list(fud.DataLoader(ours, batch_size=5, sampler=order, num_workers=workers))
        assert_same_batches(got, list(tud.DataLoader(theirs, batch_size=5, sampler=order)), f"seed={seed}")
    # a custom collate_fn receives the samples themselves
    sizes = fud.DataLoader(ours, batch_size=5, sampler=order, collate_fn=lambda b: [len(b), len(b[0])])
    assert list(sizes) == list(tud.DataLoader(theirs, batch_size=5, sampler=order, collate_fn=lambda b: [len(b), 2]))
    with pytest.raises(fjax.OpError, match=r"TensorDataset: size mismatch.*\[23, 4\]"):
        fud.TensorDataset(fjax.tensor(x), fjax.zeros(4))


def test_sequential_tensor_batches_are_copies_and_match_torch(seed):
    """Without shuffling a TensorDataset batch is read as a slice of rows (no index array), a
    copy as torch's collated batch is: writing into it leaves the dataset alone."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((23, 3)).astype(np.float32), rng.integers(0, 5, 23)
    ours = fud.TensorDataset(fjax.tensor(x), fjax.tensor(y))
    theirs = tud.TensorDataset(torch.tensor(x), torch.tensor(y))
    for drop_last in (False, True):
        got = list(fud.DataLoader(ours, batch_size=5, drop_last=drop_last))
        assert_same_batches(got, list(tud.DataLoader(theirs, batch_size=5, drop_last=drop_last)), f"seed={seed}")
    xb, _ = next(iter(fud.DataLoader(ours, batch_size=4)))
    xb.add_(100.0)
    np.testing.assert_array_equal(ours.tensors[0].numpy(), x)
    with pytest.raises(IndexError):
        ours.__getitems__([21, 22, 23])


def test_batch_sampler_no_batching_and_custom_collate_match_torch(seed):
    rng = np.random.default_rng(seed)
    n = 17
    batches = [rng.choice(n, int(rng.integers(1, 5)), replace=False).tolist() for _ in range(6)]
    ours, theirs = OurRecords(np.random.default_rng(seed), n), TheirRecords(np.random.default_rng(seed), n)
    assert_same_batches(
        list(fud.DataLoader(ours, batch_sampler=batches)), list(tud.DataLoader(theirs, batch_sampler=batches)), "bs"
    )
    order = rng.permutation(n).tolist()
    assert_same_batches(
        list(fud.DataLoader(ours, batch_size=None, sampler=order)),
        list(tud.DataLoader(theirs, batch_size=None, sampler=order)),
        f"seed={seed} batch_size=None",
    )
    keys = lambda b: [s["name"] for s in b]  # noqa: E731
    assert list(fud.DataLoader(ours, batch_size=4, collate_fn=keys)) == list(
        tud.DataLoader(theirs, batch_size=4, collate_fn=keys)
    )


def test_default_collate_matches_torch(seed):
    rng = np.random.default_rng(seed)
    Point = collections.namedtuple("Point", "x y")
    samples = [
        (rng.standard_normal(2), int(rng.integers(9)), Point(np.float32(rng.random()), [True, False])) for _ in range(3)
    ]
    _assert_same(fud.default_collate(samples), tud.default_collate(samples), f"seed={seed}")
    _assert_same(fud.default_convert(samples[0]), tud.default_convert(samples[0]), f"seed={seed}")
    with pytest.raises(fjax.OpError, match=r"default_collate: stack expects each array to be equal size"):
        fud.default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        fud.default_collate([object(), object()])


def test_shuffle_follows_the_generator(seed):
    n = 37
    ds = fud.TensorDataset(fjax.arange(n))

    def epochs(generator, workers=0, count=2):
        loader = fud.DataLoader(ds, batch_size=8, shuffle=True, generator=generator, num_workers=workers)
        return [np.concatenate([b[0].numpy() for b in loader]).tolist() for _ in range(count)]

    first = epochs(fjax.Generator().manual_seed(seed))
    assert sorted(first[0]) == list(range(n)) and sorted(first[1]) == list(range(n))
    assert first[0] != first[1], "each epoch draws a new order"
    assert epochs(fjax.Generator().manual_seed(seed), workers=2) == first, "workers do not change the order"
    assert epochs(fjax.Generator().manual_seed(seed + 1), count=1)[0] != first[0]
    fjax.manual_seed(seed)
    default = epochs(None, count=1)
    fjax.manual_seed(seed)
    assert epochs(None, count=1) == default, "fjax.manual_seed makes the default shuffle reproducible"
    # the documented equivalence with torch: pass the order as an explicit sampler
    order = list(fud.RandomSampler(ds, generator=fjax.Generator().manual_seed(seed)))
    x = np.arange(n)
    theirs = tud.DataLoader(tud.TensorDataset(torch.tensor(x)), batch_size=8, sampler=order)
    ours = fud.DataLoader(ds, batch_size=8, shuffle=False, sampler=order)
    assert_same_batches(list(ours), list(theirs), f"seed={seed}")


def test_random_sampler_options(seed):
    ds = list(range(10))
    g = fjax.Generator().manual_seed(seed)
    many = list(fud.RandomSampler(ds, num_samples=25, generator=g))
    assert len(many) == 25 and sorted(many[:10]) == ds and sorted(many[10:20]) == ds
    drawn = list(fud.RandomSampler(ds, replacement=True, num_samples=50, generator=g))
    assert len(drawn) == 50 and set(drawn) <= set(ds)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        fud.RandomSampler(ds, num_samples=0)
    with pytest.raises(TypeError, match="RandomSampler: generator must be a fjax.Generator"):
        fud.RandomSampler(ds, generator=torch.Generator())
    assert list(fud.BatchSampler(range(7), 3, drop_last=True)) == list(tud.BatchSampler(range(7), 3, drop_last=True))
    assert list(fud.BatchSampler(range(7), 3, False)) == list(tud.BatchSampler(range(7), 3, False))


class Shards:
    """An IterableDataset that splits its items between workers (uneven shares)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = self.worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


class OurShards(Shards, fud.IterableDataset):
    worker_info = staticmethod(fud.get_worker_info)


class TheirShards(Shards, tud.IterableDataset):
    worker_info = staticmethod(tud.get_worker_info)


def test_iterable_dataset_with_workers_matches_torch(seed):
    rng = np.random.default_rng(seed)
    n, workers, batch_size = int(rng.integers(5, 30)), 3, int(rng.integers(1, 5))
    drop_last = bool(rng.integers(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "more workers than cores"; jax: "fork() was called"
        theirs = list(
            tud.DataLoader(
                TheirShards(n),
                batch_size=batch_size,
                drop_last=drop_last,
                num_workers=workers,
                multiprocessing_context="fork",  # forked children run only torch and Python here
            )
        )
    ours = list(fud.DataLoader(OurShards(n), batch_size=batch_size, drop_last=drop_last, num_workers=workers))
    assert_same_batches(ours, theirs, f"seed={seed} n={n} batch_size={batch_size} drop_last={drop_last}")
    single = list(fud.DataLoader(OurShards(n), batch_size=batch_size, drop_last=drop_last))
    assert_same_batches(single, list(tud.DataLoader(TheirShards(n), batch_size=batch_size, drop_last=drop_last)), "")
    with pytest.raises(ValueError, match="IterableDataset: expected unspecified shuffle option"):
        fud.DataLoader(OurShards(n), shuffle=True)


def test_process_workers():
    loader = fud.DataLoader(
        Numbered(), batch_size=3, num_workers=2, multiprocessing_context="spawn", worker_init_fn=seed_numpy
    )
    batches = list(loader)
    assert len(batches) == 4 and all(isinstance(b["x"], fjax.Tensor) for b in batches)
    np.testing.assert_array_equal(np.concatenate([b["x"].numpy()[:, 0] for b in batches]), np.arange(12))
    assert [b["worker"].tolist() for b in batches] == [[0] * 3, [1] * 3, [0] * 3, [1] * 3], "round-robin"
    draws = [b["r"].tolist() for b in batches]
    for w in (0, 1):
        expected = np.random.RandomState(1000 + w).randint(2**31, size=6).tolist()
        assert draws[w] + draws[w + 2] == expected, "worker_init_fn ran in each worker process"


class Failing(fud.Dataset):
    def __init__(self, bad, delay=0.0):
        self.bad, self.delay = bad, delay

    def __len__(self):
        return 10

    def __getitem__(self, i):
        time.sleep(self.delay)
        if i == self.bad:
            raise KeyError(f"sample {i} is broken")
        return i


def test_worker_errors_timeout_and_argument_errors(seed):
    bad = int(np.random.default_rng(seed).integers(10))
    with pytest.raises(KeyError, match=f"sample {bad} is broken") as info:
        list(fud.DataLoader(Failing(bad), batch_size=2, num_workers=2))
    assert any("in DataLoader worker thread" in note for note in getattr(info.value, "__notes__", []))
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.2 seconds"):
        list(fud.DataLoader(Failing(-1, delay=1.0), num_workers=1, timeout=0.2))
    ds = Failing(-1)
    for kwargs in (
        {"sampler": [0, 1], "shuffle": True},
        {"batch_sampler": [[0]], "batch_size": 2},
        {"batch_size": None, "drop_last": True},
        {"prefetch_factor": 2},
        {"num_workers": -1},
        {"persistent_workers": True},
    ):
        with pytest.raises(ValueError):
            tud.DataLoader(ds, **kwargs)
        with pytest.raises(ValueError, match="DataLoader"):
            fud.DataLoader(ds, **kwargs)
    with pytest.raises(NotImplementedError, match="persistent_workers"):
        fud.DataLoader(ds, num_workers=1, persistent_workers=True, multiprocessing_context="spawn")


def test_persistent_thread_workers_give_torchs_batches_every_epoch(seed):
    x = np.random.default_rng(seed).normal(size=(23, 3)).astype(np.float32)
    calls = []
    kw = dict(batch_size=4, num_workers=2, persistent_workers=True, drop_last=False)
    mine = fud.DataLoader(fud.TensorDataset(fjax.tensor(x)), worker_init_fn=calls.append, **kw)
    theirs = tud.DataLoader(tud.TensorDataset(torch.from_numpy(x)), **kw)
    assert mine.persistent_workers
    for _ in range(2):
        got = [b[0].numpy() for b in mine]
        want = [b[0].numpy() for b in theirs]
        assert len(got) == len(want) == 6
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    assert sorted(calls) == [0, 0, 1, 1]  # each epoch starts its workers (documented)


class Counting(fud.Dataset):
    def __init__(self, n, slow=()):
        self.n, self.slow, self.fetched = n, set(slow), 0
        self.lock = threading.Lock()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i in self.slow:
            time.sleep(0.5)
        with self.lock:
            self.fetched += 1
        return i


def test_prefetch_is_bounded_and_in_order_false_delivers_early():
    ds = Counting(200)
    it = iter(fud.DataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=3))
    for consumed in range(1, 20):
        next(it)
        time.sleep(0.002)
        assert ds.fetched <= 2 * (consumed + 2 * 3), f"fetched {ds.fetched} samples after {consumed} batches"
    del it
    ds = Counting(8, slow={0})
    got = [b.tolist() for b in fud.DataLoader(ds, batch_size=2, num_workers=2, in_order=False)]
    assert sorted(got) == [[0, 1], [2, 3], [4, 5], [6, 7]] and got[0] != [0, 1]


@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_matches_torch_without_shuffle(seed, drop_last):
    rng = np.random.default_rng(seed)
    n, replicas = int(rng.integers(1, 30)), int(rng.integers(1, 5))
    ds = list(range(n))
    for rank in range(replicas):
        ours = fud.DistributedSampler(ds, replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = tud.DistributedSampler(ds, replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs), f"seed={seed} n={n} replicas={replicas}"


def test_distributed_sampler_shuffle(seed):
    n, replicas = 24, 3
    shares = [list(fud.DistributedSampler(list(range(n)), replicas, r, seed=seed)) for r in range(replicas)]
    assert sorted(sum(shares, [])) == list(range(n)), "the replicas partition the dataset"
    again = fud.DistributedSampler(list(range(n)), replicas, 0, seed=seed)
    assert list(again) == shares[0]
    again.set_epoch(1)
    assert list(again) != shares[0]
    assert len(fud.DistributedSampler(list(range(n)), 5, 4, drop_last=True)) == len(
        tud.DistributedSampler(list(range(n)), 5, 4, drop_last=True)
    )
    with pytest.raises(ValueError, match=r"invalid rank 3, rank should be in the interval \[0, 2\]"):
        fud.DistributedSampler(list(range(n)), 3, 3)
    assert fud.DistributedSampler(list(range(n))).num_replicas == 1  # one process here
