"""Samples for the recurrent ops (``ops/rnn.py``).

Layer ops are compared with a plain torch loop over time steps built from ``torch.*_cell``
and torch ops (independent of fjax's scans), including masking for variable lengths and the
reverse direction; cells with ``torch.lstm_cell`` / ``gru_cell`` / ``rnn_*_cell`` directly.
"""

from __future__ import annotations

import torch

from .spec import I, L, S

# (T, B, I, H): small, so the float64 gradient check through the scan stays fast
T, B, IN, H, P = 5, 3, 4, 6, 2


def _loop(step, input, states, lengths, reverse, batch_first):
    """Run ``step(x_t, states) -> (y_t, states)`` over time with torch semantics for lengths."""
    x = input.transpose(0, 1) if batch_first else input
    ys = [None] * x.shape[0]
    order = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    for t in order:
        y, new = step(x[t], states)
        if lengths is not None:
            m = (t < lengths)[:, None]
            new = tuple(torch.where(m, a, b) for a, b in zip(new, states))
            y = torch.where(m, y, torch.zeros_like(y))
        ys[t], states = y, new
    out = torch.stack(ys)
    return (out.transpose(0, 1) if batch_first else out), states


def _zeros(h, batch, size, like):
    return torch.zeros(batch, size, dtype=like.dtype) if h is None else h


def _torch_lstm(
    input, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, lengths=None, reverse=False, batch_first=False, unroll=1
):
    batch = input.shape[0 if batch_first else 1]
    hidden = w_hh.shape[0] // 4

    def step(x, s):
        h, c = s
        if w_hr is None:
            h2, c2 = torch.lstm_cell(x, [h, c], w_ih, w_hh, b_ih, b_hh)
        else:
            i, f, g, o = (x @ w_ih.T + h @ w_hh.T + (0 if b_ih is None else b_ih + b_hh)).chunk(4, 1)
            c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h2 = (torch.sigmoid(o) * torch.tanh(c2)) @ w_hr.T
        return h2, (h2, c2)

    out_size = hidden if w_hr is None else w_hr.shape[0]
    states = (_zeros(h0, batch, out_size, input), _zeros(c0, batch, hidden, input))
    y, (h, c) = _loop(step, input, states, lengths, reverse, batch_first)
    return y, h, c


def _torch_single(cell):
    def run(input, h0, w_ih, w_hh, b_ih=None, b_hh=None, lengths=None, reverse=False, batch_first=False, unroll=1):
        batch = input.shape[0 if batch_first else 1]

        def step(x, s):
            h = cell(x, s[0], w_ih, w_hh, b_ih, b_hh)
            return h, (h,)

        y, (h,) = _loop(step, input, (_zeros(h0, batch, w_hh.shape[1], input),), lengths, reverse, batch_first)
        return y, h

    return run


LENGTHS = I((B,), 1, T + 1)

SAMPLES = {
    "lstm_layer": [
        S((T, B, IN), (B, H), (B, H), (4 * H, IN), (4 * H, H), (4 * H,), (4 * H,), _torch=_torch_lstm),
        S((T, B, IN), None, None, (4 * H, IN), (4 * H, H), _torch=_torch_lstm),
        S(
            (B, T, IN),
            (B, H),
            None,
            (4 * H, IN),
            (4 * H, H),
            (4 * H,),
            (4 * H,),
            reverse=True,
            batch_first=True,
            _torch=_torch_lstm,
        ),
        S((T, B, IN), (B, H), (B, H), (4 * H, IN), (4 * H, H), (4 * H,), (4 * H,), lengths=LENGTHS, _torch=_torch_lstm),
        S(
            (T, B, IN),
            (B, H),
            (B, H),
            (4 * H, IN),
            (4 * H, H),
            (4 * H,),
            (4 * H,),
            lengths=LENGTHS,
            reverse=True,
            unroll=2,
            _torch=_torch_lstm,
        ),
        S((T, B, IN), (B, P), (B, H), (4 * H, IN), (4 * H, P), (4 * H,), (4 * H,), (P, H), _torch=_torch_lstm),
        S(
            (T, B, IN),
            None,
            None,
            (4 * H, IN),
            (4 * H, P),
            None,
            None,
            (P, H),
            lengths=LENGTHS,
            reverse=True,
            _torch=_torch_lstm,
        ),
        S((1, 1, IN), None, None, (4 * H, IN), (4 * H, H), _torch=_torch_lstm),
        S((T, 0, IN), None, None, (4 * H, IN), (4 * H, H), (4 * H,), (4 * H,), _torch=_torch_lstm),
    ],
    "gru_layer": [
        S((T, B, IN), (B, H), (3 * H, IN), (3 * H, H), (3 * H,), (3 * H,), _torch=_torch_single(torch.gru_cell)),
        S(
            (B, T, IN),
            None,
            (3 * H, IN),
            (3 * H, H),
            batch_first=True,
            reverse=True,
            _torch=_torch_single(torch.gru_cell),
        ),
        S(
            (T, B, IN),
            (B, H),
            (3 * H, IN),
            (3 * H, H),
            (3 * H,),
            (3 * H,),
            lengths=LENGTHS,
            _torch=_torch_single(torch.gru_cell),
        ),
        S(
            (T, B, IN),
            (B, H),
            (3 * H, IN),
            (3 * H, H),
            (3 * H,),
            (3 * H,),
            lengths=LENGTHS,
            reverse=True,
            unroll=3,
            _torch=_torch_single(torch.gru_cell),
        ),
    ],
    "rnn_tanh_layer": [
        S((T, B, IN), (B, H), (H, IN), (H, H), (H,), (H,), _torch=_torch_single(torch.rnn_tanh_cell)),
        S((B, T, IN), None, (H, IN), (H, H), batch_first=True, reverse=True, _torch=_torch_single(torch.rnn_tanh_cell)),
        S(
            (T, B, IN),
            (B, H),
            (H, IN),
            (H, H),
            (H,),
            (H,),
            lengths=LENGTHS,
            reverse=True,
            _torch=_torch_single(torch.rnn_tanh_cell),
        ),
    ],
    "rnn_relu_layer": [
        S((T, B, IN), (B, H), (H, IN), (H, H), (H,), (H,), _torch=_torch_single(torch.rnn_relu_cell)),
        S((T, B, IN), None, (H, IN), (H, H), lengths=LENGTHS, _torch=_torch_single(torch.rnn_relu_cell)),
        S(
            (B, T, IN),
            (B, H),
            (H, IN),
            (H, H),
            (H,),
            (H,),
            lengths=LENGTHS,
            reverse=True,
            batch_first=True,
            _torch=_torch_single(torch.rnn_relu_cell),
        ),
    ],
    "lstm_cell": [
        S((B, IN), L((B, H), (B, H)), (4 * H, IN), (4 * H, H), (4 * H,), (4 * H,)),
        S((B, IN), L((B, H), (B, H)), (4 * H, IN), (4 * H, H)),
    ],
    "gru_cell": [
        S((B, IN), (B, H), (3 * H, IN), (3 * H, H), (3 * H,), (3 * H,)),
        S((1, IN), (1, H), (3 * H, IN), (3 * H, H)),
    ],
    "rnn_tanh_cell": [
        S((B, IN), (B, H), (H, IN), (H, H), (H,), (H,)),
        S((B, IN), (B, H), (H, IN), (H, H)),
    ],
    "rnn_relu_cell": [
        S((B, IN), (B, H), (H, IN), (H, H), (H,), (H,)),
        S((B, IN), (B, H), (H, IN), (H, H)),
    ],
}
