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
from .driver import CudaError, check_runtime_result, is_emulated
from .graphs import CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing
from .memory import (
    caching_allocator_alloc,
    caching_allocator_delete,
    caching_allocator_disabled,
    caching_allocator_enable,
    empty_cache,
    get_allocator_backend,
    host_memory_stats,
    host_memory_stats_as_nested_dict,
    get_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_summary,
    reset_accumulated_host_memory_stats,
    reset_accumulated_memory_stats,
    reset_peak_host_memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from .mempool import MemPool, use_mem_pool
from .nvml import (
    clock_rate,
    device_memory_used,
    list_gpu_processes,
    memory_usage,
    power_draw,
    temperature,
    utilization,
)
from .streams import (
    Event,
    ExternalStream,
    Stream,
    current_device,
    current_stream,
    default_stream,
    get_stream_from_external,
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
           "set_per_process_memory_fraction", "set_stream", "stream", "synchronize",
           # (the names below: docs/runtime.md, "The rest of torch.cuda")
           "CUDAPluggableAllocator", "ExternalStream", "MemPool", "caching_allocator_alloc",
           "caching_allocator_delete", "caching_allocator_disabled", "caching_allocator_enable",
           "can_device_access_peer", "change_current_allocator", "check_error", "clock_rate",
           "current_blas_handle", "current_solver_handle", "device_memory_used",
           "get_allocator_backend", "get_stream_from_external", "has_half", "has_magma",
           "host_memory_stats", "host_memory_stats_as_nested_dict", "init", "ipc_collect",
           "list_gpu_processes", "memory_snapshot", "memory_usage", "power_draw",
           "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats", "temperature",
           "use_mem_pool", "utilization"]

has_half = True    # float16 tensors and kernels exist on every CUDA device
has_magma = False  # no MAGMA: tritongrad's linear algebra is its own


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
    __slots__ = ("major", "minor", "multi_processor_count", "name", "total_memory")

    def __init__(self, name, major, minor, total_memory, multi_processor_count):
        self.name, self.major, self.minor, self.total_memory = name, major, minor, total_memory
        self.multi_processor_count = multi_processor_count

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory >> 20}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None) -> _DeviceProperties:
    """Returns name, ``major``/``minor`` capability, ``total_memory`` and
    ``multi_processor_count`` of a device.

    Wraps ``cuDeviceGetName``, ``cuDeviceGetAttribute`` and ``cuDeviceTotalMem``.
    """
    index = _streams.device_index(device)
    drv = _drv.get_driver()
    major, minor = drv.capability(index)
    return _DeviceProperties(drv.name(index), major, minor, drv.total_memory(index),
                             drv.multiprocessor_count(index))


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


# -- the rest of torch.cuda (docs/runtime.md) ---------------------------------------------
def init() -> None:
    """Initialize tritongrad's CUDA state (``cuInit``, the device count).

    Ordinary users should not need this, as all of tritongrad's CUDA functions initialize
    CUDA state on-demand. Does nothing if the CUDA state is already initialized.

    Raises:
        RuntimeError: no CUDA GPU/driver was found (``is_available()`` is False).
    """
    _drv.get_driver()


def _ordinal(dev, optional: bool, message: str) -> int:
    """``dev``'s ordinal, or PyTorch's ``AssertionError(message)`` when out of range."""
    if isinstance(dev, int) and not isinstance(dev, bool):
        _drv.get_driver()
        if not 0 <= dev < _drv.device_count():
            raise AssertionError(message)
        return dev
    return _streams.device_index(dev, optional=optional)


def can_device_access_peer(device, peer_device) -> bool:
    """Check if peer access between two devices is possible (``cuDeviceCanAccessPeer``).

    A device is not its own peer (False, as the driver answers). The emulated device, a
    single device, answers as a machine with one GPU would: False for ``(0, 0)``.

    Raises:
        AssertionError: ``Invalid device id`` / ``Invalid peer device id``, as PyTorch's.
    """
    index = _ordinal(device, True, "Invalid device id")
    peer = _ordinal(peer_device, False, "Invalid peer device id")
    return _drv.get_driver().can_access_peer(index, peer)


def check_error(res: int) -> None:
    """Raise an error if the result of a CUDA runtime API call is not success.

    Raises:
        CudaError: ``out of memory (2)``: ``cudaGetErrorString``'s words and the code, as
            PyTorch's; ``.code`` is the error's name (``"cudaErrorMemoryAllocation"``).
    """
    check_runtime_result(res)


def ipc_collect() -> None:
    """Force collects GPU memory after it has been released by CUDA IPC.

    tritongrad does not share CUDA tensors between processes (no ``cudaIpc`` handles, no
    reference-counting files), so there is never anything to collect: this initializes CUDA
    and returns.
    """
    _drv.get_driver()


def _no_library(what: str, library: str) -> RuntimeError:
    return RuntimeError(f"{what}: tritongrad does not use {library}: its kernels are its own "
                        f"(Triton), so there is no {library} handle to return")


def current_blas_handle() -> int:
    """Return cublasHandle_t pointer to current cuBLAS handle.

    Raises:
        RuntimeError: always: tritongrad has no cuBLAS (its matrix products are Triton
            kernels).
    """
    raise _no_library("current_blas_handle", "cuBLAS")


def current_solver_handle() -> int:
    """Return cusolverDnHandle_t pointer to current cuSOLVER handle.

    Raises:
        RuntimeError: always: tritongrad has no cuSOLVER.
    """
    raise _no_library("current_solver_handle", "cuSOLVER")


_NO_PLUGGABLE = (
    "{}: tritongrad does not support pluggable CUDA allocators. Its caching allocator "
    "(runtime/allocator.py) owns every device block: the emulated device checks each copy "
    "against the allocations it made itself, cuMemFree-style releases synchronize the device "
    "instead of handing the free a stream, and a block's size and stream would have to be "
    "tracked outside the allocator for free_fn(ptr, size, device, stream). Use MemPool / "
    "use_mem_pool for a private pool of the caching allocator.")


class CUDAPluggableAllocator:
    """CUDA memory allocator loaded from a so file (PyTorch's ``CUDAPluggableAllocator``).

    Not supported: constructing one raises ``NotImplementedError`` saying why.

    Args:
        path_to_so_file (str): Path in the filesystem to the ``.so`` file containing the
            allocator functions.
        alloc_fn_name (str): Name of the function to perform the memory allocation in the so
            file. The signature must be:
            void* alloc_fn(size_t size, int device, cudaStream_t stream);
        free_fn_name (str): Name of the function to perform the memory release in the so
            file. The signature must be:
            void free_fn(void* ptr, size_t size, cudaStream_t stream);
    """

    def __init__(self, path_to_so_file: str, alloc_fn_name: str, free_fn_name: str):
        raise NotImplementedError(_NO_PLUGGABLE.format("CUDAPluggableAllocator"))


def change_current_allocator(allocator) -> None:
    """Change the currently used memory allocator to be the one provided.

    Not supported (see ``CUDAPluggableAllocator``): raises ``NotImplementedError``.
    """
    raise NotImplementedError(_NO_PLUGGABLE.format("change_current_allocator"))
