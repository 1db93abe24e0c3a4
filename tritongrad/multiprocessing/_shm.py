"""CPU tensors in POSIX shared memory: the segments, ``share_memory_`` and the rebuilds.

A CPU tensor's memory is a NumPy array; views of one storage are NumPy views whose base
chain ends at one root array (kernels/numpy/memory.py ``_storage_root``). Sharing a storage
copies the root's bytes into a ``_Segment`` (an mmap of a POSIX shared memory object, opened
with ``shm_open``) and repoints every tensor viewing that root at the same bytes, offsets and
strides in the segment: the data are unchanged and all views see the shared memory. The new
root is ``np.frombuffer(segment)``, so a storage is shared exactly when its root's buffer is a
``_Segment`` (``segment_of``); no flag is kept anywhere, and the allocation of tensors that are
never shared does not change at all.

Why an mmap of ``shm_open``'s object and not ``multiprocessing.shared_memory``: the file
descriptor strategy needs the segment's descriptor (to send it, and to unlink the name at
once), which ``SharedMemory`` does not expose before Python 3.13; ``SharedMemory`` also
registers every segment with the resource tracker, which then warns about and unlinks
segments that other processes still use, and its ``close()`` fails while NumPy views exist.

Note [finding the views]: NumPy arrays cannot be pointed at new memory, so the tensors
viewing a storage are found and given new arrays. A tensor whose array owns its memory, or is
the one view of an array that does, with no other reference to either, is the only view (the
common case, told by ``sys.getrefcount``); otherwise every live Tensor is visited once
(``gc.get_objects``: ~0.1 s in a process holding 100,000 tensors). NumPy
arrays held outside tensors (``t.numpy()`` results, values saved for backward) keep viewing
the old private memory, which keeps the values they had when the storage was shared.
"""

from __future__ import annotations

import ctypes
import gc
import mmap
import multiprocessing.util
import os
import secrets
import sys
import threading
import weakref

import numpy as np

from ..autograd.tensor import Tensor, make
from ..kernels.numpy.bf16 import BF16Array
from ..kernels.numpy.memory import _storage_nbytes, _storage_root

try:  # POSIX shm_open/shm_unlink, as multiprocessing.shared_memory calls them
    import _posixshmem
except ImportError:  # (Windows: no POSIX shared memory)
    _posixshmem = None

__all__ = ["get_all_sharing_strategies", "get_sharing_strategy", "is_shared",
           "set_sharing_strategy", "share_memory_"]

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = "file_descriptor"
_HEADER = 8  # file_system segments end with an int64 count of the processes mapping them


def get_all_sharing_strategies() -> set[str]:
    """Return a set of sharing strategies supported on a current system."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """Return the current strategy for sharing CPU tensors."""
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Set the strategy for sharing CPU tensors.

    Args:
        new_strategy (str): Name of the selected strategy. Should be one of the values
            returned by :func:`get_all_sharing_strategies()`.

    The strategy applies to storages moved to shared memory afterwards; a storage shared
    already keeps the way it was shared (its descriptor, or its name).
    """
    global _strategy
    if new_strategy not in _STRATEGIES:
        # (PyTorch asserts: an AssertionError with this text; a bad argument is a ValueError)
        raise ValueError(f"invalid sharing strategy {new_strategy!r}, expected one of "
                         f"{set(_STRATEGIES)}")
    _strategy = new_strategy


class _Segment(mmap.mmap):
    """One POSIX shared memory object mapped into this process (read and write, shared).

    Attributes (set by ``_open``): ``nbytes`` the storage's bytes; ``key`` what identifies the
    object in every process (``(st_dev, st_ino)``, or the name); ``fd`` the descriptor kept
    open to send it on (file_descriptor strategy; None for file_system); ``name`` its name in
    /dev/shm (file_system; None once unlinked).
    """

    def __del__(self):
        try:  # destructors never raise
            fd, self.fd = getattr(self, "fd", None), None
            if fd is not None:
                os.close(fd)
            if not sys.is_finalizing():  # (_release_all ran at exit)
                _release(self)
        except Exception:  # noqa: BLE001, S110 - destructors never raise
            pass


_segments: dict = {}  # key -> weakref to this process's _Segment of that object
_lock = threading.Lock()


def _open(fd: int, nbytes: int, name: str | None) -> tuple[_Segment, bool]:
    """This process's segment of the object open as ``fd`` (mapped once per process: a
    storage sent back and forth stays one storage), and whether it was mapped now.
    file_descriptor: takes ``fd`` over; file_system: the caller closes it."""
    st = os.fstat(fd)
    key = name if name is not None else (st.st_dev, st.st_ino)
    with _lock:
        ref = _segments.get(key)
        seg = ref() if ref is not None else None
        if seg is not None:
            if name is None:
                os.close(fd)
            return seg, False
        # (mmap cannot map 0 bytes: an empty storage gets one byte nobody reads)
        seg = _Segment(fd, max(nbytes, 1) + (_HEADER if name is not None else 0))
        seg.nbytes, seg.key, seg.fd, seg.name = nbytes, key, (fd if name is None else None), name
        seg.counted = False  # (file_system: whether this process is one of its holders)
        _segments[key] = weakref.ref(seg, lambda _, k=key: _forget(k))
    return seg, True


def _forget(key) -> None:
    with _lock:
        ref = _segments.get(key)
        if ref is not None and ref() is None:
            del _segments[key]


def _create(nbytes: int) -> _Segment:
    """A new segment of ``nbytes`` under the current strategy."""
    if _posixshmem is None:
        raise RuntimeError("share_memory_: POSIX shared memory is not available on "
                           f"{sys.platform}")
    name = f"/tritongrad_{os.getpid()}_{secrets.token_hex(8)}"
    fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
    try:
        if _strategy == "file_descriptor":
            # Unlinked at once: the memory lives while a process maps it or holds a
            # descriptor, and nothing is left behind in /dev/shm whatever happens.
            _posixshmem.shm_unlink(name)
            os.ftruncate(fd, max(nbytes, 1))
            return _open(fd, nbytes, None)[0]
        os.ftruncate(fd, max(nbytes, 1) + _HEADER)
        seg = _open(fd, nbytes, name)[0]
    except BaseException:
        os.close(fd)
        if _strategy != "file_descriptor":
            _posixshmem.shm_unlink(name)
        raise
    os.close(fd)
    _fs_count(seg, +1)
    seg.counted = True
    return seg


def _fs_count(seg: _Segment, delta: int) -> int:
    """Adds ``delta`` to a file_system segment's count of the processes (and messages in
    flight) holding it, under a lock on the object; the name is unlinked at zero."""
    import fcntl
    at = max(seg.nbytes, 1)
    fd = os.open(f"/dev/shm{seg.name}", os.O_RDWR) if os.path.isdir("/dev/shm") else \
        _posixshmem.shm_open(seg.name, os.O_RDWR, mode=0o600)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        n = int.from_bytes(seg[at:at + _HEADER], "little", signed=True) + delta
        seg[at:at + _HEADER] = n.to_bytes(_HEADER, "little", signed=True)
        if n <= 0:
            _posixshmem.shm_unlink(seg.name)
            seg.name = None
        return n
    finally:
        os.close(fd)


def _release(seg: _Segment) -> None:
    """This process lets a file_system segment go (unlinked when no holder is left)."""
    if seg.counted and seg.name is not None:
        seg.counted = False
        _fs_count(seg, -1)


def _live_segments() -> list:
    with _lock:
        return [s for s in (r() for r in _segments.values()) if s is not None]


def _release_all() -> None:
    """At exit (also of a ``multiprocessing`` child, which runs its finalizers before
    ``os._exit``): segments still mapped here stop counting this process as a holder."""
    for seg in _live_segments():
        try:
            _release(seg)
        except OSError:
            pass  # (unlinked meanwhile by the others: nothing left to release)


def _after_fork_in_child() -> None:
    # A forked child inherits the mappings but was never counted: it must not count itself
    # out at exit (a raw os.fork() child may end with os._exit, and would leak a count).
    global _lock
    _lock = threading.Lock()  # (another thread may have held it at the fork)
    for seg in _live_segments():
        seg.counted = False


multiprocessing.util.Finalize(None, _release_all, exitpriority=0)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def attach_fd(fd: int, nbytes: int) -> _Segment:
    """This process's segment of the file_descriptor object open as ``fd`` (taken over)."""
    return _open(fd, nbytes, None)[0]


def attach_name(name: str, nbytes: int) -> _Segment:
    """This process's segment of the file_system object ``name`` (counted once here)."""
    with _lock:
        ref = _segments.get(name)
        seg = ref() if ref is not None else None
    if seg is not None:
        return seg
    fd = _posixshmem.shm_open(name, os.O_RDWR, mode=0o600)
    try:
        seg, new = _open(fd, nbytes, name)
    finally:
        os.close(fd)
    if new:
        _fs_count(seg, +1)
        seg.counted = True
    return seg


def hold(seg: _Segment, delta: int) -> None:
    """Counts a file_system segment's message in flight (+1 when sent, -1 once received)."""
    _fs_count(seg, delta)


def segment_of(root: np.ndarray) -> _Segment | None:
    """The segment whose memory the storage root ``root`` is, or None (private memory)."""
    b = root.base
    return b.obj if type(b) is memoryview and isinstance(b.obj, _Segment) else None


def root_of(seg: _Segment) -> np.ndarray:
    """The one storage root of ``seg`` in this process (uint8, ``seg.nbytes`` long)."""
    ref = getattr(seg, "root", None)
    root = ref() if ref is not None else None
    if root is None:
        root = np.frombuffer(seg, np.uint8, count=seg.nbytes)
        seg.root = weakref.ref(root)
    return root


def array_at(root: np.ndarray, cls: type, shape, dtype, offset: int, strides,
             writeable: bool = True) -> np.ndarray:
    """An array of type ``cls`` (ndarray or BF16Array) viewing ``root`` at byte ``offset``
    with byte ``strides``: its NumPy base is ``root``, so ``_storage_root`` finds it."""
    out = np.ndarray(shape, dtype, root, offset, strides)
    if cls is not np.ndarray:
        out = out.view(cls)
    if not writeable:
        out.flags.writeable = False
    return out


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _counts(holder) -> tuple[int, int]:
    """References to ``holder._data`` and to its NumPy base (0: none), seen from here."""
    a = holder._data
    b = a.base
    return sys.getrefcount(a), (0 if b is None else sys.getrefcount(b))


class _Holder:
    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = data


# What ``_counts`` sees when only the holder's slot refers to its array, which owns its memory
# (3: the slot, a local, getrefcount's argument) or is the one view of its base (the base: its
# view's reference, a local, the argument): measured rather than assumed.
_LONE_OWNER = _counts(_Holder(np.empty(1)))
_LONE_VIEW = _counts(_Holder(np.empty(2)[:1]))


def _lone(t: Tensor, counts: tuple[int, int]) -> bool:
    """Whether nothing but ``t`` views its storage, from ``_counts(t)``: its array owns its
    memory, or is the one view of an array that does, and no one else refers to either."""
    base = t._data.base
    if base is None:
        return counts <= _LONE_OWNER
    return (type(base) is np.ndarray and base.base is None and counts[0] <= _LONE_VIEW[0]
            and counts[1] <= _LONE_VIEW[1])


def _views(root: np.ndarray) -> list:
    """Every tensor whose array views ``root``: Note [finding the views]."""
    out = []
    for o in gc.get_objects():
        # (type(), not isinstance: a dead weakref.proxy raises on reading its __class__)
        if issubclass(type(o), Tensor):
            d = getattr(o, "_data", None)
            if isinstance(d, np.ndarray) and (d is root or _storage_root(d) is root):
                out.append(o)
    return out


def share_memory_(t: Tensor) -> Tensor:
    """Moves ``t``'s storage to shared memory in place (see the module's docstring)."""
    if not isinstance(t._data, np.ndarray):  # CUDA: already shareable (as PyTorch says)
        return t
    counts = _counts(t)  # (counted before this frame refers to the arrays)
    a = t._data
    root = _storage_root(a)
    if segment_of(root) is not None:
        return t
    start, nbytes = _address(root), _storage_nbytes(root)
    seg = _create(nbytes)
    new_root = root_of(seg)
    if nbytes:
        ctypes.memmove(_address(new_root), start, nbytes)
    for v in ([t] if _lone(t, counts) else _views(root)):
        d = v._data
        v._data = array_at(new_root, type(d), d.shape, d.dtype, _address(d) - start,
                           d.strides, bool(d.flags.writeable))
    return t


def is_shared(t: Tensor) -> bool:
    """Whether ``t``'s storage is in shared memory (always for CUDA tensors, as PyTorch)."""
    a = t._data
    if not isinstance(a, np.ndarray):
        return t.device.type == "cuda"
    return segment_of(_storage_root(a)) is not None


def tensor_meta(t: Tensor) -> tuple:
    """How a tensor over a shared storage is rebuilt over the same bytes elsewhere."""
    d = t._data
    root = _storage_root(d)
    return (d.shape, d.dtype.str, _address(d) - _address(root), d.strides,
            type(d) is BF16Array, bool(d.flags.writeable))


def rebuild(seg: _Segment, meta: tuple, dtype) -> Tensor:
    """The tensor ``tensor_meta`` described, over this process's mapping of ``seg``."""
    shape, npdtype, offset, strides, bf16, writeable = meta
    a = array_at(root_of(seg), BF16Array if bf16 else np.ndarray, shape, np.dtype(npdtype),
                 offset, strides, writeable)
    return make(a, dtype)
