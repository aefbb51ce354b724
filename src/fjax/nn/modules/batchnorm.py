"""``torch.nn.modules.batchnorm``'s path: the BatchNorm layers (defined in ``.normalization``)."""

from .. import functional as F
from ..module import Module
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    SyncBatchNorm,
    _BatchNorm,
    _NormBase,
)


class sync_batch_norm:  # noqa: N801 - torch's name for its SyncBatchNorm autograd function
    """torch's cross-process batch-norm function (``sync_batch_norm.apply``): on fjax's one
    process, batch normalization with the batch statistics, updating the running ones.

    Example::

        >>> from fjax.nn.modules.batchnorm import sync_batch_norm
        >>> x = fjax.tensor([[1.0], [3.0]])
        >>> sync_batch_norm.apply(x, None, None, None, None, 0.0, 0.1, None, 1).flatten()
        tensor([-1.,  1.], dtype=fjax.float32)
    """

    @staticmethod
    def apply(input, weight, bias, running_mean, running_var, eps, momentum, process_group, world_size):
        """Normalize ``input`` by its batch statistics (see the class docstring).

        Args:
            input: the ``(N, C, *)`` input.
            weight: optional ``(C,)`` scale.
            bias: optional ``(C,)`` shift.
            running_mean: optional ``(C,)`` running mean, updated in place.
            running_var: optional ``(C,)`` running variance, updated in place.
            eps: added to the variance for stability.
            momentum: the running statistics' update factor.
            process_group: torch's process group; unused on one process.
            world_size: the number of processes; unused on one process.

        Example:
            >>> from fjax.nn.modules.batchnorm import sync_batch_norm
            >>> sync_batch_norm.apply(fjax.ones(2, 1), None, None, None, None, 1e-5, 0.1, None, 1).tolist()
            [[0.0], [0.0]]
        """
        return F.batch_norm(input, running_mean, running_var, weight, bias, True, momentum, eps)


__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyModuleMixin",
    "Module",
    "Parameter",
    "SyncBatchNorm",
    "UninitializedBuffer",
    "UninitializedParameter",
    "_BatchNorm",
    "_NormBase",
    "sync_batch_norm",
]
