"""Dynamically quantized modules (PyTorch's ``torch.ao.nn.quantized.dynamic``): the weights
are quantized ahead of time, the activations at run time from their own range, and the
outputs are float."""

from __future__ import annotations

import numpy as np

import tritongrad as tg

from ... import _qtensor as q
from . import modules as nnq

__all__ = ["Linear"]


class Linear(nnq.Linear):
    """A dynamic quantized linear module with floating point tensor as inputs and outputs:
    each input is quantized to quint8 with parameters chosen from its min and max (PyTorch's
    ``ChooseQuantizationParams``, ``reduce_range`` as the weight observer's), multiplied with
    the int8 weight exactly, and the result scaled back to float32, plus the bias.

    Example:
        >>> m = Linear(20, 30)
        >>> m(tg.randn(128, 20)).shape
        tritongrad.Size([128, 30])
    """

    _FLOAT_MODULE = (tg.nn.Linear,)
    _version = 4

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype=q.qint8):
        super().__init__(in_features, out_features, bias_, dtype=dtype)
        self.version = 4
        self.reduce_range = True

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={self._weight.dtype}, qscheme={self._weight.qscheme()}")

    def forward(self, x):
        self._on(x.device)
        xq = q.quantize_per_tensor_dynamic(x.detach().to(tg.float32), q.quint8,
                                           self.reduce_range)
        from .functional import _shifted
        xs, _ = _shifted(xq)
        w, w_scales = _shifted(self._weight)
        lead = tuple(x.shape[:-1])
        acc = (xs.reshape(-1, xs.shape[-1]) @ w.t()).cpu().numpy()
        # (FBGEMM's dynamic path: the float output is one fused multiply-add,
        # acc * float32(x_scale * w_scale) + bias, rounded once to float32)
        act_w = (np.float32(xq.q_scale()) * w_scales.astype(np.float32)).astype(np.float32)
        y = acc.astype(np.float64) * act_w.astype(np.float64)
        if self._bias is not None:
            y = y + self._bias.cpu().numpy().astype(np.float64)
        return tg.as_tensor(y.astype(np.float32), device=x.device).reshape(
            *lead, self.out_features)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """Create a dynamic quantized module from a float module (``nn.Linear`` or QAT)."""
        if type(mod) not in (tg.nn.Linear,) and not hasattr(mod, "weight_fake_quant"):
            raise AssertionError(f"nn.quantized.dynamic.Linear.from_float only works for "
                                 f"nn.Linear, got: {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        weight_observer = mod.qconfig.weight()
        dtype = weight_observer.dtype
        if dtype is not q.qint8:
            raise RuntimeError(f"Unsupported dtype specified for dynamic quantized Linear: "
                               f"{dtype} (only qint8 is supported)")
        weight_observer(mod.weight)
        qweight = nnq._quantize_weight(mod.weight.detach().float(), weight_observer)
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        return qlinear
