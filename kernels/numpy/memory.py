"""Creation, copies, casts and views of NumPy arrays (strides in elements, as PyTorch)."""

from __future__ import annotations

import numpy as np

from ...runtime.array import view_strides

_as_strided = np.lib.stride_tricks.as_strided


def empty(shape, dtype, device=None) -> np.ndarray:
    return np.empty(shape, dtype=dtype.np)


def full(shape, value, dtype, device=None) -> np.ndarray:
    return np.full(shape, value, dtype=dtype.np)


def astype(a: np.ndarray, dtype) -> np.ndarray:
    return a.astype(dtype.np, copy=True)


def contiguous(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def copy_(dst: np.ndarray, src) -> None:
    np.copyto(dst, src, casting="unsafe")


def strides(a: np.ndarray) -> tuple:
    n = a.itemsize
    return tuple(s // n for s in a.strides)


def _storage_root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def storage_offset(a: np.ndarray) -> int:
    root = _storage_root(a)
    return (a.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // a.itemsize


def view(a: np.ndarray, shape):
    st = view_strides(a.shape, strides(a), tuple(shape))
    if st is None:
        return None
    return _as_strided(a, shape, tuple(s * a.itemsize for s in st), writeable=True)


def permute(a: np.ndarray, dims) -> np.ndarray:
    return a.transpose(dims)


def expand(a: np.ndarray, shape) -> np.ndarray:
    # broadcast_to returns a read-only view; expanded tensors are writable in PyTorch (writes
    # to overlapping elements are the user's problem there too).
    out = np.broadcast_to(a, shape)
    out.flags.writeable = True if a.flags.writeable else False
    return out


def getitem(a: np.ndarray, index: tuple) -> np.ndarray:
    return a[index]


class _At:
    """Exposes memory at an address as an array while keeping its owner alive."""

    def __init__(self, owner, ptr, shape, byte_strides, typestr):
        self.owner = owner
        self.__array_interface__ = {"data": (ptr, False), "shape": shape,
                                    "strides": byte_strides, "typestr": typestr, "version": 3}


def as_strided(a: np.ndarray, shape, strides, offset) -> np.ndarray:
    """A view of ``a``'s storage: element ``strides``, starting ``offset`` elements into it."""
    root = _storage_root(a)
    ptr = root.__array_interface__["data"][0] + offset * a.itemsize
    return np.asarray(_At(root, ptr, tuple(shape), tuple(s * a.itemsize for s in strides),
                          a.dtype.str))
