"""Op-table samples: the torch.fft transforms (``fjax.fft``). Real inputs: their spectra are complex and
the gradients flow back to the real input (torch's and JAX's conventions agree there). ``s`` and ``dim``
are lists: a tuple of ints is a shape spec to the oracle."""

import torch

from .spec import D, I, S

FT = torch.fft


def _resolved(fn):
    """torch returns some spectra as lazy conjugate views, which the oracle's numpy() refuses."""
    return lambda *args, **kwargs: fn(*args, **kwargs).resolve_conj()


INT = {"_grad": False, "_dtypes": ("float32",)}
COMPLEX = {"_grad": False}  # a complex input (real values) has no gradient in the oracle

SAMPLES = {
    "fft_fft": [
        S((8,), _torch=FT.fft),
        S((3, 5), n=8, dim=0, norm="forward", _torch=FT.fft),
        S((4, 6), 4, -1, "ortho", _torch=FT.fft),
        S(D((6,), "complex64"), _torch=FT.fft, **COMPLEX),
        S(I((6,), -3, 3), _torch=FT.fft, **INT),
    ],
    "fft_ifft": [S((8,), _torch=_resolved(FT.ifft)), S((3, 5), 3, 0, "ortho", _torch=_resolved(FT.ifft))],
    "fft_rfft": [
        S((8,), _torch=FT.rfft),
        S((7, 3), n=10, dim=0, norm="forward", _torch=FT.rfft),
        S((4, 5), n=3, _torch=FT.rfft),
    ],
    "fft_irfft": [
        S((5,), _torch=FT.irfft),
        S((3, 6), n=7, dim=1, norm="ortho", _torch=FT.irfft),
        S(D((3, 4), "complex64"), _torch=FT.irfft, **COMPLEX),
    ],
    "fft_hfft": [S((5,), _torch=FT.hfft), S((3, 4), n=5, dim=0, norm="ortho", _torch=FT.hfft)],
    "fft_ihfft": [S((8,), _torch=_resolved(FT.ihfft)), S((3, 5), n=6, norm="forward", _torch=_resolved(FT.ihfft))],
    "fft_fft2": [S((3, 4), _torch=FT.fft2), S((2, 3, 4), s=[4, 2], dim=[0, 2], norm="ortho", _torch=FT.fft2)],
    "fft_ifft2": [S((3, 4), _torch=FT.ifft2), S((3, 4), s=[5, 5], _torch=FT.ifft2)],
    "fft_fftn": [
        S((2, 3, 4), _torch=FT.fftn),
        S((2, 3, 4), dim=[0, 2], norm="forward", _torch=FT.fftn),
        S((3, 4), s=[-1, 6], dim=[0, 1], _torch=FT.fftn),
    ],
    "fft_ifftn": [S((2, 3, 4), _torch=FT.ifftn), S((3, 4), dim=1, norm="ortho", _torch=FT.ifftn)],
    "fft_rfft2": [S((3, 4), _torch=FT.rfft2), S((3, 5), s=[4, 6], norm="forward", _torch=FT.rfft2)],
    "fft_irfft2": [S((3, 4), _torch=FT.irfft2), S((4, 3), s=[4, 5], norm="ortho", _torch=FT.irfft2)],
    "fft_rfftn": [S((2, 3, 4), _torch=FT.rfftn), S((2, 3, 4), s=[5], dim=[1], _torch=FT.rfftn)],
    "fft_irfftn": [S((2, 3, 4), _torch=FT.irfftn), S((3, 4), s=[-1, 7], norm="forward", _torch=FT.irfftn)],
    "fft_hfft2": [S((3, 4), _torch=FT.hfft2), S((3, 4), s=[2, 5], norm="ortho", _torch=FT.hfft2)],
    "fft_ihfft2": [
        S((3, 4), _torch=_resolved(FT.ihfft2)),
        S((3, 5), s=[4, 6], norm="forward", _torch=_resolved(FT.ihfft2)),
    ],
    "fft_hfftn": [S((2, 3, 4), _torch=FT.hfftn), S((3, 4), dim=[0], norm="forward", _torch=FT.hfftn)],
    "fft_ihfftn": [
        S((2, 3, 4), _torch=_resolved(FT.ihfftn)),
        S((3, 4), s=[5], norm="ortho", _torch=_resolved(FT.ihfftn)),
    ],
    "fft_fftshift": [
        S((5,), _torch=FT.fftshift),
        S((3, 4, 5), dim=[0, 2], _torch=FT.fftshift),
        S(I((5,), -3, 3), _torch=FT.fftshift, **INT),
    ],
    "fft_ifftshift": [S((5,), _torch=FT.ifftshift), S((4, 5), dim=[0], _torch=FT.ifftshift)],
    "stft": [
        S((40,), 8, return_complex=True, _torch=torch.stft),
        S((2, 30), 6, 2, 5, (5,), False, normalized=True, return_complex=True, _torch=torch.stft),
        S((30,), 8, center=True, pad_mode="replicate", return_complex=False, _torch=torch.stft),
    ],
    "istft": [
        S(D((9, 7), "complex64"), 16, 4, _torch=torch.istft, **COMPLEX),
        S(D((2, 5, 6), "complex64"), 8, 2, 6, length=12, _torch=torch.istft, **COMPLEX),
    ],
}
