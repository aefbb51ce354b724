"""``Distribution``: the base class, with torch's shapes, argument validation and defaults."""

from __future__ import annotations

import functools
import warnings

from ..autograd.grad_mode import no_grad
from ..tensor import Size, Tensor
from . import constraints
from .utils import _check_all, _size, lazy_property, one_kernel

__all__ = ["Distribution"]


class Distribution:
    """The base class of probability distributions.

    A distribution has a ``batch_shape`` (independent, possibly differently parametrized copies)
    and an ``event_shape`` (the shape of one draw): ``sample(sample_shape)`` has shape
    ``sample_shape + batch_shape + event_shape`` and ``log_prob(value)`` reduces the event dims.
    With ``validate_args`` (on by default, as torch's: see ``set_default_validate_args``) the
    parameters are checked against ``arg_constraints`` when the distribution is made, and
    ``log_prob``/``cdf`` check their ``value`` against ``support``, raising ``ValueError``. Inside
    a trace (``fjax.func``, ``nn.Graph``) values are not known, so those checks are skipped.

    Example::

        >>> from fjax.distributions import Normal
        >>> d = Normal(fjax.zeros(3), fjax.ones(3))
        >>> d.batch_shape, d.event_shape, d.sample((2,)).shape
        (fjax.Size([3]), fjax.Size([]), fjax.Size([2, 3]))
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    def __init_subclass__(cls, **kwargs):
        """fjax's own distributions run ``log_prob`` and ``entropy`` as one kernel each
        (``utils.one_kernel``); a user's subclass keeps its methods as it wrote them."""
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith(__name__.rpartition(".")[0] + "."):
            for name in ("log_prob", "entropy"):
                if name in vars(cls):
                    setattr(cls, name, one_kernel(vars(cls)[name]))

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions made without ``validate_args``.

        Example::

            >>> from fjax.distributions import Distribution, Normal
            >>> Distribution.set_default_validate_args(False)
            >>> Normal(0.0, -1.0).scale  # no error: not validated
            tensor(-1., dtype=fjax.float32)
            >>> Distribution.set_default_validate_args(True)
        """
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args: expected True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args: bool | None = None):
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if not self._validate_args:
            return
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(
                f"{type(self)} does not define `arg_constraints`. Please set `arg_constraints = {{}}` or "
                "initialize the distribution with `validate_args=False` to turn off validation.",
                stacklevel=2,
            )
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue  # cannot be checked
            if param not in vars(self) and isinstance(getattr(type(self), param, None), lazy_property):
                continue  # not given (e.g. logits when made from probs): derived, so valid
            value = getattr(self, param)
            _check_all(value, constraint.check, functools.partial(self._invalid_argument, param, value, constraint))

    def _invalid_argument(self, param, value, constraint) -> ValueError:
        return ValueError(
            f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
            f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
            f"but found invalid values:\n{value}"
        )

    def expand(self, batch_shape, _instance=None) -> "Distribution":
        """A distribution with the parameters expanded (broadcast, not copied) to ``batch_shape``;
        the arguments are not validated again.

        Example::

            >>> from fjax.distributions import Normal
            >>> Normal(0.0, 1.0).expand((2, 3)).batch_shape
            fjax.Size([2, 3])
        """
        raise NotImplementedError(f"{type(self).__name__}.expand is not implemented")

    @property
    def batch_shape(self) -> Size:
        """The shape over which the parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """The constraint each parameter must satisfy, by name."""
        raise NotImplementedError(f"{type(self).__name__} does not define arg_constraints")

    @property
    def support(self):
        """The constraint samples satisfy."""
        raise NotImplementedError(f"{type(self).__name__} does not define support")

    @property
    def mean(self) -> Tensor:
        """The mean of the distribution."""
        raise NotImplementedError(f"{type(self)} does not implement mean")

    @property
    def mode(self) -> Tensor:
        """The mode of the distribution."""
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance of the distribution."""
        raise NotImplementedError(f"{type(self)} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()) -> Tensor:
        """A reparametrized draw: differentiable with respect to the parameters."""
        raise NotImplementedError(f"{type(self).__name__} does not implement rsample")

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the probability density or mass function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """All values of a discrete distribution along dim 0: shape ``(cardinality,) + batch_shape
        + event_shape``, or with singleton batch dims when ``expand`` is False."""
        raise NotImplementedError(f"{type(self).__name__} does not implement enumerate_support")

    def entropy(self) -> Tensor:
        """The entropy, of shape ``batch_shape``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=Size()) -> Size:
        """``sample_shape + batch_shape + event_shape``."""
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value) -> None:
        """Check that ``value`` is a Tensor whose rightmost dims broadcast with ``batch_shape +
        event_shape`` and whose entries lie in the support; raise ValueError if not."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_start = value.ndim - len(self._event_shape)
        if tuple(value.shape[event_start:]) != tuple(self._event_shape):
            raise ValueError(
                f"The right-most size of value must match event_shape: {value.shape} vs {self._event_shape}."
            )
        expected = Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(tuple(value.shape)), reversed(tuple(expected))):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    f"Value is not broadcastable with batch_shape+event_shape: {value.shape} vs {expected}."
                )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{type(self)} does not define `support` to enable sample validation. Please initialize "
                "the distribution with `validate_args=False` to turn off validation.",
                stacklevel=2,
            )
            return
        _check_all(
            value,
            support.check,
            lambda: ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            ),
        )

    def _get_checked_instance(self, cls, _instance=None):
        """The instance ``expand`` fills: ``_instance``, or a new, uninitialized one of this type."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        try:
            names = [k for k in self.arg_constraints if k in vars(self)]
        except NotImplementedError:
            names = []
        args = ", ".join(f"{p}: {v if v.numel() == 1 else v.shape}" for p in names for v in (vars(self)[p],))
        return f"{type(self).__name__}({args})"
