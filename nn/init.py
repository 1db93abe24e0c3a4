"""Parameter initialisation, as ``torch.nn.init``: in place, under no_grad, returning the tensor.

Random values come from tritongrad's generator (``tg.manual_seed`` makes them reproducible),
drawn in float64 on the host and cast once into the tensor's dtype and device. tritongrad has
one global generator and no Generator objects, so ``generator=`` must be None.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.checks import check_generator
from ..autograd.grad_mode import no_grad
from ..autograd.ops import creation
from ..autograd.tensor import Tensor

__all__ = ["calculate_gain", "constant_", "eye_", "kaiming_normal_", "kaiming_uniform_",
           "normal_", "ones_", "trunc_normal_", "uniform_", "xavier_normal_", "xavier_uniform_",
           "zeros_"]


def _fill_from(tensor: Tensor, values) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"expected a Tensor, got {type(tensor).__name__}")
    with no_grad():
        tensor.copy_(values)
    return tensor


def _f64(fn, shape) -> Tensor:
    return fn(tuple(shape), dtype=creation.as_dtype("float64"))


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fills ``tensor`` with values drawn from U(a, b)."""
    check_generator("nn.init.uniform_", generator)
    return _fill_from(tensor, _f64(creation.rand, tensor.shape) * (b - a) + a)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fills ``tensor`` with values drawn from N(mean, std^2)."""
    check_generator("nn.init.normal_", generator)
    return _fill_from(tensor, _f64(creation.randn, tensor.shape) * std + mean)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fills ``tensor`` with N(mean, std^2) values redrawn until they lie in [a, b]."""
    check_generator("nn.init.trunc_normal_", generator)
    out = _f64(creation.randn, tensor.shape).numpy() * std + mean
    bad = (out < a) | (out > b)
    for _ in range(1000):
        if not bad.any():
            break
        out[bad] = _f64(creation.randn, (int(bad.sum()),)).numpy() * std + mean
        bad = (out < a) | (out > b)
    return _fill_from(tensor, creation.tensor(np.clip(out, a, b), dtype=tensor.dtype))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills ``tensor`` with ``val``."""
    return _fill_from(tensor, val)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fills the 2-D ``tensor`` with the identity matrix."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill_from(tensor, creation.eye(*tensor.shape, dtype=tensor.dtype))


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for ``nonlinearity``: 1 for linear/conv/sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (slope ``param``, default 0.01),
    3/4 for selu."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    check_generator("nn.init.xavier_uniform_", generator)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    check_generator("nn.init.xavier_normal_", generator)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015); ``a`` is the
    leaky_relu slope. ``Linear`` uses a = sqrt(5), giving bound = 1 / sqrt(fan_in)."""
    check_generator("nn.init.kaiming_uniform_", generator)
    if 0 in tuple(tensor.shape):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan)."""
    check_generator("nn.init.kaiming_normal_", generator)
    if 0 in tuple(tensor.shape):
        return tensor
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode)))


def fan_in_uniform_(bias: Tensor | None, fan_in: int) -> Tensor | None:
    """Fills ``bias`` (if any) from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), the default bias
    initialisation of PyTorch's Linear and convolution layers."""
    if bias is None:
        return None
    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
    return uniform_(bias, -bound, bound)
