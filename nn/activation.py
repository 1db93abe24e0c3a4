"""Activation modules: thin wrappers over ``nn.functional``."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["ELU", "GELU", "Hardtanh", "LeakyReLU", "LogSoftmax", "Mish", "ReLU", "ReLU6", "SiLU",
           "Sigmoid", "Softmax", "Softplus", "Tanh", "Threshold"]


class _Inplace(Module):
    """An elementwise activation with an ``inplace`` flag: ``forward`` is
    ``functional(input, *params, inplace)``, ``params`` the attributes named in ``_params``
    (also what ``extra_repr`` shows, as PyTorch's modules do)."""

    functional = None
    _params: tuple = ()

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        args = tuple(getattr(self, name) for name in self._params)
        return type(self).functional(input, *args, inplace=self.inplace)

    def extra_repr(self) -> str:
        shown = [f"{name}={getattr(self, name)}" for name in self._params]
        return ", ".join(shown + ["inplace=True"] * bool(self.inplace))


class ReLU(_Inplace):
    """max(x, 0), elementwise."""

    functional = staticmethod(F.relu)


class GELU(Module):
    """x * Phi(x), or its tanh approximation (``approximate='tanh'``); fused."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"approximate argument must be either none or tanh. (got "
                             f"{approximate!r})")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class SiLU(_Inplace):
    """x * sigmoid(x)."""

    functional = staticmethod(F.silu)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


class LeakyReLU(_Inplace):
    """LeakyReLU(x) = max(0, x) + negative_slope * min(0, x).

    Example:
        >>> tg.nn.LeakyReLU(0.1)(tg.tensor([-1.0, 2.0]))
        tensor([-0.1000,  2.0000])
    """

    functional = staticmethod(F.leaky_relu)

    _params = ("negative_slope",)

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__(inplace)
        self.negative_slope = negative_slope


class ELU(_Inplace):
    """ELU(x) = x if x > 0 else alpha * (exp(x) - 1)."""

    functional = staticmethod(F.elu)

    _params = ("alpha",)

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        self.alpha = alpha


class Hardtanh(_Inplace):
    """HardTanh(x) = min(max(x, min_val), max_val)."""

    functional = staticmethod(F.hardtanh)

    _params = ("min_val", "max_val")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val, self.max_val = min_val, max_val


class Threshold(_Inplace):
    """y = x where x > threshold, else value (elementwise).

    Example:
        >>> tg.nn.Threshold(0.1, 20.0)(tg.tensor([0.0, 0.5]))
        tensor([20.0000, 0.5000])
    """

    functional = staticmethod(F.threshold)
    _params = ("threshold", "value")

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__(inplace)
        self.threshold, self.value = threshold, value


class ReLU6(_Inplace):
    """ReLU6(x) = min(max(0, x), 6)."""

    functional = staticmethod(F.relu6)


class Mish(_Inplace):
    """Mish(x) = x * tanh(softplus(x))."""

    functional = staticmethod(F.mish)


class Softplus(Module):
    """Softplus(x) = 1/beta * log(1 + exp(beta * x)); linear (x) where beta * x > threshold."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"
