"""Issue 3's "done when": a small CNN and a small Transformer trained for 50 steps in fjax eager
and in torch from the same initial weights and data give the same loss at every step."""

from __future__ import annotations

import numpy as np
import torch

import fjax

from .helper import SEED, copy_weights, rng

STEPS = 50


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1, groups=2),
        nn.GELU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )


class _TinyLM:
    """Token embedding, a 2-layer causal transformer encoder and a vocabulary head."""

    @staticmethod
    def build(lib, vocab=17, d=16):
        nn = lib.nn

        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(vocab, d)
                layer = nn.TransformerEncoderLayer(d, 4, 32, dropout=0.0, batch_first=True, norm_first=True)
                self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(d), enable_nested_tensor=False)
                self.head = nn.Linear(d, vocab)

            def forward(self, tokens, mask):
                return self.head(self.encoder(self.embed(tokens), mask=mask))

        return LM()


def _train(model, opt, batches, loss_fn, lib):
    losses = []
    for step in range(STEPS):
        inputs, target = batches[step % len(batches)]
        out = model(*inputs)
        loss = loss_fn(out.reshape(-1, out.shape[-1]), target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def _run_both(fj_model, th_model, make_batches, lr, momentum):
    copy_weights(fj_model, th_model)
    fj_batches, th_batches = make_batches()
    fj_opt = fjax.optim.SGD(fj_model.parameters(), lr=lr, momentum=momentum)
    th_opt = torch.optim.SGD(th_model.parameters(), lr=lr, momentum=momentum)
    fj_losses = _train(fj_model, fj_opt, fj_batches, fjax.nn.CrossEntropyLoss(), fjax)
    th_losses = _train(th_model, th_opt, th_batches, torch.nn.CrossEntropyLoss(), torch)
    return fj_losses, th_losses


def test_cnn_training_matches_torch():
    def batches():
        r = rng()
        data = [(r.standard_normal((8, 3, 12, 12)).astype(np.float32), r.integers(0, 10, 8)) for _ in range(4)]
        return (
            [((fjax.tensor(x),), fjax.tensor(y)) for x, y in data],
            [((torch.from_numpy(x),), torch.from_numpy(y)) for x, y in data],
        )

    fj_losses, th_losses = _run_both(_cnn(fjax), _cnn(torch), batches, lr=0.05, momentum=0.9)
    np.testing.assert_allclose(fj_losses, th_losses, rtol=2e-4, atol=1e-5, err_msg=f"CNN losses (seed={SEED})")
    # a sanity check that training moves at all (parity above is the test); by how much depends
    # on the seed: 4-5% over these steps on some seeds
    assert th_losses[-4:].mean() < 0.99 * th_losses[:4].mean(), f"the CNN should fit its batches (seed={SEED})"


def test_transformer_training_matches_torch():
    seq = 10

    def batches():
        r = rng()
        mask = np.triu(np.full((seq, seq), -np.inf, np.float32), 1)
        out = ([], [])
        for _ in range(4):
            start = r.integers(0, 17, (6, 1))
            tokens = (start + np.arange(seq + 1)) % 17  # learnable: next token is +1 mod 17
            x, y = tokens[:, :-1], tokens[:, 1:]
            out[0].append(((fjax.tensor(x), fjax.tensor(mask)), fjax.tensor(y)))
            out[1].append(((torch.from_numpy(x), torch.from_numpy(mask)), torch.from_numpy(y)))
        return out

    fj_losses, th_losses = _run_both(_TinyLM.build(fjax), _TinyLM.build(torch), batches, lr=0.1, momentum=0.9)
    np.testing.assert_allclose(fj_losses, th_losses, rtol=2e-4, atol=1e-5, err_msg=f"Transformer losses (seed={SEED})")
    assert th_losses[-4:].mean() < 0.7 * th_losses[:4].mean(), "the transformer should learn the +1 rule"
