"""Pure ops on jax arrays, one module per family; importing this package fills the op table."""

from . import compare, convert, elementwise, indexing, linalg, reduce, shape, transcendental  # noqa: F401
from ._registry import OPS, OpDef, defop  # noqa: F401
