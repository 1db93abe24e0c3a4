"""Compiled loops (kernels/numpy/jit.py) for the CPU attention's whole-score-matrix path
(kernels/numpy/attention.py, Note [Whole score matrix]): the passes over the (L, S) scores
that NumPy runs as several broadcasts (the exponential, a causal mask, row sums and the
normalisation; the backward's dS = P (dP - delta)) in one, and the transposed copies of the
keys and values with the scale folded in.

Note [Compiled exp in the softmax]: for float32 the softmax takes its exponential from
nn_loops' ``_exp`` (a vectorized polynomial, ~1 ulp, NaN and inf kept) inside the pass that
sums and normalises the rows, and with a causal mask only for the keys a query sees (about
half the scores at the GPT step's T = 64): where NumPy's SIMD exp has only AVX2 (an AMD
EPYC, Zen 3: ~1.5-3 ns an element) the fused pass takes 375 us against 830 for np.exp
followed by ``normalize_rows`` over the GPT step's (64, 64, 64) scores. float64 keeps NumPy's
exp and ``normalize_rows``.

Each computes what the NumPy form in attention.py computes, in float32 or float64 (whichever
the arrays hold); results are written into the given outputs.
"""

from __future__ import annotations

import numpy as np

from .jit import compile
from .nn_loops import _exp


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


@compile(inline=True)
def _close_row(row, end, r):
    """The end of a softmax row whose first ``end`` entries hold exps: those scaled by ``r``
    (1 / their sum), the rest (masked keys) set to 0."""
    for j in range(end, row.shape[0]):
        row[j] = 0
    for j in range(end):
        row[j] *= r


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
            total[n, i] = acc
            _close_row(row, end, one / acc)


@compile
def scaled_ds(ds, delta, p):
    """ds = (ds - delta) * p in place: ``ds`` and ``p`` (N, L, S), ``delta`` (N, L)."""
    n0, length, source = ds.shape
    for n in range(n0):
        for i in range(length):
            d = delta[n, i]
            for j in range(source):
                ds[n, i, j] = (ds[n, i, j] - d) * p[n, i, j]


@compile(reassociate=True)
def softmax_rows(s, shift, causal, total):
    """Each row of the float32 scores ``s`` (N, L, S) replaced by exp(s - shift) divided by
    its sum, the sum written to ``total`` (N, L); with ``causal``, row i takes keys j <= i
    only and the rest of the row is set to 0 without its exp being taken (Note [Compiled exp
    in the softmax]). ``shift``: a float32 subtracted from every score (0 for none)."""
    n0, length, source = s.shape
    one = np.float32(1.0)
    for n in range(n0):
        for i in range(length):
            end = min(i + 1, source) if causal else source
            row = s[n, i]
            acc = np.float32(0.0)
            for j in range(end):
                e = _exp(row[j] - shift)
                row[j] = e
                acc += e
            total[n, i] = acc
            _close_row(row, end, one / acc)
