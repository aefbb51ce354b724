"""Op-table samples: products, contractions and matrix functions."""

import numpy as np
import torch

from .spec import D, F, I, L, S


def _up_to_sign(ours, theirs):
    """Eigen/singular vectors and QR factors are defined up to the sign of each column."""
    np.testing.assert_allclose(np.abs(ours), np.abs(theirs), rtol=1e-3, atol=1e-4)


def _first_close(ours, theirs):
    if theirs.size:  # torch leaves residuals/rank/singular values empty for some drivers
        np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-4)


# Integer and bool cases do not depend on the float dtype: run them once, without gradients.
def _sorted_close(ours, theirs):
    """Eigenvalues of a general matrix come in LAPACK's order, which may differ between builds."""
    key = lambda w: np.lexsort((np.round(w.imag, 3), np.round(w.real, 3)))  # noqa: E731
    np.testing.assert_allclose(ours[key(ours)], theirs[key(theirs)], rtol=1e-3, atol=1e-4)


INT = {"_grad": False, "_dtypes": ("float32",)}

SAMPLES = {
    "matmul": [
        S((3, 4), (4, 5)),
        S((4,), (4,)),
        S((4,), (4, 5)),
        S((3, 4), (4,)),
        S((2, 3, 4), (4, 5)),
        S((2, 1, 3, 4), (5, 4, 2)),
        S((4,), (2, 4, 3)),
        S((2, 3, 4), (4,)),
        S((0, 4), (4, 2)),
        S((3, 0), (0, 2)),
        S(I((2, 3), -3, 3), I((3, 2), -3, 3), **INT),
    ],
    "mm": [S((3, 4), (4, 5)), S((1, 4), (4, 1)), S((0, 4), (4, 2)), S(I((2, 3), -3, 3), I((3, 2), -3, 3), **INT)],
    "bmm": [S((2, 3, 4), (2, 4, 5)), S((0, 3, 4), (0, 4, 5)), S(I((2, 2, 3), -3, 3), I((2, 3, 2), -3, 3), **INT)],
    "mv": [S((3, 4), (4,)), S((0, 4), (4,)), S(I((2, 3), -3, 3), I((3,), -3, 3), **INT)],
    "dot": [S((4,), (4,)), S((0,), (0,)), S(I((3,), -3, 3), I((3,), -3, 3), **INT)],
    "vdot": [S((4,), (4,)), S(I((3,), -3, 3), I((3,), -3, 3), **INT)],
    "inner": [
        S((3, 4), (5, 4)),
        S((4,), (4,)),
        S((2, 3, 4), (4,)),
        S((), (3, 2)),
        S(I((2, 3), -3, 3), I((3,), -3, 3), **INT),
    ],
    "outer": [S((3,), (4,)), S((0,), (2,)), S(I((3,), -3, 3), (2,)), S(I((3,), -3, 3), I((2,), -3, 3), **INT)],
    "einsum": [
        S("ij,jk->ik", L((3, 4), (4, 5))),
        S("bij,bjk->bik", L((2, 3, 4), (2, 4, 5))),
        S("ii->i", L((3, 3))),
        S("ii", L((3, 3))),
        S("i,j->ij", L((3,), (4,))),
        S("...ij,...jk", L((2, 3, 4), (4, 5))),
        S("bhqd,bhkd->bhqk", L((2, 2, 3, 4), (2, 2, 5, 4))),
        S("ij->", L((3, 4))),
        S("ij->ji", L((3, 4))),
        S("i,i,i->", L((3,), (3,), (3,))),
    ],
    "linear": [
        S((3, 4), (5, 4)),
        S((3, 4), (5, 4), (5,)),
        S((2, 3, 4), (5, 4), (5,)),
        S((4,), (5, 4), (5,)),
        S((3, 4), (4,)),
        S((0, 4), (5, 4), (5,)),
    ],
    "addmm": [
        S((3, 5), (3, 4), (4, 5)),
        S((5,), (3, 4), (4, 5)),
        S((3, 5), (3, 4), (4, 5), beta=0.5, alpha=2.0),
        S((3, 5), (3, 4), (4, 5), beta=0.0),
        S((), (3, 4), (4, 5), alpha=-1.0),
    ],
    "addmv": [S((3,), (3, 4), (4,)), S((), (3, 4), (4,), beta=0.5, alpha=2.0)],
    "addr": [S((3, 4), (3,), (4,)), S((4,), (3,), (4,), beta=2.0, alpha=0.5)],
    "baddbmm": [
        S((2, 3, 5), (2, 3, 4), (2, 4, 5)),
        S((3, 5), (2, 3, 4), (2, 4, 5), beta=0.5, alpha=2.0),
        S((2, 3, 5), (2, 3, 4), (2, 4, 5), beta=0.0),
    ],
    "addbmm": [S((3, 5), (2, 3, 4), (2, 4, 5)), S((5,), (2, 3, 4), (2, 4, 5), beta=0.5, alpha=2.0)],
    "bilinear": [
        S((3, 4), (3, 5), (2, 4, 5)),
        S((3, 4), (3, 5), (2, 4, 5), (2,)),
        S((2, 3, 4), (2, 3, 5), (6, 4, 5), (6,)),
        S((0, 4), (0, 5), (2, 4, 5)),
    ],
    "cross": [
        S((4, 3), (4, 3), dim=1),
        S((3, 4), (3, 4), dim=0),
        S((4, 3), (1, 3), dim=-1),
        S((2, 3, 3), (2, 3, 3)),
        S(I((2, 3), -3, 3), I((2, 3), -3, 3), dim=1, **INT),
    ],
    "trace": [S((3, 3)), S((3, 5)), S((5, 2)), S(I((3, 3), -3, 3), **INT)],
    "diag": [
        S((4,)),
        S((4,), 1),
        S((4,), diagonal=-2),
        S((3, 5)),
        S((3, 5), 2),
        S((5, 3), -1),
        S((0,)),
        S(I((3,), -3, 3), **INT),
    ],
    "diagonal": [
        S((3, 4)),
        S((3, 4), 1),
        S((3, 4), offset=-1),
        S((2, 3, 4), 0, 1, 2),
        S((2, 3, 4), dim1=-1, dim2=0),
        S((2, 3, 4), offset=5, dim1=1, dim2=2),
        S(I((3, 3), -3, 3), **INT),
    ],
    "tensordot": [
        S((3, 4, 5), (4, 5, 6)),
        S((3, 4, 5), (5, 6), dims=1),
        S((3, 4), (4, 3), dims=0),
        S((3, 4, 5), (5, 3, 2), dims=[[0, 2], [1, 0]]),
        S((3, 4), (4, 5), dims=[[1], [0]]),
    ],
    "kron": [S((2, 3), (3, 2)), S((2,), (3,)), S((2, 3), (2,)), S((2, 1, 2), (3, 2)), S(I((2, 2), -3, 3), (2,))],
    "det": [S((3, 3)), S((2, 4, 4)), S((1, 1)), S((0, 2, 2))],
    "inverse": [S((3, 3), _rtol=1e-3), S((2, 4, 4), _rtol=1e-3), S((1, 1))],
    "matrix_power": [
        S((3, 3), 2),
        S((2, 3, 3), 3),
        S((3, 3), 0),
        S((3, 3), 1),
        S((3, 3), -2, _rtol=1e-3),
        S(I((3, 3), -2, 2), 3, **INT),
    ],
    # torch.linalg (fjax.linalg): the op-table names are torch's internal ones (linalg_svd ...)
    "linalg_vector_norm": [
        S((3, 4), _torch=torch.linalg.vector_norm),
        S((3, 4), 1, dim=1, _torch=torch.linalg.vector_norm),
        S((2, 3, 4), float("inf"), dim=2, keepdim=True, _torch=torch.linalg.vector_norm),
        S((3, 4), 3.0, _torch=torch.linalg.vector_norm),
    ],
    "linalg_matrix_norm": [
        S((3, 4), _torch=torch.linalg.matrix_norm),
        S((2, 3, 4), "nuc", _torch=torch.linalg.matrix_norm, _rtol=1e-3),
        S((3, 4), 1, _torch=torch.linalg.matrix_norm),
        S((3, 4), 2, _torch=torch.linalg.matrix_norm, _rtol=1e-3),
    ],
    "linalg_solve": [
        S((3, 3), (3, 2), _torch=torch.linalg.solve, _rtol=1e-3),
        S((2, 3, 3), (3,), _torch=torch.linalg.solve, _rtol=1e-3),
        S((3, 3), (2, 3), left=False, _torch=torch.linalg.solve, _rtol=1e-3),
    ],
    "linalg_inv": [S((3, 3), _torch=torch.linalg.inv, _rtol=1e-3), S((2, 4, 4), _torch=torch.linalg.inv, _rtol=1e-3)],
    "linalg_inv_ex": [S((3, 3), _torch=torch.linalg.inv_ex, _rtol=1e-3)],
    "linalg_det": [S((3, 3), _torch=torch.linalg.det), S((2, 4, 4), _torch=torch.linalg.det)],
    "linalg_slogdet": [S((3, 3), _torch=torch.linalg.slogdet), S((2, 4, 4), _torch=torch.linalg.slogdet)],
    "linalg_eigh": [S((4, 4), _torch=torch.linalg.eigh, _grad=False, _cmp=_up_to_sign)],
    "linalg_eigvalsh": [S((4, 4), _torch=torch.linalg.eigvalsh), S((2, 3, 3), "U", _torch=torch.linalg.eigvalsh)],
    "linalg_svd": [S((3, 4), False, _torch=torch.linalg.svd, _grad=False, _cmp=_up_to_sign)],
    "linalg_svdvals": [S((3, 4), _torch=torch.linalg.svdvals), S((2, 4, 3), _torch=torch.linalg.svdvals)],
    "linalg_qr": [S((4, 3), _torch=torch.linalg.qr, _grad=False, _cmp=_up_to_sign)],
    "linalg_cholesky": [
        S(F((1, 1), 0.5, 2.0), _torch=torch.linalg.cholesky),  # the positive definite inputs specs can draw
        S(F((3, 1, 1), 0.5, 2.0), upper=True, _torch=torch.linalg.cholesky),
    ],
    "linalg_lstsq": [S((5, 3), (5, 2), _torch=torch.linalg.lstsq, _rtol=1e-3, _cmp=_first_close)],
    "linalg_pinv": [
        S((3, 4), _torch=torch.linalg.pinv, _rtol=1e-3),
        S((2, 4, 3), _torch=torch.linalg.pinv, _rtol=1e-3),
    ],
    "linalg_matrix_rank": [S((3, 4), _torch=torch.linalg.matrix_rank, _grad=False)],
    "linalg_vecdot": [S((3, 4), (3, 4), _torch=torch.linalg.vecdot), S((2, 3), (3,), _torch=torch.linalg.vecdot)],
    # torch.* legacy linear algebra and the rest of torch.linalg
    "logdet": [S((3, 3)), S(F((2, 3, 3), 0.5, 2.0))],
    "pinverse": [S((3, 4)), S((2, 4, 3), 1e-3)],
    "qr": [S((4, 3), _grad=False, _cmp=_up_to_sign), S((3, 4), False, _grad=False, _cmp=_up_to_sign)],
    "svd": [
        S((3, 4), _grad=False, _cmp=_up_to_sign),
        S((4, 3), some=False, _grad=False, _cmp=_up_to_sign),
        S((2, 3, 4), compute_uv=False, _grad=False),
    ],
    "cholesky": [S(F((1, 1), 0.5, 2.0)), S(F((3, 1, 1), 0.5, 2.0), upper=True)],
    "cholesky_solve": [S((3, 2), F((3, 3), 0.5, 2.0)), S((2, 3, 2), F((3, 3), 0.5, 2.0), upper=True)],
    "cholesky_inverse": [S(F((3, 3), 0.5, 2.0)), S(F((2, 3, 3), 0.5, 2.0), upper=True)],
    "triangular_solve": [
        S((3, 2), F((3, 3), 0.5, 2.0)),
        S((2, 3, 2), F((3, 3), 0.5, 2.0), upper=False, transpose=True),
        S((3, 2), F((3, 3), 0.5, 2.0), unitriangular=True),
    ],
    "linalg_solve_triangular": [
        S(F((3, 3), 0.5, 2.0), (3, 2), upper=True, _torch=torch.linalg.solve_triangular),
        S(F((2, 3, 3), 0.5, 2.0), (2, 3), upper=False, left=False, _torch=torch.linalg.solve_triangular),
        S(F((3, 3), 0.5, 2.0), (3, 2), upper=False, unitriangular=True, _torch=torch.linalg.solve_triangular),
    ],
    "linalg_cholesky_ex": [S(F((1, 1), 0.5, 2.0), _torch=torch.linalg.cholesky_ex)],
    "linalg_matrix_power": [S((3, 3), 3, _torch=torch.linalg.matrix_power)],
    "linalg_eig": [S(D(F((3, 3), 0.5, 2.0), "float64"), _torch=torch.linalg.eig, _grad=False, _cmp=_up_to_sign)],
    "linalg_eigvals": [S((3, 3), _torch=torch.linalg.eigvals, _grad=False, _cmp=_sorted_close)],
    "linalg_cond": [S((3, 3), _torch=torch.linalg.cond), S((2, 3, 3), "fro", _torch=torch.linalg.cond, _grad=False)],
    "linalg_vander": [S((4,), _torch=torch.linalg.vander), S((2, 3), N=5, _torch=torch.linalg.vander)],
    "matrix_exp": [S((3, 3)), S((2, 2, 2))],
    # LU: factors, unpacking, solves (pivots: int32, 1-based, any row order is a valid sequence of swaps)
    "linalg_lu_factor": [
        S((4, 4), _torch=torch.linalg.lu_factor),
        S((2, 3, 5), _torch=torch.linalg.lu_factor),
        S((5, 3), _torch=torch.linalg.lu_factor),
    ],
    "linalg_lu_factor_ex": [
        S((4, 4), _torch=torch.linalg.lu_factor_ex),
        S((2, 5, 3), _torch=torch.linalg.lu_factor_ex),
    ],
    "linalg_lu": [
        S((4, 4), _torch=torch.linalg.lu),
        S((2, 3, 5), _torch=torch.linalg.lu),
        S((5, 3), _torch=torch.linalg.lu),
    ],
    "lu_unpack": [
        S((4, 4), D(I((4,), 1, 5), "int32")),
        S((2, 5, 3), D(I((2, 3), 1, 6), "int32")),
        S((3, 5), D(I((3,), 1, 4), "int32"), unpack_pivots=False),
    ],
    "linalg_lu_solve": [
        S(F((3, 3), 0.5, 2.0), D(I((3,), 1, 4), "int32"), (3, 2), _torch=torch.linalg.lu_solve, _rtol=1e-4),
        S(
            F((2, 3, 3), 0.5, 2.0),
            D(I((2, 3), 1, 4), "int32"),
            (3, 2),
            adjoint=True,
            _torch=torch.linalg.lu_solve,
            _rtol=1e-4,
        ),
        S(F((3, 3), 0.5, 2.0), D(I((3,), 1, 4), "int32"), (2, 3), left=False, _torch=torch.linalg.lu_solve, _rtol=1e-4),
        S(
            F((3, 3), 0.5, 2.0),
            D(I((3,), 1, 4), "int32"),
            (2, 3),
            left=False,
            adjoint=True,
            _torch=torch.linalg.lu_solve,
            _rtol=1e-4,
        ),
    ],
    "lu_solve": [S((3, 2), F((3, 3), 0.5, 2.0), D(I((3,), 1, 4), "int32"), _rtol=1e-4)],
    "lu": [S((4, 4)), S((2, 3, 5), get_infos=True)],
    "linalg_solve_ex": [
        S((3, 3), (3, 2), _torch=torch.linalg.solve_ex, _rtol=1e-3),
        S((2, 3, 3), (3,), _torch=torch.linalg.solve_ex, _rtol=1e-3),
        S((3, 3), (2, 3), left=False, _torch=torch.linalg.solve_ex, _rtol=1e-3),
    ],
    "linalg_tensorinv": [S((4, 2, 2), ind=1, _torch=torch.linalg.tensorinv, _rtol=1e-3)],
    "linalg_tensorsolve": [
        S((2, 3, 6), (2, 3), _torch=torch.linalg.tensorsolve, _rtol=1e-3),
        S((2, 3, 6), (2, 3), dims=[0, 2], _torch=torch.linalg.tensorsolve, _rtol=1e-3),
    ],
    # Householder reflectors (geqrf has no derivative in torch)
    "geqrf": [S((4, 3), _grad=False, _rtol=1e-4), S((2, 3, 4), _grad=False, _rtol=1e-4)],
    "linalg_householder_product": [
        S((4, 3), (3,), _torch=torch.linalg.householder_product),
        S((2, 4, 3), (2, 2), _torch=torch.linalg.householder_product),
    ],
    "ormqr": [
        S((4, 3), (3,), (4, 2)),
        S((4, 3), (3,), (4, 2), transpose=True),
        S((2, 4, 3), (2, 3), (2, 5, 4), left=False),
        S((4, 3), (3,), (5, 4), left=False, transpose=True),
    ],
    # LDL with Bunch-Kaufman pivoting, read from the lower triangle: random inputs pivot (1x1 and 2x2 blocks)
    "linalg_ldl_factor": [S((5, 5), _torch=torch.linalg.ldl_factor, _grad=False, _rtol=1e-4, _atol=1e-4)],
    "linalg_ldl_factor_ex": [S((3, 6, 6), _torch=torch.linalg.ldl_factor_ex, _grad=False, _rtol=1e-4, _atol=1e-4)],
    "linalg_ldl_solve": [
        S((4, 4), D(I((4,), 1, 5), "int32"), (4, 2), _torch=torch.linalg.ldl_solve, _grad=False, _rtol=1e-4),
        S((2, 4, 4), D(I((2, 4), 1, 5), "int32"), (4, 2), _torch=torch.linalg.ldl_solve, _grad=False, _rtol=1e-4),
    ],
}
