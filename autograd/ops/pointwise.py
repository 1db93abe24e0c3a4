"""More elementwise ops: the math functions (``abs sin cos tanh sigmoid ...``), rounding,
``clamp``, integer division and remainder, logical and bitwise ops, ``fill_``/``zero_``.

Each forward is one entry of the backend's ``unary`` or ``binary`` table (or maximum/minimum
for clamp); the derivative rules sit beside them (``vjp`` over the kernel contract, as every
rule). Rounding ops
(``sign floor ceil round trunc``, ``floor_divide``, ``div(rounding_mode=...)``) have zero
gradients, as in PyTorch. Ops of ints promote to the default float dtype where PyTorch does
(``sin``, ``sigmoid``, ...) and keep integers where PyTorch does (``abs``, ``sign``, ``floor``,
``clamp``, ``//``, ``%``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from ...runtime import dtype as dtypes
from ...runtime.dtype import result_type
from ..dispatch import (Primitive, apply, apply_inplace, call, elementwise_jvp, meta, zero_jvp,
                        zeros)
from ..registry import OpInfo, composite_inplace, export, with_inplace, with_jvp
from ..checks import (check_ordered, kernel_not_implemented, operand_on_device, scalar_type_name,
                      tensor_arg)
from ..tensor import Tensor
from .creation import checked_scalar, wrapped_scalar
from .elementwise import (
    check_cast,
    check_out_dtype,
    python_number,
    _float_type,
    _inplace,
    _operand,
    _result,
    binary_operands,
    binary_primitive,
    broadcast_shapes,
    unary,
    zero_vjp)

_Number = numbers.Number


def _abs_rule(ctx, k, s, g):
    return k.mul(g, k.unary("sign", s[0]))


def _abs_complex_jvp(ctx, k, z, t, y):
    # d|z| = Re(conj(z) dz) / |z|, 0 at z = 0 (the subgradient the vjp takes there)
    zero = k.eq(y, 0)
    return k.where(zero, 0.0, k.div(k.real(k.mul(k.conj(z), t)), k.where(zero, 1.0, y)))


def _abs_complex_rule(ctx, k, s, g):
    # g z / |z| (0 at 0), PyTorch's sgn: written with differentiable ops, since unlike the
    # real sign it has a derivative of its own (for double backward)
    z = s[0]
    a = k.unary("abs", z)
    zero = k.eq(a, 0)
    return k.mul(g, k.where(zero, 0, k.div(z, k.where(zero, 1, a))))


# -- unary math: one row per op (elementwise.unary builds its primitive, function, in-place) ----

_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _one_minus_square(k, x):
    """1 - x^2 on backend ``k`` (the contract subtracts scalars on the right only). Real x:
    -x^2 + 1, +0 at |x| = 1, so that asin's, acos's and atanh's derivatives there are the
    limits from inside (+inf), not -inf through a -0. Complex x: -(x^2 - 1), whose zero
    imaginary parts keep the sign that puts sqrt on the side of the branch cut that the
    forward takes (asin(2 + 0j)'s derivative is its finite difference along the real axis)."""
    if meta(x)[1].is_complex:
        return k.neg(k.sub(k.mul(x, x), 1))
    return k.add(k.neg(k.mul(x, x)), 1)


_UNARY = (
    unary("abs", _abs_rule, saves="input", kind="any", complex_rule=_abs_complex_rule,
          complex_jvp=_abs_complex_jvp,
          real_valued=True, aliases=("absolute",), operators=("__abs__",), grad="g sign(x)",
          doc="``|x|`` (integers stay integers); the gradient is ``sign(x)`` (0 at 0; for "
              "complex x, x / |x|)."),
    unary("sin", lambda ctx, k, s, g: k.mul(g, k.unary("cos", s[0])), saves="input",
          grad="g cos(x)"),
    unary("cos", lambda ctx, k, s, g: k.mul(g, k.neg(k.unary("sin", s[0]))), saves="input",
          grad="-g sin(x)"),
    unary("tan", lambda ctx, k, s, g: k.mul(g, k.add(k.mul(s[0], s[0]), 1)), saves="output",
          grad="g (1 + y^2)", autocast="float32 on cuda"),
    unary("tanh", lambda ctx, k, s, g: k.binary("tanh_backward", g, s[0]), saves="output",
          grad="g (1 - y^2)"),
    unary("sigmoid", lambda ctx, k, s, g: k.binary("sigmoid_backward", g, s[0]),
          saves="output", grad="g y (1 - y)"),
    unary("log1p", lambda ctx, k, s, g: k.div(g, k.add(s[0], 1)), saves="input",
          node="Log1PBackward0", grad="g / (1 + x)", autocast="float32 on cuda"),
    unary("expm1", lambda ctx, k, s, g: k.mul(g, k.add(s[0], 1)), saves="output",
          grad="g (y + 1)", autocast="float32 on cuda"),
    unary("sign", kind="any", bool_copies=True, flops=None, grad="0",
          real_only="Unlike NumPy, torch.sign is not intended to support complex numbers. "
                    "Please use torch.sgn instead.",
          doc="-1, 0 or 1 by the sign of each element (0 for NaN, as PyTorch); zero gradient."),
    unary("floor", kind="round", flops=None, grad="0", real_only=True),
    unary("ceil", kind="round", flops=None, grad="0", real_only=True),
    unary("trunc", kind="round", flops=None, grad="0", aliases=("fix",), real_only=True),
    # the inverse trigonometric and the hyperbolic functions, base-2 and base-10 logarithms
    unary("asin", lambda ctx, k, s, g: k.div(g, k.sqrt(_one_minus_square(k, s[0]))),
          saves="input", aliases=("arcsin",), grad="g / sqrt(1 - x^2)",
          autocast="float32 on cuda"),
    unary("acos", lambda ctx, k, s, g: k.neg(k.div(g, k.sqrt(_one_minus_square(k, s[0])))),
          saves="input", aliases=("arccos",), grad="-g / sqrt(1 - x^2)",
          autocast="float32 on cuda"),
    unary("atan", lambda ctx, k, s, g: k.div(g, k.add(k.mul(s[0], s[0]), 1)), saves="input",
          aliases=("arctan",), grad="g / (1 + x^2)"),
    unary("sinh", lambda ctx, k, s, g: k.mul(g, k.unary("cosh", s[0])), saves="input",
          grad="g cosh(x)", autocast="float32 on cuda"),
    unary("cosh", lambda ctx, k, s, g: k.mul(g, k.unary("sinh", s[0])), saves="input",
          grad="g sinh(x)", autocast="float32 on cuda"),
    unary("asinh", lambda ctx, k, s, g: k.div(g, k.sqrt(k.add(k.mul(s[0], s[0]), 1))),
          saves="input", aliases=("arcsinh",), grad="g / sqrt(x^2 + 1)"),
    # (sqrt(x - 1) sqrt(x + 1), not sqrt(x^2 - 1): the two differ in sign for complex x left
    # of the imaginary axis, where only the first is acosh's derivative)
    unary("acosh", lambda ctx, k, s, g: k.div(g, k.mul(k.sqrt(k.sub(s[0], 1)),
                                                       k.sqrt(k.add(s[0], 1)))),
          saves="input", aliases=("arccosh",), grad="g / (sqrt(x - 1) sqrt(x + 1))"),
    unary("atanh", lambda ctx, k, s, g: k.div(g, _one_minus_square(k, s[0])), saves="input",
          aliases=("arctanh",), grad="g / (1 - x^2)"),
    unary("log2", lambda ctx, k, s, g: k.div(g, k.mul(s[0], _LN2)), saves="input",
          grad="g / (x ln 2)", autocast="float32 on cuda"),
    unary("log10", lambda ctx, k, s, g: k.div(g, k.mul(s[0], _LN10)), saves="input",
          grad="g / (x ln 10)", autocast="float32 on cuda"),
    unary("exp2", lambda ctx, k, s, g: k.mul(g, k.mul(s[0], _LN2)), saves="output",
          grad="g y ln 2"),
)
(abs, sin, cos, tan, tanh, sigmoid, log1p, expm1, sign, floor, ceil, trunc,  # noqa: A001
 asin, acos, atan, sinh, cosh, asinh, acosh, atanh, log2, log10, exp2) = (
    row.impl for row in _UNARY)  # (unguarded: registry)
_ROUND = unary("round", kind="round", flops=None, grad="0", real_only=True,
               doc="Rounds half to even, to ``decimals`` decimal places; zero gradient.")


class BitwiseNotOp(Primitive):
    __slots__ = ()
    op_name = "bitwise_not"
    differentiable = False

    @staticmethod
    def forward(ctx, k, x, out=None):
        return k.unary("bitwise_not", x, out=out)


def round(input: Tensor, *, decimals: int = 0, out=None) -> Tensor:  # noqa: A001
    """Rounds half to even, to ``decimals`` decimal places; zero gradient."""
    if decimals == 0:
        return _ROUND.fn(input, out=out)
    x = tensor_arg(input, "round")
    if not (x._dtype.is_floating_point or x._dtype.is_complex):  # (complex: refused below)
        # (PyTorch's kernel with decimals takes floating dtypes only; without, a copy)
        raise kernel_not_implemented(f"round_{x.device.type}", x.dtype)
    try:
        scale = 10.0 ** (decimals if decimals >= 0 else -decimals)
    except OverflowError:  # (PyTorch's result is NaN: inf / inf, 0 * inf)
        scale = float("inf")
    # half precision scales in float32, as PyTorch's kernel (125 * 1000 overflows float16)
    low = x._dtype.itemsize == 2 and x._dtype.is_floating_point
    y = x.float() if low else x
    r = _ROUND.fn(y * scale) / scale if decimals > 0 else _ROUND.fn(y / scale) * scale
    return _result(r.to(x._dtype) if low else r, out, "round")


def round_(self: Tensor, *, decimals: int = 0) -> Tensor:
    """In-place ``round``, to ``decimals`` decimal places."""
    if decimals == 0:
        return _ROUND.inplace(self)
    return _round_decimals_(self, decimals=decimals)


_round_decimals_ = composite_inplace(round, "round")


class SignbitOp(Primitive):
    __slots__ = ()
    op_name = "signbit"
    differentiable = False

    @staticmethod
    def forward(ctx, k, x):
        return k.ne(k.unary("signbit", x), 0)


def signbit(input: Tensor, *, out=None) -> Tensor:
    """True where the sign bit is set: negative numbers, -0.0 and NaNs with the sign bit
    (a bool tensor; never differentiable)."""
    x = tensor_arg(input, "signbit")
    dt = x._dtype
    if out is not None:
        check_bool_out(out, "signbit")
    if dt.is_complex:
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    if dt.is_floating_point:
        return _result(apply(SignbitOp, (x,)), out, "signbit")
    if dt is dtypes.bool or dt is dtypes.uint8:  # (no sign)
        from .creation import zeros
        return _result(zeros(tuple(x.shape), dtype=dtypes.bool, device=x.device), out,
                       "signbit")
    return _result(x.detach() < 0, out, "signbit")


def check_bool_out(out, op: str) -> None:
    """PyTorch's refusal of a non-bool ``out=`` for the bool-valued ``op``."""
    if isinstance(out, Tensor) and out._dtype is not dtypes.bool:
        raise RuntimeError(f"{op} does not support non-boolean outputs.")


def isinf(input: Tensor) -> Tensor:
    """True where an element is +inf or -inf (a complex one: either part is)."""
    x = tensor_arg(input, "isinf")
    if x._dtype.is_complex:  # (|z| cannot say: |1e308 + 1e308j| overflows to inf)
        x = x.detach()
        return isinf(x.real) | isinf(x.imag)
    if not x._dtype.is_floating_point:
        from .creation import zeros
        return zeros(tuple(x.shape), dtype=dtypes.bool, device=x.device)
    return abs(x.detach()) == float("inf")


def isfinite(input: Tensor) -> Tensor:
    """True where an element is neither infinite nor NaN (a complex one: both parts are)."""
    x = tensor_arg(input, "isfinite")
    if x._dtype.is_complex:
        x = x.detach()
        return isfinite(x.real) & isfinite(x.imag)
    if not x._dtype.is_floating_point:
        from .creation import ones
        return ones(tuple(x.shape), dtype=dtypes.bool, device=x.device)
    return abs(x.detach()) < float("inf")


# -- clamp ---------------------------------------------------------------------------------------

class ClampBackward1(Primitive):
    """clamp(x, min, max) with number bounds: the gradient passes where min <= x <= max."""

    __slots__ = ()
    op_name = "clamp"
    writes_out = True
    save_inputs = (0,)
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, x, lo, hi, out=None):
        ctx.lo, ctx.hi = lo, hi
        return _clamp(k, x, lo, hi, out)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return k.where(_within(k, saved[0], ctx.lo, ctx.hi), g, 0)


ClampMinBackward0 = ClampBackward1.variant("ClampMinBackward0", "clamp_min")
ClampMaxBackward0 = ClampBackward1.variant("ClampMaxBackward0", "clamp_max")


def _clamp(k, x, lo, hi, out=None):
    """max(x, lo) then min(., hi), each bound a number, an array or None."""
    if lo is not None:
        r = k.maximum(x, lo, out=out)
        return r if hi is None else k.minimum(r, hi, out=r)
    return k.minimum(x, hi, out=out)


def _within(k, x, lo, hi):
    """Where lo <= x <= hi (a bound of None is no bound)."""
    keep = k.ge(x, lo) if lo is not None else None
    if hi is not None:
        keep = k.le(x, hi) if keep is None else k.binary("bitwise_and", keep, k.le(x, hi))
    return keep


class ClampBackward0(Primitive):
    """clamp(x, min, max) with tensor bounds (broadcasting). x's gradient passes where
    min <= x <= max; min's where x < min (and min < max); max's where x > max or max < min
    (PyTorch's rule: when min > max every element is max)."""

    __slots__ = ()
    op_name = "clamp"
    writes_out = True
    broadcasts = True
    save_inputs = (0, 1, 2)  # x and the bounds given (one or two: the subclasses below)
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, x, *rest, out=None):
        *bounds, has_lo, has_hi = rest
        ctx.has = (has_lo, has_hi)
        return _clamp(k, x, bounds[0] if has_lo else None, bounds[-1] if has_hi else None, out)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x = saved[0]
        has_lo, has_hi = ctx.has
        lo = saved[1] if has_lo else None
        hi = saved[-1] if has_hi else None
        needs = ctx.needs_input_grad
        grads = [k.where(_within(k, x, lo, hi), g, 0) if needs[0] else None]
        if lo is not None:
            below = k.lt(x, lo)
            if hi is not None:
                below = k.binary("bitwise_and", below, k.lt(lo, hi))
            grads.append(k.where(below, g, 0) if needs[1] else None)
        if hi is not None:
            above = k.gt(x, hi)
            if lo is not None:
                above = k.binary("bitwise_or", above, k.lt(hi, lo))
            grads.append(k.where(above, g, 0) if needs[-1] else None)
        return tuple(grads)


class _ClampT1(ClampBackward0):
    __slots__ = ()
    save_inputs = (0, 1)


class _ClampT2(ClampBackward0):
    __slots__ = ()
    save_inputs = (0, 1, 2)


for _c in (_ClampT1, _ClampT2):
    _c.__name__ = _c.__qualname__ = "ClampBackward0"
# clamp_min / clamp_max with a tensor bound: their own nodes, as PyTorch's (with a number,
# ClampMinBackward0 / ClampMaxBackward0; clamp itself is ClampBackward0 / ClampBackward1)
ClampMinBackward1 = _ClampT1.variant("ClampMinBackward1", "clamp_min")
ClampMaxBackward1 = _ClampT1.variant("ClampMaxBackward1", "clamp_max")
# the node of each of the three ops: (with number bounds, with tensor bounds (one, two))
_CLAMP_NODES = {"clamp": (ClampBackward1, _ClampT1, _ClampT2),
                "clamp_min": (ClampMinBackward0, ClampMinBackward1, None),
                "clamp_max": (ClampMaxBackward0, ClampMaxBackward1, None)}


# Note [clamp's mixed bounds]
# PyTorch's clamp has two overloads, (Tensor min, Tensor max) and (Number min, Number max):
# a tensor and a number together match neither, and its argument parser raises TypeError
# listing both. A 0-d tensor that does not require grad passes for a Number there (its value
# is read), so ``clamp(x, tensor(0.), 1.0)`` is the number overload. The message is the
# function's (``clamp(input, ...)``) whether called as ``x.clamp``, ``clip`` or ``clamp``: the
# three are one function here.

_CLAMP_OVERLOADS = ("{op}() received an invalid combination of arguments - got ({got}), but "
                    "expected one of:\n"
                    " * (Tensor input, Tensor min = None, Tensor max = None{out})\n{why}"
                    " * (Tensor input, Number min = None, Number max = None{out})\n{why}")


def _arg_type_name(a) -> str:
    """An argument's type as PyTorch's parser names it (``float``, ``numpy.float64``)."""
    if isinstance(a, Tensor):
        return "Tensor"
    t = type(a)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _number_bounds(min, max, op: str):
    """``min`` and ``max`` (neither None, one a Tensor) as numbers where PyTorch reads them so
    (Note [clamp's mixed bounds]), else its TypeError."""
    def number(b):
        if not isinstance(b, Tensor):
            return b
        if b.ndim == 0 and not b.requires_grad:
            return b.item()
        lo, hi = _arg_type_name(min), _arg_type_name(max)
        inplace = op.endswith("_")
        why = "      didn't match because some of the arguments have invalid types: " \
            f"(Tensor, !{lo}!, !{hi}!)\n" if inplace else ""
        raise TypeError(_CLAMP_OVERLOADS.format(op=op, got=f"Tensor, {lo}, {hi}", why=why,
                                                out="" if inplace else ", *, Tensor out = None"))
    return number(min), number(max)


def _clamp_args(x: Tensor, min, max, op: str):
    """Checks clamp's bounds; returns (the result dtype, min, max), a 0-d tensor bound read as
    a number beside a number bound (Note [clamp's mixed bounds])."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    check_ordered(x, op)
    for b in (min, max):
        if b is not None and not isinstance(b, (Tensor, _Number)):
            raise TypeError(f"{op}(): bounds must be numbers or Tensors, not {type(b).__name__}")
        if isinstance(b, Tensor) and b.dtype.is_complex:  # (x is real: check_ordered)
            raise kernel_not_implemented(f"clamp_{x.device.type}", b.dtype)
    if isinstance(min, complex) or isinstance(max, complex):
        # a complex number bound is read as a real one, as PyTorch's Scalar: only without an
        # imaginary part
        min, max = (_real_bound(b) if isinstance(b, complex) else b for b in (min, max))
    if min is not None and max is not None and \
            isinstance(min, Tensor) is not isinstance(max, Tensor):
        min, max = _number_bounds(min, max, op)
    return result_type(x, *(b for b in (min, max) if b is not None)), min, max


def _real_bound(b: complex) -> float:
    if b.imag:
        raise RuntimeError("value cannot be converted to type double without overflow")
    return b.real


def _clamp_tensor_bounds(x, min, max, dt, op):
    bounds = [_operand(b, dt, x, op) for b in (min, max) if b is not None]
    return tuple(bounds), min is not None, max is not None


def _scalar_bound(b, dt):
    # PyTorch's clamp reads number bounds with Scalar::to<T>(): checked (creation.py's note)
    return None if b is None else checked_scalar(b, dt)


def clamp(input: Tensor, min=None, max=None, *, out=None) -> Tensor:  # noqa: A002
    """Clamps every element into [min, max] (numbers or broadcasting tensors; either may be
    None). NaN stays NaN; if min > max every element becomes max. The gradient passes where
    min <= x <= max."""
    return _clamp_out(input, min, max, out, "clamp")


def _clamp_out(input: Tensor, min, max, out, name: str) -> Tensor:  # noqa: A002
    # (``name``: the op whose out= form this is, for _result's error: clamp, clamp_min ...)
    x = tensor_arg(input, "clamp")
    dt, min, max = _clamp_args(x, min, max, "clamp")
    if out is not None and not isinstance(min, Tensor) and not isinstance(max, Tensor):
        check_out_dtype(out, dt)  # (PyTorch's clamp.Scalar does not cast into out; .Tensor does)
    if x._dtype is not dt:
        x = x.to(dt)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        bounds, has_lo, has_hi = _clamp_tensor_bounds(x, min, max, dt, "clamp")
        broadcast_shapes(x.shape, *(b.shape for b in bounds))
        op = _CLAMP_NODES[name][len(bounds)]
        return _result(apply(op, (x,) + bounds, has_lo, has_hi), out, name)
    lo, hi = _scalar_bound(min, dt), _scalar_bound(max, dt)
    return _result(apply(_CLAMP_NODES[name][0], (x,), lo, hi), out, name)


def clamp_min(input: Tensor, min: Tensor | float, *, out=None) -> Tensor:  # noqa: A002
    """``clamp(input, min=min)``."""
    return _clamp_out(input, min, None, out, "clamp_min")


def clamp_max(input: Tensor, max: Tensor | float, *, out=None) -> Tensor:  # noqa: A002
    """``clamp(input, max=max)``."""
    return _clamp_out(input, None, max, out, "clamp_max")


def clamp_(self: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    """In-place ``clamp``."""
    return _clamp_inplace(self, min, max, "clamp")


def clamp_min_(self: Tensor, min) -> Tensor:  # noqa: A002
    """In-place ``clamp_min``."""
    return _clamp_inplace(self, min, None, "clamp_min")


def clamp_max_(self: Tensor, max) -> Tensor:  # noqa: A002
    """In-place ``clamp_max``."""
    return _clamp_inplace(self, None, max, "clamp_max")


def _clamp_inplace(self: Tensor, min, max, name: str) -> Tensor:  # noqa: A002
    dt, min, max = _clamp_args(self, min, max, f"{name}_")
    check_cast(dt, self._dtype)
    dt = self._dtype
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        bounds, has_lo, has_hi = _clamp_tensor_bounds(self, min, max, dt, f"{name}_")
        shape = broadcast_shapes(self.shape, *(b.shape for b in bounds))
        if shape != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")
        return apply_inplace(_CLAMP_NODES[name][len(bounds)], self, bounds, has_lo, has_hi)
    lo, hi = _scalar_bound(min, dt), _scalar_bound(max, dt)
    return apply_inplace(_CLAMP_NODES[name][0], self, (), lo, hi)


# -- integer division and remainder -----------------------------------------------------------

def _remainder_rule(ctx, k, saved, g):
    a, b = saved
    need_a, need_b = ctx.needs_input_grad
    return (g if need_a else None), \
        (k.mul(k.neg(g), k.binary("floor_divide", a, b)) if need_b else None)


FloorDivideBackward0 = binary_primitive("FloorDivideBackward0", "floor_divide")
FloorDivideBackward1 = binary_primitive("FloorDivideBackward0", "floor_divide", scalar=True)
DivTruncBackward0 = binary_primitive("DivBackward2", "trunc_divide")
DivTruncBackward1 = binary_primitive("DivBackward2", "trunc_divide", scalar=True)
RemainderBackward0 = binary_primitive("RemainderBackward0", "remainder", _remainder_rule)
RemainderBackward1 = binary_primitive("RemainderBackward0", "remainder",
                                      lambda ctx, k, saved, g: g, scalar=True, saves=False)


def _fmod_rule(ctx, k, saved, g):
    a, b = saved
    need_a, need_b = ctx.needs_input_grad
    return (g if need_a else None), \
        (k.mul(k.neg(g), k.binary("trunc_divide", a, b)) if need_b else None)


FmodBackward0 = binary_primitive("FmodBackward0", "fmod", _fmod_rule)
FmodBackward1 = binary_primitive("FmodBackward0", "fmod", lambda ctx, k, saved, g: g,
                                 scalar=True, saves=False)


def _refuse_division(dt, device, kernel: str) -> None:
    """PyTorch has no integer-style division of bools or complex numbers (its kernel error)."""
    if dt is dtypes.bool or dt.is_complex:
        raise kernel_not_implemented(f"{kernel}_{device.type}", dt)


def _division(op_t, op_s, name, kernel, scalar_first=True):
    def fn(input, other, *, out=None) -> Tensor:
        if not isinstance(input, Tensor):  # number // tensor
            if not scalar_first:  # (PyTorch's fmod has no Scalar-first overload)
                raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                                f"{type(input).__name__}")
            input = _operand(input, result_type(input, other), other, name)
        a, b = binary_operands(input, other, name)
        _refuse_division(a._dtype, a.device, kernel)
        if isinstance(b, Tensor):
            return _result(apply(op_t, (a, b)), out, name)
        if b == 0 and not a._dtype.is_floating_point:
            raise RuntimeError(f"ZeroDivisionError: integer division by zero in {name}")
        return _result(apply(op_s, (a,), b), out, name)
    fn.__name__ = name
    return fn


floor_divide = _division(FloorDivideBackward0, FloorDivideBackward1, "floor_divide",
                         "div_floor")
floor_divide.__doc__ = ("``input // other``, rounding toward negative infinity (integers stay "
                        "integers); zero gradient.")
remainder = _division(RemainderBackward0, RemainderBackward1, "remainder", "remainder")
remainder.__doc__ = ("``input % other`` with the sign of the divisor (Python's ``%``). Its "
                     "gradient is 1 for input and ``-floor(input / other)`` for other.")
div_trunc = _division(DivTruncBackward0, DivTruncBackward1, "div", "div_trunc")
fmod = _division(FmodBackward0, FmodBackward1, "fmod", "fmod", scalar_first=False)
fmod.__doc__ = ("C's ``fmod``: ``input - trunc(input / other) * other``, with the sign of the "
                "dividend (``remainder`` takes the divisor's). Its gradient is 1 for input "
                "and ``-trunc(input / other)`` for other.")


def _inplace_division(op_t, op_s, name, kernel):
    def method(self: Tensor, other) -> Tensor:
        if not isinstance(other, (Tensor, numbers.Number)):
            raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        dt = result_type(self, other)
        check_cast(dt, self._dtype)  # (PyTorch's order: the cast, then the kernel's dtype)
        _refuse_division(dt, self.device, kernel)
        if isinstance(other, Tensor):
            other = operand_on_device(self, other, name)
            if broadcast_shapes(self.shape, other.shape) != tuple(self.shape):
                raise RuntimeError(f"output with shape {list(self.shape)} doesn't match "
                                   f"the broadcast shape "
                                   f"{list(broadcast_shapes(self.shape, other.shape))}")
            return apply_inplace(op_t, self, (other.to(self._dtype),))
        other = wrapped_scalar(other, self._dtype)
        if other == 0 and not self._dtype.is_floating_point:
            raise RuntimeError(f"ZeroDivisionError: integer division by zero in {name}")
        return apply_inplace(op_s, self, (), other)
    method.__name__ = name
    return method


floor_divide_ = _inplace_division(FloorDivideBackward0, FloorDivideBackward1, "floor_divide_",
                                  "div_floor")
div_trunc_ = _inplace_division(DivTruncBackward0, DivTruncBackward1, "div_", "div_trunc")
remainder_ = _inplace_division(RemainderBackward0, RemainderBackward1, "remainder_",
                               "remainder")
fmod_ = _inplace_division(FmodBackward0, FmodBackward1, "fmod_", "fmod")


# -- atan2 ----------------------------------------------------------------------------------------

def _atan2_rule(ctx, k, saved, g):
    # d/da atan2(a, b) = b / (a^2 + b^2), d/db = -a / (a^2 + b^2). At a = b = 0 the angle has
    # no derivative; PyTorch gives 0 there, and so does the select below (the divisor is
    # replaced, not the quotient, so a second derivative is finite too).
    a, b = saved
    need_a, need_b = ctx.needs_input_grad
    r2 = k.add(k.mul(a, a), k.mul(b, b))
    origin = k.eq(r2, 0)
    scale = k.where(origin, 0, k.div(g, k.where(origin, 1, r2)))
    return (k.mul(scale, b) if need_a else None), (k.mul(k.neg(scale), a) if need_b else None)


Atan2Backward0 = binary_primitive("Atan2Backward0", "atan2", _atan2_rule)
_atan2_inplace = _inplace(Atan2Backward0, None, promote_float=True)


def _atan2_other(input, other, name: str) -> None:
    if not isinstance(other, Tensor):  # (PyTorch has no Scalar overload of atan2)
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    if input._dtype.is_complex or other._dtype.is_complex:
        raise kernel_not_implemented(f"atan2_{input.device.type}", result_type(input, other))


def atan2(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The angle of the point (other, input) in radians, in [-pi, pi], elementwise with
    broadcasting (integers promote to the default float dtype). The gradient is
    ``(g b, -g a) / (a^2 + b^2)``, 0 at ``a = b = 0``."""
    x = tensor_arg(input, "atan2")
    _atan2_other(x, other, "atan2")
    a, b = binary_operands(x, other, "atan2", _float_type(x, other))
    return _result(apply(Atan2Backward0, (a, b)), out, "atan2")


def atan2_(self: Tensor, other: Tensor) -> Tensor:
    """In-place ``atan2``."""
    _atan2_other(self, other, "atan2_")
    return _atan2_inplace(self, other)


# -- igamma / igammac -----------------------------------------------------------------------------

def _no_input_derivative(op: str) -> NotImplementedError:
    # PyTorch has no derivative in a (its not_implemented("igamma: input"))
    return NotImplementedError(f"the derivative for '{op}: input' is not implemented.")


class IgammaBackward0(Primitive):
    """P(a, x) = gamma(a, x) / Gamma(a), the regularized lower incomplete gamma function:
    dP/dx = x^(a-1) e^-x / Gamma(a) (``IgammaDxOp``); no derivative in a (as PyTorch). Its
    forward-mode rule (the same derivative; PyTorch has none) is what gives erf, erfc and
    erfinv, composed from it (ops/special.py), theirs."""

    __slots__ = ()
    op_name = "igamma"
    writes_out = True
    broadcasts = True
    save_inputs = (0, 1)
    jvp = staticmethod(elementwise_jvp)
    _sign = 1

    @classmethod
    def forward(cls, ctx, k, a, x, out=None):
        return k.binary(cls.op_name, a, x, out=out)

    @classmethod
    def vjp(cls, ctx, k, saved, g):
        a, x = saved
        if ctx.needs_input_grad[0]:
            raise _no_input_derivative(cls.op_name)
        dx = call(k, IgammaDxOp, (a, x))
        return None, k.mul(g, dx if cls._sign > 0 else k.neg(dx))


IgammacBackward0 = IgammaBackward0.variant("IgammacBackward0", "igammac", _sign=-1)


class IgammaDxOp(Primitive):
    """d = x^(a-1) e^-x / Gamma(a) (igamma's derivative in x, one kernel): dd/dx =
    d ((a - 1) / x - 1); no derivative in a."""

    __slots__ = ()
    op_name = "igamma_dx"
    save_inputs = (0, 1)
    save_output = True
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, a, x):
        return k.binary("igamma_dx", a, x)

    @staticmethod
    def vjp(ctx, k, saved, g):
        a, x, d = saved
        if ctx.needs_input_grad[0]:
            raise _no_input_derivative("igamma")
        return None, k.mul(k.mul(g, d), k.sub(k.div(k.sub(a, 1), x), 1))


def _igamma_fn(op: type):
    name = op.op_name

    def operands(input, other, what: str):
        x = tensor_arg(input, what)
        if not isinstance(other, Tensor):
            raise TypeError(f"{what}(): argument 'other' (position 2) must be Tensor, not "
                            f"{type(other).__name__}")
        a, b = binary_operands(x, other, what)
        if not a._dtype.is_floating_point:
            raise kernel_not_implemented(f"{name}_{a.device.type}", a._dtype)
        return a, b

    def fn(input: Tensor, other: Tensor, *, out=None) -> Tensor:
        return _result(apply(op, operands(input, other, name)), out, name)

    def inplace(self: Tensor, other: Tensor) -> Tensor:
        a, b = operands(self, other, name + "_")
        if a is not self:
            raise RuntimeError(f"result type {scalar_type_name(a._dtype)} can't be cast to the "
                               f"desired output type {scalar_type_name(self._dtype)}")
        if broadcast_shapes(self.shape, b.shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(broadcast_shapes(self.shape, b.shape))}")
        return apply_inplace(op, self, (b,))

    fn.__name__, inplace.__name__ = name, name + "_"
    return fn, inplace


igamma, igamma_ = _igamma_fn(IgammaBackward0)
igamma.__doc__ = (
    """The regularized lower incomplete gamma function P(input, other) = gamma(a, x) /
    Gamma(a), elementwise with broadcasting (floats; NaN for a < 0 or x < 0). Differentiable
    in ``other`` only (``x^(a-1) e^-x / Gamma(a)``), as PyTorch; no forward-mode AD.
    Computed in float64 by a series (x < a + 1) or a continued fraction (at most 2000 terms:
    a up to about 5e4), relative error about 1e-15 for moderate arguments, growing like
    1e-16 * max(a, x).""")
igammac, igammac_ = _igamma_fn(IgammacBackward0)
igammac.__doc__ = (
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P(input, other);
    see ``igamma`` (the gradient in ``other`` is the negated density).""")


# -- bitwise and logical ------------------------------------------------------------------------

def _bitwise(name):
    class Op(Primitive):
        __slots__ = ()
        op_name = name
        differentiable = False
        writes_out = True

        @staticmethod
        def forward(ctx, k, a, b, out=None):
            return k.binary(name, a, b, out=out)

    Op.__name__ = Op.__qualname__ = "".join(p.capitalize() for p in name.split("_")) + "Op"

    def fn(input, other, *, out=None) -> Tensor:
        if not isinstance(input, Tensor):
            input = _operand(input, result_type(input, other), other, name)
        a, b = binary_operands(input, other, name)
        if a._dtype.is_floating_point or a._dtype.is_complex:
            raise kernel_not_implemented(f"{name}_{a.device.type}", a._dtype)
        if isinstance(b, Tensor):
            return _result(apply(Op, (a, b)), out, name)
        return _result(apply(Op, (a,), b), out, name)

    def inplace(self: Tensor, other) -> Tensor:
        if isinstance(other, Tensor):
            other = operand_on_device(self, other, name + "_")
        elif isinstance(other, (_Number, np.bool_)):
            other = python_number(other)
        else:
            raise TypeError(f"{name}_(): argument 'other' must be Tensor or Number, not "
                            f"{type(other).__name__}")
        if isinstance(other, Tensor):
            shape = broadcast_shapes(self.shape, other.shape)
            if shape != tuple(self.shape):
                raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                                   f"broadcast shape {list(shape)}")
        dt = result_type(self, other)
        check_cast(dt, self._dtype)  # (PyTorch's order: the cast, then the kernel's dtype)
        if dt.is_floating_point or dt.is_complex:
            raise kernel_not_implemented(f"{name}_{self.device.type}", dt)
        if isinstance(other, Tensor):
            return apply_inplace(Op, self, (other.to(self._dtype),))
        return apply_inplace(Op, self, (), wrapped_scalar(other, self._dtype))

    fn.__name__, inplace.__name__ = name, name + "_"
    fn.__doc__ = f"Elementwise ``{name}`` of integer or bool tensors, broadcasting."
    return fn, inplace


(bitwise_and, bitwise_and_), (bitwise_or, bitwise_or_), (bitwise_xor, bitwise_xor_) = (
    _bitwise(n) for n in ("bitwise_and", "bitwise_or", "bitwise_xor"))


def bitwise_not(input: Tensor, *, out=None) -> Tensor:
    """``~x``: bitwise not of integers, logical not of bools."""
    x = tensor_arg(input, "bitwise_not")
    if x._dtype.is_floating_point or x._dtype.is_complex:
        raise kernel_not_implemented(f"bitwise_not_{x.device.type}", x._dtype)
    if out is not None:
        check_out_dtype(out, x._dtype)
    return _result(apply(BitwiseNotOp, (x,)), out, "bitwise_not")


def _logical(bitwise, input: Tensor, other: Tensor, out, op: str) -> Tensor:
    """``bitwise`` of the operands' truth values; both must be tensors (PyTorch refuses a
    number)."""
    x, y = tensor_arg(input, op), tensor_arg(other, op, "other")
    return _result(bitwise(x if x._dtype is dtypes.bool else x != 0,
                           y if y._dtype is dtypes.bool else y != 0), out, op)


def logical_and(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """True where both are nonzero (any dtypes; a bool tensor)."""
    return _logical(bitwise_and, input, other, out, "logical_and")


def logical_or(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """True where either is nonzero (any dtypes; a bool tensor)."""
    return _logical(bitwise_or, input, other, out, "logical_or")


def logical_xor(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """True where exactly one is nonzero (any dtypes; a bool tensor)."""
    return _logical(bitwise_xor, input, other, out, "logical_xor")


def logical_not(input: Tensor, *, out=None) -> Tensor:
    """True where the element is zero (a bool tensor)."""
    x = tensor_arg(input, "logical_not")
    if x._dtype is dtypes.bool:
        return _result(apply(BitwiseNotOp, (x,)), out, "logical_not")
    return _result(x == 0, out, "logical_not")


# -- fill_ / zero_ --------------------------------------------------------------------------------

class FillBackward0(Primitive):
    """x.fill_(number): the old values get a zero gradient."""

    __slots__ = ()
    op_name = "fill_"
    writes_out = True
    expanded_target = True  # one value however often it is stored: PyTorch allows it

    @staticmethod
    def forward(ctx, k, x, value, out=None):
        if out is None:
            from ..tensor import array_meta
            dev, dt = array_meta(x)
            return k.full(x.shape, value, dt, dev)
        k.copy_(out, value)
        return out

    vjp = staticmethod(zero_vjp)
    jvp = staticmethod(zero_jvp)


ZeroBackward0 = FillBackward0.variant("ZeroBackward0", "zero_")


class FillBackward1(Primitive):
    """x.fill_(value) for a 0-d tensor value: x gets zeros, value the sum of the gradient."""

    __slots__ = ()
    op_name = "fill_"
    writes_out = True
    expanded_target = True

    @staticmethod
    def forward(ctx, k, x, v, out=None):
        if out is None:
            from ..tensor import array_meta
            dev, dt = array_meta(x)
            out = k.empty(x.shape, dt, dev)
        k.copy_(out, v)
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        need_x, need_v = ctx.needs_input_grad
        return (zeros(k, g.shape, g) if need_x else None), \
            (k.sum(g, tuple(range(len(g.shape))), False) if need_v else None)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out):
        tv = tangents[1]  # (dispatch expands it to the tensor's shape)
        return zeros(k, out.shape, out) if tv is None else tv


# PyTorch names the nodes of its four fill overloads apart: fill(number), fill(tensor), then
# the in-place fill_(number) and fill_(tensor)
FillBackward2 = FillBackward0.variant("FillBackward2", "fill_")
FillBackward3 = FillBackward1.variant("FillBackward3", "fill_")


def fill_(self: Tensor, value) -> Tensor:
    """Fills the tensor with ``value`` (a number or a 0-d tensor) in place."""
    return fill_with(self, value, (FillBackward2, FillBackward3))


def fill_with(self: Tensor, value, _nodes: tuple) -> Tensor:
    """``fill_`` recording one of ``_nodes`` (for a number, for a tensor ``value``)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        value = operand_on_device(self, value, "fill_")
        return apply_inplace(_nodes[1], self, (value.to(self._dtype),))
    if not isinstance(value, _Number):
        raise TypeError(f"fill_(): argument 'value' must be Number or Tensor, not "
                        f"{type(value).__name__}")
    return apply_inplace(_nodes[0], self, (), checked_scalar(value, self._dtype))


def zero_(self: Tensor) -> Tensor:
    """Fills the tensor with zeros in place."""
    return apply_inplace(ZeroBackward0, self, (), False if self._dtype is dtypes.bool else 0)


# -- the table ---------------------------------------------------------------------------------

def _bitwise_row(name, fn, inplace, op):
    return OpInfo(name, fn, inplace=inplace, operators=(f"__{op}__", f"__r{op}__", f"__i{op}__"),
                  dtypes="integers and bool", grad="none")


def _logical_row(name, fn):
    return OpInfo(name, fn, dtypes="any; bool result", grad="none")


OPS = _UNARY + (
    dataclasses.replace(_ROUND, fn=round, inplace=round_),
    OpInfo("clamp", clamp, inplace=clamp_, aliases=("clip",), flops="elementwise",
           dtypes="promoted with the bounds; not complex", grad="g where min <= x <= max"),
    OpInfo("clamp_min", clamp_min, inplace=clamp_min_, dtypes="promoted; not complex",
           grad="g where x >= min"),
    OpInfo("clamp_max", clamp_max, inplace=clamp_max_, dtypes="promoted; not complex",
           grad="g where x <= max"),
    OpInfo("floor_divide", floor_divide, inplace=floor_divide_,
           operators=("__floordiv__", "__rfloordiv__", "__ifloordiv__"),
           reflected=lambda self, other: floor_divide(other, self), dtypes="all but bool",
           grad="0"),
    OpInfo("remainder", remainder, inplace=remainder_,
           operators=("__mod__", "__rmod__", "__imod__"),
           reflected=lambda self, other: remainder(other, self), dtypes="all but bool",
           grad="g, -g floor(a / b)"),
    OpInfo("fmod", fmod, inplace=fmod_, dtypes="all but bool", grad="g, -g trunc(a / b)"),
    OpInfo("atan2", atan2, inplace=atan2_, aliases=("arctan2",), flops="elementwise",
           dtypes="floats; integers promote",
           grad="g b / (a^2 + b^2), -g a / (a^2 + b^2); 0 at a = b = 0"),
    OpInfo("igamma", igamma, inplace=igamma_, dtypes="floats",
           grad="other: g x^(a-1) e^-x / Gamma(a); input: not implemented", jvp=False),
    OpInfo("igammac", igammac, inplace=igammac_, dtypes="floats",
           grad="other: -g x^(a-1) e^-x / Gamma(a); input: not implemented", jvp=False),
    _bitwise_row("bitwise_and", bitwise_and, bitwise_and_, "and"),
    _bitwise_row("bitwise_or", bitwise_or, bitwise_or_, "or"),
    _bitwise_row("bitwise_xor", bitwise_xor, bitwise_xor_, "xor"),
    OpInfo("bitwise_not", bitwise_not, operators=("__invert__",), dtypes="integers and bool",
           grad="none"),
    _logical_row("logical_and", logical_and),
    _logical_row("logical_or", logical_or),
    _logical_row("logical_xor", logical_xor),
    _logical_row("logical_not", logical_not),
    OpInfo("isinf", isinf, dtypes="bool result", grad="none"),
    OpInfo("signbit", signbit, dtypes="all but complex; bool result", grad="none"),
    OpInfo("isfinite", isfinite, dtypes="bool result", grad="none"),
    OpInfo("fill_", fill_, dtypes="the tensor's", grad="0 (value: sum of g)"),
    OpInfo("zero_", zero_, dtypes="the tensor's", grad="0"),
)
OPS = with_jvp(OPS)  # every primitive here has a jvp rule
OPS = with_inplace(OPS, ("bitwise_not", "logical_and", "logical_or",
                         "logical_xor", "logical_not"))
export(OPS, globals())
