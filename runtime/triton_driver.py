"""Triton's active driver, answered by tritongrad (docs/runtime.md, "Triton without torch").

Triton asks its active driver, at every launch, for the current device and for the current
stream of that device. Its own CUDA driver answers through torch (triton <= 3.6 builds it with
``import torch`` in ``GPUDriver.__init__``) or, torch-free in 3.9, with the device's default
stream. ``ensure_triton_driver()`` installs a subclass of Triton's ``CudaDriver`` whose answers
come from tritongrad's runtime, so kernels are queued on tritongrad's current stream and torch
is never imported:

- ``__init__`` does not call ``GPUDriver.__init__``; it sets ``utils``, ``launcher_cls`` and
  the four callables itself;
- ``get_active_torch_device``/``get_device_interface``/``get_empty_cache_for_benchmark``/
  ``get_benchmarker``/``allocate_default_profile_scratch`` are torch-free:
  ``get_device_interface()`` returns the ``tg.cuda`` functions (what ``triton.testing.do_bench``
  needs: ``Event(enable_timing=True)``, ``synchronize``), the benchmark L2 flush buffer is a
  tritongrad allocation, and ``get_active_torch_device`` raises a clear error;
- kernels that need global scratch memory get it from tritongrad's caching allocator, on the
  launch stream (``triton.set_allocator``, per thread as Triton keeps it in a ContextVar).

The kernels layer calls ``ensure_triton_driver()`` before launching; after the first call it
costs one thread-local attribute read. Under Triton's interpreter (``TRITON_INTERPRET=1``) and
on the emulated device no driver is needed and it does nothing.
"""

from __future__ import annotations

import os
import threading

from . import driver as _drv
from . import streams as _streams

__all__ = ["ensure_triton_driver", "launch_target", "make_driver_class"]

_L2_FLUSH_BYTES = 256 << 20  # as Triton's own benchmark cache
_install_lock = threading.Lock()
_installed = False
_tls = threading.local()  # .ready: this thread has the scratch allocator set too


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def ensure_triton_driver() -> None:
    """Makes Triton launch on tritongrad's current device and stream (first call installs).

    A no-op under ``TRITON_INTERPRET=1`` and on the emulated device, where kernels are
    interpreted on the host and no driver is involved.
    """
    if getattr(_tls, "ready", False):
        return
    if _interpreting() or _drv.get_driver().emulated:
        _tls.ready = True
        return
    global _installed
    if not _installed:
        with _install_lock:
            if not _installed:
                import triton

                triton.runtime.driver.set_active(make_driver_class()())
                _installed = True
    _set_scratch_allocator()
    _tls.ready = True


def _set_scratch_allocator() -> None:
    from triton.runtime import _allocation

    if isinstance(_allocation._allocator.get(), _allocation.NullAllocator):
        _allocation.set_allocator(_scratch)


def _scratch(size: int, alignment: int, stream):
    """Triton's global-scratch allocator: a tritongrad block on the launch stream.

    The block returns to the cache when Triton drops the object after the launch; it is
    reused on the same stream only, after the kernel in stream order.
    """
    from .memory import Storage

    index = _streams.current_device()
    s = _streams.Stream._wrap(int(stream or 0), index)
    return Storage(max(size, 1), _streams._cuda_device(index), stream=s)


class _L2Flush:
    """A 256 MiB buffer whose ``zero_()`` evicts the L2 cache (cuMemsetD8Async)."""

    def __init__(self, nbytes: int = _L2_FLUSH_BYTES):
        from .memory import Storage

        self.storage = Storage(nbytes, _streams._cuda_device(_streams.current_device()))

    def data_ptr(self) -> int:
        return self.storage.ptr

    def zero_(self) -> _L2Flush:
        index = self.storage.device.index
        _drv.get_driver().memset_d8(index, self.storage.ptr, 0, self.storage.nbytes,
                                    _streams.current_stream_handle(index))
        return self


def _current_device() -> int:
    # Asked at every launch: streams.current_device() and get_driver() inline (the driver is
    # probed before this one is installed)
    index = _streams._state.device
    # a new thread has no current context: launch needs one (cheap when it is current)
    (_drv._driver or _drv.get_driver()).activate(index)
    return index


def launch_target() -> tuple[int, int]:
    """(device, stream handle) of a launch: ``get_current_device()`` and then
    ``get_current_stream(device)`` of this driver, answered from one read of the thread's state
    (the cached launches ask both on every launch, kernels/triton/launcher.py; ``Launch``
    writes this out: keep the two alike)."""
    st = _streams._state
    index = st.device
    (_drv._driver or _drv.get_driver()).activate(index)  # as _current_device
    s = st.streams.get(index)
    return index, 0 if s is None else s.cuda_stream


def _capability(index=None) -> tuple[int, int]:
    drv = _drv.get_driver()
    return drv.capability(_streams.device_index(index))


_cls = None


def make_driver_class():
    """The ``CudaDriver`` subclass (built once; importing Triton's backend is deferred)."""
    global _cls
    if _cls is not None:
        return _cls
    from triton.backends.nvidia.driver import CudaDriver, CudaLauncher, CudaUtils

    class TritongradCudaDriver(CudaDriver):
        """Triton's CUDA driver with device and stream answered by tritongrad, torch-free."""

        def __init__(self, utils=None):
            # Never GPUDriver.__init__: in triton <= 3.6 it imports torch.
            self.utils = CudaUtils() if utils is None else utils
            self.launcher_cls = CudaLauncher
            self.get_current_device = _current_device
            self.set_current_device = _streams.set_device
            self.get_current_stream = _streams.current_stream_handle  # (device) -> handle
            self.get_device_capability = _capability

        @staticmethod
        def is_active():
            return _drv.is_available() and not _drv.is_emulated()

        def get_active_torch_device(self):
            raise RuntimeError(
                "tritongrad's Triton driver has no torch device: tritongrad never imports "
                "torch. Pass tritongrad arrays/tensors to kernels; device and stream come from "
                "tg.cuda.current_device() and tg.cuda.current_stream().")

        def get_device_interface(self):
            from . import cuda_api

            return cuda_api

        def get_empty_cache_for_benchmark(self):
            return _L2Flush()

        def clear_cache(self, cache):
            cache.zero_()

        def get_benchmarker(self):
            from triton.testing import do_bench

            return do_bench

        def allocate_default_profile_scratch(self, size, alignment, stream):
            buf = _scratch(size, alignment, stream)
            index = buf.device.index
            _drv.get_driver().memset_d8(index, buf.ptr, 0, size,
                                        int(stream or 0))  # torch.zeros in Triton's version
            return buf

    _cls = TritongradCudaDriver
    return _cls
