"""The ops behind ``fjax.fft``: discrete Fourier transforms over ``jnp.fft`` with torch.fft's signatures.

Registered as ``fft_<name>``, torch's native names; they are not Tensor methods. As in torch:

* ``n`` (1-D) or ``s`` (n-D) is the signal length along each transformed dim: the input is zero-padded or
  trimmed to it (``-1`` in ``s`` keeps the input's size); for the inverse real transforms it is the
  output length, by default ``2 * (m - 1)`` for a last dim of ``m`` entries;
* ``norm`` is ``"backward"`` (default, ``None``: no scaling forward, ``1/n`` backward), ``"ortho"``
  (``1/sqrt(n)`` both ways) or ``"forward"`` (``1/n`` forward);
* real float32/float64 inputs give complex64/complex128 spectra; integer and bool inputs are taken as
  float32. float16 and bfloat16 are refused, as by torch's CPU FFT.

Gradients are JAX's, which equal torch's for real inputs and real-valued losses.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..errors import OpError
from ._promote import to_float
from ._registry import defop

_NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(op, norm):
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError(
            f'{op}: Invalid normalization mode: {norm!r} (expected "backward", "ortho", "forward" or None)'
        )
    return norm


def _float(op, x):
    """Integers and bools become float32; half precision is refused (torch's CPU FFT has none)."""
    if x.dtype in (jnp.float16, jnp.bfloat16):
        raise TypeError(
            f"{op}: unsupported dtype {x.dtype} (input of shape {x.shape}); the FFT takes float32, float64, "
            "complex64 and complex128, as torch's on the CPU"
        )
    return to_float(x)


def _to_complex(op, x):
    x = _float(op, x)
    return x.astype(jnp.result_type(x.dtype, jnp.complex64))


def _to_real(op, x):
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise TypeError(f"{op}: expects a real input tensor, got shape {x.shape} and dtype {x.dtype}")
    return _float(op, x)


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _dim(op, x, dim):
    if not _is_int(dim):
        raise TypeError(f"{op}: argument 'dim' must be int, not {type(dim).__name__}")
    if x.ndim == 0:
        raise IndexError(f"{op}: Dimension specified as {dim} but tensor has no dimensions (shape {x.shape})")
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(
            f"{op}: Dimension out of range (expected to be in range of [{-x.ndim}, {x.ndim - 1}], but got {dim}) "
            f"for input of shape {x.shape}"
        )
    return dim % x.ndim


def _points(op, n):
    if n < 1:
        raise ValueError(f"{op}: Invalid number of data points ({n}) specified")
    return n


def _length(op, n):
    """A 1-D transform's ``n``: None or a positive int."""
    if n is None:
        return None
    if not _is_int(n):
        raise TypeError(f"{op}: argument 'n' must be int, not {type(n).__name__}")
    return _points(op, n)


def _plan(op, x, s, dim, half=False, at_least_one=False):
    """torch's n-D rules: the transformed dims and their lengths. With neither ``s`` nor ``dim`` every dim
    is transformed; with ``s`` alone, the last ``len(s)``. ``half``: the inverse real transforms, whose
    default last length is ``2 * (m - 1)``."""
    if s is not None:
        s = (s,) if _is_int(s) else tuple(s)
        if not all(_is_int(v) for v in s):
            raise TypeError(f"{op}: s must be a sequence of ints, got {s!r}")
    if dim is not None:
        dims = (_dim(op, x, dim),) if _is_int(dim) else tuple(_dim(op, x, d) for d in dim)
        if len(set(dims)) != len(dims):
            raise ValueError(f"{op}: FFT dims must be unique, got dim={dim}")
        if s is not None and len(s) != len(dims):
            raise ValueError(
                f"{op}: When given, dim and shape arguments must have the same length, got s={s}, dim={dim}"
            )
    elif s is not None:
        if len(s) > x.ndim:
            raise ValueError(f"{op}: Got shape with {len(s)} values but input tensor only has {x.ndim} dimensions.")
        dims = tuple(range(x.ndim - len(s), x.ndim))
    else:
        dims = tuple(range(x.ndim))
    if at_least_one and not dims:
        raise ValueError(f"{op}: must transform at least one axis")
    sizes = []
    for i, d in enumerate(dims):
        v = -1 if s is None else s[i]
        if v == -1:
            v = 2 * (x.shape[d] - 1) if half and i == len(dims) - 1 else x.shape[d]
        sizes.append(_points(op, v))
    return dims, tuple(sizes)


# -- 1-D ------------------------------------------------------------------------------------------


@defop(static=("n", "dim", "norm"), method=False)
def fft_fft(input, n=None, dim=-1, norm=None):
    """The 1-D discrete Fourier transform of ``input`` along ``dim``, zero-padded or trimmed to ``n`` points.

    Example::

        >>> fjax.fft.fft(fjax.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=fjax.complex64)
        >>> fjax.fft.fft(fjax.tensor([1.0, 1.0]), n=4, norm="forward")
        tensor([0.5000+0.0000j, 0.2500-0.2500j, 0.0000+0.0000j, 0.2500+0.2500j], dtype=fjax.complex64)
    """
    op = "fft_fft"
    axis, n, norm = _dim(op, input, dim), _length(op, n), _norm(op, norm)
    return jnp.fft.fft(_to_complex(op, input), n, axis, norm)


@defop(static=("n", "dim", "norm"), method=False)
def fft_ifft(input, n=None, dim=-1, norm=None):
    """The 1-D inverse discrete Fourier transform along ``dim`` (``1/n`` scaled under the default norm).

    Example::

        >>> fjax.fft.ifft(fjax.fft.fft(fjax.tensor([1.0, 2.0, 3.0])))
        tensor([1.+0.j, 2.+0.j, 3.+0.j], dtype=fjax.complex64)
    """
    op = "fft_ifft"
    axis, n, norm = _dim(op, input, dim), _length(op, n), _norm(op, norm)
    return jnp.fft.ifft(_to_complex(op, input), n, axis, norm)


@defop(static=("n", "dim", "norm"), method=False)
def fft_rfft(input, n=None, dim=-1, norm=None):
    """The 1-D Fourier transform of a real ``input``: the ``n // 2 + 1`` non-negative frequencies (the rest
    are their conjugates). Complex input is refused.

    Example::

        >>> fjax.fft.rfft(fjax.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j], dtype=fjax.complex64)
    """
    op = "fft_rfft"
    axis, n, norm = _dim(op, input, dim), _length(op, n), _norm(op, norm)
    return jnp.fft.rfft(_to_real(op, input), n, axis, norm)


@defop(static=("n", "dim", "norm"), method=False)
def fft_irfft(input, n=None, dim=-1, norm=None):
    """The inverse of ``rfft``: a real signal of ``n`` points (default ``2 * (m - 1)``) from the ``m``
    non-negative frequencies in ``input``; the imaginary parts of the zero (and Nyquist) terms are ignored.

    Example::

        >>> fjax.fft.irfft(fjax.fft.rfft(fjax.tensor([1.0, 2.0, 3.0, 4.0])))
        tensor([1., 2., 3., 4.], dtype=fjax.float32)
        >>> fjax.fft.irfft(fjax.fft.rfft(fjax.tensor([1.0, 2.0, 3.0])), n=3)
        tensor([1., 2., 3.], dtype=fjax.float32)
    """
    op = "fft_irfft"
    axis, norm = _dim(op, input, dim), _norm(op, norm)
    n = _length(op, n) if n is not None else _points(op, 2 * (input.shape[axis] - 1))
    return jnp.fft.irfft(_to_complex(op, input), n, axis, norm)


@defop(static=("n", "dim", "norm"), method=False)
def fft_hfft(input, n=None, dim=-1, norm=None):
    """The Fourier transform of a Hermitian-symmetric signal given by its first half ``input``: a real
    spectrum of ``n`` points (default ``2 * (m - 1)``). ``hfft`` is ``irfft`` of the conjugate, unscaled.

    Example::

        >>> fjax.fft.hfft(fjax.tensor([1.0, 2.0, 3.0]))
        tensor([ 8., -2.,  0., -2.], dtype=fjax.float32)
    """
    op = "fft_hfft"
    axis, norm = _dim(op, input, dim), _norm(op, norm)
    n = _length(op, n) if n is not None else _points(op, 2 * (input.shape[axis] - 1))
    return jnp.fft.irfft(jnp.conj(_to_complex(op, input)), n, axis, _SWAP[norm])


@defop(static=("n", "dim", "norm"), method=False)
def fft_ihfft(input, n=None, dim=-1, norm=None):
    """The inverse of ``hfft``: the ``n // 2 + 1`` first terms of the inverse transform of a real ``input``,
    i.e. the conjugate of ``rfft``, scaled by ``1/n``.

    Example::

        >>> fjax.fft.ihfft(fjax.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([ 2.5000-0.0000j, -0.5000-0.5000j, -0.5000-0.0000j], dtype=fjax.complex64)
    """
    op = "fft_ihfft"
    axis, n, norm = _dim(op, input, dim), _length(op, n), _norm(op, norm)
    return jnp.conj(jnp.fft.rfft(_to_real(op, input), n, axis, _SWAP[norm]))


# -- n-D ------------------------------------------------------------------------------------------


def _fftn(op, input, s, dim, norm, inverse):
    dims, sizes = _plan(op, input, s, dim)
    norm = _norm(op, norm)
    x = _to_complex(op, input)
    if not dims:  # torch: a complex copy of the input
        return x
    return (jnp.fft.ifftn if inverse else jnp.fft.fftn)(x, sizes, dims, norm)


def _rfftn(op, input, s, dim, norm):
    dims, sizes = _plan(op, input, s, dim, at_least_one=True)
    return jnp.fft.rfftn(_to_real(op, input), sizes, dims, _norm(op, norm))


def _irfftn(op, input, s, dim, norm):
    dims, sizes = _plan(op, input, s, dim, half=True, at_least_one=True)
    return jnp.fft.irfftn(_to_complex(op, input), sizes, dims, _norm(op, norm))


@defop(static=("s", "dim", "norm"), method=False)
def fft_fft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D discrete Fourier transform over ``dim`` (the last two by default), each padded or trimmed
    to ``s``.

    Example::

        >>> fjax.fft.fft2(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([[10.+0.j, -2.+0.j],
                [-4.+0.j,  0.+0.j]], dtype=fjax.complex64)
    """
    return _fftn("fft_fft2", input, s, dim, norm, False)


@defop(static=("s", "dim", "norm"), method=False)
def fft_ifft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D inverse discrete Fourier transform over ``dim`` (the last two by default).

    Example::

        >>> fjax.fft.ifft2(fjax.tensor([[10.0, -2.0], [-4.0, 0.0]]))
        tensor([[1.+0.j, 2.+0.j],
                [3.+0.j, 4.+0.j]], dtype=fjax.complex64)
    """
    return _fftn("fft_ifft2", input, s, dim, norm, True)


@defop(static=("s", "dim", "norm"), method=False)
def fft_fftn(input, s=None, dim=None, norm=None):
    """The n-D discrete Fourier transform over ``dim``: every dim by default, the last ``len(s)`` when only
    ``s`` is given.

    Example::

        >>> fjax.fft.fftn(fjax.ones(2, 2, 2))
        tensor([[[8.+0.j, 0.+0.j],
                 [0.+0.j, 0.+0.j]],
        <BLANKLINE>
                [[0.+0.j, 0.+0.j],
                 [0.+0.j, 0.+0.j]]], dtype=fjax.complex64)
        >>> fjax.fft.fftn(fjax.ones(3, 4), s=[2]).shape
        fjax.Size([3, 2])
    """
    return _fftn("fft_fftn", input, s, dim, norm, False)


@defop(static=("s", "dim", "norm"), method=False)
def fft_ifftn(input, s=None, dim=None, norm=None):
    """The n-D inverse discrete Fourier transform over ``dim`` (every dim by default).

    Example::

        >>> fjax.fft.ifftn(fjax.fft.fftn(fjax.tensor([[1.0, 2.0], [3.0, 4.0]])))
        tensor([[1.+0.j, 2.+0.j],
                [3.+0.j, 4.+0.j]], dtype=fjax.complex64)
    """
    return _fftn("fft_ifftn", input, s, dim, norm, True)


@defop(static=("s", "dim", "norm"), method=False)
def fft_rfft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D Fourier transform of a real ``input``: the last of ``dim`` keeps its ``s[-1] // 2 + 1``
    non-negative frequencies.

    Example::

        >>> fjax.fft.rfft2(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([[10.+0.j, -2.+0.j],
                [-4.+0.j,  0.+0.j]], dtype=fjax.complex64)
        >>> fjax.fft.rfft2(fjax.ones(3, 8)).shape
        fjax.Size([3, 5])
    """
    return _rfftn("fft_rfft2", input, s, dim, norm)


@defop(static=("s", "dim", "norm"), method=False)
def fft_irfft2(input, s=None, dim=(-2, -1), norm=None):
    """The inverse of ``rfft2``: a real result, ``s[-1]`` long (default ``2 * (m - 1)``) in the last of
    ``dim``.

    Example::

        >>> fjax.fft.irfft2(fjax.fft.rfft2(fjax.tensor([[1.0, 2.0], [3.0, 4.0]])))
        tensor([[1., 2.],
                [3., 4.]], dtype=fjax.float32)
    """
    return _irfftn("fft_irfft2", input, s, dim, norm)


@defop(static=("s", "dim", "norm"), method=False)
def fft_rfftn(input, s=None, dim=None, norm=None):
    """The n-D Fourier transform of a real ``input`` over ``dim`` (every dim by default); the last
    transformed dim keeps its non-negative frequencies only.

    Example::

        >>> fjax.fft.rfftn(fjax.ones(2, 4))
        tensor([[8.+0.j, 0.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j, 0.+0.j]], dtype=fjax.complex64)
    """
    return _rfftn("fft_rfftn", input, s, dim, norm)


@defop(static=("s", "dim", "norm"), method=False)
def fft_irfftn(input, s=None, dim=None, norm=None):
    """The inverse of ``rfftn``: a real result whose last transformed dim is ``s[-1]`` long (default
    ``2 * (m - 1)``).

    Example::

        >>> fjax.fft.irfftn(fjax.fft.rfftn(fjax.ones(2, 4)))
        tensor([[1., 1., 1., 1.],
                [1., 1., 1., 1.]], dtype=fjax.float32)
    """
    return _irfftn("fft_irfftn", input, s, dim, norm)


@defop(static=("s", "dim", "norm"), method=False)
def fft_hfft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D Fourier transform of a Hermitian-symmetric signal given by its half in the last of ``dim``:
    a real result (``irfft2`` of the conjugate, unscaled).

    Example::

        >>> fjax.fft.hfft2(fjax.tensor([[1.0, 0.0], [0.0, 0.0]]))
        tensor([[1., 1.],
                [1., 1.]], dtype=fjax.float32)
    """
    dims, sizes = _plan("fft_hfft2", input, s, dim, half=True, at_least_one=True)
    x = jnp.conj(_to_complex("fft_hfft2", input))
    return jnp.fft.irfftn(x, sizes, dims, _SWAP[_norm("fft_hfft2", norm)])


@defop(static=("s", "dim", "norm"), method=False)
def fft_ihfft2(input, s=None, dim=(-2, -1), norm=None):
    """The inverse of ``hfft2`` for a real ``input``: the conjugate of ``rfft2``, scaled by ``1/n``.

    Example::

        >>> fjax.fft.ihfft2(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([[ 2.5000-0.j, -0.5000-0.j],
                [-1.0000-0.j,  0.0000-0.j]], dtype=fjax.complex64)
    """
    dims, sizes = _plan("fft_ihfft2", input, s, dim, at_least_one=True)
    x = _to_real("fft_ihfft2", input)
    return jnp.conj(jnp.fft.rfftn(x, sizes, dims, _SWAP[_norm("fft_ihfft2", norm)]))


@defop(static=("s", "dim", "norm"), method=False)
def fft_hfftn(input, s=None, dim=None, norm=None):
    """The n-D Fourier transform of a Hermitian-symmetric signal given by its half in the last of ``dim``
    (every dim by default): a real result.

    Example::

        >>> fjax.fft.hfftn(fjax.tensor([[1.0, 0.0], [0.0, 0.0]]))
        tensor([[1., 1.],
                [1., 1.]], dtype=fjax.float32)
    """
    dims, sizes = _plan("fft_hfftn", input, s, dim, half=True, at_least_one=True)
    x = jnp.conj(_to_complex("fft_hfftn", input))
    return jnp.fft.irfftn(x, sizes, dims, _SWAP[_norm("fft_hfftn", norm)])


@defop(static=("s", "dim", "norm"), method=False)
def fft_ihfftn(input, s=None, dim=None, norm=None):
    """The inverse of ``hfftn`` for a real ``input`` (every dim by default): the conjugate of ``rfftn``,
    scaled by ``1/n``.

    Example::

        >>> fjax.fft.ihfftn(fjax.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([[ 2.5000-0.j, -0.5000-0.j],
                [-1.0000-0.j,  0.0000-0.j]], dtype=fjax.complex64)
    """
    dims, sizes = _plan("fft_ihfftn", input, s, dim, at_least_one=True)
    x = _to_real("fft_ihfftn", input)
    return jnp.conj(jnp.fft.rfftn(x, sizes, dims, _SWAP[_norm("fft_ihfftn", norm)]))


# -- shifts ---------------------------------------------------------------------------------------


def _shift_dims(op, x, dim):
    if x.ndim == 0:
        raise ValueError(f"{op}: a 0-d tensor has no dimension to shift")
    if dim is None:
        return tuple(range(x.ndim))
    return (_dim(op, x, dim),) if _is_int(dim) else tuple(_dim(op, x, d) for d in dim)


@defop(static=("dim",), method=False, linear=True)
def fft_fftshift(input, dim=None):
    """Rolls each of ``dim`` (every dim by default) by half its size, so the zero frequency of an FFT's
    output moves to the centre. Any dtype.

    Example::

        >>> fjax.fft.fftshift(fjax.fft.fftfreq(5))
        tensor([-0.4000, -0.2000,  0.0000,  0.2000,  0.4000], dtype=fjax.float32)
    """
    return jnp.fft.fftshift(input, _shift_dims("fft_fftshift", input, dim))


@defop(static=("dim",), method=False, linear=True)
def fft_ifftshift(input, dim=None):
    """The inverse of ``fftshift`` (they differ for odd sizes): moves the centre back to index 0.

    Example::

        >>> fjax.fft.ifftshift(fjax.tensor([-2, -1, 0, 1, 2]))
        tensor([ 0,  1,  2, -2, -1], dtype=fjax.int64)
    """
    return jnp.fft.ifftshift(input, _shift_dims("fft_ifftshift", input, dim))


_STFT_PADS = {"reflect": "reflect", "constant": "constant", "replicate": "edge", "circular": "wrap"}


_STFT_STATIC = ("n_fft", "hop_length", "win_length", "center", "pad_mode", "normalized", "onesided", "return_complex")


@defop(static=(*_STFT_STATIC, "align_to_window"))
def stft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    pad_mode="reflect",
    normalized=False,
    onesided=None,
    return_complex=None,
    align_to_window=None,
):
    """The short-time Fourier transform of the 1-D signal ``input`` (or a batch of them, ``(B, L)``):
    frames of ``n_fft`` samples every ``hop_length`` (default ``n_fft // 4``), each multiplied by
    ``window`` (default ones of ``win_length``, centred in ``n_fft``) and Fourier transformed. With
    ``center`` the signal is first padded by ``n_fft // 2`` on both sides in ``pad_mode``. The result is
    ``(B?, n_freq, n_frames)``: complex when ``return_complex`` (required for real input, as in torch),
    else real and imaginary parts in a last dim of 2. ``onesided`` (default for real input and window)
    keeps ``n_fft // 2 + 1`` frequencies; ``normalized`` scales by ``n_fft ** -0.5``.

    Example::

        >>> x = fjax.tensor([0.0, 1.0, 0.0, -1.0] * 4)
        >>> fjax.stft(x, 4, hop_length=4, center=False, return_complex=True)[1]
        tensor([0.-2.j, 0.-2.j, 0.-2.j, 0.-2.j], dtype=fjax.complex64)
    """
    op = "stft"
    if align_to_window:
        raise NotImplementedError("stft: align_to_window=True is not supported")
    complex_in = jnp.issubdtype(input.dtype, jnp.complexfloating) or (
        window is not None and jnp.issubdtype(window.dtype, jnp.complexfloating)
    )
    if return_complex is None:
        if not complex_in:
            raise ValueError(
                "stft requires the return_complex parameter be given for real inputs "
                "(return_complex=True gives a complex tensor, return_complex=False its real view)"
            )
        return_complex = True
    if input.ndim not in (1, 2):
        raise ValueError(f"stft: expected a 1-D or 2-D input, got shape {input.shape}")
    x = _to_complex(op, input) if complex_in else _to_real(op, input)
    batched = x.ndim == 2
    x = x if batched else x[None]
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not 0 < win <= n_fft or hop <= 0:
        raise ValueError(f"stft: expected 0 < win_length <= n_fft and hop_length > 0, got {win}, {n_fft}, {hop}")
    if window is None:
        w = jnp.ones(win, x.dtype if not complex_in else jnp.float32)
    else:
        if window.shape != (win,):
            raise ValueError(f"stft: expected a 1-D window of size win_length={win}, got shape {window.shape}")
        w = window
    left = (n_fft - win) // 2
    w = jnp.pad(w, (left, n_fft - win - left))
    if center:
        if pad_mode not in _STFT_PADS:
            raise ValueError(f"stft: pad_mode must be one of {sorted(_STFT_PADS)}, got {pad_mode!r}")
        x = jnp.pad(x, ((0, 0), (n_fft // 2, n_fft // 2)), mode=_STFT_PADS[pad_mode])
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise ValueError(f"stft: expected 0 < n_fft <= {length} (the padded signal's length), got {n_fft}")
    frames = 1 + (length - n_fft) // hop
    index = np.arange(frames)[:, None] * hop + np.arange(n_fft)[None, :]
    seg = x[:, index] * w
    if onesided is None:
        onesided = not complex_in
    if onesided and complex_in:
        raise ValueError("stft: onesided output is not possible for a complex input or window")
    spec = jnp.fft.rfft(seg, axis=-1) if onesided else jnp.fft.fft(seg, axis=-1)
    if normalized:
        spec = spec * (n_fft**-0.5)
    spec = jnp.swapaxes(spec, -1, -2)
    spec = spec if batched else spec[0]
    return spec if return_complex else jnp.stack([spec.real, spec.imag], axis=-1)


def _istft_window(n_fft, win_length, window, dtype):
    """istft's window padded to ``n_fft`` (centred), ones when None."""
    win = n_fft if win_length is None else win_length
    w = jnp.ones(win, dtype) if window is None else window
    if w.shape != (win,):
        raise ValueError(f"istft: expected a 1-D window of size win_length={win}, got shape {w.shape}")
    left = (n_fft - win) // 2
    return jnp.pad(w, (left, n_fft - win - left))


def _istft_envelope(w, hop, frames):
    """The overlap-add of ``w ** 2`` over ``frames`` frames every ``hop`` samples."""
    index = np.arange(frames)[:, None] * hop + np.arange(w.shape[0])[None, :]
    return jnp.zeros(w.shape[0] + hop * (frames - 1), w.dtype).at[index].add(jnp.broadcast_to(w * w, index.shape))


def _istft_slice(n_fft, center, length, total):
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else total - n_fft // 2 if center else total
    return start, min(end, total)


def _check_istft(
    input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False, onesided=None,
    length=None, return_complex=False,
):  # fmt: skip
    """torch's NOLA check: the window's overlap-add must not vanish anywhere in the output (eager only)."""
    win = n_fft if win_length is None else win_length
    w = np.ones(win) if window is None else np.abs(np.asarray(window))
    hop = n_fft // 4 if hop_length is None else hop_length
    if input.ndim < 2 or w.shape != (win,) or not 0 < hop <= win <= n_fft:
        return  # istft reports the bad argument
    left = (n_fft - win) // 2
    env = np.asarray(_istft_envelope(jnp.asarray(np.pad(w, (left, n_fft - win - left))), hop, input.shape[-1]))
    start, end = _istft_slice(n_fft, center, length, env.shape[0])
    if end > start and env[start:end].min() < 1e-11:
        raise OpError(
            f"istft: window overlap add min: {env[start:end].min():.3g} < 1e-11 (a window of size {win} in frames "
            f"of n_fft={n_fft} every hop_length={hop} samples leaves part of the signal unrecoverable)"
        )


_ISTFT_STATIC = ("n_fft", "hop_length", "win_length", "center", "normalized", "onesided", "length", "return_complex")


@defop(static=_ISTFT_STATIC, check=_check_istft)
def istft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    normalized=False,
    onesided=None,
    length=None,
    return_complex=False,
):
    """The inverse short-time Fourier transform: the signal whose ``stft`` (with the same arguments) is
    the complex ``input`` ``(B?, n_freq, n_frames)``, rebuilt by inverse FFTs of the frames, overlap-added
    and divided by the window's squared overlap-add. ``length`` trims (or zero-pads) the result to that
    many samples; ``onesided`` (default: ``n_freq != n_fft``) reads the ``n_fft // 2 + 1`` frequencies
    of a real signal; ``return_complex`` gives a complex signal (two-sided input only).

    Args:
        input: the complex spectrum ``(n_freq, n_frames)`` or ``(B, n_freq, n_frames)``.
        n_fft: the frame size of the transform.
        hop_length: samples between frames (default ``n_fft // 4``).
        win_length: the window's size (default ``n_fft``), centred in the frame.
        window: the 1-D window ``stft`` used (default ones).
        center: whether ``stft`` padded the signal by ``n_fft // 2`` on both sides (trimmed here).
        normalized: whether ``stft`` scaled by ``n_fft ** -0.5`` (undone here).
        onesided: whether ``input`` holds only the ``n_fft // 2 + 1`` non-negative frequencies.
        length: the output's length (trimmed or zero-padded); default: all the frames cover.
        return_complex: give a complex signal (from a two-sided ``input``) instead of a real one.

    Example::

        >>> x = fjax.tensor([0.0, 1.0, 0.0, -1.0] * 4)
        >>> spec = fjax.stft(x, 4, window=fjax.hann_window(4), return_complex=True)
        >>> fjax.istft(spec, 4, window=fjax.hann_window(4), length=16).allclose(x, atol=1e-6)
        True
    """
    op = "istft"
    if not jnp.issubdtype(input.dtype, jnp.complexfloating):
        raise TypeError(
            f"istft: requires a complex input (stft's output with return_complex=True), got dtype {input.dtype}"
        )
    if input.ndim not in (2, 3):
        raise ValueError(f"istft: expected a 2-D or 3-D input (B?, n_freq, n_frames), got shape {input.shape}")
    x = _to_complex(op, input)
    batched = x.ndim == 3
    x = x if batched else x[None]
    n_freq, frames = x.shape[-2:]
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not 0 < win <= n_fft or hop <= 0 or hop > win:
        raise ValueError(
            f"istft: expected 0 < hop_length <= win_length <= n_fft, got hop_length={hop}, win_length={win}, "
            f"n_fft={n_fft}"
        )
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided:
        if n_freq != n_fft // 2 + 1:
            raise ValueError(
                f"istft: a one-sided input needs n_fft // 2 + 1 = {n_fft // 2 + 1} frequencies, got {n_freq}"
            )
        if return_complex:
            raise ValueError("istft: cannot have onesided output if window or input is complex (return_complex=True)")
    elif n_freq != n_fft:
        raise ValueError(f"istft: a two-sided input needs n_fft = {n_fft} frequencies, got {n_freq}")
    real_dtype = jnp.zeros((), x.dtype).real.dtype
    w = _istft_window(n_fft, win_length, window, real_dtype)
    if not return_complex and jnp.issubdtype(w.dtype, jnp.complexfloating):
        raise ValueError("istft: a complex window needs return_complex=True")
    if normalized:
        x = x * (n_fft**0.5)
    x = jnp.swapaxes(x, -1, -2)  # (B, frames, n_freq)
    # a real signal reads the one-sided half of a two-sided input, as torch's
    seg = jnp.fft.ifft(x, axis=-1) if return_complex else jnp.fft.irfft(x[..., : n_fft // 2 + 1], n=n_fft, axis=-1)
    seg = seg * w
    total = n_fft + hop * (frames - 1)
    index = np.arange(frames)[:, None] * hop + np.arange(n_fft)[None, :]
    y = jnp.zeros((seg.shape[0], total), seg.dtype).at[:, index].add(seg)
    envelope = _istft_envelope(w, hop, frames)
    start, end = _istft_slice(n_fft, center, length, total)
    y = y[:, start:end] / envelope[start:end]
    if length is not None and y.shape[-1] < length:
        y = jnp.pad(y, ((0, 0), (0, length - y.shape[-1])))
    return y if batched else y[0]
