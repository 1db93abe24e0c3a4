"""A long training run that watches memory: does anything grow with the number of steps?

A small classifier (Linear-GELU-LayerNorm-Dropout-Linear, cross-entropy, AdamW, gradient
clipping, a fresh batch every step) trains for ``--steps`` steps on each device asked for.
Every ``--every`` steps one line reports the loss, the process's resident memory, the number
of Python objects the garbage collector tracks and, on CUDA, the caching allocator's allocated
and reserved bytes. At the end: the growth of each figure from the first report after warm-up
to the last, per 1,000 steps; a leak shows as steady growth there, while caches that fill once
do not.

    python perf/soak.py [--device cpu|cuda|all] [--steps 10000] [--every 1000]

A program that measures, not a test: the figures go into docs/reliability.md. On the emulated
CUDA device (TRITONGRAD_EMULATE_CUDA=1, no GPU) every kernel runs in Triton's interpreter:
use fewer steps there.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import time

import _common  # noqa: F401  (sets thread counts before NumPy loads)
from _common import machine

import tritongrad as tg
from tritongrad import nn


def rss_bytes() -> int:
    """The resident set size now (Linux: /proc/self/statm), else the peak from getrusage."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def mib(n: float) -> str:
    return f"{n / 2**20:9.2f}"


def model(device: str) -> nn.Module:
    tg.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.LayerNorm(128), nn.Dropout(0.1),
                         nn.Linear(128, 10)).to(device)


def soak(device: str, steps: int, every: int, batch: int) -> list[dict]:
    """Trains for ``steps`` steps on ``device``; returns one record per report."""
    net = model(device)
    opt = tg.optim.AdamW(net.parameters(), lr=1e-3)
    teacher = tg.randn(64, 10, device=device)
    cuda = device == "cuda"
    records = []
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        x = tg.randn(batch, 64, device=device)
        y = (x @ teacher).argmax(dim=1)
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        if step % every == 0 or step == steps:
            if cuda:
                tg.cuda.synchronize()
            rec = {"step": step, "loss": loss.item(), "rss": rss_bytes(),
                   "objects": len(gc.get_objects()), "s": time.perf_counter() - t0,
                   "allocated": tg.cuda.memory_allocated() if cuda else 0,
                   "reserved": tg.cuda.memory_reserved() if cuda else 0}
            records.append(rec)
            print(f"{device:5s} {step:7d} {rec['loss']:8.4f} {mib(rec['rss'])} "
                  f"{rec['objects']:9d} {mib(rec['allocated'])} {mib(rec['reserved'])} "
                  f"{rec['s']:8.1f}", flush=True)
    return records


def growth(records: list[dict]) -> str:
    """Change per 1,000 steps of each figure from the first report after warm-up to the last
    (the first report is warm-up: caches and compiled kernels fill there)."""
    if len(records) < 3:
        return "too few reports to judge growth (use more steps or a smaller --every)"
    a, b = records[1], records[-1]
    k = 1000 / (b["step"] - a["step"])
    return (f"per 1,000 steps after warm-up: RSS {(b['rss'] - a['rss']) * k / 2**20:+.3f} MiB, "
            f"GC-tracked objects {(b['objects'] - a['objects']) * k:+.1f}, "
            f"CUDA allocated {(b['allocated'] - a['allocated']) * k / 2**20:+.3f} MiB, "
            f"reserved {(b['reserved'] - a['reserved']) * k / 2**20:+.3f} MiB")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="all", choices=["cpu", "cuda", "all"])
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--every", type=int, default=1000)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()
    devices = ["cpu", "cuda"] if args.device == "all" else [args.device]
    if "cuda" in devices and not tg.cuda.is_available():
        print("cuda: not available (no GPU; TRITONGRAD_EMULATE_CUDA=1 selects the emulated one)")
        devices.remove("cuda")
    print(machine(), f"tritongrad {tg.__version__}")
    if tg.cuda.is_available() and "cuda" in devices:
        print("cuda:", tg.cuda.get_device_name(),
              "(emulated: Triton's interpreter)" if tg.cuda.is_emulated() else "")
    print(f"{'dev':5s} {'step':>7s} {'loss':>8s} {'RSS MiB':>9s} {'objects':>9s} "
          f"{'alloc MiB':>9s} {'resv MiB':>9s} {'seconds':>8s}")
    summary = {dev: growth(soak(dev, args.steps, args.every, args.batch)) for dev in devices}
    for dev, line in summary.items():
        print(f"{dev}: {line}")


if __name__ == "__main__":
    main()
