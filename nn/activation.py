"""Activation modules: thin wrappers over ``nn.functional``."""

from __future__ import annotations

import warnings

from ..autograd.grad_mode import no_grad
from ..autograd.ops.creation import full
from ..autograd.tensor import Tensor
from . import functional as F
from .module import Module
from .parameter import Parameter

__all__ = ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
           "LeakyReLU", "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "RReLU", "ReLU", "ReLU6",
           "SELU", "SiLU", "Sigmoid", "Softmax", "Softmax2d", "Softmin", "Softplus",
           "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Threshold"]


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


class Softmax2d(Module):
    """Softmax over the channels at each spatial location: of a (N, C, H, W) or (C, H, W)
    input, along dimension -3."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             f"instead")
        return F.softmax(input, -3)


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

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None):
        super().__init__(inplace)
        if min_value is not None:  # PyTorch's deprecated spellings
            warnings.warn("keyword argument `min_value` is deprecated and rename to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and rename to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        if not max_val > min_val:  # (PyTorch's assert: the module also refuses equal bounds)
            raise AssertionError(f"{type(self).__name__}: max_val ({max_val}) must be greater "
                                 f"than min_val ({min_val})")
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

    def __init__(self, inplace: bool = False):
        super().__init__(inplace)
        # PyTorch's ReLU6 is a Hardtanh(0, 6): its bounds are instance attributes
        self.min_val, self.max_val = 0.0, 6.0


class Mish(_Inplace):
    """Mish(x) = x * tanh(softplus(x))."""

    functional = staticmethod(F.mish)


class RReLU(_Inplace):
    """Randomized leaky ReLU (Xu et al., 2015): ``x`` for x > 0, else ``a * x``, the slope
    ``a`` drawn from U(lower, upper) for each element in training mode and
    ``(lower + upper) / 2`` in evaluation mode.

    Example:
        >>> tg.nn.RReLU(0.1, 0.3).eval()(tg.tensor([-1.0, 2.0]))
        tensor([-0.2000,  2.0000])
    """

    _params = ("lower", "upper")

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__(inplace)
        self.lower, self.upper = lower, upper

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)


class Softplus(Module):
    """Softplus(x) = 1/beta * log(1 + exp(beta * x)); linear (x) where beta * x > threshold."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class SELU(_Inplace):
    """SELU(x) = scale * (max(0, x) + min(0, alpha * (exp(x) - 1))), PyTorch's constants."""

    functional = staticmethod(F.selu)


class CELU(_Inplace):
    """CELU(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    functional = staticmethod(F.celu)
    _params = ("alpha",)

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        self.alpha = alpha


class Hardswish(_Inplace):
    """Hardswish(x) = x * relu6(x + 3) / 6."""

    functional = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""  # (PyTorch shows no inplace flag for this one)


class Hardsigmoid(_Inplace):
    """Hardsigmoid(x) = relu6(x + 3) / 6."""

    functional = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""  # (PyTorch shows no inplace flag for this one)


class _Stateless(Module):
    """An activation with no parameters and no ``inplace`` flag: ``functional(input,
    *params)``, ``params`` the attributes named in ``_params`` (shown by ``extra_repr``)."""

    functional = None
    _params: tuple = ()

    def forward(self, input: Tensor) -> Tensor:
        return type(self).functional(input, *(getattr(self, name) for name in self._params))

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={getattr(self, name)}" for name in self._params)


class Softsign(_Stateless):
    """Softsign(x) = x / (1 + |x|)."""

    functional = staticmethod(F.softsign)


class LogSigmoid(_Stateless):
    """log(sigmoid(x))."""

    functional = staticmethod(F.logsigmoid)


class Tanhshrink(_Stateless):
    """Tanhshrink(x) = x - tanh(x)."""

    functional = staticmethod(F.tanhshrink)


class Softshrink(_Stateless):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0."""

    functional = staticmethod(F.softshrink)
    _params = ("lambd",)

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd


    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """x where |x| > lambd, else 0."""

    functional = staticmethod(F.hardshrink)


class GLU(_Stateless):
    """The gated linear unit ``a * sigmoid(b)`` of the two halves of the input along ``dim``."""

    functional = staticmethod(F.glu)
    _params = ("dim",)

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim


class Softmin(Softmax):
    """softmax(-x) along ``dim``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)


class PReLU(Module):
    """PReLU(x) = x where x > 0, else a * x, with a learned ``a``: one value, or one per
    channel (``num_parameters`` = the input's dimension 1), initialised to ``init``.

    Example:
        >>> tg.nn.PReLU()(tg.tensor([-2.0, 3.0]))
        tensor([-0.5000,  3.0000], grad_fn=<WhereBackward0>)
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        # (float: an int init would make an integer weight, which cannot require grad)
        self.weight = Parameter(full((num_parameters,), float(init), device=device,
                                     dtype=dtype))

    def reset_parameters(self) -> None:
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
