"""The host path of a CUDA op at its edges: the allocator's packed hot events (Note [hot
counts]) at the sizes and slacks their fields must hold, and the launch key's alignment
shortcut (Note [cached launches]) for views and foreign memory that are not 16-byte aligned."""

from __future__ import annotations

import pytest
from tritongrad.runtime.allocator import CachingAllocator

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
A = "stream-A"


class _Done:
    def query(self) -> bool:
        return True


def _allocator(fakes):
    raw = fakes.FakeRaw(capacity=1 << 42)  # 4 TiB of addresses, none of them backed
    return CachingAllocator(raw.alloc, raw.free, lambda s: _Done(), mem_info=raw.mem_info)


def _now(alloc, stat: str, pool: str = "all") -> tuple:
    view = alloc.stat(stat, pool)
    return view.current, view.peak, view.allocated, view.freed


@pytest.mark.parametrize("nbytes, again", [
    (100 * GiB, 100 * GiB - 100),    # a block far past 32 bits; slack 0, then 100
    (2 * GiB + 1, 2 * GiB + 512),    # slack 511, then 0
    (11 * MiB + 1, 11 * MiB + 1),    # large pool, kept unsplit: slack 1 MiB + 511
    (1000, 600),                     # small pool
])
def test_hot_events_count_exactly_at_the_edges_of_their_fields(fakes, nbytes, again):
    alloc = _allocator(fakes)
    block = alloc.malloc(nbytes, A)  # the slow path counts it directly
    size = block.size
    pool = "small_pool" if size <= MiB else "large_pool"
    alloc.free(block)  # a hot free: logged with the slack of the slow malloc
    assert "cached" in repr(block)
    assert _now(alloc, "requested_bytes") == (0, nbytes, nbytes, nbytes)
    assert _now(alloc, "allocated_bytes", pool) == (0, size, size, size)
    hot = alloc.malloc(again, A)  # hot when ``again`` rounds to the block's size
    # hot mallocs and frees, folded together at the reads below (Note [hot counts])
    alloc.free(hot)
    hot = alloc.malloc(again, A)
    assert _now(alloc, "requested_bytes") == (again, max(nbytes, again), nbytes + 2 * again,
                                              nbytes + again)
    assert _now(alloc, "allocated_bytes", "all") == _now(alloc, "allocated_bytes", pool)
    assert _now(alloc, "allocation", pool) == (1, 1, 3, 2)
    assert _now(alloc, "active_bytes", pool)[:2] == (hot.size, max(size, hot.size))
    other = "large_pool" if pool == "small_pool" else "small_pool"
    assert _now(alloc, "allocated_bytes", other) == (0, 0, 0, 0)
    alloc.free(hot)
    assert alloc.allocated == 0
    assert alloc.memory_stats()["requested_bytes.all.freed"] == nbytes + 2 * again


def test_a_fold_longer_than_its_kept_arrays(fakes, monkeypatch):
    # frees do not fold, so the log may pass _FOLD_AT; and the kept work arrays are sized at
    # the first fold, which a later, longer log must not overrun
    from tritongrad.runtime import allocator as allocator_module

    monkeypatch.setattr(allocator_module, "_FOLD_AT", 4)
    alloc = _allocator(fakes)
    blocks = [alloc.malloc(512 * (1 + i % 3), A) for i in range(12)]
    for b in blocks:
        alloc.free(b)
    blocks = [alloc.malloc(512 * (1 + i % 3), A) for i in range(12)]  # hot, folds at 4
    for b in blocks:
        alloc.free(b)  # 12 frees logged, none folded
    assert len(alloc._log) > 4  # past _FOLD_AT
    assert _now(alloc, "allocation") == (0, 12, 24, 24)
    assert alloc.stat("allocated_bytes").peak == 4 * (512 + 1024 + 1536)


@pytest.fixture
def key_of():
    """The generated launch key of one specialized argument, and ``_token``'s rule for it."""
    launcher = pytest.importorskip("tritongrad.kernels.triton.launcher")
    key = launcher._key_function((launcher._SPECIALIZED,), False)
    return (lambda a: key(0, (a,))[1]), (lambda a: launcher._token(a, launcher._SPECIALIZED))


def test_launch_keys_see_misaligned_views_and_foreign_memory(cuda, key_of):
    from tritongrad.runtime import dtype as D
    from tritongrad.runtime import memory
    from tritongrad.runtime.device import device

    key, token = key_of
    dev = device("cuda", 0)
    base = memory.empty((64,), D.float32, dev)
    cases = {
        "offset 0": (base, D.float32),
        "offset 1 (4 bytes)": (base.as_strided((8,), (1,), 1), (D.float32, False)),
        "offset 4 (16 bytes)": (base.as_strided((8,), (1,), 4), D.float32),
    }
    ptr = base.storage.ptr
    for shift, want in ((4, (D.float32, False)), (16, D.float32)):
        foreign = memory.ForeignStorage(ptr + shift, 128, base.device, None)
        view = memory.DeviceArray(foreign, 0, (8,), (1,), D.float32)
        cases[f"foreign memory at +{shift}, offset 0"] = (view, want)
        cases[f"foreign memory at +{shift}, offset 3"] = (
            memory.DeviceArray(foreign, 3, (4,), (1,), D.float32),
            (D.float32, False) if (shift + 12) & 15 else D.float32)
    for name, (a, want) in cases.items():
        assert key(a) == token(a) == want, name


def _stand_in_launcher(calls: list):
    """Triton's ``CudaLauncher`` of a kernel without scratch memory, made without compiling
    its C part (no GPU here): its ``launch`` records the arguments it is given."""
    driver_module = pytest.importorskip("triton.backends.nvidia.driver")
    launcher = object.__new__(driver_module.CudaLauncher)
    fields = {"gsan_enabled": False, "global_scratch_size": 0, "global_scratch_align": 1,
              "profile_scratch_size": 0, "profile_scratch_align": 1, "num_ctas": 1,
              "launch_cooperative_grid": False, "launch_pdl": True, "arg_annotations": ("ann",),
              "kernel_signature": b"sig", "launch": lambda *args: calls.append(args)}
    for name, value in fields.items():
        setattr(launcher, name, value)
    return launcher


def test_direct_launches_pass_what_the_launchers_call_would(monkeypatch):
    # Note [direct launches]: the C launch gets, argument for argument, what this Triton's
    # CudaLauncher.__call__ gives it for the cached launch's call (3.6 and 3.9 are tested)
    import triton

    launcher_module = pytest.importorskip("tritongrad.kernels.triton.launcher")

    class ActiveDriver:  # what __call__ may ask of the active driver
        def allocate_default_profile_scratch(self, size, align, stream):
            raise AssertionError("no profile scratch for this kernel")

    monkeypatch.setattr(triton.runtime.driver, "_active", ActiveDriver())
    calls: list = []
    run = _stand_in_launcher(calls)
    head, tail = (object(), 7, None), (object(), 2.5, 16)
    fire = launcher_module._direct(run, "function", "metadata")
    if launcher_module._release() not in ("3.6", "3.9"):
        assert fire is None  # an untested release goes through __call__
        return
    run(3, 2, 1, 1234, "function", "metadata", None, None, None, *head, *tail)
    fire(3, 2, 1, 1234, head + tail)
    assert len(calls) == 2 and calls[0] == calls[1]
    # kernels that need scratch memory, and other launcher classes, take __call__
    run.global_scratch_size = 64
    assert launcher_module._direct(run, "function", "metadata") is None
    assert launcher_module._direct(lambda *a: None, "function", "metadata") is None


def test_packed_arguments_are_the_arrays_addresses(cuda, monkeypatch):
    # Note [packed pointers]: each array becomes its data_ptr(), at any offset and element
    # size; every other argument is passed as it is; one packer per argument layout
    launcher = pytest.importorskip("tritongrad.kernels.triton.launcher")
    from tritongrad.runtime import dtype as D
    from tritongrad.runtime import memory
    from tritongrad.runtime.device import device

    dev = device("cuda", 0)
    f32, f16 = memory.empty((64,), D.float32, dev), memory.empty((64,), D.float16, dev)
    i64 = memory.empty((8,), D.int64, dev)
    args = (f32.as_strided((8,), (1,), 3), 5, None, f16.as_strided((4,), (2,), 7), 2.5,
            (1, 2), i64)
    pack = launcher._packer(args)
    assert pack(args) == (f32.data_ptr() + 12, 5, None, f16.data_ptr() + 14, 2.5, (1, 2),
                          i64.data_ptr())
    other = (f32, 6, None, f16, 1.0, (3, 4), i64.as_strided((2,), (1,), 1))
    assert launcher._packer(other) is pack  # the same layout, the same packer
    assert pack(other) == tuple(a.data_ptr() if isinstance(a, memory.DeviceArray) else a
                                for a in other)
    assert launcher._packer((1, None, 2.0)) is None  # nothing to pack
    monkeypatch.setattr(launcher, "_PACK", False)
    assert launcher._packer(args) is None
