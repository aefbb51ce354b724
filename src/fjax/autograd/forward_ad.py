"""``torch.autograd.forward_ad``: forward-mode AD on eager tensors, one op at a time.

Inside ``dual_level()``, ``make_dual(x, t)`` gives a tensor with the values of ``x`` that carries
the tangent ``t``. Every op that reads a dual tensor computes its result as usual (recorded on the
backward tape too) and its tangent with ``jax.jvp`` of the same kernel, so the tangent of
``f(x)`` is ``J_f(x) @ t``; ``unpack_dual(y)`` gives ``(primal, tangent)``. Leaving the level
drops every tangent made in it, as torch's.

A custom ``autograd.Function`` applied to dual tensors uses its ``jvp`` staticmethod (its forward
runs without tangents); one without ``jvp`` raises NotImplementedError, as torch's. Not supported
(each raises NotImplementedError naming it): nested levels, a tangent that requires grad
(forward-over-reverse: use ``fjax.func.jvp`` of ``fjax.func.grad``), and an in-place op on a dual
tensor that shares its storage with views. Ops of integer or boolean results carry no tangent.

Example::

    >>> import fjax.autograd.forward_ad as fwAD
    >>> x = fjax.tensor([0.0, 1.0])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, fjax.ones(2)).sin() * 2
    ...     fwAD.unpack_dual(y).tangent
    tensor([2.0000, 1.0806], dtype=fjax.float32)
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import sys

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import OpError
from ..tensor import Tensor, _Above
from . import grad_mode

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])


class _State:
    level = None  # the open level's token (an int), or None outside dual_level
    off = 0  # > 0 while fjax itself makes a primal view (no tangent may follow it)


state = _State()
_levels = itertools.count()
_kernels: dict = {}  # (kernel, dual positions) -> jitted jvp


def enter_dual_level() -> int:
    """Open a forward-AD level (``dual_level`` does this and closes it); returns its index."""
    if state.level is not None:
        raise NotImplementedError("forward_ad.enter_dual_level: nested forward-mode AD levels are not supported")
    state.level = next(_levels)
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the open level: the tangents made in it are dropped."""
    if state.level is None or level not in (None, 0):
        raise RuntimeError("forward_ad.exit_dual_level: no forward-mode AD level is open at this index")
    state.level = None


@contextlib.contextmanager
def dual_level():
    """A forward-AD level for the block: dual tensors made in it lose their tangents at its end."""
    enter_dual_level()
    try:
        yield
    finally:
        exit_dual_level()


def tangent_of(t):
    """``t``'s tangent array at the open level, or None."""
    fw = t.__dict__.get("_fw")
    if fw is None or fw[0] != state.level:
        return None
    return fw[1]


def attach(t: Tensor, tangent) -> None:
    """Give ``t`` the tangent array ``tangent`` at the open level."""
    t._fw = (state.level, tangent)


@contextlib.contextmanager
def muted():
    """Ops in the block compute no tangents (a custom Function's forward and jvp)."""
    state.off += 1
    try:
        yield
    finally:
        state.off -= 1


def _primal_view(tensor: Tensor) -> Tensor:
    """A view of ``tensor`` (its values, its backward history) that carries no tangent."""
    with muted():
        return tensor.view_as(tensor)


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` carrying ``tangent`` (same shape; a floating or complex dtype)."""
    if state.level is None:
        raise RuntimeError("forward_ad.make_dual: call it inside a `with dual_level():` block")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise OpError(
            f"forward_ad.make_dual: expected Tensors, got {type(tensor).__name__} and {type(tangent).__name__}"
        )
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise OpError(
            f"forward_ad.make_dual: expected the primal and tangent to have the same shape, got "
            f"{tuple(tensor.shape)} and {tuple(tangent.shape)}"
        )
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise OpError(f"forward_ad.make_dual: expected a floating or complex primal, got {tensor.dtype}")
    if tangent.requires_grad:
        raise NotImplementedError(
            "forward_ad.make_dual: a tangent that requires grad (forward-over-reverse) is not supported; "
            "use fjax.func.jvp over fjax.func.grad"
        )
    dual = _primal_view(tensor)
    attach(dual, jnp.asarray(tangent._data, dtype=tensor._meta.dtype))
    return dual


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor``: a view without the tangent, and the tangent (None
    where ``tensor`` carries none)."""
    if not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    tangent = tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_primal_view(tensor), Tensor._wrap(tangent))


def _jvp_kernel(pure, duals: tuple):
    """``(values, tangents) -> output tangents`` of ``pure`` at the positions ``duals``."""
    key = (pure, duals)
    fn = _kernels.get(key)
    if fn is None:

        def tangents_of(values, tangents):
            def at(*xs):
                args = list(values)
                for i, x in zip(duals, xs):
                    args[i] = x
                return pure(*args)

            return jax.jvp(at, [values[i] for i in duals], list(tangents))[1]

        if len(_kernels) >= 4096:
            _kernels.clear()
        fn = _kernels[key] = jax.jit(tangents_of)
    return fn


def needs(leaves) -> bool:
    """Whether an op on ``leaves`` has a tangent to compute (a dual among them)."""
    if state.off:
        return False
    for x in leaves:
        if isinstance(x, Tensor) and tangent_of(x) is not None:
            return True
    return False


def propagate(name: str, pure, leaves, out) -> None:
    """Attach to ``out`` (an op's result on ``leaves``) the tangents ``jax.jvp`` of its kernel
    ``pure`` gives."""
    duals = tuple(i for i, x in enumerate(leaves) if isinstance(x, Tensor) and tangent_of(x) is not None)
    values = [x._data if isinstance(x, Tensor) else x for x in leaves]
    tangents = [tangent_of(leaves[i]) for i in duals]
    with grad_mode.no_grad():
        result = _jvp_kernel(pure, duals)(values, tangents)
    outs = out if isinstance(out, tuple) else (out,)
    flat = jax.tree_util.tree_leaves(result)
    if len(flat) != len(outs):
        raise NotImplementedError(f"forward_ad: {name}: its tangents do not match its outputs")
    for o, t in zip(outs, flat):
        if isinstance(o, Tensor) and t.dtype != jax.dtypes.float0 and (o.is_floating_point() or o.is_complex()):
            attach(o, t)


def inplace(target: Tensor, result: Tensor, op: str) -> None:
    """An in-place op wrote ``result`` into ``target``: its tangent follows (none if ``result``
    has none, as a value without tangent has a zero one)."""
    tangent = tangent_of(result)
    if tangent is None and tangent_of(target) is None:
        return
    if target._st is not None:
        raise NotImplementedError(
            f"forward_ad: {op}: an in-place op on a dual tensor that shares its storage with views is not supported"
        )
    if tangent is None:
        tangent = np.zeros(target.shape, target._meta.dtype)
    attach(target, jnp.asarray(tangent, dtype=target._meta.dtype))


_Above.forward_ad = sys.modules[__name__]  # Tensor._set_: an in-place write carries the tangent
