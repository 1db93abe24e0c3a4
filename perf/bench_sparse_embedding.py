"""One training step of a large embedding table: lookup, a squared loss, backward, SGD update.

Rows: tritongrad with ``nn.Embedding(sparse=True)`` (the weight's gradient a sparse COO tensor
with one row per lookup, the update touching only those rows: docs/sparse.md), the same with
the dense gradient (a (num_embeddings, dim) gradient and a full update each step), and torch's
two when installed. The rows take turns (interleaved), so a shared machine's drift reaches
every row alike. Default: 50000 x 64 table, 512 lookups per step.

    python perf/bench_sparse_embedding.py [--rows 50000] [--dim 64] [--batch 512] [--repeat 15]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch


def step_for(lib, weight: np.ndarray, lookups: list, sparse: bool):
    """A step function over ``lib`` (tritongrad or torch): zero_grad, forward, backward, SGD."""
    emb = lib.nn.Embedding(*weight.shape, sparse=sparse)
    with lib.no_grad():
        emb.weight.copy_(lib.tensor(weight))
    opt = lib.optim.SGD(emb.parameters(), lr=0.01)
    batches = [lib.tensor(b) for b in lookups]
    state = {"i": 0}

    def step():
        i = batches[state["i"] % len(batches)]
        state["i"] += 1
        opt.zero_grad()
        emb(i).pow(2).sum().backward()
        opt.step()
    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    import tritongrad as tg
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((args.rows, args.dim)).astype(np.float32)
    lookups = [rng.integers(0, args.rows, args.batch) for _ in range(8)]
    cases = [("tritongrad sparse", step_for(tg, weight, lookups, True), None),
             ("tritongrad dense", step_for(tg, weight, lookups, False), None)]
    torch = try_torch()
    if torch is not None:
        cases += [("torch sparse", step_for(torch, weight, lookups, True), None),
                  ("torch dense", step_for(torch, weight, lookups, False), None)]
    report(f"embedding step, {args.rows} x {args.dim} table, {args.batch} lookups, SGD",
           timeit(cases, repeat=args.repeat, interleave=True))


if __name__ == "__main__":
    main()
