"""fjax's error type: names the op or module, the shapes/dtypes and what was expected."""


class OpError(RuntimeError, ValueError, TypeError):
    """Bad input to an fjax op or module.

    It is a RuntimeError (torch's type for shape errors), a ValueError and a TypeError, so
    code written against either convention catches it.
    """


class IndexOutOfRange(IndexError, RuntimeError):
    """An index outside the size it indexes. torch raises IndexError for some ops and
    RuntimeError for others (even for one op along different dims); this is both."""
