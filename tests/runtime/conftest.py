"""Fixtures for the runtime tests.

The suite's root conftest sets ``TRITON_INTERPRET=1`` and ``TRITONGRAD_EMULATE_CUDA=1`` when no
GPU is present, so tests that take the ``cuda`` fixture run on the emulated device in CI and
on the real driver where a GPU is lent. Tests marked ``@pytest.mark.gpu`` need a real GPU and
skip elsewhere. The allocator's policy tests use ``FakeRaw`` and ``FakeEvents`` instead of a
device.
"""

from __future__ import annotations

import gc
from types import SimpleNamespace

import numpy as np
import pytest
from tritongrad.runtime import driver


def real_gpu() -> bool:
    return driver.is_available() and not driver.is_emulated()


@pytest.fixture(autouse=True)
def _gpu_marker(request):
    if request.node.get_closest_marker("gpu") and not real_gpu():
        pytest.skip("needs a real NVIDIA GPU (the device is emulated or absent)")


@pytest.fixture
def cuda():
    """The ``tg.cuda`` module, where a CUDA device (real or emulated) is available."""
    import tritongrad.cuda as tgcuda

    if not tgcuda.is_available():
        pytest.skip("no CUDA device (set TRITONGRAD_EMULATE_CUDA=1 to use the emulated one)")
    gc.collect()  # blocks of earlier tests' garbage go back before a test measures memory
    yield tgcuda
    tgcuda.synchronize()


class FakeRaw:
    """A raw allocator over host memory with a capacity: ``alloc(n) -> ptr | None``, ``free``."""

    def __init__(self, capacity: int = 1 << 40, materialize: bool = False):
        self.capacity = capacity
        self.materialize = materialize  # back pointers with real host buffers
        self.live: dict[int, int] = {}  # ptr -> nbytes
        self._bufs: dict[int, np.ndarray] = {}
        self._next = 1 << 32
        self.allocs = self.frees = 0

    @property
    def used(self) -> int:
        return sum(self.live.values())

    def alloc(self, nbytes: int):
        if self.used + nbytes > self.capacity:
            return None
        if self.materialize:
            buf = np.empty(nbytes, dtype=np.uint8)
            ptr = buf.ctypes.data
            self._bufs[ptr] = buf
        else:  # addresses only: 2 MiB aligned, never reused, never overlapping
            ptr = self._next
            self._next += -(-nbytes // (2 << 20)) * (2 << 20) + (2 << 20)
        self.live[ptr] = nbytes
        self.allocs += 1
        return ptr

    def free(self, ptr: int) -> None:
        assert ptr in self.live, f"raw_free of unknown pointer 0x{ptr:x}"
        del self.live[ptr]
        self._bufs.pop(ptr, None)
        self.frees += 1

    def mem_info(self):
        return self.capacity - self.used, self.capacity


class FakeEvent:
    def __init__(self, stream):
        self.stream = stream
        self.done = False

    def query(self) -> bool:
        return self.done


class FakeEvents:
    """``record(stream) -> FakeEvent``; the test decides when events complete."""

    def __init__(self):
        self.recorded: list[FakeEvent] = []

    def record(self, stream) -> FakeEvent:
        ev = FakeEvent(stream)
        self.recorded.append(ev)
        return ev

    def complete(self, stream=None) -> None:
        for ev in self.recorded:
            if stream is None or ev.stream == stream:
                ev.done = True


@pytest.fixture(scope="session")
def fakes():
    """The fake classes, for tests that build several (hypothesis tests among them)."""
    return SimpleNamespace(FakeRaw=FakeRaw, FakeEvents=FakeEvents, FakeEvent=FakeEvent)


@pytest.fixture
def raw():
    return FakeRaw()


@pytest.fixture
def events():
    return FakeEvents()


@pytest.fixture
def make_allocator():
    from tritongrad.runtime.allocator import CachingAllocator

    def make(raw=None, events=None, **kw):
        raw = raw or FakeRaw()
        events = events or FakeEvents()
        alloc = CachingAllocator(raw.alloc, raw.free, events.record, mem_info=raw.mem_info, **kw)
        return alloc, raw, events

    return make
