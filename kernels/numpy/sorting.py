"""Sorting along one dim over NumPy arrays: the CPU twin of kernels/triton/sorting.py.

``sort`` is NumPy's stable argsort, so ties keep their order of appearance in both directions,
and NaN sorts as the largest value (NumPy's and PyTorch's order): last ascending, first
descending.
"""

from __future__ import annotations

import numpy as np

from .bf16 import BF16Array

__all__ = ["sort"]


def sort(a: np.ndarray, dim: int, descending: bool) -> tuple:
    """(values, int64 indices) of ``a`` sorted along ``dim``, stably."""
    keys = a.view(np.ndarray) if type(a) is BF16Array else a
    if descending:
        # A stable descending order: the stable ascending order of the reversed row, read
        # backwards, keeps equal elements in their original order (negating would not: it
        # overflows integers and leaves NaN last).
        rev = np.flip(keys, dim)
        n = keys.shape[dim]
        # (a copy: a flipped array of one element along ``dim`` passes as C-contiguous to
        # ascontiguousarray and would keep its negative stride)
        idx = np.array(np.flip(n - 1 - np.argsort(rev, axis=dim, kind="stable"), dim),
                       dtype=np.int64, order="C")
    else:
        idx = np.ascontiguousarray(np.argsort(keys, axis=dim, kind="stable"), dtype=np.int64)
    values = np.take_along_axis(keys, idx, dim)  # a new C-contiguous array
    return (values.view(BF16Array) if type(a) is BF16Array else values), idx
