"""Stochastic Weight Averaging and EMA of models (``torch.optim.swa_utils``)."""

from __future__ import annotations

import itertools
import math
from copy import deepcopy
from typing import Any, Callable, Iterable, Literal

from ..autograd.grad_mode import no_grad
from ..creation import tensor as _tensor
from ..dtypes import int64
from ..nn.module import Module
from ..tensor import Tensor
from .lr_scheduler import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = [
    "AveragedModel",
    "update_bn",
    "SWALR",
    "get_ema_multi_avg_fn",
    "get_swa_multi_avg_fn",
    "get_ema_avg_fn",
    "get_swa_avg_fn",
]


def _is_float(t: Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """An in-place exponential-moving-average update of lists of tensors, for ``AveragedModel(multi_avg_fn=)``.

    ``ema = ema + (1 - decay) * (current - ema)`` (torch's ``lerp``; integer tensors
    ``ema * decay + current * (1 - decay)``).

    Args:
        decay: the EMA decay, in [0, 1].

    Example:
        >>> update = optim.swa_utils.get_ema_multi_avg_fn(0.9)
        >>> ema = [fjax.zeros(2)]
        >>> update(ema, [fjax.ones(2)], 1)
        >>> ema[0]
        tensor([0.1000, 0.1000], dtype=fjax.float32)
    """
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    def ema_update(ema_param_list, current_param_list, _) -> None:
        with no_grad():
            if _is_float(ema_param_list[0]):
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """An in-place running-mean update of lists of tensors, for ``AveragedModel(multi_avg_fn=)``.

    ``avg = avg + (current - avg) / (num_averaged + 1)``.

    Args:
        (none): it takes no arguments.

    Example:
        >>> update = optim.swa_utils.get_swa_multi_avg_fn()
        >>> avg = [fjax.zeros(2)]
        >>> update(avg, [fjax.ones(2)], 1)
        >>> avg[0]
        tensor([0.5000, 0.5000], dtype=fjax.float32)
    """

    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        with no_grad():
            if _is_float(averaged_param_list[0]):
                weight = 1 / (num_averaged + 1)
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.lerp_(p_model, float(weight) if isinstance(weight, Tensor) else weight)
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    diff = p_model - p_avg
                    if isinstance(num_averaged, Tensor):
                        p_avg.copy_(p_avg + diff / (num_averaged + 1))
                    else:
                        p_avg.copy_(p_avg + diff * (1.0 / (num_averaged + 1)))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """An exponential-moving-average function of one tensor, for ``AveragedModel(avg_fn=)``.

    Returns ``decay * ema + (1 - decay) * current``.

    Args:
        decay: the EMA decay, in [0, 1].

    Example:
        >>> optim.swa_utils.get_ema_avg_fn(0.5)(fjax.zeros(2), fjax.ones(2), 1)
        tensor([0.5000, 0.5000], dtype=fjax.float32)
    """
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable:
    """A running-mean function of one tensor, for ``AveragedModel(avg_fn=)``.

    Returns ``avg + (current - avg) / (num_averaged + 1)``.

    Args:
        (none): it takes no arguments.

    Example:
        >>> optim.swa_utils.get_swa_avg_fn()(fjax.zeros(2), fjax.full((2,), 3.0), 2)
        tensor([1., 1.], dtype=fjax.float32)
    """

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are an average (SWA, or EMA with an ``avg_fn``) of the
    parameters ``model`` had at each ``update_parameters(model)`` call.

    The first update copies the parameters; later ones apply ``multi_avg_fn`` (in place, to
    all tensors at once) or ``avg_fn`` (per tensor), by default the running mean. Buffers are
    copied from ``model`` unless ``use_buffers``, which averages them with the parameters.
    ``n_averaged`` (a buffer) counts the updates.

    Args:
        model: the model to average.
        device: the device of the averaged copy (default: the model's).
        avg_fn: ``avg_fn(averaged, current, num_averaged) -> new averaged`` for one tensor.
        multi_avg_fn: ``multi_avg_fn(averaged_list, current_list, num_averaged)`` updating in place.
        use_buffers: average the buffers too (instead of copying them).

    Example:
        >>> model = nn.Linear(2, 1)
        >>> swa = optim.swa_utils.AveragedModel(model)
        >>> for value in (1.0, 3.0):
        ...     with fjax.no_grad():
        ...         _ = model.weight.fill_(value)
        ...     swa.update_parameters(model)
        >>> swa.module.weight, swa.n_averaged
        (Parameter containing:
        tensor([[2., 2.]], dtype=fjax.float32, requires_grad=True), tensor(2, dtype=fjax.int64))
    """

    n_averaged: Tensor

    def __init__(
        self,
        model: Module,
        device=None,
        avg_fn: Callable | None = None,
        multi_avg_fn: Callable | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _tensor(0, dtype=int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """Call the averaged copy of the model.

        Args:
            args: the model's positional arguments.
            kwargs: the model's keyword arguments.

        Example:
            >>> swa = optim.swa_utils.AveragedModel(nn.Linear(2, 1))
            >>> swa(fjax.ones(3, 2)).shape
            fjax.Size([3, 1])
        """
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters (and buffers, with ``use_buffers``) into the average.

        Args:
            model: the model being trained (same architecture).

        Example:
            >>> model = nn.Linear(2, 1)
            >>> ema = optim.swa_utils.AveragedModel(model, multi_avg_fn=optim.swa_utils.get_ema_multi_avg_fn(0.9))
            >>> ema.update_parameters(model)
            >>> bool((ema.module.weight == model.weight).all())
            True
        """
        self_param = (
            itertools.chain(self.module.parameters(), self.module.buffers()) if self.use_buffers else self.parameters()
        )
        model_param = itertools.chain(model.parameters(), model.buffers()) if self.use_buffers else model.parameters()
        self_detached, model_detached = [], []
        copy_param = bool(self.n_averaged == 0)
        with no_grad():
            for p_averaged, p_model in zip(self_param, model_param):
                p_model_ = p_model.detach().to(p_averaged.device)
                self_detached.append(p_averaged)
                model_detached.append(p_model_)
                if copy_param:
                    p_averaged.copy_(p_model_)
            if self.n_averaged > 0:
                if self.multi_avg_fn is not None or self.avg_fn is None:
                    groups: dict = {}
                    for p_avg, p_model in zip(self_detached, model_detached):
                        groups.setdefault((str(p_avg.device), p_avg.dtype), ([], []))
                        groups[(str(p_avg.device), p_avg.dtype)][0].append(p_avg)
                        groups[(str(p_avg.device), p_avg.dtype)][1].append(p_model)
                    multi_avg_fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                    for self_params, model_params in groups.values():
                        multi_avg_fn(self_params, model_params, self.n_averaged.to(self_params[0].device))
                else:
                    for p_averaged, p_model in zip(self_detached, model_detached):
                        n_averaged = self.n_averaged.to(p_averaged.device)
                        p_averaged.copy_(self.avg_fn(p_averaged.detach(), p_model, n_averaged))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1


def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute the BatchNorm running statistics of ``model`` with one pass over ``loader``.

    The statistics are reset and accumulated as a cumulative average (``momentum=None``), as
    needed after averaging weights. Batches that are lists or tuples contribute their first
    element.

    Args:
        loader: an iterable of input batches.
        model: the model (its training mode is restored afterwards).
        device: move each batch there first.

    Example:
        >>> model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
        >>> optim.swa_utils.update_bn([fjax.randn(8, 2) for _ in range(3)], model)
        >>> int(model[1].num_batches_tracked), model[1].momentum
        (3, 0.1)
    """
    from ..nn.modules.normalization import _BatchNorm

    with no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
        for bn_module in momenta:
            bn_module.momentum = momenta[bn_module]
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to ``swa_lr`` over ``anneal_epochs`` steps, then keep it (for SWA).

    Args:
        optimizer: the optimizer.
        swa_lr: the final lr, one for all groups or one per group.
        anneal_epochs: the number of steps of the annealing (0: switch at once).
        anneal_strategy: ``"cos"`` or ``"linear"``.
        last_epoch: the index of the last step (-1 to start).

    Example:
        >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
        >>> sched = optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=2, anneal_strategy="linear")
        >>> lrs = []
        >>> for _ in range(3):
        ...     opt.step()
        ...     sched.step()
        ...     lrs.append(round(sched.get_last_lr()[0], 4))
        >>> lrs
        [0.55, 0.1, 0.1]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float,
        anneal_epochs: int = 10,
        anneal_strategy: Literal["cos", "linear"] = "cos",
        last_epoch: int = -1,
    ) -> None:
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        """The next lr of every group: ``swa_lr * alpha + lr0 * (1 - alpha)`` with the annealing's ``alpha``.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.swa_utils.SWALR(opt, swa_lr=0.5, anneal_epochs=0)
            >>> sched.get_last_lr()
            [0.5]
        """
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [
            self._get_initial_lr(float(group["lr"]), group["swa_lr"], prev_alpha)
            for group in self.optimizer.param_groups
        ]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer and the annealing function.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sd = optim.swa_utils.SWALR(opt, swa_lr=0.5).state_dict()
            >>> sd["_anneal_strategy"], sd["anneal_epochs"], "optimizer" in sd
            ('cos', 10, False)
        """
        return self._own_state(exclude=("optimizer", "anneal_func"))

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what ``state_dict()`` saved.

        Args:
            state_dict: a dict from ``state_dict()``.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> a = optim.swa_utils.SWALR(opt, swa_lr=0.5)
            >>> b = optim.swa_utils.SWALR(opt, swa_lr=0.2, anneal_strategy="linear")
            >>> b.load_state_dict(a.state_dict())
            >>> b._anneal_strategy, b.anneal_func is b._cosine_anneal
            ('cos', True)
        """
        self._load_own(state_dict)
        self._set_anneal_func(self._anneal_strategy)
