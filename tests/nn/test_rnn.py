"""RNN / LSTM / GRU layers and cells against torch: outputs, final states and ALL gradients
(inputs, initial states, every parameter), padded and packed, plus the packing utilities and
the structural check that the lowered training step does not grow with the sequence length.

Set FJAX_TEST_SEED to replay a failure (the seed is in every failure message).
"""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest
import torch

import fjax
from fjax.nn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from fjax.nn.utils import rnn as fj_utils
from fjax.ops import rnn as rnn_ops

from .helper import SEED, TOL, close, copy_weights, rng

T, B, IN, H = 5, 3, 4, 6
MODULES = {"LSTM": (LSTM, torch.nn.LSTM), "GRU": (GRU, torch.nn.GRU), "RNN": (RNN, torch.nn.RNN)}


def _flat(out) -> list:
    """Outputs as a flat list of tensors (packed sequences contribute their data)."""
    if isinstance(out, (tuple, list)) and not hasattr(out, "batch_sizes"):
        return [t for o in out for t in _flat(o)]
    if hasattr(out, "batch_sizes"):
        return [out.data]
    return [out]


def _compare(fj, th, fj_args, th_args, fj_leaves, th_leaves, what, dtype="float32", salt=0):
    """Forward both modules, then compare outputs and grads of leaves and every parameter."""
    rtol, atol = TOL[dtype]
    fj_out, th_out = _flat(fj(*fj_args)), _flat(th(*th_args))
    assert len(fj_out) == len(th_out), f"{what}: {len(fj_out)} outputs, torch has {len(th_out)}"
    for i, (a, b) in enumerate(zip(fj_out, th_out)):
        assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1], f"{what}: output {i} dtype"
        close(a, b, f"{what}: output {i}", rtol, atol)
    fj_params, th_params = list(fj.named_parameters()), list(th.named_parameters())
    assert [n for n, _ in fj_params] == [n for n, _ in th_params], f"{what}: parameter names differ"
    r = rng(salt + 1)
    cts = [r.standard_normal(tuple(b.shape)).astype(dtype) for b in th_out]
    fj_wrt = fj_leaves + [p for _, p in fj_params]
    th_wrt = th_leaves + [p for _, p in th_params]
    fj_g = fjax.autograd.grad(fj_out, fj_wrt, [fjax.tensor(c) for c in cts], allow_unused=True)
    th_g = torch.autograd.grad(th_out, th_wrt, [torch.from_numpy(c) for c in cts], allow_unused=True)
    names = [f"input {i}" for i in range(len(fj_leaves))] + [f"parameter {n}" for n, _ in fj_params]
    for name, x, ga, gb in zip(names, fj_wrt, fj_g, th_g):
        a = np.zeros(tuple(x.shape), dtype) if ga is None else ga
        b = np.zeros(tuple(x.shape), dtype) if gb is None else gb
        close(a, b, f"{what}: grad of {name}", rtol * 10, atol * 10)


def _pair(x: np.ndarray):
    return fjax.tensor(x, requires_grad=True), torch.from_numpy(x.copy()).requires_grad_(True)


def _modules(kind, dtype="float32", **kw):
    fj_cls, th_cls = MODULES[kind]
    th = th_cls(IN, H, **kw)
    fj = fj_cls(IN, H, **kw)
    if dtype == "float64":
        th.double()
        fj.double()
    copy_weights(fj, th)
    return fj, th


def _states(kind, r, layers, directions, batch, proj, dtype, unbatched=False):
    rows = layers * directions
    shape = (rows, batch) if not unbatched else (rows,)
    h = r.standard_normal((*shape, proj or H)).astype(dtype)
    if kind != "LSTM":
        return [h]
    return [h, r.standard_normal((*shape, H)).astype(dtype)]


def _hx(kind, pairs, i):
    items = [p[i] for p in pairs]
    return tuple(items) if kind == "LSTM" else items[0]


CONFIGS = [
    # kind, num_layers, bias, batch_first, bidirectional, proj_size, hx given, dtype
    ("LSTM", 1, True, False, False, 0, False, "float32"),
    ("LSTM", 2, True, True, True, 0, True, "float32"),
    ("LSTM", 2, False, False, True, 3, True, "float64"),
    ("LSTM", 1, True, True, False, 2, False, "float32"),
    ("GRU", 1, False, True, False, 0, True, "float32"),
    ("GRU", 2, True, False, True, 0, False, "float64"),
    ("RNN_TANH", 2, True, True, True, 0, True, "float32"),
    ("RNN_RELU", 1, False, False, False, 0, False, "float32"),
]


def _kind_kwargs(kind, proj):
    if kind.startswith("RNN"):
        return "RNN", {"nonlinearity": kind[4:].lower()}
    return kind, ({"proj_size": proj} if proj else {})


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c)))
def test_layer_matches_torch_padded(config):
    kind, layers, bias, batch_first, bidir, proj, with_hx, dtype = config
    base, extra = _kind_kwargs(kind, proj)
    fj, th = _modules(base, dtype, num_layers=layers, bias=bias, batch_first=batch_first, bidirectional=bidir, **extra)
    r = rng(hash(config) % 1000)
    x = r.standard_normal((B, T, IN) if batch_first else (T, B, IN)).astype(dtype)
    fx, tx = _pair(x)
    fj_args, th_args, fj_leaves, th_leaves = [fx], [tx], [fx], [tx]
    if with_hx:
        pairs = [_pair(s) for s in _states(base, r, layers, 2 if bidir else 1, B, proj, dtype)]
        fj_args.append(_hx(base, pairs, 0))
        th_args.append(_hx(base, pairs, 1))
        fj_leaves += [p[0] for p in pairs]
        th_leaves += [p[1] for p in pairs]
    _compare(fj, th, fj_args, th_args, fj_leaves, th_leaves, f"{config}", dtype)


@pytest.mark.parametrize(
    "kind, bidir, with_hx, batch_first",
    [
        ("LSTM", True, True, True),
        ("LSTM", False, False, False),
        ("GRU", True, False, True),
        ("RNN", False, True, False),
    ],
)
def test_layer_matches_torch_packed(kind, bidir, with_hx, batch_first):
    """Unsorted variable lengths through pack_padded_sequence, the layer and pad_packed_sequence."""
    fj, th = _modules(kind, num_layers=2, bidirectional=bidir, batch_first=batch_first)
    r = rng(7)
    batch = 4
    lengths = r.integers(1, T + 1, batch)
    lengths[r.integers(batch)] = T
    x = r.standard_normal((batch, T, IN) if batch_first else (T, batch, IN)).astype(np.float32)
    fx, tx = _pair(x)
    fp = fj_utils.pack_padded_sequence(fx, lengths.tolist(), batch_first=batch_first, enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths.tolist(), batch_first=batch_first, enforce_sorted=False)
    fj_args, th_args, fj_leaves, th_leaves = [fp], [tp], [fx], [tx]
    if with_hx:
        pairs = [_pair(s) for s in _states(kind, r, 2, 2 if bidir else 1, batch, 0, "float32")]
        fj_args.append(_hx(kind, pairs, 0))
        th_args.append(_hx(kind, pairs, 1))
        fj_leaves += [p[0] for p in pairs]
        th_leaves += [p[1] for p in pairs]

    def padded(module, unpack):
        def run(*args):
            out, state = module(*args)
            return unpack(out, batch_first=batch_first, padding_value=-1.0, total_length=T + 1)[0], state

        return run

    what = f"{kind} packed lengths={lengths.tolist()}"
    fj_run = padded(fj, fj_utils.pad_packed_sequence)
    th_run = padded(th, torch.nn.utils.rnn.pad_packed_sequence)
    fj_run.named_parameters, th_run.named_parameters = fj.named_parameters, th.named_parameters
    _compare(fj_run, th_run, fj_args, th_args, fj_leaves, th_leaves, what)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_unbatched_input(kind):
    fj, th = _modules(kind, num_layers=2, bidirectional=True)
    r = rng(11)
    fx, tx = _pair(r.standard_normal((T, IN)).astype(np.float32))
    pairs = [_pair(s) for s in _states(kind, r, 2, 2, None, 0, "float32", unbatched=True)]
    _compare(
        fj,
        th,
        [fx, _hx(kind, pairs, 0)],
        [tx, _hx(kind, pairs, 1)],
        [fx] + [p[0] for p in pairs],
        [tx] + [p[1] for p in pairs],
        f"{kind} unbatched",
    )


def test_dropout_between_layers():
    """p=1 zeroes the first layer's output in training (deterministic, so torch matches); eval ignores it."""
    fj, th = _modules("LSTM", num_layers=2, dropout=1.0)
    fx, tx = _pair(rng(3).standard_normal((T, B, IN)).astype(np.float32))
    _compare(fj, th, [fx], [tx], [fx], [tx], "LSTM dropout=1 train")
    fj.eval()
    th.eval()
    _compare(fj, th, [fx], [tx], [fx], [tx], "LSTM dropout=1 eval")
    fj.train()
    fj.dropout = 0.5
    outs = {tuple(fj(fx)[0].detach().numpy().ravel()[:4]) for _ in range(3)}
    assert len(outs) > 1, f"dropout=0.5 in training gave identical outputs (seed={SEED})"


@pytest.mark.parametrize(
    "cell, kwargs, with_hx, unbatched",
    [
        ("LSTMCell", {}, True, False),
        ("LSTMCell", {"bias": False}, False, True),
        ("GRUCell", {}, False, False),
        ("GRUCell", {"bias": False}, True, True),
        ("RNNCell", {"nonlinearity": "relu"}, True, False),
        ("RNNCell", {}, False, True),
    ],
)
def test_cells_match_torch(cell, kwargs, with_hx, unbatched):
    fj_cls = {"LSTMCell": LSTMCell, "GRUCell": GRUCell, "RNNCell": RNNCell}[cell]
    th = getattr(torch.nn, cell)(IN, H, **kwargs)
    fj = fj_cls(IN, H, **kwargs)
    copy_weights(fj, th)
    r = rng(5)
    lead = () if unbatched else (B,)
    fx, tx = _pair(r.standard_normal((*lead, IN)).astype(np.float32))
    fj_args, th_args, fj_leaves, th_leaves = [fx], [tx], [fx], [tx]
    if with_hx:
        pairs = [_pair(r.standard_normal((*lead, H)).astype(np.float32)) for _ in range(2 if cell == "LSTMCell" else 1)]
        fj_args.append(tuple(p[0] for p in pairs) if cell == "LSTMCell" else pairs[0][0])
        th_args.append(tuple(p[1] for p in pairs) if cell == "LSTMCell" else pairs[0][1])
        fj_leaves += [p[0] for p in pairs]
        th_leaves += [p[1] for p in pairs]
    _compare(fj, th, fj_args, th_args, fj_leaves, th_leaves, f"{cell}{kwargs}")


def test_parameters_and_init_match_torch():
    fj = LSTM(IN, H, num_layers=2, bidirectional=True, proj_size=2)
    th = torch.nn.LSTM(IN, H, num_layers=2, bidirectional=True, proj_size=2)
    assert [(n, tuple(p.shape)) for n, p in fj.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in th.named_parameters()
    ]
    bound = 1 / np.sqrt(H)
    values = np.concatenate([p.detach().numpy().ravel() for p in fj.parameters()])
    assert np.all(np.abs(values) <= bound) and values.std() > bound / 3, f"init outside U(-{bound}, {bound})"
    assert repr(fj) == repr(th)
    assert repr(GRU(IN, H, bias=False, batch_first=True)) == repr(torch.nn.GRU(IN, H, bias=False, batch_first=True))


def test_pad_and_pack_utilities_match_torch():
    r = rng(13)
    lengths = [3, 5, 1]
    seqs = [r.standard_normal((n, 2)).astype(np.float32) for n in lengths]
    fs = [fjax.tensor(s) for s in seqs]
    ts = [torch.from_numpy(s) for s in seqs]
    for kw in ({}, {"batch_first": True, "padding_value": 2.0}, {"padding_side": "left"}):
        close(fj_utils.pad_sequence(fs, **kw), torch.nn.utils.rnn.pad_sequence(ts, **kw), f"pad_sequence {kw}", 0, 0)
    fp = fj_utils.pack_sequence(fs, enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_sequence(ts, enforce_sorted=False)
    for name in ("data", "batch_sizes", "sorted_indices", "unsorted_indices"):
        close(getattr(fp, name), getattr(tp, name), f"pack_sequence .{name}", 0, 0)
    for a, b in zip(fj_utils.unpack_sequence(fp), torch.nn.utils.rnn.unpack_sequence(tp)):
        close(a, b, "unpack_sequence", 0, 0)
    with pytest.raises(fjax.OpError, match="sorted in decreasing order"):
        fj_utils.pack_sequence(fs)
    with pytest.raises(fjax.OpError, match="greater than 0"):
        fj_utils.pack_padded_sequence(fjax.zeros(4, 2, 1), [2, 0])


def test_errors_name_the_module_and_shapes():
    lstm = LSTM(IN, H)
    with pytest.raises(
        fjax.OpError, match=r"LSTM\(4, 6\): input.size\(-1\) must be equal to input_size. Expected 4, got 5"
    ):
        lstm(fjax.zeros(T, B, 5))
    with pytest.raises(fjax.OpError, match=r"Expected hidden size \(1, 3, 6\), got \(1, 2, 6\)"):
        lstm(fjax.zeros(T, B, IN), (fjax.zeros(1, 2, H), fjax.zeros(1, 2, H)))
    with pytest.raises(fjax.OpError, match="Expected input to be 2D or 3D, got 4D input"):
        GRU(IN, H)(fjax.zeros(1, T, B, IN))
    with pytest.raises(fjax.OpError, match="gru_layer: expected a sequence length larger than 0"):
        GRU(IN, H)(fjax.zeros(0, B, IN))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        LSTM(IN, H, proj_size=H)
    with pytest.raises(fjax.OpError, match="lstm_layer: expected w_hh of shape"):
        fjax.lstm_layer(fjax.zeros(T, B, IN), None, None, fjax.zeros(4 * H, IN), fjax.zeros(3 * H, H))


def _recorded_ops(t) -> list[str]:
    seen, todo, names = set(), [t._node], []
    while todo:
        node = todo.pop()
        if id(node) not in seen:
            seen.add(id(node))
            names.append(node.name)
            todo.extend(node.parents())
    return sorted(names)


@pytest.mark.parametrize("steps", [3, 40])
def test_one_op_per_layer_and_direction(steps):
    """Eager: the module is one recorded tape node whatever the sequence length (its layers and
    directions one kernel); with dropout between layers in training, or packed input, each
    layer-direction is one node."""
    x = fjax.randn(steps, 2, IN, requires_grad=True)
    out, _ = GRU(IN, H, num_layers=2)(x)
    assert _recorded_ops(out) == ["rnn_layers"]
    out, _ = LSTM(IN, H, bidirectional=True)(x)
    assert _recorded_ops(out) == ["rnn_layers"]
    out, _ = GRU(IN, H, num_layers=2, dropout=0.5)(x)
    assert sorted(_recorded_ops(out)) == ["dropout", "gru_layer", "gru_layer"]


def test_cudnn_wrapper_layout(monkeypatch):
    """The cuDNN path's weight packing, reverse flip and masking, run on jax's reference LSTM."""
    from jax.experimental import rnn as jrnn

    def reference(x, h0, c0, w, lengths, input_size, hidden_size, num_layers, dropout, bidirectional):
        ws = jrnn.unpack_lstm_weights(w, input_size, hidden_size, num_layers, bidirectional)
        return jrnn.lstm_ref(x, h0, c0, *ws, lengths, input_size, hidden_size, num_layers, dropout, bidirectional)

    r = rng(17)
    args = [
        r.standard_normal(s).astype(np.float32)
        for s in [(T, B, IN), (B, H), (B, H), (4 * H, IN), (4 * H, H), (4 * H,), (4 * H,)]
    ]
    lengths = np.array([T, 2, 4])
    expected = [rnn_ops.lstm_layer(*args, lengths=lengths, reverse=rev) for rev in (False, True)]
    monkeypatch.setattr(rnn_ops, "_cudnn_applies", lambda x, w_hr: True)
    monkeypatch.setattr(jrnn, "lstm", reference)
    for rev, want in zip((False, True), expected):
        got = rnn_ops.lstm_layer(*args, lengths=lengths, reverse=rev)
        for i, (a, b) in enumerate(zip(got, want)):
            close(a, b, f"cudnn layout reverse={rev} output {i}", 1e-5, 1e-6)


@pytest.mark.parametrize("op", ["lstm_layer", "gru_layer"])
def test_lowered_train_step_does_not_grow_with_length(op):
    """StableHLO of forward + jax.grad at T=150 and T=20,000 is the same program."""
    gates = 4 if op == "lstm_layer" else 3
    batch, inp, hid = 100, 16, 8
    fn = getattr(rnn_ops, op)

    def loss(weights, x, lengths):
        states = (None, None) if op == "lstm_layer" else (None,)
        return (fn(x, *states, *weights, lengths=lengths)[0] ** 2).mean()

    weights = [jax.ShapeDtypeStruct(s, np.float32) for s in [(gates * hid, inp), (gates * hid, hid), (gates * hid,)]]

    def text(steps):
        x = jax.ShapeDtypeStruct((steps, batch, inp), np.float32)
        lengths = jax.ShapeDtypeStruct((batch,), np.int64)
        lowered = jax.jit(jax.value_and_grad(loss)).lower(weights + [None], x, lengths).as_text()
        return re.sub(r"\d+(\.\d+)?(e[+-]\d+)?", "0", lowered)  # sizes and constants (T, T-1, 1/T) differ

    short, long = text(150), text(20_000)
    assert len(short) == len(long), f"{op}: lowered text {len(short)} chars at T=150, {len(long)} at T=20000"
    assert short == long, f"{op}: the lowered programs at T=150 and T=20000 differ beyond their constants"


def test_packed_sequence_inside_graph():
    """Packing, masking and unpacking trace into nn.Graph (lengths stay on the host)."""
    fj, th = _modules("LSTM", bidirectional=True, batch_first=True)
    lengths = [3, T, 2]

    class Packed(fjax.nn.Graph):
        def __init__(self):
            super().__init__()
            self.rnn = fj

        def build(self, x):
            packed = fj_utils.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, (h, _) = self.rnn(packed)
            return fj_utils.pad_packed_sequence(out, batch_first=True)[0], h

    x = rng(19).standard_normal((3, T, IN)).astype(np.float32)
    fy, fh = Packed()(fjax.tensor(x))
    packed = torch.nn.utils.rnn.pack_padded_sequence(
        torch.from_numpy(x), lengths, batch_first=True, enforce_sorted=False
    )
    out, (th_h, _) = th(packed)
    close(fy, torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0], "graph packed output", *TOL["float32"])
    close(fh, th_h, "graph packed h_n", *TOL["float32"])


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_a_decoder_step_is_one_op_with_torch_gradients(mode):
    """A module called once per token with the last state (a seq2seq decoder) dispatches one op
    per call (``_stacked``: no split of the states, no stack), the same kernel for every call, and
    gives torch's outputs and gradients, the initial state's included."""
    gen = np.random.default_rng()
    t = getattr(torch.nn, mode)(4, 3, num_layers=2, batch_first=True)
    f = {"LSTM": LSTM, "GRU": GRU}[mode](4, 3, num_layers=2, batch_first=True)
    f.load_state_dict({k: fjax.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    h0 = gen.standard_normal((2, 5, 3)).astype(np.float32)
    xs = gen.standard_normal((3, 5, 1, 4)).astype(np.float32)
    fh0, th0 = fjax.tensor(h0, requires_grad=True), torch.tensor(h0, requires_grad=True)
    fh, th = ((fh0, fh0 * 0.5), (th0, th0 * 0.5)) if mode == "LSTM" else (fh0, th0)
    f_loss = t_loss = 0
    with fjax.profiler.profile() as prof:
        for x in xs:
            fo, fh = f(fjax.tensor(x), fh)
            f_loss = f_loss + fo.sum()
    names = [e.key for e in prof.key_averages()]
    assert "rnn_layers" in names and "unbind" not in names and "stack" not in names, names
    for x in xs:
        to, th = t(torch.tensor(x), th)
        t_loss = t_loss + to.sum()
    f_loss.backward()
    t_loss.backward()
    # a sum of 45 outputs of size ~1: its error is absolute, not relative to a sum near 0
    np.testing.assert_allclose(f_loss.item(), t_loss.item(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fh0.grad.numpy(), th0.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (name, p), q in zip(f.named_parameters(), t.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
