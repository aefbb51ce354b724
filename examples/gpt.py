"""A small GPT written with fjax.nn exactly as one would in PyTorch, and its nn.Graph training step
(used by gpt_mesh.py, benchmarks/compile_vs_devices.py and the mesh tests)."""

from __future__ import annotations

import fjax
import fjax.nn as nn
import fjax.nn.functional as F
import fjax.optim as optim


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    """Token + position embeddings, pre-norm causal blocks, a tied-free LM head."""

    def __init__(self, vocab: int = 64, dim: int = 32, heads: int = 4, layers: int = 2, max_len: int = 64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(fjax.arange(t))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


class TrainGraph(nn.Graph):
    """One compiled training step of a language model: cross-entropy over every position of
    ``model(idx)``'s logits, backward, AdamW; sharded by ``mesh`` (a MeshConfig or its dict)."""

    def __init__(self, model: nn.Module, lr: float = 1e-3, mesh=None):
        super().__init__()
        self.model = model
        self.add_optimizer(optim.AdamW(model.parameters(), lr=lr))
        if mesh is not None:
            self.config.set_mesh(mesh)

    def build(self, idx, targets):
        logits = self.model(idx)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        return loss


# Megatron-style tensor parallelism for this model: column-parallel qkv/fc1, row-parallel proj/fc2.
TENSOR_PARALLEL = {"column": ["*.qkv", "*.fc1"], "row": ["*.proj", "*.fc2"]}

PRESETS = {
    "dp": {"mesh": {"data": 8}},
    "zero1": {"mesh": {"data": 8}, "zero_stage": 1},
    "zero3": {"mesh": {"data": 8}, "zero_stage": 3},
    "tp": {"mesh": {"data": 2, "model": 4}, "tensor_parallel": TENSOR_PARALLEL},
    "dp_tp": {"mesh": {"data": 4, "model": 2}, "tensor_parallel": TENSOR_PARALLEL, "zero_stage": 1},
}
