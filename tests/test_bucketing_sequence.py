"""Padded dims past dim 0 (fjax._bucket, "padded dims"): a sequence that grows by one token per
step runs on buckets. Each op whose record declares ``Rows.dims`` gets inputs padded along their
sequence dims (a slice ``[:T]`` of a longer buffer whose tail holds inf and NaN, read at the
bucket's length) and must give torch's values and gradients on the real block; a greedy decode
loop gives torch's tokens and compiles per bucket, not per token."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import fjax
import fjax._bucket as bucket
import fjax._dims as dims

RNG = np.random.default_rng()
T = 11  # the real length; its bucket is 12
BIG = 20  # the buffers' length: a slice [:T] reads [:12] of it


def _buffer(*shape, tail=np.nan):
    """A float buffer of ``shape`` (its dims named None are BIG long) whose entries past T there hold ``tail``."""
    full = tuple(BIG if s is None else s for s in shape)
    x = RNG.standard_normal(full).astype(np.float32)
    for d, s in enumerate(shape):
        if s is None:
            idx = [slice(None)] * len(full)
            idx[d] = slice(T, None)
            x[tuple(idx)] = tail
    return x


def _slice(L, x, shape):
    return x[tuple(slice(None, T) if s is None else slice(None) for s in shape)]


# name -> (buffer shapes (None: a sequence dim), function of the library and the real slices)
CASES = {
    "add": ([(2, None, 3), (None, 3)], lambda L, x, y: x + y),
    "mul": ([(2, None, 3), (1, None, 1)], lambda L, x, y: x * y * 0.5),
    "gelu": ([(2, None, 3)], lambda L, x: L.nn.functional.gelu(x)),
    "eq_masked_fill": ([(2, None, None)], lambda L, x: x.masked_fill(x > 0.3, float("-inf")).exp()),
    "layer_norm": ([(2, None, 6), (6,)], lambda L, x, w: L.nn.functional.layer_norm(x, (6,), w)),
    "linear": ([(2, None, 6), (5, 6)], lambda L, x, w: L.nn.functional.linear(x, w)),
    "softmax_padded_dim": ([(2, None, None)], lambda L, x: L.softmax(x.masked_fill(x > 1.5, float("-inf")), dim=-1)),
    "softmax_other_dim": ([(2, None, 4)], lambda L, x: L.softmax(x, dim=-1)),
    "transpose_view_copy": (
        [(2, None, 8)],
        lambda L, x: x.view(2, T, 2, 4).transpose(1, 2).contiguous().transpose(1, 2).reshape(2, T, 8) * 2,
    ),
    "split": ([(2, None, 6)], lambda L, x: x.split(2, dim=2)[1] * 3),
    "matmul_rows_cols": ([(2, None, 4), (2, 4, None)], lambda L, q, k: q @ k),
    "matmul_contracted": ([(2, 3, None), (2, None, 4)], lambda L, a, v: L.softmax(a, -1) @ v),
    "getitem_last": ([(2, None, 5)], lambda L, x: (x * 2)[:, [-1], :]),
    # reductions over the padded dim (its padding holds the op's identity) or over others
    "sum_padded_dim": ([(2, None, 3)], lambda L, x: x.sum(1)),
    "sum_keepdim": ([(2, None, 3)], lambda L, x: x.sum(-2, keepdim=True)),
    "sum_other_dim": ([(2, None, 3)], lambda L, x: x.sum(-1)),
    "sum_all": ([(2, None, 3)], lambda L, x: x.sum()),
    "sum_one_of_two": ([(2, None, None)], lambda L, x: x.sum(2)),
    "mean_padded_dim": ([(2, None, 3)], lambda L, x: x.mean(1)),
    "mean_all": ([(2, None, None)], lambda L, x: x.mean()),
    "mean_other_keepdim": ([(2, None, 3)], lambda L, x: x.mean(-1, keepdim=True)),
    "var_padded_dim": ([(2, None, 3)], lambda L, x: x.var(1)),
    "var_all": ([(2, None, 3)], lambda L, x: x.var(correction=0)),
    "std_padded_dim": ([(2, None, 3)], lambda L, x: x.std(dim=(0, 1), keepdim=True)),
    "std_other_dim": ([(2, None, 3)], lambda L, x: x.std(-1)),
    "amax_padded_dim": ([(2, None, 3)], lambda L, x: (x - 9).amax(1)),
    "amax_one_of_two": ([(2, None, None)], lambda L, x: (x - 9).amax(-1)),
    "amin_both": ([(2, None, None)], lambda L, x: (x + 9).amin((1, 2))),
    "max_dim": ([(2, None, 3)], lambda L, x: (lambda r: r.values + r.indices)((x - 9).max(1))),
    "min_dim_keepdim": ([(2, None, 3)], lambda L, x: (lambda r: r[0] * r[1])((x + 9).min(1, keepdim=True))),
    "max_all": ([(2, None, 3)], lambda L, x: (x - 9).max()),
    "min_other_dim": ([(2, None, 3)], lambda L, x: (lambda r: r.values + r.indices)(x.min(-1))),
    "logsumexp_padded_dim": ([(2, None, 3)], lambda L, x: (x - 9).logsumexp(1)),
    "logsumexp_other_dim": ([(2, None, 3)], lambda L, x: x.logsumexp(2)),
    "argmax_padded_dim": ([(2, None, 3)], lambda L, x: (x - 9).argmax(1) + x.amax(1)),
    "argmin_keepdim": ([(2, None, 3)], lambda L, x: (x + 9).argmin(1, keepdim=True) * x.amin(1, keepdim=True)),
    "argmax_all": ([(2, None, None)], lambda L, x: (x - 9).argmax() + x.amax()),
    "argmin_all_keepdim": ([(2, None, 3)], lambda L, x: (x + 9).argmin(keepdim=True) * x.amin()),
    "prod_padded_dim": ([(2, None, 3)], lambda L, x: (x * 0.1 + 2).prod(1)),
    "prod_other_dim": ([(2, None, 3)], lambda L, x: (x * 0.1 + 2).prod(-1)),
    # view ops that keep the padded dim
    "permute": ([(2, None, 2, 4)], lambda L, x: x.permute(0, 2, 3, 1) * 2),
    "permute_attention": (
        [(2, None, 8)],
        lambda L, x: (
            (lambda q: L.softmax(q @ q.transpose(-2, -1), -1) @ q)(x.view(2, T, 2, 4).permute(0, 2, 1, 3))
            .permute(0, 2, 1, 3)
            .reshape(2, T, 8)
        ),
    ),
    "unsqueeze_before": ([(2, None, 3)], lambda L, x: x.unsqueeze(1) * 2),
    "unsqueeze_after": ([(2, None, 3)], lambda L, x: x.unsqueeze(-1) * x.unsqueeze(2)),
    "squeeze_dim": ([(2, None, 1, 3)], lambda L, x: x.squeeze(2) * 2),
    "squeeze_all": ([(1, None, 1, 3)], lambda L, x: x.squeeze() * 2),
    # cat along another dim of tensors padded alike (rotate-half)
    "cat_other_dim": ([(2, None, 3), (2, None, 2)], lambda L, x, y: L.cat([x, -y, x], dim=-1)),
    "cat_rotate_half": ([(2, None, 4)], lambda L, x: (lambda a, b: L.cat((-b, a), dim=-1))(*x.split(2, dim=-1))),
    "cat_batch_dim": ([(2, None, 3), (1, None, 3)], lambda L, x, y: L.cat([x, y * 2], dim=0)),
    # cat along the padded dim (a KV cache growing): the new rows written at the real length
    "cat_grow": ([(2, None, 3), (2, 2, 3)], lambda L, x, y: L.cat([x * 2, y], dim=1) + 1),
    "cat_grow_negative_dim": ([(1, 2, None, 3), (1, 2, 3, 3)], lambda L, x, y: L.cat((x, y * 3), dim=-2).exp()),
    "cat_grow_to_the_bucket": ([(2, None, 3), (2, 1, 3)], lambda L, x, y: L.cat([x, y], dim=1) * 2),
    # slices, ints and narrow (views): a position or start from the end counts from the real length
    "slice_head": ([(2, None, 3)], lambda L, x: x[:, :3] * 2),
    "slice_drop_last": ([(2, None, 3)], lambda L, x: x[:, :-1] * 2),
    "slice_drop_first": ([(2, None, 3)], lambda L, x: x[:, 2:] * 2),
    "slice_middle": ([(2, None, 3)], lambda L, x: x[:, 1:-1] * 2),
    "slice_tail": ([(2, None, 3)], lambda L, x: x[:, -2:] * 2),
    "slice_from_end_to_end": ([(2, None, 3)], lambda L, x: x[:, -4:-1] * 2),
    "slice_whole_real_length": ([(2, None, 3)], lambda L, x: x[:, :T] * 2),
    "slice_past_the_end": ([(2, None, 3)], lambda L, x: x[:, :100] * 2),
    "int_last": ([(2, None, 3)], lambda L, x: x[:, -1] * 2),
    "int_first": ([(2, None, 3)], lambda L, x: x[:, 0] * 2),
    "ellipsis_last_row": ([(2, None, 3)], lambda L, x: x[..., -1, :] * 2),
    "last_of_both": ([(2, None, None)], lambda L, x: x[:, -1, -2] * 2),
    "other_dims": ([(2, None, 3)], lambda L, x: x[1, :, 1:] * 2),
    "other_dims_new_axis": ([(2, None, 3)], lambda L, x: x[None, ..., :2, None] * 2),
    "narrow_padded": ([(2, None, 3)], lambda L, x: x.narrow(1, 2, 3) * 2),
    "narrow_from_end": ([(2, None, 3)], lambda L, x: x.narrow(1, -3, 2) * 2),
    "narrow_whole": ([(2, None, 3)], lambda L, x: x.narrow(1, 0, T) * 2),
    "narrow_other_dim": ([(2, None, 3)], lambda L, x: x.narrow(2, 1, 2) * 2),
    "select_last": ([(2, None, 3)], lambda L, x: x.select(1, -1) * 2),
    "select_other_dim": ([(2, None, 3)], lambda L, x: x.select(0, 1) * 2),
    "getitem_list_short": ([(2, None, 3)], lambda L, x: x[:, [-1]] * 2),
}


REAL_RESULT = {  # the padded dim indexed, contracted or reduced away
    "getitem_last",
    "matmul_contracted",
    "sum_padded_dim",
    "sum_keepdim",
    "sum_all",
    "mean_padded_dim",
    "mean_all",
    "var_padded_dim",
    "var_all",
    "std_padded_dim",
    "amax_padded_dim",
    "amin_both",
    "max_dim",
    "min_dim_keepdim",
    "max_all",
    "logsumexp_padded_dim",
    "argmax_padded_dim",
    "argmin_keepdim",
    "argmax_all",
    "argmin_all_keepdim",
    "prod_padded_dim",
    "cat_grow_to_the_bucket",  # its real length fills its bucket
    "slice_head",
    "slice_tail",
    "slice_from_end_to_end",
    "int_last",
    "int_first",
    "ellipsis_last_row",
    "last_of_both",
    "narrow_padded",
    "narrow_from_end",
    "select_last",
    "getitem_list_short",
}


def _padded(t):
    return isinstance(t._meta, fjax._lazy.Padded)


@pytest.mark.parametrize("name", sorted(CASES))
def test_padded_dims_match_torch(name):
    shapes, fn = CASES[name]
    bucket._live[T] = bucket.bucket(T)
    arrays = [_buffer(*s) for s in shapes]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    ft = [fjax.tensor(a, requires_grad=True) for a in arrays]
    want = fn(torch, *[_slice(torch, x, s) for x, s in zip(tt, shapes)])
    slices = [_slice(fjax, x, s) for x, s in zip(ft, shapes)]
    assert any(type(x._meta) is dims.PaddedDims for x in slices)
    unpads = fjax.profiler._buckets["unpads"]
    got = fn(fjax, *slices)
    assert fjax.profiler._buckets["unpads"] == unpads, "a padded input was copied out"
    assert (type(got._meta) is dims.PaddedDims) == (name not in REAL_RESULT), got._meta
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=2e-6, atol=1e-6)
    g = RNG.standard_normal(tuple(want.shape)).astype(np.float32)
    finite = np.isfinite(want.detach().numpy())
    g = np.where(finite, g, 0).astype(np.float32)
    (want * torch.tensor(g)).nan_to_num(0.0).sum().backward()
    (got * fjax.tensor(g)).nan_to_num(0.0).sum().backward()
    for a, b in zip(ft, tt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=2e-5, atol=1e-5)


def test_a_view_of_a_padded_result_shares_its_storage():
    """A view of a padded result (no storage yet) stays padded and copies nothing out; its
    storage holds the real block once read, so in-place writes through the view reach the base
    and the other way round, as in torch (values and gradients)."""
    bucket._live[T] = bucket.bucket(T)
    data = _buffer(2, None, 3)
    results = {}
    for L in (torch, fjax):
        a = L.tensor(data, requires_grad=True)
        x = a[:, :T] * 2
        unpads = fjax.profiler._buckets["unpads"]
        v = x.transpose(1, 2)
        w = x.unsqueeze(0)
        if L is fjax:
            assert fjax.profiler._buckets["unpads"] == unpads
            assert all(type(t._meta) is dims.PaddedDims for t in (x, v, w))
        v.mul_(3)
        x[:, 0].add_(1)
        out = (x * w[0] + v.transpose(1, 2)).sum(1)
        out.sum().backward()
        results[L] = [t.detach().numpy() for t in (x, v, w, out, a.grad[:, :T])]
    for got, want in zip(results[fjax], results[torch]):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


def test_reductions_over_a_growing_length_compile_per_bucket():
    """Lengths 17 to 23 share bucket 24: reductions over the padded dim (and their backward)
    give numpy's values and, after the first lengths, compile nothing."""
    data = RNG.standard_normal((2, 32, 3)).astype(np.float32)
    buf = fjax.tensor(data, requires_grad=True)
    compiles = []
    for t in range(17, 24):
        bucket._live[t] = bucket.bucket(t)
        before = fjax.profiler.compile_count()
        x = buf[:, :t]
        assert type(x._meta) is dims.PaddedDims
        outs = [x.sum(1), x.mean(1), x.var(1), x.std(1), x.amax(1), x.max(1).values, x.logsumexp(1), x.prod(1)]
        sum(o.sum() for o in outs).backward()
        got = [o.detach().numpy() for o in outs] + [x.argmin(1).numpy(), buf.grad.numpy()[:, :t]]
        buf.grad = None
        compiles.append(fjax.profiler.compile_count() - before)
        real = data[:, :t]
        want = [
            real.sum(1),
            real.mean(1),
            real.var(1, ddof=1),
            real.std(1, ddof=1),
            real.max(1),
            real.max(1),
            np.log(np.exp(real).sum(1)),
            real.prod(1),
            real.argmin(1),
        ]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        assert np.isfinite(got[-1]).all()
    assert sum(compiles[3:]) == 0, compiles


def test_embedding_and_cat_grow_in_a_bucket():
    """``cat`` along a growing dim writes into a bucketed buffer after three new lengths; an
    embedding of it stays padded, and the values are torch's."""
    w = RNG.standard_normal((9, 4)).astype(np.float32)
    idx_t = torch.tensor(RNG.integers(0, 9, (1, 3)))
    idx_f = fjax.tensor(idx_t.numpy())
    padded = []
    for _ in range(12):
        new = RNG.integers(0, 9, (1, 1))
        idx_t = torch.cat((idx_t, torch.tensor(new)), dim=1)
        idx_f = fjax.cat((idx_f, fjax.tensor(new)), dim=1)
        padded.append(_padded(idx_f) or idx_f.shape[1] == bucket.bucket(idx_f.shape[1]))
        e_f = fjax.nn.functional.embedding(idx_f, fjax.tensor(w))
        assert tuple(idx_f.shape) == tuple(idx_t.shape)
        np.testing.assert_array_equal(e_f.numpy(), torch.nn.functional.embedding(idx_t, torch.tensor(w)).numpy())
        assert idx_f.tolist() == idx_t.tolist()  # a step (host read)
    assert all(padded[4:]), padded


def test_slices_of_a_growing_length_compile_per_bucket():
    """Lengths 17 to 23 share bucket 24: slices, ints, narrow and select along the padded dim (a
    position from the end counted from the real length) give numpy's values and gradients,
    copy nothing out and, after the first lengths, compile nothing."""
    data = RNG.standard_normal((2, 32, 3)).astype(np.float32)
    buf = fjax.tensor(data, requires_grad=True)
    reads = {
        "x[:, :4]": (lambda x: x[:, :4], lambda r: r[:, :4]),
        "x[:, :-1]": (lambda x: x[:, :-1], lambda r: r[:, :-1]),
        "x[:, 2:]": (lambda x: x[:, 2:], lambda r: r[:, 2:]),
        "x[:, -3:]": (lambda x: x[:, -3:], lambda r: r[:, -3:]),
        "x[:, -1]": (lambda x: x[:, -1], lambda r: r[:, -1]),
        "x[..., -2, :]": (lambda x: x[..., -2, :], lambda r: r[..., -2, :]),
        "x[1, :, 1:]": (lambda x: x[1, :, 1:], lambda r: r[1, :, 1:]),
        "narrow(1, -2, 2)": (lambda x: x.narrow(1, -2, 2), lambda r: r[:, -2:]),
        "select(1, -1)": (lambda x: x.select(1, -1), lambda r: r[:, -1]),
    }
    compiles = []
    for t in range(17, 24):
        bucket._live[t] = bucket.bucket(t)
        x = buf[:, :t]
        assert type(x._meta) is dims.PaddedDims
        before, unpads = fjax.profiler.compile_count(), fjax.profiler._buckets["unpads"]
        outs = [read(x * 1) for read, _ in reads.values()]
        sum((o * o).sum() for o in outs).backward()
        assert fjax.profiler._buckets["unpads"] == unpads, "a padded input was copied out"
        got = [o.detach().numpy() for o in outs]
        compiles.append(fjax.profiler.compile_count() - before)
        grad = np.zeros_like(data)
        for (name, (_, want)), g in zip(reads.items(), got):
            np.testing.assert_array_equal(g, want(data[:, :t]), err_msg=name)
            view = np.zeros((2, t, 3), np.float32)
            want(view)[...] = 2 * g  # the gradient reaches the positions the read took
            grad[:, :t] += view
        np.testing.assert_allclose(buf.grad.numpy(), grad, rtol=1e-5, atol=1e-6)
        buf.grad = None
    assert sum(compiles[3:]) == 0, compiles


def test_embedding_of_a_padded_index_checks_the_real_rows_without_a_copy_out(fused):
    """The embedding's index range check reads the real block of a padded index (its padding may
    hold anything: here an index past the weight), copies nothing out, and still raises for a real
    index out of range; in a loop whose check repeats, at the next host read."""
    w = fjax.tensor(RNG.standard_normal((9, 4)).astype(np.float32))
    buf = np.full((1, BIG), 100, np.int64)  # past the real length: out of range
    buf[0, :T] = RNG.integers(0, 9, T)
    bucket._live[T] = bucket.bucket(T)
    idx = fjax.tensor(buf)[:, :T]
    assert type(idx._meta) is dims.PaddedDims
    unpads = fjax.profiler._buckets["unpads"]
    out = fjax.nn.functional.embedding(idx, w)
    assert fjax.profiler._buckets["unpads"] == unpads
    np.testing.assert_array_equal(out.numpy(), w.numpy()[buf[:, :T]])
    bad = buf.copy()
    bad[0, T - 1] = 9
    with pytest.raises(IndexError, match="embedding: index 9 is out of range for a weight with 9 rows"):
        fjax.nn.functional.embedding(fjax.tensor(bad)[:, :T], w)
        fjax.sync()
    # a decode loop: the index grows by cat (padded, pending), its check goes into the segment
    idx = fjax.tensor(RNG.integers(0, 9, (1, 3)))
    for step in range(14):
        new = fjax.tensor([[9 if step == 13 else int(RNG.integers(0, 9))]])
        idx = fjax.cat((idx, new), dim=1)
        unpads = fjax.profiler._buckets["unpads"]
        if step < 13:
            e = fjax.nn.functional.embedding(idx, w)
            e.sum().item()  # a host read: the step's end
            assert step < 6 or fjax.profiler._buckets["unpads"] == unpads
        else:
            with pytest.raises(IndexError, match="embedding: index 9 is out of range for a weight with 9 rows"):
                fjax.nn.functional.embedding(idx, w).sum().item()


H, DH, V = 2, 4, 11  # the KV-cache decoder's heads, head width and vocabulary


def _kv_decode(L, weights, prompt, steps, on_step=None):
    """A one-layer attention decoder with a KV cache, greedy, ``steps`` tokens: per token the
    logits. Its sequences grow by ``cat`` (token ids, keys, values: padded dims), and it reads
    them by slices, ints, narrow and select counted from the end, and an embedding of the ids."""
    wte, wq, wk, wv, wo = [L.tensor(w) for w in weights]

    def heads(t):
        return t.view(1, -1, H, DH).transpose(1, 2)

    out = []
    with L.no_grad():
        idx = L.tensor(prompt)
        x = L.nn.functional.embedding(idx, wte)
        kc, vc = heads(x @ wk), heads(x @ wv)
        for _ in range(steps):
            e = L.nn.functional.embedding(idx, wte)[:, -1:]  # the last token's
            kc = L.cat([kc, heads(e @ wk)], dim=2)
            vc = L.cat((vc, heads(e @ wv)), dim=-2)
            att = L.softmax((heads(e @ wq) @ kc.transpose(-2, -1)) * 0.5, dim=-1)
            y = (att @ vc).transpose(1, 2).reshape(1, 1, H * DH) @ wo
            y = y + 0.1 * kc[:, :, -2].reshape(1, 1, -1) + 0.1 * vc.narrow(2, -3, 1).transpose(1, 2).reshape(1, 1, -1)
            y = y + 0.1 * kc[..., 1:, :].mean(2).reshape(1, 1, -1) + vc.select(2, -1).reshape(1, 1, -1)
            logits = y[:, -1] @ wte.T
            out.append(logits.numpy().copy())  # a host read: the step's end
            idx = L.cat((idx, logits.argmax(-1, keepdim=True)), dim=1)
            if on_step is not None:
                on_step()
    return out


def test_kv_cache_decode_matches_torch_and_the_unbucketed_run_and_compiles_per_bucket():
    """A KV-cache decode loop, 40 tokens from a 5-token prompt: torch's logits and the unbucketed
    run's; once its sequences pad (a few tokens in), nothing is copied out, and compiles come at
    the buckets' edges only (a few programs each: 24 -> 32 at length 25, 32 -> 48 at 33)."""
    weights = [RNG.standard_normal(s).astype(np.float32) for s in [(V, 8), (8, 8), (8, 8), (8, 8), (8, 8)]]
    prompt = RNG.integers(0, V, (1, 5))
    want = _kv_decode(torch, weights, prompt, 40)
    counts = []
    got = _kv_decode(
        fjax, weights, prompt, 40, lambda: counts.append((fjax.profiler.compile_count(), bucket._stats["unpads"]))
    )
    saved, fjax.config.bucketing = fjax.config.bucketing, False
    try:
        plain = _kv_decode(fjax, weights, prompt, 40)
    finally:
        fjax.config.bucketing = saved
    for k, (w, g, p) in enumerate(zip(want, got, plain)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=f"token {k}")
        np.testing.assert_allclose(g, p, rtol=1e-5, atol=1e-5, err_msg=f"token {k}")
    compiles = [b[0] - a[0] for a, b in zip(counts, counts[1:])]
    unpads = [b[1] - a[1] for a, b in zip(counts, counts[1:])]
    assert sum(unpads[8:]) == 0, unpads
    late = compiles[13:]  # lengths 20..45: two bucket edges (each: the last length of a bucket, the
    assert sum(late) <= 2 * 5, compiles  # step into the next, its first steps there)
    assert sum(1 for c in late if c) <= 2 * 4, compiles
    assert sum(late[-8:]) == 0, compiles  # lengths 38..45, bucket 48: nothing new


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "dynamic_shapes.py"
    import importlib.util

    spec = importlib.util.spec_from_file_location("dynamic_shapes_seq", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["dynamic_shapes_seq"] = module
    spec.loader.exec_module(module)
    return module, module.load(False), module.load(True)


def test_greedy_decode_gives_torch_tokens_and_compiles_per_bucket(bench):
    """nanoGPT's generate, 40 tokens from an 8-token prompt: torch's tokens; after the first
    tokens, compiles come at the buckets' edges only (lengths 16, 24, 32, 48)."""
    module, on_torch, on_fjax = bench
    seed = int(RNG.integers(1 << 30))
    cfg = dict(module.QUICK)
    want = module.run(on_torch, "decode", cfg, seed, 40, False)["values"]
    import fjax.mock_torch as mock_torch

    gen = on_fjax.decode(cfg, seed, 40)
    got, compiles = [], []
    with mock_torch.enable():
        next(gen)
        for out in gen:
            before = fjax.profiler.compile_count()
            got.append(out.tolist())
            compiles.append(fjax.profiler.compile_count() - before)
    assert got == want, f"seed {seed}"
    late = compiles[10:]  # tokens 19..48: buckets 24, 32, 48
    assert sum(late) <= 3 * 4, compiles
    assert sum(1 for c in late if c) <= 8, compiles


def _seq_first_decode(L, seq, w, n, on_token=None):
    """Attention of the last token over a sequence-first ``(length, d)`` history, a projection,
    ``cat`` along dim 0; no host read until the end."""
    d = seq.shape[1]
    for _ in range(n):
        q = seq[-1:]
        att = L.softmax((q @ seq.T) / d**0.5, -1) @ seq
        seq = L.cat([seq, L.tanh(att @ w)], 0)
        if on_token is not None:
            on_token(seq)
    return seq


def test_a_sequence_first_history_grows_in_a_bucket_without_host_reads():
    """``cat`` along dim 0 that extends its own last result pads from its second token on, host
    reads or not (a loop that reads nothing until the end never counts steps): torch's values at
    every length; after the first tokens no compile until the next bucket edge (fails with dim 0
    excluded from growing, or with the steps rule alone: a compile per token), and the whole run
    compiles the kernels of two unpadded lengths and of one bucket (a width no other test uses)."""
    d, start = 13, 33 + int(RNG.integers(0, 4))  # lengths 34..45, past 36 all in bucket 48
    seq, w = RNG.standard_normal((start, d)).astype(np.float32), RNG.standard_normal((d, d)).astype(np.float32) / 4
    want = []
    _seq_first_decode(torch, torch.tensor(seq), torch.tensor(w), 9, lambda s: want.append(s.numpy().copy()))
    compiles, got = [], []

    def on_token(s):
        compiles.append(fjax.profiler.compile_count())
        got.append(s)

    before, first = bucket._stats["ops"].get("cat", 0), fjax.profiler.compile_count()
    _seq_first_decode(fjax, fjax.tensor(seq), fjax.tensor(w), 9, on_token)
    fjax.sync()
    total = fjax.profiler.compile_count() - first
    assert total <= 32, total  # (30 here; 44 when it padded after three extensions)
    assert bucket._stats["ops"].get("cat", 0) > before  # the history padded
    assert isinstance(got[-1]._meta, dims.PaddedDims)
    for k, (g, t) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g.numpy(), t, rtol=1e-5, atol=1e-5, err_msg=f"token {k}")
    steps = [b - a for a, b in zip(compiles, compiles[1:])]
    assert sum(steps[5:]) == 0, steps  # from the 7th token on (bucket 48, padded): nothing new


def test_a_growing_cat_with_an_empty_1d_tensor_matches_torch():
    """torch's cat skips 1-d empty tensors, so ``cat([x, empty], 1)`` of a 2-d ``x`` is legal; a
    growing cat's bookkeeping reads every tensor's length along the dim, which such a tensor
    lacks (it raised an IndexError)."""
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    got, want = fjax.tensor(x), torch.tensor(x)
    for _ in range(5):
        col = RNG.standard_normal((2, 1)).astype(np.float32)
        got = fjax.cat([fjax.cat([got, fjax.tensor(col)], 1), fjax.zeros(0)], 1)
        want = torch.cat([torch.cat([want, torch.tensor(col)], 1), torch.zeros(0)], 1)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_a_generation_after_a_longer_one_compiles_at_bucket_edges_only(bench):
    """nanoGPT's generate from a 24-token prompt, then from an 8-token one (a user sampling twice):
    the second run's short lengths have buckets of their own, not yet run, while larger ones ran.
    Its position embedding (``wpe(arange(T))``: rows that are the sequence) pads to the growing
    sequence's bucket, so the two meet in one kernel; borrowing the larger bucket a batch would
    (``_bucket._reuse``) made every length a new kernel (a compile per token)."""
    module, _, on_fjax = bench
    import fjax.mock_torch as mock_torch

    compiles = []
    with mock_torch.enable():
        for prompt in (24, 8):
            gen = on_fjax.decode(dict(module.QUICK, prompt=prompt), prompt, 40)
            next(gen)
            compiles.append([])
            for out in gen:
                before = fjax.profiler.compile_count()
                out.tolist()
                compiles[-1].append(fjax.profiler.compile_count() - before)
    second = compiles[1]
    assert sum(1 for c in second if c) <= 10, second  # lengths 9..48: the edges of buckets 12, 16, 24
    assert sum(second[-16:]) <= 2, str(compiles)  # lengths 33..48: buckets the first run ran
