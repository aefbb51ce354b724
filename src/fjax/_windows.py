"""torch's window functions (hann_window, hamming_window, ...) over numpy's windows (constants:
computed on the host in float64, no XLA compile per length).

``periodic=True`` (torch's default, for spectral analysis) is the symmetric window of
``window_length + 1`` points without its last one.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from . import dtypes as _dt
from .creation import _check_layout, _place
from .errors import OpError

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]


def _window(op, window_length, periodic, dtype, layout, device, requires_grad, symmetric) -> object:
    _check_layout(op, layout)
    if isinstance(window_length, bool) or not isinstance(window_length, int):
        raise TypeError(f"{op}: window_length must be an int, got {type(window_length).__name__}")
    if window_length < 0:
        raise OpError(f"{op}: requires non-negative window_length, got window_length={window_length}")
    dt = _dt.get_default_dtype() if dtype is None else _dt.to_dtype(dtype)
    if not dt.is_floating_point:
        raise OpError(f"{op}: expects floating point dtypes, got: {dt}")
    if window_length <= 1:
        values = jnp.ones((window_length,), dt.dtype)
    else:
        n = window_length + 1 if periodic else window_length
        values = symmetric(n)
        values = jnp.asarray(values[:-1] if periodic else values, dt.dtype)
    return _place(values, device, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window (torch.hann_window): ``0.5 - 0.5 cos(2 pi n / (N - 1))``, with
    ``N = window_length + 1`` when ``periodic``.

    Args:
        window_length: the number of points.
        periodic: True (default): a period of a periodic window, for spectral analysis;
            False: the symmetric window, for filter design.
        dtype: a floating dtype (default: the default dtype).
        layout: only ``fjax.strided``.
        device: where the result lives.
        requires_grad: whether the result is a leaf that records gradients.

    Example:
        >>> fjax.hann_window(4)
        tensor([0.0000, 0.5000, 1.0000, 0.5000], dtype=fjax.float32)
    """
    return _window("hann_window", window_length, periodic, dtype, layout, device, requires_grad, np.hanning)


def hamming_window(
    window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None, requires_grad=False
):
    """The Hamming window (torch.hamming_window): ``alpha - beta cos(2 pi n / (N - 1))``, with
    ``N = window_length + 1`` when ``periodic``.

    Args:
        window_length: the number of points.
        periodic: True (default): a period of a periodic window; False: the symmetric window.
        alpha: the constant term (default 0.54).
        beta: the cosine's coefficient (default 0.46).
        dtype: a floating dtype (default: the default dtype).
        layout: only ``fjax.strided``.
        device: where the result lives.
        requires_grad: whether the result is a leaf that records gradients.

    Example:
        >>> fjax.hamming_window(4)
        tensor([0.0800, 0.5400, 1.0000, 0.5400], dtype=fjax.float32)
    """

    def symmetric(n):
        return alpha - beta * np.cos(2 * np.pi * np.arange(n, dtype=np.float64) / (n - 1))

    return _window("hamming_window", window_length, periodic, dtype, layout, device, requires_grad, symmetric)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window (torch.blackman_window):
    ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``, with
    ``N = window_length + 1`` when ``periodic``.

    Args:
        window_length: the number of points.
        periodic: True (default): a period of a periodic window; False: the symmetric window.
        dtype: a floating dtype (default: the default dtype).
        layout: only ``fjax.strided``.
        device: where the result lives.
        requires_grad: whether the result is a leaf that records gradients.

    Example:
        >>> fjax.blackman_window(4, periodic=False)
        tensor([-1.3878e-17,  6.3000e-01,  6.3000e-01, -1.3878e-17], dtype=fjax.float32)
    """
    return _window("blackman_window", window_length, periodic, dtype, layout, device, requires_grad, np.blackman)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window (torch.bartlett_window): ``1 - |2 n / (N - 1) - 1|``, with
    ``N = window_length + 1`` when ``periodic``.

    Args:
        window_length: the number of points.
        periodic: True (default): a period of a periodic window; False: the symmetric window.
        dtype: a floating dtype (default: the default dtype).
        layout: only ``fjax.strided``.
        device: where the result lives.
        requires_grad: whether the result is a leaf that records gradients.

    Example:
        >>> fjax.bartlett_window(4)
        tensor([0.0000, 0.5000, 1.0000, 0.5000], dtype=fjax.float32)
    """
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, requires_grad, np.bartlett)


def kaiser_window(
    window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None, requires_grad=False
):
    """The Kaiser window (torch.kaiser_window):
    ``I0(beta sqrt(1 - (2 n / (N - 1) - 1) ** 2)) / I0(beta)``, with ``N = window_length + 1``
    when ``periodic``.

    Args:
        window_length: the number of points.
        periodic: True (default): a period of a periodic window; False: the symmetric window.
        beta: the shape parameter (default 12.0).
        dtype: a floating dtype (default: the default dtype).
        layout: only ``fjax.strided``.
        device: where the result lives.
        requires_grad: whether the result is a leaf that records gradients.

    Example:
        >>> fjax.kaiser_window(3, periodic=False, beta=0.0)
        tensor([1., 1., 1.], dtype=fjax.float32)
    """
    return _window(
        "kaiser_window", window_length, periodic, dtype, layout, device, requires_grad, lambda n: np.kaiser(n, beta)
    )
