"""``torch.nn.modules.container``'s path: the containers (defined in ``fjax.nn.containers``) and the
deprecated ``Container``."""

import warnings
from typing import TypeVar

from ..containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from ..module import Module
from ..parameter import Parameter

T = TypeVar("T", bound=Module)


class Container(Module):
    """Deprecated (as in torch): a Module whose keyword arguments become its children; use
    :class:`Sequential` or :class:`ModuleDict`.

    Args:
        **kwargs: the child modules, by name.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     c = nn.Container(fc=nn.Linear(2, 2))
        >>> [name for name, _ in c.named_children()]
        ['fc']
    """

    def __init__(self, **kwargs) -> None:
        super().__init__()
        warnings.warn(
            "nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. Subclass that "
            "instead.",
            FutureWarning,
            stacklevel=2,
        )
        for key, value in kwargs.items():
            self.add_module(key, value)


__all__ = [
    "Container",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "ParameterDict",
    "ParameterList",
    "Sequential",
    "T",
]
