"""tg.Stream and tg.Event: PyTorch's device-agnostic classes (Note [device-agnostic streams] in
runtime/streams.py), on the CPU and on the (emulated or real) CUDA device."""

import pytest

import tritongrad as tg


def test_cpu_stream_is_always_complete():
    s = tg.Stream("cpu")
    assert isinstance(s, tg.Stream)
    assert (s.device, s.device_type, s.device_index, s.stream_id) == (tg.device("cpu"), 0, -1, 0)
    assert s.query() is True and s.is_capturing() is False
    assert s.synchronize() is None and s.wait_stream(s) is None
    assert s.wait_event(tg.Event("cpu")) is None
    with s as entered:
        assert entered is s
    assert s == tg.Stream(device=tg.device("cpu")) and hash(s) == hash(tg.Stream("cpu"))
    assert s != 3
    assert repr(s) == "tritongrad.Stream device_type=cpu, device_index=-1, stream_id=0"


def test_cpu_events_cannot_be_recorded():
    e = tg.Event("cpu")
    assert isinstance(e, tg.Event) and e.query() is True and e.event_id == 0
    assert repr(e) == "tritongrad.Event device_type=cpu, device_index=-1, event_id=0"
    for call in (e.record, e.wait, e.synchronize, tg.Stream("cpu").record_event):
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events"):
            call()
    with pytest.raises(ValueError, match="Both events must be created with argument"):
        e.elapsed_time(tg.Event("cpu"))
    timed = tg.Event("cpu", enable_timing=True)
    with pytest.raises(ValueError, match="Both events must be recorded"):
        timed.elapsed_time(tg.Event("cpu", enable_timing=True))


def test_bad_arguments():
    with pytest.raises(TypeError, match=r"Stream\(\): argument 'priority' must be int, not str"):
        tg.Stream("cpu", priority="a")
    with pytest.raises(TypeError, match=r"Stream\(\) takes from 0 to 1 positional arguments but 2"):
        tg.Stream("cpu", 0)
    with pytest.raises(TypeError, match=r"Event\(\) takes from 0 to 1 positional arguments"):
        tg.Event("cpu", True)
    with pytest.raises(RuntimeError, match="device"):
        tg.Stream("nowhere")
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none"):
        if tg.cuda.is_available():
            raise RuntimeError("Cannot access accelerator device when none (skip: one is)")
        tg.Stream(0)


def test_cuda_classes_are_device_agnostic_ones():
    assert issubclass(tg.cuda.Stream, tg.Stream) and issubclass(tg.cuda.Event, tg.Event)
    assert issubclass(tg.cuda.ExternalStream, tg.Stream)


def test_no_device_is_the_accelerator_or_the_cpu():
    expected = "cuda" if tg.cuda.is_available() else "cpu"
    assert tg.Stream().device.type == expected
    assert tg.Event().query() is True


@pytest.fixture
def cuda():
    if not tg.cuda.is_available():
        pytest.skip("needs the (emulated) CUDA device")


def test_cuda_stream_context_and_fields(cuda):
    s = tg.Stream("cuda", priority=-1)
    assert type(s) is tg.cuda.Stream and s.priority == -1
    assert s.device_type == 1 and s.stream_id == s.native_handle == s.cuda_stream != 0
    assert s.is_capturing() is False
    default = tg.cuda.current_stream()
    other = tg.Stream(device="cuda")
    with s as entered:
        assert entered is s and tg.cuda.current_stream() == s
        with other:
            assert tg.cuda.current_stream() == other
            with s:  # (entered again while entered: each exit restores its own entry's)
                assert tg.cuda.current_stream() == s
            assert tg.cuda.current_stream() == other
        assert tg.cuda.current_stream() == s
    assert tg.cuda.current_stream() == default
    with pytest.raises(ZeroDivisionError), s:
        1 / 0
    assert tg.cuda.current_stream() == default


def test_cuda_events_time_and_order(cuda):
    start, end = tg.Event("cuda", enable_timing=True), tg.Event(enable_timing=True)
    assert isinstance(start, tg.cuda.Event) and start.enable_timing
    s = tg.Stream("cuda")
    start.record(s)
    x = tg.ones(8, device="cuda") * 2
    end.record(s)
    end.synchronize()
    assert start.query() and end.query() and start.event_id != 0
    assert start.elapsed_time(end) >= 0
    assert start.device == tg.device("cuda", s.device_index)
    tg.cuda.current_stream().wait_event(end)
    assert x.sum().item() == 16


def test_cuda_stream_is_capturing(cuda):
    x = tg.ones(4, device="cuda")
    g = tg.cuda.CUDAGraph()
    with tg.cuda.graph(g):
        s = tg.cuda.current_stream()
        assert s.is_capturing() and not tg.Stream("cuda").is_capturing()
        x * 2
    assert not s.is_capturing()


def test_external_stream_is_a_context_manager(cuda):
    s = tg.cuda.Stream()
    ext = tg.cuda.ExternalStream(s.cuda_stream)
    with ext as entered:
        assert entered is ext and tg.cuda.current_stream() == s  # (the same CUstream)
    assert tg.cuda.current_stream() == tg.cuda.default_stream()
