"""Reductions over NumPy arrays."""

from __future__ import annotations

import numpy as np

from .elementwise import _arr


def sum(a: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:  # noqa: A001
    if a.dtype == np.float16:
        # PyTorch accumulates half in float32; NumPy would accumulate in half.
        return _arr(np.sum(a, axis=dims, keepdims=keepdim, dtype=np.float32).astype(np.float16))
    return _arr(np.sum(a, axis=dims, keepdims=keepdim))
