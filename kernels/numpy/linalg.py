"""Matrix products over NumPy arrays."""

from __future__ import annotations

import numpy as np

_f16 = np.dtype(np.float16)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == _f16:
        # NumPy has no half GEMM (it loops in Python-speed C); compute in float32 and round
        # once, which is also what GPU tensor cores do with a float32 accumulator.
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    return np.matmul(a, b)  # bfloat16: float32 GEMM, rounded once (bf16.BF16Array)


def bmm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(B, n, m) @ (B, m, p) -> (B, n, p); either batch stride may be 0 (expanded)."""
    return matmul(a, b)
