"""flex_attention's eager form, float32 forward: causal and sliding-window block masks, and a
relative-position score_mod.

Rows: tritongrad's ``flex_attention`` (Note [flex_attention, eagerly]: the whole score matrix,
the mask and score functions applied once over broadcasting index tensors), torch's eager
``flex_attention`` when installed (its "math" form, the functions under vmap; torch warns it
is unfused), tritongrad's ``scaled_dot_product_attention(is_causal=True)`` for the causal
mask (the fused op: what the same attention costs without a mask function), and hand-written
NumPy with the mask as a boolean array. Forward only: torch's eager flex_attention has no CPU
backward.

    python perf/bench_flex_attention.py [--shapes B,H,T,D ...]
"""

from __future__ import annotations

import argparse
import math
import warnings

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch

SHAPES = ("4,8,256,64", "1,8,1024,64")


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def window(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx).abs() <= 64


def relative(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx) * 0.01


def numpy_attention(q, k, v, keep, bias=None):
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    if bias is not None:
        s = s + bias
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def cases_for(tg, torch, shape, kind, rng) -> list:
    from tritongrad.nn.attention import flex_attention as flex

    b, h, t, d = shape
    host = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    q, k, v = (tg.tensor(a) for a in host)
    mask_mod = {"causal": causal, "window": window, "relative": None}[kind]
    score_mod = relative if kind == "relative" else None
    bm = flex.create_block_mask(mask_mod, None, None, t, t, device="cpu") if mask_mod else None
    pos = np.arange(t)
    keep = {"causal": pos[:, None] >= pos[None, :],
            "window": np.abs(pos[:, None] - pos[None, :]) <= 64, "relative": None}[kind]
    bias = ((pos[:, None] - pos[None, :]) * 0.01).astype(np.float32) if score_mod else None

    def ours():
        with tg.no_grad():
            flex.flex_attention(q, k, v, score_mod=score_mod, block_mask=bm)

    rows = [("tritongrad flex_attention", ours, None)]
    if torch is not None:
        from torch.nn.attention import flex_attention as tflex
        tq, tk, tv = (torch.tensor(a) for a in host)
        tbm = tflex.create_block_mask(mask_mod, None, None, t, t, device="cpu") \
            if mask_mod else None

        def theirs():
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tflex.flex_attention(tq, tk, tv, score_mod=score_mod, block_mask=tbm)
        rows.append(("torch flex_attention", theirs, None))
    if kind == "causal":
        def sdpa():
            with tg.no_grad():
                tg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        rows.append(("tritongrad sdpa causal", sdpa, None))
    rows.append(("numpy", lambda: numpy_attention(*host, keep, bias), None))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES))
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    import tritongrad as tg
    torch = try_torch()
    rng = np.random.default_rng(0)
    for text in args.shapes:
        shape = tuple(int(n) for n in text.split(","))
        for kind in ("causal", "window", "relative"):
            rows = timeit(cases_for(tg, torch, shape, kind, rng), warmup=2,
                          repeat=args.repeat, interleave=True)
            report(f"flex_attention forward, {kind}, (B, H, T, D) = {shape}, float32", rows)


if __name__ == "__main__":
    main()
