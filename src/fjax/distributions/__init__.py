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
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F403 - torch.distributions re-exports every transform
from .transforms import __all__ as _transforms_all
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "Dirichlet",
    "Distribution",
    "Exponential",
    "ContinuousBernoulli",
    "ExponentialFamily",
    "FisherSnedecor",
    "GeneralizedPareto",
    "InverseGamma",
    "Kumaraswamy",
    "LogisticNormal",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "Gamma",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "Poisson",
    "StudentT",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "Wishart",
    "biject_to",
    "constraints",
    "kl",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
    "utils",
] + list(_transforms_all)
