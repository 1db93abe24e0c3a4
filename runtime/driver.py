"""The CUDA driver, behind one small interface: the only module that imports ``cuda.bindings``.

Everything above this module (streams, events, the allocator's raw memory, copies, the Triton
binding) talks to a ``Driver``: plain Python ints for device ordinals, pointers, stream and
event handles, and ``CudaError`` for every failed call. Two implementations:

- ``CudaDriver``: the real one, over ``cuda.bindings.driver`` (cuda-python). One primary
  context per device (``cuDevicePrimaryCtxRetain``), made current on the calling thread
  (``cuCtxSetCurrent``) before each call that needs it. Every ``CUresult`` is checked.
- ``EmulatedDriver``: selected when no real GPU is present and ``TRITONGRAD_EMULATE_CUDA=1``.
  One device whose memory is host memory (NumPy buffers; pointers are real host addresses, so
  Triton's interpreter loads and stores through them), copies are ``ctypes.memmove``, streams
  run synchronously, events complete when recorded and are timed with ``time.perf_counter``.
  It checks what the real driver checks where that is cheap (unknown handles, copies that
  leave an allocation, timing on events without timing), with the same error messages.

Note [stream capture]: a CUDA graph is recorded by capturing a stream
(``cuStreamBeginCapture`` .. ``cuStreamEndCapture``): the kernels, device copies and memsets
queued on it are recorded, not run, and each ``cuGraphLaunch`` of the instantiated graph runs
them again with the same arguments (device pointers and scalars). What would make the host
wait for or read the capturing stream (``cuStreamSynchronize``, ``cuStreamQuery``,
``cuCtxSynchronize``, copies to or from pageable host memory) fails with
``CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`` ("operation not permitted when stream is
capturing") and invalidates the capture, so that ``cuStreamEndCapture`` fails too. Copies to
or from page-locked memory (``host_alloc``) are captured like device copies: each replay reads
or writes the same host bytes again. The emulated
driver does the same: its copies and memsets, and the interpreted kernels it is handed
(``launch``, what kernels/triton/_launch.py calls while a capture is underway), are kept as
callables of their arguments and replayed in order. ``capturing`` counts the captures underway
in the process, so the launch path tests one attribute when none is.

Nothing touches the driver at import time: ``get_driver()`` probes once, on first use. A
missing ``libcuda`` makes cuda-python *raise* (``DynamicLibNotFoundError``) instead of
returning an error code; the probe catches everything so that ``is_available()`` is simply
False on machines without a GPU. A real GPU always wins over the emulation.
"""

from __future__ import annotations

import bisect
import ctypes
import fractions
import functools
import itertools
import numbers
import os
import re
import threading
import time
import warnings

import numpy as np

__all__ = [
    "CAPTURE_MODES",
    "EMULATED_DEVICE_NAME",
    "CudaDriver",
    "CudaError",
    "CudaUnavailableError",
    "Driver",
    "EmulatedDriver",
    "device_count",
    "get_driver",
    "is_available",
    "is_emulated",
    "is_initialized",
    "why_no_gpu",
]

EMULATED_DEVICE_NAME = "tritongrad emulated device"
EMULATED_MULTIPROCESSORS = 132
_EMULATED_MEMORY_DEFAULT = 16 << 30  # what the emulated device reports as its total memory
_EMULATED_ALIGN = 256  # cuMemAlloc's alignment; emulated pointers keep it
_HOST_PAGE = 4096  # cuMemHostAlloc's memory starts on a page


class AcceleratorError(RuntimeError):
    """Exception raised while executing on device (PyTorch's ``torch.AcceleratorError``: the
    base of the CUDA errors, so ``except tg.AcceleratorError`` catches them)."""


class CudaError(AcceleratorError):
    """A failed CUDA driver call: ``CUDA_ERROR_X: <description> (in cuFunction)``.

    Attributes:
        code: the ``CUresult`` name (``"CUDA_ERROR_OUT_OF_MEMORY"``), or None for errors found
            by tritongrad itself (an invalid device ordinal, say).
    """

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.code = code


def check_runtime_result(res: int) -> None:
    """Raises ``CudaError("<cudaGetErrorString> (<res>)")`` unless ``res`` is ``cudaSuccess``.

    ``res`` is a CUDA *runtime* API result (``cudaError_t``, an int), as
    ``torch.cuda.check_error`` takes; ``.code`` is its name (``"cudaErrorMemoryAllocation"``).
    Without cuda-python the description is the number alone.
    """
    res = int(res)
    if res == 0:
        return
    try:
        from cuda.bindings import runtime as rt

        err = rt.cudaError_t(res)
        name, desc = err.name, rt.cudaGetErrorString(err)[1].decode()
    except Exception:  # noqa: BLE001 - no cuda-python, or a code it does not know
        name, desc = None, "unknown error"
    raise CudaError(f"{desc} ({res})", name)


class CudaUnavailableError(RuntimeError):
    """CUDA was asked for on a machine where ``tg.cuda.is_available()`` is False."""


# The descriptions the emulated driver uses, in cuGetErrorString's words.
_DESCRIPTIONS = {
    "CUDA_ERROR_INVALID_VALUE": "invalid argument",
    "CUDA_ERROR_OUT_OF_MEMORY": "out of memory",
    "CUDA_ERROR_INVALID_DEVICE": "invalid device ordinal",
    "CUDA_ERROR_INVALID_HANDLE": "invalid resource handle",
    "CUDA_ERROR_NOT_READY": "device not ready",
    "CUDA_ERROR_ILLEGAL_STATE": "the operation cannot be performed in the present state",
    "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED": "operation not permitted when stream is capturing",
    "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED":
        "operation failed due to a previous error during capture",
    "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED": "operation not permitted on an event last recorded "
                                           "in a capturing stream",
}

# cuStreamBeginCapture's modes (CUstreamCaptureMode), by PyTorch's names for them.
CAPTURE_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}


def _error(code: str, fn: str, description: str | None = None, detail: str = "") -> CudaError:
    desc = description or _DESCRIPTIONS.get(code, "unknown error")
    where = f"in {fn}: {detail}" if detail else f"in {fn}"
    return CudaError(f"{code}: {desc} ({where})", code)


class _Ranges:
    """Disjoint address ranges (start -> size), to find the range holding an address."""

    def __init__(self):
        self._starts: list[int] = []  # sorted
        self._sizes: dict[int, int] = {}

    def add(self, start: int, size: int) -> None:
        bisect.insort(self._starts, start)
        self._sizes[start] = size

    def remove(self, start: int) -> int | None:
        """Forgets the range that starts at ``start``; its size, or None if there is none."""
        size = self._sizes.pop(start, None)
        if size is not None:
            self._starts.remove(start)
        return size

    def find(self, ptr: int, nbytes: int = 1) -> int | None:
        """The start of the range holding bytes [ptr, ptr + nbytes), or None."""
        i = bisect.bisect_right(self._starts, ptr) - 1
        if i < 0:
            return None
        start = self._starts[i]
        return start if ptr + nbytes <= start + self._sizes[start] else None

    def contains(self, ptr: int, nbytes: int = 1) -> bool:
        return self.find(ptr, nbytes) is not None


class Driver:
    """The driver interface that streams, events, the allocator and copies use.

    All arguments and results are Python ints (device ordinals, device pointers, host
    addresses, stream and event handles). Stream handle 0 is the device's legacy default
    stream. Each method names the driver call it wraps.
    """

    emulated: bool = False

    # -- devices ---------------------------------------------------------------------------
    def device_count(self) -> int:  # cuDeviceGetCount
        raise NotImplementedError

    def name(self, dev: int) -> str:  # cuDeviceGetName
        raise NotImplementedError

    def capability(self, dev: int) -> tuple[int, int]:  # cuDeviceGetAttribute (CC major/minor)
        raise NotImplementedError

    def multiprocessor_count(self, dev: int) -> int:  # cuDeviceGetAttribute (SM count)
        raise NotImplementedError

    def can_access_peer(self, dev: int, peer: int) -> bool:  # cuDeviceCanAccessPeer
        raise NotImplementedError

    def uuid(self, dev: int) -> str:  # cuDeviceGetUuid, as NVML names it: "GPU-xxxxxxxx-..."
        raise NotImplementedError

    def total_memory(self, dev: int) -> int:  # cuDeviceTotalMem
        raise NotImplementedError

    def mem_get_info(self, dev: int) -> tuple[int, int]:  # cuMemGetInfo -> (free, total)
        raise NotImplementedError

    def activate(self, dev: int) -> None:  # cuCtxSetCurrent(primary context of dev)
        raise NotImplementedError

    def ctx_synchronize(self, dev: int) -> None:  # cuCtxSynchronize
        raise NotImplementedError

    # -- memory ----------------------------------------------------------------------------
    def mem_alloc(self, dev: int, nbytes: int) -> int | None:
        """cuMemAlloc; returns None (not an error) when the device is out of memory."""
        raise NotImplementedError

    def mem_free(self, dev: int, ptr: int) -> None:  # cuMemFree
        raise NotImplementedError

    def host_alloc(self, dev: int, nbytes: int) -> int | None:
        """cuMemHostAlloc (portable page-locked host memory, with ``dev``'s context current);
        returns None when the host is out of page-locked memory."""
        raise NotImplementedError

    def host_free(self, dev: int, ptr: int) -> None:  # cuMemFreeHost
        raise NotImplementedError

    def is_pinned(self, ptr: int, nbytes: int = 1) -> bool:
        """Whether host bytes [ptr, ptr + nbytes) lie in one allocation of ``host_alloc``
        (the driver's own bookkeeping of what it handed out: no driver call)."""
        return self._pinned.contains(ptr, nbytes)

    def memcpy_htod(self, dev, dst: int, src_host: int, nbytes: int, stream: int) -> None:
        raise NotImplementedError  # cuMemcpyHtoDAsync

    def memcpy_dtoh(self, dev, dst_host: int, src: int, nbytes: int, stream: int) -> None:
        raise NotImplementedError  # cuMemcpyDtoHAsync

    def memcpy_dtod(self, dev, dst: int, src: int, nbytes: int, stream: int) -> None:
        raise NotImplementedError  # cuMemcpyDtoDAsync

    def memcpy_peer(self, dst_dev, dst: int, src_dev, src: int, nbytes: int, stream: int) -> None:
        raise NotImplementedError  # cuMemcpyPeerAsync; ``stream`` belongs to src_dev

    def memset_d8(self, dev, ptr: int, value: int, nbytes: int, stream: int) -> None:
        raise NotImplementedError  # cuMemsetD8Async

    # -- streams ---------------------------------------------------------------------------
    def stream_create(self, dev: int, priority: int = 0) -> int:
        raise NotImplementedError  # cuStreamCreateWithPriority(CU_STREAM_NON_BLOCKING)

    def stream_destroy(self, dev: int, stream: int) -> None:  # cuStreamDestroy
        raise NotImplementedError

    def stream_query(self, dev: int, stream: int) -> bool:  # cuStreamQuery
        raise NotImplementedError

    def stream_synchronize(self, dev: int, stream: int) -> None:  # cuStreamSynchronize
        raise NotImplementedError

    def stream_wait_event(self, dev: int, stream: int, event: int) -> None:  # cuStreamWaitEvent
        raise NotImplementedError

    def stream_priority_range(self, dev: int) -> tuple[int, int]:
        raise NotImplementedError  # cuCtxGetStreamPriorityRange -> (least, greatest)

    # -- events ----------------------------------------------------------------------------
    def event_create(self, dev: int, timing: bool = False, blocking: bool = False,
                     interprocess: bool = False) -> int:  # cuEventCreate
        raise NotImplementedError

    def event_record(self, dev: int, event: int, stream: int) -> None:  # cuEventRecord
        raise NotImplementedError

    def event_query(self, dev: int, event: int) -> bool:  # cuEventQuery
        raise NotImplementedError

    def event_synchronize(self, dev: int, event: int) -> None:  # cuEventSynchronize
        raise NotImplementedError

    def event_elapsed_time(self, dev: int, start: int, end: int) -> float:  # cuEventElapsedTime
        raise NotImplementedError

    def event_destroy(self, dev: int, event: int) -> None:  # cuEventDestroy
        raise NotImplementedError

    # -- graphs (Note [stream capture]) ---------------------------------------------------
    capturing: int = 0  # captures underway in the process: launch hooks test only this

    def stream_begin_capture(self, dev: int, stream: int, mode: str = "global") -> None:
        raise NotImplementedError  # cuStreamBeginCapture(stream, CAPTURE_MODES[mode])

    def stream_end_capture(self, dev: int, stream: int) -> int:
        raise NotImplementedError  # cuStreamEndCapture -> CUgraph

    def stream_is_capturing(self, dev: int, stream: int) -> bool:
        raise NotImplementedError  # cuStreamIsCapturing != CU_STREAM_CAPTURE_STATUS_NONE

    def graph_instantiate(self, dev: int, graph: int) -> int:
        raise NotImplementedError  # cuGraphInstantiate(graph, 0) -> CUgraphExec

    def graph_launch(self, dev: int, graph_exec: int, stream: int) -> None:
        raise NotImplementedError  # cuGraphLaunch

    def graph_exec_destroy(self, dev: int, graph_exec: int) -> None:
        raise NotImplementedError  # cuGraphExecDestroy

    def graph_destroy(self, dev: int, graph: int) -> None:
        raise NotImplementedError  # cuGraphDestroy

    def graph_node_count(self, dev: int, graph: int) -> int:
        raise NotImplementedError  # cuGraphGetNodes(graph, 0) -> count

    def graph_debug_dot_print(self, dev: int, graph: int, path: str) -> None:
        raise NotImplementedError  # cuGraphDebugDotPrint(graph, path, VERBOSE)

    # -- profiler --------------------------------------------------------------------------
    def profiler_start(self, dev: int) -> None:  # cuProfilerStart
        raise NotImplementedError

    def profiler_stop(self, dev: int) -> None:  # cuProfilerStop
        raise NotImplementedError


# ------------------------------------------------------------------------------------------
# The real driver
# ------------------------------------------------------------------------------------------
class _ContextState(threading.local):
    """Per thread: ``dev``, the device whose primary context this thread made current (None
    before the first)."""

    dev: int | None = None


class CudaDriver(Driver):
    """The driver interface over ``cuda.bindings.driver``; every CUresult is checked."""

    emulated = False

    def __init__(self):
        from cuda.bindings import driver as cu  # the one import of cuda.bindings

        self.cu = cu
        self._SUCCESS = cu.CUresult.CUDA_SUCCESS
        self._NOT_READY = cu.CUresult.CUDA_ERROR_NOT_READY
        self._OOM = cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY
        self._lock = threading.Lock()
        self._tls = _ContextState()
        self._devices: dict[int, object] = {}  # ordinal -> CUdevice
        self._contexts: dict[int, object] = {}  # ordinal -> retained primary CUcontext
        self._count: int | None = None
        self._pinned = _Ranges()  # what host_alloc handed out
        self._check(cu.cuInit(0), "cuInit")

    # -- error checking --------------------------------------------------------------------
    def _check(self, result, fn: str):
        """Returns the values after the CUresult, raising CudaError unless it is CUDA_SUCCESS."""
        err, values = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
        if err != self._SUCCESS:
            raise self._error(err, fn)
        if not values:
            return None
        return values[0] if len(values) == 1 else values

    def _error(self, err, fn: str) -> CudaError:
        cu = self.cu
        try:
            code = cu.CUresult(err).name
        except Exception:  # noqa: BLE001 - an unknown code still gets reported
            code = f"CUresult {int(err)}"
        try:
            e2, desc = cu.cuGetErrorString(err)
            desc = desc.decode() if e2 == self._SUCCESS and desc else None
        except Exception:  # noqa: BLE001 - fall back to the built-in descriptions
            desc = None
        return _error(code, fn, desc)

    def _ready(self, result, fn: str) -> bool:
        err = result[0] if isinstance(result, tuple) else result
        if err == self._NOT_READY:
            return False
        self._check(result, fn)
        return True

    # -- devices and contexts --------------------------------------------------------------
    def _device(self, dev: int):
        d = self._devices.get(dev)
        if d is None:
            d = self._devices[dev] = self._check(self.cu.cuDeviceGet(dev), "cuDeviceGet")
        return d

    def _context(self, dev: int):
        ctx = self._contexts.get(dev)
        if ctx is None:
            with self._lock:
                ctx = self._contexts.get(dev)
                if ctx is None:  # retained once per process, released never (as PyTorch does)
                    ctx = self._check(self.cu.cuDevicePrimaryCtxRetain(self._device(dev)),
                                      "cuDevicePrimaryCtxRetain")
                    self._contexts[dev] = ctx
        return ctx

    def activate(self, dev: int) -> None:
        if self._tls.dev != dev:  # (asked at every launch: an attribute, not a getattr call)
            self._check(self.cu.cuCtxSetCurrent(self._context(dev)), "cuCtxSetCurrent")
            self._tls.dev = dev

    def driver_version(self) -> tuple[int, int]:
        """The CUDA version the driver supports (``cuDriverGetVersion``), e.g. ``(13, 0)``."""
        v = int(self._check(self.cu.cuDriverGetVersion(), "cuDriverGetVersion"))
        return v // 1000, v % 1000 // 10

    def device_count(self) -> int:
        if self._count is None:  # fixed for the life of the process
            self._count = int(self._check(self.cu.cuDeviceGetCount(), "cuDeviceGetCount"))
        return self._count

    def name(self, dev: int) -> str:
        raw = self._check(self.cu.cuDeviceGetName(256, self._device(dev)), "cuDeviceGetName")
        return bytes(raw).split(b"\0", 1)[0].decode()

    def capability(self, dev: int) -> tuple[int, int]:
        a = self.cu.CUdevice_attribute
        d = self._device(dev)
        major = self._check(self.cu.cuDeviceGetAttribute(
            a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d), "cuDeviceGetAttribute")
        minor = self._check(self.cu.cuDeviceGetAttribute(
            a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d), "cuDeviceGetAttribute")
        return int(major), int(minor)

    def multiprocessor_count(self, dev: int) -> int:
        return int(self._check(self.cu.cuDeviceGetAttribute(
            self.cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            self._device(dev)), "cuDeviceGetAttribute"))

    def uuid(self, dev: int) -> str:
        raw = bytes(self._check(self.cu.cuDeviceGetUuid(self._device(dev)),
                                "cuDeviceGetUuid").bytes).hex()
        return f"GPU-{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:32]}"

    def can_access_peer(self, dev: int, peer: int) -> bool:
        return bool(self._check(self.cu.cuDeviceCanAccessPeer(
            self._device(dev), self._device(peer)), "cuDeviceCanAccessPeer"))

    def total_memory(self, dev: int) -> int:
        return int(self._check(self.cu.cuDeviceTotalMem(self._device(dev)), "cuDeviceTotalMem"))

    def mem_get_info(self, dev: int) -> tuple[int, int]:
        self.activate(dev)
        free, total = self._check(self.cu.cuMemGetInfo(), "cuMemGetInfo")
        return int(free), int(total)

    def ctx_synchronize(self, dev: int) -> None:
        self.activate(dev)
        self._check(self.cu.cuCtxSynchronize(), "cuCtxSynchronize")

    # -- memory ----------------------------------------------------------------------------
    def mem_alloc(self, dev: int, nbytes: int) -> int | None:
        self.activate(dev)
        if self.capturing:
            result = self._mem_alloc_while_capturing(nbytes)
        else:
            result = self.cu.cuMemAlloc(nbytes)
        if result[0] == self._OOM:
            return None
        return int(self._check(result, "cuMemAlloc"))

    def _mem_alloc_while_capturing(self, nbytes: int):
        # cuMemAlloc is a "potentially unsafe" call that a global-mode capture forbids on this
        # thread. It is safe for a graph's pool: the memory is never freed before the replays
        # (the allocator frees no segment during a capture), so this thread switches to the
        # relaxed mode for the call, as PyTorch's caching allocator does.
        cu = self.cu
        relaxed = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        prev = self._check(cu.cuThreadExchangeStreamCaptureMode(relaxed),
                           "cuThreadExchangeStreamCaptureMode")
        try:
            return cu.cuMemAlloc(nbytes)
        finally:
            self._check(cu.cuThreadExchangeStreamCaptureMode(prev),
                        "cuThreadExchangeStreamCaptureMode")

    def mem_free(self, dev: int, ptr: int) -> None:
        self.activate(dev)
        self._check(self.cu.cuMemFree(self.cu.CUdeviceptr(ptr)), "cuMemFree")

    def host_alloc(self, dev: int, nbytes: int) -> int | None:
        cu = self.cu
        self.activate(dev)
        result = cu.cuMemHostAlloc(nbytes, cu.CU_MEMHOSTALLOC_PORTABLE)
        if result[0] == self._OOM:
            return None
        ptr = int(self._check(result, "cuMemHostAlloc"))
        with self._lock:
            self._pinned.add(ptr, nbytes)
        return ptr

    def host_free(self, dev: int, ptr: int) -> None:
        self.activate(dev)
        self._check(self.cu.cuMemFreeHost(ptr), "cuMemFreeHost")
        with self._lock:
            self._pinned.remove(ptr)

    def memcpy_htod(self, dev, dst, src_host, nbytes, stream) -> None:
        cu = self.cu
        self.activate(dev)
        if self.capturing and not self._pinned.contains(src_host, nbytes):
            self._refuse_while_capturing(dev, stream, "cuMemcpyHtoDAsync")
        self._check(cu.cuMemcpyHtoDAsync(cu.CUdeviceptr(dst), src_host, nbytes,
                                         cu.CUstream(stream)), "cuMemcpyHtoDAsync")

    def memcpy_dtoh(self, dev, dst_host, src, nbytes, stream) -> None:
        cu = self.cu
        self.activate(dev)
        if self.capturing and not self._pinned.contains(dst_host, nbytes):
            self._refuse_while_capturing(dev, stream, "cuMemcpyDtoHAsync")
        self._check(cu.cuMemcpyDtoHAsync(dst_host, cu.CUdeviceptr(src), nbytes,
                                         cu.CUstream(stream)), "cuMemcpyDtoHAsync")

    def memcpy_dtod(self, dev, dst, src, nbytes, stream) -> None:
        cu = self.cu
        self.activate(dev)
        self._check(cu.cuMemcpyDtoDAsync(cu.CUdeviceptr(dst), cu.CUdeviceptr(src), nbytes,
                                         cu.CUstream(stream)), "cuMemcpyDtoDAsync")

    def memcpy_peer(self, dst_dev, dst, src_dev, src, nbytes, stream) -> None:
        cu = self.cu
        self.activate(src_dev)
        self._check(cu.cuMemcpyPeerAsync(cu.CUdeviceptr(dst), self._context(dst_dev),
                                         cu.CUdeviceptr(src), self._context(src_dev), nbytes,
                                         cu.CUstream(stream)), "cuMemcpyPeerAsync")

    def memset_d8(self, dev, ptr, value, nbytes, stream) -> None:
        cu = self.cu
        self.activate(dev)
        self._check(cu.cuMemsetD8Async(cu.CUdeviceptr(ptr), value, nbytes, cu.CUstream(stream)),
                    "cuMemsetD8Async")

    # -- streams ---------------------------------------------------------------------------
    def stream_create(self, dev: int, priority: int = 0) -> int:
        cu = self.cu
        self.activate(dev)
        # Non-blocking, as PyTorch's pool streams: no implicit sync with the legacy stream 0.
        flags = int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)
        s = self._check(cu.cuStreamCreateWithPriority(flags, priority),
                        "cuStreamCreateWithPriority")
        return int(s)

    def stream_destroy(self, dev: int, stream: int) -> None:
        self.activate(dev)
        self._check(self.cu.cuStreamDestroy(self.cu.CUstream(stream)), "cuStreamDestroy")

    def stream_query(self, dev: int, stream: int) -> bool:
        self.activate(dev)
        return self._ready(self.cu.cuStreamQuery(self.cu.CUstream(stream)), "cuStreamQuery")

    def stream_synchronize(self, dev: int, stream: int) -> None:
        self.activate(dev)
        self._check(self.cu.cuStreamSynchronize(self.cu.CUstream(stream)), "cuStreamSynchronize")

    def stream_wait_event(self, dev: int, stream: int, event: int) -> None:
        cu = self.cu
        self.activate(dev)
        self._check(cu.cuStreamWaitEvent(cu.CUstream(stream), cu.CUevent(event), 0),
                    "cuStreamWaitEvent")

    def stream_priority_range(self, dev: int) -> tuple[int, int]:
        self.activate(dev)
        least, greatest = self._check(self.cu.cuCtxGetStreamPriorityRange(),
                                      "cuCtxGetStreamPriorityRange")
        return int(least), int(greatest)

    # -- events ----------------------------------------------------------------------------
    def event_create(self, dev, timing=False, blocking=False, interprocess=False) -> int:
        f = self.cu.CUevent_flags
        flags = 0 if timing else int(f.CU_EVENT_DISABLE_TIMING)
        if blocking:
            flags |= int(f.CU_EVENT_BLOCKING_SYNC)
        if interprocess:
            flags |= int(f.CU_EVENT_INTERPROCESS)
        self.activate(dev)
        return int(self._check(self.cu.cuEventCreate(flags), "cuEventCreate"))

    def event_record(self, dev, event, stream) -> None:
        cu = self.cu
        self.activate(dev)
        self._check(cu.cuEventRecord(cu.CUevent(event), cu.CUstream(stream)), "cuEventRecord")

    def event_query(self, dev, event) -> bool:
        self.activate(dev)
        return self._ready(self.cu.cuEventQuery(self.cu.CUevent(event)), "cuEventQuery")

    def event_synchronize(self, dev, event) -> None:
        self.activate(dev)
        self._check(self.cu.cuEventSynchronize(self.cu.CUevent(event)), "cuEventSynchronize")

    def event_elapsed_time(self, dev, start, end) -> float:
        cu = self.cu
        self.activate(dev)
        return float(self._check(cu.cuEventElapsedTime(cu.CUevent(start), cu.CUevent(end)),
                                 "cuEventElapsedTime"))

    def event_destroy(self, dev, event) -> None:
        self.activate(dev)
        self._check(self.cu.cuEventDestroy(self.cu.CUevent(event)), "cuEventDestroy")

    # -- graphs ----------------------------------------------------------------------------
    def _refuse_while_capturing(self, dev: int, stream: int, fn: str) -> None:
        """Copies between pageable host memory and a capturing stream would be recorded with
        a host buffer that is gone by the replay (or are refused by the driver, depending on
        the release): refused here, in the driver's words, before they reach it. (Page-locked
        memory from ``host_alloc`` can take part: its copies become graph nodes that read or
        write the same host bytes at every replay.)"""
        if self.stream_is_capturing(dev, stream):
            raise _error("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", fn)

    def stream_begin_capture(self, dev: int, stream: int, mode: str = "global") -> None:
        cu = self.cu
        self.activate(dev)
        self._check(cu.cuStreamBeginCapture(cu.CUstream(stream),
                                            cu.CUstreamCaptureMode(CAPTURE_MODES[mode])),
                    "cuStreamBeginCapture")
        with self._lock:
            self.capturing += 1

    def stream_end_capture(self, dev: int, stream: int) -> int:
        cu = self.cu
        self.activate(dev)
        try:
            graph = self._check(cu.cuStreamEndCapture(cu.CUstream(stream)), "cuStreamEndCapture")
        finally:  # the capture is over, successful or not
            with self._lock:
                self.capturing -= 1
        return int(graph)

    def stream_is_capturing(self, dev: int, stream: int) -> bool:
        cu = self.cu
        self.activate(dev)
        status = self._check(cu.cuStreamIsCapturing(cu.CUstream(stream)), "cuStreamIsCapturing")
        return int(status) != int(cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE)

    def graph_instantiate(self, dev: int, graph: int) -> int:
        cu = self.cu
        self.activate(dev)
        return int(self._check(cu.cuGraphInstantiate(cu.CUgraph(graph), 0),
                               "cuGraphInstantiate"))

    def graph_launch(self, dev: int, graph_exec: int, stream: int) -> None:
        cu = self.cu
        self.activate(dev)
        self._check(cu.cuGraphLaunch(cu.CUgraphExec(graph_exec), cu.CUstream(stream)),
                    "cuGraphLaunch")

    def graph_exec_destroy(self, dev: int, graph_exec: int) -> None:
        self.activate(dev)
        self._check(self.cu.cuGraphExecDestroy(self.cu.CUgraphExec(graph_exec)),
                    "cuGraphExecDestroy")

    def graph_destroy(self, dev: int, graph: int) -> None:
        self.activate(dev)
        self._check(self.cu.cuGraphDestroy(self.cu.CUgraph(graph)), "cuGraphDestroy")

    def graph_node_count(self, dev: int, graph: int) -> int:
        self.activate(dev)
        _, count = self._check(self.cu.cuGraphGetNodes(self.cu.CUgraph(graph), 0),
                               "cuGraphGetNodes")
        return int(count)

    def graph_debug_dot_print(self, dev: int, graph: int, path: str) -> None:
        cu = self.cu
        self.activate(dev)
        verbose = int(cu.CUgraphDebugDot_flags.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE)
        self._check(cu.cuGraphDebugDotPrint(cu.CUgraph(graph), path.encode(), verbose),
                    "cuGraphDebugDotPrint")

    # -- profiler --------------------------------------------------------------------------
    def profiler_start(self, dev: int) -> None:
        self.activate(dev)
        self._check(self.cu.cuProfilerStart(), "cuProfilerStart")

    def profiler_stop(self, dev: int) -> None:
        self.activate(dev)
        self._check(self.cu.cuProfilerStop(), "cuProfilerStop")


# ------------------------------------------------------------------------------------------
# The emulated driver
# ------------------------------------------------------------------------------------------
# -- the emulated device's environment ----------------------------------------------------
_SIZE_UNITS = {"b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
               "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE_RE = re.compile(r"([+-]?\d+(?:\.\d*)?|[+-]?\.\d+)\s*([a-z]*)", re.IGNORECASE)
_SIZE_FORMS = ("a byte count ('17179869184') or a number and a unit, binary KiB, MiB, GiB, TiB "
               "or decimal KB, MB, GB, TB, case-insensitive ('512MiB', '1.5GiB', '2 GB')")


def _parse_size(name: str, value: str) -> int:
    """Parses the size in bytes an environment variable gives, or raises naming it.

    Accepts a whole byte count (``"1073741824"``, ``"4096B"``) or a number, optionally with a
    fraction, and a unit: binary ``KiB MiB GiB TiB`` or decimal ``KB MB GB TB``;
    case-insensitive, with optional spaces (``"512MiB"``, ``"1.5 GiB"``, ``"2gb"``). A
    fractional result is rounded down to whole bytes (``"0.3KiB"`` is 307). Single letters
    (``"1G"``) and exponents (``"1e9"``) are refused: the first are ambiguous between the
    binary and the decimal unit.

    Args:
        name: the variable's name, for the error message.
        value: its value.

    Raises:
        ValueError: ``value`` is not such a size, or is not at least one byte.
    """
    m = _SIZE_RE.fullmatch(value.strip())
    unit = m and _SIZE_UNITS.get((m.group(2) or "b").lower())
    if not unit or (unit == 1 and "." in m.group(1)):  # a count of bytes must be whole
        raise ValueError(f"{name}={value!r} is not a size: give {_SIZE_FORMS}")
    nbytes = int(fractions.Fraction(m.group(1)) * unit)  # exact, then rounded down
    if nbytes < 1:
        raise ValueError(f"{name}={value!r} is not a positive size: give at least one byte, "
                         f"as {_SIZE_FORMS}")
    return nbytes


def _emulated_memory_from_env() -> int:
    """``TRITONGRAD_EMULATE_CUDA_MEMORY`` in bytes; unset or empty: the 16 GiB default."""
    value = os.environ.get("TRITONGRAD_EMULATE_CUDA_MEMORY", "")
    if not value.strip():  # an empty value (``VAR= cmd``) reads as unset, as in the shell
        return _EMULATED_MEMORY_DEFAULT
    return _parse_size("TRITONGRAD_EMULATE_CUDA_MEMORY", value)


def _emulation_requested() -> bool:
    """Whether ``TRITONGRAD_EMULATE_CUDA`` enables the emulated device: exactly ``"1"`` does.

    Unset, empty and ``"0"`` disable it silently. Any other value (``"true"``, ``"yes"``) also
    leaves it disabled, with a warning, so that a mistyped switch does not silently fall back
    to "CUDA is not available".
    """
    value = os.environ.get("TRITONGRAD_EMULATE_CUDA", "")
    if value == "1":
        return True
    if value not in ("", "0"):
        warnings.warn(f"TRITONGRAD_EMULATE_CUDA={value!r} is ignored: only '1' enables the "
                      f"emulated CUDA device ('0' or unset disables it)", RuntimeWarning,
                      stacklevel=2)
    return False


class _EmulatedCapture:
    """A stream capture underway on the emulated device: the operations recorded so far."""

    __slots__ = ("invalidated", "mode", "ops")

    def __init__(self, mode: str):
        self.mode = mode
        self.ops: list = []
        self.invalidated = False


class EmulatedDriver(Driver):
    """One device whose memory is host memory and whose streams run synchronously.

    Args:
        total_memory: bytes the device reports and allocates up to (default 16 GiB, or
            ``TRITONGRAD_EMULATE_CUDA_MEMORY``, a size such as ``"512MiB"``: see
            ``_parse_size``); going past it gives the real driver's out-of-memory answer, so
            the allocator's retry path runs in CI.

    Raises:
        ValueError: ``total_memory`` is not a positive int, or the variable is not a size.
    """

    emulated = True

    def __init__(self, total_memory: int | None = None):
        if total_memory is None:
            total_memory = _emulated_memory_from_env()
        elif isinstance(total_memory, bool) or not isinstance(total_memory, numbers.Integral) \
                or total_memory < 1:
            raise ValueError(f"EmulatedDriver: total_memory must be a positive number of bytes, "
                             f"got {total_memory!r}")
        self._total = int(total_memory)
        self._used = 0
        self._lock = threading.Lock()
        self._buffers: dict[int, tuple] = {}  # aligned ptr -> (numpy buffer, nbytes)
        self._pinned = _Ranges()  # host_alloc's allocations (page-aligned NumPy buffers)
        self._host_buffers: dict[int, np.ndarray] = {}
        self._bases: list[int] = []  # sorted aligned ptrs, to find the allocation of a pointer
        self._handles = itertools.count(0x7E570000, 0x10)  # fake stream/event handles
        self._streams: set[int] = {0}
        self._events: dict[int, list] = {}  # handle -> [timing, recorded time or None]
        self._captures: dict[int, _EmulatedCapture] = {}  # capturing stream -> its capture
        self._graphs: dict[int, tuple] = {}  # CUgraph handle -> recorded operations
        self._execs: dict[int, tuple] = {}   # CUgraphExec handle -> operations to replay
        self.profiling = False

    def _dev(self, dev, fn: str) -> None:
        if dev != 0:
            raise _error("CUDA_ERROR_INVALID_DEVICE", fn, detail=f"device {dev}")

    def _range(self, ptr: int, nbytes: int, fn: str) -> None:
        """Checks that [ptr, ptr + nbytes) lies inside one live allocation."""
        i = bisect.bisect_right(self._bases, ptr) - 1
        if i >= 0:
            base = self._bases[i]
            size = self._buffers[base][1]
            if ptr + nbytes <= base + size:
                return
        raise _error("CUDA_ERROR_INVALID_VALUE", fn,
                     detail=f"{nbytes} bytes at 0x{ptr:x} are not inside a device allocation")

    def _stream(self, stream: int, fn: str) -> None:
        if stream not in self._streams:
            raise _error("CUDA_ERROR_INVALID_HANDLE", fn, detail=f"stream 0x{stream:x}")

    def _enqueue(self, stream: int, op) -> None:
        """Runs ``op`` now (streams are synchronous), or records it when ``stream`` is
        capturing: the graph's node, run by each replay (Note [stream capture])."""
        capture = self._captures.get(stream) if self.capturing else None
        if capture is None:
            op()
        else:
            capture.ops.append(op)

    def _refuse_while_capturing(self, stream: int | None, fn: str) -> None:
        """What the driver answers a call that would make the host wait for (or read from)
        a capturing stream: an error, and the capture is invalidated. ``stream`` None: a call
        on the whole context, which any capture underway forbids."""
        if stream is None:
            hit = list(self._captures.values())
        else:
            hit = [self._captures[stream]] if stream in self._captures else []
        if hit:
            for capture in hit:
                capture.invalidated = True
            raise _error("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", fn)

    def _event(self, event: int, fn: str) -> list:
        e = self._events.get(event)
        if e is None:
            raise _error("CUDA_ERROR_INVALID_HANDLE", fn, detail=f"event 0x{event:x}")
        return e

    # -- devices ---------------------------------------------------------------------------
    def device_count(self) -> int:
        return 1

    def name(self, dev: int) -> str:
        self._dev(dev, "cuDeviceGetName")
        return EMULATED_DEVICE_NAME

    def capability(self, dev: int) -> tuple[int, int]:
        self._dev(dev, "cuDeviceGetAttribute")
        return (9, 0)

    def multiprocessor_count(self, dev: int) -> int:
        # an H100 SXM's: the emulated device answers as the sm_90 GPU its kernels compile for
        self._dev(dev, "cuDeviceGetAttribute")
        return EMULATED_MULTIPROCESSORS

    def can_access_peer(self, dev: int, peer: int) -> bool:
        # One device: what a single GPU answers, which cannot be its own peer.
        self._dev(dev, "cuDeviceCanAccessPeer")
        self._dev(peer, "cuDeviceCanAccessPeer")
        return False

    def total_memory(self, dev: int) -> int:
        self._dev(dev, "cuDeviceTotalMem")
        return self._total

    def mem_get_info(self, dev: int) -> tuple[int, int]:
        self._dev(dev, "cuMemGetInfo")
        return self._total - self._used, self._total

    def activate(self, dev: int) -> None:
        self._dev(dev, "cuCtxSetCurrent")

    def ctx_synchronize(self, dev: int) -> None:
        self._dev(dev, "cuCtxSynchronize")
        if self.capturing:
            self._refuse_while_capturing(None, "cuCtxSynchronize")

    # -- memory ----------------------------------------------------------------------------
    def mem_alloc(self, dev: int, nbytes: int) -> int | None:
        self._dev(dev, "cuMemAlloc")
        if nbytes <= 0:
            raise _error("CUDA_ERROR_INVALID_VALUE", "cuMemAlloc", detail=f"{nbytes} bytes")
        with self._lock:
            if self._used + nbytes > self._total:
                return None
            buf = np.empty(nbytes + _EMULATED_ALIGN, dtype=np.uint8)
            ptr = -(-buf.ctypes.data // _EMULATED_ALIGN) * _EMULATED_ALIGN
            self._buffers[ptr] = (buf, nbytes)
            bisect.insort(self._bases, ptr)
            self._used += nbytes
        return ptr

    def mem_free(self, dev: int, ptr: int) -> None:
        self._dev(dev, "cuMemFree")
        with self._lock:
            entry = self._buffers.pop(ptr, None)
            if entry is None:
                raise _error("CUDA_ERROR_INVALID_VALUE", "cuMemFree",
                             detail=f"0x{ptr:x} is not a device allocation")
            self._bases.remove(ptr)
            self._used -= entry[1]

    def host_alloc(self, dev: int, nbytes: int) -> int | None:
        self._dev(dev, "cuMemHostAlloc")
        if nbytes <= 0:
            raise _error("CUDA_ERROR_INVALID_VALUE", "cuMemHostAlloc", detail=f"{nbytes} bytes")
        buf = np.empty(nbytes + _HOST_PAGE, dtype=np.uint8)
        ptr = -(-buf.ctypes.data // _HOST_PAGE) * _HOST_PAGE  # page-aligned, as the driver's
        with self._lock:
            self._host_buffers[ptr] = buf
            self._pinned.add(ptr, nbytes)
        return ptr

    def host_free(self, dev: int, ptr: int) -> None:
        self._dev(dev, "cuMemFreeHost")
        with self._lock:
            if self._pinned.remove(ptr) is None:
                raise _error("CUDA_ERROR_INVALID_VALUE", "cuMemFreeHost",
                             detail=f"0x{ptr:x} is not a page-locked host allocation")
            del self._host_buffers[ptr]

    def memcpy_htod(self, dev, dst, src_host, nbytes, stream) -> None:
        self._host_copy(dev, stream, dst, src_host, nbytes, "cuMemcpyHtoDAsync")
        self._enqueue(stream, functools.partial(ctypes.memmove, dst, src_host, nbytes))

    def memcpy_dtoh(self, dev, dst_host, src, nbytes, stream) -> None:
        self._host_copy(dev, stream, src, dst_host, nbytes, "cuMemcpyDtoHAsync")
        self._enqueue(stream, functools.partial(ctypes.memmove, dst_host, src, nbytes))

    def _host_copy(self, dev, stream, device_ptr, host_ptr, nbytes, api) -> None:
        """The checks of a copy between host and device memory (which runs at once, the
        emulated device having no copy engine to queue it on, or is recorded by a capture
        when the host side is page-locked)."""
        self._dev(dev, api)
        self._stream(stream, api)
        if self.capturing and not self._pinned.contains(host_ptr, nbytes):
            self._refuse_while_capturing(stream, api)  # pageable memory: not in a graph
        self._range(device_ptr, nbytes, api)

    def memcpy_dtod(self, dev, dst, src, nbytes, stream) -> None:
        self._dev(dev, "cuMemcpyDtoDAsync")
        self._stream(stream, "cuMemcpyDtoDAsync")
        self._range(src, nbytes, "cuMemcpyDtoDAsync")
        self._range(dst, nbytes, "cuMemcpyDtoDAsync")
        self._enqueue(stream, functools.partial(ctypes.memmove, dst, src, nbytes))

    def memcpy_peer(self, dst_dev, dst, src_dev, src, nbytes, stream) -> None:
        self._dev(dst_dev, "cuMemcpyPeerAsync")
        self.memcpy_dtod(src_dev, dst, src, nbytes, stream)

    def memset_d8(self, dev, ptr, value, nbytes, stream) -> None:
        self._dev(dev, "cuMemsetD8Async")
        self._stream(stream, "cuMemsetD8Async")
        self._range(ptr, nbytes, "cuMemsetD8Async")
        self._enqueue(stream, functools.partial(ctypes.memset, ptr, value & 0xFF, nbytes))

    def launch(self, dev: int, stream: int, kernel) -> None:
        """The emulated ``cuLaunchKernel``: runs ``kernel()`` (a kernel bound to its arguments,
        run by Triton's interpreter) on ``stream``, or records it while the stream captures."""
        self._dev(dev, "cuLaunchKernel")
        self._stream(stream, "cuLaunchKernel")
        self._enqueue(stream, kernel)

    # -- streams ---------------------------------------------------------------------------
    def stream_create(self, dev: int, priority: int = 0) -> int:
        self._dev(dev, "cuStreamCreateWithPriority")
        h = next(self._handles)
        self._streams.add(h)
        return h

    def stream_destroy(self, dev: int, stream: int) -> None:
        self._dev(dev, "cuStreamDestroy")
        self._stream(stream, "cuStreamDestroy")
        if stream:
            self._streams.discard(stream)

    def stream_query(self, dev: int, stream: int) -> bool:
        self._stream(stream, "cuStreamQuery")
        if self.capturing:
            self._refuse_while_capturing(stream, "cuStreamQuery")
        return True

    def stream_synchronize(self, dev: int, stream: int) -> None:
        self._stream(stream, "cuStreamSynchronize")
        if self.capturing:
            self._refuse_while_capturing(stream, "cuStreamSynchronize")

    def stream_wait_event(self, dev: int, stream: int, event: int) -> None:
        self._stream(stream, "cuStreamWaitEvent")
        self._event(event, "cuStreamWaitEvent")

    def stream_priority_range(self, dev: int) -> tuple[int, int]:
        self._dev(dev, "cuCtxGetStreamPriorityRange")
        return (0, -5)  # an H100's range

    # -- events ----------------------------------------------------------------------------
    def event_create(self, dev, timing=False, blocking=False, interprocess=False) -> int:
        self._dev(dev, "cuEventCreate")
        if interprocess and timing:  # as the real driver: interprocess needs DISABLE_TIMING
            raise _error("CUDA_ERROR_INVALID_VALUE", "cuEventCreate",
                         detail="an interprocess event cannot have timing enabled")
        h = next(self._handles)
        self._events[h] = [bool(timing), None]
        return h

    def event_record(self, dev, event, stream) -> None:
        self._stream(stream, "cuEventRecord")
        self._event(event, "cuEventRecord")[1] = time.perf_counter()

    def event_query(self, dev, event) -> bool:
        self._event(event, "cuEventQuery")
        return True

    def event_synchronize(self, dev, event) -> None:
        self._event(event, "cuEventSynchronize")

    def event_elapsed_time(self, dev, start, end) -> float:
        a, b = self._event(start, "cuEventElapsedTime"), self._event(end, "cuEventElapsedTime")
        if not (a[0] and b[0]) or a[1] is None or b[1] is None:
            raise _error("CUDA_ERROR_INVALID_HANDLE", "cuEventElapsedTime")
        return (b[1] - a[1]) * 1e3

    def event_destroy(self, dev, event) -> None:
        self._event(event, "cuEventDestroy")
        del self._events[event]

    # -- graphs ----------------------------------------------------------------------------
    def stream_begin_capture(self, dev: int, stream: int, mode: str = "global") -> None:
        self._dev(dev, "cuStreamBeginCapture")
        self._stream(stream, "cuStreamBeginCapture")
        if mode not in CAPTURE_MODES:
            raise _error("CUDA_ERROR_INVALID_VALUE", "cuStreamBeginCapture", detail=f"mode {mode!r}")
        if stream == 0:  # the legacy stream synchronises with every other: it cannot capture
            raise _error("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "cuStreamBeginCapture")
        with self._lock:
            if stream in self._captures:
                raise _error("CUDA_ERROR_ILLEGAL_STATE", "cuStreamBeginCapture",
                             detail=f"stream 0x{stream:x} is already capturing")
            self._captures[stream] = _EmulatedCapture(mode)
            self.capturing += 1

    def stream_end_capture(self, dev: int, stream: int) -> int:
        self._dev(dev, "cuStreamEndCapture")
        self._stream(stream, "cuStreamEndCapture")
        with self._lock:
            capture = self._captures.pop(stream, None)
            if capture is None:
                raise _error("CUDA_ERROR_ILLEGAL_STATE", "cuStreamEndCapture",
                             detail=f"stream 0x{stream:x} is not capturing")
            self.capturing -= 1
        if capture.invalidated:
            raise _error("CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "cuStreamEndCapture")
        graph = next(self._handles)
        self._graphs[graph] = tuple(capture.ops)
        return graph

    def stream_is_capturing(self, dev: int, stream: int) -> bool:
        self._stream(stream, "cuStreamIsCapturing")
        return stream in self._captures

    def _graph(self, table: dict, handle: int, fn: str) -> tuple:
        ops = table.get(handle)
        if ops is None:
            raise _error("CUDA_ERROR_INVALID_VALUE", fn, detail=f"graph 0x{handle:x}")
        return ops

    def graph_instantiate(self, dev: int, graph: int) -> int:
        self._dev(dev, "cuGraphInstantiate")
        ops = self._graph(self._graphs, graph, "cuGraphInstantiate")
        graph_exec = next(self._handles)
        self._execs[graph_exec] = ops
        return graph_exec

    def graph_launch(self, dev: int, graph_exec: int, stream: int) -> None:
        self._dev(dev, "cuGraphLaunch")
        self._stream(stream, "cuGraphLaunch")
        for op in self._graph(self._execs, graph_exec, "cuGraphLaunch"):
            self._enqueue(stream, op)

    def graph_exec_destroy(self, dev: int, graph_exec: int) -> None:
        self._graph(self._execs, graph_exec, "cuGraphExecDestroy")
        del self._execs[graph_exec]

    def graph_destroy(self, dev: int, graph: int) -> None:
        self._graph(self._graphs, graph, "cuGraphDestroy")
        del self._graphs[graph]

    def graph_node_count(self, dev: int, graph: int) -> int:
        return len(self._graph(self._graphs, graph, "cuGraphGetNodes"))

    def graph_debug_dot_print(self, dev: int, graph: int, path: str) -> None:
        """The graph as Graphviz DOT, as ``cuGraphDebugDotPrint`` writes one: its nodes (the
        recorded operations, named by what they call) in a chain, the order they run in."""
        ops = self._graph(self._graphs, graph, "cuGraphDebugDotPrint")
        lines = [f"digraph dot {{", f'  label="emulated graph 0x{graph:x}";']
        for i, op in enumerate(ops):
            name = getattr(getattr(op, "func", op), "__name__", type(op).__name__)
            name = "kernel" if name == "<lambda>" else name  # (a launch: a bound kernel)
            lines.append(f'  node{i} [shape=record, label="{i}: {name}"];')
            if i:
                lines.append(f"  node{i - 1} -> node{i};")
        with open(path, "w") as f:
            f.write("\n".join([*lines, "}", ""]))

    # -- profiler --------------------------------------------------------------------------
    def profiler_start(self, dev: int) -> None:
        self._dev(dev, "cuProfilerStart")
        self.profiling = True

    def profiler_stop(self, dev: int) -> None:
        self._dev(dev, "cuProfilerStop")
        self.profiling = False


# ------------------------------------------------------------------------------------------
# Selection (once per process, on first use)
# ------------------------------------------------------------------------------------------
_driver: Driver | None = None
_probed = False
_why_unavailable = ""
_probe_lock = threading.Lock()


def _probe() -> tuple[Driver | None, str]:
    try:
        real = CudaDriver()
        n = real.device_count()
        if n > 0:
            return real, ""
        why = "the CUDA driver reports no devices"
    except ImportError:
        why = "cuda-python is not installed"
    except CudaError as e:
        why = f"cuInit failed: {e}"
    except Exception as e:  # noqa: BLE001 - cuda-python raises its own error without libcuda
        why = ("the NVIDIA driver library (libcuda) was not found"
               if "NotFound" in type(e).__name__ else f"{type(e).__name__}: {e}")
    if _emulation_requested():
        return EmulatedDriver(), why
    return None, why


def _selected() -> Driver | None:
    global _driver, _probed, _why_unavailable
    if not _probed:
        with _probe_lock:
            if not _probed:
                _driver, _why_unavailable = _probe()
                _probed = True
    return _driver


def get_driver() -> Driver:
    """The process's driver, probed on first call.

    Raises:
        CudaUnavailableError: no CUDA GPU/driver was found (and emulation is not enabled).
    """
    d = _driver
    if d is not None:
        return d
    d = _selected()
    if d is None:
        raise CudaUnavailableError(
            "CUDA is not available: no CUDA GPU/driver was found, so tg.cuda.is_available() is "
            f"False ({_why_unavailable}). Use device='cpu', run on a machine with an NVIDIA GPU "
            "and driver, or set TRITONGRAD_EMULATE_CUDA=1 (before the first CUDA call) to use "
            "the emulated device.")
    return d


def why_no_gpu() -> str:
    """Why no real GPU is used ("" when one is): what the probe found (probes on first call,
    never raises). Kept when the emulated device stands in, so reports can name it."""
    try:
        _selected()
    except Exception as e:  # noqa: BLE001 - documented never to raise
        return f"{type(e).__name__}: {e}"
    return _why_unavailable


def is_available() -> bool:
    """True when a CUDA device (real, or emulated where enabled) can be used. Never raises."""
    try:
        d = _selected()
        return d is not None and d.device_count() > 0
    except Exception:  # noqa: BLE001 - documented never to raise
        return False


def is_initialized() -> bool:
    """True once CUDA has been probed and found available (never probes, never raises)."""
    return _probed and _driver is not None


def is_emulated() -> bool:
    """True when CUDA calls go to the emulated device (no real GPU, TRITONGRAD_EMULATE_CUDA=1)."""
    d = _selected()
    return d is not None and d.emulated


def device_count() -> int:
    """The number of CUDA devices; 0 where CUDA is unavailable. Never raises."""
    try:
        d = _selected()
        return d.device_count() if d is not None else 0
    except Exception:  # noqa: BLE001 - documented never to raise
        return 0
