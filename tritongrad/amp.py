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

import collections.abc
import functools
import sys
import types
import warnings
from collections.abc import Callable

import numpy as np

from .autograd.autocast import (autocast, get_autocast_dtype, is_autocast_available,
                                is_autocast_enabled)
from .autograd.tensor import Tensor
from .optim.grad_scaler import GradScaler, OptState
from .runtime.dtype import bfloat16, dtype, float16, float64

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]


def _cast(value, device_type: str, to: dtype):
    """``value`` with its floating tensors on ``device_type`` (not float64) cast to ``to``,
    through lists, tuples, mappings and other iterables (strings and arrays kept)."""
    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype is not float64)
        return value.to(to) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, to): _cast(v, device_type, to) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        items = (_cast(v, device_type, to) for v in value)
        return type(value)(items) if isinstance(value, (list, tuple)) else items
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str,
               cast_inputs: dtype | None = None) -> Callable:
    """Create a helper decorator for ``forward`` methods of custom autograd functions.

    Autograd functions are subclasses of :class:`tritongrad.autograd.Function`.

    Args:
        device_type(str): Device type to use: 'cuda' or 'cpu' (the ``type`` of a
            :class:`tritongrad.device`).
        cast_inputs (:class:`tritongrad.dtype` or None, optional, default=None): If not
            ``None``, when ``forward`` runs in an autocast-enabled region, casts incoming
            floating-point Tensors to the target dtype (non-floating-point Tensors are not
            affected), then executes ``forward`` with autocast disabled. If ``None``,
            ``forward``'s internal ops execute with the current autocast state.

    .. note::
        If the decorated ``forward`` is called outside an autocast-enabled region,
        :func:`custom_fwd<custom_fwd>` is a no-op and ``cast_inputs`` has no effect.
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(ctx, *args, **kwargs):
        # backward (custom_bwd) runs in the autocast state forward ran in, kept on ctx
        ctx._dtype = get_autocast_dtype(device_type)
        enabled = is_autocast_enabled(device_type)
        if cast_inputs is None or not enabled:
            ctx._fwd_used_autocast = enabled and cast_inputs is None
            return fwd(ctx, *args, **kwargs)
        ctx._fwd_used_autocast = False
        with autocast(device_type, enabled=False):
            return fwd(ctx, *_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Create a helper decorator for backward methods of custom autograd functions.

    Autograd functions are subclasses of :class:`tritongrad.autograd.Function`. Ensures that
    ``backward`` executes with the same autocast state as ``forward`` (decorated with
    :func:`custom_fwd`).

    Args:
        device_type(str): Device type to use: 'cuda' or 'cpu'.
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(ctx, *args, **kwargs):
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(ctx, *args, **kwargs)
    return decorate_bwd


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


def _device_grad_scaler(device_type: str) -> type:
    """``tg.<device_type>.amp.GradScaler``: PyTorch's deprecated per-device form of
    ``tg.amp.GradScaler(device_type, args...)``."""
    class _DeviceGradScaler(GradScaler):
        def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True) -> None:
            _deprecated(f"torch.{device_type}.amp.GradScaler",
                        f"torch.amp.GradScaler('{device_type}', args...)")
            super().__init__(device_type, init_scale, growth_factor, backoff_factor,
                             growth_interval, enabled)

    _DeviceGradScaler.__doc__ = (f"``tg.{device_type}.amp.GradScaler(args...)``: deprecated, "
                                 f"``tg.amp.GradScaler('{device_type}', args...)``.")
    return _DeviceGradScaler


_CudaGradScaler, _CpuGradScaler = _device_grad_scaler("cuda"), _device_grad_scaler("cpu")


def _cuda_custom_fwd(fwd=None, *, cast_inputs=None):
    """``tg.cuda.amp.custom_fwd(args...)``: deprecated, ``tg.amp.custom_fwd(args...,
    device_type='cuda')``."""
    _deprecated("torch.cuda.amp.custom_fwd", "torch.amp.custom_fwd(args..., device_type='cuda')")
    return functools.partial(custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def _cuda_custom_bwd(bwd):
    """``tg.cuda.amp.custom_bwd(args...)``: deprecated, ``tg.amp.custom_bwd(args...,
    device_type='cuda')``."""
    _deprecated("torch.cuda.amp.custom_bwd", "torch.amp.custom_bwd(args..., device_type='cuda')")
    return functools.partial(custom_bwd, device_type="cuda")(bwd)


for _cls, _name in ((_CudaAutocast, "autocast"), (_CpuAutocast, "autocast"),
                    (_CudaGradScaler, "GradScaler"), (_CpuGradScaler, "GradScaler"),
                    (_cuda_custom_fwd, "custom_fwd"),
                    (_cuda_custom_bwd, "custom_bwd")):
    _cls.__name__ = _cls.__qualname__ = _name  # (the names PyTorch's classes have)


def _module(name: str, doc: str, **attrs) -> types.ModuleType:
    """A small module made here (``import tritongrad.cuda.amp`` works as PyTorch's does)."""
    mod = types.ModuleType(name, doc)
    mod.__dict__.update(attrs)
    mod.__all__ = [a for a in attrs if not a.startswith("_")]
    sys.modules[name] = mod
    return mod


cuda_amp = _module("tritongrad.cuda.amp", "PyTorch's torch.cuda.amp (deprecated forms).",
                   autocast=_CudaAutocast, GradScaler=_CudaGradScaler,
                   custom_fwd=_cuda_custom_fwd, custom_bwd=_cuda_custom_bwd)
cpu_amp = _module("tritongrad.cpu.amp", "PyTorch's torch.cpu.amp (deprecated forms).",
                  autocast=_CpuAutocast, GradScaler=_CpuGradScaler)
# PyTorch's submodules of torch.amp, which code imports names from
autocast_mode = _module("tritongrad.amp.autocast_mode", "PyTorch's torch.amp.autocast_mode.",
                        autocast=autocast, custom_fwd=custom_fwd, custom_bwd=custom_bwd,
                        is_autocast_available=is_autocast_available)
grad_scaler = _module("tritongrad.amp.grad_scaler", "PyTorch's torch.amp.grad_scaler.",
                      GradScaler=GradScaler, OptState=OptState)
