"""``nn.functional``'s in-place activations (``relu_``, ``leaky_relu_``, ``elu_``,
``hardtanh_``, ``selu_``, ``celu_``) and the randomized leaky ReLU (``rrelu``, ``rrelu_``).

Each in-place form is its out-of-place function with ``inplace=True``: the result is written
into ``input``, which is returned, recorded as PyTorch records it (the op's own node:
``LeakyReluBackward1``, ``EluBackward1``, ``CeluBackward1``, ``HardtanhBackward0``,
``RreluWithNoiseBackward1``; rrelu in training as a copy of its out-of-place result).
"""

from __future__ import annotations

from ..autograd import checks
from ..autograd.ops import activations as _act
from ..kernels.numpy import random as cpu_random
from ..autograd.ops.creation import host_to, rand
from ..autograd.ops.random import numpy_rng
from ..autograd.tensor import Tensor
from . import functional as F

__all__ = ["celu_", "elu_", "hardtanh_", "leaky_relu_", "relu_", "rrelu", "rrelu_", "selu_"]


def relu_(input: Tensor) -> Tensor:
    """In-place version of ``relu``."""
    return F.relu(input, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place version of ``leaky_relu``."""
    return F.leaky_relu(input, negative_slope, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place version of ``elu``."""
    return F.elu(input, alpha, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place version of ``hardtanh``."""
    return F.hardtanh(input, min_val, max_val, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """In-place version of ``selu``."""
    return F.selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place version of ``celu``."""
    return F.celu(input, alpha, inplace=True)


def random_slopes(input: Tensor, lower: float, upper: float, training: bool,
                  generator=None) -> Tensor:
    """RReLU(x): x for x > 0; otherwise a * x, ``a`` drawn uniformly from [lower, upper] per
    element when ``training`` (the gradient there is ``a``), ``(lower + upper) / 2`` in
    evaluation."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return _act.leaky_relu(input, (lower + upper) / 2, node=_act.RreluWithNoiseBackward0)
    _check_training_dtype(input)
    if input.device.type == "cpu":  # PyTorch's draws: one per non-positive element
        rng = numpy_rng(generator, input.device, "rrelu_with_noise")
        nonpositive = input.detach().numpy() <= 0
        slope = host_to(cpu_random.rrelu_slopes(nonpositive, float(lower), float(upper),
                                                input.dtype, rng), input.dtype, input.device)
    else:
        u = rand(tuple(input.shape), dtype=input.dtype, device=input.device, generator=generator)
        slope = (u * (upper - lower) + lower).where(input <= 0, 1.0)
    return input * slope  # (the slopes a constant of the input: the gradient there)


def _check_training_dtype(input: Tensor) -> None:
    """PyTorch's rrelu_with_noise kernels: floating point only, and not float16 on the CPU."""
    dt = input.dtype
    if not dt.is_floating_point or (dt.name == "float16" and input.device.type == "cpu"):
        raise checks.kernel_not_implemented(f"rrelu_with_noise_out_{input.device.type}", dt)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU (Xu et al., 2015): ``x`` for x > 0, else ``a * x`` with ``a``
    drawn from U(lower, upper) for each element when ``training``, and
    ``a = (lower + upper) / 2`` otherwise.

    Example:
        >>> F.rrelu(tg.tensor([-2.0, 3.0]), 0.1, 0.3)  # evaluation: slope 0.2
        tensor([-0.4000,  3.0000])
    """
    checks.tensor_arg(input, "rrelu")
    if inplace:
        return rrelu_(input, lower, upper, training)
    return random_slopes(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """In-place version of ``rrelu`` (in evaluation one ``RreluWithNoiseBackward1`` node, as
    PyTorch's)."""
    if not training:
        checks.tensor_arg(input, "rrelu_")
        if lower > upper:
            raise RuntimeError("Lower bound should be less than or equal to the upper bound")
        return _act.leaky_relu(input, (lower + upper) / 2, True, _act.RreluWithNoiseBackward1)
    return F._inplace(input, random_slopes, lower, upper, training)
