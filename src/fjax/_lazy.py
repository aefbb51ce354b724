"""Lazy eager fusion: eager ops are recorded, not run, and a recorded sequence that repeats
runs as one XLA program.

An eager op call does not run its kernel: its output shapes and dtypes come from the kernel's
trace (``shapes``: ``jax.eval_shape`` once per input signature, remembered), so
``dispatch.run`` appends it to the thread's open ``Segment`` and returns tensors holding
``Pending`` values (shape, dtype, no data yet). Anything that needs the values — a host read
(``item``, ``numpy``, ``print``), an op that is not recorded (a non-jitted op, a trace, an input
on other devices), a write through a view, ``backward`` — calls ``Pending.force``, which
flushes the whole segment:

- on a segment's first sight its ops run one by one, each the kernel eager mode would have run
  (a one-off sequence of ops that ran before compiles nothing; eager's bits whatever else the
  segment holds), unless it is a training step (it ends in a fused backward) or repeats the ops
  and wiring of a segment seen at other shapes (a decode step one token longer), and a quarter
  of its ops or more are kernels that never ran: then its program compiles at once, fewer
  compiles than a kernel per op;
- from its second sight on, the segment (its ops, their wiring, the shapes of its inputs, which
  results are still referenced) is one ``jax.jit`` program: one XLA call per segment.

Where a segment ends depends only on the program (its host reads), never on what ran before,
and ``restart`` (at ``manual_seed``) forgets which segments were seen and which kernels ran: a
seeded rerun runs each segment the same way, so it gives the same bits. Shape and dtype errors
raise at the op's call (the trace raises them); only results still referenced when the segment
flushes leave the program, so intermediates XLA fuses away are never materialized. Tape nodes
recorded in a segment hold its ``Pending`` values as residuals; the flush swaps them for
arrays. ``fjax.config.eager_fusion`` / ``FJAX_EAGER_FUSION=0`` turns this off with the fused
backward. See docs/architecture.md, "Eager fusion".
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import math
import os
import sys
import threading
import warnings
from collections import OrderedDict

import jax
import numpy as np
from jax.sharding import NamedSharding, SingleDeviceSharding

from . import _jax_compat, _memory, _order
from . import profiler as _profiler
from ._config import config

_ARRAY = _jax_compat.ArrayImpl or type(jax.numpy.zeros(()))  # jax's concrete array class
_KEY = _jax_compat.PRNGKeyArray
_SCALARS = (int, float, bool, complex)
_Aval = jax.core.ShapedArray  # (its hash is cached: a signature of avals hashes fast)
_WEAK_INT = _Aval((), np.dtype(np.int64), weak_type=True)
_MAX_OPS = 1000  # a segment this long flushes: bounds its program and its pending memory
_LONG = 128  # a segment this long may end where one that reached ``_MAX_OPS`` ended (``_cuts``)
_WINDOW = 8  # the last ops, by kernel and input avals, that name a place in a loop (``_place``)
_MAX_CUTS = 256
_MAX_BACKWARDS = 4  # a segment holding this many fused backwards flushes before the next (``call``)
_MAX_SEEN = 16384
_MAX_PROGRAMS = 64

_stats = _profiler._fusion


class _Later:
    """A value whose shape and dtype are known now and whose array is computed when read
    (``force``): numpy reading it computes it."""

    __slots__ = ("shape", "dtype", "weak_type", "value")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.force(), dtype)


class Pending(_Later):
    """A value a segment will compute: its shape and dtype now, its array after the flush."""

    __slots__ = ("seg", "slot", "_dev", "aval")

    def __init__(self, aval, seg, slot, dev):
        self.shape, self.dtype, self.weak_type, self.aval, self._dev = aval.shape, aval.dtype, aval.weak_type, aval, dev
        self.seg, self.slot, self.value = seg, slot, None

    def devices(self):
        return self._dev

    def force(self):
        seg = self.seg
        if seg is not None:
            seg.flush()
            if self.seg is not None:  # the flush failed: its error again
                raise seg.error
        return self.value

    def __repr__(self):
        return f"Pending(shape={self.shape}, dtype={self.dtype})"


class Padded(_Later):
    """A value computed on a bucket (``fjax._bucket``): its real shape, and an array (or a Pending
    value) whose dim 0 is longer, holding the real rows first. The real rows are copied out
    when something reads the values; ops that take padded inputs read ``array``."""

    __slots__ = ("array",)

    def __init__(self, shape, array, value=None):
        self.shape, self.dtype, self.weak_type = shape, array.dtype, array.weak_type
        self.array, self.value = array, value

    def devices(self):
        return self.array.devices()

    def force(self):
        if self.value is None:
            self.value = unpad(real(self.array), self.shape[0])
        return self.value

    def __repr__(self):
        return f"Padded(shape={self.shape}, bucket={self.array.shape[0]}, dtype={self.dtype})"


def on_cpu(a) -> bool:
    dev = a.devices()
    return len(dev) == 1 and next(iter(dev)).platform == "cpu"


@functools.lru_cache(maxsize=1024)
def slicer(n):
    return jax.jit(lambda x: jax.lax.slice_in_dim(x, 0, n))


def like(host, a):
    """Host array ``host`` on ``a``'s device, committed there only if ``a`` is (jit tells them apart)."""
    if a.committed:
        return _jax_compat.host_to_device(host, next(iter(a.devices())), committed=True)
    return _jax_compat.host_to_device(host)


def first_rows(a, n: int):
    """The first ``n`` rows of array ``a``: on the CPU a numpy copy (no compile per ``n``)."""
    if on_cpu(a):
        return like(np.array(np.asarray(a)[:n]), a)
    return slicer(n)(a)


def count_rows(a, n: int, site):
    """The first ``n`` rows of ``a``, for an op whose row count only a host read gave
    (``nonzero``'s; ``site``: which call): ``first_rows``. ``fjax._bucket`` replaces it
    (``_bucket.count_rows``) to pad them to their bucket once the counts at ``site`` keep
    changing."""
    return first_rows(a, n)


def unpad(a, n: int):
    """The real ``n`` rows of a bucket array ``a`` (counted in ``bucket_stats``)."""
    _profiler._buckets["unpads"] += 1
    return first_rows(a, n)


steps = 0
"""Training or loop steps seen: backward passes and host reads of values (``item``, ``tolist``,
``numpy``). ``fjax._bucket`` pads a batch whose new sizes keep coming in different steps, not
the several shapes one step meets (an optimizer's loop over parameters)."""


def real(a):
    """``a``'s array: a Pending value is computed (its segment flushed) first, a Padded one's
    real rows copied out."""
    t = type(a)
    return a.force() if t is Pending or t is Padded else a


_seen: dict = {}  # (kernel, input avals) -> (output treedef, [(shape, dtype, weak_type)])
_programs: OrderedDict = OrderedDict()  # segment key -> its compiled program (an LRU)
_sighted: set = set()  # segment keys run since the last restart(): a second sight runs the program
_ran: set = set()  # signatures whose kernels ran on their own since the last restart()
_wired: set = set()  # hashes of the wiring of segments sighted since the last restart(), without shapes
_checked: set = set()  # hashes of the segment keys at value checks since the last restart()
# places (``_place``) where a segment ended at ``_MAX_OPS`` since the last restart(): a long loop
# with no host read, such as a sampler's, then ends its later segments at the same place in its
# body, so they repeat (one program, compiled once) instead of each ending wherever the 1000th op
# falls (a new program every time, and compiling 1000 ops takes seconds)
_cuts: set = set()
# a segment runs op by op at its first sight unless its kernels that never ran number at least
# this share of its ops (repeated layers share kernels: one compile each, against every op's
# code in a program)
_FRESH_FUSE = float(os.environ.get("FJAX_FRESH_FUSE", "0.25"))


_key_avals: dict = {}  # (shape, key dtype) -> aval


def signature(fn, arrays):
    """The key of ``fn`` at these inputs, or None when one is not recordable (a tracer, a
    numpy or meta array, ...)."""
    avals = []
    for a in arrays:
        t = type(a)
        if t is _ARRAY or t is Pending:
            avals.append(a.aval)
        elif t is _KEY:  # a random op's key (``Generator.next_key``): its aval costs ~15 us to build
            at = (a.shape, a.dtype)
            aval = _key_avals.get(at)
            if aval is None:
                aval = _key_avals[at] = a.aval
            avals.append(aval)
        elif t is int:  # as a device int (``numbers``): jit makes the same program of both
            avals.append(_WEAK_INT)
        elif t in _SCALARS:
            avals.append(t)
        elif t is np.ndarray:  # (a traced program's constants)
            avals.append(_Aval(a.shape, a.dtype))
        else:
            return None
    return (fn, tuple(avals))


def _known(leaves, treedef):
    """What ``_seen`` keeps of a kernel's result: its structure (None for a single array) and
    each array's aval (shape, dtype, weak_type)."""
    if len(_seen) >= _MAX_SEEN:
        _seen.clear()
    return (
        None if jax.tree_util.treedef_is_leaf(treedef) else treedef,
        [_Aval(x.shape, x.dtype, weak_type=x.weak_type) for x in leaves],
    )


def learn(sig, out) -> None:
    """Remember what ``sig``'s kernel returned (its structure, shapes and dtypes)."""
    leaves, treedef = jax.tree_util.tree_flatten(out)
    if any(type(x) is not _ARRAY for x in leaves):
        return
    _seen[sig] = _known(leaves, treedef)


def shapes(sig, arrays):
    """What ``sig``'s kernel returns on ``arrays`` (structure, shapes, dtypes), from a trace
    (``jax.eval_shape``: nothing compiles or runs; jit reuses the trace when the kernel runs).
    Raises the kernel's own shape or dtype error."""
    known = _seen.get(sig)
    if known is None:
        avals = [
            jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) if type(a) is Pending else a for a in arrays
        ]
        leaves, treedef = jax.tree_util.tree_flatten(jax.eval_shape(sig[0], *avals))
        known = _seen[sig] = _known(leaves, treedef)
    return known


class Segment:
    """The ops one thread recorded since its last flush (the same object records on after it)."""

    __slots__ = ("ops", "key", "ext", "ext_ids", "pending", "nodes", "dev", "lock", "error", "trains", "checks")

    def __init__(self, dev):
        self.ops = []  # (kernel, input refs): ref >= 0 an external input, ~j the j-th pending value
        self.key = []
        self.ext = []  # the external inputs (arrays and Python numbers)
        self.ext_ids = {}
        self.pending = []
        self.nodes = []  # weak references to the tape nodes whose VJPs hold this segment's pending values
        self.dev = dev
        self.lock = threading.Lock()
        self.error = None
        self.trains = 0  # the fused backwards it holds (``call``): a training step
        self.checks = []  # deferred value checks (``check_later``): (ok, recheck, site)

    def reads_global(self) -> bool:
        """Whether an input of this segment is a global (sharded) array: its values may be too."""
        return any(type(getattr(a, "sharding", None)) is NamedSharding for a in self.ext)

    def flush(self) -> None:
        with self.lock:
            if not self.ops:
                return
            ops, ext, pending, nodes, checks = self.ops, self.ext, self.pending, self.nodes, self.checks
            key = self.key
            self.ops, self.key, self.ext, self.ext_ids, self.pending, self.nodes = [], [], [], {}, [], []
            self.checks = []
            _open.discard(self)
            # only the values something still references leave the program (the list's reference
            # and getrefcount's own are 2)
            outputs = tuple(j for j in range(len(pending)) if sys.getrefcount(pending[j]) > 2)
            try:
                trains, self.trains = self.trains, 0
                values = _execute(tuple(key), tuple(ops), outputs, ext, trains, pending)
            except Exception as err:
                self.error = err
                raise
            for j, v in zip(outputs, values):
                pending[j].value = v
            for p in pending:
                p.seg = None
            for ref in nodes:
                node = ref()
                if node is not None:
                    node.settle()
        for ok, recheck, site in checks:
            if not np.asarray(ok.value):
                _raise_failed(recheck, site)


def program_key(key, outputs, ext) -> tuple:
    """What a segment's program is compiled for: its ops, their wiring and avals (``key``), the
    values it returns, and where its inputs are: the shardings (a global array's mesh and
    partitioning) of those not on the default device alone, by position. An array committed to
    the default device or not, and a Python number or the device scalar ``dispatch`` makes of it
    after a few uses, run the same program (keying every array's sharding told a step apart once
    one of its numbers became a device scalar, and compiled it again)."""
    return key, outputs, tuple([(i, a.sharding) for i, a in enumerate(ext) if type(a) is _ARRAY and _elsewhere(a)])


def _elsewhere(a) -> bool:
    s = a.sharding
    return type(s) is not SingleDeviceSharding or s._device != _jax_compat.default_device()


def _execute(key, ops, outputs, ext, trains=False, pending=None):
    prog_key = program_key(key, outputs, ext)
    if prog_key not in _sighted:
        if len(_sighted) >= _MAX_SEEN:
            _sighted.clear()
        _sighted.add(prog_key)
        # first sight: op by op, each its eager kernel (so a first sight gives eager's bits
        # whatever ops share its segment: manual_seed(s); x = d.sample(); check(x);
        # manual_seed(s); d.sample() repeats x exactly), unless it is a training step (it ends
        # in a fused backward) or the same ops at new shapes (a decode step, a new batch size),
        # and enough of those kernels never ran on their own (a first step): then compiling its
        # program costs less than compiling each kernel
        kernels = {(fn, avals) for fn, _, avals in key}
        wiring = hash((tuple(refs for _, refs, _ in key), outputs))  # (a collision only fuses sooner)
        again = wiring in _wired  # its ops and wiring ran before at other shapes (a growing sequence)
        if not again:
            if len(_wired) >= _MAX_SEEN:
                _wired.clear()
            _wired.add(wiring)
        if not (trains or again) or len(kernels - _ran) < _FRESH_FUSE * len(key):
            if len(_ran) >= _MAX_SEEN:
                _ran.clear()
            _ran.update(kernels)
            _stats["segments_replayed"] += 1
            return _replay(ops, outputs, ext)
    prog = _programs.get(prog_key)
    fresh = prog is None
    if fresh:
        donate, order = _donors(key, ext, pending, outputs)
        back = None
        if order != outputs:  # (the results come back in ``outputs``' order)
            at = {j: k for k, j in enumerate(order)}
            back = tuple(at[j] for j in outputs)
        fenced = frozenset(_fences(key, donate))
        prog = (jax.jit(_program(ops, order, donate, fenced), donate_argnums=0), donate, back)
        _stats["segment_compiles"] += 1
    else:
        try:  # (a try, not contextlib.suppress: no context manager per call)
            _programs.move_to_end(prog_key)
        except KeyError:  # another thread may have evicted it meanwhile
            pass
    _stats["segment_hits"] += 1
    _stats["ops_fused"] += len(ops)
    fn, donate, back = prog
    given = []
    for i in donate:
        if sys.getrefcount(ext[i]) > 2:  # held elsewhere this time (the list's reference and getrefcount's are 2)
            ext[i] = jax.numpy.array(ext[i], copy=True)
        given.append(ext[i])
        _stats["donated_bytes"] += ext[i].nbytes
        ext[i] = None  # (passed once, donated)
    if fresh:
        # compiled once, ahead of time, for the key's avals and shardings: a jitted call would
        # lower and compile again for each variant of its arguments the key does not tell apart
        # (an array committed to its device or not, a Python int or the device scalar ``numbers``
        # made of it), which differ from one step to the next (a parameter is uncommitted until
        # an update writes it)
        with warnings.catch_warnings():  # (jax warns at the compile where XLA could not reuse a donated buffer)
            warnings.filterwarnings("ignore", "Some donated buffers were not usable")
            fn = fn.lower(given, ext).compile()
        _programs[prog_key] = (fn, donate, back)
        while len(_programs) > _MAX_PROGRAMS:
            _programs.popitem(last=False)
    if _memory.due():  # fjax.cuda.reset_peak_memory_stats asked for peaks: the program's own bytes count
        _memory.program(fn, next((a.devices() for a in (*given, *ext) if type(a) is _ARRAY), ()))
    values = fn(given, ext)
    return values if back is None else [values[k] for k in back]


_DONATE_MIN = 1 << 16  # bytes: a smaller input is never donated (not worth a copy where it is held)


def _donors(key, ext, pending, outputs):
    """``(donate, order)`` for a segment's new program: the positions of the inputs ``ext`` it
    takes as donated (``donate_argnums``), and ``outputs`` reordered so that jit, which pairs
    donated inputs with results of their shape and dtype first come first, writes each result
    into the input it replaces (``then``'s gradient accumulation ``grad + ct``, an optimizer's
    update of its state), not into a fresh buffer. On the CPU, as on a GPU, a program's results
    are allocated when it starts, so a training step's new gradients and optimizer state would
    double those bytes through the whole forward and backward; torch updates them in place.

    An input qualifies where nothing but this segment references it now (an old gradient the
    backward accumulated into, an old parameter the optimizer's update replaced), it has at least
    ``_DONATE_MIN`` bytes, and the last op that reads it has a result of its shape and dtype still
    referenced: that result takes its buffer. The choice is made once, when the program compiles,
    so a later run never compiles again for it: an input chosen then that something else holds on
    a later run (a reference the user kept, a numpy view) is copied first, and the copy is
    donated. (Python's reference count sees every holder but another ``jax.Array`` object made on
    the same buffer by raw JAX, ``jax.device_put(a, a.device)``: fjax's own tensors never make
    one, and ``Tensor.to`` of the device a tensor is on returns the tensor.)"""
    if pending is None:
        return (), outputs
    readers = _readers(key)
    wanted = set(outputs)
    donate, paired = [], []
    start = 0
    firsts = []  # each op's first result slot
    for fn, _, avals in key:
        known = _seen.get((fn, avals))
        if known is None:  # (forgotten: _seen was cleared) no donation
            return (), outputs
        firsts.append(start)
        start += len(known[1])
    firsts.append(start)
    for i in range(len(ext)):
        k = readers[i][-1] if i in readers else -1  # the last op that reads it
        if k < 0 or type(ext[i]) is not _ARRAY or sys.getrefcount(ext[i]) > 2 or ext[i].nbytes < _DONATE_MIN:
            continue
        shape, dtype = tuple(ext[i].shape), ext[i].dtype
        for j in range(firsts[k], firsts[k + 1]):
            p = pending[j]
            if j in wanted and tuple(p.shape) == shape and p.dtype == dtype:
                wanted.discard(j)
                donate.append(i)
                paired.append(j)
                break
    return tuple(donate), tuple(paired) + tuple(j for j in outputs if j in wanted)


def _fences(key, donate):
    """The ops that a segment's program lets read their donated inputs only once all of their
    inputs exist (``_order.after``): the last reader of each donated input that other ops read
    too (a parameter its forward, backward and update read). Its result is written into that
    input's buffer, so every other read must come first; the wait makes the result depend on all
    of the op's inputs (the update of every parameter of a group on all of their gradients, and
    so on the backward's reads), without which XLA, unable to order the reads before the write,
    copies the input when the program starts and saves nothing. The values are the same."""
    readers = _readers(key)
    return {readers[i][-1] for i in donate if len(readers[i]) > 1}


def _readers(key) -> dict:
    """external input -> the ops of a segment (by position, in order) that read it"""
    readers: dict = {}
    for k, (_, refs, _) in enumerate(key):
        for r in set(refs):
            if r >= 0:
                readers.setdefault(r, []).append(k)
    return readers


def _program(ops, outputs, donate=(), fenced=frozenset()):
    """The segment as a function of its external inputs, returning the values in ``outputs``:
    ``program(donated, ext)`` where ``donated`` are the inputs at the positions ``donate`` (the
    arrays that ``ext`` holds None for, passed apart so that jit donates them)."""

    given = frozenset(donate)

    def program(donated, ext):
        if donate:
            ext = list(ext)
            for i, a in zip(donate, donated):
                ext[i] = a
        slots = []
        for k, (fn, refs) in enumerate(ops):
            args = [ext[r] if r >= 0 else slots[~r] for r in refs]
            if k in fenced:  # its donated inputs are read once all of its inputs exist
                mine = [n for n, r in enumerate(refs) if r in given]
                held = _order.after([args[n] for n in mine], [a for a in args if isinstance(a, jax.Array)])
                for n, a in zip(mine, held):
                    args[n] = a
            slots.extend(jax.tree_util.tree_leaves(fn(*args)))
        return [slots[j] for j in outputs]

    return program


def _replay(ops, outputs, ext):
    """``_program(ops, outputs)(ext)`` op by op, dropping each value after its last use, as eager
    would have freed it (a long first sight holds no more than eager did)."""
    last = {}
    for k, (_, refs) in enumerate(ops):
        for r in refs:
            if r < 0:
                last[~r] = k
    for j in outputs:
        last[j] = len(ops)
    dead = [[] for _ in ops]
    for j, k in last.items():
        if k < len(ops):
            dead[k].append(j)
    slots = []
    for k, (fn, refs) in enumerate(ops):
        start = len(slots)
        slots.extend(jax.tree_util.tree_leaves(fn(*[ext[r] if r >= 0 else slots[~r] for r in refs])))
        for j in range(start, len(slots)):
            if j not in last:  # read by nothing
                slots[j] = None
        for j in dead[k]:
            slots[j] = None
    return [slots[j] for j in outputs]


# ids of the device arrays kept by value (a Python number's, ``dispatch._device_int``; those of
# ``by_value``: a bucket's real-rows mask, a padded value's real length or shape): the same array
# whenever the value is equal, so a segment gives each use its own input, and its key does not
# depend on which of a step's values happen to be equal
numbers: set = set()


def by_value(cache: dict, key, make):
    """``cache[key]``, made by ``make()`` at its first use: a device array kept by value (one per
    count, length or shape), so it is in ``numbers``; at most 4096 kept."""
    a = cache.get(key)
    if a is None:
        if len(cache) >= 4096:
            numbers.difference_update([id(v) for v in cache.values()])
            cache.clear()
        a = cache[key] = make()
        numbers.add(id(a))
    return a


class _Local(threading.local):
    seg = None


_local = _Local()


@contextlib.contextmanager
def aside():
    """Ops inside this block record in a segment of their own, which runs when the block reads
    them or ends; the thread's segment stays open. A library check on concrete values that reads
    its result on the host (a distribution validating a given sample) then neither ends the
    segment recorded so far nor dispatches its ops one by one: repeated, it is one program."""
    saved, _local.seg = _local.seg, None
    try:
        yield
    finally:
        seg, _local.seg = _local.seg, saved
        if seg is not None:
            seg.flush()


def record(sig, known, arrays):
    """Append ``sig``'s kernel on ``arrays`` to the thread's segment. Returns the segment and the
    result (the kernel's output structure with ``Pending`` leaves), or None where it cannot be
    recorded (an input on another device, or on several)."""
    seg = _local.seg
    if seg is not None:
        n = len(seg.ops)
        if n >= _LONG and (n >= _MAX_OPS or (_cuts and _place(seg.key) in _cuts)):
            if n >= _MAX_OPS:
                if len(_cuts) >= _MAX_CUTS:
                    _cuts.clear()
                _cuts.add(_place(seg.key))
            seg.flush()
    if seg is None:
        dev = None
        for a in arrays:
            if type(a) is _ARRAY or type(a) is _KEY:
                dev = a.devices()
                break
            if type(a) is Pending:
                dev = a._dev
                break
        if dev is None or len(dev) != 1:
            return None
        seg = _local.seg = Segment(dev)
    for a in arrays:  # another segment's values first, outside this one's lock
        if type(a) is Pending and a.seg is not seg and a.seg is not None:
            a.force()
    with seg.lock:
        refs = []
        ext = seg.ext
        ext_ids = seg.ext_ids
        for a in arrays:
            t = type(a)
            if t is Pending:
                if a.seg is seg:
                    refs.append(~a.slot)
                    continue
                a = a.value  # computed: flushed since it was made
                t = type(a)
            if t is _ARRAY:
                r = ext_ids.get(id(a))
                if r is not None and id(a) in numbers:
                    r = None  # (a number's array: shared only when two numbers are equal)
                if r is None:
                    sh = a.sharding  # (one device's sharding, read without building its device set)
                    if (type(sh) is not SingleDeviceSharding or sh._device not in seg.dev) and a.devices() != seg.dev:
                        return None
                    r = ext_ids[id(a)] = len(ext)
                    ext.append(a)
                refs.append(r)
            else:
                refs.append(len(ext))
                ext.append(a)
        fn = sig[0]
        if not seg.ops:
            _open.add(seg)
        refs = tuple(refs)
        seg.ops.append((fn, refs))
        seg.key.append((fn, refs, sig[1]))
        treedef, avals = known
        dev = seg.dev
        base = len(seg.pending)
        if treedef is None:  # a single array
            out = Pending(avals[0], seg, base, dev)
            seg.pending.append(out)
            return seg, out
        leaves = [Pending(aval, seg, base + i, dev) for i, aval in enumerate(avals)]
        seg.pending.extend(leaves)
    return seg, jax.tree_util.tree_unflatten(treedef, leaves)


def _place(key) -> int:
    """Where a segment's recording stands: a hash of its last ``_WINDOW`` ops' kernels and input
    avals (not their wiring: the same op of a loop's body reads other slots each time round)."""
    return hash(tuple([(k[0], k[2]) for k in key[-_WINDOW:]]))


def then(fn, arrays, always: bool = False):
    """``fn(*arrays)`` (a jitted function; its result's structure is kept) recorded after the
    pending values among ``arrays``, so it does not end their segment (a write through a view
    into a storage a segment computes, BatchNorm's running statistics, an optimizer's update);
    ``fn`` runs now where nothing is pending or it cannot be recorded. ``always`` (a write
    through a view): recorded where nothing is pending too, with eager fusion on and the
    profiler off, so a buffer written row by row from host data after each host read
    (``buf[t].copy_(torch.from_numpy(obs))``) joins the next segment instead of dispatching each
    write alone (a jitted call: ~20-40 us here)."""
    if any(type(a) is Pending for a in arrays) or (always and config.eager_fusion and not _profiler._state.on):
        sig = signature(fn, arrays)
        if sig is not None:
            lazy = record(sig, shapes(sig, arrays), arrays)
            if lazy is not None:
                return lazy[1]
    return fn(*[real(a) for a in arrays])


def check_point(tag, pending: bool = True) -> bool:
    """Whether a value check on pending values (``tag``: which check) should be deferred to the
    flush that computes them (``check_later``), so that a check inside a loop does not end the
    loop's segment (an index a step computes, a distribution's arguments). Only a check point
    that repeats defers: the same check after the same recent ops (``_place``: their kernels and
    input shapes, not their wiring or how long the segment is) was met before since the last
    ``restart``. False at a first sight (one-off code, a loop's first steps): the caller checks
    now, so the error raises at the call, and records nothing. ``pending=False`` (the check's
    values were computed: it runs now) only notes the point: an epoch's short last batch,
    whose reads first run alone and are recorded once their offsets are device scalars, then
    defers both of its index checks at its second sight, one segment from then on, instead of
    one more split of its step per check and epoch."""
    seg = _local.seg
    if seg is None or not seg.ops:
        return False
    point = hash((tag, _place(seg.key)))  # (a collision only defers sooner)
    if point in _checked:
        return pending
    if len(_checked) >= _MAX_SEEN:
        _checked.clear()
    _checked.add(point)
    return False


def check_later(ok, recheck) -> None:
    """Test the recorded boolean ``ok`` when its segment runs (after ``check_point`` said so):
    where it comes out false, the flush (the next host read, ``backward`` or ``step()``,
    ``fjax.sync()``) calls ``recheck()``, the check on the computed values, which raises the
    op's own error, noting the line that called the op; as after a device-side assert in torch
    on a GPU, the ops recorded after it have run."""
    ok.seg.checks.append((ok, recheck, _user_site()))


def _user_site():
    """(file, line) of the innermost caller outside fjax."""
    f = sys._getframe(2)
    while f is not None and f.f_globals.get("__name__", "").startswith("fjax."):
        f = f.f_back
    return (f.f_code.co_filename, f.f_lineno) if f is not None else None


def _raise_failed(recheck, site) -> None:
    where = "" if site is None else f"{site[0]}:{site[1]}: {linecache.getline(*site).strip()}"
    try:
        recheck()
    except Exception as err:
        if where:
            err.add_note(f"(the op was called at {where}; eager fusion checked it when its segment ran)")
        raise err.with_traceback(None) from None
    raise RuntimeError(f"an op's deferred value check failed (called at {where or 'an unknown line'})")


_open: set = set()  # segments not flushed yet, of every thread

_split: dict = {}  # program -> the same as a function of its arguments flattened


def call(program, n_seeds, arrays, keep_pending=False):
    """``program(arrays[:n_seeds], arrays[n_seeds:])`` (a fused backward) as the last op of this
    thread's segment, then the flush: the recorded forward and its backward run as one program.
    ``keep_pending`` (``Tensor.backward``): it returns the results pending instead, so the optimizer's
    update joins the program (``step_end`` flushes it); a segment holds at most
    ``_MAX_BACKWARDS`` backwards (a gradient penalty's step has three), so a loop with neither a
    host read nor an optimizer still cuts its segments at the same places each time round.
    Without a pending input, or where one cannot be recorded, it simply runs."""
    if not any(type(a) is Pending for a in arrays):
        return program(arrays[:n_seeds], arrays[n_seeds:])
    fn = _split.get(program)
    if fn is None:
        fn = _split[program] = jax.jit(lambda *a: program(list(a[:n_seeds]), list(a[n_seeds:])))
        if len(_split) > 2 * _MAX_PROGRAMS:
            _split.pop(next(iter(_split)))
    if _local.seg is not None and _local.seg.trains >= _MAX_BACKWARDS:
        _local.seg.flush()
    sig = signature(fn, arrays)
    lazy = None
    if sig is not None:
        lazy = record(sig, shapes(sig, arrays), arrays)
    if lazy is None:
        flush()
        return fn(*[real(a) for a in arrays])
    seg, out = lazy
    seg.trains += 1
    if keep_pending:
        return out
    seg.flush()
    return jax.tree_util.tree_map(real, out)


def step_end() -> bool:
    """An optimizer's step is done: a training step's segment (one holding a backward) runs.
    Returns whether anything was recorded since the last flush (values may be pending)."""
    seg = _local.seg
    if seg is None or not seg.ops:
        return False
    if seg.trains:
        seg.flush()
    return True


restarted: list = []  # what else forgets its history at restart() (bucketing, the fused backward)


def restart() -> None:
    """Run what is recorded and start the history that decides how things run afresh, so that
    code run again from here runs exactly as it did the first time (``manual_seed`` calls this:
    a seeded rerun gives the same bits). A segment's first sight since the last restart runs op
    by op and later ones run its program, which may round differently in the last bit; compiled
    programs stay cached."""
    flush()
    _sighted.clear()
    _ran.clear()
    _wired.clear()
    _checked.clear()
    _cuts.clear()
    for forget in restarted:
        forget()


def flush() -> None:
    """Run every recorded op now: before ``backward`` reads the tape's VJPs, before a compiled
    step donates arrays a segment may read, at ``fjax.sync()``."""
    for seg in list(_open):
        seg.flush()


def sync() -> None:
    """Run the ops eager fusion has recorded and not run yet (they run anyway when a value is
    read: ``item()``, ``print``, ``numpy()``, ``backward()``). Dispatches them; JAX runs them
    asynchronously, so timing code waits with ``fjax.cuda.synchronize()``, which syncs first.

    Example::

        >>> x = fjax.ones(3)
        >>> y = (x * 2).exp()
        >>> fjax.sync()
        >>> y.tolist()[0] > 7
        True
    """
    flush()
