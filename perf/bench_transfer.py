"""Host-to-device copies: pageable against pinned memory (``pin_memory()``, ``non_blocking``).

Rows: seconds per copy of ``--mib`` MiB of float32 to the GPU, synchronized, for tritongrad
and torch (when installed) from pageable and from pinned memory, and the host time a
non-blocking copy from pinned memory takes to return (the copy itself still running). The
bandwidth column is bytes over time. On a machine without a GPU, ``TRITONGRAD_EMULATE_CUDA=1``
runs it on the emulated device (host memcpy: a smoke test, not a measurement).

    python perf/bench_transfer.py [--mib 64] [--repeat 20]
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import report, timeit, try_torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    import tritongrad as tg

    if not tg.cuda.is_available():
        raise SystemExit("bench_transfer: needs a CUDA device (or TRITONGRAD_EMULATE_CUDA=1)")
    n = args.mib << 18  # float32 elements
    values = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    pageable, pinned = tg.from_numpy(values), tg.from_numpy(values).pin_memory()
    sync = tg.cuda.synchronize
    cases = [("tritongrad pinned", lambda: pinned.to("cuda", non_blocking=True), sync),
             ("tritongrad pageable", lambda: pageable.to("cuda"), sync),
             ("tritongrad pinned, host time to return",
              lambda: pinned.to("cuda", non_blocking=True), None)]
    torch = try_torch("cuda")
    if torch is not None:
        t_pageable = torch.from_numpy(values)
        t_pinned = t_pageable.pin_memory()
        t_sync = torch.cuda.synchronize
        cases += [("torch pinned", lambda: t_pinned.to("cuda", non_blocking=True), t_sync),
                  ("torch pageable", lambda: t_pageable.to("cuda"), t_sync)]
    rows = timeit(cases, repeat=args.repeat)
    sync()
    where = "emulated device" if tg.cuda.is_emulated() else tg.cuda.get_device_name()
    report(f"Host-to-device copy of {args.mib} MiB float32 ({where})", rows)
    for name, t in rows:
        if "host time" not in name:
            print(f"{name:40s} {values.nbytes / t / 1e9:8.2f} GB/s")


if __name__ == "__main__":
    main()
