"""Forward and backward of one 2-D average pool (the input needs its gradient).

Rows per shape: tritongrad's fused node (``AvgPool2DBackward0``: on the CPU the compiled
loops of kernels/numpy/pool.py, each way), the composite the other devices run (im2col on the
zero padded input, a sum over the taps and a divide, differentiated op by op), the same pool
hand-written in NumPy (sliding_window_view sums forward, a per-tap add backward: no framework
at all), and torch when installed. float32; one BLAS thread unless BENCH_THREADS says
otherwise; on the CPU the rows take turns (interleaved), so the machine's drift reaches them
alike.

    python perf/bench_pool.py [--device cpu|cuda] [--repeat 20]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch
from numpy.lib.stride_tricks import sliding_window_view

# (name, N, C, H, W, kernel, stride, padding): count_include_pad as PyTorch's default
SHAPES = [
    ("3x3 stride 2 pad 1, a ResNet stem's size", 32, 64, 56, 56, 3, 2, 1),
    ("3x3 stride 1 pad 1", 8, 16, 16, 16, 3, 1, 1),
    ("2x2 stride 2", 64, 16, 16, 16, 2, 2, 0),
    ("3x3 stride 2 pad 1, tiny (host cost)", 2, 3, 8, 8, 3, 2, 1),
]


def numpy_pool(x, g, k, stride, pad):
    """Forward and input gradient of one average pool (count_include_pad), by hand."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    y = win.sum((4, 5)) / (k * k)
    oh, ow = y.shape[2:]
    share = g / (k * k)
    dxp = np.zeros_like(xp)
    for i in range(k):
        for j in range(k):
            rows, cols = slice(i, i + stride * (oh - 1) + 1, stride), \
                slice(j, j + stride * (ow - 1) + 1, stride)
            dxp[:, :, rows, cols] += share
    return y, dxp[:, :, pad:pad + x.shape[2], pad:pad + x.shape[3]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    from tritongrad.nn import _convolution
    from tritongrad.nn import functional as F

    import tritongrad as tg

    torch = try_torch(args.device)
    dev = args.device
    sync = tg.cuda.synchronize if dev == "cuda" else None
    rng = np.random.default_rng(0)
    for name, n, c, h, wd, k, stride, pad in SHAPES:
        x0 = rng.standard_normal((n, c, h, wd)).astype(np.float32)
        oh, ow = ((h + 2 * pad - k) // stride + 1), ((wd + 2 * pad - k) // stride + 1)
        g0 = rng.standard_normal((n, c, oh, ow)).astype(np.float32)
        x = tg.tensor(x0, device=dev, requires_grad=True)
        g = tg.tensor(g0, device=dev)

        def step(fn, x=x, g=g, k=k, stride=stride, pad=pad):
            x.grad = None
            fn(x, k, stride, pad).backward(g)

        def composite(x, k, s, p):
            return _convolution._avg_pool(x, k, s, p, False, True, None, 2, "avg_pool2d",
                                          fused=False)

        cases = [("tritongrad fused", lambda: step(F.avg_pool2d), sync),
                 ("im2col composite", lambda: step(composite), sync)]
        if dev == "cpu":
            cases.append(("numpy by hand", lambda x0=x0, g0=g0, k=k, s=stride, p=pad:
                          numpy_pool(x0, g0, k, s, p), None))
        if torch is not None and (dev == "cpu" or torch.cuda.is_available()):
            tdev = "cuda" if dev == "cuda" else "cpu"
            tx = torch.tensor(x0, device=tdev, requires_grad=True)
            tg_ = torch.tensor(g0, device=tdev)

            def torch_step(tx=tx, tg_=tg_, k=k, s=stride, p=pad):
                tx.grad = None
                torch.nn.functional.avg_pool2d(tx, k, s, p).backward(tg_)

            cases.append(("torch", torch_step,
                          torch.cuda.synchronize if tdev == "cuda" else None))
        rows = timeit(cases, warmup=2, repeat=args.repeat, interleave=dev == "cpu")
        report(f"avg_pool2d forward + backward, {name}: x {(n, c, h, wd)} kernel {k} stride "
               f"{stride} padding {pad}, float32, {dev}", rows)


if __name__ == "__main__":
    main()
