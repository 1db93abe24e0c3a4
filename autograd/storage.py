"""A tensor's storage, and the methods that change which memory a tensor views.

``Tensor.untyped_storage()`` / ``Tensor.storage()`` describe the memory a tensor views (all of
it, not only the tensor's elements: ``tg.randn(5)[:4].storage()`` has 5 elements), as
PyTorch's ``UntypedStorage`` (bytes) and ``TypedStorage`` (elements of the tensor's dtype).
Their ``data_ptr()`` tells whether two tensors share memory (storages of the same memory
compare equal), ``len()``/``size()``/``nbytes()`` how much there is; their items (bytes, or
elements) are read and written in place (``s[i]``, ``fill_``, ``copy_``, ``tolist``) and
``Tensor.set_`` can point a tensor into one. They cannot change size under their tensors
(``UntypedStorage.resize_``, which FSDP uses to free memory, is accepted only as a no-op).

``set_`` and ``resize_`` change a tensor's geometry in place (PyTorch's semantics, with one
difference noted at ``resize_``): both are in-place ops to autograd (version bump, the
in-place checks of dispatch.check_inplace).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..kernels import data_ptr
from ..runtime import dtype as _dt
from ..runtime.array import contiguous_strides
from .checks import tensor_arg
from .node import Node
from .state import state
from .tensor import Tensor, make

__all__ = ["LEGACY_STORAGES", "NotImplementedBackward", "TypedStorage", "UntypedStorage",
           "has_same_meta", "is_set_to", "module_load", "new_with_same_meta", "resize_",
           "resize_as_", "resize_for_output", "set_", "storage", "storage_numel",
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
    """The memory a tensor views, in bytes (``Tensor.untyped_storage()``), or new memory:
    ``UntypedStorage(nbytes, device=None)`` (uninitialized), ``UntypedStorage(sequence,
    device=None)`` (those bytes) or ``UntypedStorage()`` (empty).

    Its bytes can be read and written as PyTorch's: ``s[i]`` (an int in [0, 256)), ``s[i] =
    v``, ``fill_``, ``copy_`` from another storage, ``tolist``; writes change every tensor
    viewing the memory and, as in PyTorch, bump no version counter. Two storage objects of the
    same memory compare equal (PyTorch hands out one object per storage)."""

    def __init__(self, *args, device=None):
        from .ops.creation import empty, tensor
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            for v in args[0]:
                if not isinstance(v, (int, np.integer)):
                    raise RuntimeError(f"{type(self).__name__}(): tried to construct a storage "
                                       f"from a sequence ({type(args[0]).__name__}), but one of "
                                       f"the items was of type {type(v).__name__} instead of "
                                       f"int")
            self._whole = tensor([int(v) % 256 for v in args[0]], dtype=_dt.uint8,
                                 device=device).reshape(-1)
            return
        n = _size_arg(type(self).__name__, args)
        self._whole = empty((n,), dtype=_dt.uint8, device=device)

    @classmethod
    def _wrap(cls, whole: Tensor):
        """The storage viewed by ``whole`` (a 1-D tensor over all of it), not a copy."""
        s = object.__new__(cls)
        s._whole = whole
        return s

    @property
    def device(self):
        return self._whole.device

    @property
    def is_cuda(self) -> bool:
        return self._whole.device.type == "cuda"

    def get_device(self) -> int | None:
        """The device index (None on the CPU, as PyTorch's storages answer)."""
        return self._whole.device.index

    def data_ptr(self) -> int:
        """The address of the storage's first byte (0 for an empty storage, as PyTorch's)."""
        return self._whole.data_ptr() if self._whole.numel() else 0

    def nbytes(self) -> int:
        return self._whole.numel() * self._whole.element_size()

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    def __eq__(self, other) -> bool:
        if not isinstance(other, UntypedStorage):
            return NotImplemented
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        # (the memory's own address: empty storages are not all one storage)
        return self._whole.device, data_ptr(self._whole._data), self.nbytes()

    def share_memory_(self) -> UntypedStorage:
        """Moves the storage to shared memory (``Tensor.share_memory_`` of its tensors)."""
        self._whole.share_memory_()
        return self

    def is_shared(self) -> bool:
        """Checks if the storage is in shared memory."""
        return self._whole.is_shared()

    def is_pinned(self, device=None) -> bool:
        """Whether the storage is in pinned host memory."""
        return self._whole.is_pinned()

    def pin_memory(self, device=None) -> UntypedStorage:
        """A copy of the storage in pinned host memory (itself if already pinned)."""
        return type(self)._wrap(self._whole.pin_memory())

    def resizable(self) -> bool:
        return True

    def untyped(self) -> UntypedStorage:
        return self

    def clone(self) -> UntypedStorage:
        """A copy of the storage in new memory."""
        return type(self)._wrap(self._whole.clone())

    def cpu(self) -> UntypedStorage:
        """The storage itself if it is on the CPU, else a CPU copy."""
        return self if self._whole.device.type == "cpu" else type(self)._wrap(self._whole.cpu())

    # -- bytes -----------------------------------------------------------------------------
    # Element access goes through ``_items()``: the storage as a 1-D tensor of its items
    # (bytes here, elements for TypedStorage) viewing its memory. A CPU bfloat16 storage has
    # no byte view (its host elements are float32), so its bytes are converted both ways.

    def _items(self) -> Tensor | None:
        """A uint8 tensor viewing the storage's bytes; None where the host memory of its
        elements is not their bytes (CPU bfloat16)."""
        w = self._whole
        if w._dtype is _dt.uint8:
            return w
        if w._data.itemsize != w.element_size():
            return None
        return w.view(_dt.uint8)

    def _host_bytes(self) -> np.ndarray:
        """A host copy of the storage's bytes, laid out as PyTorch's (little-endian)."""
        items = self._items()
        if items is not None:
            return np.asarray(items.cpu()._data).reshape(-1)
        bits = _dt.bfloat16_bits(np.asarray(self._whole.cpu()._data, dtype=np.float32))
        return bits.astype("<u2").view(np.uint8)

    def _write_bytes(self, edit) -> None:
        """Writes ``edit(bytes)`` (a function of a host copy of the bytes, editing it in
        place) back: the path of a storage with no byte view."""
        from .ops.creation import tensor
        raw = self._host_bytes().copy()
        edit(raw)
        values = _dt.bfloat16_values(raw.view("<u2"))
        self._whole.copy_(tensor(values, dtype=_dt.float32))

    def _index(self, i, op: str) -> int:
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            raise TypeError(f"can't index a {type(self).__name__} with {type(i).__name__}")
        n = len(self)
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            if op == "get":
                raise IndexError(f"index {j} out of range for storage of size {n}")
            raise RuntimeError(f"index {int(i)} out of bounds for storage of size {n}")
        return j

    def _item(self, value):
        """``value`` as an item of this storage: a byte (PyTorch keeps its low 8 bits)."""
        if not isinstance(value, (int, np.integer)):
            raise RuntimeError(f"can only set storage content with a int types, but got "
                               f"{type(value).__name__} instead")
        return int(value) % 256

    def __getitem__(self, i):
        if isinstance(i, slice):
            items = self._items()
            if items is None:  # (no byte view to share: a copy of the bytes)
                from .ops.creation import tensor
                items = tensor(self._host_bytes(), dtype=_dt.uint8)
            return type(self)._wrap(items[i])
        j = self._index(i, "get")
        items = self._items()
        return self._host_bytes()[j].item() if items is None else items[j].item()

    def __setitem__(self, i, value) -> None:
        if isinstance(i, slice):
            self._assign(i, value)
            return
        self._assign(self._index(i, "set"), value)

    def _assign(self, where, value) -> None:
        v = self._item(value)
        items = self._items()
        if items is None:
            def edit(raw):
                raw[where] = v
            self._write_bytes(edit)
        else:
            items[where] = v

    def fill_(self, value) -> UntypedStorage:
        """Sets every item to ``value`` (for an untyped storage, every byte), in place."""
        if isinstance(value, float):
            raise RuntimeError("fill_ expects int, but got float")
        self._assign(slice(None), value)
        return self

    def copy_(self, src, non_blocking: bool | None = None) -> UntypedStorage:
        """Copies the bytes of storage ``src`` (of the same size) into this one."""
        if not isinstance(src, UntypedStorage):
            raise TypeError(f"copy_(): argument 'src' (position 1) must be Storage, not "
                            f"{type(src).__name__}")
        if self.nbytes() != src.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src "
                               f"was {src.nbytes()} bytes")
        mine, theirs = self._whole, src._whole
        if mine._dtype is theirs._dtype:  # (elements as they are: every dtype, any device)
            mine.copy_(theirs)
        elif self._items() is not None and src._items() is not None:
            self._items().copy_(src._items())
        else:
            data = src._host_bytes()

            def edit(raw):
                raw[:] = data
            if self._items() is None:
                self._write_bytes(edit)
            else:
                from .ops.creation import tensor
                self._items().copy_(tensor(data, dtype=_dt.uint8))
        return self

    def tolist(self) -> list:
        """The bytes as Python ints."""
        return self._host_bytes().tolist()

    def __iter__(self):
        return iter(self.tolist())

    def resize_(self, size: int) -> UntypedStorage:
        """PyTorch resizes a storage in place under every tensor viewing it (FSDP frees
        parameter memory so); tritongrad's tensors hold their memory themselves, so only a
        resize to the present size (a no-op) is accepted."""
        n = _size_arg(f"{type(self).__name__}.resize_", (size,))
        if n != len(self):
            from .checks import unsupported
            raise unsupported(f"{type(self).__name__}.resize_", "size", n,
                              f"a storage cannot change size under its tensors; its size is "
                              f"{len(self)}: use Tensor.resize_ or new tensors")
        return self

    @classmethod
    def from_buffer(cls, buffer, byte_order: str | None = None, count: int = -1,
                    offset: int = 0, dtype=None, device=None) -> UntypedStorage:
        """A new storage holding the bytes of a Python buffer read as ``count`` elements of
        ``dtype`` from byte ``offset`` (``byte_order``: "little", "big" or "native"; needed
        for elements of more than one byte), stored in this machine's order."""
        if dtype is None:
            raise RuntimeError("argument 'dtype' cannot be None")
        np_dtype = _host_dtype(dtype)
        if np_dtype.itemsize > 1:
            if byte_order not in ("little", "big", "native"):
                raise RuntimeError(f"function missing required argument 'byte_order' (pos 2)"
                                   if byte_order is None else f"Invalid byte_order "
                                   f"'{byte_order}' (expected 'big', 'little', or 'native')")
            if byte_order != "native":
                np_dtype = np_dtype.newbyteorder("<" if byte_order == "little" else ">")
        values = np.frombuffer(buffer, dtype=np_dtype, count=count, offset=offset)
        raw = values.astype(values.dtype.newbyteorder("=")).view(np.uint8)
        from .ops.creation import tensor
        whole = tensor(raw, dtype=_dt.uint8, device=device)
        if cls is UntypedStorage:
            return cls._wrap(whole)
        return cls._wrap(whole.view(dtype))

    def __repr__(self) -> str:
        return f"UntypedStorage(nbytes={self.nbytes()}, device={self.device})"


def _host_dtype(dtype) -> np.dtype:
    """The NumPy dtype of ``dtype``'s elements as bytes (bfloat16: two bytes)."""
    return np.dtype(np.uint16) if dtype is _dt.bfloat16 else dtype.np


class TypedStorage(UntypedStorage):
    """The memory a tensor views, in elements of its dtype (``Tensor.storage()``), or new
    memory: ``TypedStorage(size, dtype=None, device=None)`` (uninitialized),
    ``TypedStorage(sequence, dtype=None, device=None)`` (the values), ``TypedStorage()``
    (empty), or ``TypedStorage(wrap_storage=untyped, dtype=...)`` (the same memory). The dtype
    defaults to the default dtype (``tg.get_default_dtype()``). Its items (``s[i]``,
    ``fill_``, ``tolist``) are elements.

    Example:
        >>> s = tg.TypedStorage([1, 2], dtype=tg.float64)
        >>> s.tolist(), s.size(), s.dtype
        ([1.0, 2.0], 2, torch.float64)
    """

    def __init__(self, *args, device=None, dtype=None, wrap_storage=None):
        from .ops.creation import empty, tensor
        _warn_typed()
        dtype = _dt.get_default_dtype() if dtype is None else dtype
        if wrap_storage is not None:
            if args or device is not None:
                raise RuntimeError("TypedStorage(): No positional arguments or `device` "
                                   "should be given when using `wrap_storage`")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(f"TypedStorage(): argument 'wrap_storage' must be "
                                f"UntypedStorage, but got {type(wrap_storage).__name__}")
            whole = wrap_storage._whole
            if whole.dtype is not dtype:  # (the memory of one dtype, read as another)
                from .checks import unsupported
                raise unsupported("TypedStorage", "wrap_storage", wrap_storage,
                                  f"the storage of a {dtype} tensor")
            self._whole = whole
        elif len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            data = args[0]
            if isinstance(data, (str, bytes)) or not hasattr(data, "__len__"):
                raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
            self._whole = tensor(list(data), dtype=dtype, device=device).reshape(-1)
        else:
            n = _size_arg("TypedStorage", args)
            self._whole = empty((n,), dtype=dtype, device=device)

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
        return UntypedStorage._wrap(self._whole)

    def _items(self) -> Tensor:
        return self._whole

    def _item(self, value):
        return value  # (the tensor's assignment casts a number to the dtype, as PyTorch)

    def tolist(self) -> list:
        return self._whole.tolist()

    def __getitem__(self, i):
        if isinstance(i, slice):
            return type(self)._wrap(self._whole[i])
        return self._whole[self._index(i, "get")].item()

    def fill_(self, value) -> TypedStorage:
        """Sets every element to ``value``, in place."""
        self._whole.fill_(value)
        return self

    def copy_(self, src, non_blocking: bool | None = None) -> TypedStorage:
        """Copies the elements of storage ``src`` (as many) into this one, converting."""
        if not isinstance(src, UntypedStorage):
            raise TypeError(f"copy_(): argument 'src' (position 1) must be Storage, not "
                            f"{type(src).__name__}")
        if isinstance(src, TypedStorage):
            if len(src) != len(self):
                raise RuntimeError(f"size does not match, self was {len(self)} elements but "
                                   f"src was {len(src)}")
            self._whole.copy_(src._whole)
            return self
        self.untyped().copy_(src)
        return self

    def __repr__(self) -> str:
        return f"TypedStorage(dtype={self.dtype}, size={len(self)}, device={self.device})"


def _size_arg(cls: str, args: tuple) -> int:
    """The element (or byte) count of a storage constructor's ``(size,)`` / ``()``."""
    if not args:
        return 0
    if len(args) > 1 or not isinstance(args[0], (int, np.integer)) or isinstance(args[0], bool):
        raise TypeError(f"{cls}(): expected no arguments, (int size) or (Sequence data), got "
                        f"({', '.join(type(a).__name__ for a in args)})")
    n = int(args[0])
    if n < 0:
        raise RuntimeError(f"{cls}(): the size must be non-negative, got {n}")
    return n


_warned_typed = [False]


def _warn_typed() -> None:
    """PyTorch deprecates TypedStorage, and warns once, as here."""
    if not _warned_typed[0]:
        _warned_typed[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter "
                      "to you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=4)


def storage(t: Tensor) -> TypedStorage:
    """``t``'s storage in elements of its dtype (deprecated, as in PyTorch: warns once)."""
    _warn_typed()
    return TypedStorage._wrap(_whole(t))


class _LegacyStorageType(type):
    """The type of ``FloatStorage`` & co: ``isinstance(s, FloatStorage)`` asks whether ``s``
    is a TypedStorage of float32 elements, as PyTorch's."""

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, TypedStorage) and instance.dtype is cls.dtype


class _LegacyStorage(metaclass=_LegacyStorageType):
    """PyTorch's per-dtype storage classes (``torch.FloatStorage(3)``,
    ``torch.LongStorage([1, 2])``): each makes a CPU :class:`TypedStorage` of its dtype."""

    dtype = None

    def __new__(cls, *args, wrap_storage=None, **kwargs):
        for key in kwargs:
            raise RuntimeError(f"{cls.__name__}(): Keyword argument '{key}' cannot be "
                               f"specified (expected (), (int size), (Sequence data) or "
                               f"(*, UntypedStorage wrap_storage))")
        return TypedStorage(*args, dtype=cls.dtype, wrap_storage=wrap_storage)


def _legacy(name: str, dtype) -> type:
    return _LegacyStorageType(name, (_LegacyStorage,), {
        "dtype": dtype, "__module__": "tritongrad",
        "__doc__": f"``{name}(size)`` / ``{name}(sequence)``: a TypedStorage of {dtype.name}."})


LEGACY_STORAGES = {name: _legacy(name, getattr(_dt, dt)) for name, dt in (
    ("DoubleStorage", "float64"), ("FloatStorage", "float32"), ("HalfStorage", "float16"),
    ("BFloat16Storage", "bfloat16"), ("LongStorage", "int64"), ("IntStorage", "int32"),
    ("ShortStorage", "int16"), ("CharStorage", "int8"), ("ByteStorage", "uint8"),
    ("BoolStorage", "bool"), ("ComplexFloatStorage", "complex64"),
    ("ComplexDoubleStorage", "complex128"))}
globals().update(LEGACY_STORAGES)
__all__ += list(LEGACY_STORAGES)


def untyped_storage(t: Tensor) -> UntypedStorage:
    """``t``'s storage in bytes."""
    return UntypedStorage._wrap(_whole(t))


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Returns True if both tensors are pointing to the exact same memory (same storage,
    offset, size and stride)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    return (self._device == tensor._device and _span(self._data)[0] == _span(tensor._data)[0]
            and self.storage_offset() == tensor.storage_offset()
            and tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride())


def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """Defines how to transform ``other`` when loading it into ``self`` in
    ``nn.Module.load_state_dict`` (when parameters are swapped rather than copied): by
    default ``self.copy_(other).detach()``, or ``other.detach()`` if ``assign`` is True. It
    always returns a new object that is not ``self`` or ``other``.

    Args:
        other (Tensor): value in state dict with key corresponding to ``self``
        assign (bool): the assign argument passed to ``nn.Module.load_state_dict``
    """
    if assign:
        return other.detach()
    return self.copy_(other).detach()


# -- set_ ---------------------------------------------------------------------------------------

class NotImplementedBackward(Node):
    """The grad_fn of an op whose derivative PyTorch does not implement (``set_`` with a
    source that requires grad), named as PyTorch's (``NotImplemented``): running it raises."""

    def __init__(self, op: str, error: type = NotImplementedError, message: str | None = None):
        super().__init__()
        self.op = op
        # (PyTorch's not_implemented(): NotImplementedError; set_'s own check: RuntimeError)
        self.error = error, message or f"the derivative for '{op}' is not implemented."

    def name(self) -> str:
        return "NotImplemented"

    def apply(self, *grads):
        kind, message = self.error
        raise kind(message)


# (PyTorch's class of such a grad_fn is named "NotImplemented": ``type(t.grad_fn).__name__``)
NotImplementedBackward.__name__ = NotImplementedBackward.__qualname__ = "NotImplemented"


def _repoint(t: Tensor, data, bump: bool = True) -> None:
    """Gives ``t`` the geometry (and memory) of backend array ``data``; a view whose memory
    is no longer its base's stops being a view."""
    t._data = data
    if t._base is not None and _span(data)[0] != _span(t._base._data)[0]:
        t._base = None
        t.__dict__.pop("_creation_meta", None)
    if bump:
        t._vc[0] += 1


def set_(self: Tensor, source=None, storage_offset: int = 0, size=None, stride=None) -> Tensor:
    """Makes this tensor view ``source``'s memory: another tensor's (its geometry too), a
    storage's (``storage_offset``, ``size`` and ``stride`` in elements; by default all of it,
    contiguous; a storage too small for them grows, as at ``resize_``), or nothing (empty).
    Its version counter stays its own; a leaf gets a new gradient accumulator (nodes recorded
    before no longer stand for it)."""
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
            raise TypeError(f"set_() received an invalid combination of arguments - got "
                            f"({type(source).__name__}), but expected a Tensor or a Storage "
                            f"as 'source'")
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
            if storage_offset < 0:
                raise RuntimeError(f"Tensor: invalid storage offset {storage_offset}")
            data = _strided_in_storage(self, src, size, stride, storage_offset)
    _repoint(self, data)
    self._grad_acc = None  # (PyTorch's set_ gives a leaf a fresh AccumulateGrad)
    if record:
        node = NotImplementedBackward("set_", RuntimeError,
                                      "derivative for set_ is not implemented")
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
    """Gives this tensor shape ``sizes``, contiguous from its storage offset (or laid out as
    ``memory_format``: a channels-last format gives NHWC / NDHWC strides). Its elements up to
    the new size keep their memory (and values); the storage grows when too small, keeping
    its contents. The same shape without ``memory_format`` changes nothing; the version is
    bumped only if the shape changes (PyTorch's rules).

    Unlike PyTorch, whose storage grows in place for every tensor sharing it, a grown storage
    is new memory that only this tensor sees (NumPy arrays and device allocations cannot
    grow); a view that grows stops being a view."""
    from .checks import check_memory_format
    from .dispatch import check_inplace
    from .ops.views import _shape_args, int_tuple
    check_memory_format("resize_", memory_format, None)
    if memory_format is _dt.preserve_format:
        raise RuntimeError("Unsupported memory formatPreserve")
    sizes = int_tuple(_shape_args(sizes, "resize_"), "resize_", "size")
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: "
                           f"{list(sizes)}")
    if self.requires_grad and not state.inference:  # (inference mode skips autograd's check)
        raise RuntimeError("cannot resize variables that require grad")
    check_inplace(self, False)
    _resize(self, sizes, memory_format)
    return self


def resize_for_output(out: Tensor, shape: tuple) -> None:
    """Gives ``out=`` tensor ``out`` the result's ``shape`` as PyTorch's ``resize_output``
    does inside an op: without resize_'s checks (an ``out`` that requires grad is resized under
    no_grad) and without a version bump (the op's write into ``out`` is its one bump)."""
    _resize(out, tuple(shape), None, bump=False)


def _resize(t: Tensor, sizes: tuple, memory_format, bump: bool = True) -> None:
    """``resize_``'s change of geometry (its arguments checked): the version is bumped (with
    ``bump``) when the shape changes."""
    from .layout import format_strides
    shape = tuple(t._data.shape)
    strides = None if memory_format is None else format_strides(sizes, memory_format)
    if strides is None:
        if sizes == shape and memory_format is None:
            return
        strides = contiguous_strides(sizes)
    if sizes == shape and strides == t.stride():
        return
    _repoint(t, _strided_in_storage(t, t, sizes, strides, t.storage_offset()),
             bump and sizes != shape)


def _strided_in_storage(t: Tensor, src: Tensor, sizes: tuple, strides: tuple, offset: int):
    """A backend array of ``sizes`` and ``strides`` at element ``offset`` of the storage of
    ``src`` (of ``t``'s dtype and device), for ``t``. When the storage is too small for it,
    it is grown: new memory holding the storage's contents, which only ``t`` will see (see
    ``resize_``)."""
    k = t._k
    extent = 0 if 0 in sizes else 1 + sum((n - 1) * s for n, s in zip(sizes, strides))
    need = offset + extent
    have = storage_numel(src)
    whole = _whole(src)._data
    if need > have:
        grown = k.empty((need,), t._dtype, t._device)
        if have:
            k.copy_(k.getitem(grown, (slice(0, have, 1),)), whole)
        whole = grown
    return k.as_strided(whole, sizes, strides, offset)


def resize_as_(self: Tensor, the_template: Tensor, memory_format=None) -> Tensor:
    """``self.resize_(the_template.shape)`` (PyTorch's argument name: ``the_template=``)."""
    return resize_(self, tuple(tensor_arg(the_template, "resize_as_", "the_template").shape),
                   memory_format=memory_format)


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
