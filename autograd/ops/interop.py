"""Zero-copy exchange with other array libraries: DLPack (``__dlpack__``, ``__dlpack_device__``,
``from_dlpack``) and ``__cuda_array_interface__``.

CPU tensors go through NumPy's DLPack support (the tensor's NumPy array is the producer or the
consumer; memory is shared, never copied). CUDA tensors go through runtime/dlpack.py (the
DLPack structs, capsules and stream rules): ``__dlpack__`` hands out a ``"dltensor"`` capsule
(``"dltensor_versioned"`` when the consumer asks for ``max_version >= (1, 0)``) that keeps the
tensor's storage alive until the consumer's deleter call, after making the consumer's stream
wait for our current stream; ``from_dlpack`` of CUDA memory passes our current stream to the
producer and returns a tensor over a ``ForeignStorage`` that calls the producer's deleter when
its last view dies.
CUDA tensors also publish ``__cuda_array_interface__`` (version 3, with the current stream).
"""

from __future__ import annotations

import numpy as np

from ..registry import OpInfo
from ...runtime import dlpack as _dl
from ...runtime import dtype as dtypes
from ..tensor import Tensor, make
from .creation import resolve_device


_KDL_CPU, _KDL_CUDA = _dl.KDL_CPU, _dl.KDL_CUDA

_TYPESTR = {dtypes.bool: "|b1", dtypes.uint8: "|u1", dtypes.int8: "|i1", dtypes.int16: "<i2",
            dtypes.int32: "<i4", dtypes.int64: "<i8", dtypes.float16: "<f2",
            dtypes.float32: "<f4", dtypes.float64: "<f8", dtypes.complex64: "<c8",
            dtypes.complex128: "<c16"}



class _ExportError(BufferError, RuntimeError):
    """What ``__dlpack__`` raises for a tensor that cannot be exported as it is."""

def dlpack_device(self: Tensor) -> tuple:
    """``(device type, index)`` as DLPack numbers them: (1, 0) for the CPU, (2, i) for
    cuda:i."""
    dev = self._device
    return (_KDL_CPU, 0) if dev.type == "cpu" else (_KDL_CUDA, dev.index)


def dlpack(self: Tensor, stream=None, *, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule sharing this tensor's memory (``tg.from_dlpack``, ``np.from_dlpack``,
    ``torch.from_dlpack`` and other libraries consume it).

    Args:
        stream: the consumer's stream (CUDA only), in the array API's numbering: None or 1
            the legacy default stream, 2 the per-thread default stream, -1 no
            synchronisation, otherwise a CUstream handle. When it is not our current stream,
            it is made to wait (an event, no host block) for the work queued on ours.
        max_version: the highest DLPack version the consumer understands, ``(major, minor)``;
            ``>= (1, 0)`` gets a ``"dltensor_versioned"`` capsule, otherwise (or None) a legacy
            ``"dltensor"`` one.
        dl_device: the ``(device type, index)`` the consumer wants; only this tensor's own.
        copy: True exports a copy (flagged ``IS_COPIED``), False or None shares the memory.

    Raises:
        BufferError: the tensor requires grad (export ``tensor.detach()``; PyTorch's type, and
            a RuntimeError too, as tritongrad raised before).
        BufferError: ``dl_device`` is another device, or the dtype has no DLPack type.
        TypeError: ``stream`` is not an int or None.
    """
    if self._requires_grad:
        raise _ExportError("Can't export tensors that require gradient, use tensor.detach()")
    if self._device.type == "cpu":
        kwargs = {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        return self._data.__dlpack__(stream=stream, **kwargs)
    if stream is not None and (type(stream) is not int):
        raise TypeError(f"__dlpack__: stream must be an int or None, got "
                        f"{type(stream).__name__}")
    own = dlpack_device(self)
    if dl_device is not None and tuple(int(x) for x in dl_device) != own:
        raise BufferError(f"__dlpack__: a tensor on {self._device} can only be exported to "
                          f"DLPack device {own}, not {tuple(dl_device)}; copy it there first "
                          f"(.cpu(), .to(...))")
    versioned = max_version is not None and int(max_version[0]) >= 1
    data, flags = self._data, 0
    if copy:
        data, flags = self.clone()._data, _dl.FLAG_IS_COPIED
    # after the copy, so that the consumer's stream also waits for it
    _dl.sync_consumer_stream(self._device.index, stream)
    return _dl.to_capsule(data, versioned=versioned, flags=flags)


class _Capsule:
    """Lets NumPy consume a bare capsule of CPU memory (legacy producers hand those out)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (_KDL_CPU, 0)


def _unsupported_device(dev_type: int) -> BufferError:
    return BufferError(f"from_dlpack: DLPack device type {dev_type} "
                       f"({_dl.device_type_name(dev_type)}) is not supported; tritongrad "
                       f"imports CPU (1) and CUDA (2) memory")


def _import_cuda(producer, dev_id: int) -> Tensor:
    """Asks ``producer`` for a capsule ordered on our current stream, and takes it."""
    from ...runtime import streams
    _dl.check_device(dev_id)  # before the producer exports anything
    handle = streams.current_stream_handle(dev_id)
    stream = handle if handle else 1  # 1: the legacy default stream (0 is ambiguous in DLPack)
    try:
        capsule = producer.__dlpack__(stream=stream, max_version=_dl.VERSION)
    except TypeError:  # a producer older than DLPack 1.0 has no max_version
        capsule = producer.__dlpack__(stream=stream)
    return make(_dl.from_capsule(capsule))


def from_dlpack(ext_tensor, *, device=None, copy: bool | None = None) -> Tensor:
    """A tensor sharing memory with ``ext_tensor``: any object with ``__dlpack__`` and
    ``__dlpack_device__`` (a NumPy array, a CUDA tensor of another library), or a DLPack
    capsule (its ``DLDevice`` says whether it holds CPU or CUDA memory).

    ``device`` asks for the result on that device (a copy when it is not where the memory
    is); ``copy=True`` always copies, ``copy=False`` never does (a different ``device`` is then
    an error), and None copies only when ``device`` needs it.

    CUDA memory is imported without a copy: the producer orders it on our current stream
    (we pass that stream to its ``__dlpack__``), and its deleter runs when the last tensor
    viewing the memory dies. A tritongrad tensor is returned as is. The result is writable
    even when the producer flagged the memory read-only: tensors have no read-only mode (the
    CPU path makes NumPy's read-only imports writable too).

    Raises:
        TypeError: ``ext_tensor`` has no ``__dlpack__`` and is not a capsule.
        ValueError: ``copy=False`` with a ``device`` other than the memory's.
        BufferError: unsupported device type, dtype (vector lanes, unknown codes), DLPack
            version or negative strides; a capsule consumed already.

    Example:
        >>> a = np.arange(3.0)
        >>> t = tg.from_dlpack(a)
        >>> t[0] = 7.0
        >>> a[0]
        np.float64(7.0)
    """
    t = _import(ext_tensor)
    if device is not None:
        dev = resolve_device(device)
        if dev is not t.device:
            if copy is False:
                raise ValueError(f"from_dlpack: the memory is on {t.device}, so device={dev} "
                                 f"needs a copy, but copy=False")
            return t.to(dev)
    return t.clone() if copy else t


def _import(ext_tensor) -> Tensor:
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if hasattr(ext_tensor, "__dlpack_device__"):
        dev_type, dev_id = (int(x) for x in ext_tensor.__dlpack_device__())
        if dev_type == _KDL_CUDA:
            return _import_cuda(ext_tensor, dev_id)
        if dev_type != _KDL_CPU:
            raise _unsupported_device(dev_type)
        arr = np.from_dlpack(ext_tensor)
    elif _dl.is_capsule(ext_tensor):
        dev_type, _ = _dl.capsule_device(ext_tensor)
        if dev_type == _KDL_CUDA:
            return make(_dl.from_capsule(ext_tensor))
        if dev_type != _KDL_CPU:
            raise _unsupported_device(dev_type)
        arr = np.from_dlpack(_Capsule(ext_tensor))
    else:
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, "
                        f"got {type(ext_tensor).__name__}")
    if not arr.flags.writeable:
        # NumPy marks legacy capsules read-only (they carry no read-only flag); tensors are
        # writable, as PyTorch's from_dlpack results are
        arr = np.asarray(_Writable(arr))
    return make(arr)


class _Writable:
    """A writable view of a read-only array's memory that keeps that array alive."""

    def __init__(self, a: np.ndarray):
        self.owner = a
        iface = dict(a.__array_interface__)
        iface["data"] = (iface["data"][0], False)
        self.__array_interface__ = iface


def cuda_array_interface(self: Tensor) -> dict:
    """The CUDA Array Interface (version 3) of a CUDA tensor: pointer, shape, byte strides,
    type and the current stream (consumers synchronise with it before reading)."""
    if self._device.type != "cuda":
        raise AttributeError(f"Can't get __cuda_array_interface__ on non-CUDA tensor type: "
                             f"{self._device}")
    if self._requires_grad:
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad. "
                           "If gradients aren't required, use var.detach() to get Variable "
                           "that doesn't require grad.")
    try:
        typestr = _TYPESTR[self._dtype]
    except KeyError:
        raise TypeError(f"__cuda_array_interface__: dtype {self._dtype} has no typestr (the "
                        f"interface has no bfloat16)") from None
    item = self._dtype.itemsize
    shape = tuple(self.shape)
    strides = None if self.is_contiguous() else tuple(s * item for s in self.stride())
    from ...runtime import streams
    handle = streams.current_stream_handle(self._device.index)
    ptr = self.data_ptr() if self.numel() else 0
    return {"typestr": typestr, "shape": shape, "strides": strides, "data": (ptr, False),
            "version": 3, "stream": int(handle) if handle else 1}


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("from_dlpack", from_dlpack, method=False, grad="none"),
    OpInfo("dlpack", dlpack, function=False, method=False, operators=("__dlpack__",),
           grad="none"),
    OpInfo("dlpack_device", dlpack_device, function=False, method=False,
           operators=("__dlpack_device__",), grad="none"),
)
