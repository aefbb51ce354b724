"""Values padded along dims other than dim 0 (``fjax._bucket``, "Padded dims").

A ``PaddedDims`` value is a ``_lazy.Padded`` value whose bucket array is longer than its real
shape in any dims (a sequence that grows by one token per step, padded to a bucket): its padded
dims are those where the two shapes differ. Reading its values copies the real block out.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from . import _lazy
from . import profiler as _profiler


@functools.lru_cache(maxsize=1024)
def cutter(shape):
    """A jitted function taking the leading ``shape`` block of an array."""
    return jax.jit(lambda x: x[tuple(slice(0, s) for s in shape)])


def real_mask(n, shape, axes):
    """A bool array broadcasting to ``shape``: True where every one of ``axes`` is below ``n``
    (the real block of a bucket array whose padded ``axes`` have real length ``n``, traced)."""
    keep = None
    for d in axes:
        m = (jnp.arange(shape[d]) < n).reshape((1,) * d + (shape[d],) + (1,) * (len(shape) - d - 1))
        keep = m if keep is None else keep & m
    return keep


def cut(a, shape):
    """The leading ``shape`` block of array ``a``: on the CPU a numpy copy (no compile per shape)."""
    _profiler._buckets["unpads"] += 1
    if _lazy.on_cpu(a):
        return _lazy.like(np.array(np.asarray(a)[tuple(slice(0, s) for s in shape)]), a)
    return cutter(tuple(shape))(a)


class PaddedDims(_lazy.Padded):
    """A Padded value padded along any dims (see the module docstring)."""

    __slots__ = ()

    def force(self):
        if self.value is None:
            self.value = cut(_lazy.real(self.array), self.shape)
        return self.value

    def __repr__(self):
        return f"PaddedDims(shape={self.shape}, bucket={tuple(self.array.shape)}, dtype={self.dtype})"
