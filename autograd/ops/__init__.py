"""Differentiable ops, one module per family, and their binding as Tensor methods.

Each family module keeps its primitives (forward and derivative rule side by side) and the
public functions over them. This file only attaches those functions to ``Tensor``, so that
``x.exp()``, ``x + y`` and ``tg.exp(x)`` are one code path.
"""

from __future__ import annotations

from ..tensor import Tensor
from . import conversion, creation, elementwise, linalg, reduction, views
from .conversion import clone, contiguous, copy_, cpu, cuda, to, type_as
from .creation import (arange, as_tensor, empty, empty_like, empty_strided, eye, from_numpy, full,
                       full_like, initial_seed, linspace, manual_seed, ones, ones_like, rand,
                       rand_like, randint, randn, randn_like, seed, tensor, zeros, zeros_like)
from .elementwise import (add, div, eq, exp, ge, gt, isnan, le, log, lt, maximum, minimum, mul,
                          ne, neg, pow, reciprocal, relu, rsqrt, sqrt, sub, true_divide, where)
from .linalg import matmul, mm
from .reduction import all, any, mean, sum
from .views import (as_strided, broadcast_to, expand, expand_as, flatten, permute, reshape,
                    squeeze, sum_to_size, t, transpose, unsqueeze, view)

__all__ = [
    "clone",  # to/cuda/cpu/contiguous/copy_ are methods only, as in PyTorch
    "arange", "as_tensor", "empty", "empty_like", "empty_strided", "eye", "from_numpy", "full",
    "full_like", "initial_seed", "linspace", "manual_seed", "ones", "ones_like", "rand",
    "rand_like", "randint", "randn", "randn_like", "seed", "tensor", "zeros", "zeros_like",
    "add", "div", "eq", "exp", "ge", "gt", "isnan", "le", "log", "lt", "maximum", "minimum",
    "mul", "ne", "neg", "pow", "reciprocal", "relu", "rsqrt", "sqrt", "sub", "true_divide",
    "where", "matmul", "mm", "all", "any", "mean", "sum",
    "as_strided", "broadcast_to", "expand", "expand_as", "flatten", "permute", "reshape",
    "squeeze", "sum_to_size", "t", "transpose", "unsqueeze", "view",
]


def _reflected(fn):
    def method(self, other):
        return fn(other, self) if isinstance(other, Tensor) else _swap(fn, self, other)
    return method


def _swap(fn, tensor_, number):
    # number OP tensor for the non-commutative ops
    if fn is elementwise.sub:
        return elementwise.rsub(tensor_, number)
    if fn is elementwise.div:
        return elementwise.mul(elementwise.reciprocal(tensor_), number)
    if fn is elementwise.pow:
        return elementwise.pow(number, tensor_)
    return fn(tensor_, number)


def _new(factory):
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kw):
        return factory(*size, dtype=dtype or self.dtype, device=device or self.device,
                       requires_grad=requires_grad, **kw)
    return method


_METHODS = {
    # elementwise
    "add": elementwise.add, "sub": elementwise.sub, "mul": elementwise.mul,
    "div": elementwise.div, "true_divide": elementwise.div, "pow": elementwise.pow,
    "neg": elementwise.neg, "exp": elementwise.exp, "log": elementwise.log,
    "sqrt": elementwise.sqrt, "rsqrt": elementwise.rsqrt, "relu": elementwise.relu,
    "reciprocal": elementwise.reciprocal, "maximum": elementwise.maximum,
    "minimum": elementwise.minimum, "isnan": elementwise.isnan,
    "gt": elementwise.gt, "ge": elementwise.ge, "lt": elementwise.lt, "le": elementwise.le,
    "eq": elementwise.eq, "ne": elementwise.ne,
    "add_": elementwise.add_, "sub_": elementwise.sub_, "mul_": elementwise.mul_,
    "div_": elementwise.div_, "pow_": elementwise.pow_, "neg_": elementwise.neg_,
    "exp_": elementwise.exp_, "log_": elementwise.log_, "sqrt_": elementwise.sqrt_,
    "relu_": elementwise.relu_,
    # reductions
    "sum": reduction.sum, "mean": reduction.mean, "any": reduction.any, "all": reduction.all,
    # linear algebra
    "mm": linalg.mm, "matmul": linalg.matmul,
    # views
    "view": views.view, "reshape": views.reshape, "flatten": views.flatten,
    "permute": views.permute, "transpose": views.transpose, "t": views.t,
    "expand": views.expand, "expand_as": views.expand_as, "broadcast_to": views.broadcast_to,
    "unsqueeze": views.unsqueeze, "squeeze": views.squeeze, "as_strided": views.as_strided,
    "sum_to_size": views.sum_to_size,
    # conversions
    "to": conversion.to, "cuda": conversion.cuda, "cpu": conversion.cpu,
    "clone": conversion.clone, "contiguous": conversion.contiguous, "copy_": conversion.copy_,
    "type_as": conversion.type_as, "float": conversion.float, "double": conversion.double,
    "half": conversion.half, "bfloat16": conversion.bfloat16, "long": conversion.long,
    "int": conversion.int, "bool": conversion.bool,
    # factories from an existing tensor
    "new_zeros": _new(creation.zeros), "new_ones": _new(creation.ones),
    "new_empty": _new(creation.empty),
    "new_full": lambda self, size, fill_value, dtype=None, device=None, requires_grad=False:
        creation.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                      requires_grad=requires_grad),
    "new_tensor": lambda self, data, dtype=None, device=None, requires_grad=False:
        creation.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                        requires_grad=requires_grad),
    # operators
    "__add__": elementwise.add, "__radd__": elementwise.add, "__iadd__": elementwise.add_,
    "__sub__": elementwise.sub, "__rsub__": _reflected(elementwise.sub),
    "__isub__": elementwise.sub_,
    "__mul__": elementwise.mul, "__rmul__": elementwise.mul, "__imul__": elementwise.mul_,
    "__truediv__": elementwise.div, "__rtruediv__": _reflected(elementwise.div),
    "__itruediv__": elementwise.div_,
    "__pow__": elementwise.pow, "__rpow__": _reflected(elementwise.pow),
    "__ipow__": elementwise.pow_,
    "__matmul__": linalg.matmul, "__rmatmul__": _reflected(linalg.matmul),
    "__neg__": elementwise.neg, "__pos__": lambda self: self,
    "__gt__": elementwise.gt, "__ge__": elementwise.ge, "__lt__": elementwise.lt,
    "__le__": elementwise.le, "__eq__": elementwise.eq, "__ne__": elementwise.ne,
    "__getitem__": views.getitem,
}

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
Tensor.T = property(views.numpy_T)
Tensor.mT = property(lambda self: self.transpose(-2, -1))
Tensor.__hash__ = lambda self: id(self)  # __eq__ is elementwise, so hash by identity
