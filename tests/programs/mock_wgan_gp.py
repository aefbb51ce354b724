"""A Wasserstein GAN with gradient penalty on the 8-gaussians toy set, as the improved-WGAN PyTorch
port (``gan_toy.py``) writes it: MLP generator and critic, ``CRITIC_ITERS`` critic updates per
generator update, the critic's parameters toggled with ``requires_grad``, ``backward(one)`` /
``backward(mone)`` with ``one = torch.tensor(1.0)``, ``calc_gradient_penalty`` taking
``autograd.grad`` of the critic at random interpolates between real and fake samples with
``create_graph=True`` and penalising ``(||grad||_2 - 1)^2``, and Adam with ``betas=(0.0, 0.9)``.
The interpolation weights and the generator's noise are drawn from numpy, so both runs draw the
same. Plain PyTorch: run it with ``python`` or with ``python -m fjax.mock_torch``; both must print
the same losses."""

import argparse
import json

import numpy as np
import torch
import torch.autograd as autograd
import torch.nn as nn
import torch.optim as optim


def get_parser():
    parser = argparse.ArgumentParser(description="WGAN-GP on 8 gaussians")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--critic-iters", type=int, default=3)
    parser.add_argument("--lambda-gp", type=float, default=0.1)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    return parser


class Generator(nn.Module):
    def __init__(self, dim):
        super(Generator, self).__init__()
        main = nn.Sequential(
            nn.Linear(2, dim),
            nn.ReLU(True),
            nn.Linear(dim, dim),
            nn.ReLU(True),
            nn.Linear(dim, 2),
        )
        self.main = main

    def forward(self, noise, real_data):
        output = self.main(noise)
        return output


class Discriminator(nn.Module):
    def __init__(self, dim):
        super(Discriminator, self).__init__()
        main = nn.Sequential(
            nn.Linear(2, dim),
            nn.ReLU(True),
            nn.Linear(dim, dim),
            nn.ReLU(True),
            nn.Linear(dim, 1),
        )
        self.main = main

    def forward(self, inputs):
        output = self.main(inputs)
        return output.view(-1)


def weights_init(m, rng):
    classname = m.__class__.__name__
    if classname.find("Linear") != -1:
        std = 0.1
        m.weight.data.copy_(torch.from_numpy(rng.normal(0.0, std, size=tuple(m.weight.shape)).astype(np.float32)))
        m.bias.data.fill_(0)


def inf_train_gen(rng, batch_size):
    scale = 2.0
    centers = [(1, 0), (-1, 0), (0, 1), (0, -1), (1.0 / np.sqrt(2), 1.0 / np.sqrt(2))]
    centers += [(1.0 / np.sqrt(2), -1.0 / np.sqrt(2)), (-1.0 / np.sqrt(2), 1.0 / np.sqrt(2))]
    centers += [(-1.0 / np.sqrt(2), -1.0 / np.sqrt(2))]
    centers = [(scale * x, scale * y) for x, y in centers]
    while True:
        point = rng.randn(batch_size, 2) * 0.02
        center = np.array(centers)[rng.randint(0, len(centers), size=batch_size)]
        dataset = (point + center).astype("float32")
        dataset /= 1.414  # stdev
        yield dataset


def calc_gradient_penalty(netD, real_data, fake_data, alpha, lambda_gp):
    alpha = alpha.expand(real_data.size())

    interpolates = alpha * real_data + ((1 - alpha) * fake_data)
    interpolates.requires_grad_(True)

    disc_interpolates = netD(interpolates)

    gradients = autograd.grad(
        outputs=disc_interpolates,
        inputs=interpolates,
        grad_outputs=torch.ones(disc_interpolates.size()),
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]

    gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean() * lambda_gp
    return gradient_penalty


def main(steps=10, seed=0, argv=()):
    args = get_parser().parse_args(["--steps", str(steps), "--seed", str(seed), *argv])
    rng = np.random.RandomState(args.seed)

    netG = Generator(args.dim)
    netD = Discriminator(args.dim)
    netD.apply(lambda m: weights_init(m, rng))
    netG.apply(lambda m: weights_init(m, rng))

    optimizerD = optim.Adam(netD.parameters(), lr=args.lr, betas=(0.0, 0.9))
    optimizerG = optim.Adam(netG.parameters(), lr=args.lr, betas=(0.0, 0.9))

    one = torch.tensor(1, dtype=torch.float)
    mone = one * -1

    data = inf_train_gen(rng, args.batch_size)
    losses = []
    for _iteration in range(args.steps):
        ############################
        # (1) Update D network
        ###########################
        for p in netD.parameters():  # reset requires_grad
            p.requires_grad = True  # they are set to False below in netG update

        for _iter_d in range(args.critic_iters):
            _data = next(data)
            real_data = torch.Tensor(_data)

            netD.zero_grad()

            # train with real
            D_real = netD(real_data)
            D_real = D_real.mean()
            D_real.backward(mone)

            # train with fake
            noise = torch.from_numpy(rng.randn(args.batch_size, 2).astype(np.float32))
            with torch.no_grad():
                fake = netG(noise, real_data)
            inputv = fake
            D_fake = netD(inputv)
            D_fake = D_fake.mean()
            D_fake.backward(one)

            # train with gradient penalty
            alpha = torch.from_numpy(rng.rand(args.batch_size, 1).astype(np.float32))
            gradient_penalty = calc_gradient_penalty(netD, real_data, fake, alpha, args.lambda_gp)
            gradient_penalty.backward()

            D_cost = D_fake - D_real + gradient_penalty
            Wasserstein_D = D_real - D_fake
            optimizerD.step()

        ############################
        # (2) Update G network
        ###########################
        for p in netD.parameters():
            p.requires_grad = False  # to avoid computation
        netG.zero_grad()

        _data = next(data)
        real_data = torch.Tensor(_data)

        noise = torch.from_numpy(rng.randn(args.batch_size, 2).astype(np.float32))
        fake = netG(noise, real_data)
        G = netD(fake)
        G = G.mean()
        G.backward(mone)
        G_cost = -G
        optimizerG.step()

        losses += [D_cost.item(), Wasserstein_D.item(), G_cost.item(), gradient_penalty.item()]

    with torch.no_grad():
        samples = netG(torch.from_numpy(rng.randn(256, 2).astype(np.float32)), None)
    losses += [samples.mean().item(), samples.std().item()]
    return losses


if __name__ == "__main__":
    print(json.dumps(main()))
