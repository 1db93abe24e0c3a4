"""Compiled ufuncs (kernels/numpy/jit.py) for the elementwise kernels whose NumPy forms take
several passes or branch per element: float32 sigmoid, the tanh and sigmoid derivatives, ReLU
and ``where`` over floats (elementwise.py).

Each is a NumPy ufunc, so a call costs what a built-in one does and computes its formula in
one pass (16x16 float32 sigmoid 0.44 us against 1.6 for the five-ufunc NumPy form; tanh's
backward 0.31 against 0.87). The derivatives evaluate the NumPy forms' operations in the same
order, so they round the same; sigmoid uses nn_loops' float32 exp (~1 ulp, vectorized, where
NumPy's exp is a library call per element inside a compiled loop), and is as accurate as the
NumPy form (max relative error 1.2e-7 against float64 over N(0, 25) inputs, NumPy's 2.1e-7).
"""

from __future__ import annotations

import numpy as np

from .jit import compile, ufunc
from .nn_loops import _exp

_ONE32 = np.float32(1.0)  # (a float32 one keeps float32 formulas in float32; exact in float64)
_ZERO32 = np.float32(0.0)
_BINARY = ["float32(float32, float32)", "float64(float64, float64)"]


@ufunc(["float32(float32)"])
def sigmoid(x):
    """1 / (1 + e^-x): 0 at -inf (e^-x is inf above 89), 1 at inf, NaN for NaN."""
    return _ONE32 / (_ONE32 + _exp(-x))


@ufunc(_BINARY)
def tanh_backward(g, y):
    """g (1 - y^2), y = tanh(x)."""
    return g * (_ONE32 - y * y)


@ufunc(_BINARY)
def sigmoid_backward(g, y):
    """g (1 - y) y, y = sigmoid(x)."""
    return g * ((_ONE32 - y) * y)


# ReLU, as PyTorch's: 0 where x < 0, else x (-0.0 stays -0.0, NaN stays NaN). NumPy's
# maximum(x, 0) takes 1.6x as long (256 x 1024 float32 in cache: 58 us, this 36 us).
@ufunc(["float32(float32)", "float64(float64)"])
def relu(x):
    return _ZERO32 if x < _ZERO32 else x  # noqa: FURB136 (max() would lose -0.0 and NaN)


# where(cond, a, b) over floats: NumPy's np.where branches on every element (1.1 ms for an
# unpredictable 256 x 1024 float32 mask, 16x a multiply); these compiled selects do not
# (54 us). Two forms, because the ufunc's loop over a stride-0 (Python scalar) operand
# branches again (1 ms): arrays through the ufunc, a scalar branch through the flat loop.
@ufunc(["float32(boolean, float32, float32)", "float64(boolean, float64, float64)"])
def select(cond, a, b):
    return a if cond else b


@compile
def select_scalar(cond, a, s, flip, out):
    """out = a where cond (where not cond, with ``flip``), else the scalar s: flat arrays."""
    for i in range(a.size):
        ai = a[i]  # (read before the select: a load under the condition does not vectorize)
        out[i] = ai if cond[i] != flip else s
