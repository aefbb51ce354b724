"""Top-level functions in ATen's form that ``torch.nn.functional`` wraps: ``torch.embedding_bag``
(weight first, an int mode, four outputs) and the functional RNN entry points ``torch.lstm``,
``torch.gru``, ``torch.rnn_tanh`` and ``torch.rnn_relu`` (flat parameter lists)."""

from __future__ import annotations

import jax.numpy as jnp

from .nn import functional as F
from .tensor import Tensor

_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}  # torch's EmbeddingBagMode, the int the ATen op takes
_FAST_SUM = (jnp.float32, jnp.float16, jnp.bfloat16)  # dtypes torch's CPU sum kernel skips offset2bag for


def embedding_bag(
    weight: Tensor,
    indices: Tensor,
    offsets: Tensor,
    scale_grad_by_freq: bool = False,
    mode: int = 0,
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> tuple:
    """ATen's embedding bag, which ``F.embedding_bag`` calls: the reduced bags and three index tensors
    its backward uses, ``(output, offset2bag, bag_size, max_indices)``, as torch's CPU kernel gives them.

    ``offset2bag`` is each index's bag (empty for ``mode=0`` without ``padding_idx`` on float32/16 weights,
    where torch skips it); ``bag_size`` each bag's number of non-padding indices (zeros for ``mode=0``);
    ``max_indices`` the weight row each maximum came from, ``(bags, dim)``, for ``mode=2``, else
    ``bag_size`` (``mode=1``) or zeros (``mode=0``). Only ``output`` carries a gradient.

    Args:
        weight: the ``(num_embeddings, embedding_dim)`` embedding matrix.
        indices: the indices of all bags, 1-d (a 2-d tensor is read flattened).
        offsets: 1-d start of each bag in ``indices``.
        scale_grad_by_freq: not supported (raises NotImplementedError when True).
        mode: ``0`` sum, ``1`` mean, ``2`` max.
        sparse: not supported (raises NotImplementedError when True).
        per_sample_weights: optional weights, one per index, scaling each row (``mode=0`` only).
        include_last_offset: if True, ``offsets`` has one extra entry that ends the last bag.
        padding_idx: an index skipped in every bag (negative counts from the end); None: none.

    Example::

        >>> w = fjax.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]])
        >>> out, offset2bag, bag_size, _ = fjax.embedding_bag(w, fjax.tensor([0, 1, 2]), fjax.tensor([0, 1]), mode=1)
        >>> out
        tensor([[1., 0.],
                [2., 3.]], dtype=fjax.float32)
        >>> offset2bag, bag_size
        (tensor([0, 1, 1], dtype=fjax.int64), tensor([1, 2], dtype=fjax.int64))
    """
    if mode not in _BAG_MODES:
        raise ValueError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got {mode!r}")
    if not isinstance(offsets, Tensor) or offsets.dim() != 1:
        raise TypeError(f"embedding_bag: offsets must be a 1-d Tensor, got {offsets!r:.60}")
    if weight.dim() != 2:
        raise ValueError(f"embedding_bag: expected a 2-d weight, got shape {tuple(weight.shape)}")
    flat = indices.reshape(-1)
    psw = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    out = F.embedding_bag(
        flat, weight, offsets, None, 2, scale_grad_by_freq, _BAG_MODES[mode], sparse, psw, include_last_offset,
        padding_idx,
    )  # fmt: skip
    idx, offs, rows = flat.detach()._data, offsets.detach()._data, weight.detach()._data
    bags = offs.shape[0] - 1 if include_last_offset else offs.shape[0]
    n = idx.shape[0]
    bag_of = jnp.searchsorted(offs[:bags], jnp.arange(n), side="right") - 1
    pad = None if padding_idx is None else padding_idx + rows.shape[0] if padding_idx < 0 else padding_idx
    keep = jnp.ones(n, bool) if pad is None else idx != pad
    i64 = jnp.asarray(0).dtype  # int64 under fjax's x64
    size = jnp.zeros(bags, i64).at[bag_of].add(keep.astype(i64), mode="drop")
    if mode == 0:
        fast = pad is None and rows.dtype in _FAST_SUM
        offset2bag = jnp.zeros(0, i64) if fast else bag_of.astype(i64)
        zeros = jnp.zeros(offs.shape[0], i64)  # torch's: one per offset, the last one included
        return out, Tensor._wrap(offset2bag), Tensor._wrap(zeros), Tensor._wrap(zeros)
    if mode == 1:
        maxi = size
    else:  # the first index in its bag whose row holds the maximum, per feature; 0 for an empty bag
        hit = (jnp.take(rows, idx, axis=0, mode="clip") == out.detach()._data[bag_of]) & keep[:, None]
        pos = jnp.where(hit, jnp.arange(n)[:, None], n)
        first = jnp.full((bags, rows.shape[1]), n).at[bag_of].min(pos, mode="drop")
        maxi = jnp.where(first < n, idx[jnp.minimum(first, n - 1)], 0).astype(i64)
    return out, Tensor._wrap(bag_of.astype(i64)), Tensor._wrap(size), Tensor._wrap(maxi)
