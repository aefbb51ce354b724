"""The Wishart distribution over symmetric positive-definite matrices."""

from __future__ import annotations

import math
import warnings

from .. import creation, linalg
from ..dispatch import functions as _f
from ..tensor import Size, Tensor
from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _batch_shape_of, _precision_to_scale_tril
from .utils import _NUMBER, _finfo, _standard_normal, _traced, lazy_property, vec_to_tril_matrix

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma function: ``sum_i digamma(x - i / 2)`` for ``i < p``."""
    if not _traced(x) and not bool(x.gt((p - 1) / 2).all()):
        raise ValueError(f"Wishart: the multivariate digamma needs x > {(p - 1) / 2} (p={p}).")
    offsets = creation.arange(p, dtype=x.dtype) / 2
    return (x.unsqueeze(-1) - offsets).digamma().sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution over ``p x p`` symmetric positive-definite matrices with ``df``
    degrees of freedom and scale matrix ``Sigma``, given as one of ``covariance_matrix``,
    ``precision_matrix`` (its inverse) or ``scale_tril`` (its lower Cholesky factor, the cheapest).
    Draws use the Bartlett decomposition and are reparametrized (differentiable in ``df`` and Sigma).

    Args:
        df: the degrees of freedom, a number or tensor greater than ``p - 1`` (batch dims broadcast
            with the matrix's).
        covariance_matrix: the positive-definite scale matrix ``Sigma``, ``(..., p, p)``.
        precision_matrix: the positive-definite ``Sigma^-1``, ``(..., p, p)``.
        scale_tril: the lower-triangular Cholesky factor of ``Sigma`` with a positive diagonal.
        validate_args: check the parameters (and ``log_prob``'s values) against their constraints.

    Example::

        >>> from fjax.distributions import Wishart
        >>> d = Wishart(fjax.tensor(4.0), covariance_matrix=fjax.eye(2))
        >>> d.mean
        tensor([[4., 0.],
                [0., 4.]], dtype=fjax.float32)
        >>> d.log_prob(fjax.eye(2))
        tensor(-4.2242, dtype=fjax.float32)
        >>> d.rsample((3,)).shape
        fjax.Size([3, 2, 2])
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(
        self,
        df,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = given[0]
        if param.ndim < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, _NUMBER):
            batch_shape = Size(tuple(param.shape[:-2]))
            self.df = creation.tensor(float(df), dtype=param.dtype)
        elif isinstance(df, Tensor):
            batch_shape = Size(_batch_shape_of(param.shape[:-2], df.shape))
            self.df = df.expand(batch_shape)
        else:
            raise TypeError(f"Wishart: df must be a number or a Tensor, got {type(df).__name__}.")
        event_shape = Size(tuple(param.shape[-2:]))
        p = event_shape[-1]
        if not _traced(self.df):
            if bool(self.df.le(p - 1).any()):
                raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
            if bool(self.df.lt(p).any()):
                warnings.warn(
                    "Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < ndim.",
                    stacklevel=2,
                )
        matrix_shape = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(matrix_shape)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(matrix_shape)
        else:
            self.precision_matrix = param.expand(matrix_shape)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._bartlett_chi2(batch_shape)

    def _bartlett_chi2(self, batch_shape) -> Chi2:
        """The chi-squared variables of the Bartlett factor's diagonal: ``df - i`` degrees of freedom."""
        offsets = creation.arange(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype)
        return Chi2(self.df.unsqueeze(-1) - offsets.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(tuple(batch_shape))
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in vars(self):
                setattr(new, name, getattr(self, name).expand(cov_shape))
        ExponentialFamily.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._bartlett_chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape)

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
        identity = creation.eye(self._event_shape[-1], dtype=L.dtype)
        return _f.cholesky_solve(identity, L).expand(self._matrix_shape())

    def _df_matrix(self, x: Tensor) -> Tensor:
        return x.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = factor.where(factor > 0, math.nan)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape) -> Tensor:
        p = self._event_shape[-1]
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=float(_finfo(self.df).eps))
        below = _standard_normal(tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,), diag.dtype)
        noise = diag.diag_embed(dim1=-2, dim2=-1) + vec_to_tril_matrix(below, diag=-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT

    def _singular(self, sample: Tensor) -> Tensor:
        """Per draw (over sample dims), whether any matrix of its batch is not positive definite."""
        bad = ~self.support.check(sample)
        return bad.amax(self._batch_dims) if self._batch_shape else bad

    def rsample(self, sample_shape=Size(), max_try_correction=None) -> Tensor:
        """A reparametrized draw by the Bartlett decomposition. A draw that comes out singular (likely
        when ``p - 1 < df < p``) is redrawn up to ``max_try_correction`` times (default 10), with a
        warning; one still singular then is returned as it is (its ``log_prob`` may be ``-inf``).

        Args:
            sample_shape: the leading shape of the draws.
            max_try_correction: how many times singular draws are redrawn.

        Example::

            >>> from fjax.distributions import Wishart
            >>> Wishart(5.0, scale_tril=fjax.eye(3)).rsample((2,)).shape
            fjax.Size([2, 3, 3])
        """
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = Size(tuple(sample_shape))
        sample = self._bartlett_sampling(sample_shape)
        if _traced(sample):
            return sample
        is_singular = self._singular(sample)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                redraw = self._bartlett_sampling(sample_shape)
                mask = is_singular.reshape(tuple(is_singular.shape) + (1,) * (sample.ndim - is_singular.ndim))
                sample = redraw.where(mask, sample)
                is_singular = self._singular(sample)
                if not bool(is_singular.any()):
                    break
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (
            -nu * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
            - _f.mvlgamma(nu / 2, p=p)
            + (nu - p - 1) / 2 * linalg.slogdet(value).logabsdet
            - _f.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2
        )

    def entropy(self) -> Tensor:
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (
            (p + 1) * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
            + _f.mvlgamma(nu / 2, p=p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p)
            + nu * p / 2
        )

    @property
    def _natural_params(self) -> tuple:
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p) + _f.mvlgamma(y + (p + 1) / 2, p=p)
