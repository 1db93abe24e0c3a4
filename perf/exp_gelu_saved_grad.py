"""Experiment: exact GELU whose forward also computes GELU'(x) for the backward (the
GPT-step workload of perf/bench_transformer.py, CPU, float32).

    python perf/exp_gelu_saved_grad.py [--repeat N]

Today ``GeluBackward0`` (autograd/ops/nn.py) saves x and its backward recomputes Phi(x) and
phi(x) (~20 NumPy passes over the activations). Here its forward, when it records a node,
computes y and d = GELU'(x) together (the shared passes run once: ~28 passes instead of 20 +
23) and saves d, so the first-order backward is one multiply g * d; the recorded
(create_graph) backward is unchanged. The cost is one more activation-sized array kept per
GELU until backward. This script patches the rule in-process (autograd/ is not changed) and
times the step with the rule as it is and patched, rounds interleaved, torch (if installed)
in the same rounds. A proposal measured, not a library feature.
"""

from __future__ import annotations

import argparse
import importlib
import math
import statistics
import time

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import try_torch

nkn = importlib.import_module("tritongrad.kernels.numpy.nn")


def gelu_and_grad32(x: np.ndarray) -> tuple:
    """(x Phi(x), Phi(x) + x phi(x)) for float32 ``x``, sharing the tail's passes (the same
    arithmetic as kernels/numpy/nn.py ``_gelu32`` and ``_gelu_grad32``, finite x only)."""
    a = np.abs(x)
    p, e = nkn._tail32(x, a)
    h = p * e                                  # 1 - Phi(|x|)
    ca = np.multiply(a, np.float32(1 / math.sqrt(2 * math.pi)))
    p -= ca
    p *= e                                     # k: GELU'(x) = k (x < 0), 1 - k (x >= 0)
    h *= a
    y = np.multiply(x, np.float32(0.5), out=e)
    y += np.multiply(a, np.float32(0.5), out=a)
    y -= h
    np.subtract(np.float32(0.5), p, out=p)
    pi = p.view(np.int32)
    pi |= np.bitwise_and(x.view(np.int32), nkn._SIGN_BIT, out=ca.view(np.int32))
    p += np.float32(0.5)
    return y, p


def _patch():
    """Replace GeluBackward0's forward/vjp; returns a function that restores them."""
    from tritongrad.autograd import dispatch
    from tritongrad.autograd.ops import nn as ops_nn
    from tritongrad.autograd.ops import traced

    cls = ops_nn.GeluBackward0
    old = cls.__dict__["forward"], cls.__dict__["vjp"]

    def forward(ctx, k, x, approximate):
        ctx.approximate = approximate
        if ctx is not dispatch.SINK and approximate == "none" and x.dtype == np.float32 \
                and isinstance(x, np.ndarray) and type(x) is np.ndarray:
            y, ctx.dgelu = gelu_and_grad32(x)
            return y
        return k.gelu(x, approximate)

    def vjp(ctx, k, saved, g):
        d = getattr(ctx, "dgelu", None)
        if d is None or k is traced:
            return old[1].__func__(ctx, k, saved, g)
        return k.mul(g, d)

    cls.forward, cls.vjp = staticmethod(forward), staticmethod(vjp)
    return lambda: (setattr(cls, "forward", old[0]), setattr(cls, "vjp", old[1]))


def _check_grads(tg) -> None:
    """The patched rule's gradients equal the unpatched kernels' (to float32 rounding)."""
    x = tg.randn(64, 512, requires_grad=True)
    g = tg.randn(64, 512)
    grads = []
    for patched in (False, True):
        restore = _patch() if patched else None
        x.grad = None
        tg.nn.functional.gelu(x).backward(g)
        grads.append(x.grad.numpy().copy())
        if restore:
            restore()
    err = float(np.abs(grads[0] - grads[1]).max())
    assert err < 1e-6, err
    print(f"patched vs unpatched gradient: max |diff| {err:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    import bench_transformer
    import tritongrad as tg

    _, _, step = bench_transformer.build(tg, "cpu")
    torch = try_torch()
    torch_step = bench_transformer.build(torch, "cpu")[2] if torch is not None else None
    _check_grads(tg)
    restore = None
    times = {"tritongrad": [], "tritongrad + saved GELU'": [], "torch": []}
    for _ in range(3):
        step()
    for _ in range(args.repeat):
        for name in times:
            if name == "torch":
                if torch_step is None:
                    continue
                fn = torch_step
            else:
                if restore is not None:
                    restore()
                    restore = None
                if name != "tritongrad":
                    restore = _patch()
                fn = step
            fn()  # untimed: this turn's caches
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    if restore is not None:
        restore()
    ref = times["torch"] or None
    print(f"{'':28s} {'median':>9s}     {'min':>9s}     x torch (median, min)")
    for name, ts in times.items():
        if ts:
            med = statistics.median(ts)
            ratio = f"{med / statistics.median(ref):6.3f} {min(ts) / min(ref):6.3f}" if ref else ""
            print(f"{name:28s} {med * 1e3:9.2f} ms  {min(ts) * 1e3:9.2f} ms  {ratio}")


if __name__ == "__main__":
    main()
