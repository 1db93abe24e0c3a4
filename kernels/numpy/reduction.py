"""Reductions, scans and softmax over NumPy arrays.

float16 and bfloat16 accumulate in float32 and round once, as PyTorch's CPU kernels do (NumPy
alone would accumulate half in half). ``dims`` is a sorted tuple of non-negative ints.
"""

from __future__ import annotations

import math

import numpy as np

from .bf16 import BF16Array, round_
from .elementwise import _arr
from .memory import contiguous

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


# Note [Reductions are C-contiguous]
#   PyTorch allocates a reduction's or a scan's result contiguous whatever the input's layout,
#   so ``x.transpose(1, 2).sum(-1).view(n, -1)`` works; NumPy's reduce and accumulate follow the
#   input's axis order instead. A result of a non-contiguous input is copied to C order (the
#   reduced result is the small side; a C-contiguous input gives a C-contiguous result).


def _c_order(r, a) -> np.ndarray:
    """``r`` (a reduction or scan of ``a``) in C order: Note [Reductions are C-contiguous]."""
    return r if a.flags.c_contiguous else contiguous(r)


def sum(a: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    if a.dtype == _f16:
        # PyTorch accumulates half in float32; NumPy would accumulate in half.
        # (the rounding copy is the C-order one: Note [Reductions are C-contiguous])
        return _arr(_add_reduce(a, dims, np.float32, None, keepdim).astype(np.float16,
                                                                          order="C"))
    if type(a) is _ndarray:
        if a.dtype in _BLAS and 0 < len(dims) < a.ndim and a.size and a.flags.c_contiguous:
            r = _blas_sum(a, dims, keepdim)
            if r is not None:
                return r
        return _c_order(_arr(_add_reduce(a, dims, None, None, keepdim)), a)
    return _c_order(_arr(np.sum(a, axis=dims, keepdims=keepdim)), a)


# the ufunc's reduce rather than np.sum's Python wrapper: one frame fewer, and inf + -inf's
# NaN stays silent (Note [Floating-point warnings]); the same dtypes as np.sum
_add_reduce = np.add.reduce
_BLAS = (np.dtype(np.float32), np.dtype(np.float64))
_ONES: dict = {}


def _ones(n: int, dtype) -> np.ndarray:
    """A read-only vector of n ones (a view of a cached one, grown as needed)."""
    ones = _ONES.get(dtype)
    if ones is None or ones.size < n:
        ones = _ONES[dtype] = np.ones(max(n, 1024), dtype)
        ones.flags.writeable = False
    return ones[:n]


def _blas_sum(a: np.ndarray, dims: tuple, keepdim: bool):
    """The sum of contiguous float ``a`` over leading dims (bias gradients: ``sum_to``),
    trailing dims, or both (a batch norm's (0, 2, 3)) as one or two BLAS matrix-vector
    products with ones: 2-4x NumPy's ``sum`` over an outer axis (e.g. 5 against 22 us for
    1024 x 128) and no less accurate (its blocked partial sums beat a row-by-row
    accumulation). None for other dims."""
    shape, nd = a.shape, a.ndim
    lead = 0
    while lead < len(dims) and dims[lead] == lead:
        lead += 1
    trail = len(dims) - lead
    if dims[lead:] != tuple(range(nd - trail, nd)):
        return None
    # the last product writes into the result's own (base-less) array: a view of a temporary
    # would cost a copy where backward hands a gradient over as a leaf's .grad (Note
    # [Gradient stealing] in autograd/engine.py)
    out = np.empty(tuple(1 if i in dims else d for i, d in enumerate(shape)) if keepdim
                   else shape[lead:nd - trail], a.dtype)
    flat = out.reshape(-1)
    r = a
    if trail:
        r = a.reshape(math.prod(shape[:nd - trail]), -1)
        r = np.matmul(r, _ones(r.shape[1], a.dtype), out=None if lead else flat)
    if lead:
        r = r.reshape(math.prod(shape[:lead]), -1)
        np.matmul(_ones(r.shape[0], a.dtype), r, out=flat)
    return out


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
        return _c_order(back(fn(x, axis=dims, keepdims=keepdim)), a)
    r = _c_order(_arr(fn(a.view(_ndarray) if type(a) is BF16Array else a, axis=dims,
                         keepdims=keepdim)), a)
    return r.view(BF16Array) if type(a) is BF16Array and op != "all" and op != "any" else r


def argreduce(op: str, a: np.ndarray, dim: int, keepdim: bool) -> np.ndarray:
    fn = np.argmax if op == "argmax" else np.argmin if op == "argmin" else None
    if fn is None:
        raise ValueError(f"argreduce: unknown op {op!r}")
    x = a.view(_ndarray)
    if 1 < x.ndim and 1 < x.shape[dim] <= _SHORT and x.size >= 64 * x.shape[dim]:
        return _short_argreduce(op == "argmax", x, dim, keepdim)
    # NumPy returns the first index among ties, and the first NaN (NaN counts as the extreme)
    return _arr(fn(x, axis=dim, keepdims=keepdim)).astype(np.int64, copy=False)


# np.argmax over a short axis (a pooling window's 4 or 9 taps) runs its loop once per output
# element: ~15 ns each, 0.46 ms for the (64, 32, 4, 16) windows of a 2x2 pool. Up to _SHORT
# entries the axis is walked instead, each step a few vectorised passes over the outputs.
_SHORT = 16


def _short_argreduce(is_max: bool, x: np.ndarray, dim: int, keepdim: bool) -> np.ndarray:
    """argmax/argmin along a short ``dim``, as NumPy's: the first index among ties (only a
    strictly better entry moves the index). A NaN (NumPy's extreme, taken at its first
    place) leaves a NaN in the running extreme: those rare outputs are redone by NumPy."""
    taps = np.moveaxis(x, dim, 0)
    best = taps[0].copy()
    idx = np.zeros(best.shape, np.int64)
    step = np.empty(best.shape, np.int64)
    better = np.greater if is_max else np.less
    keep = np.maximum if is_max else np.minimum
    for j in range(1, taps.shape[0]):
        v = taps[j]
        # j exceeds every index taken so far: the index moves to j exactly where v is better
        np.maximum(idx, np.multiply(better(v, best), j, out=step), out=idx)
        keep(best, v, out=best)
    if x.dtype.kind in "fc":
        nan = np.isnan(best)
        if nan.any():
            fn = np.argmax if is_max else np.argmin
            idx[nan] = fn(np.moveaxis(taps, 0, -1)[nan], axis=-1)
    return np.expand_dims(idx, dim) if keepdim else idx


def cumsum(a: np.ndarray, dim: int, reverse: bool = False) -> np.ndarray:
    x, back = _up(a)
    if reverse:
        x = np.flip(x, dim)
    r = np.add.accumulate(x, axis=dim)  # (np.cumsum's dtypes, without its Python wrapper)
    if reverse:
        r = np.ascontiguousarray(np.flip(r, dim))
    return back(_c_order(r, x))


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
