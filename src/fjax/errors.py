"""fjax's error type: names the op or module, the shapes/dtypes and what was expected."""


class OpError(RuntimeError, ValueError, TypeError):
    """Bad input to an fjax op or module.

    It is a RuntimeError (torch's type for shape errors), a ValueError and a TypeError, so
    code written against either convention catches it.
    """
