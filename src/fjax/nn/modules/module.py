"""``torch.nn.modules.module``'s path: Module (defined in ``fjax.nn.module``), the global hooks and
the names torch's module namespace holds."""

from typing import TypeVar

from ...device import device
from ...dtypes import dtype
from ...tensor import Tensor
from ..module import (
    Module,
    RemovableHandle,
    register_module_backward_hook,
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)
from ..module import _BackwardHook as BackwardHook
from ..parameter import Buffer, Parameter

T = TypeVar("T", bound=Module)


def is_traceable_wrapper_subclass(t) -> bool:
    """Whether ``t`` is a Tensor subclass that wraps other tensors for tracing (it defines
    ``__tensor_flatten__`` and ``__tensor_unflatten__``), as torch's check; fjax's own tensors
    and Parameters are not.

    Args:
        t: the object to check.

    Example:
        >>> from fjax.nn.modules.module import is_traceable_wrapper_subclass
        >>> is_traceable_wrapper_subclass(fjax.ones(1)), is_traceable_wrapper_subclass(nn.Parameter(fjax.ones(1)))
        (False, False)
    """
    return (
        isinstance(t, Tensor)
        and type(t) is not Tensor
        and hasattr(t, "__tensor_flatten__")
        and hasattr(t, "__tensor_unflatten__")
    )


__all__ = [
    "BackwardHook",
    "Buffer",
    "Module",
    "Parameter",
    "RemovableHandle",
    "T",
    "device",
    "dtype",
    "is_traceable_wrapper_subclass",
    "register_module_backward_hook",
    "register_module_buffer_registration_hook",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]
