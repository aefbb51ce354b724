"""The categorical distribution with one-hot samples."""

from __future__ import annotations

from .. import creation
from ..nn import functional as F
from ..tensor import Size, Tensor
from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(Distribution):
    """``Categorical`` with samples as one-hot vectors of length ``K`` (the event shape) in the
    parameters' dtype.

    Example::

        >>> from fjax.distributions import OneHotCategorical
        >>> d = OneHotCategorical(probs=fjax.tensor([0.25, 0.75]))
        >>> d.log_prob(fjax.tensor([0.0, 1.0]))
        tensor(-0.2877, dtype=fjax.float32)
        >>> d.enumerate_support()
        tensor([[1., 0.],
                [0., 1.]], dtype=fjax.float32)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = Size(tuple(batch_shape))
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(-1), probs.shape[-1]).type_as(probs)

    @property
    def variance(self) -> Tensor:
        probs = self._categorical.probs
        return probs * (1 - probs)

    def sample(self, sample_shape=Size()) -> Tensor:
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, self._categorical._num_events).type_as(probs)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = creation.eye(n, dtype=self._param.dtype).reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """``OneHotCategorical`` whose ``rsample`` is the one-hot sample in the forward pass and has
    the gradient of ``probs`` in the backward pass (the straight-through estimator).

    Example::

        >>> from fjax.distributions import OneHotCategoricalStraightThrough
        >>> p = fjax.tensor([0.25, 0.75], requires_grad=True)
        >>> x = OneHotCategoricalStraightThrough(probs=p).rsample()
        >>> (x * fjax.tensor([1.0, 2.0])).sum().backward()
        >>> p.grad
        tensor([-0.7500,  0.2500], dtype=fjax.float32)
    """

    has_rsample = True

    def rsample(self, sample_shape=Size()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
