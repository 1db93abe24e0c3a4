"""Zero-copy exchange with other array libraries: DLPack (``__dlpack__``, ``__dlpack_device__``,
``from_dlpack``) and ``__cuda_array_interface__``.

CPU tensors go through NumPy's DLPack support (the tensor's NumPy array is the producer or the
consumer; memory is shared, never copied). CUDA tensors publish ``__cuda_array_interface__``
(version 3, with the current stream, so a consumer orders its work after ours) and
``__dlpack_device__``; CUDA DLPack capsules (export and import) need a storage that can own
foreign device memory, which runtime/ does not offer yet: they raise NotImplementedError.
"""

from __future__ import annotations

import numpy as np

from ...runtime import dtype as dtypes
from ..tensor import Tensor, make

__all__ = ["dlpack", "dlpack_device", "from_dlpack", "cuda_array_interface"]

_KDL_CPU, _KDL_CUDA = 1, 2

_TYPESTR = {dtypes.bool: "|b1", dtypes.uint8: "|u1", dtypes.int8: "|i1", dtypes.int16: "<i2",
            dtypes.int32: "<i4", dtypes.int64: "<i8", dtypes.float16: "<f2",
            dtypes.float32: "<f4", dtypes.float64: "<f8", dtypes.complex64: "<c8",
            dtypes.complex128: "<c16"}


def dlpack_device(self: Tensor) -> tuple:
    """``(device type, index)`` as DLPack numbers them: (1, 0) for the CPU, (2, i) for
    cuda:i."""
    dev = self._device
    return (_KDL_CPU, 0) if dev.type == "cpu" else (_KDL_CUDA, dev.index)


def dlpack(self: Tensor, stream=None, *, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule sharing this tensor's memory (``tg.from_dlpack``, ``np.from_dlpack``
    and other libraries consume it)."""
    if self._requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    if self._device.type != "cpu":
        raise NotImplementedError(
            "__dlpack__ of CUDA tensors is not implemented yet (the runtime has no storage for "
            "foreign-owned memory); use __cuda_array_interface__, or .cpu() first")
    kwargs = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    return self._data.__dlpack__(stream=stream, **kwargs)


class _Capsule:
    """Lets NumPy consume a bare capsule (legacy producers hand those out)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (_KDL_CPU, 0)


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing memory with ``ext_tensor``: any object with ``__dlpack__`` and
    ``__dlpack_device__`` (a NumPy array, another library's tensor), or a legacy DLPack
    capsule (assumed to describe CPU memory).

    Example:
        >>> a = np.arange(3.0)
        >>> t = tg.from_dlpack(a)
        >>> t[0] = 7.0
        >>> a[0]
        np.float64(7.0)
    """
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if hasattr(ext_tensor, "__dlpack_device__"):
        dev_type, _ = ext_tensor.__dlpack_device__()
        if int(dev_type) != _KDL_CPU:
            raise NotImplementedError(
                f"from_dlpack: importing memory of DLPack device type {int(dev_type)} (CUDA is "
                f"2) is not implemented yet; only CPU memory can be shared")
        arr = np.from_dlpack(ext_tensor)
    elif type(ext_tensor).__name__ == "PyCapsule":
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
