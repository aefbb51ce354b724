"""Op-table samples: dtype/device conversion and copies."""

import numpy as np
import torch

from .spec import I, S

SAMPLES = {
    "_cast": [
        S((3, 4), dtype=np.dtype("float64"), _torch=lambda x, dtype: x.to(torch.float64)),
        S((3,), dtype=np.dtype("int64"), _torch=lambda x, dtype: x.to(torch.int64), _grad=False),
        S(I((3,)), dtype=np.dtype("float32"), _torch=lambda x, dtype: x.to(torch.float32)),
    ],
    "_copy": [S((3, 4), _torch=torch.clone), S((), _torch=torch.clone)],
    "_to_device": [S((2, 3), device=None, _torch=lambda x, device: x.to("cpu"))],
}
