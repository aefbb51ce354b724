"""A word-level LSTM language model trained the way the classic PyTorch example trains it:
``weight.data.uniform_`` init, hidden state detached between batches, ``clip_grad_norm_`` and a
manual SGD step ``p.data.add_(p.grad, alpha=-lr)`` — the same program on torch and on fjax must
give the same losses (each of these idioms was a silent no-op while ``.data`` was a copy)."""

from __future__ import annotations

import numpy as np
import torch

import fjax


def _train(lib, seed):
    nn = lib.nn

    class RNNModel(nn.Module):
        def __init__(self, ntoken, ninp, nhid):
            super().__init__()
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, 1)
            self.decoder = nn.Linear(nhid, ntoken)
            self.decoder.bias.data.zero_()

        def forward(self, x, hidden):
            out, hidden = self.rnn(self.encoder(x), hidden)
            return self.decoder(out), hidden

    model = RNNModel(20, 8, 16)
    rng = np.random.default_rng(seed)
    for _, p in model.named_parameters():  # the same start for both libraries
        p.data.copy_(lib.tensor(rng.uniform(-0.1, 0.1, tuple(p.shape)).astype(np.float32)))
    model.encoder.weight.data[0] = 0  # a padding row, as programs zero it
    corpus = lib.tensor(rng.integers(0, 20, (50, 4)))
    hidden = (lib.zeros(1, 4, 16), lib.zeros(1, 4, 16))
    losses = []
    for i in range(0, 40, 5):
        x, y = corpus[i : i + 5], corpus[i + 1 : i + 6]
        hidden = tuple(h.detach() for h in hidden)
        model.zero_grad()
        out, hidden = model(x, hidden)
        loss = nn.functional.cross_entropy(out.view(-1, 20), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-1.0)
        losses.append(loss.item())
    return losses, model.decoder.weight.detach().numpy()


def test_word_language_model_trains_as_in_torch():
    seed = np.random.SeedSequence().entropy % 2**32
    (want, w_want), (got, w_got) = _train(torch, seed), _train(fjax, seed)
    np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=f"seed {seed}")
    np.testing.assert_allclose(w_got, w_want, rtol=1e-4, atol=1e-6, err_msg=f"seed {seed}")
    assert want[-1] != want[0]
