"""Compiled loops (kernels/numpy/jit.py) for the recurrent cells of recurrent.py: one pass per
LSTM or GRU step, forward and backward, with the formulas of recurrent.py's docstring.

float32 and float64 (recurrent.py widens float16 and bfloat16 to float32). In float32 the
sigmoid is nn_loops' vectorized exp (~1 ulp) and tanh Cephes' tanhf: an odd polynomial below
|x| = 0.625, 1 - 2 / (e^2x + 1) above (~2 ulp), so the loops vectorize instead of calling the
C library per element; in float64 they are ``math``'s. NaN propagates; +-inf saturate.
Outputs are written into the given C-contiguous arrays; an empty array stands for "none" (no
bias, a zero gradient).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import overload

from .jit import compile
from .nn_loops import _exp

f32 = np.float32
_ZERO32, _ONE32, _TWO32 = f32(0.0), f32(1.0), f32(2.0)  # (exact in float64 too:
# float32 constants keep float32 formulas in float32)
_TANH_SMALL = f32(0.625)
_T0, _T1, _T2, _T3, _T4 = (f32(c) for c in (
    -5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
    -3.33332819422e-1))


def _sigmoid(x):
    """1 / (1 + e^-x) (stands for the overloads below)."""


def _tanh(x):
    """tanh(x) (stands for the overloads below)."""


@overload(_sigmoid)
def _sigmoid_impl(x):
    if x == types.float32:
        return lambda x: _ONE32 / (_ONE32 + _exp(-x))
    return lambda x: 1.0 / (1.0 + math.exp(-x))


@overload(_tanh)
def _tanh_impl(x):
    if x == types.float32:
        def tanh32(x):
            # both forms, then a select: branch-free, so the loops vectorize
            a, s = abs(x), x * x
            p = _tanh_poly(s) * s * x + x
            t = _ONE32 - _TWO32 / (_exp(_TWO32 * a) + _ONE32)  # (NaN for NaN)
            t = t if x >= 0 else -t
            return p if a < _TANH_SMALL else t
        return tanh32
    return lambda x: math.tanh(x)


@compile(inline=True)
def _tanh_poly(s):
    return (((_T0 * s + _T1) * s + _T2) * s + _T3) * s + _T4


# Note [Loops that vectorize]
#   LLVM vectorizes a loop only where it can prove (or check once, at run time) that the stores
#   do not overlap the loads; a loop reading and writing one array at offsets it cannot compare
#   (saved[r, j] read, saved[r, 4 H + j] written), or with many arrays at once, runs scalar, and
#   then each sigmoid and tanh is a chain of calls: one fused LSTM step over 8 x 64 took ~35 us
#   so, against ~3.5-6 us written as below. So each cell runs in passes of a few arrays each
#   (the gates' activations, straight from x and rec, then the state update), and ``saved`` is
#   several arrays. (Writing x + rec first and activating it in place: ~2x slower again.)


@compile
def lstm_cell(x, rec, b, c, h_out, c_out, act, tc):
    """x, rec (N, 4H); b (4H,) or empty; c (N, H) -> h_out, c_out, tc (N, H), act (N, 4H)."""
    n, width = c.shape
    bias = b.shape[0] > 0
    for r in range(n):
        if bias:
            for k in range(2 * width):
                act[r, k] = _sigmoid(x[r, k] + (rec[r, k] + b[k]))
            for k in range(2 * width, 3 * width):
                act[r, k] = _tanh(x[r, k] + (rec[r, k] + b[k]))
            for k in range(3 * width, 4 * width):
                act[r, k] = _sigmoid(x[r, k] + (rec[r, k] + b[k]))
        else:
            for k in range(2 * width):
                act[r, k] = _sigmoid(x[r, k] + rec[r, k])
            for k in range(2 * width, 3 * width):
                act[r, k] = _tanh(x[r, k] + rec[r, k])
            for k in range(3 * width, 4 * width):
                act[r, k] = _sigmoid(x[r, k] + rec[r, k])
    for r in range(n):
        for j in range(width):
            c2 = act[r, width + j] * c[r, j] + act[r, j] * act[r, 2 * width + j]
            t = _tanh(c2)
            c_out[r, j] = c2
            h_out[r, j] = act[r, 3 * width + j] * t
            tc[r, j] = t


@compile
def lstm_cell_backward(dh, dc, act, tc, c, dgates, dc_prev):
    """dh, dc (N, H) or empty; act (N, 4H), tc (N, H); c (N, H) -> dgates (N, 4H), dc_prev
    (N, H)."""
    n, width = c.shape
    has_dh, has_dc = dh.shape[0] > 0, dc.shape[0] > 0
    for r in range(n):
        for j in range(width):
            i, f, g = act[r, j], act[r, width + j], act[r, 2 * width + j]
            o, t = act[r, 3 * width + j], tc[r, j]
            dct = dc[r, j] if has_dc else _ZERO32
            dhv = dh[r, j] if has_dh else _ZERO32
            dct = dct + dhv * o * (_ONE32 - t * t)
            dgates[r, j] = dct * g * (i * (_ONE32 - i))
            dgates[r, width + j] = dct * c[r, j] * (f * (_ONE32 - f))
            dgates[r, 2 * width + j] = dct * i * (_ONE32 - g * g)
            dgates[r, 3 * width + j] = dhv * t * (o * (_ONE32 - o))
            dc_prev[r, j] = dct * f


@compile
def gru_cell(x, rec, b, h, h_out, rz, nn, hn):
    """x, rec (N, 3H); b (3H,) or empty; h (N, H) -> h_out, nn, hn (N, H), rz (N, 2H)."""
    n, width = h.shape
    bias = b.shape[0] > 0
    for r in range(n):
        if bias:
            for k in range(2 * width):
                rz[r, k] = _sigmoid(x[r, k] + (rec[r, k] + b[k]))
        else:
            for k in range(2 * width):
                rz[r, k] = _sigmoid(x[r, k] + rec[r, k])
        for j in range(width):
            k = 2 * width + j
            hn[r, j] = rec[r, k] + b[k] if bias else rec[r, k]
    for r in range(n):
        for j in range(width):
            v = _tanh(x[r, 2 * width + j] + rz[r, j] * hn[r, j])
            nn[r, j] = v
            h_out[r, j] = v + rz[r, width + j] * (h[r, j] - v)


@compile
def gru_cell_backward(dh, rz, nn, hn, h, dx, drec, dh_direct):
    """dh (N, H); rz (N, 2H), nn, hn (N, H); h (N, H) -> dx, drec (N, 3H), dh_direct (N, H)."""
    n, width = h.shape
    for r in range(n):
        for j in range(width):
            rg, z, v = rz[r, j], rz[r, width + j], nn[r, j]
            d = dh[r, j]
            dn = (d - d * z) * (_ONE32 - v * v)
            dr = dn * hn[r, j] * (rg * (_ONE32 - rg))
            dz = d * (h[r, j] - v) * (z * (_ONE32 - z))
            dx[r, j], dx[r, width + j], dx[r, 2 * width + j] = dr, dz, dn
            drec[r, j], drec[r, width + j], drec[r, 2 * width + j] = dr, dz, dn * rg
            dh_direct[r, j] = d * z
