"""Trains an MLP classifier on scikit-learn's handwritten digits: tritongrad's main job.

The data (1797 8x8 images, 10 classes) ships with scikit-learn, so nothing is downloaded.
The model is ``nn.Sequential(Linear, GELU, Dropout, Linear, GELU, Linear)``, trained with
AdamW on cross-entropy, on the GPU when one is present and on the CPU otherwise. The script
shows a tqdm progress bar per epoch (one plain line per epoch when tqdm is not installed),
prints the held-out accuracy (>= 95%), saves a checkpoint of the state dict with ``tg.save``
and checks that reloading it gives the same accuracy; ``--plot PATH`` draws the loss curve
with matplotlib into a PNG (without matplotlib, ``--plot`` stops with a message and exit
status 2 before training).

    python examples/train_digits.py [--device cpu|cuda] [--epochs 40] [--quick]
                                    [--checkpoint digits_mlp.tg] [--plot loss.png]

scikit-learn, tqdm and matplotlib are extras of the examples and tests
(``pip install -e ".[test]"``), not dependencies of tritongrad.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

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


def _tqdm():
    """tqdm's progress bar class, or None when tqdm is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


class EpochProgress:
    """One epoch's progress: a tqdm bar (redrawn in place on a terminal, its final state left
    as the epoch's line), or without tqdm one plain line at the end of the epoch."""

    def __init__(self, total: int, desc: str):
        self.desc, self.total, self.done, self.suffix = desc, total, 0, ""
        tqdm = _tqdm()
        if tqdm is None:
            self.bar = None
            return
        # "epoch   3/40 [#####...] 100%, loss 0.1234". Written to a file or pipe (logs, CI),
        # the bar is drawn only at its start and end, not every 0.1 s.
        tty = hasattr(sys.stdout, "isatty") and sys.stdout.isatty()
        self.bar = tqdm(total=total, desc=desc, file=sys.stdout, leave=True,
                        mininterval=0.1 if tty else math.inf,
                        bar_format="{desc} [{bar:30}] {percentage:3.0f}%{postfix}")

    def update(self, suffix: str) -> None:
        self.done += 1
        self.suffix = suffix
        if self.bar is not None:
            self.bar.set_postfix_str(suffix, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        else:
            print(f"{self.desc} [{self.done}/{self.total} steps] {self.suffix}", flush=True)


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
        if _tqdm() is None:
            print("(tqdm is not installed: one line per epoch; pip install tqdm for a progress "
                  "bar)")
    t0 = time.perf_counter()
    step = 0
    for epoch in range(epochs):
        bar = EpochProgress(steps_per_epoch, f"epoch {epoch + 1:3d}/{epochs}") if verbose \
            else None
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
            if bar is not None:
                bar.update(f"loss {epoch_loss / (b + 1):.4f}")
        if bar is not None:
            bar.close()
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
        plot_losses(losses, steps_per_epoch, plot)
        if verbose:
            print(f"loss curve: {plot}")
    return result


# -- the loss plot -------------------------------------------------------------------------------

MATPLOTLIB_MISSING = ("--plot needs matplotlib, which is not installed: pip install matplotlib "
                      "(or pip install -e '.[test]'), or leave out --plot")


def _pyplot():
    """matplotlib's pyplot on the file-only Agg backend, or ImportError with the fix."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(MATPLOTLIB_MISSING) from None
    return plt


def plot_losses(losses: list, steps_per_epoch: int, path: str) -> None:
    """Writes the loss curve (per step, and its per-epoch mean) to ``path`` as a PNG, with
    matplotlib (ImportError naming the fix when it is missing)."""
    plt = _pyplot()
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
    fig.savefig(path, format="png")
    plt.close(fig)


def _epoch_means(losses, steps_per_epoch):
    return [float(np.mean(losses[i:i + steps_per_epoch]))
            for i in range(0, len(losses), steps_per_epoch)]


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
    if args.plot:
        try:  # checked before training, not after minutes of it
            _pyplot()
        except ImportError as e:
            ap.error(str(e))  # exit status 2, with the usage line
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
