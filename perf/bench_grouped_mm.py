"""The grouped matrix product of a Mixture-of-Experts layer (``_grouped_mm``, Note [Grouped
matrix products]), float32, forward and forward + backward.

Rows: tritongrad's ``_grouped_mm`` (one ``matmul`` per expert on its slice of the tokens,
``cat`` of the results), torch's ``_grouped_mm`` when installed (its CPU kernel), and
hand-written NumPy (a loop of per-expert products into a preallocated result). The tokens are
split unevenly between the experts, as a router's choices are.

    python perf/bench_grouped_mm.py [--shapes TOKENS,EXPERTS,DIM,HIDDEN ...]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch

SHAPES = ("4096,8,512,1024", "1024,64,256,512")


def _ends(tokens: int, experts: int, rng) -> np.ndarray:
    """Uneven group ends: a Dirichlet split of the tokens, as a router makes."""
    share = rng.dirichlet(np.ones(experts))
    return np.minimum(np.cumsum(np.round(share * tokens)).astype(np.int32), tokens)


def numpy_grouped(a, b, ends):
    out = np.zeros((a.shape[0], b.shape[2]), a.dtype)
    start = 0
    for g, end in enumerate(ends):
        out[start:end] = a[start:end] @ b[g]
        start = end
    return out


def cases_for(tg, torch, shape, backward: bool, rng) -> list:
    tokens, experts, dim, hidden = shape
    a = rng.standard_normal((tokens, dim)).astype(np.float32)
    b = (rng.standard_normal((experts, dim, hidden)) / np.sqrt(dim)).astype(np.float32)
    ends = _ends(tokens, experts, rng)
    rows = []
    for name, lib in (("tritongrad", tg), ("torch", torch)):
        if lib is None:
            continue
        x, w = lib.tensor(a, requires_grad=backward), lib.tensor(b, requires_grad=backward)
        offs = lib.tensor(ends, dtype=lib.int32)

        def run(lib=lib, x=x, w=w, offs=offs):
            out = lib._grouped_mm(x, w, offs=offs)
            if backward:
                out.backward(lib.ones_like(out))
        rows.append((f"{name} _grouped_mm", run, None))
    if not backward:
        rows.append(("numpy loop", lambda: numpy_grouped(a, b, ends), None))
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
        for backward in (False, True):
            rows = timeit(cases_for(tg, torch, shape, backward, rng), warmup=2,
                          repeat=args.repeat, interleave=True)
            what = "forward + backward" if backward else "forward"
            report(f"_grouped_mm {what}, (tokens, experts, dim, hidden) = {shape}, float32",
                   rows)


if __name__ == "__main__":
    main()
