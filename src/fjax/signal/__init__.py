"""``fjax.signal``: torch.signal's namespace; its one submodule is ``windows`` (window functions).

Example::

    >>> fjax.signal.windows.hamming(3)
    tensor([0.0800, 1.0000, 0.0800], dtype=fjax.float32)
"""

from . import windows

__all__ = ["windows"]
