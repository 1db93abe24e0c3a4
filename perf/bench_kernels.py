"""Benchmarks of the Triton kernel families (kernels/triton), on a real GPU.

    python perf/bench_kernels.py [--quick]

Prints, for each elementwise/copy/reduction/row-op/optimizer case, the time, the effective
bandwidth (bytes the op must move / time) and that bandwidth as a fraction of a device-to-device
copy measured in the same run (``cuMemcpyDtoDAsync`` through the runtime): the roofline these
memory-bound kernels aim at; and, when torch is installed, torch's time for the same op on the
same values and the ratio (tritongrad / torch: below 1 tritongrad is faster). For matmul it
prints TFLOP/s (2*M*N*K / time) and torch's TFLOP/s for the same shapes and the ratio (torch is
only a peer here; tritongrad never imports it). Inputs are random, never constants. Then the host time of one small op (launch-bound: Triton's Python launch path costs ~10-20 us of host time).

Timing: ``triton.testing.do_bench`` (CUDA events through tritongrad's Triton driver, L2 flushed
between runs) for tritongrad; torch's events on torch's stream for torch. On a machine without
a GPU (or under TRITON_INTERPRET=1 / the emulated device) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _no_gpu_reason() -> str | None:
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        return "TRITON_INTERPRET is set (kernels would run on the CPU interpreter)"
    try:
        from tritongrad.runtime import driver
    except Exception as e:  # noqa: BLE001 - any import problem means nothing to measure
        return f"tritongrad.runtime does not import ({type(e).__name__}: {e})"
    if not driver.is_available():
        return "no CUDA GPU/driver found"
    if driver.is_emulated():
        return "the CUDA device is emulated"
    return None


def _bench(fn) -> float:
    """Milliseconds per call of ``fn`` (tritongrad work on tritongrad's current stream)."""
    from triton.testing import do_bench

    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def _torch_bench(torch, fn, reps: int = 50) -> float:
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def _inputs(rows: int, cols: int, seed: int = 0) -> dict:
    """Host inputs, random (never constants: METHOD.md, and a zero or constant operand can run
    faster than real data): float32 a, b (rows, cols), a bias (cols,), class targets (rows,)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a = rng.standard_normal((rows, cols), dtype=np.float32)
    return {"a": a, "b": rng.uniform(0.5, 2.0, (rows, cols)).astype(np.float32),
            "at": np.ascontiguousarray(a.T), "bias": rng.standard_normal(cols, np.float32),
            "target": rng.integers(0, cols, rows)}


def _cases(tk, D, host: dict, device):
    """The memory-bound cases: (name, tritongrad fn, the same op as ``fn(torch, t)`` of torch
    tensors ``t`` or None, bytes the op must move)."""
    from tritongrad.runtime import memory

    rows, cols = host["a"].shape
    up = lambda x: memory.to_device(x, device)  # noqa: E731
    f32 = D.float32
    a, b, bias, target = up(host["a"]), up(host["b"]), up(host["bias"]), up(host["target"])
    h = tk.astype(a, D.float16)
    mask = tk.gt(a, 0.0)
    out = tk.empty((rows, cols), f32)
    at = tk.permute(up(host["at"]), (1, 0))  # (rows, cols) view, transposed
    copy_dst = memory.empty((rows, cols), f32, device)
    m, v = tk.full((rows, cols), 0.0, f32), tk.full((rows, cols), 0.0, f32)

    def d2d():
        memory.copy_between(copy_dst, a)

    n = rows * cols
    f4, f2, f1 = 4 * n, 2 * n, n
    return [
        ("copy (cuMemcpyDtoD)", d2d, lambda T, t: t["out"].copy_(t["a"]), 2 * f4),
        ("copy_ kernel", lambda: tk.copy_(out, a), lambda T, t: t["out"].copy_(t["a"]), 2 * f4),
        ("add", lambda: tk.add(a, b, out=out), lambda T, t: T.add(t["a"], t["b"], out=t["out"]),
         3 * f4),
        ("add (new output)", lambda: tk.add(a, b), lambda T, t: t["a"] + t["b"], 3 * f4),
        ("mul scalar", lambda: tk.mul(a, 2.0, out=out),
         lambda T, t: T.mul(t["a"], 2.0, out=t["out"]), 2 * f4),
        ("add bias (broadcast)", lambda: tk.add(a, bias, out=out),
         lambda T, t: T.add(t["a"], t["bias"], out=t["out"]), 2 * f4),
        ("exp", lambda: tk.exp(a, out=out), lambda T, t: T.exp(t["a"], out=t["out"]), 2 * f4),
        ("div", lambda: tk.div(a, b, out=out), lambda T, t: T.div(t["a"], t["b"], out=t["out"]),
         3 * f4),
        ("gt -> bool", lambda: tk.gt(a, b), lambda T, t: t["a"] > t["b"], 2 * f4 + f1),
        ("where", lambda: tk.where(mask, a, 0.0), lambda T, t: T.where(t["mask"], t["a"], 0.0),
         f1 + 2 * f4),
        ("relu fp16", lambda: tk.relu(h), lambda T, t: T.relu(t["h"]), 2 * f2),
        ("astype f32->bf16", lambda: tk.astype(a, D.bfloat16),
         lambda T, t: t["a"].to(T.bfloat16), f4 + f2),
        ("contiguous(transposed)", lambda: tk.contiguous(at), lambda T, t: t["at"].contiguous(),
         2 * f4),
        ("add transposed + contig", lambda: tk.add(at, a, out=out),
         lambda T, t: T.add(t["at"], t["a"], out=t["out"]), 3 * f4),
        ("sum last dim", lambda: tk.sum(a, (1,), False), lambda T, t: t["a"].sum(1), f4),
        ("sum dim 0", lambda: tk.sum(a, (0,), False), lambda T, t: t["a"].sum(0), f4),
        ("sum all", lambda: tk.sum(a, (0, 1), False), lambda T, t: t["a"].sum(), f4),
        ("sum fp16 last dim", lambda: tk.sum(h, (1,), False), lambda T, t: t["h"].sum(1), f2),
        ("amax last dim", lambda: tk.reduce("amax", a, (1,), False),
         lambda T, t: t["a"].amax(1), f4),
        ("argmax last dim", lambda: tk.argreduce("argmax", a, 1, False),
         lambda T, t: t["a"].argmax(1), f4),
        ("cumsum last dim", lambda: tk.cumsum(a, 1), lambda T, t: t["a"].cumsum(1), 2 * f4),
        ("softmax last dim", lambda: tk.softmax(a, 1), lambda T, t: T.softmax(t["a"], 1), 2 * f4),
        ("layer_norm", lambda: tk.layer_norm(a, bias, bias, 1e-5),
         lambda T, t: T.nn.functional.layer_norm(t["a"], (cols,), t["bias"], t["bias"], 1e-5),
         2 * f4),
        (f"cross_entropy ({cols} classes)", lambda: tk.cross_entropy(a, target, -100, 0.0),
         lambda T, t: T.nn.functional.cross_entropy(t["a"], t["target"], reduction="none"), f4),
        ("gelu", lambda: tk.gelu(a, "none"), lambda T, t: T.nn.functional.gelu(t["a"]), 2 * f4),
        ("adam_step (p, g, m, v)", lambda: tk.adam_step(a, b, m, v, None, 3, 1e-3, 0.9, 0.999,
                                                         1e-8, 0.0, False, False, True),
         None, 7 * f4),  # (torch's fused Adam is an optimizer, not an op: no peer here)
    ]


def _torch_tensors(torch, host: dict) -> dict | None:
    """The torch peers of ``_inputs`` on the GPU (None where torch is not installed)."""
    if torch is None:
        return None
    a = torch.from_numpy(host["a"]).cuda()
    return {"a": a, "b": torch.from_numpy(host["b"]).cuda(), "out": torch.empty_like(a),
            "at": torch.from_numpy(host["at"]).cuda().t(), "bias": torch.from_numpy(host["bias"]).cuda(),
            "target": torch.from_numpy(host["target"]).cuda(), "h": a.half(), "mask": a > 0}


def _device():
    from tritongrad.runtime import cuda_api
    from tritongrad.runtime.device import device

    return device("cuda", cuda_api.current_device())


def _import_torch():
    try:
        import torch  # the peer only; never imported by tritongrad itself
    except ImportError:
        return None
    return torch


def _elementwise(tk, D, n_log2: int):
    cols = 4096
    rows = (1 << n_log2) // cols
    host = _inputs(rows, cols)
    torch = _import_torch()
    tt = _torch_tensors(torch, host)
    cases = _cases(tk, D, host, _device())
    print(f"\nelementwise, copies and reductions: {rows} x {cols} ({rows * cols / 1e6:.1f} M "
          f"elements), random float32 inputs" + ("" if torch else " (torch not installed)"))
    print(f"{'op':28s} {'time us':>10s} {'GB/s':>9s} {'vs copy':>8s} {'torch us':>9s} "
          f"{'x torch':>8s}")
    copy_gbs = None
    for name, fn, tfn, nbytes in cases:
        ms = _bench(fn)
        gbs = nbytes / (ms * 1e-3) / 1e9
        if copy_gbs is None:
            copy_gbs = gbs
        line = f"{name:28s} {ms * 1e3:10.1f} {gbs:9.0f} {gbs / copy_gbs:8.2f}"
        if tt is not None and tfn is not None:
            tms = _torch_bench(torch, lambda tfn=tfn: tfn(torch, tt))
            line += f" {tms * 1e3:9.1f} {ms / tms:8.2f}"
        print(line)


def _matmul(tk, D, sizes):
    """TFLOP/s of square products with the fixed config (autotuning off), then autotuned (the
    default: Note [autotuning] in kernels/triton/autotune.py), against torch's; the config the
    tuning picked and the seconds its first call took (compiles and timing; a warm cache file
    answers at once, so the campaign points the cache at a fresh folder)."""
    import importlib
    import numpy as np
    from tritongrad.kernels.triton import _launch, autotune
    from tritongrad.runtime import memory

    mm = importlib.import_module("tritongrad.kernels.triton.matmul")  # the name is shadowed
    torch = _import_torch()
    print("\nmatmul (square M = N = K, random normal inputs), TFLOP/s: fixed config, autotuned"
          + ("" if torch else " (torch not installed)"))
    print(f"{'dtype':10s} {'size':>6s} {'fixed':>8s} {'tuned':>8s}"
          + (f" {'torch':>8s} {'tuned/torch':>11s}" if torch else "")
          + f" {'tuning s':>8s}  config")
    tdt = {}
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False  # compare IEEE float32 with IEEE float32
        tdt = {D.float16: torch.float16, D.bfloat16: torch.bfloat16, D.float32: torch.float32,
               D.float64: torch.float64}
    rng = np.random.default_rng(1)
    device = _device()
    for dtype in (D.float16, D.bfloat16, D.float32, D.float64):
        for s in sizes:
            if dtype is D.float64 and s > 2048:
                continue
            ha, hb = (rng.standard_normal((s, s), dtype=np.float32) for _ in range(2))
            a, b = (tk.astype(memory.to_device(x, device), dtype) for x in (ha, hb))
            with _launch.knobs(autotune, MODE="0"):
                fixed = _bench(lambda a=a, b=b: tk.matmul(a, b))
            with _launch.knobs(autotune, MODE="all"):
                t0 = time.perf_counter()
                tk.matmul(a, b)  # plans: tunes the class (or reads the cache file)
                tuning = time.perf_counter() - t0
                tuned = _bench(lambda a=a, b=b: tk.matmul(a, b))
                launch = next(p for k, p in mm._PLANS.items() if k[1:4] == (s, s, s)
                              and k[6] is dtype)[0]
            config = mm.config_of(launch)  # (the kernel last: 1 for the TMA one)
            flops = 2 * s**3 / 1e12
            line = f"{dtype.name:10s} {s:6d} {flops / (fixed * 1e-3):8.1f} " \
                   f"{flops / (tuned * 1e-3):8.1f}"
            if torch is not None:
                ta, tb = (torch.from_numpy(x).cuda().to(tdt[dtype]) for x in (ha, hb))
                tms = _torch_bench(torch, lambda ta=ta, tb=tb: ta @ tb)
                line += f" {flops / (tms * 1e-3):8.1f} {tms / tuned:11.2f}"
            print(f"{line} {tuning:8.1f}  {config}")


# Products with few output tiles and a long K, as the steps' weight gradients (G^T @ X, G^T a
# transposed view) and the GPT's small forward products: split-K on and off (Note [split-K] in
# kernels/triton/matmul.py; off by default since the H200 run of 2026-11-30 measured both
# steps slower with it: this table is the device-side measurement that run lacked).
SPLIT_K_SHAPES = (("MLP dW1", 1024, 784, 4096), ("MLP dW3", 10, 1024, 4096),
                  ("GPT dW qkv", 384, 128, 1024), ("GPT dW mlp.0", 512, 128, 1024),
                  ("GPT qkv forward", 1024, 384, 128))


def _split_k_products(tk, D, shapes, dtype, seed: int = 2):
    """(name, M, N, K, G^T @ X as a callable, float64 reference) per shape."""
    import numpy as np
    from tritongrad.runtime import memory

    rng = np.random.default_rng(seed)
    out = []
    for name, M, N, K in shapes:
        hg, hx = (rng.standard_normal((K, n), dtype=np.float32) for n in (M, N))
        g, x = (tk.astype(memory.to_device(h, _device()), dtype) for h in (hg, hx))
        gt = tk.permute(g, (1, 0))
        out.append((name, M, N, K, lambda gt=gt, x=x: tk.matmul(gt, x),
                    hg.T.astype(np.float64) @ hx.astype(np.float64)))
    return out


def _with_split_k(target: int, fn):
    """``fn()`` with matmul's split-K TARGET_PROGRAMS set to ``target`` (0: off), restored."""
    import importlib

    from tritongrad.kernels.triton import _launch

    mm = importlib.import_module("tritongrad.kernels.triton.matmul")  # the name is shadowed
    with _launch.knobs(mm, TARGET_PROGRAMS=target):
        return fn()


def _split_k(tk, D):
    torch = _import_torch()
    print("\nfew-tile products, G^T @ X (G^T a transposed view), float32 IEEE: split-K off "
          "(the default) and on (TARGET_PROGRAMS = 132), microseconds")
    print(f"{'case':18s} {'M x N x K':>18s} {'off':>8s} {'on':>8s} {'on/off':>7s}"
          + (f" {'torch':>8s} {'off/torch':>9s}" if torch else ""))
    for name, M, N, K, prod, _ in _split_k_products(tk, D, SPLIT_K_SHAPES, D.float32):
        off = _with_split_k(0, lambda prod=prod: _bench(prod)) * 1e3
        on = _with_split_k(132, lambda prod=prod: _bench(prod)) * 1e3
        line = f"{name:18s} {f'{M} x {N} x {K}':>18s} {off:8.1f} {on:8.1f} {on / off:7.2f}"
        if torch is not None:
            g, x = torch.randn(K, M, device="cuda"), torch.randn(K, N, device="cuda")
            tus = _torch_bench(torch, lambda g=g, x=x: g.t() @ x) * 1e3
            line += f" {tus:8.1f} {off / tus:9.2f}"
        print(line)


def _launch_overhead(tk, D):
    from tritongrad.runtime import cuda_api

    x = tk.full((1,), 1.0, D.float32)
    out = tk.empty((1,), D.float32)
    print("\nhost time per small op (1 element, launch-bound)")
    for name, fn in [("add(x, x, out=)", lambda: tk.add(x, x, out=out)),
                     ("add(x, x)", lambda: tk.add(x, x)),
                     ("mul(x, 2.0)", lambda: tk.mul(x, 2.0)),
                     ("sum(x, (0,))", lambda: tk.sum(x, (0,), False))]:
        for _ in range(100):
            fn()
        cuda_api.synchronize()
        reps = 2000
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        host = (time.perf_counter() - t0) / reps
        cuda_api.synchronize()
        print(f"{name:28s} {host * 1e6:8.1f} us")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    args = p.parse_args(argv)
    why = _no_gpu_reason()
    if why is not None:
        print(f"bench_kernels: no GPU to benchmark on: {why}. Nothing measured.")
        return 0
    from tritongrad.kernels import triton as tk
    from tritongrad.runtime import dtype as D
    from tritongrad.runtime import triton_driver

    triton_driver.ensure_triton_driver()
    from tritongrad.runtime import cuda_api

    print(f"device: {cuda_api.get_device_name()}")
    _elementwise(tk, D, 22 if args.quick else 26)
    _matmul(tk, D, (1024,) if args.quick else (1024, 2048, 4096))
    _split_k(tk, D)
    _launch_overhead(tk, D)
    return 0


if __name__ == "__main__":
    sys.exit(main())
