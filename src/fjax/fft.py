"""``fjax.fft``: torch.fft's discrete Fourier transforms, with torch's names, signatures and numbers.

The transforms are ``jnp.fft`` ops (``fjax/ops/fft.py``, registered as ``fft_<name>``), so gradients come
from JAX. ``n`` / ``s`` pad or trim the signal, ``dim`` picks the transformed dims and ``norm`` is
``"backward"`` (default), ``"ortho"`` or ``"forward"``, as in torch. Real float32 input gives a complex64
spectrum.

Example::

    >>> x = fjax.tensor([1.0, 2.0, 3.0, 4.0])
    >>> fjax.fft.rfft(x)
    tensor([10.+0.j, -2.+2.j, -2.+0.j], dtype=fjax.complex64)
    >>> fjax.fft.irfft(fjax.fft.rfft(x), n=4)
    tensor([1., 2., 3., 4.], dtype=fjax.float32)
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from . import dtypes as _dt
from .creation import _place
from .dispatch import functions as _f

__all__ = [
    "fft",
    "ifft",
    "fft2",
    "ifft2",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfft2",
    "irfft2",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "hfft2",
    "ihfft2",
    "hfftn",
    "ihfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

fft = _f.fft_fft
ifft = _f.fft_ifft
fft2 = _f.fft_fft2
ifft2 = _f.fft_ifft2
fftn = _f.fft_fftn
ifftn = _f.fft_ifftn
rfft = _f.fft_rfft
irfft = _f.fft_irfft
rfft2 = _f.fft_rfft2
irfft2 = _f.fft_irfft2
rfftn = _f.fft_rfftn
irfftn = _f.fft_irfftn
hfft = _f.fft_hfft
ihfft = _f.fft_ihfft
hfft2 = _f.fft_hfft2
ihfft2 = _f.fft_ihfft2
hfftn = _f.fft_hfftn
ihfftn = _f.fft_ihfftn
fftshift = _f.fft_fftshift
ifftshift = _f.fft_ifftshift


def _frequencies(op, n, d, dtype, layout, device, requires_grad):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"fft.{op}: n must be a non-negative int, got {n!r}")
    if layout is not None and not str(layout).endswith("strided"):
        raise NotImplementedError(f"fft.{op}: layout={layout!r} is not supported (only the strided layout)")
    dt = _dt.to_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    if not dt.is_floating_point:
        raise TypeError(f"fft.{op}: dtype must be a floating point dtype, got {dt}")
    k = np.arange(n if op == "fftfreq" else n // 2 + 1)
    if op == "fftfreq":
        k[(n + 1) // 2 :] -= n  # 0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1
    # as torch: the integers times the double 1 / (n d), both rounded to the dtype's compute type
    # (float32 for the half types), the product rounded to the dtype
    compute = np.dtype(np.float64) if dt == _dt.float64 else np.dtype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = (np.float64(1.0) / np.float64(n * d)).astype(compute)
        values = (k.astype(compute) * scale).astype(dt.dtype)
    return _place(jnp.asarray(values, dt.dtype), device, requires_grad)


def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``, in the default float dtype unless ``dtype``.

    Example::

        >>> fjax.fft.fftfreq(4)
        tensor([ 0.0000,  0.2500, -0.5000, -0.2500], dtype=fjax.float32)
        >>> fjax.fft.fftfreq(5, d=0.1, dtype=fjax.float64)
        tensor([ 0.,  2.,  4., -4., -2.], dtype=fjax.float64)
    """
    return _frequencies("fftfreq", n, d, dtype, layout, device, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of ``rfft`` of ``n`` points with spacing ``d``:
    ``[0, 1, ..., n // 2] / (d * n)``.

    Example::

        >>> fjax.fft.rfftfreq(4)
        tensor([0.0000, 0.2500, 0.5000], dtype=fjax.float32)
    """
    return _frequencies("rfftfreq", n, d, dtype, layout, device, requires_grad)
