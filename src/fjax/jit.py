"""``torch.jit``: the TorchScript front end that model code calls, on fjax's eager runtime.

TorchScript compiles Python to its own interpreter's graphs; fjax runs the same Python eagerly,
where eager fusion (``fjax.config.eager_fusion``) compiles a sequence of ops that repeats into
one XLA program, and ``fjax.compile`` turns a function or module into one program on request.
So ``script`` and ``trace`` return what they are given, and the results are the eager ones:

- ``script(fn_or_module)`` returns it unchanged; ``trace(fn_or_module, example_inputs)`` runs it
  once on the example inputs (as torch does, so a broken model fails at the trace) and returns
  it unchanged;
- the decorators model code wears (``ignore``, ``unused``, ``export``, ``interface``,
  ``script_method``, ``_overload_method``) return the function; ``is_scripting()`` and
  ``is_tracing()`` are False; ``annotate(type, value)`` is ``value``; ``Final`` is
  ``typing.Final``;
- ``fork``/``wait`` run the function at ``fork`` and hand its result back at ``wait``;
- ``save``/``load`` (TorchScript archives) raise NotImplementedError: save a ``state_dict`` with
  ``fjax.save`` instead.

Example::

    >>> @fjax.jit.script
    ... def gelu(x):
    ...     return x * 0.5 * (1.0 + fjax.erf(x / 1.41421))
    >>> m = fjax.jit.trace(fjax.nn.Linear(3, 2), fjax.ones(1, 3))
    >>> isinstance(m, fjax.nn.Linear), fjax.jit.is_scripting(), gelu(fjax.zeros(2)).tolist()
    (True, False, [0.0, 0.0])
"""

from __future__ import annotations

import builtins
import contextlib
import typing
import warnings

from .nn import Module

__all__ = [
    "Attribute",
    "Error",
    "Final",
    "Future",
    "ScriptFunction",
    "ScriptModule",
    "TracerWarning",
    "annotate",
    "enable_onednn_fusion",
    "export",
    "fork",
    "freeze",
    "fuser",
    "ignore",
    "interface",
    "is_scripting",
    "is_tracing",
    "isinstance",
    "load",
    "onednn_fusion_enabled",
    "optimize_for_inference",
    "save",
    "script",
    "script_if_tracing",
    "script_method",
    "set_fusion_strategy",
    "strict_fusion",
    "trace",
    "trace_module",
    "unused",
    "wait",
]

Final = typing.Final


class Error(RuntimeError):
    """torch.jit.Error: what a scripted ``raise`` raises in TorchScript."""


class TracerWarning(Warning):
    """torch.jit.TracerWarning: programs filter it (``warnings.filterwarnings("ignore",
    category=torch.jit.TracerWarning)``); fjax's ``trace`` never issues it."""


class ScriptModule(Module):
    """torch.jit.ScriptModule: a Module. fjax's ``script``/``trace`` return the module they are
    given, so ``isinstance(m, ScriptModule)`` is False for those; a class that derives from it
    (with ``@script_method`` methods) is a plain Module."""


class ScriptFunction:
    """torch.jit.ScriptFunction, for ``isinstance`` checks: fjax's ``script`` returns the function
    it is given, never one of these."""


def script(obj=None, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """torch.jit.script: ``obj`` (a function, a Module or a class) unchanged, run eagerly.

    Example::

        >>> f = fjax.jit.script(lambda x: x + 1)
        >>> f(fjax.ones(1)).tolist()
        [2.0]
    """
    if optimize is not None:
        warnings.warn("fjax.jit.script: `optimize` is deprecated and ignored", FutureWarning, stacklevel=2)
    return obj


def script_if_tracing(fn):
    """torch.jit.script_if_tracing: ``fn`` unchanged."""
    return fn


def trace(
    func,
    example_inputs=None,
    optimize=None,
    check_trace: bool = True,
    check_inputs=None,
    check_tolerance: float = 1e-5,
    strict: bool = True,
    _force_outplace: bool = False,
    _module_class=None,
    _compilation_unit=None,
    example_kwarg_inputs=None,
    _store_inputs: bool = True,
):
    """torch.jit.trace: runs ``func`` once on ``example_inputs`` (a tuple of positional arguments,
    or one tensor) or ``example_kwarg_inputs`` (a dict), without recording gradients, and returns
    ``func`` unchanged: fjax does not freeze its Python control flow into a graph.

    Example::

        >>> m = fjax.nn.Linear(3, 2)
        >>> fjax.jit.trace(m, fjax.ones(4, 3)) is m
        True
    """
    from .autograd import grad_mode

    if example_inputs is None and example_kwarg_inputs is None:
        raise TypeError("fjax.jit.trace: give example_inputs (a tuple of arguments) or example_kwarg_inputs (a dict)")
    args = (
        example_inputs
        if builtins.isinstance(example_inputs, tuple)
        else ()
        if example_inputs is None
        else (example_inputs,)
    )
    with grad_mode.no_grad():
        func(*args, **(example_kwarg_inputs or {}))
    return func


def trace_module(mod, inputs: dict, **kwargs):
    """torch.jit.trace_module: runs each named method of ``mod`` once on its example inputs and
    returns ``mod`` unchanged."""
    from .autograd import grad_mode

    with grad_mode.no_grad():
        for name, example in inputs.items():
            getattr(mod, name)(*(example if builtins.isinstance(example, tuple) else (example,)))
    return mod


def _identity_decorator(fn=None, **kwargs):
    if fn is None or kwargs:  # used as @ignore(drop=True)
        return lambda f: f
    return fn


def ignore(drop=False, **kwargs):
    """torch.jit.ignore: the function, unchanged (``@ignore`` and ``@ignore(drop=True)``)."""
    return drop if callable(drop) else (lambda fn: fn)


unused = _identity_decorator
export = _identity_decorator
interface = _identity_decorator
script_method = _identity_decorator
_overload_method = _identity_decorator
_overload = _identity_decorator


def is_scripting() -> bool:
    """torch.jit.is_scripting: False, code never runs under TorchScript here."""
    return False


def is_tracing() -> bool:
    """torch.jit.is_tracing: False, ``trace`` runs the function as eager Python."""
    return False


def annotate(the_type, the_value):
    """torch.jit.annotate: ``the_value``."""
    return the_value


def Attribute(value, type=None):  # noqa: N802 - torch's name
    """torch.jit.Attribute: ``value``."""
    return value


def isinstance(obj, target_type) -> bool:  # noqa: A001 - torch.jit.isinstance
    """torch.jit.isinstance: Python's ``isinstance`` for plain classes; for ``typing`` generics
    (``List[int]``, ``Dict[str, Tensor]``) it checks the container and each element."""
    origin = typing.get_origin(target_type)
    if origin is None:
        return builtins.isinstance(obj, target_type)
    args = typing.get_args(target_type)
    if origin is typing.Union:
        return any(isinstance(obj, a) for a in args)
    if not builtins.isinstance(obj, origin):
        return False
    if origin in (list, set, frozenset) and args:
        return all(isinstance(v, args[0]) for v in obj)
    if origin is tuple and args:
        return len(obj) == len(args) and all(isinstance(v, a) for v, a in zip(obj, args))
    if origin is dict and args:
        return all(isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    return True


class Future:
    """torch.jit.Future, as ``fork`` returns it: the function already ran; ``wait()`` gives its
    result (or raises its error)."""

    def __init__(self, fn, args, kwargs):
        try:
            self._value, self._error = fn(*args, **kwargs), None
        except Exception as err:  # raised at wait(), as torch's fork raises it
            self._value, self._error = None, err

    def wait(self):
        if self._error is not None:
            raise self._error
        return self._value

    def done(self) -> bool:
        return True


def fork(func, *args, **kwargs) -> Future:
    """torch.jit.fork: runs ``func(*args, **kwargs)`` now; ``wait`` returns its result."""
    return Future(func, args, kwargs)


def wait(future: Future):
    """torch.jit.wait: the result of ``fork``'s call."""
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """torch.jit.freeze: ``mod`` unchanged (its parameters are already the program's inputs)."""
    return mod


def optimize_for_inference(mod, other_methods=None):
    """torch.jit.optimize_for_inference: ``mod`` unchanged."""
    return mod


_onednn = [False]


def enable_onednn_fusion(enabled: bool) -> None:
    """torch.jit.enable_onednn_fusion: kept and read back; XLA decides fusion."""
    _onednn[0] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    return _onednn[0]


def set_fusion_strategy(strategy):
    """torch.jit.set_fusion_strategy: returns the previous strategy; XLA decides fusion."""
    previous, _strategy[0] = _strategy[0], list(strategy)
    return previous


_strategy = [[("STATIC", 2), ("DYNAMIC", 10)]]


@contextlib.contextmanager
def fuser(name):
    """torch.jit.fuser: a context that changes nothing (XLA fuses)."""
    if name not in ("fuser0", "fuser1", "fuser2", "fuser3", "none"):
        raise ValueError(f"fjax.jit.fuser: unrecognized fuser option {name!r}")
    yield


class strict_fusion:  # noqa: N801 - torch's name
    """torch.jit.strict_fusion: a context that checks nothing (XLA fuses)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def save(m, f, _extra_files=None) -> None:
    """torch.jit.save writes a TorchScript archive, which fjax cannot produce: raises
    NotImplementedError. Save the weights with ``fjax.save(m.state_dict(), f)``."""
    raise NotImplementedError(
        "fjax.jit.save: TorchScript archives are not supported; save the weights with "
        "fjax.save(module.state_dict(), f) and load them into the same module class"
    )


def load(f, map_location=None, _extra_files=None, _restore_shapes: bool = False):
    """torch.jit.load reads a TorchScript archive (a program in TorchScript's IR), which fjax
    cannot run: raises NotImplementedError."""
    raise NotImplementedError(
        "fjax.jit.load: TorchScript archives are not supported; load a state_dict with fjax.load "
        "into the module's Python class instead"
    )
