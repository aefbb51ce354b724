"""Devices: torch-style names over jax devices. ``"cuda"`` is the default accelerator.

``"meta"`` is torch's meta device: a tensor there has a shape and a dtype but no values. Its
array is a ``MetaArray`` (a ``jax.ShapeDtypeStruct``); ops on it give meta results shaped by
``jax.eval_shape`` over the op (``dispatch.run`` falls back to that where jit rejects one).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_NO_DATA = "Cannot copy out of meta tensor; no data!"


class device:  # noqa: N801 - torch's name
    """``fjax.device("cpu")``, ``fjax.device("cuda:1")``, ``fjax.device("cuda", 0)``, ``fjax.device("meta")``.

    Example::

        >>> fjax.device("cuda:1")
        device(type='cuda', index=1)
        >>> fjax.empty(2, 3, device=fjax.device("meta")).is_meta
        True
    """

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):  # noqa: A002 - torch's name
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, str) and ":" in type:
            type, idx = type.split(":", 1)
            if not idx.isdigit():
                raise ValueError(f"device: invalid device string {type}:{idx!r}; expected e.g. 'cuda:0'")
            index = int(idx)
        if type == "gpu":
            type = "cuda"
        if type not in ("cpu", "cuda", "meta"):
            raise ValueError(f"device: expected 'cpu', 'cuda[:index]' or 'meta', got {type!r}")
        self.type = type
        self.index = index

    def jax_device(self) -> jax.Device:
        """The jax device this names; raises when it does not exist on this machine (or is ``meta``).

        Example:
            >>> fjax.device("cpu").jax_device().platform
            'cpu'
        """
        if self.type == "meta":
            raise RuntimeError("device: the meta device has no jax device; meta tensors hold no data")
        platform = "cpu" if self.type == "cpu" else "gpu"
        try:
            devices = jax.devices(platform)
        except RuntimeError:
            raise RuntimeError(
                f"device: {self} is not available; this machine has {[str(d) for d in jax.devices()]}"
            ) from None
        i = self.index or 0
        if i >= len(devices):
            raise RuntimeError(f"device: {self} is out of range; {len(devices)} {self.type} device(s) exist")
        return devices[i]

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index or 0) == (other.type, other.index or 0)

    def __hash__(self):
        return hash((self.type, self.index or 0))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        idx = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{idx})"


def from_jax(d: jax.Device) -> device:
    """The fjax device of a jax device (cpu devices report as ``cpu``)."""
    if d.platform == "cpu":
        return device("cpu")
    return device("cuda", d.id)


def is_cuda_available() -> bool:
    """Whether JAX sees at least one GPU, i.e. whether ``"cuda"`` devices can be used.

    Example::

        >>> dev = "cuda" if fjax.is_cuda_available() else "cpu"
        >>> fjax.zeros(2, device=dev).shape
        fjax.Size([2])
    """
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


class MetaArray(jax.ShapeDtypeStruct):
    """The "array" of a tensor on the meta device: its shape and dtype, and no data.

    jit rejects it (a TypeError), which is where ``dispatch.run`` switches to ``jax.eval_shape``;
    reading its values raises torch's error. ``+`` gives the broadcast meta result, so gradients
    of meta tensors accumulate in backward.
    """

    __slots__ = ()

    def __init__(self, shape, dtype):
        super().__init__(tuple(shape), np.dtype(dtype))

    @classmethod
    def like(cls, x) -> "MetaArray":
        """A meta array with ``x``'s shape and dtype (``x``: an array, a ShapeDtypeStruct)."""
        return x if type(x) is cls else cls(np.shape(x), x.dtype)

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(_NO_DATA)

    def __add__(self, other):
        other_dtype = getattr(other, "dtype", None)
        dtype = self.dtype if other_dtype is None else jnp.result_type(self.dtype, other_dtype)
        return MetaArray(jnp.broadcast_shapes(self.shape, np.shape(other)), dtype)

    __radd__ = __add__

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"


def is_meta(array) -> bool:
    """Whether ``array`` (a tensor's ``_data``) is a meta tensor's."""
    return type(array) is MetaArray
