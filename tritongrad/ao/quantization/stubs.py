"""QuantStub, DeQuantStub and QuantWrapper: where a model's quantized region begins and ends
(PyTorch's ``torch.ao.quantization.stubs``)."""

from __future__ import annotations

from tritongrad import nn

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class _Stub(nn.Module):
    """An identity module that may carry its own ``qconfig`` (what the two stubs share;
    ``convert`` tells them apart by type)."""

    def __init__(self, qconfig=None) -> None:
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantStub(_Stub):
    """Quantize stub module, before calibration, this is same as an observer, it will be
    swapped as ``nnq.Quantize`` in ``convert``.

    Args:
        qconfig: quantization configuration for the tensor, if qconfig is not provided, we
            will get qconfig from parent modules.
    """


class DeQuantStub(_Stub):
    """Dequantize stub module, before calibration, this is same as identity, this will be
    swapped as ``nnq.DeQuantize`` in ``convert``.

    Args:
        qconfig: quantization configuration for the tensor, if qconfig is not provided, we
            will get qconfig from parent modules.
    """


class QuantWrapper(nn.Module):
    """A wrapper class that wraps the input module, adds QuantStub and DeQuantStub and
    surround the call to module with call to quant and dequant modules.

    This is used by the ``quantization`` utility functions to add the quant and dequant
    modules, before ``convert`` function ``QuantStub`` will just be observer, it observes the
    input tensor, after ``convert``, ``QuantStub`` will be swapped to ``nnq.Quantize`` which
    does actual quantization. Similarly for ``DeQuantStub``.
    """

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        X = self.quant(X)
        X = self.module(X)
        return self.dequant(X)
