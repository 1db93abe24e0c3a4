"""A tensor's storage, and the methods that change which memory a tensor views.

``Tensor.untyped_storage()`` / ``Tensor.storage()`` describe the memory a tensor views (all of
it, not only the tensor's elements: ``tg.randn(5)[:4].storage()`` has 5 elements), as
PyTorch's ``UntypedStorage`` (bytes) and ``TypedStorage`` (elements of the tensor's dtype).
They are read-only descriptions here: their ``data_ptr()`` tells whether two tensors share
memory, ``len()``/``size()``/``nbytes()`` how much there is, and ``Tensor.set_`` can point a
tensor into one.

``set_`` and ``resize_`` change a tensor's geometry in place (PyTorch's semantics, with one
difference noted at ``resize_``): both are in-place ops to autograd (version bump, the
in-place checks of dispatch.check_inplace).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..kernels import data_ptr
from ..runtime.array import contiguous_strides
from .node import Node
from .state import state
from .tensor import Tensor, make

__all__ = ["NotImplementedBackward", "TypedStorage", "UntypedStorage", "has_same_meta",
           "new_with_same_meta", "resize_", "resize_as_", "set_", "storage", "storage_numel",
           "untyped_storage"]


def _span(a) -> tuple:
    """(address of the first byte, bytes) of the memory backend array ``a`` views."""
    if isinstance(a, np.ndarray):
        # (the NumPy backend's own notion of a storage: the root of the array's base chain)
        from ..kernels.numpy.memory import _storage_nbytes, _storage_root
        root = _storage_root(a)
        return data_ptr(root), _storage_nbytes(root)
    return a.storage.ptr, a.storage.nbytes


def storage_numel(t: Tensor) -> int:
    """How many elements of ``t``'s dtype its storage holds."""
    return _span(t._data)[1] // t._data.itemsize  # (a CPU bfloat16 element is 4 host bytes)


def _whole(t: Tensor) -> Tensor:
    """A 1-D tensor with no history viewing all of ``t``'s storage from its start."""
    k = t._k
    return make(k.as_strided(t._data, (storage_numel(t),), (1,), 0), t._dtype)


class UntypedStorage:
    """The memory a tensor views, in bytes (``Tensor.untyped_storage()``)."""

    def __init__(self, whole: Tensor):
        self._whole = whole  # (the tensor viewing all of it)

    @property
    def device(self):
        return self._whole.device

    def data_ptr(self) -> int:
        """The address of the storage's first byte."""
        return self._whole.data_ptr()

    def nbytes(self) -> int:
        return self._whole.numel() * self._whole.element_size()

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    def share_memory_(self) -> UntypedStorage:
        """Moves the storage to shared memory (``Tensor.share_memory_`` of its tensors)."""
        self._whole.share_memory_()
        return self

    def is_shared(self) -> bool:
        """Checks if the storage is in shared memory."""
        return self._whole.is_shared()

    def untyped(self) -> UntypedStorage:
        return self

    def __repr__(self) -> str:
        return f"UntypedStorage(nbytes={self.nbytes()}, device={self.device})"


class TypedStorage(UntypedStorage):
    """The memory a tensor views, in elements of its dtype (``Tensor.storage()``)."""

    @property
    def dtype(self):
        return self._whole.dtype

    def nbytes(self) -> int:
        return self._whole.numel() * self._whole.element_size()

    def size(self) -> int:
        return self._whole.numel()

    def __len__(self) -> int:
        return self._whole.numel()

    def element_size(self) -> int:
        return self._whole.element_size()

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._whole)

    def tolist(self) -> list:
        return self._whole.tolist()

    def __getitem__(self, i):
        return self._whole[i].item() if isinstance(i, int) else self._whole[i]

    def __repr__(self) -> str:
        return f"TypedStorage(dtype={self.dtype}, size={len(self)}, device={self.device})"


_warned_typed = [False]


def storage(t: Tensor) -> TypedStorage:
    """``t``'s storage in elements of its dtype (PyTorch deprecates TypedStorage, and warns
    once, as here)."""
    if not _warned_typed[0]:
        _warned_typed[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter "
                      "to you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=3)
    return TypedStorage(_whole(t))


def untyped_storage(t: Tensor) -> UntypedStorage:
    """``t``'s storage in bytes."""
    return UntypedStorage(_whole(t))


# -- set_ ---------------------------------------------------------------------------------------

class NotImplementedBackward(Node):
    """The grad_fn of an op whose derivative PyTorch does not implement (``set_`` with a
    source that requires grad), named as PyTorch's (``NotImplemented``): running it raises."""

    def __init__(self, op: str):
        super().__init__()
        self.op = op

    def name(self) -> str:
        return "NotImplemented"

    def apply(self, *grads):
        raise RuntimeError(f"the derivative for '{self.op}' is not implemented.")


def _repoint(t: Tensor, data) -> None:
    """Gives ``t`` the geometry (and memory) of backend array ``data``; a view whose memory
    is no longer its base's stops being a view."""
    t._data = data
    if t._base is not None and _span(data)[0] != _span(t._base._data)[0]:
        t._base = None
        t.__dict__.pop("_creation_meta", None)
    t._vc[0] += 1


def set_(self: Tensor, source=None, storage_offset: int = 0, size=None, stride=None) -> Tensor:
    """Makes this tensor view ``source``'s memory: another tensor's (its geometry too), a
    storage's (``storage_offset``, ``size`` and ``stride`` in elements; by default all of it,
    contiguous), or nothing (empty). Its version counter stays its own; a leaf gets a new
    gradient accumulator (nodes recorded before no longer stand for it)."""
    from .dispatch import check_inplace
    sources = (self,) if not isinstance(source, Tensor) else (self, source)
    record = state.grad_enabled and any(t.requires_grad for t in sources)
    check_inplace(self, record)
    k = self._k
    if source is None:
        data = k.empty((0,), self._dtype, self._device)
    else:
        src = source if isinstance(source, Tensor) else getattr(source, "_whole", None)
        if src is None:
            raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not "
                            f"{type(source).__name__}")
        if src._dtype is not self._dtype:
            if type(source) is UntypedStorage:  # (reinterpreting bytes: not implemented)
                from .checks import unsupported
                raise unsupported("set_", "source", source, f"a storage of {self._dtype} "
                                  f"elements")
            raise RuntimeError(f"Could not set tensor of type {_c_type(src._dtype)} to a "
                               f"tensor of type {_c_type(self._dtype)}")
        if src._device != self._device:
            raise RuntimeError(f"Attempted to set the storage of a tensor on device "
                               f"\"{self._device}\" to a storage on different device "
                               f"\"{src._device}\".  This is no longer allowed; the devices "
                               f"must match.")
        if isinstance(source, Tensor):
            data = source._data
        else:
            size = (src.numel() - storage_offset,) if size is None else tuple(size)
            stride = contiguous_strides(size) if stride is None else tuple(stride)
            data = k.as_strided(src._data, size, stride, storage_offset)
    _repoint(self, data)
    self._grad_acc = None  # (PyTorch's set_ gives a leaf a fresh AccumulateGrad)
    if record:
        node = NotImplementedBackward("set_")
        node.next_functions = tuple([t._edge() for t in sources])
        node._seq = state.seq
        state.seq += 1
        self._grad_fn, self._output_nr, self._requires_grad = node, 0, True
    return self


_C_TYPES = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def _c_type(dtype) -> str:
    """The C++ type name PyTorch's messages print for ``dtype`` ("float", "double")."""
    return _C_TYPES.get(dtype.name, dtype.name)


# -- resize_ ------------------------------------------------------------------------------------

def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """Gives this tensor shape ``sizes``, contiguous from its storage offset. Its elements up
    to the new size keep their memory (and values); the storage grows when too small, keeping
    its contents. The version is bumped only if the shape changes.

    Unlike PyTorch, whose storage grows in place for every tensor sharing it, a grown storage
    is new memory that only this tensor sees (NumPy arrays and device allocations cannot
    grow); a view that grows stops being a view."""
    from .checks import check_memory_format
    from .dispatch import check_inplace
    from .ops.views import _shape_args, int_tuple
    check_memory_format("resize_", memory_format)
    sizes = int_tuple(_shape_args(sizes, "resize_"), "resize_", "size")
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: "
                           f"{list(sizes)}")
    if self.requires_grad and not state.inference:  # (inference mode skips autograd's check)
        raise RuntimeError("cannot resize variables that require grad")
    check_inplace(self, False)
    if sizes == tuple(self._data.shape):
        return self
    k = self._k
    offset = self.storage_offset()
    need = offset + int(np.prod(sizes, dtype=np.int64))
    have = storage_numel(self)
    whole = _whole(self)._data
    if need > have:
        grown = k.empty((need,), self._dtype, self._device)
        if have:
            k.copy_(k.getitem(grown, (slice(0, have, 1),)), whole)
        whole = grown
    _repoint(self, k.as_strided(whole, sizes, contiguous_strides(sizes), offset))
    return self


def resize_as_(self: Tensor, other: Tensor, memory_format=None) -> Tensor:
    """``self.resize_(other.shape)``."""
    return resize_(self, tuple(other.shape), memory_format=memory_format)


# -- layouts (forward AD's tangents) ---------------------------------------------------------------

def has_same_meta(a: Tensor, b: Tensor) -> bool:
    """Whether ``b`` has ``a``'s layout: sizes, strides (where a dim has more than one
    element), storage offset and storage size (PyTorch's has_same_meta, which make_dual asks
    before using a tangent as it is)."""
    if a.shape != b.shape or storage_numel(a) != storage_numel(b):
        return False
    if a.numel() == 0:  # nothing is indexed: offsets and strides do not matter (as PyTorch)
        return True
    if a.storage_offset() != b.storage_offset():
        return False
    return not any(n > 1 and s != t for n, s, t in zip(a.shape, a.stride(), b.stride()))


def new_with_same_meta(like: Tensor, values: Tensor) -> Tensor:
    """A copy of ``values`` laid out as ``like`` is: in a storage of ``like``'s size, at its
    offset and strides (so ``as_strided`` reads it where it reads ``like``)."""
    from .ops.creation import empty
    buf = empty((storage_numel(like),), dtype=values.dtype, device=values.device)
    out = buf.as_strided(tuple(like.shape), like.stride(), like.storage_offset())
    return out.copy_(values)
