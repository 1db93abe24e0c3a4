"""NVIDIA profiler databases: ``load_nvprof`` reads them, ``export_nvprof`` writes one.

Two SQLite layouts are read, told apart by their tables:

- nvprof's (``nvprof -o trace.prof``, or ``--export-profile``): ``StringTable``,
  ``CUPTI_ACTIVITY_KIND_MARKER`` (an NVTX range is a start row and an end row sharing ``id``),
  ``CUPTI_ACTIVITY_KIND_RUNTIME`` / ``..._DRIVER`` (API calls) and
  ``CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`` / ``..._KERNEL``, timestamps in ns.
- Nsight Systems' (``nsys export --type sqlite``): ``StringIds``, ``NVTX_EVENTS`` (one row per
  range, ``text`` or ``textId``, ``globalTid``), ``CUPTI_ACTIVITY_KIND_RUNTIME`` (runtime and
  driver API calls alike) and ``CUPTI_ACTIVITY_KIND_KERNEL`` (``shortName`` /
  ``demangledName`` into ``StringIds``), timestamps in ns.

Either way each NVTX range becomes a FunctionEvent named and numbered by
``profiler_util.parse_range_name`` (emit_nvtx's ``seq`` / ``stashed seq`` tags), and each
kernel is joined to the API call that launched it on ``correlationId`` and attached to the
innermost range (on the launching thread) that contains that call.

``export_nvprof`` writes nvprof's layout from a tritongrad profile, so the same reader, and
PyTorch's ``torch.autograd.profiler.load_nvprof``, can read it back.
"""

from __future__ import annotations

import functools
import os
import struct
from bisect import bisect_left
from collections.abc import Iterable

from .observe import EVALUATE_PREFIX
from .profiler_util import (SCOPE_BACKWARD_FUNCTION, SCOPE_FUNCTION, SCOPE_USER, DeviceSpan,
                            EventList, FunctionEvent, Interval, parse_range_name)

__all__ = ["export_nvprof", "load_nvprof", "parse_nvprof_trace"]

_MARKER = "CUPTI_ACTIVITY_KIND_MARKER"
_RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
_API_TABLES = (_RUNTIME, "CUPTI_ACTIVITY_KIND_DRIVER")
_CONCURRENT_KERNEL = "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"
_KERNEL_TABLES = (_CONCURRENT_KERNEL, "CUPTI_ACTIVITY_KIND_KERNEL")
_OBJECT_KIND_THREAD = 2  # CUpti_ActivityObjectKind: objectId holds {processId, threadId}
# CUpti_ActivityFlag: a marker row opens or closes a range
_MARKER_START, _MARKER_END = 1 << 1, 1 << 2
_CUDA_LAUNCH_KERNEL = 211  # CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
# Nsight Systems' event types (its ENUM_NSYS_EVENT_TYPE table) for NVTX ranges
_NSYS_PUSH_POP, _NSYS_START_END = 59, 60


def load_nvprof(path) -> EventList:
    """Opens an nvprof trace file and parses autograd annotations.

    Each NVTX range (e.g. from :class:`emit_nvtx`) becomes a FunctionEvent: its name with the
    ``, seq = N`` / ``, stashed seq = N`` / ``, op_id = ...`` / ``, sizes = [...]`` parts
    stripped, ``sequence_nr`` set from the seq part and ``input_shapes`` from the sizes part.
    Each kernel is attached to the innermost range around the API call that launched it
    (runtime and driver API calls are matched to kernels by their correlation id), so
    ``cuda_time_total`` of a range is its kernels' time plus that of the ranges inside it.

    Reads nvprof's SQLite export (``nvprof -o trace.prof``; tritongrad's
    ``prof.export_nvprof``) and Nsight Systems' (``nsys export --type sqlite``), telling them
    apart by their tables. nvprof does not support GPUs of compute capability 8.0 and newer;
    the readers are tested on databases built with each tool's table layout.

    Args:
        path (str): path to nvprof trace

    Returns:
        An EventList of FunctionEvents, ordered by start time (microseconds).
    """
    return EventList(parse_nvprof_trace(path), use_cuda=True)


def parse_nvprof_trace(path) -> list:
    """The FunctionEvents of an nvprof or Nsight Systems SQLite trace (see load_nvprof)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_nvprof: no such file: {path!r}")
    import sqlite3  # only the trace readers and writer need it: keep it off `import tritongrad`
    conn = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "StringTable" in tables:
            functions, launches = _read_nvprof(conn, tables)
        elif "StringIds" in tables:
            functions, launches = _read_nsys(conn, tables)
        else:
            raise ValueError(f"load_nvprof: {path!r} is not an nvprof trace (it has no "
                             f"StringTable, nor Nsight Systems' StringIds; tables: "
                             f"{sorted(tables)})")
    finally:
        conn.close()
    functions.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
    EventList(functions)._build_tree()
    _number_evaluate_ranges(functions)
    attach_launches(functions, launches)
    return functions


def _number_evaluate_ranges(functions) -> None:
    """An ``autograd::engine::evaluate_function: <Node>`` range carries no number (PyTorch's
    emit_nvtx writes it without one): it takes the stashed number of the node range inside
    it, as PyTorch's profiler gives it its node's."""
    for evt in functions:
        if evt.sequence_nr < 0 and evt.name.startswith(EVALUATE_PREFIX):
            for child in evt.cpu_children:
                if child.scope == SCOPE_BACKWARD_FUNCTION:
                    evt.sequence_nr = child.sequence_nr
                    break


def _range_event(id_, message, thread, t0_ns, t1_ns) -> FunctionEvent:
    name, seq, stashed, sizes = parse_range_name(message)
    return FunctionEvent(id_, name, thread, t0_ns / 1e3, t1_ns / 1e3, input_shapes=sizes,
                         sequence_nr=seq,
                         scope=SCOPE_BACKWARD_FUNCTION if stashed else SCOPE_FUNCTION)


def _columns(conn, table) -> set:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


# -- nvprof ------------------------------------------------------------------------------------

def _marker_thread(kind, object_id) -> int:
    if kind == _OBJECT_KIND_THREAD and isinstance(object_id, bytes) and len(object_id) >= 8:
        return struct.unpack_from("<II", object_id)[1]
    return 0


def _read_nvprof(conn, tables) -> tuple[list, list]:
    strings = {r["id"]: r["value"]
               for r in conn.execute("SELECT _id_ AS id, value FROM StringTable")}
    if _MARKER not in tables:
        return [], []  # nvprof writes a table per activity kind seen: no NVTX ranges
    thread_cols = ", start.objectKind AS kind, start.objectId AS object" if {
        "objectKind", "objectId"} <= _columns(conn, _MARKER) else ""
    # A range is a start row (name = its string id) and an end row (name 0) sharing `id`.
    query = (f"SELECT start.id AS marker_id, start.name AS name, start.timestamp AS t0, "
             f"end.timestamp AS t1{thread_cols} FROM {_MARKER} AS start "
             f"INNER JOIN {_MARKER} AS end ON start.id = end.id "
             f"WHERE start.name != 0 AND end.name = 0")
    functions, seen = [], set()
    for row in conn.execute(query):
        if row["marker_id"] in seen:
            raise RuntimeError(f"load_nvprof: duplicate NVTX range id {row['marker_id']}")
        seen.add(row["marker_id"])
        thread = _marker_thread(row["kind"], row["object"]) if thread_cols else 0
        functions.append(_range_event(row["marker_id"], strings.get(row["name"], "?"), thread,
                                      row["t0"], row["t1"]))
    launches = []
    for api in (t for t in _API_TABLES if t in tables):
        thread = "api.threadId" if "threadId" in _columns(conn, api) else "0"
        for kernels in (t for t in _KERNEL_TABLES if t in tables):
            kcols = _columns(conn, kernels)
            device = "kernel.deviceId" if "deviceId" in kcols else "0"
            stream = "kernel.streamId" if "streamId" in kcols else "0"
            query = (f"SELECT api.start AS a0, api.end AS a1, {thread} AS thread, "
                     f"kernel.start AS k0, kernel.end AS k1, kernel.name AS name, "
                     f"{device} AS device, {stream} AS stream FROM {api} AS api "
                     f"INNER JOIN {kernels} AS kernel "
                     f"ON kernel.correlationId = api.correlationId")
            for row in conn.execute(query):
                name = row["name"]
                name = strings.get(name, str(name)) if isinstance(name, int) else str(name)
                launches.append(_launch(row, row["thread"], name))
    return functions, launches


def _launch(row, thread, name) -> tuple:
    """(thread, call start us, call end us, DeviceSpan, duration us) from a joined
    API-call/kernel row."""
    span = DeviceSpan(_demangle(name), row["device"], row["stream"],
                      Interval(row["k0"] / 1e3, row["k1"] / 1e3), "kernel",
                      Interval(row["a0"] / 1e3, row["a1"] / 1e3))
    return thread, span.launch.start, span.launch.end, span, (row["k1"] - row["k0"]) / 1e3


# -- Nsight Systems ----------------------------------------------------------------------------

def _nsys_tid(global_tid) -> int:
    """The OS thread id in Nsight Systems' globalTid (pid in bits 24-47, tid in bits 0-23)."""
    return (global_tid or 0) & 0xFFFFFF


def _read_nsys(conn, tables) -> tuple[list, list]:
    functions = []
    if "NVTX_EVENTS" in tables:
        cols = _columns(conn, "NVTX_EVENTS")
        text = ("COALESCE(e.text, s.value)", "LEFT JOIN StringIds AS s ON e.textId = s.id") \
            if "textId" in cols else ("e.text", "")
        tid = "e.globalTid" if "globalTid" in cols else "0"
        # marks and domain/category registrations have no end; only ranges are events
        query = (f"SELECT e.start AS t0, e.end AS t1, {text[0]} AS message, {tid} AS gtid "
                 f"FROM NVTX_EVENTS AS e {text[1]} WHERE e.end IS NOT NULL AND e.eventType "
                 f"IN ({_NSYS_PUSH_POP}, {_NSYS_START_END}) ORDER BY e.start, e.end DESC")
        for i, row in enumerate(conn.execute(query)):
            functions.append(_range_event(i + 1, row["message"] or "?", _nsys_tid(row["gtid"]),
                                          row["t0"], row["t1"]))
    launches = []
    if _RUNTIME in tables and "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        kcols = _columns(conn, "CUPTI_ACTIVITY_KIND_KERNEL")
        names = [f"k.{c}" for c in ("demangledName", "shortName") if c in kcols]
        if not names:
            raise ValueError("load_nvprof: Nsight Systems' CUPTI_ACTIVITY_KIND_KERNEL has "
                             "neither demangledName nor shortName")
        # the demangled name when there is one (C++ kernels), else the short one
        name = f"(SELECT value FROM StringIds WHERE id = COALESCE({', '.join(names)}))"
        query = (f"SELECT api.start AS a0, api.end AS a1, api.globalTid AS gtid, "
                 f"k.start AS k0, k.end AS k1, {name} AS name, k.deviceId AS device, "
                 f"k.streamId AS stream FROM {_RUNTIME} AS api INNER JOIN "
                 f"CUPTI_ACTIVITY_KIND_KERNEL AS k ON k.correlationId = api.correlationId")
        for row in conn.execute(query):
            launches.append(_launch(row, _nsys_tid(row["gtid"]), row["name"] or "?"))
    return functions, launches


# -- attribution -------------------------------------------------------------------------------

def attach_launches(functions: list, launches: Iterable[tuple]) -> None:
    """Puts each launched kernel on the innermost range around its launch call.

    Args:
        functions: FunctionEvents sorted by (start, -end), linked to their parents.
        launches: ``(thread, call start us, call end us, DeviceSpan, duration us or None)``;
            a call on a thread
            with no ranges is looked up among the ranges of thread 0 (traces that do not
            say which thread a range ran on), else dropped, as is a call in no range.
    """
    by_thread: dict = {}
    for evt in functions:
        by_thread.setdefault(evt.thread, []).append(evt)
    starts = {t: [e.time_range.start for e in evts] for t, evts in by_thread.items()}
    for thread, a0, a1, span, duration in launches:
        t = thread if thread in by_thread else 0
        evts = by_thread.get(t)
        if evts is None:
            continue
        # the last range to start before the call; the innermost range around the call is
        # it or one of its ancestors (ranges nest)
        i = bisect_left(starts[t], a0) - 1
        evt = evts[i] if i >= 0 else None
        while evt is not None and not evt.time_range.end > a1:
            evt = evt.cpu_parent
        if evt is not None:
            evt.append_device_span(span, duration)


# -- export ------------------------------------------------------------------------------------

# nvprof's tables, as its exports have them (the columns nvprof writes, in its order); only the
# tables tritongrad has rows for, plus the driver-API table, which the reader also joins.
_NVPROF_SCHEMA = f"""
CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, value TEXT NOT NULL UNIQUE);
CREATE TABLE {_MARKER}(_id_ INTEGER PRIMARY KEY AUTOINCREMENT,
    flags INT NOT NULL, timestamp INT NOT NULL, id INT NOT NULL, objectKind INT NOT NULL,
    objectId BLOB NOT NULL, name INT NOT NULL, domain INT NOT NULL);
CREATE TABLE {_RUNTIME}(_id_ INTEGER PRIMARY KEY AUTOINCREMENT,
    cbid INT NOT NULL, start INT NOT NULL, end INT NOT NULL, processId INT NOT NULL,
    threadId INT NOT NULL, correlationId INT NOT NULL, returnValue INT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER(_id_ INTEGER PRIMARY KEY AUTOINCREMENT,
    cbid INT NOT NULL, start INT NOT NULL, end INT NOT NULL, processId INT NOT NULL,
    threadId INT NOT NULL, correlationId INT NOT NULL, returnValue INT NOT NULL);
CREATE TABLE {_CONCURRENT_KERNEL}(_id_ INTEGER PRIMARY KEY AUTOINCREMENT,
    cacheConfig BLOB NOT NULL, sharedMemoryConfig INT NOT NULL, registersPerThread INT NOT NULL,
    partitionedGlobalCacheRequested INT NOT NULL, partitionedGlobalCacheExecuted INT NOT NULL,
    start INT NOT NULL, end INT NOT NULL, completed INT NOT NULL, deviceId INT NOT NULL,
    contextId INT NOT NULL, streamId INT NOT NULL, gridX INT NOT NULL, gridY INT NOT NULL,
    gridZ INT NOT NULL, blockX INT NOT NULL, blockY INT NOT NULL, blockZ INT NOT NULL,
    staticSharedMemory INT NOT NULL, dynamicSharedMemory INT NOT NULL,
    localMemoryPerThread INT NOT NULL, localMemoryTotal INT NOT NULL,
    correlationId INT NOT NULL, gridId INT NOT NULL, name INT NOT NULL);
"""


def _ns(us: float) -> int:
    return round(us * 1e3)


def _self_gap(evt) -> tuple[int, int]:
    """A stretch (ns) inside ``evt`` and outside its children, for a launch call: the reader
    gives a kernel to the innermost range around its call, which must then be ``evt``."""
    edges = [_ns(evt.time_range.start)]
    for c in sorted(evt.cpu_children, key=lambda c: c.time_range.start):
        edges += [_ns(c.time_range.start), _ns(c.time_range.end)]
    edges.append(_ns(evt.time_range.end))
    gaps = [(edges[i], edges[i + 1]) for i in range(0, len(edges), 2)]
    g0, g1 = max(gaps, key=lambda g: g[1] - g[0])
    quarter = (g1 - g0) // 4  # keep clear of both ends: the reader's tests are strict
    return g0 + quarter, g1 - quarter


def _exported_spans(evt) -> list:
    """The device work written for ``evt``: its kernels with known intervals; with event timing
    (``is_legacy``), its measured interval, unless a child has one (an event's interval spans
    its children's work: writing both would count it twice when read back)."""
    if evt.device_spans:
        return [s for s in evt.device_spans if s.kind == "kernel"]
    if evt.device_interval is None or any(c.device_interval is not None
                                          for c in evt.cpu_children):
        return []
    dev, stream, span = evt.device_interval
    return [DeviceSpan(evt.name, dev, stream, span)]


def export_nvprof(events, path) -> None:
    """Writes ``events`` (a profile's FunctionEvents) as an nvprof SQLite database.

    A tritongrad extension (PyTorch only reads these files). What is written:

    - ``StringTable``: the range and kernel names.
    - ``CUPTI_ACTIVITY_KIND_MARKER``: one NVTX range (a start row and an end row) per event,
      named as :class:`emit_nvtx` names it (``aten::mul, seq = 3``, ``MulBackward0, stashed
      seq = 3``, ``, sizes = [...]`` when shapes were recorded; a record_function label and
      an ``autograd::engine::evaluate_function: <Node>`` range by their name alone), on the
      event's thread.
    - ``CUPTI_ACTIVITY_KIND_RUNTIME``: one launch call (``cudaLaunchKernel``, cbid 211, the
      callback id PyTorch's reader expects) per kernel, at the CUPTI-recorded launch time
      when known, else inside the event's own time (outside its children).
    - ``CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL``: each kernel with its device interval, device,
      stream and correlation id. With CUPTI tracing these are the kernels CUPTI saw; with
      event timing (the emulated device) each innermost timed event's measured interval is
      one kernel named after the event (on the emulated device that interval is the
      host-measured execution of the op).

    Times are nanoseconds from the start of profiling. Launch configuration (grid, block,
    registers, shared memory) is unknown and written as 0. Copies and memsets are not written.

    Args:
        events: an EventList of FunctionEvents (not ``key_averages()`` rows).
        path (str): the database to write; an existing file is replaced.
    """
    events = list(events)
    if events and not isinstance(events[0], FunctionEvent):
        raise TypeError(f"export_nvprof: needs FunctionEvents (prof.function_events), got "
                        f"{type(events[0]).__name__}")
    from .nvtx import format_range  # nvtx imports the runtime's NVTX bindings lazily
    if os.path.exists(path):
        os.remove(path)
    pid = os.getpid()
    import sqlite3
    conn = sqlite3.connect(path)
    try:
        conn.executescript(_NVPROF_SCHEMA)
        ids: dict = {}

        def string(s: str) -> int:
            sid = ids.get(s)
            if sid is None:
                sid = ids[s] = conn.execute("INSERT INTO StringTable(value) VALUES (?)",
                                            (s,)).lastrowid
            return sid

        markers, calls, kernels = [], [], []
        for marker_id, evt in enumerate(events, 1):  # 0 is the end rows' name: ids start at 1
            if evt.scope == SCOPE_USER or evt.name.startswith(EVALUATE_PREFIX):
                message = evt.name  # emit_nvtx names these alone
            else:
                sizes = str(evt.input_shapes) if evt.input_shapes else None
                message = format_range(evt.name, evt.sequence_nr,
                                       stashed=evt.scope == SCOPE_BACKWARD_FUNCTION, sizes=sizes)
            obj = struct.pack("<III", pid, evt.thread & 0xFFFFFFFF, 0)
            markers += [(_MARKER_START, _ns(evt.time_range.start), marker_id,
                         _OBJECT_KIND_THREAD, obj, string(message), 0),
                        (_MARKER_END, _ns(evt.time_range.end), marker_id,
                         _OBJECT_KIND_THREAD, obj, 0, 0)]
            for span in _exported_spans(evt):
                corr = len(kernels) + 1
                launch = span.launch
                if launch is not None and evt.time_range.start < launch.start \
                        and launch.end < evt.time_range.end:
                    a0, a1 = _ns(launch.start), _ns(launch.end)
                else:
                    a0, a1 = _self_gap(evt)
                calls.append((_CUDA_LAUNCH_KERNEL, a0, a1, pid, evt.thread & 0xFFFFFFFF, corr))
                k0, k1 = _ns(span.interval.start), _ns(span.interval.end)
                kernels.append((k0, k1, k1, span.device, span.stream, corr, string(span.name)))
        conn.executemany(f"INSERT INTO {_MARKER}(flags, timestamp, id, objectKind, objectId, "
                         f"name, domain) VALUES (?,?,?,?,?,?,?)", markers)
        conn.executemany(f"INSERT INTO {_RUNTIME}(cbid, start, end, processId, threadId, "
                         f"correlationId, returnValue) VALUES (?,?,?,?,?,?,0)", calls)
        conn.executemany(
            f"INSERT INTO {_CONCURRENT_KERNEL}(cacheConfig, sharedMemoryConfig, "
            f"registersPerThread, partitionedGlobalCacheRequested, "
            f"partitionedGlobalCacheExecuted, start, end, completed, deviceId, contextId, "
            f"streamId, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, "
            f"dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, correlationId, "
            f"gridId, name) VALUES (x'00', 0, 0, 0, 0, ?, ?, ?, ?, 1, ?, 0, 0, 0, 0, 0, 0, "
            f"0, 0, 0, 0, ?, 0, ?)", kernels)
        conn.commit()
    finally:
        conn.close()


# -- kernel names ------------------------------------------------------------------------------

@functools.cache
def _cxa_demangle():
    import ctypes.util  # only load_nvprof needs it: keep it off `import tritongrad`
    lib = ctypes.util.find_library("stdc++")
    try:
        cxx = ctypes.CDLL(lib or "libstdc++.so.6")
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
    except OSError:
        return None
    fn = cxx.__cxa_demangle
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.POINTER(ctypes.c_int)]
    libc.free.argtypes = [ctypes.c_void_p]
    return fn, libc.free


@functools.lru_cache(maxsize=4096)
def _demangle(name: str) -> str:
    """A C++ symbol's readable form (kernel names from CUDA libraries are mangled)."""
    if not name.startswith("_Z"):
        return name
    funcs = _cxa_demangle()
    if funcs is None:
        return name
    import ctypes
    demangle, free = funcs
    status = ctypes.c_int()
    ptr = demangle(name.encode(), None, None, ctypes.byref(status))
    if not ptr:
        return name
    try:
        return ctypes.string_at(ptr).decode() if status.value == 0 else name
    finally:
        free(ptr)
