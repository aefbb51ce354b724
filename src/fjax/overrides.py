"""``torch.overrides``: the ``__torch_function__`` protocol's helpers that library code calls
before it dispatches. fjax has no ``__torch_function__`` dispatch: no argument ever overrides an
op, so the ``has_torch_function*`` checks are False and ``handle_torch_function`` is never
reached; defining a ``TorchFunctionMode`` raises at ``__enter__``.

Example::

    >>> fjax.overrides.has_torch_function((fjax.ones(1),)), fjax.overrides.is_tensor_like(fjax.ones(1))
    (False, True)
"""

from __future__ import annotations

__all__ = [
    "TorchFunctionMode",
    "get_ignored_functions",
    "get_overridable_functions",
    "get_testing_overrides",
    "handle_torch_function",
    "has_torch_function",
    "has_torch_function_unary",
    "has_torch_function_variadic",
    "is_tensor_like",
    "is_tensor_method_or_property",
    "wrap_torch_function",
]


def has_torch_function(relevant_args) -> bool:
    """False: no fjax argument overrides an op through ``__torch_function__``."""
    return False


def has_torch_function_unary(arg) -> bool:
    return False


def has_torch_function_variadic(*args) -> bool:
    return False


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Never reached where ``has_torch_function`` is False; raises NotImplementedError if called."""
    raise NotImplementedError("fjax.overrides.handle_torch_function: fjax has no __torch_function__ dispatch")


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a fjax Tensor (or a class with ``__torch_function__``)."""
    from .tensor import Tensor

    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")


def is_tensor_method_or_property(func) -> bool:
    from .tensor import Tensor

    return getattr(func, "__name__", None) in vars(Tensor)


def get_ignored_functions() -> set:
    return set()


def get_overridable_functions() -> dict:
    return {}


def get_testing_overrides() -> dict:
    return {}


def wrap_torch_function(dispatcher):
    """A decorator that returns the function unchanged (no ``__torch_function__`` dispatch)."""
    return lambda fn: fn


class TorchFunctionMode:
    """torch.overrides.TorchFunctionMode: fjax cannot route its ops through a Python mode;
    entering one raises NotImplementedError naming the class."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        raise NotImplementedError(
            f"fjax.overrides.TorchFunctionMode: {type(self).__name__} cannot intercept fjax ops "
            "(fjax has no __torch_function__ dispatch)"
        )

    def __exit__(self, *exc):
        return False
