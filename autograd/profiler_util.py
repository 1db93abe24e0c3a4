"""What the profiler hands back: events, their averages, the summary table and the trace file.

``profile`` (autograd/profiler.py) and ``load_nvprof`` both produce an :class:`EventList` of
:class:`FunctionEvent`; ``EventList.key_averages()`` folds it into :class:`FunctionEventAvg`
rows. Names and columns follow PyTorch's ``torch.autograd.profiler_util``.

Times are microseconds (floats: the profiler's clock counts nanoseconds), memory is bytes.

Two ways an event knows its CUDA time (``is_legacy``, PyTorch's name for the distinction):

- ``profile(use_cuda=True)`` brackets each event with a pair of CUDA events, so the one
  measured interval already covers everything the event's children queued: ``is_legacy=True``,
  ``cuda_time_total`` is that interval alone.
- ``load_nvprof`` attaches each kernel to the innermost range around its launch, and
  ``profile(use_cuda=True)`` with CUPTI on a GPU to the innermost op that launched it:
  ``is_legacy=False``, ``cuda_time_total`` is the event's own kernels plus its children's
  totals. Those kernels' device intervals are kept too (``device_spans``).

Either way ``self_cuda_time_total`` is the total minus the children's totals.
"""

from __future__ import annotations

import enum
import json
import math
import os
import re
import socket
import uuid
from collections import namedtuple

from .registry import flop_rule

__all__ = ["DeviceSpan", "DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg",
           "Interval", "Kernel", "estimate_flops", "format_memory", "format_time",
           "parse_range_name"]

# Scopes, in PyTorch's numbering (RecordScope): what made the event.
SCOPE_FUNCTION = 0           # an op, forward or run inside backward
SCOPE_BACKWARD_FUNCTION = 1  # a backward node's apply
SCOPE_USER = 7               # record_function

_SORT_KEYS = ("cpu_time", "cuda_time", "cpu_time_total", "cuda_time_total",
              "self_cpu_time_total", "self_cuda_time_total", "cpu_memory_usage",
              "cuda_memory_usage", "self_cpu_memory_usage", "self_cuda_memory_usage", "count")

# The profiler's step ranges (torch.profiler's ``ProfilerStep#<n>``) are named with a wildcard
# in events and tables, so that key_averages folds the steps into one row; the trace keeps
# each step's own name (``trace_name``).
_STEP_PREFIX, _STEP_WILDCARD = "ProfilerStep#", "ProfilerStep*"


class DeviceType(enum.Enum):
    """Where an event ran, as ``torch.autograd.DeviceType`` numbers it (the members a
    tritongrad profile can produce)."""

    CPU = 0
    CUDA = 1


_pid = [os.getpid()]  # (a CPU event's device_index; read once per process, not per event)
os.register_at_fork(after_in_child=lambda: _pid.__setitem__(0, os.getpid()))


def _device_key(key: str) -> str:
    """A sort or metric key with any device spelling (``cuda``, ``xpu``, ``privateuse1``) in
    PyTorch 2.x's generic ``device`` form, as PyTorch's table and export_stacks read them."""
    return key.replace("cuda", "device").replace("xpu", "device").replace("privateuse1",
                                                                          "device")


# -- formatting --------------------------------------------------------------------------------

def format_time(time_us: float) -> str:
    """``12.345us``, ``1.234ms`` or ``2.000s``, as PyTorch's tables write times."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


_format_time = format_time  # (PyTorch's private name, which its own tests import)


def _format_share(part: float, total: float) -> str:
    if total == 0:
        return "NaN" if part == 0 else "inf"
    return f"{part * 100.0 / total:.2f}%"


def _format_time_share(time_us: float, total_time_us: float) -> str:
    """``12.34%``: ``time_us`` as a share of ``total_time_us`` (PyTorch's private helper);
    ``NaN`` for 0 of 0."""
    if total_time_us == 0 and time_us != 0:
        raise AssertionError(f"Expected time_us == 0 but got {time_us}")
    return _format_share(time_us, total_time_us)


def format_memory(nbytes: int) -> str:
    """``512 B``, ``4.00 KB``, ``1.50 MB``, ``2.00 GB`` (binary units, as PyTorch prints)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


_format_memory = format_memory  # (PyTorch's private name)

# Utility ranges PyTorch leaves out of its event lists (none of them is recorded here, but
# code that filters with PyTorch's helper gets the same answer).
_FILTERED_NAMES = frozenset(("[memory]", "[OutOfMemory]", "profiler::_record_function_enter",
                             "profiler::_record_function_enter_new",
                             "profiler::_record_function_exit", "aten::is_leaf",
                             "aten::output_nr", "aten::_version"))


def _filter_name(name: str) -> bool:
    """Whether PyTorch's profiler leaves an event of this name out (utility ops)."""
    return name in _FILTERED_NAMES


def _rewrite_name(name: str, with_wildcard: bool = False) -> str:
    """The event name as tables show it: with ``with_wildcard``, ``ProfilerStep#<n>`` becomes
    ``ProfilerStep*`` (names are never mangled here, so nothing else changes)."""
    if with_wildcard and name.startswith(_STEP_PREFIX):
        return _STEP_WILDCARD
    return name


class _FormattedTimes:
    """``*_str`` renderings and per-call averages; subclasses define totals and ``count``."""

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def cuda_time(self) -> float:
        return 0.0 if self.count == 0 else self.cuda_time_total / self.count

    @property
    def is_user_annotation(self) -> bool:
        return self.scope == SCOPE_USER

    # PyTorch 2.x names the CUDA columns device_*; both spellings work.
    device_time = cuda_time

    @property
    def device_time_total(self) -> float:
        return self.cuda_time_total

    @property
    def self_device_time_total(self) -> float:
        return self.self_cuda_time_total

    @property
    def device_memory_usage(self) -> int:
        return self.cuda_memory_usage

    @property
    def self_device_memory_usage(self) -> int:
        return self.self_cuda_memory_usage

    cpu_time_str = property(lambda self: format_time(self.cpu_time))
    cuda_time_str = property(lambda self: format_time(self.cuda_time))
    cpu_time_total_str = property(lambda self: format_time(self.cpu_time_total))
    cuda_time_total_str = property(lambda self: format_time(self.cuda_time_total))
    self_cpu_time_total_str = property(lambda self: format_time(self.self_cpu_time_total))
    self_cuda_time_total_str = property(lambda self: format_time(self.self_cuda_time_total))
    device_time_str = cuda_time_str
    device_time_total_str = cuda_time_total_str
    self_device_time_total_str = self_cuda_time_total_str


class Interval:
    """A ``[start, end]`` span in microseconds."""

    __slots__ = ("end", "start")

    def __init__(self, start: float, end: float):
        self.start, self.end = start, end

    def elapsed_us(self) -> float:
        # (rounded to the nanosecond every time source counts in: the endpoints are offsets
        # from the profile's start, and their float difference is otherwise off in the last
        # bits, 3.999999999999993 for 4)
        return round(self.end - self.start, 3)

    def __repr__(self) -> str:
        return f"Interval(start={self.start}, end={self.end})"


Kernel = namedtuple("Kernel", ["name", "device", "duration"])
Kernel.__doc__ = "Device work attributed to an event: a kernel's name, device and duration (us)."

DeviceSpan = namedtuple("DeviceSpan", ["name", "device", "stream", "interval", "kind", "launch"],
                        defaults=("kernel", None))
DeviceSpan.__doc__ = """One piece of device work on the profile's timeline (tritongrad's record).

Fields: name (the kernel's, demangled), device (index), stream (the stream's id as the tool that
saw it numbers streams: CUPTI's stream id, nvprof's/nsys's streamId), interval (its device
start and end, us), kind (``"kernel"``, ``"memcpy"`` or ``"memset"``), launch (the CPU interval
of the API call that queued it, when known, else None)."""


# -- one event ---------------------------------------------------------------------------------

class FunctionEvent(_FormattedTimes):
    """Profiling information about a single op, backward node or user range.

    Attributes:
        id: position in the profile. name / key: as PyTorch's profiler names events: an op
            ``"aten::mul"``, a custom Function its class name, a backward node
            ``"MulBackward0"``, the engine's handling of one node
            ``"autograd::engine::evaluate_function: MulBackward0"``, a record_function label.
            thread: the native id of the thread it ran on. fwd_thread: for a backward node
            (and its evaluate_function), the thread its forward op ran on; 0 for other events
            of a profile; None where unknown (events read from a trace file).
        time_range (alias ``cpu_interval``): its CPU span in us. cpu_children / cpu_parent:
            events directly inside it / the event it is directly inside (None at top level).
        sequence_nr: an op's sequence number (the one its backward node gets; -1 for an op
            run with grad mode off, which records none), a node's stashed number (also on its
            evaluate_function), -1 for none (leaf accumulation, user ranges, factory
            functions).
        input_shapes: one list per argument (``[]`` for non-tensors) with ``record_shapes``,
            else ``[]`` (None for an event read from a trace without sizes).
            concrete_inputs: with ``record_shapes``, per argument, a scalar's or scalar list's
            value, None for the others; input_types / input_strides: per argument, the type
            as PyTorch's traces name it (``"float"``, ``"Scalar"``, ``"ScalarList"``) and a
            tensor's strides (``[]`` for the others). stack: ``"file(line): function"``
            frames, innermost first, with ``with_stack`` (a backward event shows the stack of
            the forward op that made it).
        flops: the estimated floating-point operations (``with_flops``); a profile's events
            hold 0 for an op with no estimate, or without ``with_flops``, as in PyTorch
            (events read from a trace file: None).
        cpu_memory_usage / cuda_memory_usage: net bytes allocated while it ran, children
            included (``profile_memory``). kernels: the device work measured for it.
        device_spans: a DeviceSpan per kernel, copy or memset whose device interval is known
            (CUPTI tracing, load_nvprof), in the order they were queued.
    """

    def __init__(self, id, name, thread, start_us, end_us, *, fwd_thread=None,
                 input_shapes=None, stack=None,
                 scope=SCOPE_FUNCTION, sequence_nr=-1, cpu_memory_usage=0,
                 cuda_memory_usage=0, flops=None, is_async=False, is_legacy=False,
                 device_interval=None, trace_name=None, args=None, node_id=-1,
                 overload_name="", concrete_inputs=None, kwinputs=None):
        self.id = id
        self.node_id = node_id  # (PyTorch's distributed-profiling node; -1 here)
        self.name = name
        self.thread = thread
        self.fwd_thread = fwd_thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes
        self.stack = stack if stack is not None else []
        self.scope = scope
        self.sequence_nr = sequence_nr
        self.cpu_memory_usage = cpu_memory_usage
        self.cuda_memory_usage = cuda_memory_usage
        self.flops = flops
        self.is_async = is_async
        self.is_legacy = is_legacy
        self.is_remote = False
        self.device_interval = device_interval  # (device index, stream, Interval) on a GPU lane
        self.trace_name = trace_name if trace_name is not None else name
        self.args = args
        self.overload_name = overload_name  # (tritongrad's ops have no overloads)
        self.concrete_inputs = concrete_inputs if concrete_inputs is not None else []
        self.kwinputs = kwinputs if kwinputs is not None else {}
        # with record_shapes, per argument: the element type as PyTorch's traces name it
        # ("float", "Scalar", ...) and the strides (tritongrad's; PyTorch keeps them in Kineto)
        self.input_types: list = []
        self.input_strides: list = []
        # Every event is a host event: device work is attached to it (``kernels``), as
        # PyTorch's legacy events hold theirs. device_index is the process, as Kineto's.
        self.device_type = DeviceType.CPU
        self.device_index = _pid[0]
        self.device_resource_id = thread
        self.use_device = None
        # the shares of the total a table last showed for it (-1: none yet), as PyTorch's
        self.self_cpu_percent = self.total_cpu_percent = self.total_device_percent = -1
        self.kernels: list = []
        self.device_spans: list = []  # DeviceSpan of each kernel/copy whose interval is known
        self.cpu_children: list = []
        self.cpu_parent = None
        self.count = 1

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_interval(self) -> Interval:
        return self.time_range

    def append_kernel(self, name, device, duration) -> None:
        self.kernels.append(Kernel(name, device, duration))

    def append_device_span(self, span: DeviceSpan, duration: float | None = None) -> None:
        """Attributes one kernel (or copy) with a known device interval to this event.

        ``duration`` (us), when given, is the exact length: nvprof's timestamps count ns
        since the epoch, and the difference of two such times in float us loses ~0.25 us.
        """
        if duration is None:
            duration = span.interval.elapsed_us()
        self.kernels.append(Kernel(span.name, span.device, duration))
        self.device_spans.append(span)

    def append_cpu_child(self, child) -> None:
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent) -> None:
        self.cpu_parent = parent

    # Async events (none are recorded today) have no children and no self time, as in PyTorch.
    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        if self.is_async:
            return 0.0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cuda_time_total(self) -> float:
        own = sum(k.duration for k in self.kernels)
        if self.is_legacy or self.is_async:
            return own
        return own + sum(c.cuda_time_total for c in self.cpu_children)

    @property
    def self_cuda_time_total(self) -> float:
        if self.is_async:
            return 0.0
        return self.cuda_time_total - sum(c.cuda_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_cuda_memory_usage(self) -> int:
        return self.cuda_memory_usage - sum(c.cuda_memory_usage for c in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
                f"start_us={self.time_range.start:.3f} end_us={self.time_range.end:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"cuda_time={self.cuda_time_str} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"cuda_memory_usage={self.cuda_memory_usage} is_async={self.is_async} "
                f"seq_nr={self.sequence_nr}>")


class FunctionEventAvg(_FormattedTimes):
    """Statistics summed over the events that share a key (``key_averages`` rows)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.scope = None
        self.cpu_time_total = 0
        self.cuda_time_total = 0
        self.self_cpu_time_total = 0
        self.self_cuda_time_total = 0
        self.cpu_memory_usage = 0
        self.cuda_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_cuda_memory_usage = 0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.cpu_children = None
        self.cpu_parent = None
        self.flops = 0
        self.device_type = DeviceType.CPU
        self.use_device = None

    def add(self, other) -> FunctionEventAvg:
        """Adds a FunctionEvent's (or another average's) numbers to this one."""
        if self.key is None:  # the first event gives the row its descriptive fields
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.is_legacy = other.is_legacy
            self.scope = other.scope
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.input_shapes = other.input_shapes
            self.overload_name = other.overload_name
            self.stack = other.stack
            self.device_type = other.device_type
            self.use_device = other.use_device
        elif other.key != self.key:
            raise ValueError(f"FunctionEventAvg.add: key {other.key!r} differs from this "
                             f"row's key {self.key!r}")
        self.cpu_time_total += other.cpu_time_total
        self.cuda_time_total += other.cuda_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_cuda_time_total += other.self_cuda_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.cuda_memory_usage += other.cuda_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_cuda_memory_usage += other.self_cuda_memory_usage
        self.count += other.count
        if other.flops:
            self.flops += other.flops
        return self

    __iadd__ = add

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} self_cuda_time={self.self_cuda_time_total_str} "
                f"cuda_time={self.cuda_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} "
                f"cuda_memory_usage={self.cuda_memory_usage}>")


# -- a list of events --------------------------------------------------------------------------

class EventList(list):
    """A list of events (FunctionEvent or FunctionEventAvg) that prints as a table."""

    def __init__(self, *args, use_cuda: bool = False, profile_memory: bool = False,
                 with_flops: bool = False):
        super().__init__(*args)
        self._use_cuda = use_cuda
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._base_time_ns = 0  # wall-clock ns of time 0 (the trace's baseTimeNanoseconds)
        self._trace_id = None

    def _like(self, events) -> EventList:
        out = EventList(events, use_cuda=self._use_cuda, profile_memory=self._profile_memory,
                        with_flops=self._with_flops)
        out._base_time_ns, out._trace_id = self._base_time_ns, self._trace_id
        return out

    def _populate_cpu_children(self) -> None:
        """Links each event to the innermost event around it on the same thread (and node):
        one is a child of another if its [start, end) lies inside the other's; partly
        overlapping spans are not nested, and async events take no part.

        For events whose nesting is known only from their intervals (load_nvprof, events made
        by hand); the profiler records parents as it goes.
        """
        by_thread: dict = {}
        for evt in self:
            if not evt.is_async:
                by_thread.setdefault((evt.thread, evt.node_id), []).append(evt)
        for events in by_thread.values():
            events.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
            open_ = []
            for evt in events:
                while open_ and (evt.time_range.start >= open_[-1].time_range.end
                                 or evt.time_range.end > open_[-1].time_range.end):
                    open_.pop()
                if open_:
                    open_[-1].append_cpu_child(evt)
                    evt.set_cpu_parent(open_[-1])
                open_.append(evt)

    _build_tree = _populate_cpu_children  # (the name nvprof.py uses)

    def __str__(self) -> str:
        return self.table()

    @property
    def self_cpu_time_total(self) -> float:
        """Total time spent on CPU: the sum of all events' self times (us)."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Averages all function events over their keys.

        Args:
            group_by_input_shapes: group entries by (event name, input shapes) rather than
                just event name. This is useful to see which input shapes contribute to the
                runtime the most.
            group_by_stack_n: group by the top (innermost) ``n`` stack trace entries too.
            group_by_overload_name: group by overload name too: tritongrad's ops have no
                overloads, so this groups as by name.

        Returns:
            An EventList containing FunctionEventAvg objects, in order of first appearance.
        """
        stats: dict = {}
        for evt in self:
            key = (evt.key, evt.is_user_annotation)
            if group_by_input_shapes:
                key += (str(evt.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(evt.stack[:group_by_stack_n])
            if group_by_overload_name:
                key += (evt.overload_name,)
            avg = stats.get(key)
            if avg is None:
                avg = stats[key] = FunctionEventAvg()
            avg.add(evt)
        out = self._like(stats.values())
        for avg in out:  # (what was not grouped by is blanked, as PyTorch does)
            avg.stack = avg.stack[:group_by_stack_n] if avg.stack else []
            if not group_by_input_shapes:
                avg.input_shapes = ""
            if not group_by_overload_name:
                avg.overload_name = ""
        return out

    def total_average(self) -> FunctionEventAvg:
        """Averages all events: a FunctionEventAvg with key ``"Total"``."""
        total = FunctionEventAvg()
        for evt in self:
            total.key = None  # accept every key
            total.add(evt)
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None) -> str:
        """Prints an EventList as a nicely formatted table.

        Args:
            sort_by (str, optional): attribute used to sort entries, largest first. By default
                they are printed in the same order as they were registered. Valid keys include:
                ``cpu_time``, ``cuda_time``, ``cpu_time_total``, ``cuda_time_total``,
                ``self_cpu_time_total``, ``self_cuda_time_total``, ``cpu_memory_usage``,
                ``cuda_memory_usage``, ``self_cpu_memory_usage``, ``self_cuda_memory_usage``,
                ``count``.
            row_limit (int): at most this many rows.
            max_src_column_width / max_name_column_width / max_shapes_column_width (int):
                widths past which source locations, names and shapes are cut.
            header (str, optional): a line printed above the table.
            top_level_events_only (bool): only show events that no other event encloses
                (e.g. the ops called by your code, not the ops they call in turn).
            time_unit (str, optional): ``"s"``, ``"ms"`` or ``"us"``: every time in that unit
                (default: each in the unit that suits it).

        Returns:
            A string containing the table.
        """
        return _build_table(self, sort_by, row_limit, max_src_column_width,
                            max_name_column_width, max_shapes_column_width, header,
                            top_level_events_only, time_unit)

    def export_chrome_trace(self, path) -> None:
        """Exports an EventList as a Chrome tracing tools file.

        The file is trace-event JSON (``{"traceEvents": [...]}``, complete ``"X"`` events, times
        in microseconds) and can be loaded in ``chrome://tracing`` or https://ui.perfetto.dev.
        CPU events are in the process's lane, one track per thread; with ``use_cuda`` the
        device work is drawn in a ``cuda:N`` lane, one track per stream: each kernel, copy and
        memset CUPTI recorded (named as the GPU ran it), or each event's measured span when
        the profile timed ops with CUDA events.

        Args:
            path (str): Path where the trace will be written.
        """
        with open(path, "w") as f:
            json.dump(chrome_trace(self, path), f)

    def supported_export_stacks_metrics(self) -> list:
        """The metrics ``export_stacks`` can write."""
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path: str, metric: str) -> None:
        """Writes each event that has a stack (``with_stack=True``) and a positive ``metric``
        as one line of the collapsed-stack format flame graph tools read: its frames from
        the outermost in, joined by ``;`` (spaces, tabs, newlines and ``;`` inside a frame
        become ``_``), a space, and the metric in whole microseconds.

        Args:
            path (str): Path where the stacks will be written.
            metric (str): ``"self_cpu_time_total"`` or ``"self_cuda_time_total"``.
        """
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        clean = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for evt in self:
                value = int(getattr(evt, _device_key(metric)))
                if evt.stack and value > 0:
                    frames = ";".join(e.translate(clean) for e in reversed(evt.stack))
                    f.write(f"{frames} {value}\n")

    def export_nvprof(self, path) -> None:
        """Writes the events as an nvprof SQLite database (a tritongrad extension).

        See ``tritongrad.autograd.nvprof.export_nvprof``: CPU events become NVTX ranges named
        as :class:`emit_nvtx` names them, device work becomes kernels with their launch calls,
        so that ``load_nvprof(path)`` reads the same events back.

        Args:
            path (str): Path where the database will be written (replaced if it exists).
        """
        from .nvprof import export_nvprof
        export_nvprof(self, path)


# -- the table ---------------------------------------------------------------------------------

class _UnknownSortKey(AttributeError, ValueError):
    """An unknown ``sort_by`` key: an AttributeError, as PyTorch's table raises for a key its
    events lack, and a ValueError, as a bad argument value (and tritongrad's earlier error)."""


def _sort_value(evt, key: str):
    try:
        return getattr(evt, _device_key(key))
    except AttributeError:
        raise _UnknownSortKey(f"table: unknown sort_by key {key!r}; valid keys: "
                              f"{', '.join(_SORT_KEYS)}") from None


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = "..." + path[len(path) - width + 3:]
    return path


def _flops_unit(flops: int) -> tuple[float, str]:
    units = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")
    i = max(0, min(int(math.log10(flops) // 3), len(units) - 1))
    return 10.0 ** (-3 * i), units[i]


_TIME_UNITS = {"s": 1e6, "ms": 1e3, "us": 1.0}


def _time_formatter(time_unit):
    """format_time, or every time in ``time_unit`` (``"s"``, ``"ms"``, ``"us"``)."""
    if time_unit is None:
        return format_time
    scale = _TIME_UNITS.get(time_unit)
    if scale is None:  # (PyTorch falls back to the default silently; an unknown unit is a bug)
        raise ValueError(f"table: time_unit must be one of 's', 'ms', 'us' or None, "
                         f"got {time_unit!r}")
    return lambda us: f"{us / scale:.3f}{time_unit}"


def _build_table(events, sort_by, row_limit, max_src_column_width, max_name_column_width,
                 max_shapes_column_width, header, top_level_events_only,
                 time_unit=None) -> str:
    """PyTorch's layout: Name, [Overload Name], self and total CPU (share and time), CPU avg,
    [CUDA columns], [memory columns], # of Calls, [Node ID], [Input Shapes],
    [Source Location], [Total FLOPs]."""
    if len(events) == 0:
        return ""
    fmt = _time_formatter(time_unit)
    if sort_by is not None:
        events = events._like(sorted(events, key=lambda e: _sort_value(e, sort_by),
                                     reverse=True))
    has_cuda_time = any(e.self_cuda_time_total > 0 for e in events)
    has_cuda_mem = any(e.self_cuda_memory_usage > 0 for e in events)
    has_shapes = any(e.input_shapes for e in events)
    has_overloads = any(getattr(e, "overload_name", None) for e in events)
    has_node_id = any(e.node_id != -1 for e in events)
    stacks = [e.stack for e in events if e.stack]
    flops = [e.flops for e in events if e.flops and e.flops > 0] if events._with_flops else []

    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4,
                       max_shapes_column_width or 10 ** 9)
    src_width = 0
    if stacks:
        src_width = min(max(len(s) for st in stacks for s in st) + 4,
                        max_src_column_width or 10 ** 9)

    cols = [("Name", name_width, "<")]
    if has_overloads:
        cols.append(("Overload Name", name_width, "<"))
    cols += [("Self CPU %", 12, ">"), ("Self CPU", 12, ">"), ("CPU total %", 12, ">"),
             ("CPU total", 12, ">"), ("CPU time avg", 12, ">")]
    if has_cuda_time:
        cols += [("Self CUDA", 12, ">"), ("Self CUDA %", 12, ">"), ("CUDA total", 12, ">"),
                 ("CUDA time avg", 12, ">")]
    if events._profile_memory:
        cols += [("CPU Mem", 12, ">"), ("Self CPU Mem", 12, ">")]
        if has_cuda_mem:
            cols += [("CUDA Mem", 12, ">"), ("Self CUDA Mem", 12, ">")]
    cols.append(("# of Calls", 12, ">"))
    if has_node_id:
        cols.append(("Node ID", 12, ">"))
    if has_shapes:
        cols.append(("Input Shapes", shapes_width, ">"))
    if stacks:
        cols.append(("Source Location", src_width, "<"))
    if flops:
        scale, unit = _flops_unit(min(flops))
        cols.append((f"Total {unit}", 12, ">"))
    src_col = [c[0] for c in cols].index("Source Location") if stacks else None

    spacing = "  "
    row_format = spacing.join("{:" + align + str(width) + "}" for _, width, align in cols)
    separator = spacing.join("-" * width for _, width, _ in cols)
    line_length = len(separator)

    sum_self_cpu = sum(e.self_cpu_time_total for e in events)
    sum_self_cuda = sum(e.self_cuda_time_total for e in events)

    def cut(text: str) -> str:
        if max_name_column_width is not None and len(text) >= max_name_column_width - 3:
            return text[:max_name_column_width - 3] + "..."
        return text

    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [separator, row_format.format(*[c[0] for c in cols]), separator]

    shown = 0
    for evt in events:
        if shown == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        shown += 1
        row = [cut(evt.key)]
        if has_overloads:
            row.append(cut(evt.overload_name or ""))
        # (the shares are kept on the event, as PyTorch's table does)
        evt.self_cpu_percent = _format_share(evt.self_cpu_time_total, sum_self_cpu)
        evt.total_cpu_percent = (_format_share(evt.cpu_time_total, sum_self_cpu)
                                 if not evt.is_async else 0)
        row += [evt.self_cpu_percent, fmt(evt.self_cpu_time_total), evt.total_cpu_percent,
                fmt(evt.cpu_time_total), fmt(evt.cpu_time)]
        if has_cuda_time:
            evt.total_device_percent = _format_share(evt.self_cuda_time_total, sum_self_cuda)
            row += [fmt(evt.self_cuda_time_total), evt.total_device_percent,
                    fmt(evt.cuda_time_total), fmt(evt.cuda_time)]
        if events._profile_memory:
            row += [format_memory(evt.cpu_memory_usage), format_memory(evt.self_cpu_memory_usage)]
            if has_cuda_mem:
                row += [format_memory(evt.cuda_memory_usage),
                        format_memory(evt.self_cuda_memory_usage)]
        row.append(evt.count)
        if has_node_id:
            row.append(evt.node_id)
        if has_shapes:
            row.append(str(evt.input_shapes if evt.input_shapes is not None else "")
                       [:shapes_width])
        if stacks:
            row.append(_trim_path(evt.stack[0], src_width) if evt.stack else "")
        if flops:
            row.append(f"{evt.flops * scale:8.3f}" if evt.flops and evt.flops > 0 else "--")
        lines.append(row_format.format(*row))
        if stacks:  # the rest of the stack, one frame per line under the source column
            blank = [""] * len(cols)
            for frame in evt.stack[1:]:
                blank[src_col] = _trim_path(frame, src_width)
                lines.append(row_format.format(*blank))
            blank[src_col] = ""
            lines.append(row_format.format(*blank))
    lines.append(separator)
    lines.append(f"Self CPU time total: {fmt(sum_self_cpu)}")
    if has_cuda_time:
        lines.append(f"Self CUDA time total: {fmt(sum_self_cuda)}")
    return "\n".join(lines) + "\n"


# -- the chrome trace --------------------------------------------------------------------------

# Kineto's categories: every op and backward node is a "cpu_op", a record_function range a
# "user_annotation"
_CATEGORY = {SCOPE_FUNCTION: "cpu_op", SCOPE_BACKWARD_FUNCTION: "cpu_op",
             SCOPE_USER: "user_annotation"}
_DEVICE_CATEGORY = {"memcpy": "gpu_memcpy", "memset": "gpu_memset"}  # Kineto's categories


def _forward_backward_links(events) -> list:
    """(forward op, backward node) pairs that share a sequence number: the op that recorded
    the node (the outermost forward op with that number) and the node's apply."""
    forward, links = {}, []
    for evt in events:
        if evt.sequence_nr < 0:
            continue
        if evt.scope == SCOPE_BACKWARD_FUNCTION:
            op = forward.get(evt.sequence_nr)
            if op is not None:
                links.append((op, evt))
        elif evt.scope == SCOPE_FUNCTION and not evt.fwd_thread:
            forward.setdefault(evt.sequence_nr, evt)
    return links


def chrome_trace(events, path=None) -> dict:
    """The trace-event JSON object for ``events`` (see EventList.export_chrome_trace).

    CPU events go in this process's lane (pid = the process id, tid = the thread's native id);
    device work goes in one lane per GPU (pid = the device index, PyTorch's Kineto convention),
    one track per stream (tid = the stream handle for event-timed spans, the tool's stream id
    for kernels from CUPTI or a trace file); kernels have category ``kernel``, copies
    ``gpu_memcpy``, memsets ``gpu_memset``, as Kineto's. As in Kineto's traces, each forward
    op is joined to the backward node it recorded by a flow (``"s"`` at the op, ``"f"`` at the
    node, category ``fwdbwd``), and the object carries ``schemaVersion``, ``traceName`` (the
    file), ``trace_id``, ``host_name`` and ``baseTimeNanoseconds`` (the wall-clock time, ns
    since the epoch, of ``ts`` 0; 0 where unknown).
    """
    pid = os.getpid()
    out = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
            "args": {"name": "python"}},
           {"name": "process_labels", "ph": "M", "pid": pid, "tid": 0,
            "args": {"labels": "CPU"}},
           {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
            "args": {"sort_index": -1}}]
    threads, devices, streams = set(), set(), set()
    for evt in events:
        if evt.thread not in threads:
            threads.add(evt.thread)
            out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": evt.thread,
                        "args": {"name": f"thread {evt.thread} (python)"}})
            out.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": evt.thread,
                        "args": {"sort_index": evt.thread}})
        args = {"External id": evt.id + 1, "Record function id": 0, "Ev Idx": evt.id}
        if evt.sequence_nr >= 0:
            args["Sequence number"] = evt.sequence_nr
            if evt.fwd_thread is not None:
                args["Fwd thread id"] = evt.fwd_thread
        if evt.input_shapes:  # (recorded: record_shapes, or read from a trace's sizes)
            args["Input Dims"] = evt.input_shapes
            if evt.input_types:  # (what record_shapes adds beside the shapes, as Kineto)
                args["Input Strides"] = evt.input_strides
                args["Input type"] = evt.input_types
                args["Concrete Inputs"] = ["" if v is None else str(v)
                                           for v in evt.concrete_inputs]
        if evt.flops:
            args["FLOPs"] = evt.flops
        if evt.cpu_memory_usage:
            args["CPU memory usage"] = evt.cpu_memory_usage
        if evt.cuda_memory_usage:
            args["CUDA memory usage"] = evt.cuda_memory_usage
        if evt.stack:
            args["Call stack"] = ";".join(evt.stack)
        if evt.args is not None:
            args["Record function args"] = evt.args
        cat = _CATEGORY.get(evt.scope, "cpu_op")
        out.append({"name": evt.trace_name, "cat": cat, "ph": "X",
                    "ts": round(evt.time_range.start, 3),
                    "dur": round(evt.time_range.elapsed_us(), 3),
                    "pid": pid, "tid": evt.thread, "args": args})
        lanes = [(evt.trace_name, "cuda", *evt.device_interval)] \
            if evt.device_interval is not None else []
        lanes += [(s.name, _DEVICE_CATEGORY.get(s.kind, s.kind), s.device, s.stream, s.interval)
                  for s in evt.device_spans]
        for name, cat, dev, stream, span in lanes:
            if dev not in devices:
                devices.add(dev)
                out.append({"name": "process_name", "ph": "M", "pid": dev, "tid": 0,
                            "args": {"name": f"cuda:{dev}"}})
            if (dev, stream) not in streams:
                streams.add((dev, stream))
                out.append({"name": "thread_name", "ph": "M", "pid": dev, "tid": stream,
                            "args": {"name": f"stream {stream}"}})
            out.append({"name": name, "cat": cat, "ph": "X",
                        "ts": round(span.start, 3), "dur": round(span.elapsed_us(), 3),
                        "pid": dev, "tid": stream,
                        "args": {"Sequence number": evt.sequence_nr, "cpu event": evt.id}})
    for flow, (op, node) in enumerate(_forward_backward_links(events), 1):
        for ph, evt in (("s", op), ("f", node)):
            mark = {"ph": ph, "id": flow, "pid": pid, "tid": evt.thread,
                    "ts": round(evt.time_range.start, 3), "cat": "fwdbwd", "name": "fwdbwd"}
            if ph == "f":
                mark["bp"] = "e"  # (bound to the event that encloses it: the node)
            out.append(mark)
    return {"schemaVersion": 1, "deviceProperties": [],
            "trace_id": getattr(events, "_trace_id", None) or uuid.uuid4().hex.upper(),
            "host_name": socket.gethostname(), "displayTimeUnit": "ms",
            "baseTimeNanoseconds": getattr(events, "_base_time_ns", 0),
            "traceEvents": out, "traceName": str(path) if path is not None else ""}


# -- FLOPs -------------------------------------------------------------------------------------

# Which ops have an estimate, and by which rule, is a column of the op tables
# (autograd/registry.py); everything without one has no estimate (None, "--" in the table), as
# in PyTorch, which counts only GEMMs, convolutions and a few elementwise ops.


def _broadcast(shapes) -> tuple:
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(-ndim, 0):
        out.append(max((s[i] for s in shapes if len(s) >= -i), default=1))
    return tuple(out)


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def estimate_flops(name: str, shapes) -> int | None:
    """The FLOPs of op ``name`` (``"aten::mm"``, or bare: ``"mm"``) on tensors of ``shapes``
    (tensor inputs only), or None.

    By the op's rule in its table (the FLOPs column of docs/ops.md): ``matmul`` (``mm``,
    ``matmul``, ``bmm``): ``2 * M * N * K`` times the broadcast batch size (a 1-D operand
    counts as a single row or column); ``addmm`` (``addmm``, ``baddbmm``): that of the
    product of its second and third inputs; ``elementwise`` (``add mul exp sin clamp where ...``
    and their in-place forms): one per output element; ``reduction`` (``sum``, ``mean``): one
    per input element.

    Example:
        >>> estimate_flops("aten::mm", [(2, 3), (3, 4)])
        48
        >>> estimate_flops("mul", [(2, 3), (3,)])
        6
    """
    rule = flop_rule(name.removeprefix("aten::"))
    if not shapes or rule is None:
        return None
    if rule == "addmm":  # (input, mat1, mat2): the product's count
        rule, shapes = "matmul", shapes[1:]
    if rule == "matmul" and len(shapes) >= 2:
        a, b = shapes[0], shapes[1]
        a = (1,) + tuple(a) if len(a) == 1 else tuple(a)
        b = tuple(b) + (1,) if len(b) == 1 else tuple(b)
        if len(a) < 2 or len(b) < 2:
            return None
        batch = _broadcast([a[:-2], b[:-2]]) if len(a) > 2 or len(b) > 2 else ()
        return 2 * _numel(batch) * a[-2] * a[-1] * b[-1]
    if rule == "elementwise":
        return _numel(_broadcast(shapes))
    if rule == "reduction":
        return _numel(shapes[0])
    return None


# -- NVTX range names --------------------------------------------------------------------------

# The first ", <key> =" ends the op's name (docs/profiler.md: emit_nvtx's "<op>, seq = N", backward
# "<Node>, stashed seq = N", and PyTorch's ", op_id = ...", ", sizes = [...]",
# ", input_op_ids = [...]" variants, with or without spaces around "=").
_SUFFIX_START = re.compile(r", (?:stashed seq|seq|op_id|sizes|input_op_ids) ?= ?")
_SEQ = re.compile(r", (stashed )?seq ?= ?(\d+)")
_SIZES = re.compile(r", sizes ?= ?")


def _bracketed(text: str, start: int) -> str | None:
    """The balanced ``[...]`` that begins at ``text[start]``, or None."""
    if start >= len(text) or text[start] != "[":
        return None
    depth = 0
    for i in range(start, len(text)):
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i + 1]
    return None


def parse_range_name(message: str) -> tuple[str, int, bool, list | None]:
    """Splits an emit_nvtx-style range message into (name, seq, stashed, sizes).

    ``seq`` is -1 when the message carries none; ``sizes`` is the parsed ``sizes = [...]``
    list, or None.

    Example:
        >>> parse_range_name("mul, seq = 3, sizes = [[2, 3], []]")
        ('mul', 3, False, [[2, 3], []])
        >>> parse_range_name("MulBackward0, stashed seq=7")
        ('MulBackward0', 7, True, None)
    """
    m = _SUFFIX_START.search(message)
    if m is None:
        return message, -1, False, None
    name, tail = message[:m.start()], message[m.start():]
    seq, stashed, sizes = -1, False, None
    s = _SEQ.search(tail)
    if s is not None:
        seq, stashed = int(s.group(2)), s.group(1) is not None
    z = _SIZES.search(tail)
    if z is not None:
        text = _bracketed(tail, z.end())
        if text is not None:
            try:
                sizes = json.loads(text)
            except ValueError:
                sizes = None
    return name, seq, stashed, sizes
