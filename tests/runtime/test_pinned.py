"""Pinned (page-locked) host memory: the caching host allocator's policy over fakes, the
drivers' ``host_alloc``, and the tensor surface (``pin_memory()``, ``is_pinned()``,
``pin_memory=True`` factories, ``non_blocking`` copies, ``DataLoader(pin_memory=True)``,
``save_on_cpu(pin_memory=True)``).

The ``cuda`` tests run on the emulated device in CI, whose copies run at once; the ``gpu`` test
checks on a real GPU that the memory is page-locked by the driver and that a non-blocking copy
from it returns before the copy has run.
"""

from __future__ import annotations

import ctypes
import warnings

import numpy as np
import pytest
from tritongrad.runtime import driver, pinned
from tritongrad.runtime.driver import CudaError, EmulatedDriver
from tritongrad.runtime.pinned import CachingHostAllocator

import tritongrad as tg

# -- the policy, over fakes -----------------------------------------------------------------


def _policy(raw, events, capturing=lambda s: False):
    return CachingHostAllocator(raw.alloc, raw.free, events.record, capturing)


@pytest.mark.parametrize("nbytes, size", [(0, 512), (1, 512), (512, 512), (513, 1024),
                                          (4096, 4096), (5000, 8192), ((1 << 20) + 1, 2 << 20)])
def test_sizes_round_up_to_a_power_of_two(raw, events, nbytes, size):
    block = _policy(raw, events).malloc(nbytes)
    assert block.size == size and raw.live[block.ptr] == size


def test_a_freed_block_is_reused_whole_by_its_size(raw, events):
    a = _policy(raw, events)
    b1 = a.malloc(1000)
    a.free(b1)
    assert a.malloc(700) is b1  # same rounded size (1024): the cached block, no new pages
    b2 = a.malloc(3000)         # another size: a new one
    assert b2 is not b1 and raw.allocs == 2
    assert a.stats() == {"allocated_bytes": 1024 + 4096, "allocated_bytes_peak": 1024 + 4096,
                         "reserved_bytes": 1024 + 4096, "num_host_alloc": 2,
                         "num_host_free": 0}


def test_a_block_used_by_a_stream_waits_for_its_event(raw, events):
    a = _policy(raw, events)
    b = a.malloc(100)
    a.record_stream(b, "s1")
    a.record_stream(b, "s2")
    a.free(b)
    assert sorted(ev.stream for ev in events.recorded) == ["s1", "s2"]  # recorded at free
    assert a.malloc(100) is not b  # the copies may still read it
    events.complete("s1")
    assert a.malloc(100) is not b  # s2's has not completed
    events.complete("s2")
    assert a.malloc(100) is b
    assert a.malloc(100).ptr != b.ptr


def test_a_block_freed_during_a_capture_gets_its_events_after_it(raw, events):
    capturing = {"s"}
    a = _policy(raw, events, capturing=lambda s: s in capturing)
    b = a.malloc(64)
    a.record_stream(b, "s")
    a.free(b)
    assert events.recorded == [] and a.malloc(64) is not b  # no event inside a capture
    capturing.clear()
    assert a.malloc(64) is not b  # the event is recorded now, not yet complete
    assert [ev.stream for ev in events.recorded] == ["s"]
    events.complete()
    assert a.malloc(64) is b


def test_block_at_finds_interior_pointers(raw, events):
    a = _policy(raw, events)
    b = a.malloc(1000)
    assert a.block_at(b.ptr) is b and a.block_at(b.ptr + 1023) is b
    assert a.block_at(b.ptr + 1024) is None and a.block_at(b.ptr - 1) is None


def test_out_of_memory_releases_the_cache_then_retries(fakes, events):
    raw = fakes.FakeRaw(capacity=4096)
    a = _policy(raw, events)
    for _ in range(2):
        a.free(a.malloc(1024))  # (the same cached block twice over: one allocation)
    a.free(a.malloc(2048))
    assert raw.used == 1024 + 2048
    big = a.malloc(4096)  # fits only once the cached blocks are released
    assert big.size == 4096 and raw.frees == 2
    with pytest.raises(RuntimeError, match="out of page-locked host memory"):
        a.malloc(512)
    a.free(big)
    a.empty_cache()
    assert raw.live == {} and a.stats()["reserved_bytes"] == 0


# -- the drivers ----------------------------------------------------------------------------

def test_emulated_host_alloc_is_page_aligned_and_tracked():
    d = EmulatedDriver(total_memory=1 << 20)
    p = d.host_alloc(0, 10000)
    assert p % 4096 == 0
    assert d.is_pinned(p, 10000) and d.is_pinned(p + 9999)
    assert not d.is_pinned(p, 10001) and not d.is_pinned(p - 1)
    ctypes.memset(p, 7, 10000)  # real host memory
    d.host_free(0, p)
    assert not d.is_pinned(p)
    with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_VALUE"):
        d.host_free(0, p)
    with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_VALUE"):
        d.host_alloc(0, 0)


def test_emulated_capture_records_copies_from_pinned_memory_only():
    """A graph may copy to and from page-locked memory (each replay copies the host bytes of
    that moment); a copy from pageable memory fails the capture, as on the GPU."""
    d = EmulatedDriver(total_memory=1 << 20)
    s = d.stream_create(0)
    dev, host = d.mem_alloc(0, 16), d.host_alloc(0, 16)
    back = d.host_alloc(0, 16)
    ctypes.memset(host, 1, 16)
    d.stream_begin_capture(0, s)
    d.memcpy_htod(0, dev, host, 16, s)
    d.memcpy_dtoh(0, back, dev, 16, s)
    assert ctypes.string_at(back, 16) != b"\x01" * 16  # recorded, not run
    graph = d.graph_instantiate(0, d.stream_end_capture(0, s))
    for value in (2, 3):
        ctypes.memset(host, value, 16)
        d.graph_launch(0, graph, s)
        assert ctypes.string_at(back, 16) == bytes([value]) * 16
    pageable = np.ones(16, np.uint8)
    d.stream_begin_capture(0, s)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"):
        d.memcpy_htod(0, dev, pageable.ctypes.data, 16, s)
    with pytest.raises(CudaError):
        d.stream_end_capture(0, s)


# -- tensors --------------------------------------------------------------------------------

_DTYPES = [tg.float32, tg.float64, tg.float16, tg.bfloat16, tg.int64, tg.uint8, tg.bool,
           tg.complex64]


@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
def test_pin_memory_copies_values_into_pinned_memory(cuda, dtype):
    rng = np.random.default_rng(0)
    x = tg.tensor(rng.standard_normal((3, 5)) * 4).to(dtype)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.dtype is dtype and p.device.type == "cpu"
    assert p.data_ptr() != x.data_ptr()
    np.testing.assert_array_equal(p.numpy() if dtype is not tg.bfloat16 else p.float().numpy(),
                                  x.numpy() if dtype is not tg.bfloat16 else x.float().numpy())
    assert p.pin_memory() is p  # already pinned
    assert p[1:, ::2].is_pinned() and p.t().is_pinned()  # views of pinned memory


def test_pin_memory_of_a_strided_tensor_and_its_gradient(cuda):
    w = tg.arange(12.0).reshape(3, 4).requires_grad_()
    p = w.t().pin_memory()
    assert p.is_pinned() and p.is_contiguous() and type(p.grad_fn).__name__ == \
        "PinMemoryBackward0"
    np.testing.assert_array_equal(p.detach().numpy(), np.arange(12.0).reshape(3, 4).T)
    (p * tg.arange(1.0, 13.0).reshape(4, 3)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.arange(1.0, 13.0).reshape(4, 3).T)


def test_only_cpu_tensors_can_be_pinned(cuda):
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        tg.ones(2, device="cuda").pin_memory()
    assert not tg.ones(2, device="cuda").is_pinned()
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        tg.empty(2, device="cuda", pin_memory=True)


@pytest.mark.parametrize("make", [
    lambda: tg.tensor([[1.0, 2.0]], pin_memory=True),
    lambda: tg.empty(2, 3, pin_memory=True),
    lambda: tg.empty(2, 3, 4, 5, memory_format=tg.channels_last, pin_memory=True),
    lambda: tg.zeros(2, 3, pin_memory=True),
    lambda: tg.ones(2, 3, dtype=tg.int32, pin_memory=True),
    lambda: tg.full((2, 3), 7.5, pin_memory=True),
    lambda: tg.empty_strided((2, 3), (1, 2), pin_memory=True),
    lambda: tg.rand(2, 3, pin_memory=True),
    lambda: tg.randn(2, 3, pin_memory=True, requires_grad=True),
], ids=["tensor", "empty", "empty_channels_last", "zeros", "ones", "full", "empty_strided",
        "rand", "randn"])
def test_factories_with_pin_memory(cuda, make):
    t = make()
    assert t.is_pinned() and t.device.type == "cpu"


def test_factory_values_and_layout_survive_pinning(cuda):
    tg.manual_seed(3)
    want = tg.randn(4, 3)
    tg.manual_seed(3)
    got = tg.randn(4, 3, pin_memory=True, requires_grad=True)
    assert got.requires_grad and got.is_leaf
    np.testing.assert_array_equal(got.detach().numpy(), want.numpy())
    assert tg.empty_strided((2, 3), (1, 2), pin_memory=True).stride() == (1, 2)
    assert tg.full((2,), 7.5, pin_memory=True).tolist() == [7.5, 7.5]


def test_non_blocking_copies_between_pinned_memory_and_the_device(cuda):
    rng = np.random.default_rng(1)
    values = rng.standard_normal((64, 33)).astype(np.float32)
    host = tg.tensor(values).pin_memory()
    for dev in (host.to("cuda", non_blocking=True), host.cuda(non_blocking=True),
                host.to("cuda", True), tg.empty(64, 33, device="cuda").copy_(host, True),
                host.to("cuda")):
        assert dev.device.type == "cuda"
        cuda.synchronize()
        np.testing.assert_array_equal(dev.cpu().numpy(), values)
    back = tg.tensor(values, device="cuda").to("cpu", non_blocking=True)
    cuda.synchronize()  # (PyTorch's contract: read it after synchronizing)
    assert back.is_pinned()
    np.testing.assert_array_equal(back.numpy(), values)
    blocking = tg.tensor(values, device="cuda").cpu()
    assert not blocking.is_pinned()


def test_pinned_memory_is_not_reused_before_a_non_blocking_copy_has_run(cuda, monkeypatch):
    """The block of a pinned tensor dropped right after a non-blocking copy stays out of reuse
    until the event recorded on the copy's stream completes (the emulated device completes
    events at once, so here the event is one the test controls)."""
    alloc = pinned.host_allocator()
    done = {"flag": False}

    class Event:
        def query(self):
            return done["flag"]

    monkeypatch.setattr(alloc, "_record_event", lambda key: Event())
    host = tg.ones(1000).pin_memory()
    ptr = host.data_ptr()
    s = cuda.Stream()
    with cuda.stream(s):
        dev = host.to("cuda", non_blocking=True)
    del host
    assert all(tg.ones(1000).pin_memory().data_ptr() != ptr for _ in range(3))
    done["flag"] = True
    assert tg.ones(1000).pin_memory().data_ptr() == ptr
    np.testing.assert_array_equal(dev.cpu().numpy(), np.ones(1000, np.float32))


def test_a_captured_copy_from_pinned_memory_reads_it_at_each_replay(cuda):
    host = tg.zeros(8).pin_memory()
    static = tg.zeros(8, device="cuda")
    static.copy_(host, non_blocking=True)  # warm-up
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        static.copy_(host, non_blocking=True)
        out = static * 2
    for v in (1.0, 4.0):
        host.fill_(v)
        g.replay()
        np.testing.assert_array_equal(out.cpu().numpy(), np.full(8, 2 * v, np.float32))


def test_data_loader_pins_every_tensor_of_a_batch(cuda):
    from tritongrad.utils.data import DataLoader, TensorDataset

    ds = TensorDataset(tg.arange(12.0).reshape(6, 2), tg.arange(6))
    batches = list(DataLoader(ds, batch_size=4, pin_memory=True))
    assert [len(b) for b in batches] == [2, 2]
    assert all(t.is_pinned() for b in batches for t in b)
    np.testing.assert_array_equal(batches[1][0].numpy(), [[8.0, 9.0], [10.0, 11.0]])

    samples = [{"x": np.full(3, i, np.float32), "name": f"s{i}"} for i in range(4)]
    (batch,) = DataLoader(samples, batch_size=4, pin_memory=True)
    assert batch["x"].is_pinned() and batch["name"] == ["s0", "s1", "s2", "s3"]


def test_a_packed_sequence_pins_its_data_and_indices(cuda):
    from tritongrad.nn.utils.rnn import pack_sequence

    packed = pack_sequence([tg.ones(2, 3), tg.ones(4, 3)], enforce_sorted=False)
    pinned_seq = packed.pin_memory()
    assert not packed.is_pinned() and pinned_seq.is_pinned()
    assert pinned_seq.sorted_indices.is_pinned() and pinned_seq.unsorted_indices.is_pinned()
    assert pinned_seq.batch_sizes is packed.batch_sizes
    assert tg.equal(pinned_seq.data, packed.data)


def test_save_on_cpu_with_pinned_memory_gives_the_same_gradients(cuda):
    values = np.random.default_rng(2).standard_normal(6)
    a = tg.tensor(values, device="cuda", requires_grad=True)
    with tg.autograd.graph.save_on_cpu(pin_memory=True):
        y = (a * a.sin()).sum()
    y.backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), np.sin(values) + values * np.cos(values),
                               rtol=1e-12)


# -- without CUDA ---------------------------------------------------------------------------

def test_without_cuda_pinning_raises_and_the_loader_warns(monkeypatch):
    monkeypatch.setattr(driver, "is_available", lambda: False)
    monkeypatch.setattr(pinned, "_allocator", None)
    assert not tg.ones(2).is_pinned()
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        tg.ones(2).pin_memory()
    with pytest.raises(RuntimeError, match="no pinned memory allocator is available"):
        tg.empty(2, pin_memory=True)
    from tritongrad.utils.data import DataLoader
    loader = DataLoader([np.zeros(2, np.float32)] * 3, batch_size=2, pin_memory=True)
    with pytest.warns(UserWarning, match="no accelerator is found"):
        batches = list(loader)
    assert [tuple(b.shape) for b in batches] == [(2, 2), (1, 2)]
    assert not batches[0].is_pinned()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(DataLoader([np.zeros(2, np.float32)], batch_size=1))


# -- a real GPU -----------------------------------------------------------------------------

@pytest.mark.gpu
def test_pinned_memory_is_page_locked_by_the_driver_and_copies_are_asynchronous(cuda):
    d = driver.get_driver()
    host = tg.ones(1 << 24).pin_memory()  # 64 MiB
    flags = d.cu.cuMemHostGetFlags(host.data_ptr())
    assert int(flags[0]) == 0, "cuMemHostGetFlags fails on memory the driver did not pin"
    assert int(d.cu.cuMemHostGetFlags(tg.ones(1 << 20).data_ptr())[0]) != 0
    s = cuda.Stream()
    big = tg.ones(4096, 4096, device="cuda")
    with cuda.stream(s):
        for _ in range(3):
            big = big @ big * 1e-3  # keeps the stream busy
        dev = host.to("cuda", non_blocking=True)
        queued = s.query()
    assert not queued, "the non-blocking copy waited for the stream"
    s.synchronize()
    assert float(dev.sum()) == float(1 << 24)
