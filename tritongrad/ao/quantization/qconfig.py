"""QConfig: which observers (or fake quantize modules) a module's activations and weights get
(PyTorch's ``torch.ao.quantization.qconfig``)."""

from __future__ import annotations

import warnings
from collections import namedtuple

from tritongrad import nn

from .. import _qtensor as q
from .fake_quantize import (FakeQuantize, FusedMovingAvgObsFakeQuantize,
                            default_dynamic_fake_quant, default_embedding_fake_quant,
                            default_embedding_fake_quant_4bit, default_fake_quant,
                            default_fused_act_fake_quant, default_fused_per_channel_wt_fake_quant,
                            default_fused_wt_fake_quant, default_per_channel_weight_fake_quant,
                            default_weight_fake_quant)
from .observer import (HistogramObserver, MovingAverageMinMaxObserver, NoopObserver,
                       PlaceholderObserver, default_debug_observer,
                       default_dynamic_quant_observer, default_float_qparams_observer,
                       default_float_qparams_observer_4bit, default_observer,
                       default_per_channel_weight_observer, default_placeholder_observer,
                       default_weight_observer)

__all__ = ["QConfig", "QConfigDynamic", "default_qconfig", "default_debug_qconfig",
           "default_per_channel_qconfig", "default_dynamic_qconfig", "float16_dynamic_qconfig",
           "float16_static_qconfig", "per_channel_dynamic_qconfig",
           "float_qparams_weight_only_qconfig", "float_qparams_weight_only_qconfig_4bit",
           "default_qat_qconfig", "default_dynamic_qat_qconfig", "default_weight_only_qconfig",
           "default_activation_only_qconfig", "default_qat_qconfig_v2",
           "default_embedding_qat_qconfig", "default_embedding_qat_qconfig_4bit",
           "get_default_qconfig", "get_default_qat_qconfig", "qconfig_equals"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """Describes how to quantize a layer or a part of the network by providing settings
    (observer classes) for activations and weights respectively. Note that QConfig needs to
    contain observer **classes** (like MinMaxObserver) or a callable that returns instances
    on invocation, not the concrete observer instances themselves: the quantization
    preparation function will instantiate observers multiple times for each of the layers.

    Example:
        >>> my_qconfig = QConfig(activation=MinMaxObserver.with_args(dtype=tg.qint8),
        ...                      weight=default_observer.with_args(dtype=tg.qint8))
    """

    __slots__ = ()

    def __new__(cls, activation, weight):
        if isinstance(activation, nn.Module) or isinstance(weight, nn.Module):
            raise ValueError("QConfig received observer instance, please pass observer class "
                             "instead. Use MyObserver.with_args(x=1) to override arguments to "
                             "constructor if needed")
        return super().__new__(cls, activation, weight)


class QConfigDynamic(namedtuple("QConfigDynamic", ["activation", "weight"])):
    """Describes how to dynamically quantize a layer (deprecated: use :class:`QConfig`)."""

    __slots__ = ()

    def __new__(cls, activation=nn.Identity, weight=nn.Identity):
        warnings.warn("`QConfigDynamic` is going to be deprecated in PyTorch 1.12, please use "
                      "`QConfig` instead", FutureWarning, stacklevel=2)
        if isinstance(weight, nn.Module):
            raise ValueError("QConfigDynamic received observer instance, please pass observer "
                             "class instead. Use MyObserver.with_args(x=1) to override "
                             "arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_debug_qconfig = QConfig(weight=default_weight_observer,
                                activation=default_debug_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
float16_dynamic_qconfig = QConfig(
    activation=PlaceholderObserver.with_args(dtype=q._dt.float16, is_dynamic=True),
    weight=PlaceholderObserver.with_args(dtype=q._dt.float16))
float16_static_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=q._dt.float16),
                                 weight=PlaceholderObserver.with_args(dtype=q._dt.float16))
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                            weight=default_float_qparams_observer)
float_qparams_weight_only_qconfig_4bit = QConfig(activation=default_placeholder_observer,
                                                 weight=default_float_qparams_observer_4bit)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)
default_dynamic_qat_qconfig = QConfig(activation=default_dynamic_fake_quant,
                                      weight=default_weight_fake_quant)
default_weight_only_qconfig = QConfig(activation=nn.Identity, weight=default_weight_fake_quant)
default_activation_only_qconfig = QConfig(activation=default_fake_quant, weight=nn.Identity)
default_qat_qconfig_v2 = QConfig(activation=default_fused_act_fake_quant,
                                 weight=default_fused_wt_fake_quant)
default_embedding_qat_qconfig = QConfig(activation=NoopObserver.with_args(dtype=q._dt.float32),
                                        weight=default_embedding_fake_quant)
default_embedding_qat_qconfig_4bit = QConfig(
    activation=NoopObserver.with_args(dtype=q._dt.float32),
    weight=default_embedding_fake_quant_4bit)

_BACKENDS = ["fbgemm", "x86", "qnnpack", "onednn"]


def _check_backend(backend: str) -> None:
    if backend not in _BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of "
                             f"{_BACKENDS}")


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    """Returns the default PTQ qconfig for the specified backend.

    Args:
        backend (str): a string representing the target backend. Currently supports ``x86``
            (default), ``fbgemm``, ``qnnpack`` and ``onednn``.

    Return:
        qconfig
    """
    _check_backend(backend)
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not "
                             f"supported. Version number must be 0")
    if backend in ("fbgemm", "x86"):
        return QConfig(activation=HistogramObserver.with_args(reduce_range=True),
                       weight=default_per_channel_weight_observer)
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                       weight=default_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend: str = "x86", version: int = 1) -> QConfig:
    """Returns the default QAT qconfig for the specified backend.

    Args:
        backend (str): a string representing the target backend. Currently supports ``x86``
            (default), ``fbgemm``, ``qnnpack`` and ``onednn``.
        version: version, for backwards compatibility. Can be ``None`` or ``1`` (the fused
            observer + fake quantize modules) or ``0``.

    Return:
        qconfig
    """
    _check_backend(backend)
    reduce = backend in ("fbgemm", "x86")
    if version == 0:
        act = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0,
                                     quant_max=255, reduce_range=reduce)
        weight = (default_weight_fake_quant if backend == "qnnpack"
                  else default_per_channel_weight_fake_quant)
    elif version in (1, None):
        act = FusedMovingAvgObsFakeQuantize.with_args(observer=MovingAverageMinMaxObserver,
                                                      quant_min=0, quant_max=255,
                                                      reduce_range=reduce)
        weight = (default_fused_wt_fake_quant if backend == "qnnpack"
                  else default_fused_per_channel_wt_fake_quant)
    else:
        raise AssertionError(f"Version number: {version} in get_default_qat_qconfig is not "
                             f"supported. Version number must be 0 or 1")
    return QConfig(activation=act, weight=weight)


def _partial_wrapper_equals(a, b) -> bool:
    if hasattr(a, "p") and hasattr(b, "p"):
        pa, pb = a.p, b.p
        return (pa.func == pb.func and pa.args == pb.args and pa.keywords == pb.keywords
                and a.callable_args == b.callable_args)
    return a == b


def qconfig_equals(q1: QConfig | None, q2: QConfig | None) -> bool:
    """Returns ``True`` if ``q1`` equals ``q2``, and ``False`` otherwise."""
    if q1 is None or q2 is None:
        return q1 == q2
    return (_partial_wrapper_equals(q1.activation, q2.activation)
            and _partial_wrapper_equals(q1.weight, q2.weight))
