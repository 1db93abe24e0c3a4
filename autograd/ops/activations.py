"""Activations that PyTorch computes as one op: SiLU, Mish, Softplus, LogSigmoid, Hardswish,
Hardsigmoid, Hardtanh (and ReLU6, which is Hardtanh(0, 6)), pointwise, and GLU.

Each is a primitive named as PyTorch names its node, saving its input alone as PyTorch's
does. As compositions of Tensor ops they were several nodes each saving its own operands:
a SiLU kept ``x``, ``sigmoid(x)`` and a mask (3.3x the saved bytes of PyTorch's, a SwiGLU
block 1.5x), Mish 5x, Softplus 3x, Hardswish 2.5x.

Forward and backward are one fused call each of the kernel contract (``k.activation(op, x,
*params)`` and ``k.activation_backward(op, g, x, *params)``; ``k.glu``, ``k.glu_backward``):
one Triton kernel each way on the GPU, one NumPy routine of in-place ufuncs on the CPU. As
layer norm's (``fused = True``), the rule on arrays is that fused kernel and the recorded rule
(``create_graph=True``, ``k`` is ``ops.traced``) is the composite formula below
(``derivative``), so double backward works, as in PyTorch, whose silu and mish use an
"infinitely differentiable" composite backward when grad mode is on. Forward AD takes the
composite vjp's term (``elementwise_jvp``). Complex SiLU and integer Hardtanh (no gradient)
run the composite forward (``value``): the fused kernels take floating point only.

The formulas are PyTorch's CPU kernels', special values included: ``silu(-inf)`` is NaN
(``-inf / inf``), a NaN takes Hardswish's pass-through gradient (1) but Hardsigmoid's and
Hardtanh's 0, and Hardswish's gradient is 0 at -3 and 1 at 3. float16 and bfloat16
inputs are computed in float32 and rounded once, as PyTorch's kernels do, forward and
backward (the fused kernels; ``opmath`` in the composite forms).
"""

from __future__ import annotations

from .. import checks
from ..dispatch import Primitive, apply, elementwise_jvp, meta, opmath
from ..tensor import Tensor
from . import traced

__all__ = ["glu", "hardsigmoid", "hardswish", "hardtanh", "logsigmoid", "mish", "silu", "softplus"]

# -- formulas over the kernel contract (any ``k``), shared with nn/functional.py's losses --

def sigmoid_of(k, x):
    """1 / (1 + exp(-x)), 0 at -inf (the recorded rules too: no clipping of the argument).
    Where exp(-x) overflows (x below -log(max), in x's dtype) the value is that quotient's 0,
    taken from a branch whose exp never sees such an x: a recorded rule's derivative there is
    0, not the 0 * inf (NaN) that differentiating 1 / (1 + inf) gives (so SiLU's, Mish's,
    LogSigmoid's and GLU's double backward at x = -800, or -90 in float32, is 0, as
    PyTorch's)."""
    dev, dt = meta(x)
    over = k.lt(x, _EXP_OVERFLOW_BELOW if dt.itemsize >= 8 else _EXP_OVERFLOW_BELOW_32)
    e = k.exp(k.neg(k.where(over, 0.0, x)))
    return k.where(over, 0.0, k.div(k.full((), 1.0, dt, dev), k.add(e, 1.0)))


# exp(-x) overflows below these (-log of float64's, float32's largest finite value, rounded
# toward 0); float16 and bfloat16 rules run in float32 (opmath)
_EXP_OVERFLOW_BELOW = -709.78
_EXP_OVERFLOW_BELOW_32 = -88.72


def softplus_of_neg(k, x):
    """softplus(-x) = log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|)), without overflow
    (the max as a where: recorded rules run on ops.traced, which has no maximum)."""
    tail = k.unary("log1p", k.exp(k.neg(k.unary("abs", x))))
    return k.add(k.where(k.lt(x, 0.0), k.neg(x), 0.0), tail)


def one_minus(k, a):
    return k.add(k.neg(a), 1.0)


class _Activation(Primitive):
    """An elementwise op of one input, saved for its rule: ``kernel`` names it in the
    contract's activation table (None: no fused kernel, the composite forms serve);
    ``value(k, x, *params)`` and ``derivative(k, x, g, *params)`` are its composite forms
    (the recorded rule, and the forward of dtypes the fused kernel does not take), computed
    in float32 for float16/bfloat16 operands and rounded once, as PyTorch's kernels compute
    in their opmath type."""

    __slots__ = ()
    save_inputs = (0,)
    jvp = staticmethod(elementwise_jvp)
    kernel: str | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.fused = cls.kernel is not None  # (the rule on arrays is one kernel where one is)

    @classmethod
    def forward(cls, ctx, k, x, *params):
        ctx.params = params
        if cls.kernel is not None and meta(x)[1].is_floating_point:
            return k.activation(cls.kernel, x, *params)
        (x,), back = opmath(k, x)
        return back(cls.value(k, x, *params))

    @classmethod
    def vjp(cls, ctx, k, saved, g):
        if k is not traced and cls.kernel is not None:
            return k.activation_backward(cls.kernel, g, saved[0], *ctx.params)
        (x, g), back = opmath(k, saved[0], g)  # recorded: the composite formula
        return back(cls.derivative(k, x, g, *ctx.params))


class SiluBackward0(_Activation):
    """y = x / (1 + exp(-x)):  dx = g s (1 + x (1 - s)), s = sigmoid(x)."""

    __slots__ = ()
    op_name = "silu"
    kernel = "silu"

    @staticmethod
    def value(k, x):
        return k.div(x, k.add(k.exp(k.neg(x)), 1.0))

    @staticmethod
    def derivative(k, x, g):
        s = sigmoid_of(k, x)
        return k.mul(g, k.mul(s, k.add(k.mul(x, one_minus(k, s)), 1.0)))


class MishBackward0(_Activation):
    """y = x tanh(softplus(x)):  dx = g (t + x sigmoid(x) (1 - t^2)), t = tanh(softplus(x))."""

    __slots__ = ()
    op_name = "mish"
    kernel = "mish"

    @staticmethod
    def value(k, x):
        return k.mul(x, k.unary("tanh", k.unary("log1p", k.exp(x))))

    @staticmethod
    def derivative(k, x, g):
        t = k.unary("tanh", k.unary("log1p", k.exp(x)))
        d = k.add(t, k.mul(k.mul(x, sigmoid_of(k, x)), one_minus(k, k.mul(t, t))))
        return k.mul(g, d)


class SoftplusBackward0(_Activation):
    """y = log(1 + exp(beta x)) / beta, or x where beta x > threshold:
    dx = g sigmoid(beta x), or g where beta x > threshold.

    exp sees ``beta x`` only where it is at most ``threshold`` (0 elsewhere), so no branch
    overflows and a recorded rule's masked branch carries no inf into double backward."""

    __slots__ = ()
    op_name = "softplus"
    kernel = "softplus"

    @staticmethod
    def value(k, x, beta, threshold):
        bx = k.mul(x, beta)
        linear = k.gt(bx, threshold)
        soft = k.unary("log1p", k.exp(k.where(linear, 0.0, bx)))
        return k.where(linear, x, k.div(soft, beta))

    @staticmethod
    def derivative(k, x, g, beta, threshold):
        bx = k.mul(x, beta)
        linear = k.gt(bx, threshold)
        z = k.exp(k.where(linear, 0.0, bx))
        return k.where(linear, g, k.mul(g, k.div(z, k.add(z, 1.0))))


class LogSigmoidBackward0(_Activation):
    """y = log(sigmoid(x)) = -softplus(-x):  dx = g sigmoid(-x)."""

    __slots__ = ()
    op_name = "log_sigmoid"
    kernel = "log_sigmoid"

    @staticmethod
    def value(k, x):
        return k.neg(softplus_of_neg(k, x))

    @staticmethod
    def derivative(k, x, g):
        return k.mul(g, sigmoid_of(k, k.neg(x)))


class HardswishBackward0(_Activation):
    """y = x min(max(x + 3, 0), 6) / 6:  dx = 0 for x <= -3, g (x / 3 + 1/2) below 3, else g
    (a NaN takes the last branch, as in PyTorch's kernel)."""

    __slots__ = ()
    op_name = "hardswish"
    kernel = "hardswish"

    @staticmethod
    def value(k, x):
        return k.div(k.mul(x, k.minimum(k.maximum(k.add(x, 3.0), 0.0), 6.0)), 6.0)

    @staticmethod
    def derivative(k, x, g):
        inner = k.where(k.lt(x, 3.0), k.mul(g, k.add(k.div(x, 3.0), 0.5)), g)
        return k.where(k.le(x, -3.0), 0.0, inner)


class HardsigmoidBackward0(_Activation):
    """y = min(max(x + 3, 0), 6) / 6:  dx = g / 6 strictly inside (-3, 3), else 0."""

    __slots__ = ()
    op_name = "hardsigmoid"
    kernel = "hardsigmoid"

    @staticmethod
    def value(k, x):
        return k.div(k.minimum(k.maximum(k.add(x, 3.0), 0.0), 6.0), 6.0)

    @staticmethod
    def derivative(k, x, g):
        return k.where(k.gt(x, -3.0), k.where(k.lt(x, 3.0), k.div(g, 6.0), 0.0), 0.0)


class HardtanhBackward0(_Activation):
    """y = min(max(x, min_val), max_val):  dx = g strictly inside (min_val, max_val), else 0
    (a NaN's is 0, as PyTorch's vectorized CPU loop gives; its scalar tail gives g)."""

    __slots__ = ()
    op_name = "hardtanh"
    kernel = "hardtanh"

    @staticmethod
    def value(k, x, lo, hi):
        return k.minimum(k.maximum(x, lo), hi)

    @staticmethod
    def derivative(k, x, g, lo, hi):
        return k.where(k.gt(x, lo), k.where(k.lt(x, hi), g, 0.0), 0.0)


def _checked(input, op: str, kernel: str, complex_ok: bool = False) -> None:
    """PyTorch's errors: a non-Tensor ``input`` (TypeError naming ``op``), or a dtype its
    ``kernel`` (suffixed with the device type) is not defined on."""
    checks.tensor_arg(input, op)
    dt = input.dtype
    if not (dt.is_floating_point or (complex_ok and dt.is_complex)):
        raise checks.kernel_not_implemented(f"{kernel}_{input.device.type}", dt)


def silu(input: Tensor) -> Tensor:
    """SiLU(x) = x * sigmoid(x) (also called swish); complex inputs compute without
    gradients, as PyTorch's."""
    _checked(input, "silu", "silu", complex_ok=True)
    return apply(SiluBackward0, (input,))


def mish(input: Tensor) -> Tensor:
    """Mish(x) = x * tanh(softplus(x))."""
    _checked(input, "mish", "mish")
    return apply(MishBackward0, (input,))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """Softplus(x) = 1/beta * log(1 + exp(beta * x)), x where beta * x > threshold."""
    _checked(input, "softplus", "softplus")
    return apply(SoftplusBackward0, (input,), float(beta), float(threshold))


def logsigmoid(input: Tensor) -> Tensor:
    """LogSigmoid(x) = log(1 / (1 + exp(-x))), computed without overflow."""
    _checked(input, "logsigmoid", "log_sigmoid")
    return apply(LogSigmoidBackward0, (input,))


def hardswish(input: Tensor) -> Tensor:
    """Hardswish(x) = x * min(max(x + 3, 0), 6) / 6."""
    _checked(input, "hardswish", "hardswish")
    return apply(HardswishBackward0, (input,))


def hardsigmoid(input: Tensor) -> Tensor:
    """Hardsigmoid(x) = min(max(x + 3, 0), 6) / 6."""
    _checked(input, "hardsigmoid", "hardsigmoid")
    return apply(HardsigmoidBackward0, (input,))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """HardTanh(x) = min(max(x, min_val), max_val); integer inputs clamp to the integer
    bounds (no gradient), complex ones are refused as PyTorch's clamp refuses them."""
    checks.tensor_arg(input, "hardtanh")
    dt = input.dtype
    if dt.name == "bool":
        raise RuntimeError("hardtanh: Bool inputs not supported for hardtanh")
    if dt.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    if not dt.is_floating_point:
        min_val, max_val = int(min_val), int(max_val)
    return apply(HardtanhBackward0, (input,), min_val, max_val)


# -- GLU: not pointwise (each output element reads two of the input's) --------------------------

def _halves(k, x, dim: int):
    """The two halves of ``x`` along ``dim`` (non-negative), as views."""
    h = x.shape[dim] // 2
    lead = (slice(None),) * dim
    return k.getitem(x, lead + (slice(0, h),)), k.getitem(x, lead + (slice(h, 2 * h),))


class GluBackward0(Primitive):
    """y = a sigmoid(b), (a, b) the halves of x along ``dim``, saving x alone (PyTorch's
    glu). With s = sigmoid(b):  da = g s,  db = g a s (1 - s); the jvp is
    ta s + a s (1 - s) tb. Forward and backward on arrays are the contract's fused ``glu``
    and ``glu_backward``; recorded, the rule is the composite formula. float16/bfloat16
    compute in float32, rounded once, as PyTorch's kernel does."""

    __slots__ = ()
    op_name = "glu"
    save_inputs = (0,)
    fused = True

    @staticmethod
    def forward(ctx, k, x, dim):
        ctx.dim = dim
        return k.glu(x, dim)

    @staticmethod
    def _terms(k, x, dim, ga, gb):
        """(s ga, a s (1 - s) gb), each None where its g is."""
        a, b = _halves(k, x, dim)
        s = sigmoid_of(k, b)
        da = None if ga is None else k.mul(ga, s)
        db = None if gb is None else k.mul(gb, k.mul(a, k.mul(s, one_minus(k, s))))
        return da, db

    @staticmethod
    def vjp(ctx, k, saved, g):
        if k is not traced:
            return k.glu_backward(g, saved[0], ctx.dim)
        (x, g), back = opmath(k, saved[0], g)  # recorded: the composite formula
        da, db = GluBackward0._terms(k, x, ctx.dim, g, g)
        return back(k.cat([da, db], ctx.dim))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, dim):
        (x, t), back = opmath(k, primals[0], tangents[0])
        ta, tb = _halves(k, t, dim)
        da, db = GluBackward0._terms(k, x, dim, ta, tb)
        return back(k.add(da, db))


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit ``a * sigmoid(b)``, ``a`` and ``b`` the two halves of ``input``
    along ``dim``: one ``GluBackward0`` node saving ``input``, as PyTorch's."""
    from ..tensor import wrap_dim
    checks.tensor_arg(input, "glu")
    if not input.dtype.is_floating_point:
        raise checks.kernel_not_implemented(f"glu_{input.device.type}", input.dtype)
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.ndim, "glu")
    if input.shape[d] % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    return apply(GluBackward0, (input,), d)
