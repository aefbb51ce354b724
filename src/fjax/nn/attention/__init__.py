"""``torch.nn.attention``: which kernel ``scaled_dot_product_attention`` may use.

``sdpa_kernel(backends)`` sets ``fjax.backends.cuda``'s attention switches for the block (the
listed backends on, the others off) and restores them after, as torch's. fjax's
``scaled_dot_product_attention`` is one XLA computation whatever the switches say, so its
numbers do not depend on them.

Example::

    >>> from fjax.nn.attention import SDPBackend, sdpa_kernel
    >>> with sdpa_kernel(SDPBackend.MATH):
    ...     fjax.backends.cuda.flash_sdp_enabled(), fjax.backends.cuda.math_sdp_enabled()
    (False, True)
    >>> fjax.backends.cuda.flash_sdp_enabled()
    True
"""

from __future__ import annotations

import contextlib
import enum

from ...backends import cuda as _cuda

__all__ = ["SDPBackend", "WARN_FOR_UNFUSED_KERNELS", "sdpa_kernel"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The attention kernels torch can pick from."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_SWITCHES = {
    SDPBackend.MATH: "math",
    SDPBackend.FLASH_ATTENTION: "flash",
    SDPBackend.EFFICIENT_ATTENTION: "mem_efficient",
    SDPBackend.CUDNN_ATTENTION: "cudnn",
}


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Allow only ``backends`` (one ``SDPBackend`` or a list) inside the block."""
    chosen = [backends] if isinstance(backends, SDPBackend) else list(backends)
    for b in chosen:
        if not isinstance(b, SDPBackend):
            raise TypeError(f"sdpa_kernel: backends must be SDPBackend members, got {b!r}")
    saved = dict(_cuda._sdp)
    try:
        for backend, name in _SWITCHES.items():
            _cuda._sdp[name] = backend in chosen
        yield
    finally:
        _cuda._sdp.update(saved)
