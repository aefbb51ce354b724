"""Op-table samples: complex parts, conjugates, angles and the real <-> complex views."""

import torch

from .spec import D, F, I, S

# complex inputs: the spec's values cast to complex (imaginary part 0); forward only
C64 = {"_grad": False, "_dtypes": ("float32",)}
INT = {"_grad": False, "_dtypes": ("float32",)}

SAMPLES = {
    "real": [S((3, 4)), S(D((3,), "complex64"), **C64)],
    "imag": [S(D((3, 2), "complex64"), **C64)],
    "conj": [S((3, 4)), S(D((3,), "complex64"), _torch=lambda x: torch.conj(x).resolve_conj(), **C64)],
    "conj_physical": [S((3, 4)), S(D((3,), "complex128"), **C64)],
    "resolve_conj": [S((3, 4))],
    "resolve_neg": [S((3, 4))],
    "angle": [S((3, 4)), S(I((5,), -3, 3), **INT), S(D((4,), "complex64"), **C64)],
    "sgn": [
        S((3, 4), _grad=False),  # torch: a ZeroTensor gradient
        S(I((5,), -3, 3), **INT),
        S(D(F((4,), -2.0, 2.0), "complex64"), **C64),
    ],
    "complex": [S((3, 4), (4,), _grad=False), S((2,), (2,), _grad=False)],
    "polar": [S(F((3, 4), 0.5, 2.0), (3, 4), _grad=False)],
    "view_as_real": [S(D((3, 2), "complex64"), **C64)],
    "view_as_complex": [S((3, 2), _grad=False), S((4, 3, 2), _grad=False)],
    "isreal": [S((3, 4), **INT), S(D((3,), "complex64"), **C64)],
    "adjoint": [
        S((3, 4)),
        S((2, 3, 4)),
        S(D((3, 2), "complex64"), _torch=lambda x: torch.adjoint(x).resolve_conj(), **C64),
    ],
}
