"""A variational autoencoder as the PyTorch VAE example writes it: argparse hyperparameters, a
DataLoader over synthetic 28x28 images, ``reparameterize`` (with the noise supplied from numpy
instead of ``torch.randn_like``, so both runs draw the same), BCE + KL loss summed over the batch,
Adam, and a checkpoint mid-run: ``torch.save`` of the model and optimizer ``state_dict`` to a
temporary file, ``torch.load`` into a fresh model and optimizer, and training goes on. Plain
PyTorch: run it with ``python`` or with ``python -m fjax.mock_torch``; both must print the same
losses."""

import argparse
import json
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset


def get_parser():
    parser = argparse.ArgumentParser(description="VAE on synthetic digits")
    parser.add_argument("--batch-size", type=int, default=32, metavar="N")
    parser.add_argument("--latent", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-cuda", action="store_true", default=False)
    return parser


class VAE(nn.Module):
    def __init__(self, hidden=64, latent=4):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.fc21 = nn.Linear(hidden, latent)
        self.fc22 = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    # see Appendix B of Kingma and Welling, Auto-Encoding Variational Bayes
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def init_from_numpy(model, rng):
    for p in model.parameters():
        bound = 1.0 / np.sqrt(p.shape[-1])
        p.data = torch.from_numpy(rng.uniform(-bound, bound, size=tuple(p.size())).astype(np.float32))


def synthetic_digits(rng, n):
    """Blurry strokes on a 28x28 canvas, values in [0, 1]."""
    yy, xx = np.mgrid[0:28, 0:28].astype(np.float32)
    cx, cy = rng.uniform(8, 20, size=(2, n, 1, 1)).astype(np.float32)
    width = rng.uniform(2, 5, size=(n, 1, 1)).astype(np.float32)
    img = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * width**2))
    img += 0.05 * rng.rand(n, 28, 28)
    return np.clip(img, 0, 1).astype(np.float32)[:, None]


def main(steps=10, seed=0, argv=()):
    args = get_parser().parse_args(["--steps", str(steps), "--seed", str(seed), *argv])
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    rng = np.random.RandomState(args.seed)

    images = synthetic_digits(rng, 4 * args.batch_size)
    train_loader = DataLoader(
        TensorDataset(torch.from_numpy(images), torch.zeros(len(images), dtype=torch.long)),
        batch_size=args.batch_size,
        shuffle=False,
    )
    noise = rng.randn(args.steps, args.batch_size, args.latent).astype(np.float32)

    model = VAE(args.hidden, args.latent)
    init_from_numpy(model, rng)
    model = model.to(device)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)

    losses = []
    checkpoint_dir = tempfile.mkdtemp()
    checkpoint_path = os.path.join(checkpoint_dir, "vae.pt")
    step = 0
    while step < args.steps:
        model.train()
        for data, _ in train_loader:
            data = data.to(device)
            eps = torch.from_numpy(noise[step]).to(device)
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data, eps)
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            optimizer.step()
            losses.append(loss.item() / len(data))
            step += 1
            if step == max(1, args.steps // 2):  # checkpoint, then go on from a fresh model and optimizer
                state = {"step": step, "model": model.state_dict(), "optim": optimizer.state_dict()}
                torch.save(state, checkpoint_path)
                del model, optimizer
                checkpoint = torch.load(checkpoint_path)
                model = VAE(args.hidden, args.latent).to(device)
                model.load_state_dict(checkpoint["model"])
                optimizer = optim.Adam(model.parameters(), lr=args.lr)
                optimizer.load_state_dict(checkpoint["optim"])
                assert checkpoint["step"] == step
            if step == args.steps:
                break
    os.remove(checkpoint_path)
    os.rmdir(checkpoint_dir)

    model.eval()
    with torch.no_grad():
        sample = model.decode(torch.from_numpy(noise[0][:8]).to(device)).cpu()
        losses.append(sample.view(8, 1, 28, 28).mean().item())
    return losses


if __name__ == "__main__":
    print(json.dumps(main(argv=sys.argv[1:])))
