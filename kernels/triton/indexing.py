"""Indexing by integer arrays: ``index`` (advanced indexing), ``index_put_``, ``gather``,
``scatter_`` and ``nonzero``.

Two kernels move the data, both over a flat range of "result" positions p (the shape of
a[indices], or of gather/scatter's index), each p decomposed once into a multi-index i:

    gather:   out[p]                  = src[src_off(i) + idx[idx_off(i)] * scale]
    scatter:  dst[dst_off(i) + idx[idx_off(i)] * scale]  (=  or  +=)  val[val_off(i)] | s

``*_off(i)`` are strided offsets (zero strides where a dim does not apply). For
``index(a, (i0, None, i2))`` the index arrays are first folded into one int64 array of linear
offsets ``sum_k ik * a.strides[k]`` (scale 1; with a single index array it is used directly,
scale = that dim's stride); the dims a keeps are the src/dst strides. For gather/scatter along
``dim`` the index is the user's and scale = a.strides[dim].

``+=`` uses atomic adds for float32, float64, int32 and int64, so duplicate indices all sum (in
an unspecified order for floats). Other dtypes accumulate through a float32 (int64) copy of
``a`` that is written back once: one rounding, as the NumPy backend's bfloat16 does. Plain
stores with duplicate indices leave one of the values, unspecified which (as PyTorch on CUDA).

nonzero counts the nonzeros per block, prefix-sums the counts (rowwise.cumsum), reads the total
back to the host (one device sync: the output's size depends on it), then each block writes
the multi-indices of its nonzeros at its offset, in row-major order.

Index arrays are int64 and in range (the caller checks and wraps), as the contract says.
"""

from __future__ import annotations

import triton.language as tl

from ...runtime import dtype as D
from ...runtime import memory as _memory
from ...runtime.array import DeviceArray
from . import _launch as L
from ._launch import block_range
from .elementwise import FBITS, INT, PTR, scalar, scalar_arg, span
from .elementwise_ops import add, mul, ne
from .launcher import Launch, jit
from .memory import astype, contiguous, copy_, full
from .rowwise import cumsum

__all__ = ["gather", "index", "index_guard", "index_put_", "nonzero", "scatter_",
           "scatter_reduce_"]

BLOCK = 1024
_ATOMIC = (D.float32, D.float64, D.int32, D.int64)


@jit
def _offsets(p, shape, st1, st2, st3, NDIM: tl.constexpr):
    # The flat positions p as multi-indices over shape (innermost last), as offsets for three
    # stride tuples.
    o1 = tl.zeros_like(p)
    o2 = tl.zeros_like(p)
    o3 = tl.zeros_like(p)
    rem = p
    for d in tl.static_range(NDIM - 1, -1, -1):
        if d == 0:
            idx = rem
        else:
            idx = rem % shape[d]
            rem = rem // shape[d]
        o1 += idx * st1[d]
        o2 += idx * st2[d]
        o3 += idx * st3[d]
    return o1, o2, o3


@jit
def _gather_kernel(
    out_ptr,  # *T: n contiguous results, written
    src_ptr,  # *T: the source; position i reads src_off(i) + idx * scale
    idx_ptr,  # *int64: the indices, at idx_off(i)
    shape, src_st, idx_st,  # tuples over the NDIM result dims
    n, scale,
    NDIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    p, mask = block_range(n, BLOCK, INT64)
    s_off, i_off, _ = _offsets(p, shape, src_st, idx_st, idx_st, NDIM)
    j = tl.load(idx_ptr + i_off, mask=mask, other=0)
    v = tl.load(src_ptr + (s_off + j * scale), mask=mask)
    tl.store(out_ptr + p, v, mask=mask)


@jit(do_not_specialize=["val_scalar"])
def _scatter_kernel(
    dst_ptr,  # *T: the destination; position i writes dst_off(i) + idx * scale
    idx_ptr,  # *int64: the indices, at idx_off(i)
    val_ptr,  # *any: the values, at val_off(i) (VAL_MODE == 1), else None
    val_scalar: tl.int64,  # a by-value value (float64 bits or int64), else 0
    VAL_MODE: tl.constexpr, CT: tl.constexpr, ACCUMULATE: tl.constexpr,  # the rest: the plan's
    shape, dst_st, idx_st, val_st,  # tuples over the NDIM iteration dims
    n, scale,
    NDIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    p, mask = block_range(n, BLOCK, INT64)
    d_off, i_off, v_off = _offsets(p, shape, dst_st, idx_st, val_st, NDIM)
    j = tl.load(idx_ptr + i_off, mask=mask, other=0)
    if VAL_MODE == 1:
        v = tl.load(val_ptr + v_off, mask=mask, other=0).to(CT)
    elif VAL_MODE == 2:
        v = val_scalar.to(tl.int64).to(tl.float64, bitcast=True).to(CT)
    else:
        v = val_scalar.to(tl.int64).to(CT)
    if VAL_MODE != 1:
        v = tl.zeros([BLOCK], CT) + v  # a scalar as a block, like the pointers
    v = v.to(dst_ptr.dtype.element_ty)
    ptrs = dst_ptr + (d_off + j * scale)
    if ACCUMULATE:
        tl.atomic_add(ptrs, v, mask=mask)
    else:
        tl.store(ptrs, v, mask=mask)


@jit
def _count_kernel(
    counts_ptr,  # *int64: one count per program, written
    a_ptr,       # *any: the array, position p at a_off(p)
    shape, st, n,
    NDIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    p, mask = block_range(n, BLOCK, INT64)
    off, _, _ = _offsets(p, shape, st, st, st, NDIM)
    flag = (tl.load(a_ptr + off, mask=mask, other=0) != 0) & mask
    tl.store(counts_ptr + tl.program_id(0), tl.sum(flag.to(tl.int64), axis=0))


@jit
def _nonzero_kernel(
    out_ptr,     # *int64: (count, NDIM) contiguous multi-indices, written
    a_ptr,       # *any: the array, position p at a_off(p)
    incl_ptr,    # *int64: inclusive prefix sums of the per-program counts
    shape, st, n,
    NDIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    p, mask = block_range(n, BLOCK, INT64)
    off, _, _ = _offsets(p, shape, st, st, st, NDIM)
    flag = ((tl.load(a_ptr + off, mask=mask, other=0) != 0) & mask).to(tl.int64)
    before = tl.load(incl_ptr + tl.program_id(0)) - tl.sum(flag, axis=0)
    pos = before + tl.cumsum(flag, axis=0) - flag
    rem = p
    for d in tl.static_range(NDIM - 1, -1, -1):
        if d == 0:
            idx = rem
        else:
            idx = rem % shape[d]
            rem = rem // shape[d]
        tl.store(out_ptr + (pos * NDIM + d), idx.to(tl.int64), mask=flag != 0)


@jit
def _index_guard_kernel(
    idx_ptr,  # *int64: the user's indices, n contiguous
    out_ptr,  # *int64: the safe indices, written
    ext_ptr,  # *int64: (min, max) folded in atomically (RECORD)
    size, ignore,  # the indexed dim's size (> 0); the ignored value (IGNORE)
    n,
    WRAP: tl.constexpr, IGNORE: tl.constexpr, RECORD: tl.constexpr, BLOCK: tl.constexpr,
    INT64: tl.constexpr,
):
    p, mask = block_range(n, BLOCK, INT64)
    a = tl.load(idx_ptr + p, mask=mask, other=0)
    counted = mask
    if IGNORE:
        counted = mask & (a != ignore)
    if RECORD:
        tl.atomic_min(ext_ptr, tl.min(tl.where(counted, a, 9223372036854775807), axis=0))
        tl.atomic_max(ext_ptr + 1,
                      tl.max(tl.where(counted, a, -9223372036854775807 - 1), axis=0))
    safe = a
    if WRAP:
        safe = tl.where(safe < 0, safe + size, safe)
    safe = tl.minimum(tl.maximum(safe, 0), size - 1)
    if IGNORE:
        safe = tl.where(a == ignore, a, safe)
    tl.store(out_ptr + p, safe, mask=mask)


# ------------------------------------------------------------------------------------------
# Launchers
# ------------------------------------------------------------------------------------------
def _grid(n):
    return (L.cdiv(n, BLOCK),)


def _flat_shape(shape, *strides):
    # The kernels take at least one dim; a 0-d iteration space is one element.
    if not shape:
        return (1,), tuple((0,) for _ in strides)
    return tuple(shape), tuple(tuple(s) for s in strides)


# Plans: the gather and scatter kernels' launches per iteration layout (Note [plan launches]);
# the arrays, a scatter's scalar and its per-call constexprs are passed per call.
_PLANS = L.plan_cache()


def _layout_plan(key):
    """The ``Launch`` of ``key``: (kernel, iteration shape, its stride tuples..., scale)."""
    kernel, shape, *strides, scale = key
    n = 1
    for s in shape:
        n *= s
    shape, strides = _flat_shape(shape, *strides)
    int64 = L.needs_int64(shape, *strides) or n >= L._INT32_SAFE
    launch = _PLANS[key] = Launch(kernel, _grid(n), (shape, *strides, n, scale, len(shape),
                                                     BLOCK, int64))
    return launch


def _gather(out, src, idx, src_st, idx_st, scale):
    if out.numel == 0:
        return out
    key = (_gather_kernel, out.shape, src_st, idx_st, scale)
    launch = _PLANS.get(key) or _layout_plan(key)
    L.ensure_driver()
    launch(out, src, idx)
    return out


def _scatter(dst, idx, val, shape, dst_st, idx_st, val_st, scale, accumulate):
    """dst[...] (=|+=) val over the iteration ``shape``; val: DeviceArray (strides val_st over
    the iteration dims) or Python scalar."""
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return
    L.check_supported("scatter_/index_put_", dst.dtype)
    work = dst
    if accumulate and dst.dtype not in _ATOMIC:
        # a wider copy with dst's very strides (over a buffer of dst's span), written back once
        wide = D.float32 if dst.dtype.is_floating_point else D.int64
        lo, hi = span(dst)
        work = _memory.empty((hi - lo,), wide, dst.device).as_strided(dst.shape, dst.strides,
                                                                       dst.offset - lo)
        copy_(work, dst)
    if type(val) is DeviceArray:
        mode, vs, vp = PTR, 0, val
        ct = L.TL[val.dtype]
    else:
        val, t = scalar(val)
        mode = FBITS if t is float else INT
        vs, vp, val_st = scalar_arg(val, mode), None, (0,) * len(shape)
        ct = tl.float64 if mode == FBITS else tl.int64
    if work.dtype is D.bfloat16:
        ct = tl.float32
    key = (_scatter_kernel, tuple(shape), dst_st, idx_st, val_st, scale)
    launch = _PLANS.get(key) or _layout_plan(key)
    L.ensure_driver()
    launch(work, idx, vp, vs, mode, ct, bool(accumulate))
    if work is not dst:
        copy_(dst, work)


def _advanced(op, a, indices):
    """For a[indices]: (result shape, src/dst strides over it, index array (int64), its
    strides over the result, scale)."""
    indices = tuple(indices)
    if len(indices) > a.ndim:
        raise IndexError(f"{op}: too many indices ({len(indices)}) for a {a.ndim}-d array")
    arrays = [(d, ix) for d, ix in enumerate(indices) if ix is not None]
    for _, ix in arrays:
        if ix.dtype is not D.int64:
            raise TypeError(f"{op}: index arrays must be int64, got {ix.dtype}")
    ishape = L.broadcast_shape(op, *[ix.shape for _, ix in arrays])
    first = arrays[0][0]
    adjacent = arrays[-1][0] - first + 1 == len(arrays)
    kept = [d for d in range(a.ndim) if d >= len(indices) or indices[d] is None]
    before = [d for d in kept if d < first] if adjacent else []
    after = [d for d in kept if d not in before]
    shape = (tuple(a.shape[d] for d in before) + ishape + tuple(a.shape[d] for d in after))
    src_st = (tuple(a.strides[d] for d in before) + (0,) * len(ishape)
              + tuple(a.strides[d] for d in after))
    if len(arrays) == 1:
        d, lin = arrays[0]
        scale = a.strides[d]
    else:  # fold the index arrays into linear offsets: sum_k ik * stride_k
        lin = None
        for d, ix in arrays:
            term = mul(ix, a.strides[d])
            lin = term if lin is None else add(lin, term)
        scale = 1
    lst = L.broadcast_strides(lin.shape, lin.strides, ishape)
    idx_st = (0,) * len(before) + lst + (0,) * len(after)
    return shape, src_st, lin, idx_st, scale


def index(a, indices):
    """a[indices] with NumPy's advanced indexing: ``indices`` is a tuple over a's leading dims
    of int64 arrays (broadcast together) or None (the whole dim). A new contiguous array."""
    if all(ix is None for ix in indices):
        return astype(a, a.dtype)
    shape, src_st, lin, idx_st, scale = _advanced("index", a, indices)
    out = _memory.empty(shape, a.dtype, a.device)
    return _gather(out, a, lin, src_st, idx_st, scale)


def index_put_(a, indices, values, accumulate):
    """a[indices] = values (broadcast), or += with duplicate indices all summed."""
    if all(ix is None for ix in indices):
        if accumulate:
            add(a, values, out=a)
        else:
            copy_(a, values)
        return
    shape, dst_st, lin, idx_st, scale = _advanced("index_put_", a, indices)
    if type(values) is DeviceArray:
        if L.broadcast_shape("index_put_", values.shape, shape) != shape:
            raise ValueError(f"index_put_: values of shape {values.shape} cannot be broadcast "
                             f"to the indexed shape {shape}")
        val_st = L.broadcast_strides(values.shape, values.strides, shape)
    else:
        val_st = None
    _scatter(a, lin, values, shape, dst_st, idx_st, val_st, scale, accumulate)


def one_d(x):
    """A 0-d DeviceArray as a 1-element 1-d view; anything else as it is. gather/scatter read a
    0-d input or index as 1-d (PyTorch allows a 0-d one beside a 1-d other)."""
    return x.as_strided((1,), (1,), x.offset) if type(x) is DeviceArray and x.ndim == 0 else x


def as_shape_of(out, index):
    """``out`` (index's shape read 1-d) back in ``index``'s own shape."""
    return out.as_strided((), (), out.offset) if index.ndim == 0 else out


def gather(a, dim, index):
    """out[..i..] = a[..index[..i..]..] along ``dim`` (index: a's ndim, int64, in range)."""
    a, idx = one_d(a), one_d(index)
    dim %= a.ndim
    src_st = tuple(0 if d == dim else s for d, s in enumerate(a.strides))[:idx.ndim]
    out = _memory.empty(idx.shape, a.dtype, a.device)
    return as_shape_of(_gather(out, a, idx, src_st, idx.strides, a.strides[dim]), index)


def scatter_(a, dim, index, src, accumulate):
    """a[..index[..i..]..] = src[..i..] along ``dim`` (src no smaller than index), or += with
    duplicates summed; ``src`` may be a Python scalar."""
    a, index, src = one_d(a), one_d(index), one_d(src)  # (a's 1-d view writes a)
    dim %= a.ndim
    dst_st = tuple(0 if d == dim else s for d, s in enumerate(a.strides))
    val_st = tuple(src.strides) if type(src) is DeviceArray else None
    _scatter(a, index, src, index.shape, dst_st, index.strides, val_st, a.strides[dim],
             accumulate)


def index_guard(a, size, lower, ignore_index, extremes):
    """``a`` (int64) wrapped (``lower`` < 0) and clamped into [0, size), ignore_index kept,
    its extremes folded into ``extremes`` (or None): one launch (the contract's words)."""
    if a.numel == 0:
        return _memory.empty(a.shape, D.int64, a.device)
    if a.dtype is not D.int64:  # (the contract's indices are int64; a narrower one widened)
        a = astype(a, D.int64)
    elif not a.is_contiguous():
        a = contiguous(a)
    out = _memory.empty(a.shape, D.int64, a.device)
    n = a.numel
    key = (_index_guard_kernel, n, lower < 0, ignore_index is not None, extremes is not None)
    launch = _PLANS.get(key)
    if launch is None:
        launch = _PLANS[key] = Launch(_index_guard_kernel, _grid(n), (
            n, lower < 0, ignore_index is not None, extremes is not None, BLOCK,
            n >= L._INT32_SAFE))
    L.ensure_driver()
    launch(a, out, out if extremes is None else extremes, size,
           0 if ignore_index is None else ignore_index)
    return out


def nonzero(a):
    """The multi-indices (int64, (count, a.ndim)) of a's nonzero elements, row-major."""
    n = a.numel
    if a.ndim == 0:
        hit = bool(_memory.to_host(ne(a, 0)))
        return full((1 if hit else 0, 0), 0, D.int64, a.device)
    if n == 0:
        return _memory.empty((0, a.ndim), D.int64, a.device)
    L.check_supported("nonzero", a.dtype)
    shape, st = tuple(a.shape), tuple(a.strides)
    int64 = L.needs_int64(shape, st) or n >= L._INT32_SAFE
    grid = _grid(n)
    counts = _memory.empty((grid[0],), D.int64, a.device)
    L.ensure_driver()
    _count_kernel[grid](counts, a, shape, st, n, a.ndim, BLOCK, int64)
    incl = cumsum(counts, 0)
    total = int(_memory.to_host(incl.as_strided((), (), incl.offset + grid[0] - 1)))
    out = _memory.empty((total, a.ndim), D.int64, a.device)
    if total:
        _nonzero_kernel[grid](out, a, incl, shape, st, n, a.ndim, BLOCK, int64)
    return out


# ------------------------------------------------------------------------------------------
# scatter_reduce_
# ------------------------------------------------------------------------------------------
# A pull kernel: each place q of ``a`` (its coordinate t along dim, o elsewhere) walks the L
# entries index[o, 0..L) along dim and folds src[o, j] wherever index[o, j] == t:
#
#     a[q] = fold(a[q] if include_self, src[o, j] for every j with index[o, j] == t)
#
# so every place is written once, by one lane: no atomics (prod and mean have none), the same
# result on every run, and places no index aims at keep their value. The work is a.numel * L
# index reads, so it suits the usual index along a short or moderate dim.

_REDUCE = {"sum": 0, "prod": 1, "mean": 2, "amax": 3, "amin": 4}


@jit
def _scatter_reduce_kernel(
    a_ptr,    # *T: the destination, read and written at a_off(q)
    idx_ptr,  # *int64: the index, entry (o, j) at i_off(o) + j * i_dim
    src_ptr,  # *T: the values, entry (o, j) at s_off(o) + j * s_dim
    shape,    # a's shape (NDIM dims)
    a_st, i_st, s_st,  # strides over a's dims; i_st and s_st are 0 along dim
    lim,      # index's extent in each dim (a's at dim): places beyond it get nothing
    sel,      # 1 at dim, else 0: picks q's coordinate t along dim
    n, L, i_dim, s_dim,
    REDUCE: tl.constexpr, INCLUDE_SELF: tl.constexpr, CT: tl.constexpr,
    NDIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    p, mask = block_range(n, BLOCK, INT64)
    a_off = tl.zeros_like(p)
    i_off = tl.zeros_like(p)
    s_off = tl.zeros_like(p)
    t = tl.zeros_like(p)
    valid = mask
    rem = p
    for d in tl.static_range(NDIM - 1, -1, -1):
        if d == 0:
            c = rem
        else:
            c = rem % shape[d]
            rem = rem // shape[d]
        a_off += c * a_st[d]
        i_off += c * i_st[d]
        s_off += c * s_st[d]
        t += c * sel[d]
        valid = valid & (c < lim[d])
    acc = tl.load(a_ptr + a_off, mask=mask, other=0).to(CT)
    count = tl.zeros_like(p) + INCLUDE_SELF  # the values folded so far
    for j in range(L):
        ix = tl.load(idx_ptr + (i_off + j * i_dim), mask=valid, other=-1)
        hit = valid & (ix == t)
        v = tl.load(src_ptr + (s_off + j * s_dim), mask=hit, other=0).to(CT)
        if REDUCE == 0 or REDUCE == 2:
            f = acc + v
        elif REDUCE == 1:
            f = acc * v
        elif REDUCE == 3:  # NaN propagates: a NaN acc stays, a NaN v wins the comparison
            f = tl.where((acc >= v) | (acc != acc), acc, v)  # noqa: PLR0124 - NaN test
        else:
            f = tl.where((acc <= v) | (acc != acc), acc, v)  # noqa: PLR0124 - NaN test
        acc = tl.where(hit, tl.where(count > 0, f, v), acc)
        count += hit.to(count.dtype)
    if REDUCE == 2:
        c = tl.maximum(count, 1).to(CT)
        if CT.is_floating():
            q = acc / c
        else:
            q = acc // c
            q = q - ((q * c) > acc).to(CT)  # toward -inf, whichever way // rounded
        acc = tl.where(count > 0, q, acc)
    tl.store(a_ptr + a_off, acc.to(a_ptr.dtype.element_ty), mask=mask)


_FOLD_TYPE = {D.float16: tl.float32, D.bfloat16: tl.float32, D.float32: tl.float32,
              D.float64: tl.float64}


def scatter_reduce_(a, dim, index, src, reduce, include_self):
    """a[..index[..i..]..] folded with src[..i..] along ``dim`` by ``reduce`` (sum prod mean
    amax amin), a's own values included when ``include_self``; in place."""
    L.check_supported("scatter_reduce_", a.dtype)
    if reduce not in _REDUCE:
        raise ValueError(f"scatter_reduce_: reduce must be one of {', '.join(_REDUCE)}, got "
                         f"{reduce!r}")
    a, index, src = one_d(a), one_d(index), one_d(src)
    dim %= a.ndim
    n, length = a.numel, index.shape[dim]
    if n == 0 or index.numel == 0:
        return
    shape = tuple(a.shape)
    i_st = tuple(0 if d == dim else s for d, s in enumerate(index.strides))
    s_st = tuple(0 if d == dim else s for d, s in enumerate(src.strides))
    lim = tuple(shape[d] if d == dim else index.shape[d] for d in range(a.ndim))
    sel = tuple(int(d == dim) for d in range(a.ndim))
    int64 = (L.needs_int64(shape, a.strides, index.strides, src.strides)
             or n >= L._INT32_SAFE or index.numel >= L._INT32_SAFE)
    L.ensure_driver()
    _scatter_reduce_kernel[_grid(n)](
        a, index, src, shape, tuple(a.strides), i_st, s_st, lim, sel, n, length,
        index.strides[dim], src.strides[dim], _REDUCE[reduce], int(bool(include_self)),
        _FOLD_TYPE.get(a.dtype, tl.int64), a.ndim, BLOCK, int64)
