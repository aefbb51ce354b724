"""Datasets: map-style ``Dataset``, ``IterableDataset`` and ``TensorDataset`` (torch's API)."""

from __future__ import annotations

import collections.abc
from typing import Iterator

import numpy as np

from ...errors import OpError
from ...tensor import Tensor


class Dataset:
    """A map from keys (usually ``0..len-1``) to samples: subclasses define ``__getitem__``
    and usually ``__len__``; ``__getitems__(indices)`` may fetch a whole batch at once."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__}: subclasses of Dataset should implement __getitem__")


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker iterates its own copy; use
    ``fjax.utils.data.get_worker_info()`` inside ``__iter__`` to give each worker its share.
    """

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"{type(self).__name__}: subclasses of IterableDataset should implement __iter__")


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
        idx = np.asarray(indices, np.int64)
        return _Gathered(tuple(t[idx] for t in self.tensors))

    def __len__(self) -> int:
        return self.tensors[0].shape[0]
