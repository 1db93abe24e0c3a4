"""The DLPack C structs and capsules: zero-copy exchange of CUDA memory with other libraries.

DLPack (the protocol behind ``__dlpack__`` / ``from_dlpack`` in the Python array API) hands a
tensor over as a ``PyCapsule`` holding a pointer to a C struct: ``DLManagedTensor`` in a capsule
named ``"dltensor"`` (the legacy ABI), or ``DLManagedTensorVersioned`` in one named
``"dltensor_versioned"`` (DLPack 1.0, with a version and flags). The struct describes the memory
(``DLTensor``: data pointer, device, dtype, shape and strides in elements, byte offset) and
carries a ``deleter`` that the consumer calls, once, when it no longer needs the memory. The
structs are declared here with ctypes; imports read them, exports fill them in.

Ownership rules (the protocol's):

- The consumer that takes the struct renames the capsule to ``"used_dltensor"`` /
  ``"used_dltensor_versioned"`` and from then on owns it: it calls the deleter when its last
  array over the memory dies.
- A capsule that dies unconsumed (still under its original name) runs the deleter from its
  own destructor.

Export (``to_capsule``): NumPy writes the capsule and its struct (see Note [NumPy writes the
capsule]), which keep the DeviceArray, and so the Storage (the allocator block), alive until
the deleter runs; the struct's description of the memory is then set here. Import
(``from_capsule``): a ``ForeignStorage`` (runtime/memory.py) owns the memory and calls the
producer's deleter when the last view dies.

Streams (``sync_consumer_stream``): the consumer passes its stream to ``__dlpack__``; when it
differs from the producer's current stream, the producer records an event on its stream and
makes the consumer's stream wait on it, so that the consumer's work comes after ours.
"""

from __future__ import annotations

import ctypes
import functools
import math

import numpy as np

from . import driver as _drv
from . import dtype as dtypes
from . import streams as _streams
from .array import DeviceArray, contiguous_strides
from .device import device as Device
from .memory import ForeignStorage

__all__ = [
    "FLAG_IS_COPIED",
    "FLAG_READ_ONLY",
    "KDL_CPU",
    "KDL_CUDA",
    "DLDataType",
    "DLDevice",
    "DLManagedTensor",
    "DLManagedTensorVersioned",
    "DLPackVersion",
    "DLTensor",
    "capsule_device",
    "capsule_name",
    "check_device",
    "device_type_name",
    "from_capsule",
    "is_capsule",
    "sync_consumer_stream",
    "to_capsule",
]

KDL_CPU, KDL_CUDA = 1, 2  # DLDeviceType values used here
_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal",
                 9: "VPI", 10: "ROCm", 11: "ROCm host", 12: "ExtDev", 13: "CUDA managed",
                 14: "oneAPI", 15: "WebGPU", 16: "Hexagon", 17: "MAIA"}
FLAG_READ_ONLY = 1 << 0  # DLPACK_FLAG_BITMASK_READ_ONLY
FLAG_IS_COPIED = 1 << 1  # DLPACK_FLAG_BITMASK_IS_COPIED
VERSION = (1, 0)  # the DLPack ABI version this module writes and reads

# DLDataTypeCode values
_KDL_INT, _KDL_UINT, _KDL_FLOAT, _KDL_BFLOAT, _KDL_COMPLEX, _KDL_BOOL = 0, 1, 2, 4, 5, 6
_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque handle", 4: "bfloat", 5: "complex",
               6: "bool"}
_TO_DL = {  # dtype -> (type code, bits)
    dtypes.bool: (_KDL_BOOL, 8), dtypes.uint8: (_KDL_UINT, 8),
    dtypes.int8: (_KDL_INT, 8), dtypes.int16: (_KDL_INT, 16), dtypes.int32: (_KDL_INT, 32),
    dtypes.int64: (_KDL_INT, 64), dtypes.float16: (_KDL_FLOAT, 16),
    dtypes.bfloat16: (_KDL_BFLOAT, 16), dtypes.float32: (_KDL_FLOAT, 32),
    dtypes.float64: (_KDL_FLOAT, 64), dtypes.complex64: (_KDL_COMPLEX, 64),
    dtypes.complex128: (_KDL_COMPLEX, 128),
}
_FROM_DL = {v: k for k, v in _TO_DL.items()}


# ------------------------------------------------------------------------------------------
# The C structs (dlpack.h, version 1.0)
# ------------------------------------------------------------------------------------------
class DLDevice(ctypes.Structure):
    """``DLDevice``: the device type (``kDLCUDA`` = 2, ``kDLCPU`` = 1) and its ordinal."""

    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    """``DLDataType``: type code (int, uint, float, bfloat, complex, bool), bits, lanes."""

    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    """``DLTensor``: the memory's description; shape and strides count elements."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),  # NULL: compact row-major
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    """``DLManagedTensor`` (legacy capsule ``"dltensor"``); ``deleter`` is a function pointer
    ``void (*)(DLManagedTensor *)``, kept here as an address."""

    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    """``DLPackVersion``: the ABI version of a versioned struct."""

    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    """``DLManagedTensorVersioned`` (capsule ``"dltensor_versioned"``, DLPack >= 1.0)."""

    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


# ------------------------------------------------------------------------------------------
# The capsule C API, bound privately (setting argtypes on ctypes.pythonapi's shared function
# objects would change them for every other user in the process)
# ------------------------------------------------------------------------------------------
_api = ctypes.pythonapi
_capsule_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", _api))
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_SetName", _api))
_raw_malloc = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t)(("PyMem_RawMalloc", _api))


def _static_name(name: bytes) -> int:
    """A C string that lives as long as the process: a capsule keeps the pointer to its name,
    and a producer's capsule may outlive this module at interpreter exit (C consumers use
    static strings)."""
    ptr = _raw_malloc(len(name) + 1)
    if not ptr:
        raise MemoryError("dlpack: cannot allocate a capsule name")
    ctypes.memmove(ptr, name + b"\0", len(name) + 1)
    return ptr


_LEGACY, _VERSIONED = b"dltensor", b"dltensor_versioned"
_USED = {_LEGACY: _static_name(b"used_dltensor"),  # what a consumer renames a capsule to
         _VERSIONED: _static_name(b"used_dltensor_versioned")}

# Calls a deleter with the GIL held (as PyTorch does): a deleter written in Python needs it.
_call_c_deleter = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)


# ------------------------------------------------------------------------------------------
# Export
# ------------------------------------------------------------------------------------------
class _DeviceMemory:
    """The device memory of a DeviceArray as NumPy sees it: an array interface over device
    addresses, which NumPy never reads (the array made from it is never handed out). It lives
    as long as NumPy's DLPack struct, and so keeps the DeviceArray (the Storage) and the
    struct's shape and strides arrays alive."""

    __slots__ = ("__array_interface__", "array", "shape", "strides")

    def __init__(self, array: DeviceArray):
        self.array = array
        item = array.itemsize
        # our own shape and strides for the struct: NumPy < 2 leaves strides NULL when compact
        n = max(array.ndim, 1)
        self.shape = (ctypes.c_int64 * n)(*array.shape)
        self.strides = (ctypes.c_int64 * n)(*array.strides)
        self.__array_interface__ = {
            "version": 3,
            "data": (array.data_ptr(), False),  # writable: NumPy flags read-only ones
            "shape": array.shape,
            "strides": tuple(s * item for s in array.strides),
            "typestr": array.dtype.np.str,  # bfloat16: its uint16 bits; the struct says bfloat
        }


def to_capsule(array: DeviceArray, *, versioned: bool, flags: int = 0) -> object:
    """A DLPack capsule viewing ``array``'s memory, keeping its Storage alive until the
    consumer calls the deleter (or the capsule dies unconsumed).

    Note [NumPy writes the capsule]: the capsule, its struct and their deleter come from
    NumPy's ``__dlpack__`` of a never-read host array over the device addresses
    (``_DeviceMemory``); before handing it out we overwrite the struct's description of the
    memory (device, dtype, data and byte offset, flags). NumPy's deleter releases what it
    allocated and its reference to the array (which holds the DeviceArray); it never reads
    the description. We borrow it because a deleter or capsule destructor written in Python
    (a ctypes callback) breaks when it runs while an exception propagates, which is when a
    consumer refuses a capsule (``np.from_dlpack`` of CUDA memory) or when a temporary
    tensor over our memory dies in a call that raised (``torch.from_dlpack(t).view(7, 7)``):
    ctypes cannot keep the pending exception, the interpreter loses it and may crash.
    NumPy's are C functions that only release references, which is safe at any time.

    ``data`` is the storage's start and ``byte_offset`` the view's offset into it, as the
    DLPack header asks (the start of an allocator block is at least 256-byte aligned).

    Args:
        array: a CUDA DeviceArray.
        versioned: a ``"dltensor_versioned"`` capsule (DLPack 1.0) rather than ``"dltensor"``;
            NumPy older than 2.1 writes only the latter, which consumers accept (the array
            API lets a producer answer ``max_version`` with a legacy capsule).
        flags: the versioned struct's flags (``FLAG_IS_COPIED``, ``FLAG_READ_ONLY``).

    Raises:
        BufferError: the dtype has no DLPack type.
    """
    try:
        code, bits = _TO_DL[array.dtype]
    except KeyError:
        raise BufferError(f"__dlpack__: dtype {array.dtype} has no DLPack type") from None
    memory = _DeviceMemory(array)
    host_view = np.asarray(memory)
    capsule = None
    if versioned:
        try:
            capsule = host_view.__dlpack__(max_version=VERSION)
        except TypeError:  # NumPy < 2.1: no max_version
            capsule = None
    if capsule is None:
        capsule = host_view.__dlpack__()
    name = _capsule_get_name(capsule)
    addr = _capsule_get_pointer(capsule, name)
    if name == _VERSIONED:
        m = DLManagedTensorVersioned.from_address(addr)
        m.version = DLPackVersion(*VERSION)
        m.flags = flags
    else:
        m = DLManagedTensor.from_address(addr)
    t = m.dl_tensor  # NumPy wrote ndim (and its own shape and strides) from the interface
    t.shape = ctypes.cast(memory.shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(memory.strides, ctypes.POINTER(ctypes.c_int64))
    t.data = array.storage.ptr or None
    t.byte_offset = array.offset * array.itemsize
    t.device = DLDevice(KDL_CUDA, array.storage.device.index)
    t.dtype = DLDataType(code, bits, 1)
    return capsule


def sync_consumer_stream(index: int, stream: int | None) -> None:
    """Makes the consumer's stream wait for the work queued so far on our current stream.

    Args:
        index: the CUDA device ordinal of the exported memory.
        stream: what the consumer passed to ``__dlpack__`` (the array API's numbering):
            None or 1 the legacy default stream (0 too, as PyTorch takes it), 2 the per-thread
            default stream, -1 no synchronisation, anything else a CUstream handle.

    Records an event on our stream and ``cuStreamWaitEvent``s the consumer's on it; nothing
    when both are the same stream. The host does not block.
    """
    if stream == -1:
        return
    consumer = 0 if stream is None or stream in (0, 1) else int(stream)
    drv = _drv.get_driver()
    if consumer == 2 and drv.emulated:
        consumer = 0  # the emulated device has no per-thread stream; its streams are serial
    ours = _streams.current_stream(index)
    if ours.cuda_stream == consumer:
        return
    event = ours.record_event()
    drv.stream_wait_event(index, consumer, event.cuda_event)
    # The Event object may die now: cuEventDestroy of an event a stream waits on defers the
    # release until the wait is satisfied.


# ------------------------------------------------------------------------------------------
# Import
# ------------------------------------------------------------------------------------------
def is_capsule(obj) -> bool:
    """True for a PyCapsule (what legacy producers hand out instead of an object)."""
    return type(obj).__name__ == "PyCapsule"


def capsule_name(capsule) -> str | None:
    """The capsule's name (``"dltensor"``, ``"used_dltensor"``, ...), None if it has none."""
    name = _capsule_get_name(capsule)
    return None if name is None else name.decode(errors="replace")


def _managed(capsule) -> tuple[bytes, ctypes.Structure]:
    """(name, struct) of an unconsumed DLPack capsule, without consuming it."""
    if not is_capsule(capsule):
        raise TypeError(f"from_dlpack: expected a DLPack capsule, got {type(capsule).__name__}")
    name = _capsule_get_name(capsule)
    if name not in _USED:
        if name in (b"used_dltensor", b"used_dltensor_versioned"):
            raise BufferError("from_dlpack: the DLPack capsule was already consumed (a capsule "
                              "can be imported once; call __dlpack__ again for a new one)")
        raise BufferError(f"from_dlpack: not a DLPack capsule (its name is {name!r}, expected "
                          f"'dltensor' or 'dltensor_versioned')")
    addr = _capsule_get_pointer(capsule, name)
    if name == _VERSIONED:
        m = DLManagedTensorVersioned.from_address(addr)
        if m.version.major != VERSION[0]:
            raise BufferError(f"from_dlpack: DLPack ABI version {m.version.major}."
                              f"{m.version.minor} is not supported (tritongrad reads "
                              f"{VERSION[0]}.x)")
    else:
        m = DLManagedTensor.from_address(addr)
    return name, m


def capsule_device(capsule) -> tuple[int, int]:
    """``(device type, device id)`` from an unconsumed capsule's ``DLDevice``."""
    _, m = _managed(capsule)
    d = m.dl_tensor.device
    return int(d.device_type), int(d.device_id)


def device_type_name(device_type: int) -> str:
    """``"ROCm"`` for 10 and so on: DLPack's device type names, for error messages."""
    return _DEVICE_NAMES.get(int(device_type), "unknown")


def check_device(dev_id: int) -> None:
    """Raises BufferError unless ``cuda:dev_id`` is a visible CUDA device."""
    n = _drv.get_driver().device_count()
    if not 0 <= dev_id < n:
        raise BufferError(f"from_dlpack: the memory is on cuda:{dev_id}, but {n} CUDA "
                          f"device{'s are' if n != 1 else ' is'} visible")


def _dtype(dt: DLDataType) -> dtypes.dtype:
    code, bits, lanes = int(dt.code), int(dt.bits), int(dt.lanes)
    if lanes != 1:
        raise BufferError(f"from_dlpack: vector types are not supported (dtype with "
                          f"lanes={lanes}; tritongrad tensors have one value per element)")
    try:
        return _FROM_DL[(code, bits)]
    except KeyError:
        supported = ", ".join(str(d).removeprefix("tritongrad.") for d in _TO_DL)
        raise BufferError(f"from_dlpack: DLPack dtype {_CODE_NAMES.get(code, 'unknown')} "
                          f"(code {code}) with {bits} bits has no tritongrad dtype; supported: "
                          f"{supported}") from None


def _release(deleter: int, managed: int) -> None:
    _call_c_deleter(deleter)(managed)


def from_capsule(capsule) -> DeviceArray:
    """Takes ownership of a DLPack capsule describing CUDA memory: a DeviceArray viewing it.

    The capsule is renamed ``"used_..."`` only after everything in it was found usable, so a
    capsule that is refused stays with its producer (its destructor frees it). The array's
    ``ForeignStorage`` calls the struct's deleter once, when the last view of it dies.

    Raises:
        TypeError: ``capsule`` is not a capsule.
        BufferError: the capsule was consumed already, is not DLPack, has an unsupported ABI
            version, device, dtype or negative strides.
    """
    name, m = _managed(capsule)
    t = m.dl_tensor
    dev_type, dev_id = int(t.device.device_type), int(t.device.device_id)
    if dev_type != KDL_CUDA:
        raise BufferError(f"from_dlpack: DLPack device type {dev_type} "
                          f"({device_type_name(dev_type)}) is not CUDA memory")
    check_device(dev_id)
    dtype = _dtype(t.dtype)
    ndim = int(t.ndim)
    shape = tuple(int(t.shape[i]) for i in range(ndim))
    if t.strides:
        strides = tuple(int(t.strides[i]) for i in range(ndim))
    else:
        strides = contiguous_strides(shape)
    if any(s < 0 for s in strides):
        raise BufferError(f"from_dlpack: negative strides {strides} are not supported")
    item = dtype.itemsize
    numel = math.prod(shape)
    span = 1 + sum((k - 1) * s for k, s in zip(shape, strides)) if numel else 0
    ptr = (t.data or 0) + int(t.byte_offset)
    addr, deleter = ctypes.addressof(m), m.deleter
    if _capsule_set_name(capsule, _USED[name]) != 0:
        raise BufferError("from_dlpack: cannot mark the DLPack capsule as consumed")
    release = functools.partial(_release, deleter, addr) if deleter else None
    storage = ForeignStorage(ptr, span * item, Device("cuda", dev_id), release,
                             _streams.current_stream_handle(dev_id))
    return DeviceArray(storage, 0, shape, strides, dtype)
