"""The relaxed (Concrete / Gumbel-sigmoid) Bernoulli distribution."""

from __future__ import annotations

from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import _NUMBER, _uniform, broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(Distribution):
    """The logit of a ``RelaxedBernoulli`` sample: ``(logit(U) + logits) / temperature`` for ``U``
    uniform, a density on the real line.

    Args:
        temperature: the relaxation temperature (a tensor).
        probs: the probability of 1 (give ``probs`` or ``logits``).
        logits: the log-odds of 1.
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions.relaxed_bernoulli import LogitRelaxedBernoulli
        >>> d = LogitRelaxedBernoulli(fjax.tensor(0.5), logits=fjax.tensor([0.0]))
        >>> d.log_prob(fjax.tensor([0.0]))
        tensor([-2.0794], dtype=fjax.float32)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args: bool | None = None):
        self.temperature = temperature
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, _NUMBER)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = isinstance(logits, _NUMBER)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(Size() if is_scalar else self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.temperature = self.temperature
        if "probs" in vars(self):
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in vars(self):
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(tuple(shape)))
        uniforms = clamp_probs(_uniform(shape, probs.dtype))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """The Concrete relaxation of a Bernoulli on ``(0, 1)``: the sigmoid of a
    ``LogitRelaxedBernoulli`` draw; ``rsample`` is differentiable in ``probs``/``logits``.

    Args:
        temperature: the relaxation temperature (a tensor; small is close to a Bernoulli).
        probs: the probability of 1 (give ``probs`` or ``logits``).
        logits: the log-odds of 1.
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import RelaxedBernoulli
        >>> d = RelaxedBernoulli(fjax.tensor(0.5), probs=fjax.tensor([0.3]))
        >>> d.log_prob(fjax.tensor([0.5]))
        tensor([-0.8675], dtype=fjax.float32)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args: bool | None = None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
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
