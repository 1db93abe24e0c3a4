"""MaskedTensor's elementwise binary ops: both operands' masks must be equal (a plain Tensor
or a number operand is taken as it is); the result has the MaskedTensor operand's mask,
broadcast to the result's shape."""

from __future__ import annotations

import tritongrad as tg
from tritongrad.autograd.tensor import Tensor

from .core import MaskedTensor, elementwise_handlers, is_masked_tensor

# PyTorch's list, and pow (PyTorch has pow among the unary ops: a number exponent)
BINARY_NAMES = (
    "add", "atan2", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "div", "divide", "floor_divide", "fmod",
    "logaddexp", "logaddexp2", "mul", "multiply", "nextafter", "remainder", "sub", "subtract",
    "true_divide", "eq", "ne", "le", "ge", "greater", "greater_equal", "gt", "less_equal",
    "lt", "less", "maximum", "minimum", "fmax", "fmin", "not_equal", "pow")
# ops with no in-place form
_NO_INPLACE = ("logaddexp", "logaddexp2", "fmin", "minimum", "maximum", "fmax")
_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
              "lshift", "rshift")
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


def _masks_match(a, b) -> bool:
    if not (is_masked_tensor(a) and is_masked_tensor(b)):
        return True
    ma, mb = a.get_mask(), b.get_mask()
    if tuple(ma.shape) != tuple(mb.shape):
        return False
    with tg.DisableTorchFunctionSubclass():
        return bool(tg.equal(ma, mb.to(ma.device)))


def _apply(func, args: tuple, kwargs: dict, inplace: bool):
    if kwargs:
        raise ValueError("len(kwargs) must equal 0")
    if any(isinstance(a, Tensor) for a in args[2:]):
        raise TypeError("MaskedTensor binary ops do not support Tensor arguments aside from "
                        "the lhs and rhs")
    if not _masks_match(*args[:2]):
        raise ValueError("Input masks must match. If you need support for this, please open "
                         "an issue on Github.")
    if inplace and not is_masked_tensor(args[0]):
        raise TypeError(f"{func.__name__}: an in-place op on a Tensor cannot take a "
                        "MaskedTensor operand (its mask would be lost)")
    with tg.DisableTorchFunctionSubclass():
        result = func(*args)
        if inplace:
            return args[0]
        mask = next(a for a in args[:2] if is_masked_tensor(a)).get_mask()
        if tuple(mask.shape) != tuple(result.shape):
            mask = mask.expand(tuple(result.shape))
    return MaskedTensor._wrap(result, mask)


def handlers():
    pairs, out_of_place, in_place = elementwise_handlers(BINARY_NAMES, _NO_INPLACE, _apply)
    yield from pairs
    for op in _OPERATORS:
        yield f"Tensor.__{op}__", out_of_place
        yield f"Tensor.__r{op}__", out_of_place
        yield f"Tensor.__i{op}__", in_place
    for op in _COMPARISONS:
        yield f"Tensor.__{op}__", out_of_place
