"""float8 conversions on the GPU, as PyTorch's (runtime.dtype.float8_bits).

``astype(a, dtype)`` converts a (possibly strided, up to 4-D) DeviceArray into a new
contiguous one when either side is ``float8_e4m3fn`` or ``float8_e5m2`` (the formats Triton
and sm_90 know). Everything goes through float32, as PyTorch's casts do (a float64 source
rounds to float32 first): float8 values widen exactly through ``_float8_values`` and narrow
through ``_float8_bits`` (kernels/triton/scaled_mm.py: round to nearest even, e4m3fn
saturating, e5m2 overflowing to infinity, NaN keeping its sign), both written in integer
arithmetic, so the bits are PyTorch's on sm_90 and in Triton's interpreter alike. The NumPy
twin is kernels/numpy/float8.py's ``astype``.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...runtime import dtype as D
from ...runtime import memory as _memory
from . import _launch as L
from .launcher import Launch, jit
from .scaled_mm import _float8_values, _stored_as

__all__ = ["DEVICE_FLOAT8", "astype"]

DEVICE_FLOAT8 = (D.float8_e4m3fn, D.float8_e5m2)
_OTHERS = (D.float32, D.float16, D.bfloat16, D.float64)  # the other side of a conversion
# elements per program (one path for any size: the tests' 3000+ elements take several)
PER_PROGRAM = 1024


@triton.jit
def _with_sign_of(y, x):
    """float32 ``y`` with the sign bit of ``x`` (a float of 16, 32 or 64 bits). sm_90's cvt
    widens or narrows a NaN to the unsigned canonical NaN (the first GPU run of these kernels,
    2026-12-04: float16 sources differed from float8_bits); PyTorch's CPU cast keeps the
    sign, and the float8 bits carry it."""
    if x.dtype.primitive_bitwidth == 64:
        neg = x.to(tl.int64, bitcast=True) < 0
    elif x.dtype.primitive_bitwidth == 16:
        neg = x.to(tl.int16, bitcast=True) < 0
    else:
        neg = x.to(tl.int32, bitcast=True) < 0
    u = y.to(tl.uint32, bitcast=True) & 0x7FFFFFFF
    return tl.where(neg, u | 0x80000000, u).to(tl.float32, bitcast=True)


@jit
def _convert_kernel(
    x_ptr,  # *T: the source, element (i0, i1, i2, i3) at i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3
    y_ptr,  # *U: the result, contiguous, n elements
    n, d1, d2, d3,  # element count and the sizes of dims 1-3 (dim 0's follows)
    s0, s1, s2, s3,
    IN_FP8: tl.constexpr,  # 1: e4m3fn, 2: e5m2 (decoded from the bits), 0: a plain cast
    OUT_FP8: tl.constexpr,  # 1: e4m3fn, 2: e5m2 (PyTorch's rounding), 0: a plain cast
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    i3 = i % d3
    r = i // d3
    i2 = r % d2
    r = r // d2
    i1 = r % d1
    i0 = r // d1
    x = tl.load(x_ptr + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3, mask=mask)
    if IN_FP8 == 1:
        x = _float8_values(x, False)
    elif IN_FP8 == 2:
        x = _float8_values(x, True)
    else:  # exact from the half types; float64 rounds, as PyTorch's
        x = _with_sign_of(x.to(tl.float32), x)
    tl.store(y_ptr + i, _stored_as(x, y_ptr, OUT_FP8), mask=mask)


_PLANS: dict = {}
_CODE = {D.float8_e4m3fn: 1, D.float8_e5m2: 2}


def supported(src, dst) -> bool:
    """Whether ``astype`` converts ``src`` dtype to ``dst`` (float8 on one side at least)."""
    return ((src in DEVICE_FLOAT8 and (dst in _OTHERS or dst in DEVICE_FLOAT8))
            or (dst in DEVICE_FLOAT8 and src in _OTHERS))


def astype(a, dtype):
    """A new contiguous DeviceArray of ``a`` converted to ``dtype`` (``supported`` dtypes,
    at most 4 dimensions)."""
    if not supported(a.dtype, dtype):
        raise TypeError(f"float8 conversion on cuda from {a.dtype} to {dtype} is not supported "
                        f"(float8_e4m3fn and float8_e5m2, to or from float16, bfloat16, "
                        f"float32, float64 or each other)")
    if a.ndim > 4:
        raise TypeError(f"float8 conversion on cuda: at most 4 dimensions, got {a.ndim}")
    L.ensure_driver()
    out = _memory.empty(a.shape, dtype, a.device)
    n = a.numel
    if n == 0:
        return out
    shape = (1,) * (4 - a.ndim) + tuple(a.shape)
    strides = (0,) * (4 - a.ndim) + tuple(a.strides)
    in_fp8 = _CODE.get(a.dtype, 0)
    out_fp8 = _CODE.get(dtype, 0)
    key = (L.cdiv(n, PER_PROGRAM), in_fp8, out_fp8)
    launch = _PLANS.get(key)
    if launch is None:
        launch = _PLANS[key] = Launch(_convert_kernel, (key[0],),
                                      (in_fp8, out_fp8, PER_PROGRAM), num_warps=4)
    launch(a, out, n, shape[1], shape[2], shape[3], *strides)
    return out
