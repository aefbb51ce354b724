"""``fjax.sbp``: how a global tensor is laid out along each mesh axis (OneFlow's sbp).

``split(dim)``, ``broadcast`` and ``partial_sum`` are values (calling one with no arguments
gives it back, as in OneFlow: ``fjax.sbp.broadcast()``); ``sbp`` is their type.
"""

from .distributed.placement import broadcast, partial_sum, sbp, split

__all__ = ["broadcast", "partial_sum", "sbp", "split"]
