"""Quantized modules (PyTorch's ``torch.ao.nn.quantized``): they take and return quantized
tensors; ``from_float`` makes one from an observed float module (``convert`` calls it)."""

from __future__ import annotations

import tritongrad as tg
from tritongrad import nn
from tritongrad.autograd.tensor import Tensor

from ... import _qtensor as q
from . import functional as qF

__all__ = ["Quantize", "DeQuantize", "Linear", "Conv2d", "BatchNorm2d", "ReLU", "ReLU6",
           "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Dropout", "FloatFunctional",
           "FXFloatFunctional", "QFunctional"]


def _quantize_weight(float_wt: Tensor, observer) -> q.QuantizedTensor:
    """The weight quantized with the parameters its observer computed (per tensor or per
    channel along the observer's ``ch_axis``)."""
    wt_scale, wt_zp = observer.calculate_qparams()
    if observer.qscheme in (q.per_tensor_symmetric, q.per_tensor_affine):
        return q.quantize_per_tensor(float_wt, float(wt_scale.reshape(-1)[0].item()),
                                     int(wt_zp.reshape(-1)[0].item()), q.qint8)
    if observer.qscheme in (q.per_channel_symmetric, q.per_channel_affine):
        return q.quantize_per_channel(float_wt, wt_scale.to(tg.float64), wt_zp.to(tg.int64),
                                      observer.ch_axis, q.qint8)
    if observer.qscheme is q.per_channel_affine_float_qparams:
        return q.quantize_per_channel(float_wt, wt_scale.to(tg.float32),
                                      wt_zp.to(tg.float32), observer.ch_axis, observer.dtype)
    raise ValueError(f"Unexpected qscheme {observer.qscheme}")


def _functional_for(input, name: str):
    """``qF.<name>`` for a quantized input, else ``tg.nn.functional.<name>``: the modules of
    Note [Swapped parameter-free modules] serve float inputs too."""
    return getattr(qF if isinstance(input, q.QuantizedTensor) else tg.nn.functional, name)


def _act_qparams(activation_post_process) -> tuple[float, int]:
    scale, zp = activation_post_process.calculate_qparams()
    return float(scale.reshape(-1)[0].item()), int(zp.reshape(-1)[0].item())


class _WeightedModule(nn.Module):
    """A quantized module with a quantized weight and a float bias, kept as plain attributes
    (not parameters: they do not train). ``module.to(device)`` moves only parameters and
    buffers, so the forward moves them to its input's device, once."""

    def weight(self) -> q.QuantizedTensor:
        return self._weight

    def bias(self):
        return self._bias

    def set_weight_bias(self, w: q.QuantizedTensor, b) -> None:
        self._weight = w
        self._bias = None if b is None else b.detach().to(tg.float32).clone()

    def _on(self, device) -> None:
        if self._weight.device != device:
            self._weight = self._weight.to(device)
        if self._bias is not None and self._bias.device != device:
            self._bias = self._bias.to(device)

    # the state dict holds ``weight`` (a QuantizedTensor), ``bias``, ``scale`` and
    # ``zero_point`` (PyTorch packs the first two into ``_packed_params``)
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "weight"] = self._weight
        destination[prefix + "bias"] = self._bias
        destination[prefix + "scale"] = tg.tensor(self.scale)
        destination[prefix + "zero_point"] = tg.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        keys = [prefix + k for k in ("weight", "bias", "scale", "zero_point")]
        if all(k in state_dict for k in keys):
            w, b, s, z = (state_dict[k] for k in keys)
            self.set_weight_bias(w, b)
            self.scale, self.zero_point = float(s), int(z)
        elif strict:
            missing_keys.extend(k for k in keys if k not in state_dict)
        rest = {k: v for k, v in state_dict.items() if k not in keys}
        super()._load_from_state_dict(rest, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class Quantize(nn.Module):
    """Quantizes an incoming tensor.

    Args:
        scale: scale of the output Quantized Tensor.
        zero_point: zero_point of output Quantized Tensor.
        dtype: data type of output Quantized Tensor.
        factory_kwargs: dictionary of kwargs used for configuring initialization of internal
            buffers (``device``).

    Example:
        >>> qm = Quantize(1.0, 0, tg.quint8)
        >>> qm(tg.tensor([[1.0, -1.0], [1.0, -1.0]])).int_repr().tolist()
        [[1, 0], [1, 0]]
    """

    def __init__(self, scale: float, zero_point: int, dtype, factory_kwargs: dict | None = None
                 ) -> None:
        super().__init__()
        device = (factory_kwargs or {}).get("device")
        self.register_buffer("scale", tg.tensor([float(scale)], device=device))
        self.register_buffer("zero_point", tg.tensor([int(zero_point)], dtype=tg.int64,
                                                     device=device))
        self.dtype = dtype

    def forward(self, X):
        return q.quantize_per_tensor(X, float(self.scale.item()), int(self.zero_point.item()),
                                     self.dtype)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant: bool = False):
        if not hasattr(mod, "activation_post_process"):
            raise AssertionError("Input float module must have activation_post_process "
                                 "attribute")
        scale, zero_point = _act_qparams(mod.activation_post_process)
        return Quantize(scale, zero_point, mod.activation_post_process.dtype)

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(nn.Module):
    """Dequantizes an incoming tensor (a float tensor passes as it is)."""

    def forward(self, Xq):
        return q.dequantize(Xq)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant: bool = False):
        return DeQuantize()


class Linear(_WeightedModule):
    """A quantized linear module with quantized tensor as inputs and outputs (Note [Quantized
    arithmetic] in functional.py). We adopt the same interface as ``tg.nn.Linear``.

    Attributes:
        weight (QuantizedTensor): the non-learnable quantized weights of the module of shape
            ``(out_features, in_features)`` (``weight()`` returns it, as PyTorch's).
        bias (Tensor): the non-learnable floating point bias of the module of shape
            ``(out_features)``.
        scale: `scale` parameter of output Quantized Tensor, type: double.
        zero_point: `zero_point` parameter for output Quantized Tensor, type: long.
    """

    _FLOAT_MODULE = (nn.Linear,)
    _version = 3

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype=q.qint8):
        super().__init__()
        if dtype is not q.qint8:
            raise RuntimeError("Unsupported dtype specified for quantized Linear!")
        self.in_features, self.out_features = in_features, out_features
        qweight = q.quantize_per_tensor(tg.zeros(out_features, in_features), 1.0, 0, q.qint8)
        self.set_weight_bias(qweight, tg.zeros(out_features) if bias_ else None)
        self.scale, self.zero_point = 1.0, 0

    def _get_name(self) -> str:
        return "QuantizedLinear"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self._weight.qscheme()}")

    def _forward(self, x, relu: bool):
        self._on(x.device)
        return qF.linear(x, self._weight, self._bias, self.scale, self.zero_point, relu=relu)

    def forward(self, x):
        return self._forward(x, False)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """Create a quantized module from an observed float module (or a QAT module)."""
        from ..intrinsic import LinearReLU as _NniLinearReLU
        if hasattr(mod, "weight_fake_quant"):
            weight_post_process = mod.weight_fake_quant
            activation_post_process = mod.activation_post_process
        else:
            float_modules = cls._FLOAT_MODULE
            if type(mod) not in float_modules:
                names = ", ".join(m.__name__ for m in float_modules)
                raise AssertionError(f"nnq.{cls.__name__}.from_float only works for {names}, "
                                     f"but got: {type(mod)}")
            if not hasattr(mod, "qconfig"):
                raise AssertionError("Input float module must have qconfig defined")
            activation_post_process = mod.activation_post_process
            if type(mod) is _NniLinearReLU:
                mod = mod[0]
            weight_post_process = mod.qconfig.weight()
        if not use_precomputed_fake_quant:
            weight_post_process(mod.weight)
        if weight_post_process.dtype is not q.qint8:
            raise AssertionError("Weight observer must have dtype torch.qint8")
        qweight = _quantize_weight(mod.weight.detach().float(), weight_post_process)
        qlinear = cls(mod.in_features, mod.out_features, dtype=q.qint8)
        qlinear.set_weight_bias(qweight, mod.bias)
        qlinear.scale, qlinear.zero_point = _act_qparams(activation_post_process)
        return qlinear


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


class Conv2d(_WeightedModule):
    """Applies a 2D convolution over a quantized input signal composed of several quantized
    input planes (Note [Quantized arithmetic] in functional.py). The interface is
    ``tg.nn.Conv2d``'s.

    Attributes:
        weight (QuantizedTensor): packed tensor derived from the learnable weight parameter
            (``weight()`` returns it).
        scale (float): scalar for the output scale.
        zero_point (int): scalar for the output zero point.
    """

    _FLOAT_MODULE = (nn.Conv2d,)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError("Only zero-padding is supported!")
        if dtype is not None and dtype is not q.quint8:
            raise NotImplementedError(f"quantized Conv2d: dtype {dtype} is not supported (the "
                                      f"activations are quint8)")
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding, self.dilation = _pair(padding), _pair(dilation)
        self.groups, self.padding_mode = groups, padding_mode
        self.transposed, self.output_padding = False, (0, 0)
        w = tg.zeros(out_channels, in_channels // groups, *self.kernel_size, device=device)
        self.set_weight_bias(q.quantize_per_tensor(w, 1.0, 0, q.qint8),
                             tg.zeros(out_channels) if bias else None)
        self.scale, self.zero_point = 1.0, 0

    def _get_name(self) -> str:
        return "QuantizedConv2d"

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self._bias is None:
            s += ", bias=False"
        return s

    def _forward(self, input, relu: bool):
        if input.ndim != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        self._on(input.device)
        return qF.conv2d(input, self._weight, self._bias, self.stride, self.padding,
                         self.dilation, self.groups, self.padding_mode, self.scale,
                         self.zero_point, input.dtype, relu=relu)

    def forward(self, input):
        return self._forward(input, False)

    @classmethod
    def get_qconv(cls, mod, activation_post_process, weight_post_process=None):
        """Creates a qconv object and returns it."""
        if weight_post_process is None:
            weight_post_process = mod.qconfig.weight()
        weight_post_process(mod.weight)
        if weight_post_process.dtype is not q.qint8:
            raise AssertionError("Weight observer must have a dtype of qint8")
        qweight = _quantize_weight(mod.weight.detach().float(), weight_post_process)
        qconv = cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride,
                    mod.padding, mod.dilation, mod.groups, mod.bias is not None,
                    mod.padding_mode)
        qconv.set_weight_bias(qweight, mod.bias)
        if activation_post_process is None or activation_post_process.dtype is tg.float32:
            return qconv
        qconv.scale, qconv.zero_point = _act_qparams(activation_post_process)
        return qconv

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """Creates a quantized module from a float module or qparams_dict."""
        from ..intrinsic import ConvReLU2d as _NniConvReLU2d
        from ..intrinsic.qat import ConvBn2d as _QatConvBn2d, ConvBnReLU2d as _QatConvBnReLU2d
        from tritongrad.nn.utils.fusion import fuse_conv_bn_weights
        if hasattr(mod, "weight_fake_quant"):
            if type(mod) in (_QatConvBn2d, _QatConvBnReLU2d):
                mod.weight, mod.bias = fuse_conv_bn_weights(
                    mod.weight, mod.bias, mod.bn.running_mean, mod.bn.running_var, mod.bn.eps,
                    mod.bn.weight, mod.bn.bias)
            if not hasattr(mod, "activation_post_process"):
                raise AssertionError("Input QAT module must have observer attached")
            return cls.get_qconv(mod, mod.activation_post_process, mod.weight_fake_quant)
        if type(mod) not in cls._FLOAT_MODULE:
            names = ", ".join(m.__name__ for m in cls._FLOAT_MODULE)
            raise AssertionError(f"nnq.{cls.__name__}.from_float only works for {names} but "
                                 f"got:{type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined.")
        app = getattr(mod, "activation_post_process", None)
        if type(mod) is _NniConvReLU2d:
            mod = mod[0]
        return cls.get_qconv(mod, app, mod.qconfig.weight())


class BatchNorm2d(nn.BatchNorm2d):
    """Evaluation batch norm of a quantized NCHW tensor, its output quantized to ``scale`` and
    ``zero_point`` (buffers, as the running statistics): ``qF.batch_norm``."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, device=device, dtype=dtype)
        self.register_buffer("scale", tg.tensor(1.0, device=device))
        self.register_buffer("zero_point", tg.tensor(0, device=device))

    def _get_name(self) -> str:
        return "QuantizedBatchNorm2d"

    def _check_input_dim(self, input) -> None:
        if input.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")

    def forward(self, input):
        if input.dim() != 4:  # (PyTorch's kernel's message)
            raise RuntimeError("Expecting the input tensor of rank 4.")
        return qF.batch_norm(input, self.running_mean, self.running_var, self.weight,
                             self.bias, self.eps, float(self.scale), int(self.zero_point))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        activation_post_process = mod.activation_post_process
        if type(mod).__name__ == "BNReLU2d":
            raise NotImplementedError("BatchNorm2d.from_float: fused BNReLU2d is not "
                                      "supported")
        new_mod = cls(mod.num_features, mod.eps)
        new_mod.weight = mod.weight
        new_mod.bias = mod.bias
        new_mod.running_mean = mod.running_mean
        new_mod.running_var = mod.running_var
        scale, zero_point = _act_qparams(activation_post_process)
        new_mod.scale = tg.tensor(scale)
        new_mod.zero_point = tg.tensor(zero_point)
        return new_mod


class ReLU(nn.Module):
    """Applies the rectified linear unit to a quantized tensor: ``max(q, zero_point)`` on the
    integers (the output keeps the input's parameters); a float input gets the float op.

    Note [Swapped parameter-free modules]
      PyTorch leaves ``nn.ReLU``, ``nn.MaxPool2d``, ``nn.AvgPool2d`` and
      ``nn.AdaptiveAvgPool2d`` float in a converted model: their functions accept quantized
      tensors. tritongrad's modules call their function directly, past the
      ``__torch_function__`` dispatch that brings a quantized tensor to its methods, so
      ``convert`` swaps them for these modules (without observers: the output keeps the
      input's parameters, as PyTorch's).
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return _functional_for(input, "relu")(input, inplace=self.inplace)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        return cls(getattr(mod, "inplace", False))


class ReLU6(ReLU):
    """Applies ``min(max(0, x), 6)`` to a quantized tensor (its own parameters)."""

    def forward(self, input):
        return _functional_for(input, "relu6")(input, inplace=self.inplace)


class MaxPool2d(nn.Module):
    """``nn.MaxPool2d`` for quantized inputs (Note [Swapped parameter-free modules]): the
    maximum of the integers, the input's parameters kept."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices = dilation, return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return _functional_for(input, "max_pool2d")(
            input, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        return cls(mod.kernel_size, mod.stride, mod.padding, mod.dilation,
                   mod.return_indices, mod.ceil_mode)


class AvgPool2d(nn.Module):
    """``nn.AvgPool2d`` for quantized inputs (Note [Swapped parameter-free modules])."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return _functional_for(input, "avg_pool2d")(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        return cls(mod.kernel_size, mod.stride, mod.padding, mod.ceil_mode,
                   mod.count_include_pad, mod.divisor_override)


class AdaptiveAvgPool2d(nn.Module):
    """``nn.AdaptiveAvgPool2d`` for quantized inputs (Note [Swapped parameter-free
    modules])."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return _functional_for(input, "adaptive_avg_pool2d")(input, self.output_size)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        return cls(mod.output_size)


class Dropout(nn.Module):
    """The quantized form of ``nn.Dropout``: the identity (quantized models run in eval
    mode)."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return input

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        return cls(mod.p, mod.inplace)


class FloatFunctional(nn.Module):
    """State collector class for float operations: ``add``, ``cat``, ``mul``, ``add_relu``,
    ``add_scalar``, ``mul_scalar``. Its ``activation_post_process`` (Identity until
    ``prepare`` gives it an observer) sees each result; ``convert`` swaps it for a
    :class:`QFunctional` with the observed output parameters.

    Example:
        >>> f_add = FloatFunctional()
        >>> f_add.add(tg.tensor([1.0]), tg.tensor([2.0])).tolist()
        [3.0]
    """

    def __init__(self):
        super().__init__()
        self.activation_post_process = nn.Identity()

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use "
                           "the underlying operation")

    def add(self, x, y):
        return self.activation_post_process(tg.add(x, y))

    def add_scalar(self, x, y: float):
        return tg.add(x, y)  # (no observer: the output parameters follow from the input's)

    def mul(self, x, y):
        return self.activation_post_process(tg.mul(x, y))

    def mul_scalar(self, x, y: float):
        return tg.mul(x, y)

    def cat(self, x, dim: int = 0):
        return self.activation_post_process(tg.cat(x, dim=dim))

    def add_relu(self, x, y):
        return self.activation_post_process(tg.relu(tg.add(x, y)))

    def matmul(self, x, y):
        return self.activation_post_process(tg.matmul(x, y))


class FXFloatFunctional(FloatFunctional):
    """As :class:`FloatFunctional`, without observers (FX graph mode's form)."""

    def add(self, x, y):
        return tg.add(x, y)

    def mul(self, x, y):
        return tg.mul(x, y)

    def cat(self, x, dim: int = 0):
        return tg.cat(x, dim=dim)

    def add_relu(self, x, y):
        return tg.relu(tg.add(x, y))

    def matmul(self, x, y):
        return tg.matmul(x, y)


class QFunctional(nn.Module):
    """Wrapper class for quantized operations: ``add``, ``cat``, ``mul``, ``add_relu``,
    ``add_scalar``, ``mul_scalar``, their outputs quantized to ``scale`` and
    ``zero_point``.

    Example:
        >>> q_add = QFunctional()
        >>> a = tg.quantize_per_tensor(tg.tensor([3.0, 4.0]), 1.0, 0, tg.qint32)
        >>> q_add.add(a, a).int_repr().tolist()
        [6, 8]
    """

    def __init__(self):
        super().__init__()
        self.scale, self.zero_point = 1.0, 0
        self.activation_post_process = nn.Identity()

    def _get_name(self) -> str:
        return "QFunctional"

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def forward(self, x):
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the "
                           "underlying operation")

    def add(self, x, y):
        return qF.add(x, y, self.scale, self.zero_point)

    def add_scalar(self, x, y: float):
        return qF.add_scalar(x, y)

    def mul(self, x, y):
        return qF.mul(x, y, self.scale, self.zero_point)

    def mul_scalar(self, x, y: float):
        return qF.mul_scalar(x, y)

    def cat(self, x, dim: int = 0):
        return qF.cat(x, dim, self.scale, self.zero_point)

    def add_relu(self, x, y):
        return qF.add_relu(x, y, self.scale, self.zero_point)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        if type(mod) is not FloatFunctional:
            raise AssertionError("QFunctional.from_float expects an instance of "
                                 "FloatFunctional")
        new_mod = cls()
        new_mod.scale, new_mod.zero_point = _act_qparams(mod.activation_post_process)
        return new_mod
