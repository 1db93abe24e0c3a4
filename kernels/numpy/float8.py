"""float8 on the host: PyTorch's conversions and ``torch._scaled_mm``'s NumPy reference.

A CPU float8 array is a NumPy array of one of ``ml_dtypes``' float8 dtypes (``dtype.np`` of
``tritongrad.float8_e4m3fn`` and friends): one byte per element, the format's bit patterns.
ml_dtypes' own casts round to nearest even but differ from PyTorch's at the edges (overflow of
e4m3fn, NaN signs, e8m0fnu); ``astype`` here goes through ``runtime.dtype.float8_bits``, which
follows PyTorch bit for bit (tests/test_float8.py checks all codes and a million values).
"""

from __future__ import annotations

import numpy as np

from ...runtime import dtype as D
from .bf16 import BF16Array, rounded

__all__ = ["FLOAT8", "FLOAT8_NP", "is_float8", "astype", "copy_", "full", "scaled_mm"]

FLOAT8 = frozenset(D.FLOAT8_TYPES)
# (ml_dtypes gives float8_e5m2 the kind "f" and the others "V": the dtypes themselves decide)
FLOAT8_NP = frozenset(d.np for d in D.FLOAT8_TYPES if d.np.type is not np.void)


def is_float8(a) -> bool:
    """True if host array ``a`` holds float8 bit patterns (one cheap test first: the other
    arrays of one-byte elements are bool, int8 and uint8)."""
    return getattr(a, "itemsize", 0) == 1 and a.dtype in FLOAT8_NP


def astype(a: np.ndarray, dtype: D.dtype) -> np.ndarray:
    """``a`` converted to ``dtype`` as PyTorch converts, a new C-contiguous array: to a float8
    type by ``float8_bits``; from one through its exact float32 values."""
    if type(a) is BF16Array:
        a = a.view(np.ndarray)
    if dtype in D.FLOAT8_TYPES:
        # (ascontiguousarray makes a 0-d array 1-d: the shape is put back)
        return np.ascontiguousarray(D.float8_bits(a, dtype)).reshape(np.shape(a))
    if is_float8(a):
        f = D.float8_values(a, D.from_numpy_dtype(a.dtype))
        return rounded(f) if dtype is D.bfloat16 else f.astype(dtype.np, order="C")
    return rounded(a) if dtype is D.bfloat16 else a.astype(dtype.np, order="C")


def copy_(dst: np.ndarray, src: np.ndarray) -> None:
    """Writes ``src`` (broadcast to ``dst``'s shape) into ``dst`` converted as PyTorch
    converts; one of them float8."""
    np.copyto(dst.view(np.ndarray) if type(dst) is BF16Array else dst,
              astype(np.asarray(src), D.from_numpy_dtype(dst.dtype) if type(dst) is not
                     BF16Array else D.bfloat16), casting="unsafe")


def full(shape, value, dtype: D.dtype) -> np.ndarray:
    """A new array of float8 ``dtype`` filled with ``value`` converted as PyTorch converts."""
    return np.full(shape, D.float8_bits(np.float32(value), dtype), dtype=dtype.np)


def scaled_mm(a: np.ndarray, b: np.ndarray, scale_a: np.ndarray, scale_b: np.ndarray,
              bias: np.ndarray | None, scale_result: np.ndarray | None,
              out_dtype: D.dtype) -> np.ndarray:
    """``(a @ b) * scale_a * scale_b + bias`` over float8 ``a`` (M, K) and ``b`` (K, N), as
    PyTorch's CPU ``_scaled_mm``: the operands' exact values multiplied in float64 (the
    reference the Triton kernel's float32 accumulation is compared with) and rounded to
    float32, scaled (``scale_a``: one value or (M, 1); ``scale_b``: one value or (1, N)),
    plus ``bias`` (N,), divided by ``scale_result`` when ``out_dtype`` is a float8 type, and
    converted to ``out_dtype`` once. Arguments already checked (autograd/ops/float8.py)."""
    fa = D.float8_values(a, D.from_numpy_dtype(a.dtype)).astype(np.float64)
    fb = D.float8_values(b, D.from_numpy_dtype(b.dtype)).astype(np.float64)
    acc = (fa @ fb).astype(np.float32)
    sa, sb = (np.asarray(s, np.float32) for s in (scale_a, scale_b))
    acc = acc * (sa.reshape(()) if sa.size == 1 else sa) * (sb.reshape(()) if sb.size == 1
                                                          else sb)
    if bias is not None:
        acc = acc + (bias.view(np.ndarray) if type(bias) is BF16Array else bias).astype(
            np.float32)
    if scale_result is not None and out_dtype in D.FLOAT8_TYPES:
        acc = acc / np.asarray(scale_result, np.float32).reshape(())
    return astype(np.ascontiguousarray(acc, np.float32), out_dtype)
