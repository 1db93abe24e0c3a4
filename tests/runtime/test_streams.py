"""Streams, events and devices through the public ``tg.cuda`` API.

Written against the public API only, so the same tests run on the emulated device (CI) and on
a real GPU.
"""

from __future__ import annotations

import threading

import pytest


def test_device_queries(cuda):
    assert cuda.device_count() >= 1
    assert cuda.current_device() == 0
    assert isinstance(cuda.get_device_name(), str) and cuda.get_device_name(0)
    major, minor = cuda.get_device_capability()
    assert major >= 7 and minor >= 0
    props = cuda.get_device_properties(0)
    assert props.total_memory > 0 and (props.major, props.minor) == (major, minor)
    assert props.multi_processor_count >= 1
    assert f"multi_processor_count={props.multi_processor_count}" in repr(props)
    free, total = cuda.mem_get_info()
    assert 0 <= free <= total and total > 0
    if cuda.is_emulated():
        assert cuda.get_device_name() == "tritongrad emulated device"
        assert (major, minor) == (9, 0)
        assert props.multi_processor_count == 132  # an H100 SXM's, as its sm_90


def test_invalid_device_ordinal(cuda):
    n = cuda.device_count()
    with pytest.raises(RuntimeError) as info:
        cuda.set_device(n + 2)
    plural = "device" if n == 1 else "devices"
    assert str(info.value) == f"CUDA error: invalid device ordinal {n + 2} ({n} {plural} available)"
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        cuda.Stream(device=f"cuda:{n}")
    with pytest.raises(ValueError, match="expected a CUDA device"):
        cuda.current_stream("cpu")


def test_device_context_manager(cuda):
    with cuda.device(0):
        assert cuda.current_device() == 0
    with cuda.device(None), cuda.device(-1):  # no-ops, as in PyTorch
        assert cuda.current_device() == 0
    with pytest.raises(KeyError), cuda.device("cuda:0"):
        raise KeyError("body error")
    assert cuda.current_device() == 0


def test_default_and_current_stream(cuda):
    d = cuda.default_stream()
    assert d.cuda_stream == 0  # the legacy default stream
    assert d is cuda.default_stream(0) is cuda.default_stream("cuda:0")
    assert cuda.current_stream() == d
    assert d.device.type == "cuda" and d.device.index == 0
    assert d.query()
    d.synchronize()


def test_stream_identity(cuda):
    s1, s2 = cuda.Stream(), cuda.Stream(priority=-1)
    assert s1 != s2 and s1.cuda_stream != 0 and s2.cuda_stream != 0
    assert s1 != cuda.default_stream()
    assert len({s1, s2, cuda.default_stream()}) == 3
    assert "cuda_stream=0x" in repr(s1)
    with cuda.stream(s1):
        same = cuda.current_stream()
    assert same == s1 and hash(same) == hash(s1)


def test_streams_are_recycled(cuda):
    s = cuda.Stream()
    handle = s.cuda_stream
    del s  # the CUstream goes back to the pool, not to cuStreamDestroy
    assert cuda.Stream().cuda_stream == handle


def test_stream_context_sets_and_restores(cuda):
    s1, s2 = cuda.Stream(), cuda.Stream()
    default = cuda.current_stream()
    with cuda.stream(s1) as entered:
        assert entered == s1 and cuda.current_stream() == s1
        with cuda.stream(s2):
            assert cuda.current_stream() == s2
        assert cuda.current_stream() == s1
        with cuda.stream(None):  # no-op
            assert cuda.current_stream() == s1
    assert cuda.current_stream() == default


def test_stream_context_restores_on_exception(cuda):
    s = cuda.Stream()
    with pytest.raises(ZeroDivisionError), cuda.stream(s):
        raise ZeroDivisionError("body error")
    assert cuda.current_stream() == cuda.default_stream()


def test_set_stream(cuda):
    s = cuda.Stream()
    try:
        cuda.set_stream(s)
        assert cuda.current_stream() == s
        cuda.set_stream(None)
        assert cuda.current_stream() == s
    finally:
        cuda.set_stream(cuda.default_stream())
    assert cuda.current_stream() == cuda.default_stream()


def test_current_stream_is_thread_local(cuda):
    s = cuda.Stream()
    seen = {}

    def other():
        seen["stream"] = cuda.current_stream()
        with cuda.stream(cuda.Stream()):
            seen["inner"] = cuda.current_stream()

    with cuda.stream(s):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert cuda.current_stream() == s
    assert seen["stream"] == cuda.default_stream()
    assert seen["inner"] not in (s, cuda.default_stream())


def test_events(cuda):
    e = cuda.Event()
    assert e.query()  # never recorded: complete
    e.synchronize()
    e.wait()  # never recorded: no-op
    s = cuda.Stream()
    e.record(s)
    e.synchronize()
    assert e.query()
    assert e.device.index == 0 and e.cuda_event != 0
    cuda.current_stream().wait_event(e)
    ev = s.record_event()
    assert isinstance(ev, cuda.Event)
    ev.wait(cuda.current_stream())
    cuda.current_stream().wait_stream(s)
    s.wait_stream(cuda.current_stream())
    s.synchronize()
    assert s.query()
    cuda.synchronize()


def test_event_timing(cuda):
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    start.record()
    x = cuda.Stream()  # some host work in between
    del x
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and 0.0 <= ms < 10_000


def test_event_timing_errors(cuda):
    timed, untimed = cuda.Event(enable_timing=True), cuda.Event()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        timed.elapsed_time(untimed)
    with pytest.raises(RuntimeError, match="must be recorded"):
        timed.elapsed_time(cuda.Event(enable_timing=True))
    with pytest.raises(ValueError, match="interprocess"):
        cuda.Event(enable_timing=True, interprocess=True)


def test_blocking_and_interprocess_events(cuda):
    for ev in (cuda.Event(blocking=True), cuda.Event(interprocess=True)):
        ev.record()
        ev.synchronize()
        assert ev.query()


def test_profiler_start_stop(cuda):
    from tritongrad.cuda import profiler

    profiler.start()
    profiler.stop()
    with pytest.raises(KeyError), profiler.profile():
        raise KeyError("body error")
    if cuda.is_emulated():
        from tritongrad.runtime import driver

        assert driver.get_driver().profiling is False  # stopped on the way out
