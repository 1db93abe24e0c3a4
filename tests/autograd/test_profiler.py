"""The autograd profiler (seed documents' Profiler section): profile and its options, the
table and its sort keys, key_averages, record_function, the Chrome trace, thread locality,
CUDA time by event timing and by CUPTI (emulated device and a CUPTI double in CI, real on a
GPU: Note [profiling both timing paths] in cupti_double.py) and load_nvprof."""

import gc
import json
import sqlite3
import struct
import subprocess
import sys
import threading
import tracemalloc

import pytest

import tritongrad as tg
from tritongrad.autograd import Function, nvprof, profiler
from tritongrad.autograd.profiler_util import estimate_flops, parse_range_name
from tritongrad.autograd.state import state

from cupti_double import TIMINGS, select_timing

SORT_KEYS = ["cpu_time", "cuda_time", "cpu_time_total", "cuda_time_total", "cpu_memory_usage",
             "cuda_memory_usage", "self_cpu_memory_usage", "self_cuda_memory_usage", "count",
             "self_cpu_time_total", "self_cuda_time_total"]


def _seed_profile(**kwargs):
    x = tg.randn((1, 1), requires_grad=True)
    with profiler.profile(**kwargs) as prof:
        for _ in range(100):  # any normal python code, really!
            y = x ** 2
            y.backward()
    return prof


def _counts(events):
    return {e.key: e.count for e in events.key_averages()}


def _table_rows(table, keys=()):
    """{name: row cells} of a table's body; a name the table cut (``...``) is given back as
    the one of ``keys`` it starts."""
    lines = table.splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("---")]
    rows = {}
    for line in lines[seps[1] + 1:seps[2]]:
        name = line.split("  ")[0].strip()
        if name.endswith("..."):
            name = next((k for k in keys if k.startswith(name[:-3])), name)
        rows[name] = line.split()
    return rows


# -- the seed example ---------------------------------------------------------------------------

def test_seed_example_table():
    prof = _seed_profile()
    table = prof.key_averages().table(sort_by="self_cpu_time_total")
    rows = _table_rows(table, [e.key for e in prof.key_averages()])
    # As in the seed's table: pow runs once forward and once inside PowBackward0.
    assert rows["aten::pow"][-1] == "200"
    assert rows["PowBackward0"][-1] == "100"
    assert rows["torch::autograd::AccumulateGrad"][-1] == "100"
    header = table.splitlines()[1]
    for col in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                "# of Calls"):
        assert col in header
    assert "CUDA" not in header
    assert table.rstrip().splitlines()[-1].startswith("Self CPU time total: ")
    selfs = [e.self_cpu_time_total for e in prof.key_averages()]
    order = [r for r in rows]
    by_key = {e.key: e.self_cpu_time_total for e in prof.key_averages()}
    assert [by_key[k] for k in order] == sorted(selfs, reverse=True)
    forward_pows = [e for e in prof.function_events
                    if e.key == "aten::pow" and e.cpu_parent is None]
    assert len(forward_pows) == 100
    assert str(prof) == prof.function_events.table()


def test_events_nesting_and_sequence_numbers():
    prof = _seed_profile()
    evts = prof.events()
    assert evts is prof.function_events
    fwd, evaluate, node = evts[0], evts[1], evts[2]
    assert (fwd.name, evaluate.name, node.name) == (
        "aten::pow", "autograd::engine::evaluate_function: PowBackward0", "PowBackward0")
    # "seq" of the op == node's stashed seq, also on the engine's event around the node
    assert fwd.sequence_nr == evaluate.sequence_nr == node.sequence_nr >= 0
    assert node.cpu_parent is evaluate and evaluate.cpu_parent is None and evaluate.scope == 0
    # the ops PowBackward0 runs (its formula's pow and muls) are its children; grad mode is
    # off there, so they record no node and show no number (as PyTorch's)
    assert node.cpu_children and "aten::pow" in [c.name for c in node.cpu_children]
    assert all(c.cpu_parent is node and c.scope == 0 and c.sequence_nr == -1
               for c in node.cpu_children)
    acc = next(e for e in evts if e.name == "torch::autograd::AccumulateGrad")
    assert acc.sequence_nr == -1 and acc.scope == 1
    assert acc.cpu_parent.name == "autograd::engine::evaluate_function: " + acc.name
    assert acc.cpu_parent.sequence_nr == -1 and acc.cpu_parent.cpu_parent is None
    me = threading.get_native_id()
    assert all(e.thread == me for e in evts)
    # fwd_thread: the forward op's thread on a node and its evaluate_function, else 0
    assert (fwd.fwd_thread, evaluate.fwd_thread, node.fwd_thread) == (0, me, me)
    assert acc.fwd_thread == acc.cpu_parent.fwd_thread == 0
    assert [e.id for e in evts] == list(range(len(evts)))
    starts = [e.time_range.start for e in evts]
    assert starts == sorted(starts)
    assert all(e.cpu_interval is e.time_range and e.count == 1 and not e.is_async for e in evts)


def test_self_and_total_times_are_consistent():
    x = tg.randn(8, 8, requires_grad=True)
    with profiler.profile() as prof:
        with profiler.record_function("outer"):
            y = (x @ x).exp().sum()
            with profiler.record_function("inner"):
                y = y * 2
        y.backward()
    evts = prof.function_events
    for e in evts:
        assert e.cpu_time_total >= e.self_cpu_time_total >= 0
        for c in e.cpu_children:
            assert e.time_range.start <= c.time_range.start <= c.time_range.end \
                <= e.time_range.end
    top = sum(e.cpu_time_total for e in evts if e.cpu_parent is None)
    assert sum(e.self_cpu_time_total for e in evts) == pytest.approx(top, rel=1e-9)
    assert prof.self_cpu_time_total == pytest.approx(top, rel=1e-9)
    avg = prof.key_averages()
    assert sum(a.self_cpu_time_total for a in avg) == pytest.approx(top, rel=1e-9)
    total = prof.total_average()
    assert total.key == "Total" and total.count == len(evts)
    assert total.self_cpu_time_total == pytest.approx(top, rel=1e-9)


# -- record_function ----------------------------------------------------------------------------

def test_record_function_context_manager_and_decorator():
    @profiler.record_function("decorated")
    def step(t):
        return t * 3

    x = tg.ones(3, requires_grad=True)
    with profiler.profile() as prof:
        y = x ** 2
        with profiler.record_function("labelz") as rf:
            z = y ** 3
        w = step(z).sum()
        w.backward()
    assert rf.name == "labelz"
    evts = {e.name: e for e in prof.function_events}
    labelz, decorated = evts["labelz"], evts["decorated"]
    assert [c.name for c in labelz.cpu_children] == ["aten::pow"]
    assert [c.name for c in decorated.cpu_children] == ["aten::mul"]
    assert labelz.is_user_annotation and labelz.sequence_nr == -1 and labelz.cpu_parent is None
    assert labelz.self_cpu_time_total <= labelz.cpu_time_total
    assert "labelz" in _table_rows(prof.key_averages().table())
    assert step.__name__ == "step"


def test_record_function_inside_backward_nests_under_the_node():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x.detach()  # (kept on ctx: the range should hold the rule's ops only)
            return x * x

        @staticmethod
        def backward(ctx, g):
            with profiler.record_function("in_backward"):
                return 2 * ctx.x * g

    x = tg.ones(3, requires_grad=True)
    with profiler.profile() as prof:
        Square.apply(x).sum().backward()
    rng = next(e for e in prof.function_events if e.name == "in_backward")
    assert rng.cpu_parent.name == "SquareBackward"
    assert [c.name for c in rng.cpu_children] == ["aten::mul", "aten::mul"]


def test_record_function_outside_a_profile_and_recursion():
    @profiler.record_function("fact")
    def fact(n):
        return 1 if n == 0 else n * fact(n - 1)

    assert fact(3) == 6  # no profiler: a no-op
    with profiler.profile() as prof:
        fact(2)
    facts = [e for e in prof.function_events if e.name == "fact"]
    assert len(facts) == 3
    assert facts[1].cpu_parent is facts[0] and facts[2].cpu_parent is facts[1]


def test_range_left_open_is_closed_when_profiling_ends():
    rf = profiler.record_function("open")
    a = tg.ones(2)
    with profiler.profile() as prof:
        rf.__enter__()
        a * 2
    rf.__exit__(None, None, None)
    (rng,) = [e for e in prof.function_events if e.name == "open"]
    assert [c.name for c in rng.cpu_children] == ["aten::mul"]
    assert rng.time_range.end >= rng.cpu_children[0].time_range.end


# -- options ------------------------------------------------------------------------------------

def test_record_shapes_and_group_by_input_shape():
    x, y = tg.ones(2, 3), tg.ones(4)
    with profiler.profile(record_shapes=True) as prof:
        x * 2
        x * x
        y * 2
    muls = [e for e in prof.function_events if e.name == "aten::mul"]
    assert [m.input_shapes for m in muls] == [[[2, 3], []], [[2, 3], [2, 3]], [[4], []]]
    assert len(prof.key_averages()) == 1
    grouped = prof.key_averages(group_by_input_shape=True)
    assert sorted(str(a.input_shapes) for a in grouped) == \
        ["[[2, 3], [2, 3]]", "[[2, 3], []]", "[[4], []]"]
    table = grouped.table()
    assert "Input Shapes" in table and "[[2, 3], [2, 3]]" in table
    assert "Input Shapes" not in prof.key_averages().table()


def test_with_flops():
    a, b = tg.ones(3, 4), tg.ones(4, 5)
    with profiler.profile(with_flops=True) as prof:
        a @ b
        a * 2
        a.t()
    mm, mul, t = prof.function_events
    assert mm.name == "aten::mm" and mm.flops == 2 * 3 * 4 * 5
    assert mul.flops == 12
    assert t.flops == 0
    table = prof.key_averages().table()
    assert "Total FLOPs" in table
    assert _table_rows(table)["aten::t"][-1] == "--"
    with profiler.profile() as plain:
        a @ b
    assert plain.function_events[0].flops == 0


@pytest.mark.parametrize("name, shapes, flops", [
    ("mm", [(2, 3), (3, 4)], 48),
    ("matmul", [(5, 2, 3), (3, 4)], 5 * 48),
    ("bmm", [(7, 2, 3), (7, 3, 4)], 7 * 48),
    ("matmul", [(3,), (3, 4)], 24),
    ("add", [(2, 1), (1, 3)], 6),
    ("mul_", [(2, 3), ()], 6),
    ("sum", [(4, 5)], 20),
    ("view", [(4, 5)], None),
    ("aten::mm", [(2, 3), (3, 4)], 48),  # the event's name works as well as the op's
    ("aten::linear", [(2, 3), (4, 3)], None),  # composites: their parts are counted
])
def test_estimate_flops(name, shapes, flops):
    assert estimate_flops(name, shapes) == flops


@pytest.mark.parametrize("with_stack", [False, True])
def test_profile_memory_cpu(with_stack):
    was_tracing = tracemalloc.is_tracing()
    x = tg.ones(10_000)  # float32: 40 000 bytes per result
    gc.collect()
    gc.disable()  # a collection inside an op would free unrelated garbage there
    try:
        with profiler.profile(profile_memory=True, with_stack=with_stack) as prof, \
                profiler.record_function("block"):
            keep = x.exp()
            x.exp()  # freed right away: allocated and released inside the block
    finally:
        gc.enable()
    assert tracemalloc.is_tracing() == was_tracing
    block, exp1, _ = prof.function_events
    assert abs(exp1.cpu_memory_usage - 40_000) < 2048
    assert exp1.self_cpu_memory_usage == exp1.cpu_memory_usage
    # the block keeps one result and frees the other (the profiler's bookkeeping is not
    # counted): negative self memory, as PyTorch reports a parent that frees a child's output
    assert 40_000 - 4096 <= block.cpu_memory_usage < 40_000 + 4096
    assert abs(block.self_cpu_memory_usage + 40_000) < 4096
    table = prof.key_averages().table(sort_by="cpu_memory_usage")
    assert "CPU Mem" in table and "Self CPU Mem" in table and "Kb" not in table
    assert next(iter(_table_rows(table))) in ("block", "aten::exp")
    del keep


def test_with_stack_and_group_by_stack_n():
    x = tg.ones(2, requires_grad=True)
    with profiler.profile(with_stack=True) as prof:
        y = x * 2  # line A
        z = x * 3  # line B
        (y + z).sum().backward()
    evts = prof.function_events
    mul_a, mul_b = evts[0], evts[1]
    assert mul_a.stack[0].startswith(__file__) and "test_with_stack_and_group_by_stack_n" \
        in mul_a.stack[0]
    assert mul_a.stack[0] != mul_b.stack[0]
    assert not any("autograd" + "/dispatch.py" in s for s in mul_a.stack)
    # a backward node shows the stack of the forward op that created it
    node = next(e for e in evts if e.scope == 1 and e.sequence_nr == mul_a.sequence_nr)
    assert node.stack == mul_a.stack
    assert all(c.stack == mul_a.stack for c in node.cpu_children)
    assert len([a for a in prof.key_averages() if a.key == "aten::mul"]) == 1
    by_line = [a for a in prof.key_averages(group_by_stack_n=1) if a.key == "aten::mul"]
    assert len(by_line) >= 2
    table = prof.key_averages(group_by_stack_n=1).table(max_src_column_width=30)
    assert "Source Location" in table
    assert all(len(line.rstrip()) <= len(table.splitlines()[0]) for line in table.splitlines())


@pytest.mark.parametrize("key", SORT_KEYS)
def test_table_sort_keys(key):
    x = tg.ones(50, requires_grad=True)
    with profiler.profile(profile_memory=True) as prof:
        for _ in range(3):
            (x.exp() * 2).sum().backward()
    avgs = prof.key_averages()
    rows = list(_table_rows(avgs.table(sort_by=key), [a.key for a in avgs]))
    values = {a.key: getattr(a, key) for a in avgs}
    assert [values[k] for k in rows] == sorted(values.values(), reverse=True)


def test_table_options():
    prof = _seed_profile()
    avgs = prof.key_averages()
    assert len(_table_rows(avgs.table(row_limit=2))) == 2
    with_header = avgs.table(header="my header")
    assert with_header.splitlines()[1] == "my header"
    top = prof.function_events.table(top_level_events_only=True)
    assert "This report only display top-level ops statistics" in top
    top_names = {line.split("  ")[0].strip() for line in top.splitlines()[4:-2]}
    # top level: the forward pow and the engine's events around the nodes
    assert "aten::mul" not in top_names and "aten::pow" in top_names
    assert "PowBackward0" not in top_names
    assert "autograd::engine::evaluate_function: PowBackward0" in top_names
    narrow = avgs.table(max_name_column_width=12)
    assert "PowBackwa..." in narrow
    with pytest.raises(ValueError, match="unknown sort_by key 'nope'"):
        avgs.table(sort_by="nope")
    assert profiler.EventList().table() == ""


def test_chrome_trace(tmp_path):
    x = tg.ones(2, 2, requires_grad=True)
    with profiler.profile(record_shapes=True, with_stack=True) as prof, \
            profiler.record_function("step", args="lr=0.1"):
        (x * x).sum().backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    assert len(complete) == len(prof.function_events)
    assert {m["name"] for m in meta} >= {"process_name", "thread_name"}
    for e, evt in zip(complete, prof.function_events):
        assert set(e) >= {"name", "ph", "ts", "dur", "pid", "tid", "args", "cat"}
        assert e["name"] == evt.name
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert e["ts"] == pytest.approx(evt.time_range.start, abs=1e-3)
    by_name = {}
    for e in complete:
        by_name.setdefault(e["name"], e)  # the first of each name: the forward mul
    assert by_name["step"]["args"]["Record function args"] == "lr=0.1"
    assert by_name["step"]["cat"] == "user_annotation"
    assert by_name["MulBackward0"]["cat"] == "cpu_op"
    mul, node = by_name["aten::mul"], by_name["MulBackward0"]
    assert mul["args"]["Input Dims"] == [[2, 2], [2, 2]]
    assert mul["args"]["Sequence number"] == node["args"]["Sequence number"]
    assert (mul["args"]["Fwd thread id"], node["args"]["Fwd thread id"]) == (0, node["tid"])
    assert "Call stack" in mul["args"]


# -- profile's own behaviour --------------------------------------------------------------------

def test_enabled_false_records_nothing():
    a = tg.ones(2)
    with profiler.profile(enabled=False) as prof:
        assert state.observers == ()
        a * 2
    assert prof.function_events is None
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        prof.key_averages()
    # a disabled profile does not count as enabled
    with profiler.profile(enabled=False), profiler.profile() as inner:
        a * 2
    assert [e.name for e in inner.function_events] == ["aten::mul"]


def test_nested_profile_raises_like_pytorch():
    a = tg.ones(2)
    with profiler.profile() as outer:
        with pytest.raises(RuntimeError, match="Profiler is already enabled on this thread"), \
                profiler.profile():
            pass
        a * 2
    assert [e.name for e in outer.function_events] == ["aten::mul"]
    with pytest.raises(RuntimeError, match="not reentrant"), outer:
        pass
    with profiler.profile():  # the flag was released
        pass


def test_profile_exits_cleanly_on_exception():
    a = tg.ones(2)
    with pytest.raises(ZeroDivisionError), profiler.profile() as prof:
        a * 2
        _ = 1 / 0
    assert state.observers == ()
    assert [e.name for e in prof.function_events] == ["aten::mul"]
    with profiler.profile():
        pass


def test_profile_is_thread_local():
    started, go = threading.Event(), threading.Event()
    other = {}

    def worker():
        started.set()
        go.wait()
        a = tg.ones(3)
        for _ in range(5):
            a = a.neg()
        with profiler.profile() as p:  # its own profile, concurrent with the main thread's
            a.neg()
        other["names"] = [e.name for e in p.function_events]

    t = threading.Thread(target=worker)
    t.start()
    started.wait()
    b = tg.ones(3)
    with profiler.profile() as prof:
        go.set()
        t.join()
        b * 2
    assert [e.name for e in prof.function_events] == ["aten::mul"]
    assert other["names"] == ["aten::neg"]


def test_argument_checks_and_aliases():
    with pytest.raises(ValueError, match="use_device='xpu'"):
        profiler.profile(use_device="xpu")
    with pytest.raises(ValueError, match="Device-only events supported only with Kineto"):
        profiler.profile(use_cpu=False)
    p = profiler.profile(use_device="cuda", use_kineto=True, with_modules=True)
    assert p.use_cuda
    assert profiler.emit_nvtx is tg.autograd.nvtx.emit_nvtx
    assert "profiler" in tg.autograd.__all__


# -- CUDA -----------------------------------------------------------------------------------

def test_use_cuda_without_cuda_warns_and_records_cpu(monkeypatch):
    from tritongrad.runtime import driver
    monkeypatch.setattr(driver, "is_available", lambda: False)
    a = tg.ones(2)
    with pytest.warns(UserWarning, match="CUDA is not available"), \
            profiler.profile(use_cuda=True) as prof:
        a * 2
    (mul,) = prof.function_events
    assert mul.cuda_time_total == 0 and mul.kernels == []
    assert "CUDA" not in prof.key_averages().table()


@pytest.fixture(params=TIMINGS)
def timing(request, monkeypatch):
    """Each CUDA-time test runs on both timing paths (Note [profiling both timing paths])."""
    select_timing(request.param, monkeypatch)
    return request.param


def _cuda_profile(**kwargs):
    x = tg.ones(4, 4, device="cuda", requires_grad=True)
    (x * 2).sum().backward()  # warm up (kernels compiled, allocator primed)
    # Triton's interpreter leaves cyclic garbage that holds arrays; a collection in the middle
    # would free them inside some op and move the memory figures checked below.
    a = tg.ones(2)
    gc.collect()
    gc.disable()
    try:
        with profiler.profile(use_cuda=True, **kwargs) as prof:
            with profiler.record_function("step"):
                y = (x * 2).sum()
            y.backward()
            a * 2  # a CPU op: no device time
    finally:
        gc.enable()
    return prof


_KERNEL_OPS = ("aten::mul", "aten::sum", "aten::add_")  # those of _cuda_profile that run one


def _queues_work(evt) -> bool:
    """Whether an event of ``_cuda_profile`` on the device queued device work, itself or
    inside (views and the engine's bookkeeping queue none)."""
    return evt.name in _KERNEL_OPS or any(_queues_work(c) for c in evt.cpu_children)


def test_use_cuda_times_device_work(timing, tmp_path):
    prof = _cuda_profile(profile_memory=True)
    evts = prof.function_events
    cpu_mul = evts[-1]
    assert cpu_mul.device_interval is None and cpu_mul.cuda_time_total == 0
    assert cpu_mul.kernels == [] and cpu_mul.device_spans == []
    cuda_events = evts[:-1]
    for e in cuda_events:
        assert e.self_cuda_time_total <= e.cuda_time_total + 1e-6
    step = evts[0]
    assert step.name == "step"
    assert step.cuda_time_total >= sum(c.cuda_time_total for c in step.cpu_children) - 1e-3
    mul = step.cpu_children[0]
    assert mul.name == "aten::mul" and mul.cuda_memory_usage > 0
    for e in cuda_events:
        assert e.cuda_time_total > 0 if _queues_work(e) else e.cuda_time_total >= 0, e.name
    if timing == "events":
        # a pair of events around every event on the device: each has one measured interval
        # that covers its children's work (is_legacy; on a GPU an event pair around a view
        # may read 0: the interval has no work in it)
        assert all(e.is_legacy and len(e.kernels) == 1 and e.device_spans == []
                   for e in cuda_events)
        assert all(e.device_interval is not None for e in cuda_events)
    else:
        # CUPTI gives each kernel to the op that launched it; a range, a node, a view has
        # the device time of what ran inside it (is_legacy=False, as Kineto)
        assert not any(e.is_legacy or e.device_interval is not None for e in cuda_events)
        assert step.kernels == [] and step.self_cuda_time_total == pytest.approx(0.0)
        assert step.cuda_time_total == pytest.approx(
            sum(c.cuda_time_total for c in step.cpu_children))
        for e in cuda_events:  # device time exactly where work was queued
            assert len(e.kernels) == len(e.device_spans)
            assert bool(e.kernels) == (e.name in _KERNEL_OPS), e.name
            assert (e.cuda_time_total > 0) == _queues_work(e), e.name
            if e.name in ("MulBackward0", "torch::autograd::AccumulateGrad"):
                assert e.kernels == []  # the node's time is its mul's, its add_'s
    table = prof.key_averages().table(sort_by="self_cuda_time_total")
    for col in ("Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg", "CUDA Mem"):
        assert col in table
    assert "Self CUDA time total: " in table
    path = tmp_path / "cuda.json"
    prof.export_chrome_trace(str(path))
    device = [e for e in json.loads(path.read_text())["traceEvents"]
              if e["ph"] == "X" and e["pid"] == 0]
    if timing == "events":  # one measured span per timed event
        assert len(device) == len(cuda_events) and all(e["cat"] == "cuda" for e in device)
    else:  # one per kernel CUPTI saw
        assert len(device) == sum(len(e.device_spans) for e in cuda_events) > 0
        assert {e["cat"] for e in device} <= {"kernel", "gpu_memcpy", "gpu_memset"}


def test_use_cpu_false_keeps_device_events(timing):
    """use_cpu=False keeps the events with device time: with event timing every event on a
    device (each has its measured interval); with CUPTI those whose ops queued work, the
    'step' range and the backward nodes included (their device time is their ops')."""
    full = _cuda_profile(use_kineto=True)
    prof = _cuda_profile(use_kineto=True, use_cpu=False)
    evts = prof.function_events
    on_device = full.function_events[:-1]  # all but the CPU op
    expected = on_device if timing == "events" else [e for e in on_device if _queues_work(e)]
    names = [e.name for e in evts]
    assert names == [e.name for e in expected]
    assert names[0] == "step" and names.count("aten::mul") == 2  # not the CPU op
    assert "MulBackward0" in names and "torch::autograd::AccumulateGrad" in names
    for e in evts:  # each kept event's device time is its own or its kept children's
        assert e.kernels or e.cpu_children, e.name
        assert e.cuda_time_total > 0 or not _queues_work(e)
    # each under its nearest kept ancestor
    kept = {id(e) for e in expected}

    def kept_parent(e):
        p = e.cpu_parent
        while p is not None and id(p) not in kept:
            p = p.cpu_parent
        return p

    assert [e.cpu_parent.name if e.cpu_parent else None for e in evts] == \
        [kept_parent(e).name if kept_parent(e) else None for e in expected]


@pytest.mark.gpu
def test_use_cuda_measures_device_time_on_a_gpu():
    a = tg.randn(2048, 2048, device="cuda")
    a @ a
    tg.cuda.synchronize()
    with profiler.profile(use_cuda=True) as prof:
        for _ in range(3):
            a @ a
    mms = [e for e in prof.function_events if e.name == "aten::mm"]
    assert len(mms) == 3
    for e in mms:  # 17 GFLOP each: tens of microseconds at least, on any GPU
        assert 10 < e.cuda_time_total < 1e6
    # launches return before the kernels finish: device time is not CPU time
    assert sum(e.cuda_time_total for e in mms) > 0


# -- load_nvprof --------------------------------------------------------------------------------

# nvprof's own table layout (the export writes the same tables the loader reads).
_SCHEMA = nvprof._NVPROF_SCHEMA

PID, TID = 4242, 1142654784
T0 = 1_496_933_427_584_000_000  # nvprof timestamps: ns since the epoch


class _Nvprof:
    """Writes an nvprof-layout SQLite trace: NVTX ranges, API calls and their kernels."""

    def __init__(self, path):
        self.conn = sqlite3.connect(path)
        self.conn.executescript(_SCHEMA)
        self.ids = {}
        self.next_range = 1
        self.next_corr = 100

    def string(self, s):
        if s not in self.ids:
            cur = self.conn.execute("INSERT INTO StringTable(value) VALUES (?)", (s,))
            self.ids[s] = cur.lastrowid
        return self.ids[s]

    def range(self, name, t0, t1, tid=TID):
        rid, self.next_range = self.next_range, self.next_range + 1
        obj = struct.pack("<III", PID, tid, 0)
        rows = [(2, T0 + t0, rid, 2, obj, self.string(name), 0),
                (4, T0 + t1, rid, 2, obj, 0, 0)]
        self.conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, "
                              "objectKind, objectId, name, domain) VALUES (?,?,?,?,?,?,?)", rows)
        return rid

    def launch(self, kernel, t0, t1, k0, k1, table="RUNTIME", cbid=211, tid=TID):
        corr, self.next_corr = self.next_corr, self.next_corr + 1
        self.conn.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_{table}(cbid, start, end, processId, "
                          f"threadId, correlationId, returnValue) VALUES (?,?,?,?,?,?,0)",
                          (cbid, T0 + t0, T0 + t1, PID, tid, corr))
        self.conn.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL VALUES (NULL, x'00', 1, 32, 2, 2, "
            "?, ?, ?, 0, 1, 7, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, ?, 1, ?)",
            (T0 + k0, T0 + k1, T0 + k1, corr, self.string(kernel)))

    def close(self):
        self.conn.commit()
        self.conn.close()


@pytest.fixture
def nvprof_trace(tmp_path):
    """A forward mul and its backward, as emit_nvtx(record_shapes=True) names them, a user
    range, PyTorch's older spellings, and kernels launched through the runtime and driver."""
    db = _Nvprof(str(tmp_path / "trace.prof"))
    db.range("labelz", 0, 10_000)
    db.range("mul, seq = 3, sizes = [[2, 3], []]", 1_000, 4_000)
    db.launch("_Z10mul_kernelPfS_i", 2_000, 2_500, 5_000, 7_000)  # runtime, inside "mul"
    db.range("MulBackward0, stashed seq = 3", 20_000, 30_000)
    db.range("mul, seq = 0", 21_000, 25_000)
    db.launch("mul_kernel_triton", 22_000, 22_400, 26_000, 27_500, table="DRIVER", cbid=307)
    db.launch("outside", 40_000, 40_100, 40_200, 40_300)  # in no range: dropped
    db.range("add, seq=5, op_id = 2, sizes = [[4], [4]], input_op_ids = [(0, 0)]",
             50_000, 51_000, tid=TID + 1)
    db.launch("add_kernel", 50_100, 50_200, 52_000, 52_600, tid=TID + 1)
    db.close()
    return str(tmp_path / "trace.prof")


def test_load_nvprof_parses_ranges(nvprof_trace):
    evts = profiler.load_nvprof(nvprof_trace)
    assert isinstance(evts, profiler.EventList)
    assert [e.name for e in evts] == ["labelz", "mul", "MulBackward0", "mul", "add"]
    labelz, mul, node, inner, add = evts
    assert (mul.sequence_nr, node.sequence_nr, inner.sequence_nr, add.sequence_nr) == \
        (3, 3, 0, 5)
    assert labelz.sequence_nr == -1
    assert mul.input_shapes == [[2, 3], []] and add.input_shapes == [[4], [4]]
    assert node.scope == 1 and mul.scope == 0
    assert (mul.time_range.start, mul.time_range.end) == pytest.approx(
        ((T0 + 1_000) / 1e3, (T0 + 4_000) / 1e3))
    assert (mul.thread, add.thread) == (TID, TID + 1)
    assert mul.cpu_parent is labelz and inner.cpu_parent is node and node.cpu_parent is None


def test_load_nvprof_attaches_kernels_to_innermost_range(nvprof_trace):
    evts = profiler.load_nvprof(nvprof_trace)
    labelz, mul, node, inner, add = evts
    assert mul.kernels == [profiler.Kernel(
        "mul_kernel(float*, float*, int)" if nvprof._cxa_demangle() else "_Z10mul_kernelPfS_i",
        0, 2.0)]
    assert labelz.kernels == [] and node.kernels == []
    assert [k.name for k in inner.kernels] == ["mul_kernel_triton"]  # a driver-API launch
    assert [k.name for k in add.kernels] == ["add_kernel"]
    assert labelz.cuda_time_total == pytest.approx(2.0)  # its child's kernel
    assert labelz.self_cuda_time_total == pytest.approx(0.0)
    assert node.cuda_time_total == pytest.approx(1.5)
    assert not node.is_legacy
    table = evts.key_averages().table(sort_by="cuda_time_total")
    assert "CUDA total" in table and next(iter(_table_rows(table))) == "mul"


def test_load_nvprof_errors(tmp_path, nvprof_trace):
    with pytest.raises(FileNotFoundError):
        profiler.load_nvprof(str(tmp_path / "missing.prof"))
    other = tmp_path / "other.db"
    sqlite3.connect(str(other)).execute("CREATE TABLE t(x)").connection.close()
    with pytest.raises(ValueError, match="not an nvprof trace"):
        profiler.load_nvprof(str(other))
    conn = sqlite3.connect(nvprof_trace)
    conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, objectKind, "
                 "objectId, name, domain) SELECT flags, timestamp + 1, id, objectKind, objectId, "
                 "name, domain FROM CUPTI_ACTIVITY_KIND_MARKER WHERE id = 1")
    conn.commit()
    conn.close()
    with pytest.raises(RuntimeError, match="duplicate NVTX range id 1"):
        profiler.load_nvprof(nvprof_trace)


@pytest.mark.parametrize("message, parsed", [
    ("mul, seq = 3", ("mul", 3, False, None)),
    ("MulBackward0, stashed seq = 3", ("MulBackward0", 3, True, None)),
    ("mul, seq=12", ("mul", 12, False, None)),
    ("PowBackward0, stashed seq=7, sizes = [[1, 1]]", ("PowBackward0", 7, True, [[1, 1]])),
    ("mm, seq = 1, op_id = 4, sizes = [[2, 3], [3, 4]], input_op_ids = [(0, 0)]",
     ("mm", 1, False, [[2, 3], [3, 4]])),
    ("mul, sizes = [[], [2]]", ("mul", -1, False, [[], [2]])),
    ("torch::autograd::AccumulateGrad", ("torch::autograd::AccumulateGrad", -1, False, None)),
    ("my, label", ("my, label", -1, False, None)),
])
def test_parse_range_name(message, parsed):
    assert parse_range_name(message) == parsed


def test_parse_range_name_reads_what_emit_nvtx_writes():
    from tritongrad.autograd.nvtx import format_range, format_sizes
    msg = format_range("aten::mul", 9, sizes=format_sizes((tg.ones(2, 3), 0.5)))
    assert parse_range_name(msg) == ("aten::mul", 9, False, [[2, 3], []])
    assert parse_range_name(format_range("MulBackward0", 9, stashed=True))[:3] == \
        ("MulBackward0", 9, True)


def test_profiler_never_imports_torch():
    code = ("import sys, tritongrad as tg\n"
            "x = tg.ones(2, requires_grad=True)\n"
            "with tg.autograd.profiler.profile(record_shapes=True, with_stack=True) as p:\n"
            "    (x * x).sum().backward()\n"
            "str(p)\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_record_function_skips_observers_without_ranges():
    from tritongrad.autograd import observe

    class OpsOnly:  # observe.py: range_enter/range_exit are optional
        def __init__(self):
            self.ops = []

        def op_enter(self, op, seq, inputs, params):
            self.ops.append(observe.event_name(op))

        def op_exit(self, token):
            pass

        def node_enter(self, node, grads=None):
            pass

        def node_exit(self, token):
            pass

    obs, a = OpsOnly(), tg.ones(2)
    with observe.observing(obs), profiler.profile() as prof, profiler.record_function("r"):
        a * 2
    assert obs.ops == ["aten::mul"]
    assert [e.name for e in prof.function_events] == ["r", "aten::mul"]
