"""Private memory pools of the caching allocator: ``MemPool`` and ``use_mem_pool``, as
``torch.cuda``'s.

A ``MemPool`` is a private pool of the kind a CUDA graph captures into (Note [graph pools] and
Note [mem pools] in runtime/allocator.py): its id comes from ``graph_pool_handle()``, so a
``MemPool``'s ``id`` may also be passed as ``pool=`` to ``tg.cuda.graph``. Inside
``use_mem_pool(pool)`` this thread's allocations on the device come from the pool's own
segments; freed, its blocks stay in it, for its later allocations only, until the pool dies and
``empty_cache`` (or the pool's own release) gives its free segments back to the driver.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from . import memory as _memory
from . import streams as _streams
from .graphs import graph_pool_handle

__all__ = ["MemPool", "use_mem_pool"]


class MemPool:
    """MemPool represents a pool of memory in a caching allocator. Currently, it's just the
    ID of the pool object maintained in the caching allocator of the current device.

    Args:
        allocator: must be None: the pool's memory comes from the device's caching
            allocator (tritongrad has no pluggable allocators; see
            ``tg.cuda.CUDAPluggableAllocator``).
        use_on_oom (bool): a bool that indicates if this pool can be used as a last resort if
            a memory allocation outside of the pool fails due to Out Of Memory. This is False
            by default.
        no_split (bool): must be False (a pool whose segments are never split is not
            supported).

    Example:
        >>> pool = tg.cuda.MemPool()  # doctest: +SKIP
        >>> with tg.cuda.use_mem_pool(pool):
        ...     x = tg.empty(1024, device="cuda")  # from the pool's segments
        >>> pool.snapshot()[0]["segment_pool_id"] == pool.id
        True
    """

    def __init__(self, allocator=None, use_on_oom: bool = False, no_split: bool = False):
        if allocator is not None:
            raise NotImplementedError("MemPool: a custom allocator is not supported: "
                                      "tritongrad's pools come from its caching allocator")
        if no_split:
            raise NotImplementedError("MemPool: no_split=True is not supported")
        self._device = _streams.current_device()
        self._id = graph_pool_handle()
        _memory.allocator(self._device).create_pool(self._id, bool(use_on_oom))

    @property
    def id(self) -> tuple[int, int]:
        """Returns the ID of this pool as a tuple of two ints."""
        return self._id

    def use_count(self) -> int:
        """Returns the reference count of this pool."""
        return _memory.allocator(self._device).pool_use_count(self._id)

    def snapshot(self) -> list[dict]:
        """Return a snapshot of the CUDA memory allocator pool state across all devices.

        Interpreting the output of this function requires familiarity with the memory
        allocator internals (see ``tg.cuda.memory_snapshot``).
        """
        return _memory.memory_snapshot(self._id)

    def __del__(self):
        try:  # destructors never raise
            alloc = _memory.allocator(self._device)
            alloc.release_pool(self._id)
            alloc.empty_cache(self._id)  # (as PyTorch's: its free segments go back at once)
        except Exception:  # noqa: BLE001, S110 - destructors never raise
            pass

    def __repr__(self) -> str:
        return f"<tritongrad.cuda.MemPool id={self._id} device=cuda:{self._device}>"


@contextlib.contextmanager
def use_mem_pool(pool: MemPool, device=None) -> Iterator[None]:
    """A context manager that routes allocations to a given pool.

    Args:
        pool (MemPool): a MemPool object to be made active so that allocations route to this
            pool.
        device (device or int, optional): selected device. Uses MemPool on the current device,
            given by :func:`current_device`, if :attr:`device` is ``None`` (default).

    .. note::
        This context manager makes only current thread's allocations route to the given
        pool. If a new thread is spawned inside the context manager (e.g. by calling
        backward) the allocations in that thread will not route to the given pool.
    """
    if not isinstance(pool, MemPool):
        raise TypeError(f"use_mem_pool: expected a MemPool, got {type(pool).__name__}")
    alloc = _memory.allocator(_streams.device_index(device))
    thread = threading.get_ident()
    alloc.begin_allocate_thread_to_pool(pool.id, thread)
    try:
        yield
    finally:
        alloc.end_allocate_thread_to_pool(pool.id, thread)
        alloc.release_pool(pool.id)
