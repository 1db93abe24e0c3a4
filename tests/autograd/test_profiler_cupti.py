"""profile(use_cuda=True) on a real GPU: CUPTI activity records tied to the ops that queued them
(autograd/profiler_cuda.py).

Without a GPU these tests run the profiler's CUPTI code path against a test double of the
``cupti.cupti`` module (``cupti_double.FakeCupti``), not the real CUPTI; its docstring says
what the double keeps of CUPTI's contract. The tests make it "launch" kernels from inside ops,
or see every Triton kernel the emulated device runs. What the double cannot show (that real
CUPTI sees Triton's cuLaunchKernel calls, its record field names, its clock) is checked by the
``gpu``-marked test at the end, on a real GPU.
"""

import json
import sys
import warnings

import pytest

import tritongrad as tg
from tritongrad.autograd import Function, profiler, profiler_cuda
from tritongrad.autograd.profiler import ProfilerActivity

from cupti_double import FakeCupti, install, report_interpreted_launches


@pytest.fixture
def fake(monkeypatch) -> FakeCupti:
    return install(monkeypatch)


def _scale_function(fake):
    class Scale(Function):
        @staticmethod
        def forward(ctx, x):
            fake.launch("scale_fwd", 4_000)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            fake.launch("scale_bwd", 2_000, stream=9)
            fake.launch("", 1_000, stream=9, kind="memset")
            return g * 2

    return Scale


def _profile_with_fake(fake, **kwargs):
    Scale = _scale_function(fake)
    x = tg.ones(3, requires_grad=True)
    fake.launch("before_profile")  # queued by nothing profiled: never attributed
    with profiler.profile(use_cuda=True, **kwargs) as prof:
        with profiler.record_function("step"):
            y = Scale.apply(x).sum()
        fake.launch("between_ops")  # no op open: no external id, dropped
        y.backward()
    return prof


def test_kernels_are_attributed_to_the_op_that_launched_them(fake):
    prof = _profile_with_fake(fake)
    evts = {e.name: e for e in prof.function_events}
    step, scale, node = evts["step"], evts["Scale"], evts["ScaleBackward"]
    assert scale.cpu_parent is step
    assert scale.kernels == [profiler.Kernel("scale_fwd", 0, 4.0)]
    assert [(k.name, k.duration) for k in node.kernels] == [("scale_bwd", 2.0), ("Memset", 1.0)]
    assert step.kernels == []
    all_kernels = [k.name for e in prof.function_events for k in e.kernels]
    assert "before_profile" not in all_kernels and "between_ops" not in all_kernels
    # innermost attribution (PyTorch's is_legacy=False): totals include children's kernels
    assert not scale.is_legacy
    assert step.cuda_time_total == pytest.approx(4.0)
    assert step.self_cuda_time_total == pytest.approx(0.0)
    assert scale.self_cuda_time_total == pytest.approx(4.0)
    # tracing stopped, every kind disabled, every pushed id popped
    assert fake.enabled == set() and fake.stack == [] and profiler_cuda._active is None


def test_device_spans_are_placed_on_the_profile_timeline(fake):
    prof = _profile_with_fake(fake)
    scale = next(e for e in prof.function_events if e.name == "Scale")
    (span,) = scale.device_spans
    assert (span.kind, span.stream, span.device) == ("kernel", 7, 0)
    # the launch call happened inside the op; the calibration error is well under 1 us here
    assert scale.time_range.start - 1 < span.launch.start < scale.time_range.end + 1
    assert span.interval.start == pytest.approx(span.launch.start + 5.0, abs=1e-3)
    assert span.interval.elapsed_us() == pytest.approx(4.0)


def test_table_and_chrome_trace_show_kernels(fake, tmp_path):
    prof = _profile_with_fake(fake)
    table = prof.key_averages().table(sort_by="self_cuda_time_total")
    for col in ("Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"):
        assert col in table
    assert "Self CUDA time total: 7.000us" in table
    first = table.splitlines()[3].split()[0]
    assert first == "Scale"  # 4 us of self CUDA time: the most
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    device = [e for e in trace if e["ph"] == "X" and e["pid"] == 0]
    assert sorted((e["name"], e["cat"], e["tid"]) for e in device) == [
        ("Memset", "gpu_memset", 9), ("scale_bwd", "kernel", 9), ("scale_fwd", "kernel", 7)]
    lanes = {(e["tid"], e["args"]["name"]) for e in trace
             if e["ph"] == "M" and e["pid"] == 0 and e["name"] == "thread_name"}
    assert lanes == {(7, "stream 7"), (9, "stream 9")}  # one lane per stream


def test_export_nvprof_round_trip_with_cupti_kernels(fake, tmp_path):
    prof = _profile_with_fake(fake)
    path = str(tmp_path / "cupti.prof")
    prof.export_nvprof(path)
    loaded = {e.name: e for e in profiler.load_nvprof(path)}
    for evt in prof.function_events:
        if evt.device_spans:
            got = loaded[evt.name]
            assert [k.name for k in got.kernels] == [s.name for s in evt.device_spans
                                                     if s.kind == "kernel"]


def test_record_function_left_open_pops_its_correlation_id(fake):
    rf = profiler.record_function("open")
    with profiler.profile(use_cuda=True):
        rf.__enter__()
        fake.launch("in_open_range")
    assert fake.stack == []


def test_activities_select_cuda_and_device_only_events(fake):
    Scale = _scale_function(fake)
    x = tg.ones(3, requires_grad=True)
    with profiler.profile(activities=[ProfilerActivity.CUDA]) as prof:
        Scale.apply(x).sum()
    assert [e.name for e in prof.function_events] == ["Scale"]
    # a range around it has device time too (its op's): kept, as event timing keeps it
    with profiler.profile(activities=[ProfilerActivity.CUDA]) as prof:
        with profiler.record_function("step"):
            Scale.apply(x).sum()
    step, scale = prof.function_events
    assert (step.name, scale.name) == ("step", "Scale")
    assert scale.cpu_parent is step and step.cpu_children == [scale]
    assert step.kernels == [] and step.cuda_time_total == pytest.approx(4.0)
    with profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        Scale.apply(x).sum()
    assert {"Scale", "aten::sum"} <= {e.name for e in prof.function_events}
    with profiler.profile(activities=[ProfilerActivity.CPU]) as prof:
        Scale.apply(x).sum()
    assert all(e.kernels == [] for e in prof.function_events)
    with pytest.raises(ValueError, match="ProfilerActivity"):
        profiler.profile(activities=["CUDA"])
    with pytest.raises(ValueError, match="empty"):
        profiler.profile(activities=[])


def test_callbacks_are_registered_once_per_process(fake):
    _profile_with_fake(fake)
    _profile_with_fake(fake)
    assert fake.registrations == 1


def test_missing_cupti_python_warns_with_the_install_command(monkeypatch):
    monkeypatch.setattr(profiler_cuda, "on_real_gpu", lambda: True)
    monkeypatch.setitem(sys.modules, "cupti", None)  # `import cupti` raises ImportError
    with pytest.raises(ImportError, match="pip install cupti-python"):
        profiler_cuda.load_cupti()
    x = tg.ones(2, 2, device="cuda")
    with pytest.warns(UserWarning, match="pip install cupti-python.*CUDA events"), \
            profiler.profile(use_cuda=True) as prof:
        x * 2
    (mul,) = prof.function_events
    assert mul.is_legacy and len(mul.kernels) == 1  # event timing, as on the emulated device


def test_emulated_device_keeps_event_timing():
    if profiler_cuda.on_real_gpu():
        pytest.skip("on a GPU use_cuda traces with CUPTI")
    x = tg.ones(2, 2, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cupti-python warning: CUPTI is not wanted here
        with profiler.profile(use_cuda=True) as prof:
            x * 2
    (mul,) = prof.function_events
    assert mul.is_legacy and mul.device_interval is not None and mul.device_spans == []


def test_one_cuda_tracing_profile_per_process(fake):
    with profiler.profile(use_cuda=True):
        other = profiler_cuda.CuptiTrace(fake)
        with pytest.raises(RuntimeError, match="already running"):
            other.start()
    assert profiler_cuda._active is None


def _matmul_step_profile(n: int):
    """A step of matmul forward and backward on CUDA, profiled with use_cuda (warmed up)."""
    a = tg.randn(n, n, device="cuda", requires_grad=True)
    (a @ a).sum().backward()  # compile and warm up
    tg.cuda.synchronize()
    with profiler.profile(use_cuda=True) as prof:
        with profiler.record_function("step"):
            y = (a @ a).sum()
        y.backward()
    return prof


def _check_matmul_step_trace(prof, tmp_path, slack_us: float) -> None:
    """What a CUPTI trace of ``_matmul_step_profile`` must show; ``slack_us``: how far the
    calibrated CUPTI clock may put a launch call outside its op's CPU interval."""
    evts = prof.function_events
    names = [e.name for e in evts]
    assert names.count("aten::mm") == 3, names  # forward, and two in MmBackward0
    for mm in (e for e in evts if e.name == "aten::mm"):
        assert mm.kernels and not mm.is_legacy, "CUPTI saw no kernel launched by aten::mm"
        for span in mm.device_spans:
            assert span.kind == "kernel" and span.interval.elapsed_us() > 0
            assert span.launch is not None
            assert mm.time_range.start - slack_us < span.launch.start
            assert span.launch.start < mm.time_range.end + slack_us
            assert span.interval.start >= span.launch.start - slack_us  # runs once queued
    step = next(e for e in evts if e.name == "step")
    fwd_mm = next(e for e in evts if e.name == "aten::mm")
    assert fwd_mm.cpu_parent is step
    assert step.kernels == []  # a range launches nothing itself: its time is its ops'
    assert step.cuda_time_total >= fwd_mm.cuda_time_total > 0
    assert step.cuda_time_total == pytest.approx(
        sum(c.cuda_time_total for c in step.cpu_children))
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))
    path = tmp_path / "gpu.json"
    prof.export_chrome_trace(str(path))
    kernels = [e for e in json.loads(path.read_text())["traceEvents"]
               if e["ph"] == "X" and e.get("cat") == "kernel"]
    written = [s.interval.elapsed_us() for e in evts for s in e.device_spans
               if s.kind == "kernel"]  # copies and memsets are not exported
    assert len(kernels) == len(written) > 0
    prof.export_nvprof(str(tmp_path / "gpu.prof"))
    loaded = profiler.load_nvprof(str(tmp_path / "gpu.prof"))
    assert sum(k.duration for e in loaded for k in e.kernels) == pytest.approx(sum(written),
                                                                              rel=1e-3)


def test_cupti_double_traces_the_emulated_devices_kernels(fake, monkeypatch, tmp_path):
    """The GPU test's checks, with the double seeing the interpreter's kernels."""
    from tritongrad.runtime import driver
    if not driver.is_emulated():
        pytest.skip("on a GPU no kernel runs in the interpreter: the gpu test below checks it")
    report_interpreted_launches(monkeypatch, fake)
    prof = _matmul_step_profile(8)
    _check_matmul_step_trace(prof, tmp_path, slack_us=1.0)  # the double's calibration error
    assert fake.stack == [] and profiler_cuda._active is None


@pytest.mark.gpu
def test_cupti_traces_triton_kernels_on_a_gpu(tmp_path):
    pytest.importorskip("cupti", reason="needs cupti-python (pip install cupti-python)")
    prof = _matmul_step_profile(1024)
    _check_matmul_step_trace(prof, tmp_path, slack_us=5.0)
