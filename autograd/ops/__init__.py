"""Differentiable ops, one module per family, and their binding as Tensor methods.

Each family module keeps its primitives (forward and derivative rule side by side) and the
public functions over them. This file only attaches those functions to ``Tensor``, so that
``x.exp()``, ``x + y`` and ``tg.exp(x)`` are one code path.
"""

from __future__ import annotations

from ..tensor import Tensor
from . import (conversion, creation, elementwise, indexing, interop, linalg, pointwise, reduction,
               shape, views)
from . import traced  # noqa: F401 - loading it installs dispatch.traced (the rules' Tensor k)
from .conversion import clone
from .creation import (arange, as_tensor, empty, empty_like, empty_strided, eye, from_numpy, full,
                       full_like, initial_seed, linspace, manual_seed, ones, ones_like, rand,
                       rand_like, randint, randn, randn_like, seed, tensor, zeros, zeros_like)
from .elementwise import (add, div, eq, exp, ge, gt, isnan, le, log, lt, maximum, minimum, mul,
                          ne, neg, pow, reciprocal, relu, rsqrt, sqrt, sub, true_divide, where)
from .indexing import (gather, index_put, index_put_, index_select, masked_fill, masked_select,
                       nonzero, scatter, scatter_add)
from .interop import from_dlpack
from .linalg import bmm, matmul, mm
from .pointwise import (abs, absolute, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, ceil,
                        clamp, clamp_max, clamp_min, clip, cos, expm1, fix, floor, floor_divide,
                        isfinite, isinf, log1p, logical_and, logical_not, logical_or,
                        logical_xor, remainder, round, sigmoid, sign, sin, tanh, trunc)
from .reduction import (all, amax, amin, any, argmax, argmin, cumsum, logsumexp, max, mean, min,
                        prod, return_types, std, sum, var)
from .shape import (cat, chunk, concat, concatenate, movedim, moveaxis, narrow, repeat, select,
                    split, stack, tile, tril, triu, unbind)
from .softmax import log_softmax, softmax
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
    # the Tensors op set
    "abs", "absolute", "sin", "cos", "tanh", "sigmoid", "sign", "floor", "ceil", "round",
    "trunc", "fix", "log1p", "expm1", "clamp", "clip", "clamp_min", "clamp_max", "floor_divide",
    "remainder", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "logical_and",
    "logical_or", "logical_xor", "logical_not", "isinf", "isfinite",
    "max", "min", "amax", "amin", "argmax", "argmin", "var", "std", "prod", "logsumexp",
    "cumsum", "return_types", "softmax", "log_softmax", "bmm",
    "cat", "concat", "concatenate", "stack", "split", "chunk", "unbind", "narrow", "select",
    "movedim", "moveaxis", "repeat", "tile", "tril", "triu",
    "gather", "scatter", "scatter_add", "index_select", "index_put", "index_put_",
    "masked_fill", "masked_select", "nonzero", "from_dlpack",
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
    # pointwise
    "abs": pointwise.abs, "absolute": pointwise.abs, "sin": pointwise.sin,
    "cos": pointwise.cos, "tanh": pointwise.tanh, "sigmoid": pointwise.sigmoid,
    "sign": pointwise.sign, "floor": pointwise.floor, "ceil": pointwise.ceil,
    "round": pointwise.round, "trunc": pointwise.trunc, "fix": pointwise.trunc,
    "log1p": pointwise.log1p, "expm1": pointwise.expm1, "clamp": pointwise.clamp,
    "clip": pointwise.clamp, "clamp_min": pointwise.clamp_min,
    "clamp_max": pointwise.clamp_max, "floor_divide": pointwise.floor_divide,
    "remainder": pointwise.remainder, "bitwise_and": pointwise.bitwise_and,
    "bitwise_or": pointwise.bitwise_or, "bitwise_xor": pointwise.bitwise_xor,
    "bitwise_not": pointwise.bitwise_not, "logical_and": pointwise.logical_and,
    "logical_or": pointwise.logical_or, "logical_xor": pointwise.logical_xor,
    "logical_not": pointwise.logical_not, "isinf": pointwise.isinf,
    "isfinite": pointwise.isfinite,
    "abs_": pointwise.abs_, "absolute_": pointwise.abs_, "sign_": pointwise.sign_,
    "sin_": pointwise.sin_, "cos_": pointwise.cos_, "tanh_": pointwise.tanh_,
    "sigmoid_": pointwise.sigmoid_, "log1p_": pointwise.log1p_, "expm1_": pointwise.expm1_,
    "floor_": pointwise.floor_, "ceil_": pointwise.ceil_, "round_": pointwise.round_,
    "trunc_": pointwise.trunc_, "clamp_": pointwise.clamp_, "clip_": pointwise.clamp_,
    "floor_divide_": pointwise.floor_divide_, "remainder_": pointwise.remainder_,
    "bitwise_and_": pointwise.bitwise_and_, "bitwise_or_": pointwise.bitwise_or_,
    "bitwise_xor_": pointwise.bitwise_xor_, "fill_": pointwise.fill_, "zero_": pointwise.zero_,
    # reductions, softmax
    "max": reduction.max, "min": reduction.min, "amax": reduction.amax,
    "amin": reduction.amin, "argmax": reduction.argmax, "argmin": reduction.argmin,
    "var": reduction.var, "std": reduction.std, "prod": reduction.prod,
    "logsumexp": reduction.logsumexp, "cumsum": reduction.cumsum,
    "softmax": softmax, "log_softmax": log_softmax,
    # shapes
    "split": shape.split, "chunk": shape.chunk, "unbind": shape.unbind,
    "narrow": shape.narrow, "select": shape.select, "movedim": shape.movedim,
    "moveaxis": shape.movedim, "repeat": shape.repeat, "tile": shape.tile,
    "tril": shape.tril, "triu": shape.triu,
    # indexing
    "gather": indexing.gather, "scatter": indexing.scatter, "scatter_": indexing.scatter_,
    "scatter_add": indexing.scatter_add, "scatter_add_": indexing.scatter_add_,
    "index_select": indexing.index_select, "index_put": indexing.index_put,
    "index_put_": indexing.index_put_, "masked_fill": indexing.masked_fill,
    "masked_fill_": indexing.masked_fill_, "nonzero": indexing.nonzero,
    "masked_select": indexing.masked_select, "__setitem__": indexing.setitem,
    "where": lambda self, condition, other: elementwise.where(condition, self, other),
    # interop
    "__dlpack__": interop.dlpack, "__dlpack_device__": interop.dlpack_device,
    # reductions
    "sum": reduction.sum, "mean": reduction.mean, "any": reduction.any, "all": reduction.all,
    # linear algebra
    "mm": linalg.mm, "matmul": linalg.matmul, "bmm": linalg.bmm,
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
    "__floordiv__": pointwise.floor_divide,
    "__rfloordiv__": lambda self, other: pointwise.floor_divide(other, self),
    "__ifloordiv__": pointwise.floor_divide_,
    "__mod__": pointwise.remainder,
    "__rmod__": lambda self, other: pointwise.remainder(other, self),
    "__imod__": pointwise.remainder_,
    "__and__": pointwise.bitwise_and, "__rand__": pointwise.bitwise_and,
    "__iand__": pointwise.bitwise_and_,
    "__or__": pointwise.bitwise_or, "__ror__": pointwise.bitwise_or,
    "__ior__": pointwise.bitwise_or_,
    "__xor__": pointwise.bitwise_xor, "__rxor__": pointwise.bitwise_xor,
    "__ixor__": pointwise.bitwise_xor_,
    "__invert__": pointwise.bitwise_not, "__abs__": pointwise.abs,
}

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
Tensor.T = property(views.numpy_T)
Tensor.__cuda_array_interface__ = property(interop.cuda_array_interface)
Tensor.mT = property(lambda self: self.transpose(-2, -1))
Tensor.__hash__ = lambda self: id(self)  # __eq__ is elementwise, so hash by identity
