"""``torch.profiler``: the step-scheduled profiler over tritongrad's own (autograd.profiler).

PyTorch's ``torch.profiler.profile`` drives Kineto through a schedule of training steps (skip,
wait, warm up, record, hand the trace to ``on_trace_ready``); tritongrad has no Kineto, so each
recorded cycle here is one ``autograd.profiler.profile`` over the same events: ops, backward
nodes, ``record_function`` ranges and, with ``ProfilerActivity.CUDA``, device time (CUPTI on a
GPU with cupti-python, CUDA events otherwise). What the cycle recorded is read through
``key_averages()``, ``events()``, ``export_chrome_trace()`` and ``export_stacks()``, as in
PyTorch. Not provided: a memory timeline (``export_memory_timeline``, deprecated in PyTorch,
raises), ``toggle_collection_dynamic`` and execution-trace observers; ``itt`` is there and says
it is not available (tritongrad is not built with Intel's ITT API).

    with tg.profiler.profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
            schedule=tg.profiler.schedule(wait=1, warmup=1, active=2),
            on_trace_ready=tg.profiler.tensorboard_trace_handler("./log")) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()
"""

from __future__ import annotations

import enum
import gzip
import json
import os
import socket
import sys
import time
import types
import warnings
from collections.abc import Callable, Iterable

from .autograd import profiler as _autograd_profiler
from .autograd.profiler import ProfilerActivity, record_function
from .autograd.profiler_util import DeviceType, EventList, chrome_trace

__all__ = ["DeviceType", "ProfilerAction", "ProfilerActivity", "itt", "kineto_available",
           "profile", "record_function", "schedule", "supported_activities",
           "tensorboard_trace_handler"]


def kineto_available() -> bool:
    """Whether the profiler runs on Kineto: never in tritongrad, whose own profiler
    (``tritongrad.autograd.profiler``) records the same events (see the module's docstring)."""
    return False


# -- itt ---------------------------------------------------------------------------------------

def _itt_is_available() -> bool:
    """Check if ITT feature is available or not: tritongrad is not built with Intel's ITT API."""
    return False


def _itt_unavailable(*args, **kwargs):
    raise RuntimeError("tritongrad.profiler.itt: ITT (Intel's instrumentation API) is not "
                       "available in tritongrad; check itt.is_available() first")


class _itt_range:
    """``itt.range(msg, *args, **kwargs)``: context manager that pushes an ITT range at the
    beginning of its scope and pops it at the end (unavailable here: it raises on entry)."""

    def __init__(self, msg: str, *args, **kwargs):
        self.msg = msg.format(*args, **kwargs)

    def __enter__(self):
        _itt_unavailable()

    def __exit__(self, *exc):
        return False


# PyTorch's ``torch.profiler.itt`` module: its functions need the ITT library, which
# tritongrad has none of, so everything but is_available() raises a RuntimeError that says so.
itt = types.ModuleType(__name__ + ".itt", "ITT (Intel's Instrumentation and Tracing "
                       "Technology) ranges; not available in tritongrad.")
itt.is_available = _itt_is_available
itt.range_push = itt.range_pop = itt.mark = _itt_unavailable
itt.range = _itt_range
itt.__all__ = ["is_available", "range_push", "range_pop", "mark", "range"]
sys.modules[itt.__name__] = itt


class ProfilerAction(enum.Enum):
    """Profiler actions that can be taken at the specified intervals."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    # Set by PyTorch's profiler when device collection stops early; never a schedule's answer
    # (a schedule that returns it is refused, as in PyTorch)
    DEVICE_STOPPED = 4


def _scheduled(schedule_fn, step: int) -> ProfilerAction:
    action = schedule_fn(step)
    if action == ProfilerAction.DEVICE_STOPPED:
        raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and "
                         "must not be returned by a user-provided schedule")
    return action


class ExecutionTraceObserver:
    """PyTorch's execution-trace observer (a graph of the ops run, for replay tools): not
    available in tritongrad; creating one raises, so that code relying on its file fails
    plainly rather than finding no trace."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("ExecutionTraceObserver: tritongrad's profiler records no "
                                  "execution trace; use export_chrome_trace for the timeline")


class _ExperimentalConfig:
    """PyTorch's Kineto options (``torch.profiler._ExperimentalConfig``): accepted and kept,
    so that code which builds one runs; none of them applies to tritongrad's profiler."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


def supported_activities() -> set:
    """Returns a set of supported profiler tracing activities: ``CPU``, and ``CUDA`` where a
    CUDA device (or tritongrad's emulated one) is available."""
    from .runtime import driver
    out = {ProfilerActivity.CPU}
    if driver.is_available():
        out.add(ProfilerActivity.CUDA)
    return out


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """Returns a callable that can be used as profiler ``schedule`` argument. The profiler will
    skip the first ``skip_first`` steps, then wait for ``wait`` steps, then do the warmup for
    the next ``warmup`` steps, then do the active recording for the next ``active`` steps and
    then repeat the cycle starting with ``wait`` steps. The optional number of cycles is
    specified with the ``repeat`` parameter, the zero value means that the cycles will continue
    until the profiling is finished.

    The ``skip_first_wait`` parameter controls whether the first ``wait`` stage should be
    skipped: with ``skip_first=10, wait=20`` the first cycle waits 10 + 20 steps before its
    warmup when it is zero, 10 when it is not; later cycles wait 20 steps.
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait  # the first cycle starts at its warmup
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        phase = step % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if phase < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _record_always(step: int) -> ProfilerAction:
    """The schedule without one: record from start to stop."""
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[profile], None]:
    """Outputs tracing files to directory of ``dir_name``, then that directory can be directly
    delivered to tensorboard as logdir. ``worker_name`` should be unique for each worker in
    distributed scenario, it will be set to '[hostname]_[pid]' by default. Each trace is
    ``<worker_name>.<time in ns>.pt.trace.json`` (``.gz`` added with ``use_gzip``).
    ``use_python_export`` (PyTorch's choice between Kineto's C++ writer and the Python one)
    changes nothing here: the Python writer is the only one."""
    def handler_fn(prof: profile) -> None:
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError("Can't create directory: " + dir_name) from e
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler_fn


_A = ProfilerAction
_TRACE, _READY, _PREP, _STOP = "start_trace", "_trace_ready", "prepare_trace", "stop_trace"
# (the action of the step that ends, of the one that begins; None: the profiler stops) -> what
# to do, in order: PyTorch's table. A pair not listed does nothing.
_TRANSITIONS = {
    (_A.NONE, _A.WARMUP): (_PREP,),
    (_A.NONE, _A.RECORD): (_PREP, _TRACE),
    (_A.NONE, _A.RECORD_AND_SAVE): (_PREP, _TRACE),
    (_A.WARMUP, _A.NONE): ("Incorrect schedule: WARMUP followed by NONE", _TRACE, _STOP),
    (_A.WARMUP, _A.RECORD): (_TRACE,),
    (_A.WARMUP, _A.RECORD_AND_SAVE): (_TRACE,),
    (_A.RECORD, _A.NONE): ("Incorrect schedule: RECORD followed by NONE", _STOP),
    (_A.RECORD, _A.WARMUP): ("Incorrect schedule: RECORD followed by WARMUP", _STOP),
    (_A.RECORD_AND_SAVE, _A.NONE): (_STOP, _READY),
    (_A.RECORD_AND_SAVE, _A.WARMUP): (_STOP, _READY, _PREP),
    (_A.RECORD_AND_SAVE, _A.RECORD): (_STOP, _READY, _PREP, _TRACE),
    (_A.RECORD_AND_SAVE, _A.RECORD_AND_SAVE): (_STOP, _READY, _PREP, _TRACE),
    (_A.WARMUP, None): (_TRACE, _STOP),
    (_A.RECORD, None): (_STOP, _READY),
    (_A.RECORD_AND_SAVE, None): (_STOP, _READY),
}

_warned_cycles = False


class _KinetoProfile:
    """Low-level profiler that wraps tritongrad's autograd profile: ``start()`` records,
    ``stop()`` ends the recording, and the results are read as in :class:`profile` (which is
    this class plus a step schedule).

    Args:
        activities (iterable): list of activity groups (CPU, CUDA) to use in profiling,
            supported values: ``tritongrad.profiler.ProfilerActivity.CPU``,
            ``tritongrad.profiler.ProfilerActivity.CUDA``. Default value:
            ProfilerActivity.CPU and (when available) ProfilerActivity.CUDA. Leaving out
            ``CPU`` keeps only the events that have device time.
        record_shapes (bool): save information about operator's input shapes.
        profile_memory (bool): track tensor memory allocation/deallocation (the net bytes each
            event allocated, on the CPU and on its CUDA device).
        with_stack (bool): record source information (file and line number) for the ops.
        with_flops (bool): use formula to estimate the FLOPS of specific operators
            (matrix multiplication, elementwise ops and sums).
        with_modules (bool): accepted; module hierarchy is not recorded.
        experimental_config: accepted (PyTorch's Kineto options; none applies here).
        execution_trace_observer: not supported (NotImplementedError when given).
        acc_events (bool): Enable the accumulation of FunctionEvents across multiple profiling
            cycles.
        custom_trace_id_callback (callable): called when a cycle ends; what it returns is the
            ``trace_id`` of the cycle's Chrome trace.
        post_processing_timeout_s (float): accepted (the events are built as a cycle ends,
            with no separate post-processing); must be non-negative.
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None,
                 execution_trace_observer=None, acc_events: bool = False,
                 custom_trace_id_callback=None, post_processing_timeout_s: float | None = None):
        self.activities = set(activities) if activities is not None else supported_activities()
        self._check_activities()
        if execution_trace_observer is not None:
            raise NotImplementedError("profile: execution_trace_observer is not supported by "
                                      "tritongrad's profiler")
        if post_processing_timeout_s is not None and post_processing_timeout_s < 0:
            raise ValueError("post_processing_timeout_s must be non-negative")
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.with_flops, self.with_modules = with_stack, with_flops, with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = None
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.post_processing_timeout_s = post_processing_timeout_s
        self.use_device = "cuda" if ProfilerActivity.CUDA in self.activities else None
        self.profiler: _autograd_profiler.profile | None = None
        self.preset_metadata: dict[str, str] = {}
        self._trace_metadata: dict[str, str] = {}
        self._accumulated: list = []
        self._recording = False

    def _check_activities(self) -> None:
        if not self.activities:
            raise AssertionError("No valid profiler activities found")
        _autograd_profiler._check_activities(self.activities)

    def start(self) -> None:
        """Starts recording (a fresh cycle)."""
        self.prepare_trace()
        self.start_trace()

    def stop(self) -> None:
        """Stops recording; the cycle's events become readable."""
        self.stop_trace()

    def prepare_trace(self) -> None:
        """Makes the profile the next cycle records into (its warmup: nothing is recorded)."""
        global _warned_cycles
        if self.profiler is not None and not self.acc_events and not _warned_cycles:
            _warned_cycles = True
            warnings.warn("Warning: Profiler clears events at the end of each cycle. Only events "
                          "from the current cycle will be reported. To keep events across "
                          "cycles, set acc_events=True.", stacklevel=3)
        if not self.acc_events:
            self._accumulated = []
        self.profiler = _autograd_profiler.profile(
            use_cuda=self.use_device == "cuda", record_shapes=self.record_shapes,
            with_flops=self.with_flops, profile_memory=self.profile_memory,
            with_stack=self.with_stack, with_modules=self.with_modules, use_kineto=True,
            use_cpu=ProfilerActivity.CPU in self.activities,
            experimental_config=self.experimental_config,
            custom_trace_id_callback=self.custom_trace_id_callback)

    def start_trace(self) -> None:
        """Starts recording into the prepared profile."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        if self.profiler.entered:  # (RECORD, WARMUP, RECORD: the stopped cycle's is spent)
            self.prepare_trace()
        self.profiler.__enter__()
        self._recording = True
        for flag in ("profile_memory", "with_stack", "record_shapes", "with_modules",
                     "with_flops"):
            if getattr(self, flag):
                self.add_metadata_json(flag, "1")
        for key, value in self.preset_metadata.items():
            self.add_metadata_json(key, value)

    def stop_trace(self) -> None:
        """Stops recording; the cycle's events become readable."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        if not self._recording:
            return
        self._recording = False
        self.profiler.__exit__(None, None, None)
        if self.acc_events:  # this cycle's events after the earlier cycles'
            self._accumulated.extend(self.profiler.function_events)
            self.profiler.function_events = self.profiler.function_events._like(
                self._accumulated)

    # -- results ----------------------------------------------------------------------------

    def _finished(self, what: str) -> _autograd_profiler.profile:
        if self.profiler is None:
            raise AssertionError(f"Profiler must be initialized before {what}")
        return self.profiler

    def events(self) -> EventList:
        """Returns the list of unaggregated profiler events, to be used in the trace callback
        or after the profiling is finished."""
        return self._finished("accessing events").function_events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Averages events, grouping them by operator name and (optionally) input shapes and
        stack (tritongrad ops have no overloads: ``group_by_overload_name`` groups as by name).

        .. note::
            To use shape/stack functionality make sure to set record_shapes/with_stack
            when creating profiler context manager.
        """
        return self._finished("getting key averages").key_averages(
            group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path: str) -> None:
        """Exports the collected trace in Chrome JSON format (gzipped when ``path`` ends in
        ``.gz``), with the metadata added by :meth:`add_metadata` at its top level. Only the
        last cycle of a schedule is exported (every cycle's with ``acc_events``)."""
        trace = chrome_trace(self._finished("exporting chrome trace").function_events, path)
        trace.update({k: json.loads(v) for k, v in self._trace_metadata.items()})
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "wt") as f:
            json.dump(trace, f)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Save stack traces to a file, one line per event in the collapsed-stack format of
        flame graph tools (``outer;...;inner <metric in us>``).

        Args:
            path (str): save stacks file to this location;
            metric (str): metric to use: "self_cpu_time_total" or "self_cuda_time_total"

        Raises:
            AssertionError: "export_stacks() requires with_stack=True", as PyTorch.
        """
        self._finished("exporting stacks").export_stacks(path, metric)

    def add_metadata(self, key: str, value: str) -> None:
        """Adds a user defined metadata with a string key and a string value into the trace
        file."""
        self._trace_metadata[key] = json.dumps(value)

    def add_metadata_json(self, key: str, value: str) -> None:
        """Adds a user defined metadata with a string key and a valid json value into the
        trace file."""
        json.loads(value)  # (refused now rather than when the trace is written)
        self._trace_metadata[key] = value

    def preset_metadata_json(self, key: str, value: str) -> None:
        """Preset a user defined metadata when the profiler is not started and added into the
        trace file later. Metadata is in the format of a string key and a valid json value."""
        self.preset_metadata[key] = value

    def export_memory_timeline(self, path: str, device: str | None = None) -> None:
        """PyTorch's memory timeline (deprecated there): not available in tritongrad.

        Raises:
            ValueError: unless the profile ran with ``record_shapes=True``,
                ``profile_memory=True`` and ``with_stack=True``, as PyTorch.
            NotImplementedError: otherwise: tritongrad records each event's net memory
                (``cpu_memory_usage``, ``cuda_memory_usage``), not a timeline of allocations.
        """
        if not (self.record_shapes and self.profile_memory and self.with_stack):
            raise ValueError("record_shapes=True, profile_memory=True, with_stack=True "
                             "required for memory profiling.")
        raise NotImplementedError("export_memory_timeline: tritongrad's profiler records each "
                                  "event's net memory (cpu_memory_usage, cuda_memory_usage), "
                                  "not a timeline of allocations")


class profile(_KinetoProfile):
    """Profiler context manager.

    Args:
        activities (iterable): list of activity groups (CPU, CUDA) to use in profiling,
            supported values: ``tritongrad.profiler.ProfilerActivity.CPU``,
            ``tritongrad.profiler.ProfilerActivity.CUDA``. Default value:
            ProfilerActivity.CPU and (when available) ProfilerActivity.CUDA. Leaving out
            ``CPU`` keeps only the events that have device time.
        schedule (Callable): callable that takes step (int) as a single parameter and returns
            ``ProfilerAction`` value that specifies the profiler action to perform at each
            step.
        on_trace_ready (Callable): callable that is called at each step when ``schedule``
            returns ``ProfilerAction.RECORD_AND_SAVE`` during the profiling (and when the
            profiler stops while recording).
        record_shapes (bool): save information about operator's input shapes.
        profile_memory (bool): track tensor memory allocation/deallocation (the net bytes each
            event allocated, on the CPU and on its CUDA device).
        with_stack (bool): record source information (file and line number) for the ops.
        with_flops (bool): use formula to estimate the FLOPs (floating point operations) of
            specific operators (matrix multiplication, elementwise ops and sums).
        with_modules (bool): accepted; module hierarchy is not recorded.
        acc_events (bool): Enable the accumulation of FunctionEvents across multiple profiling
            cycles.
        use_cuda (bool): deprecated, use ``activities``.

    Use :func:`~tritongrad.profiler.schedule` to generate the callable schedule. Non-default
    schedules are useful when profiling long training jobs and allow the user to obtain
    multiple traces at the different iterations of the training process. The default schedule
    simply records all the events continuously for the duration of the context manager. With
    a schedule, each step is a ``ProfilerStep#<n>`` range in the events.

    Example::

        with tg.profiler.profile(
            activities=[tg.profiler.ProfilerActivity.CPU],
            schedule=tg.profiler.schedule(wait=1, warmup=1, active=2),
            on_trace_ready=lambda p: print(p.key_averages().table(
                sort_by="self_cpu_time_total", row_limit=10)),
        ) as p:
            for _ in range(8):
                train_step()
                p.step()
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], None] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None,
                 execution_trace_observer=None, acc_events: bool = False,
                 use_cuda: bool | None = None, custom_trace_id_callback=None,
                 post_processing_timeout_s: float | None = None):
        activities = set(activities) if activities is not None else supported_activities()
        if use_cuda is not None:
            warnings.warn("The use_cuda parameter is deprecated. Please use the activities "
                          "argument instead.", FutureWarning, stacklevel=2)
            if use_cuda:
                activities.add(ProfilerActivity.CUDA)
            else:
                activities.discard(ProfilerActivity.CUDA)
        super().__init__(activities=activities, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config,
                         execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events,
                         custom_trace_id_callback=custom_trace_id_callback,
                         post_processing_timeout_s=post_processing_timeout_s)
        self.record_steps = schedule is not None
        self.schedule = schedule or _record_always
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = _scheduled(self.schedule, 0)
        self.step_rec_fn: record_function | None = None

    # -- the cycle --------------------------------------------------------------------------

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self) -> None:
        """Starts profiling (as entering the context manager does) at the schedule's step."""
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step()

    def stop(self) -> None:
        """Stops profiling; a cycle still recording ends and is handed to ``on_trace_ready``."""
        self._close_step()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Signals the profiler that the next profiling step has started."""
        self._close_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = _scheduled(self.schedule, self.step_num)
        self._transit(prev, self.current_action)
        self._open_step()

    def _open_step(self) -> None:
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _close_step(self) -> None:
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None

    def _transit(self, prev: ProfilerAction, now: ProfilerAction | None) -> None:
        """Runs PyTorch's actions for the change from one step's action to the next's (``now``
        None: the profiler stops)."""
        for action in _TRANSITIONS.get((prev, now), ()):
            if action.startswith("Incorrect"):
                warnings.warn(action, stacklevel=3)
            else:
                getattr(self, action)()

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)
