"""DeviceArray: a strided view of CUDA memory, the Triton backend's native array.

A DeviceArray is (storage, offset, shape, strides, dtype): offset and strides count elements,
as PyTorch's do. View operations here only touch that metadata; the memory belongs to the
``Storage`` (runtime/memory.py), which returns its block to the caching allocator when the last
view of it dies.

Triton launches a kernel on any object with ``data_ptr()`` and a ``dtype`` whose string ends in
a Triton type name, so DeviceArrays are passed to ``@triton.jit`` functions directly. Triton's
interpreter (``TRITON_INTERPRET=1``, used by CI) also calls the torch-style methods
``untyped_storage``, ``new_empty``, ``set_``, ``storage_offset``, ``size``, ``stride`` and
``copy_``; they are implemented at the bottom of the class.
"""

from __future__ import annotations

import math
import operator

from .dtype import dtype as Dtype

__all__ = ["DeviceArray", "check_sizes", "check_view_bounds", "contiguous_strides",
           "view_strides"]

_INT64_MAX = (1 << 63) - 1
_ALL = slice(None)


_CONTIGUOUS: dict = {}  # shape -> strides: a step allocates the same few shapes over and over


def contiguous_strides(shape) -> tuple:
    """Row-major strides, in elements, for ``shape``."""
    shape = tuple(shape)
    strides = _CONTIGUOUS.get(shape)
    if strides is None:
        out, acc = [], 1
        for n in reversed(shape):
            out.append(acc)
            acc *= max(n, 1)
        strides = tuple(reversed(out))
        if len(_CONTIGUOUS) >= 4096:  # many shapes (dynamic sizes): start over
            _CONTIGUOUS.clear()
        _CONTIGUOUS[shape] = strides
    return strides


def view_strides(shape, strides, new_shape):
    """Strides that let ``new_shape`` view memory laid out as (shape, strides), or None.

    PyTorch's ``computeStride``: a reshape is a view when each run of new dimensions maps onto
    a run of old dimensions that is contiguous within itself.
    """
    numel = math.prod(shape)
    if numel == 0:
        return contiguous_strides(new_shape)
    if not shape:
        return tuple(1 for _ in new_shape)
    out = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = strides[-1]
    tensor_numel, view_numel = 1, 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                out[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base_stride = strides[d - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return tuple(out)


def check_sizes(shape) -> None:
    """PyTorch's RuntimeError for a negative size, or for sizes whose product overflows int64."""
    shape = [operator.index(n) for n in shape]
    numel = 1
    for n in shape:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {shape}")
        numel *= n
    if numel > _INT64_MAX:
        raise RuntimeError("numel: integer multiplication overflow")


def check_view_bounds(shape, strides, offset: int, itemsize: int, storage_nbytes: int) -> None:
    """Raises PyTorch's RuntimeError unless the view (``shape``, element ``strides``, element
    ``offset``) of a storage of ``storage_nbytes`` bytes stays inside it.

    The one bounds check of views made from user geometry (the kernel contract's
    ``as_strided`` on both backends calls it): sizes, strides and the offset are
    non-negative, and the highest element, ``offset + sum((size - 1) * stride)``, lies inside
    the storage. A view with no elements reads nothing, so any offset that is not negative
    will do for it (PyTorch's ``checkInBoundsForStorage``). The order of the checks, and so
    which error a request breaking several rules gets, is PyTorch's ``setStrided``.
    """
    shape = [operator.index(n) for n in shape]  # Python ints: NumPy's would overflow below
    strides = [operator.index(s) for s in strides]
    offset = operator.index(offset)
    check_sizes(shape)
    if any(s < 0 for s in strides):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {strides}")
    if 0 not in shape:
        extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
        if extent * itemsize > _INT64_MAX:
            raise RuntimeError(f"Storage size calculation overflowed with sizes={shape} "
                               f"and strides={strides}")
        need = (extent + offset) * itemsize
        if need > storage_nbytes:
            raise RuntimeError(f"setStorage: sizes {shape}, strides {strides}, "
                               f"storage offset {offset}, and itemsize {itemsize} requiring a "
                               f"storage size of {need} are out of bounds for storage of size "
                               f"{storage_nbytes}")
    if offset < 0 or offset * itemsize > _INT64_MAX:  # (the latter: an empty view's address)
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")


class DeviceArray:
    """A view (storage, offset, shape, strides, dtype) of memory on a CUDA device."""

    # device: the storage's, kept on the array (read for every op's result, by the launchers
    # and by the Tensor made of it; a property cost a call more per read)
    __slots__ = ("device", "dtype", "offset", "shape", "storage", "strides")

    def __init__(self, storage, offset: int, shape: tuple, strides: tuple, dtype: Dtype):
        self.storage = storage
        self.offset = offset
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.device = storage.device

    # -- facts -------------------------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        return self.storage.ptr + self.offset * self.dtype.itemsize

    def is_contiguous(self) -> bool:
        if 0 in self.shape:
            return True  # PyTorch: an empty tensor is contiguous whatever its strides
        expected = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != expected:
                return False
            expected *= n
        return True

    def __repr__(self) -> str:
        return (f"DeviceArray(shape={self.shape}, strides={self.strides}, offset={self.offset}, "
                f"dtype={self.dtype}, device={self.device})")

    # -- views (metadata only) ---------------------------------------------------------------
    def as_strided(self, shape, strides, offset: int | None = None) -> DeviceArray:
        return DeviceArray(self.storage, self.offset if offset is None else offset,
                           tuple(shape), tuple(strides), self.dtype)

    def view(self, shape) -> DeviceArray | None:
        """The same elements in ``shape`` without copying, or None if strides forbid it."""
        strides = view_strides(self.shape, self.strides, shape)
        return None if strides is None else self.as_strided(shape, strides)

    def view_as_real(self) -> DeviceArray:
        """A complex array as a real one (float32 of complex64, float64 of complex128) with a
        last dimension of 2 (real, imaginary): the same bytes, offsets and strides doubled.
        The Triton kernels see complex arrays only so (kernels/triton/complex.py)."""
        return DeviceArray(self.storage, 2 * self.offset, tuple(self.shape) + (2,),
                           tuple(2 * s for s in self.strides) + (1,), self.dtype.to_real())

    def permute(self, dims) -> DeviceArray:
        return self.as_strided([self.shape[d] for d in dims], [self.strides[d] for d in dims])

    def expand(self, shape) -> DeviceArray:
        """Broadcasts to ``shape`` (already validated) with zero strides on new dimensions."""
        lead = len(shape) - self.ndim
        strides = [0] * lead
        for i, (n, s) in enumerate(zip(self.shape, self.strides)):
            strides.append(s if n == shape[lead + i] else 0)
        return self.as_strided(shape, strides)

    def getitem(self, index: tuple) -> DeviceArray:
        """Basic indexing: ints, slices (positive steps), None and Ellipsis, already normalised
        so that Ellipsis is expanded and ints are in range."""
        old_shape, old_strides = self.shape, self.strides
        shape, strides, offset = [], [], self.offset
        d = 0
        for ix in index:
            if ix is None:
                shape.append(1)
                strides.append(0)
            elif type(ix) is slice:
                if ix == _ALL:  # (a leading ``:``, as split's and narrow's windows have)
                    shape.append(old_shape[d])
                    strides.append(old_strides[d])
                else:
                    start, stop, step = ix.indices(old_shape[d])
                    n = max(0, (stop - start + step - 1) // step)
                    offset += start * old_strides[d] if n else 0
                    shape.append(n)
                    strides.append(old_strides[d] * step)
                d += 1
            else:
                offset += operator.index(ix) * old_strides[d]
                d += 1
        return DeviceArray(self.storage, offset, (*shape, *old_shape[d:]),
                           (*strides, *old_strides[d:]), self.dtype)

    # -- the torch-style surface Triton's interpreter calls ----------------------------------
    def untyped_storage(self):
        return self.storage

    def new_empty(self, *size, device=None) -> DeviceArray:
        return DeviceArray(self.storage, 0, (0,), (1,), self.dtype)

    def set_(self, storage, offset, size, stride) -> DeviceArray:
        self.storage, self.offset, self.device = storage, offset, storage.device
        self.shape, self.strides = tuple(size), tuple(stride)
        return self

    def storage_offset(self) -> int:
        return self.offset

    def size(self) -> tuple:
        return self.shape

    def stride(self) -> tuple:
        return self.strides

    def copy_(self, other) -> DeviceArray:
        if other.storage is not self.storage:  # the interpreter copies back to itself on host
            raise NotImplementedError("DeviceArray.copy_ is only the interpreter's no-op")
        return self
