"""Reductions, scans and softmax over NumPy arrays.

float16 and bfloat16 accumulate in float32 and round once, as PyTorch's CPU kernels do (NumPy
alone would accumulate half in half). ``dims`` is a sorted tuple of non-negative ints.
"""

from __future__ import annotations

import numpy as np

from .bf16 import BF16Array, round_
from .elementwise import _arr

_ndarray = np.ndarray
_f16 = np.dtype(np.float16)


def _low_precision(a) -> bool:
    return type(a) is BF16Array or a.dtype == _f16


def _up(a):
    """(float32 working copy or view, function mapping a float32 result back to a's dtype)."""
    if type(a) is BF16Array:
        return a.view(_ndarray), lambda r: round_(_arr(r)).view(BF16Array)
    if a.dtype == _f16:
        return a.astype(np.float32), lambda r: _arr(r).astype(np.float16)
    return a, _arr


def sum(a: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:  # noqa: A001
    if a.dtype == _f16:
        # PyTorch accumulates half in float32; NumPy would accumulate in half.
        return _arr(np.sum(a, axis=dims, keepdims=keepdim, dtype=np.float32).astype(np.float16))
    return _arr(np.sum(a, axis=dims, keepdims=keepdim))


# the ufuncs' own reduce (np.max & co. add a Python layer); maximum/minimum propagate NaN
_REDUCE = {"prod": np.multiply.reduce, "amax": np.maximum.reduce, "amin": np.minimum.reduce,
           "all": np.logical_and.reduce, "any": np.logical_or.reduce}


def reduce(op: str, a: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    try:
        fn = _REDUCE[op]
    except KeyError:
        raise ValueError(f"reduce: unknown op {op!r}") from None
    if op == "prod" and _low_precision(a):
        x, back = _up(a)
        return back(np.prod(x, axis=dims, keepdims=keepdim))
    r = _arr(fn(a.view(_ndarray) if type(a) is BF16Array else a, axis=dims, keepdims=keepdim))
    return r.view(BF16Array) if type(a) is BF16Array and op != "all" and op != "any" else r


def argreduce(op: str, a: np.ndarray, dim: int, keepdim: bool) -> np.ndarray:
    fn = np.argmax if op == "argmax" else np.argmin if op == "argmin" else None
    if fn is None:
        raise ValueError(f"argreduce: unknown op {op!r}")
    # NumPy returns the first index among ties, and the first NaN (NaN counts as the extreme)
    return _arr(fn(a.view(_ndarray), axis=dim, keepdims=keepdim)).astype(np.int64, copy=False)


def cumsum(a: np.ndarray, dim: int, reverse: bool = False) -> np.ndarray:
    x, back = _up(a)
    if reverse:
        x = np.flip(x, dim)
    r = np.cumsum(x, axis=dim)
    if reverse:
        r = np.ascontiguousarray(np.flip(r, dim))
    return back(r)


def softmax(a: np.ndarray, dim: int, log: bool = False) -> np.ndarray:
    x, back = _up(a)
    if x.size == 0:
        return back(np.array(x, copy=True))
    m = np.max(x, axis=dim, keepdims=True)
    # A row of -inf gives NaN (as PyTorch); a row holding +inf gives NaN too.
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        z = x - m
        e = np.exp(z)
        s = np.sum(e, axis=dim, keepdims=True)
        r = z - np.log(s) if log else e / s
    return back(r)
