"""Batch, instance, group and RMS normalisation. Batch norm in training (batch statistics) is
one fused primitive (``NativeBatchNormBackward0``, autograd/ops/nn.py), as layer norm is;
group norm, and instance norm with the instances' statistics (group norm with a group per
channel), are one primitive here (``NativeGroupNormBackward0``); the rest are composed from
differentiable Tensor ops (mean, var, rsqrt): their gradients, to any order, come from
composition."""

from __future__ import annotations

import math

import numpy as np

from ..autograd import checks
from ..autograd.dispatch import Primitive, apply, as_shape, meta, opmath
from ..autograd.grad_mode import no_grad
from ..autograd.layout import channels_last_order, laid_out
from ..autograd.ops import traced
from ..autograd.ops.nn import batch_norm_training, check_norm_dtypes
from ..autograd.state import state
from ..autograd.tensor import Tensor, int_arg, make
from ..autograd.vmap import check_running_stats
from ._padding import _channels_last_like

__all__ = ["batch_norm", "group_norm", "instance_norm", "rms_norm"]


def _channel_shape(x: Tensor) -> tuple:
    """(1, C, 1, ...): a per-channel tensor broadcast against (N, C, *)."""
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _affine(y: Tensor, weight, bias, shape: tuple) -> Tensor:
    """``y * weight + bias`` with per-channel parameters viewed as ``shape``, in ``y``'s dtype
    (float32 parameters of a float16/bfloat16 input do not promote the result, as PyTorch's
    mixed-precision kernels)."""
    dt = y.dtype
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y if y.dtype is dt else y.to(dt)


class NativeGroupNormBackward0(Primitive):
    """y = xhat * weight + bias per channel, xhat = (x - mean) * rstd over each group of
    ``C / G`` channels and the spatial dims of a sample (biased variance): PyTorch's
    ``native_group_norm``, one node saving x and the affine parameters (the statistics are
    recomputed by the rule, two reductions, rather than kept). Inputs (x, weight?, bias?)
    (``ctx.affine``: which are given). With gw = g * weight and means over each group:
        dx = rstd (gw - mean(gw) - xhat mean(gw xhat)),  dweight = sum(g xhat),
        dbias = sum(g)   (sums over everything but the channel)
    float16/bfloat16 inputs are computed in float32 and rounded once, as PyTorch's kernel
    computes in its accumulate type. The rule is written over the kernel contract: recorded
    for double backward, and forward AD has its own (``jvp``)."""

    __slots__ = ()
    op_name = "native_group_norm"
    save_inputs = (0,)

    @staticmethod
    def _normalized(k, x, groups: int, eps: float):
        """(xhat in (N, G, K), rstd in (N, G, 1)) of x, in float32 for half inputs."""
        shape = x.shape
        (x,), _ = opmath(k, x)
        n = shape[0]
        size = math.prod(shape[1:]) // groups
        xg = as_shape(k, x, (n, groups, size))
        d = k.sub(xg, k.div(k.sum(xg, (2,), True), size))
        rstd = k.pow(k.add(k.div(k.sum(k.mul(d, d), (2,), True), size), eps), -0.5)
        return k.mul(d, rstd), rstd

    @staticmethod
    def _through_xhat(k, v, xhat, rstd):
        """rstd (v - mean(v) - xhat mean(v xhat)) over each group of ``v`` (N, G, K): xhat's
        Jacobian applied to v, which is its own transpose (the rule's dx, the jvp's dxhat)."""
        size = xhat.shape[2]
        mean_v = k.div(k.sum(v, (2,), True), size)
        mean_vx = k.div(k.sum(k.mul(v, xhat), (2,), True), size)
        return k.mul(k.sub(k.sub(v, mean_v), k.mul(xhat, mean_vx)), rstd)

    @staticmethod
    def forward(ctx, k, x, *rest):
        *params, affine, groups, eps = rest
        ctx.affine, ctx.groups, ctx.eps = affine, groups, eps
        xhat, _ = NativeGroupNormBackward0._normalized(k, x, groups, eps)
        return _group_affine(k, as_shape(k, xhat, x.shape), params, affine, x)

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, *params = saved
        (has_w, has_b), groups = ctx.affine, ctx.groups
        (g,), back = opmath(k, g)
        xhat, rstd = NativeGroupNormBackward0._normalized(k, x, groups, ctx.eps)
        shape, need = x.shape, ctx.needs_input_grad
        out = [None] * (1 + len(params))
        if need[0]:
            gw = k.mul(g, _per_channel(k, params[0], shape)) if has_w else g
            dx = NativeGroupNormBackward0._through_xhat(k, as_shape(k, gw, xhat.shape), xhat,
                                                        rstd)
            out[0] = back(as_shape(k, dx, shape))
            if k is not traced:  # (PyTorch's dx: in the memory format x suggests)
                out[0] = laid_out(k, out[0], channels_last_order(k, x))
        other = (0,) + tuple(range(2, len(shape)))
        if has_w and need[1]:
            dw = k.sum(k.mul(g, as_shape(k, xhat, shape)), other, False)
            out[1] = k.astype(dw, meta(params[0])[1])
        if has_b and need[-1]:
            out[-1] = k.astype(k.sum(g, other, False), meta(params[-1])[1])
        return tuple(out) if len(out) > 1 else out[0]

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *rest):
        """d(xhat) * weight + xhat * d(weight) + d(bias), d(xhat) = rstd (dx - mean(dx)
        - xhat mean(xhat dx)) over each group."""
        x, *params = primals
        tx, *tparams = tangents
        (has_w, has_b), groups = ctx.affine, ctx.groups
        dt = meta(x)[1]
        xhat, rstd = NativeGroupNormBackward0._normalized(k, x, groups, ctx.eps)
        shape = x.shape
        total = None
        if tx is not None:
            (t,), back = opmath(k, tx)
            dxhat = as_shape(k, NativeGroupNormBackward0._through_xhat(
                k, as_shape(k, t, xhat.shape), xhat, rstd), shape)
            total = k.mul(dxhat, _per_channel(k, params[0], shape)) if has_w else dxhat
            total = back(total)
        if has_w and tparams[0] is not None:
            term = k.astype(k.mul(as_shape(k, xhat, shape),
                                  _per_channel(k, tparams[0], shape)), dt)
            total = term if total is None else k.add(total, term)
        if has_b and tparams[-1] is not None:
            term = _per_channel(k, tparams[-1], shape)
            total = k.add(k.mul(out, 0.0), term) if total is None else k.add(total, term)
        return total


def _per_channel(k, p, shape: tuple):
    """A per-channel parameter (C,) as (1, C, 1, ...) against ``shape``."""
    return as_shape(k, p, (1, shape[1]) + (1,) * (len(shape) - 2))


def _group_affine(k, xhat, params, affine: tuple, x):
    """``xhat * weight + bias`` per channel, in ``x``'s dtype."""
    has_w, has_b = affine
    y = xhat
    if has_w:
        y = k.mul(y, _per_channel(k, params[0], x.shape))
    if has_b:
        y = k.add(y, _per_channel(k, params[-1], x.shape))
    dt = meta(x)[1]
    return k.astype(y, dt) if meta(y)[1] is not dt else y


_GROUP_NORM = {}  # (weight given, bias given) -> the primitive saving what its rule reads


def _group_norm_node(affine: tuple) -> type:
    op = _GROUP_NORM.get(affine)
    if op is None:
        saves = tuple(range(1 + sum(affine)))
        op = NativeGroupNormBackward0 if saves == (0,) else NativeGroupNormBackward0.variant(
            "NativeGroupNormBackward0", "native_group_norm", save_inputs=saves)
        _GROUP_NORM[affine] = op
    return op


def _native_group_norm(input: Tensor, groups: int, weight, bias, eps: float) -> Tensor:
    affine = (weight is not None, bias is not None)
    params = tuple(p for p in (weight, bias) if p is not None)
    return apply(_group_norm_node(affine), (input,) + params, affine, groups, float(eps))


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Applies Batch Normalization for each channel across a batch of data.

    y = (x - E[x]) / sqrt(Var[x] + eps) * weight + bias per channel (dim 1), statistics over
    every other dim. In training the batch's statistics are used (biased variance) and, when
    given, ``running_mean`` / ``running_var`` are updated in place as
    ``running = (1 - momentum) * running + momentum * batch`` with the unbiased variance. Out of
    training the running statistics are used.
    """
    checks.tensor_arg(input, "batch_norm")
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None:
            checks.tensor_arg(t, "batch_norm", name)
    _check_float(input, "batch_norm")
    if input.ndim < 2:  # (PyTorch's types: its training check reads a missing dim 1)
        raise (IndexError if training else RuntimeError)(
            f"batch_norm: expected an input of at least 2 dims (N, C, *), got {input.ndim}D of "
            f"size {list(input.shape)}")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:  # (PyTorch's words for the running statistics)
            raise RuntimeError(f"batch_norm: {name} should contain {c} elements not {t.numel()}")
    check_norm_dtypes("batch_norm", input, weight, bias, running_mean, running_var)
    _check_statistics_grad(running_mean, running_var)
    shape = _channel_shape(input)
    if training:
        if (running_mean is None) != (running_var is None):
            raise ValueError("batch_norm: running_mean and running_var must either both be None "
                             "or neither be None")
        count = input.shape[0] * math.prod(input.shape[2:])  # values per channel
        if count == 1:  # (an empty batch is allowed: PyTorch's _verify_batch_size)
            raise ValueError("batch_norm: Expected more than 1 value per channel when training, "
                             f"got input size {input.shape}")
        if count == 0:  # nothing to normalise, no statistics to update
            return _affine(input, weight, bias, shape)
        if running_mean is not None or running_var is not None:
            check_running_stats(input, running_mean, running_var)  # (under vmap)
        # one fused node (autograd/ops/nn.py; the input is floating point, checked above),
        # which updates the running statistics itself (before it saves: see there)
        update = None
        if running_mean is not None or running_var is not None:
            def update(mean, var):
                _update_running(running_mean, running_var, mean, var, count, momentum)
        return batch_norm_training(input, weight, bias, eps, update)[0]
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is None:
            raise RuntimeError(f"batch_norm: {name} must be defined in evaluation mode")
    return _batch_norm_eval(input, running_mean, running_var, weight, bias, eps)


class _BatchNormEval(Primitive):
    """Batch normalisation with given statistics (evaluation mode): per channel (dim 1),
    y = x * scale + shift, scale = weight * rstd, rstd = 1 / sqrt(var + eps), shift = bias -
    mean * scale, as PyTorch's CPU kernel computes it; one ``NativeBatchNormBackward0`` node
    with edges to (x, weight?, bias?), as PyTorch's ``native_batch_norm`` records (a frozen
    batch norm in a fine-tuned network: one node, not four). The statistics (``mean``,
    ``var``: arrays, params) have no gradient; rstd and the mean are copied into the node, so
    the running statistics changing in place later (the next training step) do not reach
    this node's backward. With xhat = (x - mean) * rstd, per channel:
        dx = g * weight * rstd,  dweight = sum(g xhat),  dbias = sum(g)
    (dweight from per-channel sums: (sum(g x) - mean sum(g)) rstd)
    float16/bfloat16 inputs are computed in float32 and rounded once. Under
    ``create_graph=True`` the rule is recorded (its ops on Tensors)."""

    __slots__ = ()
    op_name = "native_batch_norm"
    save_inputs = (0, 1)

    @staticmethod
    def _stats(k, x, mean, var, eps: float) -> tuple:
        """(mean, rstd) in x's compute dtype, per channel viewed as (1, C, 1, ...)."""
        ct = meta(x)[1]
        rstd = k.pow(k.sqrt(k.add(k.astype(var, ct), eps)), -1)  # (rsqrt, as Tensor.rsqrt)
        return (_per_channel(k, k.astype(mean, ct), x.shape),
                _per_channel(k, rstd, x.shape))

    @staticmethod
    def forward(ctx, k, x, *rest):
        *params, mean, var, affine, eps = rest
        (xc,), back = opmath(k, x)
        mu, rstd = _BatchNormEval._stats(k, xc, mean, var, eps)
        ctx.affine, ctx.mu, ctx.rstd = affine, mu, rstd
        ctx.bias_dtype = meta(params[-1])[1] if affine[1] else None  # (the bias is not saved)
        scale, shift = rstd, k.neg(k.mul(mu, rstd))
        if affine[0]:
            w = _per_channel(k, k.astype(params[0], meta(xc)[1]), x.shape)
            scale, shift = k.mul(scale, w), k.mul(shift, w)
        if affine[1]:
            shift = k.add(shift, _per_channel(k, k.astype(params[-1], meta(xc)[1]), x.shape))
        return back(k.add(k.mul(xc, scale), shift))

    @staticmethod
    def vjp(ctx, k, saved, g):
        x, *params = saved
        has_w, has_b = ctx.affine
        mu, rstd = ctx.mu, ctx.rstd
        if k is traced:  # (recorded: the statistics as constant Tensors)
            mu, rstd = make(mu), make(rstd)
        (gc,), back = opmath(k, g)
        shape, need = x.shape, ctx.needs_input_grad
        out = [None] * len(need)  # (x, weight?, bias?: the bias is not saved)
        if need[0]:
            scale = rstd
            if has_w:
                scale = k.mul(scale, _per_channel(k, k.astype(params[0], meta(gc)[1]), shape))
            out[0] = back(k.mul(gc, scale))
            if k is not traced:  # (PyTorch's dx: in the memory format x suggests)
                out[0] = laid_out(k, out[0], channels_last_order(k, x, row_major_wins=True))
        other, c = (0,) + tuple(range(2, len(shape))), (shape[1],)
        g_sum = None
        if has_w and need[1]:
            # sum(g xhat) = (sum(g x) - mean sum(g)) rstd: per-channel sums, no full-size
            # x - mean (what the composite x * scale + shift's rule computed, its rounding)
            (xc,), _ = opmath(k, x)
            g_sum = k.sum(gc, other, True)
            dw = k.mul(k.sub(k.sum(k.mul(gc, xc), other, True), k.mul(mu, g_sum)), rstd)
            out[1] = k.astype(as_shape(k, dw, c), meta(params[0])[1])
        if has_b and need[-1]:
            db = k.sum(gc, other, False) if g_sum is None else as_shape(k, g_sum, c)
            out[-1] = k.astype(db, ctx.bias_dtype)
        return tuple(out) if len(out) > 1 else out[0]

    @staticmethod
    def jvp(ctx, k, primals, tangents, out, *rest):
        """tx * weight * rstd + xhat * tweight + tbias (per channel)."""
        x, *params = primals
        tx, *tparams = tangents
        has_w, has_b = ctx.affine
        (xc,), back = opmath(k, x)
        ct, shape = meta(xc)[1], x.shape
        mu, rstd = ctx.mu, ctx.rstd
        if k is traced:
            mu, rstd = make(mu), make(rstd)
        total = None
        if tx is not None:
            (t,), _ = opmath(k, tx)
            scale = rstd
            if has_w:
                scale = k.mul(scale, _per_channel(k, k.astype(params[0], ct), shape))
            total = k.mul(t, scale)
        if has_w and tparams[0] is not None:
            term = k.mul(k.mul(k.sub(xc, mu), rstd),
                         _per_channel(k, k.astype(tparams[0], ct), shape))
            total = term if total is None else k.add(total, term)
        if has_b and tparams[-1] is not None:
            term = k.add(k.mul(xc, 0.0), _per_channel(k, k.astype(tparams[-1], ct), shape))
            total = term if total is None else k.add(total, term)
        return None if total is None else back(total)


_BatchNormEval.__name__ = _BatchNormEval.__qualname__ = "NativeBatchNormBackward0"
_BATCH_NORM_EVAL = {}  # (weight given, bias given) -> the primitive saving what its rule reads


def _batch_norm_eval(input: Tensor, mean: Tensor, var: Tensor, weight, bias,
                     eps: float) -> Tensor:
    """Batch normalisation of ``input`` with the statistics ``mean``/``var`` (evaluation
    mode): one ``_BatchNormEval`` node."""
    affine = (weight is not None, bias is not None)
    op = _BATCH_NORM_EVAL.get(affine)
    if op is None:
        saves = (0, 1) if affine[0] else (0,)
        op = _BATCH_NORM_EVAL[affine] = _BatchNormEval.variant(
            "NativeBatchNormBackward0", "native_batch_norm", save_inputs=saves)
    params = tuple(p for p in (weight, bias) if p is not None)
    if mean.device != input.device or var.device != input.device:
        raise RuntimeError(f"batch_norm: expected running_mean and running_var on the input's "
                           f"device {input.device}, got {mean.device} and {var.device}")
    return apply(op, (input,) + params, mean._data, var._data, affine, float(eps))


def _check_statistics_grad(running_mean, running_var) -> None:
    """PyTorch's error for running statistics requiring grad while recording: native_batch_norm
    has no gradient for them (the old composite gave them one, silently)."""
    if not state.grad_enabled:
        return
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if isinstance(t, Tensor) and t.requires_grad:  # (other types: their own errors)
            raise RuntimeError(f"The function 'native_batch_norm' is not differentiable with "
                               f"respect to argument '{name}'. This input cannot have "
                               f"requires_grad True.")


def _check_float(input: Tensor, op: str) -> None:
    """PyTorch's NotImplementedError for an integer or bool input to a normalisation."""
    if not input.dtype.is_floating_point:
        raise checks.kernel_not_implemented(op, input.dtype)


def _update_running(running_mean, running_var, mean: Tensor, var: Tensor, count: int,
                    momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * batch`` in place for the statistics
    given (the variance unbiased: ``count`` values each); ``mean`` and ``var`` per channel."""
    with no_grad():  # the running statistics are state, not part of the graph
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.detach().to(running_mean.dtype) * momentum)
        if running_var is not None:
            unbiased = var.detach() * (count / (count - 1))
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Applies Instance Normalization: each channel of each sample (N, C, *) normalised over
    its spatial dims, y = (x - E[x]) / sqrt(Var[x] + eps) * weight + bias (biased variance).

    With ``use_input_stats`` (the default) the instance's statistics are used and, when given,
    ``running_mean`` / ``running_var`` (per channel) are updated in place with their averages
    over the batch (``running = (1 - momentum) * running + momentum * stat``, the variance
    unbiased); without it the running statistics are used.
    """
    checks.tensor_arg(input, "instance_norm")
    _check_float(input, "instance_norm")
    check_norm_dtypes("instance_norm", input, weight, bias)  # (the running stats are cast)
    _check_statistics_grad(running_mean, running_var)
    for pos, name, t in ((2, "running_mean", running_mean), (3, "running_var", running_var),
                         (4, "weight", weight), (5, "bias", bias)):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"instance_norm(): argument '{name}' (position {pos}) must be "
                            f"Tensor, not {type(t).__name__}")
    if input.ndim >= 2:
        for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                        ("running_var", running_var)):
            if t is not None and t.numel() != input.shape[1]:
                raise RuntimeError(f"instance_norm: {name} should contain {input.shape[1]} "
                                   f"elements not {t.numel()}")
    count = math.prod(input.shape[2:])  # values per instance and channel
    if use_input_stats and count == 1:  # (PyTorch's _verify_spatial_size: also for < 3 dims)
        raise ValueError("instance_norm: Expected more than 1 spatial element when training, got "
                         f"input size {list(input.shape)}")
    if input.ndim < 2:  # ((N, C) is normalised by the running statistics; PyTorch's type)
        raise IndexError(f"instance_norm: expected an input of at least 2 dims (N, C, *), got "
                         f"{input.ndim}D of size {list(input.shape)}")
    shape = _channel_shape(input)
    if input.numel() == 0:  # nothing to normalise, no statistics to update
        return _affine(input, weight, bias, shape)
    if use_input_stats:
        if (running_mean is None) != (running_var is None):
            raise ValueError("instance_norm: running_mean and running_var must either both be "
                             "None or neither be None")
        if running_mean is not None:
            check_running_stats(input, running_mean, running_var)  # (under vmap)
            dims = tuple(range(2, input.ndim))
            with no_grad():
                mean = input.mean(dim=dims, keepdim=True)
                var = input.var(dim=dims, unbiased=False, keepdim=True)
        # each channel of each sample its own group: group norm's node, over a row-major copy
        # as PyTorch's instance norm (its result and input gradient are row-major)
        y = _native_group_norm(input.contiguous(), input.shape[1], weight, bias, eps)
        if running_mean is not None:
            # after the node saves, as PyTorch's instance norm copies them after its batch
            # norm: a checkpoint's recomputation that stops at those saves (early stop) does
            # not update them again
            per_channel = (input.shape[1],)
            _update_running(running_mean, running_var, mean.mean(0).reshape(per_channel),
                            var.mean(0).reshape(per_channel), count, momentum)
        return y
    if running_mean is None or running_var is None:
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    return _batch_norm_eval(input, running_mean, running_var, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Applies Group Normalization: the channels are split into ``num_groups`` groups, each
    normalised over its channels and the spatial dims (biased variance), then scaled and
    shifted per channel."""
    checks.tensor_arg(input, "group_norm")
    if type(num_groups) is not int:
        num_groups = int_arg(num_groups, "group_norm", "num_groups", 2)
    if num_groups <= 0:
        raise RuntimeError(f"group_norm: num_groups must be positive, but got {num_groups}")
    if input.ndim < 2:
        raise RuntimeError("group_norm: Expected at least 2 dimensions for input tensor but "
                           f"received {input.ndim}")
    _check_float(input, "group_norm")
    check_norm_dtypes("group_norm", input, weight, bias)
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.shape[0] != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} "
                               f"and input of shape {list(input.shape)}")
    if input.numel() == 0:
        return _affine(input, weight, bias, _channel_shape(input))
    # (PyTorch's result is in the memory format the input suggests: channels-last or row-major)
    return _channels_last_like(_native_group_norm(input, num_groups, weight, bias, eps), input)


def _finfo_eps(dtype) -> float:
    if dtype.name == "bfloat16":  # NumPy has no bfloat16: 8 bits of mantissa -> 2**-7
        return 2.0 ** -7
    return float(np.finfo(dtype.np).eps)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """Applies Root Mean Square Layer Normalization over the trailing ``normalized_shape``
    dims: y = x / sqrt(mean(x^2) + eps) * weight. ``eps=None`` uses the machine epsilon of
    the dtype it computes in (``input``'s; float32 for float16 and bfloat16 inputs)."""
    checks.tensor_arg(input, "rms_norm")
    _check_float(input, "rms_norm")
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0:
        raise RuntimeError("rms_norm: Expected normalized_shape to be at least 1-dimensional, "
                           "i.e., containing at least one element, but got normalized_shape = []")
    if input.ndim < k:  # (PyTorch's ValueError)
        raise ValueError(f"rms_norm: Input tensor must have at least {k} dimensions, but got "
                         f"{input.ndim}")
    if tuple(input.shape[input.ndim - k:]) != normalized_shape:
        raise RuntimeError(f"rms_norm: Given normalized_shape={list(normalized_shape)}, expected "
                           f"input with shape [*, {', '.join(map(str, normalized_shape))}], but "
                           f"got input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError(f"rms_norm: Expected weight to be of same shape as normalized_shape, "
                           f"but got weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(normalized_shape)}")
    # PyTorch 2.13's: float16/bfloat16 are normalized in float32 (their "opmath" type, whose
    # epsilon is the default eps: bfloat16's own, 2^-7, was 6% off for small rows), the weight
    # applied in that type too, and the result rounded once to the input's dtype (whatever the
    # weight's); a result in the memory format the input suggests, as its kernel writes one
    dt = input.dtype
    x = input.contiguous()
    x = x.float() if dt.itemsize == 2 else x
    eps = _finfo_eps(x.dtype) if eps is None else eps
    dims = tuple(range(input.ndim - k, input.ndim))
    y = x * ((x * x).mean(dim=dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        y = y * weight
    return _channels_last_like(y if y.dtype is dt else y.to(dt), input)
