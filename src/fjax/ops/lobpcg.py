"""LOBPCG: a few extreme eigenpairs of a symmetric (positive-definite) matrix, as a pure function of
jax arrays; ``fjax.lobpcg`` (in ``fjax/_lobpcg.py``) draws the start vectors and checks the arguments.

The iteration is JAX's ``lobpcg_standard`` (orthonormal search basis, top eigenpairs). The smallest
eigenpairs are the top ones of ``sigma * I - A`` with ``sigma`` a bound on ``A``'s spectrum; the
generalized problem ``A x = lambda B x`` is the standard one of ``L^-1 A L^-T`` (``B = L L^T``).
JAX's routine needs ``5 * n < m`` (n start vectors, m rows); between torch's bound ``3 * n <= m``
and that, the eigenpairs come from a dense ``eigh``, the point the iteration converges to.
The gradient (``B`` None) is that of the selected eigenpairs of ``eigh``, as torch's backward.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from ._registry import defop


def _sym(a):
    return (a + jnp.swapaxes(a, -1, -2)) / 2


def _top(C, X, niter, tol):
    """The ``n = X.shape[-1]`` largest eigenpairs of each symmetric ``C``, largest first."""
    m, n = C.shape[-1], X.shape[-1]
    if 5 * n < m:
        batch = C.shape[:-2]
        flat_c, flat_x = C.reshape((-1, m, m)), X.reshape((-1, m, n))
        # (imported here: jax.experimental.sparse loads scipy.sparse, a second of ``import fjax``)
        from jax.experimental.sparse.linalg import lobpcg_standard

        solve = jax.vmap(lambda c, x: lobpcg_standard(c, x, m=niter, tol=tol)[:2])
        theta, U = solve(flat_c, flat_x)
        return theta.reshape(batch + (n,)), U.reshape(batch + (m, n))
    w, V = jnp.linalg.eigh(C)
    return w[..., ::-1][..., :n], V[..., ::-1][..., :n]


def _extreme(A, k, largest):
    """The ``k`` extreme eigenpairs of ``A`` by ``eigh``: what the backward differentiates."""
    w, V = jnp.linalg.eigh(_sym(A))
    if largest:
        w, V = w[..., ::-1], V[..., ::-1]
    return w[..., :k], V[..., :k]


@partial(jax.custom_vjp, nondiff_argnums=(2, 3, 4, 5))
def _standard(A, X, k, niter, tol, largest):
    C = _sym(A)
    if largest:
        theta, U = _top(C, X, niter, tol)
        return theta[..., :k], U[..., :k]
    sigma = jnp.abs(C).sum(-1).max(-1)[..., None]  # >= every eigenvalue's magnitude (Gershgorin)
    shifted = sigma[..., None] * jnp.eye(C.shape[-1], dtype=C.dtype) - C
    theta, U = _top(shifted, X, niter, tol)
    return sigma - theta[..., :k], U[..., :k]


def _standard_fwd(A, X, k, niter, tol, largest):
    out = _standard(A, X, k, niter, tol, largest)
    return out, (A, X, out[1])


def _standard_bwd(k, niter, tol, largest, res, g):
    A, X, U = res
    gE, gU = g
    (_, V), vjp = jax.vjp(lambda a: _extreme(a, k, largest), A)
    sign = jnp.sign(jnp.sum(V * U, axis=-2, keepdims=True))  # the iteration's eigenvectors' signs
    (gA,) = vjp((gE, gU * jnp.where(sign == 0, 1, sign)))
    return gA, jnp.zeros_like(X)


_standard.defvjp(_standard_fwd, _standard_bwd)


@defop(static=("k", "niter", "tol", "largest"), method=False)
def _lobpcg(A, X, B=None, k=1, niter=1000, tol=None, largest=True):
    """The ``k`` largest (or smallest) eigenpairs ``(E, X)`` of ``A x = lambda B x`` for a symmetric
    ``A`` and positive-definite ``B`` (identity when None), started from the columns of ``X``.

    Example::

        >>> from fjax.dispatch import functions
        >>> E, V = functions._lobpcg(fjax.diag(fjax.arange(1.0, 13.0)), fjax.rand(12, 2), k=2)
        >>> E.round()
        tensor([12., 11.], dtype=fjax.float32)
    """
    if B is None:
        return _standard(A, X, k, niter, tol, largest)
    L = jnp.linalg.cholesky(B)

    def l_inv(M):
        return jax.scipy.linalg.solve_triangular(L, M, lower=True)

    C = l_inv(jnp.swapaxes(l_inv(A), -1, -2))  # L^-1 A L^-T
    E, Y = _standard(C, jnp.swapaxes(L, -1, -2) @ X, k, niter, tol, largest)
    return E, jax.scipy.linalg.solve_triangular(jnp.swapaxes(L, -1, -2), Y, lower=False)
