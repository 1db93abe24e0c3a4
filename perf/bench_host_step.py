"""Host time of a whole training step on CUDA, on the compiled path, without a GPU.

The step's ops run as on an H100 up to the driver's launch call: the kernels are compiled for
sm_90 by Triton and given launchers that run nothing (bench_launch.py ``--compiled``,
tests/kernels/compile_sm90.py), on the emulated device's host memory. A small model is
launch-bound on a GPU (its kernels take less time than queueing them), so its step takes its
host time, which is what this times: milliseconds per step, host only, less cuLaunchKernel
itself (2-3 us per launch on a GPU).

Models (``--step``): ``gpt``, perf/bench_transformer.py's GPT-style step (4 layers, width
128, 4 heads, 64 tokens, batch 16, AdamW, gradient clipping); ``mlp``, perf/bench_mlp.py's
784-1024-1024-10 MLP and SGD step at batch 256.

Rows: the step with tritongrad's cached launches (Notes [cached launches] and [plan launches]
in kernels/triton/launcher.py), and the same with every launch through Triton's own dispatch
(``CachedLaunchJIT.enabled`` off). Then, from separate instrumented steps (each wrapper adds
a few tenths of a microsecond per call, so these sum to more than the plain rows):

- launches per step of every kernel, and how many of them were plan launches (a ``Launch``)
  rather than ``kernel[grid](...)``;
- host microseconds per step in each entry point of the kernel contract (the functions of
  ``tritongrad.kernels.triton`` that autograd, nn and optim call), grouped by the launcher
  module that defines it, exclusive of nested contract calls; what is left of the step is
  autograd, nn, optim and the runtime outside the kernels;
- Python's garbage collections during those steps (a collection's time lands in the entry
  point that happened to run it: ``Collections``).

Device values: nothing runs, so every array holds whatever its memory held. In the library's
default (``deferred``: Note [index check modes] in autograd/checks.py) nothing in these steps
reads the device; ``--index-checks sync`` times the step with the bounds checks of
``embedding``'s indices (twice: tokens and positions) and ``cross_entropy``'s targets reading
back, each a device sync on a GPU. Here ``memory.to_host`` returns ones instead of the garbage
(so every index is in range), which also leaves the copy out of the time.

    python perf/bench_host_step.py [--step gpt|mlp] [--repeat 15] [--index-checks sync]
"""

from __future__ import annotations

import argparse
import collections
import gc
import itertools
import time

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit
from bench_launch import compiled_stand_ins, tritons_dispatch


def gpt_step(tg):
    """perf/bench_transformer.py's step, on cuda."""
    import bench_transformer

    return bench_transformer.build(tg, "cuda")[2]


def mlp_step(tg, batch: int = 256):
    """perf/bench_mlp.py's model, loss and SGD step at ``batch``, on cuda."""
    import bench_mlp

    from tritongrad import nn, optim

    rng = np.random.default_rng(0)
    sizes = bench_mlp.SIZES
    layers = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers += [nn.Linear(a, b)] + ([nn.ReLU()] if i < len(sizes) - 2 else [])
    model = nn.Sequential(*layers).to("cuda")
    opt = optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    x = tg.tensor(rng.standard_normal((batch, sizes[0])).astype(np.float32), device="cuda")
    y = tg.tensor(rng.integers(0, sizes[-1], batch), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    return step


STEPS = {"gpt": gpt_step, "mlp": mlp_step}


# The package's own entry points (kernels/triton/__init__.py: complex arrays routed away) by
# the launcher module that serves real arrays.
_ROUTED = {"sum": "reduction", "reduce": "reduction", "cumsum": "rowwise", "index": "indexing",
           "index_put_": "indexing", "gather": "indexing", "scatter_": "indexing",
           "nonzero": "indexing"}


class ContractTimes:
    """Wraps the kernel contract's functions (``tritongrad.kernels.triton``'s ``__all__``) to
    count calls and sum host time per function, exclusive of nested contract calls."""

    def __init__(self, tk):
        self.tk = tk
        self.calls: collections.Counter = collections.Counter()
        self.seconds: collections.Counter = collections.Counter()
        self.module = {}
        self._saved = {}
        self._children = []  # per open call: seconds spent in nested contract calls

    def _wrap(self, name, fn):
        calls, seconds, children, clock = self.calls, self.seconds, self._children, \
            time.perf_counter

        def timed(*args, **kwargs):
            children.append(0.0)
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = clock() - t0
                seconds[name] += dt - children.pop()
                calls[name] += 1
                if children:
                    children[-1] += dt
        return timed

    def __enter__(self):
        for name in self.tk.__all__:
            fn = getattr(self.tk, name)
            if callable(fn):
                self._saved[name] = fn
                self.module[name] = _ROUTED.get(name) or fn.__module__.rsplit(".", 1)[-1]
                setattr(self.tk, name, self._wrap(name, fn))
        return self

    def __exit__(self, *exc):
        for name, fn in self._saved.items():
            setattr(self.tk, name, fn)


class PlanLaunches:
    """Counts ``launcher.Launch`` calls per kernel while installed."""

    def __init__(self):
        from tritongrad.kernels.triton import launcher

        self.launcher = launcher
        self.counts: collections.Counter = collections.Counter()

    def __enter__(self):
        call = self._call = self.launcher.Launch.__call__
        counts = self.counts

        def counted(launch, *head):
            counts[launch.kernel.__name__] += 1
            return call(launch, *head)

        self.launcher.Launch.__call__ = counted
        return self

    def __exit__(self, *exc):
        self.launcher.Launch.__call__ = self._call


class Collections:
    """Counts Python's garbage collections while installed, and their time, per generation.

    A collection runs inside whatever call allocated the object that crossed its threshold, so
    its time lands in that contract entry point's row; this line says how much of the table it
    is. Measured on the GPT step (2-core VM, 2026-11-30): the youngest generation is collected
    every 2-3 steps (0.3-0.7 ms each), the middle one every ~25, and a full collection, which
    walks every tracked object of the process (~90 000: the imports', Triton's and the
    model's; the step itself holds ~1 000 at its peak), after every eleventh of those, at
    75-110 ms each."""

    def __init__(self):
        self.runs: collections.Counter = collections.Counter()
        self.seconds: collections.Counter = collections.Counter()
        self._t0 = 0.0

    def _callback(self, phase, info):
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.runs[info["generation"]] += 1
            self.seconds[info["generation"]] += time.perf_counter() - self._t0

    def __enter__(self):
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self._callback)

    def __str__(self) -> str:
        if not self.runs:
            return "none"
        return ", ".join(f"generation {g}: {self.runs[g]} ({self.seconds[g] * 1e3:.1f} ms)"
                         for g in sorted(self.runs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", default="gpt", choices=sorted(STEPS))
    ap.add_argument("--repeat", type=int, default=15, help="timed rounds per row")
    ap.add_argument("--inner", type=int, default=3, help="steps per timed round")
    ap.add_argument("--index-checks", default="deferred", choices=("sync", "deferred", "off"),
                    help="the CUDA index check mode (Note [index check modes]; default: the "
                         "library's)")
    ap.add_argument("--top", type=int, default=25, help="kernels and entry points listed")
    args = ap.parse_args()
    harness = compiled_stand_ins("bench_host_step")

    import tritongrad.kernels.triton as tk
    from tritongrad.autograd import checks
    from tritongrad.runtime import memory

    import tritongrad as tg

    # Device values are garbage here: what the step reads back is ones (see the docstring).
    memory.to_host = lambda a, non_blocking=False: np.ones(a.shape, dtype=a.dtype.np)
    checks.set_index_check_mode(args.index_checks)
    step = STEPS[args.step](tg)
    for _ in range(3):
        step()  # compiled, planned, cached
    gc.collect()  # (the warm-up's garbage is not the step's: Collections)
    rows = timeit([("tritongrad", step, None)], inner=args.inner, repeat=args.repeat)
    slow = timeit([("tritongrad, Triton's dispatch", _through_triton(step), None)],
                  inner=1, repeat=max(3, args.repeat // 3))
    rows += slow
    report(f"host time of one {args.step} training step on cuda (compiled for sm_90, up to "
           f"the driver's launch calls; index checks {args.index_checks})",
           [(name, t) for name, t in rows])

    n = args.inner * 2
    launched0 = {k: v[0] + v[1] for k, v in harness.LAUNCHED.items()}
    gc.collect()
    with ContractTimes(tk) as contract, PlanLaunches() as plans, Collections() as collections_:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        wall = (time.perf_counter() - t0) / n
    launches = collections.Counter({k: (v[0] + v[1] - launched0.get(k, 0)) / n
                                    for k, v in harness.LAUNCHED.items()})
    total = sum(launches.values())
    print(f"\nlaunches per step: {total:.0f} (instrumented step {wall * 1e3:.2f} ms, "
          f"{wall / max(total, 1) * 1e6:.1f} us per launch)")
    print(f"{'kernel':<34}{'launches':>9}{'of them plan launches':>24}")
    for name, k in launches.most_common(args.top):
        if k:
            print(f"{name:<34}{k:>9.0f}{plans.counts[name] / n:>24.0f}")
    families: collections.Counter = collections.Counter()
    for name, s in contract.seconds.items():
        families[contract.module[name]] += s
    inside = sum(families.values()) / n
    print(f"\nhost time per step in the kernel contract: {inside * 1e3:.2f} ms of "
          f"{wall * 1e3:.2f}; autograd, nn, optim and the rest: {(wall - inside) * 1e3:.2f} ms")
    print(f"garbage collections in these steps: {collections_}")
    print(f"{'launcher module':<24}{'us per step':>12}")
    for mod, s in families.most_common():
        print(f"{mod:<24}{s / n * 1e6:>12.0f}")
    print(f"\n{'contract entry point':<24}{'calls':>7}{'us per step':>12}{'us per call':>12}")
    for name, s in contract.seconds.most_common(args.top):
        c = contract.calls[name] / n
        print(f"{name:<24}{c:>7.0f}{s / n * 1e6:>12.0f}{s / n / c * 1e6:>12.1f}")


def _through_triton(step):
    def timed():
        with tritons_dispatch():
            step()
    return timed


if __name__ == "__main__":
    main()
