"""A RealNVP normalising flow as the well-known two-moons notebook writes it: alternating binary
masks kept as a frozen ``nn.Parameter``, affine coupling layers whose scale and translation nets
(``nn.Sequential`` with ``LeakyReLU``/``Tanh``) see only the masked half, the inverse pass ``f``
accumulating the log-determinant of the Jacobian, ``log_prob`` under a
``torch.distributions.MultivariateNormal`` prior (checked against an ``Independent`` ``Normal``),
maximum likelihood with Adam and a ``StepLR`` schedule, and sampling by pushing numpy-drawn prior
samples through the forward pass ``g`` under ``torch.no_grad``. Plain PyTorch: run it with
``python`` or with ``python -m fjax.mock_torch``; both must print the same losses."""

import argparse
import json

import numpy as np
import torch
from torch import distributions, nn


def get_parser():
    parser = argparse.ArgumentParser(description="RealNVP on two moons")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--couplings", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    return parser


class RealNVP(nn.Module):
    def __init__(self, nets, nett, mask, prior):
        super(RealNVP, self).__init__()

        self.prior = prior
        self.mask = nn.Parameter(mask, requires_grad=False)
        self.t = torch.nn.ModuleList([nett() for _ in range(len(mask))])
        self.s = torch.nn.ModuleList([nets() for _ in range(len(mask))])

    def g(self, z):
        x = z
        for i in range(len(self.t)):
            x_ = x * self.mask[i]
            s = self.s[i](x_) * (1 - self.mask[i])
            t = self.t[i](x_) * (1 - self.mask[i])
            x = x_ + (1 - self.mask[i]) * (x * torch.exp(s) + t)
        return x

    def f(self, x):
        log_det_J, z = x.new_zeros(x.shape[0]), x
        for i in reversed(range(len(self.t))):
            z_ = self.mask[i] * z
            s = self.s[i](z_) * (1 - self.mask[i])
            t = self.t[i](z_) * (1 - self.mask[i])
            z = (1 - self.mask[i]) * (z - t) * torch.exp(-s) + z_
            log_det_J -= s.sum(dim=1)
        return z, log_det_J

    def log_prob(self, x):
        z, logp = self.f(x)
        return self.prior.log_prob(z) + logp

    def sample(self, z):
        return self.g(z)


def make_moons(rng, n, noise=0.05):
    half = n // 2
    outer = np.linspace(0, np.pi, n - half)
    inner = np.linspace(0, np.pi, half)
    x = np.concatenate([np.cos(outer), 1 - np.cos(inner)])
    y = np.concatenate([np.sin(outer), 1 - np.sin(inner) - 0.5])
    data = np.stack([x, y], 1) + noise * rng.randn(n, 2)
    return data[rng.permutation(n)].astype(np.float32)


def main(steps=10, seed=0, argv=()):
    args = get_parser().parse_args(["--steps", str(steps), "--seed", str(seed), *argv])
    rng = np.random.RandomState(args.seed)
    h = args.hidden

    def nets():
        return nn.Sequential(
            nn.Linear(2, h), nn.LeakyReLU(), nn.Linear(h, h), nn.LeakyReLU(), nn.Linear(h, 2), nn.Tanh()
        )

    def nett():
        return nn.Sequential(nn.Linear(2, h), nn.LeakyReLU(), nn.Linear(h, h), nn.LeakyReLU(), nn.Linear(h, 2))

    masks = torch.from_numpy(np.array([[0, 1], [1, 0]] * (args.couplings // 2)).astype(np.float32))
    prior = distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
    flow = RealNVP(nets, nett, masks, prior)
    for p in flow.parameters():
        if p.requires_grad:
            bound = 1.0 / np.sqrt(p.shape[-1])
            p.data = torch.from_numpy(rng.uniform(-bound, bound, size=tuple(p.shape)).astype(np.float32))

    optimizer = torch.optim.Adam([p for p in flow.parameters() if p.requires_grad == True], lr=args.lr)  # noqa: E712
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    data = make_moons(rng, args.steps * args.batch_size)

    losses = []
    for t in range(args.steps):
        x = torch.from_numpy(data[t * args.batch_size : (t + 1) * args.batch_size])
        loss = -flow.log_prob(x).mean()

        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())

    standard = distributions.Independent(distributions.Normal(torch.zeros(2), torch.ones(2)), 1)
    with torch.no_grad():
        z, log_det = flow.f(torch.from_numpy(data[: args.batch_size]))
        losses.append((standard.log_prob(z) + log_det).mean().item())
        x = flow.sample(torch.from_numpy(rng.randn(200, 2).astype(np.float32)))
        losses += [x[:, 0].mean().item(), x[:, 1].std().item()]
    return losses


if __name__ == "__main__":
    print(json.dumps(main()))
