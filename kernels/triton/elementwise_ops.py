"""The contract's elementwise ops over the kernels of elementwise.py: dtype rules, Python scalars,
broadcasting and ``out=``.

Dtype rules (cached per op and operand dtypes, as NumPy 2 decides them, which for arrays of one
dtype is also PyTorch's): two arrays of different dtypes promote with PyTorch's table (the caller
normally promotes first); a Python scalar is weak (NEP 50): ``float16 array + 2.5`` stays
float16, ``int32 array * 2.5`` is float64, ``bool array + 1`` is int64. Comparisons return bool.
``out=`` may have any strides and dtype: the result is computed in the inputs' dtype, rounded,
then cast into ``out`` (NumPy's ``casting="unsafe"``); inputs overlapping ``out`` other than
exactly are copied first (NumPy buffers such overlaps).

Supported: every op on float16, bfloat16, float32, float64; on integers and bool everything but
div, pow, exp, log, sqrt and the float-only unary ops (sin cos tanh sigmoid log1p expm1), which
raise TypeError naming the op and dtype (cast first; tritongrad's op layer promotes). bool has
no sub, neg, relu, sign, floor_divide, trunc_divide, remainder (NumPy rejects them too).
complex64/complex128 operands (or out=, or a complex Python scalar) take complex.py's kernel
(Note [complex lanes]): the spec builders refuse them with ``_launch.ComplexOperand`` and the
launchers catch it, so the real path is unchanged.
Integer division by zero raises RuntimeError when the divisor is a Python scalar; with a
divisor array it cannot be detected without a device sync, and the result is unspecified.
floor/ceil/round/trunc of integers return a copy (PyTorch's behaviour; NumPy's rint gives
float64 there).
"""

from __future__ import annotations

import triton.language as tl

from ...runtime import dtype as D
from ...runtime import memory as _memory
from ...runtime.array import DeviceArray
from ...runtime.memory import new_array as _new_array
from . import _launch as L
from . import complex as _complex
from .elementwise import (
    FBITS,
    INT,
    NONE,
    OPS,
    PTR,
    UNARY,
    bshape,
    constexprs,
    launch_copy,
    launch_of,
    run,
    scalar,
    scalar_arg,
    span,
)
from .memory import result_array

__all__ = [
    "add",
    "binary",
    "div",
    "eq",
    "exp",
    "ge",
    "gt",
    "le",
    "log",
    "lt",
    "maximum",
    "minimum",
    "mul",
    "ne",
    "neg",
    "pow",
    "relu",
    "sqrt",
    "sub",
    "unary",
    "where",
]

_SPECS: dict = {}
_HALF = (D.float16, D.bfloat16)
# dtype rules of the named ops; the unary table's come with its formulas (elementwise.UNARY)
_RULE = {rule: {op for op, r in UNARY.items() if r == rule} for rule in ("float", "round",
                                                                         "nobool", "int")}
_FLOAT_ONLY = {"div", "exp", "log", "sqrt", "atan2", "igamma", "igammac", "igamma_dx",
               "tanh_backward", "sigmoid_backward", "relu_backward"} | _RULE["float"]
_NO_BOOL = {"sub", "neg", "relu", "floor_divide", "trunc_divide", "remainder", "fmod", "pow"} \
    | _FLOAT_ONLY | _RULE["round"] | _RULE["nobool"]
_INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor"} | _RULE["int"]  # ints and bool
_INT_IDENTITY = _RULE["round"]
_COMPARE = {"gt", "ge", "lt", "le", "eq", "ne"}
UNARY_OPS = tuple(UNARY)
BINARY_OPS = ("atan2", "igamma", "igammac", "igamma_dx", "floor_divide", "trunc_divide",
              "remainder", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor", "tanh_backward",
              "sigmoid_backward", "relu_backward")
_BINARY = frozenset(BINARY_OPS)
_DIVIDES = {"floor_divide", "trunc_divide", "remainder", "fmod"}


def _scalar_result(a, t):
    """NumPy 2's weak scalar promotion (NEP 50): ``a`` array dtype, ``t`` a Python scalar type."""
    if t is complex or a.is_complex:  # complex.py's (Note [complex lanes])
        raise L.unsupported("elementwise", a if a.is_complex else D.complex64, "complex")
    if t is bool or a.is_floating_point:
        return a
    if t is int:
        return D.int64 if a is D.bool else a
    return D.float64  # int or bool array with a float scalar (NumPy computes in float64)


def _compute_type(r):
    if r in _HALF:
        return tl.float32
    if r is D.bool:
        return tl.int32
    return L.TL[r]


def _formula_of(op, r):
    """The kernel's OP: the formula of OPS that computes ``op`` for result dtype ``r``."""
    variant = _op_variant(op, r)
    formula = OPS.get(variant)
    if formula is None:
        raise ValueError(f"{op}: no elementwise formula {variant!r} for dtype {r} (known: "
                         f"{', '.join(OPS)})")
    return formula


def _op_variant(op, r):
    """The name in OPS of the formula variant of ``op`` for result dtype ``r``."""
    f, f64 = r.is_floating_point, r is D.float64
    if op == "div":
        return "div" if f64 else "div_rn"
    if op == "sqrt":
        return "sqrt" if f64 else "sqrt_rn"
    if op in ("maximum", "minimum") and f:
        return "f" + op
    if op == "pow" and not f:
        return "ipow"
    if op in _INT_IDENTITY and not f:
        return "copy"
    if op == "bitwise_not" and r is D.bool:
        return "logical_not"
    if op == "trunc_divide":
        return ("ftrunc_divide" if f64 else "ftrunc_divide_rn") if f else "itrunc_divide"
    if op in ("floor_divide", "remainder", "fmod"):
        return ("f" if f else "i") + op
    return op


def _check_op(op, r):
    L.check_supported(op, r)
    if op in _FLOAT_ONLY and not r.is_floating_point:
        raise L.unsupported(op, r, "floating point only; cast integer and bool inputs first")
    if op in _NO_BOOL and r is D.bool:
        raise L.unsupported(op, r, "not defined for bool, as in NumPy and PyTorch")
    if op in _INT_ONLY and r.is_floating_point:
        raise L.unsupported(op, r, "integers and bool only")


def _arith_spec(key):
    op, a, b = key
    if b is None:
        r = a
    elif isinstance(b, D.dtype):
        r = a if a is b else D.promote_types(a, b)
    else:
        r = _scalar_result(a, b)
    _check_op(op, r)
    ct = _compute_type(r)
    if op in _COMPARE:
        rt, out = tl.int1, D.bool
    else:
        rt, out = L.TL[r], r
    ym = NONE if b is None else PTR if isinstance(b, D.dtype) else (FBITS if b is float else INT)
    spec = (constexprs(_formula_of(op, r), PTR, ym, NONE, ct, rt), out)
    _SPECS[key] = spec
    return spec


def _check_out(op, out, shape, consts, *inputs):
    """Validates ``out`` for the broadcast ``shape``; returns the (possibly adjusted) constexprs
    and the inputs, copied where they overlap ``out`` (see ``_unalias``)."""
    if not isinstance(out, DeviceArray):
        raise TypeError(f"{op}: out must be a DeviceArray, got {type(out).__name__}")
    L.check_supported(op, out.dtype)
    if shape != out.shape and L.broadcast_shape(op, shape, out.shape) != out.shape:
        raise ValueError(f"{op}: output of shape {out.shape} cannot hold the broadcast result "
                         f"of shape {shape}")
    if out.dtype is D.bfloat16 and consts[5] is tl.float64:
        consts = constexprs(*consts[:5], tl.float32)  # float64 -> bfloat16 through float32
    return (consts,) + tuple(_unalias(out, a) for a in inputs)


def _unalias(out, a):
    """``a``, or a copy of it when it overlaps ``out`` in any way other than exactly (NumPy
    buffers such overlaps; a kernel reading and writing shifted views would race)."""
    if (a is None or a.storage is not out.storage
            or (a.offset == out.offset and a.strides == out.strides and a.shape == out.shape)):
        return a
    lo_a, hi_a = span(a)
    lo_o, hi_o = span(out)
    if hi_a <= lo_o or hi_o <= lo_a:
        return a
    return launch_copy(_memory.empty(a.shape, a.dtype, a.device), a)


# ------------------------------------------------------------------------------------------
# Launchers (the contract)
# ------------------------------------------------------------------------------------------
# Note [op plans]: ``a * b`` on arrays whose dtypes and layouts were seen before needs the same
# result shape and dtype and the same plan's Launch as the first time, which took four lookups
# (the dtype rule, the broadcast, the layout's plan, its bound constants) and two calls to find.
# So an array op without ``out=`` keeps (Launch, result shape, result dtype) under one key of
# (op, dtypes, shapes, strides) after its first launch, and a repeat is one lookup, the output's
# allocation and the launch (~0.5 us less per op). Entries exist only for calls that went
# through the checks, so errors still come from them; clear_plans() drops them with the plans.
# The entry keeps the result's strides and byte count too, so a repeat makes its result as
# ``memory.empty`` would, less that call and its layout lookup (~0.1 us), by
# ``memory.new_array`` (Note [result arrays]).
_OP_PLANS = L.plan_cache()


def _binary(op, a, b, out):
    if out is None and type(b) is DeviceArray:  # Note [op plans]
        p = _OP_PLANS.get((op, a.dtype, b.dtype, a.shape, a.strides, b.shape, b.strides))
        if p is not None:
            launch, shape, strides, nbytes, rdtype = p
            out = _new_array(nbytes, a.device, shape, strides, rdtype)  # empty()
            launch(out, a, b, None, 0, 0)
            return out
    try:
        if type(b) is DeviceArray:
            key = (op, a.dtype, b.dtype)
            consts, rdtype = _SPECS.get(key) or _arith_spec(key)
            shape = a.shape if a.shape == b.shape else bshape(op, a.shape, b.shape)
            ys = 0
            y = b
        else:
            s, t = scalar(b)
            key = (op, a.dtype, t)
            consts, rdtype = _SPECS.get(key) or _arith_spec(key)
            if op in _DIVIDES and not rdtype.is_floating_point and s == 0:
                raise RuntimeError(f"ZeroDivisionError: integer division by zero in {op}")
            ys = scalar_arg(s, consts[2])
            shape = a.shape
            y = None
        if out is not None:
            consts, a, y = _check_out(op, out, shape, consts, a, y)
    except L.ComplexOperand:
        if out is not None and not _complex_operands(a, b):  # a real result, complex out=
            _complex.copy(out, _binary(op, a, b, None))
            return out
        return _complex.binary(op, a, b, out)
    if out is None:
        out = result_array(shape, rdtype, a.device, a, b)  # (PyTorch's layout)
        if y is not None:  # an array op: kept (Note [op plans])
            run(out, a, y, None, 0, 0, consts)
            _OP_PLANS[op, a.dtype, y.dtype, a.shape, a.strides, y.shape, y.strides] = (
                launch_of(out, a, y, None, consts), shape, out.strides,
                out.storage.nbytes, rdtype)
            return out
    return run(out, a, y, None, 0, ys, consts)


def _complex_operands(*xs) -> bool:
    return any(isinstance(x, complex) or getattr(x, "dtype", D.bool).is_complex for x in xs)


def _unary(op, a, out):
    if out is None:  # Note [op plans]
        p = _OP_PLANS.get((op, a.dtype, a.shape, a.strides))
        if p is not None:
            launch, strides, nbytes, rdtype = p
            out = _new_array(nbytes, a.device, a.shape, strides, rdtype)
            launch(out, a, None, None, 0, 0)
            return out
    try:
        key = (op, a.dtype, None)
        consts, rdtype = _SPECS.get(key) or _arith_spec(key)
        if out is not None:
            consts, a = _check_out(op, out, a.shape, consts, a)
    except L.ComplexOperand:
        if out is not None and not a.dtype.is_complex:  # a real result, complex out=
            _complex.copy(out, _unary(op, a, None))
            return out
        return _complex.unary(op, a, out)
    if out is None:
        out = result_array(a.shape, rdtype, a.device, a)
        run(out, a, None, None, 0, 0, consts)
        _OP_PLANS[op, a.dtype, a.shape, a.strides] = (launch_of(out, a, None, None, consts),
                                                      out.strides, out.storage.nbytes, rdtype)
        return out
    return run(out, a, None, None, 0, 0, consts)


def add(a, b, out=None):
    """a + b (broadcasting; ``b`` may be a Python scalar; bool: logical or)."""
    return _binary("add", a, b, out)


def sub(a, b, out=None):
    """a - b (broadcasting; ``b`` may be a Python scalar)."""
    return _binary("sub", a, b, out)


def mul(a, b, out=None):
    """a * b (broadcasting; ``b`` may be a Python scalar; bool: logical and)."""
    return _binary("mul", a, b, out)


def div(a, b, out=None):
    """a / b, IEEE round-to-nearest (floating point dtypes only)."""
    return _binary("div", a, b, out)


def pow(a, b, out=None):
    """a ** b; integers by PyTorch's integer rule (a negative exponent gives the truncated
    reciprocal: 1 ** -n = 1, (-1) ** -n = +-1, else 0)."""
    return _binary("pow", a, b, out)


def maximum(a, b, out=None):
    """Elementwise maximum; NaN if either is NaN."""
    return _binary("maximum", a, b, out)


def minimum(a, b, out=None):
    """Elementwise minimum; NaN if either is NaN."""
    return _binary("minimum", a, b, out)


def gt(a, b):
    return _binary("gt", a, b, None)


def ge(a, b):
    return _binary("ge", a, b, None)


def lt(a, b):
    return _binary("lt", a, b, None)


def le(a, b):
    return _binary("le", a, b, None)


def eq(a, b):
    return _binary("eq", a, b, None)


def ne(a, b):
    return _binary("ne", a, b, None)


def neg(a, out=None):
    return _unary("neg", a, out)


def exp(a, out=None):
    return _unary("exp", a, out)


def log(a, out=None):
    return _unary("log", a, out)


def sqrt(a, out=None):
    return _unary("sqrt", a, out)


def relu(a, out=None):
    """max(a, 0), keeping NaN."""
    return _unary("relu", a, out)


def unary(op, a, out=None):
    """The unary table, UNARY_OPS (the formulas entered with ``@_formula(unary=...)``: abs
    sign sin cos ... bitwise_not); same dtype; the module docstring gives the dtype rules."""
    if op not in UNARY:  # (the dict: a tuple is searched in order, 26 names)
        if op in _complex.UNARY and a.dtype.is_complex:  # angle, sgn, conj: complex only
            return _complex.unary(op, a, out)
        raise ValueError(f"unary: unknown op {op!r}; expected one of {', '.join(UNARY_OPS)}")
    return _unary(op, a, out)


def binary(op, a, b, out=None):
    """The binary table: atan2, igamma igammac (P(a, x) and Q(a, x), the regularized incomplete
    gamma functions) and igamma_dx (dP/dx) (floats), floor_divide trunc_divide remainder
    bitwise_and bitwise_or bitwise_xor, and the fused derivative rules tanh_backward
    sigmoid_backward relu_backward (``a`` the incoming gradient, ``b`` the forward's output)
    (broadcasting; ``b`` may be a scalar)."""
    if op not in _BINARY:
        raise ValueError(f"binary: unknown op {op!r}; expected one of {', '.join(BINARY_OPS)}")
    return _binary(op, a, b, out)


def _where_spec(key):
    _, cd, ad, bd = key
    L.check_supported("where", cd)
    if isinstance(ad, D.dtype) and isinstance(bd, D.dtype):
        r = ad if ad is bd else D.promote_types(ad, bd)
    elif isinstance(ad, D.dtype):
        r = _scalar_result(ad, bd)
    elif isinstance(bd, D.dtype):
        r = _scalar_result(bd, ad)
    else:  # two Python scalars: NumPy's default types
        r = D.float64 if float in (ad, bd) else D.int64 if int in (ad, bd) else D.bool
    L.check_supported("where", r)

    def mode(t):
        return PTR if isinstance(t, D.dtype) else FBITS if t is float else INT

    # bfloat16 results of scalar branches round through float32 (see elementwise._via_f32)
    rt = tl.float32 if r is D.bfloat16 else L.TL[r]
    ct = tl.float32 if r is D.bfloat16 else L.TL[r]
    spec = (constexprs(OPS["where"], mode(ad), mode(bd), PTR, ct, rt), r)
    _SPECS[key] = spec
    return spec


def where(cond, a, b):
    """cond ? a : b, broadcasting all three; ``a`` and ``b`` may be Python scalars."""
    if type(a) is DeviceArray:
        ta = a.dtype
    else:
        a, ta = scalar(a)
    if type(b) is DeviceArray:
        tb = b.dtype
    else:
        b, tb = scalar(b)
    key = ("where", cond.dtype, ta, tb)
    try:
        consts, rdtype = _SPECS.get(key) or _where_spec(key)
    except L.ComplexOperand:
        return _complex.where(cond, a, b)
    shapes = [cond.shape]
    xs = ys = 0
    if consts[1] == PTR:
        shapes.append(a.shape)
    else:
        xs = scalar_arg(a, consts[1])
        a = None
    if consts[2] == PTR:
        shapes.append(b.shape)
    else:
        ys = scalar_arg(b, consts[2])
        b = None
    shape = shapes[0] if len(shapes) == 1 else bshape("where", *shapes)
    out = result_array(shape, rdtype, cond.device, cond, a, b)
    return run(out, a, b, cond, xs, ys, consts)
