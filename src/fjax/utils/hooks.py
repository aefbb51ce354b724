"""``torch.utils.hooks``: ``RemovableHandle``, the handle every ``register_*_hook`` returns, for
library code that keeps hooks of its own in a dict.

Example::

    >>> hooks = {}
    >>> h = fjax.utils.hooks.RemovableHandle(hooks)
    >>> hooks[h.id] = print
    >>> h.remove(); hooks
    {}
"""

from __future__ import annotations

from ..nn.module import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Mark a hook as not to be serialized (torch's marker); returns ``f``."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor) -> None:
    """Warn if ``tensor`` has backward hooks that are not marked ``unserializable_hook``."""
    import warnings

    for hook in getattr(tensor, "_hooks", None) or ():
        if not getattr(hook, "__torch_unserializable__", False):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized", stacklevel=2)
