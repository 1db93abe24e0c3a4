"""Forward+backward of a chain of 50 small elementwise ops on a 16x16 tensor.

This measures per-op overhead (the framework, not the arithmetic): at 16x16 every op is a few
hundred nanoseconds of NumPy work. Rows: tritongrad, hand-written NumPy backprop (no framework
at all), a minimal Python autograd (MiniTensor below: the floor of Python bookkeeping per op),
and torch when installed.

    python perf/bench_chain.py [--device cpu|cuda]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch

N_OPS, SHAPE = 50, (16, 16)


def chain(x):
    """The op sequence, written once for any framework with +, *, tanh and sigmoid."""
    y = x
    for i in range(N_OPS):
        k = i % 5
        if k == 0:
            y = y * 1.01
        elif k == 1:
            y = y + 0.1
        elif k == 2:
            y = y.tanh()
        elif k == 3:
            y = y.sigmoid()
        else:
            y = y * y
    return y.sum()


def numpy_step(x: np.ndarray) -> np.ndarray:
    """The same chain with hand-written forward and backward in NumPy."""
    saved, y = [], x
    for i in range(N_OPS):
        k = i % 5
        if k == 0:
            y = y * 1.01
        elif k == 1:
            y = y + 0.1
        elif k == 2:
            y = np.tanh(y)
            saved.append(y)
        elif k == 3:
            y = 1.0 / (1.0 + np.exp(-y))
            saved.append(y)
        else:
            saved.append(y)
            y = y * y
    g = np.ones_like(y)
    for i in reversed(range(N_OPS)):
        k = i % 5
        if k == 0:
            g = g * 1.01
        elif k == 2:
            t = saved.pop()
            g = g * (1 - t * t)
        elif k == 3:
            s = saved.pop()
            g = g * s * (1 - s)
        elif k == 4:
            g = g * 2 * saved.pop()
    return g


class MiniTensor:
    """The leanest Python autograd that runs ``chain``: an array, the backward function of the
    op that made it, its parents and what that op saved. No grad modes, version counters,
    hooks, dtype/device checks or streams: the row it gives is the floor of the Python
    bookkeeping per op, below which only work outside Python goes."""

    __slots__ = ("data", "fn", "parents", "saved", "grad")

    def __init__(self, data, fn=None, parents=(), saved=None):
        self.data, self.fn, self.parents, self.saved, self.grad = data, fn, parents, saved, None

    def __mul__(self, other):
        if isinstance(other, MiniTensor):
            return MiniTensor(self.data * other.data, lambda s, g: (g * s[1], g * s[0]),
                              (self, other), (self.data, other.data))
        return MiniTensor(self.data * other, lambda s, g: (g * s,), (self,), other)

    def __add__(self, other):
        if isinstance(other, MiniTensor):
            return MiniTensor(self.data + other.data, lambda s, g: (g, g), (self, other))
        return MiniTensor(self.data + other, lambda s, g: (g,), (self,))

    def tanh(self):
        y = np.tanh(self.data)
        return MiniTensor(y, lambda y, g: (g * (1 - y * y),), (self,), y)

    def sigmoid(self):
        y = 1.0 / (1.0 + np.exp(-self.data))
        return MiniTensor(y, lambda y, g: (g * y * (1 - y),), (self,), y)

    def sum(self):
        return MiniTensor(np.asarray(self.data.sum()),
                          lambda shape, g: (np.broadcast_to(g, shape),), (self,), self.data.shape)

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:  # reverse topological order, iteratively
            t, expanded = stack.pop()
            if expanded:
                order.append(t)
            elif t.fn is not None and id(t) not in seen:
                seen.add(id(t))
                stack.append((t, True))
                stack.extend((p, False) for p in t.parents)
        grads = {id(self): np.ones_like(self.data)}
        for t in reversed(order):
            for p, g in zip(t.parents, t.fn(t.saved, grads.pop(id(t)))):
                if p.fn is None:
                    p.grad = g if p.grad is None else p.grad + g
                else:
                    grads[id(p)] = grads[id(p)] + g if id(p) in grads else g


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    import tritongrad as tg

    rng = np.random.default_rng(0)
    x0 = rng.uniform(-1, 1, SHAPE).astype(np.float32)

    x = tg.tensor(x0, device=args.device, requires_grad=True)
    sync = tg.cuda.synchronize if args.device != "cpu" else None

    def tg_step():
        x.grad = None
        chain(x).backward()

    cases = [("tritongrad", tg_step, sync)]
    if args.device == "cpu":
        cases.append(("numpy", lambda: numpy_step(x0), None))
        mx = MiniTensor(x0)

        def mini_step():
            mx.grad = None
            chain(mx).backward()

        cases.append(("minimal Python autograd", mini_step, None))
    torch = try_torch(args.device)
    if torch is not None:
        dev = "cuda" if args.device != "cpu" else "cpu"
        tx = torch.tensor(x0, device=dev, requires_grad=True)
        tsync = torch.cuda.synchronize if dev == "cuda" else None

        def torch_step():
            tx.grad = None
            chain(tx).backward()

        cases.append(("torch", torch_step, tsync))
    # (16x16 ops use no thread pool, so the rows may take turns: see timeit)
    rows = timeit(cases, repeat=15, inner=20, interleave=True)
    if args.device == "cpu":  # every row computed the same gradient
        np.testing.assert_allclose(x.grad.numpy(), numpy_step(x0), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(mx.grad, numpy_step(x0), rtol=1e-4, atol=1e-6)
    report(f"{N_OPS}-op elementwise chain on {SHAPE[0]}x{SHAPE[1]}, forward+backward, "
           f"{args.device}", rows)


if __name__ == "__main__":
    main()
