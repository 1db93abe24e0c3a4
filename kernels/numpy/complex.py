"""Complex numbers: the conjugate and the real and imaginary parts, as new arrays."""

from __future__ import annotations

import numpy as np

__all__ = ["conj", "imag", "real"]


def conj(a: np.ndarray) -> np.ndarray:
    # (np.asarray: a ufunc of a 0-d array returns a NumPy scalar, not an array)
    return np.asarray(np.conjugate(a)) if a.dtype.kind == "c" else a.copy()


def real(a: np.ndarray) -> np.ndarray:
    return np.array(a.real, order="C")


def imag(a: np.ndarray) -> np.ndarray:
    return np.array(a.imag, order="C") if a.dtype.kind == "c" else np.zeros_like(a, order="C")
