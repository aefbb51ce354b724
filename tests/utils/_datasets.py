"""Datasets for DataLoader process-worker tests: importable without torch, so spawned workers start fast."""

import numpy as np

from fjax.utils import data as fud


class Numbered(fud.Dataset):
    """A numpy-only dataset that records which worker served each sample and a numpy draw."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        info = fud.get_worker_info()
        return {
            "x": np.full(2, i, np.float32),
            "worker": -1 if info is None else info.id,
            "r": np.random.randint(2**31),
        }


def seed_numpy(worker_id):
    np.random.seed(1000 + worker_id)
