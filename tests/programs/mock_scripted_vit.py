"""A tiny vision transformer written as model zoos write one: TorchScript-friendly helpers
(``@torch.jit.script`` functions, ``torch.jit.is_scripting()`` branches, ``@torch.jit.ignore`` and
``@torch.jit.unused`` methods, ``torch.jit.Final`` constants), ``torch._assert`` on input shapes,
a version gate on ``torch.__version__`` that picks ``F.scaled_dot_product_attention`` under
``torch.nn.attention.sdpa_kernel``, ``torch.utils.hooks.RemovableHandle`` for a module's own hook
table, and the model traced with ``torch.jit.trace`` before training. Plain PyTorch: run it with
``python`` or with ``python -m fjax.mock_torch``; both must print the same losses."""

import argparse
import collections
import json
import warnings

import numpy as np
import torch
import torch.jit
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.hooks
from torch.nn.attention import SDPBackend, sdpa_kernel

_HAS_SDPA = torch.__version__ >= (2, 0)


def get_parser():
    parser = argparse.ArgumentParser(description="scripted ViT on random patches")
    parser.add_argument("--image", type=int, default=8)
    parser.add_argument("--patch", type=int, default=4)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--batch", type=int, default=6)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    return parser


@torch.jit.script
def bias_gelu(bias: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = bias + y
    return x * 0.5 * (1.0 + torch.erf(x * 0.70710678))


class Attention(nn.Module):
    fused_attn: torch.jit.Final[bool]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.fused_attn = _HAS_SDPA
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.fused_attn:
            with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
                x = F.scaled_dot_product_attention(q, k, v)
        else:
            x = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1) @ v
        return self.proj(x.transpose(1, 2).reshape(b, n, c))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim, bias=False)
        self.fc1_bias = nn.Parameter(torch.zeros(2 * dim))
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(bias_gelu(self.fc1_bias, self.fc1(self.norm2(x))))


class ViT(nn.Module):
    def __init__(self, image, patch, dim, heads, classes):
        super().__init__()
        self.patch = patch
        self.embed = nn.Conv2d(1, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.zeros(1, 1 + (image // patch) ** 2, dim))
        self.blocks = nn.Sequential(Block(dim, heads), Block(dim, heads))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)
        self._taps = collections.OrderedDict()

    def add_tap(self, fn):
        handle = torch.utils.hooks.RemovableHandle(self._taps)
        self._taps[handle.id] = fn
        return handle

    @torch.jit.ignore
    def no_weight_decay(self):
        return {"pos", "cls"}

    @torch.jit.unused
    def describe(self):
        return f"ViT with {len(self.blocks)} blocks"

    def forward(self, x):
        torch._assert(x.shape[-1] % self.patch == 0, "image width must be a multiple of the patch")
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        if torch.jit.is_scripting() or torch.jit.is_tracing():
            x = self.blocks(x)
        else:
            for block in self.blocks:
                x = block(x)
        for tap in self._taps.values():
            tap(x)
        return self.head(self.norm(x[:, 0]))


def main(steps=10, seed=0, argv=()):
    args = get_parser().parse_args(["--steps", str(steps), "--seed", str(seed), *argv])
    rng = np.random.RandomState(args.seed)
    model = ViT(args.image, args.patch, args.dim, args.heads, args.classes)
    for p in model.parameters():
        p.data.copy_(torch.from_numpy(rng.normal(0, 0.2, size=tuple(p.shape)).astype(np.float32)))
    images = torch.from_numpy(rng.normal(size=(args.batch, 1, args.image, args.image)).astype(np.float32))
    labels = torch.from_numpy(rng.randint(0, args.classes, size=args.batch).astype(np.int64))
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)  # (torch._assert's Python bool)
    traced = torch.jit.trace(model, (images[:2],))
    decay = [p for n, p in model.named_parameters() if n not in model.no_weight_decay()]
    rest = [p for n, p in model.named_parameters() if n in model.no_weight_decay()]
    opt = torch.optim.AdamW([{"params": decay}, {"params": rest, "weight_decay": 0.0}], lr=args.lr)
    losses = []
    for _ in range(args.steps):
        loss = F.cross_entropy(traced(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    norms = []
    handle = model.add_tap(lambda x: norms.append(float(x.detach().norm())))
    with torch.no_grad():
        model(images)
        handle.remove()
        model(images)
    return losses + norms + [float(len(norms))]


if __name__ == "__main__":
    print(json.dumps(main()))
