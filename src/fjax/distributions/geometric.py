"""The geometric distribution."""

from __future__ import annotations

from .. import creation
from ..autograd.grad_mode import no_grad
from ..dispatch import functions as _f
from ..nn import functional as F
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import _NUMBER, _all_true, _finfo, _uniform, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """The number of failures before the first success in Bernoulli trials of success
    probability ``probs`` (or log-odds ``logits``; give one), on ``{0, 1, 2, ...}``.

    Args:
        probs: the success probability of each trial, in ``(0, 1]``.
        logits: the log-odds of success.
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import Geometric
        >>> d = Geometric(fjax.tensor([0.5, 0.25]))
        >>> d.log_prob(fjax.tensor([1.0, 1.0])), d.mean
        (tensor([-1.3863, -1.6740], dtype=fjax.float32), tensor([1., 3.], dtype=fjax.float32))
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        given = probs if probs is not None else logits
        super().__init__(Size() if isinstance(given, _NUMBER) else given.shape, validate_args=validate_args)
        if self._validate_args and probs is not None and not _all_true(self.probs > 0):
            raise ValueError(
                f"Expected parameter probs (Tensor of shape {tuple(self.probs.shape)}) of distribution {self!r} "
                f"to be positive but found invalid values:\n{self.probs}"
            )

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = Size(tuple(batch_shape))
        if "probs" in vars(self):
            new.probs = self.probs.expand(batch_shape)
        if "logits" in vars(self):
            new.logits = self.logits.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return creation.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=Size()) -> Tensor:
        with no_grad():
            u = _uniform(self._extended_shape(sample_shape), self.probs.dtype).clamp(min=float(_finfo(self.probs).tiny))
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = _f.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
