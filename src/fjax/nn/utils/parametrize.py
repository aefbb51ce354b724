"""Parametrizations (``torch.nn.utils.parametrize``): ``module.weight`` computed from other tensors.

``register_parametrization(module, "weight", P)`` moves the parameter to
``module.parametrizations.weight.original`` and swaps the module's class for a subclass
(``ParametrizedLinear``) whose ``weight`` is a property evaluating ``P(original)`` on every read,
so gradients reach ``original`` through fjax's autograd. State dict keys are torch's
(``parametrizations.weight.original``).
"""

from __future__ import annotations

import collections.abc
import copyreg
from contextlib import contextmanager
from copy import deepcopy
from typing import Sequence

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

__all__ = [
    "cached",
    "ParametrizationList",
    "register_parametrization",
    "is_parametrized",
    "remove_parametrizations",
    "type_before_parametrizations",
    "transfer_parametrizations_and_params",
]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Cache the value of every parametrized tensor while the context is active.

    The first read of ``module.weight`` computes it; later reads return the same tensor until
    the outermost ``cached()`` exits. Useful when a parametrized tensor is used several times in
    one forward (an RNN's recurrent kernel, tied weights).

    Args:
        (none): a context manager without arguments.

    Example:
        >>> from fjax.nn.utils import parametrize as P
        >>> class Double(nn.Module):
        ...     def forward(self, x):
        ...         return 2 * x
        >>> m = P.register_parametrization(nn.Linear(2, 2), "weight", Double())
        >>> with P.cached():
        ...     m.weight is m.weight
        True
    """
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, value) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    """torch's ``dest.set_(src)``: ``dest`` (the same object, so optimizers keep it) takes ``src``'s values."""
    with no_grad():
        dest.data = src.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its original value(s): ``module.parametrizations[name]``.

    Holds the original tensor as ``original`` (or ``original0``, ``original1``, ... when the
    first parametrization's ``right_inverse`` returns several tensors). Calling it evaluates the
    chain. Built by :func:`register_parametrization`, not by hand.

    Args:
        modules: the parametrizations, applied in order.
        original: the parameter or buffer being parametrized.
        unsafe: skip the checks that the parametrization keeps the dtype and shape.

    Example:
        >>> from fjax.nn.utils import parametrize as P
        >>> class Double(nn.Module):
        ...     def forward(self, x):
        ...         return 2 * x
        >>> m = P.register_parametrization(nn.Linear(2, 2), "weight", Double())
        >>> type(m.parametrizations.weight).__name__
        'ParametrizationList'
    """

    original: Tensor
    unsafe: bool

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}"
                )
            if original.device != new.device:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the device.\n"
                    f"original.device: {original.device}\nright_inverse(original).device: {new.device}"
                )
            if new is not original:
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                        f"Got element {i} of the sequence with type {type(originali).__name__}."
                    )
                if isinstance(original, Parameter):
                    originali = Parameter(originali.detach(), original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(Z).__name__}.")
            if Z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is "
                    f"enabled.\nunparametrized dtype: {original_dtype}\nparametrized dtype: {Z.dtype}"
                )
            if Z.shape != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is "
                    f"enabled.\nunparametrized shape: {original_shape}\nparametrized shape: {Z.shape}"
                )

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return super().__getitem__(idx)

    def right_inverse(self, value: Tensor) -> None:
        """Set the original tensor(s) from a value of the parametrized tensor (``module.weight = value``).

        Calls the parametrizations' ``right_inverse`` in reverse order and stores the result in
        ``original`` (or ``original0``, ``original1``, ...), keeping the same tensor objects.

        Args:
            value: the new value of the parametrized tensor.

        Example:
            >>> from fjax.nn.utils import parametrize as P
            >>> class Double(nn.Module):
            ...     def forward(self, x):
            ...         return 2 * x
            ...     def right_inverse(self, y):
            ...         return y / 2
            >>> m = P.register_parametrization(nn.Linear(1, 1), "weight", Double())
            >>> m.weight = fjax.tensor([[4.0]])
            >>> m.parametrizations.weight.original
            Parameter containing:
            tensor([[2.]], dtype=fjax.float32, requires_grad=True)
        """
        with no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                        f"while `original` has dtype {self.original.dtype}"
                    )
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError(
                        f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                        f"Got a sequence of length {len(value)}."
                    )
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, Tensor):
                        raise ValueError(f"`right_inverse` must return a sequence of tensors. Got {type(tensor)}")
                    if original_i.dtype != tensor.dtype:
                        raise ValueError(
                            f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                            f"while `original{i}` has dtype {original_i.dtype}"
                        )
                    _maybe_set(original_i, tensor)

    def forward(self) -> Tensor:
        """The parametrized tensor: the chain of parametrizations applied to the original(s).

        Example:
            >>> from fjax.nn.utils import parametrize as P
            >>> class Double(nn.Module):
            ...     def forward(self, x):
            ...         return 2 * x
            >>> m = P.register_parametrization(nn.Linear(2, 2), "weight", Double())
            >>> bool((m.parametrizations.weight() == m.weight).all())
            True
        """
        modules = list(self._modules.values())
        if self.is_tensor:
            x = modules[0](self.original)
        else:
            x = modules[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in modules[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    """Swap ``module``'s class for ``Parametrized<Class>``, a subclass that will hold the properties."""
    cls = module.__class__

    def default_deepcopy(self, memo):
        obj = memo.get(id(self), None)
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = deepcopy(self.__dict__, memo)
        for slot in copyreg._slotnames(self.__class__):
            if hasattr(self, slot):
                setattr(replica, slot, deepcopy(getattr(self, slot), memo))
        return replica

    def getstate(self):
        raise RuntimeError(
            "Serialization of parametrized modules is only supported through state_dict(). See:\n"
            "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
            "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training"
        )

    dct = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module: Module, tensor_name: str) -> None:
    """Add to the (parametrized) class of ``module`` a property ``tensor_name`` computing the parametrization."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = _cache[key] = parametrization()
            return tensor
        return parametrization()

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Parametrize ``module.<tensor_name>``: reading it returns ``parametrization(original)``.

    The first parametrization of a tensor moves it to
    ``module.parametrizations[tensor_name].original`` (the same object, so an optimizer built
    before still updates it; its value becomes ``parametrization.right_inverse(value)`` when
    the parametrization defines one). Registering again on the same tensor chains the
    parametrizations. Assigning ``module.<tensor_name> = value`` calls the ``right_inverse``
    chain. If ``right_inverse`` returns several tensors they become ``original0``,
    ``original1``, ... and ``parametrization.forward`` takes them all.

    Args:
        module: the module holding the tensor.
        tensor_name: the name of the parameter or buffer to parametrize.
        parametrization: a module whose ``forward`` maps the original tensor(s) to the value.
        unsafe: allow a parametrization that changes the dtype or shape (no checks).

    Returns:
        ``module``, whose class is now ``Parametrized<Class>``.

    Example:
        >>> from fjax.nn.utils import parametrize as P
        >>> class Symmetric(nn.Module):
        ...     def forward(self, X):
        ...         return X.triu() + X.triu(1).transpose(-1, -2)
        >>> m = P.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
        >>> bool((m.weight == m.weight.T).all()), type(m).__name__
        (True, 'ParametrizedLinear')
        >>> sorted(m.state_dict())
        ['bias', 'parametrizations.weight.original']
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
            if X.dtype != Y.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` flag "
                    f"is enabled.\nmodule.{tensor_name}.dtype: {Y.dtype}\n"
                    f"parametrization(module.{tensor_name}).dtype: {X.dtype}"
                )
            if X.shape != Y.shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag "
                    f"is enabled.\nmodule.{tensor_name}.shape: {Y.shape}\n"
                    f"parametrization(module.{tensor_name}).shape: {X.shape}"
                )
            if hasattr(parametrization, "right_inverse"):
                try:
                    Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(Z, Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(Z).__name__}")
                    if Z.dtype != Y.dtype or Z.shape != Y.shape:
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have the same dtype and "
                            f"shape as module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                            f"module.{tensor_name}: {Y.dtype} {tuple(Y.shape)}; returned: {Z.dtype} {tuple(Z.shape)}"
                        )
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
            f"'{tensor_name}'"
        )
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, or on any tensor if None).

    Args:
        module: the module to query.
        tensor_name: the name of a parameter or buffer; None for any.

    Example:
        >>> from fjax.nn.utils import parametrize as P
        >>> P.is_parametrized(nn.Linear(2, 2))
        False
    """
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Remove the parametrizations of ``module.<tensor_name>``, making it a plain parameter or buffer again.

    With ``leave_parametrized`` the tensor keeps its current (parametrized) value, else it
    becomes the unparametrized ``original`` (possible only with one original tensor). When no
    parametrization is left, the module gets its class back.

    Args:
        module: the parametrized module.
        tensor_name: the name of the parametrized tensor.
        leave_parametrized: keep the parametrized value (True) or the original (False).

    Returns:
        ``module``.

    Example:
        >>> from fjax.nn.utils import parametrize as P
        >>> class Double(nn.Module):
        ...     def forward(self, x):
        ...         return 2 * x
        >>> m = P.register_parametrization(nn.Linear(2, 2), "weight", Double())
        >>> w = m.weight.detach().clone()
        >>> m = P.remove_parametrizations(m, "weight")
        >>> type(m).__name__, bool((m.weight == w).all())
        ('Linear', True)
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
            _maybe_set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of "
                "a sequence of tensors."
            )
        t = getattr(module, tensor_name)
        original = Parameter(t.detach()) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class of ``module`` before it was parametrized (its class if it is not).

    Args:
        module: the module.

    Example:
        >>> from fjax.nn.utils import parametrize as P
        >>> class Double(nn.Module):
        ...     def forward(self, x):
        ...         return 2 * x
        >>> m = P.register_parametrization(nn.Linear(2, 2), "weight", Double())
        >>> P.type_before_parametrizations(m).__name__
        'Linear'
    """
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(
    from_module: Module, to_module: Module, tensor_name: str | None = None
) -> Module:
    """Copy the parametrizations of ``from_module`` (all, or those of ``tensor_name``) onto ``to_module``,
    with their original tensors.

    A tensor ``to_module`` lacks is created as a Parameter first. The parametrization modules
    are shared, and ``to_module``'s originals become ``from_module``'s tensors.

    Args:
        from_module: the parametrized module.
        to_module: the module to parametrize the same way.
        tensor_name: the one tensor to transfer; None for all.

    Returns:
        ``to_module``.

    Example:
        >>> from fjax.nn.utils import parametrize as P
        >>> class Double(nn.Module):
        ...     def forward(self, x):
        ...         return 2 * x
        >>> a = P.register_parametrization(nn.Linear(2, 2), "weight", Double())
        >>> b = P.transfer_parametrizations_and_params(a, nn.Linear(2, 2))
        >>> bool((a.weight == b.weight).all())
        True
    """
    if is_parametrized(from_module):
        names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
        for name in names:
            if not hasattr(to_module, name):
                setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
            for param_func in from_module.parametrizations[name]:
                register_parametrization(to_module, name, param_func)
            src, dst = from_module.parametrizations[name], to_module.parametrizations[name]
            if "original" in src._parameters or "original" in src._buffers:
                dst.original = src.original
            else:
                i = 0
                while f"original{i}" in src._parameters or f"original{i}" in src._buffers:
                    setattr(dst, f"original{i}", getattr(src, f"original{i}"))
                    i += 1
    return to_module
