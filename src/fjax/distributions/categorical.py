"""The categorical distribution over ``{0, ..., K-1}``."""

from __future__ import annotations

import math

import numpy as np

from .. import creation
from .. import dtypes as _dt
from .. import random as _random
from ..autograd.grad_mode import no_grad
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import _finfo, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Category ``i`` of ``K`` (the last dim of ``probs`` or ``logits``; give one) with probability
    ``probs[..., i]``; ``probs`` need not sum to 1 (they are normalized) and ``logits`` are
    unnormalized log-probabilities. Samples are int64 indices.

    Example::

        >>> from fjax.distributions import Categorical
        >>> d = Categorical(probs=fjax.tensor([1.0, 1.0, 2.0]))
        >>> d.probs
        tensor([0.2500, 0.2500, 0.5000], dtype=fjax.float32)
        >>> d.log_prob(fjax.tensor([0, 2])), d.entropy()
        (tensor([-1.3863, -0.6931], dtype=fjax.float32), tensor(1.0397, dtype=fjax.float32))
        >>> d.enumerate_support()
        tensor([0, 1, 2], dtype=fjax.int64)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.ndim > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = Size(tuple(batch_shape))
        param_shape = Size(tuple(batch_shape) + (self._num_events,))
        if "probs" in vars(self):
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in vars(self):
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return creation.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return creation.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape=Size()) -> Tensor:
        n = int(np.prod(tuple(sample_shape), dtype=np.int64))
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = _random.multinomial(probs_2d, n, True).T
        return samples_2d.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = tuple(np.broadcast_shapes(tuple(value.shape), tuple(self.logits.shape)))
        index = value.expand(shape[:-1] + (1,))
        return self.logits.expand(shape).gather(-1, index).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=float(_finfo(self.logits).min))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = creation.arange(self._num_events, dtype=_dt.int64).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
