"""Sine-wave prediction as the PyTorch time-sequence-prediction example writes it: two LSTMCells
unrolled in a Python loop over ``input.split(1, dim=1)``, ``torch.stack``/``torch.cat`` of the
outputs, a ``future`` loop feeding predictions back in, the whole model in double precision
(``.double()``), and LBFGS driven by a ``closure``. Plain PyTorch: run it with ``python`` or with
``python -m fjax.mock_torch``; both must print the same losses."""

import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden=12):
        super(Sequence, self).__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def main(steps=10, seed=0):
    rng = np.random.RandomState(seed)
    T, L, N = 20, 16, 6
    x = np.empty((N, L), np.int64)
    x[:] = np.array(range(L)) + rng.randint(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / 1.0 / T).astype("float64")

    input = torch.from_numpy(data[2:, :-1])
    target = torch.from_numpy(data[2:, 1:])
    test_input = torch.from_numpy(data[:2, :-1])
    test_target = torch.from_numpy(data[:2, 1:])

    seq = Sequence()
    seq.double()
    for p in seq.parameters():
        p.data.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, size=tuple(p.shape))))
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=4)

    losses = []
    for _ in range(steps):

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            loss.backward()
            return loss

        loss = optimizer.step(closure)
        losses.append(loss.item())

    # begin to predict, no need to track gradient here
    with torch.no_grad():
        future = 4
        pred = seq(test_input, future=future)
        loss = criterion(pred[:, :-future], test_target)
        losses += [loss.item(), pred[:, -future:].abs().mean().item()]
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(main(args.steps, args.seed)))
