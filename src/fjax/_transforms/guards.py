"""Reuse a traced program while nothing the user's function reads can have changed.

Tracing a Tensor function costs about 0.2 ms, more than a compiled call of a small function,
so — like ``jax.jit`` — fjax's transforms keep the program traced for a function and reuse it.
Unlike ``jax.jit``, they check on every call, by a *guard key*, that the function would trace
to the same program:

- a Python function by its code (by value: a freshly created identical lambda matches), its
  defaults, closure cells and the globals its code names, recursively through the Python
  functions it reaches; ints, floats, strings and tuples by value; Tensors, Python modules
  and fjax/jax/numpy functions by identity;
- an ``nn.Module`` by identity and a counter that every structural change of any module bumps
  (attribute assignment, registration, hooks, ``train``/``eval``); its class's methods and its
  hooks like functions;
- the shapes and dtypes of the inputs and of every tensor the program captured.

Captured tensors (parameters, closure tensors) are read afresh on each call, so new values
reuse the program, and random keys drawn while tracing are drawn afresh, in the same order.
A function that reaches anything else (a list, a dict, an arbitrary object), changes a module
while tracing, or captures an array no guarded Tensor holds is traced on every call instead.
Python side effects of a reused function (``print``) happen when it is traced, as under
``jax.jit``.
"""

from __future__ import annotations

import contextlib
import dis
import functools
import operator
import types
import weakref
from collections import OrderedDict
from typing import Callable, Hashable, NamedTuple

import numpy as np

from .. import random as _random
from .._tracing import modules_changed, trace_state
from ..device import device as _device
from ..dtypes import _default_listeners as _dtype_default_listeners
from ..dtypes import dtype as _dtype
from ..tensor import Tensor
from .program import Program

_LIBRARIES = frozenset({"fjax", "jax", "jaxlib", "numpy", "math", "cmath", "operator", "builtins"})
_VALUES = (int, bool, str, bytes, type(None))
_MODULE_STATE = frozenset(
    {
        "_parameters",
        "_buffers",
        "_modules",
        "_non_persistent_buffers_set",
        "_forward_pre_hooks",
        "_forward_pre_hooks_with_kwargs",
        "_forward_hooks",
        "_forward_hooks_with_kwargs",
        "_backward_pre_hooks",
        "_backward_hooks",
        "_is_full_backward_hook",
        "training",
    }
)


class Unguarded(Exception):
    """The function reaches something whose changes a guard key cannot see."""


def _library(obj) -> bool:
    """Whether ``obj`` (a function or class) is fjax's, JAX's, numpy's or Python's own."""
    module = getattr(obj, "__module__", None)
    hit = _library_modules.get(module)
    if hit is None:
        hit = _library_modules[module] = (module or "").partition(".")[0] in _LIBRARIES
    return hit


_library_modules: dict = {}


def _global_names(code: types.CodeType) -> tuple[str, ...]:
    """Every name the code (and the functions defined in it) may look up as a global."""
    hit = _names_memo.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    names = {i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_OPS}  # not attribute names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.update(_global_names(const))
    if len(_names_memo) > 4096:
        _names_memo.clear()
    _names_memo[id(code)] = (code, tuple(sorted(names)))
    return _names_memo[id(code)][1]


_names_memo: dict = {}
_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME", "STORE_NAME", "DELETE_NAME"})


_MISSING = ("missing",)


def _kwdefaults(fn) -> tuple:
    return tuple(sorted((fn.__kwdefaults__ or {}).items()))


def _keywords(partial) -> tuple:
    return tuple(sorted(partial.keywords.items()))


def _class_functions(cls) -> tuple:
    return tuple(
        v
        for klass in cls.__mro__
        if not _library(klass) and klass is not object
        for v in vars(klass).values()
        if type(v) is types.FunctionType
    )


def _version(_) -> int:
    return modules_changed[0]


class Reads:
    """The mutable places a walk read, by kind, each with the object found there.

    ``unchanged()`` says whether every place still holds the object read there (checked on
    every repeated call of a transform, before its guard key would be computed again).
    ``weak()``: the same reads for a repeat plan, which must keep nothing alive.
    """

    __slots__ = ("functions", "items", "cells", "snapshots")

    def __init__(self):
        self.functions: list = []  # (function, its __code__, its __defaults__)
        self.items: list = []  # (globals dict, name, value or _MISSING)
        self.cells: list = []  # (closure cell, contents or _MISSING)
        self.snapshots: list = []  # (read, obj, read(obj)): compared by value

    def unchanged(self) -> bool:
        for fn, code, defaults in self.functions:
            if fn.__code__ is not code or fn.__defaults__ is not defaults:
                return False
        for env, name, value in self.items:
            if env.get(name, _MISSING) is not value:
                return False
        for cell, value in self.cells:
            try:
                if cell.cell_contents is not value:
                    return False
            except ValueError:  # an empty cell
                if value is not _MISSING:
                    return False
        return all(read(obj) == value for read, obj, value in self.snapshots)

    def weak(self) -> WeakReads:
        """These reads holding weakly what the user may drop: the functions, the objects
        snapshotted, and Modules and Tensors found in a global or a cell."""
        reads = WeakReads()
        reads.functions = [(weakref.ref(fn), code, defaults) for fn, code, defaults in self.functions]
        reads.items = [(env, name, _held(value)) for env, name, value in self.items]
        reads.cells = [(cell, _held(value)) for cell, value in self.cells]
        reads.snapshots = [(read, obj if obj is None else weakref.ref(obj), v) for read, obj, v in self.snapshots]
        return reads


class WeakReads(Reads):
    """``Reads`` kept by a repeat plan (``pipeline.Repeat``): a function, module or tensor the
    user drops is freed (a dead one counts as changed), as torch.func keeps nothing alive."""

    __slots__ = ()

    def unchanged(self) -> bool:
        for ref, code, defaults in self.functions:
            fn = ref()
            if fn is None or fn.__code__ is not code or fn.__defaults__ is not defaults:
                return False
        for env, name, value in self.items:
            now = env.get(name, _MISSING)
            if now is not value and (type(value) is not _Weak or value() is not now or now is None):
                return False
        for cell, value in self.cells:
            try:
                now = cell.cell_contents
            except ValueError:  # an empty cell
                now = _MISSING
            if now is not value and (type(value) is not _Weak or value() is not now or now is None):
                return False
        for read, ref, value in self.snapshots:
            obj = None if ref is None else ref()
            if (obj is None and ref is not None) or read(obj) != value:
                return False
        return True


class _Weak(weakref.ref):
    """A Module or Tensor read from a global or a closure cell, held weakly (``WeakReads``)."""

    __slots__ = ()


def _held(value):
    return _Weak(value) if _weakly(value) else value


class Guards:
    """One walk over what a function reaches. ``collect=True`` (at trace time) also gathers
    the Tensors it finds, by the identity of their arrays, to name the program's constants.

    Objects compared by identity appear in the key as their ``id``; ``refs`` holds them, and a
    cache entry keeps its refs alive, so no other object can take over one of its ids.

    ``reads`` lists every mutable place the walk read (a global, a closure cell, a function's
    ``__code__``, ...) with the object found there: while each place still holds the same
    object, the walk would give the same key (``holds``), which is cheaper to check.
    """

    def __init__(self, collect: bool = False):
        self.sources: dict | None = {} if collect else None
        self.seen: set = set()
        self.refs: list = []
        self.reads = Reads()

    def ident(self, obj) -> int:
        self.refs.append(obj)
        return id(obj)

    def key(self, obj, lenient: bool = False) -> Hashable:
        """``obj``'s guard key. ``lenient``: fjax's own state (an op's cache) by identity."""
        t = type(obj)
        if t in _VALUES:
            return (t, obj)
        if t is float:
            return (t, obj.hex())  # tells -0.0 from 0.0
        if t is tuple:
            return ("tuple", *(self.key(x) for x in obj))
        if isinstance(obj, Tensor):
            if self.sources is not None:
                self.sources[id(obj._data)] = obj
            return self.ident(obj)
        if t is types.FunctionType:
            return self.function(obj)
        if t is types.MethodType:
            return ("method", self.key(obj.__func__), self.key(obj.__self__))
        if t is functools.partial:
            keywords = _keywords(obj)
            self.reads.snapshots.append((_keywords, obj, keywords))
            return ("partial", self.key(obj.func), self.key(obj.args), self.key(keywords))
        if t is types.ModuleType or isinstance(obj, (_dtype, _device, np.dtype)):
            return self.ident(obj)
        if t is types.BuiltinFunctionType and isinstance(obj.__self__, (types.ModuleType, type(None))):
            return self.ident(obj)  # len, math.exp (not a bound method of a list)
        if _is_module(obj):
            return self.module(obj)
        if isinstance(obj, type):
            return ("class", self.ident(obj), *self.methods(obj))
        if lenient or (callable(obj) and _library(t)):  # jax's custom_jvp functions, ufuncs, ...
            return self.ident(obj)
        raise Unguarded(t.__name__)

    def function(self, fn: types.FunctionType):
        library = _library(fn)
        closure = fn.__closure__
        if library and closure is None:
            return self.ident(fn)
        if id(fn) in self.seen:  # recursion
            return ("seen", fn.__code__)
        self.seen.add(id(fn))
        if library:  # fjax's code and globals are fixed; its closures (fjax.func's) may hold user functions
            return ("lib", fn.__code__, *[self.cell(c, lenient=True) for c in closure])
        code, env, key, reads = fn.__code__, fn.__globals__, self.key, self.reads
        defaults, kwdefaults = fn.__defaults__, _kwdefaults(fn)
        reads.functions.append((fn, code, defaults))
        if fn.__kwdefaults__ is not None:  # a dict: it may change in place. None needs no guard:
            reads.snapshots.append((_kwdefaults, fn, kwdefaults))  # a function that traced has no
            # keyword-only parameter without a default, which a dict assigned later could fill
        parts = ["fn", code]
        for n in _global_names(code):
            value = env.get(n, _MISSING)
            reads.items.append((env, n, value))
            parts.append(_MISSING if value is _MISSING else key(value))
        if closure:
            parts.append(tuple([self.cell(c) for c in closure]))
        if defaults:
            parts.append(key(defaults))
        if kwdefaults:
            parts.append(key(kwdefaults))
        return tuple(parts)

    def cell(self, cell, lenient: bool = False):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell (a name assigned later)
            value = _MISSING
        self.reads.cells.append((cell, value))
        return _MISSING if value is _MISSING else self.key(value, lenient)

    def methods(self, cls: type) -> tuple:
        """The functions a user-defined class (and its user-defined bases) defines."""
        functions = _class_functions(cls)
        self.reads.snapshots.append((_class_functions, cls, functions))
        return tuple(self.function(v) for v in functions)

    def module(self, m) -> tuple:
        self.reads.snapshots.append((_version, None, modules_changed[0]))
        callables = _module_callables(m, modules_changed[0])
        if self.sources is not None:
            for sub in m.modules():
                for t in (*sub._parameters.values(), *sub._buffers.values(), *vars(sub).values()):
                    if isinstance(t, Tensor):
                        self.sources[id(t._data)] = t
        return ("module", self.ident(m), modules_changed[0], *(self.key(c) for c in callables))


def _is_module(obj) -> bool:
    from ..nn.module import Module

    return isinstance(obj, Module)


_callables_memo: dict = {}


def _module_callables(m, version: int) -> tuple:
    """What of module ``m`` must be guarded on each call: its user-defined classes, function
    attributes and hooks. Raises Unguarded where a user-defined module holds other state."""
    hit = _callables_memo.get(id(m))
    if hit is not None and hit[0]() is m and hit[1] == version:
        return hit[2]
    found: list = []
    for sub in m.modules():
        found.extend((*sub._forward_pre_hooks.values(), *sub._forward_hooks.values()))
        found.extend((*sub._backward_pre_hooks.values(), *sub._backward_hooks.values()))
        if _library(type(sub)):  # fjax's own modules change their containers only by registration
            continue
        found.append(type(sub))
        for name, value in vars(sub).items():
            if name in _MODULE_STATE or isinstance(value, Tensor) or type(value) in (*_VALUES, float, tuple):
                continue
            if callable(value) or isinstance(value, (_dtype, _device, np.dtype)):
                found.append(value)
            else:
                raise Unguarded(f"{type(sub).__name__}.{name}: {type(value).__name__}")
    if len(_callables_memo) > 1024:
        _callables_memo.clear()
    _callables_memo[id(m)] = (weakref.ref(m), version, tuple(found))  # weakly: a memo keeps no module alive
    return tuple(found)


# -- the cache of traced programs -------------------------------------------------------------
class _Entry(NamedTuple):
    program: Program
    side: object  # what the caller derived while tracing (output structure, ...)
    read: Callable[[], list]  # the program's constants read now (see _const_readers)
    fits: Callable[[list], bool]  # whether constants read have the avals traced with
    refs: list  # what the key names by id, kept alive: Modules and Tensors weakly (see _weakly)
    sources: Callable[[], tuple]  # the program's sources (weakly held Tensors) as they are now
    unread: Callable[[], None]  # takes back the keys the last read drew (its call did not run)


_entries: OrderedDict = OrderedDict()
_MAX_ENTRIES = 512


def _const_readers(consts: list, slots: list, keys: list = ()) -> tuple[Callable, Callable, Callable]:
    """``(read, fits, unread)`` for a program's constants; ``slots``: per constant, the Tensor
    that holds it (read afresh on each call) or None (a fixed value); ``keys``: the random keys
    the trace drew, in order, as ``(generator, index of the constant or None)``: each read draws
    them afresh (``unread`` takes them back). ``fits(consts)`` says whether constants read have
    the shapes and dtypes the program was traced with."""
    places = [
        (i, weakref.ref(tensor), c.aval) for i, (tensor, c) in enumerate(zip(slots, consts)) if tensor is not None
    ]
    drawn = {i for _, i in keys}
    consts = [None if tensor is not None or i in drawn else c for i, (tensor, c) in enumerate(zip(slots, consts))]

    def read() -> list:
        out = list(consts)
        for i, tensor, _ in places:
            out[i] = tensor()._data
        for generator, i in keys:
            key = generator.next_key()
            if i is not None:  # (None: drawn and unused, the stream still moves on)
                out[i] = key
        return out

    def unread() -> None:
        for generator, _ in keys:
            generator._counter -= 1

    def fits(values: list) -> bool:
        for i, _, aval in places:
            a = values[i].aval
            if a is not aval and a != aval:
                return False
        return True

    return read, fits, unread


def _fresh(entry: _Entry) -> Program | None:
    """The entry's program with its constants read from their Tensors now (None: shapes changed)."""
    consts = entry.read()
    if entry.fits(consts):
        return entry.program._replace(consts=consts, sources=entry.sources())
    entry.unread()
    return None


def _no_tensor() -> None:
    """A constant's source where no Tensor holds it (a fixed value)."""
    return None


def _weakly(obj) -> bool:
    """Whether a cache entry holds ``obj`` weakly: a Module or Tensor the user drops (a model of a
    sweep, a captured tensor) is freed, as torch.compile's caches free a deleted module, and its
    entry goes with it (no other object can then take over its id in the key)."""
    return isinstance(obj, Tensor) or _is_module(obj)


def _store(key, program: Program, result, slots: list, refs: list, keys: list = ()) -> _Entry:
    """Put ``program`` in the cache under ``key``, holding the Modules and Tensors it names weakly:
    when one dies, the entry is dropped."""

    def drop(_, key=key, entries=_entries):  # (bound: at exit the module's globals may be gone)
        entries.pop(key, None)

    held = [weakref.ref(r, drop) if _weakly(r) else r for r in refs]
    held += [weakref.ref(t, drop) for t in slots if t is not None]
    weak_slots = [_no_tensor if t is None else weakref.ref(t) for t in slots]

    def sources() -> tuple:  # (map: read on every repeated call that records)
        return tuple(map(operator.call, weak_slots))

    read, fits, unread = _const_readers(program.consts, slots, keys)
    entry = _entries[key] = _Entry(program._replace(consts=(), sources=()), result, read, fits, held, sources, unread)
    return entry


class Ticket(NamedTuple):
    """A reusable program, the guard key of the roots it was traced from and the places that
    key read (see ``Guards.reads``): a caller that keeps it can check the roots with ``holds``
    and read the program's constants with ``ticket.entry.read``, without the cache lookup."""

    guard: Hashable
    entry: _Entry
    reads: list  # [Guards.reads of the last walk that gave ``guard``, or their weak form]

    def weak(self) -> Ticket:
        """This ticket holding its reads weakly (``Reads.weak``): for a repeat plan."""
        return Ticket(self.guard, self.entry, [self.reads[0].weak()])


def holds(ticket: Ticket, roots: tuple) -> bool:
    """Whether ``roots`` would still trace to the ticket's program (``_fresh(ticket.entry)``
    gives it with its constants read now). Checks the places the last walk read; walks again
    only if one of them changed (an equal value may still give the same key), and keeps that
    walk's reads in their weak form (a ticket checked here is a repeat plan's)."""
    if ticket.reads[0].unchanged():
        return True
    guards = Guards()
    try:
        if guards.key(roots) != ticket.guard:
            return False
    except Unguarded:
        return False
    ticket.reads[0] = guards.reads.weak()
    return True


def trace(roots: tuple, static: Hashable, do_trace: Callable[[], Program], side: Callable[[], object]):
    """``(program, side(), ticket)`` for a call of the function(s) in ``roots``, traced or reused.

    ``static``: everything else that selects the program (transform name, input avals, ...).
    ``do_trace()`` traces; ``side()`` then returns what the caller derived while tracing, which
    a reusing call gets back unchanged. ``ticket``: a ``Ticket`` where the program is
    reusable, else None.
    """
    if trace_state.depth:  # inside another trace: tracing is part of that compile anyway
        return do_trace(), side(), None
    walk = Guards()
    try:
        guard = walk.key(roots)
    except Unguarded:  # traced on every call; its captured tensors still become tape inputs
        program = do_trace()
        return _sourced(program, roots), side(), None
    key = (static, guard)
    entry = _entries.get(key)
    if entry is not None:
        program = _fresh(entry)
        if program is not None:
            try:  # (a try, not contextlib.suppress: no context manager per call)
                _entries.move_to_end(key)
            except KeyError:  # another thread may have evicted it meanwhile
                pass
            return program, entry.side, Ticket(guard, entry, [walk.reads])
    guards = Guards(collect=True)
    guards.key(roots)
    draws, version = _random.draws[0], modules_changed[0]
    with _random.recording() as drawn:
        program = do_trace()
    result = side()
    if _random.draws[0] - draws != len(drawn) or modules_changed[0] != version:
        # random keys drawn where they could not be recorded (another thread, a graph's stream)
        # or modules changed while tracing: not reusable; its captured tensors still become
        # tape inputs
        return _sourced(program, roots), result, None
    at = {id(k): i for i, (_, k) in enumerate(drawn)}
    slots, keys = [], [None] * len(drawn)
    for j, c in enumerate(program.consts):
        tensor = guards.sources.get(id(c))
        if tensor is None and id(c) in at:  # a key drawn while tracing: drawn afresh on each call
            keys[at[id(c)]] = j
        elif tensor is None and not isinstance(c, np.ndarray):  # np arrays: the program's lifted literals
            return _sourced(program, roots), result, None  # an array no guarded Tensor holds
        slots.append(tensor)
    program = program._replace(sources=tuple(slots))
    entry = _store(key, program, result, slots, guards.refs, [(g, j) for (g, _), j in zip(drawn, keys)])
    if len(_entries) > _MAX_ENTRIES:
        _entries.popitem(last=False)
    return program, result, Ticket(guard, entry, [walk.reads])


def _sourced(program: Program, roots: tuple) -> Program:
    """``program`` with its ``sources`` found by a walk that, unlike the guard walk, goes through
    anything (dicts, lists, objects' attributes) and never gives up: a function the guards cannot
    key (it reads a global dict) is traced on every call, but the tensors it captures must still
    be inputs of its tape node, or an outer ``backward()`` would miss their gradients."""
    found: dict = {}
    _collect(roots, found, set(), 0)
    return program._replace(sources=tuple(found.get(id(c)) for c in program.consts))


def _collect(obj, found: dict, seen: set, depth: int) -> None:
    """Every Tensor reachable from ``obj``, by the identity of its array, into ``found``."""
    if depth > 8 or id(obj) in seen or type(obj) in _VALUES or type(obj) is float:
        return
    seen.add(id(obj))
    nxt = depth + 1
    if isinstance(obj, Tensor):
        found[id(obj._data)] = obj
    elif type(obj) is types.FunctionType:
        if not _library(obj):
            for n in _global_names(obj.__code__):
                if n in obj.__globals__:
                    _collect(obj.__globals__[n], found, seen, nxt)
            _collect(obj.__defaults__ or (), found, seen, nxt)
        for cell in obj.__closure__ or ():
            with contextlib.suppress(ValueError):  # an empty cell
                _collect(cell.cell_contents, found, seen, nxt)
    elif type(obj) is types.MethodType:
        _collect(obj.__func__, found, seen, nxt)
        _collect(obj.__self__, found, seen, nxt)
    elif type(obj) is functools.partial:
        _collect((obj.func, obj.args, tuple(obj.keywords.values())), found, seen, nxt)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for x in obj:
            _collect(x, found, seen, nxt)
    elif isinstance(obj, dict):
        for x in obj.values():
            _collect(x, found, seen, nxt)
    elif _is_module(obj):
        for sub in obj.modules():
            for t in (*sub._parameters.values(), *sub._buffers.values()):
                if t is not None:
                    found[id(t._data)] = t
            for name, x in vars(sub).items():
                if name not in _MODULE_STATE:
                    _collect(x, found, seen, nxt)
            if not _library(type(sub)):
                _collect(_class_functions(type(sub)), found, seen, nxt)
    elif isinstance(obj, type):
        if not _library(obj):
            _collect(_class_functions(obj), found, seen, nxt)
    elif not isinstance(obj, types.ModuleType) and not _library(type(obj)) and hasattr(obj, "__dict__"):
        _collect(vars(obj), found, seen, nxt)


def clear() -> None:
    _entries.clear()
    _callables_memo.clear()


_dtype_default_listeners.append(lambda _: clear())  # programs traced under the old default dtype
