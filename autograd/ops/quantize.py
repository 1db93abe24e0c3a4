"""Fake quantization, what quantization-aware training calls: ``fake_quantize_per_tensor_affine``,
``fake_quantize_per_channel_affine`` and the learnable forms
``_fake_quantize_learnable_per_tensor_affine`` / ``_per_channel_affine`` (LSQ).

Each rounds ``x / scale`` to an integer (half to even, as C's ``nearbyint``), shifts it by the
zero point, clamps it to ``[quant_min, quant_max]`` and maps it back:

    q = nearbyint(x * (1 / scale)) + zero_point          (integer zero point)
    q = nearbyint(x * (1 / scale) + zero_point)          (float zero point, per channel)
    out = (clamp(q, quant_min, quant_max) - zero_point) * scale

``1 / scale`` and the product with it are float32 as in PyTorch's kernels (a float64 input is
multiplied in float64 by the float32 reciprocal); half and bfloat16 inputs are computed in
float32 and the result cast back.

Gradients are PyTorch's straight-through estimates: rounding counts as the identity, so the
input's gradient is ``g`` where ``q`` is inside ``[quant_min, quant_max]`` and 0 where it was
clamped. The learnable forms also give ``scale`` and ``zero_point`` the derivatives of the
formula with rounding as the identity (PyTorch's ``_fake_quantize_learnable_*_backward``),
times ``grad_factor``:

    inside:  d/dscale = (out - x) / scale,        d/dzero_point = 0
    outside: d/dscale = quant_min|max - zp,       d/dzero_point = -scale

summed over the elements each parameter serves. Each op is a composite: the forward values are
computed without history and the gradients attached as ``where(mask, x - x.detach(), 0)`` and
``(p - p.detach()) * coefficient`` terms, which are zero in value, so the ops run on every
device and their gradients and forward-mode tangents (which PyTorch's do not have) come from
the parts. The grad_fn is
therefore the last part's node (``AddBackward0``), not PyTorch's
``FakeQuantizePerTensorAffineCachemaskBackward0``.
"""

from __future__ import annotations

import numpy as np

from ...runtime import dtype as dtypes
from ..checks import tensor_arg
from ..registry import OpInfo
from ..state import state
from ..tensor import Tensor

__all__ = ["_fake_quantize_learnable_per_channel_affine",
           "_fake_quantize_learnable_per_tensor_affine", "fake_quantize_per_channel_affine",
           "fake_quantize_per_tensor_affine"]


def _f32(v: float) -> float:
    """``v`` rounded to float32 (the kernels hold scale, its reciprocal and zero points so)."""
    return float(np.float32(v))


def _check_input(op: str, input) -> Tensor:
    x = tensor_arg(input, op)
    if not x.dtype.is_floating_point or x.dtype.is_complex:
        raise NotImplementedError(f"{op}: not implemented for '{x.dtype}' inputs (expected "
                                  f"float32, float64, float16 or bfloat16)")
    return x


def _check_range(op: str, quant_min: int, quant_max: int) -> None:
    if quant_min > quant_max:
        raise RuntimeError(f"{op}: `quant_min` should be less than or equal to `quant_max` "
                           f"(got {quant_min} > {quant_max}).")


def _check_axis(op: str, x: Tensor, axis: int) -> int:
    # PyTorch's order: the size along ``axis`` is read first (an IndexError past either
    # end), then a negative axis is refused
    n = max(x.ndim, 1)
    if not -n <= axis < x.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {axis})")
    if axis < 0:
        raise RuntimeError(f"{op}: `axis` must be between 0 and number of dimensions of input "
                           f"(got axis={axis} for a {x.ndim}-D input)")
    return axis


def _compute(x: Tensor) -> Tensor:
    """``x`` in the dtype the arithmetic runs in: float32 for half and bfloat16."""
    return x.float() if x.dtype in (dtypes.float16, dtypes.bfloat16) else x


def _records(*ts) -> bool:
    """Whether a gradient or a forward-mode tangent can flow from any of ``ts``."""
    return any(isinstance(t, Tensor) and ((state.grad_enabled and t.requires_grad)
                                          or t.__dict__.get("_fw_grads")) for t in ts)


def _quantize(xd: Tensor, scale, zp, quant_min: int, quant_max: int, float_zp: bool):
    """(q, the in-range mask, the fake-quantized values) of the history-free ``xd``; ``scale``
    and ``zp`` are numbers or tensors broadcasting against it."""
    inv = 1.0 / scale if isinstance(scale, Tensor) else _f32(1.0 / _f32(scale))
    q = (xd * inv + zp).round() if float_zp else (xd * inv).round() + zp
    mask = (q >= quant_min) & (q <= quant_max)
    return q, mask, (q.clamp(quant_min, quant_max) - zp) * scale


def _straight_through(x: Tensor, fq: Tensor, mask: Tensor) -> Tensor:
    """``fq`` in value, with the gradient ``g * mask`` for ``x``."""
    from .elementwise import where
    if not _records(x):
        return fq
    return fq + where(mask, x - x.detach(), 0.0)


def fake_quantize_per_tensor_affine(input: Tensor, scale, zero_point, quant_min: int,
                                    quant_max: int) -> Tensor:
    """Returns a new tensor with the data in ``input`` fake quantized using ``scale``,
    ``zero_point``, ``quant_min`` and ``quant_max``:
    ``(min(quant_max, max(quant_min, nearbyint(input / scale) + zero_point)) - zero_point)
    * scale``. The gradient of ``input`` is passed through where the quantized value lies in
    ``[quant_min, quant_max]`` and is 0 where it was clamped.

    Args:
        input (Tensor): the input value(s), a floating point tensor.
        scale (float or Tensor): quantization scale (a one-element float tensor allowed).
        zero_point (int or Tensor): quantization zero_point (a one-element tensor allowed;
            a float one is truncated to an integer, as PyTorch reads it).
        quant_min (int): lower bound of the quantized domain.
        quant_max (int): upper bound of the quantized domain.

    Returns:
        Tensor: A newly fake_quantized ``input`` tensor.

    Example:
        >>> x = tg.tensor([0.0552, 0.9730, 0.3973, -1.0780])
        >>> tg.fake_quantize_per_tensor_affine(x, 0.1, 0, 0, 255).tolist()
        [0.10000000149011612, 1.0, 0.4000000059604645, 0.0]
    """
    op = "fake_quantize_per_tensor_affine"
    x = _check_input(op, input)
    quant_min, quant_max = int(quant_min), int(quant_max)
    _check_range(op, quant_min, quant_max)
    if isinstance(scale, Tensor) or isinstance(zero_point, Tensor):
        # (the tensor_qparams overload: PyTorch reads the single values, and does not check the
        # zero point's range)
        if not (isinstance(scale, Tensor) and isinstance(zero_point, Tensor)):
            raise TypeError(f"{op}(): scale and zero_point must both be Tensors or both be "
                            f"numbers, got {type(scale).__name__} and "
                            f"{type(zero_point).__name__}")
        for name, t in (("scale", scale), ("zero_point", zero_point)):
            if t.numel() != 1:
                raise RuntimeError(f"{op}: expected a one-element {name} tensor, got "
                                   f"{t.numel()} elements")
        scale_v, zp = _f32(scale.detach().reshape(()).item()), \
            int(zero_point.detach().reshape(()).item())
    else:
        scale_v, zp = _f32(float(scale)), zero_point
        if isinstance(zp, float) and not float(zp).is_integer():
            raise TypeError(f"{op}(): argument 'zero_point' must be int, not float")
        zp = int(zp)
        if not quant_min <= zp <= quant_max:
            raise RuntimeError(f"{op}: `zero_point` must be between `quant_min` and "
                               f"`quant_max` (got {zp} outside [{quant_min}, {quant_max}]).")
    xc = _compute(x)
    _, mask, fq = _quantize(xc.detach(), scale_v, zp, quant_min, quant_max, False)
    return _straight_through(xc, fq, mask).to(x.dtype)


def _channel_shape(x: Tensor, axis: int) -> tuple:
    return tuple(n if d == axis else 1 for d, n in enumerate(x.shape))


def _check_channel_params(op: str, x: Tensor, scale, zero_point, axis: int, quant_min: int,
                          quant_max: int, learnable: bool) -> int:
    scale = tensor_arg(scale, op, "scale")
    zero_point = tensor_arg(zero_point, op, "zero_point")
    if scale.dtype not in (dtypes.float32, dtypes.bfloat16):
        raise RuntimeError(f"{op}: Scale must be Float or BFloat16, found {scale.dtype}")
    if not learnable and zero_point.dtype not in (dtypes.int32, dtypes.float32,
                                                  dtypes.float16):
        raise RuntimeError(f"{op}: Zero-point must be Int32, Float or Half, found "
                           f"{zero_point.dtype}")
    if scale.ndim != 1:
        raise RuntimeError(f"{op}: scale should be a 1-D tensor (got {scale.ndim}-D)")
    if zero_point.ndim != 1:
        raise RuntimeError(f"{op}: zero point should be a 1-D tensor (got {zero_point.ndim}-D)")
    if scale.numel() != zero_point.numel():
        raise RuntimeError(f"{op}: scale and zero-point need to have the same dimensions "
                           f"({scale.numel()} != {zero_point.numel()})")
    _check_range(op, quant_min, quant_max)
    axis = _check_axis(op, x, axis)
    if scale.numel() != x.shape[axis]:
        raise RuntimeError(f"{op}: dimensions of scale and zero-point are not consistent with "
                           f"input tensor ({scale.numel()} values for size {x.shape[axis]} of "
                           f"dim {axis})")
    if not learnable and zero_point.numel():
        zd = zero_point.detach()
        lo, hi = int(zd.min().item()), int(zd.max().item())
        if lo < quant_min or hi > quant_max:
            raise RuntimeError(f"{op}: `zero_point` must be between `quant_min` and "
                               f"`quant_max` (got values in [{lo}, {hi}], range "
                               f"[{quant_min}, {quant_max}]).")
    return axis


def fake_quantize_per_channel_affine(input: Tensor, scale: Tensor, zero_point: Tensor,
                                     axis: int, quant_min: int, quant_max: int) -> Tensor:
    """Returns a new tensor with the data in ``input`` fake quantized per channel using
    ``scale``, ``zero_point``, ``quant_min`` and ``quant_max``, across the channel specified
    by ``axis``: each slice along ``axis`` by its own scale and zero point, as
    :func:`fake_quantize_per_tensor_affine` (a float zero point is added before rounding).

    Args:
        input (Tensor): the input value(s), a floating point tensor.
        scale (Tensor): quantization scale, per channel (1-D, float32 or bfloat16).
        zero_point (Tensor): quantization zero_point, per channel (1-D, int32, float32 or
            float16).
        axis (int): channel axis.
        quant_min (int): lower bound of the quantized domain.
        quant_max (int): upper bound of the quantized domain.

    Returns:
        Tensor: A newly fake_quantized per channel ``input`` tensor.

    Example:
        >>> x = tg.tensor([[-0.2, 0.52], [0.33, 1.1]])
        >>> s, z = tg.tensor([0.1, 0.5]), tg.tensor([0, 1], dtype=tg.int32)
        >>> tg.fake_quantize_per_channel_affine(x, s, z, 1, 0, 255).tolist()
        [[0.0, 0.5], [0.30000001192092896, 1.0]]
    """
    op = "fake_quantize_per_channel_affine"
    x = _check_input(op, input)
    quant_min, quant_max = int(quant_min), int(quant_max)
    axis = _check_channel_params(op, x, scale, zero_point, axis, quant_min, quant_max, False)
    shape = _channel_shape(x, axis)
    s = scale.detach().float().reshape(shape)
    z = zero_point.detach().reshape(shape)
    float_zp = z.dtype.is_floating_point
    xc = _compute(x)
    _, mask, fq = _quantize(xc.detach(), s, z.float() if float_zp else z, quant_min, quant_max,
                            float_zp)
    return _straight_through(xc, fq.to(xc.dtype), mask).to(x.dtype)


def _learnable(xc: Tensor, scale: Tensor, zero_point: Tensor, s_b: Tensor, z_b, fq: Tensor,
               quant_min: int, quant_max: int, grad_factor: float) -> Tensor:
    """``fq`` in value, with PyTorch's learnable gradients: ``s_b``/``z_b`` are the scale and
    zero point its backward reads (broadcasting against ``xc``)."""
    from .elementwise import where
    if not _records(xc, scale, zero_point):
        return fq
    xd = xc.detach()
    # PyTorch's learnable backward kernels round ``zero_point + x * inv_scale``, the zero
    # point added before rounding and as one fused multiply-add (the product is exact in
    # float64, the sum rounded once to float32): a tie can fall the other way than the
    # forward's ``nearbyint(x * inv_scale) + zero_point``
    inv = 1.0 / s_b
    q = ((xd.to(dtypes.float64) * inv.to(dtypes.float64) + z_b).to(xd.dtype)).round()
    mask = (q >= quant_min) & (q <= quant_max)
    fq_b = (q.clamp(quant_min, quant_max) - z_b) * s_b
    out = fq + where(mask, xc - xd, 0.0)
    if _records(scale):
        coef = where(mask, (fq_b - xd) * (1.0 / s_b),
                     where(q < quant_min, quant_min - z_b, quant_max - z_b)) * grad_factor
        out = out + (scale - scale.detach()).reshape(s_b.shape) * coef.detach()
    if _records(zero_point):
        coef = where(mask, 0.0, -s_b) * grad_factor
        out = out + (zero_point - zero_point.detach()).reshape(s_b.shape) * coef.detach()
    return out


def _check_learnable_params(op: str, scale, zero_point) -> tuple:
    scale = tensor_arg(scale, op, "scale")
    zero_point = tensor_arg(zero_point, op, "zero_point")
    if not scale.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point scale tensor, got {scale.dtype}")
    return scale, zero_point


def _fake_quantize_learnable_per_tensor_affine(input: Tensor, scale: Tensor,
                                               zero_point: Tensor, quant_min: int,
                                               quant_max: int,
                                               grad_factor: float = 1.0) -> Tensor:
    """:func:`fake_quantize_per_tensor_affine` with a learnable ``scale`` and ``zero_point``
    (one-element float tensors; the zero point is rounded half to even and clamped to
    ``[quant_min, quant_max]``): their gradients are those of LSQ (see the module's
    docstring), scaled by ``grad_factor``; the input's is straight-through.

    Example:
        >>> x = tg.tensor([0.26, -3.0, 0.6], requires_grad=True)
        >>> s = tg.tensor([0.5], requires_grad=True)
        >>> z = tg.tensor([1.0], requires_grad=True)
        >>> y = tg._fake_quantize_learnable_per_tensor_affine(x, s, z, 0, 3)
        >>> y.tolist(); y.sum().backward(); x.grad.tolist()
        [0.5, -0.5, 0.5]
        [1.0, 0.0, 1.0]
    """
    op = "_fake_quantize_learnable_per_tensor_affine"
    x = _check_input(op, input)
    scale, zero_point = _check_learnable_params(op, scale, zero_point)
    quant_min, quant_max = int(quant_min), int(quant_max)
    _check_range(op, quant_min, quant_max)
    for name, t in (("scale", scale), ("zero_point", zero_point)):
        if t.numel() != 1:
            raise RuntimeError(f"{op}: expected a one-element {name} tensor, got {t.numel()} "
                               f"elements")
    scale_v = _f32(scale.detach().reshape(()).item())
    zp_v = _f32(zero_point.detach().reshape(()).item())
    # (PyTorch's _get_zero_point_from_tensor: the forward rounds half to even, the backward
    # adds 0.5 and truncates; both clamp to the range)
    zp_f = int(min(max(float(np.rint(zp_v)), quant_min), quant_max))
    zp_b = int(min(max(_f32(zp_v + 0.5), quant_min), quant_max))
    xc = _compute(x)
    _, _, fq = _quantize(xc.detach(), scale_v, zp_f, quant_min, quant_max, False)
    from .creation import full
    s_b = full((1,) * x.ndim, scale_v, dtype=dtypes.float32, device=x.device)
    out = _learnable(xc, scale, zero_point, s_b, zp_b, fq, quant_min, quant_max,
                     float(grad_factor))
    return out.to(x.dtype)


def _fake_quantize_learnable_per_channel_affine(input: Tensor, scale: Tensor,
                                                zero_point: Tensor, axis: int, quant_min: int,
                                                quant_max: int,
                                                grad_factor: float = 1.0) -> Tensor:
    """:func:`fake_quantize_per_channel_affine` with a learnable per-channel ``scale`` and
    ``zero_point`` (1-D float tensors; the zero points are rounded half to even and clamped to
    ``[quant_min, quant_max]``): their gradients are those of LSQ (see the module's
    docstring), summed over each channel and scaled by ``grad_factor``; the input's is
    straight-through.
    """
    op = "_fake_quantize_learnable_per_channel_affine"
    x = _check_input(op, input)
    scale, zero_point = _check_learnable_params(op, scale, zero_point)
    quant_min, quant_max = int(quant_min), int(quant_max)
    axis = _check_channel_params(op, x, scale, zero_point, axis, quant_min, quant_max, True)
    shape = _channel_shape(x, axis)
    s = scale.detach().float().reshape(shape)
    z = zero_point.detach().float().round().clamp(quant_min, quant_max).reshape(shape)
    xc = _compute(x)
    # (the rounded zero points are integers: PyTorch's forward is fake_quantize_per_channel
    # with int32 zero points, ``nearbyint(x * inv_scale) + zero_point``)
    _, _, fq = _quantize(xc.detach(), s, z, quant_min, quant_max, False)
    out = _learnable(xc, scale, zero_point, s, z, fq.to(xc.dtype), quant_min, quant_max,
                     float(grad_factor))
    return out.to(x.dtype)


_STE = "g where nearbyint(x/scale)+zp is in [quant_min, quant_max], else 0 (straight-through)"
OPS = (
    OpInfo("fake_quantize_per_tensor_affine", fake_quantize_per_tensor_affine, method=False,
           dtypes="floats", grad=_STE, jvp=True),
    OpInfo("fake_quantize_per_channel_affine", fake_quantize_per_channel_affine, method=False,
           dtypes="floats", grad=_STE, jvp=True),
    OpInfo("_fake_quantize_learnable_per_tensor_affine",
           _fake_quantize_learnable_per_tensor_affine, method=False, dtypes="floats",
           grad="x: straight-through; scale, zero_point: LSQ (see autograd/ops/quantize.py)",
           jvp=True),
    OpInfo("_fake_quantize_learnable_per_channel_affine",
           _fake_quantize_learnable_per_channel_affine, method=False, dtypes="floats",
           grad="x: straight-through; scale, zero_point: LSQ, summed per channel", jvp=True),
)
