"""The one path of every functional transform: trace, key, compile, call, wrap.

``autograd.functional.*`` and ``fjax.func.*`` validate their arguments as torch does, then:

1. ``trace``: the user's Tensor function becomes a ``Program`` (``program.py``), or a
   program traced before is reused while its guards hold (``guards.py``);
2. ``finish``: the transform of the program is compiled once per (transform spec, program
   key) (``executable.py``), called on the input Tensors (recorded on the tape when asked),
   and the flat results get the public function's structure (``post``).

A reusable call leaves a ``Repeat`` under its plan key (the public function, its options and
``id(func)``): a later call with the same function and inputs of the same structure, shapes,
dtypes and Python values skips validation, tracing and the cache lookups, which at N=100
cost about as much as the compiled call itself. A plan holds the function weakly (it goes when
the function dies) and nothing else the user may drop: not the inputs, the program's
constants or their Tensors (read afresh through the guards' entry), nor what the guards read
(``guards.Reads``): like torch.func, a call keeps no module, parameter or input alive.

``replay`` takes ``create_graph=True``'s VJP of a recorded tape down the same path.
"""

from __future__ import annotations

import types
import weakref
from collections import OrderedDict
from typing import Callable, Hashable, NamedTuple, Sequence

from .._tracing import trace_state
from ..amp import _state as _amp
from ..tensor import Tensor
from . import executable, guards, program
from .program import Program


class Traced(NamedTuple):
    """A traced (or reused) program, what the caller derived while tracing it (``side``), its
    ``guards.Ticket`` (None: not reusable) and the roots its guards were computed from."""

    program: Program
    side: object
    ticket: guards.Ticket | None
    roots: tuple


def trace(roots: tuple, static: Hashable, do_trace: Callable[[], Program], side: Callable[[], object]) -> Traced:
    """Step 1: the program of the function(s) in ``roots`` (see ``guards.trace``); autocast's
    settings select the program too (a program traced under autocast casts)."""
    return Traced(*guards.trace(roots, (static, _amp_key()), do_trace, side), roots)


def _amp_key() -> tuple:
    return _amp.key() if _amp.flag.on else ()


def finish(
    name: str,
    spec: Hashable,
    traced: Traced,
    transform: Callable,
    args: Sequence[Tensor],
    *,
    record: bool = False,
    post: Callable | None = None,
    repeat: tuple | None = None,
):
    """Step 2: ``transform`` (named by ``spec``) of the program, compiled, called on ``args``.

    ``transform(program_fn, *arrays)`` returns a flat sequence of arrays. ``record``: put the
    call on the tape (``executable.call``). ``post`` gives the flat results (a tuple of
    Tensors) the public structure. ``repeat``: ``(plan key, func, parts)`` where ``parts``
    hold ``args`` (in flattening order) and whatever else selected the program: later calls
    like this one may then take ``Repeat``.
    """
    prog = traced.program
    entry = executable.compiled(spec, prog, transform)
    res = executable.call(name, entry, prog.consts, prog.sources, args, record)
    if repeat is not None and traced.ticket is not None and not trace_state.depth:
        _plan(name, repeat, traced, args, entry, record, post)
    return res if post is None else post(res)


def replay(name: str, fn: Callable, leaves: Sequence[Tensor], consts: Sequence = (), key: Hashable = None) -> tuple:
    """A pure function ``fn(*consts, *leaf_arrays)`` that is new on every call
    (``create_graph=True``'s VJP of a replayed tape), through the pipeline: traced to a program,
    compiled once per program, and recorded on the tape as one node. ``consts``: arrays and
    numbers the program reads but does not differentiate. ``key``: what ``fn`` computes, as a
    structure (its tape's kernels and wiring): a call with the same key and avals reuses the
    program traced before, so a loop that differentiates the same graph each step neither
    traces nor compiles again."""
    avals = [program.aval(t) for t in leaves]
    cached = None
    if key is not None:
        key = (name, key, tuple(avals), tuple(map(program.const_aval, consts)))
        try:
            cached = _replays.get(key)
        except TypeError:  # a kernel that cannot be hashed: traced every call
            key = None
    if cached is None:
        prog = program.trace_arrays(fn, avals, name, consts)
        if key is not None:
            _replays[key] = prog._replace(consts=[None] * len(consts) + prog.consts[len(consts) :])
            if len(_replays) > _MAX_REPLAYS:
                _replays.popitem(last=False)
    else:
        _replays.move_to_end(key)
        prog = cached._replace(consts=[*consts, *cached.consts[len(consts) :]])
    return finish(name, ("replay",), Traced(prog, None, None, ()), _apply, leaves, record=True)


_replays: OrderedDict = OrderedDict()  # replay key -> its program, less the caller's constants
_MAX_REPLAYS = 64


def _apply(program_fn, *xs):
    return program_fn(*xs)


# -- repeated calls ----------------------------------------------------------------------------
plans: OrderedDict = OrderedDict()
_MAX_PLANS = 256


def _plan(name: str, repeat: tuple, traced: Traced, args: Sequence[Tensor], entry, record: bool, post) -> None:
    """Leave a ``Repeat`` for calls like this one, holding ``func`` weakly: it is dropped from
    ``plans`` when the function dies. A function that cannot be weakly referenced gets none."""
    key, func, parts = repeat
    template = _template(parts)
    if template is None or traced.roots[0] is not func:
        return

    def drop(ref, key=key, plans=plans):  # (bound: at exit the module's globals may be gone)
        plan = plans.get(key)
        if plan is not None and plan.func is ref:  # not a later plan under the same key
            plans.pop(key, None)

    try:  # a bound method by its object and function (a fresh bound method each call matches)
        held = (weakref.WeakMethod if type(func) is types.MethodType else weakref.ref)(func, drop)
    except TypeError:
        return
    avals = [program.aval(a) for a in args]
    plans[key] = Repeat(name, held, template, avals, traced.roots[1:], traced.ticket.weak(), entry, record, post)
    if len(plans) > _MAX_PLANS:
        plans.popitem(last=False)


def repeat(key: Hashable, func: Callable, *parts):
    """The result of a call like an earlier one, by its ``Repeat``; None: take the full path."""
    plan = plans.get(key)
    return None if plan is None else plan(func, parts)


class Repeat:
    """A later call of one public transform like the call that made this: the same function,
    nothing it reads changed (its guards), inputs of the same structure, Python values, shapes
    and dtypes. It then runs the compiled call directly.

    Only the inputs are checked before the dispatch; the constants' shapes and the guards are
    checked while the computation runs (on CPU, Python work before a dispatch delays it by
    several times its length). If a check fails the result is dropped: a recorded call leaves
    an unreachable tape node, nothing else.

    ``func``: a weak reference to the function; ``rest``: the other roots of its guards (Python
    values only, as the template admits no other objects); the inputs and the program's
    constants are the call's and the guards entry's (``ticket.entry``), read on each call.
    """

    __slots__ = ("name", "func", "template", "avals", "rest", "ticket", "entry", "record", "post", "amp")

    def __init__(self, name, func, template, avals, rest, ticket, entry, record, post):
        self.name, self.func, self.template, self.avals = name, func, template, avals
        self.rest, self.ticket, self.entry, self.record, self.post = rest, ticket, entry, record, post
        self.amp = _amp_key()

    def __call__(self, func, parts: tuple):
        held = self.func()
        if (held is not func and (held is None or held != func)) or trace_state.depth:
            return None  # (!=: a bound method made again for the same object and function is equal)
        if (_amp.flag.on or self.amp) and _amp_key() != self.amp:
            return None  # traced under other autocast settings
        tensors: list = []
        if not _match(self.template, parts, tensors):
            return None
        for t, aval in zip(tensors, self.avals):
            a = program.aval(t)
            if a is not aval and a != aval:
                return None
        ticket, record = self.ticket, self.record
        cached = ticket.entry
        consts = None
        try:  # dispatched before the remaining checks, which then run while it computes
            consts = cached.read()
            res = executable.call(self.name, self.entry, consts, cached.sources() if record else (), tensors, record)
        except Exception:  # a constant of a new shape the program cannot take (fits says no), or
            if consts is not None:  # its Tensor died (a module's parameter replaced: the entry is gone)
                cached.unread()
            return None
        if not (cached.fits(consts) and (ticket.reads[0].unchanged() or guards.holds(ticket, (func, *self.rest)))):
            cached.unread()  # the computation is pure: its result is dropped (and its keys taken back)
            return None
        return res if self.post is None else self.post(res)


# Templates of the call's arguments: _TENSOR, (_SEQ, type, [templates]), (_DICT, keys,
# [templates]) or (_VALUE, type, value). Other objects (a namedtuple, a module) give no template.
_TENSOR, _SEQ, _DICT, _VALUE = "tensor", "seq", "dict", "value"
_VALUES = (int, bool, str, type(None))


def _template(obj):
    if isinstance(obj, Tensor):
        return _TENSOR
    t = type(obj)
    if t in _VALUES:
        return (_VALUE, t, obj)
    if t is float:
        return (_VALUE, t, obj.hex())  # tells -0.0 from 0.0, as the guards do
    if t in (tuple, list, dict):
        subs = [_template(x) for x in (obj.values() if t is dict else obj)]
        if any(s is None for s in subs):
            return None
        return (_DICT, tuple(obj), subs) if t is dict else (_SEQ, t, subs)
    return None


def _match(template, obj, tensors: list) -> bool:
    """Whether ``obj`` fits ``template``; appends its Tensors to ``tensors`` in order."""
    if template is _TENSOR:
        if isinstance(obj, Tensor):
            tensors.append(obj)
            return True
        return False
    kind, a, subs = template
    if kind is _SEQ:
        if type(obj) is not a or len(obj) != len(subs):
            return False
        for s, x in zip(subs, obj):
            if not _match(s, x, tensors):
                return False
        return True
    if kind is _DICT:
        if type(obj) is not dict or len(obj) != len(a):
            return False
        for s, k, (k2, x) in zip(subs, a, obj.items()):
            if k != k2 or not _match(s, x, tensors):
                return False
        return True
    if type(obj) is not a:
        return False
    return obj.hex() == subs if a is float else obj == subs


def cache_clear() -> None:
    """Drop every cached executable, traced program and repeat plan of the functional
    transforms (the next call of each function traces it again).

    Example:
        >>> from fjax.autograd import functional
        >>> _ = functional.vjp(lambda x: x * 2, fjax.ones(2), fjax.ones(2))
        >>> functional.cache_clear()
        >>> functional.cache_info().currsize
        0
    """
    guards.clear()
    plans.clear()
    executable.clear()
