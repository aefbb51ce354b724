"""Ready-made parametrizations (``torch.nn.utils.parametrizations``): orthogonal, weight_norm, spectral_norm."""

from __future__ import annotations

from enum import Enum, auto

import numpy as np

from ... import linalg
from ...autograd.grad_mode import no_grad
from ...creation import eye, zeros_like
from ...dispatch import functions as _F
from ...dtypes import bool as fjax_bool
from ...random import randn
from ...tensor import Tensor
from .. import functional as F
from ..module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """torch's ``norm_except_dim(v, 2, dim)``: the 2-norm over every dim but ``dim``, keeping dims
    (``dim=-1``: over the whole tensor, a 0-d result)."""
    if dim == -1:
        return linalg.vector_norm(v)
    dim = dim % v.ndim
    return linalg.vector_norm(v, 2, [d for d in range(v.ndim) if d != dim], keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """torch's ``_weight_norm``: ``v * (g / norm_except_dim(v, 2, dim))``."""
    return v * (g / _norm_except_dim(v, dim))


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.size(-2), Q.size(-1)
    Id = eye(k, dtype=Q.dtype)
    eps = 10.0 * n * float(np.finfo(Q._data.dtype).eps)
    return bool((Q.mH @ Q).allclose(Id, atol=eps))


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of A's QR decomposition, with the signs that make R's diagonal positive (torch's)."""
    X, tau = _F.geqrf(A)
    Q = linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """The orthogonal parametrization: a (lower-triangular) matrix mapped to an orthogonal one."""

    base: Tensor

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = _F.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _F.matrix_exp(A)
            else:
                Id = eye(n, dtype=A.dtype)
                Q = linalg.solve(_F.add(Id, A, alpha=-0.5), _F.add(Id, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape {Q.shape}."
            )
        with no_grad():
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley parametrizations when "
                        "use_trivialization=False."
                    )
                A, tau = _F.geqrf(Q)
                diag = A.diagonal(dim1=-2, dim2=-1)
                diag = diag.sign() * _F.where(tau == 0.0, -1.0, 1.0).to(A.dtype)
                A = _F.where(eye(n, k, dtype=fjax_bool), diag.unsqueeze(-2), A)
                return A.mT if transpose else A
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                N = randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype)
                Q = _make_orthogonal(_F.cat([Q, N], dim=-1))
            self.base = Q
            neg_Id = zeros_like(Q_init)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_Id


def orthogonal(
    module: Module, name: str = "weight", orthogonal_map: str | None = None, *, use_trivialization: bool = True
) -> Module:
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to be orthogonal (or unitary).

    The value is ``base @ map(original)`` where ``map`` is ``"matrix_exp"`` or ``"cayley"`` of the
    skew-symmetric part of ``original`` (default for square or complex matrices) or
    ``"householder"`` reflectors (default otherwise). With ``use_trivialization`` the starting
    value is an orthogonalised copy of the tensor, stored in the ``base`` buffer, and ``original``
    starts at ``-I``.

    Args:
        module: the module holding the tensor.
        name: the name of the tensor.
        orthogonal_map: ``"matrix_exp"``, ``"cayley"`` or ``"householder"``; None picks as above.
        use_trivialization: use the dynamic trivialization framework (the ``base`` buffer).

    Returns:
        ``module``, with the parametrization registered.

    Example:
        >>> m = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3))
        >>> bool(fjax.allclose(m.weight @ m.weight.T, fjax.eye(3), atol=1e-5))
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(
            f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}'
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    """``weight = g * v / ||v||`` with the norm over every dim but ``dim`` (all dims if None)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """Weight normalization as a parametrization: ``weight = g * v / ||v||``.

    ``g`` (the magnitude) and ``v`` (the direction) are
    ``module.parametrizations.<name>.original0`` and ``original1``; the norm is over every dim
    but ``dim`` (over the whole tensor if ``dim`` is None).

    Args:
        module: the module holding the tensor.
        name: the name of the tensor.
        dim: the dim whose slices are normalised separately; None for the whole tensor.

    Returns:
        ``module``, with the parametrization registered.

    Example:
        >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3))
        >>> sorted(m.state_dict())
        ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
        >>> m.parametrizations.weight.original0.shape
        fjax.Size([3, 1])
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """``weight / sigma`` with ``sigma`` the largest singular value estimated by power iteration."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(_F.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_F.mv(weight_mat.mH, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = _F.vdot(u, _F.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> Module:
    """Spectral normalization as a parametrization: ``weight / sigma(weight)``.

    ``sigma``, the largest singular value of the weight viewed as a matrix (``dim`` first,
    the rest flattened), is estimated by ``n_power_iterations`` steps of power iteration on each
    read in training mode; the vectors live in the buffers ``_u`` and ``_v`` of the
    parametrization (15 iterations run at registration). In eval mode they are not updated.

    Args:
        module: the module holding the tensor.
        name: the name of the tensor.
        n_power_iterations: power iterations per read in training mode.
        eps: the epsilon of the normalisations.
        dim: the output dim (default 0, 1 for ConvTranspose).

    Returns:
        ``module``, with the parametrization registered.

    Example:
        >>> m = nn.utils.parametrizations.spectral_norm(nn.Linear(4, 3))
        >>> sorted(m.state_dict())
        ['bias', 'parametrizations.weight.0._u', 'parametrizations.weight.0._v', 'parametrizations.weight.original']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
