"""Op-table samples: the torch.special functions fjax has no top-level op for (``fjax.special``)."""

import torch

from .spec import F, I, S

SP = torch.special
# Integer inputs do not depend on the float dtype: run them once, without gradients.
INT = {"_grad": False, "_dtypes": ("float32",)}

SAMPLES = {
    "special_erfcx": [
        S((3, 4), _torch=SP.erfcx),
        S(F((6,), -3.0, 30.0), _torch=SP.erfcx),
        S(I((4,), -3, 3), _torch=SP.erfcx, **INT),
    ],
    "special_ndtr": [S((3, 4), _torch=SP.ndtr), S(I((4,), -3, 3), _torch=SP.ndtr, **INT)],
    "special_ndtri": [
        S(F((3, 4), 0.01, 0.99), _torch=SP.ndtri),
        S(F((5,), 1e-6, 1e-3), _torch=SP.ndtri),  # the lower tail
    ],
    "special_log_ndtr": [S((3, 4), _torch=SP.log_ndtr), S(F((6,), -30.0, -5.0), _torch=SP.log_ndtr)],
    "special_i0": [
        S((3, 4), _torch=SP.i0),
        S(F((6,), -20.0, 20.0), _torch=SP.i0),
        S(I((4,), -3, 3), _torch=SP.i0, **INT),
    ],
    "special_i0e": [S((3, 4), _torch=SP.i0e), S(F((6,), -50.0, 50.0), _torch=SP.i0e)],
    "special_i1": [S((3, 4), _torch=SP.i1), S(F((6,), -20.0, 20.0), _torch=SP.i1)],
    "special_i1e": [S((3, 4), _torch=SP.i1e), S(F((6,), -50.0, 50.0), _torch=SP.i1e)],
    "special_modified_bessel_i0": [
        S((3, 4), _torch=SP.modified_bessel_i0),
        S(F((6,), -20.0, 20.0), _torch=SP.modified_bessel_i0),
    ],
    "special_modified_bessel_i1": [
        S((3, 4), _torch=SP.modified_bessel_i1),
        S(F((6,), -20.0, 20.0), _torch=SP.modified_bessel_i1),
    ],
    # standard normal draws stay below |x| = 5, past which torch's float64 J0/J1 are off by ~4e-7
    "special_bessel_j0": [
        S((3, 4), _torch=SP.bessel_j0),
        S(F((8,), -40.0, 40.0), _torch=SP.bessel_j0),
        S(I((4,), -3, 3), _torch=SP.bessel_j0, **INT),
    ],
    "special_bessel_j1": [S((3, 4), _torch=SP.bessel_j1), S(F((8,), -40.0, 40.0), _torch=SP.bessel_j1)],
    "special_spherical_bessel_j0": [
        S((3, 4), _torch=SP.spherical_bessel_j0),
        S(F((6,), -20.0, 20.0), _torch=SP.spherical_bessel_j0),
    ],
    "special_entr": [
        S(F((3, 4), 0.01, 3.0), _torch=SP.entr),
        S((6,), _torch=SP.entr),  # negative inputs: -inf, and a NaN gradient, as torch
    ],
    "special_xlog1py": [
        S((3, 1), F((4,), -0.9, 3.0), _torch=SP.xlog1py),
        S(2.0, F((3, 4), -0.5, 2.0), _torch=SP.xlog1py),
        S(F((3,), -1.0, 1.0), 0.5, _torch=SP.xlog1py),
    ],
    # torch's zeta output has a grad_fn that raises on backward; fjax's has none
    "special_zeta": [
        S(F((3, 4), 1.1, 5.0), F((3, 4), 0.5, 3.0), _torch=SP.zeta, _grad=False),
        S(F((4,), 1.5, 4.0), 1.0, _torch=SP.zeta, _grad=False),
    ],
    "special_polygamma": [
        S(1, F((3, 4), 0.1, 4.0), _torch=SP.polygamma),
        S(3, F((5,), 0.5, 5.0), _torch=SP.polygamma),
        S(2, F((4,), -3.0, -0.1), _torch=SP.polygamma),
    ],
    "special_multigammaln": [
        S(F((3, 4), 1.6, 5.0), 3, _torch=SP.multigammaln),
        S(F((5,), 0.1, 4.0), 1, _torch=SP.multigammaln),
    ],
    # an integer shape parameter: torch has no gradient for it
    "special_gammainc": [
        S(I((3, 4), 1, 6), F((3, 4), 0.1, 8.0), _torch=SP.gammainc),
        S(F((5,), 0.5, 5.0), F((5,), 0.1, 8.0), _torch=SP.gammainc, _grad=False),
    ],
    "special_gammaincc": [
        S(I((3, 4), 1, 6), F((3, 4), 0.1, 8.0), _torch=SP.gammaincc),
        S(F((5,), 0.5, 5.0), F((5,), 0.1, 8.0), _torch=SP.gammaincc, _grad=False),
    ],
    # torch.* aliases of torch.special functions
    "i0": [S((3, 4)), S(I((4,), -3, 3), **INT)],
    "polygamma": [S(1, F((3, 4), 0.1, 4.0)), S(3, F((5,), 0.5, 5.0))],
    "mvlgamma": [S(F((3, 4), 1.6, 5.0), 3), S(F((5,), 0.1, 4.0), p=1)],
    "igamma": [S(I((3, 4), 1, 6), F((3, 4), 0.1, 8.0)), S(F((5,), 0.5, 5.0), F((5,), 0.1, 8.0), _grad=False)],
    "igammac": [S(I((3, 4), 1, 6), F((3, 4), 0.1, 8.0)), S(F((5,), 0.5, 5.0), F((5,), 0.1, 8.0), _grad=False)],
}
