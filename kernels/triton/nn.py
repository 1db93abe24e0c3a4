"""Fused neural-network ops: GELU, layer norm, cross-entropy, embedding (forward and backward).

Same names, signatures and results as kernels/numpy/nn.py. GELU and its gradient are formulas
of the elementwise family (elementwise.py); the other activations (SiLU ... GLU) have a kernel
of their own, with parameters and two outputs (activations.py); embedding is a gather of rows
and its backward an atomic scatter-add of rows (indexing.py). Layer norm and cross-entropy are
row kernels: a program owns BLOCK_M rows of N (C) elements; a row that fits SINGLE_MAX stays in
registers (one read), a longer one is walked in BLOCK_N chunks (two or three reads). Everything
computes in float32 for float16/bfloat16/float32 (float64 for float64) and rounds once at the
store.

Layer norm (x: (M, N), any strides):

    mean = sum(x) / N,  var = sum((x - mean)^2) / N,  rstd = 1 / sqrt(var + eps)   (IEEE)
    y = (x - mean) * rstd * weight + bias
    backward, xhat = (x - mean) * rstd, gw = g * weight:
    dx = rstd * (gw - sum(gw) / N - xhat * sum(gw * xhat) / N)
    dweight = sum_M(g * xhat), dbias = sum_M(g)   (the kernel writes g * xhat, float32; the
                                                   column sums are reduction.sum)

Cross-entropy (logits (N, C), target (N,) int64; eps: label smoothing):

    m = max_c x (0 when not finite),  lse = m + log(sum_c exp(x - m))
    loss = (1 - eps) (lse - x[t]) + eps (lse - mean_c x),   0 where t == ignore_index
    dlogits = g (exp(x - lse) - eps / C - (1 - eps) [c == t]),   0 rows where ignored

Targets and embedding indices are not range-checked here (that would need a device sync): the
caller checks them, as for every index array of the contract.
"""

from __future__ import annotations

import triton.language as tl
from triton.language.extra import libdevice

from ...runtime import dtype as D
from ...runtime import memory as _memory
from . import _launch as L
from ._launch import block_range
from .elementwise import NONE, OPS, PTR, constexprs, scalar_arg
from .elementwise import run as _run_ew
from .indexing import index, index_put_
from .launcher import Launch, jit
from .memory import astype, contiguous, copy_, full, result_array
from .reduction import sum as _sum
from .sorting import sort as _sort

__all__ = ["cross_entropy", "cross_entropy_backward", "embedding", "embedding_backward", "gelu",
           "gelu_backward", "layer_norm", "layer_norm_backward"]

_ACC = {D.float16: tl.float32, D.bfloat16: tl.float32, D.float32: tl.float32,
        D.float64: tl.float64}
_ACC_DT = L.ACC_DT


def _float(op, *arrays):
    for a in arrays:
        if a is not None and a.dtype not in _ACC:
            raise L.unsupported(op, a.dtype, "floating point only")


def _bits(x: float) -> int:
    return scalar_arg(float(x), 2)


# ------------------------------------------------------------------------------------------
# GELU (the elementwise family)
# ------------------------------------------------------------------------------------------
def _gelu_op(approximate, dtype):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if approximate == "tanh":
        return "gelu_tanh"
    return "gelu64" if dtype is D.float64 else "gelu"


_EW: dict = {}  # (formula name, y mode, dtype) -> the interned constexprs of elementwise.run


def _ew_consts(op: str, y_mode: int, dtype) -> tuple:
    """The constexprs of formula ``op`` over x (and y, by ``y_mode``) of ``dtype``, computed
    in its accumulation type (Note [interned constants] in elementwise.py)."""
    c = _EW.get(key := (op, y_mode, dtype))
    if c is None:
        c = _EW[key] = constexprs(OPS[op], PTR, y_mode, NONE, _ACC[dtype], L.TL[dtype])
    return c


def gelu(x, approximate, with_grad=False):
    """GELU(x) = x Phi(x) (approximate='none') or its tanh approximation ('tanh').
    ``with_grad``: (GELU(x), None): on the GPU the backward recomputes GELU'(x) in its one
    bandwidth-bound pass (reading x costs what reading a saved derivative would), so keeping
    one would only cost memory."""
    _float("gelu", x)
    op = _gelu_op(approximate, x.dtype)
    out = result_array(x.shape, x.dtype, x.device, x)
    out = _run_ew(out, x, None, None, 0, 0, _ew_consts(op, NONE, x.dtype))
    return (out, None) if with_grad else out


def gelu_backward(g, x, approximate, derivative=None):
    """g * GELU'(x), in x's dtype (g broadcast to x's shape); ``derivative``: GELU'(x) given,
    so only the product is left."""
    _float("gelu_backward", g, x)
    out = result_array(x.shape, x.dtype, x.device, g, x)
    if derivative is not None:
        return _run_ew(out, g, derivative, None, 0, 0, _ew_consts("mul", PTR, x.dtype))
    op = _gelu_op(approximate, x.dtype) + "_grad"
    return _run_ew(out, g, x, None, 0, 0, _ew_consts(op, PTR, x.dtype))


# ------------------------------------------------------------------------------------------
# Row kernels
# ------------------------------------------------------------------------------------------
@jit
def _rsqrt(v, F64: tl.constexpr):
    if F64:
        r = 1.0 / tl.sqrt(v)
    else:
        r = tl.math.div_rn(1.0, tl.sqrt_rn(v))
    return r


@jit
def _affine(y, w_ptr, b_ptr, cols, cmask, s_w, s_b, ACC: tl.constexpr):
    if w_ptr is not None:
        y = y * tl.load(w_ptr + cols * s_w, mask=cmask, other=0).to(ACC)[None, :]
    if b_ptr is not None:
        y = y + tl.load(b_ptr + cols * s_b, mask=cmask, other=0).to(ACC)[None, :]
    return y


@jit(do_not_specialize=["eps_bits"])
def _layer_norm_kernel(
    y_ptr,     # *T: (M, N) contiguous output, written
    mean_ptr,  # *ACC: (M,) row means, written
    rstd_ptr,  # *ACC: (M,) reciprocal standard deviations, written
    x_ptr,     # *T: the input; element (m, n) at m * s_xm + n * s_xn
    w_ptr,     # *W: weight (N,) with stride s_w, or None
    b_ptr,     # *W: bias (N,) with stride s_b, or None
    eps_bits: tl.int64,  # eps as float64 bits; the rest: the plan's (Note [plan launches])
    M, N, s_xm, s_xn, s_w, s_b,
    ACC: tl.constexpr, F64: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    SINGLE: tl.constexpr, INT64: tl.constexpr,
):
    rows, row_mask = block_range(M, BLOCK_M, INT64)
    eps = eps_bits.to(tl.int64).to(tl.float64, bitcast=True).to(ACC)
    x_row = rows[:, None] * s_xm
    y_row = rows[:, None] * N
    if SINGLE:  # the row stays in registers: one read
        cols = tl.arange(0, BLOCK_N)
        cmask = cols < N
        mask = row_mask[:, None] & cmask[None, :]
        x = tl.load(x_ptr + (x_row + cols[None, :] * s_xn), mask=mask, other=0).to(ACC)
        mean = tl.sum(x, axis=1) / N
        xc = tl.where(mask, x - mean[:, None], 0.0)
        rstd = _rsqrt(tl.sum(xc * xc, axis=1) / N + eps, F64)
        y = _affine(xc * rstd[:, None], w_ptr, b_ptr, cols, cmask, s_w, s_b, ACC)
        tl.store(y_ptr + (y_row + cols[None, :]), y, mask=mask)
    else:  # three reads: mean, variance, output
        acc = tl.zeros([BLOCK_M, BLOCK_N], ACC)
        for n0 in range(0, N, BLOCK_N):
            cols = n0 + tl.arange(0, BLOCK_N)
            mask = row_mask[:, None] & (cols < N)[None, :]
            acc += tl.load(x_ptr + (x_row + cols[None, :] * s_xn), mask=mask, other=0).to(ACC)
        mean = tl.sum(acc, axis=1) / N
        acc = tl.zeros([BLOCK_M, BLOCK_N], ACC)
        for n0 in range(0, N, BLOCK_N):
            cols = n0 + tl.arange(0, BLOCK_N)
            mask = row_mask[:, None] & (cols < N)[None, :]
            x = tl.load(x_ptr + (x_row + cols[None, :] * s_xn), mask=mask, other=0).to(ACC)
            xc = tl.where(mask, x - mean[:, None], 0.0)
            acc += xc * xc
        rstd = _rsqrt(tl.sum(acc, axis=1) / N + eps, F64)
        for n0 in range(0, N, BLOCK_N):
            cols = n0 + tl.arange(0, BLOCK_N)
            cmask = cols < N
            mask = row_mask[:, None] & cmask[None, :]
            x = tl.load(x_ptr + (x_row + cols[None, :] * s_xn), mask=mask, other=0).to(ACC)
            y = _affine((x - mean[:, None]) * rstd[:, None], w_ptr, b_ptr, cols, cmask, s_w,
                        s_b, ACC)
            tl.store(y_ptr + (y_row + cols[None, :]), y, mask=mask)
    tl.store(mean_ptr + rows, mean, mask=row_mask)
    tl.store(rstd_ptr + rows, rstd, mask=row_mask)


@jit
def _ln_bwd_tile(g_ptr, x_ptr, w_ptr, rows, row_mask, cols, N, g_row, x_row, s_gn, s_xn, s_w,
                 mean, rstd, ACC: tl.constexpr):
    """One (rows, cols) tile of the backward's inputs, read by both of its passes: the mask,
    the output gradient g, xhat = (x - mean) * rstd, and gw = g * weight (g without one)."""
    cmask = cols < N
    mask = row_mask[:, None] & cmask[None, :]
    g = tl.load(g_ptr + (g_row + cols[None, :] * s_gn), mask=mask, other=0).to(ACC)
    x = tl.load(x_ptr + (x_row + cols[None, :] * s_xn), mask=mask, other=0).to(ACC)
    xhat = (x - mean[:, None]) * rstd[:, None]
    if w_ptr is not None:
        gw = g * tl.load(w_ptr + cols * s_w, mask=cmask, other=0).to(ACC)[None, :]
    else:
        gw = g
    return mask, g, xhat, gw


@jit
def _layer_norm_bwd_kernel(
    dx_ptr,    # *T: (M, N) contiguous input gradient, written
    part_ptr,  # *ACC: (P, 2, N) contiguous, P = the programs: each program's column sums of
    #            g * xhat (dweight's) and of g (dbias'), written when w_ptr, else None
    g_ptr,     # *G: the output gradient; (m, n) at m * s_gm + n * s_gn
    x_ptr,     # *T: the forward input; (m, n) at m * s_xm + n * s_xn
    w_ptr,     # *W: weight (N,) with stride s_w, or None
    mean_ptr,  # *ACC: (M,) the forward's means (stride s_mean)
    rstd_ptr,  # *ACC: (M,) the forward's rstd (stride s_rstd)
    M, N, s_gm, s_gn, s_xm, s_xn, s_w, s_mean, s_rstd,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr,
):
    rows, row_mask = block_range(M, BLOCK_M, INT64)
    mean = tl.load(mean_ptr + rows * s_mean, mask=row_mask, other=0).to(ACC)
    rstd = tl.load(rstd_ptr + rows * s_rstd, mask=row_mask, other=0).to(ACC)
    g_row = rows[:, None] * s_gm
    x_row = rows[:, None] * s_xm
    s1 = tl.zeros([BLOCK_M, BLOCK_N], ACC)  # gw * xhat
    s2 = tl.zeros([BLOCK_M, BLOCK_N], ACC)  # gw
    pid = tl.program_id(0)
    if INT64:
        pid = pid.to(tl.int64)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask, g, xhat, gw = _ln_bwd_tile(g_ptr, x_ptr, w_ptr, rows, row_mask, cols, N, g_row,
                                         x_row, s_gn, s_xn, s_w, mean, rstd, ACC)
        if w_ptr is not None:  # (g is 0 on masked lanes, xhat finite there)
            tl.store(part_ptr + (2 * pid * N + cols), tl.sum(g * xhat, axis=0), mask=cols < N)
            tl.store(part_ptr + ((2 * pid + 1) * N + cols), tl.sum(g, axis=0), mask=cols < N)
        s1 += tl.where(mask, gw * xhat, 0.0)
        s2 += gw
    c1 = tl.sum(s1, axis=1) / N
    c2 = tl.sum(s2, axis=1) / N
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask, g, xhat, gw = _ln_bwd_tile(g_ptr, x_ptr, w_ptr, rows, row_mask, cols, N, g_row,
                                         x_row, s_gn, s_xn, s_w, mean, rstd, ACC)
        dx = rstd[:, None] * (gw - c2[:, None] - xhat * c1[:, None])
        tl.store(dx_ptr + (rows[:, None] * N + cols[None, :]), dx, mask=mask)


@jit
def _layer_norm_param_grads_kernel(
    dw_ptr,    # *W: (N,) dweight, written: the column sums of the partials' first halves
    db_ptr,    # *W: (N,) dbias, written: those of their second halves
    part_ptr,  # *ACC: (P, 2, N) contiguous, _layer_norm_bwd_kernel's partials
    P, N,  # the rest: the plan's
    BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
):
    # both gradients in one launch, each into its own array (Note [Gradient stealing]), each
    # summed in the accumulation type and rounded once to the weight's dtype
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    sw = tl.zeros([BLOCK_P, BLOCK_N], part_ptr.dtype.element_ty)
    sb = tl.zeros([BLOCK_P, BLOCK_N], part_ptr.dtype.element_ty)
    for p0 in range(0, P, BLOCK_P):
        rows = p0 + tl.arange(0, BLOCK_P)
        at = part_ptr + (rows[:, None] * (2 * N) + cols[None, :])
        mask = (rows < P)[:, None] & cmask[None, :]
        sw += tl.load(at, mask=mask, other=0)
        sb += tl.load(at + N, mask=mask, other=0)
    tl.store(dw_ptr + cols, tl.sum(sw, axis=0), mask=cmask)
    tl.store(db_ptr + cols, tl.sum(sb, axis=0), mask=cmask)


@jit(do_not_specialize=["ignore_index", "ls_bits"])
def _cross_entropy_kernel(
    loss_ptr,  # *T: (N,) per-row losses, written
    lse_ptr,   # *ACC: (N,) per-row log-sum-exp, written
    x_ptr,     # *T: logits; (r, c) at r * s_xr + c * s_xc
    t_ptr,     # *int64: targets (N,) with stride s_t
    R, C, s_xr, s_xc, s_t, ignore_index,
    ls_bits: tl.int64,  # label smoothing as float64 bits
    SMOOTH: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    INT64: tl.constexpr,
):
    rows, row_mask = block_range(R, BLOCK_M, INT64)
    ls = ls_bits.to(tl.int64).to(tl.float64, bitcast=True).to(ACC)
    x_row = rows[:, None] * s_xr
    mx = tl.full([BLOCK_M, BLOCK_N], float("-inf"), ACC)
    tot = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    for n0 in range(0, C, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < C)[None, :]
        x = tl.load(x_ptr + (x_row + cols[None, :] * s_xc), mask=mask,
                    other=float("-inf")).to(ACC)
        mx = tl.maximum(mx, x)
        tot += tl.where(mask, x, 0.0)
    m = tl.max(mx, axis=1)
    m = tl.where(tl.abs(m) < float("inf"), m, 0.0)  # 0 when not finite (NaN too)
    acc = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    for n0 in range(0, C, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < C)[None, :]
        x = tl.load(x_ptr + (x_row + cols[None, :] * s_xc), mask=mask,
                    other=float("-inf")).to(ACC)
        acc += tl.where(mask, libdevice.exp(x - m[:, None]), 0.0)
    lse = m + libdevice.log(tl.sum(acc, axis=1))
    t = tl.load(t_ptr + rows * s_t, mask=row_mask, other=0)
    valid = t != ignore_index
    tc = tl.where(valid, t, 0)
    xt = tl.load(x_ptr + (rows * s_xr + tc * s_xc), mask=row_mask & valid, other=0).to(ACC)
    loss = lse - xt
    if SMOOTH:
        loss = (1.0 - ls) * loss + ls * (lse - tl.sum(tot, axis=1) / C)
    tl.store(loss_ptr + rows, tl.where(valid, loss, 0.0), mask=row_mask)
    tl.store(lse_ptr + rows, lse, mask=row_mask)


@jit(do_not_specialize=["ignore_index", "ls_bits"])
def _cross_entropy_bwd_kernel(
    dx_ptr,    # *T: (N, C) contiguous logits gradient, written
    g_ptr,     # *G: (N,) per-row loss gradients with stride s_g
    x_ptr,     # *T: logits; (r, c) at r * s_xr + c * s_xc
    t_ptr,     # *int64: targets (N,) with stride s_t
    lse_ptr,   # *ACC: (N,) the forward's log-sum-exp with stride s_lse
    R, C, s_g, s_xr, s_xc, s_t, s_lse, ignore_index,
    ls_bits: tl.int64,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr,
):
    rows, row_mask = block_range(R, BLOCK_M, INT64)
    ls = ls_bits.to(tl.int64).to(tl.float64, bitcast=True).to(ACC)
    t = tl.load(t_ptr + rows * s_t, mask=row_mask, other=0)
    g = tl.load(g_ptr + rows * s_g, mask=row_mask, other=0).to(ACC)
    g = tl.where(t != ignore_index, g, 0.0)
    lse = tl.load(lse_ptr + rows * s_lse, mask=row_mask, other=0).to(ACC)
    for n0 in range(0, C, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < C)[None, :]
        x = tl.load(x_ptr + (rows[:, None] * s_xr + cols[None, :] * s_xc), mask=mask,
                    other=0).to(ACC)
        d = libdevice.exp(x - lse[:, None]) - ls / C
        d = tl.where(cols[None, :] == t[:, None], d - (1.0 - ls), d)
        tl.store(dx_ptr + (rows[:, None] * C + cols[None, :]), d * g[:, None], mask=mask)


@jit(do_not_specialize=["ignore_index"])
def _mean_over_targets_kernel(
    mean_ptr,   # *T: 0-d, written: the sum of the losses over the counted rows' count
    count_ptr,  # *T: 0-d, written: the rows whose target is not ignore_index
    loss_ptr,   # *T: (N,) per-row losses (0 on ignored rows), stride s_l
    t_ptr,      # *int64: (N,) targets, stride s_t
    ignore_index, N, s_l, s_t,  # (the rest: the plan's)
    T: tl.constexpr, ACC: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr,
):
    # one program: the sum and the count, each rounded to T, then their quotient rounded to T,
    # as the reduction, the conversion and the division would give them one launch each
    total = tl.zeros([BLOCK], ACC)
    count = tl.zeros([BLOCK], tl.int64)
    for start in range(0, N, BLOCK):
        rows = start + tl.arange(0, BLOCK)
        mask = rows < N
        total += tl.load(loss_ptr + rows * s_l, mask=mask, other=0).to(ACC)
        t = tl.load(t_ptr + rows * s_t, mask=mask, other=ignore_index)
        count += (t != ignore_index).to(tl.int64)
    total_t = tl.sum(total, axis=0).to(T)
    count_t = tl.sum(count, axis=0).to(ACC).to(T)  # (exact below 2**24 rows)
    if F64:
        mean = total_t / count_t
    else:
        mean = tl.math.div_rn(total_t.to(ACC), count_t.to(ACC))
    tl.store(mean_ptr, mean.to(T))
    tl.store(count_ptr, count_t)


# Plans: a ``Launch`` per layout (Note [plan launches]), the kernels' pointers (and layer
# norm's eps) passed per call.
_PLANS = L.plan_cache()


def _row_block(N):
    """BLOCK_N for a row of N: the whole row up to SINGLE_MAX, else MAX_BLOCK_N chunks."""
    n = L.next_pow2(N)
    return n if n <= L.SINGLE_MAX else min(n, L.MAX_BLOCK_N)


def _grid_rows(M, bn):
    bm = min(L.next_pow2(M), max(1, L.ROW_TILE // bn))
    return bm, (L.cdiv(M, bm),), L.num_warps(bm * bn)


# ------------------------------------------------------------------------------------------
# Layer norm
# ------------------------------------------------------------------------------------------
def layer_norm(x, weight, bias, eps):
    """Normalises each row of the 2-D ``x`` (M, N); returns (y, mean, rstd): y in x's dtype,
    mean and rstd (M,) float32 (float64 for float64)."""
    _float("layer_norm", x, weight, bias)
    if x.ndim != 2:
        raise ValueError(f"layer_norm: expected a 2-D input, got shape {x.shape}")
    M, N = x.shape
    acc_dt = _ACC_DT[x.dtype]
    y = _memory.empty((M, N), x.dtype, x.device)
    mean = _memory.empty((M,), acc_dt, x.device)
    rstd = _memory.empty((M,), acc_dt, x.device)
    if M == 0:
        return y, mean, rstd
    key = ("layer_norm", x.shape, x.strides, x.dtype, weight.strides if weight is not None
           else None, bias.strides if bias is not None else None)
    launch = _PLANS.get(key) or _layer_norm_plan(key)
    L.ensure_driver()
    launch(y, mean, rstd, x, weight, bias, _bits(eps))
    return y, mean, rstd


def _layer_norm_plan(key):
    _, (M, N), (s_xm, s_xn), dtype, sw, sb = key
    bn = _row_block(N)
    bm, grid, warps = _grid_rows(M, bn)
    int64 = L.needs_int64((M, N), (s_xm, s_xn)) or M * N >= L._INT32_SAFE
    launch = _PLANS[key] = Launch(
        _layer_norm_kernel, grid, (M, N, s_xm, s_xn, sw[0] if sw else 0, sb[0] if sb else 0,
                                   _ACC[dtype], dtype is D.float64, bm, bn, bn >= N, int64),
        num_warps=warps, **L.EXACT)
    return launch


def layer_norm_backward(g, x, weight, mean, rstd):
    """(dx, dweight, dbias) of layer_norm for 2-D g/x given the forward's mean and rstd;
    dweight and dbias are None when ``weight`` is None."""
    _float("layer_norm_backward", g, x, weight)
    M, N = x.shape
    acc_dt = _ACC_DT[x.dtype]
    dx = _memory.empty((M, N), x.dtype, x.device)
    if weight is not None and M == 0:
        return dx, full((N,), 0, weight.dtype, x.device), full((N,), 0, weight.dtype, x.device)
    part = None
    if M and N:
        key = ("layer_norm_backward", x.shape, g.strides, x.strides, x.dtype,
               weight.strides if weight is not None else None, mean.strides, rstd.strides)
        launch = _PLANS.get(key) or _layer_norm_backward_plan(key)
        if weight is not None:  # the programs' column sums of g * xhat and g
            part = _memory.empty((launch.grid[0], 2 * N), acc_dt, x.device)
        L.ensure_driver()
        launch(dx, part, g, x, weight, mean, rstd)
    if weight is None:
        return dx, None, None
    if part is None:  # N == 0
        part = _memory.empty((1, 0), acc_dt, x.device)
    # dweight and dbias are two arrays (in one storage each would be copied by
    # AccumulateGrad: Note [Gradient stealing]), summed from the P partial rows in one launch;
    # past PARAM_GRADS_MAX_P rows, programs over the columns alone would be too few for the
    # rows, and the reduction kernel splits them (a launch each, and a conversion for half)
    P = part.shape[0]
    if P > PARAM_GRADS_MAX_P or N == 0:
        return dx, *(_to(_sum(part.as_strided((P, N), (2 * N, 1), part.offset + i * N), (0,),
                              False), weight.dtype) for i in (0, 1))
    dw = _memory.empty((N,), weight.dtype, x.device)
    db = _memory.empty((N,), weight.dtype, x.device)
    key = ("layer_norm_param_grads", P, N)
    launch = _PLANS.get(key) or _layer_norm_param_grads_plan(key)
    launch(dw, db, part)
    return dx, dw, db


PARAM_GRADS_MAX_P = 2048  # partial rows the one-launch column sums take (M / BLOCK_M)


def _layer_norm_param_grads_plan(key):
    _, P, N = key
    bn = min(L.next_pow2(N), 128, L.MAX_BLOCK_N)  # (a program per 128 columns)
    bp = min(L.next_pow2(P), max(1, L.ROW_TILE // bn))
    launch = _PLANS[key] = Launch(_layer_norm_param_grads_kernel, (L.cdiv(N, bn),),
                                  (P, N, bp, bn), num_warps=L.num_warps(bp * bn), **L.EXACT)
    return launch


def _layer_norm_backward_plan(key):
    _, (M, N), sg, sx, dtype, sw, s_mean, s_rstd = key
    bn = min(L.next_pow2(N), L.MAX_BLOCK_N)
    bm, grid, warps = _grid_rows(M, bn)
    int64 = (L.needs_int64((M, N), sx) or L.needs_int64((M, N), sg)
             or M * N >= L._INT32_SAFE)
    launch = _PLANS[key] = Launch(
        _layer_norm_bwd_kernel, grid, (M, N, *sg, *sx, sw[0] if sw else 0, s_mean[0],
                                       s_rstd[0], _ACC[dtype], bm, bn, int64),
        num_warps=warps, **L.EXACT)
    return launch


def _to(a, dtype):
    return a if a.dtype is dtype else astype(a, dtype)


# ------------------------------------------------------------------------------------------
# Cross-entropy
# ------------------------------------------------------------------------------------------
def cross_entropy(logits, target, ignore_index, label_smoothing):
    """Per-row cross-entropy of logits (N, C) against int64 targets (N,): (loss (N,) in logits'
    dtype, lse (N,) float32 (float64 for float64)); loss is 0 on ignored rows."""
    _float("cross_entropy", logits)
    R = logits.shape[0]
    loss = _memory.empty((R,), logits.dtype, logits.device)
    lse = _memory.empty((R,), _ACC_DT[logits.dtype], logits.device)
    if R == 0:
        return loss, lse
    target = _as_int64(target)
    key = ("cross_entropy", logits.shape, logits.strides, target.strides, logits.dtype,
           int(ignore_index), _bits(label_smoothing))
    launch = _PLANS.get(key) or _cross_entropy_plan(key)
    L.ensure_driver()
    launch(loss, lse, logits, target)
    return loss, lse


def _cross_entropy_plan(key):
    _, (R, C), sx, (s_t,), dtype, ignore_index, ls_bits = key
    bn = min(L.next_pow2(max(C, 1)), L.MAX_BLOCK_N)
    bm, grid, warps = _grid_rows(R, bn)
    int64 = L.needs_int64((R, C), sx) or R * C >= L._INT32_SAFE
    launch = _PLANS[key] = Launch(
        _cross_entropy_kernel, grid, (R, C, *sx, s_t, ignore_index, ls_bits, ls_bits != 0,
                                      _ACC[dtype], bm, bn, int64), num_warps=warps, **L.EXACT)
    return launch


def cross_entropy_backward(g, logits, target, lse, ignore_index, label_smoothing):
    """d(sum_i g_i loss_i) / d logits, in logits' dtype (0 rows where ignored)."""
    _float("cross_entropy_backward", g, logits)
    R, C = logits.shape
    dx = _memory.empty((R, C), logits.dtype, logits.device)
    if R == 0 or C == 0:
        return dx
    target = _as_int64(target)
    key = ("cross_entropy_backward", logits.shape, g.strides, logits.strides, target.strides,
           lse.strides, logits.dtype, int(ignore_index), _bits(label_smoothing))
    launch = _PLANS.get(key) or _cross_entropy_backward_plan(key)
    L.ensure_driver()
    launch(dx, g, logits, target, lse)
    return dx


def mean_over_targets(loss, target, ignore_index):
    """The mean of the per-row losses ``loss`` (N,) over the rows whose target (int64, (N,))
    is not ``ignore_index``, and their count, both 0-d in loss's dtype, in one launch (none
    counted: 0 / 0, NaN, as PyTorch's); the NumPy backend's sum, conversion and division."""
    _float("mean_over_targets", loss)
    if loss.ndim != 1 or target.shape != loss.shape:
        raise ValueError(f"mean_over_targets: expected (N,) losses and targets, got "
                         f"{loss.shape} and {target.shape}")
    mean = _memory.empty((), loss.dtype, loss.device)
    count = _memory.empty((), loss.dtype, loss.device)
    key = ("mean_over_targets", loss.shape, loss.strides, target.strides, loss.dtype)
    launch = _PLANS.get(key) or _mean_over_targets_plan(key)
    L.ensure_driver()
    launch(mean, count, loss, _as_int64(target), int(ignore_index))
    return mean, count


def _mean_over_targets_plan(key):
    _, (n,), (s_l,), (s_t,), dtype = key
    block = min(max(L.next_pow2(n), 16), L.MAX_BLOCK_N)
    launch = _PLANS[key] = Launch(
        _mean_over_targets_kernel, (1,), (n, s_l, s_t, L.TL[dtype], _ACC[dtype],
                                          dtype is D.float64, block),
        num_warps=L.num_warps(block), **L.EXACT)
    return launch


def _cross_entropy_backward_plan(key):
    _, (R, C), (s_g,), sx, (s_t,), (s_lse,), dtype, ignore_index, ls_bits = key
    bn = min(L.next_pow2(C), L.MAX_BLOCK_N)
    bm, grid, warps = _grid_rows(R, bn)
    int64 = L.needs_int64((R, C), sx) or R * C >= L._INT32_SAFE
    launch = _PLANS[key] = Launch(
        _cross_entropy_bwd_kernel, grid, (R, C, s_g, *sx, s_t, s_lse, ignore_index, ls_bits,
                                          _ACC[dtype], bm, bn, int64), num_warps=warps,
        **L.EXACT)
    return launch


def _as_int64(t):
    return t if t.dtype is D.int64 else astype(t, D.int64)


# ------------------------------------------------------------------------------------------
# Embedding
# ------------------------------------------------------------------------------------------
def embedding(weight, indices):
    """Rows of ``weight`` (V, D) picked by the integer array ``indices``: indices.shape + (D,)."""
    return index(weight, (_as_int64(indices),))


# Note [deterministic embedding backward]: PyTorch's CUDA embedding backward sorts the indices
# and sums each row's gradients in one pass, so a training step gives the same bits every time.
# Float atomics (index_put_ with accumulate) sum in whatever order the blocks arrive: on the
# H200 a captured GPT step's fifth loss moved by an ulp from the eager one (2026-12-04). Here
# the indices are sorted stably (sorting.py's rank sort: equal indices keep their positions'
# order), and the program at the start of each run of equal indices adds that run's gradient
# rows in position order, from zero, in the accumulation dtype: the order of the CPU backend's
# compiled loop (kernels/numpy/nn_loops.py), so the two agree bit for bit (its NumPy form,
# without Numba, sums each group pairwise). The rank sort's work grows as N^2: past
# DETERMINISTIC_MAX_N indices (16 x 1024 tokens) the atomics take over, as PyTorch's
# index_add does.
DETERMINISTIC_MAX_N = 1 << 14


@jit
def _embedding_runs_kernel(
    out_ptr,   # *ACC: (V, D) contiguous, zeros; row v written by the program starting v's run
    g_ptr,     # *T: (N, D) contiguous gradient rows, row i for the i-th index
    key_ptr,   # *int64: the N indices, sorted stably
    pos_ptr,   # *int64: the position of each sorted index among the N
    N, D, padding,  # padding: the row that gets nothing (-1: none)
    ACC: tl.constexpr, BLOCK_D: tl.constexpr,
):
    p = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cmask = cols < D
    v = tl.load(key_ptr + p)
    before = tl.load(key_ptr + tl.maximum(p - 1, 0))
    if ((p == 0) | (before != v)) & (v != padding):
        acc = tl.zeros([BLOCK_D], ACC)
        q = p
        at = v
        while at == v:  # the run of v: positions in increasing order
            row = tl.load(pos_ptr + q)
            acc += tl.load(g_ptr + row * D + cols, mask=cmask, other=0.0).to(ACC)
            q += 1
            at = tl.load(key_ptr + q, mask=q < N, other=-1)
        tl.store(out_ptr + v * D + cols, acc, mask=cmask)


def embedding_backward(g, indices, num_weights, padding_idx):
    """The rows of ``g`` (indices.shape + (D,)) summed into (num_weights, D) at ``indices``
    (half types accumulate in float32, rounded once); the ``padding_idx`` row gets none. Each
    row's sum runs in the indices' order, deterministically, up to DETERMINISTIC_MAX_N indices
    (Note [deterministic embedding backward])."""
    _float("embedding_backward", g)
    d = g.shape[-1]
    acc_dt = _ACC_DT[g.dtype]
    out = full((num_weights, d), 0, acc_dt, g.device)
    n = indices.numel
    if n == 0 or d == 0:
        return _to(out, g.dtype)
    flat_idx = contiguous(_as_int64(indices)).view((n,))
    flat_g = contiguous(g).view((n, d))
    if n > DETERMINISTIC_MAX_N:
        index_put_(out, (flat_idx,), flat_g, True)
        if padding_idx is not None:
            copy_(out.getitem((int(padding_idx) % num_weights,)), 0)
        return _to(out, g.dtype)
    keys, positions = _sort(flat_idx, 0, False)
    pad = -1 if padding_idx is None else int(padding_idx) % num_weights
    key = (_embedding_runs_kernel, n, d, pad, acc_dt)
    launch = _PLANS.get(key)
    if launch is None:
        block = min(L.next_pow2(d), 256)
        launch = _PLANS[key] = Launch(_embedding_runs_kernel, (n, L.cdiv(d, block)),
                                      (n, d, pad, L.TL[acc_dt], block),
                                      num_warps=L.num_warps(block), **L.EXACT)
    L.ensure_driver()
    launch(out, flat_g, keys, positions)
    return _to(out, g.dtype)

