"""``torch.version``: the build facts programs check (``torch.version.cuda`` is None on a
CPU-only build, as here unless JAX has a CUDA backend) and ``TorchVersion``, the string type of
``torch.__version__`` that compares as a version (``"2.13.0" >= "2.9"``, ``>= (2, 1)``).

Under ``fjax.mock_torch``, ``torch.__version__`` is the torch release whose semantics fjax
follows (``TORCH``), so a program's version gates take today's branches; ``fjax.__version__``
stays fjax's own.

Example::

    >>> v = fjax.version.TorchVersion("2.13.0")
    >>> v >= "2.9", v < (3,), v == "2.13.0"
    (True, True, True)
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

__all__ = ["TORCH", "TorchVersion", "cuda", "debug", "git_version", "hip", "xpu"]


class TorchVersion(str):
    """A version string that compares as a release (``packaging.version.Version``) with strings,
    tuples and ``Version`` objects; a string that is no version compares as a string, as
    ``torch.torch_version.TorchVersion``."""

    def _compare(self, other, method: str):
        try:
            if isinstance(other, str):
                other = Version(other)
            elif isinstance(other, (tuple, list)):
                other = Version(".".join(str(x) for x in other))
            elif not isinstance(other, Version):
                raise InvalidVersion(other)
            return getattr(Version(self), method)(other)
        except InvalidVersion:
            return getattr(str, method)(self, other)

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")

    def __eq__(self, other):
        return self._compare(other, "__eq__")

    __hash__ = str.__hash__


TORCH = TorchVersion("2.13.0")  # the torch release fjax's semantics follow (the test oracle)
__version__ = TORCH
cuda = None  # no CUDA toolkit is linked: JAX's CUDA plugin brings its own
hip = None
xpu = None
debug = False
git_version = "fjax"
