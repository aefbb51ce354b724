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
}


REAL_RESULT = {"getitem_last", "matmul_contracted"}  # the padded dim indexed or contracted away


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
    got = fn(fjax, *slices)
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
