"""Devices, streams and events: the thread-local CUDA state, as PyTorch keeps it.

Each thread has a current device (0 until set) and, per device, a current stream (the
device's default stream until set). Context managers (``device_guard``, ``stream``) restore
what they changed on exit, also when the body raises.

The default stream is the legacy default stream, handle 0, as PyTorch's. Streams made with
``Stream()`` are created non-blocking (``CU_STREAM_NON_BLOCKING``, as PyTorch's pool streams):
they do not synchronize implicitly with the default stream, so ordering between streams is
only what ``wait_stream``/``wait_event`` say. A ``Stream`` that is garbage collected returns
its CUstream to a per-(device, priority) pool for the next ``Stream()``; CUstreams are never
destroyed, so a handle the caching allocator keys free blocks by always names the same queue.

See the stream contract in docs/streams.md and docs/runtime.md.
"""

from __future__ import annotations

import threading

from . import driver as _drv
from .device import device as Device

__all__ = [
    "Event",
    "ExternalStream",
    "Stream",
    "current_device",
    "current_stream",
    "current_stream_at",
    "current_stream_handle",
    "default_stream",
    "device_guard",
    "device_index",
    "get_stream_from_external",
    "set_device",
    "set_stream",
    "stream",
    "synchronize",
]


class _State(threading.local):
    def __init__(self):
        self.device = 0
        self.streams: dict[int, Stream] = {}  # device index -> current stream, where set


_state = _State()
_default_streams: dict[int, Stream] = {}
_stream_pool: dict[tuple[int, int], list[int]] = {}  # (device, priority) -> free handles


def _cuda_device(index: int) -> Device:
    return Device("cuda", index)


def device_index(dev=None, optional: bool = True) -> int:
    """The CUDA device ordinal that ``dev`` names, checked against the device count.

    Args:
        dev: None or ``"cuda"`` (the current device), an int, ``"cuda:1"`` or a ``device``.
        optional: accept None (meaning the current device).

    Raises:
        CudaUnavailableError: CUDA is not available.
        CudaError: ``CUDA error: invalid device ordinal 3 (1 device available)``.
        ValueError: ``dev`` is not a CUDA device.
    """
    drv = _drv.get_driver()
    if dev is None:
        if not optional:
            raise ValueError("expected a CUDA device, got None")
        return _state.device
    if isinstance(dev, int) and not isinstance(dev, bool):
        index = dev
    else:
        d = Device(dev) if isinstance(dev, str) else dev
        if not isinstance(d, Device) or d.type != "cuda":
            raise ValueError(f"expected a CUDA device, got {dev!r}")
        if d.index is None:
            return _state.device
        index = d.index
    n = drv.device_count()
    if not 0 <= index < n:
        raise _drv.CudaError(f"CUDA error: invalid device ordinal {index} "
                             f"({n} device{'s' if n != 1 else ''} available)",
                             "CUDA_ERROR_INVALID_DEVICE")
    return index


# ------------------------------------------------------------------------------------------
# Devices
# ------------------------------------------------------------------------------------------
def current_device() -> int:
    """The index of the current CUDA device of this thread (0 unless set)."""
    _drv.get_driver()
    return _state.device


def set_device(dev) -> None:
    """Makes ``dev`` the current CUDA device of this thread (its primary context current).

    Wraps ``cuCtxSetCurrent`` with the device's primary context. A negative int is ignored,
    as in PyTorch.
    """
    if isinstance(dev, int) and dev < 0:
        return
    index = device_index(dev)
    _drv.get_driver().activate(index)
    _state.device = index


class device_guard:
    """Context manager that makes a device current and restores the previous one on exit.

    ``device_guard(None)`` and ``device_guard(-1)`` do nothing (PyTorch's ``torch.cuda.device``).

    Example:
        >>> with device_guard(1):  # doctest: +SKIP
        ...     x = tg.empty(3, device="cuda")  # on cuda:1
    """

    __slots__ = ("index", "prev")

    def __init__(self, dev):
        self.index = -1 if dev is None or (isinstance(dev, int) and dev < 0) else device_index(dev)
        self.prev = -1

    def __enter__(self):
        if self.index >= 0:
            self.prev = _state.device
            if self.prev != self.index:
                set_device(self.index)
        return self

    def __exit__(self, *exc):
        if self.index >= 0 and self.prev != self.index:
            set_device(self.prev)
        return False


# ------------------------------------------------------------------------------------------
# Device-agnostic streams and events (torch.Stream, torch.Event)
# ------------------------------------------------------------------------------------------
# Note [device-agnostic streams]
#   ``tg.Stream(device)`` and ``tg.Event(device)`` are PyTorch's device-agnostic classes: on a
#   CUDA device they make the CUDA ``Stream``/``Event`` below (subclasses of these, as
#   ``torch.cuda.Stream`` is a ``torch.Stream``), on a host device (cpu, meta) a stream with no
#   queue, as ATen's: work on it is done when issued, so it is always complete, waiting and
#   synchronizing do nothing, and events cannot be recorded ("cpu backend doesn't support
#   events."). No device names the current accelerator when one is available, else the CPU.

# c10::DeviceType's numbers, which ``Stream.device_type`` reports as PyTorch's does
_DEVICE_TYPE_IDS = {"cpu": 0, "cuda": 1, "meta": 14}


def _any_device(device, cls: str) -> Device:
    """The device of ``tg.Stream(device)``/``tg.Event(device)`` (Note [device-agnostic
    streams]); an int is an accelerator's index."""
    if device is None:
        return Device("cuda", _state.device) if _drv.is_available() else Device("cpu")
    if isinstance(device, int) and not isinstance(device, bool):
        if not _drv.is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        return Device("cuda", device)
    if isinstance(device, str):
        return Device(device)
    if isinstance(device, Device):
        return device
    raise TypeError(f"{cls}(): argument 'device' must be torch.device, not "
                    f"{type(device).__name__}")


class DeviceStream:
    """An in-order queue of work on a device: ``tg.Stream``, PyTorch's device-agnostic
    ``torch.Stream`` (Note [device-agnostic streams]).

    Args:
        device: the device of the stream (default: the current accelerator, else the CPU).
        priority: 0 or negative; negative numbers are higher priorities (CUDA streams).

    As a context manager it makes the stream current on its device and restores the previous
    one on exit (a host stream changes nothing).

    Example::

        >>> with tg.Stream(device="cuda") as s:  # doctest: +SKIP
        ...     y = x @ x  # queued on s
    """

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        if cls is not DeviceStream:  # (tg.cuda.Stream(...) and its subclasses)
            return object.__new__(cls)
        if len(args) > 1:  # (the message Python gives for Stream(device, *, ...))
            raise TypeError(f"Stream() takes from 0 to 1 positional arguments but {len(args)} "
                            f"were given")
        return _new_stream(*args, **kwargs)

    @property
    def device_type(self) -> int:
        """The device's type as PyTorch's ``c10::DeviceType`` number (cpu 0, cuda 1)."""
        return _DEVICE_TYPE_IDS.get(self.device.type, -1)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def __repr__(self) -> str:
        return (f"tritongrad.Stream device_type={self.device.type}, "
                f"device_index={self.device_index}, stream_id={self.stream_id}")


def _new_stream(device=None, *, priority: int = 0) -> DeviceStream:
    """``tg.Stream(device, priority=...)`` (Note [device-agnostic streams])."""
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise TypeError(f"Stream(): argument 'priority' must be int, not "
                        f"{type(priority).__name__}")
    dev = _any_device(device, "Stream")
    if dev.type == "cuda":  # (type() then runs Stream.__init__(device, priority=...))
        return object.__new__(Stream)
    return object.__new__(_HostStream)._on(dev)


class _HostStream(DeviceStream):
    """A stream of a host device (Note [device-agnostic streams])."""

    __slots__ = ("_device",)

    def __init__(self, device=None, *, priority: int = 0):
        pass  # (made by DeviceStream.__new__)

    def _on(self, device: Device) -> _HostStream:
        self._device = device
        return self

    @property
    def device(self) -> Device:
        """The device the stream belongs to."""
        return self._device

    device_index = -1
    stream_id = 0

    def query(self) -> bool:
        """True: work on a host stream is done when it is issued."""
        return True

    def synchronize(self) -> None:
        """Nothing to wait for on a host stream."""

    def wait_event(self, event: DeviceEvent) -> None:
        """Nothing to wait for on a host stream."""

    def wait_stream(self, stream: DeviceStream) -> None:
        """Nothing to wait for on a host stream."""

    def record_event(self, event: DeviceEvent | None = None) -> DeviceEvent:
        """Refused: a host device has no events."""
        raise RuntimeError(f"{self._device.type} backend doesn't support events.")

    def is_capturing(self) -> bool:
        """False: graphs capture CUDA streams only."""
        return False

    @property
    def native_handle(self) -> int:
        raise RuntimeError("Backend doesn't support getting stream native handle.")

    def __eq__(self, other) -> bool:
        return isinstance(other, _HostStream) and other._device == self._device

    def __hash__(self) -> int:
        return hash(("stream", self._device.type))


class DeviceEvent:
    """A marker in a stream, to wait on, to poll or to time between: ``tg.Event``, PyTorch's
    device-agnostic ``torch.Event`` (Note [device-agnostic streams]).

    Args:
        device: the device of the event (default: the current accelerator, else the CPU).
        enable_timing: the event can measure time (``elapsed_time``).
        blocking: ``synchronize`` sleeps instead of spinning (CUDA).
        interprocess: can be shared between processes (CUDA).
    """

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        if cls is not DeviceEvent:  # (tg.cuda.Event(...))
            return object.__new__(cls)
        if len(args) > 1:  # (the message Python gives for Event(device, *, ...))
            raise TypeError(f"Event() takes from 0 to 1 positional arguments but {len(args)} "
                            f"were given")
        return _new_event(*args, **kwargs)

    def __repr__(self) -> str:
        dev = self.device
        return (f"tritongrad.Event device_type={'cuda' if dev is None else dev.type}, "
                f"device_index={-1 if dev is None or dev.index is None else dev.index}, "
                f"event_id={self.event_id}")


def _new_event(device=None, *, enable_timing: bool = False, blocking: bool = False,
               interprocess: bool = False) -> DeviceEvent:
    """``tg.Event(device, ...)`` (Note [device-agnostic streams]); type() then runs the
    made class's ``__init__`` with the same arguments."""
    dev = _any_device(device, "Event")
    if dev.type == "cuda":
        return object.__new__(_AnyCudaEvent)
    return object.__new__(_HostEvent)._on(dev, enable_timing)


class _HostEvent(DeviceEvent):
    """An event of a host device, which cannot be recorded (Note [device-agnostic streams])."""

    __slots__ = ("_device", "enable_timing")

    def __init__(self, device=None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        pass  # (made by DeviceEvent.__new__)

    def _on(self, device: Device, enable_timing: bool) -> _HostEvent:
        self._device, self.enable_timing = device, enable_timing
        return self

    @property
    def device(self) -> Device:
        """The device of the event."""
        return self._device

    event_id = 0

    def _refuse(self, stream=None):
        raise RuntimeError(f"{self._device.type} backend doesn't support events.")

    record = wait = synchronize = _refuse

    def query(self) -> bool:
        """True: an event never recorded is complete."""
        return True

    def elapsed_time(self, end_event: DeviceEvent) -> float:
        """Refused: a host event is never recorded."""
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise ValueError("Both events must be recorded before calculating elapsed time.")


# ------------------------------------------------------------------------------------------
# Streams
# ------------------------------------------------------------------------------------------
class Stream(DeviceStream):
    """A CUDA stream: a queue of work that runs in issue order on one device.

    Wraps ``cuStreamCreateWithPriority(CU_STREAM_NON_BLOCKING, priority)``. Two ``Stream``
    objects over the same CUstream compare equal.

    Args:
        device: the device to create the stream on (default: the current device).
        priority: lower numbers are higher priorities; 0 is the default, negative values
            (down to the device's greatest priority, -5 on an H100) are higher.

    Attributes:
        cuda_stream: the CUstream handle as an int (0 for the legacy default stream).
        device_index: the device ordinal.

    Example:
        >>> s = tg.cuda.Stream()  # doctest: +SKIP
        >>> with tg.cuda.stream(s):
        ...     y = x * 2  # queued on s
        >>> tg.cuda.current_stream().wait_stream(s)
    """

    __slots__ = ("__weakref__", "_ctx", "_owned", "cuda_stream", "device_index", "priority")

    def __init__(self, device=None, priority: int = 0):
        self._ctx = None
        index = device_index(device)
        pool = _stream_pool.get((index, priority))
        handle = pool.pop() if pool else None  # list.pop is atomic: no lock needed
        if handle is None:
            handle = _drv.get_driver().stream_create(index, priority)
        self.cuda_stream = handle
        self.device_index = index
        self.priority = priority
        self._owned = True

    @classmethod
    def _wrap(cls, handle: int, index: int, priority: int = 0) -> Stream:
        """A Stream object over an existing handle (the default stream, external streams)."""
        s = object.__new__(cls)
        s.cuda_stream, s.device_index, s.priority, s._owned = handle, index, priority, False
        s._ctx = None
        return s

    def __del__(self):
        try:
            if self._owned:  # recycle the CUstream rather than destroy it (see module doc)
                _stream_pool.setdefault((self.device_index, self.priority), []).append(
                    self.cuda_stream)
        except Exception:  # noqa: BLE001, S110 - destructors never raise
            pass

    @property
    def device(self) -> Device:
        """The device the stream belongs to."""
        return _cuda_device(self.device_index)

    def wait_event(self, event: Event) -> None:
        """Makes all future work on this stream wait for ``event`` (``cuStreamWaitEvent``).

        Waiting on an event that was never recorded does nothing.
        """
        event.wait(self)

    def wait_stream(self, stream: Stream) -> None:
        """Makes all future work on this stream wait for the work queued so far on ``stream``.

        Records an event on ``stream`` and waits on it (``cuEventRecord`` +
        ``cuStreamWaitEvent``); the host does not block.
        """
        if stream != self:
            self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Records ``event`` (a new one if None) on this stream and returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def query(self) -> bool:
        """True when all work queued on the stream has completed (``cuStreamQuery``)."""
        return _drv.get_driver().stream_query(self.device_index, self.cuda_stream)

    def synchronize(self) -> None:
        """Blocks the host until the stream's queued work is done (``cuStreamSynchronize``)."""
        _drv.get_driver().stream_synchronize(self.device_index, self.cuda_stream)

    @property
    def stream_id(self) -> int:
        """The stream's id (its CUstream handle; 0 for the default stream)."""
        return self.cuda_stream

    @property
    def native_handle(self) -> int:
        """The CUstream handle as an int."""
        return self.cuda_stream

    def is_capturing(self) -> bool:
        """Whether a CUDA graph capture is underway on this stream (``cuStreamIsCapturing``)."""
        drv = _drv._driver
        return bool(drv is not None and drv.capturing
                    and drv.stream_is_capturing(self.device_index, self.cuda_stream))

    def __enter__(self) -> Stream:
        """Makes this stream (and its device) current until ``__exit__``, as ``stream(s)``."""
        ctx = self._ctx = stream(self), self._ctx  # (nested entries of one stream)
        ctx[0].__enter__()
        return self

    def __exit__(self, *exc) -> bool:
        ctx, self._ctx = self._ctx, self._ctx[1]
        return ctx[0].__exit__(*exc)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Stream) and self.cuda_stream == other.cuda_stream
                and self.device_index == other.device_index)

    def __hash__(self) -> int:
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self) -> str:
        return (f"<tritongrad.cuda.{type(self).__name__} device=cuda:{self.device_index} "
                f"cuda_stream=0x{self.cuda_stream:x}>")


class ExternalStream(Stream):
    """Wrapper around an externally allocated CUDA stream.

    This class is used to wrap streams allocated in other libraries in order to facilitate
    data exchange and multi-library interactions: it works wherever a ``Stream`` does
    (``stream(...)``, ``wait_stream``, events, ``record_stream``, backward's stream
    semantics), and tritongrad never destroys nor recycles its CUstream.

    .. note:: This class doesn't manage the stream life-cycle, it is the user responsibility
       to keep the referenced stream alive while this class is being used.

    Args:
        stream_ptr (int): Integer representation of the ``cudaStream_t`` value allocated
            externally.
        device (device or int, optional): the device where the stream was originally
            allocated (default: the current device). If device is specified incorrectly,
            subsequent launches using this stream may fail.

    Example:
        >>> s = tg.cuda.ExternalStream(cupy_stream.ptr)  # doctest: +SKIP
        >>> with tg.cuda.stream(s):
        ...     y = x * 2  # queued on CuPy's stream
    """

    __slots__ = ()

    def __init__(self, stream_ptr: int, device=None):
        if isinstance(stream_ptr, bool) or not isinstance(stream_ptr, int):
            raise TypeError(f"ExternalStream: stream_ptr must be an int (a cudaStream_t), got "
                            f"{type(stream_ptr).__name__}")
        self.cuda_stream = stream_ptr
        self.device_index = device_index(device)
        self.priority = 0
        self._owned = False  # (never recycled into the pool, never destroyed)
        self._ctx = None


def get_stream_from_external(data_ptr: int, device=None) -> Stream:
    """Return a :class:`Stream` from an externally allocated CUDA stream.

    This function is used to wrap streams allocated in other libraries in order to facilitate
    data exchange and multi-library interactions.

    .. note:: This function doesn't manage the stream life-cycle, it is the user
       responsibility to keep the referenced stream alive while this returned stream is
       being used.

    Args:
        data_ptr (int): Integer representation of the ``cudaStream_t`` value that is
            allocated externally.
        device (device or int, optional): the device where the stream was originally
            allocated. If device is specified incorrectly, subsequent launches using this
            stream may fail.
    """
    s = ExternalStream(data_ptr, device)
    return Stream._wrap(s.cuda_stream, s.device_index)


def default_stream(device=None) -> Stream:
    """The default stream of ``device`` (current device if None): the legacy stream, handle 0.

    The Stream object is cached per device, so ``default_stream() is default_stream()``.
    """
    index = device_index(device)
    s = _default_streams.get(index)
    if s is None:
        s = _default_streams.setdefault(index, Stream._wrap(0, index))
    return s


def current_stream(device=None) -> Stream:
    """This thread's current stream for ``device`` (the current device if None)."""
    index = device_index(device)
    s = _state.streams.get(index)
    return s if s is not None else default_stream(index)


def current_stream_at(index: int) -> Stream:
    """``current_stream`` for a device ordinal already checked (recording a node's stream)."""
    s = _state.streams.get(index)
    if s is None:
        s = _default_streams.get(index) or default_stream(index)
    return s


def current_stream_handle(index: int) -> int:
    """The current stream's handle for a device ordinal already checked (the launch hot path)."""
    s = _state.streams.get(index)
    return 0 if s is None else s.cuda_stream


def set_stream(s: Stream | None) -> None:
    """Makes ``s`` the current stream of its device, and its device the current device.

    As ``torch.cuda.set_stream``; prefer the ``stream`` context manager, which restores both.
    None does nothing.
    """
    if s is None:
        return
    if _state.device != s.device_index:
        set_device(s.device_index)
    _state.streams[s.device_index] = s


class stream:
    """Context manager that selects a stream (and its device) and restores both on exit.

    ``stream(None)`` does nothing. Restores on exit also when the body raises.

    Example:
        >>> s = tg.cuda.Stream()  # doctest: +SKIP
        >>> with tg.cuda.stream(s):
        ...     assert tg.cuda.current_stream() == s
    """

    __slots__ = ("_prev_device", "_prev_stream", "stream")

    def __init__(self, s: Stream | None):
        self.stream = s
        self._prev_device = self._prev_stream = None

    def __enter__(self) -> Stream | None:
        s = self.stream
        if s is None:
            return None
        self._prev_device = _state.device
        self._prev_stream = _state.streams.get(s.device_index)
        set_stream(s)
        return s

    def __exit__(self, *exc):
        s = self.stream
        if s is None:
            return False
        if self._prev_stream is None:
            _state.streams.pop(s.device_index, None)
        else:
            _state.streams[s.device_index] = self._prev_stream
        if _state.device != self._prev_device:
            set_device(self._prev_device)
        return False


def synchronize(device=None) -> None:
    """Waits for all work on all streams of ``device`` (current if None): ``cuCtxSynchronize``."""
    index = device_index(device)
    _drv.get_driver().ctx_synchronize(index)
    run_sync_hooks()


# Functions run after each point where the host waits for a device: synchronize() and every
# device-to-host read (memory.to_host). Errors found on the device without a sync surface
# there, as CUDA's device-side asserts do at the next synchronising call (autograd's deferred
# index checks register one: Note [index check modes] in autograd/checks.py).
_sync_hooks: list = []
_in_hooks = threading.local()


def add_sync_hook(fn) -> None:
    """Registers ``fn()`` to run after each host synchronisation point (once per ``fn``)."""
    if fn not in _sync_hooks:
        _sync_hooks.append(fn)


def in_sync_hooks() -> bool:
    """Whether this thread is running the sync hooks (the device was just waited for)."""
    return getattr(_in_hooks, "active", False)


def run_sync_hooks() -> None:
    """Runs the sync hooks (not from inside one: a hook may read the device itself)."""
    if not _sync_hooks or getattr(_in_hooks, "active", False):
        return
    _in_hooks.active = True
    try:
        for fn in list(_sync_hooks):
            fn()
    finally:
        _in_hooks.active = False


# ------------------------------------------------------------------------------------------
# Events
# ------------------------------------------------------------------------------------------
class Event(DeviceEvent):
    """A CUDA event: a marker in a stream, to wait on, to poll, or to time between.

    The CUevent is created (``cuEventCreate``) on the first ``record``, on the device of the
    stream it is recorded on; an event never recorded is complete and waiting on it is a no-op.

    Args:
        enable_timing: the event can measure time (``elapsed_time``).
        blocking: ``synchronize`` sleeps instead of spinning (``CU_EVENT_BLOCKING_SYNC``).
        interprocess: can be shared between processes (``CU_EVENT_INTERPROCESS``; needs
            ``enable_timing=False``).

    Example:
        >>> start, end = tg.cuda.Event(enable_timing=True), tg.cuda.Event(enable_timing=True)  # doctest: +SKIP
        >>> start.record(); y = x @ x; end.record()
        >>> end.synchronize(); ms = start.elapsed_time(end)
    """

    __slots__ = (
        "__weakref__",
        "_device",
        "_handle",
        "blocking",
        "enable_timing",
        "interprocess",
    )

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        if interprocess and enable_timing:
            raise ValueError("Event: an interprocess event cannot have enable_timing=True")
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.interprocess = interprocess
        self._handle: int | None = None
        self._device = -1

    @property
    def cuda_event(self) -> int:
        """The CUevent handle as an int (0 before the first record)."""
        return self._handle or 0

    event_id = cuda_event

    @property
    def device(self) -> Device | None:
        """The device of the event, or None before the first record."""
        return None if self._handle is None else _cuda_device(self._device)

    def _record_on(self, index: int, handle: int) -> None:
        drv = _drv.get_driver()
        if self._handle is None:
            self._handle = drv.event_create(index, self.enable_timing, self.blocking,
                                            self.interprocess)
            self._device = index
        elif index != self._device:
            raise ValueError(f"Event: recorded on cuda:{self._device} before, cannot record on "
                             f"a stream of cuda:{index}")
        drv.event_record(index, self._handle, handle)

    def record(self, stream: Stream | None = None) -> None:
        """Records the event on ``stream`` (the current stream if None): ``cuEventRecord``."""
        if stream is None:
            stream = current_stream()
        self._record_on(stream.device_index, stream.cuda_stream)

    def wait(self, stream: Stream | None = None) -> None:
        """Makes future work on ``stream`` (current if None) wait for this event.

        Wraps ``cuStreamWaitEvent``; the host does not block. No-op if never recorded.
        """
        if self._handle is None:
            return
        if stream is None:
            stream = current_stream(self._device)
        _drv.get_driver().stream_wait_event(stream.device_index, stream.cuda_stream,
                                            self._handle)

    def query(self) -> bool:
        """True when the work before the event's record has completed (``cuEventQuery``)."""
        if self._handle is None:
            return True
        return _drv.get_driver().event_query(self._device, self._handle)

    def synchronize(self) -> None:
        """Blocks the host until the event has completed (``cuEventSynchronize``)."""
        if self._handle is not None:
            _drv.get_driver().event_synchronize(self._device, self._handle)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and ``end_event`` (``cuEventElapsedTime``).

        Both events must have been created with ``enable_timing=True``, recorded, and have
        completed (call ``end_event.synchronize()`` first).
        """
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Event.elapsed_time: both events must be created with "
                               "enable_timing=True")
        if self._handle is None or end_event._handle is None:
            raise RuntimeError("Event.elapsed_time: both events must be recorded before "
                               "calculating elapsed time")
        return _drv.get_driver().event_elapsed_time(self._device, self._handle,
                                                    end_event._handle)

    def __del__(self):
        try:
            if self._handle is not None:
                _drv.get_driver().event_destroy(self._device, self._handle)
                self._handle = None
        except Exception:  # noqa: BLE001, S110 - destructors never raise
            pass

    def __repr__(self) -> str:
        if self._handle is None:
            return "<tritongrad.cuda.Event uninitialized>"
        return f"<tritongrad.cuda.Event device=cuda:{self._device} cuda_event=0x{self._handle:x}>"


class _AnyCudaEvent(Event):
    """``tg.Event(device)`` on a CUDA device: a CUDA ``Event`` made with the device-agnostic
    signature (Note [device-agnostic streams])."""

    __slots__ = ()

    def __init__(self, device=None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        super().__init__(enable_timing, blocking, interprocess)
