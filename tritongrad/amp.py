"""``tg.amp``: automatic mixed precision (PyTorch's ``torch.amp``): ``autocast`` regions, where
ops run in float16/bfloat16 or float32 as suits each, and ``GradScaler``, which scales the loss
so that small float16 gradients survive. ``tg.cuda.amp`` and ``tg.cpu.amp`` hold PyTorch's
older per-device forms, deprecated there and here. See docs/training.md, "Mixed precision".

Example:
    >>> model = tg.nn.Linear(4, 1)
    >>> with tg.amp.autocast("cpu"):
    ...     y = model(tg.randn(8, 4))
    >>> y.dtype
    tritongrad.bfloat16
"""

from __future__ import annotations

import sys
import types
import warnings

from .autograd.autocast import autocast, is_autocast_available
from .optim.grad_scaler import GradScaler
from .runtime.dtype import bfloat16, dtype, float16

__all__ = ["GradScaler", "autocast", "is_autocast_available"]


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"`{old}(args...)` is deprecated. Please use `{new}` instead.",
                  FutureWarning, stacklevel=3)


class _CudaAutocast(autocast):
    """``tg.cuda.amp.autocast(args...)``: deprecated, ``tg.amp.autocast("cuda", args...)``."""

    def __init__(self, enabled: bool = True, dtype: dtype = float16,
                 cache_enabled: bool = True):
        _deprecated("torch.cuda.amp.autocast", "torch.amp.autocast('cuda', args...)")
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class _CpuAutocast(autocast):
    """``tg.cpu.amp.autocast(args...)``: deprecated, ``tg.amp.autocast("cpu", args...)``."""

    def __init__(self, enabled: bool = True, dtype: dtype = bfloat16,
                 cache_enabled: bool = True):
        _deprecated("torch.cpu.amp.autocast", "torch.amp.autocast('cpu', args...)")
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class _CudaGradScaler(GradScaler):
    """``tg.cuda.amp.GradScaler(args...)``: deprecated, ``tg.amp.GradScaler("cuda",
    args...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        _deprecated("torch.cuda.amp.GradScaler", "torch.amp.GradScaler('cuda', args...)")
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


for _cls, _name in ((_CudaAutocast, "autocast"), (_CpuAutocast, "autocast"),
                    (_CudaGradScaler, "GradScaler")):
    _cls.__name__ = _cls.__qualname__ = _name  # (the names PyTorch's classes have)


def _module(name: str, doc: str, **attrs) -> types.ModuleType:
    """A small module made here (``import tritongrad.cuda.amp`` works as PyTorch's does)."""
    mod = types.ModuleType(name, doc)
    mod.__dict__.update(attrs)
    mod.__all__ = [a for a in attrs if not a.startswith("_")]
    sys.modules[name] = mod
    return mod


cuda_amp = _module("tritongrad.cuda.amp", "PyTorch's torch.cuda.amp (deprecated forms).",
                   autocast=_CudaAutocast, GradScaler=_CudaGradScaler)
cpu_amp = _module("tritongrad.cpu.amp", "PyTorch's torch.cpu.amp (deprecated form).",
                  autocast=_CpuAutocast)
cpu = _module("tritongrad.cpu", "PyTorch's torch.cpu: here only its amp.", amp=cpu_amp)
