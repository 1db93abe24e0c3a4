"""The torch.cuda names added on top of the runtime (docs/runtime.md, "The rest of torch.cuda"):
external streams, memory pools, raw allocations, the cache switch, snapshots, the pinned
allocator's statistics, NVML queries and the small queries.

Tests that take the ``cuda`` fixture run on the emulated device in CI and on the real driver
where a GPU is lent; the ``gpu``-marked ones show on hardware what only it can.
"""

from __future__ import annotations

import gc
import sys
import threading
import types

import numpy as np
import pytest

import tritongrad as tg
from tritongrad.runtime import driver, memory, pinned, streams
from tritongrad.runtime.allocator import round_size

MiB = 1 << 20


def _pool_segments(snapshot, pool_id):
    return [s for s in snapshot if s["segment_pool_id"] == pool_id]


def _block_at(snapshot, ptr):
    """The (segment, block) of the snapshot that starts at ``ptr``."""
    for seg in snapshot:
        for b in seg["blocks"]:
            if b["address"] == ptr:
                return seg, b
    raise AssertionError(f"no block at 0x{ptr:x}")


@pytest.fixture
def foreign_stream(cuda):
    """A CUstream made by "another library" (straight through the driver), destroyed by it."""
    drv = driver.get_driver()
    h = drv.stream_create(0)
    yield h
    drv.stream_synchronize(0, h)
    drv.stream_destroy(0, h)


@pytest.fixture
def driver_calls(monkeypatch):
    """Records the driver's event_record (stream) and stream_wait_event (stream) calls."""
    drv = driver.get_driver()
    calls = []
    real_record, real_wait = drv.event_record, drv.stream_wait_event

    def event_record(dev, event, stream):
        calls.append(("record", stream, event))
        return real_record(dev, event, stream)

    def stream_wait_event(dev, stream, event):
        calls.append(("wait", stream, event))
        return real_wait(dev, stream, event)

    monkeypatch.setattr(drv, "event_record", event_record)
    monkeypatch.setattr(drv, "stream_wait_event", stream_wait_event)
    return calls


# -- ExternalStream, get_stream_from_external ----------------------------------------------
def test_external_stream_runs_work_on_the_foreign_handle_and_is_never_recycled(cuda,
                                                                             foreign_stream):
    es = cuda.ExternalStream(foreign_stream)
    assert isinstance(es, cuda.Stream) and es.cuda_stream == foreign_stream
    assert es.device_index == 0 and es == streams.Stream._wrap(foreign_stream, 0)
    assert "ExternalStream" in repr(es)
    x = tg.ones(16, device="cuda")
    with cuda.stream(es):
        assert cuda.current_stream() == es
        y = x * 2
    assert y._data.storage.stream == foreign_stream  # allocated for it
    np.testing.assert_allclose(y.cpu().numpy(), 2.0)
    es.synchronize()
    assert es.query()
    del es
    gc.collect()
    assert all(foreign_stream not in pool for pool in streams._stream_pool.values())
    assert cuda.Stream().cuda_stream != foreign_stream
    assert driver.get_driver().stream_query(0, foreign_stream)  # not destroyed either


def test_external_stream_is_ordered_by_wait_stream_and_events(cuda, foreign_stream,
                                                              driver_calls):
    es = cuda.ExternalStream(foreign_stream, device=0)
    default = cuda.default_stream()
    default.wait_stream(es)
    (rec, wait) = driver_calls
    assert rec[:2] == ("record", foreign_stream) and wait[:2] == ("wait", 0)
    assert wait[2] == rec[2]  # the default stream waits on the event recorded on es
    driver_calls.clear()
    ev = cuda.Event()
    ev.record(default)
    es.wait_event(ev)
    assert driver_calls[-1][:2] == ("wait", foreign_stream)


def test_record_stream_on_an_external_stream_delays_reuse(cuda, foreign_stream,
                                                          driver_calls):
    es = cuda.ExternalStream(foreign_stream)
    x = tg.empty(1000, device="cuda")
    x.record_stream(es)
    driver_calls.clear()
    del x  # freed with a recorded use: an event on the foreign stream guards the block
    gc.collect()
    assert [c[1] for c in driver_calls if c[0] == "record"] == [foreign_stream]


def test_backward_follows_the_external_stream_a_node_was_recorded_on(cuda, foreign_stream,
                                                                      driver_calls):
    es = cuda.ExternalStream(foreign_stream)
    x = tg.ones(8, device="cuda", requires_grad=True)
    es.wait_stream(cuda.current_stream())
    with cuda.stream(es):
        y = x * 3
    assert y.grad_fn._stream == es
    loss = y.sum()  # on the default stream
    driver_calls.clear()
    loss.backward()
    waiting = {c[1] for c in driver_calls if c[0] == "wait"}
    # MulBackward runs on es after SumBackward's gradient (default); the caller waits on es
    assert waiting == {foreign_stream, 0}
    np.testing.assert_allclose(x.grad.cpu().numpy(), 3.0)


def test_get_stream_from_external_returns_an_unowned_stream(cuda, foreign_stream):
    s = cuda.get_stream_from_external(foreign_stream)
    assert type(s) is cuda.Stream and s.cuda_stream == foreign_stream
    del s
    gc.collect()
    assert all(foreign_stream not in pool for pool in streams._stream_pool.values())
    with pytest.raises(TypeError, match="stream_ptr must be an int"):
        cuda.ExternalStream("0x1234")
    with pytest.raises(driver.CudaError, match="invalid device ordinal"):
        cuda.get_stream_from_external(foreign_stream, device=7)


# -- MemPool, use_mem_pool -----------------------------------------------------------------
def test_allocations_inside_use_mem_pool_land_in_the_pools_segments(cuda):
    pool = cuda.MemPool()
    assert isinstance(pool.id, tuple) and len(pool.id) == 2 and pool.use_count() == 1
    outside = tg.empty(1000, device="cuda")
    with cuda.use_mem_pool(pool):
        assert pool.use_count() == 2
        inside = tg.empty(1000, device="cuda")
    assert pool.use_count() == 1
    seg, block = _block_at(pool.snapshot(), inside.data_ptr())
    assert seg["segment_pool_id"] == pool.id and block["state"] == "active_allocated"
    assert block["requested_size"] == 4000
    pool_ptrs = {b["address"] for s in pool.snapshot() for b in s["blocks"]}
    assert outside.data_ptr() not in pool_ptrs
    seg, _ = _block_at(cuda.memory_snapshot(), outside.data_ptr())
    assert seg["segment_pool_id"] == (0, 0)
    assert _pool_segments(cuda.memory_snapshot(), pool.id) == pool.snapshot()


def test_freed_pool_blocks_stay_in_the_pool(cuda):
    pool = cuda.MemPool()
    with cuda.use_mem_pool(pool):
        a = tg.empty(3000, device="cuda")
    ptr = a.data_ptr()
    del a
    gc.collect()
    assert _block_at(pool.snapshot(), ptr)[1]["state"] == "inactive"
    b = tg.empty(3000, device="cuda")  # outside: never the pool's block
    assert b.data_ptr() != ptr
    with cuda.use_mem_pool(pool):
        c = tg.empty(3000, device="cuda")  # inside: the pool's freed block again
    assert c.data_ptr() == ptr


def test_use_mem_pool_routes_only_this_threads_allocations(cuda):
    pool = cuda.MemPool()
    got = {}
    with cuda.use_mem_pool(pool):
        mine = tg.empty(256, device="cuda")
        t = threading.Thread(target=lambda: got.setdefault("x", tg.empty(256, device="cuda")))
        t.start()
        t.join()
    pool_ptrs = {b["address"] for s in pool.snapshot() for b in s["blocks"]}
    assert mine.data_ptr() in pool_ptrs and got["x"].data_ptr() not in pool_ptrs


def test_nested_pools_and_the_end_of_a_pool(cuda):
    outer, inner = cuda.MemPool(), cuda.MemPool()
    with cuda.use_mem_pool(outer):
        with cuda.use_mem_pool(inner):
            a = tg.empty(100, device="cuda")
        b = tg.empty(100, device="cuda")
    assert _block_at(inner.snapshot(), a.data_ptr())
    assert _block_at(outer.snapshot(), b.data_ptr())
    cuda.empty_cache()
    reserved = cuda.memory_reserved()
    inner_id = inner.id
    del inner  # a block still lives: its segment stays until freed and emptied
    gc.collect()
    assert _pool_segments(cuda.memory_snapshot(), inner_id)
    del a
    gc.collect()
    cuda.empty_cache()
    assert not _pool_segments(cuda.memory_snapshot(), inner_id)
    assert cuda.memory_reserved() == reserved - 2 * MiB
    outer_id = outer.id
    del b, outer  # everything free: the pool's segment goes back with the pool
    gc.collect()
    assert not _pool_segments(cuda.memory_snapshot(), outer_id)


def test_a_graph_captures_into_a_mem_pool(cuda):
    pool = cuda.MemPool()
    x = tg.ones(32, device="cuda")
    _ = x * 2  # compile before capturing
    g = cuda.CUDAGraph()
    with cuda.graph(g, pool=pool.id):
        y = x * 2
    assert _block_at(pool.snapshot(), y.data_ptr())
    assert pool.use_count() == 2  # the pool object and the graph
    g.replay()
    np.testing.assert_allclose(y.cpu().numpy(), 2.0)
    g.reset()
    assert pool.use_count() == 1


def test_mem_pool_arguments(cuda):
    with pytest.raises(NotImplementedError, match="custom allocator"):
        cuda.MemPool(allocator=object())
    with pytest.raises(NotImplementedError, match="no_split"):
        cuda.MemPool(no_split=True)
    with pytest.raises(TypeError, match="expected a MemPool"):
        with cuda.use_mem_pool((0, 1)):
            pass


def test_use_on_oom_pool_serves_a_general_request_out_of_memory(make_allocator, fakes):
    for use_on_oom in (True, False):
        alloc, raw, _ = make_allocator(raw=fakes.FakeRaw(capacity=22 * MiB))
        alloc.create_pool((0, 99), use_on_oom=use_on_oom)
        alloc.begin_allocate_thread_to_pool((0, 99), threading.get_ident())
        pooled = alloc.malloc(MiB, "s")
        alloc.end_allocate_thread_to_pool((0, 99), threading.get_ident())
        alloc.release_pool((0, 99))
        ptr = pooled.ptr
        alloc.free(pooled)
        big = alloc.malloc(2 * MiB, "s")  # the device is now full (2 + 20 MiB segments)
        if use_on_oom:
            assert alloc.malloc(MiB, "s").ptr == ptr
        else:
            with pytest.raises(tg.cuda.OutOfMemoryError):
                alloc.malloc(MiB, "s")
        alloc.free(big)


# -- caching_allocator_alloc / delete / enable ---------------------------------------------
def test_caching_allocator_alloc_and_delete(cuda):
    before = cuda.memory_allocated()
    ptr = cuda.caching_allocator_alloc(3000)
    assert isinstance(ptr, int) and cuda.memory_allocated() == before + round_size(3000)
    _, block = _block_at(cuda.memory_snapshot(), ptr)
    assert block["state"] == "active_allocated" and block["requested_size"] == 3000
    cuda.caching_allocator_delete(ptr)
    assert cuda.memory_allocated() == before
    assert _block_at(cuda.memory_snapshot(), ptr)[1]["state"] == "inactive"
    assert cuda.caching_allocator_alloc(3000) == ptr  # the freed block is reused
    cuda.caching_allocator_delete(ptr)
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        cuda.caching_allocator_delete(ptr)
    s = cuda.Stream()
    p2 = cuda.caching_allocator_alloc(100, device=0, stream=s)
    p3 = cuda.caching_allocator_alloc(100, stream=s.cuda_stream)
    assert _block_at(cuda.memory_snapshot(), p2)[0]["stream"] == s.cuda_stream
    cuda.caching_allocator_delete(p2)
    cuda.caching_allocator_delete(p3)
    with pytest.raises(TypeError, match="Invalid type for stream argument"):
        cuda.caching_allocator_alloc(100, stream="s")
    assert cuda.caching_allocator_alloc(0) == 0
    cuda.caching_allocator_delete(0)
    assert cuda.get_allocator_backend() == "native"


def test_caching_allocator_disabled_gives_each_free_back_to_the_driver(cuda):
    tg.ones(1, device="cuda")  # CUDA initialised: PyTorch ignores the switch before that
    stats = cuda.memory_stats
    with cuda.caching_allocator_disabled():
        assert not memory.allocator(0).caching
        reserved = cuda.memory_reserved()
        frees = stats()["num_device_free"]
        x = tg.empty(1000, device="cuda")
        seg, _ = _block_at(cuda.memory_snapshot(), x.data_ptr())
        assert seg["total_size"] == round_size(4000)  # a segment of its own size
        assert cuda.memory_reserved() == reserved + round_size(4000)
        del x
        gc.collect()
        assert cuda.memory_reserved() == reserved
        assert stats()["num_device_free"] == frees + 1
    assert memory.allocator(0).caching
    y = tg.empty(1000, device="cuda")
    r = cuda.memory_reserved()
    del y
    gc.collect()
    assert cuda.memory_reserved() == r  # cached again


# -- memory_snapshot -----------------------------------------------------------------------
def test_memory_snapshot_agrees_with_the_statistics(cuda):
    keep = [tg.empty(n, device="cuda") for n in (10, 1000, 300_000, 3_000_000)]
    del keep[1]
    gc.collect()
    snap = cuda.memory_snapshot()
    st = cuda.memory_stats()
    assert sum(s["total_size"] for s in snap) == cuda.memory_reserved()
    assert sum(s["allocated_size"] for s in snap) == cuda.memory_allocated()
    assert sum(s["active_size"] for s in snap) == st["active_bytes.all.current"]
    assert sum(s["requested_size"] for s in snap) == st["requested_bytes.all.current"]
    assert len(snap) == st["segment.all.current"]
    keys = {"device", "address", "total_size", "allocated_size", "active_size",
            "requested_size", "stream", "segment_type", "segment_pool_id", "is_expandable",
            "frames", "blocks"}
    for seg in snap:
        assert set(seg) == keys
        addr = seg["address"]
        for b in seg["blocks"]:  # the blocks tile the segment, in order
            assert set(b) == {"address", "size", "requested_size", "state", "frames"}
            assert b["address"] == addr
            addr += b["size"]
        assert addr == seg["address"] + seg["total_size"]
        assert seg["segment_type"] == ("small" if seg["total_size"] == 2 * MiB else "large")
    assert _block_at(snap, keep[2].data_ptr())[0]["segment_type"] == "large"


def test_snapshot_shows_blocks_pending_on_other_streams(make_allocator):
    alloc, _, events = make_allocator()
    b = alloc.malloc(1000, "s0")
    alloc.record_stream(b, "s1")
    alloc.free(b)
    (seg,) = alloc.snapshot()
    assert seg["blocks"][0]["state"] == "active_pending_free"
    assert seg["active_size"] == 1024 and seg["allocated_size"] == 0
    events.complete()
    alloc.malloc(10, "s0")
    assert alloc.snapshot()[0]["blocks"][0]["state"] == "active_allocated"


# -- the small queries ---------------------------------------------------------------------
def test_small_queries(cuda):
    cuda.init()
    cuda.ipc_collect()
    assert cuda.has_half is True and cuda.has_magma is False
    gens = cuda.default_generators
    assert isinstance(gens, tuple) and len(gens) == cuda.device_count()
    assert gens[0] is cuda.random.default_generators()[0] and "default_generators" in dir(cuda)
    major, minor = cuda.get_device_capability()
    assert f"-gencode compute=compute_{major}{minor},code=sm_{major}{minor}" \
        in cuda.get_gencode_flags()
    assert cuda.can_device_access_peer(0, 0) is False  # no device is its own peer
    n = cuda.device_count()
    with pytest.raises(AssertionError, match="Invalid peer device id"):
        cuda.can_device_access_peer(0, n)
    with pytest.raises(AssertionError, match="Invalid device id"):
        cuda.can_device_access_peer(n, 0)
    cuda.check_error(0)
    with pytest.raises(cuda.CudaError, match=r"out of memory \(2\)") as e:
        cuda.check_error(2)
    assert e.value.code == "cudaErrorMemoryAllocation"
    with pytest.raises(RuntimeError, match="does not use cuBLAS"):
        cuda.current_blas_handle()
    with pytest.raises(RuntimeError, match="does not use cuSOLVER"):
        cuda.current_solver_handle()
    with pytest.raises(NotImplementedError, match="pluggable CUDA allocators"):
        cuda.CUDAPluggableAllocator("x.so", "alloc", "free")
    with pytest.raises(NotImplementedError, match="pluggable CUDA allocators"):
        cuda.change_current_allocator(None)


def test_device_memory_used_follows_the_device(cuda):
    free, total = cuda.mem_get_info()
    used = cuda.device_memory_used()
    if cuda.is_emulated():  # no NVML: the driver's total - free
        assert used == total - free
        x = tg.empty(64 * MiB // 4, device="cuda")  # a new segment
        assert cuda.device_memory_used() >= used + 64 * MiB
        del x
    else:  # NVML's figure and the driver's describe the same memory
        assert abs(used - (total - free)) < total // 20


def test_host_memory_stats_follow_the_pinned_allocator(cuda):
    keys = {f"{s}.{f}" for s in ("allocations", "allocated_bytes", "active_requests",
                                 "active_bytes")
            for f in ("current", "peak", "allocated", "freed")}
    keys |= {f"{t}.{f}" for t in ("host_alloc_time", "host_free_time")
             for f in ("total", "max", "min", "count", "avg")}
    keys |= {"num_host_alloc", "num_host_free"}
    assert set(cuda.host_memory_stats()) == keys
    # (earlier tests' pinned blocks may still wait on events: settled first, so that the
    # allocation below, which polls them, changes the counts by its own block only)
    gc.collect()
    cuda.synchronize()
    pinned.host_allocator().empty_cache()
    before = cuda.host_memory_stats()
    a = pinned.empty((1000,), np.float32)  # 4000 bytes: a 4096-byte block
    st = cuda.host_memory_stats()
    assert st["active_requests.current"] == before["active_requests.current"] + 1
    assert st["active_bytes.current"] == before["active_bytes.current"] + 4096
    assert st["allocated_bytes.current"] >= st["active_bytes.current"]
    del a
    gc.collect()
    st = cuda.host_memory_stats()
    assert st["active_requests.current"] == before["active_requests.current"]
    assert cuda.host_memory_stats_as_nested_dict()["active_bytes"]["current"] == \
        st["active_bytes.current"]
    pinned.host_allocator().empty_cache()
    st = cuda.host_memory_stats()
    assert st["allocations.current"] == 0 and st["num_host_free"] >= 1
    assert st["host_free_time.count"] == st["num_host_free"]
    cuda.reset_peak_host_memory_stats()
    assert cuda.host_memory_stats()["active_bytes.peak"] == 0
    cuda.reset_accumulated_host_memory_stats()
    st = cuda.host_memory_stats()
    assert st["num_host_alloc"] == st["allocations.allocated"] == 0
    assert st["host_alloc_time.count"] == 0


# -- NVML ----------------------------------------------------------------------------------
_NVML = ("utilization", "memory_usage", "temperature", "power_draw", "clock_rate")


def test_nvml_queries_on_the_emulated_device_raise_naming_the_package(cuda):
    if not cuda.is_emulated():
        pytest.skip("the emulated device's answer")
    for name in _NVML:
        with pytest.raises(RuntimeError, match="nvidia-ml-py"):
            getattr(cuda, name)()
    assert "nvidia-ml-py" in cuda.list_gpu_processes()


@pytest.fixture
def as_gpu(cuda, monkeypatch):
    """The driver answering as a real GPU would for NVML's purposes (not emulated, a UUID)."""
    drv = driver.get_driver()
    monkeypatch.setattr(drv, "emulated", False, raising=False)
    monkeypatch.setattr(drv, "uuid", lambda dev: f"GPU-{dev}")
    return drv


def test_nvml_queries_go_through_pynvml_by_uuid(as_gpu, monkeypatch):
    calls = []

    def rec(name, value):
        def f(*args):
            calls.append((name, args))
            return value
        return f

    rates = types.SimpleNamespace(gpu=42, memory=17)
    fake = types.SimpleNamespace(
        NVMLError=Exception, nvmlInit=rec("init", None),
        nvmlDeviceGetHandleByUUID=rec("uuid", "H"),
        nvmlDeviceGetUtilizationRates=rec("rates", rates),
        nvmlDeviceGetTemperature=rec("temp", 55), nvmlDeviceGetPowerUsage=rec("power", 300000),
        nvmlDeviceGetClockInfo=rec("clock", 1980),
        nvmlDeviceGetMemoryInfo=rec("mem", types.SimpleNamespace(used=12345)),
        nvmlDeviceGetComputeRunningProcesses=rec(
            "procs", [types.SimpleNamespace(pid=77, usedGpuMemory=3 * MiB)]))
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    cuda = tg.cuda
    assert (cuda.utilization(), cuda.memory_usage(), cuda.temperature(), cuda.power_draw(),
            cuda.clock_rate(), cuda.device_memory_used()) == (42, 17, 55, 300000, 1980, 12345)
    assert ("uuid", ("GPU-0",)) in calls
    assert ("temp", ("H", 0)) in calls and ("clock", ("H", 1)) in calls
    assert cuda.list_gpu_processes().splitlines() == [
        "GPU:0", "process         77 uses        3.000 MB GPU memory"]


def test_nvml_without_the_package(as_gpu, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml fails
    with pytest.raises(RuntimeError, match="nvidia-ml-py") as e:
        tg.cuda.temperature()
    assert isinstance(e.value, ModuleNotFoundError)  # (what PyTorch raises)
    assert tg.cuda.list_gpu_processes() == "pynvml module not found, please install nvidia-ml-py"
    free, total = driver.get_driver().mem_get_info(0)
    assert tg.cuda.device_memory_used() == total - free


# -- on a real GPU -------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_wait_stream_orders_an_external_streams_work(cuda, foreign_stream):
    es = cuda.ExternalStream(foreign_stream)
    drv = driver.get_driver()
    big = tg.empty(1 << 30, dtype=tg.uint8, device="cuda")
    flag = tg.zeros(1, dtype=tg.uint8, device="cuda")
    cuda.synchronize()
    for i in range(100):  # ~tens of ms of work on the foreign stream
        drv.memset_d8(0, big.data_ptr(), i & 0xFF, 1 << 30, foreign_stream)
    drv.memset_d8(0, flag.data_ptr(), 7, 1, foreign_stream)
    cuda.current_stream().wait_stream(es)
    assert int(flag.cpu().numpy()[0]) == 7  # read on the default stream, after es's work


@pytest.mark.gpu
def test_gpu_peer_access_and_nvml(cuda):
    from cuda.bindings import driver as cu

    n = cuda.device_count()
    for i in range(n):
        for j in range(n):
            err, dev_i = cu.cuDeviceGet(i)
            err, dev_j = cu.cuDeviceGet(j)
            err, ok = cu.cuDeviceCanAccessPeer(dev_i, dev_j)
            assert cuda.can_device_access_peer(i, j) == bool(ok)
    assert cuda.can_device_access_peer(0, 0) is False  # what the emulated device answers
    pytest.importorskip("pynvml")
    assert 0 < cuda.clock_rate() < 5000 and 0 < cuda.temperature() < 120
    assert cuda.power_draw() > 0 and 0 <= cuda.utilization() <= 100
    assert 0 <= cuda.memory_usage() <= 100
    assert cuda.list_gpu_processes().startswith("GPU:")
