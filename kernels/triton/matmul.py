"""Matrix products ``matmul(a, b)`` (2-D) and ``bmm(a, b)`` (batched 3-D) with any strides:
transposed, sliced and batch-broadcast (stride 0) views need no copy.

    C[b, m, n] = sum_k A[b, m, k] * B[b, k, n]     accumulated in float32 (float64 for float64)

matmul is bmm with one batch. The kernel is Triton's tutorial matmul: program-grouped ordering of C's tiles (GROUP_M rows of
tiles share B's column panels in L2), a loop over K in BLOCK_K steps, masked edges, one rounding
at the store. Strides are runtime arguments, so ``a.T`` or a slice works in place; Triton
specialises unit strides, which keeps the loads vectorised in the common layouts.

Precision: float16/bfloat16 use tensor cores with a float32 accumulator (NumPy's float16 matmul
in kernels/numpy computes the same way). float32 uses ``input_precision="ieee"``: full float32
products (no TF32), so results match NumPy within float32 rounding, at the cost of not using
tensor cores (FMA throughput), unless ``tg.set_float32_matmul_precision("high")`` (or
``tg.backends.cuda.matmul.allow_tf32 = True``) allows TF32, as in PyTorch. float64 uses ``tl.dot`` where the installed Triton compiles it
for float64, else a broadcast-multiply-and-sum fallback (``USE_DOT=False``), chosen once on the
first float64 launch.

Complex operands (Note [complex lanes] in complex.py) are four real products of their lanes,
strided views that need no copy: ``complex.bmm``.

Block sizes: a fixed config picked by shape (the large-tile config for big products, smaller
tiles when M or N is small, so more programs run); on a GPU, products of at least
``autotune.MIN_WORK`` (1024^3) take the fastest of a few candidates for their shape class
instead, timed once (Note [autotuning] in autotune.py; Note [matmul candidates] below); on
Hopper the candidates of a half-precision product include a second kernel, persistent, that
moves its tiles with TMA tensor descriptors (Note [TMA matmul]). A product with few tiles and
a long K can split K (off by default: Note [split-K]).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...runtime import driver as _drv
from ...runtime import dtype as D
from ...runtime import memory as _memory
from ...runtime.array import contiguous_strides
from . import _launch as L
from . import autotune
from . import complex as _complex
from .launcher import Launch, jit
from .elementwise_ops import add as _add
from .memory import astype, full
from .reduction import sum as _sum

__all__ = ["addmm", "bmm", "matmul"]

GROUP_M = 8


@triton.jit
def _grouped(tile, n_pid_m, n_pid_n, GROUP: tl.constexpr):
    """(row, column) of C's tile number ``tile`` in program-grouped order: GROUP rows of tiles
    go down one column panel of B before the next, so the panels they share stay in L2."""
    in_group = GROUP * n_pid_n
    first_m = (tile // in_group) * GROUP
    group_size = tl.minimum(n_pid_m - first_m, GROUP)
    return first_m + (tile % in_group) % group_size, (tile % in_group) // group_size


@jit
def _matmul_kernel(
    a_ptr,  # *T: A, (B, M, K), element (b, m, k) at b * s_ab + m * s_am + k * s_ak
    b_ptr,  # *T: B, (B, K, N), element (b, k, n) at b * s_bb + k * s_bk + n * s_bn
    c_ptr,  # *T: C, (B, M, N) contiguous, written; split-K: (SPLIT, B, M, N) ACC partials
    bias_ptr,  # *T: a row (N,) added to every row of C before the rounding (stride s_bias),
    #            or None (addmm's epilogue; never with split-K)
    PRECISION: tl.constexpr,  # per launch (the float32 matmul precision); the rest: the plan's
    M, N, K,
    s_ab, s_am, s_ak, s_bb, s_bk, s_bn,
    k_chunk,  # the K range of one split (program_id(1)): [s * k_chunk, (s + 1) * k_chunk)
    s_bias,
    ACC: tl.constexpr, USE_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP: tl.constexpr, INT64: tl.constexpr,
):
    split = tl.program_id(1)
    k_lo = split * k_chunk
    k_hi = tl.minimum(K, k_lo + k_chunk)
    pid = tl.program_id(0)
    n_pid_m = tl.cdiv(M, BLOCK_M)
    n_pid_n = tl.cdiv(N, BLOCK_N)
    tiles = n_pid_m * n_pid_n
    batch = pid // tiles
    pid_m, pid_n = _grouped(pid - batch * tiles, n_pid_m, n_pid_n, GROUP)
    if INT64:
        batch = batch.to(tl.int64)
        pid_m = pid_m.to(tl.int64)
        pid_n = pid_n.to(tl.int64)
        split = split.to(tl.int64)
        k_lo = k_lo.to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    if INT64:
        rk = rk.to(tl.int64)
    a_ptrs = a_ptr + batch * s_ab + (rm[:, None] * s_am + (k_lo + rk)[None, :] * s_ak)
    b_ptrs = b_ptr + batch * s_bb + ((k_lo + rk)[:, None] * s_bk + rn[None, :] * s_bn)
    m_mask = (rm < M)[:, None]
    n_mask = (rn < N)[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        k_left = k_hi - k0
        a = tl.load(a_ptrs, mask=m_mask & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & n_mask, other=0.0)
        if USE_DOT:
            acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC)
        else:
            acc += tl.sum(a[:, :, None].to(ACC) * b[None, :, :].to(ACC), axis=1)
        a_ptrs += BLOCK_K * s_ak
        b_ptrs += BLOCK_K * s_bk
    if bias_ptr is not None:
        acc += tl.load(bias_ptr + rn * s_bias, mask=rn < N, other=0.0).to(ACC)[None, :]
    c = acc.to(c_ptr.dtype.element_ty)
    n_batch = tl.num_programs(0) // tiles
    c_ptrs = c_ptr + (split * n_batch + batch) * M * N + (rm[:, None] * N + rn[None, :])
    tl.store(c_ptrs, c, mask=m_mask & n_mask)


# Note [TMA matmul]: on Hopper (sm_90) the fastest Triton products load their tiles with the
# Tensor Memory Accelerator: a tensor descriptor describes each operand once, and each load of
# a (BLOCK, BLOCK) tile is one asynchronous copy into shared memory that the hardware bounds-
# checks (out-of-range elements read as zero, out-of-range stores are dropped), in place of
# BLOCK x BLOCK address computations and masks; the kernel is persistent (one program per SM,
# each taking tiles in program-grouped order, so the next tile's loads overlap the last one's
# epilogue) and stores C through a descriptor too. On the H200 (2026-12-04) the pointer kernel
# reached 0.78 of cuBLAS at 4096^3 bfloat16; Triton's persistent-matmul tutorial reports its
# descriptor kernels ahead of its pointer one on Hopper. It is an autotuning candidate only
# (Note [matmul candidates]): a plan takes it when it times faster on the GPU at hand. float32
# products may take it too (IEEE on the FMA units, TF32 where allowed): with the pointer kernel
# the MLP step's largest weight gradient took 1.23x cuBLAS's time on the H200.
#
# TMA's rules decide which products may: float16, bfloat16 or float32, one batch, each
# operand's rows or columns contiguous with the other stride a multiple of 16 bytes, C's rows a
# multiple of 16 bytes, and every base address 16-byte aligned. The first four are the plan's
# (its key holds shapes and strides); the addresses are the call's, so a TMA plan checks them
# at each call and launches the pointer kernel's plan for a misaligned view (``_TmaLaunch``).
# The descriptors are made on the device, in global scratch memory Triton asks the allocator
# for (runtime/triton_driver.py's ``_scratch``), so its launches go through Triton's launcher
# object rather than the direct C call (Note [direct launches] in launcher.py): a few
# microseconds of host time on products of at least a 1024^3 (autotuned sizes only).
@jit
def _matmul_tma_kernel(
    a_ptr,  # *T: A (M, K): element (m, k) at m * s_a + k, or with A_COLS at k * s_a + m
    b_ptr,  # *T: B (K, N): element (k, n) at k * s_b + n, or with B_COLS at n * s_b + k
    c_ptr,  # *T: C (M, N) contiguous, written
    bias_ptr,  # *T: a row (N,) added to every row of C before the rounding, or None
    PRECISION: tl.constexpr,  # per launch, as _matmul_kernel's; the rest: the plan's
    M, N, K, s_a, s_b, s_bias,
    A_COLS: tl.constexpr, B_COLS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP: tl.constexpr,
):
    if A_COLS:  # (a transposed operand's tiles load as stored and are used transposed)
        a_desc = tl.make_tensor_descriptor(a_ptr, [K, M], [s_a, 1], [BLOCK_K, BLOCK_M])
    else:
        a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [s_a, 1], [BLOCK_M, BLOCK_K])
    if B_COLS:
        b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [s_b, 1], [BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [s_b, 1], [BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    n_pid_m = tl.cdiv(M, BLOCK_M)
    n_pid_n = tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), n_pid_m * n_pid_n, tl.num_programs(0), flatten=True):
        pid_m, pid_n = _grouped(tile, n_pid_m, n_pid_n, GROUP)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for step in range(k_steps):
            off_k = step * BLOCK_K
            if A_COLS:
                a = a_desc.load([off_k, off_m]).T
            else:
                a = a_desc.load([off_m, off_k])
            if B_COLS:
                b = b_desc.load([off_n, off_k]).T
            else:
                b = b_desc.load([off_k, off_n])
            acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=tl.float32)
        if bias_ptr is not None:
            rn = off_n + tl.arange(0, BLOCK_N)
            acc += tl.load(bias_ptr + rn * s_bias, mask=rn < N, other=0.0).to(tl.float32)[None, :]
        c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))


# ------------------------------------------------------------------------------------------
# Configs and plans
# ------------------------------------------------------------------------------------------
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) per dtype family and size class.
CONFIGS = {
    "half": {"large": (128, 128, 64, 8, 3), "medium": (64, 64, 64, 4, 4),
             "small": (16, 64, 64, 4, 4)},
    "f32": {"large": (128, 128, 16, 8, 3), "medium": (64, 64, 16, 4, 3),
            "small": (16, 64, 32, 4, 3)},
    "f64": {"large": (64, 64, 16, 4, 2), "medium": (32, 32, 16, 4, 2),
            "small": (16, 32, 16, 4, 2)},
    "f64_fallback": {"large": (32, 32, 8, 8, 1), "medium": (32, 32, 8, 8, 1),
                     "small": (16, 32, 8, 4, 1)},
}
_FAMILY = {D.float16: "half", D.bfloat16: "half", D.float32: "f32", D.float64: "f64"}
_ACC = {D.float16: tl.float32, D.bfloat16: tl.float32, D.float32: tl.float32,
        D.float64: tl.float64}
_ACC_DT = L.ACC_DT

# Note [split-K]: a product with few output tiles and a long K (a weight gradient, X^T @ G:
# M x N small, K the batch) leaves most SMs idle: 784 x 1024 at 128 x 128 tiles is 56 programs
# on an H200's 132 SMs (the MLP step at batch 4096 ran 1.84x torch there, 2026-11-29). Such a
# product splits K over program_id(1) until about TARGET_PROGRAMS programs run, each split at
# least MIN_SPLIT_STEPS BLOCK_K steps long; each writes its partial tile in the accumulator's
# dtype, and one column sum (reduction.py) adds the splits in a fixed order and rounds once, so
# the result is deterministic (no atomics). Module globals, so tests can shrink them (call
# _launch.clear_plans() after). The same scheme as the convolution's weight gradient (conv.py).
#
# Off by default (TARGET_PROGRAMS = 0): on the H200 (2026-11-30) it made both measured steps
# slower, not faster: the MLP step at batch 4096 3.02 ms with it, 2.65 without; the GPT step
# (where nearly every product has few tiles) 26.1 ms with it, 13.9 without. Why it costs that
# much is not known yet (the extra column sums alone are ~50 small launches a GPT step);
# docs/performance.md, "GPU, 2026-11-30". Set TARGET_PROGRAMS = 132 (one wave of large tiles
# on 132 SMs) to try it; the tests run it with shrunken tiles either way.
TARGET_PROGRAMS = 0
MIN_SPLIT_STEPS = 4
# tl.dot's input_precision: only meaningful for float32 inputs, "ieee" (full float32) unless
# set_float32_matmul_precision allows TF32 ("high" or "medium", as PyTorch's allow_tf32).
_PRECISION = {D.float16: "tf32", D.bfloat16: "tf32", D.float32: "ieee", D.float64: "ieee"}


def _precision(dtype) -> str:
    if dtype is D.float32 and D.get_float32_matmul_precision() != "highest":
        return "tf32"
    return _PRECISION[dtype]

_PLANS = L.plan_cache()
_f64_dot: list = []  # [True/False] once known: does this Triton compile tl.dot for float64?


def _split_k(tiles: int, K: int, bk: int) -> tuple:
    """(splits, K per split) of a product of ``tiles`` output tiles: Note [split-K]."""
    split = max(1, min(TARGET_PROGRAMS // tiles, K // (bk * MIN_SPLIT_STEPS)))
    if split == 1:
        return 1, K
    chunk = L.cdiv(L.cdiv(K, split), bk) * bk
    return L.cdiv(K, chunk), chunk


# Note [matmul candidates]: the configs autotuning times for a product of at least
# autotune.MIN_WORK on a GPU (Note [autotuning] in autotune.py), besides the CONFIGS one, per
# dtype family and precision: the shapes Triton's matmul tutorial and its users find best on
# Ampere and Hopper (wide tiles, 3-4 stages for tensor cores; smaller K steps for the FMA
# products of IEEE float32 and float64). Every candidate keeps its shared memory (stages x
# (BLOCK_M + BLOCK_N) x BLOCK_K x itemsize) within sm_90's 227 KiB, and the sm_90 compile
# check compiles each one. A shape class only times candidates whose tiles are not wider than
# its M and N rounded up to powers of two.
CANDIDATES = {
    "half": [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 8, 4),
             (128, 128, 64, 4, 4), (128, 128, 32, 4, 4), (64, 256, 32, 4, 4),
             (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (64, 64, 64, 4, 4)],
    "tf32": [(128, 128, 32, 8, 3), (128, 256, 32, 8, 3), (256, 128, 32, 8, 3),
             (128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4),
             (64, 64, 32, 4, 4)],
    "f32": [(128, 128, 32, 8, 3), (128, 128, 16, 8, 4), (256, 64, 16, 8, 3),
            (64, 256, 16, 8, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (64, 64, 32, 4, 3)],
    "f64": [(64, 64, 32, 4, 3), (128, 64, 16, 8, 2), (64, 128, 16, 8, 2), (32, 64, 16, 4, 3),
            (64, 32, 16, 4, 3)],
    "f64_fallback": [],
}


# The TMA kernel's candidates (Note [TMA matmul]), tuned beside CANDIDATES' of the same family:
# the tiles Hopper does best with, each within sm_90's shared memory with its pipeline (stages
# x (BLOCK_M + BLOCK_N) x BLOCK_K x itemsize) and C's staged tile (BLOCK_M x BLOCK_N x
# itemsize). float32 products (IEEE on the FMA units, or TF32 on the tensor cores) take
# narrower tiles: their elements are twice as wide.
TMA_CANDIDATES = {
    "half": [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 8, 4),
             (128, 128, 64, 4, 4), (128, 256, 32, 8, 4), (64, 256, 64, 4, 4)],
    "tf32": [(128, 128, 32, 8, 3), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
             (64, 128, 32, 4, 4)],
    "f32": [(128, 128, 32, 8, 3), (128, 128, 16, 8, 4), (128, 64, 32, 4, 3),
            (64, 128, 32, 4, 3)],
}
# A tuned config is one of CANDIDATES' (or the CONFIGS default) with its kernel last: 0 the
# pointer kernel, 1 the TMA kernel.
POINTER, TMA = 0, 1
PERSISTENT_PROGRAMS = 0  # the TMA kernel's programs: at most this many (0: the device's SMs)
_SMS: dict = {}  # device index -> its multiprocessor count


def _tma_layout(strides: tuple, rows: int, cols: int, itemsize: int) -> tuple | None:
    """(stored by columns, leading stride) of a (rows, cols) operand with element strides
    ``strides`` (batch, row, column) as a tensor descriptor takes it, or None when TMA cannot
    describe it (Note [TMA matmul]): one contiguous dimension, the other stride a multiple
    of 16 bytes and at least the contiguous dimension's extent."""
    _, s_row, s_col = strides
    for by_cols, lead, unit, extent in ((False, s_row, s_col, cols), (True, s_col, s_row, rows)):
        if unit == 1 and lead >= extent and (lead * itemsize) % 16 == 0:
            return by_cols, lead
    return None


def _tma_fits(key) -> bool:
    """Whether the TMA kernel can run the products of plan ``key`` (the addresses aside)."""
    B, M, N, K, sa, sb, dtype, use_dot, _, _ = key
    if B != 1 or dtype not in (D.float16, D.bfloat16, D.float32) or not use_dot:
        return False
    size = dtype.itemsize
    return ((N * size) % 16 == 0 and _tma_layout(sa, M, K, size) is not None
            and _tma_layout(sb, K, N, size) is not None)


def _aligned(x) -> bool:
    return not x.data_ptr() & 15


def _sms(device) -> int:
    index = device.index
    count = _SMS.get(index)
    if count is None:
        count = _SMS[index] = _drv.get_driver().multiprocessor_count(index)
    return count


class _TmaLaunch:
    """The launch of a plan that picked the TMA kernel (Note [TMA matmul]), called as the
    pointer kernel's ``Launch`` is: ``launch(a, b, c, bias, precision)``; operands at a base
    address that is not 16-byte aligned take the pointer kernel with the same tiles (``c`` is
    always a new allocation: aligned)."""

    __slots__ = ("fallback", "tma")

    def __init__(self, key, config, device):
        _, M, N, K, sa, sb, dtype, _, _, s_bias = key
        bm, bn, bk, warps, stages, _ = config
        a_cols, s_a = _tma_layout(sa, M, K, dtype.itemsize)
        b_cols, s_b = _tma_layout(sb, K, N, dtype.itemsize)
        programs = min(L.cdiv(M, bm) * L.cdiv(N, bn), PERSISTENT_PROGRAMS or _sms(device))
        self.tma = Launch(_matmul_tma_kernel, (programs,),
                          (M, N, K, s_a, s_b, s_bias or 0, a_cols, b_cols, bm, bn, bk, GROUP_M),
                          num_warps=warps, num_stages=stages)
        self.fallback = _launcher(key, config[:5], 1, K)

    def __call__(self, a, b, c, bias, precision):
        if _aligned(a) and _aligned(b):
            return self.tma(a, b, c, bias, precision)
        return self.fallback(a, b, c, bias, precision)


def config_of(launch) -> tuple:
    """(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, kernel) of a plan's launch (``_PLANS``'
    first element), as tuning names configs: what the benchmarks and tests report."""
    if isinstance(launch, _TmaLaunch):
        inner, tiles, kernel = launch.tma, launch.tma.tail[-4:-1], TMA
    else:
        inner, tiles, kernel = launch, launch.tail[-5:-2], POINTER
    return (*tiles, inner.options["num_warps"], inner.options["num_stages"], kernel)


def _layout(strides: tuple) -> str:
    """An operand's layout for its shape class: its rows contiguous, its columns, or neither."""
    return "row" if strides[2] == 1 else "col" if strides[1] == 1 else "strided"


def _tune(key, family, config, a, b):
    """The config autotuning picks for ``key`` (Note [autotuning]), or None (keep no plan):
    a CANDIDATES (or the default) config with its kernel last, ``POINTER`` or ``TMA``."""
    B, M, N, K, sa, sb, dtype, use_dot, precision, _ = key
    pick = "tf32" if family == "f32" and precision == "tf32" else family
    p2m, p2n = max(16, L.next_pow2(M)), max(16, L.next_pow2(N))
    pool = [(*c, POINTER) for c in CANDIDATES[pick]]
    # (the TMA kernel is timed on this call's arrays: only where they are aligned for it)
    if (pick in TMA_CANDIDATES and _tma_fits(key) and _aligned(a) and _aligned(b)
            and _drv.get_driver().capability(a.device.index) >= (9, 0)):
        pool += [(*c, TMA) for c in TMA_CANDIDATES[pick]]
    candidates = [c for c in pool if c[0] <= p2m and c[1] <= p2n]
    cls = (f"{dtype.name} {precision} batched={B > 1} {p2m}x{p2n}x{L.next_pow2(K)} "
           f"a={_layout(sa)} b={_layout(sb)}")
    scratch = _memory.empty((B * M * N,), dtype, a.device)
    plain = key[:-1] + (None,)  # (timed without a bias: one class, and no launch variant
    #                             that only tuning would compile)
    return autotune.pick(_matmul_kernel, cls, (*config, POINTER), candidates,
                         lambda c: _launcher(plain, c, 1, K, a.device), a, b, scratch, None,
                         precision)


def _launcher(key, config, split, chunk, device=None):
    """The launch of plan ``key`` with ``config`` (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages,
    and from tuning the kernel: Note [TMA matmul]); ``device``: the TMA kernel's."""
    if len(config) > 5 and config[5] == TMA:
        return _TmaLaunch(key, config, device)
    B, M, N, K, sa, sb, dtype, use_dot, _, s_bias = key
    bm, bn, bk, warps, stages = config[:5]
    tiles = B * L.cdiv(M, bm) * L.cdiv(N, bn)
    int64 = (L.needs_int64((B, M, K), sa) or L.needs_int64((B, K, N), sb)
             or split * B * M * N >= L._INT32_SAFE)
    return Launch(_matmul_kernel, (tiles, split),
                  (M, N, K, *sa, *sb, chunk, s_bias or 0, _ACC[dtype], use_dot, bm, bn, bk,
                   GROUP_M, int64), num_warps=warps, num_stages=stages)


def _plan(key, a, b):
    """(launch, splits) of ``key``, kept in _PLANS; a and b: the call's arrays (for tuning)."""
    B, M, N, K, sa, sb, dtype, use_dot, _, _ = key
    family = _FAMILY[dtype] if use_dot or dtype is not D.float64 else "f64_fallback"
    if M >= 256 and N >= 256:
        size = "large"
    elif M <= 16:
        size = "small"
    else:
        size = "medium"
    config = CONFIGS[family][size]
    split, chunk = _split_k(B * L.cdiv(M, config[0]) * L.cdiv(N, config[1]), K, config[2])
    keep = True
    if split == 1 and autotune.wanted(B * M * N * K):
        tuned = _tune(key, family, config, a, b)
        config, keep = tuned or config, tuned is not None
    plan = (_launcher(key, config, split, chunk, a.device), split)
    if keep:
        _PLANS[key] = plan
    return plan


def _launch(a, b, B, M, K, N, sa, sb, use_dot, shape, bias=None, s_bias=None):
    """The product as a new contiguous array of ``shape``: the kernel's output, or with
    split-K the sum of its partials (in the accumulator's dtype), rounded once; plus the row
    ``bias`` (element n at n * s_bias) when given, in the same rounding (without split-K)."""
    precision = _precision(a.dtype)
    key = (B, M, N, K, sa, sb, a.dtype, use_dot, precision, s_bias)
    launch, split = _PLANS.get(key) or _plan(key, a, b)
    if split == 1:
        c = _memory.empty(shape, a.dtype, a.device)
        launch(a, b, c, bias, precision)
        return c
    acc_dt = _ACC_DT[a.dtype]
    part = _memory.empty((split, B * M * N), acc_dt, a.device)
    launch(a, b, part, None, precision)
    c = _sum(part, (0,), False)
    c = c if a.dtype is acc_dt else astype(c, a.dtype)
    c = c.as_strided(shape, contiguous_strides(shape), c.offset)
    return c if bias is None else _add(c, bias.as_strided(shape, (0,) * (len(shape) - 1) +
                                                          (s_bias,), bias.offset), out=c)


def _check(op, a, b, nd):
    sa, sb = a.shape, b.shape
    if len(sa) != nd or len(sb) != nd:
        raise ValueError(f"{op}: expected {nd}-D arrays, got shapes {sa} and {sb}")
    if sa[-1] != sb[-2]:
        raise ValueError(f"{op}: shapes {sa} and {sb} cannot be multiplied "
                         f"({sa[-1]} != {sb[-2]})")
    if nd == 3 and sa[0] != sb[0]:
        raise ValueError(f"{op}: batch sizes differ: shapes {sa} and {sb}")
    if a.dtype is not b.dtype:
        dt = D.promote_types(a.dtype, b.dtype)
        a = a if a.dtype is dt else astype(a, dt)
        b = b if b.dtype is dt else astype(b, dt)
    if a.dtype not in _FAMILY:
        raise L.unsupported(op, a.dtype, "floating point only: float16, bfloat16, float32, "
                            "float64")
    return a, b


def _product(a, b, B, M, K, N, sa, sb, shape, bias=None, s_bias=None):
    """The (B, M, K) @ (B, K, N) product of ``a`` and ``b`` viewed with the element strides
    ``sa`` and ``sb`` (batch, row, column): a new contiguous array of ``shape`` (B * M * N
    elements; the kernel reads pointers and the plan's strides, not the arrays' shapes, so a
    2-D product needs no 3-D views)."""
    dtype = a.dtype
    if K == 0 and B and M and N:
        return full(shape, 0, dtype, a.device)
    if B == 0 or M == 0 or N == 0:
        return _memory.empty(shape, dtype, a.device)
    L.ensure_driver()
    if dtype is not D.float64:
        return _launch(a, b, B, M, K, N, sa, sb, True, shape, bias, s_bias)
    if _f64_dot:
        return _launch(a, b, B, M, K, N, sa, sb, _f64_dot[0], shape, bias, s_bias)
    try:
        c = _launch(a, b, B, M, K, N, sa, sb, True, shape, bias, s_bias)
        _f64_dot.append(True)
        return c
    except Exception:
        if L.INTERPRET:  # the interpreter runs any dot: an error here is a real one
            raise
        _f64_dot.append(False)  # this Triton cannot compile a float64 tl.dot
        return _launch(a, b, B, M, K, N, sa, sb, False, shape, bias, s_bias)


def _bmm(a, b):
    """(B, M, K) @ (B, K, N) -> new contiguous (B, M, N)."""
    B, M, K = a.shape
    N = b.shape[2]
    return _product(a, b, B, M, K, N, a.strides, b.strides, (B, M, N))


def matmul(a, b):
    """a @ b for 2-D arrays (float16, bfloat16, float32, float64, complex64, complex128); a new
    contiguous (M, N)."""
    try:
        a, b = _check("matmul", a, b, 2)
    except L.ComplexOperand:
        (M, K), N = a.shape, b.shape[1]
        c = _complex_bmm(a.as_strided((1, M, K), (0,) + tuple(a.strides), a.offset),
                         b.as_strided((1, K, N), (0,) + tuple(b.strides), b.offset))
        return c.as_strided((M, N), (N, 1), c.offset)
    (M, K), N = a.shape, b.shape[1]
    return _product(a, b, 1, M, K, N, (0, *a.strides), (0, *b.strides), (M, N))


def _bias_stride(c, M: int, N: int) -> int | None:
    """The element stride of ``c`` as a row of N biases broadcast to (M, N), or None when c
    is not one (a full (M, N) input, say)."""
    if c.ndim == 1 or (c.ndim == 2 and (c.shape[0] == 1 or c.strides[0] == 0)):
        if c.shape[-1] == N:
            return c.strides[-1]
        return 0 if c.shape[-1] == 1 else None
    return None


def addmm(c, a, b):
    """a @ b + c for 2-D a (M, K) and b (K, N), c broadcast to (M, N): a new contiguous (M, N)
    in the product's dtype. A row of biases (c of shape (N,) or (1,), or (1, N) or (M, N) with
    row stride 0) in that dtype is added in the product's epilogue, before its one rounding
    (linear's bias: no second launch); any other c is added after the product."""
    try:
        a, b = _check("addmm", a, b, 2)
    except L.ComplexOperand:
        pass
    else:
        (M, K), N = a.shape, b.shape[1]
        s_bias = _bias_stride(c, M, N) if c.dtype is a.dtype else None
        if s_bias is not None and M and N and K:
            return _product(a, b, 1, M, K, N, (0, *a.strides), (0, *b.strides), (M, N), c,
                             s_bias)
    out = matmul(a, b)
    return _add(out, c, out=out)


def bmm(a, b):
    """(B, n, m) @ (B, m, p) -> new contiguous (B, n, p); any strides, 0 batch strides too."""
    try:
        a, b = _check("bmm", a, b, 3)
    except L.ComplexOperand:
        return _complex_bmm(a, b)
    return _bmm(a, b)


def _complex_bmm(a, b):
    return _complex.bmm(a, b, _bmm)
