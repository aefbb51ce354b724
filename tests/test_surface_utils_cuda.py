"""torch.utils.data's dataset combinators and samplers, torch.utils.benchmark, and torch.cuda /
torch.accelerator's CPU-machine answers, against real torch."""

from __future__ import annotations

import doctest
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import fjax
import fjax.utils.data as fdata

# ----------------------------------------------------------------------------------------------
# fjax.utils.data
# ----------------------------------------------------------------------------------------------


def _pair(n, rng):
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = rng.integers(0, 5, n)
    return (
        fdata.TensorDataset(fjax.tensor(x), fjax.tensor(y)),
        tdata.TensorDataset(torch.tensor(x), torch.tensor(y)),
    )


def _same_sample(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same_sample(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _same_sample(u, v)
    elif isinstance(a, fjax.Tensor):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    else:
        assert a == b


def test_concat_dataset_matches_torch():
    rng = np.random.default_rng(0)
    (f1, t1), (f2, t2) = _pair(int(rng.integers(2, 6)), rng), _pair(int(rng.integers(2, 6)), rng)
    f, t = fdata.ConcatDataset([f1, f2, range(3)]), tdata.ConcatDataset([t1, t2, range(3)])
    assert len(f) == len(t) and f.cumulative_sizes == t.cumulative_sizes
    for i in range(-len(t), len(t)):
        _same_sample(f[i], t[i])
    with pytest.raises(ValueError, match="absolute value"):
        f[-len(f) - 1]
    with pytest.raises(AssertionError, match="empty"):
        fdata.ConcatDataset([])
    with pytest.raises(AssertionError, match="IterableDataset"):
        fdata.ConcatDataset([f1, fdata.IterableDataset()])
    assert isinstance(f1 + f2, fdata.ConcatDataset) and len(f1 + f2) == len(t1 + t2)
    with pytest.warns(FutureWarning):
        assert f.cummulative_sizes == f.cumulative_sizes
    loader = fdata.DataLoader(f1 + f2, batch_size=3)
    tloader = tdata.DataLoader(t1 + t2, batch_size=3)
    for a, b in zip(loader, tloader, strict=True):
        _same_sample(a, b)


class _FCount(fdata.IterableDataset):
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __iter__(self):
        return iter(range(self.lo, self.hi))

    def __len__(self):
        return self.hi - self.lo


class _TCount(tdata.IterableDataset):
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __iter__(self):
        return iter(range(self.lo, self.hi))

    def __len__(self):
        return self.hi - self.lo


def test_chain_dataset_matches_torch():
    rng = np.random.default_rng(1)
    bounds = [tuple(sorted(rng.integers(0, 20, 2))) for _ in range(3)]
    f = fdata.ChainDataset([_FCount(*b) for b in bounds])
    t = tdata.ChainDataset([_TCount(*b) for b in bounds])
    assert list(f) == list(t) and len(f) == len(t)
    assert list(_FCount(0, 2) + _FCount(5, 7)) == list(_TCount(0, 2) + _TCount(5, 7))
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        list(fdata.ChainDataset([range(3)]))
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        len(fdata.ChainDataset([range(3)]))


def test_stack_dataset_matches_torch():
    rng = np.random.default_rng(2)
    n = int(rng.integers(3, 7))
    (f1, t1), letters = _pair(n, rng), [chr(97 + i) for i in range(n)]
    f, t = fdata.StackDataset(f1, letters), tdata.StackDataset(t1, letters)
    fk, tk = fdata.StackDataset(a=f1, b=letters), tdata.StackDataset(a=t1, b=letters)
    assert len(f) == len(t) == len(fk) == n
    idx = rng.integers(0, n, 4).tolist()
    for i in idx:
        _same_sample(f[i], t[i])
        _same_sample(fk[i], tk[i])
    _same_sample(f.__getitems__(idx), t.__getitems__(idx))
    _same_sample(fk.__getitems__(idx), tk.__getitems__(idx))
    for a, b in zip(fdata.DataLoader(fk, batch_size=2), tdata.DataLoader(tk, batch_size=2), strict=True):
        _same_sample(a, b)
    with pytest.raises(ValueError, match="[Ss]ize mismatch"):
        fdata.StackDataset(range(2), range(3))
    with pytest.raises(ValueError, match="not both"):
        fdata.StackDataset(range(2), b=range(2))
    with pytest.raises(ValueError, match="at least one"):
        fdata.StackDataset()


def test_subset_matches_torch():
    rng = np.random.default_rng(3)
    fd, td = _pair(8, rng)
    idx = rng.permutation(8)[:5].tolist()
    f, t = fdata.Subset(fd, idx), tdata.Subset(td, idx)
    assert len(f) == len(t) == 5
    for i in range(5):
        _same_sample(f[i], t[i])
    _same_sample(list(f.__getitems__([0, 3])), t.__getitems__([0, 3]))
    _same_sample(f[[0, 2]], t[[0, 2]])  # a list of keys: one fetch from the dataset
    for a, b in zip(fdata.DataLoader(f, batch_size=2), tdata.DataLoader(t, batch_size=2), strict=True):
        _same_sample(a, b)

    class Bad(fdata.Subset):
        def __getitem__(self, i):
            return 0

    with pytest.raises(NotImplementedError, match="__getitems__"):
        Bad(fd, idx)


@pytest.mark.parametrize("lengths", [[3, 4, 3], [0.3, 0.3, 0.4], [0.25, 0.75], [0.5, 0.5, 0.0]])
def test_random_split_sizes_match_torch(lengths):
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        t = tdata.random_split(range(10), lengths, generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings(record=True) as fw:
        warnings.simplefilter("always")
        f = fdata.random_split(range(10), lengths, generator=fjax.Generator().manual_seed(0))
        again = fdata.random_split(range(10), lengths, generator=fjax.Generator().manual_seed(0))
    assert [len(s) for s in f] == [len(s) for s in t]
    assert len(fw) == 2 * len(tw)
    assert sorted(i for s in f for i in s) == list(range(10))
    assert all(isinstance(s, fdata.Subset) for s in f)
    assert [list(s) for s in again] == [list(s) for s in f]


def test_random_split_errors_and_default_generator():
    with pytest.raises(ValueError, match="does not equal the length"):
        fdata.random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="between 0 and 1"):
        fdata.random_split(range(10), [1.5, -0.5])
    fjax.manual_seed(5)
    a = [list(s) for s in fdata.random_split(range(20), [10, 10])]
    fjax.manual_seed(5)
    assert [list(s) for s in fdata.random_split(range(20), [10, 10])] == a
    # shuffled, not the identity (probability of the identity: 1/20!)
    assert a[0] + a[1] != list(range(20))


def test_subset_random_sampler():
    rng = np.random.default_rng(4)
    idx = rng.choice(100, 12, replace=False).tolist()
    f = fdata.SubsetRandomSampler(idx, generator=fjax.Generator().manual_seed(1))
    t = tdata.SubsetRandomSampler(idx, generator=torch.Generator().manual_seed(1))
    assert len(f) == len(t) == 12
    a, b = list(f), list(f)
    assert sorted(a) == sorted(b) == sorted(list(t)) == sorted(idx)
    assert a != b  # a fresh permutation each epoch
    assert list(fdata.SubsetRandomSampler(idx, generator=fjax.Generator().manual_seed(1))) == a


def test_weighted_random_sampler_distribution_matches_torch():
    rng = np.random.default_rng(5)
    w = rng.random(5) + 0.05
    w[2] = 0.0
    n = 4000
    f = list(fdata.WeightedRandomSampler(w.tolist(), n, generator=fjax.Generator().manual_seed(0)))
    t = list(tdata.WeightedRandomSampler(w.tolist(), n, generator=torch.Generator().manual_seed(0)))
    fc, tc = np.bincount(f, minlength=5) / n, np.bincount(t, minlength=5) / n
    np.testing.assert_allclose(fc, w / w.sum(), atol=0.04)
    np.testing.assert_allclose(fc, tc, atol=0.05)
    assert fc[2] == 0
    no = list(fdata.WeightedRandomSampler(fjax.tensor(w), 4, replacement=False))
    assert len(set(no)) == 4 and 2 not in no
    s = fdata.WeightedRandomSampler(w, 3)
    assert len(s) == 3 and s.weights.dtype == fjax.float64 and s.weights.shape == (5,)
    for bad, match in [((w, 0), "num_samples"), ((w, 2.0), "num_samples"), (([[1.0, 2.0]], 2), "1d")]:
        with pytest.raises(ValueError, match=match):
            fdata.WeightedRandomSampler(*bad)
    with pytest.raises(ValueError, match="replacement"):
        fdata.WeightedRandomSampler(w, 2, replacement=1)
    with pytest.raises(TypeError, match="fjax.Generator"):
        fdata.WeightedRandomSampler(w, 2, generator=torch.Generator())


def _run_examples(objs):
    parser, globs = doctest.DocTestParser(), {"fjax": fjax}
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    for name, obj in objs:
        test = parser.get_doctest(obj.__doc__ or "", dict(globs), name, None, 0)
        assert test.examples, f"{name} has no example"
        runner.run(test)
    assert runner.failures == 0


def test_data_examples_run():
    names = "ChainDataset ConcatDataset StackDataset Subset SubsetRandomSampler WeightedRandomSampler random_split"
    _run_examples([(n, getattr(fdata, n)) for n in names.split()] + [("cumsum", fdata.ConcatDataset.cumsum)])
