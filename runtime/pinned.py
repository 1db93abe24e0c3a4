"""Page-locked ("pinned") host memory: a caching allocator over ``cuMemHostAlloc``, and NumPy
arrays that live in it (what ``Tensor.pin_memory()``, ``pin_memory=True`` factories and
``DataLoader(pin_memory=True)`` give).

Note [pinned memory]: the GPU's copy engines read and write page-locked memory directly, so a
host-to-device copy from it is queued on the stream and returns at once (``non_blocking=True``):
the copy overlaps with the host's next work and with kernels on other streams. From pageable
memory the driver first stages the bytes itself, and the call returns only then. The price is
that the host memory must not be reused until the copies that read or write it have run. The
policy is PyTorch's ``CachingHostAllocator``:

- sizes are rounded up to a power of two (at least 512 bytes) and a block is never split, so
  a freed block is kept whole and the next request of its size takes it back: a data loader's
  batches, all of one size, cycle through a few blocks instead of pinning fresh pages (which
  costs ~100x a pageable allocation) every step;
- ``record_stream(block, stream)`` (done by each non-blocking copy) says work on ``stream``
  uses the block; when the block is freed, an event is recorded on each such stream and the
  block is reused only after all have completed (polled at each allocation);
- out of page-locked memory: every cached block is released and the allocation retried once.

Blocks freed while their stream is being captured into a CUDA graph get their events after
the capture (an event recorded inside a capture cannot be queried); until then they are not
reused.

Like runtime/allocator.py the policy touches no device: ``CachingHostAllocator`` is given
``raw_alloc``, ``raw_free``, ``record_event`` and ``capturing``, so tests drive it with events
whose completion they control; ``host_allocator()`` runs it over the driver.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from . import driver as _drv
from . import streams as _streams

__all__ = ["CachingHostAllocator", "copy", "empty", "host_allocator", "is_pinned", "record_stream"]

_MIN_BLOCK = 512
_NO_ACCELERATOR = "Cannot access accelerator device when none is available."


class HostBlock:
    """One page-locked allocation: ``ptr``, ``size`` (bytes, a power of two), and the streams
    that used it since it was last handed out."""

    __slots__ = ("events", "ptr", "size", "streams")

    def __init__(self, ptr: int, size: int):
        self.ptr, self.size = ptr, size
        self.streams: set = set()
        self.events: list | None = None

    def __repr__(self) -> str:
        return f"HostBlock(ptr=0x{self.ptr:x}, size={self.size})"


_HOST_STATS = ("allocations", "allocated_bytes", "active_requests", "active_bytes")
_HOST_TIMES = ("host_alloc_time", "host_free_time")


class HostMemoryStats:
    """PyTorch's ``host_memory_stats`` counters of one ``CachingHostAllocator``.

    ``allocations``/``allocated_bytes``: blocks held from the driver (handed out or cached);
    ``active_requests``/``active_bytes``: blocks handed out and not yet reusable. Each has
    ``current``, ``peak``, ``allocated`` (total increase) and ``freed`` (total decrease);
    ``host_alloc_time``/``host_free_time`` time the driver calls in microseconds.
    """

    def __init__(self):
        self._stats = {name: [0, 0, 0, 0] for name in _HOST_STATS}  # current, peak, +, -
        self._times = {name: [0.0, 0.0, 0.0, 0] for name in _HOST_TIMES}  # total, max, min, n

    def add(self, name: str, n: int) -> None:
        st = self._stats[name]
        st[0] += n
        if n >= 0:
            st[2] += n
            st[1] = max(st[1], st[0])
        else:
            st[3] -= n

    def timed(self, name: str, start: float) -> None:
        """Counts one driver call that began at ``time.perf_counter()`` ``start``."""
        us = (time.perf_counter() - start) * 1e6
        t = self._times[name]
        t[0] += us
        t[1] = max(t[1], us)
        t[2] = us if not t[3] else min(t[2], us)
        t[3] += 1

    def as_nested_dict(self) -> dict:
        out: dict = {name: dict(zip(("current", "peak", "allocated", "freed"), st))
                     for name, st in self._stats.items()}
        out["num_host_alloc"] = self._stats["allocations"][2]
        out["num_host_free"] = self._stats["allocations"][3]
        for name, (total, top, low, n) in self._times.items():
            out[name] = {"total": total, "max": top, "min": low, "count": n,
                         "avg": total / n if n else 0.0}
        return out

    def reset_peak(self) -> None:
        for st in self._stats.values():
            st[1] = st[0]

    def reset_accumulated(self) -> None:
        for st in self._stats.values():
            st[2] = st[3] = 0
        for t in self._times.values():
            t[:] = [0.0, 0.0, 0.0, 0]


def _rounded(nbytes: int) -> int:
    return max(_MIN_BLOCK, 1 << (max(nbytes, 1) - 1).bit_length())


class CachingHostAllocator:
    """The caching policy of Note [pinned memory] over an injected raw allocator.

    Args:
        raw_alloc: ``raw_alloc(nbytes) -> ptr | None`` (None: out of page-locked memory).
        raw_free: ``raw_free(ptr)``.
        record_event: ``record_event(stream) -> event`` with ``event.query() -> bool``, the
            event already recorded on ``stream`` (an opaque, hashable key).
        capturing: ``capturing(stream) -> bool``: whether ``stream`` is being captured.
    """

    def __init__(self, raw_alloc, raw_free, record_event, capturing=lambda stream: False):
        self._raw_alloc, self._raw_free = raw_alloc, raw_free
        self._record_event, self._capturing = record_event, capturing
        self._lock = threading.RLock()
        self._blocks = _drv._Ranges()           # every block held, by address
        self._by_ptr: dict[int, HostBlock] = {}
        self._free: dict[int, list[HostBlock]] = {}  # size -> reusable blocks
        self._pending: list[HostBlock] = []     # freed, waiting on events (or on a capture)
        self._stats = dict.fromkeys(("allocated_bytes", "allocated_bytes_peak", "reserved_bytes",
                                     "num_host_alloc", "num_host_free"), 0)
        self.host_stats = HostMemoryStats()  # (PyTorch's host_memory_stats)

    def malloc(self, nbytes: int) -> HostBlock:
        """A block of at least ``nbytes`` page-locked bytes, reused from the cache when one of
        that rounded size is free."""
        size = _rounded(nbytes)
        with self._lock:
            self._process_events()
            cached = self._free.get(size)
            block = cached.pop() if cached else None
            if block is None:
                start = time.perf_counter()
                ptr = self._raw_alloc(size)
                if ptr is None:  # release every cached block, then try once more
                    self._release_cached()
                    start = time.perf_counter()
                    ptr = self._raw_alloc(size)
                if ptr is None:
                    raise RuntimeError(f"pin_memory: out of page-locked host memory allocating "
                                       f"{size} bytes ({self._stats['reserved_bytes']} bytes "
                                       f"held by tritongrad)")
                block = HostBlock(ptr, size)
                self._blocks.add(ptr, size)
                self._by_ptr[ptr] = block
                self._stats["reserved_bytes"] += size
                self._stats["num_host_alloc"] += 1
                self.host_stats.timed("host_alloc_time", start)
                self.host_stats.add("allocations", 1)
                self.host_stats.add("allocated_bytes", size)
            self._count_active(block, 1)
            s = self._stats
            s["allocated_bytes"] += size
            s["allocated_bytes_peak"] = max(s["allocated_bytes_peak"], s["allocated_bytes"])
            return block

    def free(self, block: HostBlock) -> None:
        """Gives ``block`` back: reusable at once, or once the streams that used it are done."""
        with self._lock:
            self._stats["allocated_bytes"] -= block.size
            if block.streams:
                self._pending.append(block)
                self._arm(block)
            else:
                self._free.setdefault(block.size, []).append(block)
                self._count_active(block, -1)

    def record_stream(self, block: HostBlock, stream) -> None:
        """Work queued on ``stream`` reads or writes ``block``: it is not reused until that work
        has run."""
        with self._lock:
            block.streams.add(stream)

    def block_at(self, ptr: int) -> HostBlock | None:
        """The block holding host address ``ptr``, or None."""
        with self._lock:
            start = self._blocks.find(ptr)
            return None if start is None else self._by_ptr[start]

    def empty_cache(self) -> None:
        """Returns every cached block whose uses have completed to the driver."""
        with self._lock:
            self._process_events()
            self._release_cached()

    def stats(self) -> dict:
        """allocated_bytes (current and peak), reserved_bytes (held from the driver), and the
        number of driver allocations and frees so far."""
        with self._lock:
            return dict(self._stats)

    def host_memory_stats(self) -> dict:
        """PyTorch's ``host_memory_stats_as_nested_dict`` (see ``HostMemoryStats``)."""
        with self._lock:
            return self.host_stats.as_nested_dict()

    def reset_host_stats(self, peak: bool) -> None:
        """Sets the peaks to the current values (``peak``), or zeroes the totals and times."""
        with self._lock:
            if peak:
                self.host_stats.reset_peak()
            else:
                self.host_stats.reset_accumulated()

    # -- internals ---------------------------------------------------------------------------
    def _count_active(self, block: HostBlock, n: int) -> None:
        self.host_stats.add("active_requests", n)
        self.host_stats.add("active_bytes", n * block.size)

    def _arm(self, block: HostBlock) -> None:
        """Records the events a pending block waits on, unless a stream that used it is being
        captured (then at a later poll)."""
        if any(self._capturing(s) for s in block.streams):
            return
        block.events = [self._record_event(s) for s in block.streams]

    def _process_events(self) -> None:
        # (taken out first: a block freed meanwhile, by a destructor that a garbage collection
        # runs inside this loop, lands in the fresh list instead of being dropped)
        pending, self._pending = self._pending, []
        for block in pending:
            if block.events is None:
                self._arm(block)
            if block.events is not None and all(ev.query() for ev in block.events):
                block.events = None
                block.streams.clear()
                self._free.setdefault(block.size, []).append(block)
                self._count_active(block, -1)
            else:
                self._pending.append(block)

    def _release_cached(self) -> None:
        for blocks in self._free.values():
            for block in blocks:
                start = time.perf_counter()
                self._raw_free(block.ptr)
                self.host_stats.timed("host_free_time", start)
                self.host_stats.add("allocations", -1)
                self.host_stats.add("allocated_bytes", -block.size)
                self._blocks.remove(block.ptr)
                del self._by_ptr[block.ptr]
                self._stats["reserved_bytes"] -= block.size
                self._stats["num_host_free"] += 1
        self._free.clear()


_allocator: CachingHostAllocator | None = None
_allocator_lock = threading.Lock()


def host_allocator() -> CachingHostAllocator:
    """The process's page-locked memory allocator (over the CUDA driver; created on first
    use). Raises RuntimeError where no CUDA device is available, as PyTorch does."""
    global _allocator
    if _allocator is not None:
        return _allocator
    if not _drv.is_available():
        raise RuntimeError(_NO_ACCELERATOR)
    with _allocator_lock:
        if _allocator is None:
            drv = _drv.get_driver()

            def record_event(key):
                index, handle = key
                ev = _streams.Event()
                ev._record_on(index, handle)
                return ev

            index = _streams.current_device()  # (the memory is portable: any context sees it)
            _allocator = CachingHostAllocator(
                raw_alloc=lambda n: drv.host_alloc(index, n),
                raw_free=lambda p: drv.host_free(index, p),
                record_event=record_event,
                capturing=lambda key: bool(drv.capturing) and drv.stream_is_capturing(*key))
    return _allocator


class _Owner:
    """The base of a pinned NumPy array: returns its block when the last view of it dies."""

    __slots__ = ("__array_interface__", "_allocator", "_block")

    def __init__(self, allocator: CachingHostAllocator, block: HostBlock, nbytes: int):
        self._allocator, self._block = allocator, block
        self.__array_interface__ = {"data": (block.ptr, False), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}

    def __del__(self):
        try:  # destructors never raise (also at interpreter exit)
            block, self._block = self._block, None
            if block is not None:
                self._allocator.free(block)
        except Exception:  # noqa: BLE001
            pass


def empty(shape: tuple, dtype) -> np.ndarray:
    """An uninitialised C-contiguous NumPy array of ``shape`` and NumPy ``dtype`` in pinned
    memory."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    alloc = host_allocator()
    raw = np.asarray(_Owner(alloc, alloc.malloc(nbytes), nbytes))
    return raw[:nbytes].view(dtype).reshape(shape)


def copy(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of NumPy array ``a`` in pinned memory (an ndarray subclass, such as
    the CPU backend's bfloat16 arrays, stays one)."""
    out = empty(a.shape, a.dtype)
    np.copyto(out, a.view(np.ndarray))
    return out if type(a) is np.ndarray else out.view(type(a))


def _block_of(a: np.ndarray) -> HostBlock | None:
    if _allocator is None:  # nothing was ever pinned (and CUDA is not initialised for this)
        return None
    return _allocator.block_at(a.__array_interface__["data"][0])


def is_pinned(a: np.ndarray) -> bool:
    """Whether NumPy array ``a``'s memory lies in pinned memory."""
    return _block_of(a) is not None


def record_stream(a: np.ndarray, index: int, handle: int) -> bool:
    """Marks the pinned memory of ``a`` as used by work queued on stream ``handle`` of device
    ``index`` (Note [pinned memory]); False (nothing done) when ``a`` is not pinned."""
    block = _block_of(a)
    if block is None:
        return False
    _allocator.record_stream(block, (index, handle))
    return True
