"""``fjax.cpu``: torch.cpu's few queries, and ``fjax.cpu.amp`` (torch.cpu.amp: autocast, GradScaler).

Example::

    >>> fjax.cpu.is_available(), fjax.cpu.device_count()
    (True, 1)
"""

from __future__ import annotations

import sys

from .amp._device import cpu as amp

__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]

# ``import fjax.cpu.amp`` / ``from torch.cpu.amp import autocast`` (mock_torch): the import system
# wants the parent to look like a package and the submodule in sys.modules
__path__: list = []
sys.modules.setdefault(f"{__name__}.amp", amp)


def is_available() -> bool:
    """Always True: the CPU is always there (torch.cpu.is_available).

    Example::

        >>> fjax.cpu.is_available()
        True
    """
    return True


def device_count() -> int:
    """1, as torch counts the CPU (torch.cpu.device_count).

    Example::

        >>> fjax.cpu.device_count()
        1
    """
    return 1


def current_device() -> str:
    """``"cpu"`` (torch.cpu.current_device).

    Example::

        >>> fjax.cpu.current_device()
        'cpu'
    """
    return "cpu"


def synchronize(device=None) -> None:
    """Run what eager fusion has recorded and wait for it (torch.cpu.synchronize).

    Example::

        >>> fjax.cpu.synchronize()
    """
    import jax

    from . import _lazy

    _lazy.flush()
    jax.block_until_ready(jax.live_arrays())
