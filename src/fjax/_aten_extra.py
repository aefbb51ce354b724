"""Top-level functions in ATen's form that ``torch.nn.functional`` wraps: ``torch.embedding_bag``
(weight first, an int mode, four outputs) and the functional RNN entry points ``torch.lstm``,
``torch.gru``, ``torch.rnn_tanh`` and ``torch.rnn_relu`` (flat parameter lists)."""

from __future__ import annotations

import jax.numpy as jnp

from .creation import tensor
from .dispatch import functions as _F
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


def _rnn(kind, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first, batch_sizes):
    """torch's functional RNN entry points over fjax's one-layer ops (``fjax.lstm_layer`` & co.)."""
    name = {"lstm": "lstm", "gru": "gru", "tanh": "rnn_tanh", "relu": "rnn_relu"}[kind]
    dirs = 2 if bidirectional else 1
    params = list(params)
    per = 2 + 2 * bool(has_biases)
    if kind == "lstm" and len(params) == num_layers * dirs * (per + 1):
        per += 1  # proj_size: each group ends with w_hr
    if len(params) != num_layers * dirs * per:
        raise ValueError(
            f"{name}: expected {num_layers * dirs * per} parameters for num_layers={num_layers}, "
            f"bidirectional={bidirectional}, has_biases={has_biases}; got {len(params)}"
        )
    lengths = None
    if batch_sizes is not None:  # packed: time-major rows, batch_sizes[t] of them at step t
        sizes = [int(b) for b in batch_sizes.tolist()]
        steps = input.split(sizes)
        x = _F.stack([F.pad(s, (0, 0, 0, sizes[0] - s.shape[0])) for s in steps])
        lengths = tensor([sum(b > i for b in sizes) for i in range(sizes[0])])
        batch_first = False
    else:
        x = input
        if x.dim() != 3:
            raise ValueError(f"{name}: expected a 3-d input (seq, batch, feature), got shape {tuple(x.shape)}")
    if kind == "lstm":
        h0s, c0s = hx
    else:
        h0s, c0s = hx, None
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            group = params[k * per : (k + 1) * per]
            w_ih, w_hh = group[0], group[1]
            b_ih, b_hh = (group[2], group[3]) if has_biases else (None, None)
            w_hr = group[-1] if per in (3, 5) else None
            static = dict(reverse=d == 1, batch_first=batch_first)
            if kind == "lstm":
                y, h, c = _F.lstm_layer(x, h0s[k], c0s[k], w_ih, w_hh, b_ih, b_hh, w_hr, lengths, **static)
                cs.append(c)
            else:
                layer_op = {"gru": _F.gru_layer, "tanh": _F.rnn_tanh_layer, "relu": _F.rnn_relu_layer}[kind]
                y, h = layer_op(x, h0s[k], w_ih, w_hh, b_ih, b_hh, lengths, **static)
            outs.append(y)
            hs.append(h)
        x = outs[0] if dirs == 1 else _F.cat(outs, -1)
        if dropout and train and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    if batch_sizes is not None:  # back to packed rows
        x = _F.cat([x[t, :b] for t, b in enumerate(sizes)])
    h_n = _F.stack(hs)
    return (x, h_n, _F.stack(cs)) if kind == "lstm" else (x, h_n)


def _padded_or_packed(a, b, c, d, e, f, g, h, i, packed):
    """torch's two overloads, told apart as its arg parser does: (input, hx, params, has_biases, num_layers,
    dropout, train, bidirectional, batch_first) or (data, batch_sizes, hx, params, has_biases, ...)."""
    if packed:
        return a, c, d, e, f, g, h, i, False, b
    return a, b, c, d, e, f, g, h, i, None


def lstm(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional):
    """torch's functional LSTM (what ``nn.LSTM`` calls): ``(output, h_n, c_n)`` of a stack of LSTM layers
    whose weights come as one flat list. Also takes torch's padded overload, ``lstm(input, hx, params,
    has_biases, num_layers, dropout, train, bidirectional, batch_first)``.

    Args:
        data: a packed sequence's rows ``(sum(batch_sizes), I)`` (or, padded form, the ``(T, B, I)`` input).
        batch_sizes: how many sequences each packed step holds (padded form: ``hx``).
        hx: ``(h_0, c_0)``, each ``(num_layers * dirs, B, H)``.
        params: per layer and direction ``w_ih, w_hh[, b_ih, b_hh][, w_hr]``.
        has_biases: whether ``params`` hold biases.
        num_layers: the number of stacked layers.
        dropout: the dropout probability between layers (when ``train``).
        train: whether dropout applies.
        bidirectional: whether each layer also runs backwards (outputs concatenated).

    Example::

        >>> m = nn.LSTM(3, 2)
        >>> x, h0 = fjax.randn(4, 1, 3), fjax.zeros(1, 1, 2)
        >>> out, h, c = fjax.lstm(x, (h0, h0), list(m.parameters()), True, 1, 0.0, False, False, False)
        >>> bool(out.allclose(m(x)[0]))
        True
    """
    packed = not isinstance(batch_sizes, (tuple, list))
    return _rnn("lstm", *_padded_or_packed(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
                                           bidirectional, packed))  # fmt: skip


def gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """torch's functional GRU (what ``nn.GRU`` calls): ``(output, h_n)`` of a stack of layers whose
    weights come as one flat list. Also takes torch's packed overload, ``gru(data, batch_sizes, hx, params,
    has_biases, num_layers, dropout, train, bidirectional)``.

    Args:
        input: the ``(T, B, I)`` input (``(B, T, I)`` when ``batch_first``), or a packed sequence's rows.
        hx: ``h_0``, ``(num_layers * dirs, B, H)`` (packed form: the batch sizes).
        params: per layer and direction ``w_ih, w_hh[, b_ih, b_hh]``.
        has_biases: whether ``params`` hold biases.
        num_layers: the number of stacked layers.
        dropout: the dropout probability between layers (when ``train``).
        train: whether dropout applies.
        bidirectional: whether each layer also runs backwards (outputs concatenated).
        batch_first: whether ``input`` is batch-major.

    Example::

        >>> m = nn.GRU(3, 2)
        >>> x, h0 = fjax.randn(4, 1, 3), fjax.zeros(1, 1, 2)
        >>> out, h = fjax.gru(x, h0, list(m.parameters()), True, 1, 0.0, False, False, False)
        >>> bool(out.allclose(m(x)[0], atol=1e-6))
        True
    """
    packed = isinstance(params, Tensor)  # packed: (data, batch_sizes, hx, params, ...)
    return _rnn("gru", *_padded_or_packed(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                                           batch_first, packed))  # fmt: skip


def rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """torch's functional Elman RNN (tanh) (what ``nn.RNN`` calls): ``(output, h_n)`` of a stack of layers whose
    weights come as one flat list. Also takes torch's packed overload, ``rnn_tanh(data, batch_sizes, hx, params,
    has_biases, num_layers, dropout, train, bidirectional)``.

    Args:
        input: the ``(T, B, I)`` input (``(B, T, I)`` when ``batch_first``), or a packed sequence's rows.
        hx: ``h_0``, ``(num_layers * dirs, B, H)`` (packed form: the batch sizes).
        params: per layer and direction ``w_ih, w_hh[, b_ih, b_hh]``.
        has_biases: whether ``params`` hold biases.
        num_layers: the number of stacked layers.
        dropout: the dropout probability between layers (when ``train``).
        train: whether dropout applies.
        bidirectional: whether each layer also runs backwards (outputs concatenated).
        batch_first: whether ``input`` is batch-major.

    Example::

        >>> m = nn.RNN(3, 2)
        >>> x, h0 = fjax.randn(4, 1, 3), fjax.zeros(1, 1, 2)
        >>> out, h = fjax.rnn_tanh(x, h0, list(m.parameters()), True, 1, 0.0, False, False, False)
        >>> bool(out.allclose(m(x)[0], atol=1e-6))
        True
    """
    packed = isinstance(params, Tensor)  # packed: (data, batch_sizes, hx, params, ...)
    return _rnn("tanh", *_padded_or_packed(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                                           batch_first, packed))  # fmt: skip


def rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """torch's functional Elman RNN (relu) (what ``nn.RNN`` calls): ``(output, h_n)`` of a stack of layers whose
    weights come as one flat list. Also takes torch's packed overload, ``rnn_relu(data, batch_sizes, hx, params,
    has_biases, num_layers, dropout, train, bidirectional)``.

    Args:
        input: the ``(T, B, I)`` input (``(B, T, I)`` when ``batch_first``), or a packed sequence's rows.
        hx: ``h_0``, ``(num_layers * dirs, B, H)`` (packed form: the batch sizes).
        params: per layer and direction ``w_ih, w_hh[, b_ih, b_hh]``.
        has_biases: whether ``params`` hold biases.
        num_layers: the number of stacked layers.
        dropout: the dropout probability between layers (when ``train``).
        train: whether dropout applies.
        bidirectional: whether each layer also runs backwards (outputs concatenated).
        batch_first: whether ``input`` is batch-major.

    Example::

        >>> m = nn.RNN(3, 2, nonlinearity='relu')
        >>> x, h0 = fjax.randn(4, 1, 3), fjax.zeros(1, 1, 2)
        >>> out, h = fjax.rnn_relu(x, h0, list(m.parameters()), True, 1, 0.0, False, False, False)
        >>> bool(out.allclose(m(x)[0], atol=1e-6))
        True
    """
    packed = isinstance(params, Tensor)  # packed: (data, batch_sizes, hx, params, ...)
    return _rnn("relu", *_padded_or_packed(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                                           batch_first, packed))  # fmt: skip
