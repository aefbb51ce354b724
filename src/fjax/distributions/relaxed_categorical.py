"""The relaxed (Concrete / Gumbel-softmax) one-hot categorical distribution."""

from __future__ import annotations

from .. import creation
from ..tensor import Size, Tensor
from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import _uniform, broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a ``RelaxedOneHotCategorical`` sample: ``log_softmax((logits + G) / temperature)``
    for Gumbel noise ``G``, a density on real vectors.

    Args:
        temperature: the relaxation temperature (a tensor).
        probs: the (unnormalized) category probabilities (give ``probs`` or ``logits``).
        logits: the unnormalized log-probabilities.
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions.relaxed_categorical import ExpRelaxedCategorical
        >>> d = ExpRelaxedCategorical(fjax.tensor(1.0), logits=fjax.zeros(2))
        >>> d.log_prob(fjax.tensor([-0.6931, -0.6931]))
        tensor(-1.3863, dtype=fjax.float32)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args: bool | None = None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    def rsample(self, sample_shape=Size()) -> Tensor:
        uniforms = clamp_probs(_uniform(self._extended_shape(sample_shape), self.logits.dtype))
        gumbels = -((-uniforms.log()).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        K = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = creation.full_like(self.temperature, float(K)).lgamma() - self.temperature.log().mul(-(K - 1))
        score = logits - value.mul(self.temperature)
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """The Concrete (Gumbel-softmax) relaxation of a one-hot categorical, on the simplex:
    ``softmax((logits + G) / temperature)`` for Gumbel noise ``G``; ``rsample`` is differentiable.

    Args:
        temperature: the relaxation temperature (a tensor; small is close to one-hot).
        probs: the (unnormalized) category probabilities (give ``probs`` or ``logits``).
        logits: the unnormalized log-probabilities.
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import RelaxedOneHotCategorical
        >>> d = RelaxedOneHotCategorical(fjax.tensor(1.0), probs=fjax.tensor([0.5, 0.5]))
        >>> d.log_prob(fjax.tensor([0.25, 0.75]))
        tensor(0., dtype=fjax.float32)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args: bool | None = None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs
