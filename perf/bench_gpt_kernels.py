"""The CPU kernels of the GPT training step (perf/bench_transformer.py), one by one, at the
step's shapes: exact GELU forward/backward on (1024, 512), layer norm forward/backward on
(1024, 128), causal attention forward/backward on (16, 4, 64, 32), all float32.

    python perf/bench_gpt_kernels.py [--repeat N]

tritongrad rows time the NumPy kernels (``tritongrad.kernels.numpy``) alone; torch rows (when
installed) time torch's ops on the same arrays, forward and forward + backward through its
autograd (torch has no public kernel-only entry point for the backward), so compare each
tritongrad fwd + bwd sum with torch's "fwd+bwd" row. Min of N (the machine may be shared).
"""

from __future__ import annotations

import argparse
import importlib
import timeit

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import try_torch


def _best(fn, repeat: int, number: int = 20) -> float:
    """Microseconds per call: the best of ``repeat`` rounds of ``number`` calls."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    # (the package re-exports the functions under the modules' names: import the modules)
    nka = importlib.import_module("tritongrad.kernels.numpy.attention")
    nkn = importlib.import_module("tritongrad.kernels.numpy.nn")

    rng = np.random.default_rng(0)
    f32 = np.float32
    xg = rng.standard_normal((1024, 512), dtype=f32)
    gg = rng.standard_normal((1024, 512), dtype=f32)
    xl = rng.standard_normal((1024, 128), dtype=f32)
    gl = rng.standard_normal((1024, 128), dtype=f32)
    w, b = rng.standard_normal(128, dtype=f32), rng.standard_normal(128, dtype=f32)
    q, k, v, ga = (rng.standard_normal((16, 4, 64, 32), dtype=f32) for _ in range(4))
    scale = 32 ** -0.5
    _, mean, rstd = nkn.layer_norm(xl, w, b, 1e-5)
    out, lse = nka.attention(q, k, v, scale, True)
    r = args.repeat
    rows = [
        ("gelu fwd", _best(lambda: nkn.gelu(xg, "none"), r)),
        ("gelu bwd", _best(lambda: nkn.gelu_backward(gg, xg, "none"), r)),
        ("layer_norm fwd", _best(lambda: nkn.layer_norm(xl, w, b, 1e-5), r)),
        ("layer_norm bwd", _best(lambda: nkn.layer_norm_backward(gl, xl, w, mean, rstd), r)),
        ("attention fwd", _best(lambda: nka.attention(q, k, v, scale, True), r)),
        ("attention bwd", _best(lambda: nka.attention_backward(ga, q, k, v, out, lse, scale,
                                                               True), r)),
    ]
    torch = try_torch()
    if torch is not None:
        F = torch.nn.functional
        tx = torch.tensor(xg, requires_grad=True)
        tg_ = torch.tensor(gg)
        tl = torch.tensor(xl, requires_grad=True)
        tgl = torch.tensor(gl)
        tw = torch.tensor(w, requires_grad=True)
        tb = torch.tensor(b, requires_grad=True)
        tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
        tga = torch.tensor(ga)

        def sdpa():
            return F.scaled_dot_product_attention(tq, tk, tv, is_causal=True)

        with torch.no_grad():
            rows += [
                ("torch gelu fwd", _best(lambda: F.gelu(tx), r)),
                ("torch layer_norm fwd", _best(lambda: F.layer_norm(tl, (128,), tw, tb), r)),
                ("torch attention fwd", _best(sdpa, r)),
            ]
        rows += [
            ("torch gelu fwd+bwd", _best(lambda: F.gelu(tx).backward(tg_), r)),
            ("torch layer_norm fwd+bwd",
             _best(lambda: F.layer_norm(tl, (128,), tw, tb).backward(tgl), r)),
            ("torch attention fwd+bwd", _best(lambda: sdpa().backward(tga), r)),
        ]
    for name, us in rows:
        print(f"{name:28s} {us:9.1f} us")


if __name__ == "__main__":
    main()
