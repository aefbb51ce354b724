"""A causal Transformer language model as the PyTorch "language modeling with nn.Transformer"
tutorial writes it: nn.Embedding scaled by sqrt(d_model), a sinusoidal PositionalEncoding kept
with ``register_buffer``, nn.TransformerEncoder (sequence-first) with the mask from
``nn.Transformer.generate_square_subsequent_mask``, ``batchify``/``get_batch`` slicing a token
tensor (``source[i:i + seq_len]``), ``clip_grad_norm_``, AdamW with a LambdaLR warmup, and an
evaluation pass with a ``torch.triu`` mask. Dropout is 0 so both runs are deterministic. Plain
PyTorch: run it with ``python`` or with ``python -m fjax.mock_torch``; both must print the same
losses."""

import argparse
import json
import math

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import TransformerEncoder, TransformerEncoderLayer
from torch.optim.lr_scheduler import LambdaLR


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, dropout: float = 0.0, max_len: int = 64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x: Tensor) -> Tensor:
        """x: [seq_len, batch_size, embedding_dim]"""
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)


class TransformerModel(nn.Module):
    def __init__(self, ntoken: int, d_model: int, nhead: int, d_hid: int, nlayers: int, dropout: float = 0.0):
        super().__init__()
        self.model_type = "Transformer"
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers, enable_nested_tensor=False)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)

    def forward(self, src: Tensor, src_mask: Tensor = None) -> Tensor:
        """src: [seq_len, batch_size] -> [seq_len, batch_size, ntoken]"""
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        output = self.transformer_encoder(src, src_mask)
        return self.linear(output)


def init_from_numpy(model, rng):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                continue  # LayerNorm keeps its ones/zeros
            if name.endswith("bias"):
                p.zero_()
                continue
            bound = math.sqrt(3.0 / p.shape[-1])
            p.copy_(torch.tensor(rng.uniform(-bound, bound, size=tuple(p.shape)).astype(np.float32)))


def batchify(data: Tensor, bsz: int, device) -> Tensor:
    """[N] -> [N // bsz, bsz]"""
    seq_len = data.size(0) // bsz
    data = data[: seq_len * bsz]
    data = data.view(bsz, seq_len).t().contiguous()
    return data.to(device)


def get_batch(source: Tensor, i: int, bptt: int):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].reshape(-1)
    return data, target


def main(steps=10, seed=0):
    rng = np.random.RandomState(seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ntokens, emsize, d_hid, nlayers, nhead, bptt = 20, 16, 32, 2, 2, 8
    # a corpus with structure: a noisy cyclic walk over the vocabulary
    walk = np.cumsum(rng.choice([1, 1, 2, 3], size=600)) % ntokens
    train_data = batchify(torch.tensor(walk[:500], dtype=torch.long), 4, device)
    val_data = batchify(torch.tensor(walk[500:], dtype=torch.long), 2, device)

    model = TransformerModel(ntokens, emsize, nhead, d_hid, nlayers, dropout=0.0).to(device)
    init_from_numpy(model, rng)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, betas=(0.9, 0.98), weight_decay=0.01)
    warmup = 4
    scheduler = LambdaLR(optimizer, lr_lambda=lambda step: min(1.0, (step + 1) / warmup))
    src_mask = nn.Transformer.generate_square_subsequent_mask(bptt).to(device)

    losses = []
    model.train()
    batch = 0
    while len(losses) < steps:
        for i in range(0, train_data.size(0) - 1, bptt):
            data, targets = get_batch(train_data, i, bptt)
            seq_len = data.size(0)
            mask = src_mask if seq_len == bptt else src_mask[:seq_len, :seq_len]
            output = model(data, mask)
            loss = criterion(output.view(-1, ntokens), targets)

            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
            batch += 1
            if len(losses) == steps:
                break

    model.eval()
    total_loss = 0.0
    eval_mask = torch.triu(torch.full((bptt, bptt), float("-inf"), device=device), diagonal=1)
    with torch.no_grad():
        for i in range(0, val_data.size(0) - 1, bptt):
            data, targets = get_batch(val_data, i, bptt)
            seq_len = data.size(0)
            output = model(data, eval_mask[:seq_len, :seq_len])
            total_loss += seq_len * criterion(output.view(-1, ntokens), targets).item()
    val_loss = total_loss / (len(val_data) - 1)
    losses += [val_loss, math.exp(val_loss), scheduler.get_last_lr()[0]]
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(main(args.steps, args.seed)))
