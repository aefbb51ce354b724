"""``fjax.utils.checkpoint``: activation checkpointing (torch.utils.checkpoint, oneflow.utils.checkpoint).

``checkpoint(function, *args)`` returns what ``function(*args)`` returns, with the same
gradients. With ``use_reentrant=True`` the forward keeps no activations: it runs without
recording, and the backward runs ``function`` again (from the same random state, unless
``preserve_rng_state=False``) and differentiates that. Otherwise (``use_reentrant=False``, or
not given: OneFlow's only form and the one torch recommends) ``function`` runs recorded as usual,
so every gradient, ``autograd.grad`` included, is exact, but activations are kept.
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name as _checkpoint_name

from .._order import after
from .._tracing import trace_state, tracing
from ..autograd.api import backward as _backward
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad
from ..errors import OpError
from ..random import default_generator
from ..tensor import Tensor

__all__ = [
    "POLICIES",
    "checkpoint",
    "checkpoint_name",
    "checkpoint_sequential",
    "resolve_policy",
    "save_and_offload_only_these_names",
    "save_anything_except_these_names",
    "save_only_these_names",
]

_cp = jax.checkpoint_policies
POLICIES = {
    "nothing_saveable": _cp.nothing_saveable,
    "everything_saveable": _cp.everything_saveable,
    "dots_saveable": _cp.dots_saveable,
    "checkpoint_dots": _cp.checkpoint_dots,
    "dots_with_no_batch_dims_saveable": _cp.dots_with_no_batch_dims_saveable,
    "checkpoint_dots_with_no_batch_dims": _cp.checkpoint_dots_with_no_batch_dims,
    "offload_dot_with_no_batch_dims": _cp.offload_dot_with_no_batch_dims("device", "pinned_host"),
}
"""JAX's argument-free checkpoint policies by name (``checkpoint(..., policy="dots_saveable")``);
the named-value policies are the functions ``save_only_these_names``,
``save_anything_except_these_names`` and ``save_and_offload_only_these_names``."""


def resolve_policy(policy):
    """The JAX policy ``policy`` names: a name of :data:`POLICIES`, a callable (a
    ``jax.checkpoint_policies`` policy, or one made by :func:`save_only_these_names` & co.), or
    None (save nothing: recompute everything).

    Args:
        policy: a policy name, a callable, or None.

    Example:
        >>> resolve_policy("dots_saveable") is jax.checkpoint_policies.dots_saveable
        True
        >>> resolve_policy("dots")
        Traceback (most recent call last):
        ...
        ValueError: checkpoint: unknown policy 'dots'; valid names: checkpoint_dots, checkpoint_dots_with_no_batch_dims, dots_saveable, dots_with_no_batch_dims_saveable, everything_saveable, nothing_saveable, offload_dot_with_no_batch_dims, or a callable such as save_only_these_names('name', ...)
    """  # noqa: E501
    if policy is None:
        return _cp.nothing_saveable
    if isinstance(policy, str):
        if policy not in POLICIES:
            raise ValueError(
                f"checkpoint: unknown policy {policy!r}; valid names: {', '.join(sorted(POLICIES))}, "
                "or a callable such as save_only_these_names('name', ...)"
            )
        return POLICIES[policy]
    if callable(policy):
        return policy
    raise TypeError(f"checkpoint: policy must be a name, a callable or None, got {type(policy).__name__}")


def _names(fn_name, names):
    names = tuple(names[0]) if len(names) == 1 and not isinstance(names[0], str) else tuple(names)
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"{fn_name}: names must be strings, got {names!r}")
    return names


def save_only_these_names(*names):
    """A policy that saves the values tagged with :func:`checkpoint_name` under ``names`` and
    recomputes everything else (``jax.checkpoint_policies.save_only_these_names``).

    Args:
        names: the tags to keep (strings, or one iterable of them).

    Example:
        >>> lin = nn.Linear(4, 4)
        >>> def f(x):
        ...     return checkpoint_name(lin(x).relu(), "hidden").sum()
        >>> x = fjax.randn(3, 4, requires_grad=True)
        >>> checkpoint(f, x, policy=save_only_these_names("hidden")).backward()
        >>> x.grad.shape
        fjax.Size([3, 4])
    """
    return _cp.save_only_these_names(*_names("save_only_these_names", names))


def save_anything_except_these_names(*names):
    """A policy that saves everything but the values tagged ``names`` (which are recomputed).

    Args:
        names: the tags to recompute.

    Example:
        >>> callable(save_anything_except_these_names("hidden"))
        True
    """
    return _cp.save_anything_except_these_names(*_names("save_anything_except_these_names", names))


def save_and_offload_only_these_names(
    names_which_can_be_saved=(), names_which_can_be_offloaded=(), offload_src="device", offload_dst="pinned_host"
):
    """A policy that keeps ``names_which_can_be_saved`` on the device, moves
    ``names_which_can_be_offloaded`` to host memory until the backward needs them, and
    recomputes the rest (``jax.checkpoint_policies.save_and_offload_only_these_names``). On a GPU
    or TPU the offloaded values leave device memory; on the CPU, host and device memory are one, so
    it acts like saving them.

    Args:
        names_which_can_be_saved: tags kept on the device.
        names_which_can_be_offloaded: tags offloaded to ``offload_dst``.
        offload_src: the memory kind they live in (default ``"device"``).
        offload_dst: the memory kind they move to (default ``"pinned_host"``).

    Example:
        >>> callable(save_and_offload_only_these_names(names_which_can_be_offloaded=["hidden"]))
        True
    """
    return _cp.save_and_offload_only_these_names(
        names_which_can_be_saved=list(_names("save_and_offload_only_these_names", (names_which_can_be_saved,))),
        names_which_can_be_offloaded=list(_names("save_and_offload_only_these_names", (names_which_can_be_offloaded,))),
        offload_src=offload_src,
        offload_dst=offload_dst,
    )


def checkpoint_name(tensor, name: str):
    """``tensor``, tagged ``name`` for the named-value policies (``jax.ad_checkpoint.checkpoint_name``):
    inside :func:`checkpoint` with ``policy=save_only_these_names(name)`` this value is saved for
    the backward rather than recomputed. Outside a checkpointed function it is ``tensor``.

    Args:
        tensor: a Tensor.
        name: the tag.

    Example:
        >>> x = fjax.ones(2)
        >>> bool((checkpoint_name(x, "h") == x).all())
        True
    """
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a str, got {type(name).__name__}")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"checkpoint_name: expected a Tensor, got {type(tensor).__name__}")
    from ..dispatch import call_pure

    return call_pure(f"checkpoint_name[{name}]", lambda a: _checkpoint_name(a, name), [tensor])


class _Recompute(Function):
    """The reentrant checkpoint: ``function`` run unrecorded, and again, recorded, in backward."""

    @staticmethod
    def forward(ctx, function, preserve_rng_state, *args):
        ctx.function, ctx.args = function, args
        ctx.rng = default_generator.get_state() if preserve_rng_state else None
        out = function(*args)
        outs = out if isinstance(out, tuple) else (out,)
        if not all(isinstance(o, Tensor) for o in outs):
            raise TypeError(
                "checkpoint(use_reentrant=True): function must return a Tensor or a tuple of Tensors, got "
                + ", ".join(type(o).__name__ for o in outs)
            )
        return out

    @staticmethod
    def backward(ctx, *grads):
        args = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a for a in ctx.args]
        now = None
        if ctx.rng is not None:
            now = default_generator.get_state()
            default_generator.set_state(ctx.rng)
        try:
            with enable_grad():
                out = ctx.function(*args)
        finally:
            if now is not None:
                default_generator.set_state(now)
        outs = out if isinstance(out, tuple) else (out,)
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if pairs:
            _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *[a.grad if isinstance(a, Tensor) and a.requires_grad else None for a in args])


def checkpoint(
    function,
    *args,
    use_reentrant: bool | None = None,
    context_fn=None,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    policy=None,
    **kwargs,
):
    """``function(*args, **kwargs)``, trading compute for memory when ``use_reentrant=True``.

    Values and gradients equal those of calling ``function`` directly. ``use_reentrant=True``
    (torch's old default) stores only the inputs: the backward re-runs ``function`` from the
    random state the forward started from (``preserve_rng_state``, so dropout draws the same
    mask), and ``function`` must return a Tensor or a tuple of Tensors and take no keyword
    arguments. As in torch, that form gives no gradient to parameters used inside ``function``
    when no input requires grad, and it puts those gradients into ``.grad`` even under
    ``autograd.grad``. ``use_reentrant=False`` or None (OneFlow's form; torch's ``None``
    warns and picks True) runs ``function`` recorded, keeping its activations. Inside a
    functional transform or an nn.Graph trace ``function`` is simply called.

    ``policy`` (JAX's checkpoint policies; a name of :data:`POLICIES` such as ``"dots_saveable"``
    or ``"dots_with_no_batch_dims_saveable"``, ``"nothing_saveable"``, or a callable such as
    ``save_only_these_names("h")`` with values tagged by :func:`checkpoint_name`, or
    ``save_and_offload_only_these_names``): ``function`` runs as one tape node whose backward
    keeps only what the policy saves and recomputes the rest (``jax.checkpoint``), eagerly and
    inside nn.Graph or functional transforms alike; ``use_reentrant`` is then ignored. Its
    gradients reach ``function``'s Tensor arguments and the parameters of the modules it
    reaches: ``function`` itself, its ``__self__``, its closure, its ``functools.partial``
    arguments and the module-level names its code reads (a requires-grad Tensor reached any
    other way gets no gradient). The first call of each function and policy compares the
    bytes the backward keeps with and without the policy, and warns when the policy saves
    nothing.

    ``preserve_rng_state`` is a keyword argument (torch takes it from ``**kwargs`` too).
    ``context_fn``, ``determinism_check`` and ``debug`` (torch's non-reentrant tuning) are
    accepted at their defaults only; ``early_stop`` changes nothing here.

    Example::

        >>> lin = nn.Linear(3, 3)
        >>> x = fjax.randn(2, 3, requires_grad=True)
        >>> from fjax.utils.checkpoint import checkpoint
        >>> y = checkpoint(lin, x, use_reentrant=True)
        >>> bool((y == lin(x)).all())
        True
        >>> y.sum().backward()
        >>> lin.weight.grad.shape
        fjax.Size([3, 3])
    """
    preserve_rng_state = kwargs.pop("preserve_rng_state", True)
    if context_fn is not None and getattr(context_fn, "__name__", "") != "noop_context_fn":
        raise NotImplementedError("checkpoint: a custom context_fn is not supported")
    if determinism_check != "default" or debug:
        raise NotImplementedError(
            f"checkpoint: determinism_check={determinism_check!r}, debug={debug!r} are not supported "
            "(only the defaults 'default', False)"
        )
    if policy is not None:
        return _policy_call(function, args, kwargs, policy)
    if not use_reentrant or trace_state.depth:
        return function(*args, **kwargs)
    if kwargs:
        raise ValueError("checkpoint(use_reentrant=True): unexpected keyword arguments: " + ",".join(kwargs))
    if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn("checkpoint: none of the inputs have requires_grad=True; gradients will be None", stacklevel=2)
    return _Recompute.apply(function, bool(preserve_rng_state), *args)


def _reached(function) -> tuple[list, list]:
    """The requires-grad Tensors and the buffers ``function`` can reach (see ``checkpoint``)."""
    from ..nn.module import Module

    objs, seen = [function], set()
    self = getattr(function, "__self__", None)
    if self is not None:
        objs.append(self)
    if isinstance(function, functools.partial):
        objs += [function.func, *function.args, *function.keywords.values()]
    code_fn = getattr(function, "__func__", function)
    for cell in getattr(code_fn, "__closure__", None) or ():
        try:
            objs.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    code, globs = getattr(code_fn, "__code__", None), getattr(code_fn, "__globals__", {})
    if code is not None:
        objs += [globs[n] for n in code.co_names if n in globs]
    params, buffers = [], []
    for obj in objs:
        if isinstance(obj, Module):
            for p in obj.parameters():
                if p.requires_grad and id(p) not in seen:
                    seen.add(id(p))
                    params.append(p)
            for b in obj.buffers():
                if id(b) not in seen:
                    seen.add(id(b))
                    buffers.append(b)
        elif isinstance(obj, Tensor) and obj.requires_grad and id(obj) not in seen:
            seen.add(id(obj))
            params.append(obj)
    return params, buffers


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


_checked: set = set()  # (function code, policy) pairs whose savings were checked


def _saved_bytes(fn, avals) -> int:
    """Bytes of the residuals ``jax.vjp(fn)`` keeps for these argument shapes (traced, not run)."""
    vjp = jax.eval_shape(lambda *a: jax.vjp(fn, *a)[1], *avals)
    return sum(int(x.size) * x.dtype.itemsize for x in jax.tree.leaves(vjp))


def recompute(pure, policy=None, fixed=0):
    """``jax.checkpoint(pure, policy=policy)`` whose backward recomputes only once its cotangent
    has arrived. Inside one compiled program XLA orders the recomputation by data alone, and its
    inputs (a block's input and parameters) exist from the forward on, so its scheduler may run it
    right after the forward and keep its activations through the whole backward: the memory
    checkpointing should save is spent anyway (an LSTM's recomputed scan: all of it; on XLA:CPU's
    default scheduler, a Transformer block's too). Here the backward reads the saved residuals
    only after the gradient of the block's output exists (``fjax._order.after``), so nothing it recomputes
    can start earlier. The values are those of ``jax.checkpoint``; ``pure`` is traced once per
    call, as there. Reverse mode only (a ``jax.custom_vjp``): nn.Graph's checkpointed modules
    use it, whose step differentiates by ``backward``; ``checkpoint(..., policy=...)``, which
    forward-mode transforms (``jacfwd``, ``hvp``) may reach, keeps ``jax.checkpoint``.

        >>> import jax, jax.numpy as jnp
        >>> from fjax.utils.checkpoint import recompute
        >>> f = recompute(lambda x: jnp.sin(jnp.sin(x)))
        >>> g = jax.jit(jax.grad(lambda x: f(x).sum()))(jnp.ones(3))
        >>> bool(jnp.allclose(g, jnp.cos(jnp.sin(1.0)) * jnp.cos(1.0)))
        True
    """
    inner = jax.checkpoint(pure, policy=policy)
    late = []  # which of the saved residuals are arguments from ``fixed`` on (set by ``forward``)

    @jax.custom_vjp
    def run(*arrays):
        return inner(*arrays)

    def forward(*arrays):
        out, vjp = jax.vjp(inner, *arrays)
        ids = {id(a) for a in arrays[fixed:]}
        late[:] = [id(x) in ids for x in jax.tree_util.tree_leaves(vjp)]
        return out, vjp

    def backward(vjp, ct):
        leaves, treedef = jax.tree_util.tree_flatten(vjp)
        at = [i for i, x in enumerate(leaves) if (late[i] if len(late) == len(leaves) else True)]
        held = after([leaves[i] for i in at], ct)
        for i, x in zip(at, held):
            leaves[i] = x
        return jax.tree_util.tree_unflatten(treedef, leaves)(ct)

    run.defvjp(forward, backward)
    return run


def _no_side_effects(writes, buffers, arguments):
    """Raise if ``function`` wrote in place to a tensor it neither made nor owns as a module buffer:
    a tensor from outside (its old value is concrete, not a value of the trace) or one of its
    arguments. Each trace of the function would repeat that write (the forward, the savings check,
    a recomputation), and an argument's write would not reach the caller's tensor."""
    owned = {id(b) for b in buffers} | {id(b._st) for b in buffers if b._st is not None}
    args = {id(a) for a in arguments} | {id(a._st) for a in arguments if a._st is not None}
    for obj, saved in writes:
        if id(obj) in owned:
            continue
        old = next((v for n, v in saved if n in ("_a", "array")), None)  # (other entries: tape metadata)
        if old is None:
            continue
        if not isinstance(old, jax.core.Tracer) or id(obj) in args:
            what = "one of its arguments" if id(obj) in args else "a tensor from outside the function"
            raise OpError(
                f"the checkpointed function writes in place to {what} (shape "
                f"{list(getattr(old, 'shape', ()))}, {getattr(old, 'dtype', None)}); recomputing it would repeat "
                "that write. Move the "
                "update out of the checkpointed function, or compute the new value inside it, return it and "
                "assign it outside (module buffers such as BatchNorm's running statistics are fine)"
            )


def _policy_call(function, args, kwargs, policy):
    """``function`` as one tape node whose VJP is ``jax.checkpoint(pure, policy=...)``."""
    from ..dispatch import call_pure

    resolved = resolve_policy(policy)
    params, buffers = _reached(function)
    leaves, tree = jax.tree_util.tree_flatten((args, kwargs), is_leaf=_is_tensor)
    tensor_idx = [i for i, x in enumerate(leaves) if isinstance(x, Tensor)]
    out_tree = []
    # eagerly, every trace of ``pure`` (the savings check, the call's own) draws the same random numbers
    rng_start = None if trace_state.depth else default_generator._counter
    rng_after = []

    def pure(*arrays):
        n = len(params)
        saved = [(t, t._data, t._node, t._requires_grad) for t in params + buffers]
        if rng_start is not None:
            default_generator._counter = rng_start
        try:
            for p, a in zip(params, arrays[:n]):
                p._data, p._node = a, None
            call_leaves = list(leaves)
            for i, a in zip(tensor_idx, arrays[n:]):
                call_leaves[i] = Tensor._wrap(a)
            a2, k2 = jax.tree_util.tree_unflatten(tree, call_leaves)
            with no_grad(), tracing():  # (every write logged; the outermost trace puts outside tensors back)
                mark = len(trace_state.undo)
                out = function(*a2, **k2)
                _no_side_effects(trace_state.undo[mark:], buffers, [call_leaves[i] for i in tensor_idx])
                flat, otree = jax.tree_util.tree_flatten(out, is_leaf=_is_tensor)
                out_tree.append((otree, [None if isinstance(x, Tensor) else x for x in flat]))
                return tuple(x._data for x in flat if isinstance(x, Tensor)) + tuple(b._data for b in buffers)
        finally:
            for t, data, node, rg in saved:
                t._data, t._node, t._requires_grad = data, node, rg
            if rng_start is not None:
                rng_after.append(default_generator._counter)

    inputs = params + [leaves[i] for i in tensor_idx]
    name = getattr(function, "__qualname__", None) or type(function).__name__
    key = (getattr(getattr(function, "__func__", function), "__code__", type(function)), id(resolved))
    if key not in _checked:
        if len(_checked) > 4096:  # policies made afresh each call: bounded
            _checked.clear()
        _checked.add(key)
        avals = [jax.ShapeDtypeStruct(t.shape, t._data.dtype) for t in inputs]
        diff = [i for i, t in enumerate(inputs) if jnp.issubdtype(t._data.dtype, jnp.inexact)]

        def on(fn):
            def f(*d):
                full = list(avals)
                for i, a in zip(diff, d):
                    full[i] = a
                return fn(*full)

            return f

        if diff:
            try:
                plain = _saved_bytes(on(pure), [avals[i] for i in diff])
                kept = _saved_bytes(on(jax.checkpoint(pure, policy=resolved)), [avals[i] for i in diff])
            except Exception:  # noqa: BLE001 - the check is advisory: the call below reports real errors
                plain = kept = None
            if plain is not None and kept >= plain:
                warnings.warn(
                    f"checkpoint({name}, policy={policy!r}): the backward keeps {kept} bytes with the policy and "
                    f"{plain} without it, so it saves no memory; pick a policy that saves less "
                    "(e.g. 'nothing_saveable' or save_only_these_names(...))",
                    stacklevel=3,
                )
    results = call_pure(f"checkpoint[{name}]", jax.checkpoint(pure, policy=resolved), inputs)
    if rng_after:
        default_generator._counter = rng_after[-1]
    results = results if isinstance(results, tuple) else (results,)
    n_out = len(results) - len(buffers)
    with no_grad():
        for b, r in zip(buffers, results[n_out:]):
            b._data = r._data
    otree, statics = out_tree[-1]
    tensors = iter(results[:n_out])
    return jax.tree_util.tree_unflatten(otree, [next(tensors) if s is None else s for s in statics])


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` (an ``nn.Sequential`` or a list of modules/functions) on ``input`` in
    ``segments`` chunks, each but the last through :func:`checkpoint`.

    Example::

        >>> seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
        >>> x = fjax.randn(3, 4, requires_grad=True)
        >>> from fjax.utils.checkpoint import checkpoint_sequential
        >>> y = checkpoint_sequential(seq, 2, x, use_reentrant=True)
        >>> bool(fjax.allclose(y, seq(x)))
        True
    """
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("checkpoint_sequential: unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    functions = list(functions)
    if not isinstance(segments, int) or segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be a positive int, got {segments!r}")

    def run(start: int, end: int):
        def forward(x):
            for f in functions[start : end + 1]:
                x = f(x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
