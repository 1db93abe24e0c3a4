"""Compiled loops (kernels/numpy/jit.py) for the optimizer updates of optim.py: one pass over a
parameter and its state instead of a dozen.

Each loop applies PyTorch's single-tensor arithmetic in optim.py's order, element by element:
the scalars arrive already in the arrays' dtype (as NumPy casts a Python float against a
float32 array) and nothing is contracted into fused multiply-adds (no ``fastmath``), so the
results are those of the NumPy form to the last bit. Arrays are flat, of one dtype.
"""

from __future__ import annotations

import math

import numpy as np

from .jit import compile


@compile
def sgd(param, grad, buf, lr, momentum, damp1, wd, nesterov, maximize, first, use_wd,
        use_momentum):
    for i in range(param.size):
        g = -grad[i] if maximize else grad[i]
        if use_wd:
            g = g + wd * param[i]
        if use_momentum:
            if first:
                b = g
            else:
                b = buf[i] * momentum
                b = b + damp1 * g
            buf[i] = b
            g = g + momentum * b if nesterov else b
        param[i] = param[i] - lr * g


@compile
def adam(param, grad, m, v, vmax, lr_bc1, beta1c, beta2, beta2c, bc2_sqrt, eps, wd, decay,
         maximize, amsgrad, use_wd, decoupled):
    for i in range(param.size):
        g = -grad[i] if maximize else grad[i]
        p = param[i]
        if use_wd:
            if decoupled:
                p = p * decay
            else:
                g = g + wd * p
        mi = m[i] + beta1c * (g - m[i])
        vi = v[i] * beta2
        vi = vi + (beta2c * g) * g
        m[i], v[i] = mi, vi
        if amsgrad:
            top = vmax[i]
            if vi > top or math.isnan(vi):  # np.maximum: NaN wins
                top = vi
            vmax[i] = top
            denom = np.sqrt(top) / bc2_sqrt + eps
        else:
            denom = np.sqrt(vi) / bc2_sqrt + eps
        param[i] = p - (lr_bc1 * mi) / denom
