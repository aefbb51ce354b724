"""Flatten and Unflatten."""

from __future__ import annotations

from ...tensor import Tensor
from ..module import Module


class Flatten(Module):
    """Flatten dims ``start_dim..end_dim`` into one (batch dim kept by default)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple or list of ints, got {unflattened_size!r}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
