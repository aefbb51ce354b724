"""``fjax.distributions``: torch.distributions' probability distributions over fjax tensors.

Every method is built of fjax ops, so ``log_prob``, ``entropy`` and ``rsample`` are
differentiable through the autograd tape and work inside ``fjax.func`` transforms and
``nn.Graph``. Draws come from fjax's default generator (``fjax.manual_seed`` repeats them);
they follow the same distributions as torch's but are not the same numbers.

Example::

    >>> from fjax.distributions import Normal, kl_divergence
    >>> loc = fjax.tensor([0.0, 1.0], requires_grad=True)
    >>> d = Normal(loc, fjax.ones(2))
    >>> d.log_prob(fjax.tensor([0.5, 0.5])).sum().backward()
    >>> loc.grad
    tensor([ 0.5000, -0.5000], dtype=fjax.float32)
"""

from __future__ import annotations

from . import constraints, kl, transforms, utils
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Dirichlet",
    "Distribution",
    "Exponential",
    "Gamma",
    "Independent",
    "Laplace",
    "LogNormal",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Poisson",
    "TransformedDistribution",
    "Uniform",
    "constraints",
    "kl",
    "kl_divergence",
    "register_kl",
    "transforms",
    "utils",
]
