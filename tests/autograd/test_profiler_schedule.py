"""``tg.profiler`` (torch.profiler): the step schedule and its transitions, on_trace_ready,
ProfilerStep ranges, acc_events, tensorboard_trace_handler, metadata, export_stacks, and the
CUDA activity (emulated device in CI, the real one with a GPU)."""

import gzip
import json
import warnings

import pytest

import tritongrad as tg
from tritongrad.profiler import (ProfilerAction, ProfilerActivity, profile, record_function,
                                 schedule, supported_activities, tensorboard_trace_handler)

N, W, R, S = (ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
              ProfilerAction.RECORD_AND_SAVE)


def test_the_namespace_is_torch_profiler():
    assert tg.profiler.profile is profile
    assert tg.profiler.record_function is tg.autograd.profiler.record_function
    assert tg.profiler.ProfilerActivity is tg.autograd.profiler.ProfilerActivity
    assert ProfilerActivity.CPU in supported_activities()
    assert (ProfilerActivity.CUDA in supported_activities()) == tg.cuda.is_available()


@pytest.mark.parametrize("kwargs, expected", [
    (dict(wait=1, warmup=1, active=2, repeat=2), [N, W, R, S, N, W, R, S, N, N, N]),
    (dict(wait=0, warmup=1, active=1), [W, S, W, S, W, S]),
    (dict(wait=2, warmup=1, active=1, skip_first=3), [N, N, N, N, N, W, S, N, N, W, S]),
    (dict(wait=2, warmup=1, active=1, skip_first=1, skip_first_wait=1),
     [N, W, S, N, N, W, S, N, N]),
    (dict(wait=1, warmup=1, active=1, repeat=1), [N, W, S, N, N, N]),
])
def test_schedule_actions_per_step(kwargs, expected):
    fn = schedule(**kwargs)
    assert [fn(i) for i in range(len(expected))] == expected


def test_schedule_refuses_bad_arguments_and_warns_without_warmup():
    for bad in (dict(wait=-1, warmup=1, active=1), dict(wait=0, warmup=0, active=0),
                dict(wait=0, warmup=1, active=1, repeat=-1),
                dict(wait=0, warmup=1, active=1, skip_first=-2)):
        with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
            schedule(**bad)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=1, warmup=0, active=1)
    with pytest.raises(AssertionError, match="non-negative"):
        schedule(wait=0, warmup=1, active=1)(-1)


def _train(prof, steps, x):
    """``steps`` steps of one mul (aten::mul) each, tagged with the step's index."""
    for i in range(steps):
        with record_function(f"work{i}"):
            (x * x).sum().backward()
        prof.step()


def _keys(events):
    return [e.key for e in events]


def _steps(events) -> int:
    """How many of _train's steps the events hold."""
    return sum(k.startswith("work") for k in _keys(events))


def test_schedule_records_only_active_steps_and_hands_each_cycle_over():
    x = tg.randn(4, 4, requires_grad=True)
    cycles = []

    def ready(p):
        keys = _keys(p.events())
        cycles.append((p.step_num, sorted(k for k in set(keys) if k.startswith(("work", "Prof"))),
                       _steps(p.events())))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the second cycle's "clears events" warning)
        with profile(activities=[ProfilerActivity.CPU], on_trace_ready=ready,
                     schedule=schedule(wait=1, warmup=1, active=2, repeat=2)) as p:
            _train(p, 10, x)
    # steps 2-3 and 6-7 are recorded; the trace is ready when the step after each begins
    assert cycles == [(4, ["ProfilerStep*", "work2", "work3"], 2),
                      (8, ["ProfilerStep*", "work6", "work7"], 2)]
    assert p.step_num == 10 and p.current_action is N


def test_without_a_schedule_everything_is_recorded_and_ready_once_at_exit():
    x = tg.randn(3, requires_grad=True)
    calls = []
    with profile(activities=[ProfilerActivity.CPU], on_trace_ready=calls.append) as p:
        _train(p, 3, x)
        assert calls == []
    assert calls == [p]
    keys = _keys(p.events())
    assert _steps(p.events()) == 3 and keys.count("aten::sum") == 3
    assert not any(k.startswith("ProfilerStep#") for k in keys)  # (only with a schedule)
    assert {"work0", "work1", "work2"} <= set(keys)


def test_stop_while_recording_hands_the_partial_cycle_over():
    x = tg.randn(3, requires_grad=True)
    steps = []
    p = profile(activities=[ProfilerActivity.CPU], on_trace_ready=lambda q: steps.append(
        (q.step_num, _steps(q.events()))),
        schedule=schedule(wait=0, warmup=1, active=5))
    p.start()
    _train(p, 3, x)  # step 0 warms up, 1 and 2 record, step 3 is running when it stops
    p.stop()
    assert steps == [(3, 2)]


def test_acc_events_keeps_every_cycle():
    x = tg.randn(3, requires_grad=True)
    counts = []
    with profile(activities=[ProfilerActivity.CPU], acc_events=True,
                 schedule=schedule(wait=0, warmup=1, active=1),
                 on_trace_ready=lambda q: counts.append(_steps(q.events()))) as p:
        _train(p, 6, x)
    assert counts == [1, 2, 3]


def test_incorrect_schedules_warn_as_pytorch():
    x = tg.randn(3, requires_grad=True)
    ready = []
    actions = {0: R, 1: N}  # RECORD followed by NONE: stopped, never handed over
    with pytest.warns(UserWarning, match="Incorrect schedule: RECORD followed by NONE"), \
            profile(activities=[ProfilerActivity.CPU], schedule=lambda s: actions.get(s, N),
                    on_trace_ready=ready.append) as p:
        _train(p, 3, x)
    assert ready == []
    assert _steps(p.events()) == 1


def test_tensorboard_trace_handler_writes_a_trace_per_cycle(tmp_path):
    x = tg.randn(3, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=1, repeat=2),
                 on_trace_ready=tensorboard_trace_handler(str(tmp_path / "log"), "w0",
                                                          use_gzip=True)) as p:
        p.add_metadata("run", 'say "hi"')
        p.add_metadata_json("config", '{"lr": 0.1}')
        _train(p, 5, x)
    files = sorted((tmp_path / "log").iterdir())
    assert len(files) == 2
    for f in files:
        assert f.name.startswith("w0.") and f.name.endswith(".pt.trace.json.gz")
        with gzip.open(f, "rt") as fh:
            trace = json.load(fh)
        names = [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"]
        assert sum(n.startswith("work") for n in names) == 1 and "aten::mul" in names
        assert trace["run"] == 'say "hi"' and trace["config"] == {"lr": 0.1}
        assert trace["record_shapes"] == 1
    with pytest.raises(json.JSONDecodeError):
        p.add_metadata_json("bad", "{not json")


def test_export_stacks_writes_collapsed_stacks(tmp_path):
    x = tg.randn(64, 64, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as p:
        for _ in range(3):
            (x @ x).sum().backward()
    path = tmp_path / "stacks.txt"
    p.export_stacks(str(path), "self_cpu_time_total")
    lines = path.read_text().splitlines()
    assert lines
    for line in lines:
        frames, value = line.rsplit(" ", 1)
        assert int(value) > 0 and " " not in frames
        assert frames.split(";")[-1].startswith(__file__.replace(" ", "_"))
    stacked = [e for e in p.events() if e.stack and int(e.self_cpu_time_total) > 0]
    assert len(lines) == len(stacked)
    with pytest.raises(ValueError, match="metric should be one of"):
        p.export_stacks(str(path), "cpu_time")


def test_results_before_any_cycle_are_refused():
    p = profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=1))
    with pytest.raises(AssertionError, match="initialized before getting key averages"):
        p.key_averages()
    with pytest.raises(AssertionError, match="initialized before accessing events"):
        p.events()


def test_activities_and_deprecated_use_cuda():
    with pytest.raises(ValueError, match="ProfilerActivity"):
        profile(activities=["CPU"])
    with pytest.warns(FutureWarning, match="use_cuda parameter is deprecated"):
        p = profile(activities=[ProfilerActivity.CPU], use_cuda=True)
    assert ProfilerActivity.CUDA in p.activities and p.use_device == "cuda"


def test_cuda_activity_times_device_work():
    """On the emulated device (CI) the ops are timed with CUDA events; on a GPU with
    cupti-python, CUPTI records the kernels: either way device time reaches the events."""
    if not tg.cuda.is_available():
        pytest.skip("no CUDA device, real or emulated")
    x = tg.randn(16, 16, device="cuda", requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        (x * x).sum().backward()
        tg.cuda.synchronize()
    mul = [e for e in p.events() if e.key == "aten::mul"]
    assert mul and mul[0].cuda_time_total > 0
    assert "Self CUDA" in p.key_averages().table(sort_by="self_cuda_time_total")
    with profile(activities=[ProfilerActivity.CUDA]) as q:  # device events only
        (x * 2).sum()
        tg.cuda.synchronize()
    assert q.events() and all(e.cuda_time_total > 0 for e in q.events())
