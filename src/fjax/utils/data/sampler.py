"""Samplers: which dataset keys a DataLoader fetches, and in which order (torch's API).

Random orders come from fjax Generators (jax.random keys) and are drawn on the host CPU
device, so starting an epoch never waits for work queued on an accelerator. The same
generator seed gives the same order; the orders differ from torch's (a different RNG).
"""

from __future__ import annotations

import itertools
from typing import Iterable, Iterator, Sequence, Sized

import jax
import jax.numpy as jnp
import numpy as np

from ...random import Generator, default_generator


def _on_host(fn, *args) -> list[int]:
    """Run a jax.random draw on the CPU device and return it as a Python list."""
    with jax.default_device(jax.devices("cpu")[0]):
        return np.asarray(fn(*args)).tolist()


def _check_generator(generator, where: str):
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"{where}: generator must be a fjax.Generator, got {type(generator).__name__}")
    return generator


class Sampler:
    """Base class: ``__iter__`` yields dataset keys (or lists of keys, for a batch sampler)."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"{type(self).__name__}: subclasses of Sampler should implement __iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _permutations(key, n: int, num_samples: int):
    full, rest = divmod(num_samples, n)
    keys = jax.random.split(key, full + 1)
    perms = [jax.random.permutation(k, n) for k in keys[:full]]
    return jnp.concatenate(perms + [jax.random.permutation(keys[full], n)[:rest]])


class RandomSampler(Sampler):
    """A random order of ``data_source``'s keys; with ``replacement``, independent uniform draws.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw with replacement.
        num_samples: how many keys per epoch (default: the dataset's length); without
            replacement, more than the length concatenates fresh permutations, as in torch.
        generator: a ``fjax.Generator``; default ``fjax.default_generator`` (so
            ``fjax.manual_seed`` makes the order reproducible). Each epoch draws a new order.
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = _check_generator(generator, "RandomSampler")
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or self.num_samples <= 0:
            raise ValueError(
                f"RandomSampler: num_samples should be a positive integer value, but got num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def _draw(self) -> list[int]:
        n = len(self.data_source)
        key = (self.generator or default_generator).next_key
        if self.replacement:
            return _on_host(lambda: jax.random.randint(key(), (self.num_samples,), 0, n, jnp.int64))
        return _on_host(lambda: _permutations(key(), n, self.num_samples))

    def __iter__(self) -> Iterator[int]:
        yield from self._draw()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given keys in a random order (a fresh permutation of ``indices`` each epoch).

    Args:
        indices: the dataset keys to draw from, without replacement.
        generator: a ``fjax.Generator``; default ``fjax.default_generator``. The same seed gives
            the same order (not torch's order for that seed: the streams are jax.random's).

    Example::

        >>> from fjax.utils.data import SubsetRandomSampler
        >>> s = SubsetRandomSampler([10, 20, 30], generator=fjax.Generator().manual_seed(0))
        >>> sorted(s), len(s)
        ([10, 20, 30], 3)
    """

    def __init__(self, indices: Sequence[int], generator: Generator | None = None):
        self.indices = indices
        self.generator = _check_generator(generator, "SubsetRandomSampler")

    def __iter__(self) -> Iterator[int]:
        key = (self.generator or default_generator).next_key()
        for i in _on_host(lambda: jax.random.permutation(key, len(self.indices))):
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Keys ``0..len(weights)-1`` drawn with probabilities proportional to ``weights``
    (``fjax.multinomial``'s draw, on the host CPU).

    Args:
        weights: a 1-D sequence of non-negative weights, not necessarily summing to one.
        num_samples: how many keys per epoch.
        replacement: draw with replacement; without it every key appears at most once.
        generator: a ``fjax.Generator``; default ``fjax.default_generator``. The same seed gives the
            same keys (not torch's keys for that seed: the streams are jax.random's).

    Example::

        >>> from fjax.utils.data import WeightedRandomSampler
        >>> s = WeightedRandomSampler([0.0, 1.0, 3.0], 4, generator=fjax.Generator().manual_seed(0))
        >>> len(s), set(s) <= {1, 2}
        (4, True)
    """

    def __init__(
        self, weights: Sequence[float], num_samples: int, replacement: bool = True, generator: Generator | None = None
    ):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(
                "WeightedRandomSampler: num_samples should be a positive integer value, "
                f"but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"WeightedRandomSampler: replacement should be a boolean value, but got replacement={replacement}"
            )
        from ...creation import as_tensor
        from ...dtypes import float64

        with jax.default_device(jax.devices("cpu")[0]):
            weights = as_tensor(np.asarray(weights.tolist() if hasattr(weights, "tolist") else weights), dtype=float64)
        if weights.ndim != 1:
            raise ValueError(
                f"WeightedRandomSampler: weights should be a 1d sequence but given weights have shape "
                f"{tuple(weights.shape)}"
            )
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = _check_generator(generator, "WeightedRandomSampler")

    def __iter__(self) -> Iterator[int]:
        from ...random import multinomial

        with jax.default_device(jax.devices("cpu")[0]):
            drawn = multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Group another sampler's keys into lists of ``batch_size`` (the last may be shorter
    unless ``drop_last``).

    Example::

        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int, drop_last: bool):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size should be a positive integer value, but got {batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last should be a boolean value, but got {drop_last!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        while batch := list(itertools.islice(it, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
