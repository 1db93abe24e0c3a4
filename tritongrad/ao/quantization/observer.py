"""Observers: modules that watch the tensors passing through them and compute quantization
parameters from what they saw (PyTorch's ``torch.ao.quantization.observer``).

The statistics and ``calculate_qparams`` are computed on the host in float32, step by step as
PyTorch's observers compute them with float32 tensors (Python numbers taking part as float32),
so the scales and zero points equal PyTorch's bit for bit on the same data.
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np

import tritongrad as tg
from tritongrad import nn
from tritongrad.autograd.tensor import Tensor

from .. import _qtensor as q

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
           "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver", "HistogramObserver", "PlaceholderObserver",
           "NoopObserver", "RecordingObserver", "FixedQParamsObserver", "default_observer",
           "default_weight_observer", "default_histogram_observer",
           "default_per_channel_weight_observer", "default_dynamic_quant_observer",
           "default_float_qparams_observer", "default_placeholder_observer",
           "default_debug_observer", "default_float_qparams_observer_4bit",
           "default_fixed_qparams_range_neg1to1_observer",
           "default_fixed_qparams_range_0to1_observer", "get_observer_state_dict",
           "load_observer_state_dict"]

_f32 = np.float32
_EPS = float(np.finfo(np.float32).eps)


class _PartialWrapper:
    """A constructor with some arguments bound (``Observer.with_args(...)``): calling it makes
    a new instance each time."""

    def __init__(self, p):
        self.p = p
        self.callable_args = {}

    def __call__(self, *args, **keywords):
        for name, fn in self.callable_args.items():
            keywords.setdefault(name, fn())
        return self.p(*args, **keywords)

    def __repr__(self) -> str:
        return repr(self.p) + repr(self.callable_args)

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs):
        result = _PartialWrapper(p=self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self, **kwargs):
    """Wrapper that allows creation of class factories: ``MinMaxObserver.with_args(
    dtype=tg.qint8)()`` makes a new observer with those arguments each call."""
    return _PartialWrapper(partial(cls_or_self, **kwargs))


def _with_callable_args(cls_or_self, **kwargs):
    """As :func:`_with_args`, with arguments computed by calling the given functions at each
    construction."""
    result = _PartialWrapper(partial(cls_or_self))
    return result.with_callable_args(**kwargs)


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def _buffer(a, device=None) -> Tensor:
    # (np.array, not ascontiguousarray: a 0-d statistic stays 0-d, as PyTorch's buffers)
    return tg.as_tensor(np.array(a, order="C"), device=device)


def _load_resized(module: nn.Module, state_dict: dict, prefix: str, names: tuple) -> None:
    """Buffers whose length depends on the data (per-channel statistics and parameters) take
    the saved tensor whatever its length, as PyTorch resizes them: a fresh module (empty or
    one-element buffers) loads a calibrated one's state."""
    for name in names:
        if prefix + name in state_dict:
            setattr(module, name, state_dict[prefix + name].detach().clone())


def _is_per_tensor(qscheme) -> bool:
    return qscheme in (q.per_tensor_affine, q.per_tensor_symmetric)


def _is_per_channel(qscheme) -> bool:
    return qscheme in (q.per_channel_affine, q.per_channel_symmetric,
                       q.per_channel_affine_float_qparams)


def _is_symmetric(qscheme) -> bool:
    return qscheme in (q.per_tensor_symmetric, q.per_channel_symmetric)


def validate_qmin_qmax(quant_min: int, quant_max: int) -> None:
    """The user's range must hold 0 and be non-empty (PyTorch's checks and messages)."""
    if not quant_min <= 0 <= quant_max:
        raise AssertionError("Used-specified quantization range must include 0.")
    if quant_min >= quant_max:
        raise AssertionError("qmin must be strictly less than qmax for user-specified "
                             "quantization range.")


def calculate_qmin_qmax(quant_min: int | None, quant_max: int | None,
                        has_customized_qrange: bool, dtype,
                        reduce_range: bool) -> tuple[int, int]:
    """The quantized range an observer uses: the user's (halved by ``reduce_range``) or the
    dtype's 8-bit default."""
    if has_customized_qrange:
        qrange_len = quant_max - quant_min + 1
        if dtype in (q.qint8, tg.int8) and not 0 < qrange_len <= 256:
            raise AssertionError("quantization range should be positive and not exceed the "
                                 "maximum bit range (=256).")
        if dtype in (q.qint32, tg.int32) and not 0 < qrange_len <= 2 ** 32:
            raise AssertionError("quantization range should be positive and not exceed the "
                                 "maximum bit range (=4294967296).")
        if reduce_range:
            quant_min, quant_max = quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype in (q.qint8, tg.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (q.quint8, tg.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (q.qint32, tg.int32):
        return -(2 ** 31), 2 ** 31 - 1
    if dtype is tg.uint16:
        return 0, 2 ** 16 - 1
    if dtype is tg.int16:
        return -(2 ** 15), 2 ** 15 - 1
    return 0, 15


class ObserverBase(nn.Module):
    """Base observer Module. Any observer implementation should derive from this class: in
    ``forward`` they update the statistics of the observed Tensor (and return it unchanged),
    and ``calculate_qparams`` computes the quantization parameters from them.

    Args:
        dtype: dtype argument to the ``quantize`` node needed to implement the reference model
            spec.
        is_dynamic: indicator for whether the observer is a placeholder for dynamic
            quantization or static quantization.
    """

    def __init__(self, dtype, is_dynamic: bool = False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    def forward(self, x):
        raise NotImplementedError

    def calculate_qparams(self, **kwargs):
        raise NotImplementedError

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


_ALLOWED_DTYPES = (q.qint8, q.quint8, q.quint4x2, q.qint32, tg.int8, tg.uint8, tg.int16,
                   tg.int32, tg.uint16)


class UniformQuantizationObserverBase(ObserverBase):
    """Common base for all observers using uniform quantization to calculate scale and
    zero_point.

    Args:
        dtype: ``qint8``, ``quint8`` (default), ``qint32``, ``quint4x2`` or a plain integer
            type.
        qscheme: Quantization scheme to be used.
        reduce_range: Reduces the range of the quantized data type by 1 bit.
        quant_min: Minimum quantization value. If unspecified, it will follow the 8-bit setup.
        quant_max: Maximum quantization value. If unspecified, it will follow the 8-bit setup.
        eps: Epsilon value for float32, Defaults to ``finfo(float32).eps``.
    """

    def __init__(self, dtype=q.quint8, qscheme=q.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for "
                          "observers. reduce_range will be deprecated in a future release of "
                          "PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self._device = (factory_kwargs or {}).get("device")
        self.register_buffer("eps", tg.tensor([eps], device=self._device))
        if not (_is_per_tensor(qscheme) or _is_per_channel(qscheme)):
            raise AssertionError("Default Observer only works for per_tensor_affine, "
                                 "per_tensor_symmetric, per_channel_affine, "
                                 "per_channel_symmetric and per_channel_float_qparams "
                                 "quantization scheme")
        if self.dtype not in _ALLOWED_DTYPES:
            raise AssertionError(f"Default Observer only works for {_ALLOWED_DTYPES} data type")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            validate_qmin_qmax(quant_min, quant_max)
        self.quant_min, self.quant_max = calculate_qmin_qmax(
            quant_min, quant_max, self.has_customized_qrange, self.dtype, self.reduce_range)

    def _calculate_qparams(self, min_val: Tensor, max_val: Tensor) -> tuple[Tensor, Tensor]:
        """Calculates the quantization parameters, given min and max value tensors. Works for
        both per tensor and per channel cases.

        Returns:
            scales: Scales tensor of shape (#channels,) (float32).
            zero_points: Zero points tensor of shape (#channels,) (int32 for the affine
            schemes, int64 for the symmetric ones, float32 for float qparams).
        """
        dev = min_val.device
        mn, mx = _host(min_val).astype(_f32), _host(max_val).astype(_f32)
        if not _check_min_max_valid(mn, mx):
            return tg.tensor([1.0], device=dev), tg.tensor([0], device=dev)
        qmin, qmax = self.quant_min, self.quant_max
        eps = _host(self.eps).astype(_f32).reshape(-1)[0]
        min_neg = np.minimum(mn, _f32(0))
        max_pos = np.maximum(mx, _f32(0))
        zp = np.zeros(mn.shape, np.int64)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if _is_symmetric(self.qscheme):
                max_pos = np.maximum(-min_neg, max_pos)
                scale = (max_pos / _f32(float(qmax - qmin) / 2)).astype(_f32)
                scale = np.maximum(scale, eps)
                if self.dtype in (q.quint8, tg.uint8):
                    zp = np.full(mn.shape, (qmin + qmax) // 2 if self.has_customized_qrange
                                 else 128, np.int64)
                elif self.dtype is tg.uint16:
                    zp = np.full(mn.shape, 2 ** 15, np.int64)
            elif self.qscheme is q.per_channel_affine_float_qparams:
                scale = ((mx - mn) / _f32(float(qmax - qmin))).astype(_f32)
                scale = np.where(scale > eps, scale, _f32(1)).astype(_f32)
                zp = (_f32(-1) * mn / scale).astype(_f32)
            else:
                scale = ((max_pos - min_neg) / _f32(float(qmax - qmin))).astype(_f32)
                scale = np.maximum(scale, eps)
                r = np.rint((min_neg / scale).astype(_f32)).astype(np.int32)
                zp = np.clip(np.int64(qmin) - r, qmin, qmax).astype(np.int32)
        scale, zp = np.atleast_1d(scale), np.atleast_1d(zp)
        return _buffer(scale.astype(_f32), dev), _buffer(zp, dev)

    def reset_min_max_vals(self):
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


def _is_unobserved(mn: np.ndarray, mx: np.ndarray) -> bool:
    """Whether the statistics are still the initial ones (empty per channel; +inf and -inf
    per tensor)."""
    return mn.size == 0 or mx.size == 0 or (mn.ndim == 0 and mn == np.inf and mx == -np.inf)


def _check_min_max_valid(mn: np.ndarray, mx: np.ndarray) -> bool:
    if _is_unobserved(mn, mx):
        warnings.warn("must run observer before calling calculate_qparams. Returning default "
                      "values.", stacklevel=3)
        return False
    if np.any(mn > mx):
        raise AssertionError(f"min {mn} should be less than max {mx}")
    return True


class _MinMaxObserverBase(UniformQuantizationObserverBase):
    """What :class:`MinMaxObserver` and :class:`PerChannelMinMaxObserver` share: the
    ``min_val`` / ``max_val`` buffers (0-d for per tensor, one entry a channel for per
    channel), how they are replaced, and the parameters computed from them. Private, so that
    neither observer is an instance of the other, as in PyTorch."""

    def __init__(self, initial_min: list | float, initial_max: list | float, dtype, qscheme,
                 reduce_range: bool, **kwargs) -> None:
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, **kwargs)
        self.register_buffer("min_val", tg.tensor(initial_min, device=self._device))
        self.register_buffer("max_val", tg.tensor(initial_max, device=self._device))
        if _is_symmetric(qscheme) and reduce_range and dtype is q.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def _update(self, mn, mx) -> None:
        dev = self.min_val.device
        self.min_val = _buffer(np.asarray(mn, _f32), dev)
        self.max_val = _buffer(np.asarray(mx, _f32), dev)

    def _batch_min_max(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The minimum and maximum of one batch (per tensor, or one per channel)."""
        raise NotImplementedError

    def _running_min_max(self, mn, mx, cur_min, cur_max) -> tuple[np.ndarray, np.ndarray]:
        """The new statistics from the old ones and the batch's: the running extremes."""
        return np.minimum(cur_min, mn), np.maximum(cur_max, mx)

    def forward(self, x_orig):
        """Records the running minimum and maximum of ``x`` (returned unchanged)."""
        if x_orig.numel() == 0:
            return x_orig
        cur_min, cur_max = self._batch_min_max(_host(x_orig).astype(_f32))
        mn, mx = _host(self.min_val), _host(self.max_val)
        if _is_unobserved(mn, mx):
            self._update(cur_min, cur_max)
        else:
            self._update(*self._running_min_max(mn, mx, cur_min, cur_max))
        return x_orig

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        """Calculates the quantization parameters."""
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class MinMaxObserver(_MinMaxObserverBase):
    """Observer module for computing the quantization parameters based on the running min and
    max values: ``scale = (max(x_max, 0) - min(x_min, 0)) / (Q_max - Q_min)`` and
    ``zero_point = Q_min - round(min(x_min, 0) / scale)`` (affine), or
    ``scale = max(-min(x_min, 0), max(x_max, 0)) / ((Q_max - Q_min) / 2)`` and a zero point of
    0 (128 for quint8) (symmetric); the scale is at least ``eps``.

    Args:
        dtype: dtype argument to the ``quantize`` node needed to implement the reference model
            spec.
        qscheme: Quantization scheme to be used (``per_tensor_affine`` or
            ``per_tensor_symmetric``).
        reduce_range: Reduces the range of the quantized data type by 1 bit.
        quant_min: Minimum quantization value. If unspecified, it will follow the 8-bit setup.
        quant_max: Maximum quantization value. If unspecified, it will follow the 8-bit setup.
        eps: Epsilon value for float32, Defaults to ``finfo(float32).eps``.

    Example:
        >>> obs = MinMaxObserver()
        >>> _ = obs(tg.tensor([-1.0, 0.0, 3.0]))
        >>> scale, zero_point = obs.calculate_qparams()
        >>> zero_point.tolist()
        [64]
    """

    def __init__(self, dtype=q.quint8, qscheme=q.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        if not _is_per_tensor(qscheme):
            raise NotImplementedError("MinMaxObserver's qscheme only support "
                                      "torch.per_tensor_symmetric and torch.per_tensor_affine.")
        super().__init__(float("inf"), float("-inf"), dtype=dtype, qscheme=qscheme,
                         reduce_range=reduce_range, quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)

    def _batch_min_max(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return x.min(), x.max()

    def reset_min_max_vals(self) -> None:
        """Resets the min/max values."""
        self._update(np.inf, -np.inf)


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Observer module for computing the quantization parameters based on the moving average
    of the min and max values: ``x_min = x_min + c * (min(X) - x_min)`` (the first batch's
    ``min(X)`` at first), likewise ``x_max``, ``c`` the ``averaging_constant``; the scale and
    zero point are then computed as in :class:`MinMaxObserver`.

    Args:
        averaging_constant: Averaging constant for min/max (default 0.01).
        (the others as :class:`MinMaxObserver`)
    """

    def __init__(self, averaging_constant=0.01, dtype=q.quint8, qscheme=q.per_tensor_affine,
                 reduce_range=False, quant_min=None, quant_max=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        if not _is_per_tensor(qscheme):
            raise NotImplementedError(f"MovingAverageMinMaxObserver's qscheme only support "
                                      f"torch.per_tensor_symmetric and torch.per_tensor_affine."
                                      f" but got: {qscheme}")
        self.averaging_constant = averaging_constant
        if is_dynamic and averaging_constant != 1:
            raise NotImplementedError("MovingAverageMinMaxObserver doesn't support dynamic "
                                      f"quantization for averaging constant of "
                                      f"{averaging_constant}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)

    def _running_min_max(self, mn, mx, cur_min, cur_max) -> tuple[np.ndarray, np.ndarray]:
        return _moving_average(self.averaging_constant, mn, mx, cur_min, cur_max)


def _moving_average(c: float, mn, mx, cur_min, cur_max) -> tuple[np.ndarray, np.ndarray]:
    """``x_min + c * (min(X) - x_min)`` and likewise for the maximum, in float32."""
    c = _f32(c)
    return mn + c * (cur_min - mn), mx + c * (cur_max - mx)


def _channels_first(x: np.ndarray, ch_axis: int) -> np.ndarray:
    """``x`` with ``ch_axis`` swapped to the front, flattened to (channels, rest)."""
    axes = list(range(x.ndim))
    axes[ch_axis], axes[0] = 0, ch_axis
    y = np.transpose(x, axes)
    return y.reshape(y.shape[0], -1)


class PerChannelMinMaxObserver(_MinMaxObserverBase):
    """Observer module for computing the quantization parameters based on the running per
    channel min and max values (along ``ch_axis``); the parameters are computed per channel
    the same way as in :class:`MinMaxObserver`.

    Args:
        ch_axis: Channel axis (default 0).
        dtype, qscheme (default ``per_channel_affine``), reduce_range, quant_min, quant_max,
        eps: as :class:`MinMaxObserver`.
    """

    def __init__(self, ch_axis=0, dtype=q.quint8, qscheme=q.per_channel_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=_EPS, is_dynamic=False, **kwargs):
        if not _is_per_channel(qscheme):
            raise NotImplementedError("PerChannelMinMaxObserver's qscheme only support "
                                      "torch.per_channel_symmetric, torch.per_channel_affine "
                                      "and torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError("PerChannelMinMaxObserver doesn't support dynamic "
                                      "quantization")
        super().__init__([], [], dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        self.ch_axis = ch_axis

    def _batch_min_max(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        y = _channels_first(x, self.ch_axis)
        return y.min(axis=1), y.max(axis=1)

    def reset_min_max_vals(self) -> None:
        """Resets the min/max values."""
        self._update(np.zeros(0, _f32), np.zeros(0, _f32))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        _load_resized(self, state_dict, prefix, ("min_val", "max_val"))
        return super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Observer module for computing the quantization parameters based on the running per
    channel min and max values, averaged as in :class:`MovingAverageMinMaxObserver`.

    Args:
        averaging_constant: Averaging constant for min/max (default 0.01).
        ch_axis, dtype, qscheme, reduce_range, quant_min, quant_max, eps: as
        :class:`PerChannelMinMaxObserver`.
    """

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=q.quint8,
                 qscheme=q.per_channel_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=_EPS, is_dynamic=False, **kwargs):
        if not _is_per_channel(qscheme):
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver's qscheme only "
                                      "support torch.per_channel_symmetric, "
                                      "torch.per_channel_affine and "
                                      "torch.per_channel_affine_float_qparams.")
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme,
                         reduce_range=reduce_range, quant_min=quant_min, quant_max=quant_max,
                         eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def _running_min_max(self, mn, mx, cur_min, cur_max) -> tuple[np.ndarray, np.ndarray]:
        return _moving_average(self.averaging_constant, mn, mx, cur_min, cur_max)


# (HistogramObserver lives in its own file, built on the classes above)
from ._histogram_observer import HistogramObserver  # noqa: E402


class FixedQParamsObserver(ObserverBase):
    """Observer that simulates quantize and dequantize with fixed quantization parameters in
    training time (its ``calculate_qparams`` returns them)."""

    def __init__(self, scale, zero_point, dtype=q.quint8, qscheme=q.per_tensor_affine,
                 quant_min=0, quant_max=255, is_dynamic=False, **kwargs):
        if is_dynamic:
            raise NotImplementedError("FixedQParamsObserver doesn't support dynamic "
                                      "quantization")
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        self.quant_min, self.quant_max = quant_min, quant_max
        self.register_buffer("scale", tg.tensor([scale], dtype=tg.float32))
        self.register_buffer("zero_point", tg.tensor([zero_point], dtype=tg.int32))
        self.dtype, self.qscheme = dtype, qscheme

    def forward(self, X):
        return X

    def calculate_qparams(self):
        return self.scale, self.zero_point


class PlaceholderObserver(ObserverBase):
    """Observer that doesn't do anything and just passes its configuration to the quantized
    module's ``.from_float()`` (quantization to float16, dynamic quantization).

    Args:
        dtype: dtype argument to the ``quantize`` node (default float32).
        custom_op_name: (temporary) specify this observer for an operator that doesn't
            require any observation.
        compute_dtype (deprecated): if set, marks dynamic quantization.
        quant_min, quant_max, qscheme, eps: kept for the quantized module.
        is_dynamic: if True, the module is quantized dynamically.
    """

    def __init__(self, dtype=tg.float32, custom_op_name="", compute_dtype=None,
                 quant_min=None, quant_max=None, qscheme=None, eps=None, is_dynamic=False):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = q.per_tensor_affine if qscheme is None else qscheme
        self.eps = _EPS if eps is None else eps
        self.quant_min, self.quant_max = quant_min, quant_max
        self.custom_op = custom_op_name
        if compute_dtype:
            self.is_dynamic = True
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`. `compute_dtype`"
                          " will be deprecated in a future release of PyTorch.", stacklevel=2)

    def forward(self, x):
        return x

    def extra_repr(self) -> str:
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception(  # noqa: TRY002 - PyTorch's exception type
            "calculate_qparams should not be called for PlaceholderObserver")


class RecordingObserver(ObserverBase):
    """The module is mainly for debug and records the tensor values during runtime."""

    def __init__(self, dtype=q.quint8):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.tensor_val = []

    def forward(self, x):
        self.tensor_val.append(x.clone())
        return x

    def calculate_qparams(self):
        raise Exception(  # noqa: TRY002 - PyTorch's exception type
            "calculate_qparams should not be called for RecordingObserver")

    def get_tensor_value(self):
        return self.tensor_val


class NoopObserver(ObserverBase):
    """Observer that doesn't do anything and just passes its configuration to the quantized
    module's ``.from_float()``. Primarily used for quantization to float16 which doesn't
    require determining ranges.

    Args:
        dtype: Quantized data type (default float16).
        custom_op_name: (temporary) specify this observer for an operator that doesn't
            require any observation.
    """

    def __init__(self, dtype=tg.float16, custom_op_name="") -> None:
        super().__init__(dtype=dtype, is_dynamic=False)
        self.custom_op = custom_op_name

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception(  # noqa: TRY002 - PyTorch's exception type
            "calculate_qparams should not be called for NoopObserver")


def _is_activation_post_process(module) -> bool:
    from .fake_quantize import FakeQuantizeBase
    return isinstance(module, (ObserverBase, FakeQuantizeBase))


def get_observer_state_dict(mod: nn.Module) -> dict:
    """Returns the state dict corresponding to the observer stats: the entries of
    ``mod.state_dict()`` whose keys contain ``activation_post_process``."""
    return {k: v for k, v in mod.state_dict().items() if "activation_post_process" in k}


def load_observer_state_dict(mod: nn.Module, obs_dict: dict) -> None:
    """Given input model and a state_dict containing model observer stats, load the stats
    back into the model. The observer state_dict can be saved using
    :func:`get_observer_state_dict`.

    Raises:
        Exception: ``Missing keys for observer {key} in state_dict`` for the first statistic
            of an observer or fake quantize module that ``obs_dict`` lacks.
    """
    for name, module in mod.named_modules():
        prefix = name + "." if name else ""
        if _is_activation_post_process(module):
            for k in list(module.state_dict()):
                key = prefix + k
                if key not in obs_dict:
                    raise Exception(  # noqa: TRY002 - PyTorch's exception type
                        f"Missing keys for observer {key} in state_dict")
                setattr(module, k, obs_dict[key].detach().clone())


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_debug_observer = RecordingObserver
default_weight_observer = MinMaxObserver.with_args(dtype=q.qint8,
                                                   qscheme=q.per_tensor_symmetric)
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=q.qint8, qscheme=q.per_tensor_symmetric, quant_min=-127, quant_max=127,
    eps=2 ** -12)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=q.qint8, qscheme=q.per_channel_symmetric)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    dtype=q.qint8, qscheme=q.per_channel_symmetric, quant_min=-127, quant_max=127,
    eps=2 ** -12)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=q.quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=q.quint8, qscheme=q.per_channel_affine_float_qparams, ch_axis=0)
default_float_qparams_observer_4bit = PerChannelMinMaxObserver.with_args(
    dtype=q.quint4x2, qscheme=q.per_channel_affine_float_qparams, ch_axis=0)
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=q.quint8, quant_min=0, quant_max=255)
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=q.quint8, quant_min=0, quant_max=255)
default_symmetric_fixed_qparams_observer = default_fixed_qparams_range_neg1to1_observer
default_affine_fixed_qparams_observer = default_fixed_qparams_range_0to1_observer
