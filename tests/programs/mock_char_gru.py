"""A char-level GRU language model as char-rnn tutorials write it: Embedding, a two-layer
batch_first GRU carried across batches with ``.detach()``, CrossEntropyLoss over ``view(-1, V)``,
``clip_grad_norm_`` and AdamW. Plain PyTorch: run it with ``python`` or with
``python -m fjax.mock_torch``; both must print the same losses."""

import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.nn.utils import clip_grad_norm_

TEXT = "the quick brown fox jumps over the lazy dog. " * 8


class CharGRU(nn.Module):
    def __init__(self, vocab_size, embed_dim=8, hidden_size=16, num_layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.gru = nn.GRU(embed_dim, hidden_size, num_layers=num_layers, batch_first=True)
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, hidden=None):
        out, hidden = self.gru(self.embed(x), hidden)
        return self.head(out), hidden


def init_from_numpy(model, rng):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.uniform(-0.2, 0.2, size=tuple(p.shape)).astype(np.float32)))


def main(steps=10, seed=0):
    rng = np.random.RandomState(seed)
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    batch_size, seq_len = 4, 12
    n = (len(data) - 1) // batch_size
    inputs = data[: n * batch_size].view(batch_size, n)
    targets = data[1 : n * batch_size + 1].view(batch_size, n)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = CharGRU(len(chars))
    init_from_numpy(model, rng)
    model.to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01)

    losses = []
    hidden = None
    for step in range(steps):
        start = (step * seq_len) % (n - seq_len)
        x = inputs[:, start : start + seq_len].to(device)
        y = targets[:, start : start + seq_len].to(device)
        if hidden is not None:
            hidden = hidden.detach()
        optimizer.zero_grad()
        logits, hidden = model(x, hidden)
        loss = criterion(logits.reshape(-1, len(chars)), y.reshape(-1))
        loss.backward()
        clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(main(args.steps, args.seed)))
