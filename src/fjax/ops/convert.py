"""Dtype and device conversion, copies: the ops behind Tensor.to/clone."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._registry import Rows, _passes, defop


@defop(static=("dtype",), method=False, linear=True, rows=Rows(("input",)))
def _cast(input, dtype):
    """``input`` converted to ``dtype`` (float to int truncates toward zero, as torch)."""
    return input.astype(dtype)


@defop(
    method=False,
    linear=True,
    rows=Rows(("input",), dims=_passes(keep=lambda s, shape: len(shape))),
)
def _copy(input):
    """A copy of ``input`` (``Tensor.clone``)."""
    return jnp.array(input, copy=True)


@defop(static=("device",), method=False, linear=True, jit=False)
def _to_device(input, device):
    """``input`` on a jax device or sharding (``Tensor.to(device)``, ``to_global``)."""
    return jax.device_put(input, device)
