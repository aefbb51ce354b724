"""``fjax.linalg``: torch.linalg's common functions, with torch's names, signatures and named tuples.

Each function takes (batches of) matrices in the last two dims; the batch dims broadcast where torch's
do. The kernels are ``jnp.linalg`` / ``jax.lax.linalg`` ops (``fjax/ops/linalg.py``), so gradients come
from JAX. Where torch raises on a singular or not positive-definite input (``inv``, ``solve``,
``cholesky``), so does fjax in eager mode, with :class:`LinAlgError`.

Example::

    >>> A = fjax.tensor([[4.0, 2.0], [2.0, 3.0]])
    >>> fjax.linalg.det(A)
    tensor(8., dtype=fjax.float32)
"""

from __future__ import annotations

from .dispatch import functions as _f
from .ops.linalg import LinAlgError

__all__ = [
    "LinAlgError",
    "norm",
    "vector_norm",
    "matrix_norm",
    "solve",
    "inv",
    "inv_ex",
    "det",
    "slogdet",
    "eigh",
    "eigvalsh",
    "svd",
    "svdvals",
    "qr",
    "cholesky",
    "lstsq",
    "pinv",
    "matrix_rank",
    "cross",
    "multi_dot",
    "vecdot",
    "matmul",
    "diagonal",
]

vector_norm = _f.linalg_vector_norm
matrix_norm = _f.linalg_matrix_norm
solve = _f.linalg_solve
inv = _f.linalg_inv
inv_ex = _f.linalg_inv_ex
det = _f.linalg_det
slogdet = _f.linalg_slogdet
eigh = _f.linalg_eigh
eigvalsh = _f.linalg_eigvalsh
svd = _f.linalg_svd
svdvals = _f.linalg_svdvals
qr = _f.linalg_qr
cholesky = _f.linalg_cholesky
lstsq = _f.linalg_lstsq
pinv = _f.linalg_pinv
matrix_rank = _f.linalg_matrix_rank
vecdot = _f.linalg_vecdot


def norm(input, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm (``dim`` an int, or ``input`` 1-D) or matrix norm (``dim`` a pair, or ``input`` 2-D);
    with ``ord`` and ``dim`` both None, the 2-norm of all elements.

    Example::

        >>> fjax.linalg.norm(fjax.tensor([[3.0, 0.0], [0.0, 4.0]]))
        tensor(5., dtype=fjax.float32)
        >>> fjax.linalg.norm(fjax.tensor([[3.0, 0.0], [0.0, 4.0]]), ord=2)
        tensor(4., dtype=fjax.float32)
    """
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(input, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(input, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise ValueError(f"linalg.norm: dim must name 1 or 2 dims, got {dim}")
    if ord is None:
        return vector_norm(input, 2, None, keepdim, dtype=dtype)
    if input.ndim == 1:
        return vector_norm(input, ord, None, keepdim, dtype=dtype)
    if input.ndim == 2:
        return matrix_norm(input, ord, (-2, -1), keepdim, dtype=dtype)
    raise ValueError(f"linalg.norm: with ord={ord!r} and no dim, input must be 1-D or 2-D, got {input.ndim}-D")


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along ``dim`` (default the last), the inputs broadcast together.

    Example::

        >>> fjax.linalg.cross(fjax.tensor([1.0, 0.0, 0.0]), fjax.tensor([0.0, 1.0, 0.0]))
        tensor([0., 0., 1.], dtype=fjax.float32)
    """
    if input.ndim != other.ndim:
        raise ValueError(f"linalg.cross: inputs must have the same number of dims, got {input.ndim} and {other.ndim}")
    return _f.cross(input, other, dim=dim)


def matmul(input, other):
    """The matrix product, as ``fjax.matmul`` (``input @ other``).

    Example::

        >>> fjax.linalg.matmul(fjax.tensor([[1.0, 2.0]]), fjax.tensor([[3.0], [4.0]]))
        tensor([[11.]], dtype=fjax.float32)
    """
    return _f.matmul(input, other)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The ``offset`` diagonal of each matrix in dims ``dim1``, ``dim2`` (default the last two), a view.

    Example::

        >>> fjax.linalg.diagonal(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([1., 4.], dtype=fjax.float32)
    """
    return _f.diagonal(A, offset, dim1, dim2)


def multi_dot(tensors):
    """The product of a chain of matrices, multiplied in the order of least work; the first may be a
    1-D row vector and the last a 1-D column vector (their dim is dropped).

    Example::

        >>> a, b, c = fjax.ones(2, 3), fjax.ones(3, 4), fjax.ones(4)
        >>> fjax.linalg.multi_dot([a, b, c])
        tensor([12., 12.], dtype=fjax.float32)
    """
    tensors = list(tensors)
    if len(tensors) < 2:
        raise ValueError(f"linalg.multi_dot: expected at least 2 tensors, got {len(tensors)}")
    first, last = tensors[0].ndim, tensors[-1].ndim
    mats = list(tensors)
    if first == 1:
        mats[0] = _f.unsqueeze(mats[0], 0)
    if last == 1:
        mats[-1] = _f.unsqueeze(mats[-1], 1)
    for i, t in enumerate(mats):
        if t.ndim != 2:
            raise ValueError(
                f"linalg.multi_dot: tensor {i} must be 2-D (the first and last may be 1-D), got shape {tuple(t.shape)}"
            )
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise ValueError(
                f"linalg.multi_dot: tensors {i} {tuple(mats[i].shape)} and {i + 1} {tuple(mats[i + 1].shape)} "
                "cannot be multiplied"
            )
    out = _chain(mats, _order([m.shape[0] for m in mats] + [mats[-1].shape[1]]), 0, len(mats) - 1)
    if first == 1:
        out = _f.squeeze(out, 0)
    if last == 1:
        out = _f.squeeze(out, -1)
    return out


def _order(dims):
    """The matrix-chain split table: ``split[i][j]`` is where the cheapest product of matrices i..j splits."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return _f.matmul(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))


solve_triangular = _f.linalg_solve_triangular
cholesky_ex = _f.linalg_cholesky_ex
matrix_power = _f.linalg_matrix_power
eig = _f.linalg_eig
eigvals = _f.linalg_eigvals
cond = _f.linalg_cond
vander = _f.linalg_vander
matrix_exp = _f.matrix_exp
__all__ += ["solve_triangular", "cholesky_ex", "matrix_power", "eig", "eigvals", "cond", "vander", "matrix_exp"]

lu_factor = _f.linalg_lu_factor
lu_factor_ex = _f.linalg_lu_factor_ex
lu = _f.linalg_lu
lu_solve = _f.linalg_lu_solve
__all__ += ["lu_factor", "lu_factor_ex", "lu", "lu_solve"]

solve_ex = _f.linalg_solve_ex
tensorinv = _f.linalg_tensorinv
tensorsolve = _f.linalg_tensorsolve
householder_product = _f.linalg_householder_product
__all__ += ["solve_ex", "tensorinv", "tensorsolve", "householder_product"]

ldl_factor = _f.linalg_ldl_factor
ldl_factor_ex = _f.linalg_ldl_factor_ex
ldl_solve = _f.linalg_ldl_solve
__all__ += ["ldl_factor", "ldl_factor_ex", "ldl_solve"]


# -- torch's top-level randomized low-rank SVD and PCA (torch.svd_lowrank, torch.pca_lowrank) -----------------
# Composites of fjax ops (random draws from fjax's default generator), not part of torch.linalg: fjax's
# top level exports them.


def svd_lowrank(A, q=6, niter=2, M=None):
    """An approximate rank-``q`` SVD ``(U, S, V)`` of ``A - M`` (``M`` defaults to 0), ``A - M ~ U diag(S) V.mH``,
    by randomized subspace iteration (Halko, Martinsson and Tropp 2011, Algorithm 4.4) with ``niter``
    power iterations; the random test matrix comes from fjax's default generator. Exact when the rank of
    ``A - M`` is at most ``q``.

    Example::

        >>> A = fjax.tensor([[3.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
        >>> U, S, V = fjax.svd_lowrank(A, q=2)
        >>> fjax.allclose(S, fjax.tensor([3.0, 2.0])), fjax.allclose(U @ S.diag() @ V.mH, A, atol=1e-6)
        (True, True)
    """
    q = 6 if q is None else q
    if M is not None:
        A = A - M
    if A.ndim < 2:
        raise ValueError(f"svd_lowrank: expected a (batch of) matrices, got shape {tuple(A.shape)}")
    m, n = A.shape[-2:]
    if not isinstance(q, int) or not 0 <= q <= min(m, n):
        raise ValueError(f"svd_lowrank: q must be an integer in [0, {min(m, n)}] for A {tuple(A.shape)}, got {q!r}")
    if m < n:  # factor A^H = U S V^H (tall), so A = V S U^H
        U, S, V = svd_lowrank(A.mH, q, niter)
        return V, S, U
    Q = _range_basis(A, q, niter)
    U, S, Vh = svd(Q.mH @ A, full_matrices=False)
    return Q @ U, S, Vh.mH


def _range_basis(A, q, niter):
    """An orthonormal ``m x q`` basis approximately spanning the dominant range of ``A``: ``A`` applied to a
    Gaussian ``n x q`` matrix, then ``niter`` rounds of ``A^H``/``A``, orthonormalized by QR after each product."""
    from .random import randn

    test = randn(*A.shape[:-2], A.shape[-1], q, dtype=A.dtype)
    Q = qr(A @ test).Q
    for _ in range(niter):
        Q = qr(A.mH @ Q).Q
        Q = qr(A @ Q).Q
    return Q


def pca_lowrank(A, q=None, center=True, niter=2):
    """``(U, S, V)``: the rank-``q`` principal components of the rows of ``A`` (``svd_lowrank`` of ``A`` minus its
    column means when ``center``); ``q`` defaults to ``min(6, m, n)``. The principal directions are ``V``'s columns.

    Example::

        >>> A = fjax.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
        >>> U, S, V = fjax.pca_lowrank(A, q=1)
        >>> S
        tensor([2.], dtype=fjax.float32)
    """
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    return svd_lowrank(A, q, niter, A.mean(dim=-2, keepdim=True) if center else None)
