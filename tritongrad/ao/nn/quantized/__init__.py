"""Quantized modules (PyTorch's ``torch.ao.nn.quantized``): ``Linear``, ``Conv2d``,
``BatchNorm2d``, ``ReLU``, ``ReLU6``, ``Quantize``, ``DeQuantize``, ``FloatFunctional``,
``QFunctional``; ``functional`` and ``dynamic`` below."""

from . import dynamic, functional
from .modules import (AdaptiveAvgPool2d, AvgPool2d, BatchNorm2d, Conv2d, DeQuantize, Dropout,
                      FloatFunctional, FXFloatFunctional, Linear, MaxPool2d, QFunctional,
                      Quantize, ReLU, ReLU6)

__all__ = ["AdaptiveAvgPool2d", "AvgPool2d", "BatchNorm2d", "Conv2d", "DeQuantize", "Dropout",
           "FloatFunctional", "FXFloatFunctional", "Linear", "MaxPool2d", "QFunctional", "Quantize",
           "ReLU", "ReLU6", "dynamic", "functional"]
