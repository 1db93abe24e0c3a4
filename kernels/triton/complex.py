"""Complex numbers on the Triton backend: complex64/complex128 as pairs of float lanes.

Note [complex lanes]: a complex DeviceArray stores interleaved (real, imaginary) floats, the
layout of NumPy's complex64/complex128, so host <-> device copies are byte copies. Triton has no
complex type: its kernels see a complex array as ``DeviceArray.view_as_real()``, the real array
(float32 of complex64, float64 of complex128) with one more trailing dimension of 2 and doubled
strides, a view (no copy). Then

- copies, casts, fills and ``where`` are the real kernels on those views (a lane, ``[..., 0]``
  or ``[..., 1]``, is a real strided view too: real <-> complex casts write or read one lane);
- ``sum`` and ``cumsum`` are the real kernels on the view over the same dims (the lane dim
  is kept); ``index``, ``index_put_``, ``gather`` and ``scatter_`` are the real indexing
  kernels on the views, index arrays repeated along the lane dim by a zero stride;
- ``prod`` is a pairwise tree of complex multiplications; ``all``/``any`` and ``nonzero``
  are the real ones of ``a != 0``;
- matmul/bmm are four real products of the lanes on the tl.dot kernel, combined by the real
  elementwise kernels (``(a + ib)(c + id) = ac - bd + i(ad + bc)``);
- the arithmetic (add ... pow, the comparisons) and the math functions (abs angle exp log
  sqrt sin cos tan tanh sigmoid expm1 log1p sgn) run one kernel of this file, ``_complex_kernel``: per
  element it loads both lanes of each operand, computes the complex formula in float32 or
  float64 (the result's real type) and stores both lanes (or one real value: abs, angle, the
  comparisons). Operands are complex arrays, real arrays (imaginary part 0) or Python scalars
  passed by value, broadcast through zero strides.

The real entry points never test for complex: a real-only family refuses a complex dtype with
``_launch.ComplexOperand`` (a TypeError) when it plans, and the contract's entry points that
have a complex variant catch it and call in here (the indexing launchers, which check no
dtype, are routed by kernels/triton/__init__.py). Everything else (amax/amin, argmax/argmin,
maximum/minimum, scatter_reduce_, sorting, softmax, the fused nn ops, ...) keeps that
TypeError, which names the op and the dtype. gt ge lt le order complex numbers as NumPy does
(real parts, then imaginary parts), as the CPU backend's do.

Formulas follow NumPy's (Smith's division, C99's csqrt, Kahan's tanh; 0 ** y is 0 for real
y > 0, y == 0 gives 1; integer scalar exponents up to 100 multiply by squaring, as NumPy);
special values (infinities in one lane) are not given C99 Annex G's treatment.
"""

from __future__ import annotations

import struct

import triton.language as tl
from triton.language.extra import libdevice

from ...runtime import dtype as D
from ...runtime import memory as _memory
from ...runtime.array import DeviceArray
from . import _launch as L
from . import elementwise as E
from ._launch import block_range
from .elementwise import bshape, launch_copy
from .indexing import as_shape_of, one_d
from .launcher import jit

__all__ = ["BINARY", "UNARY", "any_nonzero", "binary", "bmm", "conj", "copy", "cumsum",
           "gather", "imag", "index", "index_put_", "prod", "real", "scatter_", "sum", "unary",
           "view_as_complex", "view_as_real", "where"]


# ------------------------------------------------------------------------------------------
# Views
# ------------------------------------------------------------------------------------------
def lane(a: DeviceArray, i: int) -> DeviceArray:
    """The real (i = 0) or imaginary (i = 1) parts of complex ``a`` as a real strided view."""
    return DeviceArray(a.storage, 2 * a.offset + i, a.shape, tuple(2 * s for s in a.strides),
                       a.dtype.to_real())


def view_as_real(a: DeviceArray) -> DeviceArray:
    """Complex ``a`` as a real view with a last dimension of 2 (real, imaginary)."""
    return a.view_as_real()


def view_as_complex(a: DeviceArray) -> DeviceArray:
    """The complex view of a real array whose last dim is 2 with stride 1 and whose other
    strides and offset are even (``view_as_real``'s inverse)."""
    assert a.shape[-1] == 2 and a.strides[-1] == 1, a
    return DeviceArray(a.storage, a.offset // 2, a.shape[:-1],
                       tuple(s // 2 for s in a.strides[:-1]), a.dtype.to_complex())


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


def _is_scalar(x) -> bool:
    return not isinstance(x, DeviceArray)


# ------------------------------------------------------------------------------------------
# Memory: copies and casts on the lanes
# ------------------------------------------------------------------------------------------
def copy(dst: DeviceArray, src) -> DeviceArray:
    """``launch_copy`` where ``dst`` or ``src`` is complex: ``src`` (an array broadcast to
    dst's shape, or a Python scalar) cast into ``dst``. complex -> real keeps the real part
    (NumPy's unsafe cast), complex -> bool is ``!= 0`` (either part nonzero, as NumPy)."""
    if _is_scalar(src):
        v = complex(src)
        if dst.dtype.is_complex:
            launch_copy(lane(dst, 0), v.real)
            launch_copy(lane(dst, 1), v.imag)
        else:
            launch_copy(dst, v != 0 if dst.dtype is D.bool else v.real)
        return dst
    if src.shape != dst.shape and bshape("copy_", src.shape, dst.shape) != dst.shape:
        raise ValueError(f"copy_: source of shape {src.shape} cannot be broadcast to "
                         f"the destination's shape {dst.shape}")
    if dst.dtype.is_complex and src.dtype.is_complex:
        launch_copy(dst.view_as_real(), src.view_as_real())
    elif dst.dtype.is_complex:
        launch_copy(lane(dst, 0), src)
        launch_copy(lane(dst, 1), 0)
    elif dst.dtype is D.bool:
        launch_copy(dst, binary("ne", src, 0))
    else:
        launch_copy(dst, lane(src, 0))
    return dst


def _new(shape, dtype, device) -> DeviceArray:
    return _memory.empty(shape, dtype, device)


def conj(a: DeviceArray) -> DeviceArray:
    """The complex conjugate (a copy of a real array)."""
    if not a.dtype.is_complex:
        return _real_copy(a, a.dtype)
    return unary("conj", a)


def _real_copy(a, dtype):
    out = _new(a.shape, dtype, a.device)
    launch_copy(out, a)
    return out


def real(a: DeviceArray) -> DeviceArray:
    """The real part, a new real array (a copy of a real array)."""
    if not a.dtype.is_complex:
        return _real_copy(a, a.dtype)
    return _real_copy(lane(a, 0), a.dtype.to_real())


def imag(a: DeviceArray) -> DeviceArray:
    """The imaginary part, a new real array (zeros for a real array)."""
    if not a.dtype.is_complex:
        out = _new(a.shape, a.dtype, a.device)
        launch_copy(out, 0)
        return out
    return _real_copy(lane(a, 1), a.dtype.to_real())


def where(cond: DeviceArray, a, b) -> DeviceArray:
    """cond ? a : b where a branch is complex: the real ``where`` kernel on the lanes (the
    condition broadcast along them with a zero stride)."""
    from .elementwise_ops import where as real_where

    r = _result_dtype("where", a, b)
    shapes = [cond.shape] + [x.shape for x in (a, b) if not _is_scalar(x)]
    shape = bshape("where", *shapes)
    lanes = []
    for x in (a, b):
        if _is_scalar(x) or x.dtype is not r:  # scalars and real arrays: made complex first
            c = _new(() if _is_scalar(x) else x.shape, r, cond.device)
            copy(c, x)
            x = c
        lanes.append(x.view_as_real())
    c2 = DeviceArray(cond.storage, cond.offset, tuple(cond.shape) + (1,),
                     tuple(cond.strides) + (0,), cond.dtype)
    out = real_where(c2, lanes[0], lanes[1])
    assert out.shape == shape + (2,)
    return view_as_complex(out)


# ------------------------------------------------------------------------------------------
# Formulas: (xr, xi, yr, yi) -> (re, im) in the compute type
# ------------------------------------------------------------------------------------------
@jit
def _div(a, b):
    if a.dtype == tl.float32:
        r = tl.math.div_rn(a, b)  # IEEE division (plain / is an approximation on float32)
    else:
        r = a / b
    return r


@jit
def _sqrt(a):
    if a.dtype == tl.float32:
        r = tl.sqrt_rn(a)
    else:
        r = tl.sqrt(a)
    return r


@jit
def _cdiv(xr, xi, yr, yi):
    # Smith's algorithm (NumPy's): divide through by the larger part of y; y == 0 gives
    # x / |yr| in each lane (inf or NaN), as NumPy
    big = tl.abs(yr) >= tl.abs(yi)
    r = tl.where(big, _div(yi, yr), _div(yr, yi))
    d = tl.where(big, yr + yi * r, yi + yr * r)
    re = _div(tl.where(big, xr + xi * r, xr * r + xi), d)
    im = _div(tl.where(big, xi - xr * r, xi * r - xr), d)
    zero = (yr == 0) & (yi == 0)
    ay = tl.abs(yr)
    return tl.where(zero, _div(xr, ay), re), tl.where(zero, _div(xi, ay), im)


@jit
def _cexp(xr, xi):
    # C99 Annex G's cexp (NumPy's, on the CPU): a real argument stays real (exp(800 + 0j) is
    # inf + 0j, where inf * sin(0) made inf + NaN j), and an infinite real part with a NaN or
    # infinite imaginary one gives inf + NaN j (+inf) or 0 (-inf) instead of NaN + NaN j
    e = libdevice.exp(xr)
    re = e * libdevice.cos(xi)
    im = e * libdevice.sin(xi)
    wild = (tl.abs(xi) == float("inf")) | (xi != xi)
    to_zero = wild & (xr == -float("inf"))
    re = tl.where(xi == 0, e, tl.where(wild & (xr == float("inf")), float("inf"),
                                       tl.where(to_zero, 0.0, re)))
    im = tl.where(xi == 0, xi, tl.where(to_zero, 0.0, im))
    return re, im


@jit
def _clog(xr, xi):
    return libdevice.log(libdevice.hypot(xr, xi)), libdevice.atan2(xi, xr)


@jit
def _ctanh(xr, xi):
    # Kahan's: t = tan y, s = sinh x, tanh z = ((1 + t^2) s sqrt(1 + s^2) + i t) / (1 + (1 +
    # t^2) s^2); past |x| = 20 (sinh^2 would overflow float32 sooner or later) tanh x rounds
    # to +-1 and the imaginary part is 4 sin y cos y e^(-2|x|)
    t = libdevice.tan(xi)
    b = 1.0 + t * t
    s = libdevice.sinh(xr)
    rho = _sqrt(1.0 + s * s)
    d = 1.0 + b * s * s
    big = tl.abs(xr) > 20.0
    one = libdevice.copysign(tl.full(xr.shape, 1.0, xr.dtype), xr)
    tail = 4.0 * libdevice.sin(xi) * libdevice.cos(xi) * libdevice.exp(-2.0 * tl.abs(xr))
    return tl.where(big, one, _div(b * rho * s, d)), tl.where(big, tail, _div(t, d))


@jit
def _cmul(xr, xi, yr, yi):
    return xr * yr - xi * yi, xr * yi + xi * yr


_FORMULAS: dict = {}  # op -> jitted formula of (xr, xi, yr, yi) -> (re, im)


def _formula(fn):
    _FORMULAS[fn.__name__.removeprefix("_c_")] = jitted = jit(fn)
    return jitted


@_formula
def _c_add(xr, xi, yr, yi):
    return xr + yr, xi + yi


@_formula
def _c_sub(xr, xi, yr, yi):
    return xr - yr, xi - yi


@_formula
def _c_mul(xr, xi, yr, yi):
    return _cmul(xr, xi, yr, yi)


@_formula
def _c_div(xr, xi, yr, yi):
    return _cdiv(xr, xi, yr, yi)


@_formula
def _c_pow(xr, xi, yr, yi):
    # exp(y log x); x == 0: 1 for y == 0, 0 for Re y > 0 (also a complex y), else NaN (NumPy's
    # npy_cpow, the CPU's)
    lr, li = _clog(xr, xi)
    wr, wi = _cmul(yr, yi, lr, li)
    re, im = _cexp(wr, wi)
    x0 = (xr == 0) & (xi == 0)
    y0 = (yr == 0) & (yi == 0)
    zero = x0 & (yr > 0)
    nan = x0 & ~zero
    re = tl.where(y0, 1.0, tl.where(zero, 0.0, tl.where(nan, float("nan"), re)))
    im = tl.where(y0, 0.0, tl.where(zero, 0.0, tl.where(nan, float("nan"), im)))
    return re, im


@_formula
def _c_ipow(xr, xi, yr, yi):
    # x ** n for an integer n, |n| <= 100 (yr), by squaring (NumPy's exact small powers)
    n = tl.abs(yr).to(tl.int32)
    rr = tl.full(xr.shape, 1.0, xr.dtype)
    ri = tl.zeros_like(xr)
    br = xr
    bi = xi
    first = n == n  # (the first factor is taken as is: 1 * (inf + 0j) would make NaN of 0 * inf)
    for _ in tl.static_range(7):  # 100 < 2 ** 7
        odd = (n & 1) != 0
        pr, pi = _cmul(rr, ri, br, bi)
        rr = tl.where(odd, tl.where(first, br, pr), rr)
        ri = tl.where(odd, tl.where(first, bi, pi), ri)
        first = first & ~odd
        n = n >> 1
        more = n > 0  # square the base only while bits remain (no overflow past the top one)
        sr, si = _cmul(br, bi, tl.where(more, br, 0.0), tl.where(more, bi, 0.0))
        br = tl.where(more, sr, br)
        bi = tl.where(more, si, bi)
    inv_r, inv_i = _cdiv(tl.full(xr.shape, 1.0, xr.dtype), tl.zeros_like(xr), rr, ri)
    neg = yr < 0
    return tl.where(neg, inv_r, rr), tl.where(neg, inv_i, ri)


@_formula
def _c_eq(xr, xi, yr, yi):
    r = (xr == yr) & (xi == yi)
    return r, r


@_formula
def _c_ne(xr, xi, yr, yi):
    r = (xr != yr) | (xi != yi)
    return r, r


# gt ge lt le: NumPy's lexicographic order of complex numbers (real parts, then imaginary
# parts; False with a NaN), which the CPU backend has; PyTorch's operators refuse complex
# before reaching the kernels, but derivative rules compare (pow's b >= 0)
@_formula
def _c_gt(xr, xi, yr, yi):
    r = (xr > yr) | ((xr == yr) & (xi > yi))
    return r, r


@_formula
def _c_ge(xr, xi, yr, yi):
    r = (xr > yr) | ((xr == yr) & (xi >= yi))
    return r, r


@_formula
def _c_lt(xr, xi, yr, yi):
    r = (xr < yr) | ((xr == yr) & (xi < yi))
    return r, r


@_formula
def _c_le(xr, xi, yr, yi):
    r = (xr < yr) | ((xr == yr) & (xi <= yi))
    return r, r


@_formula
def _c_tanh_backward(xr, xi, yr, yi):
    # x (1 - y^2), y: tanh's output
    sr, si = _cmul(yr, yi, yr, yi)
    return _cmul(xr, xi, 1.0 - sr, -si)


@_formula
def _c_sigmoid_backward(xr, xi, yr, yi):
    # x y (1 - y), y: sigmoid's output
    pr, pi = _cmul(yr, yi, 1.0 - yr, -yi)
    return _cmul(xr, xi, pr, pi)


@_formula
def _c_neg(xr, xi, yr, yi):
    return -xr, -xi


@_formula
def _c_conj(xr, xi, yr, yi):
    return xr, -xi


@_formula
def _c_abs(xr, xi, yr, yi):
    r = libdevice.hypot(xr, xi)
    return r, r


@_formula
def _c_angle(xr, xi, yr, yi):
    r = libdevice.atan2(xi, xr)
    return r, r


@_formula
def _c_sgn(xr, xi, yr, yi):
    # z / |z|, 0 at 0 (PyTorch's sgn; NumPy 2's sign of complex)
    a = libdevice.hypot(xr, xi)
    zero = a == 0
    a = tl.where(zero, 1.0, a)
    return tl.where(zero, 0.0, _div(xr, a)), tl.where(zero, 0.0, _div(xi, a))


@_formula
def _c_exp(xr, xi, yr, yi):
    return _cexp(xr, xi)


@_formula
def _c_expm1(xr, xi, yr, yi):
    # exp(x) cos(y) - 1 = expm1(x) cos(y) - 2 sin^2(y / 2), without the cancellation near 0
    h = libdevice.sin(0.5 * xi)
    return (libdevice.expm1(xr) * libdevice.cos(xi) - 2.0 * h * h,
            libdevice.exp(xr) * libdevice.sin(xi))


@_formula
def _c_log(xr, xi, yr, yi):
    return _clog(xr, xi)


@_formula
def _c_log1p(xr, xi, yr, yi):
    # log|1 + z| = log1p(2x + x^2 + y^2) / 2 near z = 0 (no cancellation), log(hypot) away
    m = libdevice.hypot(1.0 + xr, xi)
    near = 0.5 * libdevice.log1p(2.0 * xr + xr * xr + xi * xi)
    return tl.where(m < 2.0, near, libdevice.log(m)), libdevice.atan2(xi, 1.0 + xr)


@_formula
def _c_sqrt(xr, xi, yr, yi):
    # C99's csqrt (NumPy's): t = sqrt((|x| + |z|) / 2), the other part y / 2t; the halves
    # added after halving (|x| + |z| overflowed near the largest values: sqrt(1e308 + 1e308j)
    # was inf), and an infinite y gives (inf, y) whatever x is, as C99 says
    a = libdevice.hypot(xr, xi)
    t = _sqrt(tl.abs(xr) * 0.5 + a * 0.5)
    zero = a == 0
    t2 = tl.where(zero, 1.0, 2.0 * t)
    pos = xr >= 0
    re = tl.where(pos, t, _div(tl.abs(xi), t2))
    im = tl.where(pos, _div(xi, t2), libdevice.copysign(t, xi))
    inf_y = tl.abs(xi) == float("inf")
    re = tl.where(inf_y, float("inf"), re)
    im = tl.where(inf_y, xi, im)
    return tl.where(zero, 0.0, re), tl.where(zero, xi, im)


@_formula
def _c_sin(xr, xi, yr, yi):
    return (libdevice.sin(xr) * libdevice.cosh(xi), libdevice.cos(xr) * libdevice.sinh(xi))


@_formula
def _c_cos(xr, xi, yr, yi):
    return (libdevice.cos(xr) * libdevice.cosh(xi), -(libdevice.sin(xr) * libdevice.sinh(xi)))


@_formula
def _c_tanh(xr, xi, yr, yi):
    return _ctanh(xr, xi)


@_formula
def _c_tan(xr, xi, yr, yi):
    # tan z = -i tanh(iz)
    a, b = _ctanh(-xi, xr)
    return b, -a


@_formula
def _c_sigmoid(xr, xi, yr, yi):
    er, ei = _cexp(-xr, -xi)
    return _cdiv(tl.full(xr.shape, 1.0, xr.dtype), tl.zeros_like(xr), 1.0 + er, ei)


BINARY = ("add", "sub", "mul", "div", "pow", "eq", "ne", "gt", "ge", "lt", "le",
          "tanh_backward", "sigmoid_backward")
UNARY = ("neg", "conj", "abs", "angle", "sgn", "exp", "expm1", "log", "log1p", "sqrt", "sin",
         "cos", "tan", "tanh", "sigmoid")
_REAL_RESULT = {"abs", "angle"}   # complex -> its real type
_BOOL_RESULT = {"eq", "ne", "gt", "ge", "lt", "le"}
# the contract's names that mean something else for complex numbers
_ALIASES = {"sign": "sgn"}


# ------------------------------------------------------------------------------------------
# The kernel
# ------------------------------------------------------------------------------------------
# Operand modes (constexpr): absent, complex array, real array, Python scalar by value.
_NONE, _COMPLEX, _REAL, _SCALAR = 0, 1, 2, 3


@jit
def _operand(ptr, re_bits, im_bits, offs, mask, MODE: tl.constexpr, CT: tl.constexpr):
    """One operand's (re, im) as CT: a complex array's two lanes at 2 offs and 2 offs + 1
    (``ptr`` its real view; loaded as one [BLOCK, 2] tile, so each element's pair is one
    vector load), a real array's value and 0, or a scalar's float64 bit patterns."""
    if MODE == 1:
        pair = 2 * offs[:, None] + tl.arange(0, 2)[None, :]
        v = tl.load(ptr + pair, mask=mask[:, None], other=1)  # 1: no 0/0 in masked lanes
        re, im = tl.split(v.to(CT))
    elif MODE == 2:
        re = tl.load(ptr + offs, mask=mask, other=1).to(CT)
        im = tl.zeros_like(re)
    elif MODE == 3:
        z = tl.zeros_like(offs).to(CT)
        re = re_bits.to(tl.int64).to(tl.float64, bitcast=True).to(CT) + z
        im = im_bits.to(tl.int64).to(tl.float64, bitcast=True).to(CT) + z
    else:
        re = tl.zeros_like(offs).to(CT)
        im = re
    return re, im


@jit(do_not_specialize=["xr_bits", "xi_bits", "yr_bits", "yi_bits"])
def _complex_kernel(
    out_ptr,  # *float (the real view of a complex output) or *real/bool: n contiguous results
    x_ptr,    # *float/any: operand x (X_MODE 1: a complex array's real view; 2: a real array)
    y_ptr,    # *float/any: operand y, likewise, or None
    xr_bits: tl.int64, xi_bits: tl.int64,  # scalar x (X_MODE 3): float64 bit patterns
    yr_bits: tl.int64, yi_bits: tl.int64,  # scalar y (Y_MODE 3)
    shape,    # tuple of NDIM collapsed output sizes, innermost last
    x_st, y_st,  # tuples of NDIM element strides (complex elements for mode 1; 0: broadcast)
    n,        # number of output elements
    OP: tl.constexpr,  # the formula, an entry of _FORMULAS
    X_MODE: tl.constexpr, Y_MODE: tl.constexpr,
    CT: tl.constexpr,  # float32 or float64: the lanes' compute type
    OUT_COMPLEX: tl.constexpr,  # store both lanes (else the real part only)
    NDIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    p, mask = block_range(n, BLOCK, INT64)
    xo = tl.zeros_like(p)
    yo = tl.zeros_like(p)
    rem = p
    for d in tl.static_range(NDIM - 1, -1, -1):  # the output's flat index -> operand offsets
        if d == 0:
            idx = rem
        else:
            idx = rem % shape[d]
            rem = rem // shape[d]
        if X_MODE == 1 or X_MODE == 2:
            xo += idx * x_st[d]
        if Y_MODE == 1 or Y_MODE == 2:
            yo += idx * y_st[d]
    xr, xi = _operand(x_ptr, xr_bits, xi_bits, xo, mask, X_MODE, CT)
    yr, yi = _operand(y_ptr, yr_bits, yi_bits, yo, mask, Y_MODE, CT)
    re, im = OP(xr, xi, yr, yi)
    if OUT_COMPLEX:
        pair = 2 * p[:, None] + tl.arange(0, 2)[None, :]
        tl.store(out_ptr + pair, tl.join(re, im), mask=mask[:, None])
    else:
        tl.store(out_ptr + p, re, mask=mask)


_PLANS = L.plan_cache()


def _elements_per_program() -> int:
    # half the flat elementwise kernel's block: each element is two lanes and a few
    # transcendental calls (read at plan time, so the small_blocks fixture shrinks it too)
    return max(1, E.FLAT_BLOCK // 2)


def _plan(key):
    shape, ops = key[0], key[1:]
    nd = len(shape)
    n = 1
    for s in shape:
        n *= s
    sts = [L.contiguous_strides(shape)]
    for op in ops:
        sts.append((0,) * nd if op is None else L.broadcast_strides(op[0], op[1], shape))
    cshape, cst = L.collapse(shape, *sts)
    if not cshape:
        cshape, cst = (1,), tuple((0,) for _ in cst)
    doubled = [tuple(2 * s for s in st) for st in cst]
    int64 = L.needs_int64(cshape, *doubled) or 2 * n >= L._INT32_SAFE
    block = min(_elements_per_program(), L.next_pow2(max(n, 1)))
    plan = ((L.cdiv(n, block),), cshape, cst[1], cst[2], n, (len(cshape), block, int64),
            L.num_warps(block))
    _PLANS[key] = plan
    return plan


def _launch(op, out, x, y, xs, ys, modes, ct, out_complex):
    key = (out.shape, None if x is None else (x.shape, x.strides),
           None if y is None else (y.shape, y.strides))
    grid, cshape, xst, yst, n, lconsts, warps = _PLANS.get(key) or _plan(key)
    if n == 0:
        return out
    L.ensure_driver()
    xv = None if x is None else (x.view_as_real() if x.dtype.is_complex else x)
    yv = None if y is None else (y.view_as_real() if y.dtype.is_complex else y)
    ov = out.view_as_real() if out_complex else out
    _complex_kernel[grid](ov, xv, yv, _bits(xs.real), _bits(xs.imag), _bits(ys.real),
                          _bits(ys.imag), cshape, xst, yst, n, _FORMULAS[op], *modes, ct,
                          out_complex, *lconsts, num_warps=warps, **L.EXACT)
    return out


def _scalar_dtype(a: D.dtype) -> D.dtype:
    """The dtype of array dtype ``a`` with a complex Python scalar (NEP 50, as NumPy): complex
    keeps it, float32 and the half types give complex64, float64 and integers complex128."""
    if a.is_complex:
        return a
    return a.to_complex() if a.is_floating_point else D.complex128


def _result_dtype(op, a, b) -> D.dtype:
    arrays = [x.dtype for x in (a, b) if not _is_scalar(x)]
    scalars = [x for x in (a, b) if _is_scalar(x) and x is not None]
    if len(arrays) == 2:
        r = D.promote_types(*arrays)
    elif arrays:
        r = arrays[0]
        if any(isinstance(s, complex) for s in scalars):
            r = _scalar_dtype(r)
    else:
        r = D.complex128
    if not r.is_complex:
        raise L.unsupported(op, r)
    return r


def _mode(x):
    if x is None:
        return _NONE
    if _is_scalar(x):
        return _SCALAR
    return _COMPLEX if x.dtype.is_complex else _REAL


def _check(op, x):
    if not _is_scalar(x) and x.dtype not in L.TL and not x.dtype.is_complex:
        raise L.unsupported(op, x.dtype)


def _finish(op, r, out):
    """The complex result ``r`` written into ``out=`` (any strides and dtype) when given."""
    if out is None:
        return r
    if not isinstance(out, DeviceArray):
        raise TypeError(f"{op}: out must be a DeviceArray, got {type(out).__name__}")
    if r.shape != out.shape and L.broadcast_shape(op, r.shape, out.shape) != out.shape:
        raise ValueError(f"{op}: output of shape {out.shape} cannot hold the broadcast result "
                         f"of shape {r.shape}")
    if not out.dtype.is_complex and r.dtype.is_complex:
        raise L.unsupported(op, out.dtype, f"cannot hold a {r.dtype} result")
    copy(out, r)
    return out


def binary(op: str, a, b, out=None) -> DeviceArray:
    """``op`` of BINARY on ``a`` (an array) and ``b`` (an array or a Python scalar), at least
    one of them complex, broadcasting; eq/ne give bool."""
    if op not in BINARY:
        raise L.unsupported(op, _result_dtype(op, a, b), "not defined for complex numbers")
    r = _result_dtype(op, a, b)
    _check(op, a)
    _check(op, b)
    xs = ys = 0j
    if _is_scalar(b):
        ys = complex(b)
        shape = a.shape
        if op == "pow" and ys in (0.5, -0.5):  # (sqrt and 1 / sqrt, as PyTorch's kernel)
            r = unary("sqrt", a)
            return _finish("pow", r if ys == 0.5 else binary("pow", r, -1), out)
        if op == "pow" and ys.imag == 0 and ys.real == int(ys.real) and abs(ys.real) <= 100:
            op = "ipow"
        b = None
    else:
        shape = a.shape if a.shape == b.shape else bshape(op, a.shape, b.shape)
    ct = L.TL[r.to_real()]
    out_dtype = D.bool if op in _BOOL_RESULT else r
    res = _new(shape, out_dtype, a.device)
    modes = (_mode(a), _SCALAR if b is None else _mode(b))
    _launch(op, res, a, b, xs, ys, modes, ct, out_dtype.is_complex)
    return _finish(op, res, out)


def unary(op: str, a: DeviceArray, out=None) -> DeviceArray:
    """``op`` of UNARY (or the contract's ``sign``: z / |z|) on complex ``a``; abs and angle
    give the real type."""
    op = _ALIASES.get(op, op)
    if op not in UNARY:
        raise L.unsupported(op, a.dtype, "not defined for complex numbers")
    if not a.dtype.is_complex:
        raise L.unsupported(op, a.dtype)
    rt = a.dtype.to_real()
    out_dtype = rt if op in _REAL_RESULT else a.dtype
    res = _new(a.shape, out_dtype, a.device)
    _launch(op, res, a, None, 0j, 0j, (_COMPLEX, _NONE), L.TL[rt], out_dtype.is_complex)
    return _finish(op, res, out)


# ------------------------------------------------------------------------------------------
# Reductions and products on the lanes
# ------------------------------------------------------------------------------------------
def sum(a: DeviceArray, dims, keepdim) -> DeviceArray:
    """The real ``sum`` of the real view over ``dims``: each lane sums on its own."""
    from .reduction import sum as real_sum

    return view_as_complex(real_sum(a.view_as_real(), tuple(dims), keepdim))


def bmm(a: DeviceArray, b: DeviceArray, real_bmm) -> DeviceArray:
    """(B, M, K) @ (B, K, N) with a complex operand: four real products of the lanes by
    ``real_bmm`` (matmul.py's), ``re = ar br - ai bi``, ``im = ar bi + ai br``."""
    from .elementwise_ops import add, sub

    r = D.promote_types(a.dtype, b.dtype)
    if not r.is_complex:
        raise L.unsupported("bmm", r)
    parts = []
    for x in (a, b):
        if x.dtype is not r:
            c = _new(x.shape, r, x.device)
            copy(c, x)
            x = c
        parts.append((lane(x, 0), lane(x, 1)))
    (ar, ai), (br, bi) = parts
    B, M, _ = a.shape
    N = b.shape[2]
    out = _new((B, M, N), r, a.device)
    sub(real_bmm(ar, br), real_bmm(ai, bi), out=lane(out, 0))
    add(real_bmm(ar, bi), real_bmm(ai, br), out=lane(out, 1))
    return out


def prod(a: DeviceArray, dims, keepdim) -> DeviceArray:
    """The product over ``dims`` as a pairwise tree of complex multiplications: the reduced
    dims are moved last and flattened, then halves multiply until one column is left (one
    launch per halving)."""
    from .memory import contiguous

    dims = tuple(dims)
    keep = [d for d in range(a.ndim) if d not in dims]
    kshape = tuple(a.shape[d] for d in keep)
    m = 1
    for n in kshape:
        m *= n
    x = contiguous(a.permute(keep + list(dims)))
    n = x.numel // m if m else 0
    if m == 0 or n == 0:
        from .memory import full
        r = full((m,), 1, a.dtype, a.device)
    else:
        x = x.as_strided((m, n), (n, 1), x.offset)
        while n > 1:
            h = n // 2
            y = binary("mul", x.getitem((slice(None), slice(0, h))),
                       x.getitem((slice(None), slice(h, 2 * h))))
            if n % 2:  # the odd column joins the first one
                first = y.getitem((slice(None), slice(0, 1)))
                binary("mul", first, x.getitem((slice(None), slice(n - 1, n))), out=first)
            x, n = y, h
        r = x
    shape = tuple(1 if d in dims else a.shape[d] for d in range(a.ndim)) if keepdim else kshape
    return r.as_strided(shape, L.contiguous_strides(shape), r.offset)


def any_nonzero(op: str, a: DeviceArray, dims, keepdim, reduce) -> DeviceArray:
    """all/any of a complex array: of ``a != 0`` by the real ``reduce``."""
    return reduce(op, binary("ne", a, 0), dims, keepdim)


# ------------------------------------------------------------------------------------------
# Indexing, cumsum, nonzero: the real kernels on the real views, indices broadcast along the
# lanes with a zero stride (the lane dim stays last in every result)
# ------------------------------------------------------------------------------------------
def _as(a: DeviceArray, x) -> DeviceArray:
    """``x`` (an array or a Python scalar) as an array of complex ``a``'s dtype."""
    if not _is_scalar(x) and x.dtype is a.dtype:
        return x
    out = _new(() if _is_scalar(x) else x.shape, a.dtype, a.device)
    copy(out, x)
    return out


def _lanes_of(ix: DeviceArray) -> DeviceArray:
    """An index array of a's shape, repeated along the lane dim (stride 0)."""
    return DeviceArray(ix.storage, ix.offset, tuple(ix.shape) + (2,), tuple(ix.strides) + (0,),
                       ix.dtype)


def index(a: DeviceArray, indices, real_index) -> DeviceArray:
    return view_as_complex(real_index(a.view_as_real(), indices))


def index_put_(a, indices, values, accumulate, real_index_put_) -> None:
    real_index_put_(a.view_as_real(), indices, _as(a, values).view_as_real(), accumulate)


def gather(a, dim, index, real_gather) -> DeviceArray:
    a1, idx = one_d(a), one_d(index)
    out = view_as_complex(real_gather(a1.view_as_real(), dim % a1.ndim, _lanes_of(idx)))
    return as_shape_of(out, index)


def scatter_(a, dim, index, src, accumulate, real_scatter_) -> None:
    a, index, src = one_d(a), one_d(index), one_d(src)  # (a's 1-d view writes a)
    if _is_scalar(src):  # a value per lane: the scalar as an array of index's shape
        value, src = src, _new(index.shape, a.dtype, a.device)
        copy(src, value)
    real_scatter_(a.view_as_real(), dim % a.ndim, _lanes_of(index), _as(a, src).view_as_real(),
                  accumulate)


def cumsum(a, dim, reverse, real_cumsum) -> DeviceArray:
    if a.ndim == 0:
        return copy(_new((), a.dtype, a.device), a)
    return view_as_complex(real_cumsum(a.view_as_real(), dim % a.ndim, reverse))


assert set(_FORMULAS) == set(BINARY) | set(UNARY) | {"ipow"}, sorted(_FORMULAS)
