"""``fjax.special``: torch.special's functions, with torch's names, signatures and numbers.

Where fjax already has the function (``erf``, ``digamma``, ``sigmoid`` as ``expit`` ...) this module
aliases it; the rest are ``jax.scipy.special`` ops registered as ``special_<name>``
(``fjax/ops/special.py``). All are elementwise (``softmax``, ``log_softmax`` and ``logsumexp`` reduce over
``dim``); integer and bool inputs are computed in float32, and gradients come from JAX where torch has
one.

Example::

    >>> fjax.special.expit(fjax.tensor([0.0, 2.0]))
    tensor([0.5000, 0.8808], dtype=fjax.float32)
    >>> fjax.special.i0(fjax.tensor([1.0]))
    tensor([1.2661], dtype=fjax.float32)
"""

from __future__ import annotations

from .dispatch import functions as _f

__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]

# fjax's own ops, under torch.special's names
expit = _f.sigmoid
logit = _f.logit
erf = _f.erf
erfc = _f.erfc
erfinv = _f.erfinv
exp2 = _f.exp2
expm1 = _f.expm1
log1p = _f.log1p
gammaln = _f.lgamma
digamma = psi = _f.digamma
sinc = _f.sinc
round = _f.round  # noqa: A001 - torch.special.round
xlogy = _f.xlogy

# the special_* ops
erfcx = _f.special_erfcx
ndtr = _f.special_ndtr
ndtri = _f.special_ndtri
log_ndtr = _f.special_log_ndtr
i0 = _f.special_i0
i0e = _f.special_i0e
i1 = _f.special_i1
i1e = _f.special_i1e
modified_bessel_i0 = _f.special_modified_bessel_i0
modified_bessel_i1 = _f.special_modified_bessel_i1
bessel_j0 = _f.special_bessel_j0
bessel_j1 = _f.special_bessel_j1
airy_ai = _f.special_airy_ai
bessel_y0 = _f.special_bessel_y0
bessel_y1 = _f.special_bessel_y1
modified_bessel_k0 = _f.special_modified_bessel_k0
modified_bessel_k1 = _f.special_modified_bessel_k1
scaled_modified_bessel_k0 = _f.special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _f.special_scaled_modified_bessel_k1
spherical_bessel_j0 = _f.special_spherical_bessel_j0
chebyshev_polynomial_t = _f.special_chebyshev_polynomial_t
chebyshev_polynomial_u = _f.special_chebyshev_polynomial_u
chebyshev_polynomial_v = _f.special_chebyshev_polynomial_v
chebyshev_polynomial_w = _f.special_chebyshev_polynomial_w
shifted_chebyshev_polynomial_t = _f.special_shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = _f.special_shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = _f.special_shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = _f.special_shifted_chebyshev_polynomial_w
hermite_polynomial_h = _f.special_hermite_polynomial_h
hermite_polynomial_he = _f.special_hermite_polynomial_he
laguerre_polynomial_l = _f.special_laguerre_polynomial_l
legendre_polynomial_p = _f.special_legendre_polynomial_p
entr = _f.special_entr
xlog1py = _f.special_xlog1py
zeta = _f.special_zeta
polygamma = _f.special_polygamma
multigammaln = _f.special_multigammaln
gammainc = _f.special_gammainc
gammaincc = _f.special_gammaincc


def softmax(input, dim, *, dtype=None):
    """``exp(input)`` normalized to sum to 1 along ``dim`` (required, as in torch.special); ``dtype`` casts
    the input first.

    Example::

        >>> fjax.special.softmax(fjax.tensor([[1.0, 2.0], [3.0, 3.0]]), 1)
        tensor([[0.2689, 0.7311],
                [0.5000, 0.5000]], dtype=fjax.float32)
    """
    return _f.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """``log(softmax(input, dim))``, computed stably; ``dim`` is required and ``dtype`` casts the input first.

    Example::

        >>> fjax.special.log_softmax(fjax.tensor([0.0, 0.0]), 0)
        tensor([-0.6931, -0.6931], dtype=fjax.float32)
    """
    return _f.log_softmax(input, dim, dtype=dtype)


def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(input)))`` over ``dim`` (an int or tuple, required), without overflow.

    Example::

        >>> fjax.special.logsumexp(fjax.tensor([[0.0, 0.0], [1000.0, 1000.0]]), 1)
        tensor([6.9315e-01, 1.0007e+03], dtype=fjax.float32)
    """
    return _f.logsumexp(input, dim, keepdim)
