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
    # negative inputs: NaN, as torch
    "special_bessel_y0": [
        S(F((3, 4), 0.01, 5.0), _torch=SP.bessel_y0),
        S(F((8,), -5.0, 40.0), _torch=SP.bessel_y0),
        S(I((4,), -1, 3), _torch=SP.bessel_y0, **INT),
    ],
    "special_bessel_y1": [S(F((3, 4), 0.01, 5.0), _torch=SP.bessel_y1), S(F((8,), -5.0, 40.0), _torch=SP.bessel_y1)],
    "special_modified_bessel_k0": [
        S(F((3, 4), 0.01, 4.0), _torch=SP.modified_bessel_k0),
        S(F((8,), -2.0, 60.0), _torch=SP.modified_bessel_k0),
    ],
    "special_modified_bessel_k1": [
        S(F((3, 4), 0.01, 4.0), _torch=SP.modified_bessel_k1),
        S(F((8,), -2.0, 60.0), _torch=SP.modified_bessel_k1),
    ],
    "special_scaled_modified_bessel_k0": [
        S(F((3, 4), 0.01, 4.0), _torch=SP.scaled_modified_bessel_k0),
        S(F((8,), -2.0, 500.0), _torch=SP.scaled_modified_bessel_k0),
    ],
    "special_scaled_modified_bessel_k1": [
        S(F((3, 4), 0.01, 4.0), _torch=SP.scaled_modified_bessel_k1),
        S(F((8,), -2.0, 500.0), _torch=SP.scaled_modified_bessel_k1),
    ],
    # both sides of each switch: -7.5 (series / asymptotic) and 1 (series / integral); torch's float64 Ai is
    # up to 3e-6 off on [-2.79, -2.09], so the float64 sample stays above -2
    "special_airy_ai": [
        S(F((3, 4), -2.0, 4.0), _torch=SP.airy_ai),
        S(F((8,), -20.0, 10.0), _torch=SP.airy_ai),
        S(I((4,), -3, 3), _torch=SP.airy_ai, **INT),
    ],
    "special_spherical_bessel_j0": [
        S((3, 4), _torch=SP.spherical_bessel_j0),
        S(F((6,), -20.0, 20.0), _torch=SP.spherical_bessel_j0),
    ],
    # degrees: a number, an int64 tensor (negative ones give 0) and a float tensor (truncated), broadcast
    "special_chebyshev_polynomial_t": [
        S(F((3, 4), -1.5, 1.5), 3, _torch=SP.chebyshev_polynomial_t),
        S(F((5, 1), -1.5, 1.5), I((4,), -2, 12), _torch=SP.chebyshev_polynomial_t, **INT),
        S(F((4,), -1.5, 1.5), F((3, 1), -1.0, 8.0), _torch=SP.chebyshev_polynomial_t),
    ],
    "special_chebyshev_polynomial_u": [
        S(F((3, 4), -1.5, 1.5), 3, _torch=SP.chebyshev_polynomial_u),
        S(F((5, 1), -1.5, 1.5), I((4,), -2, 12), _torch=SP.chebyshev_polynomial_u, **INT),
        S(F((4,), -1.5, 1.5), F((3, 1), -1.0, 8.0), _torch=SP.chebyshev_polynomial_u),
    ],
    "special_chebyshev_polynomial_v": [
        S(F((3, 4), -1.5, 1.5), 3, _torch=SP.chebyshev_polynomial_v),
        S(F((5, 1), -1.5, 1.5), I((4,), -2, 12), _torch=SP.chebyshev_polynomial_v, **INT),
        S(F((4,), -1.5, 1.5), F((3, 1), -1.0, 8.0), _torch=SP.chebyshev_polynomial_v),
    ],
    "special_chebyshev_polynomial_w": [
        S(F((3, 4), -1.5, 1.5), 3, _torch=SP.chebyshev_polynomial_w),
        S(F((5, 1), -1.5, 1.5), I((4,), -2, 12), _torch=SP.chebyshev_polynomial_w, **INT),
        S(F((4,), -1.5, 1.5), F((3, 1), -1.0, 8.0), _torch=SP.chebyshev_polynomial_w),
    ],
    "special_shifted_chebyshev_polynomial_t": [
        S(F((3, 4), -0.25, 1.25), 3, _torch=SP.shifted_chebyshev_polynomial_t),
        S(F((5, 1), -0.25, 1.25), I((4,), -2, 12), _torch=SP.shifted_chebyshev_polynomial_t, **INT),
        S(F((4,), -0.25, 1.25), F((3, 1), -1.0, 8.0), _torch=SP.shifted_chebyshev_polynomial_t),
    ],
    "special_shifted_chebyshev_polynomial_u": [
        S(F((3, 4), -0.25, 1.25), 3, _torch=SP.shifted_chebyshev_polynomial_u),
        S(F((5, 1), -0.25, 1.25), I((4,), -2, 12), _torch=SP.shifted_chebyshev_polynomial_u, **INT),
        S(F((4,), -0.25, 1.25), F((3, 1), -1.0, 8.0), _torch=SP.shifted_chebyshev_polynomial_u),
    ],
    "special_shifted_chebyshev_polynomial_v": [
        S(F((3, 4), -0.25, 1.25), 3, _torch=SP.shifted_chebyshev_polynomial_v),
        S(F((5, 1), -0.25, 1.25), I((4,), -2, 12), _torch=SP.shifted_chebyshev_polynomial_v, **INT),
        S(F((4,), -0.25, 1.25), F((3, 1), -1.0, 8.0), _torch=SP.shifted_chebyshev_polynomial_v),
    ],
    "special_shifted_chebyshev_polynomial_w": [
        S(F((3, 4), -0.25, 1.25), 3, _torch=SP.shifted_chebyshev_polynomial_w),
        S(F((5, 1), -0.25, 1.25), I((4,), -2, 12), _torch=SP.shifted_chebyshev_polynomial_w, **INT),
        S(F((4,), -0.25, 1.25), F((3, 1), -1.0, 8.0), _torch=SP.shifted_chebyshev_polynomial_w),
    ],
    "special_hermite_polynomial_h": [
        S(F((3, 4), -3.0, 3.0), 3, _torch=SP.hermite_polynomial_h),
        S(F((5, 1), -3.0, 3.0), I((4,), -2, 12), _torch=SP.hermite_polynomial_h, **INT),
        S(F((4,), -3.0, 3.0), F((3, 1), -1.0, 8.0), _torch=SP.hermite_polynomial_h),
    ],
    "special_hermite_polynomial_he": [
        S(F((3, 4), -3.0, 3.0), 3, _torch=SP.hermite_polynomial_he),
        S(F((5, 1), -3.0, 3.0), I((4,), -2, 12), _torch=SP.hermite_polynomial_he, **INT),
        S(F((4,), -3.0, 3.0), F((3, 1), -1.0, 8.0), _torch=SP.hermite_polynomial_he),
    ],
    "special_laguerre_polynomial_l": [
        S(F((3, 4), -2.0, 8.0), 3, _torch=SP.laguerre_polynomial_l),
        S(F((5, 1), -2.0, 8.0), I((4,), -2, 12), _torch=SP.laguerre_polynomial_l, **INT),
        S(F((4,), -2.0, 8.0), F((3, 1), -1.0, 8.0), _torch=SP.laguerre_polynomial_l),
    ],
    "special_legendre_polynomial_p": [
        S(F((3, 4), -1.5, 1.5), 3, _torch=SP.legendre_polynomial_p),
        S(F((5, 1), -1.5, 1.5), I((4,), -2, 12), _torch=SP.legendre_polynomial_p, **INT),
        S(F((4,), -1.5, 1.5), F((3, 1), -1.0, 8.0), _torch=SP.legendre_polynomial_p),
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
    # negative inputs: the reflection formula, and the gradient psi^(n+1) there
    "special_polygamma": [
        S(1, F((3, 4), 0.1, 4.0), _torch=SP.polygamma),
        S(3, F((5,), 0.5, 5.0), _torch=SP.polygamma),
        S(2, F((4,), -3.0, -0.1), _torch=SP.polygamma),
        S(0, F((6,), -9.0, -0.1), _torch=SP.polygamma),
        S(1, F((6,), -9.0, -0.1), _torch=SP.polygamma),
        S(4, F((6,), -30.0, 5.0), _torch=SP.polygamma),
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
    "polygamma": [S(1, F((3, 4), 0.1, 4.0)), S(3, F((5,), 0.5, 5.0)), S(2, F((6,), -9.0, 9.0))],
    "mvlgamma": [S(F((3, 4), 1.6, 5.0), 3), S(F((5,), 0.1, 4.0), p=1)],
    "igamma": [S(I((3, 4), 1, 6), F((3, 4), 0.1, 8.0)), S(F((5,), 0.5, 5.0), F((5,), 0.1, 8.0), _grad=False)],
    "igammac": [S(I((3, 4), 1, 6), F((3, 4), 0.1, 8.0)), S(F((5,), 0.5, 5.0), F((5,), 0.1, 8.0), _grad=False)],
}
