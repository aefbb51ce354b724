"""Global tensors and mesh configurations over jax.sharding (OneFlow's placement + sbp)."""

from .global_tensor import module_to_global
from .placement import broadcast, partial_sum, placement, split

__all__ = ["broadcast", "module_to_global", "partial_sum", "placement", "split"]
