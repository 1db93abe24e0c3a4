"""One training step of the digits CNN: forward, label-smoothed cross-entropy, backward,
gradient clipping, SGD with Nesterov momentum and weight decay.

The network and the step of examples/train_digits_cnn.py (conv 1->16, 16->32, max-pool, 32->64,
each with BatchNorm2d and ReLU, global average pool, dropout, linear 64->10) on a batch of 64
8x8 images, written once (``build`` below) for any module with PyTorch's API, so tritongrad
and torch (when installed) run the same program. ``--profile`` prints tritongrad's profiler
table.

    python perf/bench_cnn.py [--device cpu|cuda] [--batch 64] [--profile]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import compare_steps


def build(T, device: str, batch: int):
    """(model, step) for framework ``T`` (tritongrad or torch)."""
    nn = T.nn

    class DigitsCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 3, padding="same"), nn.BatchNorm2d(64), nn.ReLU(),
                nn.AdaptiveAvgPool2d(1),
            )
            self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.1), nn.Linear(64, 10))

        def forward(self, x):
            return self.head(self.features(x))

    T.manual_seed(0)
    model = DigitsCNN().to(device)
    opt = T.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                      weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
    rng = np.random.default_rng(0)
    x = T.tensor(rng.random((batch, 1, 8, 8), dtype=np.float32) * 16, device=device)
    y = T.tensor(rng.integers(0, 10, batch), device=device)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
        opt.step()
        return loss

    return model, step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    compare_steps(f"digits CNN training step (3 conv + BatchNorm2d layers, batch {args.batch} "
                  f"of 8x8, SGD Nesterov)", lambda T: build(T, args.device, args.batch)[1],
                  args.device, args.repeat, args.profile)


if __name__ == "__main__":
    main()
