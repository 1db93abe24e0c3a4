"""Forward and backward of one 2-D convolution layer (x, weight and bias all need gradients).

Rows per shape: tritongrad's fused op (nn.functional.conv2d: the kernel contract's conv2d and
conv2d_backward; on the CPU oneDNN where it is installed and takes the layer, else im2col over
BLAS), the same with oneDNN off (the NumPy path; where oneDNN is installed), the im2col
composite it replaced (index_select + matmul, differentiated op by op), the same layer
hand-written in NumPy (sliding_window_view + tensordot forward, tensordot + a per-tap col2im
backward: no framework at all), and torch when installed. float32; one BLAS thread unless
BENCH_THREADS says otherwise; on the CPU the rows take turns (interleaved), so the machine's
drift reaches them alike.

    python perf/bench_conv.py [--device cpu|cuda] [--repeat 20]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch
from numpy.lib.stride_tricks import sliding_window_view

# (name, N, C, H, W, O, K, stride, padding, groups)
SHAPES = [
    ("digits CNN conv2 16->32 8x8", 64, 16, 8, 8, 32, 3, 1, 1, 1),
    ("3x3 64->64 28x28", 16, 64, 28, 28, 64, 3, 1, 1, 1),
    ("3x3 stride 2 32->64 32x32", 16, 32, 32, 32, 64, 3, 2, 1, 1),
    ("depthwise 3x3 64 28x28", 16, 64, 28, 28, 64, 3, 1, 1, 64),
]


def numpy_layer(x, w, b, g, stride, pad, groups):
    """Forward and the three gradients of one convolution, by hand (one BLAS call per
    group each way)."""
    o, cg, k, _ = w.shape
    og = o // groups
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    oh, ow = win.shape[2:4]
    ys, dws, dcol = [], [], []
    for gi in range(groups):
        cols = win[:, gi * cg:(gi + 1) * cg]                     # (N, cg, OH, OW, k, k)
        wg = w[gi * og:(gi + 1) * og]                              # (og, cg, k, k)
        ys.append(np.tensordot(cols, wg, axes=([1, 4, 5], [1, 2, 3])))  # (N, OH, OW, og)
        gg = g[:, gi * og:(gi + 1) * og]
        dws.append(np.tensordot(gg, cols, axes=([0, 2, 3], [0, 2, 3])))  # (og, cg, k, k)
        dcol.append(np.tensordot(gg, wg, axes=([1], [0])))       # (N, OH, OW, cg, k, k)
    y = np.concatenate(ys, axis=3).transpose(0, 3, 1, 2) + b.reshape(1, -1, 1, 1)
    dw = np.concatenate(dws, axis=0)
    dcols = np.concatenate(dcol, axis=3)
    dxp = np.zeros_like(xp)
    for i in range(k):
        for j in range(k):
            dxp[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride] += (
                dcols[..., i, j].transpose(0, 3, 1, 2))
    dx = dxp[:, :, pad:pad + x.shape[2], pad:pad + x.shape[3]]
    return y, dx, dw, g.sum((0, 2, 3))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    from tritongrad.kernels.numpy import onednn
    from tritongrad.nn import _convolution
    from tritongrad.nn import functional as F

    import tritongrad as tg

    torch = try_torch(args.device)
    dev = args.device
    sync = tg.cuda.synchronize if dev == "cuda" else None
    rng = np.random.default_rng(0)
    for name, n, c, h, wd, o, k, stride, pad, groups in SHAPES:
        x0 = rng.standard_normal((n, c, h, wd)).astype(np.float32)
        w0 = (rng.standard_normal((o, c // groups, k, k)) * 0.1).astype(np.float32)
        b0 = rng.standard_normal(o).astype(np.float32)
        oh = (h + 2 * pad - k) // stride + 1
        ow = (wd + 2 * pad - k) // stride + 1
        g0 = rng.standard_normal((n, o, oh, ow)).astype(np.float32)
        x, w, b = (tg.tensor(a, device=dev, requires_grad=True) for a in (x0, w0, b0))
        g = tg.tensor(g0, device=dev)

        def step(fn, x=x, w=w, b=b, g=g, stride=stride, pad=pad, groups=groups):
            x.grad = w.grad = b.grad = None
            fn(x, w, b, stride, pad, 1, groups).backward(g)

        def composite(x, w, b, s, p, d, gr):
            return _convolution._conv(x, w, b, s, p, d, gr, 2, "conv2d", fused=False)

        def numpy_convs(step=step):
            with onednn.use("off"):  # (forward and backward)
                step(F.conv2d)

        cases = [("tritongrad fused", lambda: step(F.conv2d), sync)]
        if dev == "cpu" and onednn.provider() is not None:
            cases.append(("fused, oneDNN off", numpy_convs, None))
        cases.append(("im2col composite", lambda: step(composite), sync))
        if dev == "cpu":
            cases.append(("numpy by hand", lambda x0=x0, w0=w0, b0=b0, g0=g0, s=stride, p=pad,
                          gr=groups: numpy_layer(x0, w0, b0, g0, s, p, gr), None))
        if torch is not None and (dev == "cpu" or torch.cuda.is_available()):
            tdev = "cuda" if dev == "cuda" else "cpu"
            tx, tw, tb = (torch.tensor(a, device=tdev, requires_grad=True) for a in (x0, w0, b0))
            tg_ = torch.tensor(g0, device=tdev)

            def torch_step(tx=tx, tw=tw, tb=tb, tg_=tg_, s=stride, p=pad, gr=groups):
                tx.grad = tw.grad = tb.grad = None
                torch.nn.functional.conv2d(tx, tw, tb, s, p, 1, gr).backward(tg_)

            cases.append(("torch", torch_step,
                          torch.cuda.synchronize if tdev == "cuda" else None))
        rows = timeit(cases, warmup=2, repeat=args.repeat, interleave=dev == "cpu")
        report(f"conv2d forward + backward, {name}: x {(n, c, h, wd)} w {(o, c // groups, k, k)}"
               f" stride {stride} padding {pad} groups {groups}, float32, {dev}", rows)


if __name__ == "__main__":
    main()
