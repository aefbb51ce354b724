"""``fjax.backends.mps``: Apple's Metal backend, which fjax does not use (JAX's Metal plugin is
not supported), so both queries answer False."""

from __future__ import annotations


def is_available() -> bool:
    """Whether an MPS (Apple Metal) device can be used: always False on fjax.

    Example::

        >>> fjax.backends.mps.is_available()
        False
    """
    return False


def is_built() -> bool:
    """Whether fjax was built with MPS support: always False.

    Example::

        >>> fjax.backends.mps.is_built()
        False
    """
    return False
