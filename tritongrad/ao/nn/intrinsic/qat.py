"""Fused quantization-aware training modules (PyTorch's ``torch.ao.nn.intrinsic.qat``):
``ConvReLU2d``, ``LinearReLU``, and ``ConvBn2d`` / ``ConvBnReLU2d``, which simulate the
batch norm folded into the convolution's weights while still training the batch norm."""

from __future__ import annotations

import math

import tritongrad as tg
from tritongrad import nn
from tritongrad.autograd.tensor import Tensor
from tritongrad.nn import init

from .. import qat as nnqat
from . import ConvBn2d as _NniConvBn2d, ConvBnReLU2d as _NniConvBnReLU2d
from . import ConvReLU2d as _NniConvReLU2d, LinearReLU as _NniLinearReLU

__all__ = ["ConvReLU2d", "LinearReLU", "ConvBn2d", "ConvBnReLU2d", "update_bn_stats",
           "freeze_bn_stats"]


def _with_relu(fused_cls: type, mod: nn.Module) -> nn.Module:
    """``fused_cls(mod, ReLU())`` in ``mod``'s training mode (the float module a QAT module
    with a fused ReLU converts back to)."""
    out = fused_cls(mod, nn.ReLU())
    out.train(mod.training)
    return out


class ConvReLU2d(nnqat.Conv2d):
    """A ConvReLU2d module is a fused module of Conv2d and ReLU, attached with FakeQuantize
    modules for weight for quantization aware training."""

    _FLOAT_MODULE = _NniConvReLU2d

    def forward(self, input: Tensor) -> Tensor:
        return tg.nn.functional.relu(
            self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias))

    def to_float(self) -> _NniConvReLU2d:
        return _with_relu(_NniConvReLU2d, super().to_float())


class LinearReLU(nnqat.Linear):
    """A LinearReLU module fused from Linear and ReLU modules, attached with FakeQuantize
    modules for weight, used in quantization aware training."""

    _FLOAT_MODULE = _NniLinearReLU

    def forward(self, input: Tensor) -> Tensor:
        return tg.nn.functional.relu(tg.nn.functional.linear(
            input, self.weight_fake_quant(self.weight), self.bias))

    def to_float(self) -> _NniLinearReLU:
        return _with_relu(_NniLinearReLU, super().to_float())


class ConvBn2d(nnqat.Conv2d):
    """A ConvBn2d module is a module fused from Conv2d and BatchNorm2d, attached with
    FakeQuantize modules for weight, used in quantization aware training.

    The forward is PyTorch's approximate fold: the weight scaled by
    ``bn.weight / sqrt(running_var + eps)`` is fake quantized, the convolution's output is
    divided by that factor again, the bias added, and the batch norm applied (in training
    mode it updates its running statistics).

    Attributes:
        freeze_bn: whether the batch norm's statistics are frozen.
        weight_fake_quant: fake quant module for weight.
    """

    _FLOAT_MODULE = _NniConvBn2d
    _FLOAT_RELU = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=None, padding_mode="zeros", eps=1e-05,
                 momentum=0.1, freeze_bn=False, qconfig=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, False, padding_mode, qconfig=qconfig)
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = nn.BatchNorm2d(out_channels, eps, momentum, True, True)
        if bias:
            self.bias = nn.Parameter(tg.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_bn_parameters()
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()

    def reset_running_stats(self) -> None:
        self.bn.reset_running_stats()

    def reset_bn_parameters(self) -> None:
        self.bn.reset_running_stats()
        init.uniform_(self.bn.weight)
        init.zeros_(self.bn.bias)
        if self.bias is not None:  # (the convolution's own bias)
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def update_bn_stats(self) -> ConvBn2d:
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self) -> ConvBn2d:
        self.freeze_bn = True
        self.bn.training = False
        return self

    def _forward_approximate(self, input):
        running_std = tg.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        weight_shape = [-1] + [1] * (self.weight.ndim - 1)
        bias_shape = [1, -1] + [1] * (self.weight.ndim - 2)
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
        zero_bias = tg.zeros(self.out_channels, device=scaled_weight.device, dtype=input.dtype)
        conv = self._conv_forward(input, scaled_weight, zero_bias)
        conv_orig = conv / scale_factor.reshape(bias_shape)
        if self.bias is not None:
            conv_orig = conv_orig + self.bias.reshape(bias_shape)
        return self.bn(conv_orig)

    def forward(self, input: Tensor) -> Tensor:
        out = self._forward_approximate(input)
        return tg.nn.functional.relu(out) if self._FLOAT_RELU else out

    def train(self, mode: bool = True) -> ConvBn2d:
        """Batchnorm's training behavior is using the self.training flag. Prevent changing it
        if BN is frozen."""
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> ConvBn2d:
        """Create a qat module from a float module (a fused ``nni.ConvBn2d``)."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        conv, bn = mod[0], mod[1]
        qat = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                  conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                  conv.padding_mode, bn.eps, bn.momentum, False, mod.qconfig)
        qat.weight, qat.bias = conv.weight, conv.bias
        qat.bn.weight, qat.bn.bias = bn.weight, bn.bias
        qat.bn.running_mean, qat.bn.running_var = bn.running_mean, bn.running_var
        qat.bn.num_batches_tracked = bn.num_batches_tracked
        return qat

    def to_float(self) -> nn.Module:
        from tritongrad.nn.utils.fusion import fuse_conv_bn_weights
        conv = super().to_float()
        conv.weight, conv.bias = fuse_conv_bn_weights(
            conv.weight, conv.bias, self.bn.running_mean, self.bn.running_var, self.bn.eps,
            self.bn.weight, self.bn.bias)
        return _with_relu(_NniConvReLU2d, conv) if self._FLOAT_RELU else conv


class ConvBnReLU2d(ConvBn2d):
    """A ConvBnReLU2d module is a module fused from Conv2d, BatchNorm2d and ReLU, attached
    with FakeQuantize modules for weight, used in quantization aware training."""

    _FLOAT_MODULE = _NniConvBnReLU2d
    _FLOAT_RELU = True


def update_bn_stats(mod: nn.Module) -> None:
    """Lets the batch norm of a fused QAT conv-bn update its running statistics
    (``model.apply(update_bn_stats)``)."""
    if isinstance(mod, ConvBn2d):
        mod.update_bn_stats()


def freeze_bn_stats(mod: nn.Module) -> None:
    """Freezes the running statistics of the batch norm of a fused QAT conv-bn
    (``model.apply(freeze_bn_stats)``)."""
    if isinstance(mod, ConvBn2d):
        mod.freeze_bn_stats()
