"""Fake quantization modules for quantization-aware training (PyTorch's
``torch.ao.quantization.fake_quantize``): an observer's parameters applied with
``tg.fake_quantize_per_tensor_affine`` / ``tg.fake_quantize_per_channel_affine``, whose
gradients are the straight-through estimate (autograd/ops/quantize.py)."""

from __future__ import annotations

import numpy as np

import tritongrad as tg
from tritongrad import nn
from tritongrad.autograd.tensor import Tensor

from .. import _qtensor as q
from .observer import (FixedQParamsObserver, HistogramObserver, MovingAverageMinMaxObserver,
                       MovingAveragePerChannelMinMaxObserver, _host, _is_per_channel,
                       _is_per_tensor, _is_symmetric, _load_resized, _with_args,
                       default_fixed_qparams_range_0to1_observer,
                       default_fixed_qparams_range_neg1to1_observer)

__all__ = ["FakeQuantizeBase", "FakeQuantize", "FixedQParamsFakeQuantize",
           "FusedMovingAvgObsFakeQuantize", "disable_fake_quant", "enable_fake_quant",
           "disable_observer", "enable_observer", "default_fake_quant",
           "default_weight_fake_quant", "default_dynamic_fake_quant",
           "default_fixed_qparams_range_neg1to1_fake_quant",
           "default_fixed_qparams_range_0to1_fake_quant",
           "default_per_channel_weight_fake_quant", "default_embedding_fake_quant",
           "default_embedding_fake_quant_4bit", "default_histogram_fake_quant",
           "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
           "default_fused_per_channel_wt_fake_quant"]


class FakeQuantizeBase(nn.Module):
    """Base fake quantize module. In forward, fake quantize modules update the statistics of
    the observed Tensor and fake quantize the input; ``calculate_qparams`` computes the
    quantization parameters given the collected statistics. ``fake_quant_enabled`` and
    ``observer_enabled`` are one-element uint8 buffers (so that they replicate)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("fake_quant_enabled", tg.tensor([1], dtype=tg.uint8))
        self.register_buffer("observer_enabled", tg.tensor([1], dtype=tg.uint8))

    def forward(self, x):
        raise NotImplementedError

    def calculate_qparams(self, **kwargs):
        raise NotImplementedError

    def enable_fake_quant(self, enabled: bool = True) -> None:
        self.fake_quant_enabled[0] = 1 if enabled else 0

    def disable_fake_quant(self) -> None:
        self.enable_fake_quant(False)

    def enable_observer(self, enabled: bool = True) -> None:
        self.observer_enabled[0] = 1 if enabled else 0

    def disable_observer(self) -> None:
        self.enable_observer(False)

    with_args = classmethod(_with_args)


class FakeQuantize(FakeQuantizeBase):
    """Simulate the quantize and dequantize operations in training time:
    ``x_out = (clamp(round(x / scale + zero_point), quant_min, quant_max) - zero_point) *
    scale``, with ``scale`` and ``zero_point`` from the observer while ``observer_enabled``.
    The gradient is the straight-through estimate: ``g`` where the value was not clamped, 0
    where it was.

    Args:
        observer (module): Module for observing statistics on input tensors and calculating
            scale and zero-point (default :class:`MovingAverageMinMaxObserver`).
        observer_kwargs (optional): Arguments for the observer module.

    Attributes:
        activation_post_process (Module): User provided module that collects statistics on
            the input tensor and provides a method to calculate scale and zero-point.
    """

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None,
                 is_dynamic=False, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            dtype = observer_kwargs.get("dtype", q.quint8)
            if hasattr(observer, "p"):
                dtype = getattr(getattr(observer, "p", {}), "keywords", {}).get("dtype", dtype)
            info = tg.iinfo(dtype)
            if info.min > quant_min:
                raise AssertionError("quant_min out of bound")
            if quant_max > info.max:
                raise AssertionError("quant_max out of bound")
            observer_kwargs.update({"quant_min": quant_min, "quant_max": quant_max})
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        app = self.activation_post_process
        self.quant_min, self.quant_max = app.quant_min, app.quant_max
        self.is_dynamic = app.is_dynamic
        zp_dtype = tg.float32 if app.qscheme is q.per_channel_affine_float_qparams else tg.int32
        self.register_buffer("scale", tg.tensor([1.0], dtype=tg.float32))
        self.register_buffer("zero_point", tg.tensor([0], dtype=zp_dtype))
        self.dtype, self.qscheme = app.dtype, app.qscheme
        self.ch_axis = getattr(app, "ch_axis", -1)
        if not (_is_per_channel(self.qscheme) or _is_per_tensor(self.qscheme)):
            raise AssertionError(f"Only per channel and per tensor quantization are supported "
                                 f"in fake quantize got qscheme: {self.qscheme}")
        self.is_per_channel = _is_per_channel(self.qscheme)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def _set_qparams(self, scale, zero_point) -> None:
        dev = self.scale.device
        self.scale = scale.detach().to(device=dev, dtype=tg.float32).clone()
        self.zero_point = zero_point.detach().to(device=dev,
                                                 dtype=self.zero_point.dtype).clone()

    def _fake_quantize(self, X: Tensor) -> Tensor:
        """``X`` fake quantized with the current ``scale`` and ``zero_point`` (per channel
        along ``ch_axis``, or per tensor)."""
        app = self.activation_post_process
        if self.is_per_channel:
            return tg.fake_quantize_per_channel_affine(X, self.scale, self.zero_point,
                                                       self.ch_axis, app.quant_min,
                                                       app.quant_max)
        return tg.fake_quantize_per_tensor_affine(X, self.scale, self.zero_point,
                                                  app.quant_min, app.quant_max)

    def forward(self, X: Tensor) -> Tensor:
        if int(self.observer_enabled[0].item()) == 1:
            self.activation_post_process(X.detach())
            self._set_qparams(*self.calculate_qparams())
        if int(self.fake_quant_enabled[0].item()) == 1:
            X = self._fake_quantize(X)
        return X

    def extra_repr(self) -> str:
        app = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, quant_min={app.quant_min}, "
                f"quant_max={app.quant_max}, dtype={self.dtype}, qscheme={self.qscheme}, "
                f"ch_axis={self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        _load_resized(self, state_dict, prefix, ("scale", "zero_point"))
        return super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class FixedQParamsFakeQuantize(FakeQuantize):
    """Simulate quantize and dequantize in training time with fixed quantization parameters
    (those of its :class:`FixedQParamsObserver`)."""

    def __init__(self, observer):
        super().__init__(observer=observer)
        if type(self.activation_post_process) is not FixedQParamsObserver:
            raise AssertionError(f"{type(self).__name__}'s observer must be a "
                                 f"FixedQParamsObserver")
        self._observer_ctr = observer
        self.scale = self.activation_post_process.scale
        self.zero_point = self.activation_post_process.zero_point
        if not _is_per_tensor(self.qscheme):
            raise AssertionError(f"Only per tensor quantization is supported "
                                 f"FixedQParamsFakeQuantize module, got qscheme:{self.qscheme}")

    def calculate_qparams(self):
        return self.scale, self.zero_point

    def extra_repr(self) -> str:
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, qscheme={self.qscheme}")


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """Fused module that is used to observe the input tensor (compute min/max), compute
    scale/zero_point and fake_quantize the tensor (PyTorch's
    ``fused_moving_avg_obs_fake_quant``). The min/max are moving averages as in
    :class:`MovingAverageMinMaxObserver`; the scale and zero point are chosen as PyTorch's
    fused kernel chooses them (its C++ ``ChooseQuantizationParams``, symmetric ranges kept
    sparse), which can differ in the last bits from the observer's ``calculate_qparams``.

    ``x_out = (clamp(round(x/scale + zero_point), quant_min, quant_max)-zero_point)*scale``
    """

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min: int = 0,
                 quant_max: int = 255, **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Fused observer+fake_quant module only works with "
                                 "MovingAverageMinMaxObserver")
        self.register_buffer("fake_quant_enabled", tg.tensor([1], dtype=tg.int64))
        self.register_buffer("observer_enabled", tg.tensor([1], dtype=tg.int64))
        self.is_symmetric_quant = _is_symmetric(self.activation_post_process.qscheme)

    def extra_repr(self) -> str:
        app = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={app.quant_min}, quant_max={app.quant_max}, "
                f"qscheme={self.qscheme}, reduce_range={app.reduce_range}")

    def forward(self, X: Tensor) -> Tensor:
        app = self.activation_post_process
        if int(self.observer_enabled[0].item()) == 1:
            app(X.detach())
            mn = np.atleast_1d(_host(app.min_val)).astype(np.float32)
            mx = np.atleast_1d(_host(app.max_val)).astype(np.float32)
            pairs = [q._choose_qparams(a, b, app.quant_min, app.quant_max,
                                       self.is_symmetric_quant, float32_scale=True)
                     for a, b in zip(mn, mx)]
            dev = self.scale.device
            self.scale = tg.tensor([p[0] for p in pairs], dtype=tg.float32, device=dev)
            self.zero_point = tg.tensor([p[1] for p in pairs], dtype=tg.int32, device=dev)
        if int(self.fake_quant_enabled[0].item()) == 1:
            return self._fake_quantize(X)
        return X


def _is_fake_quant(mod) -> bool:
    return isinstance(mod, FakeQuantizeBase)


def disable_fake_quant(mod: nn.Module) -> None:
    """Disable fake quantization for the module (``model.apply(disable_fake_quant)``)."""
    if _is_fake_quant(mod):
        mod.disable_fake_quant()


def enable_fake_quant(mod: nn.Module) -> None:
    """Enable fake quantization for the module (``model.apply(enable_fake_quant)``)."""
    if _is_fake_quant(mod):
        mod.enable_fake_quant()


def disable_observer(mod: nn.Module) -> None:
    """Disable observation for this module (``model.apply(disable_observer)``)."""
    if _is_fake_quant(mod):
        mod.disable_observer()


def enable_observer(mod: nn.Module) -> None:
    """Enable observation for this module (``model.apply(enable_observer)``)."""
    if _is_fake_quant(mod):
        mod.enable_observer()


default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=q.quint8,
    qscheme=q.per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=q.qint8,
    qscheme=q.per_tensor_symmetric, reduce_range=False)
default_dynamic_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, is_dynamic=True,
    dtype=q.quint8, averaging_constant=1)
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_neg1to1_observer)
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_0to1_observer)
default_symmetric_fixed_qparams_fake_quant = default_fixed_qparams_range_neg1to1_fake_quant
default_affine_fixed_qparams_fake_quant = default_fixed_qparams_range_0to1_fake_quant
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=q.qint8, qscheme=q.per_channel_symmetric, reduce_range=False, ch_axis=0)
default_embedding_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver,
    qscheme=q.per_channel_affine_float_qparams, dtype=q.quint8, quant_min=0, quant_max=255,
    ch_axis=0, averaging_constant=1)
default_embedding_fake_quant_4bit = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver,
    qscheme=q.per_channel_affine_float_qparams, ch_axis=0, dtype=q.quint4x2,
    averaging_constant=1)
default_histogram_fake_quant = FakeQuantize.with_args(
    observer=HistogramObserver, quant_min=0, quant_max=255, dtype=q.quint8,
    qscheme=q.per_tensor_affine, reduce_range=True)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=q.quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=q.qint8,
    qscheme=q.per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=q.qint8, qscheme=q.per_channel_symmetric)
fused_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-127, quant_max=127, dtype=q.qint8,
    qscheme=q.per_tensor_symmetric, eps=2 ** -12)
fused_per_channel_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-127, quant_max=127,
    dtype=q.qint8, qscheme=q.per_channel_symmetric, eps=2 ** -12)
