"""Connectionist temporal classification over NumPy arrays: the forward (alpha) and backward
(beta) recursions in log space and the gradient, as PyTorch's kernels compute them
(ctc_loss and ctc_loss_backward, aten/src/ATen/native/LossCTC.cpp), vectorized over the batch
and the extended label sequence, one step per time index.

These are host kernels, as decompositions.py's: autograd/ops/ctc.py runs them on the CPU's
arrays and, for a CUDA tensor, on a host copy. They are not part of the per-backend contract.
They compute in float64 whatever the input's dtype.

The arguments: ``log_probs`` (T, N, C); ``labels`` (N, S) int64, sample n's targets in its
first ``target_lengths[n]`` entries (already checked to be classes); ``input_lengths`` and
``target_lengths`` (N,) int64, checked to lie in [0, T] and [0, S]. Sample n's extended label
sequence l' has 2 S_n + 1 entries, blank, l_1, blank, l_2, ..., blank; a path moves from
position s to s, s + 1, or s + 2 where l'_{s+2} differs from l'_s.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ctc_loss", "ctc_loss_backward"]


def _extended(log_probs: np.ndarray, labels: np.ndarray, blank: int) -> tuple:
    """(lp, ext, skip, lpe): the float64 log-probabilities (T, N, C), the extended label
    sequences (N, L), where a path may reach position s from s - 2 (N, L), and each position's
    log-probability at each time, lp[t, n, l'_s] (T, N, L)."""
    lp = np.asarray(log_probs, dtype=np.float64)
    n, s = labels.shape
    ext = np.full((n, 2 * s + 1), blank, dtype=np.int64)
    ext[:, 1::2] = labels
    skip = np.zeros(ext.shape, dtype=bool)
    skip[:, 2:] = ext[:, 2:] != ext[:, :-2]  # (never at a blank: l'_s and l'_{s-2} are blanks)
    lpe = np.take_along_axis(lp, np.broadcast_to(ext, (lp.shape[0],) + ext.shape), axis=2)
    return lp, ext, skip, lpe


def _shifted(a: np.ndarray, k: int) -> np.ndarray:
    """a[:, s - k] at each position s (k < 0: s + |k|), -inf where that is outside."""
    out = np.full_like(a, -np.inf)
    if k > 0:
        out[:, k:] = a[:, :-k]
    else:
        out[:, :k] = a[:, -k:]
    return out


def _logaddexp3(a, b, c):
    return np.logaddexp(np.logaddexp(a, b), c)


def ctc_loss(log_probs, labels, input_lengths, target_lengths, blank: int) -> tuple:
    """(nll (N,), log_alpha (T, N, L)): each sample's negative log-likelihood, -log of the
    summed probability of the alignments of its targets to its first ``input_lengths[n]``
    steps (inf where there is none), and the forward variables the backward needs."""
    lp, ext, skip, lpe = _extended(log_probs, labels, blank)
    t_max, n = lp.shape[:2]
    length = ext.shape[1]
    il, tl = np.asarray(input_lengths), np.asarray(target_lengths)
    log_alpha = np.full((t_max, n, length), -np.inf)
    with np.errstate(invalid="ignore"):  # (inf - inf in log-probabilities: NaN, silently)
        if t_max:
            log_alpha[0, :, 0] = lpe[0, :, 0]
            if length > 1:
                log_alpha[0, :, 1] = np.where(tl > 0, lpe[0, :, 1], -np.inf)
        # Positions past a sample's sequence and steps past its input fill too; the first
        # never feed back (alpha only moves forward in s) and neither is read.
        for t in range(1, t_max):
            prev = log_alpha[t - 1]
            log_alpha[t] = _logaddexp3(prev, _shifted(prev, 1),
                                       np.where(skip, _shifted(prev, 2), -np.inf)) + lpe[t]
        ll = np.where(tl == 0, 0.0, -np.inf)  # no input: only the empty target is aligned
        if t_max:
            rows, last, end = np.arange(n), np.maximum(il - 1, 0), 2 * tl
            at_end = log_alpha[last, rows, end]
            before = np.where(tl > 0, log_alpha[last, rows, np.maximum(end - 1, 0)], -np.inf)
            ll = np.where(il > 0, np.logaddexp(at_end, before), ll)
    return -ll, log_alpha


def ctc_loss_backward(grad, log_probs, labels, input_lengths, target_lengths, nll, log_alpha,
                      blank: int, zero_infinity: bool) -> np.ndarray:
    """The gradient (T, N, C) float64 of sum_n grad[n] nll[n] as PyTorch's ctc_loss_backward
    gives it: exp(lp[t, c]) - exp(lcab[t, c] + nll - lp[t, c]), times grad[n], where lcab is
    the log of the summed alpha * beta over the positions of class c; zero at the steps past
    a sample's input, and over a whole sample whose loss is infinite when ``zero_infinity``.

    This is the derivative with respect to logits behind a log_softmax, not with respect to
    ``log_probs`` themselves: the exp(lp) term sums to 1 over the classes at each step, as
    the true derivative's other term sums to -1, and log_softmax's backward removes such a
    term (PyTorch's kernels assume log_probs come from a log_softmax)."""
    lp, ext, skip, lpe = _extended(log_probs, labels, blank)
    t_max, n, c = lp.shape
    il, tl = np.asarray(input_lengths), np.asarray(target_lengths)
    nll = np.asarray(nll, dtype=np.float64)
    rows, last, end = np.arange(n), il - 1, 2 * tl
    skip_next = np.zeros_like(skip)  # position s + 2 reachable from s
    skip_next[:, :-2] = skip[:, 2:]
    log_beta = np.full_like(log_alpha, -np.inf)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for t in range(t_max - 1, -1, -1):
            if t + 1 < t_max:
                nxt = log_beta[t + 1]
                step = _logaddexp3(nxt, _shifted(nxt, -1),
                                   np.where(skip_next, _shifted(nxt, -2), -np.inf)) + lpe[t]
                log_beta[t] = np.where((t < last)[:, None], step, -np.inf)
            ends = rows[last == t]  # the samples whose last step is t start here
            log_beta[t, ends, end[ends]] = lpe[t, ends, end[ends]]
            ends = ends[tl[ends] > 0]
            log_beta[t, ends, end[ends] - 1] = lpe[t, ends, end[ends] - 1]
        # lcab[t, n, c] = logsumexp over the positions s with l'_s = c of alpha + beta
        ab = log_alpha + log_beta
        top = ab.max(axis=2, keepdims=True) if ab.shape[2] else np.zeros(ab.shape[:2] + (1,))
        top = np.where(np.isfinite(top), top, 0.0)
        onehot = (ext[:, :, None] == np.arange(c)).astype(np.float64)  # (N, L, C)
        lcab = np.log(np.einsum("tns,nsc->tnc", np.exp(ab - top), onehot)) + top
        out = (np.exp(lp) - np.exp(lcab + nll[None, :, None] - lp)) * \
            np.asarray(grad, dtype=np.float64)[None, :, None]
    out[np.arange(t_max)[:, None] >= il[None, :]] = 0.0  # steps past each sample's input
    if zero_infinity:
        out[:, nll == np.inf] = 0.0
    return out
