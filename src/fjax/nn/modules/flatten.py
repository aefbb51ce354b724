"""Flatten and Unflatten."""

from __future__ import annotations

from ...tensor import Tensor
from ..module import Module


class Flatten(Module):
    """Merge dims ``start_dim`` through ``end_dim`` (inclusive) into one. The defaults
    ``start_dim=1, end_dim=-1`` keep the batch dim and flatten the rest, as in torch.

    Args:
        start_dim: the first dim merged (default 1).
        end_dim: the last dim merged (inclusive) (default -1).

    Example::

        >>> nn.Flatten()(fjax.ones(2, 3, 4)).shape
        fjax.Size([2, 12])
        >>> nn.Flatten(start_dim=0, end_dim=1)(fjax.ones(2, 3, 4)).shape
        fjax.Size([6, 4])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into several dims of sizes ``unflattened_size`` (a tuple or list whose
    product equals that dim; one entry may be ``-1``). The inverse of :class:`Flatten`.

    Args:
        dim: the dim split.
        unflattened_size: the new sizes, a tuple or list (one entry may be -1).

    Example::

        >>> m = nn.Unflatten(dim=1, unflattened_size=(2, 3))
        >>> m(fjax.ones(4, 6)).shape
        fjax.Size([4, 2, 3])
        >>> nn.Unflatten(-1, (2, -1))(fjax.ones(4, 6)).shape
        fjax.Size([4, 2, 3])
    """

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
