"""A small CNN classifier as in the MNIST examples: Conv2d/BatchNorm2d/MaxPool2d, Flatten,
CrossEntropyLoss and Adam on random 1x12x12 images. Plain PyTorch: run it with ``python`` or with
``python -m fjax.mock_torch``; both must print the same losses."""

import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Net(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(8 * 2 * 2, num_classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc(self.flatten(x))


def init_from_numpy(model, rng):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("bn"):
                continue  # BatchNorm keeps its ones/zeros
            fan_in = int(np.prod(p.shape[1:])) if p.dim() > 1 else p.shape[0]
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.tensor(rng.uniform(-bound, bound, size=tuple(p.shape)).astype(np.float32)))


def main(steps=10, seed=0):
    rng = np.random.RandomState(seed)
    images = torch.tensor(rng.randn(steps, 16, 1, 12, 12).astype(np.float32))
    labels = torch.tensor(rng.randint(0, 5, size=(steps, 16)), dtype=torch.long)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    init_from_numpy(model, rng)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)

    losses = []
    for step in range(steps):
        model.train()
        optimizer.zero_grad()
        x, y = images[step].to(device), labels[step].to(device)
        logits = model(x)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    model.eval()
    with torch.no_grad():
        preds = model(images[0].to(device)).argmax(dim=1)
        accuracy = (preds.cpu() == labels[0]).float().mean().item()
    losses.append(accuracy)  # eval mode (running BatchNorm statistics) checked too
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(main(args.steps, args.seed)))
