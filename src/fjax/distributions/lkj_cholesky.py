"""The LKJ distribution over Cholesky factors of correlation matrices."""

from __future__ import annotations

import math

from .. import creation
from ..autograd.grad_mode import no_grad
from ..dispatch import functions as _f
from ..tensor import Size, Tensor
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import _finfo, _standard_normal, broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution over lower Cholesky factors ``L`` of ``dim x dim`` correlation matrices:
    the density of ``L @ L.mT`` is proportional to ``det(L @ L.mT) ** (concentration - 1)``. Draws
    use the onion method (Lewandowski, Kurowicka & Joe, 2009), as torch's.

    Args:
        dim: the matrix size (at least 2).
        concentration: the shape parameter (positive; 1 is uniform over correlation matrices).
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import LKJCholesky
        >>> d = LKJCholesky(3, 0.5)
        >>> d.log_prob(fjax.eye(3))
        tensor(-2.5310, dtype=fjax.float32)
        >>> d.sample((2,)).shape
        fjax.Size([2, 3, 3])
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args: bool | None = None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = creation.arange(self.dim - 1, dtype=self.concentration.dtype)
        offset = _f.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.shape, Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()) -> Tensor:
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = _standard_normal(self._extended_shape(sample_shape), y.dtype).tril(-1)
            norm = u_normal.norm(dim=-1, keepdim=True)
            first_row = creation.arange(self.dim).reshape(-1, 1) == 0
            u_hypersphere = _f.where(first_row, 0.0, u_normal / _f.where(first_row, 1.0, norm))
            w = y.sqrt() * u_hypersphere
            diag_elems = (1 - (w**2).sum(-1)).clamp(min=float(_finfo(w).tiny)).sqrt()
            return w + diag_elems.diag_embed()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = creation.arange(2, self.dim + 1, dtype=self.concentration.dtype)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = alpha.lgamma() * dm1
        numerator = _f.mvlgamma(alpha - 0.5, dm1)
        normalize_term = 0.5 * dm1 * math.log(math.pi) + numerator - denominator
        return unnormalized_log_pdf - normalize_term
