"""Ops along one dim that keep its length: ``cumsum`` and ``softmax`` (and log-softmax).

Both see the input as rows (every dim but ``dim``, collapsed, decomposed by div/mod once per
row) of N elements ``dim`` apart, and write a new contiguous array of the input's shape. A
program owns BLOCK_M rows and walks them in BLOCK_N chunks.

cumsum (inclusive; ``reverse`` sums from the end):

    out[m, n] = sum_{j <= n} x[m, j]     (reverse: j >= n)

per chunk: ``tl.cumsum`` of the chunk plus the carry of the chunks before it (after it when
reversed; the chunks are then walked from the end). Accumulates in float32 for
float16/bfloat16, float64 for float64, int64 for integers and bool (whose cumsums are int64).

softmax / log_softmax (numerically stable, as the NumPy backend):

    m = max_n x[n],  s = sum_n exp(x[n] - m)
    softmax = exp(x - m) / s,   log_softmax = (x - m) - log(s)

computed in float32 (float64 for float64). A row of N <= SINGLE_MAX elements is loaded once and
kept in registers; longer rows take three passes (max, sum, write). A row of -inf gives NaN
(-inf - -inf), as PyTorch; a NaN anywhere in a row makes the row NaN, as NumPy.
"""

from __future__ import annotations

import triton.language as tl
from triton.language.extra import libdevice

from ...runtime import dtype as D
from ...runtime import memory as _memory
from . import _launch as L
from ._launch import block_range
from .launcher import Launch, jit
from .memory import astype
from .reduction import _norm_dims, _row_offsets

__all__ = ["cumsum", "softmax"]


@jit
def _cumsum_kernel(
    out_ptr,  # *OUT: the contiguous output; element (m, n) at o_row(m) + n * so_n
    x_ptr,    # *any: the input view; element (m, n) at x_row(m) + n * sx_n
    kshape,   # tuple of KDIM collapsed row sizes, innermost last
    kx, ko,   # tuples of KDIM row strides of x and of out
    M, N, sx_n, so_n,
    ACC: tl.constexpr, KDIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    REVERSE: tl.constexpr, INT64: tl.constexpr,
):
    rows, row_mask = block_range(M, BLOCK_M, INT64)
    x_row = _row_offsets(rows, kshape, kx, KDIM)
    o_row = _row_offsets(rows, kshape, ko, KDIM)
    carry = tl.zeros([BLOCK_M], ACC)
    n_blocks = tl.cdiv(N, BLOCK_N)
    is_end = tl.arange(0, BLOCK_N) == (0 if REVERSE else BLOCK_N - 1)
    for b in range(n_blocks):
        if REVERSE:
            n0 = (n_blocks - 1 - b) * BLOCK_N
        else:
            n0 = b * BLOCK_N
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < N)[None, :]
        v = tl.load(x_ptr + (x_row[:, None] + cols[None, :] * sx_n), mask=mask, other=0)
        v = v.to(ACC)
        c = tl.cumsum(v, axis=1, reverse=REVERSE) + carry[:, None]
        tl.store(out_ptr + (o_row[:, None] + cols[None, :] * so_n), c, mask=mask)
        # The next carry is the chunk's last running sum (its first when reversed; masked lanes
        # add zeros), picked out rather than summed again: `carry += tl.sum(v)` beside the scan
        # crashes Triton 3.6's TritonGPUOptimizeThreadLocality pass for sm_90.
        carry = tl.sum(tl.where(is_end[None, :], c, 0), axis=1)


@jit
def _softmax_kernel(
    out_ptr,  # *T: the contiguous output; element (m, n) at o_row(m) + n * so_n
    x_ptr,    # *T: the input view; element (m, n) at x_row(m) + n * sx_n
    kshape, kx, ko, M, N, sx_n, so_n,  # as in _cumsum_kernel
    ACC: tl.constexpr, KDIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    LOG: tl.constexpr, SINGLE: tl.constexpr, INT64: tl.constexpr,
):
    rows, row_mask = block_range(M, BLOCK_M, INT64)
    x_row = _row_offsets(rows, kshape, kx, KDIM)
    o_row = _row_offsets(rows, kshape, ko, KDIM)
    if SINGLE:  # the whole row in one block
        cols = tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < N)[None, :]
        v = tl.load(x_ptr + (x_row[:, None] + cols[None, :] * sx_n), mask=mask,
                    other=float("-inf")).to(ACC)
        m = tl.max(v, axis=1)
        z = v - m[:, None]
        e = tl.where(mask, libdevice.exp(z), 0.0)
        s = tl.sum(e, axis=1)
        if LOG:
            r = z - libdevice.log(s)[:, None]
        else:
            r = e / s[:, None]
        tl.store(out_ptr + (o_row[:, None] + cols[None, :] * so_n), r, mask=mask)
    else:
        mx = tl.full([BLOCK_M, BLOCK_N], float("-inf"), ACC)
        for n0 in range(0, N, BLOCK_N):
            cols = n0 + tl.arange(0, BLOCK_N)
            mask = row_mask[:, None] & (cols < N)[None, :]
            v = tl.load(x_ptr + (x_row[:, None] + cols[None, :] * sx_n), mask=mask,
                        other=float("-inf")).to(ACC)
            mx = tl.maximum(mx, v)
        m = tl.max(mx, axis=1)
        acc = tl.zeros([BLOCK_M, BLOCK_N], ACC)
        for n0 in range(0, N, BLOCK_N):
            cols = n0 + tl.arange(0, BLOCK_N)
            mask = row_mask[:, None] & (cols < N)[None, :]
            v = tl.load(x_ptr + (x_row[:, None] + cols[None, :] * sx_n), mask=mask,
                        other=float("-inf")).to(ACC)
            acc += tl.where(mask, libdevice.exp(v - m[:, None]), 0.0)
        s = tl.sum(acc, axis=1)
        log_s = libdevice.log(s)
        for n0 in range(0, N, BLOCK_N):
            cols = n0 + tl.arange(0, BLOCK_N)
            mask = row_mask[:, None] & (cols < N)[None, :]
            v = tl.load(x_ptr + (x_row[:, None] + cols[None, :] * sx_n), mask=mask,
                        other=float("-inf")).to(ACC)
            z = v - m[:, None]
            if LOG:
                r = z - log_s[:, None]
            else:
                r = libdevice.exp(z) / s[:, None]
            tl.store(out_ptr + (o_row[:, None] + cols[None, :] * so_n), r, mask=mask)


# ------------------------------------------------------------------------------------------
# Plans
# ------------------------------------------------------------------------------------------
# A plan is the op's ``Launch`` for a (layout, dtype, flags) key, its layout arguments and
# constexprs bound (Note [plan launches]), or None for an empty input.
_PLANS = L.plan_cache()
_NONE = object()  # (a missing plan: None is a plan)
_FACC = {D.float16: tl.float32, D.bfloat16: tl.float32, D.float32: tl.float32,
         D.float64: tl.float64}


def _rows_layout(op, shape, strides, dim, single_max):
    """(kshape, kx, ko, M, N, sx_n, so_n, BLOCK_M, BLOCK_N, single, int64, grid, warps)."""
    ndim = len(shape)
    (dim,) = _norm_dims(op, ndim, (dim,))
    ost = L.contiguous_strides(tuple(shape))
    kept = [i for i in range(ndim) if i != dim]
    kshape, (kx, ko) = L.collapse(tuple(shape[i] for i in kept), tuple(strides[i] for i in kept),
                                  tuple(ost[i] for i in kept))
    if not kshape:
        kshape, kx, ko = (1,), (0,), (0,)
    M = 1
    for n in kshape:
        M *= n
    N = shape[dim]
    single = L.next_pow2(N) <= single_max
    bn = L.next_pow2(N) if single else min(L.next_pow2(N), L.MAX_BLOCK_N)
    bm = min(L.next_pow2(M), max(1, L.ROW_TILE // bn))
    int64 = L.needs_int64(kshape + (N,), kx + (strides[dim],)) or M * N >= L._INT32_SAFE
    return (kshape, kx, ko, M, N, strides[dim], ost[dim], bm, bn, single, int64,
            (L.cdiv(M, bm),), L.num_warps(bm * bn))


def _rows_plan(key, kernel, acc, flags: tuple, single_max: int):
    """The ``Launch`` of ``kernel`` for ``key`` (op, shape, strides, dim, ...), or None when
    there is nothing to launch: ``acc`` is its ACC, ``flags`` its constexprs after BLOCK_N,
    followed by SINGLE when ``single_max`` (rows up to it are loaded once)."""
    kshape, kx, ko, M, N, sx_n, so_n, bm, bn, single, int64, grid, warps = _rows_layout(
        *key[:4], single_max)
    launch = None
    if M and N:
        launch = Launch(kernel, grid, (kshape, kx, ko, M, N, sx_n, so_n, acc, len(kshape), bm,
                                       bn, *flags, *((single,) if single_max else ()), int64),
                        num_warps=warps, **L.EXACT)
    _PLANS[key] = launch
    return launch


def cumsum(a, dim, reverse=False):
    """Inclusive cumulative sum along ``dim`` (from the end when ``reverse``): same dtype for
    floats (float32 accumulation for halves), int64 for integers and bool."""
    L.check_supported("cumsum", a.dtype)
    out_dt = a.dtype if a.dtype.is_floating_point else D.int64
    if a.ndim == 0:
        _norm_dims("cumsum", 0, (dim,))
        return astype(a, out_dt)
    key = ("cumsum", a.shape, a.strides, dim, a.dtype, bool(reverse))
    launch = _PLANS.get(key, _NONE)
    if launch is _NONE:
        launch = _rows_plan(key, _cumsum_kernel, _FACC.get(a.dtype, tl.int64),
                            (bool(reverse),), 0)
    out = _memory.empty(a.shape, out_dt, a.device)
    if launch is not None:
        L.ensure_driver()
        launch(out, a)
    return out


def softmax(a, dim, log=False):
    """softmax (or log_softmax when ``log``) along ``dim``; floating point dtypes, computed in
    float32 (float64 for float64), rounded once."""
    if a.dtype not in _FACC:
        raise L.unsupported("softmax", a.dtype, "floating point only")
    if a.ndim == 0:
        _norm_dims("softmax", 0, (dim,))
        a = a.as_strided((1,), (1,), a.offset)
        r = softmax(a, 0, log)
        return r.as_strided((), (), r.offset)
    key = ("softmax", a.shape, a.strides, dim, a.dtype, bool(log))
    launch = _PLANS.get(key, _NONE)
    if launch is _NONE:
        launch = _rows_plan(key, _softmax_kernel, _FACC[a.dtype], (bool(log),), L.SINGLE_MAX)
    out = _memory.empty(a.shape, a.dtype, a.device)
    if launch is not None:
        L.ensure_driver()
        launch(out, a)
    return out
