"""Lifts pure ops to Tensor functions: unwrap, cached jit, record on the tape.

Every entry of the op table (``ops/_registry.py``) becomes one Tensor-level function. A call:

1. walks the arguments once, collecting traced leaves (Tensors, arrays, Python numbers) and a
   hashable template of everything else (static arguments, list structure);
2. looks up the template in the op's cache, which holds the pure function rebuilt from the
   template, its ``jax.jit`` and, per set of inputs that require grad, a jitted
   ``jax.vjp`` of it (the VJP is a pytree: it crosses the jit boundary holding exactly the
   residuals its backward needs);
3. records a tape node when grad mode is on and an input requires grad;
4. inside a trace (nn.Graph, functional transforms) the same jitted functions run on tracers.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import threading
import types
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from . import (
    _bucket,
    _dims,
    _jax_compat,
    _lazy,
    _tracing,
    ops,  # noqa: F401 - importing it fills the op table
)
from . import dtypes as _dt
from . import profiler as _profiler
from ._config import config
from ._tracing import trace_state
from .amp import _state as _amp
from .autograd import engine as _engine
from .autograd import forward_ad as _forward_ad
from .autograd.engine import Bound, Node, Unread
from .autograd.grad_mode import _state as _grad_state
from .device import MetaArray
from .errors import OpError
from .ops import indexing as _indexing
from .ops._checks import IndexOpError
from .ops._registry import OPS, OpDef
from .ops.views import contiguous_strides
from .tensor import Tensor, _Above

_LEAF = object()
_Pending = _lazy.Pending
_Padded = _lazy.Padded
_PaddedDims = _dims.PaddedDims
_NUMBERS = (int, float, bool, complex)
_ARRAYS = (jax.Array, np.ndarray, np.generic)


def _static(value, op, name):
    if isinstance(value, list):
        value = tuple(_static(v, op, name) for v in value)
    elif isinstance(value, tuple):
        value = tuple(_static(v, op, name) for v in value)
    elif isinstance(value, Tensor):
        # torch reads an integer (or 0-dim) tensor given for a shape/index argument as its Python
        # value (tensor_split's indices, repeat_interleave's repeats, a 0-dim dim); fjax does so eagerly
        data = value._data
        ok = data.ndim == 0 or (data.ndim == 1 and np.issubdtype(data.dtype, np.integer))
        if not ok or isinstance(data, (jax.core.Tracer, MetaArray)):
            raise OpError(
                f"fjax.{op}: argument {name!r} must be a Python value (int, tuple, str, ...) or, outside "
                f"compiled code, a 0-dim or 1-dim integer tensor; got a Tensor of shape {tuple(value.shape)}, "
                f"dtype {value.dtype}"
            )
        value = _static(value.tolist(), op, name)
    elif isinstance(value, slice):
        value = ("slice", value.start, value.stop, value.step)
    elif hasattr(value, "dtype") and not isinstance(value, _ARRAYS):  # a fjax dtype
        value = np.dtype(value)
    try:
        hash(value)
    except TypeError:
        raise OpError(f"fjax.{op}: argument {name!r} must be hashable, got {type(value).__name__}") from None
    return value


def _const(value, op, name):
    """A static argument's place in the cache key: its type too, as ``True == 1 == 1.0`` (std's
    ``unbiased`` overload must not hit the kernel cached for ``dim=1``)."""
    value = _static(value, op, name)
    return ("c", value, type(value))


def _template(x, leaves):
    if isinstance(x, Tensor) or type(x) in _NUMBERS or isinstance(x, _ARRAYS) or type(x) is _Pending:
        leaves.append(x)
        return _LEAF
    if x is None:
        return None
    if isinstance(x, (list, tuple)):  # a named tuple (x.max(0)) passes as a plain one
        return ("seq", type(x) is list, tuple(_template(e, leaves) for e in x))
    if hasattr(x, "dtype"):
        return ("c", np.dtype(x))
    return ("c", x)


def _rebuild(t, it):
    if t is _LEAF:
        return next(it)
    if t is None:
        return None
    if t[0] == "seq":
        items = [_rebuild(e, it) for e in t[2]]
        return items if t[1] else tuple(items)
    return t[1]


_pstate = _profiler._state
_amp_flag = _amp.flag
_window_entries: dict = {}
"""``_view_read`` kernels of window views by (input shape, view shape, view strides)."""
_MAX_ENTRIES = 4096  # an op's entries (one per argument template), the window entries: cleared past it
_op_caches: list = []
"""Every lifted op's kernel-entry cache (one dict per op, keyed by argument template)."""


def new_kernel_cache(size: int) -> None:
    """Start an empty eager kernel cache holding at most ``size`` kernels (``fjax.config.
    eager_cache_size``): every op's jitted functions are made anew in it."""
    global _kernels, _applier_bytes
    make = _jax_compat.make_jit_cpp_cache  # None in a JAX without it: jax.jit's own global cache
    _kernels = make(size) if make is not None else None
    for cache in _op_caches:
        cache.clear()
    _window_entries.clear()
    # the backward's per-node VJP applier (one kernel per VJP structure) shares the cache
    _engine._apply_vjp, _applier_bytes = _jit(_apply), 0


def _apply(vjp, ct):
    return vjp(ct)


def kernel_cache_size() -> int:
    """How many compiled eager kernels the cache holds now."""
    return _kernels.size() if _kernels is not None else -1


_sized: weakref.WeakSet = weakref.WeakSet()
"""The op-kernel entries whose kernels were sized at compile (``_Entry.nbytes``)."""
_tick = 0
"""Counts compiles: an entry's ``tick`` is the count when it last ran or compiled (its recency)."""
_applier_bytes = 0
"""The estimated bytes of the backward's VJP applier kernels (``engine._apply_vjp``)."""


def _entry_bytes(entry) -> int:
    """The estimated bytes of ``entry``'s live kernels: 0 once the count-bounded LRU dropped them all."""
    fns = [entry.jit, *entry.vjps.values()]
    if all(_jax_compat.jit_cache_size(f) == 0 for f in fns):
        entry.nbytes = 0
    return entry.nbytes


def kernel_cache_bytes() -> int:
    """The estimated process memory of the compiled op kernels the eager cache holds, in bytes
    (each compile counts the memory it added): kept under ``fjax.config.eager_cache_bytes``."""
    return _applier_bytes + sum(_entry_bytes(e) for e in list(_sized))


def _compiling():
    """What the compile under way belongs to: an op's ``_Entry`` (read off ``run``'s frame),
    ``"applier"`` (a backward node's VJP applier) or None."""
    f = sys._getframe(2)
    while f is not None:
        if f.f_code is _RUN_CODE:
            entry = f.f_locals.get("entry")
            return entry if isinstance(entry, _Entry) else None
        if f.f_code is _APPLY_CODE:
            return "applier"
        f = f.f_back
    return None


def _note_compile(nbytes: int) -> None:
    """After a compile (``profiler``): count its ``nbytes`` to the op entry (or the VJP applier)
    that compiled, and while the total is over ``config.eager_cache_bytes`` drop the kernels of
    the least recently used entries (then the applier's), down to three quarters of it. An entry
    is the unit (an op at one argument template: all its shapes), as the C++ cache drops a jitted
    function's kernels together."""
    global _tick, _applier_bytes
    _tick += 1
    entry = _compiling()
    if entry is None:
        return
    if entry == "applier":
        _applier_bytes += nbytes
    else:
        entry.tick = _tick
        entry.nbytes += nbytes
        _sized.add(entry)
    budget = config.eager_cache_bytes
    total = kernel_cache_bytes()
    if total <= budget:
        return
    # least recently used first; an entry whose kernels (its shapes) fill half the bound on their
    # own goes before all: it is what churns (the C++ cache cannot drop one kernel of a function)
    order = sorted(_sized, key=lambda e: (e.nbytes <= budget // 2, e.tick))
    dropped = []
    for e in order:
        if total <= budget * 3 // 4:
            break
        if e.nbytes:
            total -= e.nbytes
            dropped.extend(_release(e))
    if total > budget * 3 // 4 and _applier_bytes:
        total -= _applier_bytes
        _engine._apply_vjp, _applier_bytes = _jit(_apply), 0
    if dropped:  # eager fusion's known signatures hold the kernels: forget theirs
        gone = set(map(id, dropped))
        for sig in [s for s in list(_lazy._seen) if id(s[0]) in gone]:
            _lazy._seen.pop(sig, None)
    _jax_compat.clear_jax_caches()


def _release(entry) -> list:
    """Drop ``entry``'s compiled kernels: its functions are made anew (compiling on their next
    call), as the C++ cache keys a kernel by the Python function jit wraps and drops it with that
    function. Returns the old functions. (A padded kernel's function comes from ``_bucket``: only
    its VJPs are dropped.)"""
    old = list(entry.vjps.values())
    if entry.jit is not entry.pure and type(entry) is _Entry:
        old.append(entry.jit)
        entry.pure = entry.calling(entry.op.fn)
        entry.jit = _jit(entry.pure)
    entry.vjps = {}
    entry.nbytes = 0
    _sized.discard(entry)
    return old


def _jit(fn):
    """``jax.jit(fn)`` whose compiled kernels live in the eager kernel cache: an LRU over every
    op's kernels together (a kernel is a function at one input signature), bounded by
    ``fjax.config.eager_cache_size``. The LRU costs nothing per call: it is jax.jit's own C++
    dispatch cache, given a capacity. What JAX keeps of a kernel on the Python side (its trace
    and lowering) is released by ``profiler._sweep`` every few hundred compiles."""
    if _kernels is None:
        return jax.jit(fn)
    with _jax_compat.jit_cpp_cache_obj(_kernels):
        return jax.jit(fn)


class _Entry:
    """An op at one argument template: its pure function of the leaves, the jitted kernel, the
    VJP kernels; for an op that declares rows (``OpDef.rows``), what bucketing knows of it
    (``fjax._bucket``: the sizes its batch met, whether it pads, its padded kernel)."""

    __slots__ = (
        "op",
        "args_t",
        "kwargs_t",
        "pure",
        "jit",
        "vjps",
        "rows",
        "bucketing",
        "sizes",
        "spec",
        "masked",
        "last",
        "tick",
        "nbytes",
        "__weakref__",
    )
    takes_padded = False  # True for a padded kernel: its inputs' Padded arrays are taken as they are

    def __init__(self, op: OpDef, args_t, kwargs_t):
        self.op, self.args_t, self.kwargs_t = op, args_t, kwargs_t
        pure = self.pure = self.calling(op.fn)
        self.jit = _jit(pure) if op.jit else pure
        self.vjps = {}
        self.rows = op.rows if op.jit else None
        self.bucketing, self.sizes, self.spec, self.masked, self.last = False, None, None, None, None
        self.tick, self.nbytes = _tick, 0  # recency and estimated kernel bytes (the byte bound)

    def calling(self, fn, **extra):
        """``fn`` as a function of this entry's leaves: called with the op's arguments rebuilt
        from the template (and ``extra`` keywords)."""
        args_t, kwargs_t = self.args_t, self.kwargs_t

        def pure(*arrays):
            it = iter(arrays)
            args = [_rebuild(t, it) for t in args_t]
            kwargs = {k: _rebuild(t, it) for k, t in kwargs_t}
            return fn(*args, **kwargs, **extra)

        return pure

    def with_static(self, name, value) -> "_Entry":
        """This entry with static argument ``name`` set to ``value``."""
        args_t, kwargs_t = list(self.args_t), dict(self.kwargs_t)
        params = self.op.params
        i = params.index(name)
        if i < len(args_t):
            args_t[i] = _const(value, self.op.name, name)
        else:
            kwargs_t[name] = _const(value, self.op.name, name)
        return _Entry(self.op, tuple(args_t), tuple(sorted(kwargs_t.items())))

    def derived(self, pure) -> "_Entry":
        """A padded kernel ``pure(n, *leaves)`` of this entry (``fjax._bucket``)."""
        out = object.__new__(_PaddedEntry)
        out.op, out.args_t, out.kwargs_t = self.op, self.args_t, self.kwargs_t
        out.pure, out.jit, out.vjps = pure, _jit(pure), {}
        out.rows, out.bucketing, out.sizes, out.spec, out.masked = None, False, None, None, None
        out.tick, out.nbytes = _tick, 0
        return out

    def vjp(self, diff_idx):
        f = self.vjps.get(diff_idx)
        if f is None:
            if self.jit is self.pure:  # an op registered with jit=False (device transfers)
                f = _vjp_of(self.pure, diff_idx)
            else:
                f = _jit(_vjp_without_inputs(self.pure, diff_idx))
            self.vjps[diff_idx] = f
        return f


class _PaddedEntry(_Entry):
    __slots__ = ()
    takes_padded = True


def _vjp_of(pure, diff_idx):
    def fwd(*arrays):
        def f(*diff):
            full = list(arrays)
            for i, x in zip(diff_idx, diff):
                full[i] = x
            return pure(*full)

        return jax.vjp(f, *[arrays[i] for i in diff_idx])

    return fwd


@jax.tree_util.register_pytree_node_class
class _Residuals:
    """A VJP as it leaves jit, minus the residuals that are the op's own inputs or outputs.

    jit cannot return an input without copying it, nor one value twice without a second
    buffer, so a VJP that saves ``x`` and ``w`` (as matmul's does) or its own result (as exp's,
    tanh's and relu's do) would hold a copy of each; instead those slots record which input
    (``src`` >= 0) or output (``src`` <= -2: output ``-2 - src``) they are, and ``rebuild``
    puts the caller's arrays back (``src`` -1: a value jit returned, ``kept``).
    """

    def __init__(self, kept, treedef, src, saves):
        self.kept, self.treedef, self.src = kept, treedef, src
        self.saves = saves  # input positions the backward reads the values of (None: all)

    def tree_flatten(self):
        return self.kept, (self.treedef, self.src, self.saves)

    @classmethod
    def tree_unflatten(cls, aux, kept):
        return cls(list(kept), *aux)

    @property
    def reads_outputs(self) -> bool:
        """Whether the backward reads the op's result (exp, tanh, relu)."""
        return any(s <= -2 for s in self.src)

    def rebuild(self, arrays, out=None):
        """The VJP on the caller's ``arrays`` (inputs) and ``out``, as an ``engine.Bound``."""
        it = iter(self.kept)
        if out is None:
            return Bound([arrays[s] if s >= 0 else next(it) for s in self.src], self.treedef)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return Bound([arrays[s] if s >= 0 else next(it) if s == -1 else outs[-2 - s] for s in self.src], self.treedef)


def _vjp_without_inputs(pure, diff_idx):
    fwd = _vjp_of(pure, diff_idx)

    def fwd_jit(*arrays):
        out, vjp = fwd(*arrays)
        leaves, treedef = jax.tree_util.tree_flatten(vjp)
        position = {id(a): i for i, a in enumerate(arrays)}
        for k, o in enumerate(out if isinstance(out, (tuple, list)) else (out,)):
            position.setdefault(id(o), -2 - k)
        src = tuple(position.get(id(leaf), -1) for leaf in leaves)
        # torch saves an op's inputs where its backward needs their values; JAX may save a
        # value computed from them instead (sin saves cos x): then count every input as saved.
        # Saved outputs (exp) and scalar constants (x * 2) read no input.
        derived = any(i == -1 and np.ndim(x) > 0 for x, i in zip(leaves, src))
        saves = None if derived else tuple(sorted({i for i in src if i >= 0}))
        return out, _Residuals([x for x, i in zip(leaves, src) if i == -1], treedef, src, saves)

    return fwd_jit


def _describe(leaves):
    parts = []
    for x in leaves:
        if isinstance(x, Tensor):
            parts.append(f"Tensor(shape={tuple(x.shape)}, dtype={x.dtype})")
        elif isinstance(x, _ARRAYS):
            parts.append(f"array(shape={tuple(np.shape(x))}, dtype={x.dtype})")
        else:
            parts.append(repr(x))
    return ", ".join(parts)


def _error(name, err, leaves):
    msg = str(err).split("\n")[0].strip()
    if not msg.startswith(f"{name}:"):
        msg = f"{name}: {msg}"
    # an op's own OpError subclass (torch's AssertionError, IndexError) keeps its class
    cls = type(err) if isinstance(err, OpError) else IndexOpError if isinstance(err, IndexError) else OpError
    return cls(f"fjax.{msg} (inputs: {_describe(leaves)})")


def lift(op: OpDef):
    """The Tensor-level function of one op-table entry."""
    name, params, static = op.name, op.params, op.static
    static_pos = tuple(p in static for p in params)
    static_args = any(static_pos)
    n_params = len(params)
    cache: dict = {}

    def call(*args, **kwargs):
        if kwargs and keyword_aliases is not None and not keyword_aliases.keys().isdisjoint(kwargs):
            # OneFlow's keyword names (cat(inputs=...))
            kwargs = _rename_keywords(name, keyword_aliases, params, args, kwargs)
        if _pstate.on and not _pstate.inside:
            return _profiler.op(name, call, args, kwargs)
        if amp is not None and _amp_flag.on:  # an op on torch's autocast lists, inside autocast
            args, kwargs = _amp.cast(amp, op, args, kwargs)
        if window and args and isinstance(args[0], Tensor):
            out = _window(name, view_rule, args, kwargs)
            if out is not None:
                return out
        if check is not None and (not trace_state.depth or trace_state.graph_checks):
            _run_check(check, args, kwargs)
        leaves: list = []
        args_t = []
        if static_args:
            for i, a in enumerate(args):
                if i < n_params and static_pos[i]:
                    args_t.append(_const(a, name, params[i]))
                else:
                    args_t.append(_template(a, leaves))
        else:
            for a in args:
                if type(a) is Tensor:
                    leaves.append(a)
                    args_t.append(_LEAF)
                else:
                    args_t.append(_template(a, leaves))
        kwargs_t = ()
        if kwargs:
            kwargs_t = tuple(
                (k, _const(v, name, k) if k in static else _template(v, leaves)) for k, v in sorted(kwargs.items())
            )
        key = (tuple(args_t), kwargs_t)
        try:
            entry = cache.get(key)
        except TypeError:
            raise OpError(f"fjax.{name}: unhashable argument in {args!r} {kwargs!r}") from None
        if entry is None:
            if len(cache) >= _MAX_ENTRIES:  # (reshape(k, -1) for every k: an entry each)
                cache.clear()
            entry = cache[key] = _Entry(op, key[0], kwargs_t)
        entry.tick = _tick  # its recency, for the byte bound's LRU
        out = run(name, entry, leaves, op.differentiable, op.linear)
        if view_rule is not None:
            _as_view(op, out, args, kwargs)
        if returns is not None and type(out) is tuple and len(out) == len(returns._fields):
            return returns(*out)
        return out

    view_rule, window, amp = op.view, op.window, op.amp  # (amp: {device type: policy}; None for most ops)
    check, returns = op.check, op.returns
    keyword_aliases = op.keyword_aliases
    _op_caches.append(cache)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = op.fn.__doc__
    call.__signature__ = inspect.signature(op.fn)
    call.op = op
    return call


def _rename_keywords(name, keyword_aliases, params, args, kwargs):
    """``kwargs`` with each of an op's other keyword names (``OpDef.keyword_aliases``) renamed to
    its parameter; a parameter given twice (``tensors=`` and ``inputs=``, or by position) is a
    TypeError naming both."""
    out = {}
    for k, v in kwargs.items():
        target = keyword_aliases.get(k)
        if target is not None:
            given = [f"{o}=" for o in kwargs if o != k and (o == target or keyword_aliases.get(o) == target)]
            if target in params[: len(args)]:
                given.append(f"{target} (by position)")
            if given:
                raise TypeError(f"fjax.{name}: got {k}= and {', '.join(given)}: they name the same argument {target!r}")
            k = target
        out[k] = v
    return out


def _run_check(check, args, kwargs):
    """An op's eager value check (``OpDef.check``) on its arguments' arrays. A pending value
    (eager fusion) is computed only if the check reads values, not just shapes and dtypes; a
    pending integer or boolean view of a storage with values on the CPU (``labels[step]``) is
    read from that storage; any other pending integer or boolean value defers the check to its
    segment's flush (``_check_later``)."""

    later = []  # the pending integer and boolean values the check may read (deferrable)
    ints = []  # the computed ones

    def arrays(a):
        if isinstance(a, Tensor):
            m = a._meta
            if m.dtype.kind in "iub":
                if type(m) is _Pending:
                    m = _host_view(a, m)
                (later if type(m) is _Pending else ints).append(m)
            return m
        if type(a) in (list, tuple):
            return type(a)(arrays(e) for e in a)
        return a

    a, kw = [arrays(a) for a in args], {k: arrays(v) for k, v in kwargs.items()}
    if _lazy._local.seg is not None:
        if later:
            if _check_later(check, a, kw):
                return
        elif ints:
            _lazy.check_point(check, pending=False)  # (noted: where these are pending next time, it defers)
    try:
        check(*a, **kw)
        return
    except Exception:
        leaves = jax.tree_util.tree_leaves((a, kw))
        if not any(type(x) in (_Pending, _Padded, _PaddedDims, MetaArray) for x in leaves):
            raise
        if not any(type(x) in (_Pending, _Padded, _PaddedDims) for x in leaves):
            return  # a meta tensor has no values to check
    # the check reads values: with them computed (outside the except: its error is not a context)
    a, kw = jax.tree_util.tree_map(_lazy.real, (a, kw))
    _run_check(check, a, kw)


def _host_view(t, m):
    """A pending view's values on the host, read from its storage's array where that has values
    on the CPU (no copy, no flush); else ``m``."""
    st = t._st
    if st is None or t._geom is None or type(st.array) is not _lazy._ARRAY or not _lazy.on_cpu(st.array):
        return m
    g = t._geom
    if t._vbase is not None and t._vbase._node is not t._bnode:  # derived anew from its base (autograd)
        return m
    host = np.asarray(st.array).reshape(-1)[g[2] :]
    return np.lib.stride_tricks.as_strided(host, g[0], [s * host.itemsize for s in g[1]], writeable=False)


class _Collect(threading.local):
    oks = None  # a list while a check is traced for eager fusion (``_check_later``)


_collect = _Collect()
_later_fns: dict = {}
_not_later: set = set()


def _check_later(check, a, kw) -> bool:
    """An op's value check on pending values (eager fusion), recorded in their segment instead
    of computing them now (``_lazy.check_later``): the check traced, its conditions (what it
    hands ``traced_check``) one recorded boolean. Called where a pending integer or boolean
    value is among the arguments (``_run_check``: a float value the check reads is computed
    now). False where that cannot be: the check has no traced form (it reads values on the host
    or checks nothing traced); dispatch then computes the values and checks them now."""
    leaves, treedef = jax.tree_util.tree_flatten((a, kw))
    at = [i for i, x in enumerate(leaves) if type(x) in (_Pending, _lazy._ARRAY)]
    if any(type(x) in (_Padded, MetaArray, np.ndarray) or isinstance(x, jax.core.Tracer) for x in leaves):
        return False  # checked as before
    statics = tuple(None if i in at else x for i, x in enumerate(leaves))
    arrays = [leaves[i] for i in at]
    key = (check, treedef, statics, tuple((x.shape, x.dtype) for x in arrays))
    try:
        if key in _not_later:
            return False
    except TypeError:  # an unhashable argument
        return False
    if not _lazy.check_point(check):  # a first sight: checked now
        return False
    fn = _later_fns.get(key[:3])
    if fn is None:

        def conditions(*values):
            full = list(statics)
            for i, v in zip(at, values):
                full[i] = v
            ca, ckw = jax.tree_util.tree_unflatten(treedef, full)
            before, _collect.oks = _collect.oks, []
            try:
                check(*ca, **ckw)
                oks = _collect.oks
            finally:
                _collect.oks = before
            if not oks:
                raise ValueError("no traced condition")
            return jnp.stack([jnp.all(ok) for ok in oks]).all()

        if len(_later_fns) >= _MAX_ENTRIES:
            _later_fns.clear()
        fn = _later_fns[key[:3]] = jax.jit(conditions)
    try:
        ok = _lazy.then(fn, arrays)
    except Exception:  # reads values on the host (a concretization error), checks nothing traced, ...
        if len(_not_later) >= _MAX_ENTRIES:
            _not_later.clear()
        _not_later.add(key)
        return False
    if type(ok) is not _Pending:  # ran now: the values are computed
        return False
    # what the op's own check reads again if the condition fails: the pending integer and
    # boolean values (indices, masks: they leave the program), the others' shapes and dtypes
    kept = [x if type(x) is not _Pending or x.dtype.kind in "iub" else MetaArray(x.shape, x.dtype) for x in leaves]

    def recheck():
        ca, ckw = jax.tree_util.tree_unflatten(treedef, [_lazy.real(x) for x in kept])
        check(*ca, **ckw)

    _lazy.check_later(ok, recheck)
    return True


_no_deferred_checks = threading.local()


@contextlib.contextmanager
def without_deferred_checks():
    """Trace without the deferred value checks (this thread): ``jax.export`` cannot serialise the
    host callbacks they add, so ``nn.Graph.save`` lowers the step it saves under this."""
    before = getattr(_no_deferred_checks, "on", False)
    _no_deferred_checks.on = True
    try:
        yield
    finally:
        _no_deferred_checks.on = before


def _defer_check(ok, message, exc=None):
    """A value check inside an nn.Graph trace: ``fjax.asyncs`` tests ``ok`` when the step runs;
    an index check (``exc`` an IndexError) fails with a CheckError that is an IndexError too."""
    from .asyncs import _ops

    if _collect.oks is not None:  # traced for eager fusion (``_check_later``)
        _collect.oks.append(ok)
    elif not getattr(_no_deferred_checks, "on", False):
        error = _ops.IndexCheckError if exc is not None and issubclass(exc, IndexError) else _ops.CheckError
        step = trace_state.step_checks
        if step is not None and _jax_compat.trace_of(ok) is step[0] is not None:
            # an nn.Graph step's own value: the step returns it (a host callback would keep
            # the step out of JAX's persistent compilation cache)
            step[1].append((ok, _ops.step_check(message, error, depth=3)))
        else:  # (inside an inner transform: a checkpointed block, a scan body) a host callback
            _ops._submit_check("check", ok, message, None, lambda h: bool(np.all(h)), error, depth=3)


_indexing.traced_check = _defer_check


def _window(name, rule, args, kwargs):
    """A window view op (``WINDOWS``) as a read at a dynamic offset of its input's values, the
    result a view of its storage; None where the rule finds no view (advanced indexing)."""
    x = args[0]
    shape = x._meta.shape
    strides = contiguous_strides(shape)
    try:
        geoms = _window_rule(name, rule, (shape, strides, 0), args, kwargs)
    except ValueError as err:
        raise _error(name, err, [x]) from None
    if geoms is None:
        return None
    ((view_shape, view_strides, offset),) = geoms
    real_shape = view_shape
    if name == "getitem" and config.bucketing and not trace_state.depth and type(x._meta) is not _PaddedDims:
        found = _bucket.window_index(shape, args[2] if len(args) > 2 else kwargs.get("index"))
        if found is not None:  # a slice [:T] of a real tensor, T a padded length: read the bucket
            wide = rule((shape, strides, 0), None, args[0], args[1], found[0])
            if wide is not None and all(w in (r, found[2]) for w, r in zip(wide[0][0], view_shape)):
                ((view_shape, view_strides, offset),) = wide
    key = (shape, view_shape, view_strides)
    entry = _window_entries.get(key)
    if entry is None:
        if len(_window_entries) >= _MAX_ENTRIES:
            _window_entries.clear()
        statics = dict(base_shape=shape, base_strides=strides, shape=view_shape, strides=view_strides)
        kwargs_t = tuple((k, ("c", v)) for k, v in sorted(statics.items()))
        entry = _window_entries[key] = _Entry(OPS["_view_read"], (_LEAF, None, None, _LEAF), kwargs_t)
    entry.tick = _tick
    if not trace_state.depth:  # inside a trace a device scalar would be a constant of the program
        offset = _device_int(offset)
    out = run(name, entry, [x, offset], True, True)
    if real_shape != view_shape:
        _bucket.padded_window(out, real_shape)
    if x._st is None or x._geom is None:
        out._view_from(x, geoms[0])
    else:
        out._view_from(x, _window_rule(name, rule, x._geometry(), args, kwargs)[0])
    return out


_window_geoms: dict = {}  # (window op, input geometry, its other arguments, padded dims?) -> the rule's geometries


def _window_rule(name, rule, geometry, args, kwargs):
    """``rule(geometry, None, *args, **kwargs)``, remembered where the arguments are Python
    values (``x[i]``, ``x[a:b]``, ``narrow(x, 0, i, n)``: a loop's reads repeat the same few)."""
    key = None
    if not kwargs:
        rest = args[1:]
        if name == "getitem":
            if not rest[0]:  # (no tensor index: the template is its Python values)
                key = (geometry, rest[1], type(args[0]._meta) is _PaddedDims)
        elif _ints(rest):
            key = (name, geometry, rest, type(args[0]._meta) is _PaddedDims)
    if key is not None:
        try:
            geoms = _window_geoms.get(key, _window_geoms)
        except TypeError:  # an unhashable argument (a list given to ``fjax.getitem`` itself)
            key = None
        else:
            if geoms is not _window_geoms:
                return geoms
    geoms = rule(geometry, None, *args, **kwargs)
    if key is not None:
        if len(_window_geoms) >= 4096:
            _window_geoms.clear()
        _window_geoms[key] = geoms
    return geoms


_device_ints: dict = {}


def _device_int(i: int):
    """``i`` for a kernel argument: the Python int while it is new (jit copies it to the device,
    ~7 us of a ~14 us dispatch here); from its 8th use on, a device scalar kept for reuse
    (making one costs ~80 us: worth it for a position a loop comes back to, not for a sliding
    window's). At most 4096 positions are remembered."""
    a = _device_ints.get(i, 0)
    if type(a) is int:
        if a < 7:
            if a == 0 and len(_device_ints) >= 4096:
                _lazy.numbers.difference_update(id(v) for v in _device_ints.values() if type(v) is not int)
                _device_ints.clear()
            _device_ints[i] = a + 1
            return i
        a = _device_ints[i] = jax.device_put(i)  # weak-typed, as the Python int: the same kernel
        _lazy.numbers.add(id(a))
    return a


_view_geoms: dict = {}  # (view op, input geometry, output shapes, int arguments) -> the rule's geometries
_STATIC_ARGS = (int, type(None))  # (the arguments a view rule's result is memoized by, besides tuples of ints)


def _ints(t: tuple) -> bool:
    for e in t:
        if type(e) is not int:
            return False
    return True


def _as_view(op, out, args, kwargs):
    """Make a view op's output(s) views of its input's storage, as torch's view ops return."""
    x = args[0] if args else next(iter(kwargs.values()), None)
    if not isinstance(x, Tensor):
        return
    outs = out if isinstance(out, tuple) else (out,)
    g, shapes = x._geometry(), tuple([tuple(o._a.shape) for o in outs])
    key = None
    if not kwargs and all(type(a) in _STATIC_ARGS or (type(a) is tuple and _ints(a)) for a in args[1:]):
        key = (op.name, g, shapes, args[1:])
        geoms = _view_geoms.get(key)
    if key is None or geoms is None:
        geoms = op.view(g, list(shapes), *args, **kwargs)
        if key is not None and geoms is not None:
            if len(_view_geoms) >= 4096:
                _view_geoms.clear()
            _view_geoms[key] = geoms
    if geoms is None:
        if op.name == "view":
            raise OpError(
                f"fjax.view: view size {list(outs[0].shape)} is not compatible with input tensor's size "
                f"{list(x.shape)} and stride {list(x.stride())} (at least one dimension spans across two "
                "contiguous subspaces). Use .reshape(...) instead."
            )
        return
    node_name = op.view_node(*args, **kwargs) if op.view_node is not None else None
    for i, (o, g) in enumerate(zip(outs, geoms)):
        o._view_from(x, g)
        if node_name is not None:
            o._multi = (node_name, i)


def run(name, entry, leaves, differentiable=True, linear=False):
    """Evaluate ``entry`` on ``leaves``: plain, or recorded on the tape when needed.

    Inside a trace (nn.Graph, functional transforms) the same jitted functions are called on
    tracers: JAX inlines them, and Python numbers keep their weak types either way. Under eager
    fusion a kernel at a signature it ran at before is recorded in the thread's segment instead
    (``fjax._lazy``): its outputs are Pending until something reads them.
    """
    if _fw.level is not None and not _fw.off:  # inside forward_ad.dual_level
        return _dual_run(name, entry, leaves, differentiable, linear)
    arrays = []
    pending = padded = False
    diff_idx = []
    for i, x in enumerate(leaves):
        if isinstance(x, Tensor):  # ``x._meta`` written out (the property call costs ~35 ns)
            st = x._st
            a = x._a if st is None or x._gen == st.gen else x._sync()
            if x._requires_grad:
                diff_idx.append(i)
        else:
            a = x
        t = type(a)
        if t is _Pending:
            pending = True
        elif t is _Padded or t is _PaddedDims:
            padded = True
        arrays.append(a)
    if padded or entry.bucketing:
        if entry.rows is not None and config.bucketing and not trace_state.depth:
            out = _bucket.run(name, entry, leaves, differentiable, linear, padded)
            if out is not None:
                return out
        if padded:  # a padded kernel takes the padded arrays; any other kernel the real rows
            if entry.takes_padded:
                arrays = [a.array if isinstance(a, _Padded) else a for a in arrays]
            else:
                arrays = [x._data if isinstance(a, _Padded) else a for x, a in zip(leaves, arrays)]
            pending = any(type(a) is _Pending for a in arrays)
    grad = bool(diff_idx) and differentiable and _grad_state.enabled
    diff_idx = tuple(diff_idx) if grad else ()
    sig = lazy = None
    if config.eager_fusion and not (trace_state.depth or _pstate.on) and entry.jit is not entry.pure:
        if not (grad and _grad_state.saved_hooks):
            sig = _lazy.signature(entry.vjp(diff_idx) if grad else entry.jit, arrays)
            if sig is not None and not (config.log_compiles and sig not in _lazy._seen):  # (a compile logs at its call)
                try:
                    known = _lazy.shapes(sig, arrays)
                except (TypeError, ValueError, IndexError) as err:
                    raise _error(name, err, leaves) from None
                lazy = _lazy.record(sig, known, arrays)  # (segment, pending result) or None
                if lazy is not None and entry.rows is not None and config.bucketing:
                    _bucket.note(entry, arrays)
    if lazy is not None:
        seg, result = lazy
        if not grad:
            return _wrap_plain(result)
    else:
        seg = None
        if pending:
            arrays = [_lazy.real(a) for a in arrays]
        try:
            result = entry.vjp(diff_idx)(*arrays) if grad else entry.jit(*arrays)
        except (TypeError, ValueError, IndexError) as err:
            if any(type(a) is MetaArray for a in arrays):  # jit rejects meta arrays: shapes only
                return _meta_run(name, entry, leaves, arrays, diff_idx if grad else None)
            raise _error(name, err, leaves) from None
        if sig is not None:
            _lazy.learn(sig, result)
            _lazy._ran.add(sig)
        if entry.rows is not None and config.bucketing and not trace_state.depth:
            _bucket.note(entry, arrays)
        if not grad:
            return _wrap_plain(result)
    out, vjp = result
    saved = None
    residuals = vjp
    if isinstance(vjp, _Residuals):
        saved = vjp.saves
        vjp = vjp.rebuild(arrays, out)
    eager = entry.jit is entry.pure
    if _grad_state.saved_hooks and not trace_state.depth:
        vjp, eager = _hooked_vjp(entry, diff_idx, leaves, arrays, residuals, out), True
    node_out = _record(name, entry.jit, out, vjp, leaves, arrays, diff_idx, linear, eager, saved)
    if seg is not None:  # the flush swaps its pending residuals for arrays
        node = _node_of(node_out)
        if node is not None:
            seg.nodes.append(weakref.ref(node))
    return node_out


_fw = _forward_ad.state


def _dual_run(name, entry, leaves, differentiable, linear):
    """``run`` inside a forward-AD level: the op as usual, and where a leaf carries a tangent,
    the tangents of its results (``forward_ad.propagate``: JAX's jvp of the same kernel)."""
    with _forward_ad.muted():
        out = run(name, entry, leaves, differentiable, linear)
    if _forward_ad.needs(leaves):
        _forward_ad.propagate(name, entry.pure, leaves, out)
    return out


def _wrap_plain(out):
    if isinstance(out, (tuple, list)):
        return tuple(Tensor._wrap(o) for o in out)
    return Tensor._wrap(out)


def _node_of(out):
    """The tape node behind an op's output(s) (an integer output carries none)."""
    for o in out if type(out) is tuple else (out,):
        if o._node is not None:
            return o._node
    return None


def _hooked_vjp(entry, diff_idx, leaves, arrays, residuals, out):
    """The VJP under ``autograd.graph.saved_tensors_hooks``: each tensor the backward reads goes
    through ``pack_hook`` now and is dropped; the backward unpacks it and rebuilds the VJP.

    Where the op's VJP saves only inputs and outputs (matmul saves both inputs, exp its result),
    those are what is packed, as torch packs an op's saved inputs and result, and the residuals
    are rebuilt from the unpacked values; input tensors the backward does not read are not
    kept. Where it saves values computed from the inputs (sin saves cos x), every input tensor
    is packed and the backward runs the op's VJP kernel again on the unpacked inputs."""
    pack, unpack = _grad_state.saved_hooks[-1]
    direct = isinstance(residuals, _Residuals) and residuals.saves is not None
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if direct:
        slots = [(s, arrays[s]) for s in residuals.saves if isinstance(leaves[s], Tensor)]
        slots += [(s, outs[-2 - s]) for s in sorted(set(residuals.src)) if s <= -2]
    else:
        slots = [(i, a) for i, a in enumerate(arrays) if isinstance(leaves[i], Tensor)]
    packed = [(s, a.shape, a.dtype, pack(Tensor._wrap(a))) for s, a in slots]
    # kept as they are: Python numbers and raw arrays (those the residuals hold, where direct)
    kept = [
        None if isinstance(x, Tensor) or (direct and i not in residuals.saves) else a
        for i, (x, a) in enumerate(zip(leaves, arrays))
    ]

    def vjp(ct):
        values, outputs = list(kept), {}
        for s, shape, dtype, p in packed:
            t = unpack(p)
            if not isinstance(t, Tensor) or tuple(t.shape) != tuple(shape):
                raise RuntimeError(
                    f"saved_tensors_hooks: unpack_hook must return the saved tensor's value, a Tensor of shape "
                    f"{tuple(shape)}; got {t!r:.80}"
                )
            value = t._data.astype(dtype)
            if s >= 0:
                values[s] = value
            else:
                outputs[-2 - s] = value
        if direct:
            real = residuals.rebuild(values, [outputs.get(k) for k in range(max(outputs, default=-1) + 1)])
        else:
            new_out, real = entry.vjp(diff_idx)(*values)
            if isinstance(real, _Residuals):
                real = real.rebuild(values, new_out)
        return _engine._apply_vjp(real, ct)

    return vjp


def _meta_run(name, entry, leaves, arrays, diff_idx=None):
    """An op with a meta-device input (torch's meta kernels): outputs shaped by ``jax.eval_shape``
    of the op, holding no values; recorded on the tape (``diff_idx``) with a backward that gives
    meta gradients. Other inputs must be meta too, or 0-d (torch's rule for mixing devices)."""
    for x, a in zip(leaves, arrays):
        if type(a) is not MetaArray and np.ndim(a) > 0:
            raise RuntimeError(
                f"{name}: Tensor on device {getattr(x, 'device', 'cpu')} is not on the expected device meta!"
            )
    try:
        out = jax.tree_util.tree_map(MetaArray.like, jax.eval_shape(entry.pure, *arrays))
    except (TypeError, ValueError, IndexError) as err:
        raise _error(name, err, leaves) from None
    if diff_idx is None:
        return tuple(Tensor._wrap(o) for o in out) if isinstance(out, (tuple, list)) else Tensor._wrap(out)
    grads = tuple(MetaArray.like(arrays[i]) for i in diff_idx)
    return _record(name, entry.jit, out, lambda ct: grads, leaves, arrays, diff_idx, True, True)


def _record(name, fn, out, vjp, leaves, arrays, diff_idx, linear, eager, saved=None):
    """Record one tape node. Its version checks cover the inputs its VJP saved (``saved``: input
    positions, or None for all): torch raises where a saved tensor was modified in place, and
    only there. An input tensor that takes no gradient and that the VJP does not save is not
    kept (``engine.Unread``): the node holds the residuals of its VJP and nothing else."""
    diff = set(diff_idx)
    inputs = []
    versions = None if linear else []
    for i, x in enumerate(leaves):
        if isinstance(x, Tensor):
            if i in diff:
                node = x._node
                if node is None:
                    inputs.append(x)
                elif node.padded and arrays[i].shape == x._meta.shape:  # the real rows of a bucketed result
                    inputs.append(x._edge())
                else:
                    inputs.append((node, x._idx))
            elif saved is None or i in saved or arrays[i].shape != x._meta.shape or type(arrays[i]) is MetaArray:
                inputs.append(arrays[i])
            else:  # a constant the backward does not read (c in x + c): not kept alive by the tape
                inputs.append(Unread(x, arrays[i], i))
            if versions is not None and (saved is None or i in saved):
                a = arrays[i]  # its shape and dtype name it in the error; the array is not kept
                versions.append((x._vc, x._vc[0], (i, a.shape, a.dtype)))
        else:
            inputs.append(x)
    multi = isinstance(out, (tuple, list))
    avals = [(o.shape, o.dtype) for o in out] if multi else (out.shape, out.dtype)
    node = Node(name, fn, vjp, tuple(inputs), avals, versions, eager)
    return _wrap_outputs(out, node)


def _wrap_outputs(out, node):
    if isinstance(out, (tuple, list)):
        return tuple(_wrap_one(o, node, i) for i, o in enumerate(out))
    return _wrap_one(out, node, 0)


def _wrap_one(arr, node, idx):
    if node is not None:
        inexact = _INEXACT.get(arr.dtype)
        if inexact is None:
            inexact = _INEXACT[arr.dtype] = bool(jax.numpy.issubdtype(arr.dtype, jax.numpy.inexact))
        if inexact:
            return Tensor._wrap(arr, node, idx)
    return Tensor._wrap(arr)


_INEXACT: dict = {}  # dtype -> whether it is floating or complex (what may carry a gradient)


def call_pure(name: str, fn, leaves):
    """Run a one-off pure function of ``leaves`` (Tensors/arrays) and record it as one node.

    Used where the function is new each time (create_graph replays, functional transforms
    with create_graph=True), so it is not jitted.
    """

    class _Once:
        pure = staticmethod(fn)
        jit = staticmethod(fn)
        rows, bucketing, takes_padded = None, False, False

        @staticmethod
        def vjp(diff_idx):
            return _vjp_of(fn, diff_idx)

    return run(name, _Once, leaves)


class _Kernel:
    """A fixed pure function of arrays as an op-table entry (``kernel``)."""

    rows, bucketing, takes_padded = None, False, False

    def __init__(self, fn):
        self.pure, self.jit, self.vjps = fn, _jit(fn), {}

    vjp = _Entry.vjp  # (per set of inputs that take gradients, the jitted VJP, kept)


def kernel(name: str, fn, differentiable: bool = False):
    """``fn``, a pure function of arrays returning one array, as ONE op of Tensors: compiled
    once per input signature, recorded on the tape (``differentiable``: its VJP is JAX's) and,
    under eager fusion, in the segment like any op; the profiler shows it as ``name``. Library
    code made of a fixed composition of ops (a distribution's validation or ``log_prob``) calls
    one kernel instead of dispatching each op.

        >>> double = kernel("double", lambda a: a * 2)
        >>> double(fjax.tensor([1.0, 2.0]))
        tensor([2., 4.], dtype=fjax.float32)
    """
    entry = _Kernel(fn)

    def call(*leaves):
        if _pstate.on and not _pstate.inside:
            return _profiler.op(name, call, leaves, {})
        return run(name, entry, list(leaves), differentiable)

    return call


_PLAIN = frozenset((bool, int, float, str, type(None)))


def kernel_of(name: str, fn, differentiable: bool = True):
    """``fn``, a function of Tensors and plain Python values (numbers, strings, None) that
    returns a Tensor or a tuple of Tensors and Nones, as ONE kernel (``differentiable``) per call
    pattern (which arguments are Tensors; the plain values, which the pattern holds): ``fn`` is
    traced once on tracer Tensors (``kernel``). A call with another kind of argument, inside a
    trace or autocast, or of a pattern whose trace failed (``fn`` reads a value on the host) runs ``fn`` as
    written; so does the call where the kernel raises, and ``fn``'s own error (a bad shape)
    raises from there. ``fn`` must not draw random numbers (a trace would fix its draws).

        >>> scaled = kernel_of("scaled", lambda x, w, alpha: (x @ w * alpha, None))
        >>> scaled(fjax.ones(1, 2), fjax.ones(2, 2), 0.5)
        (tensor([[1., 1.]], dtype=fjax.float32), None)
    """
    kernels: dict = {}  # call pattern -> (kernel, [output structure]), or None (op by op)

    def call(*args):
        if trace_state.depth or _amp_flag.on:  # (under autocast its ops cast as written)
            return fn(*args)
        pattern, tensors = [], []
        for a in args:
            if isinstance(a, Tensor):
                pattern.append(_LEAF)
                tensors.append(a)
            elif type(a) in _PLAIN:
                pattern.append((type(a), a))
            else:
                return fn(*args)
        key = tuple(pattern)
        found = kernels.get(key, False)
        if found is None:
            return fn(*args)
        if found is False:
            if len(kernels) >= _MAX_ENTRIES:
                kernels.clear()
            found = kernels[key] = _traced_kernel(name, fn, key, differentiable)
        run_it, shape = found
        try:
            outs = run_it(*tensors)
        except Exception:  # noqa: BLE001 - op by op raises what is real; if it does not, the
            out = fn(*args)  # function cannot be traced: op by op from now on
            kernels[key] = None
            return out
        outs = iter(outs if type(outs) is tuple else (outs,))
        single, slots = shape[-1]
        got = tuple(None if s is None else next(outs) for s in slots)
        return got[0] if single else got

    call.__name__ = call.__qualname__ = name
    call.__doc__ = fn.__doc__
    return call


def _traced_kernel(name, fn, pattern, differentiable):
    """``(kernel, shape)`` for ``kernel_of``: ``shape`` receives the output structure (a single
    Tensor or a tuple; where its Nones are) when the kernel is traced."""
    shape: list = []

    def pure(*arrays):
        it = iter(arrays)
        args = [Tensor._wrap(next(it)) if p is _LEAF else p[1] for p in pattern]
        with _tracing.tracing():
            out = fn(*args)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        if not all(o is None or isinstance(o, Tensor) for o in outs):
            raise TypeError(f"{name}: returned {type(out).__name__}, not Tensors")
        shape[:] = [(single, tuple(None if o is None else 1 for o in outs))]
        return out._data if single else tuple(o._data for o in outs if o is not None)  # (one output: one array)

    return kernel(name, pure, differentiable), shape


_RUN_CODE, _APPLY_CODE = run.__code__, Node.apply.__code__
new_kernel_cache(config.eager_cache_size)
_profiler._note_compile = _note_compile
config._cache_size_listeners.append(new_kernel_cache)
_dt._default_listeners.append(lambda _: new_kernel_cache(config.eager_cache_size))  # kernels of the old default
_profiler._RUN_CODE = run.__code__


def alias(fn, name: str):
    """The lifted op ``fn`` under torch's other name ``name`` (``OpDef.aliases``): the same code,
    closure and signature (no extra call), whose ``__name__`` is ``name`` and whose docstring
    says which op it is an alias of."""
    out = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__dict__.update(fn.__dict__)  # op, __signature__
    out.__qualname__ = name
    out.__module__ = fn.__module__
    out.__doc__ = f"Alias of :func:`fjax.{fn.__name__}`.\n\n{inspect.getdoc(fn) or ''}".rstrip()
    out.alias_of = fn.__name__
    return out


functions = types.SimpleNamespace(**{name: lift(op) for name, op in OPS.items()})
"""Every op-table entry as a Tensor-level function (``functions.add(x, y)``), and each of its
aliases (``functions.absolute``, ``abs`` under torch's other name)."""
for _op in OPS.values():
    for _name in _op.aliases:
        setattr(functions, _name, alias(getattr(functions, _op.name), _name))
_Above.ops = functions
_bucket._run, _bucket._LEAF = run, _LEAF
