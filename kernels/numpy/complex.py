"""Complex numbers: the conjugate and the real and imaginary parts, as new arrays;
``view_as_real``/``view_as_complex``, the same memory read as the other kind."""

from __future__ import annotations

import numpy as np

from .memory import _At, _storage_root

__all__ = ["conj", "imag", "real", "view_as_complex", "view_as_real"]

_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}


def _reinterpret(a: np.ndarray, dtype: np.dtype, shape: tuple, byte_strides: tuple):
    """``a``'s memory from its first element as an array of ``dtype`` (through ``_At``, so that
    ``_storage_root`` still finds the storage: offsets and bounds stay right)."""
    ptr = a.__array_interface__["data"][0]
    return np.asarray(_At(_storage_root(a), ptr, shape, byte_strides, dtype.str))


def view_as_real(a: np.ndarray) -> np.ndarray:
    """Complex ``a`` as a real view with a last dimension of 2 (real, imaginary)."""
    half = a.itemsize // 2
    return _reinterpret(a, np.dtype(f"f{half}"), a.shape + (2,), a.strides + (half,))


def view_as_complex(a: np.ndarray) -> np.ndarray:
    """The complex view of a real array whose last dimension is 2 with stride 1 and whose
    other strides and offset are even (checked by the caller)."""
    return _reinterpret(a, _COMPLEX_OF[a.dtype], a.shape[:-1], a.strides[:-1])


def conj(a: np.ndarray) -> np.ndarray:
    # (np.asarray: a ufunc of a 0-d array returns a NumPy scalar, not an array)
    return np.asarray(np.conjugate(a)) if a.dtype.kind == "c" else a.copy()


def real(a: np.ndarray) -> np.ndarray:
    return np.array(a.real, order="C")


def imag(a: np.ndarray) -> np.ndarray:
    return np.array(a.imag, order="C") if a.dtype.kind == "c" else np.zeros_like(a, order="C")
