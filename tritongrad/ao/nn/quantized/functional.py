"""Functional interface of the quantized ops (PyTorch's ``torch.ao.nn.quantized.functional``).

Note [Quantized arithmetic]
  A quantized linear or convolution is a float op between the dequantized input and weight,
  requantized to the output's scale and zero point. It is computed as PyTorch's FBGEMM and
  oneDNN kernels compute it, so that the integers agree bit for bit: the products of the
  zero-point-shifted integers are summed exactly (float64 holds every such sum), and the
  float part is float32 throughout:

      a = float32(x_scale) * float32(w_scale[c])                 (per output channel c)
      y = (float32(acc) + float32(bias[c] / a)) * float32(a / out_scale)
      q = clamp(nearbyint(y) + out_zero_point, zero_point if relu else qmin, qmax)

  The other ops dequantize, run in float32 and requantize with ``quantize_per_tensor``'s
  rounding (half to even).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import tritongrad as tg
from tritongrad.autograd.tensor import Tensor

from ... import _qtensor as q

__all__ = ["linear", "conv2d", "batch_norm", "relu", "relu6", "hardtanh", "max_pool2d",
           "avg_pool2d", "adaptive_avg_pool2d", "add", "mul", "add_relu", "add_scalar",
           "mul_scalar", "cat", "clamp"]

_f32 = np.float32
_Size2 = int | tuple[int, int]  # (a size of a 2-d op: one int for both dims, or a pair)


def _check_q(op: str, x, name: str = "input") -> q.QuantizedTensor:
    if not isinstance(x, q.QuantizedTensor):
        raise ValueError(f"{op}: {name} must be a quantized tensor (got "
                         f"{type(x).__name__}); quantize it first (QuantStub, "
                         f"quantize_per_tensor)")
    return x


def _shifted(t: q.QuantizedTensor) -> tuple[Tensor, np.ndarray]:
    """``int_repr - zero_point`` as a float64 Tensor (exact), and the float32 scales (one per
    channel along dim 0 for a per-channel weight)."""
    ints = t._int.to(tg.float64)
    if t.qscheme() is q.per_channel_affine:
        shape = t._channel_shape()
        z = t._zero_points.to(device=ints.device, dtype=tg.float64).reshape(shape)
        scales = t._scales.cpu().numpy().astype(_f32)
        return ints - z, scales
    return ints - float(t._zero_point), np.asarray([t._scale], dtype=_f32)


def _requantize(acc: Tensor, x_scale: float, w_scales: np.ndarray, bias, scale: float,
                zero_point: int, dtype, relu: bool, device) -> q.QuantizedTensor:
    """Note [Quantized arithmetic]: the output of the exact sums ``acc`` (channels on dim
    1)."""
    a = acc.cpu().numpy()
    shape = (1, -1) + (1,) * (a.ndim - 2)
    act_w = (_f32(x_scale) * w_scales.astype(_f32)).astype(_f32)
    act_w = np.broadcast_to(act_w, (a.shape[1],)).reshape(shape)
    raw = a.astype(_f32)
    if bias is not None:
        b = bias.detach().cpu().numpy().astype(_f32).reshape(shape)
        raw = (raw + (b / act_w).astype(_f32)).astype(_f32)
    mult = (act_w / _f32(scale)).astype(_f32)
    lo, hi = q._RANGE[dtype]
    y = np.rint((raw * mult).astype(_f32)).astype(np.float64) + zero_point
    y = np.clip(y, zero_point if relu else lo, hi).astype(q._STORAGE[dtype].np)
    return q.QuantizedTensor(tg.as_tensor(y, device=device), dtype, q.per_tensor_affine,
                             float(scale), int(zero_point))


def linear(input: q.QuantizedTensor, weight: q.QuantizedTensor, bias: Tensor | None = None,
           scale: float | None = None, zero_point: int | None = None, *,
           relu: bool = False) -> q.QuantizedTensor:
    """Applies a linear transformation to the incoming quantized data: :math:`y = xA^T + b`
    (Note [Quantized arithmetic]).

    Args:
        input (QuantizedTensor): quantized input of type ``quint8``.
        weight (QuantizedTensor): quantized weight of type ``qint8`` (per tensor or per
            channel along dim 0).
        bias (Tensor): None or fp32 bias of type ``float``.
        scale (float): output scale. If None, derived from the input scale.
        zero_point (int): output zero point. If None, derived from the input zero_point.
    """
    _check_q("quantized::linear", input)
    _check_q("quantized::linear", weight, "weight")
    if input.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"quantized::linear: input feature size {input.shape[-1]} does not "
                           f"match the weight's {weight.shape[1]}")
    scale = input.q_scale() if scale is None else scale
    zero_point = input.q_zero_point() if zero_point is None else zero_point
    x, _ = _shifted(input)
    w, w_scales = _shifted(weight)
    lead = tuple(x.shape[:-1])
    acc = x.reshape(-1, x.shape[-1]) @ w.t()
    out = _requantize(acc, input.q_scale(), w_scales, bias, scale, zero_point, input.dtype,
                      relu, input.device)
    return out.reshape(*lead, weight.shape[0])


def conv2d(input: q.QuantizedTensor, weight: q.QuantizedTensor, bias: Tensor | None,
           stride: _Size2 = 1, padding: _Size2 = 0, dilation: _Size2 = 1, groups: int = 1,
           padding_mode: str = "zeros", scale: float = 1.0, zero_point: int = 0,
           dtype=q.quint8, *, relu: bool = False) -> q.QuantizedTensor:
    """Applies a 2D convolution over a quantized 2D input composed of several input planes
    (Note [Quantized arithmetic]; padding holds the input's zero point, i.e. real 0).

    Args:
        input: quantized input tensor of shape ``(minibatch, in_channels, iH, iW)``.
        weight: quantized filters of shape ``(out_channels, in_channels/groups, kH, kW)``.
        bias: **non-quantized** bias tensor of shape ``(out_channels)``. The tensor type must
            be ``float``.
        stride, padding, dilation, groups: as ``tg.nn.functional.conv2d``.
        padding_mode: the padding mode to use. Only "zeros" is supported for quantized
            convolution at the moment.
        scale: quantization scale for the output.
        zero_point: quantization zero_point for the output.
        dtype: quantization data type to use (``quint8``).
    """
    if padding_mode != "zeros":
        raise NotImplementedError("Only zero-padding is supported!")
    if dtype is not q.quint8:
        raise NotImplementedError("Only torch.quint8 is supported for activation tensor!")
    _check_q("quantized::conv2d", input)
    _check_q("quantized::conv2d", weight, "weight")
    if input.ndim != 4:
        raise ValueError("Input shape must be `(N, C, H, W)`!")
    x, _ = _shifted(input)
    w, w_scales = _shifted(weight)
    acc = tg.nn.functional.conv2d(x, w, None, stride, padding, dilation, groups)
    return _requantize(acc, input.q_scale(), w_scales, bias, scale, zero_point, input.dtype,
                       relu, input.device)


def _requant_float(y: Tensor, scale: float, zero_point: int, dtype) -> q.QuantizedTensor:
    return q.quantize_per_tensor(y.to(tg.float32), scale, zero_point, dtype)


def relu(input: q.QuantizedTensor, inplace: bool = False) -> q.QuantizedTensor:
    """``max(x, 0)`` on a quantized tensor: ``max(q, zero_point)``, same parameters."""
    return q._relu(_check_q("quantized::relu", input), inplace)


def relu6(input: q.QuantizedTensor, inplace: bool = False) -> q.QuantizedTensor:
    """``min(max(x, 0), 6)`` on a quantized tensor (6 quantized with its parameters)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input: q.QuantizedTensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> q.QuantizedTensor:
    """Clamps a quantized tensor to ``[min_val, max_val]`` (bounds quantized with its
    parameters); ``inplace`` writes the result into ``input``."""
    out = clamp(input, min_val, max_val)
    if inplace:  # (as q._relu: the input takes the new integers, its parameters unchanged)
        input._int = out._int
        return input
    return out


def clamp(input: q.QuantizedTensor, min_: float, max_: float) -> q.QuantizedTensor:
    """``clamp`` on a quantized tensor: the integers clamped to the quantized bounds."""
    _check_q("quantized::clamp", input)
    input._per_tensor_only()
    lo, hi = q._RANGE[input.dtype]

    def qb(v):
        return int(min(max(np.rint(_f32(v) * (_f32(1) / _f32(input.q_scale())))
                           + input.q_zero_point(), lo), hi))
    return input._like(input._int.clamp(qb(min_), qb(max_)))


def max_pool2d(input: q.QuantizedTensor, kernel_size: _Size2, stride: _Size2 | None = None,
               padding: _Size2 = 0, dilation: _Size2 = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> q.QuantizedTensor:
    """2D max pooling over a quantized tensor (on the integers, same parameters)."""
    return q._max_pool2d(_check_q("quantized::max_pool2d", input), kernel_size, stride,
                         padding, dilation, ceil_mode, return_indices)


def avg_pool2d(input: q.QuantizedTensor, kernel_size: _Size2, stride: _Size2 | None = None,
               padding: _Size2 = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> q.QuantizedTensor:
    """2D average pooling of a quantized tensor, requantized to its own parameters."""
    # (PyTorch's kernel averages the shifted integers and rounds: the output keeps the
    # input's parameters)
    _check_q("quantized::avg_pool2d", input)
    input._per_tensor_only()
    zp = input.q_zero_point()
    y = tg.nn.functional.avg_pool2d(input._int.to(tg.float64) - zp, kernel_size, stride,
                                    padding, ceil_mode, count_include_pad, divisor_override)
    lo, hi = q._RANGE[input.dtype]
    out = (y.round() + zp).clamp(lo, hi).to(input._int.dtype)
    return input._like(out)


def adaptive_avg_pool2d(input: q.QuantizedTensor, output_size: _Size2) -> q.QuantizedTensor:
    """Adaptive 2D average pooling of a quantized tensor, requantized to its own
    parameters."""
    _check_q("quantized::adaptive_avg_pool2d", input)
    y = tg.nn.functional.adaptive_avg_pool2d(input.dequantize(), output_size)
    return _requant_float(y, input.q_scale(), input.q_zero_point(), input.dtype)


def _binary(op: str, a, b, scale: float, zero_point: int, fn, relu_: bool = False):
    _check_q(op, a)
    _check_q(op, b, "other")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}: both inputs must have the same quantized dtype "
                           f"({a.dtype} != {b.dtype})")
    y = fn(a.dequantize(), b.dequantize())
    if relu_:
        y = y.clamp(min=0.0)
    return _requant_float(y, scale, zero_point, a.dtype)


def batch_norm(input: q.QuantizedTensor, running_mean: Tensor, running_var: Tensor,
               weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5,
               output_scale: float = 1.0, output_zero_point: int = 0) -> q.QuantizedTensor:
    """Evaluation batch norm of a quantized tensor (channels on dim 1), quantized to
    ``output_scale`` and ``output_zero_point``. As PyTorch's ``quantized::batch_norm``
    kernel, per channel in float32 (its ``double`` steps in float64)::

        inv_sigma = float32(1 / sqrt(float32(var + eps)))
        alpha = float32(float32(inv_sigma * weight) * (input_scale / output_scale))
        beta = float32((bias - mean * inv_sigma * weight) / output_scale)
        q = clamp(nearbyint(fma(alpha, q_in - input_zero_point, beta)) + output_zero_point)
    """
    op = "quantized::batch_norm"
    _check_q(op, input)
    input._per_tensor_only()
    if input.dim() < 2:
        raise ValueError(f"{op}: expected an input with channels on dim 1, got "
                         f"{input.dim()}-D")
    c = input.shape[1]

    def per_channel(t, default: float) -> np.ndarray:
        if t is None:
            return np.full(c, default, _f32)
        return t.detach().cpu().numpy().astype(_f32).reshape(c)
    mean, var = per_channel(running_mean, 0.0), per_channel(running_var, 1.0)
    w, b = per_channel(weight, 1.0), per_channel(bias, 0.0)
    inv_sigma = (1.0 / np.sqrt((var + _f32(eps)).astype(_f32)).astype(np.float64)).astype(_f32)
    iw = (inv_sigma * w).astype(_f32)
    alpha = (iw.astype(np.float64) * (input.q_scale() / float(output_scale))).astype(_f32)
    beta = ((b - (mean * inv_sigma).astype(_f32) * w).astype(np.float64)
            / float(output_scale)).astype(_f32)
    shape = (1, c) + (1,) * (input.dim() - 2)
    x = input._int.cpu().numpy().astype(np.float64) - input.q_zero_point()
    # (alpha * x is exact in float64: the fused multiply-add rounds once, to float32)
    y = (alpha.astype(np.float64).reshape(shape) * x
         + beta.astype(np.float64).reshape(shape)).astype(_f32)
    lo, hi = q._RANGE[input.dtype]
    out = np.clip(np.rint(y).astype(np.float64) + int(output_zero_point), lo, hi)
    return q.QuantizedTensor(tg.as_tensor(out.astype(q._STORAGE[input.dtype].np),
                                          device=input.device),
                             input.dtype, q.per_tensor_affine, float(output_scale),
                             int(output_zero_point))


def add(a: q.QuantizedTensor, b: q.QuantizedTensor, scale: float,
        zero_point: int) -> q.QuantizedTensor:
    """``a + b`` of two quantized tensors, quantized to ``scale`` and ``zero_point``."""
    return _binary("quantized::add", a, b, scale, zero_point, lambda x, y: x + y)


def add_relu(a: q.QuantizedTensor, b: q.QuantizedTensor, scale: float,
             zero_point: int) -> q.QuantizedTensor:
    """``relu(a + b)`` of two quantized tensors, quantized to ``scale`` and ``zero_point``."""
    return _binary("quantized::add_relu", a, b, scale, zero_point, lambda x, y: x + y, True)


def mul(a: q.QuantizedTensor, b: q.QuantizedTensor, scale: float,
        zero_point: int) -> q.QuantizedTensor:
    """``a * b`` of two quantized tensors, quantized to ``scale`` and ``zero_point``: the
    product of the shifted integers times ``float32(a_scale * b_scale / scale)``, rounded
    half to even (PyTorch's kernel)."""
    op = "quantized::mul"
    _check_q(op, a)
    _check_q(op, b, "other")
    a._per_tensor_only()
    b._per_tensor_only()
    prod = (a._int.to(tg.int64) - a.q_zero_point()) * (b._int.to(tg.int64) - b.q_zero_point())
    mult = _f32(_f32(a.q_scale()) * _f32(b.q_scale())) * (_f32(1) / _f32(scale))
    y = np.rint((prod.cpu().numpy().astype(_f32) * _f32(mult)).astype(_f32)) + zero_point
    lo, hi = q._RANGE[a.dtype]
    y = np.clip(y, lo, hi).astype(q._STORAGE[a.dtype].np)
    return q.QuantizedTensor(tg.as_tensor(y, device=a.device), a.dtype, q.per_tensor_affine,
                             float(scale), int(zero_point))


def cat(tensors: Sequence[q.QuantizedTensor], dim: int = 0, scale: float | None = None,
        zero_point: int | None = None) -> q.QuantizedTensor:
    """Concatenates quantized tensors along ``dim``, quantized to ``scale`` and
    ``zero_point`` (those of the first input when not given)."""
    first = _check_q("quantized::cat", tensors[0])
    scale = first.q_scale() if scale is None else scale
    zero_point = first.q_zero_point() if zero_point is None else zero_point
    y = tg.cat([_check_q("quantized::cat", t).dequantize() for t in tensors], dim)
    return _requant_float(y, scale, zero_point, first.dtype)


def add_scalar(input: q.QuantizedTensor, c: float) -> q.QuantizedTensor:
    """``input + c`` on a quantized tensor, PyTorch's way: the zero point moves by
    ``round(c / scale)``; where that leaves the range, the range is widened (a new scale) so
    that it still holds the shifted values, and the integers are requantized."""
    op = "quantized::add_scalar"
    _check_q(op, input)
    input._per_tensor_only()
    lo, hi = q._RANGE[input.dtype]
    s, z = input.q_scale(), input.q_zero_point()
    z_shift = z - int(np.rint(c / s))
    if lo <= z_shift <= hi:
        return q.QuantizedTensor(input._int.clone(), input.dtype, q.per_tensor_affine, s,
                                 z_shift)
    if z_shift < lo:
        s_new, z_new = (hi - z_shift) / (hi - lo) * s, lo
    else:
        s_new, z_new = (z_shift - lo) / (hi - lo) * s, hi
    shifted = input._int.cpu().numpy().astype(np.int64) - z_shift
    mult = _f32(_f32(s) * (_f32(1) / _f32(s_new)))  # (the kernel's float32 multiplier)
    y = np.rint((shifted.astype(_f32) * mult).astype(_f32)) + z_new
    y = np.clip(y, lo, hi).astype(q._STORAGE[input.dtype].np)
    return q.QuantizedTensor(tg.as_tensor(y, device=input.device), input.dtype,
                             q.per_tensor_affine, s_new, z_new)


def mul_scalar(input: q.QuantizedTensor, c: float) -> q.QuantizedTensor:
    """``input * c`` on a quantized tensor, PyTorch's way: the scale is multiplied by
    ``|c|``; a negative ``c`` mirrors the integers within the range; ``c == 0`` gives zeros
    with scale 1 and zero point 0."""
    op = "quantized::mul_scalar"
    _check_q(op, input)
    input._per_tensor_only()
    lo, hi = q._RANGE[input.dtype]
    s, z = input.q_scale(), input.q_zero_point()
    if c == 0:  # (all zeros, as PyTorch: scale 1, zero point 0)
        return q.QuantizedTensor(tg.zeros_like(input._int), input.dtype, q.per_tensor_affine,
                                 1.0, 0)
    if c > 0:
        return q.QuantizedTensor(input._int.clone(), input.dtype, q.per_tensor_affine, s * c,
                                 z)
    mirrored = (hi - (input._int.to(tg.int64) - lo)).to(input._int.dtype)
    return q.QuantizedTensor(mirrored, input.dtype, q.per_tensor_affine, s * -c,
                             hi - (z - lo))
