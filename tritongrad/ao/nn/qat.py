"""Quantization-aware training modules (PyTorch's ``torch.ao.nn.qat``): ``Linear`` and
``Conv2d`` whose weights pass through a fake quantize module (``weight_fake_quant``) in
every forward, so that training sees the quantization error; gradients reach the float
weights through the straight-through estimate."""

from __future__ import annotations

import tritongrad as tg
from tritongrad import nn
from tritongrad.autograd.tensor import Tensor

__all__ = ["Linear", "Conv2d"]


def _check_qconfig(qconfig) -> None:
    if not qconfig:
        raise AssertionError("qconfig must be provided for QAT module")


class Linear(nn.Linear):
    """A linear module attached with FakeQuantize modules for weight, used for
    quantization aware training. We adopt the same interface as ``tg.nn.Linear``.

    Attributes:
        weight_fake_quant: fake quant module for weight.
    """

    _FLOAT_MODULE = nn.Linear

    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None,
                 dtype=None):
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        _check_qconfig(qconfig)
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input: Tensor) -> Tensor:
        return tg.nn.functional.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> nn.Module:
        """Create a qat module from a float module (``nn.Linear`` or ``nni.LinearReLU``)."""
        from .intrinsic import LinearReLU
        if type(mod) not in (cls._FLOAT_MODULE, LinearReLU):
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        qconfig = mod.qconfig
        if isinstance(mod, LinearReLU):
            mod = mod[0]
        qat = cls(mod.in_features, mod.out_features, bias=mod.bias is not None,
                  qconfig=qconfig)
        qat.weight = mod.weight
        qat.bias = mod.bias
        return qat

    def to_float(self) -> nn.Module:
        linear = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        linear.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            linear.bias = nn.Parameter(self.bias.detach())
        linear.train(self.training)
        return linear


class Conv2d(nn.Conv2d):
    """A Conv2d module attached with FakeQuantize modules for weight, used for quantization
    aware training. We adopt the same interface as ``tg.nn.Conv2d``.

    Attributes:
        weight_fake_quant: fake quant module for weight.
    """

    _FLOAT_MODULE = nn.Conv2d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", qconfig=None,
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride,
                         padding=padding, dilation=dilation, groups=groups, bias=bias,
                         padding_mode=padding_mode, device=device, dtype=dtype)
        _check_qconfig(qconfig)
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        F = tg.nn.functional
        if self.padding_mode != "zeros":
            x = F.pad(input, self._explicit_padding(), mode=self.padding_mode)
            return F.conv2d(x, weight, bias, self.stride, 0, self.dilation, self.groups)
        return F.conv2d(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> nn.Module:
        """Create a qat module from a float module."""
        from .intrinsic import _FusedModule
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        qconfig = mod.qconfig
        if isinstance(mod, _FusedModule):
            mod = mod[0]
        if not isinstance(mod, nn.Conv2d):
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        qat = cls(mod.in_channels, mod.out_channels, mod.kernel_size, stride=mod.stride,
                  padding=mod.padding, dilation=mod.dilation, groups=mod.groups,
                  bias=mod.bias is not None, padding_mode=mod.padding_mode, qconfig=qconfig)
        qat.weight = mod.weight
        qat.bias = mod.bias
        return qat

    def to_float(self) -> nn.Module:
        conv = nn.Conv2d(self.in_channels, self.out_channels, self.kernel_size, self.stride,
                         self.padding, self.dilation, self.groups, self.bias is not None,
                         self.padding_mode)
        conv.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = nn.Parameter(self.bias.detach())
        conv.train(self.training)
        return conv
