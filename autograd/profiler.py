"""The autograd profiler: ``profile``, ``record_function``, ``emit_nvtx`` and ``load_nvprof``
(autograd/nvprof.py, with ``export_nvprof``).

``profile`` adds an observer (autograd/observe.py) to the thread that enters it. The observer
appends one record per op (forward, and the ops run inside backward; named as PyTorch's,
``aten::mul``: observe.event_name), per backward node (around its ``apply``), per engine step
around a node (``autograd::engine::evaluate_function: <Node>``, with the node's number) and
per ``record_function`` range, with its start and end times
(``time.perf_counter_ns``) and the record it ran inside; on exit the records become
``FunctionEvent``s (autograd/profiler_util.py). The options add detail to each record:

    record_shapes    the argument shapes (``[]`` for non-tensors)
    with_flops       a FLOP estimate (profiler_util.estimate_flops)
    profile_memory   bytes allocated meanwhile: tracemalloc on the CPU (NumPy reports its
                     buffers to it), ``tg.cuda.memory_allocated`` on the op's GPU
    with_stack       the user's Python frames
    use_cuda         on a GPU with cupti-python: CUPTI's kernel/copy records, tied to the op
                     through an external correlation id pushed while it runs
                     (autograd/profiler_cuda.py); otherwise (the emulated device, or no
                     cupti-python) a CUDA event before and after the op on its device's
                     current stream, read (``elapsed_time``) when profiling ends

With no option on, an op costs the profiler one short list, an append and two clock reads.

Note [Profiler memory accounting]:
  tracemalloc counts every Python allocation, the profiler's own records included. Each
  record therefore notes what its bookkeeping allocated (before its window opens and after
  it closes) and hands that to its parent, which subtracts it; an event's CPU memory is what
  the op and its children allocated, not the profiler.
"""

from __future__ import annotations

import enum
import functools
import os
import sys
import threading
import time
import tracemalloc
import warnings

from . import observe
from .observe import _names as _event_names
from .observe import EVALUATE_PREFIX, event_name
from .node import MAX_SEQ, AccumulateGrad
from .nvprof import load_nvprof, parse_nvprof_trace
from .nvtx import emit_nvtx
from .profiler_util import (SCOPE_BACKWARD_FUNCTION, SCOPE_FUNCTION, SCOPE_USER, DeviceSpan,
                            EventList, FunctionEvent, FunctionEventAvg, Interval, Kernel,
                            _rewrite_name, estimate_flops)
from .state import state
from .tensor import Tensor

__all__ = ["DeviceSpan", "EventList", "FunctionEvent", "FunctionEventAvg", "Interval", "Kernel",
           "ProfilerActivity", "emit_itt", "emit_nvtx", "load_nvprof", "parse_nvprof_trace",
           "profile", "record_function"]

_now = time.perf_counter_ns
_traced = tracemalloc.get_traced_memory  # (current, peak)
_tls = threading.local()  # .active: a profile is entered on this thread

# A record is a list, the cheapest thing to build on the per-op path:
_NAME, _SEQ, _SCOPE, _PARENT, _START, _END, _EXTRA = range(7)
# The scope of an "autograd::engine::evaluate_function" record until it becomes an event (a
# FUNCTION-scope event, as PyTorch's, whose fwd_thread is its node's)
_SCOPE_EVALUATE = -1


class _Extra:
    """What the options add to a record (only built when an option is on)."""

    __slots__ = ("args", "child_overhead", "concrete", "cpu_mem", "cuda0", "cuda_mem", "dev",
                 "entry_overhead", "ev0", "ev1", "flops", "made_node", "mem0", "shapes", "stack",
                 "stream", "strides", "types")

    def __init__(self):
        self.shapes = self.flops = self.stack = self.args = None
        self.concrete = self.types = self.strides = None
        self.made_node = False
        self.dev = self.stream = self.ev0 = self.ev1 = None
        self.mem0 = self.entry_overhead = self.child_overhead = self.cpu_mem = 0
        self.cuda0 = self.cuda_mem = 0


def _shapes(args) -> list:
    return [list(a._data.shape) if isinstance(a, Tensor) else [] for a in args]


# The C++ type names PyTorch's traces give tensor arguments ("Input type")
_CXX_TYPES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _argument_details(args) -> tuple[list, list, list]:
    """(types, strides, concrete values) of an op's arguments, as PyTorch's record_shapes keeps
    them: a tensor's C++ element type, strides and None; a scalar's "Scalar", [] and value; a
    list's "ScalarList", [] and value; anything else "", [] and None."""
    types, strides, concrete = [], [], []
    for a in args:
        if isinstance(a, Tensor):
            dtype = str(a.dtype).rpartition(".")[2]  # ("tritongrad.float32" -> "float32")
            types.append(_CXX_TYPES.get(dtype, dtype))
            strides.append(list(a.stride()))
            concrete.append(None)
        elif isinstance(a, (bool, int, float, complex)):
            types.append("Scalar"), strides.append([]), concrete.append(a)
        elif isinstance(a, (list, tuple)) and all(isinstance(v, (bool, int, float))
                                                  for v in a):
            types.append("ScalarList"), strides.append([]), concrete.append(list(a))
        else:
            types.append(""), strides.append([]), concrete.append(None)
    return types, strides, concrete


# -- stacks ------------------------------------------------------------------------------------

_internal_code: dict = {}  # code object -> True if it belongs to tritongrad itself
_internal_dirs: tuple | None = None


def _is_internal(code) -> bool:
    global _internal_dirs
    if _internal_dirs is None:
        # tritongrad's own packages; tg.nn / tg.optim count as user code (PyTorch shows
        # torch/nn frames too, its dispatcher and engine being C++).
        names = ("tritongrad", "tritongrad.autograd", "tritongrad.runtime", "tritongrad.kernels")
        _internal_dirs = tuple(os.path.dirname(os.path.abspath(sys.modules[n].__file__)) + os.sep
                               for n in names if n in sys.modules)
    internal = _internal_code.get(code)
    if internal is None:
        internal = _internal_code[code] = os.path.abspath(code.co_filename).startswith(
            _internal_dirs)
    return internal


_skip: dict = {}  # scope -> how many frames above _user_stack belong to the profiler's entry


def _short_lived(code) -> bool:
    """The profiler's own entry frames and the comprehension frames that call observers
    (Python 3.11 gives comprehensions a frame): they return before the event's window closes."""
    return code in _ENTRY_CODES or code.co_name in ("<listcomp>", "<genexpr>")


def _user_stack(scope) -> list:
    """The calling Python frames outside tritongrad, innermost first: ``file(line): func``."""
    # Reading f_back creates frame objects; one made for a frame that returns inside the
    # event's window would be freed there and show as negative memory. So the walk starts
    # above the profiler's own entry frames, whose count is learnt on the first event.
    depth = _skip.get(scope)
    if depth is None:
        depth, f = 2, sys._getframe(2)
        while f is not None and _short_lived(f.f_code):
            depth, f = depth + 1, f.f_back
        _skip[scope] = depth
    out = []
    try:
        f = sys._getframe(depth)
    except ValueError:
        return out
    while f is not None:
        code = f.f_code
        if not _is_internal(code):
            out.append(f"{code.co_filename}({f.f_lineno}): {code.co_name}")
        f = f.f_back
    return out


# -- the observer ------------------------------------------------------------------------------

def _node_device(node) -> int | None:
    """The CUDA device a backward node runs on (its stream's; a leaf's: its variable's)."""
    stream = node._stream
    if stream is not None:
        return stream.device_index
    if isinstance(node, AccumulateGrad):
        d = node.variable._device
        return d.index if d.type == "cuda" else None
    return None


class _Recorder:
    """Records ops, backward nodes and user ranges on one thread (observe.py protocol)."""

    def __init__(self, record_shapes, with_flops, profile_memory, with_stack, use_cuda,
                 tracer=None):
        self.records: list = []
        self.top = None  # the innermost open record
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.mem = profile_memory
        self.with_stack = with_stack
        self.use_cuda = use_cuda
        self.tracer = tracer  # a profiler_cuda.CuptiTrace on a real GPU, else None
        self.detailed = record_shapes or with_flops or profile_memory or with_stack or use_cuda
        self.thread = threading.get_native_id()
        self._bw_stacks: list = []  # with_stack: the stacks of the backward nodes now running
        if use_cuda or profile_memory:
            # bound only when asked for: a CPU-only profile never calls into the CUDA runtime
            from ..runtime import driver, memory, streams
            self._driver, self._memory, self._streams = driver, memory, streams
        self.base_time_ns = time.time_ns()  # the wall clock at t0 (the trace's base time)
        self.t0 = _now()

    # observe.py protocol ---------------------------------------------------------------------
    def op_enter(self, op, seq, inputs, params):
        name = _event_names.get(op) or event_name(op)  # (the cached name, without a call)
        if not state.grad_enabled:  # nothing records a node: no number, as in PyTorch
            seq = -1
        if self.detailed:
            dev = None
            if inputs:
                d = inputs[0]._device
                dev = d.index if d.type == "cuda" else None
            return self._enter(name, seq, SCOPE_FUNCTION, inputs, params, dev)
        # (_plain inlined: this runs for every op)
        rec = [name, seq, SCOPE_FUNCTION, self.top, 0, 0, None]
        self.records.append(rec)
        self.top = rec
        rec[_START] = _now()
        return rec

    def _plain(self, name, seq, scope):
        """A record with no option's detail, opened now."""
        rec = [name, seq, scope, self.top, 0, 0, None]
        self.records.append(rec)
        self.top = rec
        rec[_START] = _now()
        return rec

    def op_exit(self, rec):
        rec[_END] = _now()
        self.top = rec[_PARENT]
        if rec[_EXTRA] is not None:
            self._exit(rec)

    def node_enter(self, node, grads=None):
        if self.detailed:
            return self._enter(node.name(), node._seq, SCOPE_BACKWARD_FUNCTION, grads or (), (),
                               _node_device(node), node._stream)
        return self._plain(node.name(), node._seq, SCOPE_BACKWARD_FUNCTION)

    node_exit = op_exit

    def evaluate_enter(self, node):
        name, seq = EVALUATE_PREFIX + node.name(), node._seq
        if self.detailed:
            return self._enter(name, seq, _SCOPE_EVALUATE, (), (), _node_device(node),
                               node._stream)
        return self._plain(name, seq, _SCOPE_EVALUATE)

    evaluate_exit = op_exit

    def range_enter(self, name, args=None):
        if self.detailed:
            dev = None
            if (self.use_cuda or self.mem) and self._driver.is_initialized():
                dev = self._streams.current_device()
            return self._enter(name, -1, SCOPE_USER, (), (), dev, None, args)
        return self._plain(name, -1, SCOPE_USER)

    range_exit = op_exit

    # details -------------------------------------------------------------------------------
    def _enter(self, name, seq, scope, inputs, params, dev, stream=None, args=None):
        mem = self.mem
        before = _traced()[0] if mem else 0
        x = _Extra()
        rec = [name, seq, scope, self.top, 0, 0, x]
        if self.record_shapes:
            x.shapes = _shapes(inputs) + _shapes(params)  # (an index param is a tensor)
            x.types, x.strides, x.concrete = _argument_details((*inputs, *params))
        if self.with_flops and scope == SCOPE_FUNCTION:
            x.flops = estimate_flops(name, [t._data.shape for t in inputs])
        if self.with_stack:
            # Under a backward node everything shows the forward op's stack in the end
            # (_backward_stacks): reuse the node's instead of walking frames again.
            bw = self._bw_stacks
            x.stack = bw[-1] if bw and scope != SCOPE_BACKWARD_FUNCTION else _user_stack(scope)
            if scope == SCOPE_BACKWARD_FUNCTION:
                bw.append(x.stack)
        x.args = args
        if dev is not None:
            x.dev = dev
            if mem:
                x.cuda0 = self._memory.memory_allocated(dev)
            if self.use_cuda and self.tracer is None:
                x.stream = stream if stream is not None else self._streams.current_stream(dev)
                x.ev0 = self._record_event(x.stream)
        if self.tracer is not None:
            # CUPTI ties every API call made from here to the exit (kernel launches, copies)
            # to this record's number (1-based: finish() reads it back as index + 1)
            self.tracer.push(len(self.records) + 1)
        self.records.append(rec)
        self.top = rec
        if mem:  # Note [Profiler memory accounting]
            x.mem0 = _traced()[0]
            x.entry_overhead = x.mem0 - before
        rec[_START] = _now()
        return rec

    def _exit(self, rec):
        if self.tracer is not None:
            self.tracer.pop()
        x = rec[_EXTRA]
        mem = self.mem
        after = _traced()[0] if mem else 0
        if x.ev0 is not None:
            x.ev1 = self._record_event(x.stream)
        if mem:
            x.cpu_mem = after - x.mem0 - x.child_overhead
            if x.dev is not None:
                x.cuda_mem = self._memory.memory_allocated(x.dev) - x.cuda0
        if self.with_stack:
            if rec[_SCOPE] == SCOPE_FUNCTION and 0 <= rec[_SEQ] != state.seq:
                x.made_node = True  # the counter moved: this op recorded node number rec[_SEQ]
            elif rec[_SCOPE] == SCOPE_BACKWARD_FUNCTION:
                self._bw_stacks.pop()
        parent = rec[_PARENT]
        if mem and parent is not None:
            parent[_EXTRA].child_overhead += (x.entry_overhead + x.child_overhead
                                              + _traced()[0] - after)

    def _record_event(self, stream):
        e = self._streams.Event(enable_timing=True)
        e.record(stream)
        return e

    # the result ----------------------------------------------------------------------------
    def finish(self, use_cpu: bool = True) -> list:
        """Closes ranges still open, reads the CUDA events, and builds the FunctionEvents."""
        now = _now()
        r = self.top
        while r is not None:  # e.g. a record_function entered inside and left open
            r[_END] = now
            r = r[_PARENT]
        self.top = None
        try:
            refs = self._sync_devices() if self.use_cuda else {}
        finally:  # CUPTI's tracing is process-wide: never leave it running
            spans = self.tracer.stop(self.t0) if self.tracer is not None else {}
        # CUPTI gives each kernel to the innermost op that queued it: an event's device time
        # is then its own kernels' plus its children's (PyTorch's is_legacy=False)
        legacy = self.tracer is None
        t0, thread = self.t0, self.thread
        events, by_rec, bw_parent = [], {}, []
        for i, rec in enumerate(self.records):
            name, seq, scope, parent, start, end, x = rec
            seq = seq if 0 <= seq < MAX_SEQ else -1
            # fwd_thread: 0 on forward events; a backward node's (and its evaluate_function's)
            # is the thread its forward op ran on. Nodes do not record their thread, so it is
            # taken to be this one: the profile is per thread and backward runs on the caller's.
            backward = scope == SCOPE_BACKWARD_FUNCTION
            if scope == _SCOPE_EVALUATE:
                scope = SCOPE_FUNCTION
                backward = True
            # (step ranges are named "ProfilerStep*" so that tables fold them; the trace keeps
            # each one's number)
            evt = FunctionEvent(i, _rewrite_name(name, with_wildcard=True), thread,
                                (start - t0) / 1e3, (end - t0) / 1e3,
                                fwd_thread=thread if backward and seq >= 0 else 0,
                                input_shapes=[], flops=0, scope=scope, sequence_nr=seq,
                                is_legacy=legacy, trace_name=name)
            if x is not None:
                self._fill(evt, x, refs)
            for span in spans.get(i + 1, ()):
                evt.append_device_span(span)
            p = by_rec.get(id(parent)) if parent is not None else None
            if p is not None:
                p.cpu_children.append(evt)
                evt.cpu_parent = p
            by_rec[id(rec)] = evt
            bw = evt if scope == SCOPE_BACKWARD_FUNCTION else (
                bw_parent[p.id] if p is not None else None)
            bw_parent.append(bw)
            events.append(evt)
        if self.with_stack:
            _backward_stacks(events, self.records, bw_parent)
        if not use_cpu:
            events = _device_events_only(events)
        return events

    def _fill(self, evt, x, refs) -> None:
        # Without record_shapes / with_flops (or for an op with no estimate) PyTorch's events
        # hold [] and 0, not None: code that sums flops or measures shapes needs no test.
        evt.input_shapes = x.shapes if x.shapes is not None else []
        if x.shapes is not None:
            evt.concrete_inputs, evt.input_types, evt.input_strides = \
                x.concrete, x.types, x.strides
        evt.flops = x.flops or 0
        evt.stack = x.stack if x.stack is not None else []
        evt.args = x.args
        evt.cpu_memory_usage = x.cpu_mem
        evt.cuda_memory_usage = x.cuda_mem
        if x.ev1 is not None:
            us = x.ev0.elapsed_time(x.ev1) * 1e3
            evt.append_kernel(evt.name, x.dev, us)
            ref_event, ref_us = refs[x.dev]
            start = ref_us + ref_event.elapsed_time(x.ev0) * 1e3
            evt.device_interval = (x.dev, x.stream.cuda_stream, Interval(start, start + us))

    def _sync_devices(self) -> dict:
        """Waits for every device used; returns, per device, its first event and that event's
        CPU time (the anchor that places device spans on the trace's timeline)."""
        refs, used = {}, set()
        for rec in self.records:
            x = rec[_EXTRA]
            if x is not None and x.dev is not None:
                used.add(x.dev)
                if x.ev0 is not None and x.dev not in refs:
                    refs[x.dev] = (x.ev0, (rec[_START] - self.t0) / 1e3)
        for dev in sorted(used):  # CUPTI reports a kernel once it has run
            self._streams.synchronize(dev)
        return refs


def _backward_stacks(events, records, bw_parent) -> None:
    """Gives each backward event (a node and the ops it runs) the stack of the forward op that
    made the node, as PyTorch does; without one, the event keeps the stack it was run from."""
    forward = {}
    for evt, rec, bw in zip(events, records, bw_parent):
        if bw is None and rec[_EXTRA].made_node:
            forward.setdefault(evt.sequence_nr, evt.stack)
    for evt, bw in zip(events, bw_parent):
        if bw is not None:
            stack = forward.get(bw.sequence_nr)
            if stack is not None:
                evt.stack = stack


def _device_events_only(events) -> list:
    """use_cpu=False: keeps the events with device time, each linked to its nearest kept
    ancestor.

    Note [device-only events]: "device time" is ``cuda_time_total``'s: with event timing
    (``is_legacy``) an event's own measured interval; with CUPTI its own kernels *or its
    children's*, since CUPTI gives each kernel to the innermost op that launched it. Keeping
    only events with kernels of their own would drop, under CUPTI, every record_function range
    and backward node (their work is their ops'), which event timing keeps (each has an
    interval of its own there). Only events that queue nothing, e.g. views, differ: a pair of
    events times them, CUPTI sees no work.
    """
    keep: set = set()  # ids of the events with device time
    for e in reversed(events):  # children come after their parent: their verdict is known
        if e.kernels or id(e) in keep:
            keep.add(id(e))
            if not e.is_legacy and e.cpu_parent is not None:
                keep.add(id(e.cpu_parent))
    kept = [e for e in events if id(e) in keep]
    for e in kept:
        p = e.cpu_parent
        while p is not None and id(p) not in keep:
            p = p.cpu_parent
        e.cpu_parent = p
        e.cpu_children = []
    for e in kept:
        if e.cpu_parent is not None:
            e.cpu_parent.cpu_children.append(e)
    return kept


# -- profile -----------------------------------------------------------------------------------

class ProfilerActivity(enum.Enum):
    """What a profile records, as ``torch.profiler.ProfilerActivity``: ``CPU`` (ops, backward
    nodes and user ranges on the host) and ``CUDA`` (device time of the work they queue).

    ``XPU``, ``MTIA``, ``HPU`` and ``PrivateUse1`` name PyTorch's other devices, which
    tritongrad has none of: a profile asked to record one raises a ValueError."""

    CPU = "CPU"
    CUDA = "CUDA"
    XPU = "XPU"
    MTIA = "MTIA"
    HPU = "HPU"
    PrivateUse1 = "PrivateUse1"


_PROFILED = (ProfilerActivity.CPU, ProfilerActivity.CUDA)


def _check_activities(activities) -> None:
    """ValueError for what is not a ProfilerActivity or names a device tritongrad lacks."""
    unknown = [a for a in activities if not isinstance(a, ProfilerActivity)]
    if unknown:
        raise ValueError(f"profile: activities must be ProfilerActivity values (CPU, CUDA), "
                         f"got {sorted(map(repr, unknown))}")
    absent = [a for a in activities if a not in _PROFILED]
    if absent:
        raise ValueError(f"profile: {', '.join(sorted(str(a) for a in absent))} cannot be "
                         f"profiled: tritongrad's devices are the CPU and CUDA GPUs")


def _cuda_tracer(stacklevel: int):
    """The CUPTI trace to run on a real GPU; None on the emulated device (event timing), or
    when cupti-python is missing (a warning that says how to install it, then event timing)."""
    from . import profiler_cuda
    if not profiler_cuda.on_real_gpu():
        return None
    try:
        cupti = profiler_cuda.load_cupti()
    except ImportError as e:
        warnings.warn(f"{e}; timing each op with CUDA events instead (no per-kernel records)",
                      UserWarning, stacklevel=stacklevel + 1)
        return None
    return profiler_cuda.CuptiTrace(cupti)


class profile:
    """Context manager that manages autograd profiler state and holds a summary of results.

    It records every op run on the thread that enters it, named as PyTorch names them
    (``aten::mul``, ``aten::pow``, ``aten::mm``; a custom Function by its class name; factory
    functions and composites that report themselves, e.g. ``aten::randn`` around
    ``aten::empty`` and ``aten::normal_``, ``aten::linear`` around its parts; the ops run
    inside backward too), the engine's handling of each backward node
    (``autograd::engine::evaluate_function: MulBackward0``) around the node's ``apply``
    (``MulBackward0``, ``torch::autograd::AccumulateGrad``), and every
    :class:`record_function` range, with their nesting, so that each event has a total time
    and a self time (total minus its children's). An op's ``sequence_nr`` is the number its
    backward node gets (-1 when grad mode is off: it records none); a node and its
    evaluate_function carry the node's, and their ``fwd_thread`` is the thread of the forward
    op (taken to be the profiling thread: nodes do not record theirs); other events have
    ``fwd_thread`` 0. You can wrap any code into it and it will
    only report runtime of tritongrad functions.

    Note: profiler is thread local: ops that other threads run are not recorded. (tritongrad
    runs backward on the calling thread, so a backward inside the context is recorded whole.)

    Args:
        enabled (bool, optional): Setting this to False makes this context manager a no-op.
            Default: ``True``.
        use_cuda (bool, optional): Enables timing of CUDA events as well using the cudaEvent
            API: a timing event is recorded before and after each op on the current stream of
            the op's device (a backward node: on the stream it runs on), and read when the
            context exits. Adds a few microseconds of overhead to each op. On a GPU with
            cupti-python, CUPTI records the kernels instead (see "CUDA time" below). Where
            CUDA is not available it warns and records CPU times only. Default: ``False``.
        record_shapes (bool, optional): If shapes recording is set, information about input
            dimensions will be collected (one list per argument, ``[]`` for non-tensors). This
            allows one to see which dimensions have been used under the hood and further group
            by them using ``prof.key_averages(group_by_input_shape=True)``. Shape recording
            might skew your profiling data: higher-level events include its cost in their
            self time. Default: ``False``.
        with_flops (bool, optional): If set, the profiler estimates the FLOPs of each op:
            matrix products (``aten::mm``, ``aten::matmul``, ``aten::bmm``: ``2*M*N*K``),
            elementwise ops (one
            per output element) and ``sum``/``mean`` (one per input element); other ops have
            no estimate. Default: ``False``.
        profile_memory (bool, optional): Whether to report memory usage: the net bytes each
            event allocated on the CPU (tracemalloc, started for the duration if it is not
            already on; NumPy reports its buffers to it) and on its CUDA device
            (``tg.cuda.memory_allocated``). Default: ``False``.
        with_stack (bool, optional): record source information (``file(line): function``
            of the user's frames, innermost first) for the ops; backward events get the stack
            of the forward op that created them. Default: ``False``.
        use_kineto (bool, optional): accepted for compatibility; tritongrad has no Kineto, the
            events are the same either way. Default: ``False``.
        use_cpu (bool, optional): with ``use_kineto=True``, ``use_cpu=False`` keeps only the
            events that have device time (with CUPTI an event's device time includes its
            children's, so a ``record_function`` range or backward node around ops that queue
            kernels is kept, as with event timing; Note [device-only events]). Default:
            ``True``.
        use_device (str, optional): ``"cuda"`` is the same as ``use_cuda=True``; no other
            device can be profiled. Default: ``None``.
        with_modules (bool, optional): accepted for compatibility; module hierarchy is not
            recorded. Default: ``False``.
        experimental_config: accepted for compatibility (PyTorch's Kineto options); none of
            them applies to tritongrad's profiler. Default: ``None``.
        acc_events (bool, optional): let the profile be entered again, each run's events
            added after the earlier runs' (else entering it twice is an error). Default:
            ``False``.
        custom_trace_id_callback (callable, optional): called with no argument when the
            profile ends; what it returns (a str) is the ``trace_id`` of the Chrome trace.
            Default: ``None`` (a random id).
        post_processing_timeout_s (float, optional): accepted for compatibility: the events
            are built as the profile exits, with no separate post-processing to time out.
            Must be non-negative. Default: ``None``.
        activities (iterable of ProfilerActivity, optional): what to record, as
            ``torch.profiler.profile`` takes it: ``ProfilerActivity.CUDA`` is ``use_cuda=True``;
            leaving out ``ProfilerActivity.CPU`` keeps only the events with device time (as
            ``use_kineto=True, use_cpu=False``). Default: ``None`` (use the flags).

    CUDA time: on a GPU, with the ``cupti-python`` package installed, CUPTI records every
    kernel, copy and memset and the op that queued it (CUPTI external correlation around each
    op, matched to the driver call that launched the kernel: Triton launches through
    ``cuLaunchKernel``); each event lists its kernels in ``kernels``, its device time is its
    own kernels' plus its children's, and the Chrome trace draws each kernel in a lane per
    stream. Without cupti-python it warns and times each op with a pair of CUDA events on its
    stream (also what happens on tritongrad's emulated device, where the events time the
    host's execution of the op).

    Raises:
        RuntimeError: "Profiler is already enabled on this thread" when entered while another
            profile is active on this thread, as PyTorch does; "Profiler context manager is not
            reentrant" when the same object is entered twice.

    Example:
        >>> import tritongrad as torch
        >>> x = torch.randn((1, 1), requires_grad=True)
        >>> with torch.autograd.profiler.profile() as prof:
        ...     for _ in range(100):  # any normal python code, really!
        ...         y = x ** 2
        ...         y.backward()
        >>> # NOTE: some columns were removed for brevity
        >>> print(prof.key_averages().table(sort_by="self_cpu_time_total"))  # doctest: +SKIP
        -------------------------------  ------------  ------------  ...  ------------
        Name                               Self CPU %      Self CPU  ...    # of Calls
        -------------------------------  ------------  ------------  ...  ------------
        aten::mul                              31.05%       1.232ms  ...           200
        aten::pow                              27.55%       1.093ms  ...           200
        PowBackward0                           16.62%     659.489us  ...           100
        torch::autograd::AccumulateGrad         8.01%     317.784us  ...           100
        ...
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 use_device: str | None = None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None, post_processing_timeout_s: float | None = None,
                 activities=None):
        if post_processing_timeout_s is not None and post_processing_timeout_s < 0:
            raise ValueError("post_processing_timeout_s must be non-negative")
        if activities is not None:
            activities = set(activities)
            if not activities:
                raise ValueError("profile: activities is empty")
            _check_activities(activities)
            use_cuda = use_cuda or ProfilerActivity.CUDA in activities
            if ProfilerActivity.CPU not in activities:
                if ProfilerActivity.CUDA not in activities:
                    raise ValueError("profile: activities has neither CPU nor CUDA")
                use_kineto, use_cpu = True, False
        if use_device is not None and use_device != "cuda":
            raise ValueError(f"profile: use_device={use_device!r} cannot be profiled; "
                             f"tritongrad devices are 'cpu' (always profiled) and 'cuda'")
        if not use_cpu and not use_kineto:
            raise ValueError("profile: Device-only events supported only with Kineto "
                             "(use_kineto=True)")
        self.enabled = enabled
        self.use_cuda = bool(use_cuda) or use_device == "cuda"
        self.use_device = "cuda" if self.use_cuda else None
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_kineto = use_kineto
        self.use_cpu = use_cpu
        self.experimental_config = experimental_config
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.post_processing_timeout_s = post_processing_timeout_s
        self.trace_id = ""
        self.entered = False
        self.function_events: EventList | None = None
        self._recorder: _Recorder | None = None
        self._started_tracemalloc = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered and not self.acc_events:
            raise RuntimeError("Profiler context manager is not reentrant")
        if self._recorder is not None:  # (acc_events: a run is still open)
            raise RuntimeError("Profiler context manager is not reentrant")
        if getattr(_tls, "active", False):
            raise RuntimeError("Profiler is already enabled on this thread")
        use_cuda, tracer = self.use_cuda, None
        if use_cuda:
            from ..runtime import driver
            if not driver.is_available():
                warnings.warn("profile(use_cuda=True): CUDA is not available on this machine; "
                              "recording CPU times only", UserWarning, stacklevel=2)
                use_cuda = False
            else:
                tracer = _cuda_tracer(stacklevel=2)
        if tracer is not None:
            tracer.start()  # before anything is marked active: a failure leaves no state
        self.entered = _tls.active = True
        if self.profile_memory and not tracemalloc.is_tracing():
            tracemalloc.start()
            self._started_tracemalloc = True
        self._recorder = _Recorder(self.record_shapes, self.with_flops, self.profile_memory,
                                   self.with_stack, use_cuda, tracer)
        observe.add_observer(self._recorder)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled or self._recorder is None:
            return False
        recorder, self._recorder = self._recorder, None
        observe.remove_observer(recorder)
        try:
            events = recorder.finish(self.use_cpu)
            base_ns = recorder.base_time_ns
            if self.acc_events and self.function_events is not None:
                # Later runs continue the numbering (ids stay unique) and the timeline: their
                # times move to the first run's origin.
                first, base_ns = len(self.function_events), self.function_events._base_time_ns
                shift = (recorder.base_time_ns - base_ns) / 1e3
                for i, evt in enumerate(events):
                    evt.id = first + i
                    ranges = [evt.time_range] + [sp.interval for sp in evt.device_spans]
                    if evt.device_interval is not None:
                        ranges.append(evt.device_interval[2])
                    for r in ranges:
                        r.start, r.end = r.start + shift, r.end + shift
                events = list(self.function_events) + events
            self.function_events = EventList(
                events, use_cuda=recorder.use_cuda,
                profile_memory=self.profile_memory, with_flops=self.with_flops)
            self.function_events._base_time_ns = base_ns
            if self.custom_trace_id_callback is not None:
                self.trace_id = self.custom_trace_id_callback()
                self.function_events._trace_id = self.trace_id
        finally:
            _tls.active = False
            if self._started_tracemalloc:
                tracemalloc.stop()
                self._started_tracemalloc = False
        return False

    def _check_finish(self) -> None:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def __repr__(self) -> str:
        if self.function_events is None:
            return "<unfinished tritongrad.autograd.profiler.profile>"
        return repr(self.function_events)

    def __str__(self) -> str:
        self._check_finish()
        return str(self.function_events)

    def events(self) -> EventList:
        """The recorded FunctionEvents, in the order they started."""
        self._check_finish()
        return self.function_events

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None) -> str:
        """The events as a table; see ``EventList.table`` for the arguments and sort keys."""
        self._check_finish()
        return self.function_events.table(sort_by, row_limit, max_src_column_width,
                                          max_name_column_width, max_shapes_column_width,
                                          header, top_level_events_only, time_unit)

    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path) -> None:
        """Exports an EventList as a Chrome tracing tools file.

        The checkpoint can be later loaded and inspected under ``chrome://tracing`` URL (or
        in Perfetto).

        Args:
            path (str): Path where the trace will be written.
        """
        self._check_finish()
        self.function_events.export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Save stack traces to a file (``EventList.export_stacks``: one collapsed-stack line
        per event recorded ``with_stack``).

        Args:
            path (str): save stacks file to this location;
            metric (str): metric to use: "self_cpu_time_total" or "self_cuda_time_total"

        Raises:
            AssertionError: "export_stacks() requires with_stack=True" for a profile that
                recorded no stacks, as PyTorch.
        """
        self._check_finish()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self.function_events.export_stacks(path, metric)

    def export_nvprof(self, path) -> None:
        """Writes the profile as an nvprof SQLite database (a tritongrad extension).

        Each event becomes an NVTX range named as :class:`emit_nvtx` names it, each kernel a
        ``CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`` row with its launch call, so that
        :func:`load_nvprof` reads back the same events (names, sequence numbers, shapes,
        times, kernels). See ``tritongrad.autograd.nvprof.export_nvprof`` for what is written.

        Args:
            path (str): Path where the database will be written (replaced if it exists).
        """
        self._check_finish()
        self.function_events.export_nvprof(path)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Averages all function events over their keys.

        Args:
            group_by_input_shape: group entries by (event name, input shapes) rather than just
                event name (needs ``record_shapes=True``). This is useful to see which input
                shapes contribute to the runtime the most and may help with size-specific
                optimizations.
            group_by_stack_n: group by the top ``n`` stack trace entries (needs
                ``with_stack=True``).
            group_by_overload_name: group by overload name too (tritongrad's ops have none:
                the same groups as by name).

        Returns:
            An EventList containing FunctionEventAvg objects.
        """
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n,
                                                 group_by_overload_name)

    def total_average(self) -> FunctionEventAvg:
        """Averages all events.

        Returns:
            A FunctionEventAvg object.
        """
        self._check_finish()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """Returns total time spent on CPU (us) obtained as a sum of all self times across all
        the events."""
        self._check_finish()
        return self.function_events.self_cpu_time_total


# -- record_function ---------------------------------------------------------------------------

class record_function:
    """Context manager/function decorator that adds a label to a block of Python code (or a
    function) when running autograd profiler. It is useful when tracing the code profile.

    The label is a user range: the profiler shows it as an event enclosing the ops run in the
    block, and emit_nvtx emits it as an NVTX range. Outside any profiler it costs nothing.

    Args:
        name (str): Label assigned to the block of code.
        args (str, optional): extra information shown with the range in the Chrome trace.

    Example:
        >>> import tritongrad as torch
        >>> x = torch.randn((1, 1), requires_grad=True)
        >>> with torch.autograd.profiler.profile() as prof:
        ...     y = x ** 2
        ...     with torch.autograd.profiler.record_function("label-z"):  # label the block
        ...         z = y ** 3
        ...     y.backward()
        >>> "label-z" in [e.key for e in prof.key_averages()]
        True
        >>> @torch.autograd.profiler.record_function("my_step")
        ... def step(t):
        ...     return t * 2
    """

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        # Whether exiting closes the range (PyTorch's flag; a range handed to a Future is
        # closed by it instead, which tritongrad's ranges never are)
        self.run_callbacks_on_exit = True
        # (PyTorch's handle to the open range; tritongrad keeps its observers' tokens in _open)
        self.record = None
        self._open = None  # [(range_exit, token)] of the observers told at __enter__

    def __enter__(self):
        if not isinstance(self.name, str) or not (self.args is None
                                                  or isinstance(self.args, str)):
            # (RuntimeError, as PyTorch's op schema check raises, and even with no profiler)
            bad = ("name", self.name) if not isinstance(self.name, str) else ("args", self.args)
            raise RuntimeError(f"record_function: {bad[0]} must be a str, got "
                               f"{type(bad[1]).__name__}")
        observers = state.observers
        if observers:
            opened = []
            for o in observers:
                enter = getattr(o, "range_enter", None)
                if enter is None:
                    continue  # an observer without user ranges (observe.py: they are optional)
                token = enter(self.name, self.args) if isinstance(o, _Recorder) \
                    else enter(self.name)
                opened.append((o.range_exit, token))
            self._open = opened
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        opened, self._open = self._open, None
        if opened:
            for exit_, token in reversed(opened):
                exit_(token)
        return False

    def __call__(self, fn):
        # A fresh range per call: recursive and concurrent calls must not share state.
        name, args = self.name, self.args

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            with record_function(name, args):
                return fn(*a, **kw)
        return wrapper


# -- emit_itt ----------------------------------------------------------------------------------

class emit_itt:
    """Context manager that makes every autograd operation emit an ITT range.

    It is useful when running the program under Intel(R) VTune Profiler. tritongrad is not
    built with Intel's ITT API (``tritongrad.profiler.itt.is_available()`` is False), so
    entering it while enabled raises, as PyTorch does in a build without ITT; with
    ``enabled=False`` it is a no-op.

    Args:
        enabled (bool, optional): Setting ``enabled=False`` makes this context manager a
            no-op. Default: ``True``.
        record_shapes (bool, optional): If ``record_shapes=True``, the itt range wrapping each
            autograd op will append information about the sizes of Tensor arguments received
            by that op. Default: ``False``.

    Raises:
        RuntimeError: on entry while enabled: ITT is not available.
    """

    def __init__(self, enabled: bool = True, record_shapes: bool = False):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes

    def __enter__(self):
        if not self.enabled:
            return self
        raise RuntimeError("emit_itt: tritongrad is not built with ITT (Intel's "
                           "instrumentation API); use emit_nvtx or profile instead")

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False


_ENTRY_CODES = frozenset(f.__code__ for f in (
    _Recorder._enter, _Recorder.op_enter, _Recorder.node_enter, _Recorder.evaluate_enter,
    _Recorder.range_enter, record_function.__enter__))
