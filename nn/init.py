"""Parameter initialisation, as ``torch.nn.init``: in place, under no_grad, returning the tensor.

Random values come from tritongrad's global generator (``tg.manual_seed`` makes them
reproducible) or from ``generator=``, a CPU ``tg.Generator``. Every tensor is filled by its own
``uniform_``/``normal_``, in its dtype, as PyTorch's init functions fill it: on the CPU, for a
seed, the same numbers as PyTorch (Note [PyTorch's CPU streams] in kernels/numpy/random.py), so
``nn.Linear``, ``nn.Conv2d``, ... start from PyTorch's weights; and the same errors (integer
and bool tensors cannot be drawn into).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd.grad_mode import no_grad
from ..autograd.ops import creation
from ..autograd.ops.elementwise import where
from ..autograd.ops.random import randperm
from ..autograd.tensor import Tensor
from ..runtime import dtype as dtypes

__all__ = ["calculate_gain", "constant", "constant_", "dirac", "dirac_", "eye", "eye_",
           "kaiming_normal",
           "kaiming_normal_", "kaiming_uniform", "kaiming_uniform_", "normal", "normal_", "ones_",
           "orthogonal", "orthogonal_", "sparse", "sparse_", "trunc_normal_", "uniform",
           "uniform_", "xavier_normal", "xavier_normal_", "xavier_uniform", "xavier_uniform_",
           "zeros_"]


def _check_tensor(tensor, name: str) -> None:
    # (PyTorch fails here with an AttributeError on the missing method; a TypeError naming the
    # function says what is wrong)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{name}(): expected a Tensor, got {type(tensor).__name__}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fills ``tensor`` with values drawn from U(a, b)."""
    _check_tensor(tensor, "uniform_")
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fills ``tensor`` with values drawn from N(mean, std^2)."""
    _check_tensor(tensor, "normal_")
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fills ``tensor`` with N(mean, std^2) values truncated to [a, b], drawn as PyTorch 2.13
    draws them (so a seed gives its numbers on the CPU): where [a, b] holds more than 0.3 of
    the mass, whole-tensor normal draws, each element kept from the first that lands in
    [a, b]; else rejection from U(a, b) against the normal density, whole-tensor rounds of
    candidates and acceptance uniforms until every element has accepted."""
    _check_tensor(tensor, "trunc_normal_")

    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    if tensor.is_meta:  # nothing to fill, nothing drawn (Note [The meta device])
        return tensor
    with no_grad():
        if norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std) > 0.3:
            # (the bounds in the tensor's dtype, so the test is on representable values)
            lo = creation.tensor(a, dtype=tensor.dtype).item()
            hi = creation.tensor(b, dtype=tensor.dtype).item()
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                mask = (result < lo) | (result > hi)
                if not mask.any():
                    break
                fresh = creation.empty_like(result).normal_(mean, std, generator=generator)
                result = where(mask, fresh, result)
            if tensor is not result:
                tensor.copy_(result)
            return tensor
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2
        candidates, accept = creation.empty_like(tensor), creation.empty_like(tensor)

        def rejected():  # log u > log pdf(candidate) - log pdf(mode), for fresh u
            candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
            return accept.uniform_(generator=generator).log_().gt(candidates)

        tensor.uniform_(a, b, generator=generator)
        candidates.copy_(tensor)
        pending = rejected()
        if pending.any():
            result = tensor
            while True:
                candidates.uniform_(a, b, generator=generator)
                result = where(pending, candidates, result)
                pending = where(pending, rejected(), pending)
                if not pending.any():
                    break
            tensor.copy_(result)
        return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills ``tensor`` with ``val``."""
    _check_tensor(tensor, "constant_")
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with zeros."""
    _check_tensor(tensor, "zeros_")
    with no_grad():
        return tensor.zero_()


def ones_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with ones."""
    _check_tensor(tensor, "ones_")
    with no_grad():
        return tensor.fill_(1.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fills the 2-D ``tensor`` with the identity matrix."""
    _check_tensor(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.copy_(creation.eye(*tensor.shape, dtype=tensor.dtype))
    return tensor


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for ``nonlinearity``: 1 for linear/conv/sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (slope ``param``, default 0.01),
    3/4 for selu. (The linear ones return the int 1, as PyTorch's.)"""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1
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


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    """fan_in or fan_out, by ``mode`` (in any case)."""
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    # (PyTorch's rounding: the bound from the standard deviation, for its numbers bit for bit)
    a = math.sqrt(3.0) * (gain * math.sqrt(2.0 / float(fan_in + fan_out)))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _no_elements(tensor: Tensor, name: str) -> bool:
    _check_tensor(tensor, name)
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    fan = _calculate_correct_fan(tensor, mode)  # (before the gain's errors, as PyTorch's)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015); ``a`` is the
    leaky_relu slope. ``Linear`` uses a = sqrt(5), giving bound = 1 / sqrt(fan_in)."""
    if _no_elements(tensor, "kaiming_uniform_"):
        return tensor
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan)."""
    if _no_elements(tensor, "kaiming_normal_"):
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def fan_in_uniform_(bias: Tensor | None, fan_in: int) -> Tensor | None:
    """Fills ``bias`` (if any) from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), the default bias
    initialisation of PyTorch's Linear and convolution layers."""
    if bias is None:
        return None
    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
    return uniform_(bias, -bound, bound)


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fills the 3-, 4- or 5-dimensional ``tensor`` with the Dirac delta function, which
    preserves the identity of the inputs in convolutional layers: as many input channels as
    possible are preserved (in each of ``groups`` groups, for grouped convolutions)."""
    _check_tensor(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    values = np.zeros(sizes)
    centre = tuple(n // 2 for n in sizes[2:])
    for g in range(groups):
        for d in range(min(per_group, sizes[1])):
            values[(g * per_group + d, d) + centre] = 1
    with no_grad():
        tensor.copy_(creation.tensor(values, dtype=tensor.dtype))
    return tensor


# the dtypes without a QR factorization, by ATen's names
_NO_QR = {dtypes.float16: "Half", dtypes.bfloat16: "BFloat16"}


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """Fills ``tensor`` with a (semi) orthogonal matrix, as described in Saxe et al. (2013):
    the Q of the QR decomposition of a standard normal matrix, its columns' signs made those
    of R's diagonal (so Q is uniformly distributed), times ``gain``. A tensor of more than two
    dimensions is seen as a matrix of its first dimension by the rest."""
    _check_tensor(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0 or tensor.is_meta:  # (meta: nothing to fill, nothing drawn)
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    # (PyTorch's draws: normals in the tensor's dtype, factored in that dtype)
    with no_grad():
        draws = creation.empty((rows, cols), dtype=tensor.dtype,
                               device=tensor.device).normal_(0, 1, generator=generator)
    if tensor.dtype in _NO_QR:  # (no LAPACK factorization in half precision, as PyTorch's)
        raise NotImplementedError(f'"geqrf_{tensor.device.type}" not implemented for '
                                  f"'{_NO_QR[tensor.dtype]}'")
    flat = draws.cpu().numpy()
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    values = creation.tensor(np.ascontiguousarray(q).reshape(tuple(tensor.shape)),
                             dtype=tensor.dtype)
    with no_grad():
        return tensor.copy_(values).mul_(gain)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fills the 2-D ``tensor`` as a sparse matrix (Martens, 2010): N(0, std^2) values with a
    fraction ``sparsity`` of each column's elements set to zero."""
    _check_tensor(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    if tensor.is_meta:  # nothing to fill, nothing drawn (PyTorch's draws nothing either)
        return tensor
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        normal_(tensor, 0, std, generator=generator)
        for col in range(cols):
            # (from the global generator whatever ``generator`` is, as PyTorch's)
            tensor[randperm(rows)[:num_zeros], col] = 0
    return tensor


def _make_deprecate(method):
    """PyTorch's old names (``nn.init.normal`` ...): they warn and call the in-place form."""
    new_name = method.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return method(*args, **kwargs)

    deprecated_init.__doc__ = (f"{old_name}(...)\n\n.. warning::\n    This method is now "
                               f"deprecated in favor of :func:`nn.init.{new_name}`.\n\n"
                               f"See :func:`~nn.init.{new_name}` for details.")
    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    return deprecated_init


(uniform, normal, constant, eye, dirac, xavier_uniform, xavier_normal, kaiming_uniform,
 kaiming_normal, orthogonal, sparse) = map(_make_deprecate, (
    uniform_, normal_, constant_, eye_, dirac_, xavier_uniform_, xavier_normal_,
    kaiming_uniform_, kaiming_normal_, orthogonal_, sparse_))

# PyTorch's private helpers, which some model code imports (``from torch.nn.init import
# _no_grad_trunc_normal_``): the public functions take the same arguments
_no_grad_uniform_, _no_grad_normal_, _no_grad_trunc_normal_ = uniform_, normal_, trunc_normal_
_no_grad_fill_, _no_grad_zero_ = constant_, zeros_
