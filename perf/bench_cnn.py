"""One training step of the digits CNN: forward, label-smoothed cross-entropy, backward,
gradient clipping, SGD with Nesterov momentum and weight decay.

The network and the step of examples/train_digits_cnn.py (conv 1->16, 16->32, max-pool, 32->64,
each with BatchNorm2d and ReLU, global average pool, dropout, linear 64->10) on a batch of 64
8x8 images, written once (``build`` below) for any module with PyTorch's API, so tritongrad
and torch (when installed) run the same program. Where oneDNN is installed (kernels/numpy/
onednn.py), a third row runs tritongrad with its convolutions on the NumPy path
(``TRITONGRAD_ONEDNN=off``), taking turns with the others in the same process.
``--channels-last`` runs the model and its input in ``torch.channels_last`` memory format
(convolutions, batch norm and pooling then give channels-last results and gradients in both
libraries). ``--profile`` prints tritongrad's profiler table.

    python perf/bench_cnn.py [--device cpu|cuda] [--batch 64] [--channels-last] [--profile]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch


def build(T, device: str, batch: int, channels_last: bool = False):
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
    if channels_last:
        model.to(memory_format=T.channels_last)
        x = x.to(memory_format=T.channels_last)
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
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    from tritongrad.kernels.numpy import onednn

    import tritongrad as tg

    cpu = args.device == "cpu"
    lib = onednn.provider() if cpu else None
    sync = None if cpu else tg.cuda.synchronize
    config = (args.device, args.batch, args.channels_last)
    cases = [("tritongrad", build(tg, *config)[1], sync)]
    if lib is not None:
        numpy_step = build(tg, *config)[1]

        def numpy_convs():
            with onednn.use("off"):
                return numpy_step()

        cases.append(("tritongrad, NumPy convs", numpy_convs, None))
    torch = try_torch(args.device)
    if torch is not None:
        cases.append(("torch", build(torch, *config)[1],
                      None if cpu else torch.cuda.synchronize))
    rows = timeit(cases, warmup=3, repeat=args.repeat, interleave=cpu)
    report(f"digits CNN training step (3 conv + BatchNorm2d layers, batch {args.batch} of 8x8, "
           f"SGD Nesterov), {args.device}"
           + (", channels_last" if args.channels_last else "")
           + (f", oneDNN {'.'.join(map(str, lib.version))}" if lib is not None else ""), rows)
    if args.profile:
        with tg.autograd.profiler.profile() as prof:
            cases[0][1]()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))


if __name__ == "__main__":
    main()
