"""``fjax.utils``: input pipelines (``fjax.utils.data``) and activation checkpointing
(``fjax.utils.checkpoint``), as ``torch.utils``, and OneFlow's ``global_view`` (``to_global``/``to_local``
of nested inputs, ``global_mode``)."""

from . import benchmark, checkpoint, data, dlpack, global_view

__all__ = ["benchmark", "checkpoint", "data", "dlpack", "global_view"]
