"""``torch.nn.modules.module``'s path: Module (defined in ``fjax.nn.module``)."""

from ..module import Module

__all__ = ["Module"]
