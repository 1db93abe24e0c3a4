"""Compiled loops (kernels/numpy/jit.py) for the CPU attention's whole-score-matrix path
(kernels/numpy/attention.py, Note [Whole score matrix]): the passes over the (L, S) scores
that NumPy runs as several broadcasts (a causal mask, row sums and the normalisation; the
backward's dS = P (dP - delta)) in one, and the transposed copies of the keys and values
with the scale folded in. The exponential stays NumPy's (its SIMD exp is faster than a
compiled polynomial here).

Each computes what the NumPy form in attention.py computes, in float32 or float64 (whichever
the arrays hold); results are written into the given outputs.
"""

from __future__ import annotations

from .jit import compile


@compile
def transpose_scaled(a, scale, out):
    """out[n, h, j, i] = a[n, h, i, j] * scale: ``a`` (N, H, T, D) in any strides (the head
    views of a fused projection), ``out`` (N, H, D, T) contiguous."""
    n0, n1, t, d = a.shape
    for n in range(n0):
        for h in range(n1):
            for j in range(d):
                for i in range(t):
                    out[n, h, j, i] = a[n, h, i, j] * scale


@compile(reassociate=True)
def normalize_rows(e, causal, total, one):
    """Each row of ``e`` (N, L, S; exp of the scores) divided by its sum, written to ``total``
    (N, L); with ``causal``, row i sums keys j <= i only and the rest of the row is set to 0
    (the causal mask applied after the exp instead of as a -inf bias before it). ``one``: 1
    in e's dtype."""
    n0, length, source = e.shape
    for n in range(n0):
        for i in range(length):
            end = min(i + 1, source) if causal else source
            row = e[n, i]
            acc = one - one
            for j in range(end):
                acc += row[j]
            for j in range(end, source):
                row[j] = 0
            total[n, i] = acc
            r = one / acc
            for j in range(end):
                row[j] *= r


@compile
def scaled_ds(ds, delta, p):
    """ds = (ds - delta) * p in place: ``ds`` and ``p`` (N, L, S), ``delta`` (N, L)."""
    n0, length, source = ds.shape
    for n in range(n0):
        for i in range(length):
            d = delta[n, i]
            for j in range(source):
                ds[n, i, j] = (ds[n, i, j] - d) * p[n, i, j]
