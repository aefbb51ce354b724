"""Datasets: map-style ``Dataset``, ``IterableDataset``, ``TensorDataset``, their combinations
(``ConcatDataset``, ``ChainDataset``, ``StackDataset``, ``Subset``) and ``random_split`` (torch's API)."""

from __future__ import annotations

import bisect
import collections.abc
import itertools
import math
import warnings
from typing import Iterable, Iterator, Sequence

import jax
import numpy as np

from ...errors import OpError
from ...random import default_generator
from ...tensor import Tensor
from .sampler import _check_generator, _on_host


class Dataset:
    """A map from keys (usually ``0..len-1``) to samples: subclasses define ``__getitem__``
    and usually ``__len__``; ``__getitems__(indices)`` may fetch a whole batch at once."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__}: subclasses of Dataset should implement __getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker iterates its own copy; use
    ``fjax.utils.data.get_worker_info()`` inside ``__iter__`` to give each worker its share.
    """

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"{type(self).__name__}: subclasses of IterableDataset should implement __iter__")

    def __add__(self, other: "IterableDataset") -> "ChainDataset":
        return ChainDataset([self, other])


class _Gathered(collections.abc.Sequence):
    """A batch of TensorDataset samples fetched with one gather per tensor.

    It is a sequence of samples (for a custom ``collate_fn``); ``default_collate`` takes the
    gathered columns as they are instead of stacking the samples again.
    """

    def __init__(self, columns: tuple[Tensor, ...]):
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns[0])

    def __getitem__(self, i):
        return tuple(c[i] for c in self.columns)


class TensorDataset(Dataset):
    """Samples are slices of ``tensors`` along their first dimension.

    Example::

        >>> ds = TensorDataset(fjax.randn(100, 3), fjax.arange(100))
        >>> x, y = ds[0]
    """

    def __init__(self, *tensors: Tensor):
        if not tensors:
            raise OpError("TensorDataset: expected at least one tensor")
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: expected fjax Tensors, got {type(t).__name__}")
            if t.ndim == 0:
                raise OpError("TensorDataset: tensors need a first dimension to index, got a 0-d tensor")
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) > 1:
            raise OpError(
                f"TensorDataset: size mismatch between tensors: first dimensions {sizes} "
                f"(shapes {[tuple(t.shape) for t in tensors]})"
            )
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __getitems__(self, indices) -> _Gathered:
        if type(indices) is list and indices and type(indices[0]) is int:
            a, n = indices[0], len(indices)
            if 0 <= a and a + n <= len(self) and indices == list(range(a, a + n)):
                # a sequential batch: a copy of rows a..a+n (a slice, as cheap as it gets; a copy,
                # as torch's collated batch is, so writing it leaves the dataset alone)
                return _Gathered(tuple(t[a : a + n].clone() for t in self.tensors))
        idx = np.asarray(indices, np.int64)
        return _Gathered(tuple(t[idx] for t in self.tensors))

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


def _fetch_many(dataset, indices: list) -> list:
    """``dataset.__getitems__(indices)`` when the dataset batches its fetches, else one fetch per key."""
    getitems = getattr(dataset, "__getitems__", None)
    if callable(getitems):
        return getitems(indices)
    return [dataset[i] for i in indices]


class StackDataset(Dataset):
    """Zip datasets of one length: sample ``i`` is ``(d0[i], d1[i], ...)``, or ``{name: d[i]}`` when
    the datasets are given as keywords.

    Args:
        *args: datasets whose samples are returned as a tuple.
        **kwargs: datasets whose samples are returned as a dict under their keyword (not with ``args``).

    Example::

        >>> from fjax.utils.data import StackDataset
        >>> StackDataset(range(3), "abc")[1]
        (1, 'b')
        >>> StackDataset(x=range(3), y="abc")[2]
        {'x': 2, 'y': 'c'}
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError(
                "StackDataset: give the datasets either positionally (tuple samples) or as keywords "
                "(dict samples), not both"
            )
        if not args and not kwargs:
            raise ValueError("StackDataset: at least one dataset should be passed")
        parts = args or tuple(kwargs.values())
        lengths = [len(d) for d in parts]
        if len(set(lengths)) > 1:
            raise ValueError(f"StackDataset: size mismatch between datasets: lengths {lengths}")
        self._length = lengths[0]
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        named = isinstance(self.datasets, dict)
        parts = list(self.datasets.values()) if named else list(self.datasets)
        columns = []
        for d in parts:
            items = _fetch_many(d, indices)
            if len(items) != len(indices):
                raise ValueError(
                    f"StackDataset: nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}"
                )
            columns.append(list(items))
        if named:
            return [dict(zip(self.datasets, sample)) for sample in zip(*columns)]
        return [tuple(sample) for sample in zip(*columns)]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after another: keys ``0..len(d0)-1`` index ``d0``, the next ones ``d1``, ...

    Args:
        datasets: the (non-empty) sequence of map-style datasets to concatenate.

    Example::

        >>> from fjax.utils.data import ConcatDataset
        >>> ds = ConcatDataset([range(3), range(10, 12)])
        >>> len(ds), ds[3], ds[-1], ds.cumulative_sizes
        (5, 10, 11, [3, 5])
    """

    @staticmethod
    def cumsum(sequence) -> list[int]:
        """Running totals of the lengths of ``sequence``'s datasets.

        Args:
            sequence: datasets with a length.

        Example::

            >>> from fjax.utils.data import ConcatDataset
            >>> ConcatDataset.cumsum([range(2), range(3)])
            [2, 5]
        """
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets: Iterable[Dataset]):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError(
                    f"ConcatDataset: absolute value of index should not exceed dataset length, got {idx} "
                    f"for length {len(self)}"
                )
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]

    @property
    def cummulative_sizes(self) -> list[int]:
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`", FutureWarning, stacklevel=2)
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """Iterable datasets one after another: iterating yields all of the first, then the second, ...

    Args:
        datasets: the iterable datasets to chain (each is iterated lazily, when reached).

    Example::

        >>> from fjax.utils.data import ChainDataset, IterableDataset
        >>> class Count(IterableDataset):
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def __iter__(self):
        ...         return iter(range(self.n))
        ...     def __len__(self):
        ...         return self.n
        >>> ds = ChainDataset([Count(2), Count(3)])
        >>> list(ds), len(ds)
        ([0, 1, 0, 1, 2], 5)
    """

    def __init__(self, datasets: Iterable[Dataset]):
        self.datasets = datasets

    @staticmethod
    def _check(d):
        if not isinstance(d, IterableDataset):
            raise AssertionError(f"ChainDataset only supports IterableDataset, got {type(d).__name__}")
        return d

    def __iter__(self):
        for d in self.datasets:
            yield from self._check(d)

    def __len__(self) -> int:
        return sum(len(self._check(d)) for d in self.datasets)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``: key ``i`` is ``dataset[indices[i]]``.

    Args:
        dataset: the whole dataset.
        indices: the keys of ``dataset`` that the subset holds, in its order.

    Example::

        >>> from fjax.utils.data import Subset
        >>> s = Subset(range(10, 20), [4, 0, 7])
        >>> len(s), s[0], list(s)
        (3, 14, [14, 10, 17])
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices
        cls = type(self)
        if cls.__getitem__ is not Subset.__getitem__ and cls.__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{cls.__name__} overrides __getitem__ but not __getitems__: a subclass of Subset that overrides "
                "__getitem__ must also override __getitems__ (the DataLoader fetches batches with it), e.g.\n\n"
                "def __getitems__(self, indices):\n    return [self.__getitem__(idx) for idx in indices]"
            )

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        return _fetch_many(self.dataset, [self.indices[i] for i in indices])

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator=default_generator) -> list[Subset]:
    """Split ``dataset`` at random into non-overlapping ``Subset``\\ s of the given lengths.

    Lengths that are fractions summing to 1 become ``floor(frac * len(dataset))`` each, and the
    remainder is handed out one by one, round-robin from the first split, as torch does. The keys
    are one ``fjax.randperm`` of ``len(dataset)`` from ``generator``: the same seed gives the same
    split, but not torch's split for that seed (fjax's random streams are jax.random's, not torch's).

    Args:
        dataset: the dataset to split.
        lengths: the lengths of the splits (summing to ``len(dataset)``), or fractions summing to 1.
        generator: the ``fjax.Generator`` to draw the permutation from (``fjax.default_generator`` by default;
            None also means it).

    Example::

        >>> from fjax.utils.data import random_split
        >>> a, b = random_split(range(10), [0.3, 0.7], generator=fjax.Generator().manual_seed(0))
        >>> len(a), len(b), sorted(list(a) + list(b)) == list(range(10))
        (3, 7, True)
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and 1, got {frac}")
            sizes.append(math.floor(n * frac))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(
                    f"Length of split at index {i} is 0. This might result in an empty dataset.", stacklevel=2
                )
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError(
            f"random_split: sum of input lengths ({sum(lengths)}) does not equal the length of the input dataset ({n})!"
        )
    key = (_check_generator(generator, "random_split") or default_generator).next_key()
    perm = _on_host(lambda: jax.random.permutation(key, n))
    return [Subset(dataset, perm[end - size : end]) for end, size in zip(itertools.accumulate(lengths), lengths)]
