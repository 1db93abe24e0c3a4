"""Fused quantized modules (PyTorch's ``torch.ao.nn.intrinsic.quantized``): a quantized
convolution or linear layer with the ReLU applied in its requantization (the output clamped
below at its zero point)."""

from __future__ import annotations

from ..quantized import modules as nnq
from . import ConvReLU2d as _NniConvReLU2d, LinearReLU as _NniLinearReLU

__all__ = ["ConvReLU2d", "LinearReLU"]


class ConvReLU2d(nnq.Conv2d):
    """A ConvReLU2d module is a fused module of Conv2d and ReLU. We adopt the same interface
    as :class:`tritongrad.ao.nn.quantized.Conv2d`."""

    _FLOAT_MODULE = (_NniConvReLU2d,)

    def _get_name(self) -> str:
        return "QuantizedConvReLU2d"

    def forward(self, input):
        return self._forward(input, True)


class LinearReLU(nnq.Linear):
    """A LinearReLU module fused from Linear and ReLU modules. We adopt the same interface
    as :class:`tritongrad.ao.nn.quantized.Linear`."""

    _FLOAT_MODULE = (_NniLinearReLU,)

    def _get_name(self) -> str:
        return "QuantizedLinearReLU"

    def forward(self, x):
        return self._forward(x, True)
