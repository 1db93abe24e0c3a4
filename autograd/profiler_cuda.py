"""Device activity for ``profile(use_cuda=True)`` on a real GPU, through CUPTI.

CUPTI's activity API hands back, in buffers, one record per kernel, copy and memset the GPU ran
(device start and end, device, stream, name) and one per driver or runtime API call (the CPU
interval of the call), tied together by a correlation id. To know which op queued a kernel,
the profiler pushes an *external correlation id* (the op's record number) while each op runs:
CUPTI then writes an ``EXTERNAL_CORRELATION`` record pairing every API call made meanwhile,
``cuLaunchKernel`` included, with the innermost id pushed. That is how Kineto attributes
kernels to ops in PyTorch; it works for Triton's launches, which go through the driver API
(``cuLaunchKernel``), because CUPTI sees driver calls as well as runtime calls.

Timestamps: CUPTI's clock is read (``get_timestamp``) next to ``time.perf_counter_ns`` when
tracing starts; the difference places device intervals on the profile's timeline.

The ``cupti-python`` package (module ``cupti.cupti``) is imported only here, and only when a
profile with CUDA activity starts on a real GPU. On tritongrad's emulated device there are
no kernels for CUPTI to see: the profiler times ops with (emulated) CUDA events instead.
"""

from __future__ import annotations

import contextlib
import time

from .nvprof import _demangle
from .profiler_util import DeviceSpan, Interval

__all__ = ["CuptiTrace", "load_cupti", "on_real_gpu"]

INSTALL_HINT = "pip install cupti-python"

# CUpti_ActivityKind members enabled while tracing (cupti.cupti.ActivityKind names).
DEVICE_KINDS = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET")
API_KINDS = ("DRIVER", "RUNTIME", "EXTERNAL_CORRELATION")

_BUFFER_BYTES = 8 << 20

# CUPTI takes one pair of buffer callbacks per process: they are registered once and hand the
# records to the trace now running (at most one: CUPTI's activity state is process-wide).
_registered_with = None  # the cupti module the callbacks were registered with
_active: CuptiTrace | None = None


def on_real_gpu() -> bool:
    """Whether CUDA work runs on a GPU (not tritongrad's emulated device)."""
    from ..runtime import driver
    return not driver.is_emulated()


def load_cupti():
    """The ``cupti.cupti`` bindings module, or an ImportError that says how to install it."""
    try:
        from cupti import cupti
    except ImportError as e:
        raise ImportError(f"profile(use_cuda=True) traces GPU kernels through CUPTI, which "
                          f"needs the cupti-python package: {INSTALL_HINT} (it uses the "
                          f"CUPTI library of the nvidia-cuda-cupti wheel or the CUDA "
                          f"toolkit)") from e
    return cupti


def _buffer_requested():
    return _BUFFER_BYTES, 0  # 0: as many records as fit


def _buffer_completed(activities) -> None:
    trace = _active
    if trace is not None:
        trace._take(activities)


class CuptiTrace:
    """Collects kernel, copy and memset records, each tied to the op that queued it.

    Use: ``start()``; ``push(n)`` / ``pop()`` around op number ``n`` (nested ops push again:
    a launch belongs to the innermost); ``stop(t0_ns)`` returns ``{n: [DeviceSpan, ...]}``
    with intervals in microseconds from ``t0_ns`` (a ``time.perf_counter_ns`` reading).

    Args:
        cupti: the ``cupti.cupti`` module (tests pass a double with the same functions).
    """

    def __init__(self, cupti):
        self._cupti = cupti
        self._ext_kind = int(cupti.ExternalCorrelationKind.CUSTOM0)
        self._kinds = [getattr(cupti.ActivityKind, k) for k in DEVICE_KINDS + API_KINDS]
        self._device: list = []  # (kind, correlation id, start, end, device, stream, name)
        self._calls: dict = {}  # correlation id -> (start, end) of the API call (CUPTI ns)
        self._external: dict = {}  # correlation id -> external id (the op's number)
        self._depth = 0
        self._offset = 0  # CUPTI clock minus perf_counter_ns
        # bound once: push/pop run on every op while profiling
        self._push = cupti.activity_push_external_correlation_id
        self._pop = cupti.activity_pop_external_correlation_id

    def start(self) -> None:
        global _registered_with, _active
        if _active is not None:
            raise RuntimeError("CUPTI activity tracing is already running for another "
                               "profile (CUPTI's activity state is process-wide)")
        c = self._cupti
        if _registered_with is not c:
            c.activity_register_callbacks(_buffer_requested, _buffer_completed)
            _registered_with = c
        _active = self
        try:
            for kind in self._kinds:
                c.activity_enable(kind)
        except Exception:
            self._disable()
            raise
        before = c.get_timestamp()
        now = time.perf_counter_ns()
        after = c.get_timestamp()
        self._offset = (before + after) // 2 - now

    def push(self, ext_id: int) -> None:
        self._push(self._ext_kind, ext_id)
        self._depth += 1

    def pop(self) -> None:
        self._pop(self._ext_kind)
        self._depth -= 1

    def stop(self, t0_ns: int) -> dict:
        """Flushes CUPTI's buffers, stops tracing and returns the spans per op number."""
        while self._depth > 0:  # ranges left open when profiling ended
            self.pop()
        try:
            # forced: also the buffers of kernels still running (none: the devices were synced)
            self._cupti.activity_flush_all(int(self._cupti.ActivityFlag.FLUSH_FORCED))
        finally:
            self._disable()
        base = self._offset + t0_ns

        def us(t: int) -> float:
            return (t - base) / 1e3

        spans: dict = {}
        for kind, corr, start, end, device, stream, name in self._device:
            ext = self._external.get(corr)
            if ext is None:
                continue  # queued by no profiled op (another thread, or before the profile)
            call = self._calls.get(corr)
            launch = Interval(us(call[0]), us(call[1])) if call is not None else None
            spans.setdefault(ext, []).append(
                DeviceSpan(_demangle(name) if kind == "kernel" else name, device, stream,
                           Interval(us(start), us(end)), kind, launch))
        return spans

    def _disable(self) -> None:
        global _active
        for kind in self._kinds:
            # a kind that was never enabled may refuse: disabling the others still matters
            with contextlib.suppress(Exception):
                self._cupti.activity_disable(kind)
        _active = None

    def _take(self, activities) -> None:
        """Copies what is needed out of a completed buffer (its records do not outlive it)."""
        K = self._cupti.ActivityKind
        for a in activities:
            kind = a.kind
            if kind == K.EXTERNAL_CORRELATION:
                if a.external_kind == self._ext_kind:
                    self._external[a.correlation_id] = a.external_id
            elif kind == K.DRIVER or kind == K.RUNTIME:
                self._calls[a.correlation_id] = (a.start, a.end)
            elif kind == K.CONCURRENT_KERNEL or kind == K.KERNEL:
                self._device.append(("kernel", a.correlation_id, a.start, a.end, a.device_id,
                                     a.stream_id, a.name))
            elif kind == K.MEMCPY:
                direction = self._cupti.ActivityMemcpyKind(a.copy_kind).name
                self._device.append(("memcpy", a.correlation_id, a.start, a.end, a.device_id,
                                     a.stream_id, f"Memcpy {direction}"))
            elif kind == K.MEMSET:
                self._device.append(("memset", a.correlation_id, a.start, a.end, a.device_id,
                                     a.stream_id, "Memset"))
