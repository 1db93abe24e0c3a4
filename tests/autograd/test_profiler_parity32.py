"""The profilers against PyTorch's (a differential sweep's fixes): events hold [] and 0 where
nothing was recorded, ``ProfilerStep*`` folds the steps, tables follow PyTorch's columns, sort
keys and ``time_unit``, Chrome traces carry Kineto's categories, ids and forward-backward
flows, export_stacks needs ``with_stack``, record_function checks its name, acc_events,
custom trace ids, ``_KinetoProfile``, ``itt``/``emit_itt``, ProfilerActivity and
ProfilerAction members. Each behaviour is checked on its own; where torch is installed, the
same code runs on it too and must agree."""

import json
import re
import warnings

import pytest

import tritongrad as tg
from tritongrad.autograd import profiler
from tritongrad.autograd import profiler_util as pu
from tritongrad.profiler import ProfilerAction, ProfilerActivity


def _torch():
    return pytest.importorskip("torch", minversion="2.13")


def _profile(L, **kw):
    x = L.ones(2, 3, requires_grad=True)
    with L.autograd.profiler.profile(**kw) as prof:
        (x * 2).sum().backward()
    return prof


def _event(prof, name):
    return next(e for e in prof.function_events if e.name == name)


def _columns(table):
    lines = table.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("---"))
    return re.split(r"\s{2,}", lines[i + 1].strip())


# -- what an event holds without the options ---------------------------------------------------

def test_unrecorded_shapes_and_flops_are_empty_list_and_zero():
    mul = _event(_profile(tg), "aten::mul")
    assert mul.input_shapes == [] and mul.flops == 0
    assert sum(e.flops for e in _profile(tg).function_events) == 0  # (None would raise)
    t = _event(_profile(tg, with_flops=True), "aten::sum")
    assert isinstance(t.flops, int)
    x = tg.ones(3, 4)
    with profiler.profile(with_flops=True) as prof:
        x.t()
    assert prof.function_events[0].flops == 0  # an op with no estimate


def test_event_and_average_fields_as_pytorchs():
    prof = _profile(tg)
    mul = _event(prof, "aten::mul")
    assert mul.device_type == pu.DeviceType.CPU and str(mul.device_type) == "DeviceType.CPU"
    assert (mul.overload_name, mul.concrete_inputs, mul.kwinputs, mul.use_device) == \
        ("", [], {}, None)
    avg = next(a for a in prof.key_averages() if a.key == "aten::mul")
    assert avg.input_shapes == "" and avg.overload_name == "" and avg.flops == 0
    assert avg.device_type == pu.DeviceType.CPU and avg.use_device is None
    assert mul.device_time_str == mul.cuda_time_str


def test_group_by_overload_name_is_passed_through():
    prof = _profile(tg, record_shapes=True)
    plain = [(a.key, a.count) for a in prof.key_averages()]
    by_overload = prof.key_averages(group_by_overload_name=True)
    assert [(a.key, a.count) for a in by_overload] == plain  # (no overloads: same groups)
    assert all(a.overload_name == "" for a in by_overload)
    shaped = prof.key_averages(group_by_input_shape=True)
    assert any(a.input_shapes == [[2, 3], []] for a in shaped if a.key == "aten::mul")


def test_private_helpers_have_pytorchs_names_and_results():
    assert [pu._format_memory(n) for n in (0, 1023, 1024, 1536, 1 << 20, 3 << 30, -2048)] == \
        ["0 B", "1023 B", "1.00 KB", "1.50 KB", "1.00 MB", "3.00 GB", "-2.00 KB"]
    assert pu._format_time_share(1, 4) == "25.00%" and pu._format_time_share(0, 0) == "NaN"
    with pytest.raises(AssertionError, match="Expected time_us == 0"):
        pu._format_time_share(1, 0)
    assert pu._rewrite_name("ProfilerStep#7", with_wildcard=True) == "ProfilerStep*"
    assert pu._rewrite_name("ProfilerStep#7") == "ProfilerStep#7"
    assert pu._filter_name("aten::is_leaf") and not pu._filter_name("aten::mul")


# -- the table -----------------------------------------------------------------------------------

def test_table_columns_order_and_totals():
    x = tg.ones(8, 8)
    with profiler.profile(with_flops=True, with_stack=True, record_shapes=True) as prof:
        tg.mm(x, x)
    cols = _columns(prof.key_averages(group_by_input_shape=True, group_by_stack_n=1).table())
    # PyTorch's order: shapes, then source, then the FLOPs column last
    assert cols[-3:] == ["Input Shapes", "Source Location", "Total KFLOPs"]
    table = prof.key_averages().table()
    assert table.splitlines()[-1].startswith("Self CPU time total: ")
    assert "Self CUDA" not in table  # no device time: no device columns


def test_table_time_unit_and_unknown_sort_key():
    prof = _profile(tg)
    avgs = prof.key_averages()
    total = avgs.self_cpu_time_total
    for unit, scale in (("s", 1e6), ("ms", 1e3), ("us", 1.0)):
        last = avgs.table(time_unit=unit).splitlines()[-1]
        assert last == f"Self CPU time total: {total / scale:.3f}{unit}"
    assert prof.table(time_unit="ms").splitlines()[-1].endswith("ms")
    with pytest.raises(ValueError, match="time_unit"):
        avgs.table(time_unit="min")
    with pytest.raises(AttributeError, match="unknown sort_by key 'nope'"):
        avgs.table(sort_by="nope")
    with pytest.raises(ValueError, match="unknown sort_by key 'nope'"):  # (both types)
        avgs.table(sort_by="nope")
    # device spellings of a sort key read the same column (PyTorch 2.x's device_* names)
    assert avgs.table(sort_by="self_xpu_time_total") == \
        avgs.table(sort_by="self_cuda_time_total")


def test_table_sorts_and_limits_rows():
    x = tg.ones(2)
    with profiler.profile() as prof:
        for _ in range(3):
            x * 2
        x + 1
    table = prof.key_averages().table(sort_by="count", row_limit=1)
    lines = table.splitlines()
    body = lines[3:-2]
    assert len(body) == 1 and body[0].split()[0] == "aten::mul" and body[0].split()[-1] == "3"


# -- ProfilerStep* -------------------------------------------------------------------------------

def test_profiler_steps_fold_into_one_row_and_keep_their_numbers_in_the_trace(tmp_path):
    x = tg.ones(2, requires_grad=True)
    seen = []
    with tg.profiler.profile(activities=[ProfilerActivity.CPU],
                             schedule=tg.profiler.schedule(wait=0, warmup=1, active=2, repeat=1),
                             on_trace_ready=lambda p: seen.append(p.events())) as p:
        for _ in range(3):
            x * 2
            p.step()
    steps = [e for e in seen[0] if e.name.startswith("ProfilerStep")]
    assert [e.name for e in steps] == ["ProfilerStep*", "ProfilerStep*"]
    assert [e.trace_name for e in steps] == ["ProfilerStep#1", "ProfilerStep#2"]
    row = next(a for a in seen[0].key_averages() if a.key == "ProfilerStep*")
    assert row.count == 2
    path = tmp_path / "t.json"
    seen[0].export_chrome_trace(str(path))
    names = {e["name"] for e in json.loads(path.read_text())["traceEvents"]}
    assert {"ProfilerStep#1", "ProfilerStep#2"} <= names and "ProfilerStep*" not in names


# -- the Chrome trace ----------------------------------------------------------------------------

def test_chrome_trace_categories_ids_and_forward_backward_flows(tmp_path):
    prof = _profile(tg)
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert trace["schemaVersion"] == 1 and trace["traceName"] == str(path)
    assert isinstance(trace["trace_id"], str) and trace["trace_id"]
    assert abs(trace["baseTimeNanoseconds"] / 1e9 - __import__("time").time()) < 600
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert {e["cat"] for e in complete} == {"cpu_op"}  # backward nodes are cpu_op, as Kineto's
    for e, evt in zip(complete, prof.function_events):
        assert (e["args"]["Ev Idx"], e["args"]["External id"]) == (evt.id, evt.id + 1)
        assert "Input Dims" not in e["args"]  # (record_shapes off)
    # one flow per node made by a forward op: "s" at the op, "f" (bound to the node) at it
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys() and len(starts) == 2  # mul -> Mul, sum -> Sum
    by_ts = {round(evt.time_range.start, 3): evt for evt in prof.function_events}
    pairs = sorted((by_ts[starts[i]["ts"]].name, by_ts[ends[i]["ts"]].name) for i in starts)
    assert pairs == [("aten::mul", "MulBackward0"), ("aten::sum", "SumBackward0")]
    assert all(e["cat"] == "fwdbwd" and e["bp"] == "e" for e in ends.values())


def test_custom_trace_id_callback_names_the_trace(tmp_path):
    x = tg.ones(2)
    with profiler.profile(custom_trace_id_callback=lambda: "run-42") as prof:
        x * 2
    assert prof.trace_id == "run-42"
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    assert json.loads(path.read_text())["trace_id"] == "run-42"
    with pytest.raises(ValueError, match="post_processing_timeout_s"):
        profiler.profile(post_processing_timeout_s=-1)


# -- export_stacks, record_function, acc_events, signature -------------------------------------

def test_export_stacks_requires_with_stack(tmp_path):
    with pytest.raises(AssertionError, match=r"requires with_stack=True"):
        _profile(tg).export_stacks(str(tmp_path / "s.txt"))
    x = tg.ones(64, 64)
    with profiler.profile(with_stack=True) as prof:
        tg.mm(x, x)
    prof.export_stacks(str(tmp_path / "s.txt"), "self_xpu_time_total")  # (a device spelling)
    with pytest.raises(ValueError, match="metric should be one of"):
        prof.export_stacks(str(tmp_path / "s.txt"), "bogus")
    with tg.profiler.profile(activities=[ProfilerActivity.CPU]) as p:
        tg.mm(x, x)
    with pytest.raises(AssertionError, match=r"requires with_stack=True"):
        p.export_stacks(str(tmp_path / "s.txt"))


def test_record_function_checks_its_name_and_has_pytorchs_attributes():
    r = profiler.record_function("x", "y")
    assert (r.name, r.args, r.run_callbacks_on_exit) == ("x", "y", True)
    with pytest.raises(RuntimeError, match="name must be a str, got int"):
        with profiler.record_function(3):
            pass
    with pytest.raises(RuntimeError, match="args must be a str"):
        with profiler.record_function("a", args=5):
            pass


def test_acc_events_accumulates_runs_on_one_timeline():
    x = tg.ones(2)
    prof = profiler.profile(acc_events=True)
    with prof:
        x * 2
    with prof:
        x + 1
    names = [e.name for e in prof.function_events]
    assert names == ["aten::mul", "aten::add"]
    assert [e.id for e in prof.function_events] == [0, 1]
    first, second = prof.function_events
    assert second.time_range.start >= first.time_range.end  # the later run comes after
    once = profiler.profile()
    with once:
        pass
    with pytest.raises(RuntimeError, match="not reentrant"):
        with once:
            pass


def test_profile_options_after_enabled_are_keyword_only():
    with pytest.raises(TypeError):
        profiler.profile(True, True)
    with profiler.profile(True, use_cuda=False, experimental_config=None) as p:
        pass
    assert p.function_events == []


# -- torch.profiler's surface --------------------------------------------------------------------

def test_kineto_profile_itt_and_enums():
    k = tg.profiler._KinetoProfile(activities=[ProfilerActivity.CPU])
    x = tg.ones(2)
    k.start()
    x * 2
    k.stop()
    assert [e.name for e in k.events()] == ["aten::mul"]
    assert issubclass(tg.profiler.profile, tg.profiler._KinetoProfile)
    assert tg.profiler.kineto_available() is False
    assert tg.profiler.itt.is_available() is False
    import tritongrad.profiler.itt as itt  # importable as a module, as PyTorch's
    assert itt is tg.profiler.itt
    with pytest.raises(RuntimeError, match="ITT"):
        itt.range_push("a")
    with pytest.raises(RuntimeError, match="ITT"):
        with profiler.emit_itt():
            pass
    with profiler.emit_itt(enabled=False):
        pass
    assert [a.name for a in ProfilerAction][-1] == "DEVICE_STOPPED"
    with pytest.raises(ValueError, match="DEVICE_STOPPED"):
        tg.profiler.profile(schedule=lambda step: ProfilerAction.DEVICE_STOPPED)
    with pytest.raises(ValueError, match="XPU cannot be profiled"):
        tg.profiler.profile(activities=[ProfilerActivity.XPU])
    with pytest.raises(ValueError, match="XPU cannot be profiled"):
        profiler.profile(activities=[ProfilerActivity.XPU])
    with pytest.raises(ValueError, match="record_shapes=True, profile_memory=True"):
        tg.profiler.profile(activities=[ProfilerActivity.CPU]).export_memory_timeline("m")
    tg.profiler._ExperimentalConfig(verbose=True)


# -- against torch -------------------------------------------------------------------------------

def test_against_torch_event_defaults_and_step_names():
    torch = _torch()
    for L in (torch, tg):
        mul = _event(_profile(L), "aten::mul")
        assert (mul.input_shapes, mul.flops, mul.overload_name) == ([], 0, ""), L
        avg = next(a for a in _profile(L).key_averages() if a.key == "aten::mul")
        assert (avg.input_shapes, avg.overload_name) == ("", ""), L
    keys = {}
    for L in (torch, tg):
        x = L.ones(2, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with L.profiler.profile(activities=[L.profiler.ProfilerActivity.CPU],
                                    schedule=L.profiler.schedule(wait=0, warmup=1,
                                                                 active=2)) as p:
                for _ in range(2):
                    x * 2
                    p.step()
        keys[L] = sorted({e.name for e in p.events() if e.name.startswith("Profiler")})
    assert keys[torch] == keys[tg] == ["ProfilerStep*"]


def test_against_torch_table_columns_and_errors(tmp_path):
    torch = _torch()
    cols, errors, cats = {}, {}, {}
    for L in (torch, tg):
        prof = _profile(L)
        cols[L] = _columns(prof.key_averages().table(sort_by="self_cpu_time_total"))
        with pytest.raises(AssertionError, match="requires with_stack=True"):
            prof.export_stacks(str(tmp_path / "s.txt"))
        with pytest.raises(AttributeError):
            prof.key_averages().table(sort_by="nope")
        with pytest.raises(RuntimeError):
            with L.autograd.profiler.record_function(3):
                pass
        path = tmp_path / "t.json"
        prof.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
        cats[L] = sorted({(e["name"], e["cat"]) for e in trace["traceEvents"]
                          if e["ph"] == "X" and ("Backward" in e["name"]
                                                 or e["name"] == "aten::mul")})
        flows = [e for e in trace["traceEvents"] if e["ph"] in ("s", "f")]
        assert {e["cat"] for e in flows} == {"fwdbwd"}, L
        errors[L] = {k for k in ("schemaVersion", "traceName", "trace_id", "baseTimeNanoseconds",
                                 "deviceProperties") if k in trace}
    assert cols[torch] == cols[tg]
    assert cats[torch] == cats[tg]
    assert errors[torch] == errors[tg]


def test_against_torch_surface_members():
    torch = _torch()
    assert [(a.name, a.value) for a in torch.profiler.ProfilerAction] == \
        [(a.name, a.value) for a in ProfilerAction]
    assert {m for m in dir(torch.profiler.ProfilerActivity) if m.isupper()} <= \
        {m for m in dir(ProfilerActivity) if m.isupper()}
    for name in ("_KinetoProfile", "itt", "kineto_available", "DeviceType",
                 "_ExperimentalConfig"):
        assert hasattr(torch.profiler, name) and hasattr(tg.profiler, name), name
    assert hasattr(torch.autograd.profiler, "emit_itt") and hasattr(profiler, "emit_itt")
    sig = __import__("inspect").signature
    t_params = list(sig(torch.autograd.profiler.profile.__init__).parameters)
    g_params = list(sig(profiler.profile.__init__).parameters)
    t_params.remove("activity_filters")  # (not provided: see the report)
    assert g_params[:len(t_params)] == t_params
    assert list(sig(torch.profiler.tensorboard_trace_handler).parameters) == \
        list(sig(tg.profiler.tensorboard_trace_handler).parameters)
    assert list(sig(torch.autograd.profiler_util.EventList.table).parameters) == \
        list(sig(pu.EventList.table).parameters)
