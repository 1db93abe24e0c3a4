"""A test double of ``cupti.cupti`` for the profiler's CUPTI path, and the choice between the
two ways ``profile(use_cuda=True)`` times device work, for the tests of both.

Without a GPU the CUPTI path (autograd/profiler_cuda.py) runs against ``FakeCupti``, not the
real CUPTI: it keeps CUPTI's contract as the profiler relies on it (buffer callbacks,
enable/disable per activity kind, a stack of external correlation ids, one
EXTERNAL_CORRELATION record per API call made while an id is pushed, a driver-API record and a
kernel/memset record sharing a correlation id, a clock of its own read by ``get_timestamp``).
Tests make it "launch" kernels themselves (``FakeCupti.launch``), or have it see every Triton
kernel the emulated device runs (``report_interpreted_launches``), so that ordinary tg
workloads profile as they would on a GPU with cupti-python installed. What the double cannot
show (that real CUPTI sees Triton's cuLaunchKernel calls, its record field names, its clock) is
checked by the ``gpu``-marked tests, on a real GPU.

Note [profiling both timing paths]: on a GPU with cupti-python every ``use_cuda`` profile
goes through CUPTI; on the emulated device (and a GPU without cupti-python) through CUDA
event pairs. A test written against one path alone passes in CI and fails on the GPU (session
19: four did). Tests that depend on the path take a ``timing`` fixture built on
``select_timing``: "events" forces event timing everywhere (cupti-python made unimportable),
"cupti" uses the real CUPTI on a GPU and this double on the emulated device.
"""

from __future__ import annotations

import enum
import sys
import time
import types
import warnings

import pytest

from tritongrad.autograd import profiler_cuda

__all__ = ["CLOCK_OFFSET", "FakeCupti", "TIMINGS", "install", "report_interpreted_launches",
           "select_timing"]

CLOCK_OFFSET = 10 ** 15  # the double's clock is not perf_counter_ns: calibration must place it

TIMINGS = ("events", "cupti")


class FakeCupti(types.SimpleNamespace):
    """A stand-in for ``cupti.cupti`` (see the module docstring)."""

    class ActivityKind(enum.IntEnum):
        MEMCPY = 1
        MEMSET = 2
        KERNEL = 3
        DRIVER = 4
        RUNTIME = 5
        CONCURRENT_KERNEL = 10
        EXTERNAL_CORRELATION = 39

    class ExternalCorrelationKind(enum.IntEnum):
        INVALID = 0
        UNKNOWN = 1
        OPENACC = 2
        CUSTOM0 = 3

    class ActivityFlag(enum.IntEnum):
        NONE = 0
        FLUSH_FORCED = 1

    class ActivityMemcpyKind(enum.IntEnum):
        HTOD = 1
        DTOH = 2

    def __init__(self):
        super().__init__()
        self.enabled: set = set()
        self.callbacks = None
        self.stack: list = []
        self.buffer: list = []
        self.corr = 0
        self.registrations = 0

    # the bindings the profiler calls ---------------------------------------------------------
    def activity_register_callbacks(self, requested, completed):
        self.registrations += 1
        self.callbacks = (requested, completed)

    def activity_enable(self, kind):
        self.enabled.add(self.ActivityKind(kind))

    def activity_disable(self, kind):
        self.enabled.discard(self.ActivityKind(kind))

    def get_timestamp(self):
        return time.perf_counter_ns() + CLOCK_OFFSET

    def activity_push_external_correlation_id(self, kind, id_):
        assert kind == self.ExternalCorrelationKind.CUSTOM0
        self.stack.append(id_)

    def activity_pop_external_correlation_id(self, kind):
        assert kind == self.ExternalCorrelationKind.CUSTOM0
        return self.stack.pop()

    def activity_flush_all(self, flag):
        assert flag == self.ActivityFlag.FLUSH_FORCED
        size, _ = self.callbacks[0]()
        assert size > 0
        records, self.buffer = self.buffer, []
        self.callbacks[1](records)

    # what the GPU would do ---------------------------------------------------------------------
    def launch(self, name, duration_ns=3_000, stream=7, kind="kernel"):
        """A cuLaunchKernel (or cuMemsetD8Async) call now, its work 5 us later."""
        K = self.ActivityKind
        self.corr += 1
        t = self.get_timestamp()
        rec = types.SimpleNamespace
        if K.DRIVER in self.enabled:
            self.buffer.append(rec(kind=K.DRIVER, correlation_id=self.corr, start=t,
                                   end=t + 800, cbid=307, thread_id=1))
        if self.stack and K.EXTERNAL_CORRELATION in self.enabled:
            self.buffer.append(rec(kind=K.EXTERNAL_CORRELATION, correlation_id=self.corr,
                                   external_kind=int(self.ExternalCorrelationKind.CUSTOM0),
                                   external_id=self.stack[-1]))
        k0 = t + 5_000
        if kind == "kernel" and K.CONCURRENT_KERNEL in self.enabled:
            self.buffer.append(rec(kind=K.CONCURRENT_KERNEL, correlation_id=self.corr,
                                   start=k0, end=k0 + duration_ns, device_id=0,
                                   stream_id=stream, name=name))
        elif kind == "memset" and K.MEMSET in self.enabled:
            self.buffer.append(rec(kind=K.MEMSET, correlation_id=self.corr, start=k0,
                                   end=k0 + duration_ns, device_id=0, stream_id=stream))


def install(monkeypatch) -> FakeCupti:
    """Makes the profiler believe it runs on a GPU with cupti-python: it gets a FakeCupti."""
    cupti = FakeCupti()
    monkeypatch.setattr(profiler_cuda, "on_real_gpu", lambda: True)
    monkeypatch.setattr(profiler_cuda, "load_cupti", lambda: cupti)
    monkeypatch.setattr(profiler_cuda, "_registered_with", None)
    return cupti


def report_interpreted_launches(monkeypatch, cupti: FakeCupti) -> None:
    """Has ``cupti`` see every Triton kernel the emulated device runs, as CUPTI sees every
    cuLaunchKernel: one kernel record, named after the kernel function, on the current
    stream, made from inside the op that launches it."""
    from triton.runtime import interpreter

    from tritongrad.runtime import streams

    run = interpreter.GridExecutor.__call__

    def launch(self, *args, **kwargs):
        handle = streams.current_stream_handle(streams.current_device())
        cupti.launch(self.fn.__name__, stream=handle)
        return run(self, *args, **kwargs)

    monkeypatch.setattr(interpreter.GridExecutor, "__call__", launch)


def select_timing(timing: str, monkeypatch) -> FakeCupti | None:
    """Puts ``profile(use_cuda=True)`` on one timing path (Note [profiling both timing paths]).

    "events": cupti-python cannot be imported, so CUDA events time each op (on a GPU the
    profiler then warns; the warning is silenced here, its own test checks it). "cupti": on a
    GPU the real CUPTI (skipped without cupti-python), returning None; on the emulated device
    a FakeCupti that sees the interpreted kernels, returned.
    """
    if timing == "events":
        monkeypatch.setitem(sys.modules, "cupti", None)  # `import cupti` raises ImportError
        # (pytest restores the warning filters after each test, setup included)
        warnings.filterwarnings("ignore", message=r".*pip install cupti-python",
                                category=UserWarning)
        return None
    assert timing == "cupti", timing
    if profiler_cuda.on_real_gpu():
        pytest.importorskip("cupti", reason="needs cupti-python (pip install cupti-python)")
        return None
    cupti = install(monkeypatch)
    report_interpreted_launches(monkeypatch, cupti)
    return cupti
