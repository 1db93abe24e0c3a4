"""Device storages, host<->device copies, and the memory statistics of ``tg.cuda``.

A ``Storage`` owns one block of the device's ``CachingAllocator`` (runtime/allocator.py) and
gives it back when it dies. Memory is allocated for, and copies are queued on, the current
stream of the device (the stream contract, docs/runtime.md): a tensor made on stream A and
used on stream B needs ``record_stream(B)`` so that its block is not reused on A while B may
still read it.

A ``ForeignStorage`` views memory another library owns (a DLPack import, runtime/dlpack.py): the
allocator never sees it, and the owner's release callback runs when the last view dies.

On the emulated device memory is host memory: ``Storage.cpu()`` returns the storage itself and
``copy_`` back from itself is a no-op, which is all Triton's interpreter needs (see
runtime/array.py). On a real GPU the same two methods stage through a host copy, so the
interpreter also works there.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
from collections.abc import Callable, Iterator

import numpy as np

from . import driver as _drv
from . import pinned as _pinned
from . import streams as _streams
from . import sync_debug as _sync_debug
from .allocator import CachingAllocator, OutOfMemoryError
from .array import DeviceArray, contiguous_strides
from .device import device as Device
from .dtype import bfloat16, from_numpy_dtype

__all__ = ["ForeignStorage", "OutOfMemoryError", "Storage", "allocator", "copy_between", "empty",
           "empty_cache", "get_per_process_memory_fraction", "max_memory_allocated",
           "max_memory_reserved", "mem_get_info", "memory_allocated", "memory_reserved",
           "memory_stats", "memory_summary", "reset_accumulated_memory_stats",
           "reset_peak_memory_stats", "set_per_process_memory_fraction", "to_device", "to_host",
           "caching_allocator_alloc", "caching_allocator_delete", "caching_allocator_enable",
           "caching_allocator_disabled", "get_allocator_backend", "memory_snapshot",
           "host_memory_stats", "host_memory_stats_as_nested_dict",
           "reset_peak_host_memory_stats", "reset_accumulated_host_memory_stats"]

_CPU = Device("cpu")
_caching_enabled = True  # caching_allocator_enable: every device's allocator, present and future
_allocators: dict[int, CachingAllocator] = {}
_allocators_lock = threading.Lock()


def allocator(index: int) -> CachingAllocator:
    """The caching allocator of device ``index`` (created on first use)."""
    a = _allocators.get(index)
    if a is not None:
        return a
    with _allocators_lock:
        a = _allocators.get(index)
        if a is None:
            a = _allocators[index] = _make_allocator(index)
    return a


def _make_allocator(index: int) -> CachingAllocator:
    drv = _drv.get_driver()

    def record_event(stream_handle: int):
        ev = _streams.Event()
        ev._record_on(index, stream_handle)
        return ev

    alloc = CachingAllocator(
        raw_alloc=lambda n: drv.mem_alloc(index, n),
        raw_free=lambda p: drv.mem_free(index, p),
        record_event=record_event,
        device=f"cuda:{index}",
        mem_info=lambda: drv.mem_get_info(index),
        synchronize=lambda: drv.ctx_synchronize(index),
    )
    alloc.set_caching(_caching_enabled)
    return alloc


class Storage:
    """Memory on one CUDA device, owned by the arrays (tensors) that view it.

    Args:
        nbytes: size in bytes.
        device: a CUDA ``device`` (index None: the current device).
        stream: the ``Stream`` to allocate for (default: the device's current stream).

    Attributes:
        ptr: the device address; nbytes; device: ``device('cuda', i)``; stream: the CUstream
        handle it was allocated on.
    """

    __slots__ = ("__weakref__", "_allocator", "_block", "device", "nbytes", "ptr", "stream")

    def __init__(self, nbytes: int, device, stream=None):
        # Fast path: a device with an index whose allocator exists was checked before.
        alloc = _allocators.get(index := device.index) if type(device) is Device else None
        if alloc is None:
            index = _streams.device_index(device)
            alloc = allocator(index)
            device = Device("cuda", index)
        if stream is None:  # streams.current_stream_handle, inline (every op's output)
            s = _streams._state.streams.get(index)
            handle = 0 if s is None else s.cuda_stream
        else:
            handle = stream.cuda_stream
        self._block = block = alloc.malloc(nbytes, handle)
        self._allocator = alloc
        self.ptr = block.ptr
        self.nbytes = nbytes
        self.device = device
        self.stream = handle

    def __del__(self):
        try:  # destructors never raise (also at interpreter exit)
            block, self._block = self._block, None
            if block is not None:
                self._allocator.free(block)
        except Exception:  # noqa: BLE001, S110 - destructors never raise
            pass

    def record_stream(self, stream) -> None:
        """Marks the memory as in use by work queued on ``stream``.

        The block is not reused until that work is done (see the stream contract). As
        ``Tensor.record_stream``; needed whenever a storage is used on a stream other than the
        one it was allocated on and may be freed before that stream is synchronized.
        """
        if stream.device_index != self.device.index:
            raise ValueError(f"record_stream: stream on cuda:{stream.device_index} cannot use "
                             f"a storage on {self.device}")
        self._allocator.record_stream(self._block, stream.cuda_stream)

    def __repr__(self) -> str:
        return f"Storage(ptr=0x{self.ptr:x}, nbytes={self.nbytes}, device={self.device})"

    # The torch-style surface of Triton's interpreter: it copies each argument's storage to
    # the host (``cpu()``), runs the kernel there, and copies back (``copy_``).
    def data_ptr(self) -> int:
        return self.ptr

    def cpu(self):
        if _drv.get_driver().emulated:
            return self  # emulated device memory already is host memory
        host = _HostStorage(self.nbytes)
        _copy_dtoh(self.device.index, host.ptr, self.ptr, self.nbytes)
        return host

    def copy_(self, other) -> Storage:
        if other is self:
            return self
        if isinstance(other, _HostStorage):
            index = self.device.index
            _drv.get_driver().memcpy_htod(index, self.ptr, other.ptr, min(self.nbytes,
                                          other.nbytes), _streams.current_stream_handle(index))
            _streams.current_stream(index).synchronize()  # the host buffer dies after this
            return self
        raise TypeError(f"Storage.copy_: cannot copy from {type(other).__name__}")


class ForeignStorage(Storage):
    """CUDA memory owned by another library, viewed by tritongrad arrays (a DLPack import).

    The caching allocator never sees this memory: ``release`` (which calls the producer's
    DLPack deleter) runs exactly once, when the last array viewing the storage dies. It is
    not run at interpreter exit: by then the producer's library, its allocator or the CUDA
    context may be torn down, and calling into them could crash a process that is ending
    anyway (the driver reclaims device memory with the context).

    Args:
        ptr: the device address of the first byte viewed.
        nbytes: the bytes that views of it may touch from ``ptr``.
        device: ``device('cuda', i)``.
        release: called once when the storage dies (None: nothing to release).
        stream: the CUstream handle the producer ordered the memory's contents on.
    """

    __slots__ = ("_release",)

    def __init__(self, ptr: int, nbytes: int, device, release: Callable[[], None] | None,
                 stream: int = 0):
        self._allocator = None
        self._block = None
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device
        self.stream = stream
        self._release = release

    def __del__(self):
        try:  # destructors never raise
            release, self._release = self._release, None
            if release is not None and not sys.is_finalizing():
                release()
        except Exception:  # noqa: BLE001, S110 - destructors never raise
            pass

    def record_stream(self, stream) -> None:
        """Does nothing beyond checking the device (as PyTorch for memory it did not allocate).

        ``record_stream`` delays the reuse of a caching-allocator block; this memory goes back
        to its owner through the DLPack deleter, and the owner's allocator cannot be told
        about our streams. Synchronize (or keep the tensor alive) until work queued on other
        streams is done before dropping the last view.
        """
        if stream.device_index != self.device.index:
            raise ValueError(f"record_stream: stream on cuda:{stream.device_index} cannot use "
                             f"a storage on {self.device}")

    def __repr__(self) -> str:
        return f"ForeignStorage(ptr=0x{self.ptr:x}, nbytes={self.nbytes}, device={self.device})"


class _HostStorage:
    """A host copy of a device storage, for Triton's interpreter on a real GPU."""

    __slots__ = ("_buf", "device", "nbytes", "ptr")

    def __init__(self, nbytes: int):
        self._buf = np.empty(max(nbytes, 1), dtype=np.uint8)
        self.ptr = self._buf.ctypes.data
        self.nbytes = nbytes
        self.device = _CPU

    def data_ptr(self) -> int:
        return self.ptr

    def cpu(self):
        return self

    def copy_(self, other):
        if other is not self:
            raise TypeError("_HostStorage.copy_: only the interpreter's no-op is supported")
        return self


def _copy_dtoh(index: int, dst_host: int, src: int, nbytes: int) -> None:
    """Device to host on the current stream, then waits for that stream."""
    handle = _streams.current_stream_handle(index)
    drv = _drv.get_driver()
    drv.memcpy_dtoh(index, dst_host, src, nbytes, handle)
    drv.stream_synchronize(index, handle)


_LAYOUTS: dict = {}  # shape -> (contiguous strides, element count): every op's output asks


def empty(shape, dtype, device) -> DeviceArray:
    """An uninitialised contiguous array on ``device``, allocated on its current stream."""
    if type(shape) is not tuple:
        shape = tuple(shape)
    layout = _LAYOUTS.get(shape)  # (one lookup for both: a step allocates the same few shapes)
    if layout is None:
        if len(_LAYOUTS) >= 4096:  # many shapes (dynamic sizes): start over
            _LAYOUTS.clear()
        layout = _LAYOUTS[shape] = (contiguous_strides(shape), math.prod(shape))
    strides, numel = layout
    return new_array(numel * dtype.itemsize, device, shape, strides, dtype)


# Note [result arrays]: every op's result is a DeviceArray over a new Storage. Made by calling
# the two classes, that is two ``__init__`` frames (Python 3.11 and 3.12 do not inline a class
# call) and DeviceArray's read of ``storage.device``: ~0.15 us of a result's ~1.5 us (3.12:
# ~0.2). ``new_array`` fills both objects' slots itself, the fields ``Storage.__init__`` and
# ``DeviceArray.__init__`` set, with the same allocation on the same stream: keep the three
# alike (tests/kernels/test_host_path31.py compares their fields). A device whose allocator
# does not exist yet, or an index-less device, goes through ``Storage``'s own checks.
_new = object.__new__
_stream_state = _streams._state


def new_array(nbytes: int, device, shape: tuple, strides: tuple, dtype) -> DeviceArray:
    """``DeviceArray(Storage(nbytes, device), 0, shape, strides, dtype)``: a new array at offset
    0 of its own storage, allocated on ``device``'s current stream (Note [result arrays])."""
    alloc = _allocators.get(index := device.index) if type(device) is Device else None
    if alloc is None:
        return DeviceArray(Storage(nbytes, device), 0, shape, strides, dtype)
    s = _stream_state.streams.get(index)  # (as Storage.__init__'s)
    handle = 0 if s is None else s.cuda_stream
    block = alloc.malloc(nbytes, handle)
    st = _new(Storage)
    st._block = block
    st._allocator = alloc
    st.ptr = block.ptr
    st.nbytes = nbytes
    st.device = device
    st.stream = handle
    a = _new(DeviceArray)
    a.storage = st
    a.offset = 0
    a.shape = shape
    a.strides = strides
    a.dtype = dtype
    a.device = device
    return a


def to_device(host, device, dtype=None, non_blocking: bool = False) -> DeviceArray:
    """Copies a host array to ``device`` on the current stream (``cuMemcpyHtoDAsync``).

    Args:
        host: a NumPy array (or anything ``np.asarray`` takes).
        device: a CUDA ``device``.
        dtype: the tritongrad dtype of the result (default: from ``host.dtype``). For
            ``bfloat16`` pass its uint16 bit patterns.
        non_blocking: when ``host`` is pinned (runtime/pinned.py), return once the copy is
            queued; its memory is then not reused before the copy has run.

    From pageable memory the driver stages the bytes before returning, and from pinned memory
    a blocking copy waits for the stream: either way the host array may be changed or dropped
    as soon as this returns, unless ``non_blocking``.
    """
    host = np.asarray(host)
    if dtype is None:
        dtype = from_numpy_dtype(host.dtype)
    elif host.dtype != dtype.np:
        if dtype is bfloat16:
            raise TypeError(f"to_device: bfloat16 data must be given as uint16 bit patterns, "
                            f"got {host.dtype}")
        host = host.astype(dtype.np)
    host = np.require(host, requirements="C")  # ascontiguousarray would make 0-d into 1-d
    out = empty(host.shape, dtype, device)
    if host.nbytes:
        index = out.storage.device.index
        handle = _streams.current_stream_handle(index)
        drv = _drv.get_driver()
        drv.memcpy_htod(index, out.storage.ptr, host.ctypes.data, host.nbytes, handle)
        if _pinned.is_pinned(host):
            if non_blocking:
                _pinned.record_stream(host, index, handle)
            else:
                drv.stream_synchronize(index, handle)
    return out


def _span(a: DeviceArray) -> tuple[int, int]:
    """The element range [lo, hi) relative to the storage start that ``a`` can touch."""
    lo = hi = a.offset
    for n, s in zip(a.shape, a.strides):
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + 1


def to_host(a: DeviceArray, non_blocking: bool = False) -> np.ndarray:
    """Copies a (possibly strided) device array into a new NumPy array.

    Queues ``cuMemcpyDtoHAsync`` of the span the view covers on the current stream, waits for
    that stream (``cuStreamSynchronize``), then gathers the view on the host. bfloat16 comes
    back as uint16 bit patterns. ``non_blocking`` and a contiguous ``a``: the copy goes to a
    new pinned array and is not waited for (read it after synchronizing the stream).
    """
    if a.device.type == "meta":  # (an op reading values on the host: Note [The meta device])
        raise NotImplementedError("Cannot copy out of meta tensor; no data! (the operation "
                                  "reads the tensor's values on the host, which a tensor on "
                                  "the meta device does not have)")
    npdt = a.dtype.np
    if a.numel == 0:
        return np.empty(a.shape, dtype=npdt)
    if non_blocking and a.is_contiguous():
        out = _pinned.empty(a.shape, npdt)
        index = a.storage.device.index
        handle = _streams.current_stream_handle(index)
        _drv.get_driver().memcpy_dtoh(index, out.ctypes.data, a.data_ptr(), out.nbytes, handle)
        _pinned.record_stream(out, index, handle)
        return out
    if _sync_debug._mode and not _streams.in_sync_hooks():  # (a hook runs after a wait)
        _sync_debug.check()
    lo, hi = _span(a)
    item = a.itemsize
    buf = np.empty((hi - lo) * item, dtype=np.uint8)
    _copy_dtoh(a.storage.device.index, buf.ctypes.data, a.storage.ptr + lo * item, buf.nbytes)
    if a.is_contiguous():  # the span is exactly the elements, in order
        out = buf.view(npdt).reshape(a.shape)
    else:
        out = np.array(np.lib.stride_tricks.as_strided(
            buf[(a.offset - lo) * item:].view(npdt), a.shape,
            tuple(s * item for s in a.strides)))
    _streams.run_sync_hooks()
    return out


def copy_between(dst: DeviceArray, src: DeviceArray) -> None:
    """Copies contiguous ``src`` into contiguous ``dst`` (same dtype size and element count).

    Same device: ``cuMemcpyDtoDAsync`` on the device's current stream. Different devices:
    ``cuMemcpyPeerAsync`` on the source device's current stream, ordered after the work queued
    on the destination's current stream, and before the work queued there afterwards (events
    both ways, as PyTorch does).
    """
    if not (dst.is_contiguous() and src.is_contiguous()):
        raise ValueError("copy_between: both arrays must be contiguous")
    nbytes = src.numel * src.itemsize
    if dst.numel * dst.itemsize != nbytes:
        raise ValueError(f"copy_between: sizes differ ({dst.numel * dst.itemsize} bytes vs "
                         f"{nbytes} bytes)")
    if not nbytes:
        return
    drv = _drv.get_driver()
    di, si = dst.storage.device.index, src.storage.device.index
    if di == si:
        drv.memcpy_dtod(di, dst.data_ptr(), src.data_ptr(), nbytes,
                        _streams.current_stream_handle(di))
        return
    dst_stream, src_stream = _streams.current_stream(di), _streams.current_stream(si)
    src_stream.wait_event(dst_stream.record_event())
    drv.memcpy_peer(di, dst.data_ptr(), si, src.data_ptr(), nbytes, src_stream.cuda_stream)
    dst_stream.wait_event(src_stream.record_event())


# ------------------------------------------------------------------------------------------
# The memory statistics of tg.cuda
# ------------------------------------------------------------------------------------------
def memory_allocated(device=None) -> int:
    """Bytes occupied by tensors on ``device`` (current device if None).

    Counts the allocator's rounded block sizes, as PyTorch does.
    """
    return allocator(_streams.device_index(device)).allocated


def max_memory_allocated(device=None) -> int:
    """The peak of ``memory_allocated`` since start or ``reset_peak_memory_stats``."""
    return allocator(_streams.device_index(device)).stat("allocated_bytes").peak


def memory_reserved(device=None) -> int:
    """Bytes held by the caching allocator on ``device``: in use plus cached."""
    return allocator(_streams.device_index(device)).reserved


def max_memory_reserved(device=None) -> int:
    """The peak of ``memory_reserved`` since start or ``reset_peak_memory_stats``."""
    return allocator(_streams.device_index(device)).stat("reserved_bytes").peak


def reset_peak_memory_stats(device=None) -> None:
    """Sets the peaks (``max_memory_allocated`` and friends) to the current values."""
    allocator(_streams.device_index(device)).reset_peak_memory_stats()


def reset_accumulated_memory_stats(device=None) -> None:
    """Zeroes the accumulated totals (the ``allocated``/``freed`` fields, retries, OOMs)."""
    allocator(_streams.device_index(device)).reset_accumulated_memory_stats()


def empty_cache(device=None) -> None:
    """Returns the cached, unused memory of ``device`` to the driver (``cuMemFree``).

    Memory of live tensors is not freed, nor blocks still waiting on events from streams that
    used them. Does not make more memory available to tritongrad itself (the allocator would
    reuse the cache), but to other processes and libraries, and to ``mem_get_info``.
    """
    allocator(_streams.device_index(device)).empty_cache()


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Limits the memory the caching allocator may hold on ``device`` to a fraction of it.

    The allowed memory is ``fraction * total_memory`` of the device (``cuDeviceTotalMem``),
    counted as ``memory_reserved`` (tensors plus the cache). An allocation that would pass it
    first releases cached blocks, as any out-of-memory does, then raises
    ``tg.cuda.OutOfMemoryError`` naming the allowed amount. As
    ``torch.cuda.set_per_process_memory_fraction``; works on the emulated device too.

    Args:
        fraction: in [0, 1]; 1 (the default state) allows the whole device.
        device: int, ``"cuda:i"`` or ``device``; the current device if None.

    Raises:
        ValueError: ``Invalid fraction value: 1.5. Allowed range: 0~1``.
        TypeError: ``fraction`` is not a number.

    Example:
        >>> tg.cuda.set_per_process_memory_fraction(0.5)  # doctest: +SKIP
        >>> tg.cuda.get_per_process_memory_fraction()  # doctest: +SKIP
        0.5
    """
    index = _streams.device_index(device)
    allocator(index).set_memory_fraction(fraction, _drv.get_driver().total_memory(index))


def get_per_process_memory_fraction(device=None) -> float:
    """The fraction set by ``set_per_process_memory_fraction`` for ``device`` (1.0 if unset).

    Args:
        device: int, ``"cuda:i"`` or ``device``; the current device if None.
    """
    return allocator(_streams.device_index(device)).memory_fraction


def memory_stats(device=None) -> dict:
    """The allocator's statistics as a flat dict with PyTorch's keys.

    Example keys: ``"allocated_bytes.all.current"``, ``"reserved_bytes.all.peak"``,
    ``"active_bytes.large_pool.allocated"``, ``"num_alloc_retries"``, ``"num_ooms"``.
    """
    return allocator(_streams.device_index(device)).memory_stats()


def memory_summary(device=None) -> str:
    """A human-readable table of ``memory_stats`` (for printing when memory runs short)."""
    return allocator(_streams.device_index(device)).memory_summary()


def mem_get_info(device=None) -> tuple[int, int]:
    """``(free, total)`` bytes of the device as the driver sees them (``cuMemGetInfo``)."""
    index = _streams.device_index(device)
    return _drv.get_driver().mem_get_info(index)



# ------------------------------------------------------------------------------------------
# Raw allocations, the cache switch and the snapshot (torch.cuda.memory's)
# ------------------------------------------------------------------------------------------
_raw_storages: dict[int, Storage] = {}  # caching_allocator_alloc's pointers -> their storage
_raw_lock = threading.Lock()


def caching_allocator_alloc(size: int, device=None, stream=None) -> int:
    """Perform a memory allocation using the CUDA memory allocator.

    Memory is allocated for a given device and a stream, this function is intended to be used
    for interoperability with other frameworks. Allocated memory is released through
    :func:`caching_allocator_delete`. The block is a caching-allocator block like a tensor's:
    reused on ``stream`` once deleted (``Storage.record_stream`` rules apply to other
    streams' uses, which this raw pointer cannot record). A ``size`` of 0 gives 0 (no block).

    Args:
        size (int): number of bytes to be allocated.
        device (device or int, optional): selected device. If it is ``None`` the default
            CUDA device is used.
        stream (Stream or int, optional): selected stream. If is ``None`` then the current
            stream for the selected device is used (what PyTorch's code does).

    Raises:
        TypeError: ``stream`` is neither a ``Stream`` nor an int.
        OutOfMemoryError: the device has no memory left.
    """
    index = _streams.device_index(device)
    if stream is None:
        stream = _streams.current_stream(index)
    elif isinstance(stream, int) and not isinstance(stream, bool):
        stream = _streams.Stream._wrap(stream, index)
    elif not isinstance(stream, _streams.Stream):
        raise TypeError("Invalid type for stream argument, must be `torch.cuda.Stream` or "
                        "`int` representing a pointer to an existing stream")
    if size < 0:
        raise ValueError(f"caching_allocator_alloc: negative size {size}")
    if size == 0:
        return 0
    storage = Storage(size, Device("cuda", index), stream)
    with _raw_lock:
        _raw_storages[storage.ptr] = storage
    return storage.ptr


def caching_allocator_delete(mem_ptr: int) -> None:
    """Delete memory allocated using the CUDA memory allocator.

    Memory allocated with :func:`caching_allocator_alloc` is freed here. The associated
    device and stream are tracked inside the allocator.

    Args:
        mem_ptr (int): memory address to be freed by the allocator.

    Raises:
        RuntimeError: ``mem_ptr`` was not allocated by ``caching_allocator_alloc`` (or was
            deleted already).
    """
    if mem_ptr == 0:
        return
    with _raw_lock:
        storage = _raw_storages.pop(mem_ptr, None)
    if storage is None:
        raise RuntimeError(f"invalid device pointer: 0x{mem_ptr:x}")
    del storage  # (the block goes back to the allocator now)


def caching_allocator_enable(value: bool = True) -> None:
    """Enable or disable the CUDA memory allocator. On by default.

    Disabled, every allocation gets a segment of its own from the driver (``cuMemAlloc``)
    and gives it back (``cuMemFree``, after a synchronize) as soon as it is freed; blocks
    cached before stay until ``empty_cache``. As PyTorch's, this does nothing until CUDA is
    initialised (``tg.cuda.is_initialized()``); it applies to every device.
    """
    global _caching_enabled
    if not _drv.is_initialized():
        return
    _caching_enabled = bool(value)
    with _allocators_lock:
        allocs = list(_allocators.values())
    for a in allocs:
        a.set_caching(_caching_enabled)


@contextlib.contextmanager
def caching_allocator_disabled() -> Iterator[None]:
    """Context manager that temporarily disables the CUDA caching allocator."""
    prev = _caching_enabled
    caching_allocator_enable(False)
    try:
        yield
    finally:
        caching_allocator_enable(prev)


def get_allocator_backend() -> str:
    """Return a string describing the active allocator backend: ``"native"``, tritongrad's
    caching allocator (runtime/allocator.py), the only one."""
    return "native"


def memory_snapshot(mempool_id: tuple[int, int] | None = None,
                    include_traces: bool = True) -> list[dict]:
    """Return a snapshot of the CUDA memory allocator state across all devices.

    Interpreting the output of this function requires familiarity with the memory allocator
    internals: a list of segment dicts in PyTorch's format (``CachingAllocator.snapshot``),
    sorted by device then address. No allocation history is recorded, so every ``frames``
    is empty and ``include_traces`` changes nothing.

    Args:
        mempool_id: Optional memory pool ID to get snapshot for a specific pool (a
            ``MemPool.id``, a ``graph_pool_handle()``, a ``CUDAGraph.pool()``).
        include_traces: accepted for PyTorch's signature.
    """
    _drv.get_driver()  # (raises where CUDA is unavailable)
    with _allocators_lock:
        allocs = sorted(_allocators.items())
    return [seg for _, a in allocs for seg in a.snapshot(mempool_id)]


def _host_allocator() -> _pinned.CachingHostAllocator | None:
    """The pinned allocator if it was ever used (asking creates nothing, probes no driver)."""
    return _pinned._allocator


def host_memory_stats_as_nested_dict() -> dict:
    """Return the result of :func:`host_memory_stats` as a nested dictionary."""
    alloc = _host_allocator()
    if alloc is None:
        return _pinned.HostMemoryStats().as_nested_dict()
    return alloc.host_memory_stats()


def host_memory_stats() -> dict:
    """Return a dictionary of pinned (host) allocator statistics.

    Core statistics (host pinned allocator, runtime/pinned.py):

    - ``"allocations.{current,peak,allocated,freed}"``: pinned blocks owned by the allocator
      (active + cached). Grows when a new block is created via CUDA and shrinks when cached
      blocks are returned.
    - ``"allocated_bytes.{current,peak,allocated,freed}"``: bytes of pinned blocks owned by
      the allocator (active + cached), using the rounded block size requested from CUDA.
    - ``"active_requests.{current,peak,allocated,freed}"``: blocks currently checked out to
      callers (increments on handout, decrements when the block becomes reusable after
      stream deps finish).
    - ``"active_bytes.{current,peak,allocated,freed}"``: bytes corresponding to active
      blocks.

    Event/timing counters: ``"num_host_alloc"`` / ``"num_host_free"`` (blocks created to
    grow the pool / cached blocks returned to CUDA), ``"host_alloc_time.{total,max,min,count,
    avg}"`` and ``"host_free_time.{...}"`` (microseconds in the CUDA alloc and free calls).

    Block sizes are rounded up to the next power of two before calling CUDA, so byte stats
    reflect the rounded size. All zero until pinned memory is first used.
    """
    out: dict = {}
    for key, value in host_memory_stats_as_nested_dict().items():
        if isinstance(value, dict):
            out.update((f"{key}.{k}", v) for k, v in value.items())
        else:
            out[key] = value
    return dict(sorted(out.items()))


def reset_peak_host_memory_stats() -> None:
    """Reset the "peak" stats tracked by the host memory allocator."""
    alloc = _host_allocator()
    if alloc is not None:
        alloc.reset_host_stats(peak=True)


def reset_accumulated_host_memory_stats() -> None:
    """Reset the "accumulated" (historical) stats tracked by the host memory allocator
    (the ``allocated``/``freed`` totals and the timing counters)."""
    alloc = _host_allocator()
    if alloc is not None:
        alloc.reset_host_stats(peak=False)
