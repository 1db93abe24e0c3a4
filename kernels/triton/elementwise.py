"""Elementwise kernels: a flat and a strided kernel under every map-like op, casts included.

One kernel family serves add ... where, unary(), binary(), copy_, astype, contiguous, full and
arange (tinygrad's "few kernels, many ops"): the op is a ``tl.constexpr`` string, so each (op,
dtypes, layout) compiles to its own specialised binary while the source stays one loop body.
Each of the three operand slots (x, y, z) is absent, a pointer (any strides; zero strides
broadcast), or a Python scalar passed by value (a float64 bit pattern or an int64, so no
precision is lost and no device memory is touched for it). The launchers of the contract's ops
(dtype rules, out=, scalars) are in elementwise_ops.py; this file has the kernels, the
formulas, the layout plans, and the copy/arange launchers that memory.py uses.

Formulas (x, y, z after broadcasting, each converted to the compute type CT; the result is
rounded to the result type RT, then converted to the output's element type by the store; ld.
is libdevice, which the interpreter maps to NumPy, see _launch.py):

    add x + y   sub x - y   mul x * y   div x / y (div_rn for float32: IEEE, not div.full)
    pow ld.pow(x, y)        maximum, minimum: NaN-propagating for floats (np.maximum)
    gt ge lt le eq ne -> bool        neg -x       relu: x < 0 ? 0 : x (NaN stays NaN)
    exp ld.exp   log ld.log   sqrt: sqrt_rn for float32 (IEEE), sqrt for float64
    where z ? x : y (z: any dtype, nonzero is true)
    copy x (the cast happens at the store)          arange x + y * i (i: the flat index)
    abs |x|   sign (x > 0) - (x < 0) (0 for NaN)    sin cos tanh log1p expm1 (ld.)
    sigmoid 1 / (1 + ld.exp(-x))    floor ceil    round ld.rint (half to even)   trunc ld.trunc
    bitwise_not ~x (bool: x == 0)   and/or/xor x & y, x | y, x ^ y
    gelu 0.5 x (1 + erf(x / sqrt 2))      gelu_tanh 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    gelu64, gelu64_grad: the same for float64, with Phi(x) = erfc(-x / sqrt 2) / 2 by a
              continued fraction where 1 + erf(x / sqrt 2) cancels (x / sqrt 2 < -1.5)
    gelu_grad(g=x, x=y): g (Phi(x) + x phi(x));  gelu_tanh_grad: g (0.5 (1 + t) + 0.5 x (1 - t^2)
              sqrt(2/pi) (1 + 3 * 0.044715 x^2)), t = tanh(sqrt(2/pi) (x + 0.044715 x^3))
    integers: ipow x ** y by squaring (wrapping, as PyTorch's), y < 0: 1, +-1 for x = 1, -1,
              else 0 (the truncated reciprocal)
              trunc_divide x // y (Triton's // and % are C's: toward 0, sign of x)
              floor_divide q - (r != 0 and sign(r) != sign(y)), q = x // y, r = x % y
              remainder r + (r != 0 and sign(r) != sign(y) ? y : 0)
    floats:   trunc_divide ld.trunc(x / y)
              floor_divide, remainder: NumPy's npy_divmod (m = fmod(x, y); d = (x - m) / y;
              if m and sign(m) != sign(y): m += y, d -= 1; q = floor(d), +1 if d - q > 1/2;
              y == 0 gives x / y and fmod's NaN)

float16 and bfloat16 compute in float32 and round once, which for + - * / sqrt gives exactly
the correctly rounded half result (NumPy's half loops do the same). bool arithmetic computes in
int32 and stores ``!= 0`` (add is logical or, mul logical and, as NumPy).

Layouts (``_plan``): operands are broadcast to the output shape with zero strides, size-1
dimensions dropped and neighbours merged where every operand is contiguous across them
(``_launch.collapse``). When the result is one dimension with unit strides everywhere, the flat
kernel runs (one offset vector, vectorised loads); otherwise the strided kernel tiles the
collapsed shape as [rows, inner], so the div/mod of the index decomposition is paid per row,
not per element, and uses square tiles when some operand's inner stride is not 1 (transposes).
"""

from __future__ import annotations

import struct

import triton
import triton.language as tl
from triton.language.extra import libdevice

from ...runtime import dtype as D
from ...runtime.array import DeviceArray
from . import _launch as L
from .compat import result_type

__all__ = [
    "FBITS",
    "INT",
    "NONE",
    "PTR",
    "launch_arange",
    "launch_copy",
    "run",
    "scalar",
    "scalar_arg",
    "span",
]

# Operand modes (constexpr): absent, pointer, float64 bit pattern, int64 value.
NONE, PTR, FBITS, INT = 0, 1, 2, 3

# Block heuristics (module globals so tests can shrink them to force multi-program grids; call
# _launch.clear_plans() after changing them).
FLAT_BLOCK = 1024          # elements per program, flat kernel, below FLAT_LARGE_AT elements
FLAT_BLOCK_LARGE = 4096    # ... and from FLAT_LARGE_AT elements on (8 warps)
FLAT_LARGE_AT = 1 << 20
TILE = 2048                # elements per program, strided kernel
MAX_BLOCK_C = 1024         # widest inner block, strided kernel
TRANSPOSE_TILE = 32        # square tiles when an operand's inner stride is not 1


# ------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------
@triton.jit
def _operand(ptr, scalar, offs, mask, MODE: tl.constexpr, CT: tl.constexpr):
    """One operand as CT: loaded through ``ptr + offs`` (PTR) or made from ``scalar``."""
    if MODE == 1:
        v = tl.load(ptr + offs, mask=mask, other=1).to(CT)  # other=1: no 0/0 in masked lanes
    elif MODE == 2:
        v = scalar.to(tl.int64).to(tl.float64, bitcast=True).to(CT)
    elif MODE == 3:
        v = scalar.to(tl.int64).to(CT)
    else:  # absent: a zero the op ignores (compiled away)
        v = tl.zeros_like(offs).to(CT)
    return v


@triton.jit
def _sign_differs(r, y):
    return (r != 0) & ((r < 0) != (y < 0))


@triton.jit
def _float_divmod(x, y, WANT_DIV: tl.constexpr):
    # NumPy's npy_divmod (see the module docstring), on float32/float64 values.
    m = libdevice.fmod(x, y)
    d = (x - m) / y
    fix = _sign_differs(m, y)
    m = tl.where(fix, m + y, m)
    if WANT_DIV:
        d = tl.where(fix, d - 1.0, d)
        q = tl.floor(d)
        q = tl.where(d - q > 0.5, q + 1.0, q)
        q = tl.where(d == 0.0, d * 0.0, q)  # keep NumPy's signed zero: copysign(0, x / y)
        r = tl.where(y == 0.0, x / y, q)
    else:
        r = tl.where(y == 0.0, m, tl.where(m == 0.0, 0.0 * y, m))
    return r


@triton.jit
def _int_pow(x, e):
    r = x * 0 + 1
    b = x
    n = tl.where(e < 0, 0, e)
    for _ in range(64):  # every bit of an int64 exponent; higher powers have wrapped to 0
        r = tl.where((n & 1) != 0, r * b, r)
        b = b * b
        n = n >> 1
    if x.dtype.is_int_signed():  # (compile time: unsigned types have no -1 to compare with)
        inv = tl.where(x == 1, 1, tl.where(x == -1, tl.where((e & 1) != 0, -1, 1), 0))
        r = tl.where(e < 0, inv.to(r.dtype), r)
    return r


@triton.jit
def _exp_half_square(x):
    # exp(-x^2 / 2) for finite x without the rounding of x^2: hi = x rounded to float32 has an
    # exact square, and exp(-x^2 / 2) = exp(-hi^2 / 2) exp(-(x - hi) (x + hi) / 2)
    hi = x.to(tl.float32).to(tl.float64)
    return libdevice.exp(-0.5 * hi * hi) * libdevice.exp(-0.5 * (x - hi) * (x + hi))


@triton.jit
def _ndtr64(x):
    # Phi(x) for float64 x, as kernels/numpy/nn.py's _ndtr64 (same tail bound and 80 terms):
    # 0.5 (1 + erf) keeps no digit below x = -8.3, so there erfc by its continued fraction
    z = x * 0.7071067811865476
    head = 0.5 * (1.0 + tl.erf(z))
    xt = tl.minimum(tl.maximum(x, -40.0), -1.0)  # the tail's lanes; Phi(-40) underflows to 0
    zt = xt * -0.7071067811865476
    f = zt
    for i in tl.static_range(80):
        f = zt + (0.5 * (80 - i)) / f
    tail = _exp_half_square(xt) * 0.28209479177387814 / f  # 0.5 / sqrt(pi)
    return tl.where(z < -1.5, tail, head)  # NaN takes head: NaN


@triton.jit
def _apply(x, y, z, OP: tl.constexpr):
    """The formula of ``OP`` (see the module docstring) on converted operands."""
    if OP == "copy":
        r = x
    elif OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "div_rn":
        r = tl.math.div_rn(x, y)
    elif OP == "div":
        r = x / y
    elif OP == "pow":
        r = libdevice.pow(x, y)
    elif OP == "ipow":
        r = _int_pow(x, y)
    elif OP == "fmaximum":
        r = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "fminimum":
        r = tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "gt":
        r = x > y
    elif OP == "ge":
        r = x >= y
    elif OP == "lt":
        r = x < y
    elif OP == "le":
        r = x <= y
    elif OP == "eq":
        r = x == y
    elif OP == "ne":
        r = x != y
    elif OP == "neg":
        r = -x
    elif OP == "exp":
        r = libdevice.exp(x)
    elif OP == "log":
        r = libdevice.log(x)
    elif OP == "sqrt_rn":
        r = tl.sqrt_rn(x)
    elif OP == "sqrt":
        r = tl.sqrt(x)
    elif OP == "relu":
        r = tl.where(x < 0, 0, x)
    elif OP == "where":
        r = tl.where(z, x, y)
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "sign":
        r = (x > 0).to(x.dtype) - (x < 0).to(x.dtype)
    elif OP == "sin":
        r = libdevice.sin(x)
    elif OP == "cos":
        r = libdevice.cos(x)
    elif OP == "tanh":
        r = libdevice.tanh(x)
    elif OP == "sigmoid":
        r = 1.0 / (1.0 + libdevice.exp(-x))
    elif OP == "floor":
        r = tl.floor(x)
    elif OP == "ceil":
        r = tl.ceil(x)
    elif OP == "round":
        r = libdevice.rint(x)
    elif OP == "trunc":
        r = libdevice.trunc(x)
    elif OP == "log1p":
        r = libdevice.log1p(x)
    elif OP == "expm1":
        r = libdevice.expm1(x)
    elif OP == "bitwise_not":
        r = ~x
    elif OP == "logical_not":
        r = x == 0
    elif OP == "bitwise_and":
        r = x & y
    elif OP == "bitwise_or":
        r = x | y
    elif OP == "bitwise_xor":
        r = x ^ y
    elif OP == "itrunc_divide":
        r = x // y
    elif OP == "ifloor_divide":
        r = x // y - _sign_differs(x % y, y).to(x.dtype)
    elif OP == "iremainder":
        rem = x % y
        r = tl.where(_sign_differs(rem, y), rem + y, rem)
    elif OP == "ftrunc_divide_rn":
        r = libdevice.trunc(tl.math.div_rn(x, y))
    elif OP == "ftrunc_divide":
        r = libdevice.trunc(x / y)
    elif OP == "gelu":
        r = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    elif OP == "gelu64":
        r = x * _ndtr64(x)
    elif OP == "gelu_tanh":
        r = 0.5 * x * (1.0 + libdevice.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    elif OP == "gelu_grad":  # x: the incoming gradient, y: the forward input
        d = (0.5 * (1.0 + tl.erf(y * 0.7071067811865476))
             + y * libdevice.exp(-0.5 * y * y) * 0.3989422804014327)
        r = x * d
    elif OP == "gelu64_grad":
        # phi from y clipped to +-40 (it is 0 beyond): y phi is inf * 0 = NaN at +-inf
        phi = _exp_half_square(tl.minimum(tl.maximum(y, -40.0), 40.0)) * 0.3989422804014327
        r = x * (_ndtr64(y) + y * phi)
    elif OP == "gelu_tanh_grad":
        t = libdevice.tanh(0.7978845608028654 * (y + 0.044715 * y * y * y))
        d = (0.5 * (1.0 + t)
             + 0.5 * y * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * y * y))
        r = x * d
    elif OP == "tanh_backward":  # x: the incoming gradient, y: tanh's output
        r = x * (1.0 - y * y)
    elif OP == "sigmoid_backward":  # y: sigmoid's output
        r = x * (y * (1.0 - y))
    elif OP == "relu_backward":  # y: relu's output
        r = tl.where(y <= 0.0, 0.0, x)  # a NaN output passes the gradient, as in PyTorch
    elif OP == "ffloor_divide":
        r = _float_divmod(x, y, True)
    else:  # "fremainder"
        r = _float_divmod(x, y, False)
    return r


@triton.jit(do_not_specialize=["x_scalar", "y_scalar"])
def _ew_flat_kernel(
    out_ptr,  # *any: n contiguous elements, written
    x_ptr,    # *any: n contiguous elements (X_MODE == 1), else None
    y_ptr,    # *any: n contiguous elements (Y_MODE == 1), else None
    z_ptr,    # *any: n contiguous elements (Z_MODE == 1, the condition of where), else None
    x_scalar: tl.int64, y_scalar: tl.int64,  # by-value operands (FBITS/INT modes), else 0
    n,  # number of elements
    OP: tl.constexpr, X_MODE: tl.constexpr, Y_MODE: tl.constexpr, Z_MODE: tl.constexpr,
    CT: tl.constexpr, RT: tl.constexpr,
    BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    pid = tl.program_id(0)
    if INT64:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = _operand(x_ptr, x_scalar, offs, mask, X_MODE, CT)
    y = _operand(y_ptr, y_scalar, offs, mask, Y_MODE, CT)
    if OP == "arange":
        r = (x + y * offs.to(CT)).to(RT)
    else:
        z = _operand(z_ptr, 0, offs, mask, Z_MODE, tl.int1)
        r = _apply(x, y, z, OP).to(RT)
    tl.store(out_ptr + offs, r, mask=mask)


@triton.jit(do_not_specialize=["x_scalar", "y_scalar"])
def _ew_strided_kernel(
    out_ptr,  # *any: the output view, element (i0..iN) at sum(i_d * o_st[d])
    x_ptr,    # *any: operand x viewed with x_st (X_MODE == 1), else None
    y_ptr,    # *any: operand y viewed with y_st (Y_MODE == 1), else None
    z_ptr,    # *any: where's condition viewed with z_st (Z_MODE == 1), else None
    x_scalar: tl.int64, y_scalar: tl.int64,  # by-value operands (FBITS/INT modes), else 0
    shape,    # tuple of NDIM collapsed sizes, innermost last
    o_st, x_st, y_st, z_st,  # tuples of NDIM element strides (0 where broadcast or absent)
    n_rows,   # prod(shape[:-1]): the rows of the [rows, inner] tiling
    OP: tl.constexpr, X_MODE: tl.constexpr, Y_MODE: tl.constexpr, Z_MODE: tl.constexpr,
    CT: tl.constexpr, RT: tl.constexpr,
    NDIM: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, INT64: tl.constexpr,
):
    # Program pid covers rows [pid_r * BLOCK_R, +BLOCK_R) x inner [pid_c * BLOCK_C, +BLOCK_C).
    # Row r is split into outer indices by div/mod over shape[NDIM-2] ... shape[0] (the
    # outermost needs no modulo: r < n_rows); each operand's row offset sums index * stride.
    pid = tl.program_id(0)
    if INT64:
        pid = pid.to(tl.int64)
    n_inner = shape[NDIM - 1]
    n_cblk = tl.cdiv(n_inner, BLOCK_C)
    pid_r = pid // n_cblk
    pid_c = pid - pid_r * n_cblk
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    o_row = tl.zeros_like(rows)
    x_row = tl.zeros_like(rows)
    y_row = tl.zeros_like(rows)
    z_row = tl.zeros_like(rows)
    rem = rows
    for d in tl.static_range(NDIM - 2, -1, -1):
        if d == 0:
            idx = rem
        else:
            idx = rem % shape[d]
            rem = rem // shape[d]
        o_row += idx * o_st[d]
        if X_MODE == 1:
            x_row += idx * x_st[d]
        if Y_MODE == 1:
            y_row += idx * y_st[d]
        if Z_MODE == 1:
            z_row += idx * z_st[d]
    mask = (rows < n_rows)[:, None] & (cols < n_inner)[None, :]
    last: tl.constexpr = NDIM - 1
    x = _operand(x_ptr, x_scalar, x_row[:, None] + cols[None, :] * x_st[last], mask, X_MODE, CT)
    y = _operand(y_ptr, y_scalar, y_row[:, None] + cols[None, :] * y_st[last], mask, Y_MODE, CT)
    z = _operand(z_ptr, 0, z_row[:, None] + cols[None, :] * z_st[last], mask, Z_MODE, tl.int1)
    r = _apply(x, y, z, OP).to(RT)
    tl.store(out_ptr + (o_row[:, None] + cols[None, :] * o_st[last]), r, mask=mask)


# ------------------------------------------------------------------------------------------
# Plans: layout decisions per (output, operands) shapes and strides
# ------------------------------------------------------------------------------------------
_PLANS = L.plan_cache()
_FLAT, _STRIDED = 0, 1
_Z0: dict = {}  # zero strides per ndim, for absent and scalar operands


def _zeros(nd: int) -> tuple:
    z = _Z0.get(nd)
    if z is None:
        z = _Z0[nd] = (0,) * nd
    return z


def _plan(key):
    """(kind, grid, runtime layout args, layout constexprs, num_warps) for ``key``:
    (out shape, out strides, then (shape, strides) or None per operand x, y, z)."""
    shape, ost = key[0], key[1]
    nd = len(shape)
    sts = [ost]
    for op in key[2:]:
        sts.append(_zeros(nd) if op is None else L.broadcast_strides(op[0], op[1], shape))
    cshape, cst = L.collapse(shape, *sts)
    present = [cst[0]] + [s for s, op in zip(cst[1:], key[2:]) if op is not None]
    n = 1
    for s in shape:
        n *= s
    int64 = L.needs_int64(shape, *sts)
    if n == 0:
        plan = (_FLAT, (0,), (0,), (FLAT_BLOCK, False), 4)
    elif len(cshape) == 0 or (len(cshape) == 1 and all(s[0] == 1 for s in present)):
        block = FLAT_BLOCK_LARGE if n >= FLAT_LARGE_AT else FLAT_BLOCK
        warps = 8 if block >= 4096 else 4
        plan = (_FLAT, (L.cdiv(n, block),), (n,), (block, int64), warps)
    else:
        inner = cshape[-1]
        rows = n // inner
        co, cx, cy, cz = cst
        if any(s[-1] not in (0, 1) for s in present):  # transpose-like: square tiles
            bc = min(L.next_pow2(inner), TRANSPOSE_TILE)
            br = min(L.next_pow2(rows), TRANSPOSE_TILE)
        else:
            bc = min(L.next_pow2(inner), MAX_BLOCK_C, TILE)
            br = min(L.next_pow2(rows), max(1, TILE // bc))
        warps = 8 if br * bc >= 4096 else 4
        grid = (L.cdiv(rows, br) * L.cdiv(inner, bc),)
        plan = (_STRIDED, grid, (cshape, co, cx, cy, cz, rows), (len(cshape), br, bc, int64),
                warps)
    _PLANS[key] = plan
    return plan


def run(out, x, y, z, xs, ys, consts):
    """Launches ``consts`` = (OP, X_MODE, Y_MODE, Z_MODE, CT, RT) writing ``out``; x, y, z are
    DeviceArrays broadcast to out's shape or None, xs/ys the by-value scalars."""
    key = (out.shape, out.strides,
           None if x is None else (x.shape, x.strides),
           None if y is None else (y.shape, y.strides),
           None if z is None else (z.shape, z.strides))
    kind, grid, args, lconsts, warps = _PLANS.get(key) or _plan(key)
    if grid[0] == 0:
        return out
    L.ensure_driver()
    if kind == _FLAT:
        _ew_flat_kernel[grid](out, x, y, z, xs, ys, *args, *consts, *lconsts, num_warps=warps,
                              **L.EXACT)
    else:
        _ew_strided_kernel[grid](out, x, y, z, xs, ys, *args, *consts, *lconsts,
                                 num_warps=warps, **L.EXACT)
    return out


# ------------------------------------------------------------------------------------------
# Scalars, spans, and the copy/arange launchers
# ------------------------------------------------------------------------------------------
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def scalar(s):
    """(value, type) of a Python scalar; ints beyond int64 become floats (as NumPy converts
    them for float arrays; for integer arrays NumPy would raise instead)."""
    t = type(s)
    if t is int and not _INT64_MIN <= s <= _INT64_MAX:
        return float(s), float
    if t not in (int, float, bool):  # NumPy scalars and the like
        if isinstance(s, complex):
            return s, complex
        if isinstance(s, bool) or getattr(s, "dtype", None) == bool:
            return bool(s), bool
        if isinstance(s, int) or getattr(getattr(s, "dtype", None), "kind", "") in "iu":
            return scalar(int(s))
        return float(s), float
    return s, t


def scalar_arg(s, mode):
    """The by-value kernel argument of a Python scalar for mode FBITS or INT."""
    if mode == INT:
        return int(s)
    return struct.unpack("<q", struct.pack("<d", float(s)))[0]


def span(a):
    """[lo, hi) element offsets in a's storage that ``a`` may touch (empty for no elements)."""
    lo = hi = a.offset
    for n, s in zip(a.shape, a.strides):
        if n == 0:
            return a.offset, a.offset
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + 1


_SPECS: dict = {}
_BSHAPES: dict = {}


def bshape(op, *shapes):
    """Cached broadcast of ``shapes`` (ValueError naming ``op`` when impossible)."""
    s = _BSHAPES.get(shapes)
    if s is None:
        s = _BSHAPES[shapes] = L.broadcast_shape(op, *shapes)
    return s


def _via_f32(src, dst):
    # float64 and integers -> bfloat16 go through float32 (not every GPU converts directly)
    return dst is D.bfloat16 and src not in (D.float16, D.bfloat16, D.float32)


def _copy_spec(key):
    _, src, dst = key
    L.check_supported("copy_", dst)
    if isinstance(src, D.dtype):
        L.check_supported("copy_", src)
        ct, mode = L.TL[src], PTR
        rt = tl.float32 if _via_f32(src, dst) else result_type(ct, dst is D.bool)
    else:
        if src is complex:
            raise L.unsupported("copy_", D.complex64, "complex scalars")
        mode = FBITS if src is float else INT
        ct = tl.float64 if mode == FBITS else tl.int64
        rt = tl.float32 if dst is D.bfloat16 else result_type(ct, dst is D.bool)
    spec = ("copy", mode, NONE, NONE, ct, rt)
    _SPECS[key] = spec
    return spec


def launch_copy(dst, src):
    """Writes ``src`` (array, broadcast to dst's shape, or Python scalar) into ``dst``, cast to
    dst's dtype. No aliasing checks: memory.copy_ does them."""
    if type(src) is DeviceArray:
        key = ("copy", src.dtype, dst.dtype)
        consts = _SPECS.get(key) or _copy_spec(key)
        if src.shape != dst.shape and bshape("copy_", src.shape, dst.shape) != dst.shape:
            raise ValueError(f"copy_: source of shape {src.shape} cannot be broadcast to "
                             f"the destination's shape {dst.shape}")
        return run(dst, src, None, None, 0, 0, consts)
    src, t = scalar(src)
    key = ("copy", t, dst.dtype)
    consts = _SPECS.get(key) or _copy_spec(key)
    return run(dst, None, None, None, scalar_arg(src, consts[1]), 0, consts)


def launch_arange(out, start, step):
    """out[i] = start + step * i for contiguous 1-D ``out``: int64 math when both are ints,
    float64 otherwise, then cast to out's dtype."""
    start, ts = scalar(start)
    step, tp = scalar(step)
    L.check_supported("arange", out.dtype)
    integral = ts in (int, bool) and tp in (int, bool)
    ct = tl.int64 if integral else tl.float64
    rt = tl.float32 if out.dtype is D.bfloat16 else result_type(ct, out.dtype is D.bool)
    ms = INT if ts in (int, bool) else FBITS
    mp = INT if tp in (int, bool) else FBITS
    consts = ("arange", ms, mp, NONE, ct, rt)
    return run(out, None, None, None, scalar_arg(start, ms), scalar_arg(step, mp), consts)
