"""Index forms that ``Tensor._index`` hands over before it builds its template (see ``ops.indexing``).

- A bool scalar (``True``, ``False`` or a 0-d bool tensor) indexes as torch does: it
  adds a dim there, which an index tensor of length 1 (True) or 0 (False) then takes. In the
  template it is ``"newtensor:k"`` with that index tensor as the k-th array.
- More than one Ellipsis: torch advances its dim pointer by the same ``ndim - specified`` dims at
  every ``...``, so each stands for that many full slices; trailing ones address nothing, and an
  entry past the last dim raises IndexError (``too many indices``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import dtypes as _dt


def is_bool_scalar(i, tensor_type) -> bool:
    """Whether an index entry is a bool scalar: a Python bool or a 0-d bool tensor (torch refuses a
    numpy bool with an IndexError, as fjax does). ``tensor_type``: ``fjax.Tensor`` (this module is
    below ``tensor.py``)."""
    if isinstance(i, bool):
        return True
    return isinstance(i, tensor_type) and i.ndim == 0 and i.dtype == _dt.bool


def bool_scalar_index(i, name: str):
    """The index array that takes the dim a bool scalar adds: ``[0]`` for True, ``[]`` for False.

    A 0-d bool tensor inside a trace has no value yet, and the result's shape would depend on it.
    """
    if not isinstance(i, bool):
        if isinstance(i._data, jax.core.Tracer):
            raise NotImplementedError(
                f"{name}: a 0-d bool tensor index inside a trace gives a shape that depends on its value "
                "(1 or 0); index with a Python bool, or use fjax.where"
            )
        i = bool(np.asarray(i._data))
    return jnp.zeros((1 if i else 0,), jnp.int64)


def expand_ellipses(index: tuple, ndim: int, used: int) -> tuple:
    """``index`` with more than one Ellipsis as torch walks it: each ``...`` becomes ``ndim - used``
    full slices (``used``: the dims the other entries address), less those after the last entry.
    An index with at most one Ellipsis is returned as it is."""
    if sum(i is Ellipsis for i in index) < 2:
        return index
    extra = max(ndim - used, 0)
    last = max((k for k, i in enumerate(index) if i is not Ellipsis), default=-1)
    out = []
    for k, i in enumerate(index):
        if i is not Ellipsis:
            out.append(i)
        elif k < last:
            out.extend([slice(None)] * extra)
    return tuple(out)
