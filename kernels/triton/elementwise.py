"""Elementwise kernels: a flat and a strided kernel under every map-like op, casts included.

One kernel family serves add ... where, unary(), binary(), copy_, astype, contiguous, full and
arange (tinygrad's "few kernels, many ops"). Every op is a formula in the table ``OPS`` (its
name -> a small ``@jit`` function of the operands x, y, z), passed to the kernels as a
``tl.constexpr``, so each (op, dtypes, layout) compiles to its own specialised binary while the
kernels' source stays one loop body. Each of the three operand slots (x, y, z) is absent, a
pointer (any strides; zero strides broadcast), a Python scalar passed by value (a float64 bit
pattern or an int64, so no precision is lost and no device memory is touched for it), or the
element's flat index (arange's z). The launchers of the contract's ops (dtype rules, out=,
scalars) are in elementwise_ops.py; this file has the kernels, the formulas, the layout plans,
and the copy/arange launchers that memory.py uses.

Formulas: x, y, z after broadcasting, x and y converted to the compute type CT, z (where's
condition) to bool; the result is rounded to the result type RT, then converted to the output's
element type by the store; ld. is libdevice, which the interpreter maps to NumPy (compat.py).
An op's names are the variants the launchers pick per dtype (elementwise_ops._op_variant):
div_rn and sqrt_rn (IEEE, not div.full) for float32 and the half types, div and sqrt for
float64; fmaximum, fminimum propagate NaN (np.maximum); the i- and f- divisions are the integer
and floating ones:

    integers: ipow x ** y by squaring (wrapping, as PyTorch's), y < 0: 1, +-1 for x = 1, -1,
              else 0 (the truncated reciprocal)
              itrunc_divide x // y (Triton's // and % are C's: toward 0, sign of x)
              ifloor_divide q - (r != 0 and sign(r) != sign(y)), q = x // y, r = x % y
              iremainder r + (r != 0 and sign(r) != sign(y) ? y : 0)
    floats:   ftrunc_divide ld.trunc(x / y)
              ffloor_divide, fremainder: NumPy's npy_divmod (m = fmod(x, y); d = (x - m) / y;
              if m and sign(m) != sign(y): m += y, d -= 1; q = floor(d), +1 if d - q > 1/2;
              y == 0 gives x / y and fmod's NaN)
    gelu64, gelu64_grad: GELU for float64, with Phi(x) = erfc(-x / sqrt 2) / 2 by a continued
              fraction where 1 + erf(x / sqrt 2) cancels (x / sqrt 2 < -1.5)

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

import math
import struct

import triton.language as tl
from triton.language.extra import libdevice

from ...runtime import dtype as D
from ...runtime.array import DeviceArray
from . import _launch as L
from ._launch import (
    GELU_TANH_A,
    HALF_INV_SQRT_PI,
    INV_SQRT_2PI,
    SQRT1_2,
    SQRT_2_OVER_PI,
    block_range,
)
from .compat import kernel_constant, result_type
from .launcher import Launch, jit

__all__ = [
    "FBITS",
    "INDEX",
    "INT",
    "NONE",
    "OPS",
    "PTR",
    "constexprs",
    "launch_arange",
    "launch_copy",
    "launch_of",
    "run",
    "scalar",
    "scalar_arg",
    "span",
]

# Operand modes (constexpr): absent, pointer, float64 bit pattern, int64 value, and the flat
# index of the element (arange's z: the flat kernel only, whose offsets are flat indices).
NONE, PTR, FBITS, INT, INDEX = 0, 1, 2, 3, 4

# Block heuristics of this family (module globals so tests can shrink them to force
# multi-program grids; call _launch.clear_plans() after changing them). The strided kernel's
# tile is _launch.TILE elements, at most _launch.MAX_BLOCK_N wide.
FLAT_BLOCK = 1024          # elements per program, flat kernel, below FLAT_LARGE_AT elements
FLAT_BLOCK_LARGE = 4096    # ... and from FLAT_LARGE_AT elements on (8 warps)
FLAT_LARGE_AT = 1 << 20
TRANSPOSE_TILE = 32        # square tiles when an operand's inner stride is not 1


# ------------------------------------------------------------------------------------------
# Formulas: OPS, the op table, and the helpers of its longer entries
# ------------------------------------------------------------------------------------------
OPS: dict = {}  # op name -> its formula, a @jit function of (x, y, z)
# The contract's ``unary(op, a)`` table: op -> its dtype rule, one of
#   float  floating point only (the op layer promotes integers first)
#   round  integers are whole: a copy (the ``copy`` formula); not bool
#   nobool every dtype but bool      any   every dtype      int   integers and bool only
UNARY: dict = {}


def _formula(fn=None, *, unary=None):
    """``@jit``, entering the function in OPS under its name less the ``_op_`` prefix;
    ``@_formula(unary=rule)`` also enters it in the contract's UNARY table with its dtype
    rule."""
    def enter(fn):
        name = fn.__name__.removeprefix("_op_")
        assert name != fn.__name__ and name not in OPS, fn.__name__
        OPS[name] = jitted = jit(fn)
        if unary is not None:
            assert unary in ("float", "round", "nobool", "any", "int"), unary
            UNARY[name] = unary
        return jitted
    return enter if fn is None else enter(fn)


@jit
def _sign_differs(r, y):
    return (r != 0) & ((r < 0) != (y < 0))


@jit
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


@jit
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


@jit
def _exp_half_square(x):
    # exp(-x^2 / 2) for finite x without the rounding of x^2: hi = x rounded to float32 has an
    # exact square, and exp(-x^2 / 2) = exp(-hi^2 / 2) exp(-(x - hi) (x + hi) / 2)
    hi = x.to(tl.float32).to(tl.float64)
    return libdevice.exp(-0.5 * hi * hi) * libdevice.exp(-0.5 * (x - hi) * (x + hi))


@jit
def _ndtr64(x):
    # Phi(x) for float64 x, as kernels/numpy/nn.py's _ndtr64 (same tail bound and 80 terms):
    # 0.5 (1 + erf) keeps no digit below x = -8.3, so there erfc by its continued fraction
    z = x * SQRT1_2
    head = 0.5 * (1.0 + tl.erf(z))
    xt = tl.minimum(tl.maximum(x, -40.0), -1.0)  # the tail's lanes; Phi(-40) underflows to 0
    zt = xt * -SQRT1_2
    f = zt
    for i in tl.static_range(80):
        f = zt + (0.5 * (80 - i)) / f
    tail = _exp_half_square(xt) * HALF_INV_SQRT_PI / f
    return tl.where(z < -1.5, tail, head)  # NaN takes head: NaN


@jit
def _gelu_tanh_inner(x):
    # the argument of tanh in GELU's tanh form
    return SQRT_2_OVER_PI * (x + GELU_TANH_A * x * x * x)


# -- copies, arange and arithmetic -----------------------------------------------------------
@_formula
def _op_copy(x, y, z):
    return x  # the cast happens at the store


@_formula
def _op_arange(x, y, z):
    return x + y * z.to(x.dtype)  # z: the flat index


@_formula
def _op_add(x, y, z):
    return x + y


@_formula
def _op_sub(x, y, z):
    return x - y


@_formula
def _op_mul(x, y, z):
    return x * y


@_formula
def _op_div_rn(x, y, z):
    return tl.math.div_rn(x, y)


@_formula
def _op_div(x, y, z):
    return x / y


@_formula
def _op_pow(x, y, z):
    return libdevice.pow(x, y)


@_formula
def _op_ipow(x, y, z):
    return _int_pow(x, y)


@_formula
def _op_fmaximum(x, y, z):
    return tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)


@_formula
def _op_fminimum(x, y, z):
    return tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)


@_formula
def _op_maximum(x, y, z):
    return tl.maximum(x, y)


@_formula
def _op_minimum(x, y, z):
    return tl.minimum(x, y)


@_formula
def _op_neg(x, y, z):
    return -x


@_formula(unary="any")
def _op_abs(x, y, z):
    return tl.abs(x)


@_formula(unary="nobool")
def _op_sign(x, y, z):
    return (x > 0).to(x.dtype) - (x < 0).to(x.dtype)  # 0 for NaN


@_formula
def _op_relu(x, y, z):
    return tl.where(x < 0, 0, x)  # NaN stays NaN


@_formula
def _op_where(x, y, z):
    return tl.where(z, x, y)


# -- comparisons (bool results) --------------------------------------------------------------
@_formula
def _op_gt(x, y, z):
    return x > y


@_formula
def _op_ge(x, y, z):
    return x >= y


@_formula
def _op_lt(x, y, z):
    return x < y


@_formula
def _op_le(x, y, z):
    return x <= y


@_formula
def _op_eq(x, y, z):
    return x == y


@_formula
def _op_ne(x, y, z):
    return x != y


# -- floating-point math ---------------------------------------------------------------------
@_formula
def _op_exp(x, y, z):
    return libdevice.exp(x)


@_formula
def _op_log(x, y, z):
    return libdevice.log(x)


@_formula
def _op_sqrt_rn(x, y, z):
    return tl.sqrt_rn(x)


@_formula
def _op_sqrt(x, y, z):
    return tl.sqrt(x)


@_formula(unary="float")
def _op_sin(x, y, z):
    return libdevice.sin(x)


@_formula(unary="float")
def _op_cos(x, y, z):
    return libdevice.cos(x)


@_formula(unary="float")
def _op_tan(x, y, z):
    return libdevice.tan(x)


@_formula(unary="float")
def _op_tanh(x, y, z):
    return libdevice.tanh(x)


@_formula(unary="float")
def _op_sigmoid(x, y, z):
    return 1.0 / (1.0 + libdevice.exp(-x))


@_formula(unary="float")
def _op_log1p(x, y, z):
    return libdevice.log1p(x)


@_formula(unary="float")
def _op_expm1(x, y, z):
    return libdevice.expm1(x)


@_formula(unary="float")
def _op_asin(x, y, z):
    return libdevice.asin(x)


@_formula(unary="float")
def _op_acos(x, y, z):
    return libdevice.acos(x)


@_formula(unary="float")
def _op_atan(x, y, z):
    return libdevice.atan(x)


@_formula(unary="float")
def _op_sinh(x, y, z):
    return libdevice.sinh(x)


@_formula(unary="float")
def _op_cosh(x, y, z):
    return libdevice.cosh(x)


@_formula(unary="float")
def _op_asinh(x, y, z):
    return libdevice.asinh(x)


@_formula(unary="float")
def _op_acosh(x, y, z):
    return libdevice.acosh(x)


@_formula(unary="float")
def _op_atanh(x, y, z):
    return libdevice.atanh(x)


@_formula(unary="float")
def _op_log2(x, y, z):
    return libdevice.log2(x)


@_formula(unary="float")
def _op_log10(x, y, z):
    return libdevice.log10(x)


@_formula(unary="float")
def _op_exp2(x, y, z):
    return libdevice.exp2(x)


@_formula(unary="round")
def _op_floor(x, y, z):
    return tl.floor(x)


@_formula(unary="round")
def _op_ceil(x, y, z):
    return tl.ceil(x)


@_formula(unary="round")
def _op_round(x, y, z):
    return libdevice.rint(x)  # half to even


@_formula(unary="round")
def _op_trunc(x, y, z):
    return libdevice.trunc(x)


# -- bitwise (integers; bool's not is logical_not) -------------------------------------------
@_formula(unary="int")
def _op_bitwise_not(x, y, z):
    return ~x


@_formula
def _op_logical_not(x, y, z):
    return x == 0


@_formula
def _op_bitwise_and(x, y, z):
    return x & y


@_formula
def _op_bitwise_or(x, y, z):
    return x | y


@_formula
def _op_bitwise_xor(x, y, z):
    return x ^ y


# -- divisions (see the module docstring) ----------------------------------------------------
@_formula
def _op_itrunc_divide(x, y, z):
    return x // y


@_formula
def _op_ifloor_divide(x, y, z):
    return x // y - _sign_differs(x % y, y).to(x.dtype)


@_formula
def _op_iremainder(x, y, z):
    rem = x % y
    return tl.where(_sign_differs(rem, y), rem + y, rem)


@_formula
def _op_ifmod(x, y, z):
    return x % y  # integer % truncates toward zero here: the sign of the dividend, C's fmod


@_formula
def _op_ffmod(x, y, z):
    return libdevice.fmod(x, y)


@_formula
def _op_ftrunc_divide_rn(x, y, z):
    return libdevice.trunc(tl.math.div_rn(x, y))


@_formula
def _op_ftrunc_divide(x, y, z):
    return libdevice.trunc(x / y)


@_formula
def _op_ffloor_divide(x, y, z):
    return _float_divmod(x, y, True)


@_formula
def _op_fremainder(x, y, z):
    return _float_divmod(x, y, False)


@_formula(unary="float")
def _op_signbit(x, y, z):
    # 1 where the sign bit is set (-0.0 and negative NaN too), read from the bits: a compare
    # would miss both. (Half types arrive as float32, which keeps the sign.)
    if x.dtype.primitive_bitwidth == 64:
        bits = x.to(tl.int64, bitcast=True)
    else:
        bits = x.to(tl.int32, bitcast=True)
    return tl.where(bits < 0, 1.0, 0.0)


# -- math of two operands (floats) -------------------------------------------------------
@_formula
def _op_atan2(x, y, z):
    return libdevice.atan2(x, y)  # the angle of the point (y, x): atan2(0, 0) = 0, signed


# The regularized incomplete gamma functions P(a, x) (igamma) and Q = 1 - P (igammac), as
# kernels/numpy/elementwise.py computes them (the series where x < a + 1, else Q's continued
# fraction, in float64, at most GAMMA_ITERS steps; PyTorch's edge cases), and igamma_dx, dP/dx.
# Each loop runs until every lane of the block that uses it has converged (a lane's unused
# result may be inf or NaN: it is not selected). ln Gamma: Stirling's series at a + 10 or
# above (error below 1e-16 there), shifted down by the recurrence (libdevice's lgamma has no
# twin in NumPy for the interpreter).
GAMMA_ITERS = kernel_constant(2000)
GAMMA_EPS = kernel_constant(1e-16)
_HALF_LN_2PI = kernel_constant(0.5 * math.log(2 * math.pi))


@jit
def _lgamma64(a):
    # ln Gamma(a) for a > 0: ln Gamma(a) = ln Gamma(a + 10) - ln(a (a + 1) ... (a + 9)) below 10
    shift = a < 10.0
    z = tl.where(shift, a + 10.0, a)
    prod = a * (a + 1.0) * (a + 2.0) * (a + 3.0) * (a + 4.0)
    prod = prod * (a + 5.0) * (a + 6.0) * (a + 7.0) * (a + 8.0) * (a + 9.0)
    w = 1.0 / (z * z)
    series = (1.0 / 12.0 - w * (1.0 / 360.0 - w * (1.0 / 1260.0 - w * (
        1.0 / 1680.0 - w * (1.0 / 1188.0 - w * (691.0 / 360360.0 - w / 156.0)))))) / z
    r = (z - 0.5) * libdevice.log(z) - z + _HALF_LN_2PI + series
    return tl.where(shift, r - libdevice.log(tl.where(shift, prod, 1.0)), r)


@jit
def _igamma64(a, x, UPPER: tl.constexpr):
    regular = (a > 0.0) & (x > 0.0) & (a < float("inf")) & (x < float("inf"))
    by_series = regular & (x < a + 1.0)
    by_fraction = regular & (x >= a + 1.0)
    # the series: sum x^n / (a (a + 1) ... (a + n))
    term = 1.0 / a
    total = term
    ap = a
    n = 0
    going = tl.max(by_series.to(tl.int32), axis=None) > 0
    while going:
        ap = ap + 1.0
        term = term * (x / ap)
        total = total + term
        n += 1
        busy = by_series & (tl.abs(term) >= tl.abs(total) * GAMMA_EPS)
        going = (tl.max(busy.to(tl.int32), axis=None) > 0) & (n < GAMMA_ITERS)
    # Q's continued fraction, by the modified Lentz method
    tiny = 1e-290
    b = x + 1.0 - a
    c = b * 0.0 + 1.0 / tiny
    d = 1.0 / b
    h = d
    i = 1
    going = tl.max(by_fraction.to(tl.int32), axis=None) > 0
    while going:
        an = (a - i) * i
        b = b + 2.0
        d = an * d + b
        d = tl.where(tl.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = tl.where(tl.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        step = d * c
        h = h * step
        i += 1
        busy = by_fraction & (tl.abs(step - 1.0) >= GAMMA_EPS)
        going = (tl.max(busy.to(tl.int32), axis=None) > 0) & (i < GAMMA_ITERS)
    pre = libdevice.exp(a * libdevice.log(x) - x - _lgamma64(a))  # x^a e^-x / Gamma(a)
    p = total * pre
    q = h * pre
    if UPPER:
        r = tl.where(by_series, 1.0 - p, q)
        lo = 1.0
        hi = 0.0
    else:
        r = tl.where(by_series, p, 1.0 - q)
        lo = 0.0
        hi = 1.0
    nan = a * 0.0 + float("nan")
    r = tl.where((a < 0.0) | (x < 0.0), nan, r)  # (NaN operands: NaN through r)
    r = tl.where((x == 0.0) & (a > 0.0), lo, r)
    r = tl.where(a == 0.0, tl.where(x > 0.0, hi, nan), r)
    inf = float("inf")
    r = tl.where((x == inf) & (a > 0.0), tl.where(a == inf, nan, hi), r)
    r = tl.where((a == inf) & (x >= 0.0) & (x < inf), lo, r)
    return r


# (computed in float64, returned in the compute type: the launcher rounds that to the result)
@_formula
def _op_igamma(x, y, z):
    return _igamma64(x.to(tl.float64), y.to(tl.float64), False).to(x.dtype)


@_formula
def _op_igammac(x, y, z):
    return _igamma64(x.to(tl.float64), y.to(tl.float64), True).to(x.dtype)


@_formula
def _op_igamma_dx(x, y, z):
    a = x.to(tl.float64)
    v = y.to(tl.float64)
    return libdevice.exp((a - 1.0) * libdevice.log(v) - v - _lgamma64(a)).to(x.dtype)


# -- GELU, and fused derivative rules (x: the incoming gradient) -------------------------
@_formula
def _op_gelu(x, y, z):
    return 0.5 * x * (1.0 + tl.erf(x * SQRT1_2))  # x Phi(x)


@_formula
def _op_gelu64(x, y, z):
    return x * _ndtr64(x)


@_formula
def _op_gelu_tanh(x, y, z):
    return 0.5 * x * (1.0 + libdevice.tanh(_gelu_tanh_inner(x)))


@_formula
def _op_gelu_grad(x, y, z):
    # g (Phi(y) + y phi(y)), y: the forward input
    d = 0.5 * (1.0 + tl.erf(y * SQRT1_2)) + y * libdevice.exp(-0.5 * y * y) * INV_SQRT_2PI
    return x * d


@_formula
def _op_gelu64_grad(x, y, z):
    # phi from y clipped to +-40 (it is 0 beyond): y phi is inf * 0 = NaN at +-inf
    phi = _exp_half_square(tl.minimum(tl.maximum(y, -40.0), 40.0)) * INV_SQRT_2PI
    return x * (_ndtr64(y) + y * phi)


@_formula
def _op_gelu_tanh_grad(x, y, z):
    # g (0.5 (1 + t) + 0.5 y (1 - t^2) sqrt(2/pi) (1 + 3 A y^2)), t = tanh(_gelu_tanh_inner(y))
    t = libdevice.tanh(_gelu_tanh_inner(y))
    return x * (0.5 * (1.0 + t)
                + 0.5 * y * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_TANH_A * y * y))


@_formula
def _op_tanh_backward(x, y, z):
    return x * (1.0 - y * y)  # y: tanh's output


@_formula
def _op_sigmoid_backward(x, y, z):
    return x * (y * (1.0 - y))  # y: sigmoid's output


@_formula
def _op_relu_backward(x, y, z):
    return tl.where(y <= 0.0, 0.0, x)  # y: relu's output; a NaN output passes the gradient


# ------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------
@jit
def _operand(ptr, scalar, offs, mask, MODE: tl.constexpr, CT: tl.constexpr):
    """One operand: loaded through ``ptr + offs`` (PTR) or made from ``scalar``, as CT; the
    offsets themselves (INDEX)."""
    if MODE == 1:
        v = tl.load(ptr + offs, mask=mask, other=1).to(CT)  # other=1: no 0/0 in masked lanes
    elif MODE == 2:
        v = scalar.to(tl.int64).to(tl.float64, bitcast=True).to(CT)
    elif MODE == 3:
        v = scalar.to(tl.int64).to(CT)
    elif MODE == 4:
        v = offs
    else:  # absent: a zero the op ignores (compiled away)
        v = tl.zeros_like(offs).to(CT)
    return v


# Both kernels take the operands and the op's constexprs first, the layout's arguments last
# (the plan's: Note [plan launches] in launcher.py).
@jit(do_not_specialize=["x_scalar", "y_scalar"])
def _ew_flat_kernel(
    out_ptr,  # *any: n contiguous elements, written
    x_ptr,    # *any: n contiguous elements (X_MODE == 1), else None
    y_ptr,    # *any: n contiguous elements (Y_MODE == 1), else None
    z_ptr,    # *any: n contiguous elements (Z_MODE == 1, the condition of where), else None
    x_scalar: tl.int64, y_scalar: tl.int64,  # by-value operands (FBITS/INT modes), else 0
    OP: tl.constexpr,  # the formula, an entry of OPS
    X_MODE: tl.constexpr, Y_MODE: tl.constexpr, Z_MODE: tl.constexpr,
    CT: tl.constexpr, RT: tl.constexpr,
    n,  # number of elements
    BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    offs, mask = block_range(n, BLOCK, INT64)
    x = _operand(x_ptr, x_scalar, offs, mask, X_MODE, CT)
    y = _operand(y_ptr, y_scalar, offs, mask, Y_MODE, CT)
    z = _operand(z_ptr, 0, offs, mask, Z_MODE, tl.int1)
    r = OP(x, y, z).to(RT)
    tl.store(out_ptr + offs, r, mask=mask)


@jit(do_not_specialize=["x_scalar", "y_scalar"])
def _ew_strided_kernel(
    out_ptr,  # *any: the output view, element (i0..iN) at sum(i_d * o_st[d])
    x_ptr,    # *any: operand x viewed with x_st (X_MODE == 1), else None
    y_ptr,    # *any: operand y viewed with y_st (Y_MODE == 1), else None
    z_ptr,    # *any: where's condition viewed with z_st (Z_MODE == 1), else None
    x_scalar: tl.int64, y_scalar: tl.int64,  # by-value operands (FBITS/INT modes), else 0
    OP: tl.constexpr,  # the formula, an entry of OPS
    X_MODE: tl.constexpr, Y_MODE: tl.constexpr, Z_MODE: tl.constexpr,
    CT: tl.constexpr, RT: tl.constexpr,
    shape,    # tuple of NDIM collapsed sizes, innermost last
    o_st, x_st, y_st, z_st,  # tuples of NDIM element strides (0 where broadcast or absent)
    n_rows,   # prod(shape[:-1]): the rows of the [rows, inner] tiling
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
    tl.static_assert(Z_MODE != 4, "INDEX operands are flat indices: the flat kernel's only")
    r = OP(x, y, z).to(RT)
    tl.store(out_ptr + (o_row[:, None] + cols[None, :] * o_st[last]), r, mask=mask)


# ------------------------------------------------------------------------------------------
# Plans: layout decisions per (output, operands) shapes and strides
# ------------------------------------------------------------------------------------------
# Note [interned constants]: an op's constexprs (OP, X_MODE, Y_MODE, Z_MODE, CT, RT) come
# from the spec caches as one tuple, interned by ``constexprs()`` (the dict below keeps every
# interned tuple alive for the process, so its ``id`` is never another tuple's). A layout's
# plan binds them into the tail of a ``Launch`` per interned tuple, found by ``id``: a
# launch's key then holds the operands only, not two ``tl.dtype``s that hash in Python
# (about 0.3 us a launch). A tuple that is not interned is interned on the way (a dict lookup
# by value), so any caller is correct; the hot callers pass interned ones.
_CONSTS: dict = {}
_PLANS = L.plan_cache()  # layout key -> its _Plan, or _no_launch for an empty output
_Z0: dict = {}  # zero strides per ndim, for absent and scalar operands


class _Plan(dict):
    """A layout's Launches by ``id`` of their interned constants; ``layout`` is (kernel, grid,
    layout arguments, options), what each of them binds."""

    __slots__ = ("layout",)


def constexprs(op, x_mode: int, y_mode: int, z_mode: int, ct, rt) -> tuple:
    """The interned constexprs (OP, X_MODE, Y_MODE, Z_MODE, CT, RT) of a launch (Note
    [interned constants]); OP is a formula of OPS, CT and RT Triton dtypes."""
    c = (op, x_mode, y_mode, z_mode, ct, rt)
    return _CONSTS.setdefault(c, c)


def _no_launch(*head):
    """The plan of an empty output: nothing to launch."""


def _zeros(nd: int) -> tuple:
    z = _Z0.get(nd)
    if z is None:
        z = _Z0[nd] = (0,) * nd
    return z


def _layout(key):
    """(kernel, grid, layout arguments, options) of the flat or strided kernel for ``key``:
    (out shape, out strides, then shape, strides per operand x, y, z, both None for an absent
    one); None for an empty output."""
    shape, ost = key[0], key[1]
    nd = len(shape)
    sts = [ost]
    operands = [key[i:i + 2] for i in (2, 4, 6)]
    for s, st in operands:
        sts.append(_zeros(nd) if s is None else L.broadcast_strides(s, st, shape))
    cshape, cst = L.collapse(shape, *sts)
    present = [cst[0]] + [st for st, (s, _) in zip(cst[1:], operands) if s is not None]
    n = 1
    for s in shape:
        n *= s
    int64 = L.needs_int64(shape, *sts)
    if n == 0:
        return None
    if len(cshape) == 0 or (len(cshape) == 1 and all(s[0] == 1 for s in present)):
        block = FLAT_BLOCK_LARGE if n >= FLAT_LARGE_AT else FLAT_BLOCK
        return (_ew_flat_kernel, (L.cdiv(n, block),), (n, block, int64),
                {"num_warps": L.num_warps(block), **L.EXACT})
    inner = cshape[-1]
    rows = n // inner
    co, cx, cy, cz = cst
    if any(s[-1] not in (0, 1) for s in present):  # transpose-like: square tiles
        bc = min(L.next_pow2(inner), TRANSPOSE_TILE)
        br = min(L.next_pow2(rows), TRANSPOSE_TILE)
    else:
        bc = min(L.next_pow2(inner), L.MAX_BLOCK_N, L.TILE)
        br = min(L.next_pow2(rows), max(1, L.TILE // bc))
    grid = (L.cdiv(rows, br) * L.cdiv(inner, bc),)
    return (_ew_strided_kernel, grid, (cshape, co, cx, cy, cz, rows, len(cshape), br, bc, int64),
            {"num_warps": L.num_warps(br * bc), **L.EXACT})


def _plan(key):
    """The plan of layout ``key`` (see ``_layout``), no constants bound yet, or ``_no_launch``
    for an empty output."""
    layout = _layout(key)
    if layout is None:
        plan = _no_launch
    else:
        plan = _Plan()
        plan.layout = layout
    _PLANS[key] = plan
    return plan


def _bind(plan: _Plan, c: tuple):
    """The ``Launch`` of ``plan``'s layout with the constants ``c`` bound (Note [interned
    constants])."""
    c = _CONSTS.setdefault(c, c)
    launch = plan.get(id(c))
    if launch is None:
        kernel, grid, tail, options = plan.layout
        launch = plan[id(c)] = Launch(kernel, grid, c + tail, **options)
    return launch


def launch_of(out, x, y, z, consts):
    """What ``run(out, x, y, z, xs, ys, consts)`` calls for these operands' layouts:
    ``launch(out, x, y, z, xs, ys)``, a plan's ``Launch`` (``_no_launch`` for an empty
    output), for callers that keep it per op (Note [op plans] in elementwise_ops.py). Call it
    after ``run`` has run once (which installs the driver)."""
    key = (out.shape, out.strides,
           None if x is None else x.shape, None if x is None else x.strides,
           None if y is None else y.shape, None if y is None else y.strides,
           None if z is None else z.shape, None if z is None else z.strides)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(key)
    return plan if plan is _no_launch else plan.get(id(consts)) or _bind(plan, consts)


def run(out, x, y, z, xs, ys, consts):
    """Launches ``consts`` = (OP, X_MODE, Y_MODE, Z_MODE, CT, RT) writing ``out`` (OP: a formula
    of OPS; interned by ``constexprs()`` on the hot paths); x, y, z are DeviceArrays broadcast to
    out's shape or None, xs/ys the by-value scalars."""
    # (launch_of's key and lookups, inline: this is every elementwise launch's path)
    key = (out.shape, out.strides,  # (flat: a tuple per operand cost its making and hashing)
           None if x is None else x.shape, None if x is None else x.strides,
           None if y is None else y.shape, None if y is None else y.strides,
           None if z is None else z.shape, None if z is None else z.strides)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(key)
    if plan is not _no_launch:
        L.ensure_driver()
        (plan.get(id(consts)) or _bind(plan, consts))(out, x, y, z, xs, ys)
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
    spec = constexprs(OPS["copy"], mode, NONE, NONE, ct, rt)
    _SPECS[key] = spec
    return spec


def _bytes(a: DeviceArray) -> DeviceArray:
    """One-byte array ``a`` (float8) seen as uint8: the same memory, copied bit for bit."""
    return DeviceArray(a.storage, a.offset, a.shape, a.strides, D.uint8)


def _float8_copy(dst: DeviceArray, src: DeviceArray) -> None:
    """launch_copy with float8 on a side: PyTorch's conversion (kernels/triton/float8.py),
    then a copy of the bytes (float8 to itself) or a plain copy."""
    if src.dtype is not dst.dtype:
        from .float8 import astype  # (float8 -> scaled_mm -> launcher: imported on first use)
        src = astype(src, dst.dtype)
    if dst.dtype in D.FLOAT8_TYPES:
        return launch_copy(_bytes(dst), _bytes(src))
    return launch_copy(dst, src)


def launch_copy(dst, src):
    """Writes ``src`` (array, broadcast to dst's shape, or Python scalar) into ``dst``, cast to
    dst's dtype. No aliasing checks: memory.copy_ does them."""
    if type(src) is DeviceArray:
        key = ("copy", src.dtype, dst.dtype)
        consts = _SPECS.get(key)
        if consts is None:
            if src.dtype in D.FLOAT8_TYPES or dst.dtype in D.FLOAT8_TYPES:  # (never in _SPECS)
                return _float8_copy(dst, src)
            consts = _copy_spec(key)
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
    consts = constexprs(OPS["arange"], ms, mp, INDEX, ct, rt)
    return run(out, None, None, None, scalar_arg(start, ms), scalar_arg(step, mp), consts)
