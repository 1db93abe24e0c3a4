"""How the cost per graph node grows with the graph: N one-element adds, forward and backward.

Each node is ``y = y + x`` on one-element tensors, so the arithmetic is nothing and the time is
the framework's bookkeeping per node: recording the op, the engine's queue and buffers, the
garbage left behind. A framework whose per-node cost is flat in N scales; one whose cost grows
(allocations, dict or list growth, cyclic garbage for the collector) does not. Rows per N:
tritongrad, tritongrad with the cyclic garbage collector off (what the collector's passes
cost: the objects of a graph live until its backward, so each full pass walks them all, and
full passes come once the survivors reach a quarter of the heap), the minimal Python autograd
of bench_chain.py (the floor of Python bookkeeping), and torch when installed. Times are this
thread's CPU time (the collector runs in it), best of a few rounds. Below the table: the
objects the collector tracks that each recorded node leaves alive until backward (in torch,
whose nodes are C++, about none).

    python perf/bench_graph.py [--sizes 100,1000,10000,100000]
"""

from __future__ import annotations

import argparse
import gc
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


def per_node_us(step, n: int, rounds: int, collect: bool = True) -> float:
    """Best-of-``rounds`` microseconds of this thread's CPU time per node of one
    forward+backward of ``n`` nodes (the minimum, as other processes on a shared machine only
    ever add time); ``collect=False`` runs them with the cyclic garbage collector off."""
    step(min(n, 100))  # warm-up
    best = float("inf")
    gc.collect()
    if not collect:
        gc.disable()
    try:
        for _ in range(rounds):
            t0 = time.thread_time()
            step(n)
            best = min(best, time.thread_time() - t0)
    finally:
        gc.enable()
    return best / n * 1e6


def tracked_per_node(x, n: int = 1000) -> float:
    """Objects the cyclic collector tracks that a graph of ``n`` adds keeps alive, per node."""
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        y = graph(x, n)
        per_node = (len(gc.get_objects()) - before) / n
        del y
    finally:
        gc.enable()
    return per_node


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

    rows = [("tritongrad", tg_step), ("tritongrad, collector off", tg_step),
            ("minimal Python autograd", mini_step)]
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
        results[name] = [per_node_us(step, n, max(3, min(20, 200_000 // n)),
                                     collect="collector off" not in name) for n in sizes]
        print(f"{name:<28}" + "".join(f"{v:>14.2f}" for v in results[name]))
    tracked = [("tritongrad", tracked_per_node(x)), ("minimal Python autograd",
                                                    tracked_per_node(m))]
    if torch is not None:
        tracked.append((f"torch {torch.__version__}", tracked_per_node(xt)))
    print("objects the collector tracks per node, alive until backward: "
          + ", ".join(f"{name} {v:.1f}" for name, v in tracked))
    # the checks come after the timing, so they cost the timed runs nothing
    tg_step(10)
    assert x.grad.item() == 11.0, x.grad
    for name, vals in results.items():
        if name not in ("tritongrad", "tritongrad, collector off"):
            ratios = "".join(f"{a / b:>14.2f}" for a, b in zip(results["tritongrad"], vals))
            print(f"{'tritongrad x ' + name:<28}{ratios}")


if __name__ == "__main__":
    main()
