"""Op-table samples: ``segment_reduce`` (lengths/offsets, axis, initial, every reduction) and the
private ``_lobpcg`` behind ``fjax.lobpcg`` (against the eigenpairs of torch's eigh of the symmetrized
matrix, eigenvectors up to sign; torch.lobpcg itself and the gradient are tested in tests/test_surface_pending2.py)."""

import numpy as np
import torch

from .spec import F, S

SEG = np.array([2, 0, 4])


def _lobpcg_torch(A, X, B=None, k=1, niter=1000, tol=None, largest=True):
    """The eigenpairs torch.lobpcg converges to, in the private op's argument order: those of torch's
    ``eigh`` of the symmetric part as fjax reads it (torch's own lobpcg stalls on float32 at tight tol)."""
    w, V = torch.linalg.eigh((A + A.mT) / 2)
    if largest:
        w, V = w.flip(-1), V.flip(-1)
    return w[..., :k], V[..., :k]


def _up_to_sign(a, b):
    """Eigenvalues equal; eigenvectors equal up to each column's sign."""
    if a.ndim >= 2:
        a = a * np.sign(np.sum(a * b, axis=-2, keepdims=True))
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)


SAMPLES = {
    "segment_reduce": [
        S((6, 3), "sum", lengths=SEG),
        S((6, 3), "max", lengths=SEG, initial=0.5),
        S((6, 3), "prod", offsets=np.array([0, 2, 2, 6])),
        S((2, 5, 3), "mean", lengths=np.array([[2, 3], [1, 4]]), axis=1),
        S((6,), "min", lengths=np.array([3, 3]), unsafe=True),
        S((6, 2), "amax", offsets=np.array([0, 1, 6])),
    ],
    "_lobpcg": [
        S(F((16, 16), 0.0, 1.0), (16, 1), k=1, _torch=_lobpcg_torch, _grad=False, _cmp=_up_to_sign),
        S(F((2, 16, 16), 0.0, 1.0), (2, 16, 2), k=1, _torch=_lobpcg_torch, _grad=False, _cmp=_up_to_sign),
    ],
}
