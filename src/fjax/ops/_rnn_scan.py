"""The recurrences behind ``ops/rnn.py``: one ``lax.scan`` forward, one ``lax.scan`` backward.

Each core takes ``xp`` (T, B, G), the input projection of all time steps computed by the
caller in one matmul, and runs only the recurrent part. Its custom VJP is a scan that computes
the per-step gate gradients and nothing else; each weight gradient is then ONE matmul over all
time steps (stacked gate gradients x stacked hidden states), not T small outer products.

``mask`` (T, B, 1) bool or None: where False the step leaves the state unchanged and outputs
zeros (the padding of a variable-length batch). ``reverse`` runs from the last step to the first.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax


def _where(mask, a, b):
    return a if mask is None else jnp.where(mask, a, b)


def _zero_masked(mask, a):
    return a if mask is None else jnp.where(mask, a, jnp.zeros((), a.dtype))


def _prev_at(states, s0, t, reverse):
    """In a backward scan body: the state step ``t`` started from, read from the stacked states
    after each step (no shifted copy of them is materialised)."""
    last = states.shape[0] - 1
    i = jnp.clip(t + 1 if reverse else t - 1, 0, last)
    return jnp.where(t == (last if reverse else 0), s0, lax.dynamic_index_in_dim(states, i, keepdims=False))


def _wgrad(d, x):
    """``sum_t d[t].T @ x[t]``: ONE 2-d matmul over all time steps and batch rows (XLA:CPU runs a
    dot with two contracting dims several times slower)."""
    return d.reshape(-1, d.shape[-1]).T @ x.reshape(-1, x.shape[-1])


def _mm_t(a, w):
    """``a @ w.T`` as one dot contracting the last dims of both: XLA:CPU's small-batch matmul
    (YNNPACK) runs about 2x faster with the weight in this (out, in) layout than given a
    transposed (in, out) copy, so the recurrences keep each weight in the layout they use."""
    return lax.dot_general(a, w, (((a.ndim - 1,), (w.ndim - 1,)), ((), ())))


def _prev(states, s0, reverse):
    """The state each step started from, stacked: the states after each step shifted by one."""
    if reverse:
        return jnp.concatenate([states[1:], s0[None]], axis=0)
    return jnp.concatenate([s0[None], states[:-1]], axis=0)


def _scan(step, carry, xs, reverse, unroll):
    return lax.scan(step, carry, xs, reverse=reverse, unroll=unroll)


# -- LSTM ---------------------------------------------------------------------------------


def _lstm_run(xp, h0, c0, w_hh, w_hr, mask, reverse, unroll, save):
    def step(carry, inp):
        h, c = carry
        x, m = inp
        i, f, g, o = jnp.split(x + _mm_t(h, w_hh), 4, axis=-1)
        i, f, g, o = jax.nn.sigmoid(i), jax.nn.sigmoid(f), jnp.tanh(g), jax.nn.sigmoid(o)
        c2 = f * c + i * g
        h2 = o * jnp.tanh(c2)
        if w_hr is not None:
            h2 = _mm_t(h2, w_hr)
        h2, c2 = _where(m, h2, h), _where(m, c2, c)
        y = _zero_masked(m, h2)
        if not save:
            return (h2, c2), y
        states = (c2,) if m is None else (c2, h2)
        return (h2, c2), (y, jnp.concatenate([i, f, g, o], axis=-1), states)

    (hn, cn), ys = _scan(step, (h0, c0), (xp, mask), reverse, unroll)
    if not save:
        return (ys, hn, cn), None
    y, gates, states = ys
    hs = y if mask is None else states[1]
    return (y, hn, cn), (gates, states[0], hs, h0, c0, w_hh, w_hr, mask)


@partial(jax.custom_vjp, nondiff_argnums=(6, 7))
def lstm_scan(xp, h0, c0, w_hh, w_hr, mask, reverse, unroll):
    """LSTM recurrence over gate inputs ``xp`` (T, B, 4H): ``(output, h_n, c_n)``."""
    return _lstm_run(xp, h0, c0, w_hh, w_hr, mask, reverse, unroll, False)[0]


def _lstm_fwd(xp, h0, c0, w_hh, w_hr, mask, reverse, unroll):
    return _lstm_run(xp, h0, c0, w_hh, w_hr, mask, reverse, unroll, True)


def _lstm_bwd(reverse, unroll, res, cts):
    gates, cs, hs, h0, c0, w_hh, w_hr, mask = res
    dy, dhn, dcn = cts
    w_hh_t = w_hh.T
    w_hr_t = None if w_hr is None else w_hr.T

    def step(carry, inp):
        dh, dc = carry
        t, dy_t, g_t, c_t, m = inp
        i, f, g, o = jnp.split(g_t, 4, axis=-1)
        tc, cp = jnp.tanh(c_t), _prev_at(cs, c0, t, reverse)
        dh_t = dh + dy_t
        dhf = dh_t if w_hr is None else _mm_t(dh_t, w_hr_t)
        dc_t = dc + dhf * o * (1 - tc * tc)
        dgates = jnp.concatenate(
            [dc_t * g * i * (1 - i), dc_t * cp * f * (1 - f), dc_t * i * (1 - g * g), dhf * tc * o * (1 - o)],
            axis=-1,
        )
        dgates = _zero_masked(m, dgates)
        carry = (_where(m, _mm_t(dgates, w_hh_t), dh), _where(m, dc_t * f, dc))
        return carry, (dgates, None if w_hr is None else _zero_masked(m, dh_t))

    steps = jnp.arange(cs.shape[0])
    (dh0, dc0), (dxp, dh_all) = _scan(step, (dhn, dcn), (steps, dy, gates, cs, mask), not reverse, unroll)
    dw_hh = _wgrad(dxp, _prev(hs, h0, reverse))
    dw_hr = None
    if w_hr is not None:
        dw_hr = _wgrad(dh_all, gates[..., 3 * cs.shape[-1] :] * jnp.tanh(cs))
    return dxp, dh0, dc0, dw_hh, dw_hr, None


lstm_scan.defvjp(_lstm_fwd, _lstm_bwd)


# -- GRU ----------------------------------------------------------------------------------


def _gru_run(xp, h0, w_hh, b_hh, mask, reverse, unroll, save):
    def step(h, inp):
        x, m = inp
        gh = _mm_t(h, w_hh)
        if b_hh is not None:
            gh = gh + b_hh
        xr, xz, xn = jnp.split(x, 3, axis=-1)
        hr, hz, hn = jnp.split(gh, 3, axis=-1)
        r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
        n = jnp.tanh(xn + r * hn)
        h2 = _where(m, n + z * (h - n), h)
        y = _zero_masked(m, h2)
        if not save:
            return h2, y
        return h2, (y, jnp.concatenate([r, z, n, hn], axis=-1), None if m is None else h2)

    hn, ys = _scan(step, h0, (xp, mask), reverse, unroll)
    if not save:
        return (ys, hn), None
    y, acts, states = ys
    hs = y if mask is None else states
    return (y, hn), (acts, hs, h0, w_hh, b_hh, mask)


@partial(jax.custom_vjp, nondiff_argnums=(5, 6))
def gru_scan(xp, h0, w_hh, b_hh, mask, reverse, unroll):
    """GRU recurrence over gate inputs ``xp`` (T, B, 3H) (input bias included): ``(output, h_n)``."""
    return _gru_run(xp, h0, w_hh, b_hh, mask, reverse, unroll, False)[0]


def _gru_fwd(xp, h0, w_hh, b_hh, mask, reverse, unroll):
    return _gru_run(xp, h0, w_hh, b_hh, mask, reverse, unroll, True)


def _gru_bwd(reverse, unroll, res, cts):
    acts, hs, h0, w_hh, b_hh, mask = res
    dy, dhn = cts

    h_prev = _prev(hs, h0, reverse)
    w_hh_t = w_hh.T

    def step(dh, inp):
        dy_t, a, hp, m = inp
        r, z, n, hn = jnp.split(a, 4, axis=-1)
        dh_t = dh + dy_t
        dn = dh_t * (1 - z) * (1 - n * n)
        dr = dn * hn * r * (1 - r)
        dz = dh_t * (hp - n) * z * (1 - z)
        dgh = _zero_masked(m, jnp.concatenate([dr, dz, dn * r], axis=-1))
        dn = _zero_masked(m, dn)
        return _where(m, dh_t * z + _mm_t(dgh, w_hh_t), dh), (dgh, dn)

    dh0, (dgh, dn) = _scan(step, dhn, (dy, acts, h_prev, mask), not reverse, unroll)
    hidden = hs.shape[-1]
    dxp = jnp.concatenate([dgh[..., : 2 * hidden], dn], axis=-1)
    db_hh = None if b_hh is None else dgh.sum(axis=(0, 1))
    return dxp, dh0, _wgrad(dgh, h_prev), db_hh, None


gru_scan.defvjp(_gru_fwd, _gru_bwd)


# -- Elman RNN (tanh / relu) --------------------------------------------------------------


def _rnn_run(xp, h0, w_hh, mask, nonlinearity, reverse, unroll):
    act = jnp.tanh if nonlinearity == "tanh" else jax.nn.relu

    def step(h, inp):
        x, m = inp
        h2 = _where(m, act(x + _mm_t(h, w_hh)), h)
        return h2, (_zero_masked(m, h2), None if m is None else h2)

    hn, (y, states) = _scan(step, h0, (xp, mask), reverse, unroll)
    return (y, hn), (y if mask is None else states)


@partial(jax.custom_vjp, nondiff_argnums=(4, 5, 6))
def rnn_scan(xp, h0, w_hh, mask, nonlinearity, reverse, unroll):
    """Elman recurrence ``h' = act(xp_t + h @ w_hh.T)`` (biases in ``xp``): ``(output, h_n)``."""
    return _rnn_run(xp, h0, w_hh, mask, nonlinearity, reverse, unroll)[0]


def _rnn_fwd(xp, h0, w_hh, mask, nonlinearity, reverse, unroll):
    out, hs = _rnn_run(xp, h0, w_hh, mask, nonlinearity, reverse, unroll)
    return out, (hs, h0, w_hh, mask)


def _rnn_bwd(nonlinearity, reverse, unroll, res, cts):
    hs, h0, w_hh, mask = res
    dy, dhn = cts
    # d act / d pre-activation, read off the stored outputs (torch's relu'(0) = 0)
    deriv = 1 - hs * hs if nonlinearity == "tanh" else (hs > 0).astype(hs.dtype)
    w_hh_t = w_hh.T

    def step(dh, inp):
        dy_t, d_t, m = inp
        dpre = _zero_masked(m, (dh + dy_t) * d_t)
        return _where(m, _mm_t(dpre, w_hh_t), dh), dpre

    dh0, dxp = _scan(step, dhn, (dy, deriv, mask), not reverse, unroll)
    return dxp, dh0, _wgrad(dxp, _prev(hs, h0, reverse)), None


rnn_scan.defvjp(_rnn_fwd, _rnn_bwd)
