"""All-reduce bandwidth on the CPU: tritongrad.distributed against mpi4py's own Allreduce.

Two ranks (``-n``) all-reduce float32 buffers of 1 to 256 MiB, summing in place:
``dist.all_reduce(tensor)`` on a tritongrad CPU tensor, and ``comm.Allreduce(MPI.IN_PLACE,
array)`` on a NumPy array, the ceiling tritongrad's MPI backend sits on (it hands MPI the
tensor's own host memory). The two take turns within each round, so a shared machine's drift
reaches both alike. A round starts with a barrier; its time is the slowest rank's. Printed:
the median time, the algorithm bandwidth (bytes / time) and the bus bandwidth (algorithm
bandwidth * 2 (n - 1) / n, nccl-tests' measure of what each link carries), and the ratio of
tritongrad's bandwidth to mpi4py's.

    python perf/bench_allreduce.py [-n 2] [--sizes 1,4,16,64,256] [--repeat 10]

It launches itself under ``mpirun`` (found next to the interpreter).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

import _common  # noqa: F401  (sets thread counts before NumPy loads)
import numpy as np
from _common import _fmt, machine

MiB = 1 << 20


def measure(sizes_mib: list[int], repeat: int) -> list | None:
    """On every rank: [(MiB, tritongrad seconds, mpi4py seconds)] on rank 0, None elsewhere."""
    from mpi4py import MPI

    import tritongrad as tg
    import tritongrad.distributed as dist
    dist.init_process_group("mpi")
    comm = MPI.COMM_WORLD
    rows = []
    for mib in sizes_mib:
        n = mib * MiB // 4
        t = tg.zeros(n)  # zeros: the sums stay finite however often they run
        a = np.zeros(n, dtype=np.float32)
        cases = {"tritongrad": lambda t=t: dist.all_reduce(t),
                 "mpi4py": lambda a=a: comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)}
        times = {name: [] for name in cases}
        for fn in cases.values():  # warm-up: first touch of the pages, MPI's buffers
            fn()
        for _ in range(repeat):
            for name, fn in cases.items():
                comm.Barrier()
                t0 = time.perf_counter()
                fn()
                elapsed = time.perf_counter() - t0
                times[name].append(comm.allreduce(elapsed, op=MPI.MAX))
        rows.append((mib, statistics.median(times["tritongrad"]),
                     statistics.median(times["mpi4py"])))
        cases = t = a = None  # free this size's buffers before the next
    dist.destroy_process_group()
    return rows if comm.Get_rank() == 0 else None


def report(rows: list, ranks: int) -> None:
    print(f"\nall_reduce (sum, float32, in place) on {ranks} CPU ranks, MPI backend\n{machine()}")
    factor = 2 * (ranks - 1) / ranks
    print(f"{'size':>8}{'tritongrad':>14}{'mpi4py':>14}{'tg algbw':>12}{'tg busbw':>12}"
          f"{'mpi4py busbw':>14}{'tg / mpi4py':>13}")
    for mib, ttg, tmpi in rows:
        algbw_tg, algbw_mpi = mib * MiB / ttg / 1e9, mib * MiB / tmpi / 1e9
        print(f"{str(mib) + ' MiB':>8}{_fmt(ttg):>14}{_fmt(tmpi):>14}{algbw_tg:>9.2f} GB/s"
              f"{algbw_tg * factor:>7.2f} GB/s{algbw_mpi * factor:>9.2f} GB/s"
              f"{algbw_tg / algbw_mpi:>13.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=2, help="number of ranks")
    ap.add_argument("--sizes", default="1,4,16,64,256", help="buffer sizes in MiB")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker:
        rows = measure(sizes, args.repeat)
        if rows is not None:
            report(rows, args.n)
        return
    mpirun = pathlib.Path(sys.executable).parent / "mpirun"
    if not mpirun.exists():
        sys.exit(f"no mpirun next to {sys.executable}: pip install tritongrad[mpi]")
    cmd = [str(mpirun), "-n", str(args.n), sys.executable, os.path.abspath(__file__),
           "--worker", "-n", str(args.n), "--sizes", args.sizes, "--repeat", str(args.repeat)]
    sys.exit(subprocess.call(cmd))


if __name__ == "__main__":
    main()
