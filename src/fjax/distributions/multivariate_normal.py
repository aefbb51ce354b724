"""The multivariate normal distribution."""

from __future__ import annotations

import math

import numpy as np

from .. import creation, linalg
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_shape_of(*shapes) -> tuple:
    return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))


def _tril_solve(L: Tensor, b: Tensor) -> Tensor:
    """``L^-1 b`` for lower-triangular ``L`` (batches broadcast), reading only L's lower
    triangle, as torch's ``solve_triangular`` (no singularity check: nothing read on the host)."""
    return linalg.solve_triangular(L, b, upper=False)


def _batch_mahalanobis(L: Tensor, x: Tensor) -> Tensor:
    """The squared Mahalanobis distance ``x^T (L L^T)^-1 x`` for each vector in ``x``."""
    return _tril_solve(L, x.unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(P: Tensor) -> Tensor:
    """The lower Cholesky factor of ``P^-1``, from the Cholesky factor of ``P`` with rows and
    columns reversed (torch's route, which avoids inverting ``P`` itself)."""
    Lf = linalg.cholesky(P.flip((-2, -1)))
    L_inv = Lf.flip((-2, -1)).mT
    eye = creation.eye(P.shape[-1], dtype=P.dtype)
    return _tril_solve(L_inv, eye)


class MultivariateNormal(Distribution):
    """The multivariate normal distribution with mean vector ``loc`` and one of
    ``covariance_matrix``, ``precision_matrix`` (its inverse) or ``scale_tril`` (its lower
    Cholesky factor, the cheapest to give). Batch dims of ``loc`` and the matrix broadcast.

    Example::

        >>> from fjax.distributions import MultivariateNormal
        >>> d = MultivariateNormal(fjax.zeros(2), fjax.tensor([[2.0, 1.0], [1.0, 2.0]]))
        >>> d.log_prob(fjax.tensor([1.0, -1.0]))
        tensor(-3.3872, dtype=fjax.float32)
        >>> d.scale_tril
        tensor([[1.4142, 0.0000],
                [0.7071, 1.2247]], dtype=fjax.float32)
        >>> d.rsample((4,)).shape
        fjax.Size([4, 2])
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ):
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        matrix = given[0]
        name = (
            "scale_tril"
            if scale_tril is not None
            else "covariance_matrix"
            if covariance_matrix is not None
            else "precision_matrix"
        )
        if matrix.ndim < 2:
            raise ValueError(f"{name} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = Size(_batch_shape_of(matrix.shape[:-2], loc.shape[:-1]))
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(tuple(batch_shape))
        n = tuple(self.event_shape)
        new.loc = self.loc.expand(tuple(batch_shape) + n)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in vars(self):
                setattr(new, name, getattr(self, name).expand(tuple(batch_shape) + n + n))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        L_inv = linalg.solve(L, creation.eye(L.shape[-1], dtype=L.dtype))  # all of L: torch's gradient
        return (L_inv.mT @ L_inv).expand(self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        shape = tuple(self._batch_shape) + tuple(self._event_shape)
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(shape)

    def rsample(self, sample_shape=Size()) -> Tensor:
        eps = _standard_normal(self._extended_shape(sample_shape), self.loc.dtype)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self) -> Tensor:
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
