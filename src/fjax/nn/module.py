"""Module: the base class of every layer, with torch's registration, state_dict and hooks."""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

from .. import dtypes as _dt
from .._tracing import modules_changed, trace_state
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..creation import tensor as _tensor
from ..creation import zeros_like as _zeros_like
from ..device import device as _device
from ..errors import OpError
from ..tensor import Size, Tensor
from .parameter import Parameter, UninitializedTensorMixin


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it found missing and unexpected (torch's type and repr)."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


_hook_ids = itertools.count()


class RemovableHandle:
    """Returned by ``register_*_hook``: ``handle.remove()`` unregisters the hook."""

    def __init__(self, *hook_dicts: dict, extra_dict=None):
        self.id = next(_hook_ids)
        extra = (
            () if extra_dict is None else tuple(extra_dict) if isinstance(extra_dict, (list, tuple)) else (extra_dict,)
        )
        self._dicts = hook_dicts + extra  # (torch's extra_dict: more dicts the id is removed from)

    def remove(self) -> None:
        modules_changed[0] += 1
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


_EXTRA_STATE = "_extra_state"  # the state_dict key of a module's get_extra_state()


class _Above:
    """What higher layers lend this module when they are imported (it imports none of them):
    ``compile``, ``fjax.compiler``'s in-place compile behind ``Module.compile``."""

    compile = None


# -- global module hooks (torch.nn.modules.module.register_module_*_hook) -------------------------
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: set = set()
_global_forward_hooks_always_called: set = set()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_is_full_backward_hook: list = [None]
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()
_global_call_hooks = [False]  # whether any global forward/backward hook exists: one check per call


def _refresh_global_call_hooks() -> None:
    _global_call_hooks[0] = bool(
        _global_forward_pre_hooks or _global_forward_hooks or _global_backward_pre_hooks or _global_backward_hooks
    )


class _GlobalHandle(RemovableHandle):
    """A handle on a global hook: removing it also updates the per-call check."""

    def __init__(self, hooks: OrderedDict, *id_sets: set):
        super().__init__(hooks)
        self._id_sets = id_sets

    def remove(self) -> None:
        super().remove()
        for ids in self._id_sets:
            ids.discard(self.id)
        _refresh_global_call_hooks()


def _add_global(hooks: OrderedDict, hook: Callable, *id_sets: set) -> RemovableHandle:
    modules_changed[0] += 1
    handle = _GlobalHandle(hooks, *id_sets)
    hooks[handle.id] = hook
    _refresh_global_call_hooks()
    return handle


def _run_registration_hooks(hooks: OrderedDict, module, name: str, value):
    for hook in list(hooks.values()):
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, args)`` before the ``forward`` of every module (before its own pre-hooks).

    The hook may return replacement ``args``. Meant for debugging and profiling.

    Args:
        hook: the function to call.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> from fjax.nn.modules.module import register_module_forward_pre_hook
        >>> seen = []
        >>> h = register_module_forward_pre_hook(lambda m, args: seen.append(type(m).__name__))
        >>> _ = nn.Sequential(nn.Linear(2, 2), nn.ReLU())(fjax.ones(1, 2))
        >>> h.remove()
        >>> seen
        ['Sequential', 'Linear', 'ReLU']
    """
    return _add_global(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False, always_call: bool = False):
    """Call ``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) after the
    ``forward`` of every module (before its own forward hooks). The hook may return a new output.

    Args:
        hook: the function to call.
        with_kwargs: pass the keyword arguments too (default False).
        always_call: also call the hook when ``forward`` raises (default False).

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> from fjax.nn.modules.module import register_module_forward_hook
        >>> shapes = []
        >>> h = register_module_forward_hook(lambda m, args, out: shapes.append(tuple(out.shape)))
        >>> _ = nn.Linear(2, 3)(fjax.ones(4, 2))
        >>> h.remove()
        >>> shapes
        [(4, 3)]
    """
    handle = _add_global(
        _global_forward_hooks, hook, _global_forward_hooks_with_kwargs, _global_forward_hooks_always_called
    )
    if with_kwargs:
        _global_forward_hooks_with_kwargs.add(handle.id)
    if always_call:
        _global_forward_hooks_always_called.add(handle.id)
    return handle


def _global_backward_kind(full: bool) -> None:
    kind = _global_is_full_backward_hook[0]
    if kind is not None and kind != full and _global_backward_hooks:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
            "Please use only one of them."
        )
    _global_is_full_backward_hook[0] = full


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, grad_output)`` when the gradients of every module's outputs are
    computed (before the module's own backward pre-hooks); it may return a new ``grad_output``.

    Args:
        hook: the function to call.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> from fjax.nn.modules.module import register_module_full_backward_pre_hook
        >>> seen = []
        >>> h = register_module_full_backward_pre_hook(lambda m, g: seen.append(type(m).__name__))
        >>> nn.Linear(2, 1)(fjax.ones(1, 2, requires_grad=True)).sum().backward()
        >>> h.remove()
        >>> seen
        ['Linear']
    """
    return _add_global(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, grad_input, grad_output)`` when the gradients of every module's inputs
    are computed (before the module's own backward hooks); it may return a new ``grad_input``.

    Args:
        hook: the function to call.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> from fjax.nn.modules.module import register_module_full_backward_hook
        >>> seen = []
        >>> h = register_module_full_backward_hook(lambda m, gi, go: seen.append(tuple(gi[0].shape)))
        >>> nn.Linear(2, 1)(fjax.ones(1, 2, requires_grad=True)).sum().backward()
        >>> h.remove()
        >>> seen
        [(1, 2)]
    """
    _global_backward_kind(True)
    return _add_global(_global_backward_hooks, hook)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """Deprecated form of :func:`register_module_full_backward_hook` (torch's non-full hooks
    see only the last op's gradients; fjax gives them the module's, as the full hooks).

    Args:
        hook: the function to call as ``hook(module, grad_input, grad_output)``.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> from fjax.nn.modules.module import register_module_backward_hook
        >>> h = register_module_backward_hook(lambda m, gi, go: None)
        >>> h.remove()
    """
    _global_backward_kind(False)
    return _add_global(_global_backward_hooks, hook)


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, name, buffer)`` whenever any module registers a buffer; it may return a
    replacement buffer.

    Args:
        hook: the function to call.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> from fjax.nn.modules.module import register_module_buffer_registration_hook
        >>> names = []
        >>> h = register_module_buffer_registration_hook(lambda m, name, b: names.append(name))
        >>> _ = nn.BatchNorm1d(2)
        >>> h.remove()
        >>> names
        ['running_mean', 'running_var', 'num_batches_tracked']
    """
    return _add_global(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, name, submodule)`` whenever any module registers a child module; it may
    return a replacement.

    Args:
        hook: the function to call.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> from fjax.nn.modules.module import register_module_module_registration_hook
        >>> names = []
        >>> h = register_module_module_registration_hook(lambda m, name, sub: names.append(name))
        >>> _ = nn.Sequential(nn.ReLU(), nn.Tanh())
        >>> h.remove()
        >>> names
        ['0', '1']
    """
    return _add_global(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, name, param)`` whenever any module registers a parameter; it may return
    a replacement.

    Args:
        hook: the function to call.

    Returns:
        A handle whose ``remove()`` unregisters the hook.

    Example:
        >>> from fjax.nn.modules.module import register_module_parameter_registration_hook
        >>> names = []
        >>> h = register_module_parameter_registration_hook(lambda m, name, p: names.append(name))
        >>> _ = nn.Linear(2, 2)
        >>> h.remove()
        >>> names
        ['weight', 'bias']
    """
    return _add_global(_global_parameter_registration_hooks, hook)


def _addindent(text: str, spaces: int) -> str:
    first, *rest = text.split("\n")
    return "\n".join([first] + [" " * spaces + line for line in rest])


def _shape(x) -> tuple:
    return tuple(getattr(x, "shape", ()))


class Module:
    """Base class of all layers (``torch.nn.Module``).

    Assigning a ``Parameter``, a ``Module`` or (after ``register_buffer``) a Tensor to an
    attribute registers it; ``parameters()``, ``state_dict()``, ``to()`` ... then see it.

    Example::

        >>> class Net(fjax.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = fjax.nn.Linear(3, 2)
        ...     def forward(self, x):
        ...         return self.fc(x).relu()
        >>> list(Net().state_dict())
        ['fc.weight', 'fc.bias']
    """

    training: bool

    def __init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", {})
        set_(self, "_buffers", {})
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", {})
        set_(self, "_forward_pre_hooks", OrderedDict())
        set_(self, "_forward_pre_hooks_with_kwargs", set())
        set_(self, "_forward_hooks", OrderedDict())
        set_(self, "_forward_hooks_with_kwargs", set())
        set_(self, "_backward_hooks", OrderedDict())
        set_(self, "_backward_pre_hooks", OrderedDict())
        set_(self, "_is_full_backward_hook", None)

    def forward(self, *args, **kwargs):
        """The computation of the layer; subclasses define it, and calling the module runs it with hooks.

        Example:
            >>> nn.Linear(3, 2).forward(fjax.ones(4, 3)).shape
            fjax.Size([4, 2])
        """
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's calls in place: ``fjax.compile`` (``torch.compile``) of its
        ``__call__``, with the same arguments (``fullgraph``, ``dynamic``, ``backend``, ``mode``,
        ...). Unlike ``fjax.compile(module)``, which returns a new module, the module itself and
        its ``state_dict`` keys stay as they are.

        Example::

            >>> net = nn.Linear(3, 2)
            >>> net.compile()
            >>> x = fjax.randn(4, 3)
            >>> bool(fjax.allclose(net(x), x @ net.weight.T + net.bias, atol=1e-6))
            True
        """
        _Above.compile(self, *args, **kwargs)

    def get_extra_state(self):
        """State beyond parameters and buffers that ``state_dict`` saves under the key
        ``'_extra_state'`` when a subclass overrides this (and ``set_extra_state`` to load it), as in
        torch. The base raises: it runs only where a subclass overrides it.

        Example::

            >>> class Counter(nn.Module):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.calls = 0
            ...     def get_extra_state(self):
            ...         return {"calls": self.calls}
            ...     def set_extra_state(self, state):
            ...         self.calls = state["calls"]
            >>> a, b = Counter(), Counter()
            >>> a.calls = 3
            >>> b.load_state_dict(a.state_dict()); b.calls
            <All keys matched successfully>
            3
        """
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called: override "
            "get_extra_state (and set_extra_state) in the subclass to save extra state"
        )

    def set_extra_state(self, state) -> None:
        """Load what ``get_extra_state`` saved (see there); the base raises.

        Example::

            >>> nn.Linear(1, 1).set_extra_state({})
            Traceback (most recent call last):
            RuntimeError: Reached a code path in Module.set_extra_state() that should never be called: ...
        """
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called: override "
            "set_extra_state (and get_extra_state) in the subclass to load extra state"
        )

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Set the submodule at dotted path ``target`` (``'encoder.layers.0'``) to ``module``; its
        parent must exist, and with ``strict`` so must the submodule itself.

        Example::

            >>> net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
            >>> net.set_submodule("1", nn.Tanh()); net[1]
            Tanh()
        """
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        *path, name = target.split(".")
        parent = self.get_submodule(".".join(path)) if path else self
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def share_memory(self) -> "Module":
        """torch's ``share_memory``: each parameter and buffer's ``share_memory_()`` (values cross
        processes by pickling in fjax), then this module.

        Example::

            >>> m = nn.Linear(2, 2)
            >>> m.share_memory() is m
            True
        """
        for t in [*self.parameters(), *self.buffers()]:
            t.share_memory_()
        return self

    # -- calling ------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        d = self.__dict__
        graph_call = d.get("_graph_call")  # set by nn.Graph while tracing (checkpointing)
        if graph_call is not None:
            return graph_call(self, args, kwargs)
        backward = d.get("_backward_hooks") or d.get("_backward_pre_hooks")
        if not (self._forward_pre_hooks or self._forward_hooks or backward or _global_call_hooks[0]):
            return self.forward(*args, **kwargs)
        if _global_call_hooks[0]:
            return self._call_with_global_hooks(args, kwargs)
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                out = hook(self, args, kwargs)
                if out is not None:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise OpError(
                            f"{type(self).__name__}: a forward pre-hook registered with with_kwargs=True "
                            f"must return None or an (args, kwargs) tuple, got {type(out).__name__}"
                        )
                    args, kwargs = out
            else:
                out = hook(self, args)
                if out is not None:
                    args = out if isinstance(out, tuple) else (out,)
        bw = None
        if backward and is_grad_enabled() and not trace_state.depth:
            bw = _BackwardHook(self, list(d["_backward_hooks"].values()), list(d["_backward_pre_hooks"].values()))
            args = bw.setup_inputs(args)
        result = self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                out = hook(self, args, kwargs, result)
            else:
                out = hook(self, args, result)
            if out is not None:
                result = out
        if bw is not None:
            result = bw.setup_outputs(result)
        return result

    def _call_with_global_hooks(self, args: tuple, kwargs: dict):
        """``__call__`` when global hooks exist: the global hooks run before the module's own."""
        d = self.__dict__
        for hook in list(_global_forward_pre_hooks.values()):
            out = hook(self, args)
            if out is not None:
                args = out if isinstance(out, tuple) else (out,)
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                out = hook(self, args, kwargs)
                if out is not None:
                    args, kwargs = out
            else:
                out = hook(self, args)
                if out is not None:
                    args = out if isinstance(out, tuple) else (out,)
        bw = None
        hooks = list(_global_backward_hooks.values()) + list(d.get("_backward_hooks", {}).values())
        pre_hooks = list(_global_backward_pre_hooks.values()) + list(d.get("_backward_pre_hooks", {}).values())
        if (hooks or pre_hooks) and is_grad_enabled() and not trace_state.depth:
            bw = _BackwardHook(self, hooks, pre_hooks)
            args = bw.setup_inputs(args)
        forward_hooks = [(i, h, True) for i, h in _global_forward_hooks.items()]
        forward_hooks += [(i, h, False) for i, h in self._forward_hooks.items()]
        try:
            result = self.forward(*args, **kwargs)
        except Exception:
            for hook_id, hook, _ in forward_hooks:
                if hook_id in _global_forward_hooks_always_called:
                    extra = (kwargs,) if hook_id in _global_forward_hooks_with_kwargs else ()
                    try:
                        hook(self, args, *extra, None)
                    except Exception as e:  # torch: a failing always-called hook only warns
                        warnings.warn(
                            f"global module forward hook with always_call=True raised an exception: {e}", stacklevel=2
                        )
            raise
        for hook_id, hook, is_global in forward_hooks:
            with_kwargs = _global_forward_hooks_with_kwargs if is_global else self._forward_hooks_with_kwargs
            out = hook(self, args, kwargs, result) if hook_id in with_kwargs else hook(self, args, result)
            if out is not None:
                result = out
        if bw is not None:
            result = bw.setup_outputs(result)
        return result

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args)`` (or ``hook(module, args, kwargs)``) before ``forward``.

        The hook may return replacement ``args`` (or ``(args, kwargs)`` with ``with_kwargs``).

        Args:
            hook: the function to call.
            prepend: run it before the hooks registered earlier.
            with_kwargs: pass (and take back) the keyword arguments too.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Example:
            >>> m = nn.Identity()
            >>> h = m.register_forward_pre_hook(lambda module, args: (args[0] * 2,))
            >>> m(fjax.ones(2))
            tensor([2., 2.], dtype=fjax.float32)
            >>> h.remove()
        """
        modules_changed[0] += 1
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        return handle

    def register_forward_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` (or with ``kwargs`` before ``output``) after ``forward``.

        The hook may return a replacement output.

        Args:
            hook: the function to call.
            prepend: run it before the hooks registered earlier.
            with_kwargs: pass the keyword arguments too.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Example:
            >>> m = nn.Linear(3, 2)
            >>> h = m.register_forward_hook(lambda module, args, out: print(tuple(out.shape)))
            >>> _ = m(fjax.ones(4, 3))
            (4, 2)
            >>> h.remove()
        """
        modules_changed[0] += 1
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        return handle

    def _backward_hook_kind(self, full: bool) -> None:
        kind = self.__dict__.get("_is_full_backward_hook")
        if kind is not None and kind != full and self._backward_hooks:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single Module "
                f"({type(self).__name__}). Please use only one of them."
            )
        object.__setattr__(self, "_is_full_backward_hook", full)

    def _ensure_backward_dicts(self) -> None:
        d = self.__dict__
        if "_backward_hooks" not in d:  # a module unpickled from an older fjax
            object.__setattr__(self, "_backward_hooks", OrderedDict())
            object.__setattr__(self, "_backward_pre_hooks", OrderedDict())
            object.__setattr__(self, "_is_full_backward_hook", None)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` once the gradients of the module's inputs
        are computed (torch's ``register_full_backward_hook``).

        ``grad_input`` and ``grad_output`` are tuples with one entry per positional argument and
        per output: the gradient, or None for a non-Tensor, for a tensor that does not require
        grad, and for an output no gradient reached. The hook may return a tuple of the same
        length to replace ``grad_input``. Keyword arguments are not seen. The forward receives
        (and the caller gets back) new tensors standing for its inputs (and outputs): write them
        in place at your peril, as in torch. Inside a functional transform or an nn.Graph trace
        the hooks are not called. If no input requires grad, the hook is called when the output
        gradients are known, with ``grad_input`` all None, and must return None.

        Example::

            >>> lin = nn.Linear(3, 2)
            >>> seen = []
            >>> h = lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi[0].shape, go[0].shape)))
            >>> lin(fjax.ones(4, 3, requires_grad=True)).sum().backward()
            >>> seen
            [(fjax.Size([4, 3]), fjax.Size([4, 2]))]
            >>> h.remove()
        """
        self._ensure_backward_dicts()
        self._backward_hook_kind(True)
        return self._add_backward(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients of the module's outputs are known,
        before the module's backward (torch's ``register_full_backward_pre_hook``).

        ``grad_output`` is a tuple with one entry per output (None where none reached it). The
        hook may return a tuple of the same length that replaces it for the module's backward.

        Example::

            >>> lin = nn.Linear(3, 2)
            >>> h = lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 0,))
            >>> x = fjax.ones(1, 3, requires_grad=True)
            >>> lin(x).sum().backward()
            >>> x.grad.tolist()
            [[0.0, 0.0, 0.0]]
        """
        self._ensure_backward_dicts()
        return self._add_backward(self._backward_pre_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """The deprecated module backward hook, ``hook(module, grad_input, grad_output)``.

        fjax calls it as :meth:`register_full_backward_hook` does: ``grad_input`` holds the
        gradients of the module's inputs. (torch's deprecated form passes the gradients of the
        inputs of the module's last autograd node instead, which for a module of several ops, or
        with parameters, holds other tensors; torch warns about that difference.) A module takes
        either kind of backward hook, not both, as in torch and OneFlow.

        Example::

            >>> act = nn.Sigmoid()
            >>> seen = []
            >>> _ = act.register_backward_hook(lambda m, gi, go: seen.append(len(gi)))
            >>> act(fjax.zeros(2, requires_grad=True)).sum().backward()
            >>> seen
            [1]
        """
        self._ensure_backward_dicts()
        self._backward_hook_kind(False)
        return self._add_backward(self._backward_hooks, hook, False)

    def _add_backward(self, hooks: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
        modules_changed[0] += 1
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    # -- registration -------------------------------------------------------------------
    def _check_name(self, kind: str, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f"{kind} name can't contain \".\" and can't be empty, got {name!r}")
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None) under ``name``.

        Args:
            name: the attribute name.
            param: an ``nn.Parameter``, or None for an optional parameter that is absent.

        Example:
            >>> m = nn.Module()
            >>> m.register_parameter("scale", nn.Parameter(fjax.ones(2)))
            >>> [name for name, _ in m.named_parameters()]
            ['scale']
        """
        self._check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(fjax.nn.Parameter or None required)"
            )
        modules_changed[0] += 1
        if _global_parameter_registration_hooks:
            param = _run_registration_hooks(_global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state saved in ``state_dict`` (unless not persistent), not trained.

        Args:
            name: the attribute name.
            tensor: the buffer's value, or None.
            persistent: whether ``state_dict`` includes it.

        Example:
            >>> m = nn.Module()
            >>> m.register_buffer("steps", fjax.zeros(1))
            >>> m.register_buffer("cache", fjax.zeros(1), persistent=False)
            >>> list(m.state_dict())
            ['steps']
        """
        self._check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (fjax Tensor or None required)"
            )
        modules_changed[0] += 1
        if _global_buffer_registration_hooks:
            tensor = _run_registration_hooks(_global_buffer_registration_hooks, self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module (or None) under ``name``.

        Args:
            name: the attribute name.
            module: the child module, or None.

        Example:
            >>> m = nn.Module()
            >>> m.add_module("fc", nn.Linear(2, 3))
            >>> m.fc
            Linear(in_features=2, out_features=3, bias=True)
        """
        self._check_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        modules_changed[0] += 1
        if _global_module_registration_hooks:
            module = _run_registration_hooks(_global_module_registration_hooks, self, name, module)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        modules_changed[0] += 1  # functional transforms re-trace functions that reach a changed module
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' (fjax.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            if _global_module_registration_hooks:
                value = _run_registration_hooks(_global_module_registration_hooks, self, name, value)
            self._modules[name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' (Module or None expected)"
                )
            d["_modules"][name] = None
        elif isinstance(value, Tensor) and value.__dict__.get("_is_buffer"):  # nn.Buffer(t)
            if params is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._forget(name, keep="_buffers")
            self.register_buffer(name, value, value.__dict__.get("persistent", True))
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            if _global_buffer_registration_hooks:
                value = _run_registration_hooks(_global_buffer_registration_hooks, self, name, value)
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: str) -> None:
        """Drop ``name`` from the instance dict and every registry but ``keep`` (where it keeps
        its position, as in torch) before re-registering it."""
        d = self.__dict__
        d.pop(name, None)
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry != keep:
                d[registry].pop(name, None)
        d["_non_persistent_buffers_set"].discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        modules_changed[0] += 1
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if name in d[registry]:
                del d[registry][name]
                d["_non_persistent_buffers_set"].discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(super().__dir__()) + list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # -- traversal ----------------------------------------------------------------------
    def _named_members(self, get_members, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (module_prefix + "." if module_prefix else "") + name, value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``(name, parameter)`` pairs, names dotted from this module (``'fc.weight'``).

        Args:
            prefix: prepended to every name.
            recurse: include the parameters of descendants.
            remove_duplicate: yield a shared parameter once.

        Example:
            >>> [(name, tuple(p.shape)) for name, p in nn.Sequential(nn.Linear(3, 2)).named_parameters()]
            [('0.weight', (2, 3)), ('0.bias', (2,))]
        """
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter of this module (and its descendants when ``recurse``), once each.

        Args:
            recurse: include the parameters of descendants.

        Example:
            >>> sum(p.numel() for p in nn.Linear(3, 2).parameters())
            8
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """``(name, buffer)`` pairs, persistent or not.

        Args:
            prefix: prepended to every name.
            recurse: include the buffers of descendants.
            remove_duplicate: yield a shared buffer once.

        Example:
            >>> [name for name, _ in nn.BatchNorm1d(3).named_buffers()]
            ['running_mean', 'running_var', 'num_batches_tracked']
        """
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer of this module (and its descendants when ``recurse``), once each.

        Args:
            recurse: include the buffers of descendants.

        Example:
            >>> [b.shape for b in nn.BatchNorm1d(3).buffers()]
            [fjax.Size([3]), fjax.Size([3]), fjax.Size([])]
        """
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """``(name, module)`` for each direct child, once each.

        Example:
            >>> [name for name, _ in nn.Sequential(nn.Linear(2, 2), nn.ReLU()).named_children()]
            ['0', '1']
        """
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator["Module"]:
        """Each direct child module, once each.

        Example:
            >>> list(nn.Sequential(nn.Linear(2, 2), nn.ReLU()).children())
            [Linear(in_features=2, out_features=2, bias=True), ReLU()]
        """
        for _, m in self.named_children():
            yield m

    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, "Module"]]:
        """``(name, module)`` for this module (name ``prefix``) and every descendant, pre-order.

        Args:
            memo: modules already yielded (skipped).
            prefix: the name of this module.
            remove_duplicate: yield a shared module once.

        Example:
            >>> [name for name, _ in nn.Sequential(nn.Linear(2, 2), nn.ReLU()).named_modules()]
            ['', '0', '1']
        """
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + "." + name if prefix else name, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        """This module and every descendant, pre-order, once each.

        Example:
            >>> [type(m).__name__ for m in nn.Sequential(nn.Linear(2, 2), nn.ReLU()).modules()]
            ['Sequential', 'Linear', 'ReLU']
        """
        for _, m in self.named_modules():
            yield m

    def get_submodule(self, target: str) -> "Module":
        """The descendant at dotted path ``target`` (``''`` is this module).

        Args:
            target: the dotted path, as ``named_modules`` names it.

        Example:
            >>> nn.Sequential(nn.Sequential(nn.ReLU())).get_submodule("0.0")
            ReLU()
        """
        module = self
        for item in target.split(".") if target else ():
            child = module._modules.get(item)
            if child is None:
                raise AttributeError(f"{type(module).__name__} has no submodule `{item}` (looking up {target!r})")
            module = child
        return module

    def _get_leaf(self, target: str, registry: str, kind: str):
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        members = getattr(module, registry)
        if name not in members:
            raise AttributeError(f"{type(module).__name__} has no {kind} `{name}` (looking up {target!r})")
        return members[name]

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (``'0.weight'``).

        Args:
            target: the parameter's name as ``named_parameters`` gives it.

        Example:
            >>> nn.Sequential(nn.Linear(3, 2)).get_parameter("0.weight").shape
            fjax.Size([2, 3])
        """
        return self._get_leaf(target, "_parameters", "parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target`` (``'0.running_mean'``).

        Args:
            target: the buffer's name as ``named_buffers`` gives it.

        Example:
            >>> nn.Sequential(nn.BatchNorm1d(3)).get_buffer("0.running_mean")
            tensor([0., 0., 0.], dtype=fjax.float32)
        """
        return self._get_leaf(target, "_buffers", "buffer")

    # -- modes and gradients ------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode on this module and its descendants (Dropout, BatchNorm care).

        Args:
            mode: ``True`` for training, ``False`` for evaluation.

        Returns:
            This module.

        Example:
            >>> m = nn.Sequential(nn.Dropout(0.5))
            >>> m.eval().training, m.train().training
            (False, True)
        """
        if not isinstance(mode, bool):
            raise ValueError(f"train: training mode is expected to be boolean, got {mode!r}")
        if self.__dict__.get("training") is not mode:  # (a loop calling train() every step changes nothing)
            object.__setattr__(self, "training", mode)
            modules_changed[0] += 1
        for module in self.children():
            module.train(mode)  # children's own train() overrides run, as in torch
        return self

    def eval(self) -> "Module":
        """Set evaluation mode (``train(False)``) on this module and its descendants; returns it.

        Example:
            >>> m = nn.Sequential(nn.Dropout(0.5)).eval()
            >>> m.training, m[0].training
            (False, False)
        """
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set ``requires_grad`` on every parameter (freeze with ``False``); returns the module.

        Args:
            requires_grad: whether autograd records operations on the parameters.

        Example:
            >>> m = nn.Linear(2, 2).requires_grad_(False)
            >>> [p.requires_grad for p in m.parameters()]
            [False, False]
        """
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset parameter gradients: drop them (default) or fill them with zeros.

        Args:
            set_to_none: set each ``.grad`` to None instead of zeroing it.

        Example:
            >>> m = nn.Linear(2, 1)
            >>> m(fjax.ones(1, 2)).sum().backward()
            >>> m.zero_grad()
            >>> m.weight.grad is None
            True
        """
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.detach_()
                p.grad.zero_()

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every descendant (children first), then on this module.

        Args:
            fn: a function of one module, typically an initialiser.

        Returns:
            This module.

        Example:
            >>> def init(m):
            ...     if isinstance(m, nn.Linear):
            ...         nn.init.constant_(m.weight, 0.5)
            >>> net = nn.Sequential(nn.Linear(2, 2), nn.ReLU()).apply(init)
            >>> net[0].weight
            Parameter containing:
            tensor([[0.5000, 0.5000],
                    [0.5000, 0.5000]], dtype=fjax.float32, requires_grad=True)
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- conversion ---------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> "Module":
        """Convert every parameter (in place, keeping the object), its grad and every buffer
        (of this module only unless ``recurse``)."""
        with no_grad():
            for module in self.modules() if recurse else (self,):
                for p in module._parameters.values():
                    if p is None:
                        continue
                    p._data = fn(p)._meta  # (pending under eager fusion: no flush per parameter)
                    if p.grad is not None:
                        p.grad = Tensor._wrap(fn(p.grad)._meta)
                for name, b in module._buffers.items():
                    if b is not None:
                        module._buffers[name] = fn(b)
        return self

    def to_global(self, placement=None, sbp=None) -> "Module":
        """OneFlow's ``Module.to_global``: every parameter and buffer becomes a global tensor on
        ``placement`` with ``sbp``, in place (each Parameter stays the same object, so an
        optimizer built before keeps working). Returns the module.

        Example::

            >>> p = fjax.placement("cpu", [0])
            >>> m = nn.Linear(2, 3).to_global(p, fjax.sbp.broadcast)
            >>> m.weight.is_global, m.weight.placement == p
            (True, True)
            >>> m.to_local().weight.is_global
            False
        """
        for t in self._global_state():
            t._data = t.detach().to_global(placement, sbp)._data
            t._vc[0] += 1
        return self

    def to_local(self) -> "Module":
        """OneFlow's ``Module.to_local``: every global parameter and buffer becomes this
        process's local piece of it, in place. Returns the module.

        Example:
            >>> m = nn.Linear(2, 3).to_global(fjax.placement("cpu", [0]), fjax.sbp.broadcast)
            >>> m.to_local().weight.is_global
            False
        """
        for t in self._global_state():
            if t.is_global:
                t._data = t.detach().to_local()._data
                t._vc[0] += 1
        return self

    def _global_state(self) -> list:
        return [*self.parameters(), *self.buffers()]

    def to(self, *args, **kwargs) -> "Module":
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)`` or ``to(tensor)``.

        A dtype converts only floating point parameters and buffers, as in torch.

        Args:
            args: a device, a dtype, both, or a tensor whose device and dtype to take.
            kwargs: ``device=``, ``dtype=``; ``non_blocking=`` and ``memory_format=`` are accepted
                (XLA lays arrays out itself: ``channels_last`` leaves the values and strides as they are).

        Returns:
            This module, converted in place.

        Example:
            >>> m = nn.Linear(2, 2).to(fjax.float64)
            >>> m.weight.dtype
            fjax.float64
        """
        dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        memory_format = kwargs.pop("memory_format", None)
        if kwargs:
            raise NotImplementedError(f"Module.to: unsupported arguments {sorted(kwargs)}")
        if memory_format is not None and not isinstance(memory_format, _dt.memory_format):
            raise TypeError(f"Module.to: memory_format must be a fjax.memory_format, got {memory_format!r}")
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, (str, _device)):
                device = a
            else:
                dtype = a
        if dtype is not None:
            dtype = _dt.to_dtype(dtype)
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError(
                    f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}"
                )

        def convert(t: Tensor) -> Tensor:
            if dtype is not None and (t.is_floating_point() or t.is_complex()):
                t = t.to(dtype)
            return t if device is None else t.to(device)

        return self._apply(convert)

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Move parameters and buffers to ``device`` without copying their values (torch's
        ``to_empty``): typically to give a module built on the ``meta`` device real storage.

        The new values are uninitialised in torch; fjax fills them with zeros (see ``fjax.empty``).
        Parameters stay the same objects (and keep ``requires_grad``). ``recurse=False`` moves
        this module's own parameters and buffers only.

        Example::

            >>> m = nn.Linear(3, 2, device="meta")
            >>> m.weight.is_meta
            True
            >>> m.to_empty(device="cpu").weight.is_meta, m.weight.shape
            (False, fjax.Size([2, 3]))
        """
        from ..creation import empty_like

        if isinstance(device, int) and not isinstance(device, bool):
            device = _device("cuda", device)
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def _cast(self, dtype) -> "Module":
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self) -> "Module":
        """Cast floating-point parameters and buffers to ``fjax.float32`` in place; returns the module.

        Example:
            >>> nn.Linear(2, 2).float().weight.dtype
            fjax.float32
        """
        return self._cast(_dt.float32)

    def double(self) -> "Module":
        """Cast floating-point parameters and buffers to ``fjax.float64`` in place; returns the module.

        Example:
            >>> nn.Linear(2, 2).double().weight.dtype
            fjax.float64
        """
        return self._cast(_dt.float64)

    def half(self) -> "Module":
        """Cast floating-point parameters and buffers to ``fjax.float16`` in place; returns the module.

        Example:
            >>> nn.Linear(2, 2).half().weight.dtype
            fjax.float16
        """
        return self._cast(_dt.float16)

    def bfloat16(self) -> "Module":
        """Cast floating-point parameters and buffers to ``fjax.bfloat16`` in place; returns the module.

        Example:
            >>> nn.Linear(2, 2).bfloat16().weight.dtype
            fjax.bfloat16
        """
        return self._cast(_dt.bfloat16)

    def type(self, dst_type) -> "Module":
        """Cast every parameter and buffer to ``dst_type`` in place; returns the module.

        Args:
            dst_type: the dtype.

        Example:
            >>> nn.Linear(2, 2).type(fjax.float64).bias.dtype
            fjax.float64
        """
        return self._apply(lambda t: t.to(dst_type))

    def cpu(self) -> "Module":
        """Move every parameter and buffer to the CPU in place; returns the module.

        Example:
            >>> nn.Linear(2, 2).cpu().weight.device
            device(type='cpu')
        """
        return self._apply(lambda t: t.to("cpu"))

    def cuda(self, device: int | None = None) -> "Module":
        """Move every parameter and buffer to a CUDA device in place; returns the module.

        Args:
            device: the CUDA device index; the current one by default.

        Example:
            >>> nn.Linear(2, 2).cuda().weight.is_cuda  # doctest: +SKIP
            True
        """
        return self._apply(lambda t: t.cuda(device))

    # -- state_dict ---------------------------------------------------------------------
    def state_dict(self, *, destination: dict | None = None, prefix: str = "", keep_vars: bool = False) -> dict:
        """Parameters and persistent buffers by dotted name (``'fc.weight'``), as torch names them.

        Values are detached tensors sharing the module's values (``keep_vars`` keeps the objects).

        Args:
            destination: a dict to fill and return instead of a new ``OrderedDict``.
            prefix: prepended to every key.
            keep_vars: give the parameters themselves instead of detached aliases.

        Example:
            >>> sd = nn.Linear(3, 2).state_dict()
            >>> {k: tuple(v.shape) for k, v in sd.items()}
            {'weight': (2, 3), 'bias': (2,)}
        """
        out = OrderedDict() if destination is None else destination
        if not _has_state_hooks(self, ("_state_dict_pre_hooks", "_state_dict_hooks")):
            for key, (module, registry, name) in self._state_entries(prefix).items():
                value = getattr(module, registry)[name]
                out[key] = value if keep_vars else value.detach()
            if destination is None:
                out._metadata = OrderedDict()
            if hasattr(out, "_metadata"):  # torch's: each module's version, by its prefix
                _versions(self, prefix[:-1], out._metadata)
            return out
        # torch's recursion: pre-hooks, own entries, submodules, then post-hooks (with prefixes)
        local_metadata = {"version": getattr(type(self), "_version", 1)}
        if destination is None:
            out._metadata = OrderedDict()
        if hasattr(out, "_metadata"):
            out._metadata[prefix[:-1]] = local_metadata
        for hook in list(self.__dict__.get("_state_dict_pre_hooks", {}).values()):
            hook(self, prefix, keep_vars)
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                out[prefix + name] = b if keep_vars else b.detach()
        if _extra(self, "get_extra_state"):
            out[prefix + _EXTRA_STATE] = self.get_extra_state()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination=out, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in list(self.__dict__.get("_state_dict_hooks", {}).values()):
            result = hook(self, out, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                out = result
        return out

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False):
        """Copy values from ``state_dict`` into this module's parameters and buffers.

        Values are fjax Tensors (numpy and jax arrays are accepted too); each is cast to the
        dtype (and moved to the device) of the tensor it replaces, unless ``assign``.

        Returns:
            ``(missing_keys, unexpected_keys)``, a named tuple shown as ``<All keys matched successfully>``
            when both are empty, as in torch.

        Raises:
            OpError: naming every missing or unexpected key (when ``strict``) and every key
                whose value is not a tensor or whose shape differs from the module's (always), as torch does.

        Args:
            state_dict: the values by key, as ``state_dict()`` gives them.
            strict: whether missing or unexpected keys raise.
            assign: keep the given tensors' dtype and device instead of the module's.

        Example:
            >>> a, b = nn.Linear(2, 2), nn.Linear(2, 2)
            >>> b.load_state_dict(a.state_dict())
            <All keys matched successfully>
            >>> bool((a.weight == b.weight).all())
            True
        """
        if not hasattr(state_dict, "items"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        targets = self._state_entries()
        if _has_state_hooks(self, ("_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")):
            return self._load_state_dict_hooked(state_dict, targets, strict, assign)
        metadata = getattr(state_dict, "_metadata", None) or {}
        missing = [
            k
            for k, (module, _, name) in targets.items()
            if k not in state_dict and not _old_norm_default(module, name, metadata.get(k[: -len(name) - 1], {}))
        ]
        unexpected = _in_torch_order(self, [k for k in state_dict if k not in targets])
        errors = []
        updates = []
        for key, (module, registry, name) in targets.items():
            if key not in state_dict:
                continue
            current = getattr(module, registry)[name]
            value, error = _loadable(key, current, state_dict[key])
            if error is not None:
                errors.append(error)
                continue
            updates.append((module, registry, name, current, value, key))
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise OpError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        with no_grad():
            for module, registry, name, current, value, key in updates:
                _load_one(module, registry, name, current, value, assign, key, self)
        return _IncompatibleKeys(missing, unexpected)

    def _load_state_dict_hooked(self, state_dict, targets: dict, strict: bool, assign: bool):
        """``load_state_dict`` when a module in the tree has load hooks, in torch's order: per
        module (pre-order), its pre-hooks on its part of the dict (the root's: a copy of the
        whole), then its own keys; its post-hooks after its submodules, seeing the missing and
        unexpected keys found so far (which they may edit); strict errors are raised last, after
        the loading, as torch does."""
        metadata = getattr(state_dict, "_metadata", None)
        error_msgs: list = []
        missing: list = []
        unexpected: list = []

        def load(module, local, prefix):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            for hook in list(module.__dict__.get("_load_state_dict_pre_hooks", {}).values()):
                hook(local, prefix, local_metadata, True, missing, unexpected, error_msgs)
            own = {}
            for name, p in module._parameters.items():
                if p is not None:
                    own[name] = "_parameters"
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent_buffers_set:
                    own[name] = "_buffers"
            for name, registry in own.items():
                key = prefix + name
                if key not in local:
                    if not _old_norm_default(module, name, local_metadata):
                        missing.append(key)
                    continue
                current = getattr(module, registry)[name]
                value, error = _loadable(key, current, local[key])
                if error is not None:
                    error_msgs.append(error)
                    continue
                with no_grad():
                    _load_one(module, registry, name, current, value, assign, key, self)
            extra = _extra(module, "set_extra_state")
            if extra:
                if prefix + _EXTRA_STATE in local:
                    module.set_extra_state(local[prefix + _EXTRA_STATE])
                else:
                    missing.append(prefix + _EXTRA_STATE)
            for key in local:
                if key.startswith(prefix):
                    head = key[len(prefix) :].split(".", 1)
                    if (len(head) > 1 and head[0] not in module._modules) or (
                        len(head) == 1 and head[0] not in own and not (extra and head[0] == _EXTRA_STATE)
                    ):
                        unexpected.append(key)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local.items() if k.startswith(child_prefix)}, child_prefix)
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in list(module.__dict__.get("_load_state_dict_post_hooks", {}).values()):
                if hook(module, keys) is not None:
                    raise RuntimeError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not expected to return "
                        "new values, if incompatible_keys need to be modified, it should be done inplace."
                    )

        local = OrderedDict(state_dict)
        if metadata is not None:
            local._metadata = metadata
        load(self, local, "")
        if strict:
            if unexpected:
                error_msgs.insert(
                    0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". "
                )
            if missing:
                error_msgs.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if error_msgs:
            raise OpError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(error_msgs))
        return _IncompatibleKeys(missing, unexpected)

    def _add_state_hook(self, registry: str, hook: Callable) -> RemovableHandle:
        hooks = self.__dict__.get(registry)
        if hooks is None:
            hooks = self.__dict__[registry] = OrderedDict()
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, prefix, keep_vars)``, called by ``state_dict()`` before this
        module's entries are gathered (for a submodule: with its key prefix, ``'fc.'``).

        Args:
            hook: the callable; its return value is ignored.

        Example:
            >>> m = nn.Sequential(nn.Linear(2, 2))
            >>> seen = []
            >>> h = m[0].register_state_dict_pre_hook(lambda mod, prefix, keep_vars: seen.append(prefix))
            >>> _ = m.state_dict()
            >>> seen
            ['0.']
            >>> h.remove()
        """
        return self._add_state_hook("_state_dict_pre_hooks", hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, state_dict, prefix, local_metadata)``, called by ``state_dict()``
        after this module and its submodules filled ``state_dict``; it may edit the dict in place
        and must return None.

        Args:
            hook: the callable.

        Example:
            >>> m = nn.Linear(2, 2)
            >>> def drop_bias(mod, sd, prefix, meta):
            ...     del sd[prefix + "bias"]
            >>> h = m.register_state_dict_post_hook(drop_bias)
            >>> list(m.state_dict())
            ['weight']
        """
        hook._from_public_api = True
        return self._add_state_hook("_state_dict_hooks", hook)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """torch's older private form of :meth:`register_state_dict_post_hook`: the hook may
        return a new dict, which replaces the one being built.

        Args:
            hook: ``hook(module, state_dict, prefix, local_metadata) -> dict or None``.

        Example:
            >>> m = nn.Linear(2, 2)
            >>> h = m._register_state_dict_hook(lambda mod, sd, prefix, meta: {k.upper(): v for k, v in sd.items()})
            >>> list(m.state_dict())
            ['WEIGHT', 'BIAS']
        """
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError(
                "Cannot register the same function as the state dict post hook that was previously "
                "registered via register_state_dict_post_hook"
            )
        return self._add_state_hook("_state_dict_hooks", hook)

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False) -> RemovableHandle:
        """Register ``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` (with ``module`` first when ``with_module``), called by ``load_state_dict``
        before this module takes its values; it may edit ``state_dict`` (this module's part) in place.

        Args:
            hook: the callable.
            with_module: pass the module as the hook's first argument.

        Example:
            >>> m = nn.Linear(2, 2)
            >>> def rename(sd, prefix, *rest):
            ...     sd[prefix + "weight"] = sd.pop(prefix + "w")
            >>> h = m._register_load_state_dict_pre_hook(rename)
            >>> m.load_state_dict({"w": fjax.ones(2, 2), "bias": fjax.zeros(2)})
            <All keys matched successfully>
        """
        if with_module:
            module, inner = self, hook

            def hook(*args):
                return inner(module, *args)

        return self._add_state_hook("_load_state_dict_pre_hooks", hook)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)``, called by ``load_state_dict`` before this module takes
        its values; it may edit ``state_dict`` (this module's part) in place.

        Args:
            hook: the callable; its return value is ignored.

        Example:
            >>> m = nn.Sequential(nn.Linear(2, 2))
            >>> seen = []
            >>> h = m[0].register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest: seen.append(sorted(sd)))
            >>> m.load_state_dict(m.state_dict())
            <All keys matched successfully>
            >>> seen
            [['0.bias', '0.weight']]
        """
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(module, incompatible_keys)``, called by ``load_state_dict`` after this
        module and its submodules loaded; it may edit ``incompatible_keys.missing_keys`` and
        ``.unexpected_keys`` in place (before the strict check) and must return None.

        Args:
            hook: the callable.

        Example:
            >>> m = nn.Linear(2, 2)
            >>> h = m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
            >>> m.load_state_dict({"weight": fjax.ones(2, 2)})
            <All keys matched successfully>
        """
        return self._add_state_hook("_load_state_dict_post_hooks", hook)

    def _state_entries(self, prefix: str = "") -> dict:
        """``{state_dict key: (module, registry name, attribute name)}``; shared modules appear
        under every name, as in torch."""
        entries = {}
        for module_prefix, module in self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False):
            head = module_prefix + "." if module_prefix else ""
            for name, p in module._parameters.items():
                if p is not None:
                    entries[head + name] = (module, "_parameters", name)
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent_buffers_set:
                    entries[head + name] = (module, "_buffers", name)
        return entries

    # -- printing -----------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses; layers override it (``in_features=3, ...``).

        Example:
            >>> nn.Linear(3, 2).extra_repr()
            'in_features=3, out_features=2, bias=True'
        """
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): {_addindent(repr(module), 2)}" for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


class _HookIdentity(Function):
    """An identity over the tensors of a module's inputs (or outputs) whose backward hands their
    gradients to a ``_BackwardHook``: the tape node where torch's module backward hooks fire."""

    @staticmethod
    def forward(ctx, state, side, *tensors):
        ctx.state, ctx.side = state, side
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        if ctx.side == "outputs":
            return (None, None, *ctx.state.on_outputs(grads))
        return (None, None, *ctx.state.on_inputs(grads))


class _BackwardHook:
    """One module call's backward hooks (torch's ``BackwardHook``): the gradients reaching the
    module's outputs go through the pre-hooks, and once those of its inputs are computed the
    hooks get ``(module, grad_input, grad_output)`` and may replace ``grad_input``."""

    def __init__(self, module: Module, hooks: list, pre_hooks: list):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.input_idx = self.output_idx = None
        self.reached: set = set()
        self.plain_inputs: list = []

    def _wrap(self, values: tuple, side: str):
        idx = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]
        if not idx:
            return values, None
        new = _HookIdentity.apply(self, side, *[values[i] for i in idx])
        out = list(values)
        for k, (i, t) in enumerate(zip(idx, new)):
            out[i] = t
            if side == "outputs":
                t.register_hook(lambda g, k=k: self.reached.add(k))  # an output's gradient arrived
        return tuple(out), idx

    def setup_inputs(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        args, self.input_idx = self._wrap(args, "inputs")
        if self.input_idx is not None:
            self.plain_inputs = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor) and not a.requires_grad]
        return args

    def setup_outputs(self, result):
        single = not isinstance(result, tuple)
        if single and not isinstance(result, Tensor):
            warnings.warn(
                f"{type(self.module).__name__}: backward hooks are called only for a module whose output is "
                f"a Tensor or a tuple of Tensors, got {type(result).__name__}",
                stacklevel=3,
            )
            return result
        values = (result,) if single else result
        self.n_outputs = len(values)
        values, self.output_idx = self._wrap(values, "outputs")
        return values[0] if single else values

    @staticmethod
    def _pack(idx: list, values, n: int) -> tuple:
        full = [None] * n
        for i, v in zip(idx, values):
            full[i] = v
        return tuple(full)

    def on_outputs(self, grads: tuple) -> tuple:
        grads = tuple(g if k in self.reached else None for k, g in enumerate(grads))
        self.reached = set()
        grad_outputs = self._pack(self.output_idx, grads, self.n_outputs)
        name = type(self.module).__name__
        for hook in self.pre_hooks:
            out = hook(self.module, grad_outputs)
            if out is None:
                continue
            out = (out,) if isinstance(out, Tensor) else tuple(out)
            if len(out) != len(grad_outputs):
                raise RuntimeError(
                    f"{name}: a backward pre-hook returned {len(out)} grad_output entries, expected {len(grad_outputs)}"
                )
            grad_outputs = out
        if self.input_idx is None:  # no input requires grad: the hooks fire now
            warnings.warn(
                f"{name}: full backward hook fired with the output gradients because no input requires grad",
                stacklevel=2,
            )
            nothing = (None,) * self.n_inputs
            for hook in self.hooks:
                out = hook(self.module, nothing, grad_outputs)
                if out is not None and not all(g is None for g in out):
                    raise RuntimeError(
                        f"{name}: a backward hook of a module none of whose inputs requires grad "
                        "must return None (or all None)"
                    )
        else:
            self.grad_outputs = grad_outputs
        return tuple(grad_outputs[i] for i in self.output_idx)

    def on_inputs(self, grads: tuple) -> tuple:
        if self.grad_outputs is None:  # the gradient reached the inputs without passing the outputs
            return grads
        grad_inputs = list(self._pack(self.input_idx, grads, self.n_inputs))
        for i, t in self.plain_inputs:  # a tensor input that does not require grad: zeros, as torch
            grad_inputs[i] = _zeros_like(t)
        grad_inputs = tuple(grad_inputs)
        for hook in self.hooks:
            out = hook(self.module, grad_inputs, self.grad_outputs)
            if out is None:
                continue
            out = (out,) if isinstance(out, Tensor) else tuple(out)
            if len(out) != len(grad_inputs):
                raise RuntimeError(
                    f"{type(self.module).__name__}: a backward hook returned {len(out)} grad_input entries, "
                    f"expected {len(grad_inputs)}"
                )
            grad_inputs = out
        self.grad_outputs = None
        return tuple(grad_inputs[i] for i in self.input_idx)


def _has_state_hooks(root: Module, registries: tuple) -> bool:
    """Whether ``root`` or a submodule has a hook in one of ``registries``, or extra state
    (``get_extra_state``/``set_extra_state`` overridden): the fast paths skip those."""
    return any(
        any(m.__dict__.get(r) for r in registries) or _extra(m, "get_extra_state") or _extra(m, "set_extra_state")
        for m in root.modules()
    )


def _extra(module: Module, method: str) -> bool:
    """Whether ``module``'s class overrides ``method`` (torch's extra-state protocol)."""
    return getattr(type(module), method) is not getattr(Module, method)


def _loadable(key: str, current: Tensor, value) -> tuple:
    """``(value to load, None)``, or ``(None, torch's message naming key)`` where ``value`` cannot
    be loaded into ``current``: not a tensor (or numpy/jax array), or of another shape. A value of
    shape (1,) for a 0-d entry loads its element (torch's rule for old checkpoints)."""
    if not isinstance(value, Tensor) and not all(hasattr(value, a) for a in ("shape", "dtype", "__array__")):
        return None, (
            f'While copying the parameter named "{key}", expected fjax.Tensor or Tensor-like object from '
            f"checkpoint but received {type(value)}"
        )
    if isinstance(current, UninitializedTensorMixin) and not isinstance(value, UninitializedTensorMixin):
        current.materialize(_shape(value))  # a lazy module's parameter takes the loaded shape
    elif not current.shape and _shape(value) == (1,):
        value = value[0]
    if _shape(value) != tuple(current.shape):
        return None, (
            f"size mismatch for {key}: copying a param with shape {Size(_shape(value))!r} from checkpoint, "
            f"the shape in current model is {Size(current.shape)!r}."
        )
    return value, None


def _versions(module: Module, prefix: str, metadata: dict) -> None:
    metadata[prefix] = {"version": getattr(type(module), "_version", 1)}
    for name, child in module._modules.items():
        if child is not None:
            _versions(child, f"{prefix}.{name}" if prefix else name, metadata)


def _old_norm_default(module: Module, name: str, local_metadata: dict) -> bool:
    """torch's norm layers (``_version`` 2) load a checkpoint older than version 2 without its
    ``num_batches_tracked``: the buffer keeps its value and is not reported missing."""
    version = local_metadata.get("version")
    return (
        name == "num_batches_tracked"
        and getattr(type(module), "_version", 1) >= 2
        and getattr(module, "track_running_stats", False)
        and (version is None or version < 2)
    )


def _in_torch_order(root: Module, keys: list) -> list:
    """Unexpected keys in the order torch finds them: by the module (pre-order) whose own
    entries they would be, then in the state dict's order."""
    order: dict = {}

    def walk(module, prefix):
        order.setdefault(prefix, len(order))
        for name, child in module._modules.items():
            if child is not None:
                walk(child, prefix + name + ".")

    walk(root, "")

    def owner(key):
        parts, module, prefix = key.split("."), root, ""
        for part in parts[:-1]:
            child = module._modules.get(part)
            if child is None:
                break
            module, prefix = child, prefix + part + "."
        return order.get(prefix, 0)

    return sorted(keys, key=owner)


def _load_one(
    module: Module, registry: str, name: str, current: Tensor, value, assign: bool, key: str = "", root=None
) -> None:
    try:
        _copy_in(module, registry, name, current, value, assign)
    except Exception as ex:
        raise OpError(
            f"Error(s) in loading state_dict for {type(root or module).__name__}:\n\tWhile copying the parameter "
            f'named "{key or name}", whose dimensions in the model are {Size(current.shape)!r} and whose dimensions '
            f"in the checkpoint are {Size(_shape(value))!r}, an exception occurred : {ex.args}."
        ) from ex


def _copy_in(module: Module, registry: str, name: str, current: Tensor, value, assign: bool) -> None:
    if assign:
        new = value if isinstance(value, Tensor) else _tensor(value)
        if registry == "_parameters":
            new = Parameter(new, requires_grad=current.requires_grad)
        getattr(module, registry)[name] = new
        return
    new = value if isinstance(value, Tensor) else _tensor(value, dtype=current.dtype)
    current._set_(new.to(current.device, current.dtype), "load_state_dict")
