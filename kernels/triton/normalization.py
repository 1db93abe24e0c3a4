"""Batch normalisation's training kernels on the Triton backend, composed from its own
elementwise ops and reductions (a channel's statistics are a reduction over every dim but 1,
which the generic strided reductions already run well; the CPU backend fuses them instead:
kernels/numpy/nn.py).

    batch_norm(x, weight, bias, eps) -> (y, mean, var)
    batch_norm_backward(g, x, weight, mean, var, eps) -> (dx, dweight|None, dbias|None)

x (N, C, *) is normalised per channel over every other dim (n values each): y = (x - mean)
rstd weight + bias, rstd = 1 / sqrt(var + eps), var the biased variance; mean and var (C,) in
the compute dtype (float32 for half inputs, as the row kernels accumulate). With xhat = (x -
mean) rstd and per channel S = sum(g xhat), B = sum(g):
    dx = rstd weight (g - B / n - xhat S / n),  dweight = S,  dbias = B
"""

from __future__ import annotations

import math

from ...runtime import dtype as D
from .elementwise_ops import add, div, mul, sqrt, sub
from .memory import astype, contiguous, full, view
from .reduction import sum as _sum

__all__ = ["batch_norm", "batch_norm_backward"]


def _compute(a):
    """``a`` in its compute dtype (float32 for half precision)."""
    return astype(a, D.float32) if a.dtype in (D.float16, D.bfloat16) else a


def _geometry(x) -> tuple:
    """(the reduced dims, n values per channel, the statistics' broadcast shape (1, C, 1...))."""
    dims = (0,) + tuple(range(2, x.ndim))
    return dims, math.prod(x.shape) // max(x.shape[1], 1), (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _channel(v, shape: tuple, dtype):
    """A per-channel vector (C,) as ``shape`` in ``dtype``."""
    v = view(contiguous(v), shape)
    return v if v.dtype is dtype else astype(v, dtype)


def _rstd(var, eps: float):
    return div(full(tuple(var.shape), 1, var.dtype, var.device), sqrt(add(var, eps)))


def batch_norm(x, weight, bias, eps: float):
    """(y, mean, var) of batch normalisation with x's own statistics (see the module)."""
    xf = _compute(x)
    dims, n, shape = _geometry(x)
    mean = mul(_sum(xf, dims, True), 1.0 / max(n, 1))
    xc = sub(xf, mean)
    var = mul(_sum(mul(xc, xc), dims, True), 1.0 / max(n, 1))
    y = mul(xc, _rstd(var, eps))
    if weight is not None:
        y = mul(y, _channel(weight, shape, xf.dtype))
    if bias is not None:
        y = add(y, _channel(bias, shape, xf.dtype))
    c = (x.shape[1],)
    return (y if y.dtype is x.dtype else astype(y, x.dtype)), view(mean, c), view(var, c)


def batch_norm_backward(g, x, weight, mean, var, eps: float):
    """(dx, dweight, dbias) of batch_norm given its mean and var; the last two are None when
    ``weight`` is None."""
    xf, gf = _compute(x), _compute(g)
    dims, n, shape = _geometry(x)
    mean, rstd = view(mean, shape), view(_rstd(var, eps), shape)
    xhat = mul(sub(xf, mean), rstd)
    s = _sum(mul(gf, xhat), dims, True)
    b = _sum(gf, dims, True)
    scale = rstd if weight is None else mul(rstd, _channel(weight, shape, xf.dtype))
    dx = mul(sub(sub(gf, mul(b, 1.0 / max(n, 1))), mul(xhat, mul(s, 1.0 / max(n, 1)))), scale)
    dx = dx if dx.dtype is x.dtype else astype(dx, x.dtype)
    if weight is None:
        return dx, None, None
    c = (x.shape[1],)
    s, b = view(s, c), view(b, c)
    if s.dtype is not weight.dtype:
        s, b = astype(s, weight.dtype), astype(b, weight.dtype)
    return dx, s, b
