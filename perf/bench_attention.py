"""Scaled dot-product attention, forward and forward+backward, float32, causal or not.

Rows: tritongrad's ``F.scaled_dot_product_attention`` (the fused op: on the CPU a blocked
online softmax over BLAS that never holds the T x T scores), the same attention through
tritongrad's composite path (matmul, masked softmax, matmul: the path a mask or dropout
takes), hand-written NumPy materialising the scores (what the composite costs without the
framework), and torch's ``scaled_dot_product_attention`` when installed.

``--layout qkv`` lays the inputs out as a transformer block hands them over (perf/
bench_transformer.py): q, k, v strided (B, H, T, D) views of one (B, T, 3 H D) projection,
the output gradient the transpose of a (B, T, H, D) array, and the gradients taken with
respect to the projection (the split's backward included in tritongrad's and torch's rows;
the NumPy row stops at q, k, v).

    python perf/bench_attention.py [--device cpu|cuda] [--shapes B,H,T,D ...] [--causal]
                                   [--layout contiguous|qkv]
"""

from __future__ import annotations

import argparse
import math

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch

SHAPES = ("4,8,256,64", "1,8,1024,64", "1,4,2048,64")


def numpy_attention(q, k, v, causal, g=None):
    """The attention and, given ``g``, its gradients, with the whole score matrix."""
    scale = 1 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(0, 1, 3, 2) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    out = p @ v
    if g is None:
        return out
    dv = p.transpose(0, 1, 3, 2) @ g
    dp = g @ v.transpose(0, 1, 3, 2)
    ds = p * (dp - (g * out).sum(axis=-1, keepdims=True))
    return out, ds @ k * scale, ds.transpose(0, 1, 3, 2) @ q * scale, dv


def _inputs(T, host, layout, device):
    """(q, k, v, g, the tensors gradients are taken for) in framework ``T``."""
    if layout == "qkv":
        qkv, g = host
        b, t, h, d = g.shape
        x = T.tensor(qkv, device=device, requires_grad=True)
        q, k, v = (a.reshape(b, t, h, d).transpose(1, 2) for a in x.split(h * d, dim=2))
        return q, k, v, T.tensor(g, device=device).transpose(1, 2), (x,)
    q, k, v = (T.tensor(a, device=device, requires_grad=True) for a in host[:3])
    return q, k, v, T.tensor(host[3], device=device), (q, k, v)


def _host(shape, layout, rng) -> list:
    b, h, t, d = shape
    if layout == "qkv":
        return [rng.standard_normal((b, t, 3 * h * d)).astype(np.float32),
                rng.standard_normal((b, t, h, d)).astype(np.float32)]
    return [rng.standard_normal((b, h, t, d)).astype(np.float32) for _ in range(4)]


def _host_views(host, layout) -> list:
    """q, k, v, g as (B, H, T, D) NumPy arrays (views for the qkv layout)."""
    if layout != "qkv":
        return host
    qkv, g = host
    b, t, h, d = g.shape
    return [qkv[..., i * h * d:(i + 1) * h * d].reshape(b, t, h, d).transpose(0, 2, 1, 3)
            for i in range(3)] + [g.transpose(0, 2, 1, 3)]


def shape_cases(tg, torch, device, shape, causal, mode, rng, layout="contiguous") -> list:
    """The rows for one (B, H, T, D) and mode ("forward" or "forward+backward")."""
    from tritongrad.nn import _attention
    from tritongrad.nn import functional as F

    t, d = shape[2:]
    raw = _host(shape, layout, rng)
    host = _host_views(raw, layout)
    q, k, v, g, wrt = _inputs(tg, raw, layout, device)
    bias = None
    if causal:
        keep = tg.ones((t, t), device=device).tril().bool()
        bias = _attention._bias_from_mask(keep, tg.float32, keep_where_true=True)
    scale = 1 / math.sqrt(d)
    sync = tg.cuda.synchronize if device != "cpu" else None

    def fused():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def composite():
        return _attention._attend(q, k, v, bias, 0.0, scale)[0]

    def run(fn):
        if mode == "forward":
            def forward():
                with tg.no_grad():
                    fn()
            return forward
        return lambda: tg.autograd.grad(fn(), wrt, g)

    cases = [("tritongrad fused", run(fused), sync),
             ("tritongrad composite", run(composite), sync)]
    if device == "cpu":
        gg = None if mode == "forward" else host[3]
        cases.append(("numpy", lambda: numpy_attention(*host[:3], causal, gg), None))
    if torch is not None:
        dev = "cuda" if device != "cpu" else "cpu"
        tq, tk, tv, tgr, twrt = _inputs(torch, raw, layout, dev)

        def tfwd():
            return torch.nn.functional.scaled_dot_product_attention(tq, tk, tv,
                                                                    is_causal=causal)

        def trun():
            if mode == "forward":
                with torch.no_grad():
                    tfwd()
            else:
                torch.autograd.grad(tfwd(), twrt, tgr)

        cases.append(("torch", trun, torch.cuda.synchronize if dev == "cuda" else None))
    return cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--shapes", nargs="*", default=list(SHAPES))
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--layout", choices=("contiguous", "qkv"), default="contiguous")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    import tritongrad as tg

    if args.device != "cpu" and not tg.cuda.is_available():
        print("no GPU")
        return
    torch = try_torch(args.device)
    rng = np.random.default_rng(0)
    for spec in args.shapes:
        shape = tuple(int(x) for x in spec.split(","))
        for mode in ("forward", "forward+backward"):
            cases = shape_cases(tg, torch, args.device, shape, args.causal, mode, rng,
                                args.layout)
            report(f"attention {mode}, (B, H, T, D) = {shape}, float32, "
                   f"{'causal' if args.causal else 'full'}, {args.layout}, {args.device}",
                   timeit(cases, warmup=2, repeat=args.repeat, interleave=True))


if __name__ == "__main__":
    main()
