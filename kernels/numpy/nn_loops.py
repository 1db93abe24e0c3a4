"""Compiled loops (kernels/numpy/jit.py) for the nn kernels: float32 GELU with its derivative,
layer norm and batch norm forward and backward (nn.py), max pooling forward and backward
(pool.py), ReLU's backward (elementwise.py), embedding's backward (nn.py).

Each computes what its NumPy form computes, with the same formulas and the same accuracy, in
one pass over the data instead of one per step; the kernels call them when
``jit.loops("nn_loops")`` gives this module and keep their NumPy forms otherwise. Arrays are
C-contiguous (flat for GELU, rows for layer norm, (N, C, L) for batch norm, planes for
pooling), results written into the given outputs.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from .jit import compile
from .nn import _AS_Q, _INV_AS_P, _INV_SQRT_2PI

f32 = np.float32
_Q0, _Q1, _Q2, _Q3, _Q4 = _AS_Q
_HALF, _ONE = f32(0.5), f32(1.0)
_C_SQRT_2PI = f32(_INV_SQRT_2PI)

# Note [Fused multiply-adds]
#   The loops compile without ``fastmath`` (NaN and inf must pass through), so LLVM may not
#   contract a * b + c into one instruction by itself. The float32 GELU and exp below are
#   mostly polynomials, i.e. chains of multiply-adds, and were bound by their count: written
#   with ``_fma`` (llvm.fma: a * b + c rounded once, which the loop vectorizer keeps vector)
#   GELU with its derivative over 1024 x 512 takes ~440 us instead of ~625 (its backward
#   ~400 instead of ~540; sigmoid and cross-entropy share ``_exp``). One rounding instead of
#   two leaves each step as accurate or more; NaN and inf propagate as before. (Numba compiles
#   for the host CPU: every x86-64 since 2013 has the instruction; elsewhere LLVM calls fmaf,
#   correct but slower.)

@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c rounded once, in the widest of the three floats' types."""
    t = typingctx.unify_types(a, b, c)
    if not isinstance(t, types.Float):
        return None

    def codegen(context, builder, signature, args):
        args = [context.cast(builder, v, s, t) for v, s in zip(args, signature.args)]
        lt = args[0].type
        fn = builder.module.declare_intrinsic("llvm.fma", [lt], ir.FunctionType(lt, [lt] * 3))
        return builder.call(fn, args)

    return t(a, b, c), codegen


# exp for float32 (Cephes' expf): e^x = 2^n e^r, n = round(x / ln 2), r = x - n ln 2 with ln 2
# split in two (Cody and Waite: n ln2_hi is exact), e^r by a degree-7 polynomial on
# |r| <= ln 2 / 2 in multiply-adds (Note [Fused multiply-adds]); ~1 ulp. 2^n is built from its
# bits, as 2^(n/2) 2^(n - n/2) so that results down to the denormals (n >= -150) come out
# right; below e^-104 the result is 0.
_LOG2E = f32(1.4426950408889634)
_LN2_HI, _LN2_LO = f32(0.693359375), f32(-2.12194440e-4)
_E0, _E1, _E2, _E3, _E4, _E5 = (f32(c) for c in (
    1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
    5.0000001201e-1))
_EXP_MIN, _EXP_MAX = f32(-104.0), f32(89.0)  # (e^89 is inf in float32)


@compile(inline=True)
def _exp(x):
    """e^x for a float32 x (inf above 88.7, 0 below -104); NaN stays NaN (which min() and
    max() would not keep)."""
    xc = _EXP_MIN if x < _EXP_MIN else (_EXP_MAX if x > _EXP_MAX else x)  # noqa: FURB136
    n = np.floor(xc * _LOG2E + _HALF)
    r = _fma(-n, _LN2_HI, xc)
    r = _fma(-n, _LN2_LO, r)
    p = _fma(_E0, r, _E1)
    p = _fma(p, r, _E2)
    p = _fma(p, r, _E3)
    p = _fma(p, r, _E4)
    p = _fma(p, r, _E5)
    p = _fma(p, r * r, r) + _ONE
    n1 = np.int32(n) >> np.int32(1)
    n2 = np.int32(n) - n1
    e = p * _pow2(n1) * _pow2(n2)
    return f32(0.0) if x < _EXP_MIN else e


@compile(inline=True)
def _pow2(n):
    """2^n for an int32 n in [-126, 127], from its bits."""
    return np.int32((n + np.int32(127)) << np.int32(23)).view(np.float32)


@compile(inline=True)
def _tail(xi, a):
    """(p, e) of nn._tail32 for one element: p e = 1 - Phi(|x|) (A&S 7.1.26 in v)."""
    v = _ONE / (a + _INV_AS_P)
    p = _fma(_Q4, v, _Q3)
    p = _fma(p, v, _Q2)
    p = _fma(p, v, _Q1)
    p = _fma(p, v, _Q0)
    p = p * v
    return p, _exp(xi * xi * -_HALF)


@compile(inline=True)
def _gelu(xi, a, p, e):
    """x Phi(x) = relu(x) - |x| (1 - Phi(|x|)) (nn._gelu32), relu(x) past |x| = 1e4."""
    y = _fma(-a, p * e, _fma(a, _HALF, xi * _HALF))  # (0 - |x| pe exactly for x < 0)
    if a >= f32(1e4):  # GELU is relu there in float32 (and inf * 0 would be NaN at +inf)
        y = xi * (_ONE if xi > 0 else f32(0.0))
    return y


@compile(inline=True)
def _derivative(xi, a, p, e):
    """GELU'(x) = 0.5 + copysign(0.5 - k, x), k = (1 - Phi(|x|)) - |x| phi(x) (nn._derivative32)."""
    return _HALF + math.copysign(_fma(-_fma(-a, _C_SQRT_2PI, p), e, _HALF), xi)


@compile
def gelu(x, y):
    for i in range(x.size):
        xi = x[i]
        a = abs(xi)
        p, e = _tail(xi, a)
        y[i] = _gelu(xi, a, p, e)


@compile
def gelu_with_grad(x, y, d):
    for i in range(x.size):
        xi = x[i]
        a = abs(xi)
        p, e = _tail(xi, a)
        y[i] = _gelu(xi, a, p, e)
        d[i] = _derivative(xi, a, p, e)


@compile
def gelu_grad(g, x, d):
    for i in range(x.size):
        xi = x[i]
        a = abs(xi)
        p, e = _tail(xi, a)
        d[i] = g[i] * _derivative(xi, a, p, e)


@compile
def relu_backward(g, y, out):
    """0 where y <= 0, else g (a NaN y passes g on), for float32 or float64: one pass where the
    NumPy form's bit-mask select takes three (Note [Selects as bit masks])."""
    for i in range(g.size):
        out[i] = 0 if y[i] <= 0 else g[i]


@compile
def embedding_backward(g, idx, out):
    """out[idx[i]] += g[i] for the rows of g (N, D), in row order (idx already checked to be
    rows of out): a scatter-add along rows, which vectorizes across D."""
    n, d = g.shape
    for i in range(n):
        r = idx[i]
        for j in range(d):
            out[r, j] += g[i, j]


# Layer norm: rows of the 2-D ``x`` (M, N); ``w``, ``b`` are (N,) or empty (no affine). Sums
# are taken in float64 (a float32 row of 10^6 elements would lose digits otherwise), in
# vector lanes (``reassociate``).

@compile(reassociate=True)
def layer_norm(x, w, b, eps, y, mean, rstd):
    m, n = x.shape
    inv_n = 1.0 / max(n, 1)
    for i in range(m):
        s = 0.0
        for j in range(n):
            s += np.float64(x[i, j])
        mu = f32(s * inv_n)
        s = 0.0
        for j in range(n):
            c = np.float64(x[i, j] - mu)
            s += c * c
        r = f32(1.0 / np.sqrt(s * inv_n + eps))
        mean[i], rstd[i] = mu, r
        for j in range(n):  # (the affine tests are loop-invariant: the compiler hoists them)
            v = (x[i, j] - mu) * r
            if w.size:
                v = v * w[j]
            if b.size:
                v = v + b[j]
            y[i, j] = v


@compile(reassociate=True)
def layer_norm_backward(g, x, w, mean, rstd, dx, dw, db):
    """dx = rstd (gw - mean_N(gw) - xhat mean_N(gw xhat)), gw = g w; dw = sum_M(g xhat) and
    db = sum_M(g) accumulated into the float64 (N,) ``dw``, ``db`` (empty: no affine)."""
    m, n = x.shape
    inv_n = 1.0 / max(n, 1)
    affine = w.size != 0
    for i in range(m):
        mu, r = mean[i], rstd[i]
        c1 = 0.0
        c2 = 0.0
        for j in range(n):
            xhat = (x[i, j] - mu) * r
            gw = g[i, j] * w[j] if affine else g[i, j]
            c1 += np.float64(gw)
            c2 += np.float64(gw * xhat)
            if affine:
                dw[j] += np.float64(g[i, j] * xhat)
                db[j] += np.float64(g[i, j])
        k1, k2 = f32(c1 * inv_n), f32(c2 * inv_n)
        for j in range(n):
            xhat = (x[i, j] - mu) * r
            gw = g[i, j] * w[j] if affine else g[i, j]
            dx[i, j] = r * (gw - k1 - xhat * k2)


# Batch norm: channels (dim 1) of the (N, C, L) ``x``, each over its N x L values; ``w``, ``b``
# (C,) or empty. Sums in float64, as layer norm's; rstd is taken from var as stored (float32),
# so that the backward's rstd is the forward's.

@compile(inline=True)
def _rstd(var, eps):
    return f32(1.0 / np.sqrt(np.float64(var) + eps))


@compile(reassociate=True)
def batch_norm(x, w, b, eps, y, mean, var):
    n_, c_, l_ = x.shape
    inv_n = 1.0 / max(n_ * l_, 1)
    for c in range(c_):
        s = 0.0
        for i in range(n_):
            for j in range(l_):
                s += np.float64(x[i, c, j])
        mu = s * inv_n
        s = 0.0
        for i in range(n_):
            for j in range(l_):
                d = np.float64(x[i, c, j]) - mu
                s += d * d
        mean[c], var[c] = f32(mu), f32(s * inv_n)
        m, scale = mean[c], _rstd(var[c], eps) * (w[c] if w.size else _ONE)
        shift = b[c] if b.size else f32(0.0)
        for i in range(n_):
            for j in range(l_):
                y[i, c, j] = (x[i, c, j] - m) * scale + shift


@compile(reassociate=True)
def batch_norm_backward(g, x, w, mean, var, eps, dx, s_out, b_out):
    """dx = rstd w (g - B / n - xhat S / n) with S = sum(g xhat), B = sum(g) per channel,
    which go to the float64 (C,) ``s_out`` and ``b_out``."""
    n_, c_, l_ = x.shape
    inv_n = 1.0 / max(n_ * l_, 1)
    for c in range(c_):
        m, r = mean[c], _rstd(var[c], eps)
        s = 0.0
        bsum = 0.0
        for i in range(n_):
            for j in range(l_):
                gv = g[i, c, j]
                s += np.float64(gv * ((x[i, c, j] - m) * r))
                bsum += np.float64(gv)
        s_out[c], b_out[c] = s, bsum
        k1, k2 = f32(bsum * inv_n), f32(s * inv_n)
        scale = r * (w[c] if w.size else _ONE)
        for i in range(n_):
            for j in range(l_):
                dx[i, c, j] = scale * (g[i, c, j] - k1 - (x[i, c, j] - m) * r * k2)


# Batch norm over short planes (L = H*W below 32, nn._SHORT_PLANE: a 4x4 feature map): the
# per-channel loops above run L iterations, too few to vectorize. These walk each image's C*L
# values as one run instead, into per-position float64 partial sums (C*L of them, summed per
# channel at the end): the same formulas, the sums in another order.

@compile(reassociate=True)
def batch_norm_short(x, w, b, eps, y, mean, var):
    n_, c_, l_ = x.shape
    cl = c_ * l_
    inv_n = 1.0 / max(n_ * l_, 1)
    xf = x.reshape(n_, cl)
    acc = np.zeros(cl)  # (per position: partial sums, then the channel's mean)
    mk = np.empty(cl)
    for i in range(n_):
        row = xf[i]
        for k in range(cl):
            acc[k] += np.float64(row[k])
    for c in range(c_):
        s = 0.0
        for j in range(l_):
            s += acc[c * l_ + j]
        mu = s * inv_n
        for j in range(l_):
            mk[c * l_ + j] = mu
    acc[:] = 0.0
    for i in range(n_):
        row = xf[i]
        for k in range(cl):
            d = np.float64(row[k]) - mk[k]
            acc[k] += d * d
    yf = y.reshape(n_, cl)
    for c in range(c_):
        s = 0.0
        for j in range(l_):
            s += acc[c * l_ + j]
        mean[c], var[c] = f32(mk[c * l_]), f32(s * inv_n)
    mk32 = np.empty(cl, np.float32)  # (the float32 mean, as the per-channel loop subtracts)
    sk32 = np.empty(cl, np.float32)
    bk32 = np.empty(cl, np.float32)
    for c in range(c_):
        scale = _rstd(var[c], eps) * (w[c] if w.size else _ONE)
        shift = b[c] if b.size else f32(0.0)
        for j in range(l_):
            mk32[c * l_ + j] = mean[c]
            sk32[c * l_ + j] = scale
            bk32[c * l_ + j] = shift
    for i in range(n_):
        row = xf[i]
        out = yf[i]
        for k in range(cl):
            out[k] = (row[k] - mk32[k]) * sk32[k] + bk32[k]


@compile(reassociate=True)
def batch_norm_backward_short(g, x, w, mean, var, eps, dx, s_out, b_out):
    n_, c_, l_ = x.shape
    cl = c_ * l_
    inv_n = 1.0 / max(n_ * l_, 1)
    xf, gf, df = x.reshape(n_, cl), g.reshape(n_, cl), dx.reshape(n_, cl)
    mk = np.empty(cl, np.float32)
    rk = np.empty(cl, np.float32)
    for c in range(c_):
        r = _rstd(var[c], eps)
        for j in range(l_):
            mk[c * l_ + j] = mean[c]
            rk[c * l_ + j] = r
    acc_s = np.zeros(cl)
    acc_b = np.zeros(cl)
    for i in range(n_):
        xr, gr = xf[i], gf[i]
        for k in range(cl):
            gv = gr[k]
            acc_s[k] += np.float64(gv * ((xr[k] - mk[k]) * rk[k]))
            acc_b[k] += np.float64(gv)
    k1 = np.empty(cl, np.float32)
    k2 = np.empty(cl, np.float32)
    sc = np.empty(cl, np.float32)
    for c in range(c_):
        s = 0.0
        bsum = 0.0
        for j in range(l_):
            s += acc_s[c * l_ + j]
            bsum += acc_b[c * l_ + j]
        s_out[c], b_out[c] = s, bsum
        a1, a2 = f32(bsum * inv_n), f32(s * inv_n)
        scale = rk[c * l_] * (w[c] if w.size else _ONE)
        for j in range(l_):
            k1[c * l_ + j] = a1
            k2[c * l_ + j] = a2
            sc[c * l_ + j] = scale
    for i in range(n_):
        xr, gr, out = xf[i], gf[i], df[i]
        for k in range(cl):
            out[k] = sc[k] * (gr[k] - k1[k] - (xr[k] - mk[k]) * rk[k] * k2[k])


# Max pooling (kernels/numpy/pool.py): planes of the (P, D, H, W) ``x``, windows described by
# (3,) int arrays (1-D and 2-D pools padded to three dims), PyTorch's scan: the first strictly
# greater value wins, a NaN wins over anything (the last NaN), a window of -inf keeps its
# first position inside the input.

@compile
def max_pool(x, kernel, stride, padding, dilation, taps, values, index):
    """``taps``: each tap's offset from its window's first position in a plane, in scan
    order (a window inside the input walks them as one flat loop)."""
    p_, d_, h_, w_ = x.shape
    _, od_, oh_, ow_ = values.shape
    kd, kh, kw = kernel[0], kernel[1], kernel[2]
    dd, dh, dw = dilation[0], dilation[1], dilation[2]
    flat = x.reshape(p_, d_ * h_ * w_)
    for p in range(p_):
        row = flat[p]
        for a in range(od_):
            z0 = a * stride[0] - padding[0]
            zin = z0 >= 0 and z0 + (kd - 1) * dd < d_
            for b in range(oh_):
                y0 = b * stride[1] - padding[1]
                yin = zin and y0 >= 0 and y0 + (kh - 1) * dh < h_
                for c in range(ow_):
                    x0 = c * stride[2] - padding[2]
                    if yin and x0 >= 0 and x0 + (kw - 1) * dw < w_:
                        at = (z0 * h_ + y0) * w_ + x0  # inside the input: nothing to check
                        best = row[at]
                        start = at
                        for t in range(1, taps.size):
                            q = start + taps[t]
                            v = row[q]
                            if v > best or math.isnan(v):
                                best, at = v, q
                    else:
                        best, at = _max_pool_edge(x, p, z0, y0, x0, kd, kh, kw, dd, dh, dw)
                    values[p, a, b, c] = best
                    index[p, a, b, c] = at


@compile(inline=True)
def _max_pool_edge(x, p, z0, y0, x0, kd, kh, kw, dd, dh, dw):
    """A window reaching into the padding: its taps inside the input, scanned."""
    _, d_, h_, w_ = x.shape
    best = x[p, 0, 0, 0]  # (replaced at the first position inside)
    at = -1
    for i in range(kd):
        z = z0 + i * dd
        if z < 0 or z >= d_:
            continue
        for j in range(kh):
            y = y0 + j * dh
            if y < 0 or y >= h_:
                continue
            for k in range(kw):
                xx = x0 + k * dw
                if xx < 0 or xx >= w_:
                    continue
                v = x[p, z, y, xx]
                if at < 0 or v > best or math.isnan(v):
                    best, at = v, (z * h_ + y) * w_ + xx
    return best, at


@compile
def max_pool_backward(g, index, dx):
    """dx (P, plane) += each output's gradient g (P, L) at its index (P, L)."""
    p_, l_ = g.shape
    for p in range(p_):
        for i in range(l_):
            dx[p, index[p, i]] += g[p, i]


@compile
def max_pool_backward_nhwc(g, index, dx):
    """dx (N, plane, C) += each output's gradient g (N, C, L) at its index (N, C, L): the
    channels-last input gradient, g and index read in whatever layout they have."""
    n_, c_, l_ = g.shape
    for n in range(n_):
        for i in range(l_):
            for c in range(c_):
                dx[n, index[n, c, i], c] += g[n, c, i]


@compile(inline=True)
def _later_max(best, at, v, q):
    """(best, at) after the scan meets value v at position q: selects, not a branch (Note
    [2x2 max pool])."""
    m = (v > best) | math.isnan(v)
    return (v if m else best), (q if m else at)


# Note [2x2 max pool]
#   MaxPool2d(2) (2x2 windows, stride 2, no padding, inside the input) is most of the pooling
#   CNNs do. Its windows are four taps at fixed offsets, so the scan is written out: no tap
#   table and no window bounds, and each "is this greater" is a select. On real data that
#   test is a coin toss per tap, and a branch there mispredicts about half the time: the
#   generic loop above takes 170-180 us for the digits CNN's (64, 32, 8, 8), this one 90-100
#   us. (Selects in the generic loop do not help: beside its edge windows' path LLVM turns
#   them back into branches, 160-190 us.)

@compile
def max_pool_2x2(x, values, index):
    """values, index (P, OH, OW) of 2x2 windows at stride 2 over x (P, H, W), all inside
    (OH <= H // 2, OW <= W // 2); the scan order and NaN rule of max_pool."""
    p_, _, w_ = x.shape
    _, oh_, ow_ = values.shape
    for p in range(p_):
        for b in range(oh_):
            top, bottom = x[p, 2 * b], x[p, 2 * b + 1]
            vo, io = values[p, b], index[p, b]
            at0 = 2 * b * w_
            for c in range(ow_):
                j = 2 * c
                best, at = top[j], at0 + j
                best, at = _later_max(best, at, top[j + 1], at0 + j + 1)
                best, at = _later_max(best, at, bottom[j], at0 + w_ + j)
                best, at = _later_max(best, at, bottom[j + 1], at0 + w_ + j + 1)
                vo[c], io[c] = best, at


@compile
def max_pool_2x2_nhwc(x, values, index):
    """max_pool_2x2 over channels-last memory: x (N, H, W, C), values and index (N, OH, OW,
    C), the channels innermost (vector lanes); the same scan, NaN rule and plane indices."""
    n_, _, w_, c_ = x.shape
    _, oh_, ow_, _ = values.shape
    for n in range(n_):
        for b in range(oh_):
            at0 = 2 * b * w_
            for c in range(ow_):
                j = 2 * c
                t0, t1 = x[n, 2 * b, j], x[n, 2 * b, j + 1]
                b0, b1 = x[n, 2 * b + 1, j], x[n, 2 * b + 1, j + 1]
                vo, io = values[n, b, c], index[n, b, c]
                for ch in range(c_):
                    best, at = t0[ch], at0 + j
                    best, at = _later_max(best, at, t1[ch], at0 + j + 1)
                    best, at = _later_max(best, at, b0[ch], at0 + w_ + j)
                    best, at = _later_max(best, at, b1[ch], at0 + w_ + j + 1)
                    vo[ch], io[ch] = best, at


# Average pooling (kernels/numpy/pool.py): planes of the (P, D, H, W) ``x``, windows described
# by (3,) int arrays as max pooling's (no dilation); ``div`` (OD, OH, OW) each window's divisor
# in the compute dtype. PyTorch's CPU kernel: the taps inside the input summed in scan order in
# the compute dtype (``zero``: a one-element array of it, the sum's start), then one division.

@compile(inline=True)
def _span(o, stride, padding, kernel, n):
    """[lo, hi): the taps inside an input of size n of window o along one dim."""
    lo = o * stride - padding
    return max(lo, 0), min(lo + kernel, n)


@compile
def avg_pool(x, kernel, stride, padding, div, zero, values):
    p_, d_, h_, w_ = x.shape
    _, od_, oh_, ow_ = values.shape
    for p in range(p_):
        for a in range(od_):
            z0, z1 = _span(a, stride[0], padding[0], kernel[0], d_)
            for b in range(oh_):
                y0, y1 = _span(b, stride[1], padding[1], kernel[1], h_)
                for c in range(ow_):
                    x0, x1 = _span(c, stride[2], padding[2], kernel[2], w_)
                    s = zero[0]
                    for z in range(z0, z1):
                        for y in range(y0, y1):
                            for i in range(x0, x1):
                                s += x[p, z, y, i]
                    values[p, a, b, c] = s / div[a, b, c]


@compile
def avg_pool_backward(g, kernel, stride, padding, div, dx):
    """dx (P, D, H, W), zeroed, += each output's gradient over its divisor at its window's taps
    inside the input (PyTorch's CPU kernel, in its order)."""
    _, d_, h_, w_ = dx.shape
    p_, od_, oh_, ow_ = g.shape
    for p in range(p_):
        for a in range(od_):
            z0, z1 = _span(a, stride[0], padding[0], kernel[0], d_)
            for b in range(oh_):
                y0, y1 = _span(b, stride[1], padding[1], kernel[1], h_)
                for c in range(ow_):
                    x0, x1 = _span(c, stride[2], padding[2], kernel[2], w_)
                    share = g[p, a, b, c] / div[a, b, c]
                    for z in range(z0, z1):
                        for y in range(y0, y1):
                            for i in range(x0, x1):
                                dx[p, z, y, i] += share


# Cross-entropy (nn.py): rows of the (N, C) ``x`` against class indices ``t`` (N,), the NumPy
# form's formulas row by row: lse = m + log sum e^(x - m) with m the row's maximum (0 when not
# finite), label smoothing's row mean. The sums are taken in the row's dtype in vector lanes
# (``reassociate``), as accurate as NumPy's pairwise sums; float32 exps are _exp's (~1 ulp of
# NumPy's, vectorized), float64 np.exp's. A NaN in a row makes its lse NaN whatever m is, so
# the maximum may skip NaN (a select, not np.max's NaN-first scan: 2x faster).

def _exp_of(v):
    """e^v in v's dtype: _exp for float32, np.exp for float64 (chosen at compile time)."""
    return np.exp(v)


@overload(_exp_of)
def _exp_of_typed(v):
    if v == types.float32:
        return lambda v: _exp(v)
    return lambda v: np.exp(v)


@compile
def cross_entropy_bad_target(t, ignore, c):
    """The first row whose target is neither ``ignore`` nor a class in [0, c), or -1."""
    for i in range(t.size):
        ti = t[i]
        if ti != ignore and (ti < 0 or ti >= c):
            return i
    return -1


@compile(reassociate=True)
def cross_entropy(x, t, ignore, eps, loss, lse):
    """(Two passes over the rows, the maxima then the exps: as one loop per row the exps'
    loop does not vectorize, 1.6x slower at 1024 x 96.)"""
    n, c = x.shape
    dt = x.dtype.type
    zero = dt(0.0)
    keep, smooth, inv_c = dt(1.0 - eps), dt(eps), dt(1.0 / c)
    for i in range(n):
        row = x[i]
        m = row[0]
        for j in range(1, c):
            v = row[j]
            m = v if v > m else m  # noqa: FURB136 (a select: vectorizes)
        lse[i] = m if math.isfinite(m) else zero
    for i in range(n):
        row = x[i]
        m = lse[i]
        s = zero
        for j in range(c):
            s += _exp_of(row[j] - m)
        li = m + np.log(s)
        lse[i] = li
        ti = t[i]
        if ti == ignore:
            loss[i] = zero
            continue
        r = li - row[ti]
        if eps:
            s = zero
            for j in range(c):
                s += row[j]
            r = keep * r + smooth * (li - s * inv_c)
        loss[i] = r


@compile
def cross_entropy_backward(g, x, t, lse, ignore, eps, d):
    """d = g_i (e^(x - lse) - eps / C - (1 - eps) onehot(t_i)), times 0 on ignored rows (as
    the NumPy form multiplies: inf and NaN there stay NaN)."""
    n, c = x.shape
    dt = x.dtype.type
    smooth = dt(eps / c)
    hit = dt(1.0 - eps)
    for i in range(n):
        row, out, li = x[i], d[i], lse[i]
        ti = t[i]
        gi = dt(0.0) if ti == ignore else g[i]
        for j in range(c):
            out[j] = (_exp_of(row[j] - li) - smooth) * gi
        if ti != ignore:
            out[ti] = (_exp_of(row[ti] - li) - smooth - hit) * gi
