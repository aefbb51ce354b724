"""Pure ops on jax arrays, one module per family; importing this package fills the op table."""

from . import activation, compare, conv, convert, elementwise, indexing, linalg, loss, nn, pool, reduce, shape, transcendental  # noqa: F401
from ._registry import OPS, OpDef, defop  # noqa: F401
