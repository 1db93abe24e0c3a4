"""2-D convolution as implicit GEMM: forward, input gradient and weight gradient.

Same names, signatures and results as kernels/numpy/conv.py, without its column buffer: each
kernel is a tiled ``tl.dot`` GEMM whose operand tiles are gathered straight from the NCHW
arrays, the im2col (or col2im) index computed on the fly from the tile's row and reduction
indices, padding and edges masked to zero. Per group g (O/g = Og output channels over
C/g = Cg input channels, taps KH x KW):

    forward   y[m, o]  = sum_k  xcol[m, k] w[o, k]      m = (n, oh, ow), k = (c, kh, kw)
              xcol[m, k] = x[n, c, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw]   (0 off the input)
    dx        dx[m, c] = sum_k  gcol[m, k] w[o, c, kh, kw]   m = (n, ih, iw), k = (o, kh, kw)
              gcol[m, k] = g[n, o, oh, ow] where ih = oh*sh - pt + kh*dh (likewise iw) has a
              solution oh in [0, OH) (the transposed convolution; 0 elsewhere)
    dw        dw[o, k] = sum_m  g[n, o, oh, ow] xcol[m, k]   m = (n, oh, ow) over the batch,
              split over SPLIT programs when the GEMM has few tiles (float32 partial sums,
              added by reduction.sum)
    db        g summed over (N, OH, OW) (reduction.sum)

Programs: (row tiles, column tiles, groups); operands with any strides, outputs contiguous.
Everything accumulates in float32 (float64 for float64) and rounds once at the store. float32
products follow matmul's precision setting (IEEE unless TF32 is allowed); float64 multiplies
and sums a (BLOCK_M, BLOCK_K, BLOCK_N) product instead of ``tl.dot`` (compiles everywhere).
The kernel size (KH, KW) is a compile-time constant, so the tap arithmetic is shifts and
multiplies for the usual sizes.
"""

from __future__ import annotations

import triton.language as tl

from ...runtime import dtype as D
from ...runtime import memory as _memory
from ..geometry import conv_geometry
from . import _launch as L
from .launcher import jit
from .matmul import _precision
from .memory import astype, full
from .reduction import sum as _sum

__all__ = ["conv2d", "conv2d_backward"]

_ACC = {D.float16: tl.float32, D.bfloat16: tl.float32, D.float32: tl.float32,
        D.float64: tl.float64}
_ACC_DT = L.ACC_DT

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) per dtype family; the column tile
# shrinks to the channel count (not below 16, tl.dot's smallest).
CONFIGS = {
    "half": (64, 64, 32, 4, 3),
    "f32": (64, 64, 32, 4, 3),
    "f64": (32, 32, 8, 4, 1),
}
_FAMILY = {D.float16: "half", D.bfloat16: "half", D.float32: "f32", D.float64: "f64"}
MIN_COLS = 16
# dw's GEMM splits its long reduction (N*OH*OW) until about this many programs run
TARGET_PROGRAMS = 264
MIN_SPLIT_STEPS = 4  # reduction steps (BLOCK_K each) per split program, at least


@jit
def _mac(acc, a, b, ACC: tl.constexpr, PRECISION: tl.constexpr, USE_DOT: tl.constexpr):
    if USE_DOT:
        acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC)
    else:
        acc += tl.sum(a[:, :, None].to(ACC) * b[None, :, :].to(ACC), axis=1)
    return acc


@jit
def _program_tile(BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr):
    """This program's BLOCK_M flat positions, BLOCK_N channels (within its group) and group:
    axes 0, 1 and 2 of the grid."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    grp = tl.program_id(2)
    if INT64:
        pid_m = pid_m.to(tl.int64)
        pid_n = pid_n.to(tl.int64)
        grp = grp.to(tl.int64)
    return pid_m * BLOCK_M + tl.arange(0, BLOCK_M), pid_n * BLOCK_N + tl.arange(0, BLOCK_N), grp


@jit
def _unflatten(r, plane, width):
    """Flat positions over (N, H, W) planes of ``plane`` = H * W: (n, position in the
    plane, h, w)."""
    n_ = r // plane
    pos = r - n_ * plane
    h = pos // width
    return n_, pos, h, pos - h * width


@jit
def _taps(k0, K, KH: tl.constexpr, KW: tl.constexpr, BLOCK_K: tl.constexpr,
          INT64: tl.constexpr):
    """The reduction step at k0 over (channel, kh, kw), flattened: each lane's channel,
    tap row, tap column and whether it is below K."""
    rk = k0 + tl.arange(0, BLOCK_K)
    if INT64:
        rk = rk.to(tl.int64)
    c = rk // (KH * KW)
    tap = rk - c * (KH * KW)
    kh = tap // KW
    return c, kh, tap - kh * KW, rk < K


@jit
def _conv_fwd_kernel(
    y_ptr,  # *T: (N, O, OH, OW) contiguous, written
    x_ptr,  # *T: (N, C, H, W), element (n, c, h, w) at n*s_xn + c*s_xc + h*s_xh + w*s_xw
    w_ptr,  # *T: (O, Cg, KH, KW) with strides s_wo, s_wc, s_wh, s_ww
    b_ptr,  # *T: bias (O,) with stride s_b, or None
    M, H, W, O, OH, OW, Cg, Og,
    s_xn, s_xc, s_xh, s_xw, s_wo, s_wc, s_wh, s_ww, s_b,
    sh, sw, pt, pl, dh, dw,
    KH: tl.constexpr, KW: tl.constexpr,
    ACC: tl.constexpr, PRECISION: tl.constexpr, USE_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, INT64: tl.constexpr,
):
    # rows: output positions (n, oh, ow); columns: output channels within the group
    rm, rn, grp = _program_tile(BLOCK_M, BLOCK_N, INT64)
    m_mask = rm < M
    n_mask = rn < Og
    L_out = OH * OW
    n_, pos, oh_, ow_ = _unflatten(rm, L_out, OW)
    ih0 = oh_ * sh - pt
    iw0 = ow_ * sw - pl
    x_row = n_ * s_xn + grp * Cg * s_xc
    oc = grp * Og + rn
    w_col = oc * s_wo
    K = Cg * (KH * KW)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    for k0 in range(0, K, BLOCK_K):
        c, kh, kw, k_mask = _taps(k0, K, KH, KW, BLOCK_K, INT64)
        ih = ih0[:, None] + (kh * dh)[None, :]
        iw = iw0[:, None] + (kw * dw)[None, :]
        a_mask = (m_mask[:, None] & k_mask[None, :] & (ih >= 0) & (ih < H) & (iw >= 0)
                  & (iw < W))
        a = tl.load(x_ptr + (x_row[:, None] + (c * s_xc)[None, :] + ih * s_xh + iw * s_xw),
                    mask=a_mask, other=0.0)
        b = tl.load(w_ptr + (w_col[None, :] + (c * s_wc + kh * s_wh + kw * s_ww)[:, None]),
                    mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        acc = _mac(acc, a, b, ACC, PRECISION, USE_DOT)
    if b_ptr is not None:
        acc += tl.load(b_ptr + oc * s_b, mask=n_mask, other=0.0).to(ACC)[None, :]
    y_off = (n_ * O * L_out + pos)[:, None] + (oc * L_out)[None, :]
    tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty),
             mask=m_mask[:, None] & n_mask[None, :])


@jit
def _conv_dx_kernel(
    dx_ptr,  # *T: (N, C, H, W) contiguous, written
    g_ptr,   # *T: (N, O, OH, OW), element (n, o, oh, ow) at n*s_gn + o*s_go + ...
    w_ptr,   # *T: (O, Cg, KH, KW) with strides s_wo, s_wc, s_wh, s_ww
    M, C, H, W, OH, OW, Cg, Og,
    s_gn, s_go, s_gh, s_gw, s_wo, s_wc, s_wh, s_ww,
    sh, sw, pt, pl, dh, dw,
    KH: tl.constexpr, KW: tl.constexpr,
    ACC: tl.constexpr, PRECISION: tl.constexpr, USE_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, INT64: tl.constexpr,
):
    # rows: input positions (n, ih, iw); columns: input channels within the group
    rm, rn, grp = _program_tile(BLOCK_M, BLOCK_N, INT64)
    m_mask = rm < M
    n_mask = rn < Cg
    L_in = H * W
    n_, pos, ih_, iw_ = _unflatten(rm, L_in, W)
    th0 = ih_ + pt
    tw0 = iw_ + pl
    g_row = n_ * s_gn + grp * Og * s_go
    ic = grp * Cg + rn
    K = Og * (KH * KW)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    for k0 in range(0, K, BLOCK_K):
        o, kh, kw, k_mask = _taps(k0, K, KH, KW, BLOCK_K, INT64)
        th = th0[:, None] - (kh * dh)[None, :]  # oh * sh when this tap reaches ih from oh
        tw = tw0[:, None] - (kw * dw)[None, :]
        th_ok = th >= 0
        tw_ok = tw >= 0
        th = tl.where(th_ok, th, 0)
        tw = tl.where(tw_ok, tw, 0)
        oh = th // sh
        ow = tw // sw
        a_mask = (m_mask[:, None] & k_mask[None, :] & th_ok & tw_ok & (oh * sh == th)
                  & (ow * sw == tw) & (oh < OH) & (ow < OW))
        a = tl.load(g_ptr + (g_row[:, None] + (o * s_go)[None, :] + oh * s_gh + ow * s_gw),
                    mask=a_mask, other=0.0)
        b = tl.load(w_ptr + ((grp * Og + o) * s_wo + kh * s_wh + kw * s_ww)[:, None]
                    + (rn * s_wc)[None, :], mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        acc = _mac(acc, a, b, ACC, PRECISION, USE_DOT)
    dx_off = (n_ * C * L_in + pos)[:, None] + (ic * L_in)[None, :]
    tl.store(dx_ptr + dx_off, acc.to(dx_ptr.dtype.element_ty),
             mask=m_mask[:, None] & n_mask[None, :])


@jit
def _conv_dw_kernel(
    dw_ptr,  # *ACC: (SPLIT, O, Cg*KH*KW) contiguous partial sums, written
    g_ptr,   # *T: (N, O, OH, OW) with strides s_gn, s_go, s_gh, s_gw
    x_ptr,   # *T: (N, C, H, W) with strides s_xn, s_xc, s_xh, s_xw
    P, H, W, O, OH, OW, Cg, Og, chunk,
    s_gn, s_go, s_gh, s_gw, s_xn, s_xc, s_xh, s_xw,
    sh, sw, pt, pl, dh, dw,
    KH: tl.constexpr, KW: tl.constexpr,
    ACC: tl.constexpr, PRECISION: tl.constexpr, USE_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, INT64: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_z = tl.program_id(2)
    n_groups = O // Og
    grp = pid_z % n_groups
    split = pid_z // n_groups
    if INT64:
        pid_m = pid_m.to(tl.int64)
        pid_n = pid_n.to(tl.int64)
        grp = grp.to(tl.int64)
        split = split.to(tl.int64)
    KC = Cg * (KH * KW)
    ro = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # output channels within the group
    rc = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # (c, kh, kw) within the group
    o_mask = ro < Og
    c_mask = rc < KC
    c = rc // (KH * KW)
    tap = rc - c * (KH * KW)
    kh = tap // KW
    kw = tap - kh * KW
    g_row = (grp * Og + ro) * s_go
    x_col = (grp * Cg + c) * s_xc
    L_out = OH * OW
    start = split * chunk
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    for p0 in range(0, chunk, BLOCK_K):
        rp = start + p0 + tl.arange(0, BLOCK_K)  # output positions (n, oh, ow)
        p_mask = rp < P
        n_, _, oh_, ow_ = _unflatten(rp, L_out, OW)
        a = tl.load(g_ptr + (g_row[:, None] + (n_ * s_gn + oh_ * s_gh + ow_ * s_gw)[None, :]),
                    mask=o_mask[:, None] & p_mask[None, :], other=0.0)
        ih = (oh_ * sh - pt)[:, None] + (kh * dh)[None, :]
        iw = (ow_ * sw - pl)[:, None] + (kw * dw)[None, :]
        b_mask = (p_mask[:, None] & c_mask[None, :] & (ih >= 0) & (ih < H) & (iw >= 0)
                  & (iw < W))
        b = tl.load(x_ptr + ((n_ * s_xn)[:, None] + x_col[None, :] + ih * s_xh + iw * s_xw),
                    mask=b_mask, other=0.0)
        acc = _mac(acc, a, b, ACC, PRECISION, USE_DOT)
    dw_off = split * O * KC + ((grp * Og + ro) * KC)[:, None] + rc[None, :]
    tl.store(dw_ptr + dw_off, acc, mask=o_mask[:, None] & c_mask[None, :])


# ------------------------------------------------------------------------------------------
# Launchers
# ------------------------------------------------------------------------------------------
def _geometry(op, x, w, stride, padding, dilation, groups):
    """Checks dtypes and shapes; returns (N, C, H, W, O, Cg, KH, KW, OH, OW, pads)."""
    for a in (x, w):
        if a.dtype not in _ACC:
            raise L.unsupported(op, a.dtype, "floating point only")
    if x.dtype is not w.dtype:
        raise ValueError(f"{op}: expected input and weight of one dtype, got {x.dtype} and "
                         f"{w.dtype}")
    return conv_geometry(op, x.shape, w.shape, stride, padding, dilation, groups)


def _config(dtype, cols):
    bm, bn, bk, warps, stages = CONFIGS[_FAMILY[dtype]]
    bn = max(min(bn, L.next_pow2(cols)), min(bn, MIN_COLS))
    return bm, bn, bk, warps, stages


def _int64(*views) -> bool:
    return any(L.needs_int64(tuple(a.shape), tuple(a.strides)) for a in views) or any(
        a.numel >= L._INT32_SAFE for a in views)


def _common(dtype):
    return _ACC[dtype], _precision(dtype), dtype is not D.float64


def conv2d(x, w, bias, stride, padding, dilation, groups):
    """The convolution of x (N, C, H, W) with w (O, C/g, KH, KW) (+ bias (O,) or None):
    (N, O, OH, OW) in x's dtype; padding (ph, pw), each an int or a (low, high) pair."""
    N, _, H, W, O, Cg, KH, KW, OH, OW, pd = _geometry("conv2d", x, w, stride, padding,
                                                      dilation, groups)
    if bias is not None and bias.dtype is not x.dtype:
        bias = astype(bias, x.dtype)
    y = _memory.empty((N, O, OH, OW), x.dtype, x.device)
    if y.numel == 0:
        return y
    Og = O // groups
    M = N * OH * OW
    bm, bn, bk, warps, stages = _config(x.dtype, Og)
    grid = (L.cdiv(M, bm), L.cdiv(Og, bn), groups)
    (pt, _), (pl, _) = pd
    L.ensure_driver()
    _conv_fwd_kernel[grid](
        y, x, w, bias, M, H, W, O, OH, OW, Cg, Og, *x.strides, *w.strides,
        bias.strides[0] if bias is not None else 0, stride[0], stride[1], pt, pl,
        dilation[0], dilation[1], KH, KW, *_common(x.dtype), bm, bn, bk,
        _int64(x, w, y), num_warps=warps, num_stages=stages)
    return y


def conv2d_backward(g, x, w, stride, padding, dilation, groups, needs):
    """(dx, dw, db) of conv2d for the output gradient g (N, O, OH, OW); None for each one
    ``needs`` (three bools: x, w, bias) does not ask for."""
    N, C, H, W, O, Cg, KH, KW, OH, OW, pd = _geometry("conv2d_backward", x, w, stride,
                                                      padding, dilation, groups)
    if tuple(g.shape) != (N, O, OH, OW):
        raise ValueError(f"conv2d_backward: expected the output gradient of shape "
                         f"{(N, O, OH, OW)}, got {tuple(g.shape)}")
    if g.dtype is not x.dtype:
        g = astype(g, x.dtype)
    need_x, need_w, need_b = (tuple(needs) + (False, False, False))[:3]
    (pt, _), (pl, _) = pd
    Og = O // groups
    acc, precision, use_dot = _common(x.dtype)
    dx = dw = db = None
    L.ensure_driver()
    if need_x:
        dx = _memory.empty((N, C, H, W), x.dtype, x.device)
        M = N * H * W
        if dx.numel and g.numel:
            bm, bn, bk, warps, stages = _config(x.dtype, Cg)
            grid = (L.cdiv(M, bm), L.cdiv(Cg, bn), groups)
            _conv_dx_kernel[grid](
                dx, g, w, M, C, H, W, OH, OW, Cg, Og, *g.strides, *w.strides, stride[0],
                stride[1], pt, pl, dilation[0], dilation[1], KH, KW, acc, precision, use_dot,
                bm, bn, bk, _int64(g, w, dx), num_warps=warps, num_stages=stages)
        elif dx.numel:
            dx = full((N, C, H, W), 0, x.dtype, x.device)
    if need_w:
        KC = Cg * KH * KW
        P = N * OH * OW
        acc_dt = _ACC_DT[x.dtype]
        if w.numel and P:
            bm, bn, bk, warps, stages = _config(x.dtype, KC)
            tiles = L.cdiv(Og, bm) * L.cdiv(KC, bn) * groups
            split = max(1, min(TARGET_PROGRAMS // tiles, P // (bk * MIN_SPLIT_STEPS)))
            chunk = L.cdiv(L.cdiv(P, split), bk) * bk
            split = L.cdiv(P, chunk)
            part = _memory.empty((split, O, KC), acc_dt, x.device)
            grid = (L.cdiv(Og, bm), L.cdiv(KC, bn), groups * split)
            _conv_dw_kernel[grid](
                part, g, x, P, H, W, O, OH, OW, Cg, Og, chunk, *g.strides, *x.strides,
                stride[0], stride[1], pt, pl, dilation[0], dilation[1], KH, KW, acc,
                precision, use_dot, bm, bn, bk, _int64(g, x, part), num_warps=warps,
                num_stages=stages)
            total = _sum(part, (0,), False) if split > 1 else part.as_strided(
                (O, KC), (KC, 1), part.offset)
            total = total if total.dtype is w.dtype else astype(total, w.dtype)
            dw = total.as_strided((O, Cg, KH, KW), (KC, KH * KW, KW, 1), total.offset)
        else:
            dw = full((O, Cg, KH, KW), 0, w.dtype, x.device)
    if need_b:
        if g.numel:
            gs = g if g.dtype is _ACC_DT[x.dtype] else astype(g, _ACC_DT[x.dtype])
            db = _sum(gs, (0, 2, 3), False)
            db = db if db.dtype is x.dtype else astype(db, x.dtype)
        else:
            db = full((O,), 0, x.dtype, x.device)
    return dx, dw, db
