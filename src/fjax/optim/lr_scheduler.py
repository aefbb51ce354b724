"""Learning-rate schedulers with ``torch.optim.lr_scheduler``'s semantics.

A scheduler rewrites ``group["lr"]`` of its optimizer's param groups on every ``step()``;
the optimizer reads the groups' hyper-parameters as traced numbers, so a new lr never
recompiles. The formulas are torch's chainable ones (each step scales the group's current
lr), so schedulers compose and a hand-edited lr carries on exactly as in torch. optax's
schedules are closed-form functions of the step count and cannot express that chaining.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp

from ..errors import OpError
from ..tensor import Tensor
from .optimizer import Optimizer


def _copy(value):
    return Tensor._wrap(value._data) if isinstance(value, Tensor) else value


def _values(optimizer: Optimizer, key: str) -> list:
    return [_copy(group[key]) for group in optimizer.param_groups]


def _set_value(group: dict, key: str, value) -> None:
    """Set ``group[key]``; a Tensor entry keeps its identity (its values are replaced)."""
    if isinstance(group[key], Tensor):
        old = group[key]
        old._data = jnp.asarray(value._data if isinstance(value, Tensor) else value, old._data.dtype)
        old._vc[0] += 1
    else:
        group[key] = value


def _resolve_last(name: str, last_epoch: int, last_step: int | None) -> int:
    """OneFlow's ``last_step`` and torch's ``last_epoch`` name the same index; accept either."""
    if last_step is None:
        return last_epoch
    if last_epoch != -1 and last_epoch != last_step:
        raise ValueError(f"{name}: last_epoch={last_epoch} and last_step={last_step} disagree; give one of them")
    return last_step


def _per_group(name: str, optimizer: Optimizer, value) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups: {name} has {len(value)} values, "
                f"param_groups has {len(optimizer.param_groups)}"
            )
        return list(value)
    return [value] * len(optimizer.param_groups)


class LRScheduler:
    """Base class: ``step()`` advances ``last_epoch`` and writes ``get_lr()`` into the groups.

    Args:
        optimizer: the optimizer whose ``param_groups[i]["lr"]`` this scheduler sets.
        last_epoch: index of the last step taken; -1 starts a new schedule (and records each
            group's ``initial_lr``), other values resume one.
        verbose: print every group's new lr on each step (OneFlow's and torch's flag).
        last_step: OneFlow's name for ``last_epoch``; the attribute is readable and writable
            under both names, and ``state_dict()`` carries both keys.

    Example:
        >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
        >>> sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [1.0, 1.0, 0.5, 0.5]
    """

    _is_initial = False
    verbose = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1, verbose: bool = False, *, last_step=None):
        last_epoch = _resolve_last(type(self).__name__, last_epoch, last_step)
        self.verbose = verbose
        if not isinstance(optimizer, Optimizer):
            raise OpError(
                f"fjax.optim.lr_scheduler.{type(self).__name__}: {type(optimizer).__name__} is not an Optimizer"
            )
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"fjax.optim.lr_scheduler.{type(self).__name__}: param 'initial_lr' is not specified in "
                        f"param_groups[{i}] when resuming a scheduler with last_epoch={last_epoch}; load the "
                        "optimizer's state_dict first"
                    )
        self.base_lrs = _values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    @property
    def last_step(self) -> int:
        """OneFlow's name of ``last_epoch`` (the index of the last step taken).

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            >>> sched.step()
            >>> sched.last_step, sched.last_epoch
            (1, 1)
        """
        return self.last_epoch

    @last_step.setter
    def last_step(self, value: int) -> None:
        self.last_epoch = value

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list:
        """The next lr of every group (subclasses define it).

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            >>> sched.step()
            >>> sched.get_lr()  # the closed form at last_epoch
            [0.25]
        """
        raise NotImplementedError(f"{type(self).__name__}.get_lr")

    def get_last_lr(self) -> list:
        """The lr of every group after the last ``step()``.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            >>> sched.step()
            >>> sched.get_last_lr()
            [0.5]
        """
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one step (``epoch`` is torch's deprecated jump to a given step).

        Args:
            epoch: torch's deprecated argument: the step to jump to.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            >>> opt.step()
            >>> sched.step()
            >>> opt.param_groups[0]["lr"]
            0.5
        """
        self._step_count += 1
        if epoch is not None:
            warnings.warn(
                "The epoch parameter in `scheduler.step()` is deprecated (as in torch); the closed form is used "
                "where available",
                UserWarning,
                stacklevel=2,
            )
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        self._write(values)

    def _write(self, values) -> None:
        for i, (group, lr) in enumerate(zip(self.optimizer.param_groups, values)):
            _set_value(group, "lr", lr)
            if self.verbose:
                print(f"{type(self).__name__}: step {self.last_epoch}, lr of param_groups[{i}] set to {lr}")
        self._last_lr = _values(self.optimizer, "lr")

    def _own_state(self, exclude=("optimizer",)) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in exclude}
        if "last_epoch" in out:
            out["last_step"] = out["last_epoch"]  # OneFlow's key, for OneFlow-style readers
        return out

    def _load_own(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        last_step = state_dict.pop("last_step", None)
        if last_step is not None and "last_epoch" not in state_dict:
            state_dict["last_epoch"] = last_step  # a OneFlow state dict
        self.__dict__.update(state_dict)

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer (torch's layout), plus OneFlow's ``last_step``.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            >>> sched.step()
            >>> sched.state_dict()["last_epoch"], sched.state_dict()["_last_lr"]
            (1, [0.5])
        """
        return self._own_state()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by ``state_dict()`` (torch's or OneFlow's ``last_step`` key).

        Args:
            state_dict: a dict from ``state_dict()``.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            >>> sched.step()
            >>> other = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
            >>> other.load_state_dict(sched.state_dict())
            >>> other.last_epoch, other.get_last_lr()
            (1, [0.5])
        """
        self._load_own(state_dict)


def _lr_lambdas(optimizer: Optimizer, lr_lambda) -> list:
    """One function per param group (LambdaLR, MultiplicativeLR): a list as given, its length checked
    with torch's message, else one function repeated."""
    if isinstance(lr_lambda, (list, tuple)):
        if len(lr_lambda) != len(optimizer.param_groups):
            raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
        return list(lr_lambda)
    return [lr_lambda] * len(optimizer.param_groups)


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(step)`` (one function, or one per group).

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        lr_lambda: a function of the step giving the factor of ``initial_lr``, or one per group.
        last_epoch: index of the last step taken; -1 starts a new schedule, other values resume one (default -1).
        last_step: OneFlow's name for ``last_epoch``; give at most one of the two (default None).
        verbose: if True, print every group's new lr on each step (default False).

    Example:
        >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
        >>> sched = optim.lr_scheduler.LambdaLR(opt, lambda step: 1 / (step + 1))
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(round(sched.get_last_lr()[0], 4))
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [1.0, 0.5, 0.3333, 0.25]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable | Sequence[Callable],
        last_epoch: int = -1,
        last_step: int | None = None,
        verbose: bool = False,
    ):
        self.optimizer = optimizer
        self.lr_lambdas = _lr_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def state_dict(self) -> dict[str, Any]:
        """As torch: functions are not saved, callable objects save their ``__dict__``.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.LambdaLR(opt, lambda step: 0.5**step)
            >>> sched.state_dict()["lr_lambdas"]  # a plain function is not saved
            [None]
        """
        out = self._own_state(("optimizer", "lr_lambdas"))
        out["lr_lambdas"] = [None if isinstance(f, types.FunctionType) else dict(f.__dict__) for f in self.lr_lambdas]
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes; callable objects get their saved ``__dict__`` back.

        Args:
            state_dict: a dict from ``state_dict()``.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.LambdaLR(opt, lambda step: 0.5**step)
            >>> sched.step()
            >>> other = optim.lr_scheduler.LambdaLR(opt, lambda step: 0.5**step)
            >>> other.load_state_dict(sched.state_dict())
            >>> other.last_epoch, other.get_last_lr()
            (1, [0.5])
        """
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas")
        self._load_own(state_dict)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)

    def get_lr(self) -> list:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]

    _get_closed_form_lr = get_lr


class MultiplicativeLR(LRScheduler):
    """Multiply every group's lr by ``lr_lambda(step)`` on each step (one function, or one per group).

    Unlike :class:`LambdaLR` (``initial_lr * lr_lambda(step)``) the factors accumulate: after
    ``n`` steps the lr is ``initial_lr * lr_lambda(1) * ... * lr_lambda(n)``, as in torch. There
    is no closed form, so ``step(epoch)`` applies one more factor at ``epoch``, as torch does.
    ``state_dict()`` saves what torch saves: nothing of plain functions, the ``__dict__`` of
    callable objects.

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        lr_lambda: a function of the step giving the factor applied each step, or one per group.
        last_epoch: index of the last step taken; -1 starts a new schedule, other values resume one (default -1).
        last_step: OneFlow's name for ``last_epoch``; give at most one of the two (default None).
        verbose: if True, print every group's new lr on each step (default False).

    Example::

        >>> opt = fjax.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sch = fjax.optim.lr_scheduler.MultiplicativeLR(opt, lambda step: 0.5)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(sch.get_last_lr()[0])
        ...     sch.step()
        >>> lrs
        [1.0, 0.5, 0.25, 0.125]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable | Sequence[Callable],
        last_epoch: int = -1,
        last_step: int | None = None,
        verbose: bool = False,
    ):
        self.optimizer = optimizer
        self.lr_lambdas = _lr_lambdas(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"MultiplicativeLR: lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    state_dict = LambdaLR.state_dict
    load_state_dict = LambdaLR.load_state_dict

    def get_lr(self) -> list:
        if self._is_initial:
            return _values(self.optimizer, "lr")
        return [group["lr"] * fn(self.last_epoch) for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` steps.

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        step_size: the number of steps between decays.
        gamma: the decay factor (default 0.1).
        last_epoch: index of the last step taken; -1 starts a new schedule, other values resume one (default -1).
        last_step: OneFlow's name for ``last_epoch``; give at most one of the two (default None).
        verbose: if True, print every group's new lr on each step (default False).

    Example:
        >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
        >>> sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [1.0, 1.0, 0.5, 0.5]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        step_size: int,
        gamma: float = 0.1,
        last_epoch: int = -1,
        last_step: int | None = None,
        verbose: bool = False,
    ):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self) -> list:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone (a repeated milestone multiplies again).

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        milestones: the step indices at which the lr decays.
        gamma: the decay factor (default 0.1).
        last_epoch: index of the last step taken; -1 starts a new schedule, other values resume one (default -1).
        last_step: OneFlow's name for ``last_epoch``; give at most one of the two (default None).
        verbose: if True, print every group's new lr on each step (default False).

    Example:
        >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
        >>> sched = optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.1)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(round(sched.get_last_lr()[0], 4))
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [1.0, 0.1, 0.1, 0.01]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Sequence[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
        last_step: int | None = None,
        verbose: bool = False,
    ):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self) -> list:
        if self.last_epoch not in self.milestones:
            return _values(self.optimizer, "lr")
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        milestones = sorted(m for m, n in self.milestones.items() for _ in range(n))
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch) for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale the lr by ``factor`` for the first ``total_iters`` steps.

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        factor: the factor the lr is scaled by until ``total_iters`` (default 0.3333333333333333).
        total_iters: the number of scaled steps (default 5).
        last_epoch: index of the last step taken; -1 starts a new schedule, other values resume one (default -1).
        last_step: OneFlow's name for ``last_epoch``; give at most one of the two (default None).
        verbose: if True, print every group's new lr on each step (default False).

    Example:
        >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
        >>> sched = optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [0.5, 0.5, 1.0, 1.0]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
        last_step: int | None = None,
        verbose: bool = False,
    ):
        if not 0 <= factor <= 1.0:
            raise ValueError(f"ConstantLR: constant multiplicative factor expected to be between 0 and 1, got {factor}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self) -> list:
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _values(self.optimizer, "lr")
        return [group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [
            base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)) for base in self.base_lrs
        ]


class LinearLR(LRScheduler):
    """Scale the lr by a factor going linearly from ``start_factor`` to ``end_factor`` in ``total_iters`` steps.

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        start_factor: the factor of the first step (default 0.3333333333333333).
        end_factor: the factor from ``total_iters`` on (default 1.0).
        total_iters: the number of steps the factor takes to reach ``end_factor`` (default 5).
        last_epoch: index of the last step taken; -1 starts a new schedule, other values resume one (default -1).
        last_step: OneFlow's name for ``last_epoch``; give at most one of the two (default None).
        verbose: if True, print every group's new lr on each step (default False).

    Example:
        >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
        >>> sched = optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [0.25, 0.5, 0.75, 1.0]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
        last_step: int | None = None,
        verbose: bool = False,
    ):
        if not 0 < start_factor <= 1.0:
            raise ValueError(f"LinearLR: start_factor expected to be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1.0:
            raise ValueError(f"LinearLR: end_factor expected to be in [0, 1], got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self) -> list:
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _values(self.optimizer, "lr")
        delta = self.end_factor - self.start_factor
        scale = 1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta)
        return [group["lr"] * scale for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * frac) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every step.

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        gamma: the factor the lr is multiplied by each step.
        last_epoch: index of the last step taken; -1 starts a new schedule, other values resume one (default -1).
        last_step: OneFlow's name for ``last_epoch``; give at most one of the two (default None).
        verbose: if True, print every group's new lr on each step (default False).

    Example:
        >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
        >>> sched = optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [1.0, 0.5, 0.25, 0.125]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        gamma: float,
        last_epoch: int = -1,
        last_step: int | None = None,
        verbose: bool = False,
    ):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self) -> list:
        if self._is_initial:
            return _values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from ``initial_lr`` to ``eta_min`` over ``T_max`` steps (then back up, as torch).

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        T_max: the number of steps of the half cosine.
        eta_min: the minimum lr (default 0.0).
        last_epoch: index of the last step taken; -1 starts a new schedule, other values resume one (default -1).
        last_step: OneFlow's name for ``last_epoch``; give at most one of the two (default None).
        verbose: if True, print every group's new lr on each step (default False).

    Example:
        >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
        >>> sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
        >>> lrs = []
        >>> for _ in range(5):
        ...     lrs.append(round(sched.get_last_lr()[0], 4))
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [1.0, 0.5, 0.0, 0.5, 1.0]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_max: int,
        eta_min: float = 0.0,
        last_epoch: int = -1,
        last_step: int | None = None,
        verbose: bool = False,
    ):  # noqa: N803
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def get_lr(self) -> list:
        groups, t, T = self.optimizer.param_groups, self.last_epoch, self.T_max  # noqa: N806
        if self._is_initial:
            return _values(self.optimizer, "lr")
        if self._step_count == 1 and t > 0:
            return [self.eta_min + (b - self.eta_min) * (1 + math.cos(t * math.pi / T)) / 2 for b in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:
            return [
                g["lr"] + (b - self.eta_min) * (1 - math.cos(math.pi / T)) / 2 for b, g in zip(self.base_lrs, groups)
            ]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (g["lr"] - self.eta_min) + self.eta_min for g in groups]

    def _get_closed_form_lr(self) -> list:
        cos = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cos for base in self.base_lrs]


def _check_schedulers(name: str, optimizer: Optimizer, schedulers: Sequence[LRScheduler]) -> None:
    if len(schedulers) < 1:
        raise ValueError(f"{name} expects at least one scheduler, but got none")
    for i, s in enumerate(schedulers):
        if not isinstance(s, LRScheduler):
            raise OpError(f"{name}: schedulers[{i}] is a {type(s).__name__}, expected an LRScheduler")
        if s.optimizer is not optimizer:
            raise ValueError(
                f"{name} expects all schedulers to belong to the same optimizer, but schedulers[{i}] "
                f"({type(s).__name__}) has a different one"
            )


class _Composite(LRScheduler):
    """State dict of a scheduler made of schedulers: its own attributes plus theirs."""

    def state_dict(self) -> dict[str, Any]:
        out = self._own_state(("optimizer", "_schedulers"))
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        inner = state_dict.pop("_schedulers")
        self._load_own(state_dict)
        for s, saved in zip(self._schedulers, inner):
            s.load_state_dict(saved)


def _lrs_at(name: str, scheduler: LRScheduler, step: int) -> list:
    """``scheduler``'s closed-form lrs at ``step`` (its ``last_epoch`` is set to ``step``): how
    OneFlow's composite schedulers query the scheduler they run (``get_lr(base_lr, step)``)."""
    closed = getattr(scheduler, "_get_closed_form_lr", None)
    if closed is None:
        raise OpError(f"{name}: {type(scheduler).__name__} has no closed form, so it cannot be run at a given step")
    scheduler.last_epoch = step
    values = closed()
    scheduler._last_lr = list(values)
    return values


class SequentialLR(_Composite):
    """Run ``schedulers[i]`` from ``milestones[i-1]`` on.

    By default (``interval_rescaling=None``) each scheduler restarts from its step 0 at its
    milestone, as torch's ``SequentialLR`` does. Passing OneFlow's ``interval_rescaling`` (a bool,
    or one per milestone) switches to OneFlow's closed-form composition: the scheduler after a
    milestone whose flag is True starts from its step 0, one whose flag is False sees the
    global step (OneFlow's default is False for every milestone).

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        schedulers: the schedulers, run one after another.
        milestones: the steps at which the next scheduler takes over (``len(schedulers) - 1`` of them).
        last_epoch: index of the last step taken; -1 starts a new schedule, other values resume one (default -1).
        verbose: if True, print every group's new lr on each step (default False).
        interval_rescaling: OneFlow's per-milestone restart flags (default None: torch's behaviour, each restarts).
        last_step: OneFlow's name for ``last_epoch``; give at most one of the two (default None).

    Example::

        >>> opt = fjax.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> warm = fjax.optim.lr_scheduler.ConstantLR(opt, factor=0.1, total_iters=2)
        >>> decay = fjax.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> sch = fjax.optim.lr_scheduler.SequentialLR(opt, [warm, decay], milestones=[2])
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(round(sch.get_last_lr()[0], 4))
        ...     sch.step()
        >>> lrs
        [0.1, 0.1, 1.0, 0.5]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: Sequence[LRScheduler],
        milestones: Sequence[int],
        last_epoch: int = -1,
        verbose: bool = False,
        *,
        interval_rescaling: bool | Sequence[bool] | None = None,
        last_step: int | None = None,
    ):
        if isinstance(last_epoch, (bool, list, tuple)):  # OneFlow's 4th parameter: interval_rescaling
            if interval_rescaling is not None:
                raise TypeError("SequentialLR: got interval_rescaling both positionally and by keyword")
            interval_rescaling, last_epoch = last_epoch, -1
        last_epoch = _resolve_last("SequentialLR", last_epoch, last_step)
        _check_schedulers("SequentialLR", optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "SequentialLR expects one more scheduler than milestones, got "
                f"{len(schedulers)} schedulers and {len(milestones)} milestones"
            )
        if isinstance(interval_rescaling, bool):
            interval_rescaling = [interval_rescaling] * len(milestones)
        elif interval_rescaling is not None:
            interval_rescaling = list(interval_rescaling)
            if len(interval_rescaling) != len(milestones) or not all(isinstance(r, bool) for r in interval_rescaling):
                raise ValueError(
                    f"SequentialLR: interval_rescaling must be a bool or {len(milestones)} bools (one per "
                    f"milestone), got {interval_rescaling!r}"
                )
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.interval_rescaling = interval_rescaling
        self.verbose = verbose
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            _set_value(group, "lr", group["initial_lr"])
        self.base_lrs = _values(optimizer, "initial_lr")
        if interval_rescaling is not None:  # OneFlow: closed forms at the (possibly rescaled) step
            for s in self._schedulers:
                _lrs_at("SequentialLR", s, 0)  # fail early on a scheduler without a closed form
            self.last_epoch = last_epoch
            self._step_count = 0
            self.step()
            return
        self.last_epoch = last_epoch + 1
        for s in self._schedulers:  # undo the initial step each scheduler took on construction
            s.last_epoch -= 1
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = self._schedulers[idx].get_last_lr()

    @property
    def schedulers(self) -> list:
        """The schedulers run in turn (OneFlow's attribute name).

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> warm = optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
            >>> decay = optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
            >>> sched = optim.lr_scheduler.SequentialLR(opt, [warm, decay], milestones=[2])
            >>> [type(s).__name__ for s in sched.schedulers]
            ['ConstantLR', 'ExponentialLR']
        """
        return self._schedulers

    @property
    def milestones(self) -> list:
        """The steps at which the next scheduler takes over (OneFlow's attribute name).

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> warm = optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
            >>> decay = optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
            >>> optim.lr_scheduler.SequentialLR(opt, [warm, decay], milestones=[2]).milestones
            [2]
        """
        return self._milestones

    def step(self) -> None:  # noqa: D102 - torch's signature: no epoch argument
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if self.interval_rescaling is not None:
            step = self.last_epoch
            if idx > 0 and self.interval_rescaling[idx - 1]:
                step -= self._milestones[idx - 1]
            self._write(_lrs_at("SequentialLR", scheduler, step))
            return
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Step every scheduler on each ``step()``: their chainable factors multiply.

    Args:
        schedulers: the schedulers stepped together.
        optimizer: their optimizer (default None: the first scheduler's).

    Example:
        >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
        >>> warm = optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
        >>> sched = optim.lr_scheduler.ChainedScheduler([warm, optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)])
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(round(sched.get_last_lr()[0], 4))
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [0.5, 0.45, 0.81, 0.729]
    """

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None):
        optimizer = optimizer or (schedulers[0].optimizer if schedulers else None)
        _check_schedulers("ChainedScheduler", optimizer, schedulers)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = _values(optimizer, "lr")

    def step(self) -> None:  # noqa: D102
        for s in self._schedulers:
            s.step()
        self._last_lr = _values(self.optimizer, "lr")


class WarmupLR(LRScheduler):
    """OneFlow's ``WarmupLR``: a warmup of ``warmup_iters`` steps, alone or before another scheduler.

    During the warmup (steps ``t < warmup_iters``) the lr is ``base_lr * m(t)``. With
    ``warmup_method="constant"`` the multiplier is ``warmup_factor``; with ``"linear"`` it goes
    from ``warmup_factor`` towards an end factor in a straight line, ``m(t) = warmup_factor +
    (end - warmup_factor) * t / warmup_iters``. The end factor is 1, except when a scheduler is
    wrapped and ``warmup_prefix=False``: then it is that scheduler's lr at step ``warmup_iters``
    divided by ``base_lr`` (per param group), so the ramp meets the schedule without a jump. From
    ``warmup_iters`` on, the wrapped scheduler sets the lr at the global step
    (``warmup_prefix=False``: the warmup replaces its first steps) or at ``t - warmup_iters``
    (``warmup_prefix=True``: the warmup is put before it); with no scheduler the lr stays at
    ``base_lr``. The wrapped scheduler is queried through its closed form, so it must have one.

    Args:
        scheduler_or_optimizer: a scheduler to warm up, or an optimizer for a warmup alone.
        warmup_factor: the lr factor at step 0 (default 0.3333333333333333).
        warmup_iters: the number of warmup steps (default 5).
        warmup_method: ``'linear'`` or ``'constant'`` (default 'linear').
        warmup_prefix: if True, the wrapped scheduler starts after the warmup; else the warmup replaces
            its first steps (default False).
        last_step: index of the last step taken; -1 starts a new schedule (default -1).
        verbose: if True, print every group's new lr on each step (default False).
        last_epoch: torch's name for ``last_step``; give at most one of the two (default None).

    Example::

        >>> opt = fjax.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sch = fjax.optim.lr_scheduler.WarmupLR(opt, warmup_factor=0.5, warmup_iters=4)
        >>> lrs = []
        >>> for _ in range(6):
        ...     lrs.append(round(sch.get_last_lr()[0], 4))
        ...     sch.step()
        >>> lrs
        [0.5, 0.625, 0.75, 0.875, 1.0, 1.0]
    """

    def __init__(
        self,
        scheduler_or_optimizer: LRScheduler | Optimizer,
        warmup_factor: float = 1.0 / 3,
        warmup_iters: int = 5,
        warmup_method: str = "linear",
        warmup_prefix: bool = False,
        last_step: int = -1,
        verbose: bool = False,
        *,
        last_epoch: int | None = None,
    ):
        if warmup_method not in ("linear", "constant"):
            raise ValueError(f"WarmupLR: warmup_method must be 'linear' or 'constant', got {warmup_method!r}")
        if isinstance(scheduler_or_optimizer, LRScheduler):
            scheduler, optimizer = scheduler_or_optimizer, scheduler_or_optimizer.optimizer
        elif isinstance(scheduler_or_optimizer, Optimizer):
            scheduler, optimizer = None, scheduler_or_optimizer
        else:
            raise OpError(
                f"WarmupLR: expected an LRScheduler or an Optimizer, got {type(scheduler_or_optimizer).__name__}"
            )
        if warmup_iters < 0 or (warmup_iters == 0 and scheduler is None):
            raise ValueError(
                f"WarmupLR: warmup_iters must be positive (or 0 with a wrapped scheduler), got {warmup_iters}"
            )
        last = last_step if last_epoch is None else _resolve_last("WarmupLR", last_epoch, last_step)
        self.warmup_factor, self.warmup_iters = warmup_factor, warmup_iters
        self.warmup_method, self.warmup_prefix = warmup_method, warmup_prefix
        self._scheduler = scheduler
        self.end_factors = [1.0] * len(optimizer.param_groups)
        if scheduler is not None:
            saved = scheduler.last_epoch
            ends = _lrs_at("WarmupLR", scheduler, warmup_iters)
            scheduler.last_epoch = saved
            if warmup_method == "linear" and not warmup_prefix:
                self.end_factors = [end / group["initial_lr"] for end, group in zip(ends, optimizer.param_groups)]
        super().__init__(optimizer, last, verbose)

    def get_lr(self) -> list:
        t, n = self.last_epoch, self.warmup_iters
        if t < n:
            if self.warmup_method == "constant":
                return [base * self.warmup_factor for base in self.base_lrs]
            f = self.warmup_factor
            return [base * (f + (end - f) * t / n) for base, end in zip(self.base_lrs, self.end_factors)]
        if self._scheduler is None:
            return list(self.base_lrs)
        return _lrs_at("WarmupLR", self._scheduler, t - n if self.warmup_prefix else t)

    _get_closed_form_lr = get_lr

    def state_dict(self) -> dict[str, Any]:
        """Own attributes plus the wrapped scheduler's state dict.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.WarmupLR(opt, warmup_factor=0.5, warmup_iters=2)
            >>> sched.state_dict()["warmup_iters"], sched.state_dict()["_scheduler"]
            (2, None)
        """
        out = self._own_state(("optimizer", "_scheduler"))
        out["_scheduler"] = None if self._scheduler is None else self._scheduler.state_dict()
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore own attributes and the wrapped scheduler's.

        Args:
            state_dict: a dict from ``state_dict()``.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.WarmupLR(opt, warmup_factor=0.5, warmup_iters=2)
            >>> sched.step()
            >>> other = optim.lr_scheduler.WarmupLR(opt, warmup_factor=0.5, warmup_iters=2)
            >>> other.load_state_dict(sched.state_dict())
            >>> other.last_epoch
            1
        """
        state_dict = dict(state_dict)
        inner = state_dict.pop("_scheduler", None)
        self._load_own(state_dict)
        if inner is not None and self._scheduler is not None:
            self._scheduler.load_state_dict(inner)


class CosineDecayLR(LRScheduler):
    """OneFlow's cosine decay: ``lr = base_lr * ((1 - alpha) * (1 + cos(pi * t / decay_steps)) / 2 + alpha)``.

    The step ``t`` is clamped at ``decay_steps``, so the lr ends at ``alpha * base_lr`` and stays
    there (unlike ``CosineAnnealingLR``, which rises again after ``T_max``). ``alpha`` is the final
    lr as a fraction of the initial one.

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        decay_steps: the number of steps of the decay.
        alpha: the final lr as a fraction of the initial one (default 0.0).
        last_step: index of the last step taken; -1 starts a new schedule (default -1).
        verbose: if True, print every group's new lr on each step (default False).
        last_epoch: torch's name for ``last_step``; give at most one of the two (default None).

    Example::

        >>> opt = fjax.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sch = fjax.optim.lr_scheduler.CosineDecayLR(opt, decay_steps=2, alpha=0.1)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(round(sch.get_last_lr()[0], 4))
        ...     sch.step()
        >>> lrs
        [1.0, 0.55, 0.1, 0.1]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        decay_steps: int,
        alpha: float = 0.0,
        last_step: int = -1,
        verbose: bool = False,
        *,
        last_epoch: int | None = None,
    ):
        if decay_steps <= 0:
            raise ValueError(f"CosineDecayLR: decay_steps must be positive, got {decay_steps}")
        self.decay_steps, self.alpha = decay_steps, alpha
        last = last_step if last_epoch is None else _resolve_last("CosineDecayLR", last_epoch, last_step)
        super().__init__(optimizer, last, verbose)

    def get_lr(self) -> list:
        t = min(self.last_epoch, self.decay_steps)
        factor = (1 - self.alpha) * 0.5 * (1 + math.cos(math.pi * t / self.decay_steps)) + self.alpha
        return [base * factor for base in self.base_lrs]

    _get_closed_form_lr = get_lr


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing with warm restarts (SGDR), with OneFlow's ``decay_rate`` and ``restart_limit``.

    Cycle ``i`` lasts ``T_0 * T_mult**i`` steps; inside it the lr is ``eta_min + (base_lr *
    decay_rate**i - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2``. With ``restart_limit > 0`` the
    lr stays at ``eta_min`` once that many cycles have run. With the default ``decay_rate=1`` and
    ``restart_limit=0`` the values are torch's ``CosineAnnealingWarmRestarts``.

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        T_0: the length of the first cycle.
        T_mult: the factor each cycle's length grows by (default 1).
        eta_min: the minimum lr (default 0.0).
        decay_rate: OneFlow's factor the peak lr decays by each cycle (default 1.0).
        restart_limit: OneFlow's number of cycles after which the lr stays at ``eta_min`` (0: no limit) (default 0).
        last_step: index of the last step taken; -1 starts a new schedule (default -1).
        verbose: if True, print every group's new lr on each step (default False).
        last_epoch: torch's name for ``last_step``; give at most one of the two (default None).

    Example::

        >>> opt = fjax.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sch = fjax.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, decay_rate=0.5)
        >>> lrs = []
        >>> for _ in range(5):
        ...     lrs.append(round(sch.get_last_lr()[0], 4))
        ...     sch.step()
        >>> lrs
        [1.0, 0.5, 0.5, 0.25, 0.25]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,  # noqa: N803
        T_mult: int = 1,  # noqa: N803
        eta_min: float = 0.0,
        decay_rate: float = 1.0,
        restart_limit: int = 0,
        last_step: int = -1,
        verbose: bool = False,
        *,
        last_epoch: int | None = None,
    ):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected integer T_mult >= 1, but got {T_mult}")
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, eta_min
        self.decay_rate, self.restart_limit = decay_rate, restart_limit
        self.T_i, self.T_cur = T_0, 0
        last = last_step if last_epoch is None else _resolve_last("CosineAnnealingWarmRestarts", last_epoch, last_step)
        super().__init__(optimizer, last, verbose)

    def get_lr(self) -> list:
        cycle, length, t = 0, self.T_0, max(self.last_epoch, 0)
        while t >= length:  # integer arithmetic: no log rounding at the cycle boundaries
            t, cycle, length = t - length, cycle + 1, length * self.T_mult
        self.T_i, self.T_cur = length, t
        if self.restart_limit > 0 and cycle >= self.restart_limit:
            return [self.eta_min for _ in self.base_lrs]
        cos = 0.5 * (1 + math.cos(math.pi * t / length))
        gamma = self.decay_rate**cycle
        return [self.eta_min + (base * gamma - self.eta_min) * cos for base in self.base_lrs]

    _get_closed_form_lr = get_lr


class PolynomialLR(LRScheduler):
    """OneFlow's polynomial decay from ``base_lr`` to ``end_learning_rate`` over ``decay_batch`` steps.

    ``lr = (base_lr - end_learning_rate) * (1 - t / decay_batch)**power + end_learning_rate``
    with ``t`` clamped at ``decay_batch``. With ``cycle=True`` the horizon is instead
    ``decay_batch * ceil(t / decay_batch)`` and the decay repeats (OneFlow counts step 0 as
    step 1 there). The length may also be given as ``steps=`` or torch's ``total_iters=``; with
    ``total_iters=`` the end lr defaults to 0, which gives torch's ``PolynomialLR`` values, and
    (without ``cycle`` or a nonzero end lr) each step scales the group's current lr by torch's
    chainable factor ``((1 - t / T) / (1 - (t - 1) / T))**power``, so a hand-edited lr or a
    ``ChainedScheduler`` continues exactly as in torch.

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        decay_batch: the number of decay steps (or give ``steps`` or ``total_iters``) (default None).
        end_learning_rate: the final lr (default None: 0 with ``total_iters``, else 1e-4).
        power: the polynomial's power (default 1.0).
        cycle: if True, repeat the decay with a growing horizon (default False).
        last_step: index of the last step taken; -1 starts a new schedule (default -1).
        verbose: if True, print every group's new lr on each step (default False).
        steps: OneFlow's other name for ``decay_batch`` (default None).
        total_iters: torch's name for the decay length (default None).
        last_epoch: torch's name for ``last_step``; give at most one of the two (default None).

    Example::

        >>> opt = fjax.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sch = fjax.optim.lr_scheduler.PolynomialLR(opt, decay_batch=4, end_learning_rate=0.2, power=1.0)
        >>> lrs = []
        >>> for _ in range(6):
        ...     lrs.append(round(sch.get_last_lr()[0], 4))
        ...     sch.step()
        >>> lrs
        [1.0, 0.8, 0.6, 0.4, 0.2, 0.2]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        decay_batch: int | None = None,
        end_learning_rate: float | None = None,
        power: float = 1.0,
        cycle: bool = False,
        last_step: int = -1,
        verbose: bool = False,
        *,
        steps: int | None = None,
        total_iters: int | None = None,
        last_epoch: int | None = None,
    ):
        given = [v for v in (decay_batch, steps, total_iters) if v is not None]
        if len(given) != 1:
            raise ValueError("PolynomialLR: give the decay length once, as decay_batch, steps or total_iters")
        if given[0] <= 0:
            raise ValueError(f"PolynomialLR: decay_batch must be positive, got {given[0]}")
        if end_learning_rate is None:
            end_learning_rate = 0.0 if total_iters is not None else 0.0001
        self.max_decay_steps = self.decay_batch = self.total_iters = given[0]
        self.end_learning_rate, self.power, self.cycle = end_learning_rate, power, cycle
        self._chainable = total_iters is not None and not cycle and end_learning_rate == 0
        last = last_step if last_epoch is None else _resolve_last("PolynomialLR", last_epoch, last_step)
        super().__init__(optimizer, last, verbose)

    def get_lr(self) -> list:
        if not self._chainable:
            return self._get_closed_form_lr()
        t, length = self.last_epoch, self.max_decay_steps
        if self._is_initial or t > length:
            return _values(self.optimizer, "lr")
        factor = ((1.0 - t / length) / (1.0 - (t - 1) / length)) ** self.power
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        length, t = self.max_decay_steps, self.last_epoch
        if self.cycle:
            t = max(t, 1)
            length = length * math.ceil(t / length)
        else:
            t = min(t, length)
        factor = (1 - t / length) ** self.power
        return [(base - self.end_learning_rate) * factor + self.end_learning_rate for base in self.base_lrs]


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` once a metric has stopped improving for ``patience`` steps.

    ``step(metrics)`` takes the monitored value. In ``mode="min"`` it improves when it is below
    ``best * (1 - threshold)`` (``threshold_mode="rel"``) or ``best - threshold`` (``"abs"``);
    ``"max"`` mirrors that. After a reduction, ``cooldown`` steps are ignored; an lr never goes
    below ``min_lr`` (one value, or one per group), and a change smaller than ``eps`` is skipped.
    The semantics are torch's (and OneFlow's, which copies them).

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        mode: ``'min'`` (lower is better) or ``'max'`` (default 'min').
        factor: the factor the lr is reduced by (default 0.1).
        patience: the number of steps without improvement before a reduction (default 10).
        threshold: the minimum change that counts as an improvement (default 0.0001).
        threshold_mode: ``'rel'`` or ``'abs'`` (default 'rel').
        cooldown: the number of steps ignored after a reduction (default 0).
        min_lr: the lower bound of the lr (one, or one per group) (default 0).
        eps: a reduction smaller than this is skipped (default 1e-08).
        verbose: if True, print every group's new lr on each step (default False).

    Example::

        >>> opt = fjax.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sch = fjax.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
        >>> for loss in [3.0, 2.0, 2.0, 2.0, 2.0, 2.0]:
        ...     sch.step(loss)
        >>> sch.get_last_lr()
        [0.25]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | Sequence[float] = 0,
        eps: float = 1e-8,
        verbose: bool = False,
    ):
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor should be < 1.0, got {factor}")
        if not isinstance(optimizer, Optimizer):
            raise OpError(f"fjax.optim.lr_scheduler.ReduceLROnPlateau: {type(optimizer).__name__} is not an Optimizer")
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode {mode!r} is unknown (expected 'min' or 'max')")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(
                f"ReduceLROnPlateau: threshold mode {threshold_mode!r} is unknown (expected 'rel' or 'abs')"
            )
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(
                    f"ReduceLROnPlateau: expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}"
                )
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * len(optimizer.param_groups)
        self.patience, self.cooldown, self.eps, self.verbose = patience, cooldown, eps, verbose
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.last_epoch = 0
        self._last_lr = _values(optimizer, "lr")
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        """Whether the steps after a reduction are still being ignored.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, cooldown=1)
            >>> sched.step(1.0)
            >>> sched.step(2.0)  # no improvement: the lr drops and a cooldown step starts
            >>> opt.param_groups[0]["lr"], sched.in_cooldown
            (0.1, True)
        """
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        """Whether metric value ``a`` improves on ``best`` by the threshold.

        Args:
            a: a value of the metric.
            best: the best value so far.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, cooldown=1)
            >>> sched.is_better(0.5, 1.0), sched.is_better(1.0, 1.0)  # mode="min"
            (True, False)
        """
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel" else best + self.threshold)

    def step(self, metrics, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record one value of the monitored metric (a number or a one-element Tensor).

        Args:
            metrics: the metric's value after this step (a loss, with the default ``mode="min"``).
            epoch: torch's deprecated argument: the step index to set.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, cooldown=1)
            >>> for loss in [1.0, 2.0, 2.0, 2.0]:
            ...     sched.step(loss)
            >>> opt.param_groups[0]["lr"]
            0.010000000000000002
        """
        current = float(metrics.item() if isinstance(metrics, Tensor) else metrics)
        if epoch is not None:
            warnings.warn("The epoch parameter in `scheduler.step()` is deprecated (as in torch)", UserWarning, 2)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _values(self.optimizer, "lr")

    def _reduce_lr(self) -> None:
        if len(self.min_lrs) != len(self.optimizer.param_groups):
            if self.default_min_lr is None:
                raise RuntimeError(
                    "ReduceLROnPlateau: the optimizer has a different number of param groups than min_lr "
                    f"({len(self.optimizer.param_groups)} vs {len(self.min_lrs)}); update `min_lrs`"
                )
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, group in enumerate(self.optimizer.param_groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                _set_value(group, "lr", new)
                if self.verbose:
                    print(f"ReduceLROnPlateau: step {self.last_epoch}, lr of param_groups[{i}] reduced to {new}")


WarmUpLR = WarmupLR


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr up to ``max_lr`` then down to ``max_lr/(div_factor*final_div_factor)``.

    With ``cycle_momentum`` it cycles ``momentum`` (or Adam's ``betas[0]``) the opposite way.

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        max_lr: the peak lr (one value, or one per group).
        total_steps: the total number of steps (or give ``epochs`` and ``steps_per_epoch``) (default None).
        epochs: the number of epochs, with ``steps_per_epoch`` (default None).
        steps_per_epoch: the number of steps per epoch (default None).
        pct_start: the fraction of the steps spent raising the lr (default 0.3).
        anneal_strategy: ``'cos'`` or ``'linear'`` (default 'cos').
        cycle_momentum: if True, cycle the optimizer's ``momentum`` (or ``betas[0]``) opposite to the lr (default True).
        base_momentum: the lower momentum bound (one value, or one per group) (default 0.85).
        max_momentum: the upper momentum bound (one value, or one per group) (default 0.95).
        div_factor: the initial lr is ``max_lr / div_factor`` (default 25.0).
        final_div_factor: the final lr is ``max_lr / (div_factor * final_div_factor)`` (default 10000.0).
        three_phase: if True, the lr comes back down to the initial lr before the final annealing (default False).
        last_epoch: index of the last step taken; -1 starts a new schedule, other values resume one (default -1).
        last_step: OneFlow's name for ``last_epoch``; give at most one of the two (default None).
        verbose: if True, print every group's new lr on each step (default False).

    Example:
        >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
        >>> sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=4)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(round(sched.get_last_lr()[0], 4))
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [0.04, 0.8117, 0.2831, 0.0]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | Sequence[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | Sequence[float] = 0.85,
        max_momentum: float | Sequence[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
        last_step: int | None = None,
        verbose: bool = False,
    ):
        if not isinstance(optimizer, Optimizer):
            raise OpError(f"OneCycleLR: {type(optimizer).__name__} is not an Optimizer")
        last_epoch, last_step = _resolve_last("OneCycleLR", last_epoch, last_step), None
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"OneCycleLR: expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"OneCycleLR: expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"OneCycleLR: expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("OneCycleLR: you must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self._anneal_func_type = anneal_strategy
        n = self.total_steps
        up = float(pct_start * n) - 1
        if three_phase:
            self._schedule_phases = [
                dict(
                    end_step=up,
                    start_lr="initial_lr",
                    end_lr="max_lr",
                    start_momentum="max_momentum",
                    end_momentum="base_momentum",
                ),
                dict(
                    end_step=float(2 * pct_start * n) - 2,
                    start_lr="max_lr",
                    end_lr="initial_lr",
                    start_momentum="base_momentum",
                    end_momentum="max_momentum",
                ),
                dict(
                    end_step=n - 1,
                    start_lr="initial_lr",
                    end_lr="min_lr",
                    start_momentum="max_momentum",
                    end_momentum="max_momentum",
                ),
            ]
        else:
            self._schedule_phases = [
                dict(
                    end_step=up,
                    start_lr="initial_lr",
                    end_lr="max_lr",
                    start_momentum="max_momentum",
                    end_momentum="base_momentum",
                ),
                dict(
                    end_step=n - 1,
                    start_lr="max_lr",
                    end_lr="min_lr",
                    start_momentum="base_momentum",
                    end_momentum="max_momentum",
                ),
            ]
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for lr, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "OneCycleLR: optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            maxes = _per_group("max_momentum", optimizer, max_momentum)
            bases = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m, b, group in zip(maxes, bases, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m, *group["betas"][1:])
                    else:
                        group["momentum"] = m
                    group["max_momentum"], group["base_momentum"] = m, b
        super().__init__(optimizer, last_epoch, verbose, last_step=last_step)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"OneCycleLR: tried to step {step} times; the specified number of total steps is {self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                if step <= phase["end_step"] or i == len(self._schedule_phases) - 1:
                    break
                start = phase["end_step"]
            pct = (step - start) / (phase["end_step"] - start)
            lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                momentum = self._anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs


class CyclicLR(LRScheduler):
    """Cyclical learning rate (CLR): the lr goes between ``base_lr`` and ``max_lr`` in cycles of
    ``step_size_up + step_size_down`` steps, with torch's values.

    Within a cycle the lr rises linearly for ``step_size_up`` steps (``step_size_down`` defaults
    to it) and falls back; the amplitude ``max_lr - base_lr`` is scaled by ``scale_fn(cycle)``
    (or ``scale_fn(step)`` with ``scale_mode="iterations"``). The modes are ``"triangular"``
    (constant amplitude), ``"triangular2"`` (halved each cycle) and ``"exp_range"``
    (``gamma**step``); a ``scale_fn`` replaces them. With ``cycle_momentum`` (default) the
    optimizer's ``momentum`` (or ``betas[0]``) cycles the opposite way between ``max_momentum``
    and ``base_momentum``. The lr is set to ``base_lr`` at construction. Step it after every batch.

    Args:
        optimizer: the optimizer whose param groups' ``lr`` this scheduler sets.
        base_lr: the lower lr bound (one value, or one per group).
        max_lr: the upper lr bound (one value, or one per group).
        step_size_up: the number of rising steps per cycle (default 2000).
        step_size_down: the number of falling steps per cycle (default None: ``step_size_up``).
        mode: ``'triangular'``, ``'triangular2'`` or ``'exp_range'`` (default 'triangular').
        gamma: the decay base of ``'exp_range'`` (default 1.0).
        scale_fn: a custom amplitude scale function, replacing ``mode`` (default None).
        scale_mode: ``'cycle'`` or ``'iterations'``: what ``scale_fn`` is called with (default 'cycle').
        cycle_momentum: if True, cycle the optimizer's ``momentum`` (or ``betas[0]``) opposite to the lr (default True).
        base_momentum: the lower momentum bound (one value, or one per group) (default 0.8).
        max_momentum: the upper momentum bound (one value, or one per group) (default 0.9).
        last_epoch: index of the last step taken; -1 starts a new schedule, other values resume one (default -1).
        verbose: if True, print every group's new lr on each step (default False).
        last_step: OneFlow's name for ``last_epoch``; give at most one of the two (default None).

    Example::

        >>> opt = fjax.optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0, momentum=0.9)
        >>> sch = fjax.optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=0.5, step_size_up=2)
        >>> lrs, momenta = [], []
        >>> for _ in range(5):
        ...     lrs.append(round(sch.get_last_lr()[0], 4))
        ...     momenta.append(round(opt.param_groups[0]['momentum'], 4))
        ...     sch.step()
        >>> lrs, momenta
        ([0.1, 0.3, 0.5, 0.3, 0.1], [0.9, 0.85, 0.8, 0.85, 0.9])
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | Sequence[float],
        max_lr: float | Sequence[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | Sequence[float] = 0.8,
        max_momentum: float | Sequence[float] = 0.9,
        last_epoch: int = -1,
        verbose: bool = False,
        *,
        last_step: int | None = None,
    ):
        if not isinstance(optimizer, Optimizer):
            raise OpError(f"CyclicLR: {type(optimizer).__name__} is not an Optimizer")
        last_epoch = _resolve_last("CyclicLR", last_epoch, last_step)
        self.optimizer = optimizer
        base_lrs = [_copy(v) for v in _per_group("base_lr", optimizer, base_lr)]
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_value(group, "lr", lr)
        self.max_lrs = [_copy(v) for v in _per_group("max_lr", optimizer, max_lr)]
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode {mode!r} is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "CyclicLR: optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for m, b, group in zip(self.max_momentums, self.base_momentums, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m, *group["betas"][1:])
                    else:
                        group["momentum"] = m
                    group["max_momentum"], group["base_momentum"] = m, b
        super().__init__(optimizer, last_epoch, verbose)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        """The built-in mode's scale function (and its scale_mode), unless ``scale_fn`` was given."""
        if self._scale_fn_custom is not None:
            return
        if self.mode in ("triangular", "triangular2"):
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self.scale_mode = "iterations"

    def scale_fn(self, x) -> float:
        """The amplitude's scale at cycle (or step) ``x``.

        Args:
            x: the cycle number (``scale_mode="cycle"``) or the step (``"iterations"``).

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2)
            >>> sched.scale_fn(3)  # mode="triangular": no decay
            1.0
        """
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        if self.mode == "exp_range":
            return self.gamma**x
        return 1.0

    def get_lr(self) -> list:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * scale_factor * scale for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, b, m in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                momentum = m - (m - b) * scale_factor * scale
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """As torch: a plain-function ``scale_fn`` is not saved, a callable object saves its ``__dict__``.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2)
            >>> sched.state_dict()["_scale_fn_custom"] is None, sched.state_dict()["base_lrs"]
            (True, [0.1])
        """
        out = self._own_state(("optimizer", "_scale_fn_custom"))
        fn = self._scale_fn_custom
        out["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else dict(fn.__dict__)
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes; a callable-object ``scale_fn`` gets its saved ``__dict__`` back.

        Args:
            state_dict: a dict from ``state_dict()``.

        Example:
            >>> opt = optim.SGD([nn.Parameter(fjax.zeros(1))], lr=1.0)
            >>> sched = optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2)
            >>> sched.step()
            >>> other = optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2)
            >>> other.load_state_dict(sched.state_dict())
            >>> other.last_epoch, other.get_last_lr()
            (1, [0.55])
        """
        state_dict = dict(state_dict)
        saved = state_dict.pop("_scale_fn_custom", None)
        self._load_own(state_dict)
        if saved is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(saved)
        self._init_scale_fn()


__all__ = [
    "LRScheduler",
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "CosineAnnealingLR",
    "SequentialLR",
    "ChainedScheduler",
    "WarmupLR",
    "WarmUpLR",
    "OneCycleLR",
    "CosineDecayLR",
    "CosineAnnealingWarmRestarts",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "CyclicLR",
]
