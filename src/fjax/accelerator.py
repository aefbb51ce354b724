"""``fjax.accelerator``: torch.accelerator's device-agnostic queries. fjax's one accelerator type
is ``cuda`` (JAX's GPU backend); on a machine without one there is no accelerator, as in torch."""

from __future__ import annotations

from . import cuda as _cuda
from .device import device as _device

__all__ = ["current_accelerator", "current_device_index", "device_count", "is_available", "synchronize"]


def is_available() -> bool:
    """Whether an accelerator (a GPU JAX can use) is present; never raises.

    Example::

        >>> fjax.accelerator.is_available() == fjax.cuda.is_available()
        True
    """
    return _cuda.is_available()


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as a ``fjax.device`` (``device(type='cuda')``), or None when
    there is none (on CPU, as torch answers). ``check_available`` is accepted for torch's
    signature: fjax only reports an accelerator it can use.

    Example::

        >>> acc = fjax.accelerator.current_accelerator()
        >>> acc is None or acc.type == "cuda"
        True
    """
    return _device("cuda") if _cuda.is_available() else None


def device_count() -> int:
    """The number of accelerator devices (GPUs JAX sees); 0 without one.

    Example::

        >>> fjax.accelerator.device_count() == fjax.cuda.device_count()
        True
    """
    return _cuda.device_count()


def current_device_index() -> int:
    """The index of the selected accelerator device (``fjax.cuda.current_device()``); raises
    ``RuntimeError`` when there is no accelerator.

    Example::

        >>> fjax.accelerator.current_device_index() if fjax.accelerator.is_available() else 0
        0
    """
    return _cuda.current_device()


def synchronize(device=None, /) -> None:
    """Wait until the work JAX has dispatched asynchronously is done (``fjax.cuda.synchronize``).

    Example::

        >>> fjax.accelerator.synchronize()
    """
    _cuda.synchronize(device)
