"""A physics-informed neural network for the 1-D heat equation u_t = k u_xx on [0, 1] x [0, 1]
with u(x, 0) = sin(pi x) and u(0, t) = u(1, t) = 0, as the PINN tutorials write it: the whole run
in double precision (``model.double()``, ``dtype=torch.float64`` data), collocation points that
``requires_grad_``, first and second derivatives by ``torch.autograd.grad(...,
grad_outputs=torch.ones_like(u), create_graph=True)``, a PDE residual plus initial and boundary
losses, Adam first and then L-BFGS with a strong-Wolfe line search driven by a ``closure``, and
the relative L2 error against the exact solution exp(-k pi^2 t) sin(pi x) under
``torch.no_grad``. Plain PyTorch: run it with ``python`` or with ``python -m fjax.mock_torch``;
both must print the same losses."""

import argparse
import json
import math

import numpy as np
import torch
import torch.nn as nn


def get_parser():
    parser = argparse.ArgumentParser(description="PINN for the heat equation")
    parser.add_argument("--kappa", type=float, default=0.1)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--n-collocation", type=int, default=64)
    parser.add_argument("--n-boundary", type=int, default=16)
    parser.add_argument("--adam-steps", type=int, default=6)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    return parser


class PINN(nn.Module):
    def __init__(self, hidden=16, depth=3):
        super().__init__()
        layers = [nn.Linear(2, hidden), nn.Tanh()]
        for _ in range(depth - 1):
            layers += [nn.Linear(hidden, hidden), nn.Tanh()]
        layers.append(nn.Linear(hidden, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x, t):
        return self.net(torch.cat([x, t], dim=1))


def gradients(outputs, inputs):
    return torch.autograd.grad(outputs, inputs, grad_outputs=torch.ones_like(outputs), create_graph=True)[0]


def pde_residual(model, x, t, kappa):
    u = model(x, t)
    u_t = gradients(u, t)
    u_x = gradients(u, x)
    u_xx = gradients(u_x, x)
    return u_t - kappa * u_xx


def exact_solution(x, t, kappa):
    return torch.exp(-kappa * math.pi**2 * t) * torch.sin(math.pi * x)


def main(steps=10, seed=0, argv=()):
    args = get_parser().parse_args(["--steps", str(steps), "--seed", str(seed), *argv])
    rng = np.random.RandomState(args.seed)
    model = PINN(args.hidden).double()
    assert next(model.parameters()).dtype == torch.float64
    for name, p in model.named_parameters():
        if "weight" in name:  # Xavier-normal, drawn from numpy
            std = math.sqrt(2.0 / (p.shape[0] + p.shape[1]))
            p.data = torch.from_numpy(rng.normal(0.0, std, size=tuple(p.shape)))
        else:
            p.data.zero_()

    x_f = torch.tensor(rng.uniform(0, 1, size=(args.n_collocation, 1)), requires_grad=True)
    t_f = torch.tensor(rng.uniform(0, 1, size=(args.n_collocation, 1)), requires_grad=True)
    x_0 = torch.linspace(0, 1, args.n_boundary, dtype=torch.float64).unsqueeze(1)
    t_0 = torch.zeros_like(x_0)
    u_0 = torch.sin(math.pi * x_0)
    t_b = torch.linspace(0, 1, args.n_boundary, dtype=torch.float64).unsqueeze(1)
    x_left, x_right = torch.zeros_like(t_b), torch.ones_like(t_b)

    mse = nn.MSELoss()

    def loss_fn():
        residual = pde_residual(model, x_f, t_f, args.kappa)
        loss_pde = torch.mean(residual**2)
        loss_ic = mse(model(x_0, t_0), u_0)
        loss_bc = model(x_left, t_b).pow(2).mean() + model(x_right, t_b).pow(2).mean()
        return loss_pde + loss_ic + loss_bc

    losses = []
    adam = torch.optim.Adam(model.parameters(), lr=args.lr)
    for _ in range(min(args.adam_steps, args.steps)):
        adam.zero_grad()
        loss = loss_fn()
        loss.backward()
        adam.step()
        losses.append(loss.item())

    lbfgs = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=5, history_size=10, line_search_fn="strong_wolfe")

    def closure():
        lbfgs.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    for _ in range(args.steps - len(losses)):
        loss = lbfgs.step(closure)
        losses.append(loss.item())

    grid_x, grid_t = torch.meshgrid(
        torch.linspace(0, 1, 11, dtype=torch.float64), torch.linspace(0, 1, 11, dtype=torch.float64), indexing="ij"
    )
    x_test, t_test = grid_x.reshape(-1, 1), grid_t.reshape(-1, 1)
    with torch.no_grad():
        u_pred = model(x_test, t_test)
        u_true = exact_solution(x_test, t_test, args.kappa)
        rel_l2 = torch.linalg.norm(u_pred - u_true) / torch.linalg.norm(u_true)
    assert u_pred.dtype == torch.float64
    losses.append(rel_l2.item())
    return losses


if __name__ == "__main__":
    print(json.dumps(main()))
