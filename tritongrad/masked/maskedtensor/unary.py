"""MaskedTensor's elementwise unary ops: the op runs on the data, the result keeps the mask
(masked-out elements are computed too, and stay masked out)."""

from __future__ import annotations

import tritongrad as tg
from tritongrad.autograd.tensor import Tensor

from .core import MaskedTensor, elementwise_handlers

# PyTorch's list (those tritongrad has are bound by _table._build)
UNARY_NAMES = (
    "abs", "absolute", "acos", "arccos", "acosh", "arccosh", "angle", "asin", "arcsin",
    "asinh", "arcsinh", "atan", "arctan", "atanh", "arctanh", "bitwise_not", "ceil", "clamp",
    "clip", "conj_physical", "cos", "cosh", "deg2rad", "digamma", "erf", "erfc", "erfinv",
    "exp", "exp2", "expm1", "fix", "floor", "frac", "lgamma", "log", "log10", "log1p", "log2",
    "logit", "i0", "isnan", "nan_to_num", "neg", "negative", "positive", "rad2deg",
    "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sgn", "signbit", "sin", "sinc", "sinh",
    "sqrt", "square", "tan", "tanh", "trunc")
# ops with no in-place form
_NO_INPLACE = ("angle", "positive", "signbit", "isnan")
_OPERATORS = {"__neg__": "neg", "__abs__": "abs", "__invert__": "bitwise_not",
              "__pos__": "positive"}


def _has_tensor(values) -> bool:
    return any(isinstance(v, Tensor) for v in values)


def _apply(func, args: tuple, kwargs: dict, inplace: bool):
    self = args[0]
    if _has_tensor(args[1:]) or _has_tensor(kwargs.values()):
        raise TypeError("MaskedTensor unary ops do not support additional Tensor arguments")
    with tg.DisableTorchFunctionSubclass():
        result = func(*args, **kwargs)
    if inplace:
        return self
    return MaskedTensor._wrap(result, self.get_mask())


def handlers():
    pairs, out_of_place, _ = elementwise_handlers(UNARY_NAMES, _NO_INPLACE, _apply)
    yield from pairs
    for dunder in _OPERATORS:
        yield f"Tensor.{dunder}", out_of_place
