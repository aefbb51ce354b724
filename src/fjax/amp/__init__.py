"""``fjax.amp``: automatic mixed precision, torch.amp's API.

- ``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a region (or a
  decorated function) where ops from torch's autocast lists run in lower precision or float32;
  see ``autocast_mode.py`` and the per-op policies in ``_policy.py``.
- ``GradScaler``: dynamic loss scaling, with steps skipped on inf/NaN gradients.
- ``is_autocast_available``, ``custom_fwd``/``custom_bwd`` and the state functions torch has at
  its top level (``is_autocast_enabled``, ``get_autocast_dtype``, ...).

Op dispatch consults ``_state`` only for ops that have a policy, and only while a region is on.

Example::

    >>> with fjax.amp.autocast("cpu"):
    ...     fjax.mm(fjax.ones(2, 2), fjax.ones(2, 2)).dtype
    fjax.bfloat16
"""

from __future__ import annotations

from . import _policy
from .autocast_mode import (
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .grad_scaler import GradScaler, OptState

__all__ = [
    "GradScaler",
    "OptState",
    "autocast",
    "autocast_decrement_nesting",
    "autocast_increment_nesting",
    "clear_autocast_cache",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_cache_enabled",
    "is_autocast_enabled",
    "set_autocast_cache_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
]

del _policy
