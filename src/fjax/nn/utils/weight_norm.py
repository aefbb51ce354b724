"""The hook-based weight normalization (``torch.nn.utils.weight_norm``, deprecated in torch for
``nn.utils.parametrizations.weight_norm``): parameters ``<name>_g`` and ``<name>_v``."""

from __future__ import annotations

import warnings
from typing import Any

from ..module import Module
from ..parameter import Parameter
from .parametrizations import _norm_except_dim, _weight_norm

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook of :func:`weight_norm`: recomputes ``module.<name>`` from ``_g`` and ``_v``.

    Args:
        name: the name of the normalized parameter.
        dim: the dim kept by the norm; None (or -1) for the whole tensor.

    Example:
        >>> m = nn.utils.weight_norm(nn.Linear(2, 3))
        >>> [type(h).__name__ for h in m._forward_pre_hooks.values()]
        ['WeightNorm']
    """

    name: str
    dim: int

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Any:
        """``g * v / ||v||`` from the module's ``<name>_g`` and ``<name>_v``.

        Args:
            module: the module holding the parameters.

        Example:
            >>> m = nn.utils.weight_norm(nn.Linear(2, 3))
            >>> m._forward_pre_hooks[next(iter(m._forward_pre_hooks))].compute_weight(m).shape
            fjax.Size([3, 2])
        """
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> "WeightNorm":
        """Split ``module.<name>`` into ``<name>_g`` and ``<name>_v`` and register the hook.

        Args:
            module: the module.
            name: the parameter's name.
            dim: the dim kept by the norm.

        Example:
            >>> import warnings
            >>> from fjax.nn.utils.weight_norm import WeightNorm
            >>> m = nn.Linear(2, 3)
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore")
            ...     fn = WeightNorm.apply(m, "weight", 0)
            >>> fn.name, sorted(m.state_dict())
            ('weight', ['bias', 'weight_g', 'weight_v'])
        """
        warnings.warn(
            "`torch.nn.utils.weight_norm` is deprecated in favor of `torch.nn.utils.parametrizations.weight_norm`.",
            FutureWarning,
            stacklevel=3,
        )
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        """Make ``module.<name>`` a plain parameter again, with its current value.

        Args:
            module: the module.

        Example:
            >>> m = nn.utils.remove_weight_norm(nn.utils.weight_norm(nn.Linear(2, 3)))
            >>> sorted(m.state_dict())
            ['bias', 'weight']
        """
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """Weight normalization by a forward pre-hook (torch's deprecated API): ``w = g * v / ||v||``.

    ``module.<name>`` is replaced by the parameters ``<name>_g`` (the magnitude, the norm over
    every dim but ``dim``) and ``<name>_v`` (the direction), and recomputed from them before
    every forward. Prefer :func:`fjax.nn.utils.parametrizations.weight_norm`.

    Args:
        module: the module.
        name: the parameter's name.
        dim: the dim kept by the norm; None for the whole tensor.

    Returns:
        ``module``.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     m = nn.utils.weight_norm(nn.Linear(4, 3))
        >>> sorted(m.state_dict()), m.weight_g.shape
        (['bias', 'weight_g', 'weight_v'], fjax.Size([3, 1]))
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``module.<name>`` becomes a parameter holding its current value.

    Args:
        module: the module.
        name: the parameter's name.

    Returns:
        ``module``.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     m = nn.utils.remove_weight_norm(nn.utils.weight_norm(nn.Linear(4, 3)))
        >>> sorted(m.state_dict())
        ['bias', 'weight']
    """
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
