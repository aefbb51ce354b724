"""``torch.lobpcg``: a few extreme eigenpairs of a symmetric positive-definite (generalized) eigenproblem."""

from __future__ import annotations

from . import random as _random
from .dispatch import functions as _F
from .tensor import Tensor

_UNSUPPORTED = ("iK", "tracker", "ortho_iparams", "ortho_fparams", "ortho_bparams")


def lobpcg(
    A: Tensor,
    k: int | None = None,
    B: Tensor | None = None,
    X: Tensor | None = None,
    n: int | None = None,
    iK: Tensor | None = None,
    niter: int | None = None,
    tol: float | None = None,
    largest: bool | None = None,
    method: str | None = None,
    tracker=None,
    ortho_iparams: dict | None = None,
    ortho_fparams: dict | None = None,
    ortho_bparams: dict | None = None,
) -> tuple:
    """The ``k`` largest (or smallest) eigenvalues ``E`` and eigenvectors ``X`` of ``A x = lambda B x``
    for a symmetric positive-definite ``A`` (and ``B``), by LOBPCG (JAX's, with an orthonormal search
    basis, which serves both ``method="ortho"`` and ``"basic"``). ``E`` is ``(*, k)``, sorted from the
    extreme inward; ``X`` is ``(*, m, k)`` with unit (``B``-orthonormal) columns of arbitrary sign.
    Differentiable in ``A`` when ``B`` is None (the gradient of those eigenpairs, as torch's).

    Args:
        A: the symmetric ``(*, m, m)`` matrix (batch dims allowed).
        k: the number of eigenpairs; default ``X``'s number of columns, or 1.
        B: the positive-definite ``(*, m, m)`` matrix of the generalized problem; None: identity.
        X: ``(*, m, n)`` start vectors (``k <= n``); None: ``n`` random ones.
        n: the number of random start vectors when ``X`` is None (default ``k``); ``m >= 3 n``.
        iK: a preconditioner: not supported (NotImplementedError).
        niter: the most iterations (default 1000; -1: until converged).
        tol: the residual tolerance of convergence; None: the dtype's machine epsilon.
        largest: True (default) for the largest eigenvalues, False for the smallest.
        method: ``"ortho"`` (default) or ``"basic"``: both run the orthonormal-basis iteration.
        tracker: an iteration callback: not supported (NotImplementedError).
        ortho_iparams: the ortho method's integer parameters: not supported (NotImplementedError).
        ortho_fparams: the ortho method's float parameters: not supported (NotImplementedError).
        ortho_bparams: the ortho method's boolean parameters: not supported (NotImplementedError).

    Example::

        >>> A = fjax.diag(fjax.arange(1.0, 13.0))
        >>> E, V = fjax.lobpcg(A, k=2)
        >>> E.round()
        tensor([12., 11.], dtype=fjax.float32)
        >>> fjax.lobpcg(A, k=2, largest=False)[0].round()
        tensor([1., 2.], dtype=fjax.float32)
    """
    given = dict(iK=iK, tracker=tracker, ortho_iparams=ortho_iparams, ortho_fparams=ortho_fparams)
    given["ortho_bparams"] = ortho_bparams
    for name in _UNSUPPORTED:
        if given[name] is not None:
            raise NotImplementedError(f"lobpcg: {name} is not supported by fjax")
    method = "ortho" if method is None else method
    if method not in ("ortho", "basic"):
        raise ValueError(f"lobpcg: method must be 'ortho' or 'basic', got {method!r}")
    if not isinstance(A, Tensor) or A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"lobpcg: A must be a square (*, m, m) tensor, got {getattr(A, 'shape', A)!r}")
    if not A.is_floating_point():
        raise TypeError(f"lobpcg: A must be a floating tensor, got {A.dtype}")
    m = A.shape[-1]
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise ValueError(f"lobpcg: B must have A's shape {tuple(A.shape)}, got {tuple(B.shape)}")
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(
            f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x the number "
            f"of requested eigenpairs (={n})"
        )
    if not 0 < k <= n:
        raise ValueError(f"lobpcg: k (={k}) must be positive and at most the number of start vectors n (={n})")
    if X is None:
        X = _random.randn(*(tuple(A.shape[:-2]) + (m, n)), dtype=A.dtype)
    elif tuple(X.shape[-2:]) != (m, n) or tuple(X.shape[:-2]) not in ((), tuple(A.shape[:-2])):
        raise ValueError(f"lobpcg: X shape mismatch: got {tuple(X.shape)}, expected {tuple(A.shape[:-2]) + (m, n)}")
    else:
        X = X.expand(tuple(A.shape[:-2]) + (m, n))
    if B is not None and (A.requires_grad or B.requires_grad):
        raise NotImplementedError("lobpcg: gradients with B (torch's backward supports B=None only)")
    niter = 1000 if niter is None else niter
    niter = 2**31 - 1 if niter < 0 else niter
    largest = True if largest is None else bool(largest)
    return _F._lobpcg(A, X.detach(), B, k=k, niter=niter, tol=tol, largest=largest)
