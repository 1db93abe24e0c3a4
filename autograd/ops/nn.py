"""Fused neural-network primitives: GELU, threshold, layer norm, cross-entropy, embedding.

Each forward is one call to a fused array function of the kernel contract (``k.gelu``,
``k.layer_norm``, ``k.cross_entropy``, ``k.embedding``); each first-order backward is one call
to its fused backward twin. Higher orders stay available:

- GELU's backward is itself a primitive (``GeluBackwardBackward0``, as in PyTorch) whose rule
  is written over the kernel contract (GELU'' is elementary), so every order goes through
  fused kernels where it can and ``create_graph=True`` works to any order;
- layer norm and cross-entropy (``fused = True``) use the fused backward when the graph is not
  being recorded (``create_graph=False``, the training case) and a composite rule in Tensor ops
  when it is (``k`` is ``ops.traced``), so double backward, hessians and gradgradcheck work;
- embedding's backward (a scatter-add) and its backward (a gather) are each other's rules.
"""

from __future__ import annotations

import math

from ...runtime import dtype as dtypes
from .. import checks
from ..dispatch import (SINK, Primitive, apply, as_shape, call, elementwise_jvp, linear_jvp,
                        meta, zeros)
from ..layout import channels_last_order, laid_out
from ..state import anywhere, state
from ..tensor import Tensor, make
from . import traced

__all__ = ["batch_norm_training", "check_class_indices", "check_norm_dtypes",
           "cross_entropy_rows", "elu", "embedding", "gelu", "layer_norm", "nll_loss_rows",
           "threshold"]

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_TANH_A = 0.044715


def _float_input(x, op: str, error=NotImplementedError) -> Tensor:
    """``x`` if it is a floating point Tensor; else PyTorch's errors: a TypeError, or (as its
    kernels, defined on floating dtypes only) a NotImplementedError naming ``op``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise error(f"\"{op}\" not implemented for '{checks.scalar_type_name(x.dtype)}': "
                    f"{op} expects a floating point input, got {x.dtype}")
    return x


def check_norm_dtypes(op: str, x: Tensor, *params) -> None:
    """PyTorch's rule for a normalisation's parameters (weight, bias, running statistics; None
    where absent): each of ``x``'s dtype, or all float32 for a float16/bfloat16 ``x`` (mixed
    precision); else its "mixed dtype" RuntimeError, naming ``op``. A dtype test only: no
    data is read."""
    given = [t for t in params if t is not None]
    if all(t.dtype is x.dtype for t in given):
        return
    where = x.device.type.upper()
    if x.dtype.name not in ("float16", "bfloat16"):
        raise RuntimeError(f"{op}: mixed dtype ({where}): all inputs must share same datatype "
                           f"(input is {x.dtype}, parameters "
                           f"{sorted({str(t.dtype) for t in given})})")
    if any(t.dtype.name != "float32" for t in given):
        raise RuntimeError(f"{op}: mixed dtype ({where}): expect parameter to have scalar type "
                           f"of Float for a {x.dtype} input")


def check_class_indices(target: Tensor, byte_ok: bool = False) -> Tensor:
    """Class-index targets as int64. PyTorch's nll_loss over (N, C) or (C,) inputs takes Long
    or Byte targets (``byte_ok``: "expected target dtype to be Long or Byte, but got Float");
    its spatial form and the margin losses take Long only ("expected scalar type Long but
    found Byte")."""
    dt = target.dtype
    if dt.name == "int64":
        return target
    if not byte_ok:
        raise checks.expected_scalar_type(dtypes.int64, dt)
    if dt.name == "uint8":
        return target.long()
    raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                       f"{dtypes.CPP_NAMES[dt.name]}")


# -- GELU ----------------------------------------------------------------------------------------

class GeluBackward0(Primitive):
    """y = GELU(x): dx = GeluBackwardBackward0(g, x) (the fused g * GELU'(x)).

    Where the backend computes GELU'(x) alongside GELU(x) for less than its backward would
    spend recomputing it (the CPU: ~7 more NumPy passes in the forward for ~20 fewer in the
    backward, a third of a transformer step's GELU time), a recording forward keeps it on the
    node (``_derivative``, dropped with the saved tensors), and the first-order backward is
    one multiply; x is still saved, for version checks, double backward and forward AD. Not
    while saved-tensor hooks are active: what is kept for backward is then the hooks' alone,
    as PyTorch's GeluBackward0 saves only ``self``.
    """

    __slots__ = ()
    op_name = "gelu"
    save_inputs = (0,)
    jvp = staticmethod(elementwise_jvp)
    _derivative = None

    @staticmethod
    def forward(ctx, k, x, approximate):
        ctx.approximate = approximate
        if ctx is SINK or (anywhere.saved_hooks and state.saved_hooks):
            return k.gelu(x, approximate)
        y, ctx._derivative = k.gelu(x, approximate, with_grad=True)
        return y

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, = saved
        d = ctx._derivative  # (recorded, GeluBackwardBackward0's rule still uses x)
        if d is None:
            return call(k, GeluBackwardBackward0, (g, x), ctx.approximate)
        return call(k, GeluBackwardBackward0, (g, x), ctx.approximate, d)

    def _release(self) -> None:
        super()._release()
        self._derivative = None


class GeluBackwardBackward0(Primitive):
    """z = g * GELU'(x) (fused): dg = gg * GELU'(x) (this op again), dx = gg * g * GELU''(x).

    GELU''(x) = phi(x) (2 - x^2) for the exact form (phi the standard normal density); for the
    tanh form, with u = c (x + a x^3), t = tanh u, u' = c (1 + 3 a x^2), u'' = 6 a c x:
    GELU''(x) = (1 - t^2) (u' + 0.5 x (u'' - 2 t u'^2)).
    """

    __slots__ = ()
    op_name = "gelu_backward"
    save_inputs = (0, 1)
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, g, x, approximate, derivative=None):
        # derivative: GELU'(x) as GeluBackward0's forward kept it, or None (recomputed here)
        ctx.approximate = approximate
        return k.gelu_backward(g, x, approximate, derivative)  # (PyTorch's layout: g's first)

    @staticmethod
    def vjp(ctx, k, saved, gg):
        g, x = saved
        need_g, need_x = ctx.needs_input_grad
        dg = call(k, GeluBackwardBackward0, (gg, x), ctx.approximate) if need_g else None
        dx = k.mul(k.mul(gg, g), _gelu_second_derivative(k, x, ctx.approximate)) if need_x \
            else None
        return dg, dx


def _gelu_second_derivative(k, x, approximate: str):
    mul, add = k.mul, k.add
    xx = mul(x, x)
    if approximate == "tanh":
        u1 = mul(add(mul(xx, 3 * _GELU_TANH_A), 1), _SQRT_2_OVER_PI)
        t = k.unary("tanh", mul(add(x, mul(mul(xx, x), _GELU_TANH_A)), _SQRT_2_OVER_PI))
        u2 = mul(x, 6 * _GELU_TANH_A * _SQRT_2_OVER_PI)
        return mul(add(k.neg(mul(t, t)), 1),  # (1 - t t: rsub, as the Tensor form)
                   add(u1, mul(mul(x, 0.5), k.sub(u2, mul(mul(mul(t, u1), u1), 2)))))
    return mul(mul(k.exp(mul(xx, -0.5)), _INV_SQRT_2PI), add(k.neg(xx), 2))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """GELU(x) = x * Phi(x), or its tanh approximation (``approximate='tanh'``)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh. (got "
                           f"{approximate!r})")
    return apply(GeluBackward0, (_float_input(input, "gelu"),), approximate)


# -- threshold -----------------------------------------------------------------------------------

class ThresholdBackward0(Primitive):
    """y = x where x > threshold, else value: dx = ThresholdBackwardBackward0(g, x) (g where
    x > threshold, else 0; a NaN x passes g on), as PyTorch's threshold_backward."""

    __slots__ = ()
    op_name = "threshold"
    save_inputs = (0,)
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, x, threshold, value, out=None):
        ctx.threshold = threshold
        r = k.where(k.le(x, threshold), value, x)
        if out is None:
            return r
        k.copy_(out, r)
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        # x only selects (its derivative through the rule is 0), so a recorded rule takes it
        # detached: the backward graph gets no edge into the forward one
        x = saved[0].detach() if isinstance(saved[0], Tensor) else saved[0]
        return call(k, ThresholdBackwardBackward0, (g, x), ctx.threshold)


# threshold_ in place: the mask is read from the result (the input is overwritten), as in
# PyTorch, whose in-place form saves its result
ThresholdBackward1 = ThresholdBackward0.variant("ThresholdBackward1", "threshold_",
                                                save_inputs=(), save_output=True,
                                                writes_out=True)


class ThresholdBackwardBackward0(Primitive):
    """z = g where x > threshold, else 0: linear in g (this op again on gg); x gets zeros with
    no history (PyTorch's ``zeros_like(grad)``)."""

    __slots__ = ()
    op_name = "threshold_backward"
    save_inputs = (1,)
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, g, x, threshold):
        ctx.threshold = threshold
        return k.where(k.le(x, threshold), 0, g)

    @staticmethod
    def vjp(ctx, k, saved, gg):
        x, = saved
        need_g, need_x = ctx.needs_input_grad
        dg = call(k, ThresholdBackwardBackward0, (gg, x), ctx.threshold) if need_g else None
        return dg, (zeros(k, gg.shape, gg) if need_x else None)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``input`` where it is greater than ``threshold``, else ``value`` (elementwise); in place
    with ``inplace``. The gradient passes where ``input > threshold``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"threshold(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    dt = input.dtype
    if dt is dtypes.bool or dt.is_complex:
        raise checks.kernel_not_implemented(f"threshold_{input.device.type}", dt)
    if not dt.is_floating_point:  # (PyTorch's kernel converts both to the integer type)
        threshold, value = int(threshold), int(value)
        info = dtypes.iinfo(dt)
        if not info.min <= value <= info.max:
            raise RuntimeError(f"value cannot be converted to type {dt.name}_t without "
                               f"overflow")
    if inplace:
        from ..dispatch import apply_inplace
        from ..grad_mode import is_grad_enabled
        if value > threshold and input.requires_grad and is_grad_enabled():
            # the result cannot tell a replaced value from a kept one (both > threshold): the
            # mask must come from the input, which the write overwrites; so computed out of
            # place and written back (recorded as a copy)
            return input.copy_(apply(ThresholdBackward0, (input.clone(),), threshold, value))
        return apply_inplace(ThresholdBackward1, input, (), threshold, value)
    return apply(ThresholdBackward0, (input,), threshold, value)


# -- ELU (and SELU, CELU) ------------------------------------------------------------------------

class EluBackward0(Primitive):
    """y = scale x where x > 0, else alpha scale (exp(input_scale x) - 1): PyTorch's elu, which
    selu (alpha, scale = its constants) and celu (input_scale = 1 / alpha) are too.

    dx = g scale where x > 0, else g alpha scale input_scale exp(input_scale x), from x as
    PyTorch's elu_backward: a composite through expm1, whose rule is y + 1, loses the
    gradient where expm1 rounds to -1 (about 2e-9 at x = -20 in float32 becomes 0). The rule
    is written over the kernel contract, so it is recorded for higher orders.
    """

    __slots__ = ()
    op_name = "elu"
    save_inputs = (0,)
    jvp = staticmethod(elementwise_jvp)

    @staticmethod
    def forward(ctx, k, x, alpha, scale, input_scale):
        ctx.params = (alpha, scale, input_scale)
        low = k.le(x, 0)  # (PyTorch's test: a NaN takes the linear branch, value and gradient)
        # the branch not taken must stay finite: expm1 sees min(x, 0) only
        neg = k.mul(k.unary("expm1", k.mul(k.where(low, x, 0), input_scale)), alpha * scale)
        return k.where(low, neg, k.mul(x, scale))

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, = saved
        alpha, scale, input_scale = ctx.params
        # exp of x where x < 0 only: at 0 the first derivative is the exponential branch's
        # and the second 0, as PyTorch's elu_backward and its double backward give
        xn = k.where(k.lt(x, 0), x, 0)
        neg = k.mul(k.exp(k.mul(xn, input_scale)), alpha * scale * input_scale)
        return k.mul(g, k.where(k.le(x, 0), neg, scale))


def elu(input: Tensor, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0,
        op: str = "elu") -> Tensor:
    """PyTorch's ``elu`` kernel: ``scale * x`` for x > 0, else
    ``alpha * scale * (exp(input_scale * x) - 1)``; floating-point inputs only. ``op`` is the
    name a non-tensor input's TypeError gives (``selu``, ``celu`` call this kernel too)."""
    checks.tensor_arg(input, op)
    if not input.dtype.is_floating_point:
        raise checks.kernel_not_implemented("elu", input.dtype)
    return apply(EluBackward0, (input,), float(alpha), float(scale), float(input_scale))


# -- layer norm ----------------------------------------------------------------------------------

class NativeLayerNormBackward0(Primitive):
    """y = (x - mean) * rstd * weight + bias over the trailing ``normalized_shape`` dims.

    Inputs (x, weight[, bias]); ``_LayerNormNoAffine`` below is the weightless variant. With
    xhat = (x - mean) rstd and gw = g * weight (means over the normalised dims):
        dx = rstd (gw - mean(gw) - xhat mean(gw xhat)),  dweight = sum(g xhat),  dbias = sum(g)
    """

    __slots__ = ()
    op_name = "layer_norm"
    save_inputs = (0, 1)
    fused = True

    @staticmethod
    def forward(ctx, k, x, *args):
        arrays, (n, nd, eps) = args[:-3], args[-3:]
        w = b = None
        if arrays:
            w = k.view(k.contiguous(arrays[0]), (n,))
            if len(arrays) > 1:
                b = k.view(k.contiguous(arrays[1]), (n,))
        m = 1
        for s in x.shape:
            m *= s
        m = m // n if n else 0
        y, mean, rstd = k.layer_norm(k.view(k.contiguous(x), (m, n)), w, b, eps)
        ctx.n, ctx.nd, ctx.eps, ctx.mean, ctx.rstd, ctx.m = n, nd, eps, mean, rstd, m
        return k.view(y, x.shape)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, w = saved[0], (saved[1] if len(saved) > 1 else None)
        needs = ctx.needs_input_grad
        if k is traced:  # recorded: the composite formula, differentiable to any order
            grads = _layer_norm_composite_backward(g, x, w, x.ndim - ctx.nd, ctx.eps, needs)
        else:
            n, m = ctx.n, ctx.m
            dx, dw, db = k.layer_norm_backward(
                k.view(k.contiguous(g), (m, n)), k.view(k.contiguous(x), (m, n)),
                None if w is None else k.view(k.contiguous(w), (n,)), ctx.mean, ctx.rstd)
            grads = (k.view(dx, tuple(x.shape)),
                     None if dw is None else k.view(dw, tuple(w.shape)),
                     None if db is None else k.view(db, tuple(w.shape)))
        grads = grads[:len(needs)]
        return tuple(gr if need else None for gr, need in zip(grads, needs))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, n, nd, eps):
        """With xhat = (x - mean) rstd (means over the normalised dims):
        dy = rstd (tx - mean(tx) - xhat mean(xhat tx)) w + xhat tw + tb."""
        x = primals[0]
        return _normalization_jvp(primals, tangents, tuple(range(x.ndim - nd, x.ndim)),
                                  tuple(x.shape[x.ndim - nd:]), eps)


def _normalization_jvp(primals, tangents, dims: tuple, param_shape: tuple, eps: float):
    """The tangent of y = xhat w + b, xhat = (x - mean) rstd with the statistics over
    ``dims`` (layer norm: the trailing dims; batch norm: all but the channels), w and b
    viewed as ``param_shape``:
        dy = rstd (tx - mean(tx) - xhat mean(xhat tx)) w + xhat tw + tb."""
    x, w = primals[0], (primals[1] if len(primals) > 1 else None)
    tx, tw, tb = (tuple(tangents) + (None, None))[:3]
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = xc * rstd
    res = None
    if tx is not None:
        res = rstd * (tx - tx.mean(dims, keepdim=True)
                      - xhat * (xhat * tx).mean(dims, keepdim=True))
        if w is not None:
            res = res * w.reshape(param_shape)
    for term in (None if tw is None else xhat * tw.reshape(param_shape),
                 None if tb is None else tb.reshape(param_shape)):
        if term is not None:
            res = term if res is None else res + term
    return res


class _LayerNormNoAffine(NativeLayerNormBackward0):
    __slots__ = ()
    save_inputs = (0,)


_LayerNormNoAffine.__name__ = _LayerNormNoAffine.__qualname__ = "NativeLayerNormBackward0"


def _layer_norm_composite_backward(g, x, w, first_dim, eps, needs):
    dims = tuple(range(first_dim, x.ndim))
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = xc * rstd
    gw = g * w if w is not None else g
    dx = rstd * (gw - gw.mean(dims, keepdim=True) - xhat * (gw * xhat).mean(dims, keepdim=True))
    if w is None:
        return (dx,)
    shape = tuple(w.shape)
    dw = (g * xhat).sum_to_size(shape) if needs[1] else None
    db = g.sum_to_size(shape) if len(needs) > 2 and needs[2] else None
    return dx, dw, db


# -- batch norm (training statistics) ------------------------------------------------------------

class NativeBatchNormBackward0(Primitive):
    """Batch normalisation with the batch's statistics: per channel (dim 1), over every other
    dim, y = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + eps) (biased variance).
    Outputs (y, mean, var), the last two per channel and without gradient (for the running
    statistics). One node, as PyTorch's native_batch_norm records, over the fused kernels
    ``k.batch_norm`` / ``k.batch_norm_backward`` (half precision computes in float32)."""

    __slots__ = ()
    op_name = "native_batch_norm"
    save_inputs = (0, 1)
    nondiff_outputs = (1, 2)
    fused = True

    @staticmethod
    def forward(ctx, k, x, *args):
        arrays, eps, running = args[:-2], args[-2], args[-1]
        ctx.order = order = channels_last_order(k, x, row_major_wins=True)
        y, mean, var = k.batch_norm(_rows(k, x, order), arrays[0] if arrays else None,
                                    arrays[1] if len(arrays) > 1 else None, eps)
        ctx.eps, ctx.mean, ctx.var = eps, mean, var
        if running is not None:
            # part of the op, before the node saves anything, as in PyTorch's
            # native_batch_norm: a checkpoint's recomputation that stops at this node's saves
            # (early stop) has updated them again, as PyTorch's has
            running(make(mean), make(var))
        return _unrows(k, y, x, order), mean, var

    @staticmethod
    def vjp(ctx, k, saved, g, _g_mean=None, _g_var=None):
        x, w = saved[0], (saved[1] if len(saved) > 1 else None)
        needs = ctx.needs_input_grad
        if k is traced:  # recorded: the composite formula, differentiable to any order
            dims = (0,) + tuple(range(2, len(x.shape)))
            grads = _batch_norm_composite_backward(g, x, w, dims, ctx.eps, needs)
        else:
            order = ctx.order
            grads = k.batch_norm_backward(_rows(k, g, order), _rows(k, x, order), w, ctx.mean,
                                          ctx.var, ctx.eps)
            grads = (_unrows(k, grads[0], x, order),) + tuple(grads[1:])
        grads = grads[:len(needs)]
        return tuple(gr if need else None for gr, need in zip(grads, needs))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, eps, running):
        """dy = rstd (tx - mean(tx) - xhat mean(xhat tx)) w + xhat tw + tb (means per channel);
        the statistics' tangents are not formed (they have no gradient)."""
        x = primals[0]
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        return (_normalization_jvp(primals, tangents, (0,) + tuple(range(2, x.ndim)), shape, eps),
                None, None)


# Note [Channels-last batch norm]
#   PyTorch's batch norm gives its output and its input gradient in the memory format the
#   input's strides suggest. A channels-last (N, C, H, W) input is normalised as what its
#   memory holds, N*H*W rows of C channels: the kernels see the (N*H*W, C, 1) view of its
#   NHWC permutation (no copy; their statistics per dim 1 are the same), and the result,
#   (N*H*W, C, 1) in row-major order, viewed back, is channels-last (NumPy's kernel walks
#   the rows with the channels innermost, as it does short planes). Without this, the
#   kernels copied the input to NCHW, and a channels-last result would cost another copy.
def _rows(k, a, order):
    """``a`` (N, C, *) as (N*prod(*), C, 1) in its NHWC order (a view where its memory allows,
    else a copy); ``a`` itself without ``order``."""
    if order is None:
        return a
    p = k.permute(a, order[0])
    shape = (math.prod(p.shape[:-1]), p.shape[-1], 1)
    v = k.view(p, shape)
    return v if v is not None else k.view(k.contiguous(p), shape)


def _unrows(k, r, like, order):
    """The (N*prod(*), C, 1) result ``r`` of ``_rows`` viewed back as ``like``'s (N, C, *):
    channels-last strides; without ``order``, ``r`` row-major (a kernel composed of
    elementwise ops, as the Triton backend's, would keep a permuted input's layout)."""
    if order is None:
        return laid_out(k, r, None)
    shape = tuple(like.shape)
    nhwc = tuple(shape[d] for d in order[0])
    return k.permute(k.view(r, nhwc), order[1])


class _BatchNormNoAffine(NativeBatchNormBackward0):
    __slots__ = ()
    save_inputs = (0,)


_BatchNormNoAffine.__name__ = _BatchNormNoAffine.__qualname__ = "NativeBatchNormBackward0"


def _batch_norm_composite_backward(g, x, w, dims, eps, needs):
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = xc * rstd
    shape = tuple(mu.shape)
    gw = g * w.reshape(shape) if w is not None else g
    dx = rstd * (gw - gw.mean(dims, keepdim=True) - xhat * (gw * xhat).mean(dims, keepdim=True))
    if w is None:
        return (dx,)
    c = (x.shape[1],)
    dw = (g * xhat).sum(dims).reshape(c) if needs[1] else None
    db = g.sum(dims).reshape(c) if len(needs) > 2 and needs[2] else None
    return dx, dw, db


def batch_norm_training(x: Tensor, weight, bias, eps: float, running=None) -> tuple:
    """(y, mean, var) of batch normalisation with ``x``'s own statistics per channel (dim 1;
    the biased variance), one NativeBatchNormBackward0 node; ``weight``/``bias`` (C,) or
    None. ``running(mean, var)``, when given, updates the running statistics from the batch's
    (Tensors without history) inside the op, before its node saves its inputs."""
    x = _float_input(x, "batch_norm")
    c = (x.shape[1],)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            if tuple(t.shape) != c:
                raise RuntimeError(f"batch_norm: expected {name} of shape {list(c)}, got "
                                   f"{list(t.shape)}")
            checks.check_same_device(x, t, name, "batch_norm")
    if bias is not None and weight is None:
        from .creation import ones
        weight = ones(c, dtype=x.dtype, device=x.device)
    inputs = tuple(t for t in (x, weight, bias) if t is not None)
    op = NativeBatchNormBackward0 if weight is not None else _BatchNormNoAffine
    return apply(op, inputs, eps, running)


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None,
               eps: float = 1e-5) -> Tensor:
    """Layer normalisation over the trailing dims ``normalized_shape`` (an int or a tuple)."""
    # (nn.LayerNorm's call, over the last dim with a weight and bias of the input's dtype and
    # device, passes every check below: taken in a few field reads, a third of the op's cost)
    if type(normalized_shape) is tuple and len(normalized_shape) == 1 and \
            isinstance(input, Tensor) and isinstance(weight, Tensor) and \
            isinstance(bias, Tensor):
        xa, dt, dev = input._data, input._dtype, input._device
        if (dt.is_floating_point and weight._dtype is dt and bias._dtype is dt
                and weight._device is dev and bias._device is dev and xa.shape
                and xa.shape[-1] == normalized_shape[0] != 0
                and weight._data.shape == normalized_shape == bias._data.shape
                and 0 not in xa.shape):
            return apply(NativeLayerNormBackward0, (input, weight, bias), normalized_shape[0],
                         1, float(eps))
    x = _float_input(input, "layer_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise RuntimeError("layer_norm: Expected normalized_shape to be at least 1-dimensional, "
                           "i.e., containing at least one element, but got normalized_shape = []")
    if tuple(x.shape[x.ndim - len(shape):]) != shape or len(shape) > x.ndim:
        raise RuntimeError(f"layer_norm: Given normalized_shape={list(shape)}, expected input "
                           f"with shape [*, {', '.join(str(s) for s in shape)}], but got input of "
                           f"size {list(x.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"layer_norm: Expected {name} to be of same shape as "
                               f"normalized_shape, but got {name} of shape {list(t.shape)} and "
                               f"normalized_shape = {list(shape)}")
    check_norm_dtypes("layer_norm", x, weight, bias)
    if (weight is not None and weight.dtype is not x.dtype) or (
            bias is not None and bias.dtype is not x.dtype):
        # float32 parameters of a float16/bfloat16 input (the only mix allowed): normalised in
        # float32 and rounded once, the parameters' gradients float32, as PyTorch's kernel
        return layer_norm(x.float(), shape, weight, bias, eps).to(x.dtype)
    if x.numel() == 0:  # nothing to normalise (the kernels want a row of at least one value)
        y = x.clone()
        y = y if weight is None else y * weight
        return y if bias is None else y + bias
    if bias is not None and weight is None:
        from .creation import ones
        weight = ones(shape, dtype=x.dtype, device=x.device)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            checks.check_same_device(x, t, name, "layer_norm")
    n = math.prod(shape)
    inputs = tuple(t for t in (x, weight, bias) if t is not None)
    op = NativeLayerNormBackward0 if weight is not None else _LayerNormNoAffine
    return apply(op, inputs, n, len(shape), float(eps))


# -- cross-entropy -------------------------------------------------------------------------------

class CrossEntropyLossBackward0(Primitive):
    """loss_i = (1 - eps) (lse_i - x_i[t_i]) + eps (lse_i - mean_c x_ic), 0 on ignored rows:
    dx_i = g_i (softmax(x_i) - (1 - eps) onehot(t_i) - eps / C). With a 'sum' or 'mean'
    reduction the rows are reduced inside the op (as PyTorch's nll_loss reduces inside its
    node): g_i = g, or g / n with n the rows not ignored, and no sum/div nodes or launches."""

    __slots__ = ()
    op_name = "cross_entropy"
    save_inputs = (0,)
    keep_params = (0,)  # the target: saved, not an edge (Note [Saved indices])
    fused = True

    @staticmethod
    def forward(ctx, k, logits, target, ignore_index, label_smoothing, reduction="none"):
        loss, lse = k.cross_entropy(k.contiguous(logits), target, ignore_index, label_smoothing)
        ctx.lse, ctx.ignore_index, ctx.smoothing = lse, ignore_index, label_smoothing
        ctx.reduction, ctx.count = reduction, None
        if reduction == "none":
            return loss
        if reduction == "sum":
            return k.sum(loss, (0,), False)
        # the divisor: the rows not ignored (all ignored: 0 / 0, NaN, as PyTorch's mean)
        mean, ctx.count = k.mean_over_targets(loss, target, ignore_index)
        return mean

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, t = saved
        if k is traced:  # recorded: the composite formula, differentiable to any order
            if ctx.reduction != "none":
                g = g.expand(t.shape[0])
                if ctx.count is not None:
                    g = g / make(ctx.count)
            return _cross_entropy_composite_backward(g, x, t, make(ctx.lse), ctx.ignore_index,
                                                     ctx.smoothing)
        if ctx.reduction != "none":
            if ctx.count is not None:
                g = k.div(g, ctx.count)
            g = k.expand(g, tuple(t.shape))  # (read with its 0 stride: no copy)
        return k.cross_entropy_backward(g, k.contiguous(x), t, ctx.lse,
                                        ctx.ignore_index, ctx.smoothing)

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, target, *params):
        """The row's gradient (the composite backward with g = 1) dotted with the tangent,
        reduced as the output is."""
        (x,), t = primals, target
        ones = x.new_ones(t.shape)
        d = _cross_entropy_composite_backward(ones, x, t, make(ctx.lse), ctx.ignore_index,
                                              ctx.smoothing)
        rows = (tangents[0] * d).sum(1)
        if ctx.reduction == "none":
            return rows
        rows = rows.sum()
        return rows if ctx.count is None else rows / make(ctx.count)


def _cross_entropy_composite_backward(g, x, t, lse, ignore_index, smoothing):
    from .creation import arange
    c = x.shape[1]
    e = (x - lse.to(x.dtype).unsqueeze(1)).exp()  # lse is only a stabiliser here: any
    p = e / e.sum(1, keepdim=True)                 # constant shift gives the same softmax
    onehot = arange(c, device=x.device).unsqueeze(0) == t.unsqueeze(1)
    d = p - onehot.to(x.dtype) * (1.0 - smoothing)
    if smoothing:
        d = d - smoothing / c
    scale = g * (t != ignore_index).to(g.dtype)
    return d * scale.unsqueeze(1)


def cross_entropy_rows(logits: Tensor, target: Tensor, ignore_index: int = -100,
                       label_smoothing: float = 0.0, reduction: str = "none") -> Tensor:
    """Per-row cross-entropy of (N, C) logits against (N,) class indices: a (N,) tensor, 0 on
    rows whose target is ``ignore_index``; with ``reduction`` 'sum' or 'mean' (over the rows
    not ignored) the 0-d reduction of it, in the same op."""
    x = _float_input(logits, "cross_entropy")
    if x.ndim != 2 or target.ndim != 1 or target.shape[0] != x.shape[0]:
        raise ValueError(f"cross_entropy: expected (N, C) logits and (N,) targets, got "
                         f"{list(x.shape)} and {list(target.shape)}")
    if reduction not in ("none", "sum", "mean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    checks.check_same_device(x, target, "target", "cross_entropy")
    target = check_class_indices(target, byte_ok=True)
    # (a CUDA check may be deferred: its error then names the extreme target it recorded,
    # without reading the targets back)
    error = checks.first_bad_target(target, x.shape[1], int(ignore_index)) \
        if target.device.type == "cpu" else checks.target_out_of_bounds
    target = checks.guard_index(target, x.shape[1], error, ignore_index=int(ignore_index))
    return apply(CrossEntropyLossBackward0, (x,), target, int(ignore_index),
                 float(label_smoothing), reduction)


# -- negative log-likelihood ---------------------------------------------------------------------

def _on(k, fn, *xs):
    """``fn`` (Tensor ops) of a rule's operands: recorded on Tensors (``k`` is ops.traced),
    unrecorded on backend arrays, giving arrays back (None operands stay None)."""
    if k is traced:
        return fn(*xs)
    from ..grad_mode import no_grad
    with no_grad():
        out = fn(*[x if x is None else make(x) for x in xs])
    if isinstance(out, tuple):
        return tuple(None if o is None else o._data for o in out)
    return out._data


def _nll_row_weights(t: Tensor, w, dtype, ignore_index: int) -> Tensor:
    """Each row's weight: w[t], or 1; 0 where the target is ``ignore_index``."""
    valid = t != ignore_index
    if w is None:
        return valid.to(dtype)
    return w.to(dtype).index_select(0, t.where(valid, 0)).where(valid, 0.0)


def _nll_forward(x: Tensor, t: Tensor, w, ignore_index: int, reduction: str) -> tuple:
    from .creation import arange
    valid = t != ignore_index
    picked = arange(x.shape[1], device=x.device).unsqueeze(0) == t.unsqueeze(1)  # one-hot
    # where, not a product with the one-hot: only x[t] is read, so -inf log-probabilities of
    # other classes (and anything on ignored rows) give no NaN
    loss = (-x.where(picked, 0.0).sum(1) * _nll_row_weights(t, w, x.dtype, ignore_index))
    loss = loss.where(valid, 0.0)
    if reduction == "none":
        return loss, None
    if reduction == "sum":
        return loss.sum(), None
    total = _nll_row_weights(t, w, x.dtype, ignore_index).sum()
    return loss.sum() / total, total  # all rows ignored: 0 / 0 = NaN, as PyTorch's


def _nll_grad(g: Tensor, t: Tensor, w, total, c: int, ignore_index: int,
              reduction: str) -> Tensor:
    from .creation import arange
    valid = t != ignore_index
    if total is not None:
        g = g / total
    scale = (-g * _nll_row_weights(t, w, g.dtype, ignore_index)).where(valid, 0.0)
    picked = arange(c, device=g.device).unsqueeze(0) == t.unsqueeze(1)
    # ignored rows selected away last: exactly 0 even where g / total is inf (total 0)
    return scale.unsqueeze(1).where(picked, 0.0)


class NllLossBackward0(Primitive):
    """loss_i = -w[t_i] x_i[t_i], 0 where t_i is ``ignore_index``; 'sum' or 'mean' (over the
    rows' weights, the total weight a constant) reduced inside the op, as PyTorch's node:
    dx_i = -g_i w[t_i] onehot(t_i). The rule reads only the target and the class weights (None
    without), so those are saved (PyTorch's node also keeps the input); the composite it
    replaces kept an (N, C) one-hot mask. They are params, not edges: the node's one edge is
    x's, as PyTorch's (Note [Saved indices]). Linear in x: its jvp is the op applied to the
    tangent."""

    __slots__ = ()
    op_name = "nll_loss"
    keep_params = (0, 1)
    saved_names = ("target", "weight")
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, x, t, w, ignore_index, reduction):
        loss, total = _on(k, lambda *a: _nll_forward(*a, ignore_index, reduction), x, t, w)
        ctx.shape, ctx.ignore_index, ctx.reduction, ctx.total = (tuple(x.shape), ignore_index,
                                                                  reduction, total)
        return loss

    @staticmethod
    def vjp(ctx, k, saved, g):
        t, w = saved
        total = ctx.total
        if k is traced and total is not None:
            total = make(total)
        n, c = ctx.shape
        gx = _on(k, lambda g, t, w, total: _nll_grad(
            g if ctx.reduction == "none" else g.expand(n), t, w, total, c, ctx.ignore_index,
            ctx.reduction), g, t, w, total)
        return gx


def nll_loss_rows(x: Tensor, target: Tensor, weight, ignore_index: int, reduction: str,
                  spatial: bool) -> Tensor:
    """The negative log-likelihood of (N, C) log-probabilities ``x`` at class indices
    ``target`` (checked), as one node (``NllLoss2DBackward0`` for spatial input, as PyTorch
    names it)."""
    op = NllLoss2DBackward0 if spatial else NllLossBackward0
    w = None if weight is None else weight.to(x.dtype)
    return apply(op, (x,), target, w, int(ignore_index), reduction)


NllLoss2DBackward0 = NllLossBackward0.variant("NllLoss2DBackward0", "nll_loss2d")


# -- embedding -----------------------------------------------------------------------------------

class EmbeddingBackward0(Primitive):
    """out = weight[indices]: dweight = EmbeddingDenseBackward0(g, indices) (a scatter-add)."""

    __slots__ = ()
    op_name = "embedding"
    keep_params = (0,)  # the indices: saved, not an edge (Note [Saved indices])
    saved_names = ("indices",)
    jvp = linear_jvp()  # the tangent's rows at the indices
    # (it moves rows: the same for complex tables; reverse mode refuses complex tables, as
    # PyTorch's does)
    complex_jvp = jvp

    @staticmethod
    def forward(ctx, k, weight, indices, padding_idx, scale_grad_by_freq=False):
        ctx.num_weights, ctx.padding_idx = weight.shape[0], padding_idx
        ctx.scale_grad_by_freq = scale_grad_by_freq
        return k.embedding(weight, indices)

    @staticmethod
    def vjp(ctx, k, saved, g):
        idx, = saved
        if ctx.scale_grad_by_freq:
            # each row's gradient divided by how often the row was picked: every position's
            # contribution is divided by its index's count before the scatter-add (the counts
            # are the table gradient of ones, read back at the indices)
            dev, dt = meta(g)
            ones = k.full(tuple(idx.shape) + (1,), 1, dt, dev)
            counts = call(k, EmbeddingDenseBackward0, (ones,), idx, ctx.num_weights, None)
            g = k.div(g, call(k, EmbeddingBackward0, (counts,), idx, None))
        return call(k, EmbeddingDenseBackward0, (g,), idx, ctx.num_weights, ctx.padding_idx)


class EmbeddingDenseBackward0(Primitive):
    """dweight = scatter-add of g's rows at indices (padding row zeroed): its own gradient is
    the gather gg[indices] (rows at the padding index zero)."""

    __slots__ = ()
    op_name = "embedding_dense_backward"
    keep_params = (0,)
    saved_names = ("indices",)
    jvp = linear_jvp()

    @staticmethod
    def forward(ctx, k, g, indices, num_weights, padding_idx):
        ctx.padding_idx = padding_idx
        return k.embedding_backward(k.contiguous(g), indices, num_weights, padding_idx)

    @staticmethod
    def vjp(ctx, k, saved, gg):
        idx, = saved
        if ctx.padding_idx is not None:
            dev, dt = meta(gg)
            n = gg.shape[0]
            keep = k.ne(k.arange(0, 1, n, dtypes.int64, dev), ctx.padding_idx)
            gg = k.mul(gg, as_shape(k, k.astype(keep, dt), (n, 1)))
        return call(k, EmbeddingBackward0, (gg,), idx, None)


def embedding(input: Tensor, weight: Tensor, padding_idx=None, max_norm=None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False) -> Tensor:
    """Rows of ``weight`` (num_embeddings, dim) at the integer ``input``: input.shape + (dim,).
    The ``padding_idx`` row gets no gradient. With ``max_norm``, the picked rows whose
    ``norm_type``-norm exceeds it are first rescaled in place to norm ``max_norm`` (this
    modifies ``weight``, as PyTorch's does); ``scale_grad_by_freq`` divides each row's gradient
    by the number of times ``input`` picks it."""
    if not isinstance(input, Tensor) or input.dtype.name not in ("int64", "int32"):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{getattr(input, 'dtype', type(input).__name__)} instead (while "
                           f"checking arguments for embedding)")
    if weight.ndim != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, got shape {list(weight.shape)}")
    checks.check_same_device(weight, input, "index", "embedding")
    if padding_idx is not None:
        n = weight.shape[0]
        if not -n <= padding_idx < n:
            raise AssertionError("embedding: Padding_idx must be within num_embeddings")
        padding_idx %= n
    if input.dtype.name != "int64":
        input = input.long()
    if weight.shape[0] == 0 and input.numel():  # (every index is out of range: PyTorch's words)
        raise RuntimeError("embedding: weight has no rows (num_embeddings is 0): "
                           "index_select(): self indexing axis dim should be positive")
    input = checks.guard_index(input, weight.shape[0], checks.index_out_of_range)
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return apply(EmbeddingBackward0, (weight,), input, padding_idx, scale_grad_by_freq)


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """Scales the rows of ``weight`` that ``input`` picks and whose norm exceeds ``max_norm``
    by ``max_norm / (norm + 1e-7)`` (PyTorch's ``embedding_renorm_``), in place, unrecorded."""
    from ..grad_mode import no_grad
    with no_grad():
        rows = input.reshape(-1)
        w = weight[rows]
        a = w.abs()
        if norm_type == math.inf:
            norm = a.amax(1)
        elif norm_type == -math.inf:
            norm = a.amin(1)
        elif norm_type == 0:
            norm = (a != 0).sum(1).to(w.dtype)
        else:
            norm = (a ** norm_type).sum(1) ** (1.0 / norm_type)
        scale = (max_norm / (norm + 1e-7)).where(norm > max_norm, 1.0)
        weight[rows] = w * scale.unsqueeze(1)  # a row picked twice gets the same value twice


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float,
                      norm_type: float) -> Tensor:
    """Rescales in place each row of the 2-D ``input`` that ``indices`` picks and whose
    ``norm_type``-norm exceeds ``max_norm``, by ``max_norm / (norm + 1e-7)``; returns
    ``input``. The write is not differentiable (as PyTorch's), and refused on a leaf that
    requires grad while grad mode is on; ``embedding(max_norm=...)`` runs it under no_grad."""
    from ..dispatch import check_inplace
    checks.tensor_arg(input, "embedding_renorm_")
    checks.tensor_arg(indices, "embedding_renorm_", "indices")
    where = "(while checking arguments for embedding_renorm_)"
    if input.ndim != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {input.ndim}-dimensional "
                           f"tensor for argument #1 'self' {where}")
    if indices.dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"Expected tensor for argument #2 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {indices.type()} "
                           f"instead {where}")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {checks.scalar_type_name(input.dtype)} instead.")
    checks.check_same_device(input, indices, "indices", "embedding_renorm_")
    check_inplace(input)
    shape = list(input.shape)
    rows = checks.guard_index(indices.long().reshape(-1), shape[0], lambda bad: IndexError(
        f"select(): index {bad} out of range for tensor of size {shape} at dimension 0"))
    _embedding_renorm_(input, rows, max_norm, norm_type)
    return input


# -- scaled dot-product attention ----------------------------------------------------------------

class ScaledDotProductFlashAttentionBackward0(Primitive):
    """out = softmax(q k^T * scale) v over (B, H, T, D) inputs (causal: query i sees keys
    j <= i), one fused kernel that never holds the score matrix (``k.attention``, which also
    returns the rows' log-sum-exp). With P the softmax and delta = rowsum(g * out):
        dv = P^T g,  dS = P (g v^T - delta),  dq = dS k scale,  dk = dS^T q scale
    The fused backward recomputes P block by block from the saved log-sum-exp; the recorded
    rule (create_graph) is the same formula over a materialised P in Tensor ops."""

    __slots__ = ()
    op_name = "scaled_dot_product_attention"
    save_inputs = (0, 1, 2)
    save_output = True
    fused = True

    @staticmethod
    def forward(ctx, k, q, key, value, scale, causal):
        out, lse = k.attention(q, key, value, scale, causal)
        ctx.lse, ctx.scale, ctx.causal = lse, scale, causal
        return out

    @staticmethod
    def vjp(ctx, k, saved, g):
        q, key, value, out = saved
        if k is traced:  # recorded: the composite formula, differentiable to any order
            grads = _attention_composite_backward(g, q, key, value, ctx.scale, ctx.causal)
        else:
            # (both backends read g through its strides: the transposed gradient coming back
            # from the output projection is not copied)
            grads = k.attention_backward(g, q, key, value, out, ctx.lse, ctx.scale, ctx.causal)
        return tuple(gr if need else None for gr, need in zip(grads, ctx.needs_input_grad))

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, scale, causal):
        """dS = (tq k^T + q tk^T) scale,  dout = P (dS - rowsum(P dS)) v + P tv."""
        q, key, value = primals
        tq, tk, tv = tangents
        p = _attention_probs(q, key, scale, causal)
        ds = None
        if tq is not None:
            ds = tq.matmul(key.transpose(-2, -1)) * scale
        if tk is not None:
            term = q.matmul(tk.transpose(-2, -1)) * scale
            ds = term if ds is None else ds + term
        res = None
        if ds is not None:
            res = (p * (ds - (p * ds).sum(-1, keepdim=True))).matmul(value)
        if tv is not None:
            term = p.matmul(tv)
            res = term if res is None else res + term
        return res


def _attention_probs(q: Tensor, key: Tensor, scale: float, causal: bool) -> Tensor:
    from .creation import arange
    s = q.matmul(key.transpose(-2, -1)) * scale
    if causal:
        length, source = q.shape[-2], key.shape[-2]
        above = arange(source, device=q.device).unsqueeze(0) > arange(
            length, device=q.device).unsqueeze(1)
        s = s.masked_fill(above, -math.inf)
    return s.softmax(-1)


def _attention_composite_backward(g, q, key, value, scale, causal):
    p = _attention_probs(q, key, scale, causal)
    dv = p.transpose(-2, -1).matmul(g)
    dp = g.matmul(value.transpose(-2, -1))
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    return ds.matmul(key) * scale, ds.transpose(-2, -1).matmul(q) * scale, dv


ATTENTION_MAX_HEAD_DIM = 128  # the fused kernels hold a head's row in registers


def fused_attention(query: Tensor, key: Tensor, value: Tensor, scale: float,
                    causal: bool) -> Tensor:
    """``attention`` of 4-D (N, H, L, D) query and (N, H, S, D) key and value already checked
    (non-empty, one dtype and device, D at most ATTENTION_MAX_HEAD_DIM): the fused node."""
    return apply(ScaledDotProductFlashAttentionBackward0, (query, key, value), float(scale),
                 bool(causal))


def attention(query: Tensor, key: Tensor, value: Tensor, scale: float,
              causal: bool = False) -> Tensor:
    """softmax(query key^T * scale) value through the fused attention kernels: query
    (..., L, D), key and value (..., S, D) with equal leading dims, one floating dtype, D at
    most ATTENTION_MAX_HEAD_DIM; ``causal``: query i sees keys j <= i. Returns (..., L, D).
    (``nn.functional.scaled_dot_product_attention`` calls it where it applies.)"""
    for name, t in (("query", query), ("key", key), ("value", value)):
        _float_input(t, "scaled_dot_product_attention", RuntimeError)
        if t.ndim < 2:
            raise RuntimeError(f"scaled_dot_product_attention: expected {name} of at least 2 "
                               f"dims, got {list(t.shape)}")
    lead = tuple(query.shape[:-2])
    d = query.shape[-1]
    if (tuple(key.shape[:-2]) != lead or tuple(value.shape) != tuple(key.shape)
            or key.shape[-1] != d):
        raise RuntimeError(f"scaled_dot_product_attention: the fused kernel expects query "
                           f"(..., L, D) and key, value (..., S, D) with the same leading "
                           f"dims, got {list(query.shape)}, {list(key.shape)}, "
                           f"{list(value.shape)}")
    if key.dtype is not query.dtype or value.dtype is not query.dtype:
        raise RuntimeError(f"scaled_dot_product_attention: expected query, key and value of "
                           f"one dtype, got {query.dtype}, {key.dtype}, {value.dtype}")
    if d > ATTENTION_MAX_HEAD_DIM:
        raise RuntimeError(f"scaled_dot_product_attention: the fused kernel takes head sizes "
                           f"up to {ATTENTION_MAX_HEAD_DIM}, got {d}")
    for name, t in (("key", key), ("value", value)):
        checks.check_same_device(query, t, name, "scaled_dot_product_attention")
    if query.numel() == 0 or key.numel() == 0:
        # nothing to attend (the kernels want a row of scores): an empty result, or zeros for
        # queries without keys, through ops that keep the graph
        return query.matmul(key.transpose(-2, -1)).matmul(value)
    if len(lead) == 2:
        return fused_attention(query, key, value, scale, causal)
    heads = lead[-1] if lead else 1
    batch = math.prod(lead[:-1]) if len(lead) > 1 else 1

    def four(t):
        return t.reshape(batch, heads, t.shape[-2], d)

    out = apply(ScaledDotProductFlashAttentionBackward0, (four(query), four(key), four(value)),
                float(scale), bool(causal))
    return out.reshape(*lead, query.shape[-2], d)
