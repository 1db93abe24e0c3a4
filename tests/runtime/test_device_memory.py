"""Storages, copies and the memory statistics, on the emulated device (CI) or a real GPU."""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from tritongrad.runtime import driver, memory
from tritongrad.runtime import dtype as dt
from tritongrad.runtime.device import device

CUDA = device("cuda", 0)
MiB = 1 << 20

_DTYPES = [dt.float32, dt.float64, dt.float16, dt.int8, dt.uint8, dt.int32, dt.int64, dt.bool,
           dt.complex64]


def _sample(shape, d, rng):
    if d is dt.bool:
        return rng.random(shape) < 0.5
    if d.is_complex:
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(d.np)
    if d.is_floating_point:
        return rng.standard_normal(shape).astype(d.np)
    return rng.integers(0, 100, shape).astype(d.np)


@pytest.mark.parametrize("d", _DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (257, 3), (2, 0, 5)])
def test_round_trip(cuda, d, shape):
    host = _sample(shape, d, np.random.default_rng(0))
    a = memory.to_device(host, CUDA)
    assert a.shape == shape and a.dtype is d and a.device == CUDA
    assert a.is_contiguous() or a.numel == 0
    back = memory.to_host(a)
    assert back.dtype == d.np and back.shape == shape
    np.testing.assert_array_equal(back, host)


def test_bfloat16_bit_patterns(cuda):
    bits = np.array([0x3F80, 0xC000, 0x7F80, 0x0001], dtype=np.uint16)  # 1, -2, inf, tiny
    a = memory.to_device(bits, CUDA, dtype=dt.bfloat16)
    assert a.dtype is dt.bfloat16
    np.testing.assert_array_equal(memory.to_host(a), bits)
    with pytest.raises(TypeError, match="uint16 bit patterns"):
        memory.to_device(np.ones(3, np.float32), CUDA, dtype=dt.bfloat16)


def test_to_device_casts_to_the_requested_dtype(cuda):
    a = memory.to_device(np.arange(5, dtype=np.float64), CUDA, dtype=dt.float32)
    assert a.dtype is dt.float32
    np.testing.assert_array_equal(memory.to_host(a), np.arange(5, dtype=np.float32))


def test_to_host_of_strided_views(cuda):
    host = np.arange(7 * 9, dtype=np.float32).reshape(7, 9)
    a = memory.to_device(host, CUDA)
    np.testing.assert_array_equal(memory.to_host(a.getitem((slice(1, 6, 2), slice(2, None)))),
                                  host[1:6:2, 2:])
    np.testing.assert_array_equal(memory.to_host(a.permute((1, 0))), host.T)
    np.testing.assert_array_equal(memory.to_host(a.getitem((3,))), host[3])
    col = a.getitem((slice(None), 4))
    np.testing.assert_array_equal(memory.to_host(col), host[:, 4])
    row = memory.to_device(np.arange(3, dtype=np.int64), CUDA)
    np.testing.assert_array_equal(memory.to_host(row.expand((4, 3))),
                                  np.broadcast_to(np.arange(3), (4, 3)))


def test_copy_between(cuda):
    src = memory.to_device(np.arange(1000, dtype=np.int32), CUDA)
    dst = memory.empty((10, 100), dt.int32, CUDA)
    memory.copy_between(dst, src)
    np.testing.assert_array_equal(memory.to_host(dst).ravel(), np.arange(1000))
    part = src.getitem((slice(100, 200),))  # contiguous view at an offset
    small = memory.empty((100,), dt.int32, CUDA)
    memory.copy_between(small, part)
    np.testing.assert_array_equal(memory.to_host(small), np.arange(100, 200))
    with pytest.raises(ValueError, match="sizes differ"):
        memory.copy_between(small, src)
    with pytest.raises(ValueError, match="contiguous"):
        memory.copy_between(small, dst.permute((1, 0)))


def test_copies_follow_the_current_stream(cuda):
    s = cuda.Stream()
    with cuda.stream(s):
        a = memory.to_device(np.arange(10, dtype=np.float32), CUDA)
        b = memory.empty((10,), dt.float32, CUDA)
        memory.copy_between(b, a)
        out = memory.to_host(b)  # synchronizes s before returning
    assert a.storage.stream == b.storage.stream == s.cuda_stream
    np.testing.assert_array_equal(out, np.arange(10, dtype=np.float32))


def test_memory_statistics_rise_and_fall(cuda):
    cuda.reset_peak_memory_stats()
    base = cuda.memory_allocated()
    a = memory.empty((1000,), dt.float32, CUDA)  # 4000 bytes -> 4096
    assert cuda.memory_allocated() == base + 4096
    b = memory.empty((3 * MiB,), dt.uint8, CUDA)
    assert cuda.memory_allocated() == base + 4096 + 3 * MiB
    assert cuda.memory_reserved() >= cuda.memory_allocated()
    del b
    gc.collect()
    assert cuda.memory_allocated() == base + 4096
    assert cuda.max_memory_allocated() == base + 4096 + 3 * MiB
    cuda.reset_peak_memory_stats()
    assert cuda.max_memory_allocated() == base + 4096
    assert cuda.max_memory_reserved() == cuda.memory_reserved()
    del a
    gc.collect()
    assert cuda.memory_allocated() == base
    stats = cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == base
    assert stats["requested_bytes.all.allocated"] >= 4000 + 3 * MiB
    assert "Allocated memory" in cuda.memory_summary()


def test_empty_cache_returns_memory_to_the_driver(cuda):
    a = memory.empty((64 * MiB,), dt.uint8, CUDA)
    reserved = cuda.memory_reserved()
    free_before = cuda.mem_get_info()[0]
    del a
    gc.collect()
    assert cuda.memory_reserved() == reserved  # cached
    cuda.empty_cache()
    assert cuda.memory_reserved() <= reserved - 64 * MiB
    assert cuda.mem_get_info()[0] >= free_before + 64 * MiB - 2 * MiB  # others may allocate


def test_blocks_are_reused_per_stream(cuda):
    s = cuda.Stream()
    with cuda.stream(s):
        a = memory.empty((5000,), dt.float32, CUDA)
        ptr = a.data_ptr()
        del a
        b = memory.empty((5000,), dt.float32, CUDA)
        assert b.data_ptr() == ptr  # same stream: reused at once
    c = memory.empty((5000,), dt.float32, CUDA)  # default stream: never s's block
    assert c.data_ptr() != ptr
    del b
    gc.collect()
    d = memory.empty((5000,), dt.float32, CUDA)
    assert d.data_ptr() != ptr


def test_record_stream_then_free(cuda):
    s = cuda.Stream()
    a = memory.to_device(np.ones(1000, np.float32), CUDA)
    with cuda.stream(s):
        a.storage.record_stream(s)
    with pytest.raises(ValueError, match="cannot use a storage on cuda:0"):
        a.storage.record_stream(cuda.Stream._wrap(0, 5))  # a stream of another device
    base = cuda.memory_allocated()
    del a
    gc.collect()
    assert cuda.memory_allocated() == base - 4096  # freed now, reusable after s's event
    s.synchronize()
    cuda.empty_cache()


def test_out_of_memory(cuda):
    total = cuda.mem_get_info()[1]
    before = cuda.memory_stats()["num_ooms"]
    with pytest.raises(cuda.OutOfMemoryError) as info:
        memory.empty((total + (1 << 30),), dt.uint8, CUDA)
    msg = str(info.value)
    assert msg.startswith("out of memory allocating ") and " on cuda:0 (allocated " in msg
    assert ", reserved " in msg and ", free " in msg
    assert isinstance(info.value, RuntimeError)
    assert cuda.memory_stats()["num_ooms"] == before + 1
    x = memory.empty((10,), dt.float32, CUDA)  # still usable afterwards
    assert x.data_ptr()


def test_per_process_memory_fraction(cuda):
    """A cap of what is reserved now plus 48 MiB: 40 MiB fits, 40 MiB more does not, until
    the first is freed; the cap then goes back to the whole device."""
    assert cuda.get_per_process_memory_fraction() == 1.0
    total = cuda.get_device_properties().total_memory
    gc.collect()
    cuda.empty_cache()
    base = cuda.memory_reserved()
    fraction = (base + 48 * MiB) / total
    try:
        cuda.set_per_process_memory_fraction(fraction)
        assert cuda.get_per_process_memory_fraction() == fraction
        assert cuda.get_per_process_memory_fraction("cuda:0") == fraction
        a = memory.empty((40 * MiB,), dt.uint8, CUDA)
        with pytest.raises(cuda.OutOfMemoryError) as info:
            memory.empty((40 * MiB,), dt.uint8, CUDA)
        msg = str(info.value)
        assert " allowed by the per-process memory fraction " in msg, msg
        assert "set_per_process_memory_fraction" in msg
        del a
        gc.collect()
        b = memory.empty((40 * MiB,), dt.uint8, CUDA)  # the freed block is reused
        assert cuda.memory_reserved() <= base + 48 * MiB
        del b
    finally:
        cuda.set_per_process_memory_fraction(1.0)
    assert cuda.get_per_process_memory_fraction() == 1.0
    for bad in (-0.5, 1.01):
        with pytest.raises(ValueError, match=rf"^Invalid fraction value: {bad}\. Allowed range"):
            cuda.set_per_process_memory_fraction(bad)
    with pytest.raises(TypeError, match="Invalid type for fraction argument"):
        cuda.set_per_process_memory_fraction("0.5")


@pytest.mark.skipif(driver.is_available() and not driver.is_emulated(),
                    reason="sizes the emulated device: a real GPU is present")
def test_per_process_memory_fraction_of_a_small_emulated_device():
    """TRITONGRAD_EMULATE_CUDA_MEMORY=256MiB, fraction 0.5: 128 MiB may be reserved."""
    code = """
        import gc
        import tritongrad.cuda as c
        from tritongrad.runtime import dtype, memory
        from tritongrad.runtime.device import device
        MiB, cuda0 = 1 << 20, device("cuda", 0)
        assert c.is_emulated() and c.mem_get_info() == (256 * MiB, 256 * MiB)
        c.set_per_process_memory_fraction(0.5)
        a = memory.empty((100 * MiB,), dtype.uint8, cuda0)
        try:
            memory.empty((100 * MiB,), dtype.uint8, cuda0)
        except c.OutOfMemoryError as e:
            print(e)
        else:
            raise AssertionError("no OutOfMemoryError past the fraction")
        assert c.mem_get_info()[0] == 156 * MiB  # the device had room: the cap said no
        del a
        gc.collect()
        with c.stream(c.Stream()):  # another stream: the cached 100 MiB must go back first
            b = memory.empty((100 * MiB,), dtype.uint8, cuda0)
        stats = c.memory_stats()
        assert stats["num_alloc_retries"] == 2 and stats["num_device_free"] == 1, stats
        assert c.memory_reserved() == 100 * MiB
        del b
        gc.collect()
        c.empty_cache()
        assert c.memory_reserved() == 0 and c.mem_get_info()[0] == 256 * MiB
        print("ok")
    """
    env = dict(os.environ, TRITONGRAD_EMULATE_CUDA="1", TRITONGRAD_EMULATE_CUDA_MEMORY="256MiB")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, check=False,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.endswith("ok\n"), r.stdout + r.stderr
    assert ("out of memory allocating 100.00 MiB on cuda:0 (allocated 100.00 MiB, reserved "
            "100.00 MiB, free 156.00 MiB; 128.00 MiB allowed by the per-process memory fraction "
            "0.5 of 256.00 MiB)") in r.stdout, r.stdout


def test_storage_interpreter_surface(cuda):
    """What Triton's interpreter does: storage.cpu(), kernel on host, copy_ back."""
    host = np.arange(16, dtype=np.uint8)
    a = memory.to_device(host, CUDA)
    st = a.storage
    h = st.cpu()
    assert ctypes.string_at(h.data_ptr(), 16) == host.tobytes()
    ctypes.memset(h.data_ptr(), 7, 4)  # the "kernel" writes on the host copy
    assert st.copy_(h) is st
    np.testing.assert_array_equal(memory.to_host(a)[:4], [7, 7, 7, 7])
    if cuda.is_emulated():
        assert h is st  # emulated device memory is host memory


def test_zero_sized_storage(cuda):
    a = memory.empty((0, 3), dt.float32, CUDA)
    assert a.numel == 0 and a.data_ptr() != 0
    assert memory.to_host(a).shape == (0, 3)
