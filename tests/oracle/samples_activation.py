"""Op-table samples: activations, softmax family and vector similarities."""

import numpy as np
import torch
import torch.nn.functional as F_

from .spec import F, I, S


def _softmax_backward_torch(grad_output, output, dim, input_dtype):
    """torch's op with the dtype named as fjax's op takes it (a string both frameworks read)."""
    return torch._softmax_backward_data(grad_output, output, dim, getattr(torch, input_dtype))


SAMPLES = {
    "relu": [S((3, 4)), S(()), S((0, 2)), S(I((5,), -5, 5), _grad=False)],
    "relu6": [S(F((3, 4), -8, 8)), S(())],
    "leaky_relu": [S((3, 4)), S((5,), 0.2), S((2, 3), negative_slope=-0.5), S(())],
    "elu": [S((3, 4)), S((5,), 0.5), S((2, 3), alpha=2.0)],
    "selu": [S((3, 4)), S(())],
    "celu": [S((3, 4)), S((5,), 0.5), S((2, 3), alpha=2.0)],
    "gelu": [S((3, 4)), S((5,), approximate="tanh"), S(()), S((0, 3))],
    "silu": [S((3, 4)), S(())],
    "mish": [S((3, 4)), S(())],
    "softplus": [S((3, 4)), S(F((20,), -30, 30), 0.5, 5.0), S((5,), beta=2.0), S(F((3, 4), -4, 4), threshold=1.0)],
    "softsign": [S((3, 4)), S(())],
    "hardtanh": [S(F((3, 4), -3, 3)), S(F((6,), -3, 3), -0.5, 2.0), S((4,), min_val=0.0, max_val=0.5)],
    "hardsigmoid": [S(F((3, 4), -5, 5)), S(())],
    "hardswish": [S(F((3, 4), -5, 5)), S(())],
    "logsigmoid": [S((3, 4)), S(F((10,), -40, 40))],
    "tanhshrink": [S((3, 4)), S(())],
    "softshrink": [S((3, 4)), S((6,), 0.2), S((2, 3), lambd=1.0)],
    "hardshrink": [S((3, 4)), S((6,), 0.2), S((2, 3), lambd=1.0)],
    "threshold": [S((3, 4), 0.1, 20.0), S((5,), -0.5, -1.0), S(I((5,), -5, 5), 0, 7, _grad=False)],
    "glu": [S((3, 4)), S((4, 3), 0), S((2, 6, 2), dim=1)],
    "prelu": [S((3, 4), (1,)), S((2, 3, 4), (3,)), S((2, 3, 4, 5), (3,)), S((4,), (1,)), S((), (1,))],
    "rrelu": [S((3, 4)), S((5,), 0.1, 0.3), S((2, 3), lower=0.2, upper=0.4, training=False)],
    "softmax": [
        S((3, 4), 1),
        S((3, 4), 0),
        S((2, 3, 4), -1),
        S((5,)),
        S((2, 3)),
        S((), 0),
        S((0, 3), 1),
        S((3, 4), 1, dtype="float64", _torch=lambda x, d, dtype: F_.softmax(x, d, dtype=getattr(torch, dtype))),
    ],
    "_safe_softmax": [
        S((3, 4), 1, _torch=torch.ops.aten._safe_softmax),
        S(np.array([[0.0, -np.inf], [-np.inf, -np.inf]], np.float32), 1, _torch=torch.ops.aten._safe_softmax),
        S((2, 3, 4), -1, _torch=torch.ops.aten._safe_softmax),
    ],
    "_softmax_backward_data": [
        S((3, 4), F((3, 4), 0.0, 1.0), 1, "float32", _torch=_softmax_backward_torch),
        S((2, 3, 4), F((2, 3, 4), 0.0, 1.0), 0, "float64", _torch=_softmax_backward_torch),
    ],
    "log_softmax": [
        S((3, 4), 1),
        S((3, 4), 0),
        S((2, 3, 4), -1),
        S((5,)),
        S(F((4,), -50, 50), 0),
        S((3, 4), 1, dtype="float64", _torch=lambda x, d, dtype: F_.log_softmax(x, d, dtype=getattr(torch, dtype))),
    ],
    "softmin": [S((3, 4), 1), S((2, 3, 4), 0), S((5,))],
    "normalize": [
        S((3, 4)),
        S((3, 4), 1.0, 0),
        S((2, 3, 4), dim=-1),
        S((3, 4), float("inf"), 1),
        S((5,), dim=0),
        S((3, 4), 3.0),
        S(F((2, 3), 0.0, 0.0)),
    ],
    "cosine_similarity": [
        S((3, 4), (3, 4)),
        S((3, 4), (4,), dim=-1),
        S((2, 3, 4), (2, 3, 4), 0),
        S((5, 3), (1, 3), eps=1e-3),
        S(F((2, 3), 0.0, 0.0), (2, 3)),
        S((), (), 0),
    ],
    "pairwise_distance": [
        S((3, 4), (3, 4)),
        S((3, 4), (4,), 1.0),
        S((3, 4), (3, 4), keepdim=True),
        S((5,), (5,)),
        S((3, 4), (3, 4), 3.0, eps=1e-3),
        S((3, 4), (3, 4), float("inf")),
    ],
    "pdist": [S((5, 4)), S((4, 3), 1.0), S((6, 2), 3.0), S((3, 5), float("inf")), S((1, 3))],
}

for _name, _cases in SAMPLES.items():
    for _case in _cases:
        if "_torch" not in _case.options:
            _case.options["_torch"] = getattr(F_, _name)
