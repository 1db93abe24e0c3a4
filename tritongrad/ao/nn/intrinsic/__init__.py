"""Fused float modules (PyTorch's ``torch.ao.nn.intrinsic``): sequences of modules that
``fuse_modules`` puts together so that quantization treats them as one op; ``qat`` and
``quantized`` below hold their QAT and quantized forms."""

from __future__ import annotations

from tritongrad import nn

__all__ = ["_FusedModule", "ConvReLU2d", "ConvBn2d", "ConvBnReLU2d", "LinearReLU", "qat",
           "quantized"]


class _FusedModule(nn.Sequential):
    """A Sequential whose type marks a fusion pattern."""


def _check_types(name: str, mods, types) -> None:
    got = tuple(type(m) for m in mods)
    if len(got) != len(types) or any(not issubclass(g, t) for g, t in zip(got, types)):
        want = ", ".join(t.__name__ for t in types)
        raise AssertionError(f"Incorrect types for input modules"
                             f"({', '.join(g.__name__ for g in got)}): {name} takes ({want})")


class ConvReLU2d(_FusedModule):
    """This is a sequential container which calls the Conv2d and ReLU modules. During
    quantization this will be replaced with the corresponding fused module."""

    def __init__(self, conv, relu):
        _check_types("ConvReLU2d", (conv, relu), (nn.Conv2d, nn.ReLU))
        super().__init__(conv, relu)


class ConvBn2d(_FusedModule):
    """This is a sequential container which calls the Conv 2d and Batch Norm 2d modules.
    During quantization this will be replaced with the corresponding fused module."""

    def __init__(self, conv, bn):
        _check_types("ConvBn2d", (conv, bn), (nn.Conv2d, nn.BatchNorm2d))
        super().__init__(conv, bn)


class ConvBnReLU2d(_FusedModule):
    """This is a sequential container which calls the Conv 2d, Batch Norm 2d, and ReLU
    modules. During quantization this will be replaced with the corresponding fused
    module."""

    def __init__(self, conv, bn, relu):
        _check_types("ConvBnReLU2d", (conv, bn, relu), (nn.Conv2d, nn.BatchNorm2d, nn.ReLU))
        super().__init__(conv, bn, relu)


class LinearReLU(_FusedModule):
    """This is a sequential container which calls the Linear and ReLU modules. During
    quantization this will be replaced with the corresponding fused module."""

    def __init__(self, linear, relu):
        _check_types("LinearReLU", (linear, relu), (nn.Linear, nn.ReLU))
        super().__init__(linear, relu)


from . import qat, quantized  # noqa: E402  (they subclass the modules above)
