"""Elementwise ops: forwards on the backend, derivative rules beside them.

Binary ops promote their operands (runtime.dtype.result_type, PyTorch's rules) by recorded
casts, so every rule sees one dtype; a Python scalar operand stays a scalar (a ``...1``
primitive class, as PyTorch's Tensor-Scalar overloads are named, whose node shows the ``...0``
name users see in PyTorch, where ``x + 2`` wraps the number) and is never recorded. Broadcasting
is undone once, generically (``broadcasts = True``: dispatch sums each gradient back to its
input's shape), so the rules below are written for equal shapes. Each primitive's ``jvp`` (its
forward-mode rule, dispatch.py's Note [Forward AD]) is, for these elementwise ops, mostly the
``vjp`` itself (``elementwise_jvp``: their Jacobians are diagonal); a broadcast input's tangent
is expanded to the output's shape once, in dispatch.
"""

from __future__ import annotations

import cmath
import math
import numbers
import warnings

import numpy as np

from ...runtime.dtype import bool as _BOOL
from ...runtime.dtype import (float64 as _FLOAT64, from_numpy_dtype, get_default_dtype,
                              promote_types, result_type)
from ..checks import (check_ordered, kernel_not_implemented, operand_on_device,
                      scalar_type_name)
from ..dispatch import (Primitive, apply, apply_inplace, bilinear_jvp, check_inplace,
                        check_internal_overlap, elementwise_jvp, linear_jvp, meta,
                        refuse_out_dual, sum_to, zero_jvp, zeros)
from ..registry import OpInfo, export, user_stacklevel, with_inplace, with_jvp
from ..state import state
from ..tensor import Tensor
from .creation import checked_scalar, scalar_tensor, wrapped_scalar


_Number = numbers.Number


def broadcast_shapes(*shapes) -> tuple:
    """The shape the given shapes broadcast to, or the documented error."""
    out = []
    for shape in shapes:
        for i in range(1, len(shape) + 1):
            n = shape[-i]
            if i > len(out):
                out.insert(0, n)
            elif out[-i] == 1:
                out[-i] = n
            elif n != 1 and n != out[-i]:
                raise RuntimeError(f"The size of tensor a ({out[-i]}) must match the size of "
                                   f"tensor b ({n}) at non-singleton dimension "
                                   f"{max(len(s) for s in shapes) - i}")
    return tuple(out)


_PYTHON_NUMBERS = (float, int, bool, complex)


def python_number(x):
    """A NumPy scalar (``np.sqrt(d)`` is an ``np.float64``) or an instance of a subclass of a
    Python number as the Python number it holds. PyTorch takes both as it takes Python numbers,
    weakly typed (``x * np.float64(2)`` keeps a float32 ``x`` float32), where NumPy's kernels
    would promote to the scalar's own dtype (NEP 50) or, for a subclass, to float64."""
    if isinstance(x, np.generic):
        return x.item()
    for kind in _PYTHON_NUMBERS[::-1]:  # (bool before int: a bool is an int)
        if isinstance(x, kind):
            return kind(x)
    return x


_INT_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1


def check_int_operand(b: int) -> None:
    """PyTorch's range for a Python int operand: it is unpacked as an int64 or a uint64 (then
    cast to the op's dtype), so ``x + 2**64`` raises rather than wrapping silently."""
    if b > _UINT64_MAX:
        raise OverflowError("int too big to convert")
    if b < _INT_MIN:
        raise OverflowError("can't convert negative int to unsigned")


# The ops that take a number first, as PyTorch's ``torch.add(2, x)`` (``torch.maximum(2, x)``
# is refused): a set read only where the first operand is no Tensor, so no call pays for it
_SCALAR_FIRST = frozenset(["add", "sub", "mul", "div"])


def binary_operands(a, b, op: str, dtype=None):
    """(a, b) on one device with one dtype (``dtype``, or the promoted one); a Python number
    ``b`` stays a number, and so does ``a`` for the ops in ``_SCALAR_FIRST``, as a 0-d
    tensor."""
    # Fast paths (most calls): a float scalar with a floating tensor, or two tensors that
    # already agree; both leave the dtype as it is (result_type would say the same).
    if dtype is None and isinstance(a, Tensor):
        tb = type(b)
        if tb is float or (tb is int and _INT_MIN <= b <= _UINT64_MAX):
            if a._dtype.is_floating_point:
                return a, b
        elif isinstance(b, Tensor) and b._dtype is a._dtype and b._device is a._device:
            if a._data.shape != b._data.shape:
                broadcast_shapes(a._data.shape, b._data.shape)
            return a, b
    if not isinstance(a, Tensor):
        if op in _SCALAR_FIRST and isinstance(b, Tensor) and isinstance(a, (_Number, np.bool_)):
            # (here, off the fast paths: a number first is rare, and PyTorch's wrapped 0-d
            # tensor of the promoted dtype gives its dtype and value)
            a = python_number(a)
            a = scalar_tensor(a, dtype or result_type(b, a), b.device)
            return binary_operands(a, b, op, dtype)
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(a).__name__}")
    if isinstance(b, Tensor):
        b = operand_on_device(a, b, op)
        if a._device is not b._device:
            a = a.to(b._device)
        dt = dtype or result_type(a, b)
        if b._dtype is not dt:
            b = _promoted(b, dt)
    elif isinstance(b, (_Number, np.bool_)):  # (NumPy's bool is no Number)
        if type(b) not in _PYTHON_NUMBERS:
            b = python_number(b)
        elif type(b) is int:
            check_int_operand(b)
        dt = dtype or result_type(a, b)
        if not dt.is_floating_point:  # an int operand wraps into an integer dtype, as in
            b = wrapped_scalar(b, dt)  # PyTorch (uint8 + 300 adds 44): both backends alike
    elif isinstance(b, np.ndarray) and op in _OPERATOR_OPS:  # Note [NumPy array operands]
        b = numpy_operand(b, a, op)
        return binary_operands(a, b, op, numpy_result_type(a, b, op))
    else:
        raise TypeError(f"{op}(): argument 'other' must be Tensor or Number, not "
                        f"{type(b).__name__}")
    if a._dtype is not dt:
        a = _promoted(a, dt)
    if isinstance(b, Tensor) and a._data.shape != b._data.shape:
        broadcast_shapes(a._data.shape, b._data.shape)
    return a, b


# Note [NumPy array operands]
# ``x * np.array([1., 2.])`` works in PyTorch because its operators decline an array, NumPy then
# computes the op over ``np.asarray(x)`` and hands the result back through
# ``Tensor.__array_wrap__``: so NumPy's promotion decides the dtype (a float32 tensor times an
# int64 array is float64, and ``int / int`` is float64). Here the array becomes a tensor on
# ``x``'s device and the op runs as ours in that dtype, which gives the same values and dtype
# and keeps the graph (PyTorch refuses a tensor that requires grad there). A leading array
# (``a - x``) defers to the tensor's reflected operator through ``__array_priority__`` and so
# gives a tensor too, where PyTorch's refuses all but ``+`` and ``/``; ``x += a`` updates ``x``
# in place, where PyTorch's ``__iadd__`` declines and Python rebinds ``x`` to ``x + a``; and
# ``tg.add(x, a)`` works, where PyTorch's refuses (the ops without an operator, as
# ``tg.maximum``, refuse an array as PyTorch's do). The branches sit after the number branches
# (binary_operands, the in-place methods), so no other call pays for them.

_NUMPY_TRUE_DIVISION = frozenset(["div", "true_divide", "divide"])
# the ops behind Python's operators (the others, ``tg.maximum(x, a)``, refuse an array as
# PyTorch's do)
_OPERATOR_OPS = _NUMPY_TRUE_DIVISION | frozenset([
    "add", "sub", "mul", "floor_divide", "remainder", "pow", "eq", "ne", "lt", "le", "gt",
    "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift"])


def numpy_operand(b: np.ndarray, a: Tensor, op: str) -> Tensor:
    """The NumPy array operand ``b`` of op ``op`` as a tensor on ``a``'s device."""
    from .creation import tensor
    if b.dtype.hasobject or b.dtype.kind not in "biufc":
        raise TypeError(f"{op}(): can't convert np.ndarray of type {b.dtype} to a tensor; the "
                        f"only supported types are: float64, float32, float16, complex64, "
                        f"complex128, int64, int32, int16, int8, uint64, uint32, uint16, uint8, "
                        f"and bool.")
    return tensor(b, device=a.device)


def numpy_result_type(a: Tensor, b: Tensor, op: str):
    """The dtype NumPy computes ``op`` over ``a`` and an array operand ``b`` in."""
    if a._dtype.np.kind not in "biufc" or a._dtype.np.itemsize != a._dtype.itemsize:
        dt = promote_types(a._dtype, b._dtype)  # (bfloat16, float8: no NumPy type of their own)
    else:
        dt = from_numpy_dtype(np.promote_types(a._dtype.np, b._dtype.np))
    if op in _NUMPY_TRUE_DIVISION and not (dt.is_floating_point or dt.is_complex):
        return _FLOAT64  # (NumPy's true division of integers)
    return dt


def _promoted(t: Tensor, dt) -> Tensor:
    """``t`` in the promoted dtype ``dt``. PyTorch promotes inside the kernel and saves the
    tensor given, so an inference tensor stays one: its copy here is marked so, and saving it
    for backward is refused as saving ``t`` is."""
    c = t.to(dt)
    if t._inference:
        c._inference = True
    return c


def _float_type(a: Tensor, b) -> object:
    dt = result_type(a, b)
    return dt if (dt.is_floating_point or dt.is_complex) else get_default_dtype()


# -- add / sub ---------------------------------------------------------------------------------

class AddBackward0(Primitive):
    __slots__ = ("alpha",)  # (Note [Node state in slots], node.py)
    op_name = "add"
    writes_out = True
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, a, b, alpha, out=None):
        ctx.alpha = alpha
        return k.add(a, b if alpha == 1 else k.mul(b, alpha), out=out)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return g, (g if ctx.alpha == 1 else k.mul(g, ctx.alpha))


class AddBackward1(Primitive):
    __slots__ = ()
    op_name = "add"
    writes_out = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, a, s, out=None):
        return k.add(a, s, out=out)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return g


class SubBackward0(AddBackward0):
    __slots__ = ()
    op_name = "sub"
    writes_out = True

    @staticmethod
    def forward(ctx, k, a, b, alpha, out=None):
        ctx.alpha = alpha
        return k.sub(a, b if alpha == 1 else k.mul(b, alpha), out=out)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return g, (k.neg(g) if ctx.alpha == 1 else k.mul(g, -ctx.alpha))


class SubBackward1(AddBackward1):
    __slots__ = ()
    op_name = "sub"
    writes_out = True

    @staticmethod
    def forward(ctx, k, a, s, out=None):
        return k.sub(a, s, out=out)


def _dense_sparse(name: str, input, other, **kwargs):
    """Op ``name`` of a dense ``input`` and a sparse ``other``, whose array the dense kernels
    could not read, by the sparse layout's rules (autograd/sparse_ops.py, Note [Dense first,
    sparse second]); any other failure is raised again."""
    from ..sparse_ops import dense_sparse
    routed = dense_sparse(name, (input, other))
    if routed is None:
        raise
    return routed(input, other, **kwargs)


def add(input, other, *, alpha=1, out=None) -> Tensor:
    """``input + alpha * other``, broadcasting."""
    try:  # (free until it raises: Python 3.11's zero-cost try)
        if alpha == 1 and out is None and isinstance(input, Tensor) \
                and input._dtype.is_floating_point:  # Note [Scalar operand fast path]
            if type(other) is float:
                return apply(AddBackward1, (input,), other)
            # (an int alpha only: the node keeps it, and the general path would convert another
            # type's, np.float64(1) to 1.0, before ``grad_fn._saved_alpha`` shows it)
            if type(alpha) is int and isinstance(other, Tensor) and other._dtype is input._dtype \
                    and other._device is input._device:
                if other._data.shape != input._data.shape:
                    broadcast_shapes(input._data.shape, other._data.shape)
                return apply(AddBackward0, (input, other), alpha)
        a, b = binary_operands(input, other, "add")
        if alpha.__class__ is not int:  # (the default 1 needs no check)
            alpha = _checked_alpha(alpha, a._dtype)
        if a._dtype is _BOOL:  # bool + bool is a logical or, alpha a truth value (PyTorch)
            alpha = alpha is not False and alpha != 0
            if not isinstance(b, Tensor):
                b = b and alpha
        elif not isinstance(b, Tensor) and alpha != 1:
            b = wrapped_scalar(b * alpha, a._dtype)
        if isinstance(b, Tensor):
            if alpha != 1:  # (an int alpha wraps into an integer dtype, as a scalar operand)
                alpha = wrapped_scalar(alpha, a._dtype)
            return _result(apply(AddBackward0, (a, b), alpha), out, "add")
        return _result(apply(AddBackward1, (a,), b), out, "add")
    except NotImplementedError:  # a sparse other: Note [Dense first, sparse second]
        return _dense_sparse("add", input, other, alpha=alpha, out=out)


def sub(input, other, *, alpha=1, out=None) -> Tensor:
    """``input - alpha * other``, broadcasting."""
    try:  # (free until it raises: Python 3.11's zero-cost try)
        if type(alpha) is int and alpha == 1 and out is None and isinstance(input, Tensor) \
                and isinstance(other, Tensor) and input._dtype.is_floating_point \
                and other._dtype is input._dtype and other._device is input._device:
            if other._data.shape != input._data.shape:  # (Note [Scalar operand fast path]; alpha
                broadcast_shapes(input._data.shape, other._data.shape)  # as add's)
            return apply(SubBackward0, (input, other), alpha)
        a, b = binary_operands(input, other, "sub")
        if alpha.__class__ is not int:  # (as add's)
            alpha = _checked_alpha(alpha, a._dtype)
        _refuse_bool_subtraction(a._dtype, input, other)
        if isinstance(b, Tensor):
            if alpha != 1:  # (as add's)
                alpha = wrapped_scalar(alpha, a._dtype)
            return _result(apply(SubBackward0, (a, b), alpha), out, "sub")
        return _result(apply(SubBackward1, (a,), b if alpha == 1 else
                             wrapped_scalar(b * alpha, a._dtype)), out, "sub")
    except NotImplementedError:  # a sparse other: Note [Dense first, sparse second]
        return _dense_sparse("sub", input, other, alpha=alpha, out=out)


def _checked_alpha(alpha, dt):
    """``alpha`` (a Python number or a NumPy scalar; np.float64 would promote the kernel's
    result) as a Python number, refused as PyTorch's alpha_check refuses it for result dtype
    ``dt``."""
    if type(alpha) not in _PYTHON_NUMBERS:
        alpha = python_number(alpha)
    if alpha.__class__ is bool:
        if dt is not _BOOL:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif not (dt.is_floating_point or dt.is_complex) and alpha.__class__ is not int:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    elif alpha.__class__ is complex and not dt.is_complex:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a "
                           "complex number.")
    return alpha


def _refuse_bool_subtraction(dt, input, other) -> None:
    """PyTorch's refusal of ``-`` with bools (``dt``: the operands' promoted dtype)."""
    if dt is _BOOL:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if _is_bool(input) or _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _is_bool(x) -> bool:
    return x.__class__ is bool or isinstance(x, Tensor) and x._dtype is _BOOL


class RsubBackward0(Primitive):
    """``other - alpha * input`` for tensors (``torch.rsub``), one node as PyTorch's (edges:
    input, other); the gradients are ``-alpha g`` and ``g``."""

    __slots__ = ("alpha",)
    op_name = "rsub"
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, a, b, alpha):
        ctx.alpha = alpha
        return k.sub(b, a if alpha == 1 else k.mul(a, alpha))

    @staticmethod
    def vjp(ctx, k, saved, g):
        return (k.neg(g) if ctx.alpha == 1 else k.mul(g, -ctx.alpha)), g


class RsubBackward1(Primitive):
    """``number - alpha * input`` (``1 - x``): one node with one edge, as PyTorch's."""

    __slots__ = ("alpha",)
    op_name = "rsub"
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, a, s, alpha):
        ctx.alpha = alpha
        return k.add(k.neg(a) if alpha == 1 else k.mul(a, -alpha), s)

    @staticmethod
    def vjp(ctx, k, saved, g):
        return k.neg(g) if ctx.alpha == 1 else k.mul(g, -ctx.alpha)


def rsub(input: Tensor, other: Tensor | float, *, alpha=1) -> Tensor:
    """``other - alpha * input`` (``2 - x``)."""
    a, b = binary_operands(input, other, "rsub")
    if alpha.__class__ is not int:  # (as add's)
        alpha = _checked_alpha(alpha, a._dtype)
    _refuse_bool_subtraction(a._dtype, input, other)
    if isinstance(b, Tensor):
        return apply(RsubBackward0, (a, b), alpha)
    return apply(RsubBackward1, (a,), b, alpha)


# -- mul / div ---------------------------------------------------------------------------------

def zero_vjp(ctx, k, saved, g):
    """A zero gradient for each input that needs one (not g * 0: that would keep NaN and
    inf)."""
    if len(ctx._next) == 1:
        return zeros(k, g.shape, g)
    return tuple(zeros(k, g.shape, g) if need else None for need in ctx.needs_input_grad)


def binary_primitive(node: str, name: str, rule=None, *, scalar: bool = False,
                     saves: bool = True, forward=None, jvp=elementwise_jvp) -> type:
    """The primitive (grad_fn ``node``) of a binary op: ``forward(ctx, k, a, b, out=None)``,
    by default the contract's ``k.binary(name, a, b, out=out)``, and its ``vjp`` ``rule``
    over ``saved = (a, b)`` (or ``(a,)`` with a Python scalar ``b``, which the default
    forward keeps as ``ctx.s``); no rule means zero gradients, ``saves=False`` a rule that
    needs no inputs. ``jvp`` is the forward-mode rule, by default the vjp's terms summed
    (``elementwise_jvp``); without a rule, a zero tangent. Tensor operands broadcast (dispatch
    sums each gradient back to its input's shape)."""
    if forward is None and scalar:
        def forward(ctx, k, a, b, out=None):
            ctx.s = b
            return k.binary(name, a, b, out=out)
    elif forward is None:
        def forward(ctx, k, a, b, out=None):
            return k.binary(name, a, b, out=out)

    class Op(Primitive):
        __slots__ = ("s",) if scalar else ()  # (Note [Node state in slots], node.py)
        op_name = name
        writes_out = True
        broadcasts = not scalar
        save_inputs = () if rule is None or not saves else (0,) if scalar else (0, 1)
        vjp = staticmethod(rule or zero_vjp)

    Op.jvp = staticmethod(jvp if rule is not None else zero_jvp)

    Op.forward = staticmethod(forward)
    Op.__name__ = Op.__qualname__ = node
    return Op


def _mul_rule(ctx, k, saved, g):
    a, b = saved
    need_a, need_b = ctx.needs_input_grad
    return (k.mul(g, b) if need_a else None), (k.mul(g, a) if need_b else None)


def _div_rule(ctx, k, saved, g):
    a, b = saved
    need_a, need_b = ctx.needs_input_grad
    return (k.div(g, b) if need_a else None), \
        (k.div(k.mul(k.neg(g), a), k.mul(b, b)) if need_b else None)


def _mul(ctx, k, a, b, out=None):
    return k.mul(a, b, out=out)


def _mul_s(ctx, k, a, s, out=None):
    ctx.s = s
    return k.mul(a, s, out=out)


def _div(ctx, k, a, b, out=None):
    return k.div(a, b, out=out)


def _div_s(ctx, k, a, s, out=None):
    ctx.s = s
    return k.div(a, s, out=out)


MulBackward0 = binary_primitive("MulBackward0", "mul", _mul_rule, forward=_mul,
                                jvp=bilinear_jvp)
MulBackward1 = binary_primitive("MulBackward0", "mul", lambda ctx, k, saved, g: k.mul(g, ctx.s),
                                scalar=True, saves=False, forward=_mul_s)
DivBackward0 = binary_primitive("DivBackward0", "div", _div_rule, forward=_div)
DivBackward1 = binary_primitive("DivBackward0", "div", lambda ctx, k, saved, g: k.div(g, ctx.s),
                                scalar=True, saves=False, forward=_div_s)
# Each input is saved only for the gradient that needs it, as PyTorch's derivatives.yaml does
# (mul: self for other's gradient and other for self's; div: self for other's gradient): an
# input that nothing needs is neither kept alive nor version-checked.
MulBackward0.save_when = (1, 0)
DivBackward0.save_when = (1, None)
# PyTorch's x * 2 and x / 2 save the wrapped 2 (``_saved_other``): a second backward refuses
MulBackward1.saves_scalar = DivBackward1.saves_scalar = True


# Python's ``x + 2`` reaches PyTorch's Tensor overload (the number is wrapped as a 0-d tensor),
# so users see the tensor-tensor names there; the scalar primitives are named to match.
for _cls, _name in ((AddBackward1, "AddBackward0"), (SubBackward1, "SubBackward0")):
    _cls.__name__ = _cls.__qualname__ = _name
# Note [Edges of wrapped scalars] (node.py): PyTorch's node of x * 2, x / 2, x + 2, x - 2 has a
# second, None edge for the wrapped scalar
for _cls in (MulBackward1, DivBackward1, AddBackward1):  # (SubBackward1 inherits it)
    _cls._none_edges = 1


# Note [Scalar operand fast path]
#   ``x * 1.01`` and ``x + 0.1`` on a floating tensor are most of the scalar ops a model runs,
#   and for them binary_operands returns its operands unchanged and _result returns apply's
#   result as it is (no promotion, no wrapped scalar, no alpha, no ``out=``): add and mul
#   test exactly those conditions first and call apply directly, two Python calls fewer per
#   op. The same holds for two floating tensors of one dtype on one device (``x * w``, ``h + b``:
#   most of a training step's binary ops), which add, sub, mul and div also send straight to
#   apply, after the broadcast check binary_operands would make (its error, unchanged).
#   tests/autograd/test_op_fast_paths.py checks both sides give the same result, node
#   and dtype.
def mul(input, other, *, out=None) -> Tensor:
    """``input * other``, broadcasting."""
    try:  # (free until it raises: Python 3.11's zero-cost try)
        if out is None and isinstance(input, Tensor) and input._dtype.is_floating_point:
            if type(other) is float:  # Note [Scalar operand fast path]
                return apply(MulBackward1, (input,), other)
            if isinstance(other, Tensor) and other._dtype is input._dtype \
                    and other._device is input._device:
                if other._data.shape != input._data.shape:
                    broadcast_shapes(input._data.shape, other._data.shape)
                return apply(MulBackward0, (input, other))
        a, b = binary_operands(input, other, "mul")
        if isinstance(b, Tensor):
            return _result(apply(MulBackward0, (a, b)), out, "mul")
        return _result(apply(MulBackward1, (a,), b), out, "mul")
    except NotImplementedError:  # a sparse other: Note [Dense first, sparse second]
        return _dense_sparse("mul", input, other, out=out)


def div(input, other, *, rounding_mode=None, out=None) -> Tensor:
    """``input / other`` (true division: integer inputs give floats), broadcasting; with
    ``rounding_mode="floor"`` or ``"trunc"`` the quotient is rounded (integers stay integers,
    and the gradient is zero)."""
    try:  # (free until it raises: Python 3.11's zero-cost try)
        if rounding_mode is not None:
            from .pointwise import div_trunc, floor_divide
            if rounding_mode == "floor":
                return floor_divide(input, other, out=out)
            if rounding_mode == "trunc":
                return div_trunc(input, other, out=out)
            raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                             f"but found '{rounding_mode}'")
        if out is None and isinstance(input, Tensor) and isinstance(other, Tensor) \
                and input._dtype.is_floating_point and other._dtype is input._dtype \
                and other._device is input._device:  # Note [Scalar operand fast path]
            if other._data.shape != input._data.shape:
                broadcast_shapes(input._data.shape, other._data.shape)
            return apply(DivBackward0, (input, other))
        a, b = binary_operands(input, other, "div", _float_type(input, other))
        if isinstance(b, Tensor):
            return _result(apply(DivBackward0, (a, b)), out, "div")
        return _result(apply(DivBackward1, (a,), b), out, "div")
    except NotImplementedError:  # a sparse other: Note [Dense first, sparse second]
        return _dense_sparse("div", input, other, rounding_mode=rounding_mode, out=out)


class ReciprocalBackward0(Primitive):
    """``1 / x``: the gradient is ``-g y^2``."""

    __slots__ = ()
    op_name = "reciprocal"
    save_output = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, x):
        return k.pow(x, -1)

    @staticmethod
    def vjp(ctx, k, saved, g):
        y, = saved
        return k.neg(k.mul(g, k.mul(y, y)))


def reciprocal(x: Tensor, *, out=None) -> Tensor:
    """``1 / input`` (integers promote to the default float dtype)."""
    keep = x._dtype.is_floating_point or x._dtype.is_complex  # (a complex cast drops .imag)
    return _result(apply(ReciprocalBackward0, (x if keep else x.to(get_default_dtype()),)),
                   out, "reciprocal")


# -- pow ---------------------------------------------------------------------------------------

class PowBackward0(Primitive):
    """x ** e for a number e: d/dx = e * x ** (e - 1)."""

    __slots__ = ()
    op_name = "pow"
    writes_out = True
    save_inputs = (0,)
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, x, e, out=None):
        ctx.e = e
        return k.pow(x, e, out=out)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, = saved
        e = ctx.e
        if e == 0:
            return k.mul(g, 0)
        return k.mul(g, k.mul(k.pow(x, e - 1), e)) if e != 1 else g


class PowBackward1(Primitive):
    """a ** b for tensors: d/da = b * a ** (b - 1) (0 where b == 0, as a ** 0 is constant even
    at a == 0), d/db = a ** b * log(a) (0 where a == 0 and b >= 0, the limit; where b < 0 it
    is inf * -inf = -inf, as PyTorch gives)."""

    __slots__ = ()
    op_name = "pow"
    writes_out = True
    save_inputs = (0, 1)
    save_output = True
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, a, b, out=None):
        return k.pow(a, b, out=out)

    @staticmethod
    def vjp(ctx, k, saved, g):
        a, b, out = saved
        need_a, need_b = ctx.needs_input_grad
        ga = k.where(k.eq(b, 0), 0, k.mul(k.mul(g, b), k.pow(a, k.sub(b, 1)))) if need_a \
            else None
        gb = None
        if need_b:
            # the limit at a == 0 is 0 for a real, non-negative exponent (a complex one:
            # its imaginary part 0 and its real part >= 0, PyTorch's pow_backward_exponent)
            nonneg = (k.binary("bitwise_and", k.eq(k.imag(b), 0), k.ge(k.real(b), 0))
                      if meta(b)[1].is_complex else k.ge(b, 0))
            limit = k.binary("bitwise_and", k.eq(a, 0), nonneg)
            gb = k.where(limit, 0, k.mul(k.mul(g, out), k.log(k.where(limit, 1, a))))
        return ga, gb


class PowBackward2(Primitive):
    """number ** tensor (``2 ** x``): one edge, the exponent's, as PyTorch's. d/de =
    ``y log(base)``; for base 0 it is 0 where e >= 0 (the limit, as PowBackward1) and -inf
    times ``g y`` where e < 0; a negative base of a real power has a NaN gradient."""

    __slots__ = ("log_base",)
    op_name = "pow"
    save_inputs = (0,)
    save_output = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, e, base_array, base):  # (the number, and as a 0-d array of y's dtype)
        if base == 0:
            ctx.log_base = None
        elif isinstance(base, complex) or meta(base_array)[1].is_complex:
            ctx.log_base = cmath.log(base)
        else:
            ctx.log_base = math.log(base) if base > 0 else math.nan
        return k.pow(base_array, e)

    @staticmethod
    def vjp(ctx, k, saved, g):
        e, out = saved
        if ctx.log_base is None:  # base 0
            # (the factor, not a where around the product: its double backward would make
            # 0 * inf = NaN in the unselected branch)
            return k.mul(k.mul(g, out), k.where(k.ge(e, 0), 0.0, -math.inf))
        return k.mul(k.mul(g, out), ctx.log_base)


def pow(input, exponent, *, out=None) -> Tensor:  # noqa: A001
    """``input ** exponent``, broadcasting."""
    if not isinstance(input, Tensor):  # number ** tensor
        if not isinstance(exponent, Tensor):
            raise TypeError(f"pow(): expected a Tensor base or exponent, got "
                            f"{type(input).__name__} and {type(exponent).__name__}")
        dt = result_type(input, exponent)
        base = _operand(input, dt, exponent, "pow")
        if dt is _BOOL:
            return pow(base, exponent)  # (its errors; bool ** bool is refused there)
        e = exponent if exponent._dtype is dt else exponent.to(dt)
        return _result(apply(PowBackward2, (e,), base._data, python_number(input)), out, "pow")
    if isinstance(exponent, int) and not (input._dtype.is_floating_point
                                          or input._dtype.is_complex):
        if exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        dt = result_type(input, exponent)
        if dt is not _BOOL:  # PyTorch reads the exponent with Scalar::to<T>(): checked
            checked_scalar(exponent, dt)
    a, b = binary_operands(input, exponent, "pow")
    if a._dtype is _BOOL:  # only a Python bool exponent keeps a bool tensor bool
        if isinstance(b, Tensor):
            raise kernel_not_implemented("pow", _BOOL)
        return _result(a.clone() if b else a.new_ones(a.shape), out, "pow")
    if isinstance(b, Tensor):
        return _result(apply(PowBackward1, (a, b)), out, "pow")
    return _result(apply(PowBackward0, (a,), b), out, "pow")


# -- unary ops: one row builds the primitive, the function and the in-place method -------------

def unary(name: str, rule=None, jvp=None, *, saves: str | None = None, kind: str = "float",
          node: str | None = None, forward=None, out_arg: bool = True, inplace: bool = True,
          bool_error: str | None = None, bool_copies: bool = False, complex_rule=None,
          complex_jvp=None, real_only: bool | str = False, real_valued: bool = False,
          **row) -> OpInfo:
    """The table row of the differentiable unary op ``name``, with its primitive.

    The forward is ``forward(ctx, k, x, out=None)``, by default the contract's
    ``k.unary(name, x, out=out)``. ``rule`` is its ``vjp(ctx, k, saved, g)``; ``saved``
    holds the input (``saves="input"``) or the output (``saves="output"``); no rule means a
    zero gradient (the rounding ops, as PyTorch). ``jvp(ctx, k, x, t, y)`` is the forward-mode
    rule (the tangent of ``y`` from ``x``'s tangent ``t``); by default the ``rule`` applied to
    the tangent, exact for a unary elementwise op, whose Jacobian is diagonal (J t = J^T t):
    ``elementwise_jvp``; no rule, a zero tangent. ``complex_rule`` is the vjp for complex
    inputs of an op that is not holomorphic (Note [Complex autograd]), ``complex_jvp(ctx, k,
    x, t, y)`` its forward-mode rule. ``kind`` is the dtype
    rule:

    - ``float``: integers and bool promote to the default float dtype (``sin``); in place,
      they are refused (the result cannot be cast back);
    - ``round``: integers are whole already, so the result is a copy (in place: nothing to
      do); bool is refused;
    - ``any``: integers keep their dtype (``abs``); bool is refused with ``bool_error``, or
      copied if ``bool_copies`` (``sign``).

    ``real_only`` refuses complex inputs (a NotImplementedError; a string is its message), as
    PyTorch refuses them for the rounding ops and ``sign``. ``real_valued``: the result of a
    complex input is real (``abs``), so the in-place form refuses complex tensors as PyTorch
    does (instead of writing |z| + 0i back). The remaining keywords go to
    :class:`OpInfo` (aliases, operators, flops, grad, dtypes).
    """
    if kind not in ("float", "round", "any"):
        raise ValueError(f"unary {name}: unknown kind {kind!r}")
    if forward is None:
        def forward(ctx, k, x, out=None):
            return k.unary(name, x, out=out)

    class Op(Primitive):
        __slots__ = ()
        op_name = name
        writes_out = out_arg
        save_inputs = (0,) if saves == "input" else ()
        save_output = saves == "output"
        vjp = staticmethod(rule or zero_vjp)
        complex_vjp = None if complex_rule is None else staticmethod(complex_rule)

    Op.forward = staticmethod(forward)
    if complex_jvp is not None:
        Op.complex_jvp = staticmethod(lambda ctx, k, primals, tangents, out:
                                      complex_jvp(ctx, k, primals[0], tangents[0], out))
    if jvp is not None:
        Op.jvp = staticmethod(lambda ctx, k, primals, tangents, out:
                              jvp(ctx, k, primals[0], tangents[0], out))
    else:
        Op.jvp = staticmethod(elementwise_jvp if rule is not None else zero_jvp)

    Op.__name__ = Op.__qualname__ = node or f"{name.capitalize()}Backward0"
    # PyTorch's kernels that have no bool form: its NotImplementedError names the kernel
    # (``"abs_cpu" not implemented for 'Bool'``); the message goes on to say it in words
    kernel = f"{name}_vml" if kind == "round" else name

    def operand(x) -> Tensor | None:
        """The tensor to apply Op to, or None when the result is a copy of ``x``."""
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")
        dt = x._dtype
        if dt.is_floating_point:
            return x
        if dt.is_complex:
            if real_only:
                raise NotImplementedError(real_only if isinstance(real_only, str) else
                                          f"{name} is not supported for complex inputs")
            return x
        if kind == "float":
            return x.to(get_default_dtype())
        if dt is _BOOL:
            if bool_copies:
                return None
            if bool_error:
                raise RuntimeError(bool_error)
            e = kernel_not_implemented(f"{kernel}_{x._device.type}", dt)
            raise type(e)(f"{e}: {name} is not supported for bool tensors")
        return None if kind == "round" else x

    def check_out(input: Tensor, out) -> None:
        if kind != "float" and not (real_valued and input._dtype.is_complex):
            check_out_dtype(out, input._dtype)

    # (a floating tensor is its own operand: those calls go straight to apply, as add's and
    # mul's with a float do, Note [Scalar operand fast path])
    if out_arg:
        def fn(input: Tensor, *, out=None) -> Tensor:
            if out is None and isinstance(input, Tensor) and input._dtype.is_floating_point:
                return apply(Op, (input,))
            x = operand(input)
            if out is not None:
                check_out(input, out)
            return _result(input.clone() if x is None else apply(Op, (x,)), out, name)
    else:
        def fn(input: Tensor) -> Tensor:
            if isinstance(input, Tensor) and input._dtype.is_floating_point:
                return apply(Op, (input,))
            x = operand(input)
            return input.clone() if x is None else apply(Op, (x,))

    def method_(self: Tensor) -> Tensor:
        if not isinstance(self, Tensor):
            raise TypeError(f"{name}_(): argument 'input' must be Tensor, not "
                            f"{type(self).__name__}")
        if real_only and self._dtype.is_complex:
            operand(self)  # (its refusal of a complex input)
        if real_valued and self._dtype.is_complex:
            raise RuntimeError(f"In-place {name} is not supported for complex tensors.")
        dt = self._dtype
        if not (dt.is_floating_point or dt.is_complex):
            if kind == "float":
                refuse_cast_into(self, get_default_dtype(), Op)
            if operand(self) is None:
                # (the values stay, but it is still a write, as PyTorch's: refused into an
                # expanded tensor, and a version bump that saved copies of self notice)
                check_internal_overlap(Op, self)
                self._vc[0] += 1
                return self
        return apply_inplace(Op, self, ())

    fn.__name__, method_.__name__ = name, name + "_"
    fn.__qualname__, method_.__qualname__ = name, name + "_"
    fn.__doc__ = row.pop("doc", None) or f"Elementwise ``{name}``."
    method_.__doc__ = f"In-place ``{name}``."
    row.setdefault("flops", "elementwise")
    row.setdefault("dtypes", _KIND_DTYPES[kind] + ("; not complex" if real_only else ""))
    return OpInfo(name, fn, inplace=method_ if inplace else None, node=Op, **row)


_KIND_DTYPES = {"float": "floats; integers promote", "round": "all but bool; integers copied",
                "any": "all but bool"}


_UNARY = (
    unary("neg", lambda ctx, k, s, g: k.neg(g), kind="any", operators=("__neg__",),
          aliases=("negative",),
          forward=lambda ctx, k, x, out=None: k.neg(x, out=out), grad="-g", dtypes="all but bool",
          bool_error="Negation, the `-` operator, on a bool tensor is not supported. If you "
                     "are trying to invert a mask, use the `~` or `logical_not()` operator "
                     "instead.", doc="``-input``."),
    unary("exp", lambda ctx, k, s, g: k.mul(g, s[0]), saves="output",
          forward=lambda ctx, k, x, out=None: k.exp(x, out=out), grad="g * y",
          autocast="float32 on cuda"),
    unary("log", lambda ctx, k, s, g: k.div(g, s[0]), saves="input",
          forward=lambda ctx, k, x, out=None: k.log(x, out=out), grad="g / x",
          autocast="float32 on cuda"),
    unary("sqrt", lambda ctx, k, s, g: k.div(g, k.mul(s[0], 2)), saves="output",
          forward=lambda ctx, k, x, out=None: k.sqrt(x, out=out), grad="g / (2 y)"),
    # 1 / sqrt(x) as the reciprocal of the root, so that rsqrt(-0.0) is -inf (IEEE, and
    # PyTorch), where -0.0 ** -0.5 would be +inf
    unary("rsqrt", lambda ctx, k, s, g: k.mul(g, k.mul(k.mul(s[0], k.mul(s[0], s[0])), -0.5)),
          saves="output", forward=lambda ctx, k, x, out=None: k.pow(k.sqrt(x), -1, out=out),
          grad="-g y^3 / 2", autocast="float32 on cuda"),
    unary("relu", lambda ctx, k, s, g: k.binary("relu_backward", g, s[0]), saves="output",
          kind="any", forward=lambda ctx, k, x, out=None: k.relu(x, out=out), out_arg=False,
          bool_error="Boolean inputs not supported for relu", grad="g where y > 0",
          real_only="relu(): does not support complex input (complex numbers are not ordered)",
          doc="``max(input, 0)``: the gradient passes where the output is positive."),
)
neg, exp, log, sqrt, rsqrt, relu = (row.impl for row in _UNARY)  # (unguarded: registry)


# -- maximum / minimum / where -----------------------------------------------------------------

class MaximumBackward0(Primitive):
    """The gradient goes to the larger input; ties split it evenly; a NaN operand sends it to
    both (PyTorch's rule)."""

    __slots__ = ()
    op_name = "maximum"
    save_inputs = (0, 1)
    broadcasts = True
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, a, b):
        return k.maximum(a, b)

    @staticmethod
    def vjp(ctx, k, saved, g):
        a, b = saved
        return _split_by(k, g, k.lt(a, b), k.gt(a, b), k.eq(a, b))


class MinimumBackward0(MaximumBackward0):
    __slots__ = ()
    op_name = "minimum"

    @staticmethod
    def forward(ctx, k, a, b):
        return k.minimum(a, b)

    @staticmethod
    def vjp(ctx, k, saved, g):
        a, b = saved
        return _split_by(k, g, k.gt(a, b), k.lt(a, b), k.eq(a, b))


def _split_by(k, g, a_loses, b_loses, tie):
    # PyTorch's rule: an input gets no gradient only where it loses, so with a NaN operand
    # (which neither wins nor ties) both inputs get it
    share = k.where(tie, k.mul(g, 0.5), g)
    return k.where(a_loses, 0, share), k.where(b_loses, 0, share)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum of ``input`` and ``other`` (broadcasting; NaN propagates)."""
    a, b = binary_operands(input, other, "maximum")
    if not isinstance(b, Tensor):
        raise TypeError("maximum(): argument 'other' must be Tensor")
    check_ordered(a, "maximum")
    return apply(MaximumBackward0, (a, b))


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum of ``input`` and ``other`` (broadcasting; NaN propagates)."""
    a, b = binary_operands(input, other, "minimum")
    if not isinstance(b, Tensor):
        raise TypeError("minimum(): argument 'other' must be Tensor")
    check_ordered(a, "minimum")
    return apply(MinimumBackward0, (a, b))


_MISSING = object()


class WhereBackward0(Primitive):
    """where(condition, a, b): a's gradient is g where the condition holds, b's elsewhere,
    each summed back to its operand's shape. The condition is saved, not an edge: the node's
    edges are a's and b's, as PyTorch's (Note [Saved indices] in dispatch.py)."""

    __slots__ = ()
    op_name = "where"
    keep_params = (0,)
    saved_names = ("condition",)
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, a, b, cond):
        ctx.shapes = (a.shape, b.shape)
        return k.where(cond, a, b)

    @staticmethod
    def vjp(ctx, k, saved, g):
        cond, = saved
        need_a, need_b = ctx.needs_input_grad
        sa, sb = ctx.shapes
        return (sum_to(k, k.where(cond, g, 0), sa) if need_a else None), \
            (sum_to(k, k.where(cond, 0, g), sb) if need_b else None)


def where(condition: Tensor, input: Tensor | float = _MISSING,
          other: Tensor | float = _MISSING) -> Tensor:
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (broadcasting;
    either may be a number). ``where(condition)`` alone is ``nonzero(condition,
    as_tuple=True)``."""
    if input is _MISSING and other is _MISSING:
        from .indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if input is _MISSING or other is _MISSING:
        raise TypeError("where(): expected a condition alone, or a condition, input and other")
    if not isinstance(condition, Tensor) or condition._dtype.name != "bool":
        if not (isinstance(condition, Tensor) and condition._dtype.name == "uint8"):
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got "
                               f"{getattr(condition, 'dtype', type(condition).__name__)}")
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated "
                      "and will be removed in a future version of PyTorch. Use a boolean "
                      "condition instead.", UserWarning,  # (PyTorch's; accepted)
                      stacklevel=user_stacklevel())
        condition = condition.ne(0)
    dt = result_type(input, other)
    a, b = (_operand(x, dt, condition, "where") for x in (input, other))
    broadcast_shapes(condition.shape, a.shape, b.shape)
    return apply(WhereBackward0, (a, b), condition)


def _operand(x, dt, like: Tensor, op: str) -> Tensor:
    """``x`` (a Tensor or a number) as a tensor of dtype ``dt`` on ``like``'s device."""
    if isinstance(x, _Number):  # a wrapped number: not range-checked (creation.py's note)
        return scalar_tensor(python_number(x), dt, like._device)
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): expected a Tensor or a number, got {type(x).__name__}")
    x = operand_on_device(like, x, op)
    return x if x._dtype is dt else x.to(dt)


# -- comparisons (never differentiable) --------------------------------------------------------

def _comparison(name: str):
    class Compare(Primitive):
        __slots__ = ()
        op_name = name
        differentiable = False

        @staticmethod
        def forward(ctx, k, a, b):
            return getattr(k, name)(a, b)

    Compare.__name__ = Compare.__qualname__ = f"{name.capitalize()}Op"
    ordering = name not in ("eq", "ne")

    def compare(input, other) -> Tensor:
        a, b = binary_operands(input, other, name)
        if ordering and a._dtype.is_complex:  # (complex numbers have no order: PyTorch refuses)
            raise kernel_not_implemented(f"{name}_{a.device.type}", a._dtype)
        if isinstance(b, Tensor):
            broadcast_shapes(a.shape, b.shape)
            return apply(Compare, (a, b))
        return apply(Compare, (a,), b)

    compare.__name__ = name
    compare.__doc__ = f"Elementwise ``{name}`` comparison, broadcasting; a bool tensor."
    return compare


gt, ge, lt, le, eq, ne = (_comparison(n) for n in ("gt", "ge", "lt", "le", "eq", "ne"))


def positive(input: Tensor) -> Tensor:
    """``+input``: the tensor itself."""
    if not isinstance(input, Tensor):  # (else a list would come back as it went in)
        raise TypeError(f"positive(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input._dtype is _BOOL:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def isnan(x: Tensor) -> Tensor:
    """True where an element is NaN."""
    return ne(x, x)


# -- out= --------------------------------------------------------------------------------------

def _result(t: Tensor, out, name: str) -> Tensor:
    """``t``, the result of op ``name``, or, given ``out=``, written into ``out`` with
    PyTorch's out= rules: refused when autograd would need to see through the write (an
    input requires grad, or a tangent reaches it under forward AD: out= functions have no
    derivative) or when ``t``'s dtype cannot be cast to ``out``'s (a float result into an
    integer ``out``); ``out`` of another shape is resized (``resize_output``)."""
    if out is None:
        return t
    if not isinstance(out, Tensor):
        raise TypeError(f"out must be a Tensor, got {type(out).__name__}")
    refuse_out_dual(name, t, out)
    if t._requires_grad or (out._requires_grad and state.grad_enabled
                            and (t._dtype.is_floating_point or t._dtype.is_complex)):
        # (t requires grad only when grad mode is on and an input does; a result that has no
        # gradient (a comparison's) may go into an out that requires grad, as in PyTorch)
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           f"automatic differentiation, but one of the arguments requires grad.")
    if not _can_cast(t._dtype, out._dtype):
        raise RuntimeError(f"result type {scalar_type_name(t._dtype)} can't be cast to the "
                           f"desired output type {scalar_type_name(out._dtype)}")
    resize_output(out, tuple(t.shape))
    return out.copy_(t.detach())


def resize_output(out: Tensor, shape: tuple) -> None:
    """Gives ``out=`` tensor ``out`` the result's ``shape`` as PyTorch's ``resize_output``
    does: silently when it has no elements, with PyTorch's deprecation warning otherwise."""
    if tuple(out.shape) == shape:
        return
    if out.numel():
        warnings.warn(f"An output with one or more elements was resized since it had shape "
                      f"{list(out.shape)}, which does not match the required output shape "
                      f"{list(shape)}. This behavior is deprecated, and in a future PyTorch "
                      f"release outputs will not be resized unless they have zero elements. You "
                      f"can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                      f"elements with t.resize_(0).", UserWarning, stacklevel=user_stacklevel())
    from ..storage import resize_for_output  # (the op's write is out's one version bump)
    resize_for_output(out, shape)


_ALPHA1 = {True: (1,), False: ()}  # the alpha param of an in-place op without alpha=


def _inplace(op_tensor, op_scalar, promote_float=False):
    """The ``x.op_(other)`` method for a binary primitive pair."""
    takes_alpha = op_tensor in (AddBackward0, SubBackward0)
    subtracts = op_tensor is SubBackward0
    name = op_tensor.op_name + "_"

    def method(self: Tensor, other, *, alpha=None):
        try:  # (free until it raises; nothing is changed before a kernel reads other)
            # Note [Scalar operand fast path], in place: a float, or a tensor of self's dtype,
            # device and shape, into a floating self needs no promotion, cast or broadcast
            # check (``p.add_(g)``, ``h.mul_(0.9)``: an optimizer's or a hand-written loop's)
            if alpha is None and self._dtype.is_floating_point:
                if type(other) is float:
                    return apply_inplace(op_scalar, self, (), other)
                if isinstance(other, Tensor) and other._dtype is self._dtype \
                        and other._device is self._device \
                        and other._data.shape == self._data.shape:
                    return apply_inplace(op_tensor, self, (other,), *_ALPHA1[takes_alpha])
            if alpha is not None and not takes_alpha:  # (mul_, div_: PyTorch refuses alpha=)
                raise TypeError(f"{name}() got an unexpected keyword argument 'alpha'")
            if isinstance(other, Tensor):
                other = operand_on_device(self, other, name)
                dt = result_type(self, other)
            elif isinstance(other, (_Number, np.bool_)):
                if type(other) not in _PYTHON_NUMBERS:
                    other = python_number(other)
                elif type(other) is int:
                    check_int_operand(other)
                dt = result_type(self, other)
            elif isinstance(other, np.ndarray):  # (``t += array``: Note [NumPy array operands])
                other = numpy_operand(other, self, name)
                dt = result_type(self, other)
            else:
                raise TypeError(f"{name}(): argument 'other' must be Tensor or Number")
            if subtracts:
                _refuse_bool_subtraction(dt, self, other)
            if alpha is not None:
                if alpha.__class__ is not int:
                    alpha = _checked_alpha(alpha, dt)
                if dt is _BOOL:  # (a truth value, as add's: bool + bool is a logical or)
                    alpha = alpha is not False and alpha != 0
            if promote_float and not (dt.is_floating_point or dt.is_complex):
                dt = get_default_dtype()
            if not _can_cast(dt, self._dtype):
                refuse_cast_into(self, dt, op_tensor, (other,))
            if isinstance(other, Tensor):
                if other._dtype is not self._dtype:
                    other = other.to(self._dtype)
                shape = broadcast_shapes(self.shape, other.shape)
                if shape != tuple(self.shape):
                    raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                                       f"broadcast shape {list(shape)}")
                # (an int alpha wraps into an integer dtype as the scalar operands do)
                params = (1 if alpha is None else wrapped_scalar(alpha, self._dtype),) \
                    if takes_alpha else ()
                return apply_inplace(op_tensor, self, (other,), *params)
            s = wrapped_scalar(other if alpha is None else other * alpha, self._dtype)
            return apply_inplace(op_scalar, self, (), s)
        except NotImplementedError:  # a sparse other: Note [Dense first, sparse second]
            kwargs = {} if alpha is None else {"alpha": alpha}
            return _dense_sparse(name, self, other, **kwargs)
    method.__name__ = method.__qualname__ = name
    return method


def check_out_dtype(out, dt) -> None:
    """PyTorch's refusal of an ``out=`` of another dtype than ``dt`` for the ops that keep
    their input's dtype (``abs floor neg bitwise_not ...``: no cast of the result)."""
    if isinstance(out, Tensor) and out._dtype is not dt:
        raise RuntimeError(f"Found dtype {scalar_type_name(out._dtype)} but expected "
                           f"{scalar_type_name(dt)}")


def refuse_cast_into(self: Tensor, dt, op: type, others: tuple = ()) -> None:
    """Raises the error PyTorch's in-place ``op`` on ``self`` (with operands ``others``)
    raises first when its result dtype ``dt`` cannot be cast into ``self``: autograd's (a leaf,
    or a view of one, that requires grad), then the kernel's, in order: several elements of
    ``self`` in one memory location, ``self``'s shape not the broadcast one, the cast. For
    the failure path only (it does the checks that apply_inplace would make later)."""
    check_inplace(self, any(getattr(t, "requires_grad", False) for t in (self, *others)))
    check_internal_overlap(op, self)
    shape = broadcast_shapes(self.shape, *(t.shape for t in others if isinstance(t, Tensor)))
    if shape != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    check_cast(dt, self._dtype)


def check_cast(dt, self_dtype) -> None:
    """PyTorch's refusal of an in-place op (or ``out=``) whose result dtype ``dt`` is of a
    higher category than ``self_dtype`` (float into an integer tensor, int into bool)."""
    if not _can_cast(dt, self_dtype):
        raise RuntimeError(f"result type {scalar_type_name(dt)} can't be cast to the desired "
                           f"output type {scalar_type_name(self_dtype)}")


def _category(d) -> int:
    return 3 if d.is_complex else 2 if d.is_floating_point else 0 if d.name == "bool" else 1


def _can_cast(src, dst) -> bool:
    # PyTorch refuses in-place ops whose result category exceeds the tensor's (float into int).
    return _category(src) <= _category(dst)


add_ = _inplace(AddBackward0, AddBackward1)
sub_ = _inplace(SubBackward0, SubBackward1)
mul_ = _inplace(MulBackward0, MulBackward1)
div_ = _inplace(DivBackward0, DivBackward1, promote_float=True)


def _div_rounding_(self: Tensor, other, *, rounding_mode=None) -> Tensor:
    """In-place ``div`` (``divide_``), rounded as ``div``'s ``rounding_mode`` says."""
    if rounding_mode is None:
        return div_(self, other)
    from .pointwise import div_trunc_, floor_divide_
    if rounding_mode == "floor":
        return floor_divide_(self, other)
    if rounding_mode == "trunc":
        return div_trunc_(self, other)
    raise RuntimeError(f"div_ expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


_div_rounding_.__name__ = _div_rounding_.__qualname__ = "div_"  # (Python's TypeErrors name it)


def pow_(self: Tensor, exponent) -> Tensor:
    """In-place ``pow``: the result's dtype must be one ``self`` can hold (PyTorch's
    refusal of ``int_tensor.pow_(0.5)`` and ``bool_tensor.pow_(2)``)."""
    if isinstance(exponent, Tensor):
        exponent = operand_on_device(self, exponent, "pow_")
        dt = result_type(self, exponent)
        check_cast(dt, self._dtype)
        if self._dtype is _BOOL:
            raise kernel_not_implemented("pow", _BOOL)
        shape = broadcast_shapes(self.shape, exponent.shape)
        if shape != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")
        if dt is not self._dtype and not (dt.is_floating_point or dt.is_complex):
            # (integers: computed in the promoted dtype, then cast, as PyTorch: uint8 3 **
            # int64 -2 is 0, not 3 ** 254 in uint8; no autograd here)
            return self.copy_(pow(self, exponent))
        return apply_inplace(PowBackward1, self, (exponent.to(self._dtype),))
    if not isinstance(exponent, (_Number, np.bool_)):
        raise TypeError(f"pow_(): argument 'exponent' must be Tensor or Number, not "
                        f"{type(exponent).__name__}")
    exponent = python_number(exponent)
    dt = self._dtype
    check_cast(result_type(self, exponent), dt)
    if dt is _BOOL:  # (a bool exponent: x ** True is x, x ** False is ones)
        return self if exponent else self.fill_(True)
    if not (dt.is_floating_point or dt.is_complex) and exponent.__class__ is int:
        if exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        exponent = checked_scalar(exponent, dt)  # (Scalar::to<T>(), as pow's)
    return apply_inplace(PowBackward0, self, (), exponent)


# -- the table ---------------------------------------------------------------------------------

def _binary(name, fn, inplace, grad, reflected=None, op=None, legacy=(), **row):
    """A binary op's row, with its operators (``__op__``, ``__rop__``, ``__iop__``; ``legacy``:
    more stems, Python 2's ``div`` that PyTorch keeps)."""
    ops = [op or name, *legacy]
    return OpInfo(name, fn, inplace=inplace,
                  operators=tuple(f"__{p}{o}__" for o in ops for p in ("", "r", "i")),
                  reflected=reflected, flops="elementwise", dtypes="promoted", grad=grad, **row)


def _compare(name, alias=None):
    fn = globals()[name]

    def inplace(self: Tensor, other) -> Tensor:
        # the comparison's result (1 or 0) written into self, in self's dtype
        r = fn(self, other)
        if tuple(r.shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(r.shape)}")
        return self.copy_(r)
    inplace.__name__ = f"{name}_"
    return OpInfo(name, fn, inplace=inplace, operators=(f"__{name}__",),
                  aliases=(alias,) if alias else (),
                  dtypes="promoted; bool result (in place: self's dtype)", grad="none",
                  out="cast")


OPS = _UNARY + (
    _binary("add", add, add_, "g, alpha g"),
    _binary("sub", sub, sub_, "g, -alpha g", reflected=rsub, aliases=("subtract",)),
    _binary("mul", mul, mul_, "g b, g a", aliases=("multiply",)),
    _binary("div", div, _div_rounding_, "g / b, -g a / b^2",
            reflected=lambda self, other: mul(_autocast_reciprocal(self), other), op="truediv",
            legacy=("div",), aliases=("true_divide", "divide")),
    _binary("pow", pow, pow_, "g e x^(e-1), g y log x",
            reflected=lambda self, other: pow(other, self), autocast="float32 on cuda"),
    OpInfo("rsub", rsub, method=False, dtypes="promoted", grad="-alpha g"),
    OpInfo("reciprocal", reciprocal, dtypes="floats, complex; integers promote", grad="-g y^2",
           autocast="float32 on cuda"),
    OpInfo("maximum", maximum, flops="elementwise", dtypes="promoted; not complex",
           grad="to the larger; ties split", out="cast"),
    OpInfo("minimum", minimum, flops="elementwise", dtypes="promoted; not complex",
           grad="to the smaller; ties split", out="cast"),
    OpInfo("where", where, method=lambda self, condition, other: where(condition, self, other),
           flops="elementwise", dtypes="promoted", grad="g where cond, g elsewhere",
           out="exact"),
    OpInfo("isnan", isnan, dtypes="bool result", grad="none"),
    OpInfo("positive", positive, operators=("__pos__",), dtypes="all", grad="g"),
) + tuple(_compare(n, alias) for n, alias in (
    ("gt", "greater"), ("ge", "greater_equal"), ("lt", "less"), ("le", "less_equal"),
    ("eq", None), ("ne", "not_equal")))
OPS = with_inplace(with_jvp(OPS), ("reciprocal",))  # every primitive here has a jvp rule
export(OPS, globals())
# ``2 / x`` (__rtruediv__) is ``2 * reciprocal(x)`` through reciprocal's row, so it takes that
# row's autocast policy (float32 on CUDA, as __rtruediv__ in PyTorch's list)
_autocast_reciprocal = next(row.impl for row in OPS if row.name == "reciprocal")
