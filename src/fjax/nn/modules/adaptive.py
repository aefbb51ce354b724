"""AdaptiveLogSoftmaxWithLoss (torch.nn.modules.adaptive): the adaptive softmax of Grave et al."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

from ...dispatch import functions as _F
from ...tensor import Tensor
from .. import functional as F
from ..containers import ModuleList, Sequential
from ..module import Module
from ._utils import module_error
from .linear import Linear

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax approximation for many classes (Grave et al., 2016): frequent classes
    (below ``cutoffs[0]``) sit in a head with one entry per tail cluster; each cluster's classes
    get a smaller projection (``in_features // div_value ** (i + 1)``). Calling it with inputs
    and targets returns ``(output, loss)``: each target's log-probability and the mean NLL.

    Args:
        in_features: the size of each input sample.
        n_classes: the number of classes.
        cutoffs: increasing class boundaries between 1 and ``n_classes - 1`` splitting the clusters.
        div_value: the divisor of each next cluster's projection size (default 4.0).
        head_bias: if True, the head has a bias (default False).
        device: the device of the parameters (default None: the default device).
        dtype: the dtype of the parameters (default None: the default float dtype).

    Example::

        >>> asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4])
        >>> out, loss = asm(fjax.ones(3, 8), fjax.tensor([0, 5, 9]))
        >>> out.shape, loss.shape, asm.log_prob(fjax.ones(3, 8)).exp().sum(1).round().tolist()
        (fjax.Size([3]), fjax.Size([]), [1.0, 1.0, 1.0])
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of unique, positive integers sorted in "
                f"an increasing order, where each value is between 1 and n_classes-1, got {cutoffs}"
            )
        kw = dict(device=device, dtype=dtype)
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw), Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        """Re-draw the head's and the clusters' projections as at construction.

        Example:
            >>> nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4]).reset_parameters()
        """
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        if target_.ndim == 1:
            if input_.ndim != 2 or input_.shape[0] != target_.shape[0]:
                raise module_error(
                    self,
                    f"a 1D target expects a 2D input with the same batch size, got input {tuple(input_.shape)} "
                    f"and target {tuple(target_.shape)}",
                )
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise module_error(self, f"a 0D target expects a 1D input, got input {tuple(input_.shape)}")
        else:
            raise module_error(self, "0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if bool(((target < 0) | (target >= self.n_classes)).any()):
            raise module_error(
                self,
                f"target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{target.min().item()}, {target.max().item()}] were found",
            )
        head_logprob = F.log_softmax(self.head(input), dim=1)
        gather = target.clone()
        output = None
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            mask = (target >= low) & (target < high)
            gather = _F.where(mask, self.shortlist_size + i, gather)
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            relative = (target - low).clamp(0, high - low - 1)
            local = cluster_logprob.gather(1, relative.unsqueeze(1)).squeeze(1)
            local = _F.where(mask, local, 0.0)
            output = local if output is None else output + local
        output = output + head_logprob.gather(1, gather.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return _F.cat(parts, dim=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """The ``(N, n_classes)`` log-probabilities of every class.

        Args:
            input: the ``(N, in_features)`` inputs.

        Example:
            >>> asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4])
            >>> asm.log_prob(fjax.ones(2, 8)).shape
            fjax.Size([2, 10])
        """
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each input: ``log_prob(input).argmax(dim=1)``.

        Args:
            input: the ``(N, in_features)`` inputs.

        Example:
            >>> asm = nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4])
            >>> asm.predict(fjax.ones(2, 8)).shape
            fjax.Size([2])
        """
        return self.log_prob(input).argmax(dim=1)


__all__ = ["AdaptiveLogSoftmaxWithLoss"]
