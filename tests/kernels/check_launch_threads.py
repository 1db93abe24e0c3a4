"""Note [concurrent first launches] (kernels/triton/launcher.py), on a machine without a GPU.

    python tests/kernels/check_launch_threads.py

Run in a fresh process by test_launcher.py (it must not see TRITON_INTERPRET=1), with the
stand-in driver and launchers of compile_sm90.py and ``CachedLaunchJIT.check`` on. Eight
threads launch a fresh kernel's first keys at the same moment, directly and through one shared
``Launch``. Each compile returns after a random pause, standing for what a first launch does
on a GPU between Triton caching the compile and our cache keeping it (loading the module,
with the GIL released): without the per-kernel lock the threads compiled each key again and
kept different objects, and the check raised LaunchMismatch, as on the H200. Then Triton's
cache is emptied, so that its dispatch compiles every key anew (the same kernels, other
objects: the check must take them), and one cached launch is swapped for another key's (the
check must still catch it). Prints what it checked; exits 1 on the first failure.
"""

from __future__ import annotations

import random
import sys
import threading
import time

import compile_sm90 as harness  # clears TRITON_INTERPRET before Triton is imported
import numpy as np
import triton.language as tl
from triton.runtime.jit import JITFunction
from tritongrad.kernels.triton import _launch
from tritongrad.kernels.triton.launcher import CachedLaunchJIT, Launch, LaunchMismatch, jit
from tritongrad.runtime import memory
from tritongrad.runtime.device import device

THREADS = 8
WIDTHS = (8, 16, 32, 64)  # K: one kernel each


@jit
def threaded_probe(p, q, n, K: tl.constexpr):
    i = tl.arange(0, K)
    tl.store(p + i, tl.load(q + i, mask=i < n) * 2, mask=i < n)


def _slow_compiles() -> None:
    """Each compile returns after up to 20 ms (see the module docstring)."""
    compile_ = JITFunction._do_compile

    def slow(self, *args, **kwargs):
        kernel = compile_(self, *args, **kwargs)
        time.sleep(random.random() * 0.02)
        return kernel

    JITFunction._do_compile = slow


def main() -> int:
    harness.compile_only()
    _launch._driver_ready = True  # the stand-in driver stays active (compile_sm90.main)
    _slow_compiles()
    assert type(threaded_probe) is CachedLaunchJIT and CachedLaunchJIT.check
    dev = device("cuda", 0)
    a = memory.to_device(np.zeros(64, np.float32), dev)
    b = memory.to_device(np.zeros(64, np.float32), dev)
    shared = {k: Launch(threaded_probe, (1,), (k,)) for k in WIDTHS}
    errors: list = []
    start = threading.Barrier(THREADS)

    def work(i):
        try:
            start.wait()
            for k in WIDTHS if i % 2 else WIDTHS[::-1]:
                for _ in range(3):
                    threaded_probe[(1,)](a, b, 17, K=k)
                    shared[k](a, b, 17)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print(f"FAIL {len(errors)} of {THREADS} threads raised, the first: {errors[0]!r}")
        return 1
    compiles = sum(name == "threaded_probe" for name, _ in harness.COMPILED)
    # one compile per K: Launch(K positional) and K= keyword have keys of their own, one kernel
    if compiles != len(WIDTHS):
        print(f"FAIL {compiles} compiles for {len(WIDTHS)} keys launched by {THREADS} threads")
        return 1
    print(f"ok   {THREADS} threads: {compiles} compiles, "
          f"{len(threaded_probe._launches)} cached launches, every cached launch checked")
    # Triton's dispatch compiles anew (other objects of the same compilation): no mismatch
    threaded_probe.device_caches[0][0].clear()
    for k in WIDTHS:
        threaded_probe[(1,)](a, b, 17, K=k)
        shared[k](a, b, 17)
    recompiled = sum(name == "threaded_probe" for name, _ in harness.COMPILED) - compiles
    print(f"ok   Triton's cache compiled anew ({recompiled} compiles): the same kernels")
    # a cached launch of another kernel is still caught
    first, second = ({key for key in threaded_probe._launches if ("K", k) in key}.pop()
                     for k in WIDTHS[:2])
    threaded_probe._launches[first] = threaded_probe._launches[second]
    try:
        threaded_probe[(1,)](a, b, 17, K=WIDTHS[0])
    except LaunchMismatch:
        print("ok   a cached launch of another kernel raises LaunchMismatch")
        return 0
    print("FAIL a cached launch of another kernel launched unchecked")
    return 1


if __name__ == "__main__":
    sys.exit(main())
