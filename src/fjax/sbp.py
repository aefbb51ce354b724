"""``fjax.sbp``: how a global tensor is laid out along each mesh axis (OneFlow's sbp)."""

from .distributed.placement import broadcast, partial_sum, split

__all__ = ["broadcast", "partial_sum", "split"]
