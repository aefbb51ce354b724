"""torch's type promotion, evaluated on jax avals at trace time.

Python scalars reach a traced op as weakly typed 0-d arrays, so torch's three-tier rule
(dimensioned tensors > 0-d tensors > Python scalars, by category) can be read off the avals
without any per-call cost.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import dtypes as _dt

DEFAULT_FLOAT = np.dtype("float32")  # set_default_dtype's, through _set_default below
DEFAULT_INT = np.dtype("int64")
DEFAULT_COMPLEX = np.dtype("complex64")


def _set_default(d) -> None:
    global DEFAULT_FLOAT, DEFAULT_COMPLEX
    DEFAULT_FLOAT = d.dtype
    DEFAULT_COMPLEX = np.dtype(np.complex128 if d is _dt.float64 else np.complex64)


_dt._default_listeners.append(_set_default)


def _category(dt) -> int:
    if dt == np.bool_:
        return 0
    if jnp.issubdtype(dt, jnp.integer):
        return 1
    if jnp.issubdtype(dt, jnp.floating):
        return 2
    return 3


def _promote(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return np.dtype(jnp.promote_types(a, b))


def _combine(higher, lower):
    """ATen's combine_categories."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    ch, cl = _category(higher), _category(lower)
    if ch == 3:
        return higher
    if cl == 3:
        return np.dtype(jnp.result_type(higher, jnp.complex64)) if ch == 2 else lower
    if ch == 2:
        return higher
    if ch == 0 or cl == 2:
        return _promote(higher, lower)
    return higher


def _wrapped_dtype(dt):
    c = _category(dt)
    return [np.dtype(np.bool_), DEFAULT_INT, DEFAULT_FLOAT, DEFAULT_COMPLEX][c]


def result_type(*xs) -> np.dtype:
    """torch.result_type for jax arrays/tracers (weak-typed 0-d = Python scalar)."""
    dim = zero = wrapped = None
    for x in xs:
        if x is None:
            continue
        dt = np.dtype(x.dtype)
        if getattr(x, "weak_type", False):
            wrapped = _promote(wrapped, _wrapped_dtype(dt))
        elif jnp.ndim(x) == 0:
            zero = _promote(zero, dt)
        else:
            dim = _promote(dim, dt)
    return _combine(dim, _combine(zero, wrapped))


def promote(*xs):
    """Cast all arguments to their torch result dtype (None passes through)."""
    dt = result_type(*xs)
    return tuple(None if x is None else cast(x, dt) for x in xs)


def cast(x, dt):
    """``x`` as dtype ``dt``; a bool array goes to a float dtype through uint8, or XLA rewrites
    ``convert(bool) * y`` into a select and ``False * nan`` (``False / 0``) gives 0, not nan."""
    if getattr(x, "dtype", None) == np.bool_ and jnp.issubdtype(dt, jnp.inexact):
        return jnp.asarray(x, np.uint8).astype(dt)
    return jnp.asarray(x, dt)


def to_float(x):
    """torch's rule for float-valued functions: integer and bool inputs become the default float dtype."""
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else cast(x, DEFAULT_FLOAT)
