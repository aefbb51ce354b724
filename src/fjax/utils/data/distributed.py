"""DistributedSampler: each data-parallel replica reads its own share of a dataset."""

from __future__ import annotations

import math
from typing import Iterator

import jax

from .sampler import Sampler, _on_host


class DistributedSampler(Sampler):
    """Split a map-style dataset's keys into ``num_replicas`` disjoint shares (torch's semantics).

    Every replica builds the same order (a permutation seeded by ``seed + epoch`` when
    ``shuffle``), pads it by repeating keys so it divides evenly (or trims it with
    ``drop_last``), and takes every ``num_replicas``-th key starting at ``rank``. Call
    ``set_epoch(epoch)`` before each epoch for a new order.

    Args:
        dataset: the dataset (only its length is used).
        num_replicas: default ``jax.process_count()`` (one replica per process; the devices of a
            process share its batch through global tensors).
        rank: default ``jax.process_index()``.
        shuffle: permute the keys each epoch.
        seed: the same on every replica.
        drop_last: drop the tail instead of padding.

    Example::

        >>> sampler = DistributedSampler(ds, num_replicas=2, rank=0, shuffle=False)
        >>> list(sampler)          # keys 0, 2, 4, ...
    """

    def __init__(
        self,
        dataset,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ):
        num_replicas = jax.process_count() if num_replicas is None else num_replicas
        rank = jax.process_index() if rank is None else rank
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be a positive integer, got {num_replicas!r}")
        if not 0 <= rank < num_replicas:
            raise ValueError(
                f"DistributedSampler: invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            indices = _on_host(lambda: jax.random.permutation(jax.random.key(self.seed + self.epoch), n))
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:
            pad = self.total_size - n
            indices += (indices * math.ceil(pad / n))[:pad] if pad > n else indices[:pad]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use a new order (``seed + epoch``) the next time this sampler is iterated."""
        self.epoch = epoch
