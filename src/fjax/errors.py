"""fjax's error type: names the op or module, the shapes/dtypes and what was expected."""

import pickle


class OpError(RuntimeError, ValueError, TypeError):
    """Bad input to an fjax op or module.

    It is a RuntimeError (torch's type for shape errors), a ValueError and a TypeError, so
    code written against either convention catches it.
    """


class IndexOutOfRange(IndexError, RuntimeError):
    """An index outside the size it indexes. torch raises IndexError for some ops and
    RuntimeError for others (even for one op along different dims); this is both."""


class CorruptArtifactError(OpError, pickle.UnpicklingError):
    """A saved artifact that cannot be loaded: truncated, overwritten, missing a file, or with
    metadata that disagrees with its program or with the load's target.

    Raised by ``fjax.load``, ``nn.Graph.load`` and ``fjax.distributed.checkpoint.load``; the
    message names the file and what is wrong with it, ``path`` holds the file. It is an
    ``OpError`` (so a RuntimeError and a ValueError, what torch's loader raises for a broken
    archive) and a ``pickle.UnpicklingError`` (what torch's weights-only loader raises).
    """

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path

    def __reduce__(self):
        return type(self), (str(self), self.path)
