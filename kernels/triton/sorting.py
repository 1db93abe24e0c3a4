"""Sorting along one dim: ``sort(a, dim, descending) -> (values, int64 indices)``, stable.

A rank (counting) sort. The input is seen as rows (every dim but ``dim``, collapsed, as
rowwise.py does) of N elements; program (m, t) owns BLOCK_I elements i of row m and counts,
walking the row in BLOCK_J chunks, how many elements go before each:

    rank(i) = #{j : x[j] before x[i]}  +  #{j < i : x[j] ties x[i]}
    out[rank(i)] = x[i],  indices[rank(i)] = i

"before" is ``<`` (``>`` when descending) with NaN the largest value (as PyTorch and NumPy);
"ties" is ``==`` with NaN tying NaN. Counting the earlier ties makes the ranks a permutation
and the sort stable in both directions, the NumPy backend's order exactly. Every element is
compared with every other one: O(N^2) work per row, no atomics, no shared state between
programs, any length and any strides; rows longer than MAX_N raise (the quadratic cost is
then better paid on the host: sort a CPU copy). float16/bfloat16 compare in float32 (exact),
bool as int8; the values are copied, never converted.
"""

from __future__ import annotations

import triton.language as tl

from ...runtime import dtype as D
from ...runtime import memory as _memory
from . import _launch as L
from ._launch import block_range
from .launcher import Launch, jit
from .memory import astype, full
from .reduction import _row_offsets
from .rowwise import _rows_layout

__all__ = ["sort"]

BLOCK_I = 64  # elements ranked per program
BLOCK_J = 64  # elements compared against them per step
MAX_N = 1 << 18  # longest row sorted on the device (the work grows as N^2)
_PLANS = L.plan_cache()  # (shape, strides, dim, dtype, descending) -> the sort's Launch
_EMPTY = object()  # the plan of a sort with nothing to sort (kept too)


@jit
def _rank_sort_kernel(
    out_ptr,  # *T: the contiguous values out; element (m, r) at o_row(m) + r * so_n
    idx_ptr,  # *int64: the contiguous indices out, same layout as out
    x_ptr,    # *T: the input view; element (m, n) at x_row(m) + n * sx_n
    kshape,   # tuple of KDIM collapsed row sizes, innermost last
    kx, ko,   # tuples of KDIM row strides of x and of out
    M, N, sx_n, so_n,
    CT: tl.constexpr, IS_FLOAT: tl.constexpr, DESCENDING: tl.constexpr, KDIM: tl.constexpr,
    BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr, INT64: tl.constexpr,
):
    row, _ = block_range(M, 1, INT64)  # one row per program along axis 0
    x_row = _row_offsets(row, kshape, kx, KDIM)
    o_row = _row_offsets(row, kshape, ko, KDIM)
    i = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
    if INT64:
        i = i.to(tl.int64)
    i_mask = i < N
    xi_raw = tl.load(x_ptr + (x_row + i * sx_n), mask=i_mask)
    b = xi_raw.to(CT)[:, None]
    rank = tl.zeros([BLOCK_I], tl.int64)
    for j0 in range(0, N, BLOCK_J):
        j = j0 + tl.arange(0, BLOCK_J)
        if INT64:
            j = j.to(tl.int64)
        j_mask = j < N
        a = tl.load(x_ptr + (x_row + j * sx_n), mask=j_mask, other=0).to(CT)[None, :]
        if DESCENDING:
            before = a > b
        else:
            before = a < b
        ties = a == b
        if IS_FLOAT:  # NaN is the largest value and ties NaN
            a_nan = a != a  # noqa: PLR0124 - the NaN test inside a kernel
            b_nan = b != b  # noqa: PLR0124
            if DESCENDING:
                before = before | (a_nan & ~b_nan)
            else:
                before = before | (b_nan & ~a_nan)
            ties = ties | (a_nan & b_nan)
        first = before | (ties & (j[None, :] < i[:, None]))
        first = first & j_mask[None, :]
        rank += tl.sum(first.to(tl.int64), axis=1)
    o = o_row + rank * so_n
    tl.store(out_ptr + o, xi_raw, mask=i_mask)
    tl.store(idx_ptr + o, i.to(tl.int64), mask=i_mask)


# the type elements are compared in: halves widen exactly to float32, bool to int8
_COMPARE = {D.float16: tl.float32, D.bfloat16: tl.float32, D.bool: tl.int8}


def _plan(key) -> Launch:
    """The sort's ``Launch`` for ``key`` (``_EMPTY`` when there is nothing to sort), kept."""
    shape, strides, dim, dtype, descending = key
    kshape, kx, ko, M, N, sx_n, so_n, *_ = _rows_layout("sort", shape, strides, dim, 0)
    if N > MAX_N:
        raise RuntimeError(f"sort: a row of {N} elements is longer than the Triton backend's "
                           f"limit of {MAX_N} (the rank sort's work grows as N^2); sort a CPU "
                           f"copy instead")
    if M == 0 or N == 0:
        _PLANS[key] = _EMPTY
        return _EMPTY
    bi = min(BLOCK_I, max(16, L.next_pow2(N)))
    bj = min(BLOCK_J, max(16, L.next_pow2(N)))
    int64 = L.needs_int64(kshape + (N,), kx + (sx_n,)) or M * N >= L._INT32_SAFE
    launch = _PLANS[key] = Launch(_rank_sort_kernel, (M, L.cdiv(N, bi)), (
        kshape, kx, ko, M, N, sx_n, so_n, _COMPARE.get(dtype, L.TL[dtype]),
        dtype.is_floating_point, descending, len(kshape), bi, bj, int64), num_warps=4)
    return launch


def sort(a, dim, descending):
    """(values, int64 indices) of ``a`` sorted along ``dim``: stable, NaN the largest value;
    both new contiguous arrays of a's shape."""
    L.check_supported("sort", a.dtype)
    if a.ndim == 0:  # one element: itself, at index 0
        return astype(a, a.dtype), full((), 0, D.int64, a.device)
    launch = _PLANS.get(key := (a.shape, a.strides, dim, a.dtype, bool(descending)))
    if launch is None:
        launch = _plan(key)
    out = _memory.empty(a.shape, a.dtype, a.device)
    idx = _memory.empty(a.shape, D.int64, a.device)
    if launch is not _EMPTY:
        L.ensure_driver()
        launch(out, idx, a)
    return out, idx
    key = (a.shape, a.strides, dim, a.dtype, bool(descending))
    launch = _PLANS.get(key)
    if launch is None:
        bi = min(BLOCK_I, max(16, L.next_pow2(N)))
        bj = min(BLOCK_J, max(16, L.next_pow2(N)))
        int64 = L.needs_int64(kshape + (N,), kx + (sx_n,)) or M * N >= L._INT32_SAFE
        launch = _PLANS[key] = Launch(_rank_sort_kernel, (M, L.cdiv(N, bi)), (
            kshape, kx, ko, M, N, sx_n, so_n, _COMPARE.get(a.dtype, L.TL[a.dtype]),
            a.dtype.is_floating_point, bool(descending), len(kshape), bi, bj, int64),
            num_warps=4)
    L.ensure_driver()
    launch(out, idx, a)
    return out, idx
