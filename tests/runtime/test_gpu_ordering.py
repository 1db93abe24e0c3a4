"""Stream ordering, event timing and the allocator on a real GPU (skipped elsewhere).

The slow work is a chain of 1 GiB ``cuMemsetD8Async`` calls (~0.4 ms each on an H100):
enough device time for a read queued on another stream to overtake it when nothing orders
the two, and for the allocator's events to be still pending when the test looks.
"""

from __future__ import annotations

import gc
import itertools

import numpy as np
import pytest
from tritongrad.runtime import driver, memory
from tritongrad.runtime import dtype as dt
from tritongrad.runtime.device import device

pytestmark = pytest.mark.gpu

CUDA = device("cuda", 0)
GiB, MiB = 1 << 30, 1 << 20


def _memset(a, value, stream=None):
    h = 0 if stream is None else stream.cuda_stream
    driver.get_driver().memset_d8(0, a.data_ptr(), value, a.numel * a.itemsize, h)


def _slow(stream, buf, repeats=100):
    for i in range(repeats):
        _memset(buf, i & 0xFF, stream)


@pytest.fixture
def big(cuda):
    b = memory.empty((GiB,), dt.uint8, CUDA)
    yield b
    cuda.synchronize()


def test_wait_stream_orders_work_and_its_absence_is_a_race(cuda, big):
    flag = memory.empty((4096,), dt.uint8, CUDA)
    _memset(flag, 0)
    cuda.synchronize()
    s1, s2 = cuda.Stream(), cuda.Stream()
    _slow(s1, big)
    _memset(flag, 7, s1)  # the last thing s1 does
    assert not s1.query()
    with cuda.stream(s2):
        raced = memory.to_host(flag)  # nothing orders s2 after s1: overtakes the chain
    assert not s1.query(), "the chain ended before the racing read: make it longer"
    assert (raced == 0).all()

    _slow(s1, big)
    _memset(flag, 9, s1)
    s2.wait_stream(s1)
    with cuda.stream(s2):
        ordered = memory.to_host(flag)  # s2 waits for s1's event first
    assert (ordered == 9).all()


def test_wait_event_orders_work(cuda, big):
    flag = memory.empty((4096,), dt.uint8, CUDA)
    _memset(flag, 0)
    cuda.synchronize()
    s1, s2 = cuda.Stream(), cuda.Stream()
    _slow(s1, big)
    _memset(flag, 5, s1)
    ev = s1.record_event()
    assert not ev.query()
    s2.wait_event(ev)
    with cuda.stream(s2):
        assert (memory.to_host(flag) == 5).all()
    assert ev.query()


def test_event_timing_measures_device_time(cuda, big):
    s = cuda.Stream()
    times = []
    for repeats in (20, 40):
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record(s)
        _slow(s, big, repeats)
        end.record(s)
        end.synchronize()
        times.append(start.elapsed_time(end))
    gb_per_s = 40 * GiB / (times[1] / 1e3) / 1e9
    assert 100 < gb_per_s < 10_000, f"{gb_per_s:.0f} GB/s for memset is implausible"
    assert 1.5 < times[1] / times[0] < 2.6, times


def test_record_stream_prevents_reuse_until_the_stream_is_done(cuda, big):
    cuda.empty_cache()  # no 256 MiB blocks cached by earlier tests to muddy the pointer checks
    gc.collect()  # now, not after queuing: in a big process it outlasted the chain (H200, 2026-11-29)
    s = cuda.Stream()
    x = memory.empty((256 * MiB,), dt.uint8, CUDA)  # allocated on the default stream
    ptr = x.data_ptr()
    _slow(s, big, 200)
    _memset(x, 3, s)  # s writes x after the chain
    x.storage.record_stream(s)
    del x  # the last reference: freed here (z below gets ptr back only if it was)
    assert not s.query(), "the memset chain finished before the check: make it longer"
    y = memory.empty((256 * MiB,), dt.uint8, CUDA)
    assert y.data_ptr() != ptr, "reused while stream s may still write it"
    s.synchronize()
    z = memory.empty((256 * MiB,), dt.uint8, CUDA)
    assert z.data_ptr() == ptr  # the event completed: reused on the default stream
    del y, z


def test_without_record_stream_the_block_is_reused_at_once(cuda, big):
    """The hazard record_stream exists for: the allocator only knows the allocation stream."""
    cuda.empty_cache()
    s = cuda.Stream()
    x = memory.empty((256 * MiB,), dt.uint8, CUDA)
    ptr = x.data_ptr()
    _slow(s, big, 20)
    _memset(x, 3, s)
    del x
    gc.collect()
    y = memory.empty((256 * MiB,), dt.uint8, CUDA)
    assert y.data_ptr() == ptr
    s.synchronize()


def test_allocator_over_device_memory(cuda):
    cuda.synchronize()
    cuda.empty_cache()
    base_alloc, base_res = cuda.memory_allocated(), cuda.memory_reserved()
    free0 = cuda.mem_get_info()[0]
    rng = np.random.default_rng(0)
    arrays = [memory.empty((int(n),), dt.uint8, CUDA)
              for n in rng.integers(1, 40 * MiB, size=40)]
    assert (cuda.memory_reserved() - base_res) % (2 * MiB) == 0
    assert cuda.mem_get_info()[0] <= free0 - (cuda.memory_reserved() - base_res) + 64 * MiB
    ptrs = sorted((a.data_ptr(), a.numel) for a in arrays)
    assert all(p + n <= q for (p, n), (q, _) in itertools.pairwise(ptrs))  # no overlap
    for a, v in zip(arrays, range(40)):
        _memset(a, v)
    for a, v in zip(arrays, range(40)):
        host = memory.to_host(a)
        assert host[0] == v and host[-1] == v
    del arrays, a
    gc.collect()
    assert cuda.memory_allocated() == base_alloc
    cuda.empty_cache()
    assert cuda.memory_reserved() == base_res
    assert cuda.mem_get_info()[0] >= free0 - 64 * MiB
