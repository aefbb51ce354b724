"""Recurrent layers and cells: one op per layer and direction, torch's gate layouts.

A layer op runs a whole sequence: the input projection of all time steps is one matmul, the
recurrence is one ``lax.scan`` with a scan-shaped custom VJP (``_rnn_scan.py``), so the traced
program and its compile time do not grow with the sequence length. On NVIDIA GPUs an LSTM
layer without projection runs cuDNN's kernel through ``jax.experimental.rnn`` instead.

Gate orders are torch's: LSTM ``i, f, g, o``; GRU ``r, z, n`` with ``b_hn`` inside ``r * (...)``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ._registry import defop
from ._rnn_scan import gru_scan, lstm_scan, rnn_scan


def _fail(op, message):
    return ValueError(f"{op}: {message}")


def _check_float(op, input, *arrays):
    if not jnp.issubdtype(input.dtype, jnp.floating):
        raise TypeError(f"{op}: expected a floating point input, got {input.dtype}")
    for a in arrays:
        if a is not None and a.dtype != input.dtype:
            raise TypeError(
                f"{op}: all tensors must have the input's dtype {input.dtype}, got one of shape {a.shape} "
                f"and dtype {a.dtype}"
            )


def _check_weights(op, gates, hidden, input_size, w_ih, w_hh, b_ih, b_hh, rec_size):
    expected = {
        "w_ih": (w_ih, (gates * hidden, input_size)),
        "w_hh": (w_hh, (gates * hidden, rec_size)),
        "b_ih": (b_ih, (gates * hidden,)),
        "b_hh": (b_hh, (gates * hidden,)),
    }
    for name, (a, shape) in expected.items():
        if a is not None and a.shape != shape:
            raise _fail(op, f"expected {name} of shape {shape} ({gates} gates of size {hidden}), got {a.shape}")


def _hidden_size(op, w_hh, w_hr=None):
    """H from the recurrent weight ``(G*H, H)``, or from the projection ``(H_out, H)``."""
    for name, w in (("w_hh", w_hh), ("w_hr", w_hr)):
        if w is not None and w.ndim != 2:
            raise _fail(op, f"expected a 2-d {name}, got shape {w.shape}")
    return w_hh.shape[1] if w_hr is None else w_hr.shape[1]


def _layer_prologue(op, input, batch_first, lengths):
    """Time-major input, and the (T, B, 1) step mask from ``lengths`` (None when absent)."""
    if input.ndim != 3:
        raise _fail(op, f"expected a 3-d input (seq, batch, feature), got shape {input.shape}")
    x = jnp.swapaxes(input, 0, 1) if batch_first else input
    if x.shape[0] == 0:
        raise _fail(op, f"expected a sequence length larger than 0, got input of shape {input.shape}")
    if lengths is None:
        return x, None
    steps, batch = x.shape[:2]
    if lengths.shape != (batch,) or not jnp.issubdtype(lengths.dtype, jnp.integer):
        raise _fail(op, f"expected integer lengths of shape ({batch},), got {lengths.shape} {lengths.dtype}")
    return x, (jnp.arange(steps)[:, None] < lengths[None, :])[..., None]


def _state(op, name, h, batch, size, dtype):
    if h is None:
        return jnp.zeros((batch, size), dtype)
    if h.shape != (batch, size):
        raise _fail(op, f"expected {name} of shape {(batch, size)}, got {h.shape}")
    return h


def _project(x, w, b1, b2=None):
    """``x @ w.T + b1 + b2`` for all time steps at once, as one 2-d matmul (so is its weight
    gradient: XLA:CPU runs a dot with two contracting dims several times slower)."""
    out = (x.reshape(math.prod(x.shape[:-1]), x.shape[-1]) @ w.T).reshape(*x.shape[:-1], w.shape[0])
    for b in (b1, b2):
        if b is not None:
            out = out + b
    return out


def _epilogue(batch_first, y, *states):
    return (jnp.swapaxes(y, 0, 1) if batch_first else y, *states)


# -- cuDNN (NVIDIA GPUs) ------------------------------------------------------------------


def _cudnn_applies(input, w_hr) -> bool:
    """cuDNN's LSTM through jax.experimental.rnn: CUDA backend, float32, no projection."""
    return w_hr is None and input.dtype == jnp.float32 and jax.default_backend() == "gpu"


def _flip_valid(x, lengths):
    """Reverse each sequence (batch-first) within its length, leaving the padding in place."""
    steps = x.shape[1]
    t = jnp.arange(steps)[None, :]
    idx = jnp.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)
    return jnp.take_along_axis(x, idx[..., None], axis=1)


def _lstm_cudnn(x, h0, c0, w_ih, w_hh, b_ih, b_hh, lengths, reverse):
    from jax.experimental import rnn

    steps, batch, input_size = x.shape
    hidden = w_hh.shape[1]
    lengths = jnp.full((batch,), steps, jnp.int32) if lengths is None else lengths.astype(jnp.int32)
    zeros = jnp.zeros((4 * hidden,), x.dtype)
    weights = jnp.concatenate(
        [w_ih.ravel(), w_hh.ravel(), zeros if b_ih is None else b_ih, zeros if b_hh is None else b_hh]
    )
    xb = jnp.swapaxes(x, 0, 1)
    if reverse:
        xb = _flip_valid(xb, lengths)
    y, hn, cn = rnn.lstm(
        xb,
        h0[None],
        c0[None],
        weights,
        lengths,
        input_size=input_size,
        hidden_size=hidden,
        num_layers=1,
        dropout=0.0,
        bidirectional=False,
    )
    if reverse:
        y = _flip_valid(y, lengths)
    valid = jnp.arange(steps)[None, :, None] < lengths[:, None, None]
    return jnp.swapaxes(jnp.where(valid, y, 0), 0, 1), hn[0], cn[0]


# -- layers -------------------------------------------------------------------------------


@defop(static=("reverse", "batch_first", "unroll"), method=False)
def lstm_layer(
    input,
    h0,
    c0,
    w_ih,
    w_hh,
    b_ih=None,
    b_hh=None,
    w_hr=None,
    lengths=None,
    reverse=False,
    batch_first=False,
    unroll=1,
):
    """One LSTM layer in one direction over a whole sequence: ``(output, h_n, c_n)``.

    Args:
        input: ``(T, B, I)``, or ``(B, T, I)`` when ``batch_first``.
        h0, c0: ``(B, H_out)`` and ``(B, H)`` initial states, or None for zeros.
        w_ih, w_hh: ``(4H, I)`` and ``(4H, H_out)``, gates stacked i, f, g, o (torch's layout).
        b_ih, b_hh: ``(4H,)`` or None.
        w_hr: ``(H_out, H)`` output projection (torch's ``proj_size``), or None (``H_out = H``).
        lengths: ``(B,)`` valid length of each sequence, or None when all are ``T``; past its
            length a sequence's state is frozen and its output is zero (packed sequences).
        reverse: run each sequence from its last valid step to its first.
        unroll: time steps per scan iteration.

    Returns:
        output ``(T, B, H_out)`` (batch first when ``batch_first``), ``h_n`` ``(B, H_out)``,
        ``c_n`` ``(B, H)``.

    Example::

        >>> x = fjax.ones(5, 2, 3)
        >>> w_ih, w_hh = fjax.full((8, 3), 0.1), fjax.zeros(8, 2)
        >>> y, h, c = fjax.lstm_layer(x, None, None, w_ih, w_hh)
        >>> y.shape, h.shape, c.shape
        (fjax.Size([5, 2, 2]), fjax.Size([2, 2]), fjax.Size([2, 2]))
        >>> h
        tensor([[0.2027, 0.2027],
                [0.2027, 0.2027]], dtype=fjax.float32)
        >>> bool((y[-1] == h).all())
        True
    """
    op = "lstm_layer"
    _check_float(op, input, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)
    x, mask = _layer_prologue(op, input, batch_first, lengths)
    steps, batch, input_size = x.shape
    hidden = _hidden_size(op, w_hh, w_hr)
    out_size = hidden if w_hr is None else w_hr.shape[0]
    _check_weights(op, 4, hidden, input_size, w_ih, w_hh, b_ih, b_hh, out_size)
    h0 = _state(op, "h0", h0, batch, out_size, x.dtype)
    c0 = _state(op, "c0", c0, batch, hidden, x.dtype)
    if _cudnn_applies(x, w_hr):
        return _epilogue(batch_first, *_lstm_cudnn(x, h0, c0, w_ih, w_hh, b_ih, b_hh, lengths, reverse))
    xp = _project(x, w_ih, b_ih, b_hh)
    return _epilogue(batch_first, *lstm_scan(xp, h0, c0, w_hh, w_hr, mask, reverse, unroll))


@defop(static=("reverse", "batch_first", "unroll"), method=False)
def gru_layer(input, h0, w_ih, w_hh, b_ih=None, b_hh=None, lengths=None, reverse=False, batch_first=False, unroll=1):
    """One GRU layer in one direction over a whole sequence: ``(output, h_n)``.

    Gates stacked r, z, n as in torch: ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``.
    Arguments as :func:`lstm_layer` with 3 gates and no cell state or projection.

    Example::

        >>> x = fjax.ones(4, 1, 2)
        >>> y, h = fjax.gru_layer(x, fjax.ones(1, 3), fjax.zeros(9, 2), fjax.zeros(9, 3))
        >>> y[:, 0, 0]  # zero weights: r = z = 0.5 and n = 0, so h halves each step
        tensor([0.5000, 0.2500, 0.1250, 0.0625], dtype=fjax.float32)
        >>> h
        tensor([[0.0625, 0.0625, 0.0625]], dtype=fjax.float32)
    """
    op = "gru_layer"
    _check_float(op, input, h0, w_ih, w_hh, b_ih, b_hh)
    x, mask = _layer_prologue(op, input, batch_first, lengths)
    steps, batch, input_size = x.shape
    hidden = _hidden_size(op, w_hh)
    _check_weights(op, 3, hidden, input_size, w_ih, w_hh, b_ih, b_hh, hidden)
    h0 = _state(op, "h0", h0, batch, hidden, x.dtype)
    return _epilogue(batch_first, *gru_scan(_project(x, w_ih, b_ih), h0, w_hh, b_hh, mask, reverse, unroll))


def _rnn_layer(op, nonlinearity, input, h0, w_ih, w_hh, b_ih, b_hh, lengths, reverse, batch_first, unroll):
    _check_float(op, input, h0, w_ih, w_hh, b_ih, b_hh)
    x, mask = _layer_prologue(op, input, batch_first, lengths)
    steps, batch, input_size = x.shape
    hidden = _hidden_size(op, w_hh)
    _check_weights(op, 1, hidden, input_size, w_ih, w_hh, b_ih, b_hh, hidden)
    h0 = _state(op, "h0", h0, batch, hidden, x.dtype)
    xp = _project(x, w_ih, b_ih, b_hh)
    return _epilogue(batch_first, *rnn_scan(xp, h0, w_hh, mask, nonlinearity, reverse, unroll))


@defop(static=("reverse", "batch_first", "unroll"), method=False)
def rnn_tanh_layer(
    input, h0, w_ih, w_hh, b_ih=None, b_hh=None, lengths=None, reverse=False, batch_first=False, unroll=1
):
    """One Elman RNN layer ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)``: ``(output, h_n)``.

    Arguments as :func:`lstm_layer` with 1 gate and no cell state or projection.

    Example::

        >>> x = fjax.ones(3, 1, 1)
        >>> w_ih, w_hh = fjax.tensor([[0.5]]), fjax.tensor([[1.0]])
        >>> y, h = fjax.rnn_tanh_layer(x, None, w_ih, w_hh)
        >>> y.flatten()
        tensor([0.4621, 0.7452, 0.8469], dtype=fjax.float32)
        >>> fjax.rnn_tanh_layer(x, None, w_ih, w_hh, reverse=True)[0].flatten()
        tensor([0.8469, 0.7452, 0.4621], dtype=fjax.float32)
    """
    return _rnn_layer(
        "rnn_tanh_layer", "tanh", input, h0, w_ih, w_hh, b_ih, b_hh, lengths, reverse, batch_first, unroll
    )


@defop(static=("reverse", "batch_first", "unroll"), method=False)
def rnn_relu_layer(
    input, h0, w_ih, w_hh, b_ih=None, b_hh=None, lengths=None, reverse=False, batch_first=False, unroll=1
):
    """One Elman RNN layer ``h' = relu(W_ih x + b_ih + W_hh h + b_hh)``: ``(output, h_n)``.

    Arguments as :func:`lstm_layer` with 1 gate and no cell state or projection. With
    ``lengths``, a sequence's outputs past its length are zero and its ``h_n`` is its state
    at its last valid step.

    Example::

        >>> x = fjax.ones(3, 2, 1)
        >>> y, h = fjax.rnn_relu_layer(x, None, fjax.ones(1, 1), fjax.ones(1, 1), lengths=fjax.tensor([3, 1]))
        >>> y[..., 0]
        tensor([[1., 1.],
                [2., 0.],
                [3., 0.]], dtype=fjax.float32)
        >>> h
        tensor([[3.],
                [1.]], dtype=fjax.float32)
    """
    return _rnn_layer(
        "rnn_relu_layer", "relu", input, h0, w_ih, w_hh, b_ih, b_hh, lengths, reverse, batch_first, unroll
    )


# -- cells (one time step; torch.lstm_cell, torch.gru_cell, torch.rnn_*_cell) -------------


def _cell_prologue(op, gates, input, hx, w_ih, w_hh, b_ih, b_hh):
    _check_float(op, input, *hx, w_ih, w_hh, b_ih, b_hh)
    if input.ndim != 2:
        raise _fail(op, f"expected a 2-d input (batch, feature), got shape {input.shape}")
    hidden = _hidden_size(op, w_hh)
    _check_weights(op, gates, hidden, input.shape[1], w_ih, w_hh, b_ih, b_hh, hidden)
    for h in hx:
        if h.shape != (input.shape[0], hidden):
            raise _fail(op, f"expected hidden states of shape {(input.shape[0], hidden)}, got {h.shape}")
    return hidden


@defop(method=False)
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step for input ``(B, I)``: ``hx = (h, c)`` of shape ``(B, H)`` each; returns
    ``(h', c')`` with ``c' = f * c + i * g`` and ``h' = o * tanh(c')``.

    ``w_ih`` ``(4H, I)`` and ``w_hh`` ``(4H, H)`` stack the gates i, f, g, o as in torch.

    Example::

        >>> x, h, c = fjax.zeros(1, 3), fjax.zeros(1, 2), fjax.tensor([[1.0, -2.0]])
        >>> h1, c1 = fjax.lstm_cell(x, (h, c), fjax.zeros(8, 3), fjax.zeros(8, 2))
        >>> c1  # zero weights: every sigmoid gate is 0.5 and g = 0
        tensor([[ 0.5000, -1.0000]], dtype=fjax.float32)
        >>> h1
        tensor([[ 0.2311, -0.3808]], dtype=fjax.float32)
    """
    h, c = hx
    _cell_prologue("lstm_cell", 4, input, (h, c), w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = jnp.split(_project(input, w_ih, b_ih) + _project(h, w_hh, b_hh), 4, axis=-1)
    c2 = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    return jax.nn.sigmoid(o) * jnp.tanh(c2), c2


@defop(method=False)
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step for input ``(B, I)`` and state ``hx`` ``(B, H)``; returns
    ``h' = (1 - z) * n + z * hx``.

    ``w_ih`` ``(3H, I)`` and ``w_hh`` ``(3H, H)`` stack the gates r, z, n as in torch.

    Example::

        >>> x, h = fjax.ones(1, 3), fjax.tensor([[1.0, -2.0]])
        >>> fjax.gru_cell(x, h, fjax.zeros(6, 3), fjax.zeros(6, 2))
        tensor([[ 0.5000, -1.0000]], dtype=fjax.float32)
    """
    _cell_prologue("gru_cell", 3, input, (hx,), w_ih, w_hh, b_ih, b_hh)
    xr, xz, xn = jnp.split(_project(input, w_ih, b_ih), 3, axis=-1)
    hr, hz, hn = jnp.split(_project(hx, w_hh, b_hh), 3, axis=-1)
    r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * hn)
    return n + z * (hx - n)


@defop(method=False)
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step ``tanh(W_ih x + b_ih + W_hh h + b_hh)`` for input ``(B, I)`` and
    state ``hx`` ``(B, H)``; the biases are optional.

    Example::

        >>> x, h = fjax.tensor([[1.0, 2.0]]), fjax.tensor([[0.5]])
        >>> fjax.rnn_tanh_cell(x, h, fjax.tensor([[0.5, -0.25]]), fjax.tensor([[2.0]]))
        tensor([[0.7616]], dtype=fjax.float32)
    """
    _cell_prologue("rnn_tanh_cell", 1, input, (hx,), w_ih, w_hh, b_ih, b_hh)
    return jnp.tanh(_project(input, w_ih, b_ih) + _project(hx, w_hh, b_hh))


@defop(method=False)
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step ``relu(W_ih x + b_ih + W_hh h + b_hh)`` for input ``(B, I)`` and
    state ``hx`` ``(B, H)``; the biases are optional.

    Example::

        >>> x, h = fjax.tensor([[1.0, 2.0], [-1.0, -2.0]]), fjax.ones(2, 1)
        >>> fjax.rnn_relu_cell(x, h, fjax.tensor([[1.0, 1.0]]), fjax.tensor([[-1.0]]), fjax.tensor([0.5]))
        tensor([[2.5000],
                [0.0000]], dtype=fjax.float32)
    """
    _cell_prologue("rnn_relu_cell", 1, input, (hx,), w_ih, w_hh, b_ih, b_hh)
    return jax.nn.relu(_project(input, w_ih, b_ih) + _project(hx, w_hh, b_hh))
