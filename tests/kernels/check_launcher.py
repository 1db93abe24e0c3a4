"""Note [cached launches] against Triton's own specialization, on a machine without a GPU.

    python tests/kernels/check_launcher.py

Run in a fresh process by test_launcher.py (it must not see TRITON_INTERPRET=1). For a probe
kernel with every kind of parameter (pointer, specialized and unspecialized integers, a float,
a tuple, an integer whose annotation fixes its type, a constexpr), each argument is swept over values on both sides of every boundary
Triton specializes on (alignment, 1, divisibility by 16, the int32/int64/uint64 widths) while
the others stay fixed: a launch key must never stand for two of Triton's specializations.
The keys of a plan's ``Launch`` (Note [plan launches]), which binds the constexpr and keys the
other arguments only, are swept the same way. Then the probe is launched through the stand-in
launchers of compile_sm90.py with arguments that need different kernels, directly and through
a ``Launch``, each cached launch checked against Triton's dispatch. Prints what it checked;
exits 1 on the first mismatch.
"""

from __future__ import annotations

import sys

import compile_sm90 as harness  # clears TRITON_INTERPRET before Triton is imported
import numpy as np
import triton.language as tl
from tritongrad.kernels.triton import _launch
from tritongrad.kernels.triton.launcher import CachedLaunchJIT, Launch, LaunchMismatch, jit
from tritongrad.runtime import memory
from tritongrad.runtime.array import DeviceArray
from tritongrad.runtime.device import device


@jit(do_not_specialize=["u", "v"])
def probe(p, q, s, u, f, t, v: tl.int64, K: tl.constexpr):
    i = tl.arange(0, K)
    tl.store(p + i * s, tl.load(q + i * u) * f + t[0] + v)


def main() -> int:
    harness.compile_only()
    _launch._driver_ready = True  # the stand-in driver stays active (compile_sm90.main)
    assert type(probe) is CachedLaunchJIT
    dev = device("cuda", 0)
    base = memory.to_device(np.zeros(64, np.float32), dev)
    half = memory.to_device(np.zeros(64, np.float16), dev)

    def view(a, offset):
        return DeviceArray(a.storage, offset, (8,), (1,), a.dtype)

    ints = [0, 1, 2, 15, 16, 17, 32, -1, -16, 2**31 - 16, 2**31 - 1, 2**31, 2**32, -2**31,
            -2**31 - 16, 2**63 - 16, 2**63, 2**64 - 16]
    arrays = [view(base, k) for k in range(6)] + [view(half, k) for k in range(10)]
    scalars = ints + [True, False, 0.0, 1.0, 16.0, None]
    sweeps = {0: arrays, 1: arrays, 2: scalars, 3: scalars, 4: scalars,
              5: [(i, j) for i in ints[:9] for j in (1, 16, 17)], 6: scalars, 7: [16, 32]}
    fixed = [arrays[0], arrays[1], 16, 16, 1.5, (16, 1), 16, 16]
    *_, binder = probe.device_caches[0]
    head_key = probe.key_function(7)  # a Launch binding K: keys of the first seven arguments
    checked = 0
    for pos, values in sweeps.items():
        seen: dict = {}
        seen_head: dict = {}
        for v in values:
            args = list(fixed)
            args[pos] = v
            try:
                key = probe.launch_key(0, tuple(args), {"num_warps": 4})
                head = head_key(0, tuple(args[:7])) if pos < 7 else None  # (K: the plan's)
            except Exception as e:  # noqa: BLE001 - an uncached kind is allowed, reported
                print(f"  argument {pos} = {v!r}: Triton's own path ({type(e).__name__})")
                continue
            _, spec, _ = binder(*args, num_warps=4)
            spec = repr(spec)
            for keys, k in ((seen, key), (seen_head, head)):
                if k is not None and keys.setdefault(k, spec) != spec:
                    print(f"FAIL argument {pos} = {v!r}: key {k!r} stands for both {keys[k]} "
                          f"and {spec}")
                    return 1
            checked += 1
        print(f"ok   argument {pos}: {len(values)} values, {len(seen)} keys")
    # launches: each new specialization compiles its own kernel; repeats are cached and checked
    for s, u in [(16, 16), (16, 16), (17, 16), (17, 16), (1, 16), (16, 3), (16, 2**40)]:
        probe[(1,)](view(base, 0), view(base, 8), s, u, 2.0, (s, 1), 3, K=8)
        probe[(1,)](view(base, 1), view(base, 8), s, u, 2.0, (s, 1), 3, K=8)  # misaligned p
    slow, cached = harness.LAUNCHED["probe"]
    print(f"{checked} keys checked; probe: {len(probe._launches)} cached launches, "
          f"{slow} launches through Triton's dispatch, {cached} through the cache")
    if not cached or slow != len(probe._launches):
        return 1
    # the same launches through a plan's Launch: the first of each key through the probe's own
    # path (K now positional: keys of their own there), then the Launch's cache, each checked
    # against Triton's dispatch (check is on)
    kernels = len(probe._launches)
    launch = Launch(probe, (1,), (8,))
    calls = 0
    for _ in range(2):
        for s, u in [(16, 16), (17, 16), (1, 16), (16, 3), (16, 2**40)]:
            for p in (view(base, 0), view(base, 1)):
                launch(p, view(base, 8), s, u, 2.0, (s, 1), 3)
                calls += 1
    slow2, cached2 = harness.LAUNCHED["probe"]
    print(f"Launch: {len(launch._launches)} cached launches, {cached2 - cached} of {calls} "
          f"calls cached, {slow2 - slow} through Triton's dispatch")
    firsts = len(launch._launches)
    if not (firsts == kernels and slow2 - slow == firsts and cached2 - cached == calls - firsts):
        return 1
    # Note [packed pointers]: a cached launch hands the C launch its arrays' addresses (an
    # array at an offset included); Triton's own path hands it the arrays
    from tritongrad.kernels.triton import launcher as launcher_module

    p, q = view(base, 1), view(half, 3)
    harness.RECORD_ARGS = True
    for packed in (True, False):
        launcher_module._PACK = packed
        _launch.clear_plans()  # (the cached launches keep their packers)
        for _ in range(2):  # the first launch of the key, then the cached one
            probe[(1,)](p, q, 16, 16, 2.0, (16, 1), 3, K=8)
            Launch(probe, (1,), (8,))(p, q, 16, 16, 2.0, (16, 1), 3)
        got = harness.LAST_ARGS["probe"][:2]
        want = (p.data_ptr(), q.data_ptr()) if packed else (p, q)
        if got != want or (packed and not all(type(g) is int for g in got)):
            print(f"FAIL cached launches with packing {'on' if packed else 'off'} passed "
                  f"{got!r}, not {want!r}")
            return 1
    launcher_module._PACK = True
    _launch.clear_plans()
    print("ok   cached launches pass their arrays' addresses (packing on), the arrays (off)")
    # the check catches a cached launch of another kernel: the first key's entry replaced by
    # the second's (s = 17: another specialization)
    first, second = list(launch._launches)[:2]
    launch._launches[first] = launch._launches[second]
    try:
        launch(view(base, 0), view(base, 8), 16, 16, 2.0, (16, 1), 3)
    except LaunchMismatch:
        print("ok   a Launch's entry for another kernel raises LaunchMismatch")
        return 0
    print("FAIL a Launch's entry for another kernel launched unchecked")
    return 1


if __name__ == "__main__":
    sys.exit(main())
