"""torch's ``torch.return_types``: the named tuples that ops like ``max(dim)``, ``sort``,
``topk`` and ``aminmax`` return, so ``x.max(0).values`` and ``values, indices = x.sort()``
both work.

Example::

    >>> out = fjax.tensor([[1.0, 5.0], [4.0, 2.0]]).max(1)
    >>> out.values, out.indices
    (tensor([5., 4.], dtype=fjax.float32), tensor([1, 0], dtype=fjax.int64))
    >>> isinstance(out, fjax.return_types.max)
    True
"""

from __future__ import annotations

from .ops import OPS
from .ops._registry import _named_tuple

globals().update({name: op.returns for name, op in OPS.items() if op.returns is not None})
histogram = _named_tuple("histogram", ("hist", "bin_edges"))  # not ops: plain functions (fjax/_methods.py)
histogramdd = _named_tuple("histogramdd", ("hist", "bin_edges"))
__all__ = sorted([name for name, op in OPS.items() if op.returns is not None] + ["histogram", "histogramdd"])
