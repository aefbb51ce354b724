"""``fjax.nn.parallel``: DataParallel and DistributedDataParallel, torch's wrappers for data parallelism."""

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
