"""Batch normalisation's training kernels on the Triton backend, composed from its own
elementwise ops and reductions (a channel's statistics are a reduction over every dim but 1,
which the generic strided reductions already run well; the CPU backend fuses them instead:
kernels/numpy/nn.py).

    batch_norm(x, weight, bias, eps) -> (y, mean, var)
    batch_norm_backward(g, x, weight, mean, var, eps) -> (dx, dweight|None, dbias|None)

x (N, C, *) is normalised per channel over every other dim (n values each): y = (x - mean)
rstd weight + bias, rstd = 1 / sqrt(var + eps), var the biased variance; mean and var (C,) in
the compute dtype (float32 for half inputs, as the row kernels accumulate). With xhat = (x -
mean) rstd and per channel S = sum(g xhat), B = sum(g):
    dx = rstd weight (g - B / n - xhat S / n),  dweight = S,  dbias = B

Note [fused batch norm]: where x's dims after the channels collapse into one (every dense
layout: contiguous, channels-last, (N, C)), each way is three launches over a (channel,
chunk) grid: the forward's partial statistics (per chunk: count, mean and the squared
deviations' sum, Welford's per lane, combined by Chan's formula), a program per channel
folding them into mean and var, then y = (x - mean) rstd weight + bias; the backward's partial
sums of g and g xhat, a program per channel folding them into S and B (dweight and dbias), then
dx. x is read twice each way, where the composed form (kept for other layouts and empty
inputs) took 17 launches forward and 20 backward, each a pass over the data. The arithmetic
after the statistics is the composed form's, in its order, in the compute dtype.
"""

from __future__ import annotations

import math

import triton.language as tl

from ...runtime import dtype as D
from ...runtime import memory as _memory
from . import _launch as L
from .elementwise_ops import add, div, mul, sqrt, sub
from .launcher import Launch, jit
from .memory import astype, contiguous, full, result_array, view
from .nn import _bits
from .optim import _div, _f, _sqrt
from .reduction import sum as _sum

__all__ = ["batch_norm", "batch_norm_backward"]

TARGET_PROGRAMS = 512  # (channel, chunk) programs a pass aims at
BLOCK = 1024           # elements a program loads at a time
MAX_CHUNKS = 1024      # chunks per channel (the folding program loads them at once)


@jit
def _chunk_offsets(c, p, start, R, S, CHUNK, s_n, s_c, s_s, BLOCK: tl.constexpr,
                   INT64: tl.constexpr):
    """Elements ``start .. start + BLOCK`` of chunk p of channel c (element j = n S + s of its
    R = N S): their offsets along strides (s_n, s_c, s_s), and the mask of those in range."""
    i = start + tl.arange(0, BLOCK)
    if INT64:
        i = i.to(tl.int64)
    j = p * CHUNK + i
    n = j // S
    return n * s_n + c * s_c + (j - n * S) * s_s, (i < CHUNK) & (j < R)


@jit
def _program(INT64: tl.constexpr):
    c, p = tl.program_id(0), tl.program_id(1)
    if INT64:
        c, p = c.to(tl.int64), p.to(tl.int64)
    return c, p


@jit
def _bn_stats_kernel(
    part_ptr,  # *ACC: (C, P, 3) written: each chunk's count, mean, sum of squared deviations
    x_ptr,     # *T: the input, channel c's element j = n S + s at n s_n + c s_c + s s_s
    R, S, CHUNK, P, s_n, s_c, s_s,  # the plan's
    ACC: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    c, p = _program(INT64)
    cnt = tl.zeros([BLOCK], ACC)  # Welford's per lane
    mean = tl.zeros([BLOCK], ACC)
    m2 = tl.zeros([BLOCK], ACC)
    for start in range(0, CHUNK, BLOCK):
        offs, mask = _chunk_offsets(c, p, start, R, S, CHUNK, s_n, s_c, s_s, BLOCK, INT64)
        v = tl.load(x_ptr + offs, mask=mask, other=0).to(ACC)
        cnt += mask.to(ACC)
        delta = tl.where(mask, v - mean, 0.0)
        mean += delta / tl.maximum(cnt, 1.0)
        m2 += delta * tl.where(mask, v - mean, 0.0)
    total = tl.sum(cnt, axis=0)
    m = tl.sum(cnt * mean, axis=0) / tl.maximum(total, 1.0)
    d = mean - m
    at = part_ptr + (c * P + p) * 3
    tl.store(at, total)
    tl.store(at + 1, m)
    tl.store(at + 2, tl.sum(m2, axis=0) + tl.sum(cnt * d * d, axis=0))


@jit
def _bn_fold_kernel(
    mean_ptr, var_ptr,  # *ACC: (C,) written: the channel's mean and biased variance
    part_ptr,           # *ACC: (C, P, 3) the chunks' statistics
    P, ACC: tl.constexpr, BLOCK_P: tl.constexpr,
):
    c = tl.program_id(0)
    q = tl.arange(0, BLOCK_P)
    at = part_ptr + (c * P + q) * 3
    cnt = tl.load(at, mask=q < P, other=0)
    mean = tl.load(at + 1, mask=q < P, other=0)
    total = tl.sum(cnt, axis=0)
    m = tl.sum(cnt * mean, axis=0) / tl.maximum(total, 1.0)  # (Chan's formula, all at once)
    d = mean - m
    m2 = tl.sum(tl.load(at + 2, mask=q < P, other=0), axis=0) + tl.sum(cnt * d * d, axis=0)
    tl.store(mean_ptr + c, m)
    tl.store(var_ptr + c, m2 / tl.maximum(total, 1.0))


@jit
def _bn_rstd(var_ptr, c, eps_b, ACC: tl.constexpr, F64: tl.constexpr):
    # 1 / sqrt(var + eps), each step rounded to ACC as the composed form's ops
    return _div(tl.full((), 1.0, ACC), _sqrt(tl.load(var_ptr + c) + _f(eps_b, ACC), F64), F64)


@jit(do_not_specialize=["eps_b"])
def _bn_normalize_kernel(
    y_ptr,              # *T: the output, strides (y_n, y_c, y_s) as x's are
    x_ptr,              # *T: the input (see _bn_stats_kernel)
    mean_ptr, var_ptr,  # *ACC: (C,) the statistics
    w_ptr, b_ptr,       # *W: (C,) weight and bias, or None
    eps_b: tl.int64,    # eps as float64 bits
    R, S, CHUNK, s_n, s_c, s_s, y_n, y_c, y_s,  # the plan's
    ACC: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    c, p = _program(INT64)
    mean = tl.load(mean_ptr + c)
    rstd = _bn_rstd(var_ptr, c, eps_b, ACC, F64)
    for start in range(0, CHUNK, BLOCK):
        offs, mask = _chunk_offsets(c, p, start, R, S, CHUNK, s_n, s_c, s_s, BLOCK, INT64)
        y = (tl.load(x_ptr + offs, mask=mask, other=0).to(ACC) - mean) * rstd
        if w_ptr is not None:
            y = y * tl.load(w_ptr + c).to(ACC)
        if b_ptr is not None:
            y = y + tl.load(b_ptr + c).to(ACC)
        out, _ = _chunk_offsets(c, p, start, R, S, CHUNK, y_n, y_c, y_s, BLOCK, INT64)
        tl.store(y_ptr + out, y, mask=mask)


@jit(do_not_specialize=["eps_b"])
def _bn_grad_sums_kernel(
    part_ptr,           # *ACC: (C, P, 2) written: each chunk's sum of g xhat and of g
    g_ptr,              # *T: the output gradient, strides (g_n, g_c, g_s)
    x_ptr,              # *T: the input (see _bn_stats_kernel)
    mean_ptr, var_ptr,  # *ACC: (C,) the forward's statistics
    eps_b: tl.int64,
    R, S, CHUNK, P, s_n, s_c, s_s, g_n, g_c, g_s,  # the plan's
    ACC: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    c, p = _program(INT64)
    mean = tl.load(mean_ptr + c)
    rstd = _bn_rstd(var_ptr, c, eps_b, ACC, F64)
    sgx = tl.zeros([BLOCK], ACC)
    sg = tl.zeros([BLOCK], ACC)
    for start in range(0, CHUNK, BLOCK):
        offs, mask = _chunk_offsets(c, p, start, R, S, CHUNK, s_n, s_c, s_s, BLOCK, INT64)
        at, _ = _chunk_offsets(c, p, start, R, S, CHUNK, g_n, g_c, g_s, BLOCK, INT64)
        g = tl.load(g_ptr + at, mask=mask, other=0).to(ACC)
        xhat = (tl.load(x_ptr + offs, mask=mask, other=0).to(ACC) - mean) * rstd
        sgx += g * xhat
        sg += g
    at = part_ptr + (c * P + p) * 2
    tl.store(at, tl.sum(sgx, axis=0))
    tl.store(at + 1, tl.sum(sg, axis=0))


@jit
def _bn_grad_fold_kernel(
    s_ptr, b_ptr,    # *ACC: (C,) written: S = sum(g xhat), B = sum(g)
    dw_ptr, db_ptr,  # *W: (C,) written with S and B in the weight's dtype, or None
    part_ptr,        # *ACC: (C, P, 2) the chunks' sums
    P, BLOCK_P: tl.constexpr,
):
    c = tl.program_id(0)
    q = tl.arange(0, BLOCK_P)
    at = part_ptr + (c * P + q) * 2
    sgx = tl.sum(tl.load(at, mask=q < P, other=0), axis=0)
    sg = tl.sum(tl.load(at + 1, mask=q < P, other=0), axis=0)
    tl.store(s_ptr + c, sgx)
    tl.store(b_ptr + c, sg)
    if dw_ptr is not None:
        tl.store(dw_ptr + c, sgx)
        tl.store(db_ptr + c, sg)


@jit(do_not_specialize=["eps_b", "inv_n_b"])
def _bn_dx_kernel(
    dx_ptr,             # *T: written, strides (d_n, d_c, d_s)
    g_ptr, x_ptr,       # *T: as _bn_grad_sums_kernel's
    mean_ptr, var_ptr,  # *ACC: (C,) the forward's statistics
    s_ptr, b_ptr,       # *ACC: (C,) S and B
    w_ptr,              # *W: (C,) the weight, or None
    eps_b: tl.int64, inv_n_b: tl.int64,  # float64 bits: eps, 1 / n
    R, S, CHUNK, s_n, s_c, s_s, g_n, g_c, g_s, d_n, d_c, d_s,  # the plan's
    ACC: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    c, p = _program(INT64)
    mean = tl.load(mean_ptr + c)
    rstd = _bn_rstd(var_ptr, c, eps_b, ACC, F64)
    inv_n = _f(inv_n_b, ACC)
    bn = tl.load(b_ptr + c) * inv_n
    sn = tl.load(s_ptr + c) * inv_n
    scale = rstd
    if w_ptr is not None:
        scale = rstd * tl.load(w_ptr + c).to(ACC)
    for start in range(0, CHUNK, BLOCK):
        offs, mask = _chunk_offsets(c, p, start, R, S, CHUNK, s_n, s_c, s_s, BLOCK, INT64)
        at, _ = _chunk_offsets(c, p, start, R, S, CHUNK, g_n, g_c, g_s, BLOCK, INT64)
        out, _ = _chunk_offsets(c, p, start, R, S, CHUNK, d_n, d_c, d_s, BLOCK, INT64)
        g = tl.load(g_ptr + at, mask=mask, other=0).to(ACC)
        xhat = (tl.load(x_ptr + offs, mask=mask, other=0).to(ACC) - mean) * rstd
        tl.store(dx_ptr + out, ((g - bn) - xhat * sn) * scale, mask=mask)


def _ncs(a):
    """(N, C, S, (s_n, s_c, s_s)): ``a`` (N, C, *) as N x C x S with its dims after the
    channels collapsed into one of S elements, or None where their strides do not allow it."""
    shape, strides = a.shape, a.strides
    dims = [(n, st) for n, st in zip(shape[2:], strides[2:]) if n != 1]
    for (n0, s0), (n1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * n1:
            return None
    S = math.prod(n for n, _ in dims)
    return shape[0], shape[1], S, (strides[0], strides[1], dims[-1][1] if dims else 1)


def _result(x, *xs) -> tuple:
    """A new array shaped as ``x``, in its dtype, laid out as an elementwise result over
    ``xs`` (as PyTorch's), and its ``_ncs``; row-major where that layout would not collapse."""
    out = result_array(tuple(x.shape), x.dtype, x.device, *xs)
    found = _ncs(out)
    if found is None:
        out = _memory.empty(tuple(x.shape), x.dtype, x.device)
        found = _ncs(out)
    return out, found


_PLANS = L.plan_cache()


def _grid_of(C: int, R: int) -> tuple:
    """(CHUNK, P): channel c's R elements cut into P chunks of CHUNK (a multiple of BLOCK
    where more than one), about TARGET_PROGRAMS programs in all."""
    want = min(max(1, -(-TARGET_PROGRAMS // C)), MAX_CHUNKS, -(-R // BLOCK))
    chunk = -(-R // want)
    if want > 1:
        chunk = -(-chunk // BLOCK) * BLOCK
    return chunk, -(-R // chunk)


def _fusable(*arrays) -> tuple | None:
    """The (N, C, S, strides...) of arrays of one shape (N, C, *) the fused kernels take, or
    None (Note [fused batch norm])."""
    found = [_ncs(a) for a in arrays]
    if any(f is None for f in found):
        return None
    N, C, S, _ = found[0]
    if N * C * S == 0:
        return None
    return (N, C, S, *[f[3] for f in found])


def _compute(a):
    """``a`` in its compute dtype (float32 for half precision)."""
    return astype(a, D.float32) if a.dtype in (D.float16, D.bfloat16) else a


def _geometry(x) -> tuple:
    """(the reduced dims, n values per channel, the statistics' broadcast shape (1, C, 1...))."""
    dims = (0,) + tuple(range(2, x.ndim))
    return dims, math.prod(x.shape) // max(x.shape[1], 1), (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _channel(v, shape: tuple, dtype):
    """A per-channel vector (C,) as ``shape`` in ``dtype``."""
    v = view(contiguous(v), shape)
    return v if v.dtype is dtype else astype(v, dtype)


def _rstd(var, eps: float):
    return div(full(tuple(var.shape), 1, var.dtype, var.device), sqrt(add(var, eps)))


def batch_norm(x, weight, bias, eps: float):
    """(y, mean, var) of batch normalisation with x's own statistics (see the module): three
    launches where the layout allows (Note [fused batch norm]), else composed."""
    geometry = _fusable(x)
    if geometry is None:
        return _batch_norm_composed(x, weight, bias, eps)
    N, C, S, sx = geometry
    R = N * S
    acc_dt = L.ACC_DT[x.dtype]
    y, sy = _result(x, x)
    key = ("batch_norm", C, R, S, sx, sy[3], x.dtype, weight is None, bias is None)
    plans = _PLANS.get(key)
    if plans is None:
        chunk, P = _grid_of(C, R)
        int64 = L.needs_int64(x.shape, x.strides) or R * C >= L._INT32_SAFE
        acc, f64 = L.TL[acc_dt], acc_dt is D.float64
        block, bp = min(BLOCK, L.next_pow2(chunk)), L.next_pow2(P)
        plans = _PLANS[key] = (
            Launch(_bn_stats_kernel, (C, P), (R, S, chunk, P, *sx, acc, block, int64),
                   num_warps=L.num_warps(block), **L.EXACT),
            Launch(_bn_fold_kernel, (C,), (P, acc, bp), num_warps=L.num_warps(bp), **L.EXACT),
            Launch(_bn_normalize_kernel, (C, P), (R, S, chunk, *sx, *sy[3], acc, f64, block,
                                                  int64), num_warps=L.num_warps(block),
                   **L.EXACT))
    stats, fold, normalize = plans
    part = _memory.empty((C, stats.grid[1], 3), acc_dt, x.device)
    mean = _memory.empty((C,), acc_dt, x.device)
    var = _memory.empty((C,), acc_dt, x.device)
    weight = None if weight is None else contiguous(weight)
    bias = None if bias is None else contiguous(bias)
    L.ensure_driver()
    stats(part, x)
    fold(mean, var, part)
    normalize(y, x, mean, var, weight, bias, _bits(eps))
    return y, mean, var


def _batch_norm_composed(x, weight, bias, eps: float):
    """``batch_norm`` from elementwise ops and reductions (any layout)."""
    xf = _compute(x)
    dims, n, shape = _geometry(x)
    mean = mul(_sum(xf, dims, True), 1.0 / max(n, 1))
    xc = sub(xf, mean)
    var = mul(_sum(mul(xc, xc), dims, True), 1.0 / max(n, 1))
    y = mul(xc, _rstd(var, eps))
    if weight is not None:
        y = mul(y, _channel(weight, shape, xf.dtype))
    if bias is not None:
        y = add(y, _channel(bias, shape, xf.dtype))
    c = (x.shape[1],)
    return (y if y.dtype is x.dtype else astype(y, x.dtype)), view(mean, c), view(var, c)


def batch_norm_backward(g, x, weight, mean, var, eps: float):
    """(dx, dweight, dbias) of batch_norm given its mean and var; the last two are None when
    ``weight`` is None. Three launches where the layouts allow (Note [fused batch norm])."""
    geometry = _fusable(x, g)
    if geometry is None or not (mean.is_contiguous() and var.is_contiguous()):
        return _batch_norm_backward_composed(g, x, weight, mean, var, eps)
    N, C, S, sx, sg = geometry
    R = N * S
    acc_dt = L.ACC_DT[x.dtype]
    if mean.dtype is not acc_dt or var.dtype is not acc_dt:
        mean, var = astype(mean, acc_dt), astype(var, acc_dt)
    if weight is not None and not weight.is_contiguous():
        weight = contiguous(weight)
    dx, sd = _result(x, g, x)
    key = ("batch_norm_backward", C, R, S, sx, sg, sd[3], x.dtype, weight is None)
    plans = _PLANS.get(key)
    if plans is None:
        chunk, P = _grid_of(C, R)
        int64 = (L.needs_int64(x.shape, x.strides) or L.needs_int64(g.shape, g.strides)
                 or R * C >= L._INT32_SAFE)
        acc, f64 = L.TL[acc_dt], acc_dt is D.float64
        block, bp = min(BLOCK, L.next_pow2(chunk)), L.next_pow2(P)
        plans = _PLANS[key] = (
            Launch(_bn_grad_sums_kernel, (C, P), (R, S, chunk, P, *sx, *sg, acc, f64, block,
                                                  int64), num_warps=L.num_warps(block),
                   **L.EXACT),
            Launch(_bn_grad_fold_kernel, (C,), (P, bp), num_warps=L.num_warps(bp), **L.EXACT),
            Launch(_bn_dx_kernel, (C, P), (R, S, chunk, *sx, *sg, *sd[3], acc, f64, block,
                                           int64), num_warps=L.num_warps(block), **L.EXACT))
    sums, fold, dx_launch = plans
    part = _memory.empty((C, sums.grid[1], 2), acc_dt, x.device)
    s_sum = _memory.empty((C,), acc_dt, x.device)
    b_sum = _memory.empty((C,), acc_dt, x.device)
    dw = db = None
    if weight is not None:
        dw = _memory.empty((C,), weight.dtype, x.device)
        db = _memory.empty((C,), weight.dtype, x.device)
    L.ensure_driver()
    eps_b = _bits(eps)
    sums(part, g, x, mean, var, eps_b)
    fold(s_sum, b_sum, dw, db, part)
    dx_launch(dx, g, x, mean, var, s_sum, b_sum, weight, eps_b, _bits(1.0 / max(N * S, 1)))
    return dx, dw, db


def _batch_norm_backward_composed(g, x, weight, mean, var, eps: float):
    """``batch_norm_backward`` from elementwise ops and reductions (any layout)."""
    xf, gf = _compute(x), _compute(g)
    dims, n, shape = _geometry(x)
    mean, rstd = view(mean, shape), view(_rstd(var, eps), shape)
    xhat = mul(sub(xf, mean), rstd)
    s = _sum(mul(gf, xhat), dims, True)
    b = _sum(gf, dims, True)
    scale = rstd if weight is None else mul(rstd, _channel(weight, shape, xf.dtype))
    dx = mul(sub(sub(gf, mul(b, 1.0 / max(n, 1))), mul(xhat, mul(s, 1.0 / max(n, 1)))), scale)
    dx = dx if dx.dtype is x.dtype else astype(dx, x.dtype)
    if weight is None:
        return dx, None, None
    c = (x.shape[1],)
    s, b = view(s, c), view(b, c)
    if s.dtype is not weight.dtype:
        s, b = astype(s, weight.dtype), astype(b, weight.dtype)
    return dx, s, b
