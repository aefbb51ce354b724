"""The multivariate normal with a low-rank plus diagonal covariance."""

from __future__ import annotations

import math

from .. import creation, linalg
from ..dispatch import functions as _f
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis, _tril_solve
from .utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _batch_mv(mat: Tensor, vec: Tensor) -> Tensor:
    return (mat @ vec.unsqueeze(-1)).squeeze(-1)


def _batch_capacitance_tril(W: Tensor, D: Tensor) -> Tensor:
    """The Cholesky factor of ``I + W^T D^-1 W``."""
    m = W.shape[-1]
    K = (W.mT / D.unsqueeze(-2)) @ W
    return linalg.cholesky(K + creation.eye(m, dtype=K.dtype))


def _batch_lowrank_logdet(W: Tensor, D: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``log det(W W^T + D)`` by the matrix determinant lemma."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W: Tensor, D: Tensor, x: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``x^T (W W^T + D)^-1 x`` by the Woodbury identity."""
    Wt_Dinv_x = _batch_mv(W.mT / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal with mean ``loc`` and covariance ``cov_factor @ cov_factor.mT +
    diag(cov_diag)``; ``log_prob`` and ``entropy`` cost ``O(n m^2)`` for an ``n x m`` factor.

    Args:
        loc: the mean, of shape ``batch_shape + (n,)``.
        cov_factor: the low-rank factor ``W``, of shape ``batch_shape + (n, m)``.
        cov_diag: the diagonal part ``D`` (positive), of shape ``batch_shape + (n,)``.
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import LowRankMultivariateNormal
        >>> d = LowRankMultivariateNormal(fjax.zeros(2), fjax.tensor([[1.0], [0.0]]), fjax.ones(2))
        >>> d.covariance_matrix
        tensor([[2., 0.],
                [0., 1.]], dtype=fjax.float32)
        >>> d.log_prob(fjax.zeros(2))
        tensor(-2.1845, dtype=fjax.float32)
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args: bool | None = None):
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = Size(tuple(loc.shape[-1:]))
        if cov_factor.ndim < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {tuple(event_shape)}")
        try:
            loc_, self.cov_factor, cov_diag_ = _f.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1)
            )
        except (RuntimeError, ValueError) as e:
            raise ValueError(
                f"Incompatible batch shapes: loc {tuple(loc.shape)}, cov_factor {tuple(cov_factor.shape)}, "
                f"cov_diag {tuple(cov_diag.shape)}"
            ) from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(tuple(batch_shape))
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        var = self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return var.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self) -> Tensor:
        n = self._event_shape[0]
        diag_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / diag_sqrt
        K = Dinvsqrt_W @ Dinvsqrt_W.mT + creation.eye(n, dtype=Dinvsqrt_W.dtype)
        return (diag_sqrt * linalg.cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        W = self._unbroadcasted_cov_factor
        cov = W @ W.mT + self._unbroadcasted_cov_diag.diag_embed()
        return cov.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = _tril_solve(self._capacitance_tril, Wt_Dinv)
        precision = self._unbroadcasted_cov_diag.reciprocal().diag_embed() - A.mT @ A
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        eps_W = _standard_normal(shape[:-1] + tuple(self.cov_factor.shape[-1:]), self.loc.dtype)
        eps_D = _standard_normal(shape, self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W) + self._unbroadcasted_cov_diag.sqrt() * eps_D

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        W, D, L = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril
        M = _batch_lowrank_mahalanobis(W, D, value - self.loc, L)
        log_det = _batch_lowrank_logdet(W, D, L)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + M)

    def entropy(self) -> Tensor:
        W, D, L = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + _batch_lowrank_logdet(W, D, L))
        return H if len(self._batch_shape) == 0 else H.expand(tuple(self._batch_shape))
