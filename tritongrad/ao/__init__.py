"""PyTorch's ``torch.ao``: quantization (``tritongrad.ao.quantization``, eager mode) and the
quantized, QAT and fused modules (``tritongrad.ao.nn``). The quantized tensors, dtypes and
qschemes live in ``_qtensor`` (re-exported at the top of ``tritongrad``)."""

from . import _qtensor, nn, quantization  # noqa: F401

__all__ = ["nn", "quantization"]
