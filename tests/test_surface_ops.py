"""torch functions and Tensor methods added for the OpInfo gaps, against torch 2.13 on fresh random inputs:
histogram/histogramdd, gradient, stft, tensor-valued shape arguments, boolean index_put, replicate padding
with negative pads, resize_, memory_format and layout arguments, to(copy=True), in-place random fills,
and what an in-place write of history-free values does to gradients.

Set FJAX_TEST_SEED to replay a failure.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch

import fjax
import fjax.nn.functional as F

SEED = int(os.environ.get("FJAX_TEST_SEED", random.randrange(2**31)))


@pytest.fixture
def rng(request):
    seed = SEED + sum(map(ord, request.node.name))
    print(f"FJAX_TEST_SEED={SEED}")
    return np.random.default_rng(seed)


def _f(a, requires_grad=False):
    return fjax.tensor(np.asarray(a), requires_grad=requires_grad)


def _t(a, requires_grad=False):
    return torch.tensor(np.asarray(a), requires_grad=requires_grad)


def _close(x, y, **kw):
    np.testing.assert_allclose(np.asarray(x.detach().numpy()), y.detach().numpy(), **kw)


@pytest.mark.parametrize("case", range(6))
def test_histogram_matches_torch(rng, case):
    x = rng.normal(size=(50,)).astype(np.float32)
    x[:5] = np.round(x[:5], 1)  # values on bin edges
    bins = [int(rng.integers(1, 12)), np.sort(rng.normal(size=6)).astype(np.float32)][case % 2]
    kw = dict(range=(-1.0, 1.0)) if case in (2, 4) else {}
    if case >= 3:
        kw["weight"] = rng.random(50).astype(np.float32)
        kw["density"] = case == 5
    tb = _t(bins) if isinstance(bins, np.ndarray) else bins
    fb = _f(bins) if isinstance(bins, np.ndarray) else bins
    if isinstance(bins, np.ndarray):
        kw.pop("range", None)
    want = torch.histogram(_t(x), tb, **{k: _t(v) if k == "weight" else v for k, v in kw.items()})
    got = fjax.histogram(_f(x), fb, **{k: _f(v) if k == "weight" else v for k, v in kw.items()})
    _close(got.bin_edges, want.bin_edges, rtol=1e-6, atol=1e-6)
    _close(got.hist, want.hist, rtol=1e-5)
    assert got.hist.dtype == fjax.float32


def test_histogramdd_matches_torch(rng):
    x = rng.normal(size=(40, 2)).astype(np.float32)
    for bins, kw in (([3, 4], {}), (5, dict(range=[-1.0, 1.0, -2.0, 2.0], density=True))):
        want = torch.histogramdd(_t(x), bins, **kw)
        got = fjax.histogramdd(_f(x), bins, **kw)
        _close(got.hist, want.hist, rtol=1e-5)
        for g, w in zip(got.bin_edges, want.bin_edges):
            _close(g, w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_torch(rng, edge_order):
    x = rng.normal(size=(6, 5))
    coords = [np.cumsum(rng.random(6) + 0.1), np.cumsum(rng.random(5) + 0.1)]
    for kw_f, kw_t in (
        ({}, {}),
        ({"spacing": 2.0, "dim": 1}, {"spacing": 2.0, "dim": 1}),
        ({"spacing": [_f(c) for c in coords]}, {"spacing": [_t(c) for c in coords]}),
    ):
        xf, xt = _f(x, True), _t(x, True)
        got, want = fjax.gradient(xf, edge_order=edge_order, **kw_f), torch.gradient(xt, edge_order=edge_order, **kw_t)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w, rtol=1e-10, atol=1e-12)
        sum(g.sum() * (i + 1) for i, g in enumerate(got)).backward()
        sum(w.sum() * (i + 1) for i, w in enumerate(want)).backward()
        _close(xf.grad, xt.grad, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="gradient"):
        fjax.gradient(_f(np.zeros(2)), edge_order=2)


@pytest.mark.parametrize(
    "kw",
    [
        dict(n_fft=8, return_complex=True),
        dict(n_fft=8, hop_length=3, win_length=6, normalized=True, return_complex=True),
        dict(n_fft=7, center=False, onesided=False, return_complex=True),
        dict(n_fft=8, pad_mode="constant", return_complex=False),
    ],
)
def test_stft_matches_torch(rng, kw):
    x = rng.normal(size=(2, 40)).astype(np.float32)
    win = rng.random(kw.get("win_length", kw["n_fft"])).astype(np.float32)
    xf, xt = _f(x, True), _t(x, True)
    got = fjax.stft(xf, window=_f(win), **kw)
    want = torch.stft(xt, window=_t(win), **kw)
    _close(got, want, rtol=1e-5, atol=1e-5)
    wf = np.asarray(rng.normal(size=tuple(want.shape)), np.float32)
    if want.is_complex():
        (got.abs() * _f(wf)).sum().backward()
        (want.abs() * _t(wf)).sum().backward()
    else:
        (got * _f(wf)).sum().backward()
        (want * _t(wf)).sum().backward()
    _close(xf.grad, xt.grad, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="return_complex"):
        fjax.stft(_f(x[0]), 8)


def test_tensor_valued_shape_arguments(rng):
    x = rng.normal(size=(7, 3)).astype(np.float32)
    for got, want in zip(fjax.tensor_split(_f(x), _f([1, 4])), torch.tensor_split(_t(x), _t([1, 4]))):
        _close(got, want)
    reps = rng.integers(0, 3, size=7)
    _close(fjax.repeat_interleave(_f(x), _f(reps), dim=0), torch.repeat_interleave(_t(x), _t(reps), dim=0))
    _close(fjax.linspace(_f(-2.0), _f(3.0), 5), torch.linspace(_t(-2.0), _t(3.0), 5))
    _close(fjax.logspace(_f(0.0), 2, 3, base=_f(2.0)), torch.logspace(_t(0.0), 2, 3, base=2.0))
    with pytest.raises(ValueError, match="repeat_interleave"):
        fjax.repeat_interleave(_f(x), _f([1, 2]), dim=0)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_boolean_mask(rng, accumulate):
    x = rng.normal(size=(5, 4)).astype(np.float32)
    mask = np.array([1, 0, 1, 1, 0], bool)
    for values in (rng.normal(size=(4,)), rng.normal(size=(3, 4)), np.float32(2.0)):
        values = np.asarray(values, np.float32)
        xf, vf, xt, vt = _f(x, True), _f(values, True), _t(x, True), _t(values, True)
        got = xf.index_put((_f(mask),), vf, accumulate=accumulate)
        want = xt.index_put((_t(mask),), vt, accumulate=accumulate)
        _close(got, want)
        (got * _f(x)).sum().backward()
        (want * _t(x)).sum().backward()
        _close(xf.grad, xt.grad, rtol=1e-6, atol=1e-6)
        _close(vf.grad, vt.grad, rtol=1e-5, atol=1e-6)


def test_pad_replicate_with_negative_pads(rng):
    x = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    for pad in ((-4, 5, 0, 0), (0, 0, 2, -3), (5, -4, -3, 3), (-2, -1, 4, 6)):
        xf, xt = _f(x, True), _t(x, True)
        got, want = F.pad(xf, pad, mode="replicate"), torch.nn.functional.pad(xt, pad, mode="replicate")
        _close(got, want)
        got.sum().backward()
        want.sum().backward()
        _close(xf.grad, xt.grad)
    _close(fjax.constant_pad_nd(_f(x), (1, -2), 3.0), torch.constant_pad_nd(_t(x), (1, -2), 3.0))


def test_resize_keeps_storage_while_it_fits():
    x = fjax.arange(6.0)
    view = x.view(2, 3)
    x.resize_(2, 2)
    x[1, 1] = 100.0
    assert view[1, 0].item() == 100.0  # still the same storage
    y = fjax.tensor(2.0)
    assert y.resize_(1, 1, 1).shape == (1, 1, 1)
    z = fjax.arange(3.0).resize_(2, 2)
    assert z.shape == (2, 2) and z.flatten()[:3].tolist() == [0.0, 1.0, 2.0]
    assert fjax.zeros(4).resize_as_(fjax.zeros(2, 2)).shape == (2, 2)
    with pytest.raises(RuntimeError, match="requires grad"):
        fjax.zeros(2, requires_grad=True).resize_(4)


def test_memory_format_layout_and_copy_arguments():
    x = fjax.ones(2, 3, 4, 5)
    for fmt in (fjax.contiguous_format, fjax.preserve_format, fjax.channels_last):
        assert x.to(memory_format=fmt).is_contiguous()
        assert x.float(memory_format=fmt).dtype == fjax.float32
        assert fjax.empty_like(x, memory_format=fmt).shape == x.shape
    assert x.clone(memory_format=fjax.preserve_format).shape == x.shape
    assert x.to(copy=True) is not x and x.to(fjax.float32) is x
    assert x.to(fjax.float32, False, True) is not x  # to(dtype, non_blocking, copy)
    assert fjax.zeros(2, layout=fjax.strided).shape == (2,)
    with pytest.raises(NotImplementedError, match="layout"):
        fjax.zeros(2, layout=fjax.sparse_coo)
    with pytest.raises(TypeError, match="memory_format"):
        x.to(memory_format="channels_last")
    assert fjax.scalar_tensor(3).dtype == fjax.float32 and fjax.scalar_tensor(3).shape == ()
    assert fjax.empty_strided((2, 3), (1, 2)).shape == (2, 3)
    assert fjax.empty_permuted((2, 3, 4), (0, 2, 1)).shape == (2, 3, 4)


@pytest.mark.parametrize("write", ["fill_", "zero_", "copy_"])
def test_overwrite_without_history_zeroes_the_old_gradient(rng, write):
    x0 = rng.normal(size=(3,)).astype(np.float32)
    grads = []
    for lib, wrap in ((fjax, _f), (torch, _t)):
        x = wrap(x0, True)
        y = x * 2
        args = {"fill_": (0.5,), "zero_": (), "copy_": (lib.ones(3),)}[write]
        getattr(y, write)(*args)
        assert y.requires_grad
        (y * x).sum().backward()
        grads.append(x.grad)
    _close(*grads)


def test_random_fills_have_the_right_distribution():
    fjax.manual_seed(0)
    n = 20000
    c = fjax.empty(n).cauchy_(1.0, 2.0)
    assert abs(float(c.median()) - 1.0) < 0.1
    ln = fjax.empty(n).log_normal_(0.5, 0.25)
    assert abs(float(ln.log().mean()) - 0.5) < 0.02 and abs(float(ln.log().std()) - 0.25) < 0.02
    g = fjax.empty(n).geometric_(0.25)
    assert float(g.min()) >= 1 and abs(float(g.mean()) - 4.0) < 0.15
    with pytest.raises(fjax.OpError, match="geometric_"):
        fjax.empty(2).geometric_(1.5)


def test_nonzero_static_and_strided_copies(rng):
    x = (rng.random((4, 5)) > 0.6).astype(np.float32)
    for size in (0, 3, 30):
        _close(fjax.nonzero_static(_f(x), size=size), torch.nonzero_static(_t(x), size=size))
    y = rng.normal(size=(3, 3)).astype(np.float32)
    _close(fjax.as_strided_copy(_f(y), (2, 2), (1, 2), 1), torch.as_strided_copy(_t(y), (2, 2), (1, 2), 1))
    src = rng.normal(size=(2, 2)).astype(np.float32)
    _close(
        fjax.as_strided_scatter(_f(y), _f(src), (2, 2), (1, 2), 1),
        torch.as_strided_scatter(_t(y), _t(src), (2, 2), (1, 2), 1),
    )
    with pytest.raises(fjax.OpError, match="as_strided_copy"):
        fjax.as_strided_copy(_f(y), (3, 3), (3, 2))


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_gradient_with_repeats_and_zeros(rng, include_self):
    x = rng.normal(size=(5,)).astype(np.float32)
    src = rng.normal(size=(7,)).astype(np.float32)
    x[1], src[2], src[3], src[6] = 0.0, 0.0, 0.0, 0.0  # one zero factor at target 1, two at target 4
    index = np.array([0, 0, 1, 1, 4, 4, 4])
    grads = []
    for wrap in (_f, _t):
        a, b = wrap(x, True), wrap(src, True)
        out = a.scatter_reduce(0, wrap(index), b, "prod", include_self=include_self)
        (out * wrap(np.arange(1.0, 6.0, dtype=np.float32))).sum().backward()
        grads.append((out, a.grad, b.grad))
    for got, want in zip(*grads):
        _close(got, want, rtol=1e-5)


def test_onnx_namespace_imports_and_refuses_export():
    import fjax.mock_torch

    with fjax.mock_torch.enable():
        import torch as mocked
        import torch.onnx  # noqa: F401 - word-language-model style scripts import it at the top

        assert mocked.onnx.is_in_onnx_export() is False
        with pytest.raises(NotImplementedError, match="onnx.export"):
            mocked.onnx.export(fjax.nn.Linear(2, 2), (fjax.zeros(1, 2),), "model.onnx")
