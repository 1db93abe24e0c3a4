"""The runtime: devices, dtypes, the CUDA driver (cuda-python), streams and events, the caching
allocator, storages and copies, and the Triton driver binding.

Importing this package touches no driver: CUDA is probed on first use (``is_available()``,
the first allocation, ...). ``tg.cuda`` (tritongrad/cuda) re-exports the public part; the
kernels layer uses ``memory``, ``streams`` and ``ensure_triton_driver`` directly.

Submodules (``device``, ``dtype``, ``memory``, ``streams``, ...) keep their names: nothing here
rebinds them, so ``from tritongrad.runtime import device`` is the module.
"""

from .allocator import CachingAllocator, OutOfMemoryError
from .array import DeviceArray
from .driver import CudaError, CudaUnavailableError, device_count, is_available, is_emulated
from .memory import Storage, copy_between, empty, to_device, to_host
from .streams import Event, Stream, current_stream, default_stream
from .triton_driver import ensure_triton_driver

__all__ = [
    "CachingAllocator",
    "CudaError",
    "CudaUnavailableError",
    "DeviceArray",
    "Event",
    "OutOfMemoryError",
    "Storage",
    "Stream",
    "copy_between",
    "current_stream",
    "default_stream",
    "device_count",
    "empty",
    "ensure_triton_driver",
    "is_available",
    "is_emulated",
    "to_device",
    "to_host",
]
