"""ChannelShuffle (torch.nn.modules.channelshuffle): interleave the channels of ``groups`` groups."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from ..module import Module


class ChannelShuffle(Module):
    """Split the ``C`` channels of ``(N, C, *)`` into ``groups`` groups and interleave them
    (``(N, g, C/g, *)`` transposed to ``(N, C/g, g, *)``), as in ShuffleNet.

    Args:
        groups: the number of groups; it divides the channel count.

    Example::

        >>> nn.ChannelShuffle(2)(fjax.arange(4.).reshape(1, 4, 1)).flatten()
        tensor([0., 2., 1., 3.], dtype=fjax.float32)
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


__all__ = ["ChannelShuffle"]
