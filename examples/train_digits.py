"""Trains an MLP classifier on scikit-learn's handwritten digits: tritongrad's main job.

The data (1797 8x8 images, 10 classes) ships with scikit-learn, so nothing is downloaded.
The model is ``nn.Sequential(Linear, GELU, Dropout, Linear, GELU, Linear)``, trained with
AdamW on cross-entropy, on the GPU when one is present and on the CPU otherwise. The script
prints a progress bar, the held-out accuracy (>= 95%), saves a checkpoint of the state dict
with ``tg.save`` and checks that reloading it gives the same accuracy; ``--plot PATH`` writes
the loss curve as a PNG (with matplotlib when it is installed, else with a small built-in
PNG writer).

    python examples/train_digits.py [--device cpu|cuda] [--epochs 40] [--quick]
                                    [--checkpoint digits_mlp.tg] [--plot loss.png]

scikit-learn is an extra of the examples and tests (``pip install -e ".[test]"``), not a
dependency of tritongrad.
"""

from __future__ import annotations

import argparse
import math
import os
import struct
import sys
import time
import zlib

# The CPU runs multiply small matrices, where BLAS worker threads cost more than they give and
# stall badly when other processes hold the cores: one thread unless the user says otherwise
# (set before NumPy loads its BLAS).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

import tritongrad as tg
from tritongrad import nn, optim
from tritongrad.serialization import load, save


def load_digits_split(test_fraction: float = 0.2, seed: int = 0):
    """(x_train, y_train, x_test, y_test) as NumPy arrays: pixels scaled to [0, 1], a
    stratified split (the same classes' proportions in both parts)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:  # pragma: no cover - the message is the point
        sys.exit("this example needs scikit-learn: pip install scikit-learn "
                 "(or pip install -e '.[test]')")
    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int64)
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        test[idx[:round(len(idx) * test_fraction)]] = True
    return x[~test], y[~test], x[test], y[test]


def build_model(hidden: int = 128) -> nn.Module:
    return nn.Sequential(
        nn.Linear(64, hidden), nn.GELU(), nn.Dropout(0.1),
        nn.Linear(hidden, hidden), nn.GELU(),
        nn.Linear(hidden, 10),
    )


def accuracy(model: nn.Module, x: tg.Tensor, y: np.ndarray) -> float:
    model.eval()
    with tg.no_grad():
        pred = model(x).detach().cpu().numpy().argmax(axis=1)
    model.train()
    return float((pred == y).mean())


class ProgressBar:
    """A plain-text progress bar: redrawn in place on a terminal, one line per epoch
    otherwise (logs, CI)."""

    def __init__(self, total: int, width: int = 30, stream=sys.stdout):
        self.total, self.width, self.stream = total, width, stream
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def update(self, done: int, prefix: str, suffix: str, final: bool = False) -> None:
        if not (self.tty or final):
            return
        filled = int(self.width * done / max(self.total, 1))
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"{prefix} [{bar}] {100 * done // max(self.total, 1):3d}% {suffix}"
        self.stream.write(("\r" if self.tty else "") + line + ("\n" if final else ""))
        self.stream.flush()


def train(device: str | None = None, epochs: int = 40, batch_size: int = 64, lr: float = 1e-2,
          hidden: int = 128, seed: int = 0, checkpoint: str | None = "digits_mlp.tg",
          plot: str | None = None, verbose: bool = True) -> dict:
    """Trains and evaluates; returns {"accuracy", "reloaded_accuracy", "losses", "seconds",
    "device"}."""
    device = device or ("cuda" if tg.cuda.is_available() else "cpu")
    xtr, ytr, xte, yte = load_digits_split(seed=seed)
    tg.manual_seed(seed)
    model = build_model(hidden).to(device)
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    x_test = tg.tensor(xte, device=device)
    rng = np.random.default_rng(seed)
    n = len(ytr)
    steps_per_epoch = math.ceil(n / batch_size)
    total_steps = epochs * steps_per_epoch
    losses: list[float] = []
    if verbose:
        params = sum(p.numel() for p in model.parameters())
        print(f"digits: {n} train / {len(yte)} test images; MLP with {params} parameters on "
              f"{device}")
    t0 = time.perf_counter()
    step = 0
    for epoch in range(epochs):
        bar = ProgressBar(steps_per_epoch)
        order = rng.permutation(n)
        epoch_loss = 0.0
        for b in range(steps_per_epoch):
            # cosine decay of the learning rate over the whole run
            for g in opt.param_groups:
                g["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / total_steps))
            sel = order[b * batch_size:(b + 1) * batch_size]  # batches assembled on the host,
            xb = tg.tensor(xtr[sel], device=device)            # as a DataLoader would
            yb = tg.tensor(ytr[sel], device=device)
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            epoch_loss += losses[-1]
            step += 1
            if verbose:
                bar.update(b + 1, f"epoch {epoch + 1:3d}/{epochs}",
                           f"loss {epoch_loss / (b + 1):.4f}", final=b + 1 == steps_per_epoch)
    seconds = time.perf_counter() - t0
    acc = accuracy(model, x_test, yte)
    result = {"accuracy": acc, "losses": losses, "seconds": seconds, "device": device}
    if verbose:
        print(f"trained {epochs} epochs ({total_steps} steps) in {seconds:.2f} s")
        print(f"held-out accuracy: {100 * acc:.2f}% ({round(acc * len(yte))}/{len(yte)})")
    if checkpoint:
        save(model.state_dict(), checkpoint)
        fresh = build_model(hidden).to(device)
        fresh.load_state_dict(load(checkpoint))
        result["reloaded_accuracy"] = accuracy(fresh, x_test, yte)
        if verbose:
            print(f"checkpoint: {checkpoint} ({os.path.getsize(checkpoint)} bytes); reloaded "
                  f"model's accuracy {100 * result['reloaded_accuracy']:.2f}%")
    if plot:
        how = plot_losses(losses, steps_per_epoch, plot)
        if verbose:
            print(f"loss curve: {plot} ({how})")
    return result


# -- the loss plot -------------------------------------------------------------------------------

def plot_losses(losses: list, steps_per_epoch: int, path: str) -> str:
    """Writes the loss curve (per step, and its per-epoch mean) to ``path`` as a PNG; returns
    which writer was used."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        write_png(path, render_curve(losses, steps_per_epoch))
        return "built-in PNG writer"
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(losses, color="#9ecae1", lw=1, label="batch loss")
    means = _epoch_means(losses, steps_per_epoch)
    ax.plot([(i + 1) * steps_per_epoch - 1 for i in range(len(means))], means, color="#08519c",
            lw=2, label="epoch mean")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy")
    ax.set_yscale("log")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return "matplotlib"


def _epoch_means(losses, steps_per_epoch):
    return [float(np.mean(losses[i:i + steps_per_epoch]))
            for i in range(0, len(losses), steps_per_epoch)]


def render_curve(losses: list, steps_per_epoch: int, width: int = 800,
                 height: int = 450) -> np.ndarray:
    """An RGB image (height, width, 3) of the loss curve on a log scale: light blue per step,
    dark blue per-epoch means, grey grid lines at powers of ten, black axes."""
    img = np.full((height, width, 3), 255, dtype=np.uint8)
    left, right, top, bottom = 50, width - 20, 20, height - 40
    y = np.log10(np.maximum(np.asarray(losses, dtype=np.float64), 1e-12))
    lo, hi = math.floor(y.min()), math.ceil(y.max()) if len(y) else 1
    hi = max(hi, lo + 1)

    def to_px(i, v):
        px = left + (right - left) * (np.asarray(i) / max(len(losses) - 1, 1))
        py = bottom - (bottom - top) * ((np.asarray(v) - lo) / (hi - lo))
        return px, py

    for decade in range(lo, hi + 1):  # grid
        _, py = to_px(0, decade)
        img[round(float(py)), left:right] = (220, 220, 220)
    _polyline(img, *to_px(np.arange(len(y)), y), (158, 202, 225), 1)
    means = np.log10(np.maximum(_epoch_means(losses, steps_per_epoch), 1e-12))
    xs = np.arange(len(means)) * steps_per_epoch + steps_per_epoch - 1
    _polyline(img, *to_px(np.minimum(xs, len(losses) - 1), means), (8, 81, 156), 2)
    img[top:bottom + 1, left - 1:left + 1] = 0  # axes
    img[bottom:bottom + 2, left:right + 1] = 0
    return img


def _polyline(img, xs, ys, color, thickness: int) -> None:
    h, w, _ = img.shape
    for x0, y0, x1, y1 in zip(xs[:-1], ys[:-1], xs[1:], ys[1:]):
        n = int(max(abs(x1 - x0), abs(y1 - y0))) + 2
        px = np.rint(np.linspace(x0, x1, n)).astype(int)
        py = np.rint(np.linspace(y0, y1, n)).astype(int)
        for d in range(thickness):
            img[np.clip(py + d, 0, h - 1), np.clip(px, 0, w - 1)] = color
    if len(xs) == 1:
        img[int(ys[0]), int(xs[0])] = color


def write_png(path: str, rgb: np.ndarray) -> None:
    """Writes an (height, width, 3) uint8 array as an 8-bit RGB PNG (zlib only)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + np.ascontiguousarray(row).tobytes() for row in rgb)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(png)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--checkpoint", default="digits_mlp.tg",
                    help="where to tg.save the trained state dict ('' to skip)")
    ap.add_argument("--plot", default=None, metavar="PATH", help="write the loss curve as a PNG")
    ap.add_argument("--quick", action="store_true",
                    help="a short run for CI (a few seconds on 2 CPU cores, still >= 95%%)")
    args = ap.parse_args(argv)
    epochs, batch = args.epochs, args.batch_size
    if args.quick:
        epochs, batch = 15, 64
    result = train(args.device, epochs, batch, args.lr, args.hidden, args.seed,
                   args.checkpoint or None, args.plot)
    if result["accuracy"] < 0.95:
        print(f"warning: accuracy {100 * result['accuracy']:.2f}% is below 95%", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
