"""``fjax.compile`` (``torch.compile``) and the ``torch.compiler`` functions programs call.

A compiled function runs as one XLA program per input signature (shapes, dtypes, Python
values, structure): the call is traced to a program along the same path as fjax's functional
transforms (``_transforms/pipeline.py``: trace, key by the program, compile once, reuse while the
function's guards hold), and recorded on the tape as **one node** whose backward is JAX's VJP of
the whole program, so ``loss.backward()`` and optimizers work as on the eager function. In-place
updates of tensors that live outside the call (a BatchNorm's running statistics) are outputs of
the program and written back after it.

Python that cannot be traced — a tensor's value read on the host (``.item()``, ``if x > 0``,
``.numpy()``), data-dependent shapes — is a *graph break*: the function then runs eagerly from
that call on, with one warning naming the line; ``fullgraph=True`` raises instead, naming it.
"""

from __future__ import annotations

import functools
import traceback
import warnings
from pathlib import Path
from typing import Any, Callable

import jax
from jax import tree_util

from ._tracing import modules_changed, trace_state
from ._transforms import call as _call
from ._transforms import executable, guards, pipeline
from ._transforms import program as _program
from .errors import OpError
from .nn import Module
from .nn import module as _module
from .tensor import _GENERATIONS, Storage, Tensor

__all__ = [
    "FailOnRecompileLimitHit",
    "GraphBreak",
    "OptimizedModule",
    "allow_in_graph",
    "assume_constant_result",
    "compile",
    "disable",
    "is_compiling",
    "reset",
]

_BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs", "xla", "openxla", "jax")
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_SRC = str(Path(__file__).parent)
_state = {"compiling": 0, "epoch": 0}


class _DynamoConfig:
    """``torch._dynamo.config``: settings are kept and read back; fjax's compiler reads
    ``recompile_limit`` (the default of ``fjax.compile``'s), no other."""

    def __init__(self):
        self.__dict__.update(
            suppress_errors=False, recompile_limit=8, cache_size_limit=8, verbose=False, optimize_ddp=True
        )


dynamo_config = _DynamoConfig()  # torch._dynamo.config


class GraphBreak(RuntimeError):
    """``fullgraph=True`` and the function has Python that cannot be traced (names the line)."""


class FailOnRecompileLimitHit(RuntimeError):
    """``fullgraph=True`` and a new input signature would pass the recompile limit."""


def _user_line(err: BaseException) -> str:
    """The innermost frame of ``err``'s traceback (or its cause's) outside fjax and jax."""
    for e in (err, err.__cause__, err.__context__):
        if e is None:
            continue
        frames = [
            f
            for f in traceback.extract_tb(e.__traceback__)
            if not f.filename.startswith(_SRC) and "/jax/" not in f.filename and "/jaxlib/" not in f.filename
        ]
        if frames:
            f = frames[-1]
            return f"{f.filename}:{f.lineno} ({(f.line or '').strip()})"
    return "<unknown line>"


class _Compiled:
    """The compiled callable ``fjax.compile`` returns for a function (or a module's call)."""

    def __init__(self, fn: Callable, fullgraph: bool, dynamic, name: str, recompile_limit: int | None = None):
        self.fn, self.fullgraph, self.dynamic, self.name = fn, fullgraph, dynamic, name
        self.recompile_limit = recompile_limit
        self.signatures: set = set()  # the input signatures compiled so far
        self.eager_reason: str | None = None  # set at the first graph break or past the recompile limit
        self.epoch = _state["epoch"]
        functools.update_wrapper(self, fn, updated=())

    def __get__(self, obj, objtype=None):  # as a decorated method
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self.epoch != _state["epoch"]:  # fjax.compiler.reset()
            self.eager_reason, self.epoch = None, _state["epoch"]
            self.signatures.clear()
        if self.eager_reason is not None or trace_state.depth:
            return self.fn(*args, **kwargs)  # inside another trace the function is simply traced
        try:
            return self._run(args, kwargs)
        except _Eager:
            return self.fn(*args, **kwargs)
        except (OpError, TypeError, RuntimeError, ValueError) as err:
            if not _is_break(err):
                raise
            line = _user_line(err)
            reason = str(err).splitlines()[0].removeprefix(f"fjax.compile({self.name}): ")
            if self.fullgraph:
                raise GraphBreak(
                    f"fjax.compile({self.name}, fullgraph=True): graph break at {line}: {reason}"
                ) from None
            self.eager_reason = f"{line}: {reason}"
            warnings.warn(
                f"fjax.compile({self.name}): graph break at {line}; the function runs eagerly from now on ({reason})",
                UserWarning,
                stacklevel=2,
            )
            return self.fn(*args, **kwargs)

    def _run(self, args, kwargs):
        leaves, tree = _call.flatten((args, kwargs))
        inputs = [x for x in leaves if isinstance(x, Tensor)]
        statics = tuple(None if isinstance(x, Tensor) else x for x in leaves)
        box: dict[str, Any] = {}

        def traced(tensors: list[Tensor]) -> list[Tensor]:
            it = iter(tensors)
            a, k = tree_util.tree_unflatten(tree, [next(it) if isinstance(x, Tensor) else x for x in leaves])
            out = self.fn(*a, **k)
            flat, box["out_tree"] = _call.flatten(out)
            box["out_static"] = [None if isinstance(o, Tensor) else o for o in flat]
            written = _written_outside()
            box["written"] = [st for st, _ in written]
            return [o for o in flat if isinstance(o, Tensor)] + [Tensor._wrap(v) for _, v in written]

        where = f"fjax.compile({self.name})"
        avals = [_program.aval(t) for t in inputs]
        self._count((tree, statics, *avals))
        _state["compiling"] += 1
        try:
            result = pipeline.trace(
                (self.fn, statics),
                (where, tree, *avals),
                lambda: _program.trace(traced, avals, where),
                lambda: (box["out_tree"], box["out_static"], box["written"]),
            )
        finally:
            _state["compiling"] -= 1
        out_tree, out_static, written = result.side
        outs = pipeline.finish(where, ("compile",), result, _apply, inputs, record=True)
        n = len(outs) - len(written)
        for obj, t in zip(written, outs[n:]):  # in-place updates of outside tensors, after the program
            _write_back(obj, t._data)
        it = iter(outs[:n])
        return tree_util.tree_unflatten(out_tree, [next(it) if s is None else s for s in out_static])

    def _count(self, signature) -> None:
        """torch's recompile limit: past it the function runs eagerly (raises with fullgraph)."""
        try:
            hash(signature)
        except TypeError:
            return
        if signature in self.signatures:
            return
        limit = dynamo_config.recompile_limit if self.recompile_limit is None else self.recompile_limit
        if len(self.signatures) >= limit:
            text = f"fjax.compile({self.name}): recompile_limit ({limit}) reached by a new input signature"
            if self.fullgraph:
                raise FailOnRecompileLimitHit(text)
            self.eager_reason = text
            warnings.warn(f"{text}; the function runs eagerly from now on", UserWarning, stacklevel=4)
            raise _Eager
        self.signatures.add(signature)


class _Eager(Exception):
    """Raised inside ``_run``: run this call (and later ones) eagerly."""


def _apply(program_fn, *xs):
    return program_fn(*xs)


def _written_outside() -> list:
    """(storage or storage-less tensor, new array) for each that lives outside the trace and was
    written in it (its value before the trace is concrete; those made inside hold tracers)."""
    seen, out = set(), []
    for obj, saved in trace_state.undo:
        name = "array" if isinstance(obj, Storage) else "_a"
        old = dict(saved).get(name)
        if id(obj) in seen or old is None or isinstance(old, jax.core.Tracer):
            continue
        if isinstance(obj, Tensor) and obj._st is not None:
            continue  # written through its storage, which is logged too
        seen.add(id(obj))
        out.append((obj, getattr(obj, name)))
    return out


def _write_back(obj, value) -> None:
    if isinstance(obj, Storage):
        obj.array, obj.gen = value, next(_GENERATIONS)
    else:
        obj._write(value)


def _is_break(err: BaseException) -> bool:
    """Whether ``err`` (raised while tracing) is Python that cannot be traced: a host read or a
    data-dependent shape."""
    text = str(err)
    return (
        isinstance(err, OpError)
        and "reads a tensor's value on the host" in text
        or isinstance(err, (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError))
        or "data-dependent" in text
        or "inside a trace" in text
    )


def compile(  # noqa: A001 - torch's name
    model: Callable | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | Callable | None = None,
    mode: str | None = None,
    options: dict | None = None,
    name: str | None = None,
    disable: bool = False,
    recompile_limit: int | None = None,
    isolate_recompiles: bool = False,
    shapes_spec: Any = None,
):
    """Compile a function or module to one XLA program per input signature (``torch.compile``).

    The forward and its backward are compiled programs recorded as one tape node, so
    ``loss.backward()`` and optimizers work as on the uncompiled code. On a module it returns a
    module that shares the original's parameters (``_orig_mod``, as torch's ``OptimizedModule``).
    Untraceable Python (``.item()``, ``if`` on a tensor's value) runs eagerly after one warning
    naming the line, or raises naming it with ``fullgraph=True``.

    Args:
        model: the function or ``nn.Module``; omitted, ``compile`` returns a decorator.
        fullgraph: raise at a graph break instead of falling back to eager.
        dynamic: accepted for torch's signature; XLA compiles one program per input shape (see
            ``fjax.config`` for bucketed shapes).
        backend: torch's backend name (None: ``"inductor"``; ``"eager"``, ``"aot_eager"``, ...):
            every backend compiles with XLA, except ``"eager"``, which runs the code uncompiled. A
            callable backend raises NotImplementedError.
        mode: torch's mode name; all compile the same XLA program.
        options: torch's inductor options; accepted and ignored (XLA decides).
        name: the name warnings and errors give the compiled region (default: the function's).
        disable: return ``model`` unchanged.
        recompile_limit: how many input signatures (shapes, dtypes, Python values) are compiled
            before the function runs eagerly (``fullgraph=True``: raises FailOnRecompileLimitHit);
            default ``torch._dynamo.config.recompile_limit`` (8).
        isolate_recompiles: accepted for torch's signature: each ``fjax.compile`` call counts its
            own recompiles.
        shapes_spec: only None (torch's experimental shape specifications are not supported).

    Example:
        >>> net = nn.Linear(3, 2)
        >>> fast = fjax.compile(net)
        >>> x = fjax.randn(4, 3)
        >>> bool(fjax.allclose(fast(x), net(x), atol=1e-6))
        True
        >>> fast(x).sum().backward()
        >>> net.weight.grad.shape
        fjax.Size([2, 3])
    """
    if shapes_spec is not None:
        raise NotImplementedError("fjax.compile: shapes_spec is not supported (fjax compiles one program per shape)")
    backend = "inductor" if backend is None else backend
    if callable(backend) and not isinstance(backend, str):
        raise NotImplementedError("fjax.compile: a callable backend is not supported (fjax compiles with XLA)")
    if backend not in _BACKENDS:
        raise ValueError(f"fjax.compile: unknown backend {backend!r}; expected one of {list(_BACKENDS)}")
    if mode not in _MODES:
        raise RuntimeError(f"fjax.compile: unrecognized mode={mode!r}; expected one of {list(_MODES)[1:]}")
    if options is not None and mode is not None:
        raise RuntimeError("fjax.compile: either mode or options can be specified, but both can't be specified")
    if model is None:
        return lambda m: compile(
            m,
            fullgraph=fullgraph,
            dynamic=dynamic,
            backend=backend,
            mode=mode,
            options=options,
            name=name,
            disable=disable,
            recompile_limit=recompile_limit,
        )
    if not callable(model):
        raise TypeError(f"fjax.compile: expected a function or nn.Module, got {type(model).__name__}")
    if disable or backend == "eager":
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, fullgraph, dynamic, name=name, recompile_limit=recompile_limit)
    name = name or getattr(model, "__qualname__", type(model).__name__)
    return _Compiled(model, fullgraph, dynamic, name, recompile_limit)


class OptimizedModule(Module):
    """A module compiled by ``fjax.compile``: calls run the original module (``_orig_mod``, whose
    parameters it shares, so its ``state_dict`` keys start with ``_orig_mod.`` as torch's) as one
    compiled program; other attributes are the original's."""

    def __init__(self, mod: Module, fullgraph: bool = False, dynamic=None, name=None, recompile_limit=None):
        super().__init__()
        self._orig_mod = mod
        compiled = _Compiled(mod, fullgraph, dynamic, name or type(mod).__name__, recompile_limit)
        self.__dict__["_compiled_call"] = compiled

    def forward(self, *args, **kwargs):
        if _backward_hooked(self._modules["_orig_mod"], self.__dict__):  # as torch: the hooks run
            return self._modules["_orig_mod"](*args, **kwargs)
        return self.__dict__["_compiled_call"](*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            modules = self.__dict__.get("_modules")
            if not modules or "_orig_mod" not in modules:  # (a copy being built: no original yet)
                raise
            return getattr(modules["_orig_mod"], name)


class _CompiledCall:
    """``Module.compile``'s hook (the module's ``_graph_call``, which nn.Graph's tracing sets and
    restores around it): ``fjax.compile`` of the module's own call, which calls the module with
    the hook lifted, so its hooks and forward run as written. A copy (``copy.deepcopy``, as
    ``AveragedModel`` makes; pickling) compiles the copied module anew."""

    def __init__(self, mod: Module, args: tuple, kwargs: dict):
        self.mod, self.args, self.kwargs = mod, args, kwargs

        def call_uncompiled(*a, **k):
            d = mod.__dict__
            hook = d.pop("_graph_call", None)
            try:
                return mod(*a, **k)
            finally:
                if hook is not None:
                    d["_graph_call"] = hook

        call_uncompiled.__qualname__ = type(mod).__name__
        self.compiled = compile(call_uncompiled, *args, **kwargs)
        self.eager = self.compiled is call_uncompiled  # disable=True or the eager backend

    def __call__(self, module, args, kwargs):
        return self.compiled(*args, **kwargs)

    def __reduce__(self):
        return _compiled_call, (self.mod, self.args, self.kwargs)


def _compiled_call(mod: Module, args: tuple, kwargs: dict) -> _CompiledCall:
    return _CompiledCall(mod, args, kwargs)


def _compile_in_place(mod: Module, *args, **kwargs) -> None:
    """``Module.compile``: route the module's calls through a ``_CompiledCall``."""
    call = _CompiledCall(mod, args, kwargs)
    if call.eager:
        mod.__dict__.pop("_graph_call", None)
        return
    object.__setattr__(mod, "_graph_call", call)


_module._Above.compile = _compile_in_place


def _backward_hooked(mod: Module, memo: dict) -> bool:
    """Whether ``mod`` or a submodule has backward hooks, or global ones exist (the module's
    call then runs uncompiled, so they see its gradients); re-read only after a module changed."""
    from .nn import module as _module

    version = modules_changed[0]
    if memo.get("_hooks_read") != version:
        memo["_hooks_read"] = version
        memo["_hooked"] = bool(_module._global_backward_hooks or _module._global_backward_pre_hooks) or any(
            m._backward_hooks or m._backward_pre_hooks for m in mod.modules()
        )
    return memo["_hooked"]


def reset() -> None:
    """Forget every compiled program and graph-break decision (``torch.compiler.reset``).

    Example:
        >>> fjax.compiler.reset()
    """
    executable.clear()
    guards.clear()
    _state["epoch"] += 1


def disable(fn: Callable | None = None, recursive: bool = True):
    """Run ``fn`` uncompiled even when called from compiled code (``torch.compiler.disable``).

    fjax traces through a disabled function when it is reached inside a compiled one (its ops
    join the program); called directly, it runs eagerly.

    Args:
        fn: the function; omitted, ``disable`` returns a decorator.
        recursive: accepted for torch's signature.

    Example:
        >>> @fjax.compiler.disable
        ... def log(x):
        ...     return x
        >>> log(1)
        1
    """
    if fn is None:
        return lambda f: disable(f, recursive)
    return fn


def is_compiling() -> bool:
    """Whether ``fjax.compile`` is tracing a function right now (``torch.compiler.is_compiling``).

    Example:
        >>> fjax.compiler.is_compiling()
        False
    """
    return _state["compiling"] > 0


def allow_in_graph(fn: Callable) -> Callable:
    """Mark ``fn`` as traceable into compiled programs (every fjax function is): returns it.

    Args:
        fn: the function.

    Example:
        >>> f = fjax.compiler.allow_in_graph(lambda x: x * 2)
        >>> f(3)
        6
    """
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    """Mark ``fn``'s result as constant for compiled code; fjax re-traces instead: returns it.

    Args:
        fn: the function.

    Example:
        >>> fjax.compiler.assume_constant_result(len)([1, 2])
        2
    """
    return fn
