"""Creation, copies, casts and views of NumPy arrays (strides in elements, as PyTorch).

bfloat16 arrays are ``bf16.BF16Array`` (float32 storage on the bfloat16 grid): NumPy functions
that drop the subclass (``as_strided``, ``broadcast_to``, ``ascontiguousarray``) get it back
here, and copies into one round (``bf16.round_``).
"""

from __future__ import annotations

import ctypes
import os
import sys

import numpy as np

from ...runtime import dtype as dtypes
from ...runtime.array import check_view_bounds, contiguous_strides, view_strides
from . import float8 as _f8
from .bf16 import BF16Array, round_, rounded

_ndarray = np.ndarray
_BF16 = dtypes.bfloat16
_F16 = dtypes.float16
_FLOAT8 = _f8.FLOAT8  # float8 arrays hold ml_dtypes' dtypes (kernels/numpy/float8.py)

# Note [host memory reuse]: every op result is a fresh NumPy array, and with glibc's defaults
# an array of more than 128 KiB (at first; the threshold adapts) is a fresh mmap, faulted in
# page by page and unmapped again when it is freed, and freed heap memory is trimmed back to
# the system soon after. A training step allocates the same sizes again and again, so it pays
# those page faults each time: a GPT-style step on the CPU took 139 ms with the defaults and
# 96 ms with arrays up to 32 MiB served from the heap and up to 64 MiB of freed memory kept
# (perf/bench_transformer.py; torch 65 ms). So, as the CUDA side caches device memory, the CPU
# backend asks glibc to keep host memory: at import, unless the user set MALLOC_* variables
# of their own or TRITONGRAD_HOST_MALLOPT=0. A process then keeps up to 64 MiB of freed heap.
_MMAP_THRESHOLD = 32 << 20  # glibc's largest allowed value on 64-bit (HEAP_MAX_SIZE / 2)
_TRIM_THRESHOLD = 64 << 20


def _keep_host_memory() -> bool:
    """Applies Note [host memory reuse]; True if glibc took the settings."""
    if os.environ.get("TRITONGRAD_HOST_MALLOPT", "1") == "0" or not sys.platform.startswith(
            "linux") or any(k.startswith("MALLOC_") for k in os.environ):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only: other C libraries ignore or lack mallopt
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(mallopt(m_mmap_threshold, _MMAP_THRESHOLD)) and bool(
        mallopt(m_trim_threshold, _TRIM_THRESHOLD))


HOST_MALLOPT = _keep_host_memory()


def empty(shape, dtype, device=None) -> np.ndarray:
    if dtype is _BF16:
        return np.empty(shape, dtype=np.float32).view(BF16Array)
    return np.empty(shape, dtype=dtype.np)


def full(shape, value, dtype, device=None) -> np.ndarray:
    if dtype is _BF16:
        return rounded(np.full(shape, value, dtype=np.float32))
    if dtype in _FLOAT8:  # ml_dtypes' dtypes, PyTorch's rounding (not ml_dtypes')
        return _f8.full(shape, value, dtype)
    if (dtype.is_floating_point or dtype.is_complex) and (type(value) is float
                                                          or type(value) is int):
        # a Python number into a float dtype: an item assignment casts it as np.full's
        # copyto does (which differs only for integer dtypes: NaN, inf, complex values), at a
        # fifth of np.full's cost on small arrays (every backward's seed of ones)
        a = np.empty(shape, dtype.np)
        a[...] = value
        return a
    return np.full(shape, value, dtype=dtype.np)


def arange(start, step, n, dtype, device=None) -> np.ndarray:
    """``start + step * i`` for i in [0, n), computed in float64 (int64 for integral start
    and step) and cast to ``dtype``."""
    integral = isinstance(start, (int, np.integer)) and isinstance(step, (int, np.integer))
    a = start + step * np.arange(n, dtype=np.int64 if integral else np.float64)
    if dtype is _BF16:
        return rounded(a)
    if dtype in _FLOAT8:
        return _f8.astype(a, dtype)
    return a.astype(dtype.np, copy=False)


def astype(a: np.ndarray, dtype) -> np.ndarray:
    if dtype is _BF16:
        return rounded(a)
    if dtype in _FLOAT8:  # PyTorch's rounding, not ml_dtypes' (overflow, NaN, e8m0fnu);
        return _f8.astype(a, dtype)  # (from float8, ml_dtypes' casts are exact)
    # order="C": the contract's copies are row-major (NumPy's default "K" keeps the layout,
    # which would make contiguous() and reshape() of transposed data fail)
    if type(a) is BF16Array:
        return a.view(_ndarray).astype(dtype.np, order="C", copy=True)
    if dtype is _F16 and a.dtype.itemsize > 2:
        with np.errstate(over="ignore"):  # (out of range: inf, silently, as PyTorch's cast)
            return a.astype(dtype.np, order="C", copy=True)
    return a.astype(dtype.np, order="C", copy=True)


def contiguous(a: np.ndarray) -> np.ndarray:
    if a.flags.c_contiguous:
        return a
    out = np.ascontiguousarray(a)
    return out.view(BF16Array) if type(a) is BF16Array else out


def copy_(dst: np.ndarray, src) -> None:
    if dst.itemsize == 1 and dst.dtype in _f8.FLOAT8_NP:  # into float8: PyTorch's rounding
        return _f8.copy_(dst, src)
    if type(dst) is BF16Array:
        plain = dst.view(_ndarray)
        if type(src) is BF16Array:
            np.copyto(plain, src.view(_ndarray), casting="unsafe")
        else:
            np.copyto(plain, src, casting="unsafe")
            round_(plain)
        return
    if type(src) is BF16Array:
        src = src.view(_ndarray)
    np.copyto(dst, src, casting="unsafe")


def cat(arrays: list, dim: int) -> np.ndarray:
    """The arrays (one dtype, one ndim, equal sizes but along ``dim``) joined along ``dim``:
    a new contiguous array."""
    if type(arrays[0]) is BF16Array:  # (float32 values on the bfloat16 grid: joined as is)
        return np.concatenate([a.view(_ndarray) for a in arrays], axis=dim).view(BF16Array)
    return np.concatenate(arrays, axis=dim)


def strides(a: np.ndarray) -> tuple:
    shape = a.shape
    if 0 in shape:  # NumPy may report zeros; PyTorch reports row-major strides
        return contiguous_strides(shape)
    n = a.itemsize
    return tuple([s // n for s in a.strides])  # (a list: no generator frame)


def _storage_root(a: np.ndarray) -> np.ndarray:
    """The array whose memory ``a`` views: its chain of NumPy bases, through the views that
    ``as_strided`` makes (their base is an ``_At`` holding the root)."""
    while True:
        base = a.base
        if isinstance(base, np.ndarray):
            a = base
        elif type(base) is _At:
            a = base.owner
        else:
            return a


def _storage_nbytes(root: np.ndarray) -> int:
    """The bytes of ``root``'s memory from its first element: all of it when the root is
    compact (it owns its buffer, or wraps one); else (a strided view of memory NumPy does not
    own) as far as its own elements reach, the only bytes known to be there."""
    if root.flags.forc or 0 in root.shape:
        return root.nbytes
    return root.itemsize + sum((n - 1) * s for n, s in zip(root.shape, root.strides) if s > 0)


def storage_offset(a: np.ndarray) -> int:
    root = _storage_root(a)
    return (a.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // a.itemsize


def _keep(out: np.ndarray, a: np.ndarray) -> np.ndarray:
    return out.view(BF16Array) if type(a) is BF16Array else out


def view(a: np.ndarray, shape):
    if a.flags.c_contiguous:
        return a.reshape(shape)  # always a view of a contiguous array (and much cheaper)
    st = view_strides(a.shape, strides(a), tuple(shape))
    if st is None:
        return None
    # through _At, not NumPy's as_strided: its result's base (a DummyArray) would hide the
    # storage from _storage_root
    return _at(a, _storage_root(a), a.__array_interface__["data"][0], shape, st)


def permute(a: np.ndarray, dims) -> np.ndarray:
    return a.transpose(dims)


def expand(a: np.ndarray, shape) -> np.ndarray:
    shape = tuple(shape)
    lead = len(shape) - a.ndim
    if lead >= 0 and a.flags.forc:
        # A view with stride 0 along the broadcast dimensions, made directly: broadcast_to
        # costs several microseconds, more than a whole small op (it runs on every backward
        # of a sum). The buffer protocol needs a contiguous array; others go the long way.
        st = [0] * lead
        for n_a, n, s in zip(a.shape, shape[lead:], a.strides):
            if n_a != n and n_a != 1:
                break  # not broadcastable: broadcast_to raises the error
            st.append(s if n_a == n else 0)
        else:
            return _keep(_ndarray(shape, a.dtype, a, 0, tuple(st)), a)
    # broadcast_to returns a read-only view; expanded tensors are writable in PyTorch (writes
    # to overlapping elements are the user's problem there too).
    out = np.broadcast_to(a, shape)
    out.flags.writeable = bool(a.flags.writeable)
    return _keep(out, a)


def getitem(a: np.ndarray, index: tuple) -> np.ndarray:
    # The trailing Ellipsis makes NumPy return a 0-d view, never a scalar, when every dim
    # is indexed by an int.
    return a[index + (Ellipsis,)]


class _At:
    """Exposes memory at an address as an array while keeping its owner alive."""

    def __init__(self, owner, ptr, shape, byte_strides, typestr):
        self.owner = owner
        self.__array_interface__ = {"data": (ptr, False), "shape": shape,
                                    "strides": byte_strides, "typestr": typestr, "version": 3}


def as_strided(a: np.ndarray, shape, strides, offset) -> np.ndarray:
    """A view of ``a``'s storage: element ``strides``, starting ``offset`` elements into it;
    PyTorch's RuntimeError if it would reach outside the storage (``check_view_bounds``)."""
    root = _storage_root(a)
    nbytes, item = _storage_nbytes(root), a.itemsize
    if type(a) is BF16Array:  # float32 storage: count in bfloat16's 2-byte elements
        nbytes, item = nbytes // 2, 2
    check_view_bounds(shape, strides, offset, item, nbytes)
    return _at(a, root, root.__array_interface__["data"][0] + offset * a.itemsize, shape, strides)


def _at(a: np.ndarray, root: np.ndarray, ptr: int, shape, strides) -> np.ndarray:
    """A writable view of ``root``'s memory at ``ptr`` with ``a``'s dtype and element
    ``strides``."""
    byte_strides = tuple(s * a.itemsize for s in strides)
    if a.itemsize == 1 and a.dtype in _f8.FLOAT8_NP:  # ml_dtypes' dtypes have no typestr of
        # their own: the bytes, given the dtype back
        return _keep(np.asarray(_At(root, ptr, tuple(shape), byte_strides, "|u1")).view(
            a.dtype), a)
    return _keep(np.asarray(_At(root, ptr, tuple(shape), byte_strides, a.dtype.str)), a)
