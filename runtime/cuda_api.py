"""The public ``tg.cuda`` API: devices, streams, events, memory, CUDA graphs and profiler
control.

Names and behaviour follow ``torch.cuda``. Every function initialises CUDA lazily on first
use; where CUDA is unavailable every function except ``is_available`` and ``device_count``
raises a ``RuntimeError`` that says so. Each docstring names the driver call it wraps.
"""

from __future__ import annotations

import contextlib

from . import driver as _drv
from . import streams as _streams
from .allocator import OutOfMemoryError
from .driver import CudaError, is_emulated
from .graphs import CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing
from .memory import (
    empty_cache,
    get_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from .streams import (
    Event,
    Stream,
    current_device,
    current_stream,
    default_stream,
    set_device,
    set_stream,
    stream,
    synchronize,
)
from .streams import device_guard as device

__all__ = ["CUDAGraph", "CudaError", "Event", "OutOfMemoryError", "Stream", "current_device",
           "current_stream", "default_stream", "device", "device_count", "empty_cache",
           "get_device_capability", "get_device_name", "get_device_properties",
           "get_per_process_memory_fraction", "graph", "graph_pool_handle", "is_available",
           "is_current_stream_capturing", "is_emulated", "is_initialized", "max_memory_allocated",
           "max_memory_reserved", "mem_get_info", "memory_allocated", "memory_reserved",
           "memory_stats", "memory_summary", "profiler_profile", "profiler_start", "profiler_stop",
           "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device",
           "set_per_process_memory_fraction", "set_stream", "stream", "synchronize"]


def is_available() -> bool:
    """Returns whether CUDA can be used: a GPU and driver are present (or emulation is on).

    Probes the driver on first call (``cuInit``, ``cuDeviceGetCount``); never raises.

    Example:
        >>> import tritongrad as tg
        >>> dev = "cuda" if tg.cuda.is_available() else "cpu"
    """
    return _drv.is_available()


def is_initialized() -> bool:
    """Returns whether CUDA has been initialised in this process (probes nothing)."""
    return _drv.is_initialized()


def check_device(index: int) -> int:
    """Returns ``index`` if it names a CUDA device, else raises.

    Raises:
        CudaError: ``CUDA error: invalid device ordinal 3 (1 device available)``.
        RuntimeError: CUDA is not available.
    """
    return _streams.device_index(index)


def device_count() -> int:
    """Returns the number of CUDA devices (``cuDeviceGetCount``); 0 where unavailable."""
    return _drv.device_count()


def get_device_name(device=None) -> str:
    """Returns the name of a device (``cuDeviceGetName``), e.g. ``"NVIDIA H100 80GB HBM3"``.

    Args:
        device: int, ``"cuda:i"`` or ``device``; the current device if None.
    """
    return _drv.get_driver().name(_streams.device_index(device))


def get_device_capability(device=None) -> tuple[int, int]:
    """Returns the compute capability ``(major, minor)`` of a device, e.g. ``(9, 0)``.

    Wraps ``cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR/MINOR)``.
    """
    return _drv.get_driver().capability(_streams.device_index(device))


class _DeviceProperties:
    __slots__ = ("major", "minor", "name", "total_memory")

    def __init__(self, name, major, minor, total_memory):
        self.name, self.major, self.minor, self.total_memory = name, major, minor, total_memory

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory >> 20}MB)")


def get_device_properties(device=None) -> _DeviceProperties:
    """Returns name, ``major``/``minor`` capability and ``total_memory`` of a device.

    Wraps ``cuDeviceGetName``, ``cuDeviceGetAttribute`` and ``cuDeviceTotalMem``.
    """
    index = _streams.device_index(device)
    drv = _drv.get_driver()
    major, minor = drv.capability(index)
    return _DeviceProperties(drv.name(index), major, minor, drv.total_memory(index))


# -- profiler (tg.cuda.profiler.start / stop / profile) -----------------------------------
def profiler_start() -> None:
    """Starts profiler data collection (``cuProfilerStart``) on the current device.

    What ``nvprof --profile-from-start off``, ``nsys --capture-range=cudaProfilerApi`` and
    ``ncu --profile-from-start off`` wait for.
    """
    _drv.get_driver().profiler_start(_streams.current_device())


def profiler_stop() -> None:
    """Stops profiler data collection (``cuProfilerStop``) on the current device."""
    _drv.get_driver().profiler_stop(_streams.current_device())


@contextlib.contextmanager
def profiler_profile():
    """Context manager: ``cuProfilerStart`` on entry, ``cuProfilerStop`` on exit (always).

    Example:
        >>> with tg.cuda.profiler.profile():  # doctest: +SKIP
        ...     train_step()
    """
    profiler_start()
    try:
        yield
    finally:
        profiler_stop()
