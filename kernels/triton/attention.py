"""Fused scaled dot-product attention (flash attention): forward and backward.

Same names, signatures and results as kernels/numpy/attention.py. q (B, H, L, D), k and v
(B, H, S, D), any strides (a head-split view needs no copy); ``causal``: query i sees keys
j <= i (top-left aligned, PyTorch's ``is_causal``).

Forward, one program per (batch * head, BLOCK_M query rows): the query tile stays in
registers while key/value tiles of BLOCK_N rows stream past it; per row a running maximum m
and sum l of exp(s - m) (the online softmax), the partial output rescaled by exp(m_old - m_new)
whenever the maximum moves, divided by l once at the end. The T x T scores never reach memory;
lse = m + log(l) is saved for the backward. A causal program stops at its last row's diagonal.

Backward (delta = rowsum(dO * O), one small pass first), P recomputed per tile from lse as
exp(s - lse), so nothing of the forward but O and lse is kept:

    dV = P^T dO,   dS = P * (dO V^T - delta),   dQ = dS K * scale,   dK = dS^T Q * scale

in two kernels without atomics: one program per key tile accumulates its dK, dV over the query
tiles (a causal one starts at its diagonal), one per query tile accumulates its dQ over the key
tiles.

Head sizes up to 128 (the tile of a row is held in registers): D is padded to a power of two
of at least 16 (tl.dot's smallest) with masked lanes, which add zeros to every product; a
larger D is refused with an error naming the op (nn's scaled_dot_product_attention then keeps
its composite path). Inputs float16, bfloat16 (tensor-core products, float32 accumulation),
float32 (IEEE products unless TF32 is allowed, as matmul.py), float64 (tl.dot where this Triton
compiles it, else a broadcast multiply-and-sum: matmul.py's probe decides once).

``attention_reference`` is the NumPy float64 reference the tests compare both backends with.

Note [attention result layouts]: the output and the gradients are written with any strides,
and laid out in their input's dimension order (``empty_in_order_of``; the NumPy backend's
``_empty_in_layout_of`` gives the same strides). A transformer block's q, k, v are slices of one
(B, T, 3 H D) projection viewed (B, T, H, D) and transposed to (B, H, T, D), so the output is
(B, T, H, D) in memory, and ``y.transpose(1, 2).reshape(B, T, H D)`` views it; dq, dk and dv
likewise reach the projection's gradient through views. PyTorch's flash and memory-efficient
kernels lay their results out so for the same reason; contiguous results cost the GPT step
sixteen copy kernels (four forward, twelve backward).
"""

from __future__ import annotations

import numpy as np
import triton.language as tl
from triton.language.extra import libdevice

from ...runtime import dtype as D
from ...runtime import memory as _memory
from . import _launch as L
from . import autotune
from .elementwise import scalar_arg
from .launcher import Launch, jit
from .matmul import _f64_dot, _precision
from .memory import astype, contiguous, empty_in_order_of, full

__all__ = ["attention", "attention_backward", "attention_reference"]

MAX_HEAD_DIM = 128

# (BLOCK_M, BLOCK_N, num_warps, num_stages) per dtype family; read when a launch plans (the
# tests shrink them to force several tiles along both sequences).
CONFIGS = {
    "half": (64, 64, 4, 2),
    "f32": (32, 32, 4, 2),
    "f64": (16, 16, 4, 1),
    "f64_fallback": (16, 16, 4, 1),
}
_FAMILY = {D.float16: "half", D.bfloat16: "half", D.float32: "f32", D.float64: "f64"}
_ACC = {D.float16: tl.float32, D.bfloat16: tl.float32, D.float32: tl.float32,
        D.float64: tl.float64}
_ACC_DT = L.ACC_DT


# ------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------
@jit
def _mm(a, b, ACC: tl.constexpr, PRECISION: tl.constexpr, USE_DOT: tl.constexpr):
    """a @ b accumulated in ACC: tl.dot, or a broadcast product summed (float64 where this
    Triton has no float64 dot)."""
    if USE_DOT:
        r = tl.dot(a, b, input_precision=PRECISION, out_dtype=ACC)
    else:
        r = tl.sum(a[:, :, None].to(ACC) * b[None, :, :].to(ACC), axis=1)
    return r


# exp and log: libdevice's (correctly rounded) in float64, the fast hardware ones otherwise
@jit
def _exp(x, F64: tl.constexpr):
    return libdevice.exp(x) if F64 else tl.exp(x)


@jit
def _log(x, F64: tl.constexpr):
    return libdevice.log(x) if F64 else tl.log(x)


@jit
def _head(bh, H, s_b, s_h, INT64: tl.constexpr):
    """The element offset of head ``bh`` (batch * H + head) of a (B, H, T, D) view."""
    if INT64:
        bh = bh.to(tl.int64)
    return (bh // H) * s_b + (bh % H) * s_h


@jit
def _tile(ptr, rows, n, s_t, s_d, cols, d, TRANSPOSED: tl.constexpr):
    """Rows ``rows`` (< n) of a (T, D) head as a (rows, D) tile, or (D, rows) transposed;
    lanes past n or d read 0."""
    if TRANSPOSED:
        t = tl.load(ptr + (rows[None, :] * s_t + cols[:, None] * s_d),
                    mask=(rows < n)[None, :] & (cols < d)[:, None], other=0.0)
    else:
        t = tl.load(ptr + (rows[:, None] * s_t + cols[None, :] * s_d),
                    mask=(rows < n)[:, None] & (cols < d)[None, :], other=0.0)
    return t


@jit
def _out_offsets(bh, H, rows, cols, s_b, s_h, s_t, s_d, INT64: tl.constexpr):
    """The element offsets of rows ``rows`` x columns ``cols`` of head ``bh`` of a (B, H, T, D)
    result with the strides given (its memory in the input's dimension order: Note
    [attention result layouts])."""
    if INT64:
        rows = rows.to(tl.int64)
    return _head(bh, H, s_b, s_h, INT64) + rows[:, None] * s_t + cols[None, :] * s_d


@jit(do_not_specialize=["scale_bits"])
def _attention_fwd_kernel(
    o_ptr,    # *T: (B, H, L, D) output with the strides s_o*, written
    lse_ptr,  # *ACC: (B*H, L) contiguous log-sum-exp of the scaled scores, written
    q_ptr, k_ptr, v_ptr,  # *T: (B, H, L|S, D) views with the strides below
    scale_bits: tl.int64,  # scale as float64 bits
    PRECISION: tl.constexpr,  # per launch (the float32 matmul precision); the rest: the plan's
    H, L, S, DH,
    s_qb, s_qh, s_qt, s_qd, s_kb, s_kh, s_kt, s_kd, s_vb, s_vh, s_vt, s_vd,
    s_ob, s_oh, s_ot, s_od,
    ACC: tl.constexpr, USE_DOT: tl.constexpr, F64: tl.constexpr,
    CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr, INT64: tl.constexpr,
):
    bh = tl.program_id(0)
    pid_m = tl.program_id(1)
    scale = scale_bits.to(tl.int64).to(tl.float64, bitcast=True).to(ACC)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols_d = tl.arange(0, BLOCK_D)
    q_base = q_ptr + _head(bh, H, s_qb, s_qh, INT64)
    k_base = k_ptr + _head(bh, H, s_kb, s_kh, INT64)
    v_base = v_ptr + _head(bh, H, s_vb, s_vh, INT64)
    q = _tile(q_base, rows, L, s_qt, s_qd, cols_d, DH, False)
    m = tl.full([BLOCK_M], float("-inf"), ACC)
    total = tl.zeros([BLOCK_M], ACC)
    acc = tl.zeros([BLOCK_M, BLOCK_D], ACC)
    end = S
    if CAUSAL:
        end = tl.minimum(S, (pid_m + 1) * BLOCK_M)
    for n0 in range(0, end, BLOCK_N):
        keys = n0 + tl.arange(0, BLOCK_N)
        kt = _tile(k_base, keys, S, s_kt, s_kd, cols_d, DH, True)
        s = _mm(q, kt, ACC, PRECISION, USE_DOT) * scale
        keep = (keys < S)[None, :]
        if CAUSAL:
            keep = keep & (keys[None, :] <= rows[:, None])
        s = tl.where(keep, s, float("-inf"))
        # key 0 is in every row's first tile (S >= 1), so m is finite from the first tile on
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = _exp(m - m_new, F64)
        p = _exp(s - m_new[:, None], F64)
        total = total * alpha + tl.sum(p, axis=1)
        v = _tile(v_base, keys, S, s_vt, s_vd, cols_d, DH, False)
        acc = acc * alpha[:, None] + _mm(p.to(v.dtype), v, ACC, PRECISION, USE_DOT)
        m = m_new
    out = acc / total[:, None]
    lse = m + _log(total, F64)
    row_mask = rows < L
    tl.store(o_ptr + _out_offsets(bh, H, rows, cols_d, s_ob, s_oh, s_ot, s_od, INT64),
             out.to(o_ptr.dtype.element_ty), mask=row_mask[:, None] & (cols_d < DH)[None, :])
    if INT64:
        bh = bh.to(tl.int64)
    tl.store(lse_ptr + (bh * L + rows), lse, mask=row_mask)


@jit
def _attention_delta_kernel(
    delta_ptr,  # *ACC: (B*H, L) contiguous rowsum(g * out), written
    g_ptr, o_ptr,  # *T: (B, H, L, D) views
    H, L, DH, s_gb, s_gh, s_gt, s_gd, s_ob, s_oh, s_ot, s_od,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr, INT64: tl.constexpr,
):
    bh = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols_d = tl.arange(0, BLOCK_D)
    g = _tile(g_ptr + _head(bh, H, s_gb, s_gh, INT64), rows, L, s_gt, s_gd, cols_d, DH, False)
    o = _tile(o_ptr + _head(bh, H, s_ob, s_oh, INT64), rows, L, s_ot, s_od, cols_d, DH, False)
    delta = tl.sum(g.to(ACC) * o.to(ACC), axis=1)
    if INT64:
        bh = bh.to(tl.int64)
    tl.store(delta_ptr + (bh * L + rows), delta, mask=rows < L)


@jit(do_not_specialize=["scale_bits"])
def _attention_bwd_dkdv_kernel(
    dk_ptr, dv_ptr,  # *T: (B, H, S, D) with the strides s_dk*, s_dv*, written
    q_ptr, k_ptr, v_ptr, g_ptr,  # *T: (B, H, T, D) views
    lse_ptr, delta_ptr,  # *ACC: (B*H, L) contiguous
    scale_bits: tl.int64, PRECISION: tl.constexpr,  # as in the forward; the rest: the plan's
    H, L, S, DH,
    s_qb, s_qh, s_qt, s_qd, s_kb, s_kh, s_kt, s_kd, s_vb, s_vh, s_vt, s_vd,
    s_gb, s_gh, s_gt, s_gd,
    s_dkb, s_dkh, s_dkt, s_dkd, s_dvb, s_dvh, s_dvt, s_dvd,
    ACC: tl.constexpr, USE_DOT: tl.constexpr, F64: tl.constexpr,
    CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr, INT64: tl.constexpr,
):
    bh = tl.program_id(0)
    pid_n = tl.program_id(1)
    scale = scale_bits.to(tl.int64).to(tl.float64, bitcast=True).to(ACC)
    keys = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cols_d = tl.arange(0, BLOCK_D)
    q_base = q_ptr + _head(bh, H, s_qb, s_qh, INT64)
    g_base = g_ptr + _head(bh, H, s_gb, s_gh, INT64)
    k = _tile(k_ptr + _head(bh, H, s_kb, s_kh, INT64), keys, S, s_kt, s_kd, cols_d, DH, False)
    v = _tile(v_ptr + _head(bh, H, s_vb, s_vh, INT64), keys, S, s_vt, s_vd, cols_d, DH, False)
    bh_row = bh
    if INT64:
        bh_row = bh.to(tl.int64)
    lse_base = lse_ptr + bh_row * L
    delta_base = delta_ptr + bh_row * L
    dk = tl.zeros([BLOCK_N, BLOCK_D], ACC)
    dv = tl.zeros([BLOCK_N, BLOCK_D], ACC)
    start = 0
    if CAUSAL:  # queries before this tile's first key see none of it
        start = (pid_n * BLOCK_N // BLOCK_M) * BLOCK_M
    for m0 in range(start, L, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        row_mask = rows < L
        qt = _tile(q_base, rows, L, s_qt, s_qd, cols_d, DH, True)   # (D, M)
        g = _tile(g_base, rows, L, s_gt, s_gd, cols_d, DH, False)   # (M, D)
        lse = tl.load(lse_base + rows, mask=row_mask, other=0.0)
        delta = tl.load(delta_base + rows, mask=row_mask, other=0.0)
        st = _mm(k, qt, ACC, PRECISION, USE_DOT) * scale            # scores^T (N, M)
        keep = row_mask[None, :] & (keys < S)[:, None]
        if CAUSAL:
            keep = keep & (keys[:, None] <= rows[None, :])
        pt = tl.where(keep, _exp(st - lse[None, :], F64), 0.0)
        dv += _mm(pt.to(g.dtype), g, ACC, PRECISION, USE_DOT)
        dpt = _mm(v, tl.trans(g), ACC, PRECISION, USE_DOT)          # (dO V^T)^T
        dst = pt * (dpt - delta[None, :])
        dk += _mm(dst.to(qt.dtype), tl.trans(qt), ACC, PRECISION, USE_DOT)
    dk = dk * scale
    mask = (keys < S)[:, None] & (cols_d < DH)[None, :]
    tl.store(dk_ptr + _out_offsets(bh, H, keys, cols_d, s_dkb, s_dkh, s_dkt, s_dkd, INT64),
             dk.to(dk_ptr.dtype.element_ty), mask=mask)
    tl.store(dv_ptr + _out_offsets(bh, H, keys, cols_d, s_dvb, s_dvh, s_dvt, s_dvd, INT64),
             dv.to(dv_ptr.dtype.element_ty), mask=mask)


@jit(do_not_specialize=["scale_bits"])
def _attention_bwd_dq_kernel(
    dq_ptr,  # *T: (B, H, L, D) with the strides s_dq*, written
    q_ptr, k_ptr, v_ptr, g_ptr,  # *T: (B, H, T, D) views
    lse_ptr, delta_ptr,  # *ACC: (B*H, L) contiguous
    scale_bits: tl.int64, PRECISION: tl.constexpr,  # as in the forward; the rest: the plan's
    H, L, S, DH,
    s_qb, s_qh, s_qt, s_qd, s_kb, s_kh, s_kt, s_kd, s_vb, s_vh, s_vt, s_vd,
    s_gb, s_gh, s_gt, s_gd,
    s_dqb, s_dqh, s_dqt, s_dqd,
    ACC: tl.constexpr, USE_DOT: tl.constexpr, F64: tl.constexpr,
    CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr, INT64: tl.constexpr,
):
    bh = tl.program_id(0)
    pid_m = tl.program_id(1)
    scale = scale_bits.to(tl.int64).to(tl.float64, bitcast=True).to(ACC)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < L
    cols_d = tl.arange(0, BLOCK_D)
    k_base = k_ptr + _head(bh, H, s_kb, s_kh, INT64)
    v_base = v_ptr + _head(bh, H, s_vb, s_vh, INT64)
    q = _tile(q_ptr + _head(bh, H, s_qb, s_qh, INT64), rows, L, s_qt, s_qd, cols_d, DH, False)
    g = _tile(g_ptr + _head(bh, H, s_gb, s_gh, INT64), rows, L, s_gt, s_gd, cols_d, DH, False)
    bh_row = bh
    if INT64:
        bh_row = bh.to(tl.int64)
    lse = tl.load(lse_ptr + bh_row * L + rows, mask=row_mask, other=0.0)
    delta = tl.load(delta_ptr + bh_row * L + rows, mask=row_mask, other=0.0)
    dq = tl.zeros([BLOCK_M, BLOCK_D], ACC)
    end = S
    if CAUSAL:
        end = tl.minimum(S, (pid_m + 1) * BLOCK_M)
    for n0 in range(0, end, BLOCK_N):
        keys = n0 + tl.arange(0, BLOCK_N)
        kt = _tile(k_base, keys, S, s_kt, s_kd, cols_d, DH, True)   # (D, N)
        vt = _tile(v_base, keys, S, s_vt, s_vd, cols_d, DH, True)   # (D, N)
        s = _mm(q, kt, ACC, PRECISION, USE_DOT) * scale
        keep = row_mask[:, None] & (keys < S)[None, :]
        if CAUSAL:
            keep = keep & (keys[None, :] <= rows[:, None])
        p = tl.where(keep, _exp(s - lse[:, None], F64), 0.0)
        dp = _mm(g, vt, ACC, PRECISION, USE_DOT)
        ds = p * (dp - delta[:, None])
        dq += _mm(ds.to(kt.dtype), tl.trans(kt), ACC, PRECISION, USE_DOT)
    dq = dq * scale
    tl.store(dq_ptr + _out_offsets(bh, H, rows, cols_d, s_dqb, s_dqh, s_dqt, s_dqd, INT64),
             dq.to(dq_ptr.dtype.element_ty), mask=row_mask[:, None] & (cols_d < DH)[None, :])


# ------------------------------------------------------------------------------------------
# Launchers
# ------------------------------------------------------------------------------------------
def _check(op, q, k, v):
    for name, a in (("query", q), ("key", k), ("value", v)):
        if a.ndim != 4:
            raise ValueError(f"{op}: expected 4-D (B, H, T, D) arrays, got {name} of shape "
                             f"{tuple(a.shape)}")
        if a.dtype not in _FAMILY:
            raise L.unsupported(op, a.dtype, "floating point only: float16, bfloat16, "
                                "float32, float64")
    if q.dtype is not k.dtype or q.dtype is not v.dtype:
        raise TypeError(f"{op}: expected query, key and value of one dtype, got {q.dtype}, "
                        f"{k.dtype}, {v.dtype}")
    if (tuple(q.shape[:2]) != tuple(k.shape[:2]) or tuple(k.shape) != tuple(v.shape)
            or q.shape[3] != k.shape[3]):
        raise ValueError(f"{op}: expected q (B, H, L, D) and k, v (B, H, S, D), got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if q.shape[3] > MAX_HEAD_DIM:
        raise ValueError(f"{op}: head size {q.shape[3]} is larger than the fused kernel's "
                         f"{MAX_HEAD_DIM}")


# Plans: the kernels' launches per layout (Note [plan launches]); the arrays, the scale and the
# float32 matmul precision are passed per call (the precision is in the key too: a tuned
# config is tuned for one).
_PLANS = L.plan_cache()

# Note [attention candidates]: the (BLOCK_M, BLOCK_N, num_warps, num_stages) autotuning times
# for each kernel (forward, backward dK/dV, backward dQ) of a large enough attention on a GPU
# (Note [autotuning] in autotune.py), besides the CONFIGS one: wider tiles than the defaults,
# which were chosen for the interpreter's and small sequences' sake (on an H200, 2026-11-30,
# float32 at T = 2048 ran 2.1x torch's time with 32 x 32 tiles). A class only times tiles no
# wider than its sequences rounded up to powers of two. float32 is tuned up to head size 64
# only (MAX_TUNED_HEAD): its IEEE products are FMA loops, and at 128 one candidate's three
# kernels took 30-100 s to compile (Triton 3.9, 2 cores), too long for a first call (128-row
# float32 tiles took 20 s at 64: not candidates). The compile check compiles every candidate
# for sm_90 at its family's largest tuned head size.
CANDIDATES = {
    "half": [(128, 64, 4, 3), (128, 64, 8, 3), (64, 128, 4, 3), (128, 128, 8, 2),
             (64, 64, 4, 3), (64, 32, 4, 3)],
    "f32": [(64, 64, 4, 2), (64, 64, 8, 2), (64, 32, 4, 2), (32, 64, 4, 2), (32, 32, 4, 3)],
    "f64": [(32, 32, 4, 1), (32, 16, 4, 1), (16, 32, 4, 1), (32, 32, 8, 2)],
    "f64_fallback": [],
}
MIN_WORK = 1 << 27  # B * H * L * S * D at least this to tune ((4, 8, 256, 64) and up)
MAX_TUNED_HEAD = {"half": 128, "f32": 64, "f64": 128, "f64_fallback": 0}


def _config(q, k, *more):
    """(use_dot, family, default (BLOCK_M, BLOCK_N, warps, stages), BLOCK_D, int64) of a
    layout."""
    B, H, Lq, DH = q.shape
    S = k.shape[2]
    use_dot = True
    family = _FAMILY[q.dtype]
    if q.dtype is D.float64 and _f64_dot and not _f64_dot[0]:
        use_dot, family = False, "f64_fallback"
    bd = max(16, L.next_pow2(DH))
    int64 = any(L.needs_int64(tuple(a.shape), a.strides) for a in (q, k) + more) \
        or B * H * max(Lq, S) * bd >= L._INT32_SAFE
    return use_dot, family, CONFIGS[family], bd, int64


def _tunes(family: str, q, k) -> bool:
    """Whether autotuning picks this attention's configs (Note [attention candidates])."""
    B, H, Lq, DH = q.shape
    return DH <= MAX_TUNED_HEAD[family] and autotune.wanted(B * H * Lq * k.shape[2] * DH,
                                                            MIN_WORK)


def _tuned(kind, kernel, family, default, make, args, q, k, key):
    """(config, keep the plan) for ``kernel``'s launch ``make(config)(*args)``: the default,
    or autotuning's pick for the class (Note [attention candidates])."""
    if not _tunes(family, q, k):
        return default, True
    Lq, DH, S = q.shape[2], q.shape[3], k.shape[2]
    p2l, p2s = max(16, L.next_pow2(Lq)), max(16, L.next_pow2(S))
    causal, precision = key[-2], key[-1]
    cls = (f"{kind} {q.dtype.name} {precision} causal={causal} d={max(16, L.next_pow2(DH))} "
           f"{p2l}x{p2s}")
    candidates = [c for c in CANDIDATES[family] if c[0] <= p2l and c[1] <= p2s]
    picked = autotune.pick(kernel, cls, default, candidates, make, *args)
    return picked or default, picked is not None


def _keep(key, q, plan, keep=True):
    if keep and (q.dtype is not D.float64 or _f64_dot):  # (until the float64 probe has
        # answered, each launch plans again: _config reads its answer)
        _PLANS[key] = plan
    return plan


def _forward_plan(key, q, k, v, args):
    """The forward's launch; ``args``: the call's (for tuning: the outputs are written; the
    output's strides, which q's layout decides, are the plan's)."""
    use_dot, family, default, bd, int64 = _config(q, k, v)
    B, H, Lq, DH = q.shape
    out_strides = args[0].strides

    def make(config):
        bm, bn, warps, stages = config
        return Launch(_attention_fwd_kernel, (B * H, L.cdiv(Lq, bm)), (
            H, Lq, k.shape[2], DH, *q.strides, *k.strides, *v.strides, *out_strides,
            _ACC[q.dtype], use_dot,
            q.dtype is D.float64, key[-2], bm, bn, bd, int64), num_warps=warps,
            num_stages=stages)

    config, keep = _tuned("forward", _attention_fwd_kernel, family, default, make, args, q, k,
                          key)
    return _keep(key, q, make(config), keep)


def _backward_plan(key, q, k, v, g, out, delta, dkdv_args, dq_args):
    """The delta, dk/dv and dq kernels' launches; the arrays: the call's (for tuning, which
    computes delta first: the other two read it; the gradients' strides, which q's, k's and
    v's layouts decide, are the plans')."""
    use_dot, family, default, bd, int64 = _config(q, k, v, g, out)
    B, H, Lq, DH = q.shape
    S = k.shape[2]
    bm, _, warps, _ = default
    delta_launch = Launch(_attention_delta_kernel, (B * H, L.cdiv(Lq, bm)), (
        H, Lq, DH, *g.strides, *out.strides, _ACC[q.dtype], bm, bd, int64), num_warps=warps)

    def maker(kernel, per_key_tile):
        """make(config) of the dk/dv kernel (a program per key tile) or the dq kernel (per
        query tile)."""
        written = (*dkdv_args[0].strides, *dkdv_args[1].strides) if per_key_tile else \
            dq_args[0].strides

        def make(config):
            bm, bn, warps, stages = config
            grid = (B * H, L.cdiv(S, bn) if per_key_tile else L.cdiv(Lq, bm))
            return Launch(kernel, grid, (
                H, Lq, S, DH, *q.strides, *k.strides, *v.strides, *g.strides, *written,
                _ACC[q.dtype], use_dot, q.dtype is D.float64, key[-2], bm, bn, bd, int64),
                num_warps=warps, num_stages=stages)
        return make

    dkdv, dq = _attention_bwd_dkdv_kernel, _attention_bwd_dq_kernel
    if _tunes(family, q, k):  # (the kernels timed read delta)
        delta_launch(delta, g, out)
    make_dkdv, make_dq = maker(dkdv, True), maker(dq, False)
    c1, keep1 = _tuned("dkdv", dkdv, family, default, make_dkdv, dkdv_args, q, k, key)
    c2, keep2 = _tuned("dq", dq, family, default, make_dq, dq_args, q, k, key)
    return _keep(key, q, (delta_launch, make_dkdv(c1), make_dq(c2)), keep1 and keep2)


def _with_f64_probe(q, launch):
    """Runs ``launch()``. The first float64 launch on hardware learns whether this Triton
    compiles a float64 tl.dot (matmul.py's probe, shared): if not, ``_plan`` picks the
    multiply-and-sum fallback and the launch is repeated."""
    if q.dtype is not D.float64 or _f64_dot:
        return launch()
    try:
        launch()
        _f64_dot.append(True)
    except Exception:
        if L.INTERPRET:  # the interpreter runs any dot: an error here is a real one
            raise
        _f64_dot.append(False)
        launch()


def _bits(x: float) -> int:
    """``x`` as the int64 bits of a float64, for a kernel's ``scale_bits`` argument."""
    return scalar_arg(float(x), 2)


def attention(q, k, v, scale, causal):
    """(out, lse): out (B, H, L, D) in q's dtype, lse (B, H, L) float32 (float64 for float64).
    A query with no keys (S == 0) gets zeros and lse -inf."""
    _check("attention", q, k, v)
    B, H, Lq, DH = q.shape
    S = k.shape[2]
    acc_dt = _ACC_DT[q.dtype]
    if S == 0 or B * H * Lq * DH == 0:
        lse = full((B, H, Lq), float("-inf"), acc_dt, q.device)
        return full((B, H, Lq, DH), 0, q.dtype, q.device), lse
    out = empty_in_order_of(q, (B, H, Lq, DH), q.dtype)  # Note [attention result layouts]
    lse = _memory.empty((B, H, Lq), acc_dt, q.device)
    L.ensure_driver()
    scale_bits, precision = _bits(scale), _precision(q.dtype)

    def launch():
        key = ("forward", q.shape, S, q.strides, k.strides, v.strides, q.dtype,
               tuple(_f64_dot), bool(causal), precision)
        args = (out, lse, q, k, v, scale_bits, precision)
        (_PLANS.get(key) or _forward_plan(key, q, k, v, args))(*args)

    _with_f64_probe(q, launch)
    return out, lse


def attention_backward(g, q, k, v, out, lse, scale, causal):
    """(dq, dk, dv) of attention, each in q's dtype, from the output gradient g (B, H, L, D),
    the forward's output and lse."""
    _check("attention_backward", q, k, v)
    if g.dtype is not q.dtype or out.dtype is not q.dtype:
        raise TypeError(f"attention_backward: expected the gradient and output in {q.dtype}, "
                        f"got {g.dtype} and {out.dtype}")
    B, H, Lq, DH = q.shape
    S = k.shape[2]
    if B * H * DH == 0 or Lq == 0 or S == 0:
        return (full(tuple(q.shape), 0, q.dtype, q.device),
                full(tuple(k.shape), 0, q.dtype, q.device),
                full(tuple(k.shape), 0, q.dtype, q.device))
    dq = empty_in_order_of(q, tuple(q.shape), q.dtype)  # Note [attention result layouts]
    dk = empty_in_order_of(k, tuple(k.shape), q.dtype)
    dv = empty_in_order_of(v, tuple(k.shape), q.dtype)
    acc_dt = _ACC_DT[q.dtype]
    lse = contiguous(lse if lse.dtype is acc_dt else astype(lse, acc_dt))
    delta = _memory.empty((B, H, Lq), acc_dt, q.device)
    L.ensure_driver()
    head = (q, k, v, g, lse, delta, _bits(scale), _precision(q.dtype))

    def launch():
        key = ("backward", q.shape, S, q.strides, k.strides, v.strides, g.strides,
               out.strides, q.dtype, tuple(_f64_dot), bool(causal), head[-1])
        delta_launch, dkdv, dq_launch = (_PLANS.get(key) or _backward_plan(
            key, q, k, v, g, out, delta, (dk, dv, *head), (dq, *head)))
        delta_launch(delta, g, out)
        dkdv(dk, dv, *head)
        dq_launch(dq, *head)

    _with_f64_probe(q, launch)
    return dq, dk, dv


# ------------------------------------------------------------------------------------------
# Reference
# ------------------------------------------------------------------------------------------
def attention_reference(q, k, v, scale, causal, g=None):
    """NumPy float64 attention over (..., T, D) arrays, the whole score matrix at once:
    (out, lse) and, given the output gradient ``g``, also (dq, dk, dv)."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    total = e.sum(axis=-1, keepdims=True)
    p = e / total
    out, lse = p @ v, (m + np.log(total))[..., 0]
    if g is None:
        return out, lse
    g = np.asarray(g, dtype=np.float64)
    dp = g @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (g * out).sum(axis=-1, keepdims=True))
    return (out, lse, ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale,
            np.swapaxes(p, -1, -2) @ g)
