"""The tape's entry points: ``backward`` and ``grad`` (torch.autograd's), with
``create_graph=True`` as JAX's VJP of the replayed program recorded as one tape node."""

from __future__ import annotations

import warnings
from typing import Sequence

import jax
import jax.numpy as jnp

from .. import _memory
from ..tensor import Tensor, _Above
from . import engine
from .grad_mode import _state as _grad_state


def _as_tuple(x):
    if x is None:
        return None
    return (x,) if isinstance(x, Tensor) else tuple(x)


_ONES: dict = {}


def _ones(shape, dtype):
    """The implicit seed of a scalar output's backward: one immutable array per shape and dtype,
    not a device op per backward (never one made inside a trace, which would be a tracer)."""
    out = _ONES.get((shape, dtype))
    if out is None:
        out = jnp.ones(shape, dtype)
        if not isinstance(out, jax.core.Tracer) and len(_ONES) < 64:
            _ONES[(shape, dtype)] = out
    return out


def _seed(outputs, grad_outputs, create_graph):
    """Root cotangents: given ones (Tensors or arrays), or ones for scalar outputs."""
    grads = []
    grad_outputs = grad_outputs or (None,) * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: got {len(outputs)} outputs but {len(grad_outputs)} grad_outputs")
    for i, (t, g) in enumerate(zip(outputs, grad_outputs)):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs; output {i} has shape "
                    f"{tuple(t.shape)}: pass a gradient/grad_outputs of that shape"
                )
            if t._meta.dtype.kind == "c":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {t.dtype}")
            g = Tensor._wrap(_ones(t._meta.shape, t._meta.dtype))
        elif not isinstance(g, Tensor):
            g = Tensor._wrap(jnp.asarray(g, t._meta.dtype))
        if tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(
                f"grad: mismatch in shape: grad_output[{i}] has shape {tuple(g.shape)} and output[{i}] "
                f"has shape {tuple(t.shape)}"
            )
        if g.dtype != t.dtype:  # torch and OneFlow cast a gradient to its output's dtype
            g = g.to(t.dtype)
        grads.append(g if create_graph else g._data)
    return grads


def backward(
    tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None
) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of leaves (torch.autograd.backward).

    Args:
        tensors: the tensors to differentiate (scalars, or with ``grad_tensors``).
        grad_tensors: the gradient of each tensor (``None`` for a scalar).
        retain_graph: keep the tape for another backward.
        create_graph: record the backward pass, for higher derivatives.
        grad_variables: torch's deprecated name for ``grad_tensors``.
        inputs: accumulate only into these leaves.

    Example:
        >>> x = fjax.tensor([1.0, 2.0], requires_grad=True)
        >>> fjax.autograd.backward([(x * x).sum()])
        >>> x.grad
        tensor([2., 4.], dtype=fjax.float32)
    """
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("backward: 'grad_tensors' and 'grad_variables' (its deprecated name) are both given")
        grad_tensors = grad_variables
    tensors = _as_tuple(tensors)
    grads = _seed(tensors, _as_tuple(grad_tensors), create_graph)
    inputs = _as_tuple(inputs)
    if _memory.due():  # fjax.cuda.reset_peak_memory_stats asked for CPU peaks: sample at start and end
        _memory.sample_armed()
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        results, wrt = _grad_with_graph(tensors, grads, inputs or ())
        for leaf, g in zip(wrt, results):
            leaf.grad = g if leaf.grad is None else leaf.grad + g
            engine.post_accumulate(leaf)
        return
    if inputs is None:
        engine.backward(tensors, grads, retain_graph)
    else:
        found = engine.backward(tensors, grads, retain_graph, inputs=inputs)
        for t, g in zip(inputs, found):
            if g is not None:
                t.grad = Tensor._wrap(g) if t.grad is None else Tensor._wrap(t.grad._data + g)
                engine.post_accumulate(t)
    if _memory.due():
        _memory.sample_armed()


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """Gradients of ``outputs`` w.r.t. ``inputs``, without touching ``.grad`` (torch.autograd.grad).

    Args:
        outputs: the tensors (or one tensor) to differentiate.
        inputs: the tensors (or one tensor) to differentiate with respect to; each must require grad.
        grad_outputs: the vector of the vector-Jacobian product, one per output (default None: ones for scalar outputs).
        retain_graph: keep the graph for another backward (default None: the value of ``create_graph``).
        create_graph: if True, build the graph of the gradients, for higher-order derivatives (default False).
        only_inputs: deprecated and ignored, as in torch (gradients are only ever returned for ``inputs``).
        allow_unused: if True, an input the outputs do not depend on gets None instead of an error (default None).
        is_grads_batched: if True, the first dimension of every ``grad_outputs`` entry is a batch: one
            vector-Jacobian product per entry, stacked along a new first dimension of each gradient.
        materialize_grads: if True, such an input gets zeros instead of None (default False).

    Example::

        >>> x = fjax.tensor(3.0, requires_grad=True)
        >>> (g,) = fjax.autograd.grad(x**3, x, create_graph=True)
        >>> fjax.autograd.grad(g, x)[0]   # 6 * x
        tensor(18., dtype=fjax.float32)
    """
    if not only_inputs:
        warnings.warn("grad: only_inputs is deprecated and ignored (as in torch)", UserWarning, stacklevel=2)
    outputs, inputs = _as_tuple(outputs), _as_tuple(inputs)
    if is_grads_batched:
        return _batched_grad(
            outputs, inputs, _as_tuple(grad_outputs), retain_graph, create_graph, allow_unused, materialize_grads
        )
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise RuntimeError(f"grad: input {i} (shape {tuple(t.shape)}) does not require grad")
    grads = _seed(outputs, _as_tuple(grad_outputs), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    used = _reachable(outputs, inputs)
    if create_graph:
        results, _ = _grad_with_graph(outputs, grads, inputs)
        results = [r if u else None for r, u in zip(results, used)]
    else:
        found = engine.backward(outputs, grads, retain_graph, inputs=inputs)
        results = [None if g is None else Tensor._wrap(g) for g in found]
    for i, (r, t) in enumerate(zip(results, inputs)):
        if r is None:
            if materialize_grads:
                results[i] = Tensor._wrap(jnp.zeros_like(t._data))
            elif not allow_unused:
                raise RuntimeError(
                    f"grad: input {i} (shape {tuple(t.shape)}) was not used in the graph of the outputs; "
                    "set allow_unused=True if this is the desired behavior"
                )
    return tuple(results)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """``grad(..., is_grads_batched=True)``: one vector-Jacobian product per row of the grad_outputs."""
    if not grad_outputs or any(g is None for g in grad_outputs):
        raise RuntimeError("grad: is_grads_batched=True needs a batched tensor in grad_outputs for every output")
    sizes = {int(g.shape[0]) if g.ndim else None for g in grad_outputs}
    if len(sizes) != 1 or None in sizes:
        shapes = [tuple(g.shape) for g in grad_outputs]
        raise RuntimeError(
            f"grad: is_grads_batched=True needs grad_outputs with one common first dimension, got {shapes}"
        )
    (n,) = sizes
    keep = create_graph if retain_graph is None else retain_graph
    rows = [
        grad(
            outputs,
            inputs,
            [g[i] for g in grad_outputs],
            retain_graph=keep or i < n - 1,
            create_graph=create_graph,
            allow_unused=allow_unused,
            materialize_grads=materialize_grads,
        )
        for i in range(n)
    ]
    return tuple(None if rows[0][j] is None else _Above.ops.stack([r[j] for r in rows]) for j in range(len(inputs)))


def _reachable(outputs, inputs) -> list[bool]:
    """Which inputs the outputs depend on through the tape."""
    nodes = engine._toposort([t._node for t in outputs if t._node is not None])
    leaves, edges = set(), set()
    for node in nodes:
        engine._check_alive(node)
        for x in node.inputs:
            if type(x) is tuple:
                edges.add((id(x[0]), x[1]))
            else:
                leaves.add(id(x))
    roots = {id(t) for t in outputs}
    return [id(t) in roots or (id(t) in leaves if t._node is None else (id(t._node), t._idx) in edges) for t in inputs]


def _grad_with_graph(outputs, grads, inputs: Sequence):
    """create_graph=True: JAX's VJP of the replayed program, recorded as one tape node.

    Returns the gradients (Tensors on the tape) w.r.t. ``inputs`` plus every other leaf the
    outputs depend on, and that list of tensors.
    """
    from .._transforms.pipeline import replay

    program, leaves, consts, key = engine.replay_program(outputs, list(inputs))
    wrt = list(inputs) + leaves
    k, n = len(consts), len(wrt)

    def vjp_of_program(*arrays):  # in torch's convention for complex gradients (engine._conj)
        given, primals, cts = arrays[:k], arrays[k : k + n], arrays[k + n :]
        _, vjp = jax.vjp(lambda *xs: program(*given, *xs), *primals)
        return tuple(engine._conj(g) for g in vjp(tuple(engine._conj(c) for c in cts)))

    results = replay("GradWithGraph", vjp_of_program, wrt + list(grads), consts, key)
    return list(results), wrt


_Above.backward, _Above.grad_state = backward, _grad_state
