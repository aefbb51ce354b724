"""An MLP regression trained the way tutorials train one: TensorDataset + DataLoader, SGD with
momentum and weight decay, StepLR, MSELoss. Plain PyTorch: run it with ``python`` or with
``python -m fjax.mock_torch``; both must print the same losses."""

import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, out_features),
        )

    def forward(self, x):
        return self.net(x)


def init_from_numpy(model, rng):
    with torch.no_grad():
        for p in model.parameters():
            bound = 1.0 / np.sqrt(p.shape[-1])
            p.copy_(torch.tensor(rng.uniform(-bound, bound, size=tuple(p.shape)).astype(np.float32)))


def main(steps=10, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(256, 8).astype(np.float32)
    w = rng.randn(8, 2).astype(np.float32)
    Y = np.sin(X @ w) + 0.1 * rng.randn(256, 2).astype(np.float32)

    dataset = TensorDataset(torch.from_numpy(X), torch.from_numpy(Y.astype(np.float32)))
    loader = DataLoader(dataset, batch_size=64, shuffle=False)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = MLP(8, 32, 2)
    init_from_numpy(model, rng)
    model = model.to(device)
    criterion = nn.MSELoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.5)

    losses = []
    model.train()
    while len(losses) < steps:
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            out = model(xb)
            loss = criterion(out, yb)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
        scheduler.step()
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(main(args.steps, args.seed)))
