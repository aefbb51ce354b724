"""The call of a user function inside ``fjax.func`` transforms, as a flat program of its Tensors.

``Call`` flattens the positional arguments (pytrees; Tensors are the leaves), marks the leaves
of the differentiated arguments, runs the function on traced Tensors and records the output
and aux structures, with torch.func's validation and messages.
"""

from __future__ import annotations

from typing import Callable

import jax.numpy as jnp
import numpy as np
from jax import tree_util

from ..tensor import Tensor
from . import front
from . import program as _program


def is_tensor(x) -> bool:
    """Tensors are the leaves of fjax.func's pytrees."""
    return isinstance(x, Tensor)


class _Keyed:
    """A dict on its way through a JAX pytree: JAX orders a dict's leaves by sorted key, torch
    (and the user) by insertion. ``flatten`` turns dicts into these; unflattening builds the
    dict again, keys in their first order."""

    __slots__ = ("kind", "keys", "values")

    def __init__(self, kind, keys, values):
        self.kind, self.keys, self.values = kind, keys, values


tree_util.register_pytree_node(
    _Keyed, lambda d: (d.values, (d.kind, d.keys)), lambda aux, values: aux[0](zip(aux[1], values))
)


def _keyed(tree):
    if isinstance(tree, dict):
        return _Keyed(type(tree), tuple(tree), [_keyed(v) for v in tree.values()])
    if type(tree) in (list, tuple):
        return type(tree)(_keyed(v) for v in tree)
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(_keyed(v) for v in tree))
    return tree


def flatten(tree):
    """``(leaves, treedef)`` with Tensors as leaves and dicts in their keys' insertion order."""
    return tree_util.tree_flatten(_keyed(tree), is_leaf=is_tensor)


# -- argnums (torch's validation and messages) ----------------------------------------------
def argnums_tuple(argnums, num_args: int) -> tuple[int, ...]:
    """``argnums`` validated against ``num_args`` (torch's messages) as a tuple of indices."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if isinstance(argnums, tuple):
        if len(argnums) == 0:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    out = []
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if not -num_args <= a < num_args:
            raise RuntimeError(f"Got argnum={a}, but only {num_args} positional inputs")
        out.append(a % num_args)
    return tuple(out)


# -- tracing a call --------------------------------------------------------------------------
class Call:
    """``func(*args, **kwargs)`` as a flat program of the Tensors in ``args``.

    ``diff`` (positions in the flat inputs) are the leaves of the differentiated arguments,
    in argnums order; ``diff_trees`` rebuild their structures. After tracing, ``out_tree``,
    ``n_out`` and the aux structure describe the outputs.
    """

    def __init__(self, api: str, func: Callable, args: tuple, kwargs: dict, argnums=None, has_aux=False, check=None):
        self.api, self.func, self.kwargs, self.has_aux, self.check = api, func, kwargs, has_aux, check
        self.leaves, self.args_tree = flatten(tuple(args))
        self.inputs = [i for i, x in enumerate(self.leaves) if is_tensor(x)]
        position = {leaf_i: k for k, leaf_i in enumerate(self.inputs)}
        self.diff, diff_trees = [], []
        if argnums is not None:
            starts = np.cumsum([0] + [len(flatten(a)[0]) for a in args])
            for a in argnums:
                for leaf_i in range(starts[a], starts[a + 1]):
                    leaf = self.leaves[leaf_i]
                    if leaf_i not in position:
                        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}")
                    if not (leaf.dtype.is_floating_point or leaf.dtype.is_complex):
                        raise RuntimeError(
                            f"{api}: argument {a} has a Tensor of dtype {leaf.dtype}; only floating point and "
                            "complex Tensors can be differentiated"
                        )
                    self.diff.append(position[leaf_i])
                diff_trees.append(flatten(args[a])[1])
        self.diff_trees = diff_trees
        self.out_tree = self.aux_tree = None
        self.n_out = 0
        self.aux_static: list = []

    def diff_structure(self, leaves: list, single: bool):
        """Rebuild per-argument structures from flat diff leaves (a tuple unless ``single``)."""
        out, k = [], 0
        for tree in self.diff_trees:
            out.append(tree_util.tree_unflatten(tree, leaves[k : k + tree.num_leaves]))
            k += tree.num_leaves
        return out[0] if single else tuple(out)

    def __call__(self, tensors: list[Tensor]) -> list[Tensor]:
        leaves = list(self.leaves)
        for k, t in zip(self.inputs, tensors):
            leaves[k] = t
        out = self.func(*tree_util.tree_unflatten(self.args_tree, leaves), **self.kwargs)
        aux = None
        if self.has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(
                    f"{self.api}: output of function f should be a tuple: (output, aux) if has_aux is True"
                )
            out, aux = out
        if self.check is not None:
            self.check(out)
        flat, self.out_tree = flatten(out)
        if not flat:
            raise RuntimeError(
                f"{self.api}: Expected f to be a function that has non-empty output (got output = {out})"
            )
        for o in flat:
            if not is_tensor(o):
                raise RuntimeError(
                    f"{self.api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}"
                )
        self.n_out = len(flat)
        aux_flat, self.aux_tree = flatten(aux)
        self.aux_static = [None if is_tensor(a) else a for a in aux_flat]
        return flat + [a for a in aux_flat if is_tensor(a)]

    def trace(self, name: str | None = None, traced=None, avals=None, options=()):
        """The ``pipeline.Traced`` program and the Tensors it takes as inputs (``name``: the
        public function).

        vmap traces ``traced`` (default: this call) on ``avals`` (default: the inputs'); its
        ``options`` select the program too. Reused while the function is unchanged (``guards``).
        """
        tensors = [self.leaves[k] for k in self.inputs]
        where = f"fjax.func.{name or self.api.split('(')[0]}"
        avals = [_program.aval(t) for t in tensors] if avals is None else avals
        others = tuple(None if is_tensor(x) else x for x in self.leaves)
        result = front.trace(
            where,
            (self.func, others, tuple(sorted(self.kwargs.items())), self.check),
            (self.api, self.args_tree, tuple(self.diff), self.has_aux, options),
            traced or self,
            avals,
            lambda: (self.out_tree, self.n_out, self.aux_tree, self.aux_static),
        )
        self.out_tree, self.n_out, self.aux_tree, self.aux_static = result.side
        # traced: what is left is the structures the results are built with. A repeat plan keeps
        # them (through the caller's ``post``), and must not keep the function or the inputs
        self.func = self.leaves = self.kwargs = None
        return result, tensors

    def aux(self, aux_tensors):
        it = iter(aux_tensors)
        return tree_util.tree_unflatten(self.aux_tree, [next(it) if a is None else a for a in self.aux_static])

    def check_float_outputs(self, program, api: str):
        for v in program.jaxpr.outvars[: self.n_out]:
            if not jnp.issubdtype(v.aval.dtype, jnp.inexact):
                raise RuntimeError(
                    f"{api}: All outputs of f must be floating-point or complex Tensors, got Tensor with dtype "
                    f"fjax.{np.dtype(v.aval.dtype).name}"
                )


def check_forward_mode(program, api: str) -> None:
    """Forward-mode transforms cannot go through a custom autograd.Function (a custom VJP)."""
    if program.custom_vjp:
        raise RuntimeError(
            f"{api}: the function calls a custom fjax.autograd.Function, which has a backward but no "
            "forward-mode (jvp) rule; use a reverse-mode transform (grad, vjp, jacrev) instead"
        )
