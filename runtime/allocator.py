"""The caching allocator: pure policy over an injected raw allocator and event recorder.

Nothing here touches a device. ``CachingAllocator`` is given ``raw_alloc(nbytes) -> ptr | None``
(None: the device is out of memory), ``raw_free(ptr)`` and ``record_event(stream) -> event``
(an event with ``query() -> bool``, already recorded on ``stream``), so the tests run it over
host memory with events whose completion they control, and runtime/memory.py runs it over the
driver. Streams are opaque hashable keys (the runtime uses CUstream handles).

Policy (PyTorch's and CuPy's caching allocators'; docs/runtime.md):
- sizes are rounded up to 512 bytes;
- small requests (<= 1 MiB) are carved from 2 MiB segments; requests up to 10 MiB from 20 MiB
  segments; larger ones get their own segment rounded up to 2 MiB. A cached block larger than
  the request is split (small pool: when >= 512 bytes remain; large pool: when > 1 MiB
  remains); freed neighbours inside a segment merge again;
- free blocks are kept per (stream, pool) and reused only on the stream they were allocated
  on: work queued on that stream runs in order, so the next user cannot overtake the last;
- Note [cross-stream use]: ``record_stream(block, s)`` says work on stream ``s`` uses the
  block. When such a block is freed, an event is recorded on each of those streams and the
  block is not reused (nor returned to the driver) until all have completed; events are polled
  at each allocation and at ``empty_cache``;
- out of memory: release one cached segment that is large enough (or the largest ones) and
  retry; then collect garbage (tensors in reference cycles return their blocks), release every
  unused cached segment and retry; then raise ``OutOfMemoryError``;
- a per-process memory fraction (``set_memory_fraction``, PyTorch's
  ``set_per_process_memory_fraction``) caps reserved memory at ``fraction * total``: a new
  segment that would pass the cap is refused as if the device were full, so the same
  release-and-retry policy runs before ``OutOfMemoryError``.

Note [graph pools]: while a CUDA graph captures stream ``s`` (``begin_allocate_to_pool``),
allocations on ``s`` come from the graph's private pool: free lists and segments of their own,
never seen by other allocations. A replay writes every block the capture used, freed or not,
so the pool's blocks stay reserved for the graph: when they are freed they go back to the
private pool, which only later captures into the same pool (``CUDAGraph.pool()``,
``graph_pool_handle()``) reuse. No segment is returned to the driver while a capture is
underway (``cuMemFree`` would free memory the graph records), and blocks used on other streams
and freed during a capture get their events when the capture ends (an event recorded inside a
capture cannot be queried). When the last graph using a pool is reset (``release_pool``), its
segments become ordinary cached memory to release: ``empty_cache`` and the out-of-memory path
free those that are wholly free, as they free the general pool's.

Note [hot blocks]: a training step frees and reallocates the same sizes over and over, and
splitting a block off a free one, then merging it back when it is freed, is most of what an
allocation costs in Python. So a block freed with nothing pending (no other stream used it, no
capture underway) is first kept whole in a "hot" list per (stream, size), state cached, and
the next request of exactly that rounded size on that stream takes it back: the best fit there
is, found with one dict lookup. Cached blocks count as free in every statistic. A request that
finds neither its size cached nor a free block that fits takes the smallest larger cached block
(split as a free one would be); only when none is large enough does it look, in the segments of
its stream and pool, for a run of free and cached neighbours that adds up to its size, and
merges the cached blocks of the first such run into the free lists (``_find_run``). A new
segment is carved only when there is no such run (or as a spare segment, below), and all
cached blocks are merged before segments are released. (Merging all of the stream's cached
blocks of the pool at such a miss, as before 2026-11-30, threw away the cache the rest of the
step would have hit: 71 of a GPT step's ~270 mallocs took the slow path, every step; merging
one run, 9-12.)

Note [spare segments]: taking a request out of cached blocks of other sizes (splitting a larger
one, merging a run) takes them from the requests they were cached for, later in the same step;
those then miss in turn, and the next step repeats the cycle: a GPT step (perf/
bench_host_step.py) took the slow path 11-12 times a step, every step, ~0.6 ms of host time
on the 2-core VM, 4 of them merging runs (~60 us each: a walk along the segments). So where the
cache could serve such a request, a new segment is carved for it instead, as long as the
segments carved so ("spare") stay within 1/``SPARE_SHARE`` (1/8) of reserved memory: the cache
then grows to hold every size at its peak count, and a steady step stops missing. The GPT step:
no slow-path malloc from its seventh step on, 68 MiB reserved instead of 66. The budget bounds
what this can cost a program whose sizes keep changing (there the spare segments hold sizes
that may never come back): once it is spent, the cache serves such requests as before. Spare
segments wait for a steady state: the cache must have served 32 such misses (``SPARE_AFTER``)
since the last request it could not serve (a program still growing, as in its first steps,
carves segments anyway), and the device must keep 1/8 of its memory free after one, so that a
spare segment never pushes a nearly full device into the out-of-memory path's releases. A spare
segment the device or the memory fraction refuses is no out-of-memory: the cache serves the
request. Released segments return their bytes to the budget.

Note [hot counts]: the statistics of a hot malloc or free (ten counters with their peaks, per
pool and for all pools) cost as much as the rest of the allocator's work for that call, and
are rarely read. So the hot path only appends the event to a log, one int that packs the
block's size, its slack (size - requested) and its pool, negated for a free; the log is folded
into the counters, in order, before anything reads them or changes them otherwise (``_fold``,
with NumPy: a running sum per counter gives its current value, its maximum the peak, its
negative steps the freed total), and when it grows long. The slow path logs its mallocs and its
frees of blocks reusable at once the same way: folding the log at every slow malloc (before
2026-11-30) cost 30-140 us each, ~1.5 ms of a GPT step's host time. Segment counts never meet
the logged counters, so they are applied at once; the rest (a graph pool's blocks, frees
waiting on events) folds the log first.

Note [mem pools]: a ``MemPool`` (``tg.cuda.MemPool``, runtime/mempool.py) is a private pool of
the same kind as a graph's, and ``graph_pool_handle()`` ids name both. ``create_pool`` gives it
its first user; ``begin_allocate_thread_to_pool`` routes one thread's allocations (on any
stream) to it, as ``use_mem_pool`` does, and a capturing stream's pool comes first. Its blocks
never go hot; freed, they go back to its free lists, for its later allocations only.

Note [uncached segments]: with caching disabled (``set_caching(False)``, PyTorch's
``caching_allocator_enable(False)``) a general-pool request gets a segment of exactly its
rounded size, never cached blocks, and the segment goes back to ``raw_free`` (after a
synchronize, as ``cuMemFree`` would do) as soon as it is freed and its recorded streams are
done; during a capture it stays cached instead. Blocks cached before are left for
``empty_cache``. The three routings (capture pools, thread pools, disabled caching) share
one attribute, ``_routed``, that the hot paths test.

Thread-safe (one lock per allocator). Frees that arrive re-entrantly (a garbage collection
running ``Storage.__del__`` in the middle of an allocator call) are deferred to the end of the
outer call, so the free lists are never seen half-edited.
"""

from __future__ import annotations

import bisect
import gc
import numbers
import threading
from typing import NamedTuple

import numpy as np

__all__ = [
    "Block",
    "CachingAllocator",
    "OutOfMemoryError",
    "format_bytes",
    "round_size",
    "segment_size",
]

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
MIN_BLOCK = 512            # every size is a multiple of this
SMALL_SIZE = 1 * MiB       # largest request served from the small pool
SMALL_BUFFER = 2 * MiB     # small-pool segment size
LARGE_BUFFER = 20 * MiB    # segment size for requests up to MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 * MiB
ROUND_LARGE = 2 * MiB      # large segments are rounded up to this

_ALLOCATED, _PENDING, _FREE, _CACHED = 0, 1, 2, 3  # block states (Note [hot blocks])


class OutOfMemoryError(RuntimeError):
    """The device has no memory left for an allocation, even after releasing cached blocks.

    Exported as ``tg.cuda.OutOfMemoryError``.
    """


def format_bytes(n: float) -> str:
    """``2.00 GiB``, ``512 B``: binary units with two decimals."""
    if abs(n) < KiB:
        return f"{int(n)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.2f} {unit}"
    raise AssertionError


def round_size(nbytes: int) -> int:
    """The block size for a request: a multiple of 512 bytes, at least 512."""
    return max(MIN_BLOCK, -(-nbytes // MIN_BLOCK) * MIN_BLOCK)


def segment_size(size: int) -> int:
    """The raw allocation made when no cached block fits a (rounded) ``size``."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


class _Segment:
    __slots__ = ("head", "hot", "pool", "ptr", "size", "small", "stream", "uncached")

    def __init__(self, ptr, size, stream, small, pool=None, uncached=False):
        self.ptr, self.size, self.stream, self.small = ptr, size, stream, small
        self.pool: _PrivatePool | None = pool  # None: the general pool
        # its first block, which no merge ever absorbs (it has no free predecessor): the walk
        # along the segment starts there (``snapshot``)
        self.head: Block | None = None
        # Note [uncached segments]: made while caching is disabled, given back when freed
        self.uncached = uncached
        # the pool field of its blocks' hot events (Note [hot counts]: 2 small, 1 large), or 0
        # for a private pool or an uncached segment, whose blocks are never cached hot
        self.hot = 0 if pool is not None or uncached else 2 if small else 1


class _PrivatePool:
    """A private memory pool: a CUDA graph's or a ``MemPool``'s (Note [graph pools])."""

    __slots__ = ("free", "id", "segments", "use_count", "use_on_oom")

    def __init__(self, pool_id):
        self.id = pool_id
        self.free: dict[tuple, list] = {}  # (stream, small) -> sorted [(size, ptr)]
        self.segments = 0                   # segments carved for it, not yet released
        self.use_count = 0  # captures underway, graphs and MemPools that keep it, use_mem_pools
        self.use_on_oom = False  # its free blocks may serve a general request out of memory


class Block:
    """A piece of a segment: handed out by ``malloc``, given back by ``free``.

    Attributes:
        ptr: the address; size: bytes reserved for it (rounded); requested: bytes asked for;
        stream: the stream it was allocated on (and will be reused on).
    """

    __slots__ = (
        "base",
        "code",
        "events",
        "next",
        "prev",
        "ptr",
        "requested",
        "segment",
        "size",
        "state",
        "stream",
        "stream_uses",
    )

    def __init__(self, ptr, size, stream, segment, prev=None, next=None):
        self.ptr, self.size, self.stream, self.segment = ptr, size, stream, segment
        self.prev, self.next = prev, next
        self.requested = 0
        self.state = _FREE
        # its hot events (Note [hot counts]): base, the size and pool fields, set when it is
        # allocated on the slow path; code, the event of its last malloc, whose negation its
        # free logs. 0: its free takes the slow path (a graph's pool)
        self.base = self.code = 0
        self.stream_uses: set | None = None
        self.events: list | None = None

    def __repr__(self) -> str:
        state = ("allocated", "pending", "free", "cached")[self.state]
        return f"Block(ptr=0x{self.ptr:x}, size={self.size}, stream={self.stream!r}, {state})"


class StatView(NamedTuple):
    """One statistic of one pool: ``current``, ``peak``, ``allocated`` (total added) and
    ``freed`` (total removed)."""

    current: int
    peak: int
    allocated: int
    freed: int


_STAT_NAMES = ("allocation", "segment", "active", "allocated_bytes", "reserved_bytes",
               "active_bytes", "requested_bytes")
_POOLS = ("all", "large_pool", "small_pool")
# Counters live in flat lists at 3 * stat + pool (pool 0: all, 1: large, 2: small).
_ALLOCATION, _SEGMENT, _ACTIVE, _ALLOCATED_BYTES, _RESERVED_BYTES, _ACTIVE_BYTES, \
    _REQUESTED_BYTES = range(7)


# The fold's columns (Note [hot counts]): the counters each moves, and its pool (0: all).
_FOLDED = tuple((stats, p) for p in range(3) for stats in (
    (_ALLOCATION, _ACTIVE), (_ALLOCATED_BYTES, _ACTIVE_BYTES), (_REQUESTED_BYTES,)))
# hot events a malloc logs before it folds them anyway. The fold's cost per event grows with
# the log past a few thousand events (its arrays, megabytes at 1 << 14, then come from fresh
# memory).
_FOLD_AT = 1 << 12
# A hot event is one int (Note [hot counts]): +-(size << 15 | pool << 22 | slack), pool 1
# (large) or 2 (small), slack = size - requested. Sizes are multiples of 512, so size << 15
# leaves bits 0-23 free. A block's slack is below 512 plus the largest remainder a large block
# keeps unsplit (1 MiB, see _malloc), far below 1 << 22; a block with more (it cannot happen)
# would be freed on the slow path, which counts exactly.
_SLACK_BITS = 22
_SLACK_MASK = (1 << _SLACK_BITS) - 1
# Below this many events, a fold counts them one by one in Python (~1.3 us each); from it on,
# with NumPy (~20 array calls, ~45 us however short the log; the two meet near 32 events on
# the 2-core VM, 2026-11-30). A GPT step's slow-path mallocs (about 85 of its 270) each fold
# the few hot events logged since the last one: through NumPy alone that cost ~4 ms of host
# time per step.
_FOLD_NUMPY_AT = 32


class CachingAllocator:
    """Caches device memory per stream so that allocations rarely reach the driver.

    Args:
        raw_alloc: ``raw_alloc(nbytes) -> int | None``; None means out of memory.
        raw_free: ``raw_free(ptr)``.
        record_event: ``record_event(stream) -> event`` with ``event.query() -> bool``; the
            event is already recorded on ``stream``.
        device: the device's name, for messages (``"cuda:0"``).
        mem_info: optional ``() -> (free, total)`` of the device, for messages.
        synchronize: optional; called once before cached segments go back to ``raw_free``
            (the driver frees memory that work queued on the allocation stream may still use).
        collect_garbage: called before the last retry on out-of-memory (``gc.collect``).
    """

    # Note [spare segments]: carved once the cache has served SPARE_AFTER misses since the
    # last segment it could not, while they stay within 1/SPARE_SHARE of reserved memory
    SPARE_AFTER = 32
    SPARE_SHARE = 8

    def __init__(self, raw_alloc, raw_free, record_event, *, device: str = "cuda:0",
                 mem_info=None, synchronize=None, collect_garbage=gc.collect):
        self._raw_alloc, self._raw_free, self._record_event = raw_alloc, raw_free, record_event
        self.device = device
        self._mem_info = mem_info
        self._synchronize = synchronize
        self._collect_garbage = collect_garbage
        self._lock = threading.RLock()
        self._depth = 0               # > 0 inside a public call (on the lock's owner thread)
        self._deferred: list[Block] = []
        self._pools: dict[tuple, list] = {}   # (stream, small) -> sorted [(size, ptr)]
        self._free: dict[int, Block] = {}     # ptr -> free block
        self._hot: dict[tuple, list] = {}     # (stream, size) -> cached blocks (Note [hot blocks])
        self._pending: list[Block] = []       # freed blocks waiting on events
        self._segments: dict[int, _Segment] = {}
        self._private: dict[tuple, _PrivatePool] = {}       # pool id -> pool
        self._capture_pools: dict[object, _PrivatePool] = {}  # capturing stream -> its pool
        self._capture_frees: list[tuple[Block, set]] = []  # cross-stream frees in a capture
        self._thread_pools: dict[int, list] = {}  # thread id -> its use_mem_pool pools, stacked
        self._uncached = False  # Note [uncached segments]
        # any capture pool, thread pool or disabled caching: the hot paths step aside (one
        # attribute for all three, so that the hot paths test no more than they did)
        self._routed = False
        n = 3 * len(_STAT_NAMES)
        self._cur, self._peak, self._freed, self._base = [0] * n, [0] * n, [0] * n, [0] * n
        self._log: list[int] = []  # hot mallocs and frees not yet counted (Note [hot counts])
        self._fold_buf: tuple | None = None  # _fold's work arrays, made at the first fold
        self._spare = 0  # bytes of spare segments (Note [spare segments]) not yet released
        self._served = 0  # misses the cache served since it last could not (or a release)
        self.num_alloc_retries = 0
        self.num_ooms = 0
        self.num_device_alloc = 0
        self.num_device_free = 0
        self.memory_fraction = 1.0
        self._total_memory: int | None = None  # the total the fraction was taken of
        self._limit: int | None = None          # bytes reserved memory may reach; None: no cap

    # -- public operations -----------------------------------------------------------------
    def malloc(self, nbytes: int, stream) -> Block:
        """A block of at least ``nbytes`` for use on ``stream``.

        Raises:
            OutOfMemoryError: the device is full even after releasing the cache.
        """
        # (acquire/release, not ``with``: the with statement cost twice as much on a path
        # of a few hundred nanoseconds)
        lock = self._lock
        lock.acquire()
        try:
            if nbytes > 0 and not (self._depth or self._pending or self._routed):
                size = -(-nbytes // MIN_BLOCK) * MIN_BLOCK
                hot = self._hot.get((stream, size))
                if hot:  # Note [hot blocks]
                    block = hot.pop()
                    block.state = _ALLOCATED
                    block.requested = nbytes
                    block.code = code = block.base + size - nbytes  # (its size is size)
                    log = self._log
                    log.append(code)
                    if len(log) >= _FOLD_AT:
                        self._fold()
                    return block
            self._depth += 1
            try:
                return self._malloc(nbytes, stream)
            finally:
                if self._deferred:
                    self._leave()
                else:
                    self._depth -= 1
        finally:
            lock.release()

    def free(self, block: Block) -> None:
        """Returns ``block``; it is reused on its stream once every recorded use is done."""
        lock = self._lock
        lock.acquire()
        try:
            if (block.state == _ALLOCATED and block.stream_uses is None and not self._depth
                    and not self._routed and block.code):
                self._log.append(-block.code)  # Note [hot blocks]
                block.state = _CACHED
                hot = self._hot.get(key := (block.stream, block.size))
                if hot is None:
                    self._hot[key] = [block]
                else:
                    hot.append(block)
                return
            if self._depth:  # re-entered from a destructor run during another call
                self._deferred.append(block)
                return
            self._depth += 1
            try:
                self._release_block(block)
            finally:
                if self._deferred:
                    self._leave()
                else:
                    self._depth -= 1
        finally:
            lock.release()

    def record_stream(self, block: Block, stream) -> None:
        """Marks ``block`` as used by work on ``stream`` (see Note [cross-stream use])."""
        with self._lock:
            if block.state != _ALLOCATED:
                raise RuntimeError(f"record_stream: {block!r} is not allocated")
            if stream != block.stream:
                if block.stream_uses is None:
                    block.stream_uses = set()
                block.stream_uses.add(stream)

    # -- graph pools (Note [graph pools]) --------------------------------------------------
    def begin_allocate_to_pool(self, pool_id: tuple, stream) -> None:
        """Serves allocations on ``stream`` from the private pool ``pool_id`` (created on first
        use) until ``end_allocate_to_pool(stream)``; the pool is kept until ``release_pool``."""
        with self._lock:
            if stream in self._capture_pools:
                raise RuntimeError(f"begin_allocate_to_pool: stream {stream!r} already "
                                   f"allocates to pool {self._capture_pools[stream].id}")
            self._capture_pools[stream] = self._incref_pool(pool_id)
            self._reroute()

    def end_allocate_to_pool(self, stream) -> None:
        """Allocations on ``stream`` come from the general pool again (the capture ended)."""
        with self._lock:
            self._depth += 1
            try:
                del self._capture_pools[stream]
                self._reroute()
                if not self._capture_pools:
                    frees, self._capture_frees = self._capture_frees, []
                    for block, uses in frees:
                        block.events = [self._record_event(s) for s in uses]
                        self._pending.append(block)
            finally:
                self._leave()

    def create_pool(self, pool_id: tuple, use_on_oom: bool = False) -> None:
        """Creates the private pool ``pool_id``, or adds a user to it (a ``MemPool``).

        ``use_on_oom``: its free blocks may serve a request of the general pool that would
        otherwise fail with ``OutOfMemoryError``."""
        with self._lock:
            pool = self._incref_pool(pool_id)
            pool.use_on_oom = pool.use_on_oom or use_on_oom

    def begin_allocate_thread_to_pool(self, pool_id: tuple, thread: int) -> None:
        """Serves the allocations of thread ``thread`` (``threading.get_ident()``), on any
        stream, from the private pool ``pool_id`` until ``end_allocate_thread_to_pool``; adds a
        user to the pool, dropped by ``release_pool`` (``use_mem_pool``). Nested calls stack;
        a capturing stream's pool comes first."""
        with self._lock:
            self._thread_pools.setdefault(thread, []).append(self._incref_pool(pool_id))
            self._reroute()

    def end_allocate_thread_to_pool(self, pool_id: tuple, thread: int) -> None:
        """Ends the innermost ``begin_allocate_thread_to_pool(pool_id, thread)``."""
        with self._lock:
            stack = self._thread_pools.get(thread, [])
            for i in range(len(stack) - 1, -1, -1):
                if stack[i].id == pool_id:
                    del stack[i]
                    break
            else:
                raise RuntimeError(f"end_allocate_thread_to_pool: thread {thread} does not "
                                   f"allocate to pool {pool_id}")
            if not stack:
                del self._thread_pools[thread]
            self._reroute()

    def pool_use_count(self, pool_id: tuple) -> int:
        """The users of the private pool ``pool_id`` (0 for an unknown one)."""
        with self._lock:
            pool = self._private.get(pool_id)
            return 0 if pool is None else pool.use_count

    def set_caching(self, enabled: bool) -> None:
        """Turns the cache off (Note [uncached segments]) or back on."""
        with self._lock:
            self._uncached = not enabled
            self._reroute()

    @property
    def caching(self) -> bool:
        """Whether freed blocks are cached (``set_caching``)."""
        return not self._uncached

    def release_pool(self, pool_id: tuple) -> None:
        """Drops one user of the private pool (a graph reset or deleted); with the last one its
        cached segments become releasable by ``empty_cache`` (Note [graph pools])."""
        with self._lock:
            pool = self._private.get(pool_id)
            if pool is None or pool.use_count == 0:
                raise RuntimeError(f"release_pool: pool {pool_id} is not in use")
            pool.use_count -= 1
            if pool.use_count == 0 and pool.segments == 0:
                del self._private[pool_id]

    def pool_reserved(self, pool_id: tuple) -> int:
        """Bytes of segments carved for the private pool ``pool_id`` (0 for an unknown one)."""
        with self._lock:
            return sum(seg.size for seg in self._segments.values()
                       if seg.pool is not None and seg.pool.id == pool_id)

    def empty_cache(self, pool_id: tuple | None = None) -> None:
        """Returns every cached segment with no block in use to ``raw_free``.

        Blocks waiting on events (freed after cross-stream use) are not released, nor the
        segments of a private pool still in use. ``pool_id``: only that private pool's.
        """
        with self._lock:
            self._depth += 1
            try:
                self._process_events()
                self._release_segments(None, pool_id)
            finally:
                self._leave()

    def snapshot(self, pool_id: tuple | None = None) -> list[dict]:
        """The segments and their blocks, in the format of PyTorch's ``memory_snapshot``.

        One dict per segment (sorted by address; only the private pool ``pool_id``'s if
        given): ``device``, ``address``, ``total_size``, ``allocated_size`` (blocks in use),
        ``active_size`` (and those freed but waiting on other streams' events),
        ``requested_size`` (what the blocks in use asked for), ``stream``, ``segment_type``
        (``"small"``/``"large"``), ``segment_pool_id`` (``(0, 0)``: the general pool),
        ``is_expandable`` (False), ``frames`` (``[]``: no history is recorded) and ``blocks``,
        each with ``address``, ``size``, ``requested_size``, ``state``
        (``"active_allocated"``, ``"active_pending_free"`` or ``"inactive"``) and ``frames``.
        A hot-cached block (Note [hot blocks]) is ``"inactive"``, as every statistic counts it.
        """
        index = int(self.device.rpartition(":")[2] or 0)
        states = {_ALLOCATED: "active_allocated", _PENDING: "active_pending_free"}
        out = []
        with self._lock:
            for seg in sorted(self._segments.values(), key=lambda g: g.ptr):
                seg_pool = (0, 0) if seg.pool is None else seg.pool.id
                if pool_id is not None and seg_pool != tuple(pool_id):
                    continue
                blocks, sizes = [], {"allocated_size": 0, "active_size": 0,
                                     "requested_size": 0}
                b = seg.head
                while b is not None:
                    state = states.get(b.state, "inactive")
                    used = b.state == _ALLOCATED
                    blocks.append({"address": b.ptr, "size": b.size,
                                   "requested_size": b.requested if used else 0,
                                   "state": state, "frames": []})
                    if used:
                        sizes["allocated_size"] += b.size
                        sizes["requested_size"] += b.requested
                    if state != "inactive":
                        sizes["active_size"] += b.size
                    b = b.next
                out.append({"device": index, "address": seg.ptr, "total_size": seg.size,
                            **sizes, "stream": seg.stream,
                            "segment_type": "small" if seg.small else "large",
                            "segment_pool_id": seg_pool, "is_expandable": False,
                            "frames": [], "blocks": blocks})
        return out

    def set_memory_fraction(self, fraction: float, total_memory: int) -> None:
        """Caps the memory this allocator may reserve at ``fraction * total_memory`` bytes.

        PyTorch's per-process memory fraction: the cap counts reserved memory (segments, in
        use or cached), so cached blocks are released to make room before an allocation that
        would pass it fails with ``OutOfMemoryError``. Memory already reserved above a lowered
        cap is kept until freed (``empty_cache``, or the out-of-memory path).

        Args:
            fraction: in [0, 1]; 1 allows the whole device, 0 no new segment.
            total_memory: the device's total memory in bytes.

        Raises:
            TypeError: ``fraction`` is not a real number.
            ValueError: ``fraction`` is outside [0, 1] (NaN included).
        """
        # bool is an int subclass but surely a mistake here; NumPy floats are Real.
        if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
            raise TypeError(f"Invalid type for fraction argument, must be `float`, not "
                            f"{type(fraction).__name__}")
        fraction = float(fraction)
        if not 0.0 <= fraction <= 1.0:  # also false for NaN
            raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
        with self._lock:
            self.memory_fraction = fraction
            self._total_memory = int(total_memory)
            self._limit = int(fraction * total_memory)  # PyTorch truncates the same way

    @property
    def memory_limit(self) -> int | None:
        """The cap on reserved bytes set by ``set_memory_fraction``, or None if never set."""
        return self._limit

    def reset_peak_memory_stats(self) -> None:
        """Sets every peak statistic to its current value."""
        with self._lock:
            self._fold()
            self._peak[:] = self._cur

    def reset_accumulated_memory_stats(self) -> None:
        """Zeroes the accumulated counters (``allocated``/``freed`` totals, retries, OOMs)."""
        with self._lock:
            self._fold()
            self._freed[:] = [0] * len(self._freed)
            self._base[:] = self._cur
            self.num_alloc_retries = self.num_ooms = 0
            self.num_device_alloc = self.num_device_free = 0

    # -- statistics ------------------------------------------------------------------------
    def stat(self, name: str, pool: str = "all") -> StatView:
        """One statistic, e.g. ``stat("allocated_bytes").peak``."""
        k = 3 * _STAT_NAMES.index(name) + _POOLS.index(pool)
        with self._lock:
            self._fold()
            cur, freed = self._cur[k], self._freed[k]
            return StatView(cur, self._peak[k], cur + freed - self._base[k], freed)

    @property
    def allocated(self) -> int:
        """Bytes in blocks handed out and not yet freed."""
        return self.stat("allocated_bytes").current

    @property
    def reserved(self) -> int:
        """Bytes obtained from the driver (segments), in use or cached."""
        return self.stat("reserved_bytes").current

    def memory_stats(self) -> dict:
        """PyTorch's ``memory_stats`` keys: ``"allocated_bytes.all.current"`` and friends.

        ``<stat>.<pool>.<current|peak|allocated|freed>`` for stat in allocation, segment,
        active, allocated_bytes, reserved_bytes, active_bytes, requested_bytes and pool in all,
        large_pool, small_pool; plus num_alloc_retries, num_ooms, num_device_alloc,
        num_device_free. "active" counts allocated blocks and freed ones still waiting on
        events.
        """
        with self._lock:
            out = {}
            for name in _STAT_NAMES:
                for pool in _POOLS:
                    for field, value in self.stat(name, pool)._asdict().items():
                        out[f"{name}.{pool}.{field}"] = value
            out["num_alloc_retries"] = self.num_alloc_retries
            out["num_ooms"] = self.num_ooms
            out["num_device_alloc"] = self.num_device_alloc
            out["num_device_free"] = self.num_device_free
            return dict(sorted(out.items()))

    def memory_summary(self) -> str:
        """A table of the statistics, in the layout of PyTorch's ``memory_summary``."""
        st = self.memory_stats()
        w = 77
        rows = [("Allocated memory", "allocated_bytes", True),
                ("Active memory", "active_bytes", True),
                ("Requested memory", "requested_bytes", True),
                ("GPU reserved memory", "reserved_bytes", True),
                ("Allocations", "allocation", False),
                ("Active allocs", "active", False),
                ("GPU reserved segments", "segment", False)]
        header = " | ".join(f"{h:>10}" for h in ("Cur Usage", "Peak Usage", "Tot Alloc",
                                                  "Tot Freed"))
        lines = ["|" + "=" * (w - 2) + "|",
                 "|" + f"tritongrad CUDA memory summary, device {self.device}".center(w - 2) + "|",
                 "|" + "-" * (w - 2) + "|",
                 f"| {'Metric':<24}| {header} |",
                 "|" + "-" * (w - 2) + "|"]
        for title, key, is_bytes in rows:
            for pool in _POOLS:
                label = title if pool == "all" else f"      from {pool.split('_')[0]} pool"
                vals = [st[f"{key}.{pool}.{f}"] for f in ("current", "peak", "allocated", "freed")]
                cells = [format_bytes(v) if is_bytes else str(v) for v in vals]
                lines.append(f"| {label:<24}| " + " | ".join(f"{c:>10}" for c in cells) + " |")
            lines.append("|" + "-" * (w - 2) + "|")
        tail = (f"Allocation retries: {st['num_alloc_retries']}   OOMs: {st['num_ooms']}   "
                f"Device allocs: {st['num_device_alloc']}   frees: {st['num_device_free']}")
        lines.append(f"| {tail:<{w - 4}} |")
        lines.append("|" + "=" * (w - 2) + "|")
        return "\n".join(lines)

    # -- internals -------------------------------------------------------------------------
    def _incref_pool(self, pool_id: tuple) -> _PrivatePool:
        """The private pool ``pool_id`` (created on first use) with one user more; lock held."""
        pool = self._private.get(pool_id)
        if pool is None:
            pool = self._private[pool_id] = _PrivatePool(pool_id)
        pool.use_count += 1
        return pool

    def _reroute(self) -> None:
        self._routed = bool(self._capture_pools or self._thread_pools or self._uncached)

    def _route(self, stream) -> _PrivatePool | None:
        """The private pool a request on ``stream`` from this thread comes from, or None."""
        pool = self._capture_pools.get(stream)
        if pool is None and self._thread_pools:
            stack = self._thread_pools.get(threading.get_ident())
            pool = stack[-1] if stack else None
        return pool

    def _leave(self) -> None:
        # Runs with the lock held at the end of every public call: drain deferred frees.
        try:
            if self._depth == 1:
                self._drain_deferred()
        finally:
            self._depth -= 1

    def _drain_deferred(self) -> None:
        while self._deferred:
            self._release_block(self._deferred.pop())

    def _count(self, small: bool, deltas) -> None:
        """Adds each ``(stat, n)`` to the pool's counter and to the all-pools one.

        Only ``current``, ``peak`` and ``freed`` are kept; ``allocated`` (the total added) is
        ``current + freed - base``, ``base`` being ``current`` at the last accumulated reset.
        """
        self._fold()  # (the hot events came first: Note [hot counts])
        self._apply(small, deltas)

    def _apply(self, small: bool, deltas) -> None:
        """``_count`` without the fold: the log is empty, or these deltas are its events'."""
        pool = 2 if small else 1
        cur, peak, freed = self._cur, self._peak, self._freed
        for stat, n in deltas:
            k = 3 * stat
            j = k + pool
            a = cur[k] + n
            b = cur[j] + n
            cur[k] = a
            cur[j] = b
            if n >= 0:
                if a > peak[k]:  # noqa: PLR1730 - cheaper than max() on this path
                    peak[k] = a
                if b > peak[j]:  # noqa: PLR1730
                    peak[j] = b
            else:
                freed[k] -= n
                freed[j] -= n

    def _fold(self) -> None:
        """Counts the logged hot mallocs and frees (Note [hot counts]), lock held."""
        log = self._log
        n = len(log)
        if not n:
            return
        if n < _FOLD_NUMPY_AT:  # one event at a time, in order: as _count would have
            events = log[:]
            log.clear()
            for code in events:
                e = code if code > 0 else -code
                size = e >> 24 << 9
                req = size - (e & _SLACK_MASK)
                one = 1
                if code < 0:
                    one, size, req = -1, -size, -req
                self._apply(e >> 23 & 1, ((_ALLOCATION, one), (_ACTIVE, one),
                                          (_ALLOCATED_BYTES, size), (_ACTIVE_BYTES, size),
                                          (_REQUESTED_BYTES, req)))
            return
        buf = self._fold_buf
        if buf is None or len(buf[0]) < n:
            buf = (np.empty(max(n, _FOLD_AT), np.int64),
                   np.empty((3, 6, max(n, _FOLD_AT)), np.int64))
            if n <= _FOLD_AT:  # kept, so that a fold does not fault in fresh pages each time
                self._fold_buf = buf  # (a few hundred kB, past malloc's mmap threshold)
        e, (d, run, tmp) = buf[0][:n], buf[1][:, :, :n]
        e[:] = log
        log.clear()
        # rows: blocks, bytes, requested bytes over all pools (0-2), then over the small pool
        # (3-5); the large pool's running values are the differences
        np.sign(e, out=d[0])
        np.abs(e, out=e)
        np.right_shift(e, 24, out=d[1])
        np.left_shift(d[1], 9, out=d[1])
        np.multiply(d[0], d[1], out=d[1])  # +-size
        np.bitwise_and(e, _SLACK_MASK, out=d[2])
        np.multiply(d[0], d[2], out=d[2])
        np.subtract(d[1], d[2], out=d[2])  # +-requested
        np.right_shift(e, 23, out=e)
        np.bitwise_and(e, 1, out=e)  # 1: the small pool (pool field 2)
        np.multiply(d[:3], e, out=d[3:])
        np.cumsum(d, axis=1, out=run)
        np.subtract(run[:3], run[3:], out=tmp[:3])
        # per column of _FOLDED (all pools, large, small): the highest running value, the
        # last, and the total of the negative steps
        top = run.max(axis=1).tolist()
        tops = top[:3] + tmp[:3].max(axis=1).tolist() + top[3:]
        last = run[:, -1].tolist()
        totals = last[:3] + [a - b for a, b in zip(last[:3], last[3:])] + last[3:]
        np.minimum(d, 0, out=tmp)
        neg = (-tmp.sum(axis=1)).tolist()
        gone = neg[:3] + [a - b for a, b in zip(neg[:3], neg[3:])] + neg[3:]
        cur, peak, freed = self._cur, self._peak, self._freed
        for col, (stats, p) in enumerate(_FOLDED):
            for stat in stats:
                k = 3 * stat + p
                c = cur[k]
                if c + tops[col] > peak[k]:  # noqa: PLR1730 (as _count)
                    peak[k] = c + tops[col]
                cur[k] = c + totals[col]
                freed[k] += gone[col]

    def _malloc(self, nbytes: int, stream) -> Block:
        if nbytes < 0:
            raise ValueError(f"malloc: negative size {nbytes}")
        if self._pending:
            self._process_events()
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        pool = self._route(stream) if self._routed else None
        if pool is None and self._uncached:  # a segment of its own (Note [uncached segments])
            block = None
        else:
            block = self._take_free(self._pools if pool is None else pool.free, size, stream,
                                    small)
            if block is None and pool is None and self._hot:
                block = self._from_cache(size, stream, small)
        if block is None:
            block = self._new_segment(nbytes, size, stream, small, pool)
            self._served = 0
        if block.size - size >= (MIN_BLOCK if small else SMALL_SIZE + 1):
            self._split(block, size, stream)
        block.state = _ALLOCATED
        block.requested = nbytes
        size = block.size
        pool_code = block.segment.hot
        block.base = base = size << 15 | pool_code << 22
        block.code = base + size - nbytes if pool_code and size - nbytes < 1 << _SLACK_BITS else 0
        if block.code:  # logged as a hot malloc is (Note [hot counts])
            self._log_event(block.code)
        else:
            self._count(small, ((_ALLOCATION, 1), (_ACTIVE, 1), (_ALLOCATED_BYTES, size),
                                (_ACTIVE_BYTES, size), (_REQUESTED_BYTES, nbytes)))
        return block

    def _log_event(self, code: int) -> None:
        log = self._log
        log.append(code)
        if len(log) >= _FOLD_AT:
            self._fold()

    def _take_free(self, free: dict, size: int, stream, small: bool) -> Block | None:
        pool = free.get((stream, small))
        if not pool:
            return None
        i = bisect.bisect_left(pool, (size, -1))
        if i == len(pool):
            return None
        _, ptr = pool.pop(i)
        return self._free.pop(ptr)

    def _put_free(self, block: Block) -> None:
        block.state = _FREE
        self._free[block.ptr] = block
        seg = block.segment
        free = self._pools if seg.pool is None else seg.pool.free
        bisect.insort(free.setdefault((block.stream, seg.small), []), (block.size, block.ptr))

    def _unlink_free(self, block: Block) -> None:
        del self._free[block.ptr]
        seg = block.segment
        free = self._pools if seg.pool is None else seg.pool.free
        pool = free[(block.stream, seg.small)]
        del pool[bisect.bisect_left(pool, (block.size, block.ptr))]

    def _split(self, block: Block, size: int, stream) -> None:
        nxt = block.next
        rest = Block(block.ptr + size, block.size - size, stream, block.segment, block, nxt)
        if nxt is not None and nxt.state == _FREE:  # (a cached block's neighbours may be
            self._unlink_free(nxt)                  # free: _from_cache)
            rest.size += nxt.size
            rest.next = nxt = nxt.next
        if nxt is not None:
            nxt.prev = rest
        block.next = rest
        block.size = size
        self._put_free(rest)

    def _capped_alloc(self, nbytes: int) -> int | None:
        """``raw_alloc``, except that a segment past the memory fraction's cap is refused
        like the driver's out-of-memory answer (None), so the same retry policy applies."""
        if self._limit is not None and self.reserved + nbytes > self._limit:
            return None
        return self._raw_alloc(nbytes)

    def _new_segment(self, nbytes: int, size: int, stream, small: bool,
                     pool: _PrivatePool | None) -> Block:
        uncached = pool is None and self._uncached
        alloc = size if uncached else segment_size(size)
        ptr = self._capped_alloc(alloc)
        if ptr is None:  # 1: release one cached segment that is large enough (or the largest)
            self.num_alloc_retries += 1
            if self._release_segments(alloc):
                ptr = self._capped_alloc(alloc)
        if ptr is None:  # 2: collect garbage; maybe a freed block now fits
            self._collect_garbage()
            self._drain_deferred()
            self._process_events()
            self._flush_hot()
            block = self._take_free(self._pools if pool is None else pool.free, size, stream,
                                    small)
            if block is not None:
                return block
            self._release_segments(None)  # 3: release every unused cached segment
            ptr = self._capped_alloc(alloc)
        if ptr is None and pool is None:  # 4: a free block of a MemPool(use_on_oom=True)
            for p in self._private.values():
                block = self._take_free(p.free, size, stream, small) if p.use_on_oom else None
                if block is not None:
                    return block
        if ptr is None:
            self.num_ooms += 1
            raise OutOfMemoryError(self._oom_message(nbytes))
        return self._add_segment(ptr, alloc, stream, small, pool, uncached)

    def _add_segment(self, ptr: int, alloc: int, stream, small: bool,
                     pool: _PrivatePool | None, uncached: bool = False) -> Block:
        """Registers the raw allocation ``ptr`` of ``alloc`` bytes as a segment: one free
        block, returned."""
        self.num_device_alloc += 1
        seg = _Segment(ptr, alloc, stream, small, pool, uncached)
        if pool is not None:
            pool.segments += 1
        self._segments[ptr] = seg
        self._apply(small, ((_SEGMENT, 1), (_RESERVED_BYTES, alloc)))  # (not in the log)
        seg.head = Block(ptr, alloc, stream, seg)
        return seg.head

    def _oom_message(self, nbytes: int) -> str:
        free = "unknown"
        if self._mem_info is not None:
            try:
                free = format_bytes(self._mem_info()[0])
            except Exception:  # noqa: BLE001, S110 - the OOM message must not fail itself
                pass
        facts = (f"allocated {format_bytes(self.allocated)}, reserved "
                 f"{format_bytes(self.reserved)}, free {free}")
        fixes = "Free tensors that are no longer needed (del them) or use smaller sizes"
        if self._limit is not None:  # PyTorch's "<limit> allowed" when a fraction is set
            facts += (f"; {format_bytes(self._limit)} allowed by the per-process memory "
                      f"fraction {self.memory_fraction:g} of "
                      f"{format_bytes(self._total_memory)}")
            fixes = ("Free tensors that are no longer needed (del them), use smaller sizes or "
                     "raise tg.cuda.set_per_process_memory_fraction")
        return (f"out of memory allocating {format_bytes(nbytes)} on {self.device} ({facts}). "
                f"{fixes}; tg.cuda.memory_summary() shows where the memory is.")

    def _release_segments(self, wanted: int | None, pool_id: tuple | None = None) -> bool:
        """Returns whole-free cached segments to the driver.

        ``wanted`` None: all of them. Otherwise the smallest one of at least ``wanted`` bytes,
        or else the largest ones until ``wanted`` bytes are released. ``pool_id``: only that
        private pool's. True if any were.
        """
        if self._capture_pools:  # a capture records these addresses (Note [graph pools])
            return False
        self._flush_hot()
        whole = [b for b in self._free.values()
                 if b.prev is None and b.next is None and b.size == b.segment.size
                 and (b.segment.pool is None or not b.segment.pool.use_count)
                 and (pool_id is None or (b.segment.pool is not None
                                          and b.segment.pool.id == pool_id))]
        if wanted is not None:
            big = [b for b in whole if b.size >= wanted]
            if big:
                whole = [min(big, key=lambda b: b.size)]
            else:
                whole.sort(key=lambda b: b.size, reverse=True)
                picked, total = [], 0
                for b in whole:
                    if total >= wanted:
                        break
                    picked.append(b)
                    total += b.size
                whole = picked
        if not whole:
            return False
        self._release(whole)
        self._served = 0
        return True

    def _release(self, whole: list) -> None:
        """Returns the segments of these whole-free blocks to ``raw_free``."""
        if self._synchronize is not None:
            self._synchronize()
        for b in whole:
            self._unlink_free(b)
            seg = self._segments.pop(b.ptr)
            self._raw_free(b.ptr)
            self.num_device_free += 1
            if seg.pool is not None:  # a released graph's pool: forget it with its last segment
                seg.pool.segments -= 1
                if not seg.pool.segments:
                    self._private.pop(seg.pool.id, None)
            self._apply(seg.small, ((_SEGMENT, -1), (_RESERVED_BYTES, -seg.size)))
            self._spare = max(0, self._spare - seg.size)

    def _release_block(self, block: Block) -> None:
        if block.state != _ALLOCATED:
            raise RuntimeError(f"free: {block!r} is not allocated (double free?)")
        uses, block.stream_uses = block.stream_uses, None
        if not uses and block.code:  # reusable at once: logged as a hot free is
            self._log_event(-block.code)
            block.events = None
            self._merge_free(block)
            return
        self._count(block.segment.small, ((_ALLOCATION, -1), (_ALLOCATED_BYTES, -block.size),
                                          (_REQUESTED_BYTES, -block.requested)))
        if uses:
            block.state = _PENDING
            if self._capture_pools:  # events recorded now would belong to the capture
                self._capture_frees.append((block, uses))
            else:
                block.events = [self._record_event(s) for s in uses]
                self._pending.append(block)
        else:
            self._free_block(block)

    def _from_cache(self, size: int, stream, small: bool) -> Block | None:
        """A block for a request of ``size`` that no free block fits, made from cached blocks of
        other sizes (Note [hot blocks]), or from a spare segment where the cache could serve it
        and the budget allows (Note [spare segments]); None: only a new segment can serve it."""
        larger = self._larger_cached(size, stream, small)
        run = None if larger is not None else self._find_run(size, stream, small)
        if larger is None and run is None:
            return None
        self._served += 1
        if self._served >= self.SPARE_AFTER:
            spare = self._spare_segment(size, stream, small)
            if spare is not None:
                return spare
        if larger is not None:
            return larger.pop()
        hot = self._hot
        for r in run:
            if r.state == _CACHED:
                hot[(stream, r.size)].remove(r)
                self._merge_free(r)
        return self._take_free(self._pools, size, stream, small)

    def _larger_cached(self, size: int, stream, small: bool) -> list | None:
        """The cache list (Note [hot blocks]) of the smallest cached size of at least ``size``
        on ``stream`` in the pool ``small`` says, or None."""
        best = None
        for (s, n), blocks in self._hot.items():
            if blocks and n >= size and s == stream and (best is None or n < best[0]) \
                    and blocks[-1].segment.small == small:
                best = (n, blocks)
        return None if best is None else best[1]

    def _find_run(self, size: int, stream, small: bool) -> list | None:
        """The first run of free and cached neighbours of at least ``size`` bytes that holds a
        cached block, in a segment of ``stream`` in the pool ``small`` says, or None: then
        merging the whole cache would not make a block that fits either (free blocks are merged
        already, and only segments with a cached block can change)."""
        seen = set()
        for (s, _), blocks in self._hot.items():
            if s != stream or not blocks or blocks[-1].segment.small != small:
                continue
            for cached in blocks:
                if cached.segment in seen:
                    continue
                seen.add(cached.segment)
                b = cached
                while b.prev is not None:  # the segment's first block, then along it
                    b = b.prev
                run, total = [], 0
                while b is not None:
                    if b.state == _CACHED or b.state == _FREE:  # noqa: PLR1714
                        run.append(b)
                        total += b.size
                        if total >= size:
                            return run
                    else:
                        run, total = [], 0
                    b = b.next
        return None

    def _spare_segment(self, size: int, stream, small: bool) -> Block | None:
        """A new segment for ``size`` while the cache could serve it, if the spare budget
        allows (Note [spare segments]); None when it does not, or the device or the memory
        fraction refuses (the cache serves the request then: no retry, no out-of-memory)."""
        alloc = segment_size(size)
        if (self._spare + alloc) * self.SPARE_SHARE > self._cur[3 * _RESERVED_BYTES]:
            return None
        if self._mem_info is not None:  # never into the device's last 1/SPARE_SHARE
            try:
                free, total = self._mem_info()
            except Exception:  # noqa: BLE001 - no answer: no spare segment
                return None
            if (free - alloc) * self.SPARE_SHARE < total:
                return None
        ptr = self._capped_alloc(alloc)
        if ptr is None:
            return None
        self._spare += alloc
        return self._add_segment(ptr, alloc, stream, small, None)

    def _flush_hot(self) -> None:
        """Merges every cached block into the free lists (Note [hot blocks])."""
        hot, self._hot = self._hot, {}
        for blocks in hot.values():
            for block in blocks:
                self._merge_free(block)

    def _free_block(self, block: Block) -> None:
        # active stats fall when a block becomes reusable
        self._count(block.segment.small, ((_ACTIVE, -1), (_ACTIVE_BYTES, -block.size)))
        block.events = None
        self._merge_free(block)
        seg = block.segment
        if seg.uncached and not self._capture_pools:  # Note [uncached segments]
            self._release([seg.head])

    def _merge_free(self, block: Block) -> None:
        """Puts ``block`` on its free list, merged with the free neighbours in its segment."""
        prev, nxt = block.prev, block.next
        if prev is not None and prev.state == _FREE:
            self._unlink_free(prev)
            prev.size += block.size
            prev.next = nxt
            if nxt is not None:
                nxt.prev = prev
            block = prev
        if nxt is not None and nxt.state == _FREE:
            self._unlink_free(nxt)
            block.size += nxt.size
            block.next = nxt.next
            if nxt.next is not None:
                nxt.next.prev = block
        self._put_free(block)

    def _process_events(self) -> None:
        still = []
        for block in self._pending:
            if all(ev.query() for ev in block.events):
                self._free_block(block)
            else:
                still.append(block)
        self._pending = still
