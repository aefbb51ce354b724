"""Names that were pending in the public surface, against torch: ``torch.embedding_bag`` (ATen's form, four
outputs), ``torch.istft`` / ``Tensor.istft`` and the functional RNN entry points."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fjax


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def _close(a, b, tol=1e-5):
    assert tuple(a.shape) == tuple(b.shape), (tuple(a.shape), tuple(b.shape))
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


# -- embedding_bag ---------------------------------------------------------------------------------


def _bags(seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((10, 3)).astype(dtype)
    idx = rng.integers(0, 10, 9)
    idx[4:6] = 2  # a padding candidate, repeated
    return w, idx, np.array([0, 4, 4, 6])  # bag 1 empty


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_bag_outputs(mode, padding_idx):
    w, idx, offs = _bags(mode + 3 * abs(padding_idx or 0))
    tw, fw = torch.tensor(w, requires_grad=True), fjax.tensor(w, requires_grad=True)
    args = (False, mode, False, None, False, padding_idx)
    ref = torch.embedding_bag(tw, torch.tensor(idx), torch.tensor(offs), *args)
    out = fjax.embedding_bag(fw, fjax.tensor(idx), fjax.tensor(offs), *args)
    assert isinstance(out, tuple) and len(out) == 4
    for o, r in zip(out, ref):
        _close(o, r)
        assert str(o.dtype).split(".")[-1] == str(r.dtype).split(".")[-1]
    g = np.random.default_rng(1).standard_normal(tuple(ref[0].shape)).astype(np.float32)
    ref[0].backward(torch.tensor(g))
    out[0].backward(fjax.tensor(g))
    _close(fw.grad, tw.grad)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_include_last_offset_and_float64(mode):
    w, idx, _ = _bags(7, np.float64)
    offs = np.array([0, 3, 5, 9])
    ref = torch.embedding_bag(torch.tensor(w), torch.tensor(idx), torch.tensor(offs), False, mode, False, None, True)
    out = fjax.embedding_bag(fjax.tensor(w), fjax.tensor(idx), fjax.tensor(offs), False, mode, False, None, True)
    for o, r in zip(out, ref):
        _close(o, r)


def test_embedding_bag_per_sample_weights_keywords():
    w, idx, offs = _bags(11)
    psw = np.random.default_rng(2).random(idx.shape).astype(np.float32)
    tp, fp = torch.tensor(psw, requires_grad=True), fjax.tensor(psw, requires_grad=True)
    ref = torch.embedding_bag(torch.tensor(w), torch.tensor(idx), torch.tensor(offs), mode=0, per_sample_weights=tp)
    out = fjax.embedding_bag(
        weight=fjax.tensor(w), indices=fjax.tensor(idx), offsets=fjax.tensor(offs), mode=0, per_sample_weights=fp
    )
    for o, r in zip(out, ref):
        _close(o, r)
    ref[0].sum().backward()
    out[0].sum().backward()
    _close(fp.grad, tp.grad)


def test_embedding_bag_errors():
    w = fjax.randn(4, 2)
    with pytest.raises(ValueError, match="embedding_bag: mode"):
        fjax.embedding_bag(w, fjax.tensor([0, 1]), fjax.tensor([0]), mode=3)
    with pytest.raises(TypeError, match="embedding_bag: offsets"):
        fjax.embedding_bag(w, fjax.tensor([0, 1]), None)
    with pytest.raises(NotImplementedError, match="scale_grad_by_freq"):
        fjax.embedding_bag(w, fjax.tensor([0, 1]), fjax.tensor([0]), True)


# -- istft -----------------------------------------------------------------------------------------


def _spec(seed, batch, n_freq, frames):
    rng = np.random.default_rng(seed)
    shape = (batch, n_freq, frames) if batch else (n_freq, frames)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


@pytest.mark.parametrize(
    "kw",
    [
        dict(n_fft=16),
        dict(n_fft=16, hop_length=5, window="hann", length=50),
        dict(n_fft=15, win_length=11, window="hann"),
        dict(n_fft=16, hop_length=4, center=False),
        dict(n_fft=16, window="hann", normalized=True, length=70),
        dict(n_fft=16, window="hann", onesided=False),
        dict(n_fft=16, window="hann", onesided=False, return_complex=True),
    ],
    ids=str,
)
@pytest.mark.parametrize("batch", [0, 2])
def test_istft_values(kw, batch):
    kw = dict(kw)
    win = kw.pop("window", None)
    size = kw.get("win_length", kw["n_fft"])
    n_freq = kw["n_fft"] if kw.get("onesided") is False else kw["n_fft"] // 2 + 1
    spec = _spec(len(kw) + batch, batch, n_freq, 9)
    tw, fw = (torch.hann_window(size), fjax.hann_window(size)) if win else (None, None)
    ref = torch.istft(torch.tensor(spec), window=tw, **kw)
    out = fjax.istft(fjax.tensor(spec), window=fw, **kw)
    _close(out, ref)
    assert str(out.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    if not batch:
        _close(fjax.tensor(spec).istft(window=fw, **kw), ref)


def test_istft_round_trip_and_gradients():
    x = np.random.default_rng(5).standard_normal((2, 40)).astype(np.float32)
    w = (np.hanning(12) + 0.1).astype(np.float32)
    tx, fx = torch.tensor(x, requires_grad=True), fjax.tensor(x, requires_grad=True)
    tw, fw = torch.tensor(w, requires_grad=True), fjax.tensor(w, requires_grad=True)
    ref = torch.istft(torch.stft(tx, 12, 3, window=tw, return_complex=True), 12, 3, window=tw, length=40)
    out = fjax.istft(fjax.stft(fx, 12, 3, window=fw, return_complex=True), 12, 3, window=fw, length=40)
    _close(out, ref)
    _close(out, fx)
    g = np.random.default_rng(6).standard_normal((2, 40)).astype(np.float32)
    (ref * torch.tensor(g)).sum().backward()
    (out * fjax.tensor(g)).sum().backward()
    _close(fx.grad, tx.grad, 1e-4)
    _close(fw.grad, tw.grad, 1e-4)
    # the gradient reaching the spectrum, through a real loss on real and imaginary parts
    s = _spec(7, 0, 9, 6)
    ts, fs = torch.tensor(s.real, requires_grad=True), fjax.tensor(s.real, requires_grad=True)
    tr = torch.istft(torch.complex(ts, torch.tensor(s.imag)), 16, 4, window=torch.hann_window(16))
    fr = fjax.istft(fjax.complex(fs, fjax.tensor(s.imag)), 16, 4, window=fjax.hann_window(16))
    (tr**2).sum().backward()
    (fr**2).sum().backward()
    _close(fs.grad, ts.grad, 1e-4)


def test_istft_errors():
    spec = fjax.tensor(_spec(8, 0, 9, 5))
    with pytest.raises(RuntimeError, match="istft: window overlap add"):
        fjax.istft(spec, 16, 4, window=fjax.hann_window(16), center=False)
    with pytest.raises(TypeError, match="istft: requires a complex input"):
        fjax.istft(fjax.view_as_real(spec), 16)
    with pytest.raises(ValueError, match="istft: a one-sided input needs"):
        fjax.istft(spec, 20)
    with pytest.raises(ValueError, match="istft: expected a 1-D window"):
        fjax.istft(spec, 16, window=fjax.ones(5))


# -- functional RNNs -------------------------------------------------------------------------------

_RNNS = [
    ("LSTM", "lstm", {}),
    ("GRU", "gru", {}),
    ("RNN", "rnn_tanh", {}),
    ("RNN", "rnn_relu", {"nonlinearity": "relu"}),
]


@pytest.mark.parametrize("cls,name,extra", _RNNS, ids=[r[1] for r in _RNNS])
@pytest.mark.parametrize("form", ["padded", "batch_first", "packed"])
def test_functional_rnn(cls, name, extra, form):
    torch.manual_seed(0)
    layers, bidir = (2, True) if form != "batch_first" else (1, False)
    module = getattr(torch.nn, cls)(3, 4, num_layers=layers, bidirectional=bidir, **extra)
    weights = [w.detach().numpy() for w in module._flat_weights]
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal((2, 5, 3) if form == "batch_first" else (5, 2, 3)).astype(np.float32)
    h = rng.standard_normal((layers * (1 + bidir), 2, 4)).astype(np.float32) * 0.5
    tw = [torch.tensor(w, requires_grad=True) for w in weights]
    fw = [fjax.tensor(w, requires_grad=True) for w in weights]
    tx, fx = torch.tensor(x, requires_grad=True), fjax.tensor(x, requires_grad=True)
    th, fh = torch.tensor(h), fjax.tensor(h)
    thx, fhx = ((th, th), (fh, fh)) if name == "lstm" else (th, fh)
    flags = (True, layers, 0.0, False, bidir)
    if form == "packed":
        packed = torch.nn.utils.rnn.pack_padded_sequence(tx, [5, 3])
        ref = getattr(torch, name)(packed.data, packed.batch_sizes, thx, tw, *flags)
        fdata = fjax.nn.utils.rnn.pack_padded_sequence(fx, [5, 3])
        out = getattr(fjax, name)(fdata.data, fdata.batch_sizes, fhx, fw, *flags)
    else:
        batch_first = form == "batch_first"
        ref = getattr(torch, name)(tx, thx, tw, *flags, batch_first)
        out = getattr(fjax, name)(fx, fhx, fw, *flags, batch_first)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        _close(o, r)
    g = rng.standard_normal(tuple(ref[0].shape)).astype(np.float32)
    ((ref[0] * torch.tensor(g)).sum() + ref[1].sum()).backward()
    ((out[0] * fjax.tensor(g)).sum() + out[1].sum()).backward()
    _close(fx.grad, tx.grad, 1e-4)
    for a, b in zip(fw, tw):
        _close(a.grad, b.grad, 1e-4)


def test_functional_rnn_errors():
    w = [fjax.randn(4, 3), fjax.randn(4, 4)]
    with pytest.raises(ValueError, match="rnn_tanh: expected 4 parameters"):
        fjax.rnn_tanh(fjax.randn(2, 1, 3), fjax.zeros(1, 1, 4), w, True, 1, 0.0, False, False, False)
    with pytest.raises(ValueError, match="gru: expected a 3-d input"):
        fjax.gru(
            fjax.randn(2, 3),
            fjax.zeros(1, 4),
            [fjax.randn(12, 3), fjax.randn(12, 4)],
            False,
            1,
            0.0,
            False,
            False,
            False,
        )
