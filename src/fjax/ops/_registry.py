"""The op table: every pure op registers here once.

An op is a function of jax arrays with a torch/oneflow signature. ``dispatch.py`` lifts each
entry to a Tensor-level function; the oracle tests iterate the same table.
"""

from __future__ import annotations

import collections
import inspect
from dataclasses import dataclass, field
from typing import Callable

from .. import _public

OPS: dict[str, "OpDef"] = {}
ALIASES: dict[str, str] = {}
"""alias name -> the name of the op it is an alias of (``OpDef.aliases``, inverted)."""


@dataclass(eq=False)
class OpDef:
    """One op-table entry.

    Attributes:
        name: public name (``fjax.<name>`` and, when ``method``, ``Tensor.<name>``).
        fn: the pure function of jax arrays.
        static: parameter names whose values are Python constants (dims, flags, modes);
            every other parameter is traced (tensors, lists of tensors, Python numbers).
        differentiable: False for ops whose outputs carry no gradient (comparisons, argmax).
        method: also expose as a Tensor method.
        linear: the op's VJP saves no input (add, reshape, ...), so later in-place changes
            of its inputs do not invalidate the backward.
        jit: False for ops whose result placement jit would not keep (device transfers): they
            run eagerly, op by op.
        check: a function with the op's signature, called in eager (not inside a trace) with
            the arrays before the kernel runs: raises torch's error for values XLA would take
            silently (out-of-range indices, which it clamps).
        returns: for an op whose tuple result torch names (``x.max(0).values``), the named
            tuple class it comes back as (``fjax.return_types.<name>``).
        aliases: torch's other names for the op (``absolute`` for ``abs``): each is exposed as
            the same function under its own name (``fjax.<alias>``, and ``Tensor.<alias>`` when
            ``method``) and takes no entry of its own in the table.
        keyword_aliases: other keyword names a parameter is accepted under (OneFlow's
            ``cat(inputs=...)``: ``{"inputs": "tensors"}``); the signature shows torch's names only.
        rows: how the op's results depend on its inputs' leading dimension (a ``Rows``), for
            ops that may run on inputs padded to a bucket size (``fjax._bucket``); None: never.

    Declared by the op's family after the table is filled (``declare``), each checked to name
    ops of the table; ``dispatch.lift`` reads them here, once per op:

        view: a view op's rule, its output geometry from its input's (``ops/views.RULES``);
            None: the op copies.
        window: a view op whose position is a Python number, read at a dynamic offset
            (``ops/views.WINDOWS``).
        view_node: for a view op with several outputs, a function of the call's arguments
            giving torch's backward node name, which forbids in-place changes of the outputs
            with grad (``ops/views.NODES``).
        amp: ``{device type: autocast policy}`` (``amp/_policy.POLICIES``); None: autocast
            leaves the op alone.
    """

    name: str
    fn: Callable
    static: frozenset = frozenset()
    differentiable: bool = True
    method: bool = True
    linear: bool = False
    params: tuple = field(default=())
    jit: bool = True
    check: Callable | None = None
    returns: type | None = None
    aliases: tuple = ()
    keyword_aliases: dict | None = None
    rows: "Rows | None" = None
    view: Callable | None = None
    window: bool = False
    view_node: Callable | None = None
    amp: dict | None = None


def declare(fact: str, by_op: dict) -> None:
    """Set the field ``fact`` of each op named in ``by_op`` to its value (an op family's table of
    one fact: view rules, autocast policies). A name that is not an op of the table is an error,
    so a table cannot drift from the ops it describes."""
    unknown = sorted(set(by_op) - set(OPS))
    if unknown:
        raise ValueError(f"OpDef.{fact} declared for {unknown}, which are not ops of the table")
    for name, value in by_op.items():
        setattr(OPS[name], fact, value)


@dataclass(frozen=True, eq=False)
class Rows:
    """An op whose output rows (dim 0) depend only on the same rows of some inputs, so it may run
    on those inputs padded to a bucket size and keep the real rows (``fjax._bucket``).

    Attributes:
        params: the parameters whose dim 0 is the batch (a list parameter: each of its
            tensors), or a function of the static arguments giving them (getitem: the index
            tensors where they come first, else the input).
        broadcast: elementwise: an input of lower rank, or of size 1 at dim 0, is broadcast
            along the batch, not part of it.
        pad: ``{param: value}``, or a function of the static arguments giving that dict: what a
            padding row of that input holds (cross_entropy's targets: ``ignore_index``, so the
            op's own mean leaves them out). Other padding rows repeat a real row.
        reduce: the name of a ``reduction`` parameter: ``'none'`` keeps the rows; ``'mean'``
            and ``'sum'`` run the op with ``'none'`` and sum the real rows only (the op's own
            reduction when ``pad`` already leaves padding rows out: ``reduce=None``).
        when: a function of (static arguments, {param: (shape, dtype)} of the tensor inputs):
            False where this call's dim 0 is not a batch (softmax over dim 0, a 1-d input).
        out: a function of the static arguments: False where the result has no batch dim
            (a loss reduced by its own ``'mean'``).
        masked: the op on a padded batch where it reduces over the rows (a training batch's
            statistics): called as the op, plus the keyword ``valid`` (a bool mask of the real
            rows), it leaves the padding rows out.
        resize: a function of (static arguments, real batch size, bucket size) giving the static
            arguments that name the batch size, rewritten for the bucket (``reshape``'s shape);
            such an op pads only a batch that comes padded (each size is its own entry).
    """

    params: tuple | Callable
    broadcast: bool = False
    pad: object = None
    reduce: str | None = None
    when: Callable | None = None
    out: Callable | None = None
    masked: Callable | None = None
    resize: Callable | None = None
    dims: Callable | None = None
    grows: Callable | None = None


# Padded dims (``fjax._bucket.run_dims``): a sequence that grows by one token per step is padded
# along its own dim, and ``Rows.dims`` says how such dims pass through an op. It is called as
# ``dims(statics, padded, shapes, n, size)``: ``padded`` {parameter: its padded axes} of the
# padded inputs, ``shapes`` {parameter: (real shape, dtype)}, ``n`` the real length they share
# and ``size`` its bucket (None, None for ``Rows.grows``' first padded result); it returns a
# ``Plan``, or None where the op cannot take them (then it runs on the real blocks). The
# padding of each padded input holds 0 unless ``Plan.fill`` names another value along an axis
# (the identity of a reduction over it: -inf for softmax); ``Rows.grows(statics, shapes)``
# names the dim along which the result grows (``cat``): after three new lengths it pads.


@dataclass(frozen=True)
class Plan:
    """How an op runs on padded dims (see ``Rows.dims``).

    Attributes:
        out: the result's padded axes, or a tuple of them per result (a tuple of ints: the same
            for every result).
        fill: ``{parameter: {axis: value}}``: what the padding along that axis holds.
        static: static arguments rewritten for the bucket (a reshape's shape).
        kernel: the op's function on the bucket arrays, called as the op plus the keywords
            ``n`` (the real length, traced) and ``size`` (the result's bucket).
        grow: the result's real length is ``n + grow`` (``cat`` along the padded dim).
        n: with no padded input (``Rows.grows``): the real length of the growing input.
    """

    out: tuple
    fill: dict = field(default_factory=dict)
    static: dict = field(default_factory=dict)
    kernel: Callable | None = None
    grow: int = 0
    n: int | None = None


@dataclass(frozen=True)
class Bound:
    """``fn`` with the keyword arguments ``keywords`` fixed (``bind``)."""

    fn: Callable
    keywords: tuple

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **dict(self.keywords), **kwargs)


def bind(fn, **keywords) -> Bound:
    """``fn`` with ``keywords`` fixed, equal to another binding of the same values: a
    ``Plan.kernel`` that depends on the call's padded axes (a plan's kernel keys the bucket's
    compiled kernel, so a new closure per call would compile per call)."""
    return Bound(fn, tuple(sorted(keywords.items())))


def _broadcast_dims(params):
    """``Rows.dims`` of an elementwise op over ``params`` (broadcasting): a padded axis is the
    result's axis it aligns with; every other input has size 1 there (or lacks it)."""

    def dims(statics, padded, shapes, n, size):
        tensors = {p: shapes[p][0] for p in shapes if p in params}
        if not padded or not tensors:
            return None
        nd = max(len(s) for s in tensors.values())
        out = set()
        for p, axes in padded.items():
            if p not in tensors:
                return None
            out.update(d + nd - len(tensors[p]) for d in axes)
        for p, shape in tensors.items():
            own = {d + nd - len(shape) for d in padded.get(p, ())}
            for o in out - own:
                d = o - (nd - len(shape))
                if d >= 0 and shape[d] != 1:
                    return None
        return Plan(tuple(sorted(out)))

    return dims


def _passes(param="input", keep=lambda statics, shape: None):
    """``Rows.dims`` of an op whose result keeps ``param``'s axes up to its last ones: the padded
    axes must be below ``keep(statics, shape)`` (the first axis the op works along; None: the
    last one)."""

    def dims(statics, padded, shapes, n, size):
        if set(padded) != {param}:
            return None
        shape = shapes[param][0]
        first = keep(statics, shape)
        first = len(shape) - 1 if first is None else first
        if any(d >= first for d in padded[param]):
            return None
        return Plan(padded[param])

    return dims


ELEMENTWISE = Rows(("input", "other"), broadcast=True, dims=_broadcast_dims(("input", "other")))
"""Rows of an elementwise op of ``input`` (and ``other``): every row is its own."""


def along(
    *dims: str, params: tuple = ("input",), extra: int = 0, none: bool = False, padded: Callable | None = None
) -> Rows:
    """Rows of an op along the static dims named by ``dims`` (default ``"dim"``) of the first of
    ``params`` (``ndim + extra`` dims: a new dim for ``stack`` and ``unsqueeze``): each row its
    own where every such dim is given and is not 0 (a reduction, scan, sort, concatenation or
    transpose within each row). ``none``: a dim left None keeps the rows too (``squeeze``).
    ``padded``: its ``Rows.dims``."""
    dims = dims or ("dim",)

    def when(statics, tensors) -> bool:
        n = len(tensors.get(params[0], tensors.get(f"{params[0]}[0]", ((),)))[0]) + extra
        named = []
        for name in dims:
            d = statics.get(name)
            if d is None and not none:
                return False
            named += () if d is None else (d,) if type(d) is int else tuple(d) if isinstance(d, (tuple, list)) else (d,)
        return all(type(e) is int and -n <= e < n and e % n != 0 for e in named)

    return Rows(params, when=when, dims=padded)


def batch_of(spatial: int) -> Rows:
    """Rows of a convolution or pooling over ``spatial`` dims: a batched input's samples
    (``(N, C, *spatial)``; an unbatched one's dim 0 is its channels)."""
    return Rows(("input",), when=lambda s, t: len(t["input"][0]) == spatial + 2)


def _named_tuple(name: str, fields: tuple) -> type:
    """torch's ``torch.return_types.<name>``: a tuple whose items also have names."""
    cls = collections.namedtuple(name, fields, module="fjax.return_types")

    def __repr__(self):
        items = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"{_public.NAME}.return_types.{name}(\n{items})"

    cls.__repr__ = __repr__
    return cls


def defop(
    name: str | None = None,
    *,
    static: tuple = (),
    differentiable: bool = True,
    method: bool = True,
    linear: bool = False,
    jit: bool = True,
    check: Callable | None = None,
    returns: tuple = (),
    aliases: tuple = (),
    keyword_aliases: dict | None = None,
    rows: Rows | None = None,
):
    """Register a pure op in the table. Returns the function unchanged.

    Example::

        @defop(static=("dim",))
        def softmax(input, dim):
            return jax.nn.softmax(input, axis=dim)

        @defop(aliases=("absolute",))  # fjax.absolute is fjax.abs under torch's other name
        def abs(input): ...

        @defop(keyword_aliases={"inputs": "tensors"})  # OneFlow's cat(inputs=...) as well as torch's
        def cat(tensors, dim=0): ...
    """

    def register(fn):
        op_name = name or fn.__name__.rstrip("_")
        if op_name in OPS or op_name in ALIASES:
            raise ValueError(f"op {op_name!r} is registered twice")
        params = tuple(inspect.signature(fn).parameters)
        unknown = set(static) - set(params)
        if unknown:
            raise ValueError(f"op {op_name!r}: static names {sorted(unknown)} are not parameters")
        named = _named_tuple(op_name, returns) if returns else None
        for alias in aliases:
            if alias in OPS or alias in ALIASES or alias == op_name:
                raise ValueError(f"op {op_name!r}: alias {alias!r} is registered already")
            ALIASES[alias] = op_name
        wrong = {k: v for k, v in (keyword_aliases or {}).items() if v not in params or k in params}
        if wrong:
            raise ValueError(f"op {op_name!r}: keyword aliases {wrong} must map new names to parameters")
        OPS[op_name] = OpDef(
            op_name,
            fn,
            frozenset(static),
            differentiable,
            method,
            linear,
            params,
            jit,
            check,
            named,
            tuple(aliases),
            dict(keyword_aliases) if keyword_aliases else None,
            rows,
        )
        return fn

    return register
