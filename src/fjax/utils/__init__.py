"""``fjax.utils``: input pipelines (``fjax.utils.data``), as ``torch.utils``."""

from . import data

__all__ = ["data"]
