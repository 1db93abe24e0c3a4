"""Activations that PyTorch computes as one op: SiLU, Mish, Softplus, LogSigmoid, Hardswish,
Hardsigmoid, Hardtanh (and ReLU6, which is Hardtanh(0, 6)), LeakyReLU (and RReLU in
evaluation), Softshrink, pointwise, and GLU; CELU's node over autograd/ops/nn.py's ELU kernel.

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
LeakyReLU and Softshrink have no fused kernel: their composite forms serve both ways (one node
saving the input, where they were a ``where`` over two or three recorded ops).

In-place forms run the same node through ``apply_inplace`` (PyTorch's in-place activations
record their own node, not a copy): the input is saved as it was before the write, except
for LeakyReLU's and Hardtanh's, whose rules read the result as PyTorch's; the in-place
ELU/CELU and LeakyReLU refuse a negative slope's backward, as PyTorch's do.

The formulas are PyTorch's CPU kernels', special values included: ``silu(-inf)`` is NaN
(``-inf / inf``), a NaN takes Hardswish's pass-through gradient (1) but Hardsigmoid's and
Hardtanh's 0, and Hardswish's gradient is 0 at -3 and 1 at 3. float16 and bfloat16
inputs are computed in float32 and rounded once, as PyTorch's kernels do, forward and
backward (the fused kernels; ``opmath`` in the composite forms).
"""

from __future__ import annotations

from .. import checks
from ..dispatch import Primitive, apply, apply_inplace, elementwise_jvp, meta, opmath
from ..tensor import Tensor
from . import traced
from .nn import EluBackward0

__all__ = ["celu", "elu", "glu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu",
           "logsigmoid", "mish", "silu", "softplus", "softshrink"]

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

    @classmethod
    def forward(cls, ctx, k, x):
        # PyTorch's log_sigmoid makes a row-major result whatever x's layout (its buffer
        # output is allocated so), where the other activations keep x's
        return super().forward(ctx, k, k.contiguous(x))

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


class LeakyReluBackward0(_Activation):
    """y = x where x > 0, else negative_slope x:  dx = g where x > 0, else negative_slope g
    (at 0 the slope's, a NaN's the slope's too: PyTorch's leaky_relu_backward)."""

    __slots__ = ()
    op_name = "leaky_relu"

    @staticmethod
    def value(k, x, slope):
        return k.where(k.gt(x, 0.0), x, k.mul(x, slope))

    @staticmethod
    def derivative(k, x, g, slope):
        return k.where(k.gt(x, 0.0), g, k.mul(g, slope))


_NEGATIVE_SLOPE_INPLACE = ("In-place {} backward calculation is triggered with a negative slope "
                           "which is not supported. This is caused by calling in-place forward "
                           "function with a negative slope, please call out-of-place version "
                           "instead.")


class LeakyReluBackward1(LeakyReluBackward0):
    """leaky_relu_: the rule reads the result (the input is overwritten), as PyTorch's, whose
    mask y > 0 is x's for a slope >= 0; a negative slope's backward is refused, as there."""

    __slots__ = ()
    op_name = "leaky_relu_"
    save_inputs = ()
    save_output = True

    @classmethod
    def vjp(cls, ctx, k, saved, g):
        if ctx.params[0] < 0:
            raise RuntimeError(_NEGATIVE_SLOPE_INPLACE.format("leakyReLu"))
        return super().vjp(ctx, k, saved, g)


# rrelu in evaluation: leaky_relu with the mean slope, under PyTorch's node name
RreluWithNoiseBackward0 = LeakyReluBackward0.variant("RreluWithNoiseBackward0", "rrelu_with_noise")
RreluWithNoiseBackward1 = LeakyReluBackward1.variant("RreluWithNoiseBackward1",
                                                     "rrelu_with_noise_")


class SoftshrinkBackward0(_Activation):
    """y = x - lambd where x > lambd, x + lambd where x < -lambd, else 0 (-0 for a negative x,
    NaN for NaN):  dx = 0 where -lambd <= x <= lambd, else g (a NaN passes g)."""

    __slots__ = ()
    op_name = "softshrink"

    @staticmethod
    def value(k, x, lambd):
        # the middle branch is x * 0 (signed zero, NaN kept) of the x it applies to: the other
        # lanes multiply 0, so an infinite x makes no inf * 0 there
        middle = k.mul(k.where(k.gt(k.unary("abs", x), lambd), 0.0, x), 0.0)
        return k.where(k.gt(x, lambd), k.sub(x, lambd),
                       k.where(k.lt(x, -lambd), k.add(x, lambd), middle))

    @staticmethod
    def derivative(k, x, g, lambd):
        return k.where(k.le(k.unary("abs", x), lambd), 0.0, g)


# CELU is PyTorch's elu kernel with input_scale 1 / alpha, under its own node names; the
# in-place forms (1) save the input as it was before the write (apply_inplace's copy), and
# refuse a negative alpha's backward as PyTorch's, whose rule reads the result
class _EluInplace(EluBackward0):
    __slots__ = ()
    save_inputs = (0,)

    @staticmethod
    def vjp(ctx, k, saved, g):
        if ctx.params[0] < 0:
            raise RuntimeError(_NEGATIVE_SLOPE_INPLACE.format("elu"))
        return EluBackward0.vjp(ctx, k, saved, g)


CeluBackward0 = EluBackward0.variant("CeluBackward0", "celu")
EluBackward1 = _EluInplace.variant("EluBackward1", "elu_")
CeluBackward1 = _EluInplace.variant("CeluBackward1", "celu_")


def _run(node: type, input: Tensor, inplace: bool, *params) -> Tensor:
    """``node`` applied to ``input``, or with ``inplace`` written into it (recorded as the
    node itself, as PyTorch's in-place activations are, not as a copy)."""
    if inplace:
        return apply_inplace(node, input, (), *params)
    return apply(node, (input,), *params)


def elu(input: Tensor, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0,
        inplace: bool = False, op: str = "elu") -> Tensor:
    """PyTorch's elu kernel (ELU; SELU with its constants; CELU with ``op='celu'``,
    input_scale 1 / alpha): ``scale x`` for x > 0, else ``alpha scale (exp(input_scale x) -
    1)``, one node (``EluBackward0``/``CeluBackward0``; in place ``EluBackward1``/
    ``CeluBackward1``); floating-point inputs only."""
    checks.tensor_arg(input, op)
    if not input.dtype.is_floating_point:
        raise checks.kernel_not_implemented("elu", input.dtype)
    celu = op == "celu"
    if inplace:
        node = CeluBackward1 if celu else EluBackward1
    else:
        node = CeluBackward0 if celu else EluBackward0
    return _run(node, input, inplace, float(alpha), float(scale), float(input_scale))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False,
               node: type | None = None) -> Tensor:
    """LeakyReLU(x) = x for x > 0, else negative_slope x: one node (``LeakyReluBackward0``,
    in place ``LeakyReluBackward1``; ``node`` another of their variants, rrelu's)."""
    checks.tensor_arg(input, "leaky_relu_" if inplace else "leaky_relu")
    if not input.dtype.is_floating_point:
        raise checks.kernel_not_implemented(f"leaky_relu_{input.device.type}", input.dtype)
    if node is None:
        node = LeakyReluBackward1 if inplace else LeakyReluBackward0
    return _run(node, input, inplace, float(negative_slope))


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Softshrink: x - lambd above lambd, x + lambd below -lambd, 0 between (one
    ``SoftshrinkBackward0`` node saving the input)."""
    checks.tensor_arg(input, "softshrink")
    if not input.dtype.is_floating_point:
        raise checks.kernel_not_implemented("softshrink_check", input.dtype)
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to be "
                           f"{lambd}.")
    return apply(SoftshrinkBackward0, (input,), float(lambd))


# hardtanh_ (relu6_): the rule reads the result, as PyTorch's (no copy of the input kept):
# strictly inside (min_val, max_val) exactly where the input was, NaN where it was NaN
HardtanhBackward0Inplace = HardtanhBackward0.variant("HardtanhBackward0", "hardtanh_",
                                                     save_inputs=(), save_output=True)


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


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """HardTanh(x) = min(max(x, min_val), max_val); integer inputs clamp to the integer
    bounds (no gradient), complex ones are refused as PyTorch's clamp refuses them. In place
    (``inplace``) the node is ``HardtanhBackward0`` too, as PyTorch's."""
    checks.tensor_arg(input, "hardtanh_" if inplace else "hardtanh")
    dt = input.dtype
    if dt.name == "bool":
        raise RuntimeError("hardtanh: Bool inputs not supported for hardtanh")
    if dt.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    if not dt.is_floating_point:
        min_val, max_val = int(min_val), int(max_val)
    return _run(HardtanhBackward0Inplace if inplace else HardtanhBackward0, input, inplace,
                min_val, max_val)


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
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.ndim, "glu")
    if input.shape[d] % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    if not input.dtype.is_floating_point:  # (after the shape's errors, as PyTorch's)
        raise checks.kernel_not_implemented(f"glu_{input.device.type}", input.dtype)
    return apply(GluBackward0, (input,), d)
