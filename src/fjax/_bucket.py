"""Bucketed dimensions: a batch that changes size every step compiles once per bucket.

XLA compiles one program per input shape, so a training loop whose batch size changes every
step would compile every op again at every new size. An op that declares its rows
(``OpDef.rows``, a ``Rows``: its output's dim 0 depends only on the same rows of some inputs)
and has met new sizes of that dimension in three different steps (backward passes or host
reads) at most 16 apart runs from then on with it padded to a bucket size
(``bucket``: powers of two and their 1.5x midpoints, ``fjax.config.bucket_sizes`` /
``bucket_floor``): one kernel per bucket instead of one per size. A new bucket first borrows a
larger one its family ran at (``_reuse``), so a batch drawn anew each step stops compiling.

- Its result is a ``Padded`` value (``fjax._lazy``): the tensor shows the real shape, and holds
  the padded array. The next op that declares rows takes the padded array as it is, so a chain
  of such ops (Linear, activation, Linear, loss) never leaves the bucket; anything else (a host
  read, an op without rows, a view) copies the real rows out first (``materialize``).
- Padding rows repeat a real row (finite wherever the real rows are), or hold the op's declared
  pad value (``Rows.pad``: cross_entropy's targets hold ``ignore_index``). The kernel masks the
  gradient flowing into padding rows, so no padding row reaches a parameter's gradient; a loss
  reduced over the batch sums only the real rows (``Rows.reduce``).
- Real rows are the unpadded op's up to the last bits (a reduction over the rows may sum in
  another order).

- A sequence that grows by a token per step pads along its own dim (``_dims.PaddedDims``,
  ``run_dims``): ``cat`` along a dim that keeps growing writes into a bucket-sized buffer, a
  slice ``[:T]`` of a real buffer at a padded length reads the bucket, and ops that declare
  ``Rows.dims`` (a ``Plan``: how padded dims pass through, and the identity their padding holds
  where the op reduces over them) run on the bucket arrays with the real length as an argument.

On the CPU, padding and copying the real rows out go through numpy: no compile at all. See
docs/architecture.md, "Bucketed dimensions".
"""

from __future__ import annotations

import functools
import inspect
import math
import os

import jax
import jax.numpy as jnp
import numpy as np

from . import _dims, _lazy
from . import profiler as _profiler
from ._config import config
from .autograd.engine import Node
from .autograd.grad_mode import _state as grad_state
from .device import MetaArray
from .tensor import Tensor, _Above

Padded = _lazy.Padded
_stats = _profiler._buckets
_run = None  # dispatch.run (set by dispatch: it imports this module)
_LEAF = None  # dispatch's leaf marker in argument templates (set by dispatch)
# in how many steps an op's batch must meet new sizes before it pads (fixed-shape code never
# pads); tests set 1 to pad every op with rows from its second call
_NEEDS = int(os.environ.get("FJAX_BUCKET_AFTER", "3"))
# ... within how many steps: a batch that keeps changing brings new sizes step after step; code
# whose few fixed shapes meet one op far apart (a rollout's batch, an update's, an evaluation's)
# does not, and runs unpadded
_WINDOW = 16
# how many calls in a row a growing op (``cat`` along a dim) must extend its own last result
# before it pads: one (a KV cache or a generated sequence; each unpadded length is a new kernel
# per op, ~6 a token)
_CHAINS = 1


def bucket(n: int) -> int:
    """The bucket size ``n`` rows are padded to.

    >>> [bucket(n) for n in (3, 9, 13, 17, 33, 49, 100)]
    [8, 12, 16, 24, 48, 64, 128]
    """
    sizes = config.bucket_sizes
    if sizes:
        for s in sizes:
            if s >= n:
                return s
        return n
    floor = config.bucket_floor
    if n <= floor:
        return floor
    p = 1 << (n - 1).bit_length()
    mid = 3 * p // 4
    return mid if mid >= n else p


def _keeps_changing(steps: dict, n: int) -> bool:
    """Record that size ``n`` came (``steps``: size -> the step it first came in) and return
    whether sizes keep changing: new ones came in ``_NEEDS`` different steps at most
    ``_WINDOW`` apart (a batch that changes step after step, not a few fixed shapes met far
    apart). False for a size seen before."""
    if n in steps:
        return False
    steps[n] = _lazy.steps
    recent = sorted(set(steps.values()))[-_NEEDS:]
    return len(recent) >= _NEEDS and recent[-1] - recent[0] <= _WINDOW


# a data-dependent op's call -> {count: the step it first came}, or, once it pads, [the bucket it
# pads to, the step that bucket last came]
_counts: dict = {}
_HOLD = 64  # steps a padding call keeps its highest bucket while smaller counts come


def count_bucket(site, n: int) -> int:
    """The size ``n`` rows of a data-dependent op's result are padded to (``count_rows``;
    ``site``: the op, its input's shape and dtype): ``n`` until new counts there came in three
    different steps close together (the rule of ``note``: its consumers would pad from then on
    anyway), then the highest bucket its counts met in the last ``_HOLD`` steps.

    Holding the highest bucket makes the calls that share a site share one size: the routed rows
    of every expert of a mixture (``(top_idx == e).nonzero()``, one site for all experts) come
    padded to the same bucket, so a step that runs them all (and their backward) is one program
    whatever the experts' counts, instead of one per combination of their buckets. A site whose
    counts fall for good drops to their bucket ``_HOLD`` steps later."""
    seen = _counts.get(site)
    if type(seen) is list:
        size = bucket(n)
        if size >= seen[0] or _lazy.steps - seen[1] > _HOLD:
            seen[0], seen[1] = size, _lazy.steps
        return seen[0]
    if seen is None:
        if len(_counts) >= 4096:
            _counts.clear()
        seen = _counts[site] = {}
    if _keeps_changing(seen, n):
        size = bucket(max(seen))
        _counts[site] = [size, _lazy.steps]
        return size
    return n


def count_rows(a, n: int, site):
    """``_lazy.count_rows`` with bucketing: on the CPU, once the counts at ``site`` keep changing
    (``count_bucket``), the first ``n`` rows of ``a`` padded to their bucket as a ``Padded``
    value, so the ops that consume it and declare rows (a gather of these rows, ``index_add``)
    take it as it is instead of each padding it again through the host."""
    if n > 1 and config.bucketing and _lazy.on_cpu(a):
        size = count_bucket(site, n)
        if size > n:
            return Padded((n, *a.shape[1:]), _lazy.like(pad(np.asarray(a)[:n], size), a))
    return _lazy.first_rows(a, n)


_lazy.count_rows = count_rows
_lazy.restarted.append(_counts.clear)


@functools.lru_cache(maxsize=None)
def _padder(size):
    def pad(x):
        extra = jnp.broadcast_to(x[-1:], (size - x.shape[0],) + x.shape[1:])
        return jnp.concatenate([x, extra])

    return jax.jit(pad)


def pad(a, size: int):
    """``a`` with its last row repeated up to ``size`` rows: on the CPU through numpy."""
    _stats["pads"] += 1
    if isinstance(a, np.ndarray):
        return np.concatenate([a, np.repeat(a[-1:], size - a.shape[0], axis=0)])
    if _lazy.on_cpu(a):
        h = np.asarray(a)
        return _lazy.like(np.concatenate([h, np.repeat(h[-1:], size - h.shape[0], axis=0)]), a)
    return _padder(size)(a)


@functools.lru_cache(maxsize=4096)
def _pad_back(extra):
    """The VJP of taking the first rows of an array ``extra`` rows longer: zero rows appended."""

    def vjp(ct):
        return (jnp.concatenate([ct, jnp.zeros((extra,) + ct.shape[1:], ct.dtype)]),)

    return jax.tree_util.Partial(vjp)


@functools.lru_cache(maxsize=4096)
def _cut_back(n):
    """The VJP of padding an array of ``n`` rows: its first ``n`` rows."""
    return jax.tree_util.Partial(lambda ct: (jax.lax.slice_in_dim(ct, 0, n),))


def materialize(t):
    """Give tensor ``t`` (holding a Padded value) its real rows. Its tape node stays the padded
    one: an op that reads the real rows joins the tape through ``unpad_edge``."""
    value = t._a.force()
    t._a = value
    return value


def unpad_edge(node, idx, shape, dtype):
    """Where an op reading the real rows (``shape``) of output ``idx`` of padded ``node`` joins
    the tape: an ``Unpad`` node whose VJP appends the padding's zero rows."""
    bucket = tuple((node.out_avals[idx] if node.multi else node.out_avals)[0])
    shape = tuple(shape)
    if bucket[1:] != shape[1:]:  # padded dims past dim 0 (``PaddedDims``)
        unpad = Node("Unpad", _dims.cutter(shape), _grow_back(bucket, shape), ((node, idx),), (shape, dtype))
        return unpad, 0
    n = shape[0]
    unpad = Node("Unpad", _lazy.slicer(n), _pad_back(bucket[0] - n), ((node, idx),), (shape, dtype))
    return unpad, 0


@functools.lru_cache(maxsize=4096)
def _grow_back(bucket, shape):
    """The VJP of taking the leading ``shape`` block of a ``bucket``-shaped array: zeros around it."""

    def vjp(ct):
        return (jnp.pad(ct, [(0, b - s) for b, s in zip(bucket, shape)]),)

    return jax.tree_util.Partial(vjp)


def real_rows_hook(hook, shape):
    """Tensor hook ``hook`` on a bucketed result: it sees the real block (``shape``) of the
    gradient, and what it returns gets the padding's zeros back."""
    shape = (shape,) if type(shape) is int else tuple(shape)

    def on_padded(grad):
        bucket = tuple(grad.shape)
        out = hook(Tensor._wrap(_dims.cut(grad._data, shape[: len(bucket)])))
        if out is None or not isinstance(out, Tensor) or tuple(out.shape)[: len(shape)] != shape:
            return out  # None, or a result the engine rejects with torch's message
        full = shape + bucket[len(shape) :]
        return Tensor._wrap(_grow_back(bucket, full)(out._data)[0])

    on_padded.__name__ = getattr(hook, "__name__", type(hook).__name__)
    return on_padded


def _padded_input(x, size):
    """Tensor ``x`` (real rows) as an input of a padded kernel: a tape node when it requires
    grad; else ``x`` itself, now holding a Padded value (its real array kept: reading it costs
    nothing, and the next op reuses the padding)."""
    real = x._data
    padded = pad(real, size)
    if x._requires_grad and grad_state.enabled:
        inp = x._edge() if x._node is not None else x
        node = Node("Pad", _padder(size), _cut_back(real.shape[0]), (inp,), (padded.shape, padded.dtype))
        t = Tensor._wrap(padded, node, 0)
        t._vc = x._vc  # the op saves x: an in-place write of x later must fail its backward, as torch's
        return t
    if x._st is None and not x._requires_grad:
        x._a = Padded(real.shape, padded, real)
        return x
    return Tensor._wrap(padded)


class _Spec:
    """What an op entry's ``Rows`` means at its argument template."""

    __slots__ = ("rows", "batched", "names", "positions", "pads", "reduce", "out", "statics")


def _template(entry):
    """``(statics, positions, lists)`` of an op entry's argument template: the static values by
    parameter (defaults, then the template's constants), each tensor parameter's leaf position
    (a list parameter's elements as ``name[k]``), and each list parameter's leaf positions."""
    op = entry.op
    statics = {
        k: v.default for k, v in inspect.signature(op.fn).parameters.items() if v.default is not inspect.Parameter.empty
    }
    positions, lists = {}, {}
    count = 0

    def walk(t, name):
        nonlocal count
        if t is _LEAF:
            if name is not None:
                positions[name] = count
            count += 1
        elif type(t) is tuple and t and t[0] == "seq":
            for k, e in enumerate(t[2]):
                if e is _LEAF and name is not None:
                    lists.setdefault(name, []).append(count)
                    positions[f"{name}[{k}]"] = count
                walk(e, None)
        elif type(t) is tuple and t and t[0] == "c" and name is not None:
            statics[name] = t[1]

    for i, t in enumerate(entry.args_t):
        walk(t, op.params[i] if i < len(op.params) else None)
    for k, t in entry.kwargs_t:
        walk(t, k)
    return statics, positions, lists


def _spec(entry):
    """The entry's ``_Spec``, or False where this template cannot pad (a legacy ``reduce=``)."""
    rows = entry.op.rows
    statics, positions, lists = _template(entry)
    spec = _Spec()
    spec.rows, spec.statics, spec.positions = rows, statics, positions
    params = rows.params(statics) if callable(rows.params) else rows.params
    spec.names = {positions[p]: p for p in params if p in positions}
    spec.names.update((i, p) for p in params for i in lists.get(p, ()))
    spec.batched = tuple(sorted(spec.names))
    pads = rows.pad(statics) if callable(rows.pad) else rows.pad or {}
    spec.pads = {positions[p]: v for p, v in pads.items() if p in positions}
    spec.reduce = None
    spec.out = rows.out(statics) if rows.out is not None else True
    if rows.reduce is not None:
        how = statics.get(rows.reduce)
        if (
            how not in ("none", "mean", "sum")
            or statics.get("size_average") is not None
            or statics.get("reduce") is not None
        ):
            return False
        if how != "none":
            spec.reduce, spec.out = how, False
    if not spec.batched:
        return False
    return spec


def _described(leaves, positions):
    """{parameter: (shape, dtype)} of the call's array arguments."""
    out = {}
    for name, i in positions.items():
        x = leaves[i]
        a = getattr(x, "_meta", x)
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            out[name] = (tuple(a.shape), a.dtype)
    return out


_noted: list = []  # the entries whose sizes are being counted


def forget() -> None:
    """Forget the sizes every op met: no op pads until its batch changes again (at
    ``manual_seed``, through ``_lazy.restart``, and between tests, so whether an op pads never
    depends on what ran before)."""
    for entry in _noted:
        entry.sizes, entry.bucketing, entry.last = None, False, None
    _noted.clear()
    _ran.clear()


_lazy.restarted.append(forget)


def _family(spec, arrays):
    """A call's signature less its batch size: (the shape past dim 0 of each batched input, the
    shape of the others, dtypes); None where the first batched input has no batch dim."""
    first = getattr(arrays[spec.batched[0]], "shape", ())
    if not first:
        return None
    key = []
    for i, a in enumerate(arrays):
        shape = getattr(a, "shape", None)
        if shape is None:
            key.append(type(a))
        else:
            key.append((tuple(shape[1:]) if i in spec.names and len(shape) else tuple(shape), a.dtype))
    return first[0], tuple(key)


def note(entry, arrays) -> None:
    """An op ran or was recorded unpadded. Its batch pads from now on, for calls of this
    family (``_family``), once new sizes of it came in three different steps (``_lazy.steps``)
    at most ``_WINDOW`` steps apart: a batch that keeps changing, not the shapes one step meets
    (an optimizer's loop over parameters of several sizes) nor a few fixed shapes met far apart."""
    spec = entry.spec
    if spec is None:
        spec = entry.spec = _spec(entry)
    if spec is False:
        return
    if spec.rows.grows is not None:
        _grows_note(entry, spec, arrays)
    first = getattr(arrays[spec.batched[0]], "shape", ())
    if not first or first[0] == entry.last:
        return  # the batch size of its last call: nothing new (a fixed-shape loop stops here)
    entry.last = first[0]
    found = _family(spec, arrays)
    if found is None:
        return
    n, family = found
    sizes = entry.sizes
    if sizes is None:
        sizes = entry.sizes = {}
        _noted.append(entry)
    steps = sizes.get(family)
    if steps is None:
        steps = sizes[family] = {}  # size -> the step it first came in
    if _keeps_changing(steps, n):
        _pad_family(entry, family)


_ran: dict = {}  # (op entry, family) -> {bucket: its calls that ran at a larger one; -1 once it ran at its own}
_REUSE = 4  # a new size runs at a larger bucket its family ran at, up to this many times its own ...
_RENT = 16  # ... for its bucket's first calls, then at its own bucket


def _reuse(key, size: int) -> int:
    """The bucket a family's padded call runs at (``size``: its own bucket). A bucket the family
    never ran at borrows, for its first ``_RENT`` calls, the smallest bucket it did run at that is
    at most ``_REUSE`` times as large, trading padded rows for a compile; from then on it runs at
    its own (the waste of a size that keeps coming is bounded, a rare size never compiles). A loop
    whose batch size is drawn anew each step stops compiling once its warm-up met a few buckets:
    the borrowed bucket's step (backward and optimizer update included) is a program it has."""
    ran = _ran.get(key)
    if ran is None:
        if len(_ran) >= 4096:
            _ran.clear()
        ran = _ran[key] = {}
    calls = ran.get(size, 0)
    if calls >= 0:
        larger = [b for b, c in ran.items() if c < 0 and size < b <= _REUSE * size]
        if larger and calls < _RENT:
            ran[size] = calls + 1
            return min(larger)
        ran[size] = -1
    return size


def _pad_family(entry, family) -> None:
    if not entry.bucketing:
        entry.bucketing = set()
        if entry.sizes is None:
            entry.sizes = {}
            _noted.append(entry)
    entry.bucketing.add(family)


def run(name, entry, leaves, differentiable, linear, padded):
    """``entry`` on ``leaves`` with the batch padded to its bucket; None where this call has no
    batch to pad (then the caller runs it as it is). ``padded``: a leaf holds a Padded value."""
    if entry.rows.dims is not None and (
        (entry.bucketing and _GROW in entry.bucketing)
        or any(isinstance(x, Tensor) and type(x._meta) is _dims.PaddedDims for x in leaves)
    ):
        out = run_dims(name, entry, leaves, differentiable, linear)
        if out is not None or any(isinstance(x, Tensor) and type(x._meta) is _dims.PaddedDims for x in leaves):
            return out
    spec = entry.spec
    if spec is None:
        spec = entry.spec = _spec(entry)
    if spec is False:
        return None
    shapes = {}
    for i in spec.batched:
        x = leaves[i]
        a = x._meta if isinstance(x, Tensor) else x
        if isinstance(a, jax.core.Tracer):
            return None  # inside a JAX transform (fjax.func, vmap): shapes are the transform's
        if type(a) is MetaArray or not hasattr(a, "shape"):
            if type(a) is MetaArray:
                return None
            continue  # a Python number
        if getattr(a, "weak_type", False):
            return None  # numpy would not keep it weak
        if (
            type(a) is not Padded
            and type(a) is not _lazy.Pending
            and len(a.devices() if hasattr(a, "devices") else ()) > 1
        ):
            return None  # a global (sharded) array
        shapes[i] = (tuple(a.shape), a.dtype)
    if not shapes:
        return None
    rows = spec.rows
    if rows.broadcast:
        nd = max(len(s) for s, _ in shapes.values())
        if nd == 0:
            return None
        n = max(s[0] for s, _ in shapes.values() if len(s) == nd)
        if any(len(s) == nd and s[0] not in (1, n) for s, _ in shapes.values()):
            return None
        batched = [i for i, (s, _) in shapes.items() if len(s) == nd and s[0] == n]
    else:
        if any(len(s) == 0 for s, _ in shapes.values()):
            return None
        sizes = {s[0] for s, _ in shapes.values()}
        if len(sizes) != 1:
            return None
        (n,) = sizes
        batched = list(shapes)
    if n < 2:
        return None
    if rows.when is not None and not rows.when(spec.statics, _described(leaves, spec.positions)):
        return None
    size = bucket(n)
    if not padded:  # pads only a family whose batch kept changing
        bucketing = entry.bucketing
        found = _family(spec, [getattr(x, "_meta", x) for x in leaves])
        if not bucketing or found is None or found[1] not in bucketing:
            return None
        if n not in _live:  # (a real length of padded dims made lately: their bucket, so the two meet)
            size = _reuse((entry, found[1]), size)
    for i in batched:  # a padded input keeps its size where it holds more (``count_bucket``'s held bucket)
        a = getattr(leaves[i], "_meta", None)
        if type(a) is Padded and a.array.shape[0] > size:
            size = a.array.shape[0]
    new = list(leaves)
    for i, x in enumerate(leaves):
        if not isinstance(x, Tensor):
            if i in batched and x.shape[0] != size:
                new[i] = pad(x, size)
            continue
        a = x._meta
        if i in batched:
            if (a.array.shape[0] if type(a) is Padded else a.shape[0]) != size:  # else: bucket-sized already
                new[i] = _padded_input(x, size)
        elif type(a) is Padded:
            materialize(x)  # not batched here: its real rows
    kernel = entry if rows.resize is None else _resized(entry, rows.resize(spec.statics, n, size))
    masked = kernel.masked
    if masked is None:
        masked = kernel.masked = _masked_entry(kernel, spec)
    if padded:  # met a padded batch: this family pads from now on (a bucket-sized batch too)
        found = _family(spec, [getattr(x, "_meta", x) for x in leaves])
        if found is not None:
            _pad_family(entry, found[1])
    out = _run(name, masked, [_mask(n, size), *new], differentiable, linear)
    rest = math.prod(shapes[batched[0]][0][1:])
    _stats["calls"] += 1
    _stats["ops"][name] = _stats["ops"].get(name, 0) + 1
    _stats["real_elements"] += n * rest
    _stats["padded_elements"] += (size - n) * rest
    if spec.out and size != n:
        for o in out if type(out) is tuple else (out,):
            a = o._a
            if a.ndim and a.shape[0] == size:
                o._a = Padded((n, *a.shape[1:]), a)
                if o._node is not None:
                    o._node.padded = True
    return out


_resized_entries: dict = {}  # (entry, changes) -> its bucket's entry; (op, templates) -> entry


def _resized(entry, changes: dict):
    """``entry`` with the static arguments ``changes`` (``Rows.resize``: a shape naming the bucket
    size): one entry, and so one kernel, per bucket however many real sizes map to it."""
    key = (entry, tuple(changes.items()))
    found = _resized_entries.get(key)
    if found is None:
        if len(_resized_entries) >= 4096:
            _resized_entries.clear()
        for name, value in changes.items():
            entry = entry.with_static(name, value)
        found = _resized_entries.setdefault((entry.op.name, entry.args_t, entry.kwargs_t), entry)
        _resized_entries[key] = found
    return found


@jax.custom_vjp
def _real_rows_only(y, valid):
    """``y``, whose gradient reaches only the rows ``valid`` marks. Its VJP keeps ``valid``
    itself (an input of the padded kernel), so the tape's version checks still see which of the
    op's inputs its backward reads."""
    return y


def _real_rows_fwd(y, valid):
    return y, valid


def _real_rows_bwd(valid, ct):
    keep = valid.reshape(valid.shape + (1,) * (ct.ndim - 1))
    return jnp.where(keep, ct, jnp.zeros((), ct.dtype)), None


_real_rows_only.defvjp(_real_rows_fwd, _real_rows_bwd)

_masks: dict = {}


def _mask(n, size):
    """The rows of a ``size`` bucket that are real (the first ``n``): one device array per pair,
    an input of the padded kernel (a residual its VJP keeps is then an input, not a value the
    version checks would have to assume it read from the others)."""
    return _lazy.by_value(_masks, (n, size), lambda: jax.device_put(np.arange(size) < n))


def _masked_entry(entry, spec):
    """The kernel ``entry`` runs padded: ``(valid, *arrays)``, ``valid`` the real rows."""
    base = entry
    if spec.reduce is not None:  # the op per row ('none'), its real rows reduced here
        base = entry.with_static(spec.rows.reduce, "none")
    pure, masked_op = base.pure, spec.rows.masked
    pads, reduce, out_rows = dict(spec.pads), spec.reduce, spec.out

    def masked(valid, *arrays):
        size = valid.shape[0]

        def rows_mask(x):
            return valid.reshape((size,) + (1,) * (x.ndim - 1))

        arrays = list(arrays)
        for i, v in pads.items():
            a = arrays[i]
            if jnp.ndim(a) and a.shape[0] == size:
                arrays[i] = jnp.where(rows_mask(a), a, jnp.asarray(v, a.dtype))
        out = base.calling(masked_op, valid=valid)(*arrays) if masked_op else pure(*arrays)
        if reduce is not None:
            total = jnp.sum(jnp.where(rows_mask(out), out, jnp.zeros((), out.dtype)))
            if reduce == "mean":
                count = jnp.sum(valid) * int(np.prod(out.shape[1:], dtype=np.int64))
                total = total / count.astype(out.dtype)
            return total
        if not out_rows:
            return out

        def keep(y):
            if y.ndim and y.shape[0] == size and jnp.issubdtype(y.dtype, jnp.inexact):
                return _real_rows_only(y, valid)
            return y

        return jax.tree_util.tree_map(keep, out)

    return entry.derived(masked)


_Above.materialize, _Above.unpad_edge, _Above.real_rows_hook = materialize, unpad_edge, real_rows_hook


# ----------------------------------------------------------------------------- padded dims
# A sequence that grows by a token per step pads along its own dim (``_dims.PaddedDims``): an op
# whose record declares ``Rows.dims`` (how padded dims pass through it; ``ops._registry``) takes
# such inputs as they are, one kernel per bucket; any other op reads the real block.

_GROW = "grows"  # in ``entry.bucketing``: this entry's result grows along a dim (``Rows.grows``)
_grown: dict = {}  # entry -> [{size: the step it first came in}, its last result's length, extensions in a row]
_live: dict = {}  # real length -> bucket of the padded dims made lately (``window``)


def _axes(shape, array_shape) -> tuple:
    return tuple(i for i, (s, b) in enumerate(zip(shape, array_shape)) if s != b)


def _length(leaves):
    """The (real length, bucket) all padded dims of ``leaves`` share, their padded axes by
    position; None where they do not share one."""
    pair, axes = None, {}
    for i, x in enumerate(leaves):
        a = x._meta if isinstance(x, Tensor) else None
        if not isinstance(a, Padded):
            continue
        ax = _axes(a.shape, a.array.shape)
        for d in ax:
            p = (a.shape[d], a.array.shape[d])
            if pair is None:
                pair = p
            elif p != pair:
                return None
        axes[i] = ax
    return pair, axes


def _grows_note(entry, spec, arrays) -> None:
    """``note`` for an op whose result grows along a dim (``Rows.grows``: ``cat`` along it): it
    pads (``_GROW``) once it extended its own last result ``_CHAINS`` calls in a row (a sequence
    growing token by token, read on the host or not), or, along a dim past 0 (dim 0 may be a
    batch), once its length came new in three steps at most ``_WINDOW`` apart."""
    shapes = _described(arrays, spec.positions)
    d = spec.rows.grows(spec.statics, shapes)
    if d is None:
        return
    first = shapes.get(spec.names[spec.batched[0]]) or next(iter(shapes.values()), None)
    if first is None or not -len(first[0]) <= d < len(first[0]):
        return
    n = first[0][d]
    seen = _grown.get(entry)
    if seen is None:
        if len(_grown) >= 4096:
            _grown.clear()
        seen = _grown[entry] = [{}, None, 0]  # sizes by step; its last result's length; extensions in a row
    sizes, last, chained = seen
    seen[1] = sum(shape[d] for shape, _ in shapes.values() if len(shape) > d)  # (cat skips 1-d empty tensors)
    seen[2] = chained = chained + 1 if n == last else 0
    if chained >= _CHAINS or (d > 0 and _keeps_changing(sizes, n)):
        _pad_family(entry, _GROW)


def _forget_grown():
    _grown.clear()
    _live.clear()


_lazy.restarted.append(_forget_grown)


def _dims_info(entry):
    """(statics, {parameter: leaf position}) of the entry's template (``Rows.dims``)."""
    spec = entry.spec
    if spec is None:
        spec = entry.spec = _spec(entry)
    if spec is not False:
        return spec.statics, spec.positions
    found = _infos.get(entry)
    if found is None:
        if len(_infos) >= 4096:
            _infos.clear()
        found = _infos[entry] = _template(entry)[:2]
    return found


_infos: dict = {}


def run_dims(name, entry, leaves, differentiable, linear):
    """``entry`` on ``leaves`` some of which hold ``Padded`` values padded along any dims, or
    whose result grows (``_GROW``): the op's ``Rows.dims`` plan on the bucket arrays; None where
    it has none (the caller reads the real blocks)."""
    rule = entry.rows.dims
    if rule is None or _LEAF is None:
        return None
    found = _length(leaves)
    if found is None:
        return None
    (pair, axes) = found
    for x in leaves:
        a = x._meta if isinstance(x, Tensor) else x
        if isinstance(a, jax.core.Tracer) or type(a) is MetaArray:
            return None
    statics, positions = _dims_info(entry)
    shapes = _described(leaves, positions)
    by_name = {}
    for p, i in positions.items():
        if i in axes:
            by_name[p] = axes[i]
    if pair is None and not (entry.bucketing and _GROW in entry.bucketing):
        return None
    n, size = pair if pair is not None else (None, None)
    plan = rule(statics, by_name, shapes, n, size)
    if plan is None:
        return None
    if n is None:  # a growing result of real inputs: its input's length
        n = plan.n
    out_n = n + plan.grow
    out_size = bucket(out_n) if plan.grow else size
    kernel_entry = entry if not plan.static else _resized(entry, plan.static)
    fills = {positions[p]: tuple(sorted(f.items())) for p, f in plan.fill.items() if p in positions}
    in_axes = tuple(sorted(axes.items()))
    outs = plan.out
    key = (kernel_entry, in_axes, tuple(sorted(fills.items())), outs, plan.kernel, out_size, plan.grow)
    masked = _dims_kernels.get(key)
    if masked is None:
        if len(_dims_kernels) >= 4096:
            _dims_kernels.clear()
        masked = _dims_kernels[key] = _dims_entry(
            kernel_entry, dict(in_axes), fills, outs, plan.kernel, out_size, plan.grow
        )
    new = list(leaves)
    for i, x in enumerate(leaves):
        if isinstance(x, Tensor) and i not in axes and isinstance(x._meta, Padded):
            materialize(x)
    out = _run(name, masked, [_dev_int(n), *new], differentiable, linear)
    _stats["calls"] += 1
    _stats["ops"][name] = _stats["ops"].get(name, 0) + 1
    results = out if type(out) is tuple else (out,)
    per = outs if outs and type(outs[0]) is tuple else (outs,) * len(results)
    for o, ax in zip(results, per):
        a = o._a
        if not ax or out_n == a.shape[ax[0]]:
            continue
        real = list(a.shape)
        for d in ax:
            real[d] = out_n
        o._a = _dims.PaddedDims(tuple(real), a)
        if o._node is not None:
            o._node.padded = True
        _stats["real_elements"] += math.prod(real)
        _stats["padded_elements"] += math.prod(a.shape) - math.prod(real)
    if out_n != out_size:
        if len(_live) >= 64:
            _live.clear()
        _live[out_n] = out_size
    return out


_dims_kernels: dict = {}


_lengths: dict = {}


def _dev_int(n):
    """The real length ``n`` as a kernel argument: a device scalar, one per length (a Python int
    would make a recorded segment's key differ from the one a device scalar makes)."""
    return _lazy.by_value(_lengths, n, lambda: jax.device_put(n))


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _real_only(y, n, axes):
    """``y``, whose gradient reaches only its real block along ``axes`` (real length ``n``)."""
    return y


def _real_only_fwd(y, n, axes):
    return y, n


def _real_only_bwd(axes, n, ct):
    return jnp.where(_dims.real_mask(n, ct.shape, axes), ct, jnp.zeros((), ct.dtype)), None


_real_only.defvjp(_real_only_fwd, _real_only_bwd)


def _dims_entry(entry, in_axes, fills, outs, kernel, out_size, grow):
    """The kernel ``(n, *leaves)``: each padded input's padding set to 0 (or its ``fill``), the op
    (or the plan's ``kernel``, with ``n`` and the result's bucket), the results' gradients kept
    to their real blocks."""
    pure = entry.pure

    def masked(n, *arrays):
        arrays = list(arrays)
        for i, ax in in_axes.items():
            a = arrays[i]
            a = jnp.where(_dims.real_mask(n, a.shape, ax), a, jnp.zeros((), a.dtype))
            for d, v in fills.get(i, ()):
                a = jnp.where(_dims.real_mask(n, a.shape, (d,)), a, jnp.asarray(v, a.dtype))
            arrays[i] = a
        out = entry.calling(kernel, n=n, size=out_size)(*arrays) if kernel is not None else pure(*arrays)
        results = out if isinstance(out, (tuple, list)) else (out,)
        per = outs if outs and type(outs[0]) is tuple else (outs,) * len(results)
        kept = []
        for y, ax in zip(results, per):
            if ax and jnp.issubdtype(y.dtype, jnp.inexact):
                y = _real_only(y, n + grow, ax)
            kept.append(y)
        return type(out)(kept) if isinstance(out, (tuple, list)) else kept[0]

    return entry.derived(masked)


def window_index(shape, index):
    """``x[index]`` of a real ``x`` (``shape``) with slices ``[:n]`` whose ``n`` is the real
    length of padded dims made lately (a causal mask's ``bias[:, :, :T, :T]`` in a decode step):
    (the index with those slices reaching the bucket, n, bucket); None where there are none, or
    ``x`` is shorter than the bucket there."""
    if not _live or not isinstance(index, tuple):
        return None
    pair, new = None, []
    for e in index:
        if (
            type(e) is tuple
            and len(e) == 4
            and e[0] == "slice"
            and e[1] in (None, 0)
            and e[3] in (None, 1)
            and type(e[2]) is int
            and e[2] in _live
        ):
            p = (e[2], _live[e[2]])
            if pair is not None and p != pair:
                return None
            pair = p
            new.append(("slice", e[1], p[1], e[3]))
        elif e is Ellipsis or (type(e) is tuple and e and e[0] == "slice"):
            new.append(e)
        else:
            return None
    if pair is None:
        return None
    return tuple(new), pair[0], pair[1]


def padded_window(out, real_shape):
    """Give ``out`` (a window read at the bucket's shape) its real ``real_shape``."""
    a = out._a
    if tuple(a.shape) == tuple(real_shape):
        return
    out._a = _dims.PaddedDims(tuple(real_shape), a)
    if out._node is not None:
        out._node.padded = True
