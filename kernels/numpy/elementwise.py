"""Elementwise ops over NumPy arrays, with NumPy's broadcasting (the same as PyTorch's).

Inputs arrive with one dtype (the caller promotes); a second operand may be a Python scalar,
which NumPy treats as weakly typed, as PyTorch does.
"""

from __future__ import annotations

import numpy as np

_ndarray = np.ndarray


def _arr(x) -> np.ndarray:
    # ufuncs over 0-d inputs return NumPy scalars; the contract returns arrays.
    return x if type(x) is _ndarray else np.asarray(x)


def _binary(ufunc):
    def op(a, b, out=None):
        if out is None:
            return _arr(ufunc(a, b))
        ufunc(a, b, out=out, casting="unsafe")
        return out
    op.__name__ = ufunc.__name__
    return op


def _unary(ufunc):
    def op(a, out=None):
        if out is None:
            return _arr(ufunc(a))
        ufunc(a, out=out, casting="unsafe")
        return out
    op.__name__ = ufunc.__name__
    return op


def _compare(ufunc):
    def op(a, b):
        return _arr(ufunc(a, b))
    op.__name__ = ufunc.__name__
    return op


add = _binary(np.add)
sub = _binary(np.subtract)
mul = _binary(np.multiply)
div = _binary(np.true_divide)
pow = _binary(np.power)  # noqa: A001
maximum = _binary(np.maximum)  # both propagate NaN, as torch.maximum does
minimum = _binary(np.minimum)

gt = _compare(np.greater)
ge = _compare(np.greater_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
eq = _compare(np.equal)
ne = _compare(np.not_equal)

neg = _unary(np.negative)
exp = _unary(np.exp)
log = _unary(np.log)
sqrt = _unary(np.sqrt)


def relu(a, out=None):
    # maximum(a, 0) keeps NaN, as torch.relu does; the zero takes a's dtype (weak scalar).
    return maximum(a, 0, out=out)


def where(cond, a, b):
    return _arr(np.where(cond, a, b))
