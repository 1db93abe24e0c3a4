"""Reductions: ``sum``, ``reduce`` (prod amax amin all any) and ``argreduce`` (argmax argmin)
over any dims of any strided array.

One kernel folds one (collapsed) dimension of a strided view with a constexpr op:

    out[m, s] = fold_{n in chunk s} x[row_off(m) + n * stride_n]      (in the accumulator ACC)

    sum: +, 0    prod: *, 1    amax: max, -inf    amin: min, +inf    (NaN propagates)
    all: min(x != 0), 1        any: max(x != 0), 0

m runs over the kept elements (their dims collapsed, decomposed by div/mod once per row), s over
``n_split`` chunks of the reduced range. Each lane of a [BLOCK_M, BLOCK_N] tile folds its own
column of the chunk, then the tile folds along n once at the end. ACC is float32 for float16,
bfloat16 and float32 (PyTorch's accumulate type), float64 for float64, int64 for integers and
bool (sums and products of integers are int64 as in PyTorch; NumPy gives uint64 for uint8),
int32 for all/any. The result is cast once at the store. argmax/argmin fold (value, index)
pairs the same way: the larger (smaller) value wins, a NaN beats any number, ties go to the
lower index, so the result is NumPy's: the first extreme, the first NaN.

A reduction is one or more launches of that kernel, planned once per (shape, strides, dims,
dtype):

- the reduced dims, after dropping size-1 dims, usually collapse into one strided dim (sum over
  the last dims, over the first dims, over everything of a dense array): one pass;
- when they do not (dims (0, 2) of a contiguous (A, B, C)), the reduced dim with the smallest
  stride is folded first into a contiguous ACC intermediate, and the plan repeats on it;
- when the kept elements give too few programs to fill the GPU (a full sum, a column sum of a
  tall matrix), the reduced range is split into ``n_split`` chunks written as ACC partials
  (M, n_split), and one more pass folds those (the two-stage reduction, without atomics, so
  results are deterministic).

Tiles are wide along n when the reduced dim is the contiguous one (row sums) and wide along m
when the kept inner dim is (column sums), so loads stay coalesced.
"""

from __future__ import annotations

import triton.language as tl

from ...runtime import dtype as D
from ...runtime import memory as _memory
from ...runtime.array import contiguous_strides
from . import _launch as L
from .launcher import Launch, jit
from .memory import astype, full

__all__ = ["argreduce", "reduce", "sum"]

# Heuristics of this family (module globals so tests can shrink them; call
# _launch.clear_plans() after). A program's accumulator tile is _launch.TILE elements, at most
# _launch.MAX_BLOCK_N along the reduced dim.
MAX_BLOCK_M = 256        # widest block along kept elements (column sums)
TARGET_PROGRAMS = 1056   # 8 per SM of 132 (H100/H200): below this, split the reduced range.
#                          264 (2 per SM) left too few loads in flight: on an H200 a column
#                          sum ran at 0.30 and a full sum at 0.46 of a device copy
#                          (2026-11-29); 8 resident programs per SM is the occupancy limit
#                          for 8-warp programs
MIN_ITERS = 4            # ... but give every split at least this many BLOCK_N iterations
SPLIT_MIN = 1 << 19      # ... and split only where an unsplit program would fold at least
#                          this many elements (2 MiB of float32, some 20-40 us for one SM):
#                          below it the second pass's launch costs about what the split saves,
#                          and small steps are bound by launches (a GPT step's bias and layer
#                          norm column sums, 1024 x 128-512: 14 of its 19 sums took 2 launches).
#                          Not measured on a GPU yet: perf/bench_knobs.py times it against 0


@jit
def _fmax(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@jit
def _fmin(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@jit
def _imax(a, b):
    return tl.maximum(a, b)


@jit
def _imin(a, b):
    return tl.minimum(a, b)


@jit
def _mul(a, b):
    return a * b


@jit
def _fold(a, b, OP: tl.constexpr):
    if OP == "sum":
        r = a + b
    elif OP == "prod":
        r = a * b
    elif OP == "amax":
        r = _fmax(a, b)
    elif OP == "amin":
        r = _fmin(a, b)
    elif OP == "iamax" or OP == "any":
        r = _imax(a, b)
    else:  # "iamin", "all"
        r = _imin(a, b)
    return r


@jit
def _nan_max(acc, IS_MAX: tl.constexpr):
    # max/min along axis 1 that is NaN where any element is (tl.max alone may skip NaNs)
    if IS_MAX:
        m = tl.max(acc, axis=1)
    else:
        m = tl.min(acc, axis=1)
    has_nan = tl.max((acc != acc).to(tl.int32), axis=1) > 0  # noqa: PLR0124 - NaN test
    return tl.where(has_nan, float("nan"), m)


@jit
def _fold_rows(acc, OP: tl.constexpr):
    # built-in reductions where there is one (fast in the interpreter too)
    if OP == "sum":
        r = tl.sum(acc, axis=1)
    elif OP == "prod":
        r = tl.reduce(acc, 1, _mul)
    elif OP == "amax":
        r = _nan_max(acc, True)
    elif OP == "amin":
        r = _nan_max(acc, False)
    elif OP == "iamax" or OP == "any":
        r = tl.max(acc, axis=1)
    else:
        r = tl.min(acc, axis=1)
    return r


@jit
def _row_offsets(rows, kshape, kst, KDIM: tl.constexpr):
    # Splits row indices over the kept dims (innermost last; the outermost needs no modulo
    # since rows < prod(kshape)) and sums index * stride.
    off = tl.zeros_like(rows)
    rem = rows
    for d in tl.static_range(KDIM - 1, -1, -1):
        if d == 0:
            idx = rem
        else:
            idx = rem % kshape[d]
            rem = rem // kshape[d]
        off += idx * kst[d]
    return off


@jit
def _split_rows(kshape, kst, M, N, chunk, n_split, KDIM: tl.constexpr, BLOCK_M: tl.constexpr,
                INT64: tl.constexpr):
    # A program's share of a split reduction: BLOCK_M kept rows (their offsets and mask),
    # its split's index and its range [n_lo, n_hi) of the reduced dim.
    pid = tl.program_id(0)
    if INT64:
        pid = pid.to(tl.int64)
    pid_m = pid // n_split
    pid_s = pid - pid_m * n_split
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    n_lo = pid_s * chunk
    return (rows, _row_offsets(rows, kshape, kst, KDIM), rows < M, pid_s, n_lo,
            tl.minimum(n_lo + chunk, N))


@jit
def _reduce_kernel(
    out_ptr,   # *OUT: (M, n_split) contiguous results (partials when n_split > 1), written
    x_ptr,     # *any: the input view; element (m, n) at row_off(m) + n * stride_n
    kshape,    # tuple of KDIM collapsed kept sizes, innermost last
    kst,       # tuple of KDIM element strides of the kept dims
    M,         # number of kept elements (rows)
    N,         # length of the reduced dim
    stride_n,  # element stride of the reduced dim
    chunk,     # reduced elements per split (a multiple of BLOCK_N unless n_split == 1)
    n_split,   # number of splits of the reduced range
    OP: tl.constexpr, IDENT: tl.constexpr, ACC: tl.constexpr, KDIM: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr,
):
    rows, row_off, row_mask, pid_s, n_lo, n_hi = _split_rows(
        kshape, kst, M, N, chunk, n_split, KDIM, BLOCK_M, INT64)
    acc = tl.full([BLOCK_M, BLOCK_N], IDENT, ACC)
    for n0 in range(n_lo, n_hi, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < n_hi)[None, :]
        v = tl.load(x_ptr + (row_off[:, None] + cols[None, :] * stride_n), mask=mask, other=0)
        if OP == "all" or OP == "any":
            v = (v != 0).to(ACC)
        else:
            v = v.to(ACC)
        acc = _fold(acc, tl.where(mask, v, IDENT), OP)
    tl.store(out_ptr + (rows * n_split + pid_s), _fold_rows(acc, OP), mask=row_mask)


@jit
def _argfold(v1, i1, v2, i2, IS_MAX: tl.constexpr):
    # (v1, i1) if it beats (v2, i2): more extreme, or NaN against a number, or equal (both NaN
    # counts as equal) with a lower index.
    n1 = v1 != v1  # noqa: PLR0124 - the NaN test inside a kernel
    n2 = v2 != v2  # noqa: PLR0124
    if IS_MAX:
        strict = (v1 > v2) | (n1 & ~n2)
    else:
        strict = (v1 < v2) | (n1 & ~n2)
    better = strict | (((v1 == v2) | (n1 & n2)) & (i1 < i2))
    return tl.where(better, v1, v2), tl.where(better, i1, i2)


@jit
def _arg_finish(best_v, best_i, IS_MAX: tl.constexpr, FLOAT: tl.constexpr):
    # The winner of each row's lanes with built-in reductions: the extreme value (NaN if any
    # lane holds NaN), then the lowest index among the lanes holding it.
    if IS_MAX:
        m = tl.max(best_v, axis=1)
    else:
        m = tl.min(best_v, axis=1)
    if FLOAT:
        lane_nan = best_v != best_v  # noqa: PLR0124 - NaN test
        any_nan = tl.max(lane_nan.to(tl.int32), axis=1) > 0
        hit = tl.where(any_nan[:, None], lane_nan, best_v == m[:, None])
        m = tl.where(any_nan, float("nan"), m)
    else:
        hit = best_v == m[:, None]
    wi = tl.min(tl.where(hit, best_i, 2**62), axis=1)
    return m, wi


@jit
def _argreduce_kernel(
    out_ptr,   # *int64: (M, n_split) indices of the winners, written
    val_ptr,   # *ACC: (M, n_split) winning values, written when n_split > 1, else None
    x_ptr,     # *any: the input view; element (m, n) at row_off(m) + n * stride_n
    xi_ptr,    # *int64: indices laid out like x (a second pass over partials), or None
    kshape, kst, M, N, stride_n, chunk, n_split,  # as in _reduce_kernel
    IS_MAX: tl.constexpr, FLOAT: tl.constexpr, IDENT: tl.constexpr, ACC: tl.constexpr,
    KDIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr,
):
    rows, row_off, row_mask, pid_s, n_lo, n_hi = _split_rows(
        kshape, kst, M, N, chunk, n_split, KDIM, BLOCK_M, INT64)
    best_v = tl.full([BLOCK_M, BLOCK_N], IDENT, ACC)
    lane = tl.arange(0, BLOCK_N)
    if xi_ptr is None:
        # Note [argmax lanes]: each lane meets its columns in increasing order, so a strictly
        # better value is the only reason to move: a tie keeps the lane's earlier (lower)
        # index, and a lane that never moves keeps its first column, the lowest index of a
        # row that is all IDENT (-inf for argmax). No index tile is loaded or built per step
        # (with the generic fold below, now only the partials' pass, argmax ran at 0.53 of a
        # device copy on an H200, 2026-11-30).
        best_i = tl.broadcast_to((n_lo + lane)[None, :], [BLOCK_M, BLOCK_N])
        for n0 in range(n_lo, n_hi, BLOCK_N):
            cols = n0 + lane
            mask = row_mask[:, None] & (cols < n_hi)[None, :]
            v = tl.load(x_ptr + (row_off[:, None] + cols[None, :] * stride_n), mask=mask,
                        other=0).to(ACC)
            if IS_MAX:
                better = v > best_v
            else:
                better = v < best_v
            if FLOAT:  # the first NaN wins (v != v: NaN)
                better = better | ((v != v) & (best_v == best_v))  # noqa: PLR0124
            better = better & mask
            best_v = tl.where(better, v, best_v)
            best_i = tl.where(better, cols[None, :], best_i)
        best_i = best_i.to(tl.int64)
    else:
        best_i = tl.full([BLOCK_M, BLOCK_N], 2**62, tl.int64)
        for n0 in range(n_lo, n_hi, BLOCK_N):
            cols = n0 + lane
            mask = row_mask[:, None] & (cols < n_hi)[None, :]
            offs = row_off[:, None] + cols[None, :] * stride_n
            v = tl.load(x_ptr + offs, mask=mask, other=0).to(ACC)
            idx = tl.load(xi_ptr + offs, mask=mask, other=0)
            nv, ni = _argfold(v, idx, best_v, best_i, IS_MAX)
            best_v = tl.where(mask, nv, best_v)
            best_i = tl.where(mask, ni, best_i)
    wv, wi = _arg_finish(best_v, best_i, IS_MAX, FLOAT)
    dst = rows * n_split + pid_s
    tl.store(out_ptr + dst, wi, mask=row_mask)
    if val_ptr is not None:
        tl.store(val_ptr + dst, wv, mask=row_mask)


# ------------------------------------------------------------------------------------------
# Plans
# ------------------------------------------------------------------------------------------
_PLANS = L.plan_cache()
_FACC = {D.float16: (tl.float32, D.float32), D.bfloat16: (tl.float32, D.float32),
         D.float32: (tl.float32, D.float32), D.float64: (tl.float64, D.float64)}
_OPS = ("sum", "prod", "amax", "amin", "all", "any")
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _blocks(M, N, stride_n, kst):
    if stride_n == 1 or not kst or kst[-1] != 1:
        bn = min(L.next_pow2(N), L.MAX_BLOCK_N, L.TILE)
        bm = min(L.next_pow2(M), max(1, L.TILE // bn))
    else:  # the kept inner dim is the contiguous one: wide along m
        bm = min(L.next_pow2(M), MAX_BLOCK_M, L.TILE)
        bn = min(L.next_pow2(N), max(1, L.TILE // bm))
    return bm, bn


def _pass(kept, N, stride_n, splittable=True):
    """Launch steps folding one strided dim (N, stride_n) for the kept (size, stride) dims:
    one step, or two when the reduced range is split. A step is (kshape, kst, M, N, stride_n,
    chunk, n_split, BLOCK_M, BLOCK_N, int64, grid, warps)."""
    if kept:
        kshape, (kst,) = L.collapse(tuple(n for n, _ in kept), tuple(s for _, s in kept))
    else:
        kshape, kst = (), ()
    if not kshape:
        kshape, kst = (1,), (0,)
    M = 1
    for n in kshape:
        M *= n
    bm, bn = _blocks(M, N, stride_n, kst)
    m_progs = L.cdiv(M, bm)
    n_split, chunk = 1, N
    if (splittable and m_progs < TARGET_PROGRAMS and N >= 2 * MIN_ITERS * bn
            and N * bm >= SPLIT_MIN):
        want = min(L.cdiv(TARGET_PROGRAMS, m_progs), N // (MIN_ITERS * bn))
        chunk = L.cdiv(L.cdiv(N, want), bn) * bn
        n_split = L.cdiv(N, chunk)
        if n_split == 1:
            chunk = N
    int64 = (L.needs_int64(kshape + (N,), kst + (stride_n,))
             or M * n_split >= L._INT32_SAFE)
    steps = [(kshape, kst, M, N, stride_n, chunk, n_split, bm, bn, int64,
              (m_progs * n_split,), L.num_warps(bm * bn))]
    if n_split > 1:
        steps += _pass([(M, n_split)], n_split, 1)
    return steps


def _norm_dims(op, ndim, dims):
    lim = max(ndim, 1)  # a 0-d array accepts dim 0 / -1, as PyTorch
    if any(not -lim <= d < lim for d in dims):
        raise ValueError(f"{op}: dims {tuple(dims)} are out of range for a {ndim}-d array")
    return tuple(sorted({d % ndim for d in dims})) if ndim else ()


def _plan(key):
    op, shape, strides, dims, dtype = key
    L.check_supported(op, dtype)
    f = dtype.is_floating_point
    if op in ("all", "any"):
        acc_tl, acc_dt, out_dt = tl.int32, D.int32, D.bool
    elif f:
        acc_tl, acc_dt = _FACC[dtype]
        out_dt = dtype
    else:
        acc_tl, acc_dt = tl.int64, D.int64
        out_dt = dtype if op in ("amax", "amin") else D.int64
    kop = ("i" + op) if (op in ("amax", "amin") and not f) else op
    ident = {"sum": 0, "prod": 1, "all": 1, "any": 0, "amax": float("-inf"),
             "amin": float("inf"), "iamax": _I64_MIN, "iamin": _I64_MAX}[kop]
    if f and kop in ("sum", "prod"):
        ident = float(ident)
    ndim = len(shape)
    dims = _norm_dims(op, ndim, dims)
    kept_shape = tuple(n for i, n in enumerate(shape) if i not in dims)
    kept_strides = tuple(s for i, s in enumerate(strides) if i not in dims)
    keep_shape = tuple(1 if i in dims else n for i, n in enumerate(shape))
    N = 1
    for d in dims:
        N *= shape[d]
    M = 1
    for n in kept_shape:
        M *= n
    if N == 0 and M and op in ("amax", "amin"):
        raise ValueError(f"{op}: cannot reduce over zero elements (no identity)")
    # steps run on [input, intermediate 1, ...]; cur: (size, stride, reduced?) with size > 1
    cur = [(n, s, i in dims) for i, (n, s) in enumerate(zip(shape, strides)) if n != 1]
    steps = []
    if M and N:
        while any(r for _, _, r in cur):
            red = [(n, s) for n, s, r in cur if r]
            rshape, (rst,) = L.collapse(tuple(n for n, _ in red), tuple(s for _, s in red))
            if len(rshape) == 1:
                steps += _pass([(n, s) for n, s, r in cur if not r], rshape[0], rst[0])
                break
            j = min((abs(s), i) for i, (n, s, r) in enumerate(cur) if r)[1]
            rest = [d for i, d in enumerate(cur) if i != j]
            steps += _pass([(n, s) for n, s, _ in rest], cur[j][0], cur[j][1])
            cst = contiguous_strides(tuple(n for n, _, _ in rest))
            cur = [(n, s, r) for (n, _, r), s in zip(rest, cst)]
    # per step: its launch, the step's layout and the op's constexprs bound (Note [plan
    # launches]), and the elements of the partial results it writes (0: the last step, which
    # writes the output)
    passes = tuple((Launch(_reduce_kernel, grid, (kshape, kst, m, n, stride_n, chunk, n_split, kop,
                                                  ident, acc_tl, len(kshape), bm, bn, int64),
                           num_warps=warps), m * n_split if i < len(steps) - 1 else 0)
                   for i, (kshape, kst, m, n, stride_n, chunk, n_split, bm, bn, int64, grid,
                           warps) in enumerate(steps))
    plan = (steps, kept_strides, keep_shape, kept_shape, M, N, out_dt, acc_tl, acc_dt, kop,
            ident, passes)
    _PLANS[key] = plan
    return plan


def _reduce(op, a, dims, keepdim):
    key = (op, a.shape, a.strides, tuple(dims), a.dtype)
    plan = _PLANS.get(key) or _plan(key)
    steps, kept_strides, keep_shape, kept_shape, M, N, out_dt, _, acc_dt, _, ident, passes = \
        plan
    out_shape = keep_shape if keepdim else kept_shape
    if not steps:
        if M == 0:
            return _memory.empty(out_shape, out_dt, a.device)
        if N == 0:
            return full(out_shape, ident if op != "sum" else 0, out_dt, a.device)
        # every reduced dim has size 1: the kept view, converted
        view = a.as_strided(out_shape, a.strides if keepdim else kept_strides, a.offset)
        return astype(view, out_dt) if op not in ("all", "any") else _truth(view)
    L.ensure_driver()
    x = a
    device = a.device
    for launch, partials in passes:
        out = (_memory.empty((partials,), acc_dt, device) if partials else
               _memory.empty(out_shape, out_dt, device))
        launch(out, x)
        x = out
    return out


def _truth(view):
    from .elementwise_ops import ne

    return ne(view, 0)


def sum(a, dims, keepdim):
    """Sums ``a`` over ``dims`` (a sorted tuple of non-negative ints); () sums nothing and
    returns a copy, as NumPy. float16/bfloat16 accumulate in float32; integers and bool sum
    to int64."""
    return _reduce("sum", a, dims, keepdim)


def reduce(op, a, dims, keepdim):
    """prod, amax, amin (NaN propagates), all, any (-> bool) over ``dims``. prod of empty dims
    is 1, all True, any False; amax/amin need non-empty reduced dims."""
    if op not in _OPS[1:]:
        raise ValueError(f"reduce: unknown op {op!r}; expected one of {', '.join(_OPS[1:])}")
    return _reduce(op, a, dims, keepdim)


# -- argreduce -------------------------------------------------------------------------------
def _arg_plan(key):
    op, shape, strides, dim, dtype = key
    L.check_supported(op, dtype)
    ndim = len(shape)
    (dim,) = _norm_dims(op, ndim, (dim,)) or (0,)
    f = dtype.is_floating_point
    acc_tl, acc_dt = _FACC[dtype] if f else (tl.int64, D.int64)
    is_max = op == "argmax"
    if f:
        ident = float("-inf") if is_max else float("inf")
    else:
        ident = _I64_MIN if is_max else _I64_MAX
    kept = [(n, s) for i, (n, s) in enumerate(zip(shape, strides)) if i != dim]
    N = shape[dim] if ndim else 1
    keep_shape = tuple(1 if i == dim else n for i, n in enumerate(shape))
    kept_shape = tuple(n for i, n in enumerate(shape) if i != dim)
    M = 1
    for n, _ in kept:
        M *= n
    if N == 0 and M:
        raise ValueError(f"{op}: attempt to get {op} of an empty sequence")
    stride_n = strides[dim] if ndim else 0
    steps = _pass(kept, N, stride_n) if (M and N) else []
    plan = (steps, keep_shape, kept_shape, is_max, ident, acc_tl, acc_dt)
    _PLANS[key] = plan
    return plan


def argreduce(op, a, dim, keepdim):
    """Index (int64) of the largest (argmax) or smallest (argmin) element along ``dim``: the
    first among ties; a NaN counts as the extreme, the first NaN wins."""
    if op not in ("argmax", "argmin"):
        raise ValueError(f"argreduce: unknown op {op!r}; expected argmax or argmin")
    key = (op, a.shape, a.strides, dim, a.dtype)
    plan = _PLANS.get(key) or _arg_plan(key)
    steps, keep_shape, kept_shape, is_max, ident, acc_tl, acc_dt = plan
    out_shape = keep_shape if keepdim else kept_shape
    if not steps:
        out = _memory.empty(out_shape, D.int64, a.device)
        return full(out_shape, 0, D.int64, a.device) if a.numel else out
    L.ensure_driver()
    x, xi = a, None
    last = len(steps) - 1
    for i, (kshape, kst, m, n, stride_n, chunk, n_split, bm, bn, int64, grid,
            warps) in enumerate(steps):
        if i == last:
            out, vals = _memory.empty(out_shape, D.int64, a.device), None
        else:
            out = _memory.empty((m * n_split,), D.int64, a.device)
            vals = _memory.empty((m * n_split,), acc_dt, a.device)
        _argreduce_kernel[grid](out, vals, x, xi, kshape, kst, m, n, stride_n, chunk, n_split,
                                is_max, a.dtype.is_floating_point, ident, acc_tl,
                                len(kshape), bm, bn, int64, num_warps=warps)
        x, xi = vals, out
    return out
