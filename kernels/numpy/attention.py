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
P from the saved lse. float16/bfloat16 compute in float32 and round once, as the GPU kernels.
"""

from __future__ import annotations

import functools
import math

import numpy as np

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
    out = np.empty((b, h, length, d), acc)
    lse = np.empty((b, h, length), acc)
    scale = acc(scale)
    kt = _transposed(kf)
    bq = _blocks(b * h, length, source)[0]
    for i0 in range(0, length, bq):
        i1 = min(length, i0 + bq)
        qs = np.multiply(qf[..., i0:i1, :], scale, dtype=acc)
        o, m, total = _softmax_block(qs, kt, vf, i0, i1, causal, rowwise=False)
        if not total.min() >= _TINY_TOTAL:  # (also NaN: the row path says where it comes from)
            o, m, total = _softmax_block(qs, kt, vf, i0, i1, causal, rowwise=True)
        np.divide(o, total, out=out[..., i0:i1, :])
        lse[..., i0:i1] = (m + np.log(total))[..., 0]
    return _back(out, q), lse


def _empty_in_layout_of(a, shape: tuple, dtype) -> np.ndarray:
    """An array of ``shape`` whose memory runs in ``a``'s dimension order (a dense array,
    viewed back): q, k, v sliced out of a fused (B, T, 3, H, D) projection and transposed to
    (B, H, T, D) get gradients laid out (B, T, H, D), which the transpose and reshape on the
    way back to the projection then view instead of copying (as PyTorch's empty_like keeps
    the input's dimension order)."""
    order = sorted(range(len(shape)), key=lambda i: -abs(a.strides[i]))
    dense = np.empty(tuple(shape[i] for i in order), dtype)
    return dense.transpose(np.argsort(order))


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
    lsef = np.asarray(lse, dtype=acc)[..., None]
    delta = np.einsum("...ld,...ld->...l", gf, of)[..., None]
    dq = _empty_in_layout_of(q, (b, h, length, d), acc)
    dk = _empty_in_layout_of(k, (b, h, source, d), acc)
    dv = _empty_in_layout_of(v, (b, h, source, d), acc)
    scale = acc(scale)
    kt, vt = _transposed(kf), _transposed(vf)
    bq, bk = _blocks(b * h, length, source)
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
