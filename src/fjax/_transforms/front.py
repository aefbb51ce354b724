"""What the two transform front ends share: tracing a call and the JAX transforms of its program.

``autograd.functional`` (torch.autograd.functional: tuples of Tensors, ``strict``,
``create_graph``, ``vectorize``) and ``fjax.func`` (torch.func: pytrees, ``argnums``,
``has_aux``, ``chunk_size``) differ in how they validate their arguments and structure their
results, and in nothing else. Both turn the call into a flat list of input Tensors traced into a
program (``trace``), build the transform of that program here, and finish it through the pipeline.

A builder gives ``transform(program_fn, *arrays)`` (``pipeline.finish``'s argument): a pure
function of the program's inputs (and the vectors) returning a flat tuple of arrays. The program's
first ``n_out`` outputs are the function's outputs, the rest pass through (torch.func's ``aux``;
none for autograd.functional). ``diff``: the positions of the differentiated inputs (torch.func's
``argnums``; autograd.functional differentiates all). Reverse-mode results and cotangents are in
torch's convention for complex numbers: JAX's, conjugated (``engine._conj``).
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..autograd.engine import _conj
from . import pipeline
from . import program as _program
from .deps import dependence


# -- tracing --------------------------------------------------------------------------------
def trace(where: str, roots: tuple, static: tuple, call: Callable, avals: list, side: Callable) -> pipeline.Traced:
    """``pipeline.trace`` of ``call`` (the input Tensors -> the flat output Tensors) on ``avals``,
    traced as ``where`` (the public function); ``roots`` and ``static`` select the program."""
    return pipeline.trace(roots, (where, *static, *avals), lambda: _program.trace(call, avals, where), side)


def program_fn(program, n_out: int | None = None) -> Callable:
    """The traced program as a plain function of arrays (its first ``n_out`` outputs)."""
    return lambda *xs: tuple(jax.core.eval_jaxpr(program.jaxpr, program.consts, *xs)[:n_out])


def depends(fn: Callable, tensors: Sequence) -> np.ndarray:
    """``strict=True``: ``D[o, i]``, output ``o`` of ``fn`` (of the Tensors' arrays) depends on input ``i``."""
    return dependence(fn, [t._data for t in tensors])


# -- what a transform differentiates ----------------------------------------------------------
def on_inputs(program_outputs: Callable, xs, diff, n_out: int) -> tuple[Callable, list]:
    """``(f, d0)``: ``f(*d) -> (outs, aux)``, the program as a function of the ``diff`` inputs only
    (the others fixed to ``xs``), and those inputs' values."""

    def f(*d):
        full = list(xs)
        for i, v in zip(diff, d):
            full[i] = v
        outs = program_outputs(*full)
        return tuple(outs[:n_out]), tuple(outs[n_out:])

    return f, [xs[i] for i in diff]


def grad(f: Callable, n: int) -> Callable:
    """``d -> (grads, (value, aux))`` for ``f(*d) -> (outs, aux)``: the gradient of the first output,
    a scalar, in torch's convention (the form ``jax.jvp``/``jax.vjp`` take with ``has_aux``:
    second-order products)."""

    def scalar(*d):
        outs, aux = f(*d)
        return outs[0], aux

    def fn(*d):
        (value, aux), grads = jax.value_and_grad(scalar, argnums=tuple(range(n)), has_aux=True)(*d)
        return tuple(_conj(g) for g in grads), (value, aux)

    return fn


def transpose_vjp(pull: Callable, cotangent_like, vs):
    """``J v`` from ``pull(u) = u^T J``: torch's double-backward trick (the VJP of a VJP), which
    goes through custom Functions' backward where forward mode cannot."""
    _, pull_t = jax.vjp(pull, tuple(jnp.zeros_like(c) for c in cotangent_like))
    return pull_t(vs)[0]


# -- transform builders -----------------------------------------------------------------------
def vjp_transform(n: int, n_out: int, has_v: bool, outputs: bool = True) -> Callable:
    """Args: the ``n`` inputs, then the cotangents (``has_v``; else ones for the single-element
    output). Results: the outputs (``outputs``), then the VJPs."""

    def transform(program_fn, *args):
        f, xs = on_inputs(program_fn, args[:n], range(n), n_out)
        outs, pull, _ = jax.vjp(f, *xs, has_aux=True)
        vs = args[n:] if has_v else (jnp.ones_like(outs[0]),)
        grads = tuple(_conj(g) for g in pull(tuple(_conj(v.astype(o.dtype)) for v, o in zip(vs, outs))))
        return (*outs, *grads) if outputs else grads

    return transform


def jvp_transform(n: int, n_out: int, has_v: bool, by_vjp: bool = False) -> Callable:
    """Args: the ``n`` inputs, then the tangents (``has_v``; else ones for the single-element
    input). Results: the outputs, the JVPs, the aux outputs. ``jax.jvp``; or, ``by_vjp``,
    ``transpose_vjp`` (custom Functions, which have no forward-mode rule)."""

    def transform(program_fn, *args):
        f, xs = on_inputs(program_fn, args[:n], range(n), n_out)
        vs = args[n:] if has_v else (jnp.ones_like(xs[0]),)
        vs = tuple(v.astype(x.dtype) for v, x in zip(vs, xs))
        if not by_vjp:
            outs, tangents, aux = jax.jvp(f, tuple(xs), vs, has_aux=True)
        else:
            outs, pull, aux = jax.vjp(f, *xs, has_aux=True)
            tangents = transpose_vjp(pull, outs, vs)
        return (*outs, *tangents, *aux)

    return transform


def jacobian_transform(diff, n_out: int, forward: bool, chunk_size: int | None = None) -> Callable:
    """Results: ``d out_o / d x_i`` for each output ``o`` and ``diff`` input ``i``, row by row, then
    the aux outputs. ``jax.jacfwd`` (``forward``), else ``jax.jacrev`` (rows are VJPs), computing
    ``chunk_size`` rows at a time where given."""
    diff, nums = tuple(diff), tuple(range(len(diff)))

    def transform(program_fn, *xs):
        f, d0 = on_inputs(program_fn, xs, diff, n_out)
        if forward:
            jac = jax.jacfwd(f, argnums=nums, has_aux=True)
        elif chunk_size is None:
            jac = jax.jacrev(f, argnums=nums, has_aux=True)
        else:
            jac = _chunked_jacrev(f, len(diff), chunk_size)
        blocks, aux = jac(*d0)
        return (*[b if forward else _conj(b) for row in blocks for b in row], *aux)

    return transform


def _chunked_jacrev(f, n_diff: int, chunk_size: int):
    """jacrev computing ``chunk_size`` rows at a time (``lax.map`` over the standard basis)."""

    def jac(*d):
        outs, pull, aux = jax.vjp(f, *d, has_aux=True)
        sizes = [o.size for o in outs]
        total = sum(sizes)
        eye = jnp.eye(total, dtype=jnp.float32)
        starts = np.cumsum([0] + sizes)
        basis = tuple(
            eye[:, starts[i] : starts[i + 1]].astype(o.dtype).reshape((total, *o.shape)) for i, o in enumerate(outs)
        )
        rows = jax.lax.map(pull, basis, batch_size=chunk_size)
        blocks = tuple(
            tuple(rows[j][starts[i] : starts[i + 1]].reshape((*o.shape, *d[j].shape)) for j in range(n_diff))
            for i, o in enumerate(outs)
        )
        return blocks, aux

    return jac


def hessian_transform(diff, n_out: int, forward: bool, scalar: bool = False) -> Callable:
    """Results: ``d2 out_o / d x_i d x_j`` for each output ``o`` and ``diff`` inputs ``i``, ``j``,
    row by row: the Jacobian (``jax.jacfwd``: forward-over-reverse, or ``jax.jacrev``) of the
    reverse-mode Jacobian. ``scalar``: the single output, of one element, taken as a scalar."""
    diff, nums = tuple(diff), tuple(range(len(diff)))
    outer = jax.jacfwd if forward else jax.jacrev

    def transform(program_fn, *xs):
        f, d0 = on_inputs(program_fn, xs, diff, n_out)
        outs = (lambda *a: f(*a)[0][0].reshape(())) if scalar else (lambda *a: f(*a)[0])
        blocks = outer(jax.jacrev(outs, argnums=nums), argnums=nums)(*d0)
        rows = [blocks] if scalar else blocks
        return [b for row in rows for inner in row for b in inner]

    return transform
