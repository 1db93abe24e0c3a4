"""The CPU backend: the kernel contract (see ``tritongrad.kernels``) over NumPy arrays.

It is both the CPU fallback and the reference the Triton kernels are tested against.
"""

from .elementwise import (add, div, eq, exp, ge, gt, le, log, lt, maximum, minimum, mul, ne,
                          neg, pow, relu, sqrt, sub, where)
from .linalg import matmul
from .memory import (as_strided, astype, contiguous, copy_, empty, expand, full, getitem,
                     permute, storage_offset, strides, view)
from .reduction import sum

__all__ = [
    "empty", "full", "astype", "contiguous", "copy_",
    "view", "permute", "expand", "getitem", "as_strided", "strides", "storage_offset",
    "add", "sub", "mul", "div", "pow", "maximum", "minimum",
    "gt", "ge", "lt", "le", "eq", "ne",
    "neg", "exp", "log", "relu", "sqrt", "where",
    "sum", "matmul",
]
