"""Trains a 2-layer MLP with plain gradient descent: the walking skeleton's end-to-end job.

Runs on the GPU when one is present (``--device cuda``) and on the CPU otherwise, and prints
the loss falling. The data is synthetic (a fixed random teacher network), so the run needs no
download and the same seed gives the same losses on both devices (to float32 tolerance).

    python examples/train_mlp.py [--device cpu|cuda] [--steps 200]
"""

from __future__ import annotations

import argparse
import time

import tritongrad as tg


def make_data(n: int, d_in: int, d_out: int, device):
    tg.manual_seed(0)
    x = tg.randn(n, d_in)
    teacher = tg.randn(d_in, d_out) * (1.0 / d_in ** 0.5)
    y = (x @ teacher).relu() + 0.1 * x[:, :d_out]
    return x.to(device), y.to(device)


def init_params(d_in: int, hidden: int, d_out: int, device):
    tg.manual_seed(1)
    w1 = (tg.randn(d_in, hidden) * (2.0 / d_in) ** 0.5).to(device).requires_grad_()
    b1 = tg.zeros(hidden, device=device, requires_grad=True)
    w2 = (tg.randn(hidden, d_out) * (1.0 / hidden) ** 0.5).to(device).requires_grad_()
    b2 = tg.zeros(d_out, device=device, requires_grad=True)
    return [w1, b1, w2, b2]


def forward(params, x):
    w1, b1, w2, b2 = params
    return (x @ w1 + b1).relu() @ w2 + b2


def train(device: str = "cpu", steps: int = 200, lr: float = 0.1, log_every: int = 20,
          verbose: bool = True) -> list[float]:
    """Returns the loss at every step."""
    x, y = make_data(512, 16, 4, device)
    params = init_params(16, 64, 4, device)
    losses = []
    t0 = time.perf_counter()
    for step in range(steps):
        diff = forward(params, x) - y
        loss = (diff * diff).mean()
        loss.backward()
        with tg.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None
        losses.append(loss.item())
        if verbose and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.6f}")
    if verbose:
        print(f"{steps} steps on {device} in {time.perf_counter() - t0:.2f} s; loss "
              f"{losses[0]:.4f} -> {losses[-1]:.4f}")
    return losses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if tg.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()
    train(args.device, args.steps, args.lr)


if __name__ == "__main__":
    main()
