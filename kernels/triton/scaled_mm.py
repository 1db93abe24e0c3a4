"""``torch._scaled_mm`` on the GPU: a float8 matrix product with float32 scales.

    C = convert((A @ B) * scale_a * scale_b + bias [/ scale_result])

A (M, K) and B (K, N) are float8 (e4m3fn or e5m2, Triton's ``float8e4nv`` and ``float8e5``);
sm_90's tensor cores multiply them natively (``tl.dot`` of float8 tiles, float32
accumulation). Scales are tensorwise (one float32 each) or rowwise (scale_a (M, 1), scale_b
(1, N)); the epilogue scales, adds the bias row, and converts once to the output dtype.
Note [float8 accumulation]: sm_90's float8 MMA keeps its running sum in fewer bits than
float32, and Triton's default for a float8 ``tl.dot`` there is to let it run over the whole K
(``max_num_imprecise_acc`` 2**30: what PyTorch calls ``use_fast_accum=True``). The first GPU
run of this kernel (2026-12-04, an H200) was off the float32 product by up to 8e-3 at K = 70.
``max_num_imprecise_acc=0`` adds each MMA instruction's partial sum (K = 32) into a float32
accumulator, as cuBLAS does for PyTorch's default ``use_fast_accum=False``; the sum inside
one instruction stays the hardware's.
Under Triton's interpreter (the emulated device in the tests) the tiles are widened to
float32 first: NumPy has no float8 product, and the values, hence the exact products, are the
same. The NumPy twin is kernels/numpy/float8.py's ``scaled_mm``; the checks and the public
function, autograd/ops/float8.py.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...runtime import dtype as D
from ...runtime import memory as _memory
from . import _launch as L
from .compat import INTERPRET
from .launcher import Launch, jit

__all__ = ["scaled_mm", "INPUT_DTYPES", "OUTPUT_DTYPES"]

INPUT_DTYPES = (D.float8_e4m3fn, D.float8_e5m2)  # the formats sm_90's tensor cores take
OUTPUT_DTYPES = (D.float32, D.float16, D.bfloat16, D.float8_e4m3fn, D.float8_e5m2)


@triton.jit
def _float8_bits(x, E5M2: tl.constexpr):
    """float32 ``x`` to e4m3fn (``E5M2`` False) or e5m2 bit patterns (uint8), as PyTorch's
    conversion (runtime.dtype.float8_bits): round to nearest even; e4m3fn saturates to
    +-448 (infinities too), e5m2 overflows to +-inf; NaN 0x7F with the sign. Written out in
    integer arithmetic so that the interpreter and sm_90 (whose cvt.rn.satfinite would
    saturate e5m2) give the same bits."""
    u = x.to(tl.uint32, bitcast=True)
    sign = (u >> 24) & 0x80
    a = u & 0x7FFFFFFF
    if E5M2:
        # normal: rebias 127 -> 15, drop 21 mantissa bits rounding to even (the carry runs
        # into the exponent); subnormal (below 2 ** -14): |x| / 2 ** -16 rounded to even
        normal = (a - ((127 - 15) << 23) + 0xFFFFF + ((a >> 21) & 1)) >> 21
        q = tl.abs(x) * 65536.0
        small = a < 0x38800000
        top = 0x7C  # overflow: infinity
        over = a >= 0x47700000  # 61440: the first value rounding past 57344
    else:
        normal = (a - ((127 - 7) << 23) + 0x7FFFF + ((a >> 20) & 1)) >> 20
        q = tl.abs(x) * 512.0
        small = a < 0x3C800000  # 2 ** -6
        top = 0x7E  # saturation: 448
        over = a >= 0x43E80000  # 464: the first value rounding past 448
    sub = ((q + 8388608.0) - 8388608.0).to(tl.uint32)  # round to nearest even (q < 2 ** 23)
    code = tl.where(small, sub, normal)
    code = tl.where(over, top, code)
    code = tl.where(a > 0x7F800000, 0x7F, code)
    return (code | sign).to(tl.uint8)


@triton.jit
def _float8_values(x, E5M2: tl.constexpr):
    """The float32 values of float8 ``x`` (e4m3fn, or e5m2 if ``E5M2``), exact, with
    PyTorch's NaN bits (runtime.dtype.float8_values), decoded from the bits: Triton's
    interpreter widens float8 ignoring NaN and infinity (0x7F would be 480)."""
    b = x.to(tl.uint8, bitcast=True).to(tl.uint32)
    sign = (b & 0x80) << 24
    if E5M2:  # as float16's widening: exponent 5 bits (bias 15), mantissa 2
        e = (b >> 2) & 0x1F
        m = b & 3
        normal = ((e + 112) << 23) | (m << 21)
        special = tl.where(m == 0, 0x7F800000, 0x7FC00000 | (m << 21))  # inf, NaN
        top = e == 31
        sub_scale = 1.52587890625e-05  # 2 ** -16: a subnormal is m * 2 ** -16
    else:  # e4m3fn: exponent 4 bits (bias 7), mantissa 3; 0x7F/0xFF the NaNs, no infinity
        e = (b >> 3) & 0xF
        m = b & 7
        normal = ((e + 120) << 23) | (m << 20)
        special = 0x7FF00000
        top = (e == 15) & (m == 7)
        sub_scale = 0.001953125  # 2 ** -9
    sub = (m.to(tl.float32) * sub_scale).to(tl.uint32, bitcast=True)
    bits = tl.where(top, special, tl.where(e == 0, sub, normal)) | sign
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _stored_as(x, ptr, OUT_FP8: tl.constexpr):
    """float32 ``x`` as ``ptr``'s elements: PyTorch's float8 bits (``OUT_FP8`` 1: e4m3fn,
    2: e5m2) reinterpreted as the float8 type, else a plain conversion."""
    if OUT_FP8 == 1:
        y = _float8_bits(x, False).to(ptr.dtype.element_ty, bitcast=True)
    elif OUT_FP8 == 2:
        y = _float8_bits(x, True).to(ptr.dtype.element_ty, bitcast=True)
    else:
        y = x.to(ptr.dtype.element_ty)
        if ptr.dtype.element_ty == tl.bfloat16:
            # NaN as runtime.dtype.bfloat16_bits writes it (0x7FC0): sm_90's cvt gives 0x7FFF
            nan = tl.full(x.shape, 0x7FC0, tl.uint16).to(tl.bfloat16, bitcast=True)
            y = tl.where(x != x, nan, y)
    return y


@jit
def _scaled_mm_kernel(
    a_ptr,  # *fp8: A (M, K), element (m, k) at m * s_am + k * s_ak
    b_ptr,  # *fp8: B (K, N), element (k, n) at k * s_bk + n * s_bn
    c_ptr,  # *out: C (M, N) contiguous, written
    sa_ptr,  # *f32: scale_a, one value or M (rowwise, contiguous)
    sb_ptr,  # *f32: scale_b, one value or N (rowwise, contiguous)
    bias_ptr,  # *T: the row (N,) added to every row of C (stride s_bias), or None
    sr_ptr,  # *f32: scale_result (one value) C is divided by (float8 outputs), or None
    M, N, K,
    s_am, s_ak, s_bk, s_bn, s_bias,
    ROWWISE: tl.constexpr, WIDEN: tl.constexpr, A_E5M2: tl.constexpr, B_E5M2: tl.constexpr,
    OUT_FP8: tl.constexpr,  # 1: e4m3fn, 2: e5m2 (PyTorch's rounding, _float8_bits), 0: a cast
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP: tl.constexpr,
):
    pid = tl.program_id(0)
    n_pid_m = tl.cdiv(M, BLOCK_M)
    n_pid_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP * n_pid_n  # grouped order: neighbouring programs share A's row tiles
    first_m = (pid // in_group) * GROUP
    group_size = tl.minimum(n_pid_m - first_m, GROUP)
    pid_m = first_m + (pid % in_group) % group_size
    pid_n = (pid % in_group) // group_size
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (rm[:, None] * s_am + rk[None, :] * s_ak)
    b_ptrs = b_ptr + (rk[:, None] * s_bk + rn[None, :] * s_bn)
    m_mask = (rm < M)[:, None]
    n_mask = (rn < N)[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_left = K - k0
        a = tl.load(a_ptrs, mask=m_mask & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & n_mask, other=0.0)
        if WIDEN:  # the interpreter: exact float32 values of the float8 codes
            acc = tl.dot(_float8_values(a, A_E5M2), _float8_values(b, B_E5M2), acc,
                         input_precision="ieee")
        else:  # float8 tensor cores, float32 accumulation (Note [float8 accumulation])
            acc = tl.dot(a, b, acc, out_dtype=tl.float32, max_num_imprecise_acc=0)
        a_ptrs += BLOCK_K * s_ak
        b_ptrs += BLOCK_K * s_bk
    if ROWWISE:
        sa = tl.load(sa_ptr + rm, mask=rm < M, other=0.0)
        sb = tl.load(sb_ptr + rn, mask=rn < N, other=0.0)
        acc = acc * sa[:, None] * sb[None, :]
    else:
        acc = acc * tl.load(sa_ptr) * tl.load(sb_ptr)
    if bias_ptr is not None:
        acc += tl.load(bias_ptr + rn * s_bias, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    if sr_ptr is not None:
        acc = acc / tl.load(sr_ptr)
    c_ptrs = c_ptr + (rm[:, None] * N + rn[None, :])
    tl.store(c_ptrs, _stored_as(acc, c_ptr, OUT_FP8), mask=m_mask & n_mask)


# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): float8 tiles are half the bytes of
# half-precision ones, so K blocks twice as deep fit the same shared memory
_CONFIGS = {"large": (128, 128, 128, 8, 3), "small": (64, 64, 64, 4, 3)}
GROUP_M = 8
_PLANS: dict = {}


def _plan(M: int, N: int, rowwise: bool, a_e5m2: bool, b_e5m2: bool, out_dtype) -> Launch:
    cfg = _CONFIGS["large" if M >= 256 and N >= 256 else "small"]
    out_fp8 = {D.float8_e4m3fn: 1, D.float8_e5m2: 2}.get(out_dtype, 0)
    key = (M, N, rowwise, a_e5m2, b_e5m2, out_fp8, cfg)
    launch = _PLANS.get(key)
    if launch is None:
        bm, bn, bk, warps, stages = cfg
        grid = (max(1, L.cdiv(M, bm) * L.cdiv(N, bn)),)
        launch = _PLANS[key] = Launch(_scaled_mm_kernel, grid,
                                      (rowwise, INTERPRET, a_e5m2, b_e5m2, out_fp8, bm, bn,
                                       bk, GROUP_M),
                                      num_warps=warps, num_stages=stages)
    return launch


def scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype):
    """The Triton twin of kernels/numpy/float8.py's ``scaled_mm`` over DeviceArrays (checked
    by the caller; ``a`` and ``b`` in INPUT_DTYPES, ``out_dtype`` in OUTPUT_DTYPES, scales
    contiguous float32). Returns a new contiguous (M, N) array of ``out_dtype``."""
    L.ensure_driver()
    M, K = a.shape
    N = b.shape[1]
    c = _memory.empty((M, N), out_dtype, a.device)
    if M == 0 or N == 0:
        return c
    rowwise = scale_a.numel != 1 or scale_b.numel != 1
    sr = scale_result if out_dtype in (D.float8_e4m3fn, D.float8_e5m2) else None
    s_bias = bias.strides[0] if bias is not None else 0
    launch = _plan(M, N, rowwise, a.dtype is D.float8_e5m2, b.dtype is D.float8_e5m2,
                   out_dtype)
    launch(a, b, c, scale_a, scale_b, bias, sr, M, N, K, a.strides[0], a.strides[1],
           b.strides[0], b.strides[1], s_bias)
    return c
