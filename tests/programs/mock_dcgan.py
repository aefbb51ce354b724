"""A small DCGAN as the PyTorch DCGAN example writes it: a ConvTranspose2d/BatchNorm2d/ReLU
generator and a Conv2d/LeakyReLU discriminator, ``netG.apply(weights_init)`` filling
``m.weight.data`` (from numpy instead of ``normal_``, so both runs start alike), BCELoss against
``torch.full`` labels, ``.detach()`` for the discriminator step, two Adam optimizers with
``betas=(0.5, 0.999)`` and the noise drawn from numpy. Plain PyTorch: run it with ``python`` or
with ``python -m fjax.mock_torch``; both must print the same losses."""

import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

nc, nz, ngf, ndf = 1, 8, 8, 8  # image channels, latent size, generator/discriminator widths


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()
        self.main = nn.Sequential(
            # nz x 1 x 1 -> (ngf*2) x 4 x 4
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # -> ngf x 8 x 8
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            # -> nc x 16 x 16
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.main = nn.Sequential(
            # nc x 16 x 16 -> ndf x 8 x 8
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # -> (ndf*2) x 4 x 4
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # -> 1 x 1 x 1
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def make_weights_init(rng):
    # custom weights initialization called on netG and netD
    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find("Conv") != -1:
            m.weight.data.copy_(torch.from_numpy(rng.normal(0.0, 0.02, size=m.weight.shape).astype(np.float32)))
        elif classname.find("BatchNorm") != -1:
            m.weight.data[:] = torch.from_numpy(rng.normal(1.0, 0.02, size=m.weight.shape).astype(np.float32))
            m.bias.data.fill_(0)

    return weights_init


def main(steps=10, seed=0):
    rng = np.random.RandomState(seed)
    batch_size = 16
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

    # "real" images: smooth blobs in [-1, 1], as if normalised with mean 0.5, std 0.5
    yy, xx = np.mgrid[0:16, 0:16].astype(np.float32)
    centres = rng.uniform(4, 12, size=(steps, batch_size, 2, 1, 1)).astype(np.float32)
    blobs = np.exp(-((xx - centres[:, :, 0]) ** 2 + (yy - centres[:, :, 1]) ** 2) / 8.0)
    real_images = torch.tensor(2 * blobs[:, :, None] - 1, dtype=torch.float32)
    noise_bank = torch.from_numpy(rng.randn(steps, batch_size, nz, 1, 1).astype(np.float32))
    fixed_noise = torch.from_numpy(rng.randn(4, nz, 1, 1).astype(np.float32)).to(device)

    weights_init = make_weights_init(rng)
    netG = Generator().to(device)
    netG.apply(weights_init)
    netD = Discriminator().to(device)
    netD.apply(weights_init)

    criterion = nn.BCELoss()
    real_label, fake_label = 1.0, 0.0
    optimizerD = optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))

    losses = []
    for i in range(steps):
        ############################
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        ###########################
        netD.zero_grad()
        real_cpu = real_images[i].to(device)
        b_size = real_cpu.size(0)
        label = torch.full((b_size,), real_label, dtype=real_cpu.dtype, device=device)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()

        noise = noise_bank[i].to(device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()

        ############################
        # (2) Update G network: maximize log(D(G(z)))
        ###########################
        netG.zero_grad()
        label.fill_(real_label)  # fake labels are real for generator cost
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()
        losses += [errD.item(), errG.item(), D_x, D_G_z1, D_G_z2]

    with torch.no_grad():
        fake = netG(fixed_noise).detach().cpu()
    losses.append(fake.abs().mean().item())
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(main(args.steps, args.seed)))
