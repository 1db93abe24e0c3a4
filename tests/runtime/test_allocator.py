"""The caching allocator's policy, over fake raw memory and events the test completes."""

from __future__ import annotations

import gc
import itertools
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tritongrad.runtime.allocator import (
    CachingAllocator,
    OutOfMemoryError,
    format_bytes,
    round_size,
    segment_size,
)

KiB, MiB = 1 << 10, 1 << 20
A, B, C = "stream-A", "stream-B", "stream-C"


def test_rounding_and_segment_sizes():
    assert [round_size(n) for n in (0, 1, 511, 512, 513, 1000)] == [512, 512, 512, 512, 1024,
                                                                     1024]
    assert segment_size(512) == 2 * MiB
    assert segment_size(1 * MiB) == 2 * MiB
    assert segment_size(1 * MiB + 512) == 20 * MiB
    assert segment_size(10 * MiB - 512) == 20 * MiB
    assert segment_size(10 * MiB) == 10 * MiB
    assert segment_size(11 * MiB + 1) == 12 * MiB


def test_format_bytes():
    assert format_bytes(100) == "100 B"
    assert format_bytes(2 << 30) == "2.00 GiB"
    assert format_bytes(1536) == "1.50 KiB"


def test_small_requests_are_carved_from_one_2mib_segment(make_allocator):
    alloc, raw, _ = make_allocator()
    blocks = [alloc.malloc(1000, A) for _ in range(4)]
    assert raw.allocs == 1 and list(raw.live.values()) == [2 * MiB]
    ptrs = [b.ptr for b in blocks]
    assert ptrs == [ptrs[0] + i * 1024 for i in range(4)]  # 1000 rounds to 1024
    assert alloc.allocated == 4 * 1024
    assert alloc.reserved == 2 * MiB


def test_large_requests_get_rounded_segments(make_allocator):
    alloc, raw, _ = make_allocator()
    alloc.malloc(3 * MiB, A)  # mid-size: a 20 MiB segment
    alloc.malloc(11 * MiB + 1, B)  # large: rounded to 12 MiB (B: not split from A's 17 MiB)
    assert sorted(raw.live.values()) == [12 * MiB, 20 * MiB]
    assert alloc.reserved == 32 * MiB
    assert alloc.allocated == 3 * MiB + 12 * MiB  # 1 MiB - 511 left over: not worth a split


def test_reuse_on_the_same_stream(make_allocator):
    alloc, raw, _ = make_allocator()
    b = alloc.malloc(4096, A)
    ptr = b.ptr
    alloc.free(b)
    assert alloc.malloc(4096, A).ptr == ptr
    assert raw.allocs == 1


def test_no_reuse_on_another_stream(make_allocator):
    alloc, raw, _ = make_allocator()
    b = alloc.malloc(4096, A)
    ptr = b.ptr
    alloc.free(b)
    other = alloc.malloc(4096, B)
    assert other.ptr != ptr
    assert raw.allocs == 2  # B got its own segment: A's cache is A's


def test_record_stream_defers_reuse_until_the_event_completes(make_allocator):
    alloc, _, events = make_allocator()
    b = alloc.malloc(4096, A)
    ptr = b.ptr
    alloc.record_stream(b, B)
    alloc.free(b)
    assert [ev.stream for ev in events.recorded] == [B]  # one event, on the using stream
    assert alloc.allocated == 0
    assert alloc.memory_stats()["active_bytes.all.current"] == 4096  # still in use on B
    while_pending = alloc.malloc(4096, A)
    assert while_pending.ptr != ptr
    events.complete(B)
    assert alloc.malloc(4096, A).ptr == ptr  # polled at allocation: reusable now
    assert alloc.memory_stats()["active_bytes.all.current"] == 2 * 4096


def test_record_stream_waits_for_every_recorded_stream(make_allocator):
    alloc, _, events = make_allocator()
    b = alloc.malloc(8192, A)
    ptr = b.ptr
    alloc.record_stream(b, B)
    alloc.record_stream(b, C)
    alloc.record_stream(b, A)  # the allocation stream itself needs no event
    alloc.free(b)
    assert sorted(ev.stream for ev in events.recorded) == [B, C]
    events.complete(B)
    assert alloc.malloc(8192, A).ptr != ptr
    events.complete(C)
    assert alloc.malloc(8192, A).ptr == ptr


def test_stats_rise_fall_and_peak(make_allocator):
    alloc, _, _ = make_allocator()
    b1 = alloc.malloc(1000, A)
    b2 = alloc.malloc(5000, A)
    assert alloc.allocated == 1024 + 5120
    stats = alloc.memory_stats()
    assert stats["allocation.all.current"] == 2
    assert stats["requested_bytes.all.current"] == 6000
    alloc.free(b1)
    assert alloc.allocated == 5120
    assert alloc.stat("allocated_bytes").peak == 1024 + 5120
    alloc.reset_peak_memory_stats()
    assert alloc.stat("allocated_bytes").peak == 5120
    alloc.free(b2)
    stats = alloc.memory_stats()
    assert stats["allocated_bytes.all.current"] == 0
    assert stats["allocated_bytes.all.allocated"] == stats["allocated_bytes.all.freed"] == 6144
    assert stats["allocated_bytes.small_pool.peak"] == 5120
    assert stats["reserved_bytes.all.current"] == 2 * MiB  # cached, not returned
    alloc.reset_accumulated_memory_stats()
    b3 = alloc.malloc(100, A)
    stats = alloc.memory_stats()
    assert stats["allocated_bytes.all.allocated"] == 512
    assert stats["allocated_bytes.all.freed"] == 0
    assert stats["reserved_bytes.all.allocated"] == 0  # the segment predates the reset
    assert stats["reserved_bytes.all.current"] == 2 * MiB
    alloc.free(b3)
    assert alloc.memory_stats()["allocated_bytes.small_pool.freed"] == 512


def test_empty_cache_returns_segments_but_not_pending_blocks(make_allocator):
    alloc, raw, events = make_allocator()
    held = alloc.malloc(1000, A)  # keeps its small segment
    a = alloc.malloc(30 * MiB, A)
    p = alloc.malloc(12 * MiB, A)
    alloc.free(a)
    alloc.record_stream(p, B)
    alloc.free(p)
    assert raw.used == 2 * MiB + 30 * MiB + 12 * MiB
    alloc.empty_cache()
    assert raw.used == 2 * MiB + 12 * MiB  # the pending block's segment stays
    assert alloc.reserved == raw.used
    events.complete()
    alloc.empty_cache()
    assert raw.used == 2 * MiB
    alloc.free(held)
    alloc.empty_cache()
    assert raw.used == 0 and alloc.reserved == 0
    assert alloc.memory_stats()["num_device_free"] == 3


def test_large_cached_blocks_are_split_and_merged(make_allocator):
    alloc, raw, _ = make_allocator()
    big = alloc.malloc(50 * MiB, A)
    base = big.ptr
    alloc.free(big)
    x = alloc.malloc(20 * MiB, A)
    y = alloc.malloc(25 * MiB, A)
    assert (x.ptr, y.ptr) == (base, base + 20 * MiB)
    assert raw.allocs == 1
    z = alloc.malloc(4 * MiB + 512, A)  # the 5 MiB left: reused whole (remainder <= 1 MiB)
    assert z.ptr == base + 45 * MiB and z.size == 5 * MiB
    for b in (y, x, z):
        alloc.free(b)
    assert alloc.malloc(50 * MiB, A).ptr == base  # merged back into one block
    assert raw.allocs == 1


def test_small_blocks_merge_so_the_segment_can_be_released(make_allocator):
    alloc, raw, _ = make_allocator()
    blocks = [alloc.malloc(100 * KiB, A) for _ in range(5)]
    for b in blocks[::2] + blocks[1::2]:
        alloc.free(b)
    alloc.empty_cache()
    assert raw.used == 0


def test_a_freed_block_is_cached_whole_for_its_size(make_allocator):
    # Note [hot blocks]: the next request of the same rounded size on the same stream gets the
    # block back as it was; it counts as free meanwhile
    alloc, raw, _ = make_allocator()
    a, b = alloc.malloc(3000, A), alloc.malloc(3000, A)
    alloc.free(a)
    assert "cached" in repr(a)
    stats = alloc.memory_stats()
    assert stats["active_bytes.all.current"] == stats["allocated_bytes.all.current"] == 3072
    assert stats["allocation.all.current"] == stats["active.all.current"] == 1
    assert stats["requested_bytes.all.current"] == 3000
    with pytest.raises(RuntimeError, match="double free"):
        alloc.free(a)
    assert alloc.malloc(2561, A) is a  # rounds to 3072 as well
    assert alloc.malloc(3000, B).ptr != a.ptr  # cached per stream
    assert alloc.memory_stats()["requested_bytes.all.current"] == 2561 + 3000 + 3000
    assert raw.allocs == 2
    alloc.free(b)
    assert alloc.stat("allocated_bytes").peak == 3 * 3072


class _BlockStats:
    """What memory_stats must say of the blocks handed out and freed (none used on other
    streams, so active equals allocated): the statistics recomputed from the blocks alone."""

    STATS = ("allocation", "active", "allocated_bytes", "active_bytes", "requested_bytes")

    def __init__(self):
        self.values = {f"{s}.{p}.{f}": 0 for s in self.STATS
                       for p in ("all", "large_pool", "small_pool")
                       for f in ("current", "peak", "allocated", "freed")}

    def _add(self, block, requested: int, sign: int) -> None:
        pool = "small_pool" if block.segment.small else "large_pool"
        deltas = (1, 1, block.size, block.size, requested)
        for stat, d in zip(self.STATS, deltas):
            for p in ("all", pool):
                v = self.values
                v[f"{stat}.{p}.current"] += sign * d
                v[f"{stat}.{p}.{'allocated' if sign > 0 else 'freed'}"] += d
                v[f"{stat}.{p}.peak"] = max(v[f"{stat}.{p}.peak"], v[f"{stat}.{p}.current"])

    def malloc(self, block, requested: int) -> None:
        self._add(block, requested, 1)

    def free(self, block, requested: int) -> None:
        self._add(block, requested, -1)

    def reset_peak(self) -> None:
        for k in [k for k in self.values if k.endswith(".peak")]:
            self.values[k] = self.values[k.replace(".peak", ".current")]

    def reset_accumulated(self) -> None:
        for k in self.values:
            if k.endswith((".allocated", ".freed")):
                self.values[k] = 0

    def of(self, alloc) -> dict:
        return {k: v for k, v in alloc.memory_stats().items() if k in self.values}


@pytest.mark.parametrize("numpy_at", [None, 0, 1 << 30], ids=["mixed", "numpy", "python"])
@pytest.mark.parametrize("seed, every, fold_at", [(0, 1, None), (1, 1, None), (2, 1, None),
                                                   (3, 29, None), (4, 97, None), (5, 97, 8),
                                                   (6, 400, 3)])
def test_hot_reuse_counts_as_the_slow_path_does(make_allocator, monkeypatch, seed, every,
                                                fold_at, numpy_at):
    # Note [hot blocks]: a cached block handed out and cached again keeps every current, peak,
    # allocated and freed value what the blocks say, as the slow path (split, merge, _count)
    # does: the twin flushes its cache after each free, so its requests never hit it. Read
    # after every step, or after runs of ``every`` steps, whose logged hot events are counted
    # in one fold (Note [hot counts]): peaks reached inside a run, in either pool, must show.
    # With ``fold_at`` the log is also folded whenever a hot malloc finds it that long, so
    # folds start and end at arbitrary events of a run. ``numpy_at``: every fold through NumPy,
    # or every fold one event at a time in Python, or each by its length (the default).
    import random

    from tritongrad.runtime import allocator as allocator_module

    if fold_at is not None:
        monkeypatch.setattr(allocator_module, "_FOLD_AT", fold_at)
    if numpy_at is not None:
        monkeypatch.setattr(allocator_module, "_FOLD_NUMPY_AT", numpy_at)

    rng = random.Random(seed)
    twins = [(make_allocator()[0], _BlockStats(), []) for _ in range(2)]
    sizes = [512, 1000, 4096, 5000, 1 * MiB, 3 * MiB, 11 * MiB + 1]  # both pools
    hits = 0
    for step in range(400):
        r = rng.random()
        n, stream = rng.choice(sizes), rng.choice((A, B))
        pick = rng.random()
        for slow, (alloc, model, live) in enumerate(twins):
            if r < 0.5 or not live:
                cached = sum(len(v) for v in alloc._hot.values())
                live.append((alloc.malloc(n, stream), n))
                model.malloc(*live[-1])
                hits += sum(len(v) for v in alloc._hot.values()) < cached
            elif r < 0.95:
                block, requested = live.pop(int(pick * len(live)))
                alloc.free(block)
                model.free(block, requested)
                if slow:
                    alloc._flush_hot()
            elif r < 0.98:
                alloc.reset_peak_memory_stats()
                model.reset_peak()
            else:
                alloc.reset_accumulated_memory_stats()
                model.reset_accumulated()
            if step % every == 0 or step == 399:
                assert model.of(alloc) == model.values, (step, slow)
    assert hits > 50  # the hot path ran


def test_cached_blocks_merge_before_a_new_segment(make_allocator):
    alloc, raw, _ = make_allocator()
    quarters = [alloc.malloc(512 * KiB, A) for _ in range(4)]  # the whole 2 MiB segment
    base = quarters[0].ptr
    for b in quarters:
        alloc.free(b)
    whole = alloc.malloc(1 * MiB, A)  # no free block fits until the cache merges
    assert whole.ptr == base and raw.allocs == 1
    alloc.free(whole)
    alloc.empty_cache()  # cached blocks merge before segments are released
    assert raw.used == 0 and alloc.reserved == 0


def test_a_miss_merges_one_run_of_cached_blocks_and_keeps_the_rest(make_allocator):
    """Note [hot blocks]: a request no cached block fits merges only the cached blocks of one
    run of neighbours that adds up to its size; the others stay cached for their sizes."""
    alloc, raw, _ = make_allocator()
    blocks = [alloc.malloc(512 * KiB, A) for _ in range(8)]  # two 2 MiB segments, full
    for b in blocks:
        alloc.free(b)
    assert raw.allocs == 2 and len(alloc._hot[(A, 512 * KiB)]) == 8
    whole = alloc.malloc(1 * MiB, A)
    assert raw.allocs == 2                      # no new segment: two neighbours merged ...
    assert len(alloc._hot[(A, 512 * KiB)]) == 6  # ... and only they
    again = [alloc.malloc(512 * KiB, A) for _ in range(6)]
    assert len({b.ptr for b in again} | {whole.ptr, whole.ptr + 512 * KiB}) == 8
    for b in [whole, *again]:
        alloc.free(b)
    alloc.empty_cache()
    assert raw.used == 0 and alloc.reserved == 0


def test_a_miss_with_no_run_to_merge_keeps_the_cache(make_allocator):
    # cached blocks between allocated ones cannot merge into 1 MiB: a new segment, and the
    # cached blocks stay cached
    alloc, raw, _ = make_allocator()
    blocks = [alloc.malloc(512 * KiB, A) for _ in range(4)]
    for b in blocks[1::2]:
        alloc.free(b)
    big = alloc.malloc(1 * MiB, A)
    assert raw.allocs == 2 and len(alloc._hot[(A, 512 * KiB)]) == 2
    assert all(b.state == 3 for b in blocks[1::2])  # _CACHED
    for b in [big, *blocks[::2]]:
        alloc.free(b)
    alloc.empty_cache()
    assert raw.used == 0


def test_blocks_freed_during_a_capture_are_not_cached(make_allocator):
    alloc, _, _ = make_allocator()
    b = alloc.malloc(4096, A)
    alloc.begin_allocate_to_pool(("g", 1), B)
    alloc.free(b)  # merged into A's free list as usual; only B's requests use the pool
    alloc.end_allocate_to_pool(B)
    assert "free" in repr(b)


def test_oom_releases_cache_and_retries(make_allocator, fakes):
    alloc, raw, _ = make_allocator(raw=fakes.FakeRaw(capacity=64 * MiB))
    a = alloc.malloc(40 * MiB, A)
    alloc.free(a)  # cached on A
    b = alloc.malloc(40 * MiB, B)  # the driver is full: A's segment is released, then retried
    assert b.ptr in raw.live
    assert alloc.memory_stats()["num_alloc_retries"] == 1
    assert alloc.reserved == 40 * MiB


def test_oom_raises_with_the_facts(make_allocator, fakes):
    alloc, _, _ = make_allocator(raw=fakes.FakeRaw(capacity=64 * MiB))
    alloc.malloc(40 * MiB, A)
    with pytest.raises(OutOfMemoryError) as info:
        alloc.malloc(40 * MiB, A)
    msg = str(info.value)
    assert msg.startswith("out of memory allocating 40.00 MiB on cuda:0 (allocated 40.00 MiB, "
                          "reserved 40.00 MiB, free 24.00 MiB)")
    assert isinstance(info.value, RuntimeError)
    stats = alloc.memory_stats()
    assert stats["num_ooms"] == 1 and stats["num_alloc_retries"] == 1
    assert alloc.allocated == 40 * MiB  # nothing leaked by the failed attempt


def test_oom_collects_garbage_before_giving_up(make_allocator, fakes):
    alloc, raw, _ = make_allocator(raw=fakes.FakeRaw(capacity=32 * MiB))

    class Cycle:  # a tensor kept alive only by a reference cycle
        def __init__(self, block):
            self.block, self.me = block, self

        def __del__(self):
            alloc.free(self.block)

    gc.disable()
    try:
        Cycle(alloc.malloc(30 * MiB, A))
        assert alloc.allocated == 30 * MiB
        b = alloc.malloc(30 * MiB, A)  # fails, collects, finds the freed block
        assert alloc.allocated == 30 * MiB and raw.allocs == 1 and b.ptr in raw.live
    finally:
        gc.enable()


# -- the per-process memory fraction ------------------------------------------------------
def test_memory_fraction_caps_reserved_memory(make_allocator, fakes):
    alloc, raw, _ = make_allocator(raw=fakes.FakeRaw(capacity=64 * MiB))
    assert alloc.memory_fraction == 1.0 and alloc.memory_limit is None
    alloc.set_memory_fraction(0.5, 64 * MiB)
    assert alloc.memory_fraction == 0.5 and alloc.memory_limit == 32 * MiB
    a = alloc.malloc(20 * MiB, A)  # a 20 MiB segment: under the cap
    with pytest.raises(OutOfMemoryError) as info:
        alloc.malloc(20 * MiB, A)  # 40 MiB reserved would pass 32 MiB; the device has room
    msg = str(info.value)
    assert msg.startswith("out of memory allocating 20.00 MiB on cuda:0 (allocated 20.00 MiB, "
                          "reserved 20.00 MiB, free 44.00 MiB; 32.00 MiB allowed by the "
                          "per-process memory fraction 0.5 of 64.00 MiB). "), msg
    assert "set_per_process_memory_fraction" in msg
    assert raw.allocs == 1  # the driver was never asked for memory past the cap
    assert alloc.memory_stats()["num_ooms"] == 1 and alloc.allocated == 20 * MiB
    alloc.malloc(10 * MiB, A)  # what still fits under the cap: a 10 MiB segment
    assert alloc.reserved == 30 * MiB
    alloc.free(a)


def test_memory_fraction_releases_cached_blocks_before_failing(make_allocator, fakes):
    alloc, raw, _ = make_allocator(raw=fakes.FakeRaw(capacity=64 * MiB))
    alloc.set_memory_fraction(0.5, 64 * MiB)
    alloc.free(alloc.malloc(20 * MiB, A))  # cached on A, still reserved
    b = alloc.malloc(20 * MiB, B)  # over the cap with A's cache: A's segment goes, then fits
    assert b.ptr in raw.live and raw.frees == 1
    assert alloc.reserved == 20 * MiB and alloc.memory_stats()["num_alloc_retries"] == 1
    assert alloc.memory_stats()["num_ooms"] == 0


def test_memory_fraction_lowered_below_reserved_and_empty_cache(make_allocator, fakes):
    alloc, raw, _ = make_allocator(raw=fakes.FakeRaw(capacity=64 * MiB))
    alloc.free(alloc.malloc(30 * MiB, A))  # a 30 MiB segment, cached
    alloc.set_memory_fraction(0.25, 64 * MiB)  # 16 MiB: the cache is kept, not freed
    assert alloc.reserved == 30 * MiB and raw.frees == 0
    b = alloc.malloc(30 * MiB, A)  # served from the cache: no new memory is reserved
    assert raw.allocs == 1
    alloc.free(b)
    alloc.empty_cache()
    assert alloc.reserved == 0 and raw.used == 0
    alloc.malloc(12 * MiB, A)
    with pytest.raises(OutOfMemoryError, match="16.00 MiB allowed"):
        alloc.malloc(12 * MiB, A)
    alloc.set_memory_fraction(1, 64 * MiB)  # the whole device again
    alloc.malloc(12 * MiB, A)
    assert alloc.reserved == 24 * MiB


def test_memory_fraction_zero_allows_no_new_segment(make_allocator, fakes):
    alloc, raw, _ = make_allocator(raw=fakes.FakeRaw(capacity=64 * MiB))
    alloc.set_memory_fraction(0.0, 64 * MiB)
    with pytest.raises(OutOfMemoryError, match="0 B allowed"):
        alloc.malloc(1, A)
    assert raw.allocs == 0


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), float("inf")])
def test_memory_fraction_out_of_range(make_allocator, bad):
    alloc, _, _ = make_allocator()
    with pytest.raises(ValueError, match=rf"^Invalid fraction value: {bad}. Allowed range: 0~1$"):
        alloc.set_memory_fraction(bad, 64 * MiB)
    for wrong_type in ("0.5", None, True):
        with pytest.raises(TypeError, match="Invalid type for fraction argument"):
            alloc.set_memory_fraction(wrong_type, 64 * MiB)
    assert alloc.memory_fraction == 1.0 and alloc.memory_limit is None  # unchanged


def test_double_free_is_an_error(make_allocator):
    alloc, _, _ = make_allocator()
    b = alloc.malloc(100, A)
    alloc.free(b)
    with pytest.raises(RuntimeError, match="not allocated"):
        alloc.free(b)


def test_memory_summary_and_stats_keys(make_allocator):
    alloc, _, _ = make_allocator()
    alloc.malloc(100, A)
    stats = alloc.memory_stats()
    for key in ("allocated_bytes.all.current", "reserved_bytes.all.peak",
                "active_bytes.large_pool.allocated", "segment.small_pool.current",
                "num_alloc_retries", "num_ooms"):
        assert key in stats
    text = alloc.memory_summary()
    assert "Allocated memory" in text and "GPU reserved memory" in text and "cuda:0" in text


def test_frees_from_other_threads(make_allocator):
    alloc, raw, _ = make_allocator()
    errors = []

    def work(stream):
        try:
            for i in range(200):
                blocks = [alloc.malloc((i * 997) % (3 * MiB) + 1, stream) for _ in range(3)]
                for b in blocks:
                    alloc.free(b)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in (A, B, C, A)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert alloc.allocated == 0
    alloc.empty_cache()
    assert raw.used == 0


_sizes = st.one_of(st.integers(0, 4096), st.integers(4097, 2 * MiB),
                   st.integers(2 * MiB, 24 * MiB))
_ops = st.lists(st.tuples(st.sampled_from(["malloc", "free", "record", "complete", "empty"]),
                          _sizes, st.sampled_from([A, B])), max_size=60)


@settings(max_examples=150, deadline=None)
@given(_ops, st.sampled_from([None, 0.25, 0.5]), st.sampled_from([32, 1]))
def test_invariants_under_random_use(fakes, ops, fraction, spare_after):
    raw, events = fakes.FakeRaw(capacity=96 * MiB), fakes.FakeEvents()
    alloc = CachingAllocator(raw.alloc, raw.free, events.record, mem_info=raw.mem_info)
    alloc.SPARE_AFTER = spare_after  # 1: spare segments at every miss the cache could serve
    if fraction is not None:
        alloc.set_memory_fraction(fraction, 96 * MiB)
    limit = alloc.memory_limit or 96 * MiB
    live = []
    for op, size, stream in ops:
        if op == "malloc":
            try:
                b = alloc.malloc(size, stream)
            except OutOfMemoryError:
                continue
            assert b.size >= size and b.size % 512 == 0 and b.stream == stream
            live.append(b)
        elif op == "free" and live:
            alloc.free(live.pop(size % len(live)))
        elif op == "record" and live:
            alloc.record_stream(live[size % len(live)], stream)
        elif op == "complete":
            events.complete(stream)
        elif op == "empty":
            alloc.empty_cache()
        # live blocks never overlap and lie inside raw allocations
        spans = sorted((b.ptr, b.ptr + b.size) for b in live)
        assert all(e <= s for (_, e), (s, _) in itertools.pairwise(spans))
        for p, e in spans:
            assert any(r <= p and e <= r + n for r, n in raw.live.items())
        assert alloc.allocated == sum(b.size for b in live)
        assert alloc.reserved == raw.used <= limit
        assert alloc._spare * alloc.SPARE_SHARE <= alloc.reserved
    for b in live:
        alloc.free(b)
    events.complete()
    alloc.empty_cache()
    assert raw.used == 0 and alloc.reserved == 0 and alloc.allocated == 0


def test_a_miss_takes_a_larger_cached_block_and_keeps_the_rest_cached(make_allocator):
    """Note [hot blocks]: a request that finds neither its size cached nor a free block that
    fits splits the smallest larger cached block, merging the split-off rest with a free
    neighbour (a cached block's neighbours may be free); the other cached blocks, and those
    of the other pool, stay cached; everything is returned whole in the end."""
    alloc, raw, _ = make_allocator()
    a = alloc.malloc(1 * MiB, A)            # the small segment (2 MiB): 1 MiB ...
    h = alloc.malloc(768 * KiB, A)          # ... 768 KiB, and 256 KiB left free after it
    big = alloc.malloc(8 * MiB, A)          # a large-pool block, cached below
    alloc.free(h)
    alloc.free(big)
    assert alloc._hot[(A, 768 * KiB)] and alloc._hot[(A, 8 * MiB)]
    segments = raw.allocs
    c = alloc.malloc(512 * KiB, A)          # 256 KiB free: too small; h is split for it
    assert c.ptr == h.ptr and c.size == 512 * KiB
    assert alloc._hot[(A, 8 * MiB)]         # the large pool's cache was not flushed
    rest = c.next
    assert rest.state == 2 and rest.size == 512 * KiB and rest.next is None  # merged with
    # the 256 KiB free neighbour: one free block to the segment's end
    assert raw.allocs == segments  # no new segment
    for b in (a, c):
        alloc.free(b)
    assert alloc.allocated == 0
    alloc.empty_cache()
    assert raw.used == 0


def _cycle(alloc, rounds: int) -> list:
    """``rounds`` of a steady step whose two sizes take each other's cached memory (a 1 MiB
    block, then a 512 KiB one, each freed at once, in a 2 MiB segment whose other half stays
    allocated); per round, how many of its mallocs missed the cache (took the slow path)."""
    half = alloc.malloc(1 * MiB, A)
    misses = []
    for _ in range(rounds):
        before = alloc._served
        carved = alloc.num_device_alloc
        for size in (1 * MiB, 512 * KiB):
            alloc.free(alloc.malloc(size, A))
        misses.append(alloc._served - before + alloc.num_device_alloc - carved)
    alloc.free(half)
    return misses


def test_a_steady_cycle_gets_spare_segments_and_stops_missing(make_allocator):
    """Note [spare segments]: once the cache has served SPARE_AFTER misses in a row from
    other sizes' blocks, such a miss gets a new segment instead, within 1/8 of reserved memory;
    then every size keeps its own cached block and the cycle stops missing."""
    alloc, raw, _ = make_allocator()
    alloc.SPARE_AFTER = 4
    held = alloc.malloc(16 * MiB, A)  # reserved memory for the budget: 16 + 2 MiB
    misses = _cycle(alloc, 8)
    assert misses[1:3] == [2, 2]  # each round, each size took the other's memory
    assert misses[-3:] == [0, 0, 0]
    assert raw.allocs == 3 and alloc._spare == 2 * MiB  # one spare segment did it
    assert alloc._spare * alloc.SPARE_SHARE <= alloc.reserved
    alloc.free(held)
    alloc.empty_cache()
    assert raw.used == 0 and alloc._spare == 0 and alloc._served == 0


def test_spare_segments_stay_within_their_budget(make_allocator):
    # the same cycle with too little reserved memory for a spare segment (2 MiB > 1/8 of it)
    # and with spares off: the cache serves every miss, as before spares existed
    for share, held_size in ((8, 12 * MiB), (float("inf"), 16 * MiB)):
        alloc, raw, _ = make_allocator()
        alloc.SPARE_AFTER, alloc.SPARE_SHARE = 2, share
        held = alloc.malloc(held_size, A)
        assert _cycle(alloc, 6)[1:] == [2] * 5
        assert raw.allocs == 2 and alloc._spare == 0
        alloc.free(held)


def test_a_segment_the_cache_could_not_serve_restarts_the_count(make_allocator):
    alloc, raw, _ = make_allocator()
    alloc.SPARE_AFTER = 100
    held = alloc.malloc(16 * MiB, A)
    _cycle(alloc, 3)
    assert alloc._served == 5
    other = alloc.malloc(3 * MiB, A)  # no cached block or run fits: a new segment
    assert alloc._served == 0 and raw.allocs == 3
    for b in (held, other):
        alloc.free(b)


def test_a_refused_spare_segment_is_no_out_of_memory(make_allocator, fakes):
    # the device (or the memory fraction) refusing a spare segment: the cache serves the
    # request, with no retry and no release of cached segments
    raw = fakes.FakeRaw(capacity=18 * MiB)
    alloc, raw, _ = make_allocator(raw)
    alloc.SPARE_AFTER = 2
    held = alloc.malloc(16 * MiB, A)
    assert _cycle(alloc, 6)[1:] == [2] * 5
    assert raw.allocs == 2 and alloc.num_alloc_retries == 0 and alloc.num_ooms == 0
    alloc.free(held)


@pytest.mark.parametrize("capacity,spares", [(20 * MiB, 0), (32 * MiB, 1)])
def test_spare_segments_leave_the_device_an_eighth_free(make_allocator, fakes, capacity, spares):
    # 18 MiB in use: a spare 2 MiB segment fits a 20 MiB device, but would leave it less than
    # 1/8 free, so the cache serves the cycle; on a 32 MiB device the spare is carved
    alloc, raw, _ = make_allocator(fakes.FakeRaw(capacity=capacity))
    alloc.SPARE_AFTER = 2
    held = alloc.malloc(16 * MiB, A)
    misses = _cycle(alloc, 6)
    assert raw.allocs == 2 + spares and alloc._spare == spares * 2 * MiB
    assert misses[-1] == (0 if spares else 2)
    alloc.free(held)
