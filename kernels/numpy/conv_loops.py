"""Compiled loops (kernels/numpy/jit.py) for the convolution kernels (conv.py): col2im, the
input gradient's scatter of the column gradients back onto the input, and the forward's pass
from the GEMM's channels-last result to channels first.

NumPy's form of col2im is one strided add per tap into a zero-padded channels-last gradient,
then a cropping transpose to channels first: KH*KW passes over an array the size of the padded
input, each moving runs of C values, and a transpose. The loop makes one pass over the column
gradients, image by image, adding into a padded channels-last buffer of one image (small enough
to stay in cache), and writes that image's gradient channels first from it: 3.5-5.5x faster
than the NumPy adds, and fast enough that a stride-1 input gradient is cheaper this way than as
a forward convolution of the output gradient (conv.py's NumPy form).
"""

from __future__ import annotations

import numpy as np

from .jit import compile


@compile
def col2im(d, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, Hp, Wp, dx):
    """dx (N, C, H, W) = the sum over the taps of the column gradients
    d (groups, N*OH*OW, KH*KW*C/groups), each tap's slice added at its input position (kh*dh
    + oh*sh, kw*dw + ow*sw) of the (Hp, Wp) padded input, whose rows pt.. and columns pl.. are
    the input. Every element of dx is written."""
    N, C, H, W = dx.shape
    G = d.shape[0]
    Cg = C // G
    buf = np.empty((Hp, Wp * C), dtype=dx.dtype)  # one image's gradient, padded, channels last
    # with one group and no dilation, a tap row's KW slices are adjacent in both d and buf: one
    # run of KW*C values (a loop long enough to vectorize, where C may be 16 or fewer)
    merged = G == 1 and dw == 1
    run = KW * Cg if merged else Cg
    n_runs = 1 if merged else KW
    for n in range(N):
        buf[:] = 0
        for oh in range(OH):
            for ow in range(OW):
                row = (n * OH + oh) * OW + ow
                for gi in range(G):
                    src = d[gi, row]
                    for kh in range(KH):
                        tgt = buf[oh * sh + kh * dh]
                        for j in range(n_runs):
                            # slices, not offset indexing: their indices are known non-negative
                            # (no wraparound checks), so the adds vectorize
                            t0 = (ow * sw + j * dw) * C + gi * Cg
                            s0 = (kh * KW + j) * Cg
                            t = tgt[t0:t0 + run]
                            s = src[s0:s0 + run]
                            for c in range(run):
                                t[c] += s[c]
        inner = buf.reshape(Hp, Wp, C)[pt:pt + H, pl:pl + W]
        for c in range(C):
            plane = dx[n, c]
            for h in range(H):
                r = inner[h]
                out = plane[h]
                for w in range(W):
                    out[w] = r[w, c]


@compile
def to_channels_first(y, bias, out):
    """out (N, O, OH, OW) = the GEMM's channels-last result y (groups, N*OH*OW, O/groups) plus
    ``bias`` (O,) (empty: none), written one output plane at a time from one image's rows (in
    cache): 2-2.5x faster than NumPy's transposing add, which walks y with a stride of O."""
    N, O = out.shape[0], out.shape[1]
    G, NL, Og = y.shape
    L = NL // N
    planes = out.reshape(N, O, L)
    for n in range(N):
        for gi in range(G):
            rows = y[gi, n * L:(n + 1) * L]
            for o in range(Og):
                dst = planes[n, gi * Og + o]
                for i in range(L):
                    dst[i] = rows[i, o]
                if bias.size:  # (added apart: no bias leaves y's -0.0 as it is)
                    b = bias[gi * Og + o]
                    for i in range(L):
                        dst[i] += b


@compile
def im2col(x, KH, KW, sh, sw, dh, dw, pt, pl, Hp, Wp, OH, OW, cols):
    """cols (N*OH*OW, KH*KW*C) = every output position's receptive field of x (N, C, H, W),
    taps in (kh, kw, c) order (one group), zeros where a tap falls in the (Hp, Wp) padding.
    Image by image: x's image goes channels last into a zero-bordered buffer (in cache), and
    each column row is KH runs of KW*C values copied from it (KH*KW runs of C with dilation)."""
    N, C, H, W = x.shape
    buf = np.zeros((Hp, Wp * C), dtype=cols.dtype)  # (the border stays zero)
    merged = dw == 1
    run = KW * C if merged else C
    n_runs = 1 if merged else KW
    for n in range(N):
        for c in range(C):
            plane = x[n, c]
            for h in range(H):
                src = plane[h]
                dst = buf[pt + h]
                for w in range(W):
                    dst[(pl + w) * C + c] = src[w]
        for oh in range(OH):
            for ow in range(OW):
                row = cols[(n * OH + oh) * OW + ow]
                for kh in range(KH):
                    src = buf[oh * sh + kh * dh]
                    for j in range(n_runs):
                        s0 = (ow * sw + j * dw) * C
                        t0 = (kh * KW + j) * C
                        s = src[s0:s0 + run]
                        t = row[t0:t0 + run]
                        for c in range(run):
                            t[c] = s[c]

