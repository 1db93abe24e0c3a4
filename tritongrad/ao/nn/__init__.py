"""PyTorch's ``torch.ao.nn``: fused (``intrinsic``), quantization-aware training (``qat``)
and quantized (``quantized``) modules."""

from . import intrinsic, qat, quantized

__all__ = ["intrinsic", "qat", "quantized"]
