"""Loss layers: modules over the nn.functional losses, with torch's arguments and buffers."""

from __future__ import annotations

import math

from ...tensor import Tensor
from .. import functional as F
from ..module import Module
from .distance import PairwiseDistance  # noqa: F401 - torch's module namespace
from .linear import Linear
from .linear_cross_entropy_options import LinearCrossEntropyOptions  # noqa: F401 - torch's module namespace


def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """torch's mapping of the deprecated ``size_average``/``reduce`` flags to ``reduction``."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else "mean" if size_average else "sum"


class _Loss(Module):
    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error: ``|input - target|`` elementwise (the two broadcast), then reduced.
    ``reduction`` is ``'mean'`` (default), ``'sum'`` or ``'none'``; the deprecated
    ``size_average``/``reduce`` flags map onto it as in torch.

    Args:
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> x = fjax.tensor([1., 2., 4.])
        >>> y = fjax.tensor([1., 0., 1.])
        >>> nn.L1Loss()(x, y)
        tensor(1.6667, dtype=fjax.float32)
        >>> nn.L1Loss(reduction='sum')(x, y)
        tensor(5., dtype=fjax.float32)
        >>> nn.L1Loss(reduction='none')(x, y)
        tensor([0., 2., 3.], dtype=fjax.float32)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error: ``(input - target) ** 2`` elementwise, then reduced; ``reduction`` is
    ``'mean'`` (default), ``'sum'`` or ``'none'``.

    Args:
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> x = fjax.tensor([1., 2., 4.])
        >>> y = fjax.tensor([1., 0., 1.])
        >>> nn.MSELoss()(x, y)
        tensor(4.3333, dtype=fjax.float32)
        >>> nn.MSELoss(reduction='none')(x, y)
        tensor([0., 4., 9.], dtype=fjax.float32)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Smooth L1 loss: with ``d = |input - target|``, ``0.5 * d ** 2 / beta`` where ``d < beta``,
    else ``d - 0.5 * beta`` (default ``beta=1``); then reduced, ``reduction`` is ``'mean'``
    (default), ``'sum'`` or ``'none'``.
    Compare :class:`HuberLoss`, which scales the linear part by ``delta`` instead.

    Args:
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').
        beta: where the loss turns from quadratic to linear (default 1.0).

    Example::

        >>> x = fjax.tensor([0.5, 3.])
        >>> y = fjax.zeros(2)
        >>> nn.SmoothL1Loss(reduction='none', beta=1.0)(x, y)
        tensor([0.1250, 2.5000], dtype=fjax.float32)
        >>> nn.SmoothL1Loss(reduction='none', beta=2.0)(x, y)
        tensor([0.0625, 2.0000], dtype=fjax.float32)
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Huber loss: with ``d = |input - target|``, ``0.5 * d ** 2`` where ``d < delta``, else
    ``delta * (d - 0.5 * delta)`` (default ``delta=1``, where it equals :class:`SmoothL1Loss`);
    then reduced, ``reduction`` is ``'mean'`` (default), ``'sum'`` or ``'none'``.

    Args:
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').
        delta: where the loss turns from quadratic to linear (default 1.0).

    Example::

        >>> x = fjax.tensor([0.5, 3.])
        >>> y = fjax.zeros(2)
        >>> nn.HuberLoss(reduction='none', delta=1.0)(x, y)
        tensor([0.1250, 2.5000], dtype=fjax.float32)
        >>> nn.HuberLoss(reduction='none', delta=2.0)(x, y)
        tensor([0.1250, 4.0000], dtype=fjax.float32)
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood: ``-input[n, target[n]]`` for log-probabilities ``(N, C, ...)`` (e.g.
    from :class:`LogSoftmax`) and integer class indices ``(N, ...)``. Each term is scaled by
    ``weight[target]`` when a per-class ``weight`` is given, and ``'mean'`` divides by the sum of
    those weights; targets equal to ``ignore_index`` (default ``-100``) are skipped.

    Args:
        weight: optional ``(C,)`` per-class weight (default None: all 1).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        ignore_index: a target value that adds nothing to the loss (default -100).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> logp = fjax.tensor([[-0.5, -1.0, -2.0], [-3.0, -0.1, -1.5]])
        >>> target = fjax.tensor([0, 2])
        >>> nn.NLLLoss()(logp, target)
        tensor(1., dtype=fjax.float32)
        >>> nn.NLLLoss(weight=fjax.tensor([1., 1., 3.]))(logp, target)
        tensor(1.2500, dtype=fjax.float32)
        >>> nn.NLLLoss(ignore_index=2)(logp, target)
        tensor(0.5000, dtype=fjax.float32)
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits ``(N, C, ...)`` with class indices or class probabilities.

    Equal to :class:`NLLLoss` of ``log_softmax(input, dim=1)``: the target is either integer
    class indices ``(N, ...)`` (with ``weight`` and ``ignore_index`` as in :class:`NLLLoss`) or
    float class probabilities shaped like the input. ``label_smoothing`` mixes the target with
    the uniform distribution; ``reduction`` is ``'mean'`` (default), ``'sum'`` or ``'none'``.

    Args:
        weight: optional ``(C,)`` per-class weight (default None: all 1).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        ignore_index: a class-index target value that adds nothing to the loss (default -100).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').
        label_smoothing: amount in ``[0, 1]`` of uniform smoothing of the targets (default 0.0).

    Example::

        >>> logits = fjax.tensor([[2., 0., 0.], [0., 0., 0.]])
        >>> nn.CrossEntropyLoss()(logits, fjax.tensor([0, 2]))
        tensor(0.6691, dtype=fjax.float32)
        >>> nn.CrossEntropyLoss(reduction='none', label_smoothing=0.1)(logits, fjax.tensor([0, 2]))
        tensor([0.3729, 1.0986], dtype=fjax.float32)
        >>> probs = fjax.tensor([[1., 0., 0.], [0., 0.5, 0.5]])
        >>> nn.CrossEntropyLoss()(logits, probs)
        tensor(0.6691, dtype=fjax.float32)
    """

    def __init__(
        self,
        weight=None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )  # fmt: skip


class BCELoss(_WeightedLoss):
    """Binary cross entropy ``-(y * log(p) + (1 - y) * log(1 - p))`` of probabilities ``p`` in
    ``[0, 1]`` against targets ``y`` of the same shape; the logs are clamped at -100, as in torch.
    An optional ``weight`` scales each element; ``reduction`` is ``'mean'`` (default), ``'sum'``
    or ``'none'``. Prefer :class:`BCEWithLogitsLoss`
    on raw scores.

    Args:
        weight: optional weight of each element's loss, broadcast to the input (default None).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> p = fjax.tensor([0.9, 0.2, 0.5])
        >>> y = fjax.tensor([1., 0., 1.])
        >>> nn.BCELoss()(p, y)
        tensor(0.3406, dtype=fjax.float32)
        >>> nn.BCELoss(reduction='none')(p, y)
        tensor([0.1054, 0.2231, 0.6931], dtype=fjax.float32)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of ``sigmoid(input)``, computed stably from the logits. ``weight``
    scales each element; ``pos_weight`` (broadcast over the last dim, one per class) scales the
    positive term ``y * log(sigmoid(x))``; ``reduction`` is ``'mean'`` (default), ``'sum'`` or ``'none'``.

    Args:
        weight: optional weight of each element's loss, broadcast to the input (default None).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').
        pos_weight: optional weight of the positive term, broadcast along the last dim (default None).

    Example::

        >>> z = fjax.tensor([2., -1., 0.])
        >>> y = fjax.tensor([1., 0., 1.])
        >>> nn.BCEWithLogitsLoss()(z, y)
        tensor(0.3778, dtype=fjax.float32)
        >>> nn.BCEWithLogitsLoss(reduction='none', pos_weight=fjax.tensor([2.]))(z, y)
        tensor([0.2539, 0.3133, 1.3863], dtype=fjax.float32)
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence ``target * (log(target) - input)`` summed, where ``input`` holds
    log-probabilities and ``target`` probabilities (log-probabilities with ``log_target=True``).
    ``reduction='batchmean'`` (sum divided by the batch size) gives the true KL divergence; the
    default ``'mean'`` averages over every element, as in torch.

    Args:
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'``, ``'batchmean'`` or ``'sum'`` (default 'mean').
        log_target: if True, the target is given as log-probabilities (default False).

    Example::

        >>> logq = fjax.tensor([[0.25, 0.75]]).log()
        >>> p = fjax.tensor([[0.5, 0.5]])
        >>> nn.KLDivLoss(reduction='batchmean')(logq, p)
        tensor(0.1438, dtype=fjax.float32)
        >>> nn.KLDivLoss(reduction='batchmean', log_target=True)(logq, p.log())
        tensor(0.1438, dtype=fjax.float32)
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    """Cosine embedding loss of row pairs ``(N, D)``: ``1 - cos(x1, x2)`` where ``target == 1``
    (similar pair) and ``max(0, cos(x1, x2) - margin)`` where ``target == -1``; ``reduction`` is
    ``'mean'`` (default), ``'sum'`` or ``'none'``.

    Args:
        margin: the margin of the ``-1`` case (default 0.0).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> a = fjax.tensor([[1., 0.], [1., 0.]])
        >>> b = fjax.tensor([[0., 1.], [1., 1.]])
        >>> target = fjax.tensor([1, -1])
        >>> nn.CosineEmbeddingLoss(reduction='none')(a, b, target)
        tensor([1.0000, 0.7071], dtype=fjax.float32)
        >>> nn.CosineEmbeddingLoss(margin=0.5, reduction='none')(a, b, target)
        tensor([1.0000, 0.2071], dtype=fjax.float32)
    """

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, self.margin, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """Ranking loss ``max(0, -target * (input1 - input2) + margin)``: ``target == 1`` asks for
    ``input1`` to rank above ``input2`` by at least ``margin``, ``-1`` the reverse;
    ``reduction`` is ``'mean'`` (default), ``'sum'`` or ``'none'``.

    Args:
        margin: the required score gap (default 0.0).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> x1 = fjax.tensor([1., 2., 3.])
        >>> x2 = fjax.tensor([2., 2., 1.])
        >>> y = fjax.tensor([1., 1., -1.])
        >>> nn.MarginRankingLoss(margin=0.5, reduction='none')(x1, x2, y)
        tensor([1.5000, 0.5000, 2.5000], dtype=fjax.float32)
    """

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """Hinge embedding loss of (typically distance) inputs: ``input`` where ``target == 1`` and
    ``max(0, margin - input)`` where ``target == -1`` (default ``margin=1``); ``reduction`` is
    ``'mean'`` (default), ``'sum'`` or ``'none'``.

    Args:
        margin: the margin of the ``-1`` case (default 1.0).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> x = fjax.tensor([0.3, 0.3, 2.0])
        >>> y = fjax.tensor([1., -1., -1.])
        >>> nn.HingeEmbeddingLoss(margin=1.0, reduction='none')(x, y)
        tensor([0.3000, 0.7000, 0.0000], dtype=fjax.float32)
    """

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss ``log(1 + exp(-target * input))`` with targets ``1`` or ``-1``;
    ``reduction`` is ``'mean'`` (default), ``'sum'`` or ``'none'``.

    Args:
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> x = fjax.tensor([2., -1., 0.])
        >>> y = fjax.tensor([1., 1., -1.])
        >>> nn.SoftMarginLoss(reduction='none')(x, y)
        tensor([0.1269, 1.3133, 0.6931], dtype=fjax.float32)
        >>> nn.SoftMarginLoss()(x, y)
        tensor(0.7111, dtype=fjax.float32)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label loss of ``(N, C)`` logits against 0/1 targets: the binary cross entropy of each
    class's sigmoid, optionally scaled by a per-class ``weight``, averaged over the ``C``
    classes; then reduced over ``N`` (``reduction`` is ``'mean'`` (default), ``'sum'`` or ``'none'``).

    Args:
        weight: optional ``(C,)`` per-class weight (default None).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> x = fjax.tensor([[2., -1., 0.]])
        >>> y = fjax.tensor([[1., 0., 1.]])
        >>> nn.MultiLabelSoftMarginLoss()(x, y)
        tensor(0.3778, dtype=fjax.float32)
        >>> nn.MultiLabelSoftMarginLoss(weight=fjax.tensor([1., 1., 0.]))(x, y)
        tensor(0.1467, dtype=fjax.float32)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, self.weight, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood of counts ``target`` under a predicted rate:
    ``exp(input) - target * input`` when ``log_input=True`` (default; ``input`` is the log-rate),
    else ``input - target * log(input + eps)``. ``full=True`` adds the Stirling term for
    ``target > 1``; ``reduction`` is ``'mean'`` (default), ``'sum'`` or ``'none'``.

    Args:
        log_input: whether the input is the log-rate (default True).
        full: if True, add Stirling's approximation of ``log(target!)`` (default False).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        eps: added to the input inside the log when ``log_input=False`` (default 1e-08).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> rate = fjax.tensor([1., 2.])
        >>> k = fjax.tensor([1., 3.])
        >>> nn.PoissonNLLLoss(log_input=False, reduction='none')(rate, k)
        tensor([ 1.0000, -0.0794], dtype=fjax.float32)
        >>> nn.PoissonNLLLoss(log_input=True, reduction='none')(rate.log(), k)
        tensor([ 1.0000, -0.0794], dtype=fjax.float32)
        >>> nn.PoissonNLLLoss(log_input=False, full=True, reduction='none')(rate, k)
        tensor([1.0000, 1.6846], dtype=fjax.float32)
    """

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average=None,
        eps: float = 1e-8,
        reduce=None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(
            log_input, target, log_input=self.log_input, full=self.full, eps=self.eps, reduction=self.reduction
        )


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood ``0.5 * (log(var) + (input - target) ** 2 / var)`` of
    ``target`` under a predicted mean ``input`` and variance ``var`` (clamped below at ``eps``;
    ``var`` may have one fewer dim or a last dim of 1 for a shared variance). ``full=True`` adds
    the constant ``0.5 * log(2 * pi)``; ``reduction`` is ``'mean'`` (default), ``'sum'`` or ``'none'``.

    Args:
        full: if True, add the constant ``0.5 * log(2 * pi)`` (default False).
        eps: the lower clamp of ``var`` (default 1e-06).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> mu = fjax.tensor([0., 1.])
        >>> y = fjax.tensor([1., 1.])
        >>> var = fjax.tensor([1., 0.5])
        >>> nn.GaussianNLLLoss(reduction='none')(mu, y, var)
        tensor([ 0.5000, -0.3466], dtype=fjax.float32)
        >>> nn.GaussianNLLLoss(full=True, reduction='none')(mu, y, var)
        tensor([1.4189, 0.5724], dtype=fjax.float32)
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction=reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """Triplet loss ``max(d(a, p) - d(a, n) + margin, 0)`` for anchor, positive and negative rows,
    with ``d`` the ``p``-norm distance (``eps`` added to the difference, as in torch).
    ``swap=True`` uses ``min(d(a, n), d(p, n))`` as the negative distance; ``reduction`` is
    ``'mean'`` (default), ``'sum'`` or ``'none'``.

    Args:
        margin: the required distance gap (default 1.0).
        p: the norm degree of the distance (default 2.0).
        eps: added inside the distance for stability (default 1e-06).
        swap: if True, use ``min(d(a, n), d(p, n))`` as the negative distance (default False).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> a = fjax.tensor([[0., 0.]])
        >>> pos = fjax.tensor([[3., 4.]])
        >>> neg = fjax.tensor([[1., 0.]])
        >>> nn.TripletMarginLoss(margin=1.0, p=2.0)(a, pos, neg)
        tensor(5.0000, dtype=fjax.float32)
        >>> nn.TripletMarginLoss(margin=1.0, p=1.0)(a, pos, neg)
        tensor(7.0000, dtype=fjax.float32)
    """

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average=None,
        reduce=None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got margin={margin}")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(
            anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps, swap=self.swap,
            reduction=self.reduction,
        )  # fmt: skip


class NLLLoss2d(NLLLoss):
    """Deprecated alias of :class:`NLLLoss` for ``(N, C, H, W)`` inputs (torch keeps it for old code).

    Args:
        weight: optional ``(C,)`` per-class weight (default None: all 1).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        ignore_index: a target value that adds nothing to the loss (default -100).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> logp = fjax.zeros(1, 2, 1, 1).log_softmax(1)
        >>> nn.NLLLoss2d()(logp, fjax.tensor([[[1]]]))
        tensor(0.6931, dtype=fjax.float32)
    """


class CTCLoss(_Loss):
    """Connectionist temporal classification loss: the negative log-likelihood of each target
    sequence summed over all its alignments to the input frames (``F.ctc_loss``).

    Args:
        blank: the blank label (default 0).
        reduction: ``'none'``, ``'mean'`` (default: each loss divided by its target length, then
            averaged) or ``'sum'``.
        zero_infinity: if True, infinite losses (and their gradients) become 0 (default False).

    Example::

        >>> lp = fjax.tensor([[[0.5, 0.5]], [[0.5, 0.5]]]).log()
        >>> nn.CTCLoss()(lp, fjax.tensor([[1]]), fjax.tensor([2]), fjax.tensor([1]))
        tensor(0.2877, dtype=fjax.float32)
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths, target_lengths) -> Tensor:
        return F.ctc_loss(
            log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction, self.zero_infinity
        )


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss of ``(N, C)`` scores against class indices: for each sample,
    ``sum over i != y of max(0, margin - x[y] + x[i]) ** p / C`` (times ``weight[y]`` if given).

    Args:
        p: the power of each hinge term, 1 (default) or 2.
        margin: the margin (default 1.0).
        weight: optional ``(C,)`` per-class weight (default None).
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> nn.MultiMarginLoss()(fjax.tensor([[0.1, 0.2, 0.4, 0.8]]), fjax.tensor([3]))
        tensor(0.3250, dtype=fjax.float32)
    """

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        size_average=None,
        reduce=None,
        reduction: str = "mean",
    ):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p}")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: weight must be None or 1D, got shape {tuple(weight.shape)}")
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(
            input, target, p=self.p, margin=self.margin, weight=self.weight, reduction=self.reduction
        )


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss of ``(N, C)`` scores: ``target`` lists each sample's classes,
    ended by the first ``-1``; each (target class, other class) pair adds
    ``max(0, 1 - (x[target] - x[other])) / C``.

    Args:
        size_average: deprecated; if given (with ``reduce``), overrides ``reduction`` as in torch (default None).
        reduce: deprecated; if given (with ``size_average``), overrides ``reduction`` as in torch (default None).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> nn.MultiLabelMarginLoss()(fjax.tensor([[0.1, 0.2, 0.4, 0.8]]), fjax.tensor([[3, 0, -1, 1]]))
        tensor(0.8500, dtype=fjax.float32)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss ``max(d(a, p) - d(a, n) + margin, 0)`` with any distance ``d`` (default
    ``pairwise_distance``); ``swap=True`` uses ``min(d(a, n), d(p, n))`` as the negative distance.

    Args:
        distance_function: a callable ``(x, y) -> distances`` (default None: ``F.pairwise_distance``).
        margin: the required distance gap, > 0 (default 1.0).
        swap: if True, use ``min(d(a, n), d(p, n))`` as the negative distance (default False).
        reduction: ``'none'``, ``'mean'`` or ``'sum'`` (default 'mean').

    Example::

        >>> loss = nn.TripletMarginWithDistanceLoss(distance_function=nn.PairwiseDistance(eps=0.0))
        >>> loss(fjax.zeros(1, 2), fjax.tensor([[3.0, 4.0]]), fjax.tensor([[1.0, 0.0]]))
        tensor(5., dtype=fjax.float32)
    """

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False, reduction: str = "mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin}")
        self.distance_function = distance_function if distance_function is not None else F.pairwise_distance
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function, margin=self.margin,
            swap=self.swap, reduction=self.reduction,
        )  # fmt: skip


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of ``Linear(in_features, C * prod(out_features))``'s logits (reshaped to
    ``(N, C, *out_features)``) against ``target``, as ``F.linear_cross_entropy``: the projection
    is a ``self.linear`` submodule. torch chunks the batch to save memory under ``options``;
    fjax computes the same values in one XLA computation.

    Args:
        in_features: the size of each input sample.
        num_classes: the number of classes ``C``.
        out_features: the extra dims ``(d_1, ..., d_K)`` of a K-dimensional loss (default ``()``).
        bias: if True, the projection has a bias (default False).
        device: the device of the projection's parameters (default None).
        dtype: the dtype of the projection's parameters (default None).
        reduction: ``'none'``, ``'mean'`` (default) or ``'sum'``.
        weight: optional ``(C,)`` per-class rescaling weight.
        ignore_index: a target value that is ignored (default None, meaning -100).
        label_smoothing: amount of smoothing in ``[0, 1]`` (default 0.0).
        options: a ``LinearCrossEntropyOptions`` (torch's chunking choices; kept, not needed by fjax).

    Example::

        >>> loss = nn.LinearCrossEntropyLoss(2, 3)
        >>> loss.linear.weight.shape
        fjax.Size([3, 2])
        >>> loss(fjax.zeros(4, 2), fjax.tensor([0, 1, 2, 0]))
        tensor(1.0986, dtype=fjax.float32, grad_fn=...)
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        out_features: tuple[int, ...] = (),
        bias: bool = False,
        device=None,
        dtype=None,
        reduction: str = "mean",
        weight: Tensor | None = None,
        ignore_index: int | None = None,
        label_smoothing: float = 0.0,
        options=None,
    ):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(
                f"LinearCrossEntropyLoss: expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}"
            )
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(
                f"LinearCrossEntropyLoss: expected label_smoothing to be in range [0, 1], got {label_smoothing}"
            )
        super().__init__(weight, None, None, reduction)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(
            in_features, math.prod(self.out_features, start=num_classes), bias=bias, device=device, dtype=dtype
        )
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        shape = (self.num_classes, *self.out_features)
        linear_bias = self.linear.bias.reshape(shape) if self.linear.bias is not None else None
        return F.linear_cross_entropy(
            input,
            self.linear.weight.reshape(*shape, self.linear.in_features),
            target,
            linear_bias=linear_bias,
            weight=self.weight,
            reduction=self.reduction,
            ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing,
            options=self.options,
        )

    def extra_repr(self) -> str:
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, reduction={self.reduction}, "
            f"ignore_index={self.ignore_index}, label_smoothing={self.label_smoothing}, options={self.options}"
        )
