"""DP-SGD with per-sample gradients as the ``torch.func`` tutorial computes them:
``{k: v.detach() for k, v in model.named_parameters()}``, a loss over one sample lifted to a
batch with ``unsqueeze(0)``, ``vmap(grad(compute_loss), in_dims=(None, None, 0, 0))`` over
``functional_call``, per-sample clipping to a norm bound, Gaussian noise (from numpy, so both runs
add the same), and the update applied by hand: ``p.data.add_(...)`` for weights and
``with torch.no_grad(): p -= ...`` for biases. A BatchNorm-free CNN whose buffers travel through
``functional_call`` as well. Plain PyTorch: run it with ``python`` or with ``python -m
fjax.mock_torch``; both must print the same losses."""

import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap


class SimpleCNN(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.fc1 = nn.Linear(4 * 3 * 3, 16)
        self.fc2 = nn.Linear(16, num_classes)
        self.register_buffer("scale", torch.tensor(0.5))

    def forward(self, x):
        x = F.relu(self.conv1(x * self.scale))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def main(steps=10, seed=0):
    rng = np.random.RandomState(seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    batch_size, lr, max_grad_norm, noise_multiplier = 16, 0.5, 1.0, 0.3

    images = torch.from_numpy(rng.randn(steps, batch_size, 1, 8, 8).astype(np.float32))
    labels = torch.from_numpy(rng.randint(0, 4, size=(steps, batch_size)).astype(np.int64))

    model = SimpleCNN().to(device)
    for p in model.parameters():
        fan_in = int(np.prod(p.shape[1:])) if p.ndim > 1 else p.shape[0]
        p.data.copy_(torch.from_numpy((rng.uniform(-1, 1, size=p.shape) / np.sqrt(fan_in)).astype(np.float32)))
    noise = {name: rng.randn(steps, *p.shape).astype(np.float32) for name, p in model.named_parameters()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = functional_call(model, (params, buffers), (batch,))
        return F.cross_entropy(predictions, targets)

    ft_compute_sample_grad = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))

    losses = []
    for step in range(steps):
        data, targets = images[step].to(device), labels[step].to(device)
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}
        per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

        # clip each sample's gradient to max_grad_norm over all parameters together
        per_sample_norms = torch.stack([g.reshape(g.shape[0], -1).norm(2, dim=1) for g in per_sample_grads.values()])
        per_sample_norms = per_sample_norms.norm(2, dim=0)
        clip_factor = (max_grad_norm / (per_sample_norms + 1e-6)).clamp(max=1.0)

        for name, p in model.named_parameters():
            g = per_sample_grads[name]
            clipped = torch.einsum("i,i...->...", clip_factor, g)
            noisy = clipped + noise_multiplier * max_grad_norm * torch.from_numpy(noise[name][step]).to(device)
            update = noisy / batch_size
            if p.dim() > 1:
                p.data.add_(update, alpha=-lr)
            else:
                with torch.no_grad():
                    p -= lr * update

        with torch.no_grad():
            loss = F.cross_entropy(model(data), targets)
        losses.append(loss.item())
        losses.append(per_sample_norms.max().item())

    # the per-sample gradients agree with a loop of ordinary backward passes
    model.zero_grad()
    x0, y0 = images[0].to(device), labels[0].to(device)
    F.cross_entropy(model(x0[:1]), y0[:1]).backward()
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    first = ft_compute_sample_grad(params, buffers, x0, y0)["fc1.weight"][0]
    losses.append((first - model.fc1.weight.grad).abs().max().item() < 1e-6)
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(main(args.steps, args.seed)))
