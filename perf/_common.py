"""Shared by the benchmarks: timing, the machine's description, the side-by-side table.

Benchmarks are programs, not tests: each prints one table in which every row is measured in
the same run, with ratios against the peers (hand-written NumPy; torch when installed).
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("OMP_NUM_THREADS", os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("MKL_NUM_THREADS", os.environ.get("BENCH_THREADS", "1"))


def try_torch(device: str = "cpu"):
    """torch, if installed (a peer for comparison only; tritongrad never imports it), and able
    to run on ``device``: a CPU-only torch is no peer for a cuda benchmark (on the emulated
    device, say), so that says why and gives None."""
    try:
        import torch
    except ImportError:
        return None
    if device != "cpu" and not torch.cuda.is_available():
        print(f"(torch {torch.__version__} has no CUDA device: no torch rows on {device})")
        return None
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "1")))
    return torch


def timeit(cases: list, *, warmup: int = 5, repeat: int = 30, inner: int = 1,
           interleave: bool = False) -> list:
    """Median seconds per call of each case ``(name, fn, sync)`` (``sync`` waits for the
    device, or None) over ``repeat`` rounds of ``inner`` calls.

    By default each case runs all its rounds before the next case starts. With ``interleave``
    the cases take turns within each round, so drift in a shared machine's speed reaches every
    row alike and the ratios stay steady even when the times move (each turn starts with one
    untimed call, so no row is timed on caches another row just filled). Interleave only
    single-threaded cases: the thread pools of two libraries taking turns fight for the cores
    while the idle one still spins.
    """
    for _, fn, sync in cases:
        _once(fn, sync, warmup)
    times = {name: [] for name, _, _ in cases}
    if interleave:
        for _ in range(repeat):
            for name, fn, sync in cases:
                _once(fn, sync, 1)  # untimed: this turn's caches
                times[name].append(_once(fn, sync, inner))
    else:
        for name, fn, sync in cases:
            times[name] += [_once(fn, sync, inner) for _ in range(repeat)]
    return [(name, statistics.median(times[name])) for name, _, _ in cases]


def _once(fn, sync, inner: int) -> float:
    """Seconds per call of ``inner`` calls of ``fn`` (device work included)."""
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    if sync:
        sync()
    return (time.perf_counter() - t0) / inner


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import numpy
    threads = os.environ.get("OPENBLAS_NUM_THREADS")
    return (f"{datetime.date.today()}  {cpu}, {os.cpu_count()} cores, BLAS threads {threads}, "
            f"Python {platform.python_version()}, NumPy {numpy.__version__}")


def report(title: str, rows: list[tuple[str, float]], reference: str | None = None) -> None:
    """Prints rows of (name, seconds) with each one's ratio to every peer row."""
    print(f"\n{title}\n{machine()}")
    names = [n for n, _ in rows]
    width = max(len(n) for n in names) + 2
    peers = [(n, t) for n, t in rows if n != names[0]]
    cols = [max(16, len(n) + 4) for n, _ in peers]
    header = f"{'':{width}}{'time':>12}" + "".join(
        f"{'x ' + n:>{c}}" for (n, _), c in zip(peers, cols))
    print(header)
    for name, t in rows:
        line = f"{name:{width}}{_fmt(t):>12}"
        line += "".join(f"{t / pt:>{c}.2f}" for (_, pt), c in zip(peers, cols))
        print(line)


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def compare_steps(title: str, step_for, device: str, repeat: int, profile: bool) -> None:
    """Times one training step of the same program under tritongrad and torch (when
    installed): ``step_for(T)`` builds it for framework ``T`` and returns the step. CPU rows
    take turns; ``profile`` then prints both profiles of one step (``profile_step``)."""
    import tritongrad as tg

    tg_step = step_for(tg)
    cases = [("tritongrad", tg_step, tg.cuda.synchronize if device == "cuda" else None)]
    torch = try_torch(device)
    torch_step = step_for(torch) if torch is not None else None
    if torch_step is not None:
        cases.append(("torch", torch_step, torch.cuda.synchronize if device == "cuda" else None))
    rows = timeit(cases, warmup=3, repeat=repeat, interleave=device == "cpu")
    report(f"{title}, {device}", rows)
    if profile:
        profile_step(tg_step, device, torch_step)


def profile_step(tg_step, device: str, torch_step=None, rows: int = 20) -> None:
    """Prints tritongrad's profiler table of one (warm) step, and torch's for ``torch_step``.
    On cuda the tables are sorted by the kernels' device time (CUPTI where cupti-python is
    installed, else events) and a last line compares the step's wall time with the sum of its
    kernels' device time: a step whose kernels add up to much less than its wall time waits
    for the host (launches, syncs), one near it waits for its kernels."""
    import tritongrad as tg

    cuda = device == "cuda"
    sync = tg.cuda.synchronize if cuda else (lambda: None)
    tg_step()
    sync()
    t0 = time.perf_counter()
    with tg.autograd.profiler.profile(use_cuda=cuda) as prof:
        tg_step()
        sync()
    wall = time.perf_counter() - t0
    table = prof.key_averages()
    key = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    print(f"\ntritongrad, one step profiled ({_fmt(wall)} wall with the profiler)")
    print(table.table(sort_by=key, row_limit=rows))
    if cuda:
        kernels = sum(e.self_cuda_time_total for e in table) * 1e-6
        print(f"tritongrad: kernels {_fmt(kernels)} of device time in a {_fmt(wall)} step "
              f"({kernels / wall:.0%})")
    if torch_step is None:
        return
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    tsync = torch.cuda.synchronize if cuda else (lambda: None)
    torch_step()
    tsync()
    with torch_profile(activities=activities) as tprof:
        torch_step()
        tsync()
    print("\ntorch, one step profiled")
    print(tprof.key_averages().table(
        sort_by="self_cuda_time_total" if cuda else "self_cpu_time_total", row_limit=rows))
