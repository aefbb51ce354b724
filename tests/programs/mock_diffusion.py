"""A small denoising diffusion model (DDPM) as the usual single-file implementations write it: a
linear beta schedule (``torch.linspace``, ``torch.cumprod``, ``F.pad``) with ``extract`` gathering
per-timestep coefficients, a sinusoidal time embedding, an MLP denoiser with a time-conditioning
MLP (``nn.SiLU``, ``nn.GroupNorm``), the simple MSE loss on the predicted noise, AdamW with a
cosine schedule, ``clip_grad_norm_``, an exponential moving average of the weights kept with
``torch.no_grad`` and ``lerp_``, and ancestral sampling under ``@torch.no_grad()``. Timesteps and
noise are drawn from numpy instead of torch's RNG, so both runs draw the same. Plain PyTorch: run
it with ``python`` or with ``python -m fjax.mock_torch``; both must print the same losses."""

import argparse
import copy
import json
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def get_parser():
    parser = argparse.ArgumentParser(description="DDPM on a 2-D toy distribution")
    parser.add_argument("--timesteps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--ema-decay", type=float, default=0.9)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    return parser


def linear_beta_schedule(timesteps, beta_start=1e-4, beta_end=0.2):
    return torch.linspace(beta_start, beta_end, timesteps, dtype=torch.float32)


def extract(a, t, x_shape):
    b, *_ = t.shape
    out = a.gather(-1, t)
    return out.reshape(b, *((1,) * (len(x_shape) - 1)))


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        device = x.device
        half_dim = self.dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, device=device) * -emb)
        emb = x[:, None] * emb[None, :]
        emb = torch.cat((emb.sin(), emb.cos()), dim=-1)
        return emb


class Block(nn.Module):
    def __init__(self, dim, time_dim):
        super().__init__()
        self.norm = nn.GroupNorm(4, dim)
        self.proj = nn.Linear(dim, dim)
        self.time_mlp = nn.Sequential(nn.SiLU(), nn.Linear(time_dim, dim * 2))

    def forward(self, x, time_emb):
        scale, shift = self.time_mlp(time_emb).chunk(2, dim=1)
        h = self.norm(x)
        h = h * (scale + 1) + shift
        return x + self.proj(F.silu(h))


class Denoiser(nn.Module):
    def __init__(self, data_dim=2, dim=32, depth=2):
        super().__init__()
        time_dim = dim * 2
        self.time_mlp = nn.Sequential(
            SinusoidalPosEmb(dim),
            nn.Linear(dim, time_dim),
            nn.GELU(),
            nn.Linear(time_dim, time_dim),
        )
        self.init_proj = nn.Linear(data_dim, dim)
        self.blocks = nn.ModuleList([Block(dim, time_dim) for _ in range(depth)])
        self.final = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, data_dim))

    def forward(self, x, time):
        t = self.time_mlp(time)
        h = self.init_proj(x)
        for block in self.blocks:
            h = block(h, t)
        return self.final(h)


class GaussianDiffusion(nn.Module):
    def __init__(self, model, timesteps):
        super().__init__()
        self.model = model
        self.num_timesteps = timesteps
        betas = linear_beta_schedule(timesteps)
        alphas = 1.0 - betas
        alphas_cumprod = torch.cumprod(alphas, dim=0)
        alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.0)

        self.register_buffer("betas", betas)
        self.register_buffer("alphas_cumprod", alphas_cumprod)
        self.register_buffer("sqrt_alphas_cumprod", torch.sqrt(alphas_cumprod))
        self.register_buffer("sqrt_one_minus_alphas_cumprod", torch.sqrt(1.0 - alphas_cumprod))
        self.register_buffer("sqrt_recip_alphas", torch.sqrt(1.0 / alphas))
        posterior_variance = betas * (1.0 - alphas_cumprod_prev) / (1.0 - alphas_cumprod)
        self.register_buffer("posterior_log_variance_clipped", torch.log(posterior_variance.clamp(min=1e-20)))

    def q_sample(self, x_start, t, noise):
        return (
            extract(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start
            + extract(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise
        )

    def p_losses(self, x_start, t, noise):
        x_noisy = self.q_sample(x_start=x_start, t=t, noise=noise)
        predicted_noise = self.model(x_noisy, t.float())
        return F.mse_loss(predicted_noise, noise)

    def forward(self, x, t, noise):
        return self.p_losses(x, t, noise)

    @torch.no_grad()
    def p_sample(self, x, t, t_index, noise):
        betas_t = extract(self.betas, t, x.shape)
        sqrt_one_minus_alphas_cumprod_t = extract(self.sqrt_one_minus_alphas_cumprod, t, x.shape)
        sqrt_recip_alphas_t = extract(self.sqrt_recip_alphas, t, x.shape)
        model_mean = sqrt_recip_alphas_t * (x - betas_t * self.model(x, t.float()) / sqrt_one_minus_alphas_cumprod_t)
        if t_index == 0:
            return model_mean
        model_log_variance = extract(self.posterior_log_variance_clipped, t, x.shape)
        return model_mean + (0.5 * model_log_variance).exp() * noise

    @torch.no_grad()
    def sample(self, noises):
        x = noises[0]
        b = x.shape[0]
        for i in reversed(range(len(noises) - 1)):
            t = torch.full((b,), i, dtype=torch.long)
            x = self.p_sample(x, t, i, noises[i + 1])
        return x


def two_moons(rng, n):
    theta = rng.uniform(0, np.pi, size=n)
    which = rng.randint(0, 2, size=n)
    x = np.where(which, 1 - np.cos(theta), np.cos(theta))
    y = np.where(which, 0.5 - np.sin(theta), np.sin(theta))
    data = np.stack([x, y], 1) + 0.05 * rng.randn(n, 2)
    return ((data - data.mean(0)) / data.std(0)).astype(np.float32)


def main(steps=10, seed=0, argv=()):
    args = get_parser().parse_args(["--steps", str(steps), "--seed", str(seed), *argv])
    rng = np.random.RandomState(args.seed)
    data = torch.from_numpy(two_moons(rng, 4 * args.batch_size))
    loader = DataLoader(TensorDataset(data), batch_size=args.batch_size, shuffle=False, drop_last=True)
    timesteps_bank = torch.from_numpy(rng.randint(0, args.timesteps, size=(args.steps, args.batch_size)))
    noise_bank = torch.from_numpy(rng.randn(args.steps, args.batch_size, 2).astype(np.float32))

    model = Denoiser(data_dim=2, dim=args.dim)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                bound = 1.0 / math.sqrt(p.shape[1])
                p.copy_(torch.from_numpy(rng.uniform(-bound, bound, size=tuple(p.shape)).astype(np.float32)))
            elif name.endswith("bias"):
                p.copy_(torch.from_numpy(rng.uniform(-0.1, 0.1, size=tuple(p.shape)).astype(np.float32)))
    diffusion = GaussianDiffusion(model, args.timesteps)
    ema = copy.deepcopy(diffusion)
    ema.requires_grad_(False)

    optimizer = torch.optim.AdamW(diffusion.parameters(), lr=args.lr, weight_decay=1e-2)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)

    losses = []
    step = 0
    while step < args.steps:
        diffusion.train()
        for (x_start,) in loader:
            t = timesteps_bank[step]
            optimizer.zero_grad(set_to_none=True)
            loss = diffusion(x_start, t, noise_bank[step])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(diffusion.parameters(), max_norm=1.0)
            optimizer.step()
            scheduler.step()
            with torch.no_grad():
                for ema_p, p in zip(ema.parameters(), diffusion.parameters()):
                    ema_p.lerp_(p, 1 - args.ema_decay)
            losses.append(loss.item())
            step += 1
            if step == args.steps:
                break

    ema.eval()
    sample_noise = torch.from_numpy(rng.randn(args.timesteps + 1, 16, 2).astype(np.float32))
    samples = ema.sample(sample_noise)
    losses += [samples.mean().item(), samples.std().item()]
    return losses


if __name__ == "__main__":
    print(json.dumps(main()))
