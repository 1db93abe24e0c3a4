"""Forward+backward of a chain of 50 small elementwise ops on a 16x16 tensor.

This measures per-op overhead (the framework, not the arithmetic): at 16x16 every op is a few
hundred nanoseconds of NumPy work. Rows: tritongrad, hand-written NumPy backprop (the floor a
Python framework can approach), and torch when installed.

    python perf/bench_chain.py [--device cpu|cuda]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch

N_OPS, SHAPE = 50, (16, 16)


def chain(x):
    """The op sequence, written once for any framework with +, *, tanh and sigmoid."""
    y = x
    for i in range(N_OPS):
        k = i % 5
        if k == 0:
            y = y * 1.01
        elif k == 1:
            y = y + 0.1
        elif k == 2:
            y = y.tanh()
        elif k == 3:
            y = y.sigmoid()
        else:
            y = y * y
    return y.sum()


def numpy_step(x: np.ndarray) -> np.ndarray:
    """The same chain with hand-written forward and backward in NumPy."""
    saved, y = [], x
    for i in range(N_OPS):
        k = i % 5
        if k == 0:
            y = y * 1.01
        elif k == 1:
            y = y + 0.1
        elif k == 2:
            y = np.tanh(y)
            saved.append(y)
        elif k == 3:
            y = 1.0 / (1.0 + np.exp(-y))
            saved.append(y)
        else:
            saved.append(y)
            y = y * y
    g = np.ones_like(y)
    for i in reversed(range(N_OPS)):
        k = i % 5
        if k == 0:
            g = g * 1.01
        elif k == 2:
            t = saved.pop()
            g = g * (1 - t * t)
        elif k == 3:
            s = saved.pop()
            g = g * s * (1 - s)
        elif k == 4:
            g = g * 2 * saved.pop()
    return g


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    import tritongrad as tg

    rng = np.random.default_rng(0)
    x0 = rng.uniform(-1, 1, SHAPE).astype(np.float32)
    rows = []

    x = tg.tensor(x0, device=args.device, requires_grad=True)
    sync = tg.cuda.synchronize if args.device != "cpu" else None

    def tg_step():
        x.grad = None
        chain(x).backward()

    rows.append(("tritongrad", timeit(tg_step, repeat=50, inner=5, sync=sync)))
    if args.device == "cpu":
        rows.append(("numpy", timeit(lambda: numpy_step(x0), repeat=50, inner=5)))
        np.testing.assert_allclose(x.grad.numpy(), numpy_step(x0), rtol=1e-4, atol=1e-6)
    torch = try_torch()
    if torch is not None:
        dev = "cuda" if args.device != "cpu" else "cpu"
        tx = torch.tensor(x0, device=dev, requires_grad=True)
        tsync = torch.cuda.synchronize if dev == "cuda" else None

        def torch_step():
            tx.grad = None
            chain(tx).backward()

        rows.append(("torch", timeit(torch_step, repeat=50, inner=5, sync=tsync)))
    report(f"{N_OPS}-op elementwise chain on {SHAPE[0]}x{SHAPE[1]}, forward+backward, "
           f"{args.device}", rows)


if __name__ == "__main__":
    main()
