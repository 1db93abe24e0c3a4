"""Fused scaled dot-product attention over NumPy arrays (the CPU twin of
kernels/triton/attention.py: same names, signatures and results).

q (B, H, L, D), k (B, H, S, D), v (B, H, S, D), any strides; ``causal``: query i sees keys
j <= i (the top-left aligned mask, as PyTorch's ``is_causal``):

    P = softmax(q k^T * scale (+ -inf above the diagonal)),  out = P v,
    lse = log(sum_j exp(q k_j * scale)) per query row
    backward, delta = rowsum(g * out):
    dv = P^T g,  dS = P * (g v^T - delta),  dq = dS k * scale,  dk = dS^T q * scale

Blocked over BLAS: query rows in blocks of at most ``BLOCK_Q``, keys in blocks of ``BLOCK_K``,
one ``np.matmul`` over all (batch, head) pairs per block pair with an online softmax (a running
maximum, one for the whole score block unless a row lies far below it, and row sums; the
partial output rescaled when the maximum moves), so the score matrix
is never held for more than one block pair: memory is O(B H (L + S) D) plus a block of scores.
Key blocks wholly above the causal diagonal are skipped. The backward recomputes each block's
P from the saved lse. Where one block pair holds all the scores (short sequences), the softmax
is taken whole instead, and P, when small, is handed to the backward (Note [Whole score
matrix]). float16/bfloat16 compute in float32 and round once, as the GPU kernels. The output
and the gradients are laid out as the inputs (``_empty_in_layout_of``).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import jit
from .bf16 import BF16Array, round_
from .reduction import sum as _sum  # (row sums: BLAS products with ones)

__all__ = ["attention", "attention_backward"]

BLOCK_K = 512
BLOCK_Q = 512
# score elements one block pair may hold over all (batch, head) pairs: bounds the working set
SCORE_BUDGET = 1 << 21


def _up(a) -> np.ndarray:
    if type(a) is BF16Array:
        return a.view(np.ndarray)
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _back(r, like) -> np.ndarray:
    if type(like) is BF16Array:
        return round_(np.asarray(r, dtype=np.float32)).view(BF16Array)
    return np.asarray(r).astype(like.dtype, copy=False)


def _check(op: str, q, k, v) -> None:
    for name, a in (("query", q), ("key", k), ("value", v)):
        if a.ndim != 4:
            raise ValueError(f"{op}: expected 4-D (B, H, T, D) arrays, got {name} of shape "
                             f"{tuple(a.shape)}")
        if type(a) is not BF16Array and a.dtype.kind != "f":
            raise TypeError(f"{op}: expected floating point arrays, got {name} of {a.dtype}")
    if q.shape[:2] != k.shape[:2] or k.shape != v.shape or q.shape[3] != k.shape[3]:
        raise ValueError(f"{op}: expected q (B, H, L, D) and k, v (B, H, S, D), got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")


def _blocks(bh: int, length: int, source: int) -> tuple[int, int]:
    bk = max(1, min(source, BLOCK_K))
    bq = max(1, min(length, BLOCK_Q, SCORE_BUDGET // max(1, bh * bk)))
    return bq, bk


def _key_end(i0: int, i1: int, source: int, causal: bool) -> int:
    """One past the last key a query block [i0, i1) sees."""
    return min(source, i1) if causal else source


@functools.lru_cache(maxsize=32)
def _causal_bias(i0: int, i1: int, j0: int, j1: int, acc) -> np.ndarray | None:
    """0 where key j may be seen by query i (j <= i), -inf elsewhere; None when all may.
    Cached (read-only): a step's every layer asks for the same few block pairs."""
    if j1 - 1 <= i0:
        return None
    rows = np.arange(i0, i1)[:, None]
    cols = np.arange(j0, j1)[None, :]
    bias = np.where(cols <= rows, 0.0, -np.inf).astype(acc)
    bias.flags.writeable = False
    return bias


def _masked_scores(qs, kt, i0: int, i1: int, j0: int, j1: int, causal: bool) -> np.ndarray:
    """The scores of queries [i0, i1) (``qs``, scaled) against keys [j0, j1) (``kt``, the
    keys transposed (..., D, S) and contiguous), -inf above the causal diagonal.

    Note [Keys transposed once]: q k^T with k as it comes is a BLAS "NT" product, which
    OpenBLAS runs ~1.6x slower than the "NN" one at attention's sizes (a 64 x 32 x 64
    product: 4.5 against 2.8 us); the keys (and, for backward, the values) are copied once,
    transposed, for all blocks."""
    s = np.matmul(qs, kt[..., j0:j1])
    if causal:
        bias = _causal_bias(i0, i1, j0, j1, s.dtype.type)
        if bias is not None:
            s += bias
    return s


def _transposed(a) -> np.ndarray:
    """(..., T, D) -> a contiguous (..., D, T) copy (Note [Keys transposed once])."""
    return np.ascontiguousarray(a.swapaxes(-1, -2))


# A row whose softmax sum, shifted by a block-wide maximum, falls below this (its maximum lies
# > 20 below the block's) has its query block redone with row maxima: far below, terms would be
# lost to float32 underflow (e^-87), and lse = m + log(total) would round at |log total|'s
# scale instead of at the row maximum's.
_TINY_TOTAL = 1e-9


def _softmax_block(qs, kt, vf, i0: int, i1: int, causal: bool, rowwise: bool):
    """(o, m, total) of the online softmax over all key blocks for queries [i0, i1) (``qs``
    the scaled queries, ``kt`` the keys transposed): o the unnormalised P v, m the shift (per
    row, or one number for the whole score block), total the row sums of exp(s - m),
    (..., i1 - i0, 1).

    Shifting by the block's one maximum instead of each row's makes the max one contiguous
    reduction and the shift a scalar subtract (a row max over rows of 64 is 30x a pass in
    NumPy): as exact unless some row's maximum lies more than ~20 below the block's, which the
    caller detects from that row's total (``_TINY_TOTAL``) and redoes ``rowwise``. The first
    key block sets o, m and total; later ones rescale them (with one key block, the usual
    case for short sequences, nothing is rescaled or zero-filled)."""
    source = kt.shape[-1]
    bk = _blocks(math.prod(qs.shape[:-2]), i1 - i0, source)[1]
    o = m = total = None
    for j0 in range(0, _key_end(i0, i1, source, causal), bk):
        j1 = min(source, j0 + bk)
        s = _masked_scores(qs, kt, i0, i1, j0, j1, causal)
        m_block = s.max(axis=-1, keepdims=True) if rowwise else s.max()
        m_new = m_block if m is None else np.maximum(m, m_block)
        np.exp(np.subtract(s, m_new, out=s), out=s)
        sums = _sum(s, (s.ndim - 1,), True)  # row sums
        pv = np.matmul(s, vf[..., j0:j1, :])
        if o is None:
            o, total = pv, sums
        else:
            alpha = np.exp(m - m_new)
            total *= alpha
            total += sums
            o *= alpha
            o += pv
        m = m_new
    return o, m, total


# The kernels index (B, H, T, D) arrays as they come: np.matmul takes each (T, D) matrix with
# its own row stride (BLAS's leading dimension), so the strided q, k, v views of a fused qkv
# projection are read in place, not copied (a reshape to (B H, T, D) would copy them).

def attention(q, k, v, scale: float, causal: bool):
    """(out, lse): out (B, H, L, D) in q's dtype, lse (B, H, L) float32 (float64 for float64).
    A query with no keys (S == 0) gets zeros and lse -inf."""
    _check("attention", q, k, v)
    qf, kf, vf = _up(q), _up(k), _up(v)
    acc = np.float64 if qf.dtype == np.float64 else np.float32
    b, h, length, d = q.shape
    source = k.shape[2]
    if not source or not length:
        return _back(np.zeros((b, h, length, d), acc), q), np.full((b, h, length), -np.inf, acc)
    out = _empty_in_layout_of(q, (b, h, length, d), acc)
    scale = acc(scale)
    bq, bk = _blocks(b * h, length, source)
    if bq >= length and bk >= source:
        p, lse = _whole_softmax(qf, kf, scale, causal, acc)
        if p is not None:
            np.matmul(p, vf, out=out)
            if _keeps_probs(length, source, d):
                lse = lse.view(_SavedLSE)
                lse.probs = p
            return _back(out, q), lse
    lse = np.empty((b, h, length), acc)
    kt = _transposed(kf)
    for i0 in range(0, length, bq):
        i1 = min(length, i0 + bq)
        qs = np.multiply(qf[..., i0:i1, :], scale, dtype=acc)
        o, m, total = _softmax_block(qs, kt, vf, i0, i1, causal, rowwise=False)
        if not total.min() >= _TINY_TOTAL:  # (also NaN: the row path says where it comes from)
            o, m, total = _softmax_block(qs, kt, vf, i0, i1, causal, rowwise=True)
        np.divide(o, total, out=out[..., i0:i1, :])
        lse[..., i0:i1] = (m + np.log(total))[..., 0]
    return _back(out, q), lse


# Note [Whole score matrix]: when one block pair holds all the scores (short sequences: the GPT
# step's T = 64 over 16 x 4 heads), there is nothing to be online about, and the softmax is
# taken whole:
# - the scores are shifted only when their maximum lies more than _NO_SHIFT from zero (exp
#   then stays far from overflow and from underflow of the rows that hold the maximum, and a
#   pass over the scores is saved); a row whose sum still falls below _TINY_TOTAL sends the
#   call to the blocked path, with its per-row shift;
# - P itself is formed (rows times 1/sum: one pass over the scores, where dividing the
#   output instead broadcasts over rows of D) and P v written straight into the output;
# - with the compiled loops (attention_loops.py) the causal mask is applied in the pass that
#   takes the exp (float32: Note [Compiled exp in the softmax], the masked scores get no exp)
#   or right after it (float64), fused with the shift, the row sums and the normalisation (the
#   mask costs no pass of its own; the maximum then also covers masked scores, and only where
#   it calls for a shift are they masked first and the maximum taken again), and the keys are
#   copied transposed with the scale folded in;
# - where P takes no more memory than q, k, v and out together (``_keeps_probs``), it rides
#   to the backward on the returned lse (``_SavedLSE.probs``): the backward then does not
#   recompute it (a product and four passes over the scores) and needs four products
#   instead of five. The backward takes it once and drops it: a second backward (under
#   retain_graph, or a gradcheck's repeats) recomputes P by this same function, so that it
#   gets the same bits.
_NO_SHIFT = 20.0


def _keeps_probs(length: int, source: int, d: int) -> bool:
    """Whether the whole softmax (L x S per head) takes no more memory than q, k, v and out
    (Note [Whole score matrix])."""
    return length * source <= 2 * (length + source) * d


class _SavedLSE(np.ndarray):
    """The forward's lse, carrying the softmax P (``probs``) to the backward, or None."""

    probs = None


def _transposed_scaled(loops, a, scale, acc) -> np.ndarray:
    """(..., T, D) -> a contiguous (..., D, T) copy times ``scale`` (Note [Keys transposed
    once])."""
    out = np.empty(a.shape[:2] + a.shape[:1:-1], acc)
    if loops is not None:
        loops.transpose_scaled(a, scale, out)
    else:
        np.multiply(a.swapaxes(-1, -2), scale, out=out)
    return out


def _whole_softmax(qf, kf, scale, causal: bool, acc):
    """(P, lse) for all queries against all keys in one block, P the softmax (B, H, L, S);
    (None, None) when some row's sum falls below _TINY_TOTAL (the caller then runs the
    blocked path, with its row fallback). Note [Whole score matrix]."""
    b, h, length = qf.shape[:3]
    source = kf.shape[2]
    loops = jit.loops("attention_loops")
    s = np.matmul(qf, _transposed_scaled(loops, kf, scale, acc))
    bias = _causal_bias(0, length, 0, source, s.dtype.type) if causal else None
    masked = bias is not None and loops is None  # (the loops mask after the exp)
    if masked:
        s += bias
    shift = s.max()
    if not -_NO_SHIFT <= shift <= _NO_SHIFT and bias is not None and not masked:
        s += bias  # shift by the largest score a query sees, not by a masked one
        shift = s.max()
    if -_NO_SHIFT <= shift <= _NO_SHIFT:
        shift = 0
    # float32 with the loops: exp, shift, mask and sums in one pass (Note [Compiled exp in the
    # softmax], attention_loops.py)
    fused = loops is not None and acc is np.float32
    if not fused:
        if shift:
            s -= shift
        np.exp(s, out=s)
    if loops is not None:
        total = np.empty((b, h, length), acc)
        rows, sums = s.reshape(-1, length, source), total.reshape(-1, length)
        if fused:
            loops.softmax_rows(rows, acc(shift), causal, sums)
        else:
            loops.normalize_rows(rows, causal, sums, acc(1))
        if not total.min() >= _TINY_TOTAL:
            return None, None
        lse = np.log(total, out=total)
    else:
        total = _sum(s, (3,), True)
        if not total.min() >= _TINY_TOTAL:
            return None, None
        lse = np.log(total[..., 0])
        s *= np.reciprocal(total, out=total)
    if shift:
        lse += shift
    return s, lse


def _empty_in_layout_of(a, shape: tuple, dtype) -> np.ndarray:
    """An array of ``shape`` whose memory runs in ``a``'s dimension order (a dense array,
    viewed back): q, k, v sliced out of a fused (B, T, 3, H, D) projection and transposed to
    (B, H, T, D) get gradients laid out (B, T, H, D), which the transpose and reshape on the
    way back to the projection then view instead of copying (as PyTorch's empty_like keeps
    the input's dimension order); so does the output, which the block's
    ``y.transpose(1, 2).reshape(B, T, H D)`` then views."""
    strides = a.strides
    order = sorted(range(len(shape)), key=lambda i: -abs(strides[i]))
    dense = np.empty([shape[i] for i in order], dtype)
    back = [0] * len(order)
    for position, i in enumerate(order):
        back[i] = position
    return dense.transpose(back)


def _accumulate(dst: np.ndarray, a, b, first: bool) -> None:
    """dst = a @ b on ``dst``'s first contribution, dst += a @ b after it."""
    if first:
        np.matmul(a, b, out=dst)
    else:
        dst += np.matmul(a, b)


def attention_backward(g, q, k, v, out, lse, scale: float, causal: bool):
    """(dq, dk, dv) of attention, each in q's dtype, from the output gradient g (B, H, L, D),
    the forward's output and lse."""
    _check("attention_backward", q, k, v)
    b, h, length, d = q.shape
    source = k.shape[2]
    qf, kf, vf = _up(q), _up(k), _up(v)
    acc = np.float64 if qf.dtype == np.float64 else np.float32
    gf = _up(g).astype(acc, copy=False)
    of = _up(out).astype(acc, copy=False)
    dq = _empty_in_layout_of(q, (b, h, length, d), acc)
    dk = _empty_in_layout_of(k, (b, h, source, d), acc)
    dv = _empty_in_layout_of(v, (b, h, source, d), acc)
    scale = acc(scale)
    bq, bk = _blocks(b * h, length, source)
    if source and length and bq >= length and bk >= source and _keeps_probs(length, source, d):
        p = getattr(lse, "probs", None)
        if p is not None and p.shape == (b, h, length, source) and p.dtype == acc:
            lse.probs = None  # used once (Note [Whole score matrix])
        else:
            p = _whole_softmax(qf, kf, scale, causal, acc)[0]
        if p is not None:
            _whole_backward(gf, qf, kf, vf, of, p, scale, dq, dk, dv)
            return _back(dq, q), _back(dk, q), _back(dv, q)
    lsef = np.asarray(lse, dtype=acc)[..., None]
    delta = np.einsum("...ld,...ld->...l", gf, of)[..., None]
    kt, vt = _transposed(kf), _transposed(vf)
    seen = set()  # the key blocks given a first contribution (others stay zero: unseen keys)
    for i0 in range(0, length if source else 0, bq):
        i1 = min(length, i0 + bq)
        qi, gi = qf[..., i0:i1, :], gf[..., i0:i1, :]
        qs = np.multiply(qi, scale, dtype=acc)
        lse_i, delta_i = lsef[..., i0:i1, :], delta[..., i0:i1, :]
        for j0 in range(0, _key_end(i0, i1, source, causal), bk):
            j1 = min(source, j0 + bk)
            first_k = j0 not in seen
            seen.add(j0)
            p = _masked_scores(qs, kt, i0, i1, j0, j1, causal)
            np.exp(np.subtract(p, lse_i, out=p), out=p)
            _accumulate(dv[..., j0:j1, :], p.swapaxes(-1, -2), gi, first_k)
            ds = np.matmul(gi, vt[..., j0:j1])
            ds -= delta_i
            ds *= p
            _accumulate(dq[..., i0:i1, :], ds, kf[..., j0:j1, :], j0 == 0)
            # dS^T (q scale): the scaled queries carry dk's factor
            _accumulate(dk[..., j0:j1, :], ds.swapaxes(-1, -2), qs, first_k)
    dq *= scale
    for j0 in range(0, source, bk):  # keys no query saw (causal, S > L): no gradient
        if j0 not in seen:
            dk[..., j0:j0 + bk, :] = 0
            dv[..., j0:j0 + bk, :] = 0
    if not source:
        dq[...] = 0
    return _back(dq, q), _back(dk, q), _back(dv, q)


def _whole_backward(gf, qf, kf, vf, of, p, scale, dq, dk, dv) -> None:
    """dq, dk, dv from the softmax P (Note [Whole score matrix]): dv = P^T g, and scale dS =
    P (g (scale v)^T - scale rowsum(g * out)), whose products with k and q are dq and dk."""
    loops = jit.loops("attention_loops")
    delta = np.vecdot(gf, of)
    delta *= scale
    np.matmul(p.swapaxes(-1, -2), gf, out=dv)
    ds = np.matmul(gf, _transposed_scaled(loops, vf, scale, p.dtype))
    if loops is not None:
        length, source = p.shape[-2:]
        loops.scaled_ds(ds.reshape(-1, length, source), delta.reshape(-1, length),
                        p.reshape(-1, length, source))
    else:
        ds -= delta[..., None]
        ds *= p
    np.matmul(ds, kf, out=dq)
    np.matmul(ds.swapaxes(-1, -2), qf, out=dk)
