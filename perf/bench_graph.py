"""How the cost per graph node grows with the graph: N one-element adds, forward and backward.

Each node is ``y = y + x`` on one-element tensors, so the arithmetic is nothing and the time is
the framework's bookkeeping per node: recording the op, the engine's queue and buffers, the
garbage left behind. A framework whose per-node cost is flat in N scales; one whose cost grows
(allocations, dict or list growth, cyclic garbage for the collector) does not. Rows per N:
tritongrad, the minimal Python autograd of bench_chain.py (the floor of Python bookkeeping),
and torch when installed.

    python perf/bench_graph.py [--sizes 100,1000,10000,100000]
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import machine, try_torch
from bench_chain import MiniTensor


def graph(x, n: int):
    """n adds, each reading the running sum and the leaf."""
    y = x
    for _ in range(n):
        y = y + x
    return y.sum()


def per_node_us(step, n: int, rounds: int) -> float:
    """Best-of-``rounds`` microseconds per node of one forward+backward of ``n`` nodes (the
    minimum, as other processes on a shared machine only ever add time)."""
    step(min(n, 100))  # warm-up
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        step(n)
        best = min(best, time.perf_counter() - t0)
    return best / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000,100000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    import tritongrad as tg

    x = tg.ones(1, requires_grad=True)

    def tg_step(n):
        x.grad = None
        graph(x, n).backward()

    m = MiniTensor(np.ones(1, np.float32))

    def mini_step(n):
        m.grad = None
        graph(m, n).backward()

    rows = [("tritongrad", tg_step), ("minimal Python autograd", mini_step)]
    torch = try_torch()
    if torch is not None:
        xt = torch.ones(1, requires_grad=True)

        def torch_step(n):
            xt.grad = None
            graph(xt, n).backward()

        rows.append((f"torch {torch.__version__}", torch_step))

    print(f"{__doc__.splitlines()[0]}\n{machine()}")
    print(f"{'us per node':<28}" + "".join(f"{'N = ' + str(n):>14}" for n in sizes))
    results = {}
    for name, step in rows:
        results[name] = [per_node_us(step, n, max(3, min(20, 200_000 // n))) for n in sizes]
        print(f"{name:<28}" + "".join(f"{v:>14.2f}" for v in results[name]))
    # the checks come after the timing, so they cost the timed runs nothing
    tg_step(10)
    assert x.grad.item() == 11.0, x.grad
    for name, vals in results.items():
        if name != "tritongrad":
            ratios = "".join(f"{a / b:>14.2f}" for a, b in zip(results["tritongrad"], vals))
            print(f"{'tritongrad x ' + name:<28}{ratios}")


if __name__ == "__main__":
    main()
