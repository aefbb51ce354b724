"""``torch.nn.modules.lazy``: LazyModuleMixin, the mixin of the ``Lazy*`` layers whose parameter
shapes come from the first input."""

from __future__ import annotations

import warnings

from ..parameter import is_lazy


class LazyModuleMixin:
    """A mixin for modules whose parameters are :class:`UninitializedParameter` (and buffers
    :class:`UninitializedBuffer`) until the first call: a forward pre-hook calls
    ``initialize_parameters(*args, **kwargs)`` with that call's inputs, then the module becomes
    ``cls_to_become`` (``LazyLinear`` becomes ``Linear``). A ``state_dict`` loaded before the
    first call materializes the parameters with the loaded shapes.

    Subclasses list the mixin first (``class LazyLinear(LazyModuleMixin, Linear)``) and define
    ``initialize_parameters``.

    Args:
        *args: the wrapped module's constructor arguments.
        **kwargs: the wrapped module's constructor keyword arguments.

    Example::

        >>> m = nn.LazyLinear(3)
        >>> m.has_uninitialized_params()
        True
        >>> m(fjax.ones(2, 5)).shape, type(m).__name__, m.in_features
        (fjax.Size([2, 3]), 'Linear', 5)
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)
        warnings.warn(
            "Lazy modules are a new feature under heavy development so changes to the API or functionality "
            "can happen at any moment.",
            stacklevel=2,
        )

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Materialize the uninitialized parameters from the first call's inputs (subclasses define it).

        Args:
            *args: the first call's positional inputs.
            **kwargs: the first call's keyword inputs.
        """
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether any parameter or buffer of this module still has no shape.

        Example:
            >>> nn.LazyLinear(2).has_uninitialized_params()
            True
        """
        return any(is_lazy(t) for t in list(self._parameters.values()) + list(self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError(
            "Modules with uninitialized parameters can't be used with `DataParallel`. "
            "Run a dummy forward pass to correctly initialize the modules"
        )


__all__ = ["LazyModuleMixin"]
