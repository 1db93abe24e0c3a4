"""Host cost of the ops a model calls most, one small op at a time, recorded for autograd.

Each op runs on 16x16 float32 CPU tensors that require grad (so every call records a node),
small enough that the arithmetic is a few hundred nanoseconds and the row is the library's
own cost per call: argument handling, dispatch, the view or kernel call, recording the node.
Rows are microseconds per call, the 25th percentile of interleaved rounds of this thread's
CPU time (other processes on a shared machine move them little); each op's table holds
tritongrad, torch when installed, and the NumPy expression of its values (no autograd: the
floor any Python library pays).

    python perf/bench_op_overhead.py [--ops view,unsqueeze,...] [--inner 300] [--repeat 25]
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, try_torch

# name -> (op on the library's tensors x, w, b and module m, the same on NumPy arrays): view
# x.view(256), reshape-copy x.t().reshape(256), slice x[:, 1:], split x.split(4), sum x.sum(1),
# mul x * w, add-scalar x + 1, addmm(b, x, w), linear nn.Linear(16, 16)(x)
OPS = {
    "view": (lambda L, x, w, b, m: x.view(256), lambda x, w, b: x.reshape(256)),
    "reshape-copy": (lambda L, x, w, b, m: x.t().reshape(256),
                         lambda x, w, b: x.T.reshape(256)),
    "unsqueeze": (lambda L, x, w, b, m: x.unsqueeze(0), lambda x, w, b: x[None]),
    "transpose": (lambda L, x, w, b, m: x.transpose(0, 1), lambda x, w, b: x.swapaxes(0, 1)),
    "slice": (lambda L, x, w, b, m: x[:, 1:], lambda x, w, b: x[:, 1:]),
    "split": (lambda L, x, w, b, m: x.split(4), lambda x, w, b: np.split(x, 4)),
    "sum": (lambda L, x, w, b, m: x.sum(1), lambda x, w, b: x.sum(1)),
    "mul": (lambda L, x, w, b, m: x * w, lambda x, w, b: x * w),
    "add-scalar": (lambda L, x, w, b, m: x + 1, lambda x, w, b: x + 1),
    "addmm": (lambda L, x, w, b, m: L.addmm(b, x, w), lambda x, w, b: b + x @ w),
    "linear": (lambda L, x, w, b, m: m(x), lambda x, w, b: x @ w.T + b),
}


def cpu_rounds(cases: list, inner: int, repeat: int) -> list:
    """``[(name, seconds per call)]``: this thread's CPU time of ``inner`` calls per round,
    rounds interleaved across the cases, the 25th percentile of ``repeat`` rounds."""
    times: dict = {name: [] for name, _ in cases}
    for _, fn in cases:
        for _ in range(5):
            fn()
    for _ in range(repeat):
        for name, fn in cases:
            fn()
            t0 = time.thread_time()
            for _ in range(inner):
                fn()
            times[name].append((time.thread_time() - t0) / inner)
    return [(name, sorted(t)[len(t) // 4]) for name, t in times.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--inner", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=25)
    args = ap.parse_args()

    import tritongrad as tg

    rng = np.random.default_rng(0)
    x0, w0 = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    b0 = rng.standard_normal(16).astype(np.float32)
    libs = [("tritongrad", tg)]
    torch = try_torch()
    if torch is not None:
        libs.append(("torch", torch))
    inputs = {}
    for name, L in libs:
        x, w, b = (L.tensor(a, requires_grad=True) for a in (x0, w0, b0))
        m = L.nn.Linear(16, 16)
        inputs[name] = (L, x, w, b, m)
    for op in args.ops.split(","):
        lib_fn, np_fn = OPS[op]
        cases = [(name, lambda f=lib_fn, a=inputs[name]: f(*a)) for name, _ in libs]
        cases.append(("NumPy, no autograd", lambda f=np_fn: f(x0, w0, b0)))
        report(f"op overhead: {op} on 16x16 float32, recorded (CPU time per call, p25)",
               cpu_rounds(cases, args.inner, args.repeat))


if __name__ == "__main__":
    main()
