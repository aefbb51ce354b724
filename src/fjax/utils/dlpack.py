"""``torch.utils.dlpack``: exchange tensors with other array libraries (numpy, JAX, CuPy, torch)
through the DLPack protocol.

``from_dlpack`` takes an object with ``__dlpack__`` or a DLPack capsule and copies its values
into a new tensor; ``to_dlpack`` gives a capsule of a tensor's values. Unlike torch the values
are not shared: fjax tensors are immutable JAX arrays, so a later write on either side is not
seen by the other (as ``fjax.from_numpy``).

Example::

    >>> import numpy as np
    >>> fjax.utils.dlpack.from_dlpack(np.arange(3.0)).tolist()
    [0.0, 1.0, 2.0]
    >>> fjax.utils.dlpack.from_dlpack(fjax.utils.dlpack.to_dlpack(fjax.ones(2))).tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..errors import OpError
from ..tensor import Tensor

__all__ = ["from_dlpack", "to_dlpack"]

_DEVICE_TYPES = {"cpu": 1, "gpu": 2, "cuda": 2, "rocm": 10}  # DLPack's DLDeviceType codes


class _Capsule:
    """A bare capsule as a ``__dlpack__`` producer (JAX imports producers, not capsules); the
    capsule is on the default backend's device, where ``to_dlpack`` made it."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (_DEVICE_TYPES.get(jax.default_backend(), 1), 0)


def from_dlpack(ext_tensor, *, device=None, copy=None) -> Tensor:
    """A tensor with the values of ``ext_tensor`` (an object with ``__dlpack__``, or a capsule),
    on ``device`` if given. The values are always copied, so ``copy=False`` raises.

    Example::

        >>> import numpy as np
        >>> fjax.from_dlpack(np.array([1, 2], dtype=np.int32))
        tensor([1, 2], dtype=fjax.int32)
    """
    if copy is False:
        raise NotImplementedError("from_dlpack: copy=False is not supported (fjax copies the values into a JAX array)")
    if isinstance(ext_tensor, Tensor):
        return ext_tensor if device is None else ext_tensor.to(device)
    if not hasattr(ext_tensor, "__dlpack__"):
        if type(ext_tensor).__name__ != "PyCapsule":
            raise OpError(
                f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got {type(ext_tensor).__name__}"
            )
        ext_tensor = _Capsule(ext_tensor)
    out = Tensor._wrap(jnp.array(jnp.from_dlpack(ext_tensor), copy=True))
    return out if device is None else out.to(device)


def to_dlpack(tensor: Tensor):
    """A DLPack capsule of ``tensor``'s values (consumed once, as every capsule)."""
    if not isinstance(tensor, Tensor):
        raise OpError(f"to_dlpack: expected a Tensor, got {type(tensor).__name__}")
    return jnp.array(tensor.detach().contiguous()._data, copy=True).__dlpack__()
