"""``python -m fjax``: version, devices, and a small model trained eagerly with a progress bar."""

from __future__ import annotations

import time

import jax
from tqdm import tqdm

import fjax


def train_mlp(steps: int = 300, lr: float = 0.05) -> list[float]:
    """Fit y = sin(3x) . w with a 2-layer MLP in eager mode (tape autograd + SGD)."""
    fjax.manual_seed(0)
    x = fjax.randn(256, 8)
    y = (x * 3).sin() @ fjax.randn(8, 1)
    w1 = (fjax.randn(8, 64) / 8**0.5).requires_grad_()
    w2 = (fjax.randn(64, 1) / 8).requires_grad_()
    losses = []
    for _ in (bar := tqdm(range(steps), desc="eager MLP", unit="step")):
        loss = (((x @ w1).tanh() @ w2 - y) ** 2).mean()
        loss.backward()
        with fjax.no_grad():
            for w in (w1, w2):
                w -= lr * w.grad
                w.grad = None
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
    return losses


def main() -> None:
    print(f"fjax {fjax.__version__} on jax {jax.__version__}; devices: {[str(d) for d in jax.devices()]}")
    start = time.perf_counter()
    losses = train_mlp()
    print(
        f"eager MLP: loss {losses[0]:.4f} -> {losses[-1]:.4f} in {len(losses)} steps "
        f"({time.perf_counter() - start:.1f} s including compilation)"
    )


if __name__ == "__main__":
    main()
