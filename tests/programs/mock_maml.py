"""MAML on sinusoid regression as meta-learning code writes it with ``torch.func``: the model's
parameters as a dict, ``functional_call`` for the forward pass, an inner loop of plain SGD steps
taken with ``torch.func.grad`` (first task half) or ``torch.autograd.grad(create_graph=True)``
(second half), the query loss differentiated through the inner updates, and an outer Adam step.
Tasks (amplitude, phase, support and query points) come from a numpy RandomState. Plain
PyTorch: run it with ``python`` or with ``python -m fjax.mock_torch``; both must print the same
losses."""

import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad


class Regressor(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.head(self.layers(x))


def sample_tasks(rng, n_tasks, k_shot):
    amplitude = rng.uniform(0.1, 5.0, size=(n_tasks, 1, 1))
    phase = rng.uniform(0, np.pi, size=(n_tasks, 1, 1))
    xs = rng.uniform(-5.0, 5.0, size=(n_tasks, 2 * k_shot, 1))
    ys = amplitude * np.sin(xs - phase)
    xs, ys = torch.from_numpy(xs.astype(np.float32)), torch.from_numpy(ys.astype(np.float32))
    return xs[:, :k_shot], ys[:, :k_shot], xs[:, k_shot:], ys[:, k_shot:]


def inner_adapt_func(model, params, x, y, inner_lr, inner_steps):
    def loss_fn(params, x, y):
        return F.mse_loss(functional_call(model, params, (x,)), y)

    for _ in range(inner_steps):
        grads = grad(loss_fn)(params, x, y)
        params = {name: p - inner_lr * grads[name] for name, p in params.items()}
    return params


def inner_adapt_autograd(model, params, x, y, inner_lr, inner_steps):
    for _ in range(inner_steps):
        loss = F.mse_loss(functional_call(model, params, (x,)), y)
        grads = torch.autograd.grad(loss, list(params.values()), create_graph=True)
        params = {name: p - inner_lr * g for (name, p), g in zip(params.items(), grads)}
    return params


def main(steps=10, seed=0):
    rng = np.random.RandomState(seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Regressor().to(device)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p.shape[1] if p.dim() > 1 else p.shape[0]
            p.copy_(torch.tensor(rng.uniform(-1, 1, size=tuple(p.shape)) / np.sqrt(fan_in), dtype=torch.float32))
    meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n_tasks, k_shot, inner_lr, inner_steps = 4, 10, 0.01, 2

    losses = []
    for _ in range(steps):
        x_spt, y_spt, x_qry, y_qry = (t.to(device) for t in sample_tasks(rng, n_tasks, k_shot))
        meta_opt.zero_grad()
        params = dict(model.named_parameters())
        qry_losses = []
        for i in range(n_tasks):
            adapt = inner_adapt_func if i < n_tasks // 2 else inner_adapt_autograd
            fast = adapt(model, params, x_spt[i], y_spt[i], inner_lr, inner_steps)
            qry_loss = F.mse_loss(functional_call(model, fast, (x_qry[i],)), y_qry[i])
            qry_losses.append(qry_loss)
        meta_loss = torch.stack(qry_losses).mean()
        meta_loss.backward()
        meta_opt.step()
        losses.append(meta_loss.item())

    # adaptation at test time: the loss before and after a few inner steps on a new task
    x_spt, y_spt, x_qry, y_qry = (t.to(device) for t in sample_tasks(rng, 1, k_shot))
    params = {k: v.detach() for k, v in model.named_parameters()}
    before = F.mse_loss(functional_call(model, params, (x_qry[0],)), y_qry[0])
    fast = inner_adapt_func(model, params, x_spt[0], y_spt[0], inner_lr, 5)
    after = F.mse_loss(functional_call(model, fast, (x_qry[0],)), y_qry[0])
    losses += [before.item(), after.item()]
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(main(args.steps, args.seed)))
