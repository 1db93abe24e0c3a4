"""Activations, forward and backward, one kernel each: SiLU, Mish, Softplus, LogSigmoid,
Hardswish, Hardsigmoid, Hardtanh and GLU.

Same names, signatures and results as kernels/numpy/nn.py's ``activation``,
``activation_backward``, ``glu`` and ``glu_backward`` (the contract in ``tritongrad.kernels``).
One kernel, ``_activation_kernel``, runs every formula of the table ``FORMULAS``: per element
it loads x (and GLU's second half y, and the output gradient g where given), computes the
formula in float32 (float64 for float64) and stores the result rounded once; GLU's backward
stores two results (the gradients of both halves) into the halves of one array. Operands have
any strides (zero strides broadcast g); the shape is collapsed first (``_launch.collapse``),
so a contiguous operand costs no index arithmetic. Softplus' (beta, threshold) and Hardtanh's
(min_val, max_val) are passed by value as float64 bit patterns.

The formulas are PyTorch's (x: the input; g: the output gradient; s = sigmoid(x);
t = tanh(log1p(exp(x)))):

    silu         x / (1 + exp(-x))                 g s (1 + x (1 - s))
    mish         x t                               g (t + x s (1 - t^2))
    softplus     log1p(exp(b x)) / b, x where b x > threshold;   g e / (e + 1), e = exp(b x),
                                                                 g where b x > threshold
    log_sigmoid  min(x, 0) - log1p(exp(-|x|))      g / (1 + exp(x))
    hardswish    x min(max(x + 3, 0), 6) / 6       0 for x <= -3, g (x / 3 + 1/2) below 3,
                                                   else g (NaN too)
    hardsigmoid  min(max(x + 3, 0), 6) / 6         g / 6 inside (-3, 3), else 0 (NaN too)
    hardtanh     min(max(x, lo), hi)               g inside (lo, hi), else 0 (NaN too)
    glu          a / (1 + exp(-b))                 da = g s(b), db = g a s(b) (1 - s(b))

Maxima and minima propagate NaN, divisions are IEEE (``div_rn``) for float32, as the NumPy
backend's ufuncs.
"""

from __future__ import annotations

import triton.language as tl
from triton.language.extra import libdevice

from ...runtime import dtype as D
from ...runtime import memory as _memory
from ...runtime.array import DeviceArray
from ..geometry import activation_entry
from . import _launch as L
from . import elementwise as E
from ._launch import block_range
from .elementwise import FBITS, scalar_arg
from .launcher import Launch, jit
from .memory import result_array

__all__ = ["ACTIVATIONS", "FORMULAS", "activation", "activation_backward", "glu",
           "glu_backward"]



@jit
def _div(a, b):
    # a / b, IEEE-rounded for float32 (Triton's / is the approximate div.full there)
    if a.dtype == tl.float64:
        r = a / b
    else:
        r = tl.math.div_rn(a, b)
    return r


@jit
def _sigmoid(x):
    return _div(tl.zeros_like(x) + 1.0, 1.0 + libdevice.exp(-x))


@jit
def _tanh_softplus(x):
    return libdevice.tanh(libdevice.log1p(libdevice.exp(x)))


@jit
def _clip(x, lo, hi):  # (NaN stays NaN, as NumPy's clip and PyTorch's clamp)
    lower = tl.maximum(x, lo, propagate_nan=tl.PropagateNan.ALL)
    return tl.minimum(lower, hi, propagate_nan=tl.PropagateNan.ALL)


# -- formulas: f(x, y, g, p0, p1) -------------------------------------------------------------
@jit
def _silu(x, y, g, p0, p1):
    return _div(x, 1.0 + libdevice.exp(-x))


@jit
def _silu_grad(x, y, g, p0, p1):
    s = _sigmoid(x)
    return g * (s * (1.0 + x * (1.0 - s)))


@jit
def _mish(x, y, g, p0, p1):
    return x * _tanh_softplus(x)


@jit
def _mish_grad(x, y, g, p0, p1):
    t = _tanh_softplus(x)
    return g * (t + x * _sigmoid(x) * (1.0 - t * t))


@jit
def _softplus(x, y, g, p0, p1):
    bx = x * p0
    return tl.where(bx > p1, x, _div(libdevice.log1p(libdevice.exp(bx)), p0 + tl.zeros_like(x)))


@jit
def _softplus_grad(x, y, g, p0, p1):
    bx = x * p0
    z = libdevice.exp(bx)  # (inf where b x > threshold: not selected)
    return tl.where(bx > p1, g, g * _div(z, z + 1.0))


@jit
def _log_sigmoid(x, y, g, p0, p1):
    head = tl.minimum(x, 0.0, propagate_nan=tl.PropagateNan.ALL)
    return head - libdevice.log1p(libdevice.exp(-tl.abs(x)))


@jit
def _log_sigmoid_grad(x, y, g, p0, p1):
    return _div(g, 1.0 + libdevice.exp(x))


@jit
def _hardswish(x, y, g, p0, p1):
    return _div(x * _clip(x + 3.0, 0.0, 6.0), tl.zeros_like(x) + 6.0)


@jit
def _hardswish_grad(x, y, g, p0, p1):
    inner = g * (_div(x, tl.zeros_like(x) + 3.0) + 0.5)
    return tl.where(x <= -3.0, 0.0, tl.where(x < 3.0, inner, g))


@jit
def _hardsigmoid(x, y, g, p0, p1):
    return _div(_clip(x + 3.0, 0.0, 6.0), tl.zeros_like(x) + 6.0)


@jit
def _hardsigmoid_grad(x, y, g, p0, p1):
    return tl.where((x > -3.0) & (x < 3.0), _div(g, tl.zeros_like(g) + 6.0), 0.0)


@jit
def _hardtanh(x, y, g, p0, p1):
    return _clip(x, p0, p1)


@jit
def _hardtanh_grad(x, y, g, p0, p1):
    return tl.where((x > p0) & (x < p1), g, 0.0)


@jit
def _glu(x, y, g, p0, p1):
    return _div(x, 1.0 + libdevice.exp(-y))  # x, y: the halves a, b


@jit
def _glu_grad(x, y, g, p0, p1):
    s = _sigmoid(y)
    return g * s, g * x * s * (1.0 - s)


# op -> (forward formula, gradient formula, number of parameters): the contract's table
ACTIVATIONS = {
    "silu": (_silu, _silu_grad, 0),
    "mish": (_mish, _mish_grad, 0),
    "softplus": (_softplus, _softplus_grad, 2),
    "log_sigmoid": (_log_sigmoid, _log_sigmoid_grad, 0),
    "hardswish": (_hardswish, _hardswish_grad, 0),
    "hardsigmoid": (_hardsigmoid, _hardsigmoid_grad, 0),
    "hardtanh": (_hardtanh, _hardtanh_grad, 2),
}
# every formula the kernel runs, by name (the sm_90 compile check's list)
FORMULAS = {name: f for op, (fw, bw, _) in ACTIVATIONS.items()
            for name, f in ((op, fw), (op + "_grad", bw))}
FORMULAS.update(glu=_glu, glu_grad=_glu_grad)


# ------------------------------------------------------------------------------------------
# The kernel
# ------------------------------------------------------------------------------------------
@jit(do_not_specialize=["p0_bits", "p1_bits"])
def _activation_kernel(
    out_ptr,   # *T: the result; element i of the collapsed shape at its offsets by o_st
    out2_ptr,  # *T: a second result (GLU's db) at the same offsets from its own base, or None
    x_ptr,     # *T: the input (GLU: the first half a), viewed by x_st
    y_ptr,     # *T: GLU's second half b, viewed by y_st, or None
    g_ptr,     # *T: the output gradient, viewed by g_st (zeros broadcast), or None
    p0_bits: tl.int64, p1_bits: tl.int64,  # the formula's parameters, float64 bit patterns
    FN: tl.constexpr,  # the formula, an entry of FORMULAS
    CT: tl.constexpr,  # the compute type: float32, or float64
    shape,     # tuple of NDIM collapsed sizes, innermost last
    o_st, x_st, y_st, g_st,  # tuples of NDIM element strides (zeros for an absent operand)
    n,         # number of elements
    NDIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr,
):
    p, mask = block_range(n, BLOCK, INT64)
    oo = tl.zeros_like(p)
    xo = tl.zeros_like(p)
    yo = tl.zeros_like(p)
    go = tl.zeros_like(p)
    rem = p
    for d in tl.static_range(NDIM - 1, -1, -1):  # the flat index -> each operand's offset
        if d == 0:
            idx = rem
        else:
            idx = rem % shape[d]
            rem = rem // shape[d]
        oo += idx * o_st[d]
        xo += idx * x_st[d]
        if y_ptr is not None:
            yo += idx * y_st[d]
        if g_ptr is not None:
            go += idx * g_st[d]
    x = tl.load(x_ptr + xo, mask=mask, other=1).to(CT)
    y = x
    g = x
    if y_ptr is not None:
        y = tl.load(y_ptr + yo, mask=mask, other=1).to(CT)
    if g_ptr is not None:
        g = tl.load(g_ptr + go, mask=mask, other=1).to(CT)
    p0 = p0_bits.to(tl.int64).to(tl.float64, bitcast=True).to(CT)
    p1 = p1_bits.to(tl.int64).to(tl.float64, bitcast=True).to(CT)
    if out2_ptr is not None:
        r, r2 = FN(x, y, g, p0, p1)
        tl.store(out2_ptr + oo, r2.to(out2_ptr.dtype.element_ty), mask=mask)
    else:
        r = FN(x, y, g, p0, p1)
    tl.store(out_ptr + oo, r.to(out_ptr.dtype.element_ty), mask=mask)


# ------------------------------------------------------------------------------------------
# Plans and launchers
# ------------------------------------------------------------------------------------------
_PLANS = L.plan_cache()  # (formula, dtype, out shape and strides, operands' layouts) -> Launch
_CT = {D.float16: tl.float32, D.bfloat16: tl.float32, D.float32: tl.float32,
       D.float64: tl.float64}


def _layout(a):
    return None if a is None else (a.shape, a.strides)


def _plan(key):
    fn, dtype, shape, o_st = key[:4]
    nd = len(shape)
    sts = [o_st] + [(0,) * nd if op is None else L.broadcast_strides(op[0], op[1], shape)
                    for op in key[4:]]
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        launch = _PLANS[key] = None
        return launch
    cshape, cst = L.collapse(shape, *sts)
    if not cshape:  # one element
        cshape, cst = (1,), tuple((0,) for _ in cst)
    block = E.FLAT_BLOCK_LARGE if n >= E.FLAT_LARGE_AT else E.FLAT_BLOCK
    tail = (fn, _CT[dtype], cshape, *cst, n, len(cshape), block, L.needs_int64(shape, *sts))
    launch = _PLANS[key] = Launch(_activation_kernel, (L.cdiv(n, block),), tail,
                                  num_warps=L.num_warps(block), **L.EXACT)
    return launch


def _run(fn, out, out2, x, y, g, params):
    """Launches formula ``fn`` writing ``out`` (and ``out2``, with out's strides) from x (y,
    g: None or broadcast to out's shape)."""
    key = (fn, x.dtype, out.shape, out.strides, _layout(x), _layout(y), _layout(g))
    launch = _PLANS.get(key, False)
    if launch is False:
        launch = _plan(key)
    if launch is not None:
        L.ensure_driver()
        p0, p1 = (params + (0.0, 0.0))[:2]
        launch(out, out2, x, y, g, scalar_arg(p0, FBITS), scalar_arg(p1, FBITS))
    return out


def _float(op: str, *arrays) -> None:
    for a in arrays:
        if a.dtype not in _CT:
            raise L.unsupported(op, a.dtype, "floating point only")
        if a.dtype is not arrays[0].dtype:
            raise TypeError(f"{op}: operands of one dtype expected, got {arrays[0].dtype} and "
                            f"{a.dtype}")


def _new(shape, like) -> DeviceArray:
    return _memory.empty(shape, like.dtype, like.device)


def _check_g(op: str, g, shape) -> None:
    if g.shape != shape and E.bshape(op, g.shape, shape) != shape:
        raise ValueError(f"{op}: gradient of shape {g.shape} cannot be broadcast to {shape}")


def activation(op: str, x, *params: float):
    """Activation ``op`` of ``x`` (the table ``ACTIVATIONS``), one launch; ``params``:
    softplus' (beta, threshold), hardtanh's (min_val, max_val)."""
    fn = activation_entry(ACTIVATIONS, op, params)[0]
    _float(op, x)
    return _run(fn, result_array(x.shape, x.dtype, x.device, x), None, x, None, None, params)


def activation_backward(op: str, g, x, *params: float):
    """The gradient of ``activation(op, x, *params)`` for the output gradient ``g``
    (broadcast to x's shape), in x's dtype, one launch."""
    fn = activation_entry(ACTIVATIONS, op, params)[1]
    _float(op + "_backward", x, g)
    _check_g(op + "_backward", g, x.shape)
    out = result_array(x.shape, x.dtype, x.device, g, x)  # (PyTorch's operand order)
    return _run(fn, out, None, x, None, g, params)


def _halves(a: DeviceArray, dim: int) -> tuple:
    """The two halves of ``a`` along ``dim`` (non-negative, its size even), as views."""
    h = a.shape[dim] // 2
    shape = a.shape[:dim] + (h,) + a.shape[dim + 1:]
    return (DeviceArray(a.storage, a.offset, shape, a.strides, a.dtype),
            DeviceArray(a.storage, a.offset + h * a.strides[dim], shape, a.strides, a.dtype))


def glu(x, dim: int):
    """a sigmoid(b), (a, b) the halves of ``x`` along ``dim`` (non-negative, its size even),
    one launch."""
    _float("glu", x)
    a, b = _halves(x, dim)
    return _run(_glu, _new(a.shape, x), None, a, b, None, ())


def glu_backward(g, x, dim: int):
    """The gradient of ``glu(x, dim)`` for ``g`` (glu's output shape), x's shape and dtype:
    both halves' gradients from one launch."""
    _float("glu_backward", x, g)
    a, b = _halves(x, dim)
    _check_g("glu_backward", g, a.shape)
    out = _new(x.shape, x)
    da, db = _halves(out, dim)
    _run(_glu_grad, da, db, a, b, g, ())
    return out
