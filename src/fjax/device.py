"""Devices: torch-style names over jax devices. ``"cuda"`` is the default accelerator."""

from __future__ import annotations

import jax


class device:  # noqa: N801 - torch's name
    """``fjax.device("cpu")``, ``fjax.device("cuda:1")``, ``fjax.device("cuda", 0)``."""

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
        if type not in ("cpu", "cuda"):
            raise ValueError(f"device: expected 'cpu' or 'cuda[:index]', got {type!r}")
        self.type = type
        self.index = index

    def jax_device(self) -> jax.Device:
        """The jax device this names; raises when it does not exist on this machine."""
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
