"""Number-theoretic and floating-point composites: ``square copysign heaviside gcd lcm ldexp
float_power frexp nextafter deg2rad rad2deg isposinf isneginf``, the bit shifts
(``bitwise_left_shift``, ``bitwise_right_shift``, ``<<``, ``>>``), ``renorm``, ``histogramdd``
and ``histogram`` (its one-dimensional case, as in PyTorch).

Every op here is written over other public ops, so it runs on both backends with no kernel of
its own, and its gradient comes through its parts, which are chosen so that it is PyTorch's
(derivatives.yaml): ``copysign`` through ``abs`` (``g sign(x)`` with the sign copied, 0 at
x = 0 and for ``other``), ``ldexp`` as PyTorch's own ``input * 2 ** other``, ``float_power``
as ``pow`` in float64, ``frexp``'s mantissa as ``x * 2 ** -exponent``, ``renorm`` through the
norm. ``nextafter`` passes ``g`` to ``input`` and none to ``other``, as PyTorch; ``heaviside``,
``gcd``, ``lcm``, the shifts, ``isposinf``/``isneginf`` and the histograms have no derivative.
"""

from __future__ import annotations

import builtins
import math
import numbers

from ...runtime import dtype as dtypes
from ...runtime.dtype import get_default_dtype, result_type
from ..checks import kernel_not_implemented, scalar_type_name, tensor_arg
from ..dispatch import Primitive, apply, elementwise_jvp
from ..dispatch import zeros as zeros_of
from ..registry import OpInfo, with_inplace
from ..tensor import Tensor, wrap_dim
from .composite import _float_operands
from .creation import full, linspace, scalar_tensor, wrapped_scalar, zeros
from .elementwise import (_result, binary_operands, broadcast_shapes, check_cast, eq, isnan, mul,
                          ne, pow, where)
from .pointwise import (abs, check_bool_out, exp2, floor, floor_divide, isfinite, isinf, log2,
                        remainder, signbit)
from .reduction import return_types

_Number = numbers.Number


def _named(name: str, fields: tuple) -> type:
    """A named tuple printing as PyTorch's ``torch.return_types.<name>``."""
    import collections
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        parts = ",\n".join(f"{f}={getattr(self, f)!r}" for f in fields)
        return f"tritongrad.return_types.{name}(\n{parts})"

    # (the qualified name is where pickle finds the class: this module's ``return_types``)
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                                "__qualname__": f"return_types.{name}"})


# (return_types is reduction.py's home of the named result tuples; these two are this family's)
return_types.frexp = _named("frexp", ("mantissa", "exponent"))
return_types.histogram = _named("histogram", ("hist", "bin_edges"))
return_types.histogramdd = _named("histogramdd", ("hist", "bin_edges"))
return_types.histogram_out = _named("histogram_out", ("hist", "bin_edges"))


def _not_implemented(op: str, x: Tensor) -> NotImplementedError:
    """PyTorch's error for a dtype its kernel of ``op`` does not take."""
    return kernel_not_implemented(f"{op}_{x.device.type}", x.dtype)


def _is_float(dt) -> bool:
    return dt.is_floating_point or dt.is_complex


# -- square, angles, infinities ------------------------------------------------------------------

def square(input: Tensor, *, out=None) -> Tensor:
    """``input * input`` (PyTorch's ``pow(input, 2)``: integers stay integers, bool gives
    int64); the gradient is ``2 g x``."""
    return _result(pow(tensor_arg(input, "square"), 2), out, "square")


def square_(self: Tensor) -> Tensor:
    """In-place ``square``."""
    if tensor_arg(self, "square_").dtype is dtypes.bool:  # (tg.square_ is this: unguarded)
        raise RuntimeError("result type Long can't be cast to the desired output type Bool")
    return self.pow_(2)


def _angle_scale(input: Tensor, factor: float, op: str, out) -> Tensor:
    x = tensor_arg(input, op)
    if x.dtype.is_complex:
        raise RuntimeError(f"{op} is not supported for complex tensors.")
    if not x.dtype.is_floating_point:
        x = x.to(get_default_dtype())
    return _result(mul(x, factor), out, op)


def deg2rad(input: Tensor, *, out=None) -> Tensor:
    """Degrees to radians: ``input * pi / 180`` (integers promote to the default float
    dtype)."""
    return _angle_scale(input, math.pi / 180.0, "deg2rad", out)


def rad2deg(input: Tensor, *, out=None) -> Tensor:
    """Radians to degrees: ``input * 180 / pi`` (integers promote to the default float
    dtype)."""
    return _angle_scale(input, 180.0 / math.pi, "rad2deg", out)


def _isinf_of_sign(input: Tensor, value: float, op: str, out) -> Tensor:
    x = tensor_arg(input, op)
    if x.dtype.is_complex:
        raise RuntimeError(f"{op} does not support complex inputs.")
    if out is not None:
        check_bool_out(out, op)
    if not x.dtype.is_floating_point:  # integers are finite
        return _result(zeros(tuple(x.shape), dtype=dtypes.bool, device=x.device), out, op)
    return _result(eq(x.detach(), value), out, op)


def isposinf(input: Tensor, *, out=None) -> Tensor:
    """True where an element is positive infinity."""
    return _isinf_of_sign(input, math.inf, "isposinf", out)


def isneginf(input: Tensor, *, out=None) -> Tensor:
    """True where an element is negative infinity."""
    return _isinf_of_sign(input, -math.inf, "isneginf", out)


# -- signs -----------------------------------------------------------------------------------------

def _precomputed(node: str, name: str, rule) -> type:
    """The primitive (grad_fn ``node``) of a binary op whose values are computed beforehand
    from detached tensors and handed to ``apply`` as its last parameter: the node records
    both inputs (so ``other`` gets its zero gradient, as PyTorch's, rather than being left
    out of the graph), and ``rule(ctx, k, (input, result), g)`` gives the gradients; being
    elementwise, its jvp is the rule applied to the tangents."""

    class Op(Primitive):
        __slots__ = ()
        op_name = name
        broadcasts = True
        save_inputs = (0,)
        save_output = True
        jvp = staticmethod(elementwise_jvp)

        @staticmethod
        def forward(ctx, k, a, b, value):
            return value

        vjp = staticmethod(rule)

    Op.__name__ = Op.__qualname__ = node
    return Op


def _copysign_rule(ctx, k, saved, g):
    # g |x|' with the result's sign: g sign(x) sign(result), 0 where x is 0
    a, r = saved
    need_a, need_b = ctx.needs_input_grad
    ga = k.mul(g, k.mul(k.unary("sign", a), k.unary("sign", r))) if need_a else None
    return ga, (zeros_of(k, g.shape, g) if need_b else None)


def _nextafter_rule(ctx, k, saved, g):
    need_a, need_b = ctx.needs_input_grad
    return (g if need_a else None), (zeros_of(k, g.shape, g) if need_b else None)


CopysignBackward0 = _precomputed("CopysignBackward0", "copysign", _copysign_rule)
NextafterBackward0 = _precomputed("NextafterBackward0", "nextafter", _nextafter_rule)


def copysign(input: Tensor, other, *, out=None) -> Tensor:
    """``|input|`` with the sign (bit) of ``other`` (a tensor, broadcasting, or a number;
    ``-0.0`` counts as negative); integers promote to the default float dtype. The gradient
    is ``g sign(input)`` with ``other``'s sign copied onto it (0 where ``input`` is 0), zero
    for ``other``."""
    if isinstance(other, _Number) and not isinstance(other, builtins.complex):
        # (only the number's sign is read: 1e40 into a float32 operand would overflow)
        other = math.copysign(1.0, other)
    a, b = _float_operands(tensor_arg(input, "copysign"), other, "copysign")
    if a.dtype.is_complex:
        raise kernel_not_implemented(f"copysign_{a.device.type}", a.dtype)
    magnitude = abs(a.detach())
    r = where(signbit(b.detach()), -magnitude, magnitude)
    return _result(apply(CopysignBackward0, (a, b), r._data), out, "copysign")


def heaviside(input: Tensor, values: Tensor, *, out=None) -> Tensor:
    """The Heaviside step function: 0 where ``input < 0``, ``values`` where ``input == 0``,
    1 where ``input > 0`` (NaN gives 0, as PyTorch); both tensors of one dtype,
    broadcasting. Not differentiable."""
    x = tensor_arg(input, "heaviside")
    v = tensor_arg(values, "heaviside", "values")
    if x.dtype.is_complex or v.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if x.dtype is not v.dtype or isinstance(out, Tensor) and out.dtype is not x.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    x, v = x.detach(), v.detach()
    return _result(where(eq(x, 0), v, (x > 0).to(x.dtype)), out, "heaviside")


# -- gcd / lcm ---------------------------------------------------------------------------------------

def _integer_operands(input, other, op: str) -> tuple:
    x = tensor_arg(input, op)
    tensor_arg(other, op, "other")
    a, b = binary_operands(x, other, op)
    if _is_float(a.dtype) or a.dtype is dtypes.bool:
        raise _not_implemented(op, a)
    return a.detach(), b.detach()


def gcd(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The greatest common divisor of each pair of elements (integers, broadcasting),
    non-negative; ``gcd(0, 0) = 0``. Euclid's algorithm, one step of remainders over the
    whole tensor per round, until every pair is done."""
    a, b = _integer_operands(input, other, "gcd")
    shape = broadcast_shapes(a.shape, b.shape)
    a, b = abs(a).expand(shape), abs(b).expand(shape)
    while True:
        live = ne(b, 0)
        if not live.any():
            return _result(a.contiguous(), out, "gcd")
        a, b = where(live, b, a), where(live, remainder(a, where(live, b, 1)), 0)


def lcm(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The least common multiple of each pair of elements (integers, broadcasting),
    non-negative; 0 where either is 0."""
    a, b = _integer_operands(input, other, "lcm")
    g = gcd(a, b)
    zero = eq(g, 0)
    return _result(where(zero, 0, abs(floor_divide(a, where(zero, 1, g)) * b)), out, "lcm")


# -- powers of two -------------------------------------------------------------------------------

def ldexp(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``input * 2 ** other`` (PyTorch's definition, and so its gradient); integers promote to
    the default float dtype."""
    x, e = tensor_arg(input, "ldexp"), tensor_arg(other, "ldexp", "other")
    if e._dtype is dtypes.bool and x._dtype.is_floating_point:  # (PyTorch's kernel refuses a
        # bool exponent of a float input; an integer or bool input is promoted first)
        raise kernel_not_implemented(f"ldexp_{x.device.type}_exp", e._dtype)
    dt = result_type(x, e)  # (its dtype: float16 * 2 ** int stays float16, ints go float)
    if not (dt.is_floating_point or dt.is_complex):
        dt = get_default_dtype()
    return _result(mul(x.to(dt), pow(2.0, e.to(dt))), out, "ldexp")


def _float_power_dtype(*operands):
    return dtypes.complex128 if any(
        (o.dtype.is_complex if isinstance(o, Tensor) else isinstance(o, complex))
        for o in operands) else dtypes.float64


def float_power(input: Tensor | float, exponent: Tensor | float, *, out=None) -> Tensor:
    """``input ** exponent`` computed in double precision: the result is float64 (complex128
    for complex operands) whatever the inputs' dtypes; either may be a number. The gradient
    is ``pow``'s, in float64."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): expected at least one Tensor argument")
    dt = _float_power_dtype(input, exponent)
    if isinstance(out, Tensor) and out.dtype is not dt:  # (no cast of the result: PyTorch's)
        raise RuntimeError(f"the output given to float_power has dtype "
                           f"{scalar_type_name(out.dtype)} but the operation's result requires "
                           f"dtype {scalar_type_name(dt)}")
    base, e = (v.to(dt) if isinstance(v, Tensor) else v for v in (input, exponent))
    return _result(pow(base, e), out, "float_power")


def float_power_(self: Tensor, exponent) -> Tensor:
    """In-place ``float_power``: ``self`` must be float64 (complex128 for a complex
    operation), the dtype of the result."""
    dt = _float_power_dtype(self, exponent)
    if self.dtype is not dt:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{scalar_type_name(self.dtype)} but the operation's result "
                           f"requires dtype {scalar_type_name(dt)}")
    return self.pow_(exponent.to(dt) if isinstance(exponent, Tensor) else exponent)


def _exponent(x64: Tensor) -> Tensor:
    """The float64 exponent e of ``x = m * 2 ** e`` with ``0.5 <= |m| < 1`` (0 where x is 0
    or not finite), for a float64 tensor without history. ``log2`` gives it up to rounding
    (near a power of two, or 1 ulp off at large e); the scaled mantissa corrects it."""
    a = abs(x64)
    regular = isfinite(a) & ne(a, 0)
    safe = where(regular, a, 1.0)
    e = floor(log2(safe)) + 1
    m = _scale(safe, -e)
    e = e + (m >= 1).to(e.dtype) - (m < 0.5).to(e.dtype)
    return where(regular, e, 0.0)


def _scale(x: Tensor, e: Tensor) -> Tensor:
    """``x * 2 ** e`` for integer-valued float64 ``e`` in two factors, so that neither
    overflows where the product does not (e = 1074 for the smallest subnormal)."""
    half = floor(e * 0.5)
    return x * exp2(half) * exp2(e - half)


def frexp(input: Tensor, *, out=None) -> tuple:
    """Splits each element into a mantissa and an exponent: ``input = mantissa * 2 **
    exponent``, ``0.5 <= |mantissa| < 1`` (0, infinities and NaN: themselves with exponent
    0). Returns ``(mantissa, exponent)`` (input's dtype, int32). The mantissa's gradient is
    ``g / 2 ** exponent``; the exponent has none."""
    x = tensor_arg(input, "frexp")
    if not x.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    e = _exponent(x.detach().to(dtypes.float64))  # (float64 holds every dtype's exponents)
    mantissa = _scale(x.to(dtypes.float64), -e).to(x.dtype)
    result = return_types.frexp(mantissa, e.to(dtypes.int32))
    if out is not None:
        from ..storage import _c_type
        # (PyTorch's frexp writes into out without a cast: each dtype must be the result's)
        wants = (f"mantissa to have dtype {_c_type(x.dtype)}", "exponent to have int dtype")
        for o, r, want in zip(out, result, wants):
            if isinstance(o, Tensor) and o.dtype is not r.dtype:
                raise RuntimeError(f"torch.frexp() expects {want} but got {_c_type(o.dtype)}")
        for o, r in zip(out, result):
            _result(r, o, "frexp")
        return return_types.frexp(*out)
    return result


# (significand bits p, frexp's exponent of the smallest normal number) per floating dtype
_FLOAT_LAYOUT = {dtypes.float64: (53, -1021), dtypes.float32: (24, -125),
                 dtypes.float16: (11, -13), dtypes.bfloat16: (8, -125)}


def nextafter(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The next floating-point value after ``input`` towards ``other``, elementwise with
    broadcasting (floats). Computed in float64 from ``input``'s exponent: one unit in the last
    place of ``input``'s dtype, half of it below a power of two, the smallest subnormal from
    0. Its gradient is ``g`` for ``input`` and zero for ``other``, as PyTorch's."""
    x = tensor_arg(input, "nextafter")
    a, b = binary_operands(x, tensor_arg(other, "nextafter", "other"), "nextafter")
    if not a.dtype.is_floating_point:
        raise _not_implemented("nextafter", a)
    p, emin = _FLOAT_LAYOUT[a.dtype]
    xd, yd = a.detach().to(dtypes.float64), b.detach().to(dtypes.float64)
    e = _exponent(xd)
    at_power_of_two = eq(abs(_scale(xd, -e)), 0.5) & (e > emin)
    up = exp2(e.clamp(min=emin) - p)  # the spacing above |x|
    away = eq(yd > xd, xd > 0)  # moving away from zero
    step = where(away | ~at_power_of_two, up, up * 0.5)
    top = float(_max_finite(a.dtype))
    overflow = away & eq(abs(xd), top)  # (past the largest finite value: inf, computed so)
    step = where(overflow, 0.0, step)
    r = where(yd > xd, xd + step, xd - step)
    r = where(overflow, where(xd > 0, math.inf, -math.inf), r)
    tiny = math.ldexp(1.0, emin - p)
    r = where(eq(xd, 0), where(yd > 0, xd + tiny, xd - tiny), r)  # (float64: tiny is exact)
    r = where(isinf(xd), xd.sign() * top, r)
    r = where(eq(xd, yd), yd, r)
    r = where(isnan(xd) | isnan(yd), math.nan, r).to(a.dtype)
    return _result(apply(NextafterBackward0, (a, b), r._data), out, "nextafter")


def _max_finite(dt) -> float:
    return dtypes.finfo(dt).max


# -- bit shifts ---------------------------------------------------------------------------------------

def _shift(input, other, op: str, left: bool, out) -> Tensor:
    if not isinstance(input, Tensor):  # 2 << t (a wrapped number: 300 wraps into uint8)
        input = scalar_tensor(input, result_type(input, other), other.device)
    a, b = binary_operands(input, other, op)
    if _is_float(a.dtype) or a.dtype is dtypes.bool:
        raise _not_implemented(("lshift" if left else "rshift"), a)
    a = a.detach()
    bits = 8 * a.dtype.itemsize
    # PyTorch's rules for a shift out of [0, bits): 0, or the sign for an arithmetic right shift
    arithmetic = not left and a.dtype.is_signed
    overflow = where(a < 0, -1, 0).to(a.dtype) if arithmetic else zeros(
        tuple(a.shape), dtype=a.dtype, device=a.device)
    # the shift as a product or a floored quotient by 2 ** s: 2 ** (bits - 1) wraps negative,
    # which multiplies right but would divide wrong, so a right shift by bits - 1 is the sign
    limit = bits - 1 if arithmetic else bits
    if isinstance(b, Tensor):
        b = b.detach()
        valid = (b >= 0) & (b < limit)
        power = pow(2, where(valid, b, 0))
        r = where(valid, mul(a, power) if left else floor_divide(a, power), overflow)
    elif 0 <= int(b) < limit:
        power = wrapped_scalar(1 << int(b), a.dtype)
        r = mul(a, power) if left else floor_divide(a, power)
    else:
        r = overflow
    return _result(r.to(a.dtype), out, op)


def bitwise_left_shift(input: Tensor | int, other: Tensor | int, *, out=None) -> Tensor:
    """``input << other`` for integers (broadcasting; either may be a number): bits shifted
    past the type's width are lost, and a shift by a negative amount or by the width or more
    gives 0, as PyTorch's."""
    return _shift(input, other, "bitwise_left_shift", True, out)


def bitwise_right_shift(input: Tensor | int, other: Tensor | int, *, out=None) -> Tensor:
    """``input >> other`` for integers (broadcasting; either may be a number): an arithmetic
    shift (the sign fills in for signed types); a shift by a negative amount or by the width
    or more gives the sign (-1 or 0), as PyTorch's."""
    return _shift(input, other, "bitwise_right_shift", False, out)


# -- renorm -------------------------------------------------------------------------------------------

def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Each sub-tensor ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` scaled to
    norm ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as PyTorch); the others unchanged. The
    gradient goes through the norm too."""
    from .linalg_ext import vector_norm
    x = tensor_arg(input, "renorm")
    if not isinstance(p, _Number) or p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if x.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {x.ndim} "
                           f"dimensions")
    d = wrap_dim(dim, x.ndim, "renorm")
    norm = vector_norm(x, p, tuple(i for i in range(x.ndim) if i != d), keepdim=True)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return (x * factor).contiguous()  # (PyTorch's result is contiguous whatever x's layout)


# -- histograms ---------------------------------------------------------------------------------

def _outer_edges(points: Tensor, range, n: int) -> list:
    """The leftmost and rightmost edge of each of the ``n`` dims of the (M, n) ``points``
    (PyTorch's select_outer_bin_edges): from ``range`` (2n numbers), else each dim's min and
    max ([0, 1] without points); an empty interval is widened by 0.5 each side."""
    if range is not None:
        bounds = [builtins.float(v) for v in range]
        if len(bounds) != 2 * n:
            raise RuntimeError(f"torch.histogramdd: for a {n}-dimensional histogram range should "
                               f"have {2 * n} elements, but got {len(bounds)}")
        pairs = list(zip(bounds[0::2], bounds[1::2]))
    elif points.shape[0]:
        pairs = list(zip(points.amin(0).tolist(), points.amax(0).tolist()))
    else:
        pairs = [(0.0, 1.0)] * n
    for d, (lo, hi) in enumerate(pairs):
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{lo:g}, {hi:g}] is "
                               f"not finite")
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{lo:g} max {hi:g} for dimension {d}")
    return [(lo - 0.5, hi + 0.5) if lo == hi else (lo, hi) for lo, hi in pairs]


def _bin_spec(bins, n: int) -> list:
    """``bins`` as a list: ``n`` counts (an int, or a sequence of ints) or edge tensors (a
    sequence of Tensors); PyTorch's TypeErrors for anything else."""
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        return [int(bins)] * n
    if isinstance(bins, Tensor) or not isinstance(bins, (list, tuple)):
        raise TypeError(f"histogramdd(): argument 'bins' must be int, tuple of ints or tuple of "
                        f"Tensors, not {type(bins).__name__}")
    bins = list(bins)
    if all(isinstance(b, numbers.Integral) and not isinstance(b, bool) for b in bins):
        return [int(b) for b in bins]
    for i, b in enumerate(bins):
        if not isinstance(b, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                            f"{type(b).__name__}")
    return bins


def _check_histogram_args(x: Tensor, edges: list, weight) -> list:
    """PyTorch's histogramdd_check_inputs and the bin counts' check: the edge tensors (one
    per dim, 1-D, at least one edge, ``x``'s dtype) and the weight (``x``'s dtype and shape
    without its last dim). Returns the bin counts."""
    from ..storage import _c_type
    op = "torch.histogramdd"
    n = x.shape[-1]
    if len(edges) != n:
        raise RuntimeError(f"{op}: expected {n} sequences of bin edges for a {n}-dimensional "
                           f"histogram but got {len(edges)}")
    for d, e in enumerate(edges):
        if e.dtype is not x.dtype:
            raise RuntimeError(f"{op}: input tensor and bins tensors should have the same dtype, "
                               f"but got input with dtype {_c_type(x.dtype)} and bins for "
                               f"dimension {d} with dtype {_c_type(e.dtype)}")
        if e.ndim != 1:
            raise RuntimeError(f"{op}: bins tensor should have one dimension, but got {e.ndim} "
                               f"dimensions in the bins tensor for dimension {d}")
        if e.numel() == 0:
            raise RuntimeError(f"{op}: bins tensor should have at least 1 element, but got 0 "
                               f"elements in the bins tensor for dimension {d}")
    if weight is not None:
        if weight.dtype is not x.dtype:
            raise RuntimeError(f"{op}: if weight tensor is provided, input tensor and weight "
                               f"tensor should have the same dtype, but got "
                               f"input({_c_type(x.dtype)}), and weight({_c_type(weight.dtype)})")
        if tuple(weight.shape or (1,)) != tuple(x.shape[:-1]):
            raise RuntimeError(f"{op}: if weight tensor is provided it should have the same "
                               f"shape as the input tensor excluding its innermost dimension, "
                               f"but got input with shape {list(x.shape)} and weight with shape "
                               f"{list(weight.shape)}")
    counts = [e.shape[0] - 1 for e in edges]
    for d, c in enumerate(counts):
        if c <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {c} for "
                               f"dimension {d}")
    return counts


def histogramdd(input: Tensor, bins, range=None, weight=None, density: bool = False) -> tuple:
    """The histogram of the points in ``input``'s last dim (size N; the other dims are
    flattened into M points): ``bins`` is the number of equal-width bins of every dim (an int)
    or of each (N ints) over ``range`` (``[min_0, max_0, ..., min_N-1, max_N-1]``, default: the
    points' min and max, widened by 0.5 each side when equal), or the bin edges of each dim (N
    1-D tensors; ``range`` is then unused). A bin holds the count (or, with ``weight``, shaped
    as ``input`` without its last dim, the summed weights) of the points in [left edge, right
    edge) in every dim, the last bin its right edge too; points outside, and NaN, are not
    counted. ``density=True`` normalises to a density (the hist integrates to 1). Returns
    ``(hist, bin_edges)``, ``bin_edges`` a tuple of N tensors. No derivative: the results
    never require grad (PyTorch's record a node whose backward raises).

    Example:
        >>> tg.histogramdd(tg.tensor([[0., 0.], [1., 1.], [1., 0.]]), bins=2).hist
        tensor([[1., 0.],
                [1., 1.]])
    """
    from .sets import searchsorted
    op = "torch.histogramdd"
    x = tensor_arg(input, "histogramdd").detach()
    if x.ndim < 2:
        raise RuntimeError(f"{op}: input tensor should have at least 2 dimensions")
    if not x.dtype.is_floating_point or x.dtype.itemsize < 4:
        raise kernel_not_implemented("histogramdd", x.dtype)
    n = x.shape[-1]
    points = x.reshape(-1, n)
    spec = _bin_spec(bins, n)
    if not spec or not isinstance(spec[0], Tensor):
        outer = _outer_edges(points, range, n)
        if len(spec) != n:
            raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                               "dimension of the input.")
        edges = [linspace(lo, hi, builtins.max(c + 1, 0), dtype=x.dtype, device=x.device)
                 for c, (lo, hi) in zip(spec, outer)]
    else:
        edges = [e.detach() for e in spec]
    if weight is not None:
        weight = tensor_arg(weight, "histogramdd", "weight").detach()
    counts = _check_histogram_args(x, edges, weight)
    # each point's bin, as a flat index into the row-major (counts) grid, and whether it is
    # inside the grid in every dim
    flat = inside = None
    for d, (e, c) in enumerate(zip(edges, counts)):
        col = points[:, d].contiguous()
        pos = (searchsorted(e, col, right=True) - 1).clamp(0, c - 1)
        ins = (col >= e[0]) & (col <= e[-1])  # (NaN compares False: not counted)
        flat, inside = (pos, ins) if flat is None else (flat * c + pos, inside & ins)
    hist = zeros(math.prod(counts), dtype=x.dtype, device=x.device)
    if points.shape[0]:
        idx = flat[inside]
        w = (weight.reshape(-1)[inside] if weight is not None
             else full((idx.shape[0],), 1, dtype=x.dtype, device=x.device))
        hist = hist.index_add(0, idx, w)
    hist = hist.reshape(tuple(counts))
    if density:  # (PyTorch's order: the total first, then each dim's bin widths)
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * n
            shape[d] = counts[d]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return return_types.histogramdd(hist, tuple(edges))


def histogram(input: Tensor, bins: Tensor | int = 100, *, range=None, weight=None,
              density: bool = False, out=None) -> tuple:
    """The histogram of ``input``'s values (flattened): ``bins`` equal-width bins over
    ``range`` (default: the values' min and max, widened by 0.5 each side when they are
    equal), or the bin edges given as a 1-D tensor. Each bin holds the count (or, with
    ``weight``, the summed weights) of the values in [left edge, right edge), the last bin
    its right edge too; values outside, and NaN, are not counted. ``density=True``
    normalises to a density (the hist integrates to 1). Returns ``(hist, bin_edges)``: the
    one-dimensional :func:`histogramdd`, as PyTorch computes it (so its errors are
    histogramdd's). ``out``: a pair of tensors of ``input``'s dtype, both written (and
    resized)."""
    x = tensor_arg(input, "histogram")
    if not isinstance(bins, Tensor) and (not isinstance(bins, numbers.Integral)
                                         or isinstance(bins, bool)):
        raise TypeError(f"histogram() received an invalid combination of arguments - got "
                        f"(Tensor, {type(bins).__name__}), but expected one of:\n"
                        f" * (Tensor input, Tensor bins, *, Tensor weight = None, bool density "
                        f"= False, tuple of Tensors out = None)\n"
                        f" * (Tensor input, int bins = 100, *, tuple of floats range = None, "
                        f"Tensor weight = None, bool density = False, tuple of Tensors out = "
                        f"None)\n")
    if not isinstance(bins, Tensor) and bins <= 0:  # (histogramdd's message would be its own)
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if weight is not None:
        weight = tensor_arg(weight, "histogram", "weight").reshape(-1)
    hist, (edges,) = histogramdd(x.reshape(-1, 1), [bins] if isinstance(bins, Tensor) else bins,
                                 range=range, weight=weight, density=density)
    if out is None:
        return return_types.histogram(hist, edges)
    if not (isinstance(out, (tuple, list)) and len(out) == 2
            and builtins.all(isinstance(t, Tensor) for t in out)):
        raise TypeError(f"histogram(): argument 'out' must be tuple of 2 Tensors, not "
                        f"{type(out).__name__}")
    for t, which, suffix in ((out[1], "bin_edges", " for dimension 0"), (out[0], "hist", "")):
        if t.dtype is not x.dtype:
            raise RuntimeError(f"torch.histogram: input tensor and {which} tensor should have "
                               f"the same dtype, but got input "
                               f"{scalar_type_name(x.dtype).lower()} and {which} "
                               f"{scalar_type_name(t.dtype).lower()}{suffix}")
    return return_types.histogram_out(_result(hist, out[0], "histogram"),
                                      _result(edges, out[1], "histogram"))


# -- the table ---------------------------------------------------------------------------------

def _integer_inplace(fn, name: str):
    """``x.<name>_(other)`` for an integer op without a derivative: PyTorch's refusal of a
    result dtype ``x`` cannot hold (``bool_tensor <<= 2``: Long into Bool), then the result
    written into ``x``."""
    def inplace(self: Tensor, other) -> Tensor:
        tensor_arg(self, name + "_")
        check_cast(result_type(self, other), self.dtype)
        r = fn(self, other)
        if tuple(r.shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(r.shape)}")
        return self.copy_(r)
    inplace.__name__ = inplace.__qualname__ = name + "_"
    inplace.__doc__ = f"In-place ``{name}``."
    return inplace


def _shift_row(name: str, fn, op: str) -> OpInfo:
    return OpInfo(name, fn, inplace=_integer_inplace(fn, name),
                  operators=(f"__{op}__", f"__r{op}__", f"__i{op}__"),
                  reflected=lambda self, other: fn(other, self), dtypes="integers",
                  grad="none")


OPS = (
    OpInfo("square", square, inplace=square_, dtypes="all; bool gives int64", grad="2 g x"),
    OpInfo("deg2rad", deg2rad, dtypes="floats; integers promote", grad="g pi / 180"),
    OpInfo("rad2deg", rad2deg, dtypes="floats; integers promote", grad="g 180 / pi"),
    OpInfo("isposinf", isposinf, dtypes="all but complex; bool result", grad="none"),
    OpInfo("isneginf", isneginf, dtypes="all but complex; bool result", grad="none"),
    OpInfo("copysign", copysign, dtypes="floats; integers promote",
           grad="g sign(x) with other's sign (0 at x = 0), other: 0", jvp=True),
    OpInfo("heaviside", heaviside, dtypes="all but complex; one dtype", grad="none"),
    OpInfo("gcd", gcd, inplace=_integer_inplace(gcd, "gcd"), dtypes="integers", grad="none"),
    OpInfo("lcm", lcm, inplace=_integer_inplace(lcm, "lcm"), dtypes="integers", grad="none"),
    OpInfo("ldexp", ldexp, dtypes="floats; integers promote",
           grad="g 2^e, g x 2^e ln 2 (input * 2 ** other)"),
    OpInfo("float_power", float_power, inplace=float_power_, dtypes="float64 (complex128) result",
           grad="pow's, in float64"),
    OpInfo("frexp", frexp, dtypes="floats; int32 exponent", grad="mantissa: g / 2^exponent"),
    OpInfo("nextafter", nextafter, dtypes="floats", grad="g, other: 0", jvp=True),
    _shift_row("bitwise_left_shift", bitwise_left_shift, "lshift"),
    _shift_row("bitwise_right_shift", bitwise_right_shift, "rshift"),
    OpInfo("renorm", renorm, dtypes="floats", grad="through the norm (maxnorm / (norm + 1e-7))",
           out="exact"),
    OpInfo("histogram", histogram, dtypes="floats", grad="none"),
    OpInfo("histogramdd", histogramdd, method=False, dtypes="float32/64", grad="none"),
)
OPS = with_inplace(OPS, ("deg2rad", "rad2deg", "copysign", "heaviside", "ldexp", "nextafter",
                         "renorm"))
