"""Trace a Tensor function to a jaxpr, and key it by its program (not by the Python function).

Notebook users re-create lambdas in every cell, so functional transforms cache compiled
executables by what the function computes: the jaxpr's equations and the shapes/dtypes of its
inputs and of the values it captured. Captured values (module parameters, constants, random
keys) and the scalar literals of the top-level program are lifted into arguments, so new
values never recompile; only a new program or new shapes do.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import jax
import numpy as np
from jax.extend import core as jcore
from jax.extend import linear_util as lu

from .. import _jax_compat, _lazy
from .._tracing import tracing
from ..autograd.grad_mode import no_grad
from ..errors import OpError
from ..tensor import Tensor

_HOST_READS = (  # the function asked for a traced value on the host
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerIntegerConversionError,
)


class Program(NamedTuple):
    """A traced function: ``jaxpr(*consts, *inputs) -> outputs``, its cache key, and whether
    it calls a custom autograd.Function (a ``jax.custom_vjp``: forward mode cannot go through).

    ``sources``: per constant, the Tensor it was read from (a captured module parameter), or
    None; empty where unknown. A recorded call differentiates through those that require grad.
    """

    jaxpr: jcore.Jaxpr
    consts: list
    key: tuple
    custom_vjp: bool
    sources: tuple = ()


def trace(call: Callable[[list[Tensor]], list[Tensor]], avals: Sequence, where: str) -> Program:
    """Trace ``call`` (flat Tensors in, flat Tensors out) on abstract inputs ``avals``.

    The function runs under ``no_grad`` (nothing is recorded on the tape: JAX differentiates
    the program). ``where`` names the public function for error messages.
    """

    def flat(*arrays):
        with tracing(), no_grad():
            outs = call([Tensor._wrap(a) for a in arrays])
            return [t._data for t in outs]

    return trace_arrays(flat, avals, where)


def trace_arrays(fn: Callable, avals: Sequence, where: str, consts: Sequence = ()) -> Program:
    """Trace ``fn`` (arrays in, a sequence of arrays out) on abstract inputs ``avals``.

    ``consts``: values ``fn`` takes before its inputs (``fn(*consts, *inputs)``) that are the
    program's leading constants, not inputs: a program traced once serves other values of the
    same avals (``Program._replace(consts=...)``)."""
    fun = lu.wrap_init(fn, debug_info=jcore.DebugInfo(where, where, None, None))
    k = len(consts)
    try:
        # not jax.make_jaxpr: it keeps a trace cache keyed by the Python function object (stale
        # captured values for a reused function) and costs twice as much per call
        jaxpr, _, captured = _jax_compat.trace_to_jaxpr_dynamic(fun, [*map(const_aval, consts), *avals])
    except _HOST_READS as err:
        raise OpError(
            f"{where}: the function reads a tensor's value on the host (.item(), bool(), "
            "if/while on a tensor, .numpy()); functional transforms trace the function once per "
            "call, so data-dependent Python control flow is not supported: use fjax.where "
            f"instead ({str(err).splitlines()[0]})"
        ) from None
    try:
        jaxpr, captured = _jax_compat.normalize_jaxpr(jaxpr, captured, k + len(avals))
    except RuntimeError as err:
        raise RuntimeError(f"{where}: JAX {jax.__version__}: {err}") from None
    if k:
        invars = list(jaxpr.invars)
        jaxpr = jaxpr.replace(constvars=invars[:k] + list(jaxpr.constvars), invars=invars[k:])
    jaxpr, lifted = _lift_literals(jaxpr)
    return Program(jaxpr, [*consts, *captured, *lifted], _Key(_jaxpr_key(jaxpr)), _uses_custom_vjp(jaxpr))


def const_aval(v):
    """The abstract value of a program's constant: an array, a value eager fusion has not
    computed yet, or a Python number (weakly typed, as jit takes it)."""
    if type(v) is _lazy.Pending:
        return jax.core.ShapedArray(v.shape, v.dtype, weak_type=v.weak_type)
    return jax.typeof(v)


def _uses_custom_vjp(jaxpr: jcore.Jaxpr) -> bool:
    for eqn in jaxpr.eqns:
        if eqn.primitive.name.startswith("custom_vjp"):
            return True
        for sub in jcore.jaxprs_in_params(eqn.params):
            if _uses_custom_vjp(sub):
                return True
    return False


def aval(x: Tensor):
    """The abstract value (shape, dtype, weak type) of a Tensor's data (arrays cache it); a value
    eager fusion has not computed yet stays pending."""
    a = x._meta
    if type(a) is _lazy.Pending:
        return jax.core.ShapedArray(a.shape, a.dtype, weak_type=a.weak_type)
    return x._data.aval


# -- literals -------------------------------------------------------------------------------
def _lift_literals(jaxpr: jcore.Jaxpr):
    """Turn the top-level scalar literals into extra constvars (values returned in order)."""
    lifted_vars, values = [], []

    def lift(atom):
        if isinstance(atom, jcore.Literal):
            var = jcore.Var(atom.aval)
            lifted_vars.append(var)
            values.append(np.asarray(atom.val, dtype=atom.aval.dtype))
            return var
        return atom

    eqns = []
    for eqn in jaxpr.eqns:
        if any(isinstance(a, jcore.Literal) for a in eqn.invars):
            eqn = eqn.replace(invars=[lift(a) for a in eqn.invars])
        eqns.append(eqn)
    outvars = [lift(a) for a in jaxpr.outvars]
    if not lifted_vars:
        return jaxpr, []
    return jaxpr.replace(constvars=list(jaxpr.constvars) + lifted_vars, eqns=eqns, outvars=outvars), values


# -- program keys ---------------------------------------------------------------------------
class _Key:
    """A program key that hashes once (a reused program is looked up on every call)."""

    __slots__ = ("parts", "hash")

    def __init__(self, parts: tuple):
        self.parts, self.hash = parts, hash(parts)

    def __hash__(self):
        return self.hash

    def __eq__(self, other):
        return self is other or (type(other) is _Key and other.hash == self.hash and other.parts == self.parts)


class _Identity:
    """Hash/compare an unhashable (or per-trace) object by identity, keeping it alive."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return type(other) is _Identity and other.obj is self.obj


_SCALARS = (int, float, bool, str, bytes, type(None))
_closed_memo: dict[int, tuple] = {}  # id(ClosedJaxpr) -> (ClosedJaxpr, key): per-op jits reuse theirs
_MEMO_SIZE = 4096


def _jaxpr_key(jaxpr: jcore.Jaxpr) -> tuple:
    """A hashable description of a jaxpr: equations, params and avals, not variable names."""
    index: dict = {}
    parts: list = [len(jaxpr.constvars)]
    for v in (*jaxpr.constvars, *jaxpr.invars):
        index[v] = len(index)
        parts.append(v.aval)
    for eqn in jaxpr.eqns:
        ins = tuple(("lit", _freeze(a.val), a.aval) if isinstance(a, jcore.Literal) else index[a] for a in eqn.invars)
        outs = []
        for v in eqn.outvars:
            index[v] = len(index)
            outs.append(v.aval)
        params = tuple(zip(eqn.params, map(_freeze, eqn.params.values()))) if eqn.params else ()
        parts.append((eqn.primitive, params, ins, tuple(outs)))
    parts.append(
        tuple(("lit", _freeze(a.val), a.aval) if isinstance(a, jcore.Literal) else index[a] for a in jaxpr.outvars)
    )
    return tuple(parts)


def _closed_key(cj: jcore.ClosedJaxpr) -> tuple:
    hit = _closed_memo.get(id(cj))
    if hit is not None and hit[0] is cj:
        return hit[1]
    key = ("closed", _jaxpr_key(cj.jaxpr), tuple(_Identity(c) for c in cj.consts))
    if len(_closed_memo) >= _MEMO_SIZE:
        _closed_memo.clear()
    _closed_memo[id(cj)] = (cj, key)
    return key


def _freeze(v):
    """A hashable stand-in for an equation parameter (equal stand-ins: same semantics)."""
    t = type(v)
    if t in _SCALARS or t in _hashable_types:
        return v
    if t is jcore.ClosedJaxpr:
        return _closed_key(v)
    if t is tuple:
        try:  # the common case: a tuple of hashables (shardings, axes, flags) stands for itself
            hash(v)
            return v
        except TypeError:
            return ("tuple", *(_freeze(x) for x in v))
    if t is list:
        return ("list", *(_freeze(x) for x in v))
    if isinstance(v, jcore.Jaxpr):
        return ("jaxpr", _jaxpr_key(v))
    if isinstance(v, lu.WrappedFun):
        # custom_jvp/custom_vjp rules are re-wrapped on every trace; JAX's own printer names
        # them by the rule's function, and so do we.
        return ("fun", v.debug_info.func_src_info)
    if isinstance(v, np.ndarray):
        return ("array", v.shape, v.dtype, v.tobytes())
    try:
        hash(v)
    except TypeError:
        return _Identity(v)
    if t.__hash__ is not object.__hash__:  # hashed by value (meshes, shardings, enums): remember the type
        _hashable_types.add(t)
    return v


_hashable_types: set = set()
