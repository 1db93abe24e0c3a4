"""A training step on CUDA with each of the launch path's switches flipped, in one process.

The CUDA path has switches whose effect on a whole step is a question for a GPU: the
reductions' split threshold (``SPLIT_MIN``, kernels/triton/reduction.py), matmul's split-K
(Note [split-K]: off by default since it made the session-20 steps slower, cause unknown),
index checks that sync (Note [index check modes]), TF32 products, the direct C launch
(Note [direct launches]) and the arrays' addresses passed to it (Note [packed pointers]: off,
the C launch calls each array's ``data_ptr()`` and asks the driver about the address; neither
happens under ``--compiled``, whose launches run nothing). This times the step with the
library's defaults and with each one flipped, the rows taking turns within each round (so a
drifting machine reaches every row alike), plans and cached launches dropped at each switch
(``_launch.knobs``).

Models (``--step``): ``gpt`` (perf/bench_transformer.py's step) and ``mlp`` (perf/bench_mlp.py's,
``--batch``, 4096 by default on a GPU). On a GPU the rows are milliseconds per step, the device
synchronized around each round. ``--compiled`` (no GPU; run without ``TRITON_INTERPRET``) times
the host path instead, as perf/bench_host_step.py does (kernels compiled for sm_90, launchers that
run nothing; this thread's CPU time) and adds the launches per step of each row.

    python perf/bench_knobs.py [--step gpt,mlp] [--batch N] [--repeat 5] [--compiled]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import time

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import machine


def _module(name: str):
    # (importlib: tritongrad.kernels.triton's ``matmul`` and ``reduction`` names are functions)
    return importlib.import_module(f"tritongrad.kernels.triton.{name}")


@contextlib.contextmanager
def _index_checks(mode: str):
    from tritongrad.autograd import checks

    old = checks.get_index_check_mode()
    checks.set_index_check_mode(mode)
    try:
        yield
    finally:
        checks.raise_deferred_index_errors()
        checks.set_index_check_mode(old)


@contextlib.contextmanager
def _tf32():
    import tritongrad as tg

    old = tg.backends.cuda.matmul.allow_tf32
    tg.backends.cuda.matmul.allow_tf32 = True
    try:
        yield
    finally:
        tg.backends.cuda.matmul.allow_tf32 = old


def variants() -> list:
    """``[(name, tag, context manager factory)]``: the defaults first, then one switch each."""
    from tritongrad.kernels.triton import _launch

    knobs = _launch.knobs
    return [
        ("defaults", "defaults", lambda: knobs(_module("reduction"))),
        ("reductions always split (SPLIT_MIN 0)", "split-reductions",
         lambda: knobs(_module("reduction"), SPLIT_MIN=0)),
        ("split-K on (TARGET_PROGRAMS 132)", "split-K",
         lambda: knobs(_module("matmul"), TARGET_PROGRAMS=132)),
        ("index checks sync", "sync-checks", lambda: _index_checks("sync")),
        ("TF32 products", "tf32", _tf32),
        ("launches through CudaLauncher.__call__", "call-launcher",
         lambda: knobs(_module("launcher"), _DIRECT=False)),
        ("arrays, not addresses, to the C launch", "unpacked",
         lambda: knobs(_module("launcher"), _PACK=False)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", default="gpt,mlp", help="gpt, mlp or both (gpt,mlp)")
    ap.add_argument("--batch", type=int, default=None, help="mlp batch (default 4096; "
                                                             "256 with --compiled)")
    ap.add_argument("--repeat", type=int, default=5, help="rounds")
    ap.add_argument("--inner", type=int, default=5, help="timed steps per row and round")
    ap.add_argument("--compiled", action="store_true",
                    help="time the host path without a GPU (bench_host_step's setup)")
    args = ap.parse_args()
    harness = None
    if args.compiled:
        from bench_launch import compiled_stand_ins

        harness = compiled_stand_ins("bench_knobs --compiled")
        from tritongrad.runtime import memory

        # device values are garbage here: a read-back (index checks in sync mode) gets ones
        memory.to_host = lambda a, non_blocking=False: np.ones(a.shape, dtype=a.dtype.np)
    import bench_host_step

    import tritongrad as tg

    if harness is None and (not tg.cuda.is_available() or tg.cuda.is_emulated()):
        raise SystemExit("bench_knobs: needs a GPU (or --compiled)")
    keys = []
    for name in args.step.split(","):
        if name == "gpt":
            step = bench_host_step.gpt_step(tg)
        elif name == "mlp":
            step = bench_host_step.mlp_step(tg, args.batch or (256 if args.compiled else 4096))
        else:
            raise SystemExit(f"bench_knobs: unknown step {name!r} (gpt, mlp)")
        keys.append(_time_step(tg, name, step, harness, args))
    print("key: " + "; ".join(keys))


def _time_step(tg, label, step, harness, args) -> str:
    """Times ``step`` under each variant, prints its table and returns its key line."""
    sync = (lambda: None) if harness else tg.cuda.synchronize
    clock = time.thread_time if harness else time.perf_counter
    rows = variants()
    times: dict = {name: [] for name, _, _ in rows}
    launches: dict = {}

    def launched() -> int:
        return sum(a + b for a, b in harness.LAUNCHED.values()) if harness else 0

    for r in range(args.repeat + 1):  # round 0: compiles and plans, untimed
        # (each round starts at another row, and each timing after a collection, so that no
        # row always follows the same one or meets the collector's debt)
        for name, _, switch in rows[r % len(rows):] + rows[:r % len(rows)]:
            with switch():
                step()  # plans made again under this switch
                sync()
                gc.collect()
                n0, t0 = launched(), clock()
                for _ in range(args.inner):
                    step()
                sync()
                if r:
                    times[name].append((clock() - t0) / args.inner)
                launches[name] = (launched() - n0) / args.inner
    where = "host path, compiled for sm_90, nothing launched" if harness else \
        tg.cuda.get_device_name()
    print(f"\n{label} step with one switch flipped per row ({where}; median of "
          f"{args.repeat} rounds of {args.inner} steps)\n{machine()}")
    base = float(np.median(times["defaults"]))
    print(f"{'':40}{'ms/step':>9}{'x defaults':>12}" + (f"{'launches':>10}" if harness else ""))
    ratios = []
    for name, tag, _ in rows:
        ms = float(np.median(times[name]))
        print(f"{name:40}{ms * 1e3:>9.2f}{ms / base:>12.2f}"
              + (f"{launches[name]:>10.0f}" if harness else ""))
        if name != "defaults":
            ratios.append(f"{tag} {ms / base:.2f}")
    return f"{label} {base * 1e3:.2f} ms, x: " + ", ".join(ratios)


if __name__ == "__main__":
    main()
