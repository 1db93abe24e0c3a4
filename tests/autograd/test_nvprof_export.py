"""NVIDIA profiler databases (autograd/nvprof.py): ``export_nvprof`` writes nvprof's SQLite
layout and ``load_nvprof`` reads it back into the same events; ``load_nvprof`` also reads
Nsight Systems' ``nsys export --type sqlite`` layout.

The Nsight Systems databases here are built by hand with the tables and columns nsys writes
(StringIds, NVTX_EVENTS, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_KERNEL, as its
documented export schema has them); no file written by nsys itself is parsed (nsys is not
available on the machines these tests run on)."""

import json
import sqlite3

import pytest

import tritongrad as tg
from tritongrad.autograd import profiler
from tritongrad.autograd.profiler_util import DeviceSpan, EventList, FunctionEvent, Interval

from cupti_double import TIMINGS, select_timing

# -- export_nvprof -----------------------------------------------------------------------------


@pytest.fixture(params=TIMINGS)
def timing(request, monkeypatch):
    """The export runs on both timing paths (Note [profiling both timing paths])."""
    select_timing(request.param, monkeypatch)
    return request.param


def _cuda_profile():
    x = tg.ones(4, 4, device="cuda", requires_grad=True)
    (x * 2).sum().backward()  # warm up
    a = tg.ones(2)
    with profiler.profile(use_cuda=True, record_shapes=True) as prof:
        with profiler.record_function("step"):
            y = (x * 2).sum()
        y.backward()
        a * 2  # a CPU op: no device time
    return prof


def test_round_trip_keeps_names_seq_shapes_times_and_threads(timing, tmp_path):
    prof = _cuda_profile()
    path = str(tmp_path / "t.prof")
    prof.export_nvprof(path)
    evts = prof.function_events
    loaded = profiler.load_nvprof(path)
    assert [e.name for e in loaded] == [e.name for e in evts]
    for a, b in zip(evts, loaded):
        assert (b.sequence_nr, b.thread) == (a.sequence_nr, a.thread)
        # emit_nvtx names a user range and an evaluate_function range alone: no sizes
        alone = a.is_user_annotation or a.name.startswith("autograd::engine::evaluate_function")
        assert b.input_shapes == (None if alone else a.input_shapes)
        # a user range and AccumulateGrad (no seq) carry no stashed tag: read back as ops
        assert b.scope == (a.scope if a.sequence_nr >= 0 else 0)
        assert b.time_range.start == pytest.approx(a.time_range.start, abs=1e-3)
        assert b.time_range.end == pytest.approx(a.time_range.end, abs=1e-3)
        assert [c.name for c in b.cpu_children] == [c.name for c in a.cpu_children]


def test_round_trip_puts_each_measured_interval_on_its_event(timing, tmp_path):
    prof = _cuda_profile()
    path = str(tmp_path / "t.prof")
    prof.export_nvprof(path)
    loaded = profiler.load_nvprof(path)
    assert all(e.is_legacy == (timing == "events") for e in prof.function_events)
    timed = 0
    for a, b in zip(prof.function_events, loaded):
        # event timing: the innermost timed events' intervals, one kernel named after each
        # (an outer interval covers its children's: not written). CUPTI: the kernels CUPTI
        # gave each event, read back to the same event through their launch calls.
        if a.device_spans:
            written = [s for s in a.device_spans if s.kind == "kernel"]
        elif a.device_interval is not None and not any(
                c.device_interval is not None for c in a.cpu_children):
            dev, stream, span = a.device_interval
            written = [DeviceSpan(a.name, dev, stream, span)]
        else:
            written = []
        timed += bool(written)
        assert [(k.name, k.device) for k in b.kernels] == [(s.name, s.device) for s in written]
        for k, got, s in zip(b.kernels, b.device_spans, written):
            assert k.duration == pytest.approx(s.interval.elapsed_us(), abs=2e-3)
            assert got.stream == s.stream
            assert got.interval.start == pytest.approx(s.interval.start, abs=1e-3)
            if s.launch is not None:  # (CUPTI's launch call: written where it was)
                assert got.launch.start == pytest.approx(s.launch.start, abs=1e-3)
    assert timed >= 3
    assert [e.cuda_time_total > 0 for e in loaded][-1] is False  # the CPU op
    step = next(e for e in loaded if e.name == "step")
    assert step.cuda_time_total == pytest.approx(
        sum(k.duration for e in loaded for k in e.kernels if _inside(e, step)), abs=1e-3)


def _inside(evt, ancestor) -> bool:
    while evt is not None:
        if evt is ancestor:
            return True
        evt = evt.cpu_parent
    return False


def test_export_writes_nvprofs_tables(timing, tmp_path):
    prof = _cuda_profile()
    path = str(tmp_path / "t.prof")
    (tmp_path / "t.prof").write_text("an old file is replaced")
    prof.export_nvprof(path)
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"StringTable", "CUPTI_ACTIVITY_KIND_MARKER", "CUPTI_ACTIVITY_KIND_RUNTIME",
            "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"} <= tables
    names = [r[0] for r in conn.execute(
        "SELECT s.value FROM CUPTI_ACTIVITY_KIND_MARKER AS m JOIN StringTable AS s "
        "ON m.name = s._id_ WHERE m.flags = 2 ORDER BY m.timestamp")]
    seq = prof.function_events[1].sequence_nr  # the forward mul's
    assert names[:2] == ["step", f"aten::mul, seq = {seq}, sizes = [[4, 4], []]"]
    assert f"MulBackward0, stashed seq = {seq}, sizes = [[4, 4]]" in names
    # the engine's range around the node: its name alone (PyTorch's emit_nvtx), read back
    # with the node's number
    assert names[names.index(f"MulBackward0, stashed seq = {seq}, sizes = [[4, 4]]") - 1] == \
        "autograd::engine::evaluate_function: MulBackward0"
    # every start row has its end row, same id, later
    assert conn.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MARKER AS a JOIN "
                        "CUPTI_ACTIVITY_KIND_MARKER AS b ON a.id = b.id WHERE a.flags = 2 AND "
                        "b.flags = 4 AND b.name = 0 AND b.timestamp >= a.timestamp"
                        ).fetchone()[0] == len(prof.function_events)
    # PyTorch's reader: runtime launches (cbid 211) joined to kernels on correlationId
    joined = conn.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN "
                          "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL AS k ON r.correlationId = "
                          "k.correlationId WHERE r.cbid = 211 AND k.end >= k.start").fetchone()[0]
    assert joined == conn.execute("SELECT COUNT(*) FROM "
                                  "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL").fetchone()[0] >= 3
    conn.close()


def _event(id_, name, t0, t1, parent=None, seq=-1, scope=0):
    evt = FunctionEvent(id_, name, 77, t0, t1, sequence_nr=seq, scope=scope)
    if parent is not None:
        parent.cpu_children.append(evt)
        evt.cpu_parent = parent
    return evt


def test_launches_land_in_the_event_that_made_them(tmp_path):
    """A kernel of the outer range with no known launch time must go to the outer range (its
    launch call is placed outside the children), one with a known launch keeps it."""
    step = _event(0, "step", 0.0, 100.0, scope=7)
    mm = _event(1, "mm", 10.0, 40.0, step, seq=4)
    add = _event(2, "add", 40.0, 100.0, step, seq=5)
    step.append_device_span(DeviceSpan("prologue", 0, 3, Interval(1.0, 2.5)))
    mm.append_device_span(DeviceSpan("gemm", 0, 7, Interval(50.0, 80.0), "kernel",
                                     Interval(20.0, 21.0)))
    mm.append_device_span(DeviceSpan("Memset", 0, 7, Interval(81.0, 82.0), "memset",
                                     Interval(22.0, 23.0)))
    path = str(tmp_path / "hand.prof")
    EventList([step, mm, add]).export_nvprof(path)
    got = {e.name: e for e in profiler.load_nvprof(path)}
    assert got["step"].kernels == [profiler.Kernel("prologue", 0, 1.5)]
    assert got["mm"].kernels == [profiler.Kernel("gemm", 0, 30.0)]  # memsets are not written
    assert got["mm"].device_spans[0].launch.start == pytest.approx(20.0)
    assert got["add"].kernels == []
    assert got["step"].cuda_time_total == pytest.approx(31.5)
    with pytest.raises(TypeError, match="FunctionEvents"):
        EventList([step]).key_averages().export_nvprof(path)


# -- Nsight Systems ----------------------------------------------------------------------------

_NSYS_SCHEMA = """
CREATE TABLE StringIds(id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
    rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
    endGlobalTid INTEGER, textId INTEGER REFERENCES StringIds(id), domainId INTEGER,
    uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
    int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL,
    eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
    nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,
    callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL,
    deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
    streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    demangledName INTEGER NOT NULL REFERENCES StringIds(id),
    shortName INTEGER NOT NULL REFERENCES StringIds(id), mangledName INTEGER,
    launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
    gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
    blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
    staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
    localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
    gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
    sharedMemoryLimitConfig INTEGER);
"""

PID, TID = 31337, 31340
T0 = 1_700_000_000_000_000_000  # ns


def _gtid(tid, pid=PID):
    return (pid << 24) | tid  # Nsight Systems' globalTid: pid above bit 24, tid below


class _Nsys:
    """Writes an Nsight Systems-layout SQLite export: NVTX ranges, API calls, kernels."""

    def __init__(self, path):
        self.conn = sqlite3.connect(path)
        self.conn.executescript(_NSYS_SCHEMA)
        self.ids = {}
        self.corr = 0

    def string(self, s):
        if s not in self.ids:
            self.ids[s] = len(self.ids) + 1
            self.conn.execute("INSERT INTO StringIds VALUES (?, ?)", (self.ids[s], s))
        return self.ids[s]

    def range(self, text, t0, t1, tid=TID, registered=False, event_type=59):
        text_col, text_id = (None, self.string(text)) if registered else (text, None)
        self.conn.execute("INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, "
                          "textId, domainId) VALUES (?,?,?,?,?,?,0)",
                          (T0 + t0, None if t1 is None else T0 + t1, event_type, text_col,
                           _gtid(tid), text_id))

    def launch(self, short, t0, t1, k0, k1, demangled=None, tid=TID, api="cuLaunchKernel",
               stream=13):
        self.corr += 1
        self.conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,1,?,?,?,0,NULL)",
                          (T0 + t0, T0 + t1, _gtid(tid), self.corr, self.string(api)))
        self.conn.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId, "
            "correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, "
            "gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
            "localMemoryPerThread, localMemoryTotal, gridId) "
            "VALUES (?,?,0,1,?,?,?,?,?,32,1,1,1,128,1,1,0,0,0,0,1)",
            (T0 + k0, T0 + k1, stream, self.corr, PID << 24,
             self.string(demangled or short), self.string(short)))

    def close(self):
        self.conn.commit()
        self.conn.close()


@pytest.fixture
def nsys_trace(tmp_path):
    """emit_nvtx's ranges for a forward mul and its backward, a user range, a registered-string
    range, a start/end range on another thread, a mark and a domain registration (not ranges),
    kernels launched inside and outside ranges."""
    db = _Nsys(str(tmp_path / "report.sqlite"))
    db.range("labelz", 0, 10_000)
    db.range("mul, seq = 3, sizes = [[2, 3], []]", 1_000, 4_000)
    db.launch("mul_kernel", 2_000, 2_500, 5_000, 7_000)
    db.range("MulBackward0, stashed seq = 3", 20_000, 30_000, registered=True)
    db.range("mul, seq = 0", 21_000, 25_000)
    db.launch("gemv", 22_000, 22_400, 26_000, 27_500,
              demangled="void gemv<float>(float const*, float*, int)", stream=14)
    db.launch("outside", 40_000, 40_100, 40_200, 40_300)  # in no range: dropped
    db.range("a mark", 41_000, None, event_type=34)
    db.range("a domain", 41_000, None, event_type=75)
    db.range("add, seq=5", 50_000, 51_000, tid=TID + 1, event_type=60)
    db.launch("add_kernel", 50_100, 50_200, 52_000, 52_600, tid=TID + 1)
    db.launch("other_thread", 50_100, 50_200, 53_000, 53_100, tid=TID + 2)  # no ranges there
    db.close()
    return str(tmp_path / "report.sqlite")


def test_nsys_ranges_names_seq_and_threads(nsys_trace):
    evts = profiler.load_nvprof(nsys_trace)
    assert [e.name for e in evts] == ["labelz", "mul", "MulBackward0", "mul", "add"]
    labelz, mul, node, inner, add = evts
    assert [e.sequence_nr for e in evts] == [-1, 3, 3, 0, 5]
    assert node.scope == 1 and mul.scope == 0
    assert mul.input_shapes == [[2, 3], []]
    assert (mul.thread, add.thread) == (TID, TID + 1)
    assert (mul.time_range.start, mul.time_range.end) == pytest.approx(
        ((T0 + 1_000) / 1e3, (T0 + 4_000) / 1e3))
    assert mul.cpu_parent is labelz and inner.cpu_parent is node


def test_nsys_kernels_attributed_to_innermost_range(nsys_trace):
    evts = profiler.load_nvprof(nsys_trace)
    labelz, mul, node, inner, add = evts
    assert mul.kernels == [profiler.Kernel("mul_kernel", 0, 2.0)]
    assert inner.kernels == [profiler.Kernel("void gemv<float>(float const*, float*, int)",
                                             0, 1.5)]
    assert add.kernels == [profiler.Kernel("add_kernel", 0, 0.6)]  # exact: ns differences
    assert labelz.kernels == [] and node.kernels == []
    assert node.cuda_time_total == pytest.approx(1.5)
    assert labelz.cuda_time_total == pytest.approx(2.0)
    names = [k.name for e in evts for k in e.kernels]
    assert "outside" not in names and "other_thread" not in names
    (span,) = inner.device_spans
    assert span.stream == 14 and span.interval.start == pytest.approx((T0 + 26_000) / 1e3)


def test_nsys_trace_tables_and_chrome_trace(nsys_trace, tmp_path):
    evts = profiler.load_nvprof(nsys_trace)
    table = evts.key_averages().table(sort_by="cuda_time_total")
    assert "CUDA total" in table
    path = tmp_path / "nsys.json"
    evts.export_chrome_trace(str(path))
    kernels = [e for e in json.loads(path.read_text())["traceEvents"]
               if e["ph"] == "X" and e.get("cat") == "kernel"]
    assert sorted(e["tid"] for e in kernels) == [13, 13, 14]


def test_nsys_without_cuda_tables_has_ranges_only(tmp_path):
    path = str(tmp_path / "nvtx_only.sqlite")
    conn = sqlite3.connect(path)
    conn.executescript(_NSYS_SCHEMA.split("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME")[0])
    conn.execute("INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid) "
                 "VALUES (0, 5000, 59, 'relu, seq = 2', ?)", (_gtid(TID),))
    conn.commit()
    conn.close()
    (relu,) = profiler.load_nvprof(path)
    assert (relu.name, relu.sequence_nr, relu.kernels) == ("relu", 2, [])


def test_unknown_database_names_both_layouts(tmp_path):
    other = tmp_path / "other.db"
    sqlite3.connect(str(other)).execute("CREATE TABLE t(x)").connection.close()
    with pytest.raises(ValueError, match="StringTable, nor Nsight Systems' StringIds"):
        profiler.load_nvprof(str(other))
