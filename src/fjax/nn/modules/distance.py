"""PairwiseDistance and CosineSimilarity (torch.nn.modules.distance)."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module


class PairwiseDistance(Module):
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dim (``F.pairwise_distance``).

    Args:
        p: the norm degree (default 2.0).
        eps: added to the difference (default 1e-06).
        keepdim: keep the reduced last dimension with size 1 (default False).

    Example::

        >>> nn.PairwiseDistance()(fjax.tensor([[0., 0.]]), fjax.tensor([[3., 4.]]))
        tensor([5.0000], dtype=fjax.float32)
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim`` (``F.cosine_similarity``).

    Args:
        dim: the dimension the cosine is taken along (default 1).
        eps: the lower bound of each norm (default 1e-08).

    Example::

        >>> nn.CosineSimilarity(dim=1)(fjax.tensor([[1., 0.], [1., 1.]]), fjax.tensor([[0., 1.], [2., 2.]]))
        tensor([0.0000, 1.0000], dtype=fjax.float32)
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
