"""Top-level functions whose torch signature differs from both the op table's and
``torch.nn.functional``'s: ``torch.batch_norm``, ``torch.dropout`` and ``torch.poisson_nll_loss``
take their parameters in their own order (and ``train``, not ``training``); ATen's batch norms
(``native_batch_norm`` & co.) also write their running statistics in place."""

from __future__ import annotations

from .creation import empty
from .dispatch import functions as _F
from .dtypes import uint8
from .nn import functional as F
from .tensor import Tensor

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}  # torch's Reduction enum, the top-level ops' int


def batch_norm(
    input: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """``F.batch_norm`` in ``torch.batch_norm``'s order: ``weight`` and ``bias`` come before the
    running statistics, which a training step updates in place.

    Example::

        >>> x = fjax.tensor([[1.0, 10.0], [3.0, 30.0]])
        >>> mean, var = fjax.zeros(2), fjax.ones(2)
        >>> fjax.batch_norm(x, None, None, mean, var, True, 0.5, 1e-5)
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]], dtype=fjax.float32)
        >>> mean
        tensor([ 1., 10.], dtype=fjax.float32)
    """
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def dropout(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """``torch.dropout``: ``F.dropout(input, p, training=train)``, drawing from the default generator.

    Example::

        >>> _ = fjax.manual_seed(0)
        >>> sorted(set(fjax.dropout(fjax.ones(1000), 0.5, True).tolist()))
        [0.0, 2.0]
        >>> fjax.dropout(fjax.ones(3), 0.5, False)
        tensor([1., 1., 1.], dtype=fjax.float32)
    """
    return F.dropout(input, p, train)


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    eps: float = 1e-8,
    reduction: int | str = "mean",
) -> Tensor:
    """``F.poisson_nll_loss`` in ``torch.poisson_nll_loss``'s order, without the legacy
    ``size_average``/``reduce``; ``reduction`` is a name or torch's enum (0 none, 1 mean, 2 sum).

    Example::

        >>> x, t = fjax.tensor([0.0, 1.0]), fjax.tensor([1.0, 2.0])
        >>> fjax.poisson_nll_loss(x, t, True, False, 1e-8, 2)
        tensor(1.7183, dtype=fjax.float32)
    """
    reduction = _REDUCTIONS.get(reduction, reduction) if isinstance(reduction, int) else reduction
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=reduction)


def native_batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """ATen's ``native_batch_norm``: ``(output, save_mean, save_invstd)``. When training, the
    saved statistics are the batch mean and ``1 / sqrt(var + eps)`` per channel and the running
    buffers (if given) move towards the batch's as in ``F.batch_norm``; otherwise both saved
    statistics are empty.

    Example::

        >>> x = fjax.tensor([[1.0, 10.0], [3.0, 30.0]])
        >>> mean, var = fjax.zeros(2), fjax.ones(2)
        >>> out, save_mean, save_invstd = fjax.native_batch_norm(x, None, None, mean, var, True, 0.5, 0.0)
        >>> out, mean
        (tensor([[-1., -1.],
                [ 1.,  1.]], dtype=fjax.float32), tensor([ 1., 10.], dtype=fjax.float32))
    """
    stats = (None, None) if training else (running_mean, running_var)  # training reads the batch's
    out = _F._native_batch_norm(input, weight, bias, *stats, training, eps)
    if training and running_mean is not None and running_var is not None and input.numel():
        F._update_running("native_batch_norm", F._batch_stats, input, running_mean, running_var, momentum)
    return out


def _native_batch_norm_legit(input: Tensor, weight: Tensor | None, bias: Tensor | None, *args) -> tuple:
    """ATen's ``_native_batch_norm_legit``: ``native_batch_norm`` with the running buffers
    required, ``(input, weight, bias, running_mean, running_var, training, momentum, eps)``, or
    absent, ``(input, weight, bias, training, momentum, eps)``.

    Example::

        >>> x = fjax.tensor([[1.0], [3.0]])
        >>> fjax._native_batch_norm_legit(x, None, None, True, 0.1, 0.0)[1:]
        (tensor([2.], dtype=fjax.float32), tensor([1.], dtype=fjax.float32))
    """
    if len(args) == 3:
        return native_batch_norm(input, weight, bias, None, None, *args)
    return native_batch_norm(input, weight, bias, *args)


def _batch_norm_with_update(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor,
    running_var: Tensor,
    momentum: float,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """ATen's ``_batch_norm_with_update``: a training-mode ``native_batch_norm`` that updates the
    running buffers, plus cuDNN's reserve space (an empty uint8 tensor here).

    Example::

        >>> x = fjax.tensor([[1.0], [3.0]])
        >>> mean, var = fjax.zeros(1), fjax.ones(1)
        >>> _ = fjax._batch_norm_with_update(x, None, None, mean, var, 0.5, 0.0)
        >>> mean, var
        (tensor([1.], dtype=fjax.float32), tensor([1.5000], dtype=fjax.float32))
    """
    out, save_mean, save_invstd = native_batch_norm(input, weight, bias, running_mean, running_var, True, momentum, eps)
    return out, save_mean, save_invstd, empty(0, dtype=uint8)
