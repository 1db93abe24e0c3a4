"""``tritongrad.accelerator``: PyTorch's device-agnostic ``torch.accelerator`` API, over
``tritongrad.cuda`` (CUDA is tritongrad's one accelerator).

Example::

    >>> device = tg.accelerator.current_accelerator(check_available=True) or tg.device("cpu")
    >>> x = tg.ones(2, device=device)
"""

from __future__ import annotations

import warnings

from . import cuda
from .runtime.device import device as Device

__all__ = ["Graph", "current_accelerator", "current_device_idx", "current_device_index",
           "current_stream", "device_count", "device_index", "empty_cache", "empty_host_cache",
           "get_device_capability", "get_memory_info", "is_available", "max_memory_allocated",
           "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx",
           "set_device_index", "set_stream", "synchronize"]

_ACCELERATOR = "cuda"


def device_count() -> int:
    """The number of available accelerator devices (0 where none is available)."""
    return cuda.device_count() if cuda.is_available() else 0


def is_available() -> bool:
    """Whether an accelerator device is available (a CUDA GPU, or the emulated device)."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> Device | None:
    """The device of the current accelerator, ``device(type='cuda')`` (index None: see
    ``current_device_index``).

    Args:
        check_available: if True, return None when no accelerator device is available
            (otherwise the accelerator is returned whether or not one is).
    """
    if check_available and not is_available():
        return None
    return Device(_ACCELERATOR)


def _index(device, optional: bool = False) -> int:
    """A device index from an int, a string or a device of the accelerator's type; None
    (when ``optional``) or a device without an index: the current index."""
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = Device(device)
    index = None
    if isinstance(device, Device):
        if device.type != _ACCELERATOR:
            raise ValueError(f"{device.type} doesn't match the current accelerator "
                             f"{current_accelerator()}.")
        index = device.index
    if index is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, "
                             f"but got:{device}")
        return current_device_index()
    return index


def current_device_index() -> int:
    """The index of the current accelerator device (the current CUDA device)."""
    return cuda.current_device()


def set_device_index(device, /) -> None:
    """Makes ``device`` (a device with an index, a string or an int) the current accelerator
    device."""
    cuda.set_device(_index(device))


def current_device_idx() -> int:
    """Deprecated: ``current_device_index``."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_idx(device, /) -> None:
    """Deprecated: ``set_device_index``."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


def current_stream(device=None, /) -> cuda.Stream:
    """The current stream of ``device`` (the current device if None)."""
    return cuda.current_stream(_index(device, optional=True))


def set_stream(stream: cuda.Stream) -> None:
    """Makes ``stream`` the current stream of its device (and its device the current one)."""
    cuda.set_device(stream.device_index)
    cuda.set_stream(stream)


def synchronize(device=None, /) -> None:
    """Waits for all work on all streams of ``device`` (the current device if None)."""
    cuda.synchronize(_index(device, optional=True))


class device_index:
    """Context manager that makes device index ``device`` current and restores the previous
    one on exit; ``device_index(None)`` does nothing."""

    def __init__(self, device: int | None, /) -> None:
        self.idx, self.prev_idx = device, -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)


def _memory(name: str):
    fn = getattr(cuda, name)

    def delegate(device=None, /):
        return fn(_index(device, optional=True))

    delegate.__name__ = delegate.__qualname__ = name
    delegate.__doc__ = f"``tritongrad.cuda.{name}`` of ``device`` (the current device if None)."
    return delegate


(empty_cache, max_memory_allocated, max_memory_reserved, memory_allocated, memory_reserved,
 memory_stats, reset_peak_memory_stats) = map(_memory, (
    "empty_cache", "max_memory_allocated", "max_memory_reserved", "memory_allocated",
    "memory_reserved", "memory_stats", "reset_peak_memory_stats"))


(get_memory_info, reset_accumulated_memory_stats) = map(_memory, (
    "mem_get_info", "reset_accumulated_memory_stats"))
get_memory_info.__name__ = get_memory_info.__qualname__ = "get_memory_info"
get_memory_info.__doc__ = ("``(free, total)`` bytes of ``device``'s memory (the current device "
                           "if None): free across all processes, and the device's total.")


def empty_host_cache() -> None:
    """Releases the cached host (pinned) memory that no copy still uses, so that other
    applications can use it; does nothing if the pinned allocator was never used."""
    from .runtime import memory
    alloc = memory._host_allocator()
    if alloc is not None:
        alloc.empty_cache()


def get_device_capability(device=None, /) -> dict:
    """The capability of ``device`` (the current device if None): ``{"supported_dtypes":
    set}``, the dtypes tensors on it can have and convert between."""
    from .runtime import dtype as dtypes
    _index(device, optional=True)  # (checks the device's type)
    return {"supported_dtypes": {getattr(dtypes, name) for name in dtypes.CPP_NAMES}}


class Graph(cuda.CUDAGraph):
    """An accelerator graph that captures and replays work (``torch.accelerator.Graph``): a
    ``CUDAGraph`` that is also a context manager capturing the work queued on the current
    stream (which must not be the default stream: enter a ``tg.Stream`` first).

    Args:
        keep_graph: see ``CUDAGraph``.
        pool: a ``graph_pool_handle()`` or another graph's ``pool()``, to share its memory.
        capture_error_mode: ``"default"`` (CUDA's ``"global"``), ``"global"``,
            ``"thread_local"`` or ``"relaxed"``: see ``CUDAGraph.capture_begin``.

    Example::

        >>> x = tg.zeros(2000, device="cuda")  # doctest: +SKIP
        >>> graph = tg.accelerator.Graph()
        >>> with tg.Stream(), graph:
        ...     x += 1
        >>> graph.replay()
    """

    def __init__(self, keep_graph: bool = False, *, pool=None,
                 capture_error_mode: str = "default") -> None:
        super().__init__(keep_graph)
        self.graph_pool = pool
        self.capture_error_mode = capture_error_mode

    def capture_begin(self) -> None:
        """Begins the capture on the current stream, with the pool and capture error mode
        given at construction."""
        mode = self.capture_error_mode
        super().capture_begin(self.graph_pool, "global" if mode == "default" else mode)

    def __enter__(self) -> None:
        synchronize()
        empty_cache()
        empty_host_cache()
        self.capture_begin()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.capture_end()
        else:  # (the body's error propagates; the half-made capture is dropped)
            self._abort()
        return False
