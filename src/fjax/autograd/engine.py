"""The tape: one Node per recorded op call, and a reverse-topological backward.

A Node holds the op's VJP (a pytree of exactly the residuals its backward needs), its pure
function (so ``create_graph=True`` can replay and differentiate the recorded program), and one
entry per traced input of the call:

- ``(parent_node, output_index)`` for an input produced by another recorded op,
- the Tensor itself for a leaf that requires grad,
- the raw value for an input that carries no gradient (a constant of this node), or an
  ``Unread`` (a weak reference) where the node's backward does not read it.

Backward walks nodes outputs-first, calls each VJP through one cached jitted applier, sums
cotangents per (node, output) and per leaf, and frees each node after use unless the graph is
retained.
"""

from __future__ import annotations

import os
import weakref
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding

from .. import _lazy, _public
from .. import profiler as _profiler
from .._config import config
from .._order import after
from .._tracing import trace_state
from ..profiler import _state as _pstate
from ..profiler import span
from ..tensor import PostAccumulateHook, Tensor
from . import anomaly_mode as _anomaly

_apply_vjp = jax.jit(lambda vjp, ct: vjp(ct))


@jax.tree_util.register_pytree_node_class
class Bound:
    """An op's VJP kept as its flat residuals and their pytree definition; calling it rebuilds
    the VJP and applies it. A fused step's tape only passes the residuals on (the flush swaps
    its pending ones for arrays, the fused backward feeds them to its program), so the VJP is
    rebuilt where it runs: inside a program, or at a node-by-node backward."""

    __slots__ = ("leaves", "treedef")

    def __init__(self, leaves, treedef):
        self.leaves, self.treedef = leaves, treedef

    def __call__(self, ct):
        return jax.tree_util.tree_unflatten(self.treedef, self.leaves)(ct)

    def tree_flatten(self):
        return self.leaves, self.treedef

    @classmethod
    def tree_unflatten(cls, treedef, leaves):
        return cls(list(leaves), treedef)


class Node:
    """A recorded op call (``Tensor.grad_fn``)."""

    __slots__ = (
        "name",
        "fn",
        "vjp",
        "inputs",
        "out_avals",
        "versions",
        "hooks",
        "retained",
        "eager",
        "padded",
        "__weakref__",
    )

    def __init__(self, name, fn, vjp, inputs, out_avals, versions=None, eager=False):
        self.name = name
        self.fn = fn
        self.vjp = vjp
        self.inputs = inputs
        self.out_avals = out_avals
        self.versions = versions
        self.hooks = None
        self.retained = None
        self.eager = eager  # device transfers, one-off functions: their VJP runs without jit
        self.padded = False  # its outputs are bucket-sized (``fjax._bucket``); tensors show fewer rows

    raw_cts = False  # True: apply() gets None for outputs without a cotangent (custom Functions)

    @property
    def multi(self) -> bool:
        return isinstance(self.out_avals, list)

    def parents(self):
        """The nodes that produced this node's inputs."""
        return () if self.inputs is None else [x[0] for x in self.inputs if type(x) is tuple]

    def diff_inputs(self):
        """The inputs that receive cotangents, in the order the VJP returns them."""
        return [x for x in self.inputs if type(x) is tuple or isinstance(x, Tensor)]

    def apply(self, cts):
        """Cotangents of the differentiable inputs from the cotangents of the outputs."""
        ct = tuple(cts) if self.multi else cts[0]
        return self.vjp(ct) if self.eager else _apply_vjp(self.vjp, ct)

    def release(self):
        self.vjp = self.inputs = self.fn = None

    def settle(self):
        """Swap the pending values (``fjax._lazy``) among the residuals and inputs for their arrays,
        once their segment ran."""
        vjp = self.vjp
        if vjp is None:
            return
        real = _lazy.real
        if type(vjp) is Bound:
            vjp.leaves = [real(x) for x in vjp.leaves]
        else:
            self.vjp = jax.tree_util.tree_map(real, vjp)
        self.inputs = tuple(real(x) if type(x) is _lazy.Pending else x for x in self.inputs)

    def __repr__(self):
        if _public.NAME == "torch":  # torch's class names: log_softmax -> <LogSoftmaxBackward0>
            return f"<{''.join(p[:1].upper() + p[1:] for p in self.name.split('_'))}Backward0>"
        return f"<{self.name}Backward>"


_profiler._APPLY_CODE = Node.apply.__code__


class Unread:
    """A node's input that takes no gradient and that its backward does not read (``c`` in
    ``x + c``, where ``x`` requires grad): the node keeps a weak reference to the tensor, not
    its value, so the value is freed once Python drops it, as torch frees it. Only
    ``create_graph=True`` reads it again (it replays the forward): while the tensor lives
    unmodified."""

    __slots__ = ("ref", "version", "index", "shape", "dtype")

    def __init__(self, tensor, array, index):
        self.ref, self.version = weakref.ref(tensor), tensor._vc[0]
        self.index, self.shape, self.dtype = index, tuple(array.shape), array.dtype

    def value(self, node):
        """The value recorded, for a replay of ``node``'s forward; RuntimeError once freed or modified."""
        t = self.ref()
        if t is None or t._vc[0] != self.version:
            why = "has been freed" if t is None else "has been modified in place"
            raise RuntimeError(
                f"create_graph=True through {node!r}: its input #{self.index} (shape {list(self.shape)}), a "
                f"tensor that does not require grad and that {node!r} does not save for backward, {why}; "
                "replaying the forward to differentiate the backward needs its value: keep a reference to it, "
                "unmodified, until the create_graph backward (as torch keeps it), or make it require grad"
            )
        return t._meta


def _zeros(aval):
    shape, dtype = aval
    if jnp.issubdtype(dtype, jnp.inexact):
        return jnp.zeros(shape, dtype)
    return np.zeros(shape, jax.dtypes.float0)


def _toposort(roots):
    """Nodes reachable from ``roots``, each after every node that consumes it."""
    order, seen = [], set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(root.parents()))]
        while stack:
            node, it = stack[-1]
            for parent in it:
                if id(parent) not in seen:
                    seen.add(id(parent))
                    stack.append((parent, iter(parent.parents())))
                    break
            else:
                stack.pop()
                order.append(node)
    order.reverse()
    return order


def _check_alive(node):
    if node.inputs is None:
        raise RuntimeError(
            f"backward through {node!r} a second time (or after its saved values were freed): "
            "pass retain_graph=True to the first backward()/autograd.grad() if you need to "
            "backward through the graph again"
        )
    for counter, version, (i, shape, dtype) in node.versions or ():
        if counter[0] != version:
            from ..dtypes import to_dtype

            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{to_dtype(dtype)} {list(shape)}], input #{i} of {node!r}, "
                f"is at version {counter[0]}; expected version {version} instead"
            )


def _padded_like(ct, node, idx):
    """Cotangent ``ct`` of a bucketed result's real rows, with the zero rows of its padding."""
    shape = (node.out_avals[idx] if node.multi else node.out_avals)[0]
    if tuple(ct.shape) == tuple(shape):
        return ct
    return jnp.concatenate([ct, jnp.zeros((shape[0] - ct.shape[0],) + tuple(ct.shape[1:]), ct.dtype)])


def _add(a, b):
    return b if a is None else a + b


_plus = jax.jit(jnp.add)  # gradient accumulation into ``.grad`` (recorded where pending)


def _conj(a):
    """Between torch's convention for complex cotangents and JAX's, each the other's complex
    conjugate: the tape runs JAX's VJPs, and gradients enter (seeds) and leave it (``.grad``,
    hooks, ``autograd.grad``, custom Function backwards) in torch's. Real dtypes pass as they are."""
    if a.dtype.kind != "c" or isinstance(a, jax.ShapeDtypeStruct):  # real, or a meta array
        return a
    return jnp.conj(_lazy.real(a))


def backward(roots, root_grads, retain_graph=False, inputs=None):
    """Run the tape backward from ``roots`` (Tensors) seeded with ``root_grads`` (arrays).

    Without ``inputs``, leaf gradients accumulate into ``.grad`` (``Tensor.backward``). With
    ``inputs`` (Tensors, leaves or not), returns their gradients (None where unreached) and
    touches no ``.grad`` (``autograd.grad``). Seeds and results follow torch's convention for
    complex gradients; inside, cotangents follow JAX's (``_conj``).
    """
    _lazy.steps += 1
    pending: dict = {}  # id(node) -> list of cotangents per output
    leaf_cts: dict = {}  # id(leaf) -> [leaf, cotangent]
    wanted = None
    if inputs is not None:
        wanted = {}
        for i, t in enumerate(inputs):
            key = ("node", id(t._node), t._idx) if t._node is not None else ("leaf", id(t))
            wanted.setdefault(key, []).append(i)
    found = [None] * (len(inputs) if inputs is not None else 0)

    def to_leaf(leaf, ct):
        entry = leaf_cts.get(id(leaf))
        if entry is None:
            leaf_cts[id(leaf)] = [leaf, ct]
        else:
            entry[1] = _lazy.then(_plus, (entry[1], ct))  # (either may be pending: a leaf that is also a root)

    roots_nodes = []
    for t, g in zip(roots, root_grads):
        g = _conj(g)
        if t._node is None:  # a leaf as a root: its seed becomes its .grad (a copy: seeds may be shared)
            to_leaf(t, jnp.array(g, copy=True))
            continue
        if t._node.padded:  # a bucketed result: its seed covers the real rows
            g = _padded_like(g, t._node, t._idx)
        cts = pending.setdefault(id(t._node), [None] * _n_out(t._node))
        cts[t._idx] = _add(cts[t._idx], g)
        roots_nodes.append(t._node)

    order = _toposort(roots_nodes)
    if config.eager_fusion and order and not (_pstate.on or _anomaly.state.on or trace_state.depth):
        awaited = [t._meta for t in roots if t._node is not None]
        fused = _fused_backward(order, pending, wanted, retain_graph, awaited)
        if fused is not None:
            order = ()  # every node ran in the fused program
            leaves, leaf_out, found_out = fused
            for leaf, ct in zip(leaves, leaf_out):
                to_leaf(leaf, ct)
            for j, ct in found_out.items():
                found[j] = _conj(ct)
    if order:
        _lazy.flush()  # node by node: the VJPs need the values of the recorded forward
    for node in order:
        cts = pending.pop(id(node), None)
        if cts is None:
            continue
        _check_alive(node)
        if node.hooks or node.retained:
            cts = _run_tensor_hooks(node, cts)
        if wanted is not None:
            for i, ct in enumerate(cts):
                for j in wanted.get(("node", id(node), i), ()):
                    found[j] = _conj(ct)
        if node.multi and not node.raw_cts:
            cts = [_zeros(a) if c is None else c for c, a in zip(cts, node.out_avals)]
        if _pstate.on:
            with span(f"{node.name}Backward", "backward"):
                in_cts = node.apply(cts)
        else:
            in_cts = node.apply(cts)
        if _anomaly.state.on:
            _anomaly.check(node, in_cts)
        for inp, ct in zip(node.diff_inputs(), in_cts):
            if type(inp) is tuple:
                parent, idx = inp
                pcts = pending.setdefault(id(parent), [None] * _n_out(parent))
                pcts[idx] = _add(pcts[idx], ct)
            else:
                to_leaf(inp, ct)
        if not retain_graph:
            node.release()

    for leaf, ct in leaf_cts.values():
        ct = _conj(ct)
        sharding = getattr(leaf._meta, "sharding", None)
        if type(sharding) is NamedSharding and getattr(ct, "sharding", sharding) != sharding:
            # a global leaf's gradient has the leaf's placement and sbp, as in OneFlow (XLA may
            # have laid the backward's result out otherwise, e.g. broadcast for a split leaf)
            ct = jax.device_put(ct, sharding)
        for hook in leaf._hooks or ():
            if type(hook) is PostAccumulateHook:
                continue
            ct = _hook_result(hook, ct, hook(Tensor._wrap(ct)))
        if wanted is None:
            leaf.grad = (
                Tensor._wrap(ct) if leaf.grad is None else Tensor._wrap(_lazy.then(_plus, (leaf.grad._meta, ct)))
            )
            post_accumulate(leaf)
        else:
            for j in wanted.get(("leaf", id(leaf)), ()):
                found[j] = ct
    for j, t in enumerate(inputs or ()):
        g = found[j]
        if g is not None and t._node is not None and t._node.padded and g.shape[0] != t.shape[0]:
            found[j] = _lazy.unpad(g, t.shape[0])  # a bucketed result's real rows
    return found


_FUSED: OrderedDict = OrderedDict()  # tape structure -> times seen (int), jitted program, or False
_FUSED_MAX = 64
# a structure's program compiles per shape signature (its nodes' output shapes): one per bucket
# for a bucketed batch, but one per *combination* of buckets where several batches vary apart
# (a mixture of experts' per-expert rows). Past this many signatures, a new one whose every
# node's shape came before (a new combination of known buckets) runs node by node: each node's
# VJP kernel is compiled per its own shapes, whatever the others' are. A signature with a new
# shape (a sequence length never seen) still compiles one program, not a kernel per node.
_SHAPES: dict = {}  # structure less shapes -> (its programs' keys, each node's shapes seen)
_SHAPES_MAX = int(os.environ.get("FJAX_FUSED_SHAPES_MAX", "8"))
_lazy.restarted.append(_SHAPES.clear)
# how many times a structure runs node by node before it is fused. 0: every backward is fused, so
# its bits never depend on what ran before (a first, unfused run would round differently), and a
# new structure compiles one program instead of one kernel per node (fewer compiles in all)
_FUSE_AFTER = int(os.environ.get("FJAX_EAGER_FUSION_AFTER", "0"))


def _fused_backward(order, pending, wanted, retain_graph, awaited=()):
    """The backward walk over ``order`` as one compiled program.

    A structure is the nodes' VJPs as pytree definitions (which kernel, at which static
    arguments, made them), how their cotangents flow, and which outputs ``autograd.grad`` wants;
    the arrays (root cotangents, the VJPs' residuals) are the program's inputs. A new structure
    compiles its program (after ``_FUSE_AFTER`` node-by-node walks; 0 by default), and from then
    on one XLA call runs the whole backward. Nodes with hooks, retained grads, custom Functions or
    eager VJPs are not fused: None, and the caller walks node by node.

    Returns ``(leaves, their cotangents, {found position: cotangent})``.
    """
    stats = _profiler._fusion
    pos = {id(n): i for i, n in enumerate(order)}
    reached: list = [None] * len(order)
    seed_refs, seeds = [], []
    for node_id, cts in pending.items():
        i = pos[node_id]
        reached[i] = {j for j, c in enumerate(cts) if c is not None}
        for j, c in enumerate(cts):
            if c is not None:
                seed_refs.append((i, j))
                seeds.append(c)
    leaves: list = []
    leaf_pos: dict = {}
    steps, flat, done, avals, names = [], [], [], [], []
    for i, node in enumerate(order):
        r = reached[i]
        if not r:
            continue
        why = None
        if type(node) is not Node or node.eager:
            why = "custom Function" if node.raw_cts else "eager node"
        elif node.hooks or node.retained:
            why = "hooks"
        if why is not None:
            stats["unfused"][why] = stats["unfused"].get(why, 0) + 1
            return None
        _check_alive(node)
        vjp = node.vjp
        if type(vjp) is Bound:
            vleaves, treedef = vjp.leaves, vjp.treedef
        else:
            vleaves, treedef = jax.tree_util.tree_flatten(vjp)
        wiring = []
        for inp in node.inputs:
            if type(inp) is tuple:
                k = pos[id(inp[0])]
                if reached[k] is None:
                    reached[k] = set()
                reached[k].add(inp[1])
                wiring.append((k, inp[1]))
            elif isinstance(inp, Tensor):
                lp = leaf_pos.get(id(inp))
                if lp is None:
                    lp = leaf_pos[id(inp)] = len(leaves)
                    leaves.append(inp)
                wiring.append((-1, lp))
        n_out = _n_out(node)
        wants = ()
        if wanted is not None:
            wants = tuple((o, tuple(wanted[("node", id(node), o)])) for o in r if ("node", id(node), o) in wanted)
        zeros = tuple((o, node.out_avals[o]) for o in range(n_out) if o not in r) if node.multi else ()
        steps.append((i, treedef, len(vleaves), node.multi, tuple(sorted(r)), zeros, tuple(wiring), wants))
        flat.extend(vleaves)
        done.append(node)
        avals.append(tuple(node.out_avals) if node.multi else node.out_avals)
        names.append((node.name, tuple(wiring)))
    key = (tuple(seed_refs), tuple(steps), len(leaves), len(awaited))
    # (a VJP's pytree definition holds its shapes: a structure's key differs per shape signature)
    family = (tuple(seed_refs), tuple(names), len(leaves))
    seen = _SHAPES.get(family)
    if seen is None:
        if len(_SHAPES) >= 4 * _FUSED_MAX:
            _SHAPES.clear()
        seen = _SHAPES[family] = (set(), [set() for _ in avals])
    if key not in seen[0]:  # (counted since the last _lazy.restart, compiled or not: a rerun decides alike)
        if len(seen[0]) >= _SHAPES_MAX and all(a in known for a, known in zip(avals, seen[1])):
            stats["unfused"]["shapes vary"] = stats["unfused"].get("shapes vary", 0) + 1
            return None
        seen[0].add(key)
        for a, known in zip(avals, seen[1]):
            known.add(a)
    program = _FUSED.get(key, 0)
    if type(program) is int:
        if program < _FUSE_AFTER:
            program += 1
        else:
            program = jax.jit(_backward_program(tuple(seed_refs), tuple(steps), len(leaves), len(awaited)))
            stats["compiles"] += 1
        _FUSED[key] = program
        if len(_FUSED) > _FUSED_MAX:
            _FUSED.popitem(last=False)
    try:  # (a try, not contextlib.suppress: no context manager per call)
        _FUSED.move_to_end(key)
    except KeyError:  # another thread may have evicted it meanwhile
        pass
    if not callable(program):
        why = "first sight" if program is not False else "not traceable"
        stats["unfused"][why] = stats["unfused"].get(why, 0) + 1
        return None
    try:
        # (into .grad: pending, so the optimizer's update joins the program)
        leaf_out, found_out = _lazy.call(
            program, len(seeds) + len(awaited), [*seeds, *awaited, *flat], keep_pending=wanted is None
        )
    except Exception:  # a VJP JAX cannot trace into a bigger program: node by node from now on
        _FUSED[key] = False
        return None
    stats["hits"] += 1
    pending.clear()
    if not retain_graph:
        for node in done:
            node.release()
    return leaves, leaf_out, found_out


_ORDERED_BYTES = 1 << 20  # a node holding this many residual bytes runs in tape order in the fused program


def _backward_program(seed_refs, steps, n_leaves, n_awaited=0):
    """The pure function of one fused backward (see ``_fused_backward``). Its last ``n_awaited``
    seeds are the roots' own values (a loss): the backward starts once they exist, so the
    forward's outputs are computed first and what only they read (the logits a loss reduces) is
    freed before the backward's peak, not kept until XLA gets round to the output."""

    def program(seeds, flat):
        if n_awaited:
            seeds, roots = list(seeds[:-n_awaited]), seeds[-n_awaited:]
            seeds = after(seeds, roots)
        cts = dict(zip(seed_refs, seeds))
        leaf_ct = [None] * n_leaves
        found = {}
        at = 0
        for i, treedef, n, multi, reached, zeros, wiring, wants in steps:
            vleaves = flat[at : at + n]
            at += n
            plain = [k for k, a in enumerate(vleaves) if isinstance(a.dtype, np.dtype)]  # not PRNG keys
            if sum(vleaves[k].size * vleaves[k].dtype.itemsize for k in plain) >= _ORDERED_BYTES:
                # a node's residuals wait for its cotangent: XLA would otherwise start every node's
                # recomputation from its residuals (gelu's derivative) at once, holding them all
                held = after([vleaves[k] for k in plain], [c for key, c in cts.items() if key[0] == i])
                vleaves = list(vleaves)
                for k, a in zip(plain, held):
                    vleaves[k] = a
            vjp = jax.tree_util.tree_unflatten(treedef, vleaves)
            for o, slots in wants:
                for j in slots:
                    found[j] = cts[(i, o)]
            if multi:
                filled = {o: _zeros(aval) for o, aval in zeros}
                ct = tuple(cts[(i, o)] if o in reached else filled[o] for o in range(len(reached) + len(zeros)))
            else:
                ct = cts[(i, 0)]
            for (k, o), c in zip(wiring, vjp(ct)):
                if k < 0:
                    leaf_ct[o] = _add(leaf_ct[o], c)
                else:
                    cts[(k, o)] = _add(cts.get((k, o)), c)
        return leaf_ct, found

    return program


def post_accumulate(leaf) -> None:
    """Run ``leaf``'s post-accumulate-grad hooks (after its ``.grad`` changed)."""
    for hook in leaf._hooks or ():
        if type(hook) is PostAccumulateHook:
            hook.fn(leaf)


def _n_out(node):
    return len(node.out_avals) if node.multi else 1


def _hook_result(hook, ct, out):
    """The gradient after a tensor hook that got ``ct`` (an array) and returned ``out``: ``ct``
    for None, else ``out``'s array, which must be a Tensor of ``ct``'s shape and dtype (torch's
    TypeError and RuntimeErrors otherwise: a hook's result is never broadcast or cast)."""
    if out is None:
        return ct
    name = getattr(hook, "__name__", type(hook).__name__)
    if not isinstance(out, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(out).__name__}'")
    g = out._data
    if tuple(g.shape) != tuple(ct.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value (was {list(ct.shape)} got {list(g.shape)})")
    if g.dtype != ct.dtype:
        from ..dtypes import to_dtype

        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was {to_dtype(ct.dtype)} got {to_dtype(g.dtype)})"
        )
    return g


def _run_tensor_hooks(node, cts):
    cts = list(cts)
    for i, ct in enumerate(cts):
        if ct is None:
            continue
        ct = _conj(ct)  # hooks and retained grads see torch's convention
        for hook in (node.hooks or {}).get(i, ()):
            ct = _hook_result(hook, ct, hook(Tensor._wrap(ct)))
        ref = (node.retained or {}).get(i)
        t = ref() if ref is not None else None
        if t is not None:
            g = ct if not node.padded else _lazy.unpad(ct, t.shape[0])  # a bucketed result's real rows
            t.grad = Tensor._wrap(g) if t.grad is None else Tensor._wrap(t.grad._data + g)
        cts[i] = _conj(ct)
    return cts


def replay_program(roots, inputs):
    """The recorded program from ``inputs`` (Tensors) to ``roots`` as a pure function.

    Returns ``(fn, leaves, consts, key)``: ``fn(*consts, *input_arrays, *leaf_arrays) -> root
    arrays`` replays every node between them, where ``leaves`` are the other leaves requiring
    grad that the roots depend on, and ``consts`` the other values the nodes read (arrays,
    numbers, and values eager fusion has not computed yet: the program takes them as inputs,
    so nothing flushes). ``key`` is what ``fn`` computes: each node's kernel and the wiring
    (positions, not identities), so a tape recorded again by the same code has the same key
    (None where a node's function is made anew per call).
    Used by ``create_graph=True``: JAX differentiates the replay, and the result becomes one
    tape node whose inputs are ``inputs + leaves`` (and ``consts``).
    """
    cut = {}  # (id(node), idx) or id(leaf) -> position in the argument list
    for i, t in enumerate(inputs):
        cut[("node", id(t._node), t._idx) if t._node is not None else id(t)] = i
    nodes = [t._node for t in roots if t._node is not None]
    order = list(reversed(_toposort(nodes)))  # producers first
    at = {id(node): k for k, node in enumerate(order)}
    leaves: list = []
    consts: list = []

    def const(v):
        consts.append(v if type(v) is _lazy.Pending and v.seg is not None else _lazy.real(v))
        return (2, len(consts) - 1)

    def ref(key):  # an input (0, position), a node's output (1, node position, index), a constant (2, k)
        return (0, cut[key]) if key in cut else (1, at[key[1]], key[2])

    plan = []
    for node in order:
        _check_alive(node)
        if node.fn is None:
            raise NotImplementedError(
                f"create_graph=True through {node!r}: custom autograd.Function nodes cannot be "
                "replayed; differentiate it without create_graph"
            )
        args = []
        for x in node.inputs:
            if type(x) is tuple:
                args.append(ref(("node", id(x[0]), x[1])))
            elif isinstance(x, Tensor):
                if id(x) not in cut:
                    cut[id(x)] = len(inputs) + len(leaves)
                    leaves.append(x)
                args.append((0, cut[id(x)]))
            else:
                args.append(const(x.value(node) if type(x) is Unread else x))
        plan.append((node.fn, tuple(args), node.multi))
    root_refs = []
    for t in roots:
        if t._node is None:
            root_refs.append((0, cut[id(t)]) if id(t) in cut else const(t._meta))
        else:
            root_refs.append(ref(("node", id(t._node), t._idx)))
    plan, root_refs = tuple(plan), tuple(root_refs)
    n_consts = len(consts)

    def fn(*arrays):
        given, args = arrays[:n_consts], arrays[n_consts:]
        values = []

        def read(r):
            return args[r[1]] if r[0] == 0 else given[r[1]] if r[0] == 2 else values[r[1]][r[2]]

        for f, refs, multi in plan:
            out = f(*[read(r) for r in refs])
            values.append(out if multi else (out,))
        return tuple(read(r) for r in root_refs)

    # a one-off function's node (``dispatch.call_pure``: eager checkpoints, device transfers) is
    # new each time: no key, so the replay cache holds no such closure or what it captured
    key = None if any(node.eager for node in order) else (plan, root_refs, len(inputs) + len(leaves))
    return fn, leaves, consts, key
