"""``fjax.signal.windows``: torch.signal.windows's window functions, with torch's signatures and numbers.

Every window takes the length ``M`` and, keyword-only, ``sym`` (``True``: a symmetric window for filter
design; ``False``: a periodic one for spectral analysis, the first ``M`` points of the symmetric window
of length ``M + 1``), ``dtype`` (float32 or float64; the default dtype when ``None``), ``layout``,
``device`` and ``requires_grad``, plus its own parameters. ``M = 0`` gives an empty window; ``M < 0``,
a non-float dtype or a non-strided layout raise, as in torch.

A window is a constant: it is computed on the host in float64 and converted to ``dtype``.

Example::

    >>> fjax.signal.windows.hann(5)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000], dtype=fjax.float32)
    >>> fjax.signal.windows.hann(4, sym=False)
    tensor([0.0000, 0.5000, 1.0000, 0.5000], dtype=fjax.float32)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np

from .. import dtypes as _dt
from ..creation import tensor as _tensor
from ..errors import OpError

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]


def _check(name: str, M, dtype, layout):
    """torch's common checks; returns the dtype to build (the default dtype for ``None``)."""
    if isinstance(M, bool) or not isinstance(M, numbers.Integral):
        raise OpError(f"signal.windows.{name}: the window length M must be an int, got {type(M).__name__} {M!r}")
    if M < 0:
        raise OpError(f"signal.windows.{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not _dt.strided:
        raise OpError(f"signal.windows.{name} is implemented for strided tensors only, got: {layout!r}")
    dtype = _dt.get_default_dtype() if dtype is None else _dt.to_dtype(dtype)
    if dtype not in (_dt.float32, _dt.float64):
        raise OpError(f"signal.windows.{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _make(values, dtype, device, requires_grad):
    return _tensor(np.asarray(values, dtype=np.float64), dtype=dtype, device=device, requires_grad=requires_grad)


def _span(M: int, sym: bool) -> int:
    """The N of ``2 pi n / N``-style formulas: ``M - 1`` for a symmetric window, ``M`` for a periodic one."""
    return M - 1 if sym else M


def _centre(M: int, sym: bool) -> float:
    """The position of the window's peak: ``(M - 1) / 2``, or ``M / 2`` for a periodic window of ``M > 1``."""
    return (M if not sym and M > 1 else M - 1) / 2.0


def exponential(
    M: int,
    *,
    center: float | None = None,
    tau: float = 1.0,
    sym: bool = True,
    dtype=None,
    layout=_dt.strided,
    device=None,
    requires_grad: bool = False,
):
    """The exponential (Poisson) window ``w_n = exp(-|n - center| / tau)``.

    Args:
        center: where the window peaks; only for periodic windows (``sym=False``). Default: ``M / 2``
            for a periodic window, ``(M - 1) / 2`` for a symmetric one.
        tau: the decay; must be positive.

    Example::

        >>> fjax.signal.windows.exponential(5, tau=2.0)
        tensor([0.3679, 0.6065, 1.0000, 0.6065, 0.3679], dtype=fjax.float32)
    """
    dtype = _check("exponential", M, dtype, layout)
    if tau <= 0:
        raise OpError(f"signal.windows.exponential: tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise OpError("signal.windows.exponential: center must be None for symmetric windows")
    centre = _centre(M, sym) if center is None else center
    return _make(np.exp(-np.abs(np.arange(M) - centre) / tau), dtype, device, requires_grad)


def cosine(M: int, *, sym: bool = True, dtype=None, layout=_dt.strided, device=None, requires_grad: bool = False):
    """The cosine (sine) window ``w_n = sin(pi (n + 0.5) / M)``.

    Example::

        >>> fjax.signal.windows.cosine(4)
        tensor([0.3827, 0.9239, 0.9239, 0.3827], dtype=fjax.float32)
    """
    dtype = _check("cosine", M, dtype, layout)
    length = M + 1 if not sym and M > 1 else M
    return _make(np.sin(np.pi * (np.arange(M) + 0.5) / max(length, 1)), dtype, device, requires_grad)


def gaussian(
    M: int,
    *,
    std: float = 1.0,
    sym: bool = True,
    dtype=None,
    layout=_dt.strided,
    device=None,
    requires_grad: bool = False,
):
    """The Gaussian window ``w_n = exp(-((n - c) / std)^2 / 2)``, peaking at the window's centre ``c``.

    Args:
        std: the standard deviation, in samples; must be positive.

    Example::

        >>> fjax.signal.windows.gaussian(5, std=1.0)
        tensor([0.1353, 0.6065, 1.0000, 0.6065, 0.1353], dtype=fjax.float32)
    """
    dtype = _check("gaussian", M, dtype, layout)
    if std <= 0:
        raise OpError(f"signal.windows.gaussian: the standard deviation must be positive, got: {std} instead.")
    z = (np.arange(M) - _centre(M, sym)) / std
    return _make(np.exp(-0.5 * z * z), dtype, device, requires_grad)


def kaiser(
    M: int,
    *,
    beta: float = 12.0,
    sym: bool = True,
    dtype=None,
    layout=_dt.strided,
    device=None,
    requires_grad: bool = False,
):
    """The Kaiser window ``w_n = I0(beta sqrt(1 - ((n - N/2) / (N/2))^2)) / I0(beta)``, ``N = M - 1`` (``M``
    when ``sym=False``).

    Args:
        beta: the shape parameter; must be non-negative (0 gives a rectangular window).

    Example::

        >>> fjax.signal.windows.kaiser(5, beta=2.0)
        tensor([0.4387, 0.8348, 1.0000, 0.8348, 0.4387], dtype=fjax.float32)
    """
    dtype = _check("kaiser", M, dtype, layout)
    if beta < 0:
        raise OpError(f"signal.windows.kaiser: beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _make(np.ones(M), dtype, device, requires_grad)
    half = _span(M, sym) / 2.0
    r = (np.arange(M) - half) / half
    return _make(np.i0(beta * np.sqrt(np.clip(1.0 - r * r, 0.0, None))) / np.i0(beta), dtype, device, requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=_dt.strided, device=None, requires_grad: bool = False):
    """The Bartlett (triangular) window ``w_n = 1 - |2n / (M - 1) - 1|``.

    Example::

        >>> fjax.signal.windows.bartlett(5)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000], dtype=fjax.float32)
    """
    dtype = _check("bartlett", M, dtype, layout)
    if M <= 1:
        return _make(np.ones(M), dtype, device, requires_grad)
    return _make(1.0 - np.abs(2.0 * np.arange(M) / _span(M, sym) - 1.0), dtype, device, requires_grad)


def _cosine_sum(name, M, a, sym, dtype, layout, device, requires_grad):
    dtype = _check(name, M, dtype, layout)
    if M <= 1:
        return _make(np.ones(M), dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise OpError(f"signal.windows.{name}: the coefficients a must be a list/tuple, got {type(a).__name__}")
    coefficients = [float(c) for c in a]
    if not coefficients:
        raise OpError(f"signal.windows.{name}: the coefficients a cannot be empty")
    phase = 2.0 * math.pi * np.arange(M) / _span(M, sym)
    w = sum((-1) ** i * c * np.cos(i * phase) for i, c in enumerate(coefficients))
    return _make(w, dtype, device, requires_grad)


def general_cosine(
    M, *, a: Iterable, sym: bool = True, dtype=None, layout=_dt.strided, device=None, requires_grad: bool = False
):
    """The generic weighted sum of cosines ``w_n = sum_i (-1)^i a_i cos(2 pi i n / (M - 1))``.

    Args:
        a: the coefficients ``a_0, a_1, ...`` (a list or tuple of floats, not empty).

    Example::

        >>> fjax.signal.windows.general_cosine(5, a=[0.5, 0.5])
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000], dtype=fjax.float32)
    """
    return _cosine_sum("general_cosine", M, a, sym, dtype, layout, device, requires_grad)


def general_hamming(
    M, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=_dt.strided, device=None, requires_grad=False
):
    """The generalized Hamming window ``w_n = alpha - (1 - alpha) cos(2 pi n / (M - 1))``.

    Example::

        >>> fjax.signal.windows.general_hamming(5, alpha=0.6)
        tensor([0.2000, 0.6000, 1.0000, 0.6000, 0.2000], dtype=fjax.float32)
    """
    return _cosine_sum("general_hamming", M, [alpha, 1.0 - alpha], sym, dtype, layout, device, requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=_dt.strided, device=None, requires_grad: bool = False):
    """The Hamming window ``w_n = 0.54 - 0.46 cos(2 pi n / (M - 1))``.

    Example::

        >>> fjax.signal.windows.hamming(5)
        tensor([0.0800, 0.5400, 1.0000, 0.5400, 0.0800], dtype=fjax.float32)
    """
    return _cosine_sum("hamming", M, [0.54, 0.46], sym, dtype, layout, device, requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=_dt.strided, device=None, requires_grad: bool = False):
    """The Hann window ``w_n = 0.5 - 0.5 cos(2 pi n / (M - 1))``.

    Example::

        >>> fjax.signal.windows.hann(5, dtype=fjax.float64)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000], dtype=fjax.float64)
    """
    return _cosine_sum("hann", M, [0.5, 0.5], sym, dtype, layout, device, requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=_dt.strided, device=None, requires_grad: bool = False):
    """The Blackman window ``w_n = 0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))``.

    Example::

        >>> fjax.signal.windows.blackman(5)[1:4]
        tensor([0.3400, 1.0000, 0.3400], dtype=fjax.float32)
    """
    return _cosine_sum("blackman", M, [0.42, 0.5, 0.08], sym, dtype, layout, device, requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=_dt.strided, device=None, requires_grad: bool = False):
    """The minimum 4-term Blackman-Harris window of Nuttall:
    ``w_n = 0.3635819 - 0.4891775 cos(z_n) + 0.1365995 cos(2 z_n) - 0.0106411 cos(3 z_n)``,
    ``z_n = 2 pi n / (M - 1)``.

    Example::

        >>> fjax.signal.windows.nuttall(5)
        tensor([3.6280e-04, 2.2698e-01, 1.0000e+00, 2.2698e-01, 3.6280e-04], dtype=fjax.float32)
    """
    return _cosine_sum(
        "nuttall", M, [0.3635819, 0.4891775, 0.1365995, 0.0106411], sym, dtype, layout, device, requires_grad
    )
