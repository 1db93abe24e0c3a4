"""Matrix products over NumPy arrays."""

from __future__ import annotations

import numpy as np

from . import blas
from .bf16 import BF16Array, round_, tag

_f16 = np.dtype(np.float16)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == _f16:
        # NumPy has no half GEMM (it loops in Python-speed C); compute in float32 and round
        # once, which is also what GPU tensor cores do with a float32 accumulator.
        return matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    # float32/float64 products big enough for it go to the CBLAS library of blas.py (MKL where
    # installed); bfloat16 is a float32 GEMM, rounded once (bf16.BF16Array), in NumPy
    if a.ndim == 2 and b.ndim == 2:
        r = blas.gemm(a, b)
        if r is not None:
            return r
    elif b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous:  # (..., m, k) @ (k, n): one GEMM
        r = blas.gemm(a.reshape(-1, a.shape[-1]), b)
        if r is not None:
            return r.reshape(*a.shape[:-1], b.shape[1])
    elif a.ndim == 3 and b.ndim == 3 and a.shape[0] == 1 == b.shape[0]:  # one group's conv
        r = blas.gemm(a[0], b[0])
        if r is not None:
            return r[None]
    return np.matmul(a, b)


def addmm(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b + c for 2-D a and b, c broadcast to the product's shape: the product, then c
    added into it in place (the Triton backend adds a bias row before its one rounding).
    float16 and bfloat16 add c to the float32 product and round once, as PyTorch's CPU GEMM
    does (rounding the product first is 1 ulp off in about a third of the results)."""
    if a.dtype == _f16:
        out = matmul(a.astype(np.float32), b.astype(np.float32))
        return np.add(out, c, out=out, dtype=np.float32).astype(np.float16)
    if isinstance(a, BF16Array):  # (float32 storage: its plain view is the float32 operand)
        out = matmul(a.view(np.ndarray), b.view(np.ndarray))
        return tag(round_(np.add(out, c.view(np.ndarray), out=out)))
    out = matmul(a, b)
    if type(c) is np.ndarray and c.dtype == out.dtype:  # (linear's bias: ufunc straight)
        return np.add(out, c, out=out)
    from .elementwise import add
    return add(out, c, out=out)


def bmm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(B, n, m) @ (B, m, p) -> (B, n, p); either batch stride may be 0 (expanded)."""
    return matmul(a, b)
