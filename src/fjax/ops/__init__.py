"""Pure ops on jax arrays, one module per family; importing this package fills the op table."""

from . import (  # noqa: F401
    activation,
    compare,
    complex,
    conv,
    convert,
    dynamic,
    elementwise,
    fft,
    indexing,
    linalg,
    lobpcg,
    loss,
    nn,
    pool,
    reduce,
    rnn,
    segment,
    shape,
    special,
    transcendental,
    views,
)
from ._registry import OPS, OpDef, declare, defop  # noqa: F401

declare("view", views.RULES)
declare("window", dict.fromkeys(views.WINDOWS, True))
declare("view_node", views.NODES)
