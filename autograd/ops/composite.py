"""Pointwise and statistical composites: ``std_mean var_mean isclose allclose nan_to_num lerp
addcmul addcdiv xlogy logaddexp isin``, and the activations ``prelu hardshrink`` (also
``nn.functional``'s).

Every op here is written over other public ops (``where``, ``abs``, ``log1p``, ``add_``, ...),
so it has no kernels and no derivative rule of its own: both backends run it, and its gradient
(to any order) comes through its parts. The exceptions are one node each, as PyTorch records
them: ``std_mean`` and ``var_mean`` (two outputs: ``StdMeanBackward0``, ``VarMeanBackward0``,
reduction.py, so a hook on the node sees both gradients at once), ``lerp``
(``LerpBackward0`` for a number weight, ``LerpBackward1`` for a tensor, here), ``addcmul`` and
``addcdiv`` (``AddcmulBackward0``, ``AddcdivBackward0``, in place too), ``xlogy``,
``logaddexp``, ``prelu`` and ``hardshrink``. Where the naive formula would give a NaN
gradient at a point PyTorch differentiates (``xlogy`` at ``x = 0``), the operand is made safe
with ``where`` before the singular function is applied, not after.
"""

from __future__ import annotations

import builtins
import math
import numbers

import numpy as np

from ...runtime import dtype as dtypes
from ...runtime.dtype import get_default_dtype, result_type
from ..checks import (kernel_not_implemented, operand_on_device, scalar_type_name, tensor_arg,
                      type_name)
from ..dispatch import Primitive, apply, apply_inplace, elementwise_jvp, meta, opmath
from ..registry import OpInfo, check_exact_out, with_inplace
from ..tensor import Tensor
from .creation import full, ones_like
from .elementwise import (_result, add, broadcast_shapes, check_cast, check_out_dtype, eq, exp,
                          isnan, le, log, mul, python_number, sub, where)
from .pointwise import abs, isfinite, log1p, logical_and
from .reduction import StdMeanBackward0, VarMeanBackward0, _var_args, std, var

# -- helpers shared by the family (and by linalg_ext's in-place products) ---------------------


def _is_float(dt) -> bool:
    return dt.is_floating_point or dt.is_complex


def write_result(self: Tensor, result: Tensor, op: str) -> Tensor:
    """The in-place form of an out-of-place composite: ``result`` (computed from ``self``)
    written into ``self``. As PyTorch's in-place ops, the result must have ``self``'s shape
    (no broadcasting of ``self``) and a dtype category ``self`` can hold (no float into int)."""
    if tuple(result.shape) != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                           f"broadcast shape {list(result.shape)}")
    # (complex into real is refused too: copy_ would drop the imaginary part)
    check_cast(result.dtype, self.dtype)
    return self.copy_(result)


def float_arg(value, op: str, name: str, pos: int | None = None):
    """``value`` as a ``float`` argument of PyTorch's parser takes it: a real number (a NumPy
    one as the Python number it holds) or a 0-d tensor's value (a complex one with an
    imaginary part is PyTorch's RuntimeError); anything else is its TypeError naming ``op``
    and the argument, where NumPy would fail on it deep inside."""
    if isinstance(value, Tensor) and value.ndim == 0:
        return float(value)
    if isinstance(value, (numbers.Real, np.bool_)):
        return python_number(value)
    where = "" if pos is None else f" (position {pos})"
    raise TypeError(f"{op}(): argument '{name}'{where} must be float, not {type_name(value)}")


def check_broadcast(*operands) -> None:
    """PyTorch's error for tensor operands whose shapes don't broadcast. The ops here reach
    their nodes without binary_operands' check, where the kernels would raise NumPy's
    ValueError instead; equal shapes (the common case) cost a comparison each."""
    shapes = [t.shape for t in operands if isinstance(t, Tensor)]
    if any(s != shapes[0] for s in shapes[1:]):
        broadcast_shapes(*shapes)


def _float_operands(input, other, op: str) -> tuple:
    """(input, other) as tensors of one real floating dtype (integers promote to the default
    float dtype), on the tensor operand's device; one of them may be a Python number."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{op}(): expected at least one Tensor argument, got "
                        f"{type(input).__name__} and {type(other).__name__}")
    dt = result_type(input, other)
    like = input if isinstance(input, Tensor) else other
    if dt.is_complex:  # (none of these has a complex kernel in PyTorch)
        raise kernel_not_implemented(f"{op}_{like.device.type}", dt)
    if not _is_float(dt):
        dt = get_default_dtype()

    def cast(v):
        if isinstance(v, Tensor):
            return v if v.dtype is dt else v.to(dt)
        if not isinstance(v, numbers.Number):
            raise TypeError(f"{op}(): expected a Tensor or a number, got {type(v).__name__}")
        return full((), v, dtype=dt, device=like.device)

    check_broadcast(input, other)
    return cast(input), cast(other)


# -- statistics -----------------------------------------------------------------------------------

def _with_mean(op, input: Tensor, dim, unbiased, keepdim: bool, correction) -> tuple:
    """(statistic, mean) as one two-output node ``op``, as PyTorch records var_mean (for
    complex input: the real statistic of ``var``/``std`` and the complex mean)."""
    dims, keepdim, n, divisor = _var_args(input, dim, unbiased, keepdim, correction,
                                          op.op_name)
    if input.dtype.is_complex:
        stat = var if op is VarMeanBackward0 else std
        return (stat(input, dim, unbiased, keepdim, correction=correction),
                input.mean(dims, keepdim))
    return apply(op, (input,), dims, keepdim, n, divisor)


def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None) -> tuple:
    """The standard deviation and the mean over ``dim`` (all dims by default), as the tuple
    ``(std, mean)``; ``correction`` (default 1) and ``unbiased`` as in :func:`std`.

    Example:
        >>> tg.std_mean(tg.tensor([1., 2., 3.]))
        (tensor(1.), tensor(2.))
    """
    return _with_mean(StdMeanBackward0, input, dim, unbiased, keepdim, correction)


def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None) -> tuple:
    """The variance and the mean over ``dim`` (all dims by default), as the tuple
    ``(var, mean)``; ``correction`` (default 1) and ``unbiased`` as in :func:`var`."""
    return _with_mean(VarMeanBackward0, input, dim, unbiased, keepdim, correction)


# -- closeness --------------------------------------------------------------------------------------

def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """A bool tensor: True where ``|input - other| <= atol + rtol * |other|`` (broadcasting),
    or where the two are equal (infinities included); NaNs are equal only with
    ``equal_nan=True``. Both tensors must have the same dtype.

    Example:
        >>> tg.isclose(tg.tensor([1., 2.]), tg.tensor([1. + 1e-6, 2.1]))
        tensor([ True, False])
    """
    a = tensor_arg(input, "isclose")
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    b = other
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{scalar_type_name(a.dtype)} did not match "
                           f"{scalar_type_name(b.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    a, b = a.detach(), b.detach()
    close = eq(a, b)
    if equal_nan and a.dtype.is_floating_point:
        close = close | logical_and(isnan(a), isnan(b))
    if rtol == 0 and atol == 0:  # the test degenerates to equality
        return close
    if a.dtype is dtypes.bool:
        a, b = a.to(get_default_dtype()), b.to(get_default_dtype())
    allowed = add(abs(mul(b, rtol)), atol)
    with np.errstate(invalid="ignore"):  # (inf - inf is NaN, kept out below, silently)
        actual = abs(sub(a, b))
    # the finiteness test keeps inf - inf (NaN) and inf vs a finite value out
    return close | logical_and(isfinite(actual), actual <= allowed)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether :func:`isclose` holds for every element (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input: Tensor, other: Tensor) -> bool:
    """``True`` if two tensors have the same size and elements, ``False`` otherwise (NaN is
    not equal to itself; dtypes promote as for ``==``)."""
    for pos, (name, t) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"equal(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool((input == other).all().item())


# -- nan_to_num ---------------------------------------------------------------------------------

def _finfo(dt) -> tuple:
    """(largest, lowest) finite values of floating dtype ``dt``."""
    if dt is dtypes.bfloat16:  # (NumPy has no bfloat16; its storage dtype is uint16)
        big = 3.3895313892515355e38
    else:
        import numpy as np
        big = float(np.finfo(dt.np).max)
    return big, -big


def _nan_to_num_args(op: str, *values) -> tuple:
    """nan_to_num's ``nan``, ``posinf`` and ``neginf`` checked as PyTorch's parser does (None
    is the default): a string would reach NumPy's ``where``."""
    return tuple(v if v is None or type(v) is float else float_arg(v, op, name)
                 for v, name in zip(values, ("nan", "posinf", "neginf")))


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None, *, out=None) -> Tensor:
    """Replaces NaN with ``nan``, +inf with ``posinf`` and -inf with ``neginf`` (by default
    the largest and lowest finite values of the dtype). Integer tensors come back as copies.
    The gradient passes only where the element was finite.

    Example:
        >>> tg.nan_to_num(tg.tensor([float('nan'), float('inf'), 1.]), posinf=9.)
        tensor([0., 9., 1.])
    """
    x = tensor_arg(input, "nan_to_num")
    nan, posinf, neginf = _nan_to_num_args("nan_to_num", nan, posinf, neginf)
    if isinstance(out, Tensor) and out.dtype is not x.dtype:  # (PyTorch's: no cast)
        raise RuntimeError(f"nan_to_num: dtype of out: {scalar_type_name(out.dtype)} should be "
                           f"same as input: {scalar_type_name(x.dtype)}")
    if x.dtype.is_complex:  # (each part on its own, as PyTorch's)
        from .complex_parts import complex as _complex, imag, real
        r = _complex(nan_to_num(real(x), nan, posinf, neginf),
                     nan_to_num(imag(x), nan, posinf, neginf))
    elif not x.dtype.is_floating_point:
        r = x.clone()
    else:
        big, low = _finfo(x.dtype)
        r = apply(NanToNumBackward0, (x,), 0.0 if nan is None else nan,
                  big if posinf is None else posinf, low if neginf is None else neginf)
    return _result(r, out, "nan_to_num")


class NanToNumBackward0(Primitive):
    """nan_to_num of a real floating x: NaN, +inf and -inf replaced by the numbers given, one
    node saving x (PyTorch's): the gradient passes where x is finite."""

    __slots__ = ()
    op_name = "nan_to_num"
    save_inputs = (0,)
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, x, nan, posinf, neginf):
        r = k.where(k.ne(x, x), nan, x)
        r = k.where(k.eq(x, math.inf), posinf, r)
        return k.where(k.eq(x, -math.inf), neginf, r)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, = saved
        return k.where(k.lt(k.unary("abs", x), math.inf), g, 0.0)


def nan_to_num_(self: Tensor, nan: float = 0.0, posinf: float | None = None,
                neginf: float | None = None) -> Tensor:
    """In-place :func:`nan_to_num`."""
    nan, posinf, neginf = _nan_to_num_args("nan_to_num_", nan, posinf, neginf)
    return write_result(self, nan_to_num(self, nan, posinf, neginf), "nan_to_num_")


# -- lerp, addcmul, addcdiv ---------------------------------------------------------------------

_SHORT_NAMES = {"float32": "float", "float64": "double", "float16": "half", "int64": "long",
                "int32": "int", "int16": "short"}


def _same_dtype(x: Tensor, t, name: str) -> None:
    if isinstance(t, Tensor) and t.dtype is not x.dtype:
        a, b = (_SHORT_NAMES.get(d.name, d.name) for d in (x.dtype, t.dtype))
        raise RuntimeError(f"expected dtype {a} for `{name}` but got dtype {b}")


def conj_rule(vjp):
    """The complex rule (``complex_vjp``) of an op holomorphic in its inputs, from its
    ``vjp`` (J^T g): conj(J^T conj(g)) = J^H g, as dispatch does for the ops on its list
    (Note [Complex autograd], dispatch.py)."""
    def conj(k, a):
        return a if a is None or not meta(a)[1].is_complex else k.conj(a)

    def rule(ctx, k, saved, g):
        out = vjp(ctx, k, saved, conj(k, g))
        return tuple(conj(k, o) for o in out) if type(out) is tuple else conj(k, out)
    return staticmethod(rule)


def _one_minus(k, w):
    return k.add(k.neg(w), 1)  # (1 - w: the contract subtracts scalars on the right only)


class LerpBackward0(Primitive):
    """lerp with a number ``weight``: ``input + w (end - input)`` for ``|w| < 0.5``, else
    ``end - (end - input) (1 - w)`` (PyTorch's two formulas, exact at ``w = 1``); the
    gradients are ``(1 - w) g`` and ``w g``."""

    __slots__ = ()
    op_name = "lerp"
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, x, e, w):
        ctx.weight = w
        diff = k.sub(e, x)
        if builtins.abs(w) < 0.5:
            return k.add(x, k.mul(diff, w))
        return k.sub(e, k.mul(diff, 1 - w))

    @staticmethod
    def vjp(ctx, k, saved, g):
        need_x, need_e = ctx.needs_input_grad
        w = ctx.weight
        return k.mul(g, 1 - w) if need_x else None, k.mul(g, w) if need_e else None

    complex_vjp = conj_rule(vjp)
    complex_jvp = jvp  # (holomorphic in x, end and weight: f'(z) t, the real rule's terms)


class LerpBackward1(Primitive):
    """lerp with a tensor ``weight`` (the formula chosen per element); the gradients are
    ``(1 - w) g``, ``w g`` and ``(end - input) g``."""

    __slots__ = ()
    op_name = "lerp"
    broadcasts = True
    save_inputs, save_when = (0, 1, 2), (2, 2, None)
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, x, e, w):
        diff = k.sub(e, x)
        low = k.lt(k.unary("abs", w), 0.5)
        return k.where(low, k.add(x, k.mul(w, diff)), k.sub(e, k.mul(diff, _one_minus(k, w))))

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, e, w = saved
        need_x, need_e, need_w = ctx.needs_input_grad
        return (k.mul(g, _one_minus(k, w)) if need_x else None,
                k.mul(g, w) if need_e else None,
                k.mul(g, k.sub(e, x)) if need_w else None)

    complex_vjp = conj_rule(vjp)
    complex_jvp = jvp  # (holomorphic in x, end and weight: f'(z) t, the real rule's terms)


def _lerp_operands(input, end, weight, op: str) -> tuple:
    """(input, end, weight) checked as PyTorch's lerp does, on input's device."""
    x, e = tensor_arg(input, op), tensor_arg(end, op, "end")
    if not _is_float(x.dtype):
        raise kernel_not_implemented("lerp", x.dtype)
    _same_dtype(x, e, "end")
    if (isinstance(weight, Tensor) and weight.ndim == 0 and weight.dtype is not x.dtype
            and _is_float(weight.dtype)):  # (PyTorch's: a 0-d weight is cast, as a number)
        weight = weight.to(x.dtype)
    _same_dtype(x, weight, "weight")
    e = operand_on_device(x, e, op)
    if isinstance(weight, Tensor):
        return x, e, operand_on_device(x, weight, op)
    if not isinstance(weight, numbers.Number):
        raise TypeError(f"{op}(): argument 'weight' must be Tensor or Number, not "
                        f"{type(weight).__name__}")
    return x, e, weight


def _lerp_apply(run, x: Tensor, e: Tensor, weight):
    """``run(Op, inputs, *params)``: one LerpBackward0 or LerpBackward1 node."""
    if isinstance(weight, Tensor):
        return run(LerpBackward1, (x, e, weight))
    return run(LerpBackward0, (x, e), weight)


def lerp(input: Tensor, end: Tensor, weight: Tensor | float, *, out=None) -> Tensor:
    """Does a linear interpolation of two tensors ``start`` (given by ``input``) and ``end``
    based on a scalar or tensor ``weight``: ``input + weight * (end - input)``, broadcasting;
    a tensor ``weight`` has the dtype of ``input`` and ``end`` (a 0-d one is cast to it). For ``|weight| >= 0.5`` it
    is evaluated as ``end - (end - input) * (1 - weight)``, as PyTorch does, so that
    ``weight = 1`` gives ``end`` exactly. One node: ``LerpBackward0`` (a number weight) or
    ``LerpBackward1``.

    Example:
        >>> tg.lerp(tg.tensor([0., 10.]), tg.tensor([10., 20.]), 0.5)
        tensor([ 5., 15.])
    """
    x, e, w = _lerp_operands(input, end, weight, "lerp")
    check_broadcast(x, e, w)  # (lerp_ checks its output's broadcast shape, which covers it)
    if out is not None and isinstance(w, Tensor):
        check_out_dtype(out, x.dtype)  # (PyTorch's: cast for a number weight, not a tensor's)
    return _result(_lerp_apply(apply, x, e, w), out, "lerp")


def lerp_(self: Tensor, end: Tensor, weight) -> Tensor:
    """In-place :func:`lerp`."""
    x, e, w = _lerp_operands(self, end, weight, "lerp_")
    shape = broadcast_shapes(x.shape, e.shape, w.shape if isinstance(w, Tensor) else ())
    if shape != tuple(x.shape):
        raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the "
                           f"broadcast shape {list(shape)}")
    return _lerp_apply(lambda op, inputs, *p: apply_inplace(op, inputs[0], inputs[1:], *p),
                       x, e, w)


def _addc_check(op: str, t1, t2) -> None:
    tensor_arg(t1, op, "tensor1")
    tensor_arg(t2, op, "tensor2")
    if op.startswith("addcdiv") and not _is_float(t1.dtype) and not _is_float(t2.dtype):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
            ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) "
            "for float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")


def _scaled(k, a, value):
    return a if value == 1 else k.mul(a, value)


class AddcmulBackward0(Primitive):
    """input + value * tensor1 * tensor2 (broadcasting), one node saving each factor only when
    the other's gradient needs it (PyTorch's):  d input = g,  d tensor1 = g (value
    tensor2),  d tensor2 = g (value tensor1). float16/bfloat16 compute in float32 and round
    once, as PyTorch's kernel."""

    __slots__ = ()
    op_name = "addcmul"
    save_inputs, save_when = (1, 2), (2, 1)
    saved_names = ("tensor1", "tensor2")
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)
    _saved_value = property(lambda n: n.value)  # (as PyTorch's node shows it)
    combine = "mul"  # (the kernel contract's op between the tensors: addcdiv's "div")

    @classmethod
    def forward(cls, ctx, k, x, t1, t2, value):
        ctx.value = value
        (x, t1, t2), back = opmath(k, x, t1, t2)
        return back(k.add(x, getattr(k, cls.combine)(_scaled(k, t1, value), t2)))

    @staticmethod
    def vjp(ctx, k, saved, g):
        t1, t2 = saved
        need_x, need_1, need_2 = ctx.needs_input_grad
        v = ctx.value
        return (g if need_x else None, k.mul(g, _scaled(k, t2, v)) if need_1 else None,
                k.mul(g, _scaled(k, t1, v)) if need_2 else None)

    complex_vjp = conj_rule(vjp)
    complex_jvp = jvp  # (holomorphic in every input: the real rule's terms)


class AddcdivBackward0(AddcmulBackward0):
    """input + value * tensor1 / tensor2 (broadcasting), one node saving both (PyTorch's):
    d input = g,  d tensor1 = g (value / tensor2),  d tensor2 = -g (value tensor1 /
    tensor2^2)."""

    __slots__ = ()
    op_name = "addcdiv"
    save_when = (None, 1)  # (tensor2's gradient reads both)
    combine = "div"

    @staticmethod
    def vjp(ctx, k, saved, g):
        t1, t2 = saved
        need_x, need_1, need_2 = ctx.needs_input_grad
        v = ctx.value
        g2 = None
        if need_2:
            g2 = k.neg(k.mul(g, k.div(_scaled(k, t1, v), k.mul(t2, t2))))
        return (g if need_x else None,
                k.mul(g, k.div(k.full((), v, *meta(t2)[::-1]), t2)) if need_1 else None, g2)

    complex_vjp = conj_rule(vjp)
    complex_jvp = AddcmulBackward0.jvp


_VALUE_TYPES = {"float64": "double", "int64": "int64_t", "int32": "int", "int16": "int16_t",
                "int8": "int8_t", "uint8": "uint8_t"}


def _addc_args(op: type, name: str, x, t1, t2, value) -> tuple:
    """(dtype, value): the promoted dtype of the three operands and ``value`` as a number of
    it (truncated for integers, as PyTorch converts the Scalar), or PyTorch's errors."""
    tensor_arg(x, name)
    _addc_check(name, t1, t2)
    dt = result_type(x, t1, t2)
    if dt is dtypes.bool and op is AddcmulBackward0:
        raise kernel_not_implemented(f"addcmul_{x.device.type}_out", dt)
    if isinstance(value, Tensor):
        value = value.item()
    if not isinstance(value, numbers.Number):
        raise TypeError(f"{name}(): argument 'value' must be Number, not "
                        f"{type(value).__name__}")
    if isinstance(value, complex) and not dt.is_complex:
        raise RuntimeError(f"value cannot be converted to type "
                           f"{_VALUE_TYPES.get(dt.name, 'float')} without overflow")
    if not _is_float(dt):
        value = int(value)
    return dt, value


def _addc(op: type):
    name = op.op_name

    def fn(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out=None) -> Tensor:
        dt, value = _addc_args(op, name, input, tensor1, tensor2, value)
        # (here, not in _addc_args: the in-place form's check of its broadcast shape covers
        # it, so the optimisers' addcmul_ steps pay nothing)
        check_broadcast(input, tensor1, tensor2)
        operands = tuple(t if t.dtype is dt else t.to(dt) for t in (input, tensor1, tensor2))
        return _result(apply(op, operands, value), out, name)

    def inplace(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
        dt, value = _addc_args(op, name + "_", self, tensor1, tensor2, value)
        check_cast(dt, self.dtype)
        shape = broadcast_shapes(tuple(self.shape), tuple(tensor1.shape),
                                 tuple(tensor2.shape))
        if shape != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")
        # (computed in self's dtype: the node's operands share one dtype)
        t1, t2 = (t if t.dtype is self.dtype else t.to(self.dtype) for t in (tensor1, tensor2))
        return apply_inplace(op, self, (t1, t2), value if _is_float(self.dtype) else int(value))

    fn.__name__ = fn.__qualname__ = name
    inplace.__name__ = inplace.__qualname__ = name + "_"
    inplace.__doc__ = f"In-place :func:`{name}` (the optimisers' update step)."
    return fn, inplace


addcmul, addcmul_ = _addc(AddcmulBackward0)
addcmul.__doc__ = """``input + value * tensor1 * tensor2``, broadcasting and promoting (``value``
    truncated to an integer for integer tensors). One ``AddcmulBackward0`` node.

    Example:
        >>> tg.addcmul(tg.ones(2), tg.tensor([1., 2.]), tg.tensor([3., 4.]), value=0.5)
        tensor([2.5000, 5.0000])
    """


addcdiv, addcdiv_ = _addc(AddcdivBackward0)
addcdiv.__doc__ = """``input + value * tensor1 / tensor2``, broadcasting and promoting (a true
    division: two integer tensors are refused, as in PyTorch). One ``AddcdivBackward0`` node.

    Example:
        >>> tg.addcdiv(tg.ones(2), tg.tensor([1., 2.]), tg.tensor([4., 4.]), value=2)
        tensor([1.5000, 2.0000])
    """


# -- xlogy, logaddexp ---------------------------------------------------------------------------

def xlogy(input, other, *, out=None) -> Tensor:
    """``input * log(other)``, except 0 where ``input`` is 0 (unless ``other`` is NaN);
    either argument may be a number, and integers promote to the default float dtype. The
    gradient for ``input`` is ``log(other)``, 0 where ``input`` is 0 and ``other <= 0``; for
    ``other`` it is ``input / other``, 0 where ``input`` is 0 (PyTorch: NaN at 0 / 0).

    Example:
        >>> tg.xlogy(tg.tensor([0., 2.]), tg.tensor([0., 1.]))
        tensor([0., 0.])
    """
    x, y = _float_operands(input, other, "xlogy")
    # Where x = 0 and log(y) is not finite (y <= 0), log(1) = 0 is used instead: the product
    # is then 0, and so is every gradient through it, where 0 * log(y) would be NaN in value
    # and in gradient. (A NaN y fails y <= 0 and propagates.)
    return _result(apply(XlogyBackward0, (x, y)), out, "xlogy")


class XlogyBackward0(Primitive):
    """x log(y), 0 where x = 0 and y <= 0 (log(1) read there: the product and every gradient
    through it are 0, where 0 * log(y) would be NaN), as one node saving x and y (PyTorch's;
    the composite kept 1.6 times its bytes):  dx = g log(y), 0 there;  dy = g x / y, 0 where
    x = 0 (PyTorch's: NaN at 0 / 0). A NaN y fails y <= 0 and propagates. The operands
    broadcast."""

    __slots__ = ()
    op_name = "xlogy"
    save_inputs = (0, 1)
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def _log_y(k, x, y):
        return k.log(k.where(k.eq(x, 0.0), k.where(k.le(y, 0.0), 1.0, y), y))

    @staticmethod
    def forward(ctx, k, x, y):
        # 0 wherever x = 0 and y is no NaN, +0.0 even for x = -0.0 or y = inf, as PyTorch's
        # (the vjp keeps the derivative log(y) at x = 0 for y > 0)
        zero = k.binary("bitwise_and", k.eq(x, 0.0), k.eq(y, y))
        return k.where(zero, 0.0, k.mul(x, k.log(k.where(zero, 1.0, y))))

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, y = saved
        need_x, need_y = ctx.needs_input_grad
        gx = k.mul(g, XlogyBackward0._log_y(k, x, y)) if need_x else None
        gy = None
        if need_y:
            zero = k.eq(x, 0.0)
            gy = k.where(zero, 0.0, k.div(k.mul(g, x), k.where(zero, 1.0, y)))
        return gx, gy


def logaddexp(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``log(exp(input) + exp(other))``, computed as ``max + log1p(exp(-|input - other|))``
    so that it neither overflows nor underflows; equal infinities give themselves.

    Example:
        >>> tg.logaddexp(tg.tensor([0., 1000.]), tg.tensor([0., 1000.]))
        tensor([   0.6931, 1000.6931])
    """
    a, b = tensor_arg(input, "logaddexp"), tensor_arg(other, "logaddexp", "other")
    check_broadcast(a, b)
    dt = result_type(a, b)
    if not _is_float(dt):
        raise kernel_not_implemented("logaddexp", dt)
    a, b = (t if t.dtype is dt else t.to(dt) for t in (a, b))
    if dt.is_complex:  # (no order: the operand with the larger real part factors out)
        m = where(a.real >= b.real, a, b)
        return _result(add(m, log1p(exp(sub(add(a, b), add(m, m))))), out, "logaddexp")
    return _result(apply(LogaddexpBackward0, (a, b)), out, "logaddexp")


def logaddexp2(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``log2(2^input + 2^other)`` without overflow (:func:`logaddexp` in base 2): one
    ``Logaddexp2Backward0`` node over the operands promoted together (real floating dtypes,
    as PyTorch's kernel)."""
    a, b = tensor_arg(input, "logaddexp2"), tensor_arg(other, "logaddexp2", "other")
    check_broadcast(a, b)
    dt = result_type(a, b)
    if not dt.is_floating_point:
        raise kernel_not_implemented("logaddexp2", dt)
    a, b = (t if t.dtype is dt else t.to(dt) for t in (a, b))
    return _result(apply(Logaddexp2Backward0, (a, b)), out, "logaddexp2")


class LogaddexpBackward0(Primitive):
    """y = log(exp(a) + exp(b)) = max(a, b) + log1p(exp(-|a - b|)), equal infinities their
    own result, as one node saving a and b (PyTorch's; the composite was five nodes saving
    2.1 times its bytes):  da = g / (1 + exp(b - a)),  db = g / (1 + exp(a - b)).
    float16/bfloat16 compute in float32 and round once; the operands broadcast."""

    __slots__ = ()
    op_name = "logaddexp"
    save_inputs = (0, 1)
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)

    # the base's exponential, and log's factor (Logaddexp2Backward0's base 2)
    exp = staticmethod(lambda k, a: k.exp(a))
    log_base = 1.0

    @classmethod
    def forward(cls, ctx, k, a, b):
        (a, b), back = opmath(k, a, b)
        tail = k.unary("log1p", cls.exp(k, k.neg(k.unary("abs", k.sub(a, b)))))
        r = k.add(k.maximum(a, b), tail if cls.log_base == 1.0 else k.div(tail, cls.log_base))
        # inf - inf is NaN in the formula: equal infinities are their own result
        return back(k.where(k.eq(a, b), k.where(k.eq(k.unary("abs", a), math.inf), a, r), r))

    @classmethod
    def vjp(cls, ctx, k, saved, g):
        a, b = saved
        need_a, need_b = ctx.needs_input_grad
        ga = k.div(g, k.add(cls.exp(k, k.sub(b, a)), 1.0)) if need_a else None
        gb = k.div(g, k.add(cls.exp(k, k.sub(a, b)), 1.0)) if need_b else None
        return ga, gb


class Logaddexp2Backward0(LogaddexpBackward0):
    """y = log2(2^a + 2^b) = max(a, b) + log1p(2^-|a - b|) / ln 2, as LogaddexpBackward0:
    da = g / (1 + 2^(b - a)),  db = g / (1 + 2^(a - b))."""

    __slots__ = ()
    op_name = "logaddexp2"
    exp = staticmethod(lambda k, a: k.unary("exp2", a))
    log_base = math.log(2)


# -- isin ----------------------------------------------------------------------------------------

# isin compares each element with every test element; elements go through in chunks so that
# one chunk's comparison matrix holds at most this many booleans.
_ISIN_CHUNK = 1 << 22


def isreal(input: Tensor) -> Tensor:
    """True where an element is real: every element of a real tensor, a complex one where
    its imaginary part is zero."""
    x = tensor_arg(input, "isreal")
    if not x.dtype.is_complex:
        return ones_like(x, dtype=dtypes.bool)  # (x's layout, as PyTorch's)
    return x.imag == 0


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False,
         out=None) -> Tensor:
    """True where an element of ``elements`` equals some element of ``test_elements`` (either,
    not both, may be a number); ``invert`` negates. Values compare after type promotion (NaN
    equals nothing); the result is a bool tensor of ``elements``' shape, never
    differentiable. ``assume_unique`` is accepted and changes nothing (the comparison does
    not need it). O(len(elements) * len(test_elements)) comparisons, in bounded chunks."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}), but "
                        f"expected at least one Tensor")
    for v in (elements, test_elements):
        if not isinstance(v, (Tensor, numbers.Number)):
            raise TypeError(f"isin() received an invalid combination of arguments - got "
                            f"({type(elements).__name__}, {type(test_elements).__name__}), "
                            f"but expected Tensors or a Tensor and a number")
    like = elements if isinstance(elements, Tensor) else test_elements
    e = elements if isinstance(elements, Tensor) else full((), elements, device=like.device)
    t = test_elements if isinstance(test_elements, Tensor) else \
        full((), test_elements, device=like.device)
    for x in (e, t):
        if x.dtype.is_complex or x.dtype is dtypes.bool:
            raise RuntimeError(f"Unsupported input type encountered for isin(): "
                               f"{scalar_type_name(x.dtype)}")
    e, t = e.detach(), t.detach()
    dt = result_type(e, t)
    flat_e, flat_t = e.reshape(-1).to(dt), t.reshape(-1).to(dt)
    n, m = flat_e.shape[0], flat_t.shape[0]
    step = builtins.max(1, _ISIN_CHUNK // builtins.max(m, 1))
    if m == 0:
        found = full((n,), False, dtype=dtypes.bool, device=e.device)
    else:
        from .shape import cat
        parts = [eq(flat_e[i:i + step].unsqueeze(1), flat_t.unsqueeze(0)).any(1)
                 for i in range(0, n, step)]
        found = parts[0] if len(parts) == 1 else cat(parts) if parts else \
            full((0,), False, dtype=dtypes.bool, device=e.device)
    found = found.reshape(tuple(e.shape))
    if out is not None:
        check_exact_out(out, dtypes.bool)  # (PyTorch's isin.out is structured: no cast)
    return _result(~found if invert else found, out, "isin")


# -- activations PyTorch also has as Tensor methods (nn.functional re-exports them) -------------

def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """PReLU(x) = x where x > 0, else weight * x; ``weight`` has one value or one per channel
    (dimension 1 of ``input``)."""
    tensor_arg(input, "prelu")
    tensor_arg(weight, "prelu", "weight")
    if input.dtype is not weight.dtype:  # (PyTorch's: no promotion, an int input refused)
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{scalar_type_name(input.dtype)} and {scalar_type_name(weight.dtype)}")
    if not input.dtype.is_floating_point:  # (complex too: x > 0 has no meaning)
        raise kernel_not_implemented(f"prelu_{input.device.type}", input.dtype)
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim}")
    n = weight.numel()
    if n != 1:
        if input.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim >= 2 else 0
        if channels != n:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. "
                               f"Found parameter numbers = {n} and channel size = {channels}.")
        weight = weight.reshape((1, n) + (1,) * (input.ndim - 2))
    elif input.ndim == 0:  # (a 0-d input keeps its shape, as PyTorch's)
        weight = weight.reshape(())
    return apply(PreluKernelBackward0, (input, weight))


class PreluKernelBackward0(Primitive):
    """x where x > 0, else w x (``w`` broadcast over the channels), as one node saving x and
    w (PyTorch's ``_prelu_kernel``; the composite saved a mask besides):  dx = g where x > 0,
    else w g;  dw = x g where x <= 0 (a NaN x too), summed back to w's shape by dispatch."""

    __slots__ = ()
    op_name = "_prelu_kernel"
    save_inputs = (0, 1)
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, x, w):
        return k.where(k.gt(x, 0.0), x, k.mul(x, w))

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, w = saved
        pos = k.gt(x, 0.0)
        need_x, need_w = ctx.needs_input_grad
        gx = k.where(pos, g, k.mul(g, w)) if need_x else None
        gw = k.where(pos, 0.0, k.mul(g, x)) if need_w else None
        return gx, gw


def hardshrink(input: Tensor, lambd: float = 0.5, *, out=None) -> Tensor:
    """Hardshrink(x) = x where |x| > lambd, else 0."""
    if not tensor_arg(input, "hardshrink").dtype.is_floating_point:
        raise kernel_not_implemented(f"hardshrink_{input.device.type}", input.dtype)
    if out is None:
        return apply(HardshrinkBackward0, (input,), float(lambd))
    check_out_dtype(out, input.dtype)  # (PyTorch's: no cast)
    return _result(apply(HardshrinkBackward0, (input,), float(lambd)), out, "hardshrink")


class HardshrinkBackward0(Primitive):
    """x outside [-lambd, lambd], else 0, as one node saving x (PyTorch's):  dx = g outside,
    0 inside. A NaN is NaN, with a zero gradient, as PyTorch's kernels test (-lambd <= x <=
    lambd forward, x < -lambd or x > lambd backward)."""

    __slots__ = ()
    op_name = "hardshrink"
    save_inputs = (0,)
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def _inside(k, x, a, lambd):
        return k.where(k.ge(x, -lambd), k.where(k.le(x, lambd), 0.0, a), a)

    @staticmethod
    def forward(ctx, k, x, lambd):
        ctx.lambd = lambd
        return HardshrinkBackward0._inside(k, x, x, lambd)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, = saved
        lambd = ctx.lambd
        return k.where(k.lt(x, -lambd), g, k.where(k.gt(x, lambd), g, 0.0))


# -- the table ---------------------------------------------------------------------------------

OPS = (
    OpInfo("std_mean", std_mean, method=False, dtypes="floats, complex", node=StdMeanBackward0,
           grad="std's for g_std + g_mean / n"),
    OpInfo("var_mean", var_mean, method=False, dtypes="floats, complex", node=VarMeanBackward0,
           grad="var's for g_var + g_mean / n"),
    OpInfo("isclose", isclose, dtypes="same dtype; bool result", grad="none"),
    OpInfo("allclose", allclose, dtypes="same dtype; Python bool", grad="none"),
    OpInfo("equal", equal, dtypes="promoted; Python bool", grad="none"),
    OpInfo("nan_to_num", nan_to_num, inplace=nan_to_num_, dtypes="all (integers: a copy)",
           grad="g where finite, else 0", node=NanToNumBackward0),
    OpInfo("lerp", lerp, inplace=lerp_, dtypes="floats; one dtype",
           grad="(1 - w) g, w g, (end - input) g", node=LerpBackward0),
    OpInfo("addcmul", addcmul, inplace=addcmul_, dtypes="promoted; not bool",
           node=AddcmulBackward0, grad="g, value g t2, value g t1", autocast="promote on cuda"),
    OpInfo("addcdiv", addcdiv, inplace=addcdiv_, dtypes="promoted; not two integer tensors",
           node=AddcdivBackward0, grad="g, value g / t2, -value g t1 / t2^2",
           autocast="promote on cuda"),
    OpInfo("xlogy", xlogy, dtypes="floats; integers promote", grad="g log(y), g x / y; 0 at x = 0, y <= 0"),
    OpInfo("isreal", isreal, dtypes="all; bool result", grad="none"),
    OpInfo("isin", isin, method=False, dtypes="promoted; bool result", grad="none"),
    OpInfo("logaddexp", logaddexp, dtypes="floats, complex",
           grad="g sigmoid(a - b), g sigmoid(b - a)"),
    OpInfo("logaddexp2", logaddexp2, dtypes="floats", node=Logaddexp2Backward0,
           grad="g 2^a / (2^a + 2^b), g 2^b / (2^a + 2^b)"),
    # (unguarded: tg.prelu is F.prelu is Tensor.prelu, and they check their own arguments)
    OpInfo("prelu", prelu, dtypes="floats", guard=False, autocast="lower",
           grad="g where x > 0, else weight g; weight: the sum of g x where x <= 0"),
    OpInfo("hardshrink", hardshrink, dtypes="floats", guard=False,
           grad="g where abs(x) > lambd, else 0"),
)
OPS = with_inplace(OPS, ("xlogy",))
