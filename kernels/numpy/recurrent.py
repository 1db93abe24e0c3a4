"""The pointwise part of one LSTM or GRU step, fused: the gates' activations and the state
update (forward), and their derivatives (backward), one pass each.

autograd/ops/recurrent.py runs a recurrent layer's time loop; per step it multiplies the state
by W_hh (one GEMM, ``linalg.matmul``) and hands the rest to these kernels. As separate NumPy
calls that rest is some fifteen passes over (N, H) arrays per step (slicing the gates, three
sigmoids, two tanhs, the products and sums), each costing more in call overhead than in
arithmetic at a batch's few rows; the compiled loops (recurrent_loops) do it in one call. The
NumPy forms here compute the same formulas and stay the reference the loops are tested against
(and what runs where Numba cannot be imported).

Formulas (PyTorch's gate orders; ``b`` is added to the recurrent term, ``x + (rec + b)``):

    LSTM  gates = x + (rec + b) = [a_i a_f a_g a_o],   i, f, o = sigmoid(a_.), g = tanh(a_g)
          c' = f c + i g,   h = o tanh(c')
          backward, dc_t = dc + dh o (1 - tanh(c')^2):
          d a_i = dc_t g i (1 - i),  d a_f = dc_t c f (1 - f),  d a_g = dc_t i (1 - g^2),
          d a_o = dh tanh(c') o (1 - o),  dc_prev = dc_t f
    GRU   r = sigmoid(x_r + (rec + b)_r),  z = sigmoid(x_z + (rec + b)_z),
          n = tanh(x_n + r (rec + b)_n),   h' = n + z (h - n)       [= (1 - z) n + z h]
          backward: dn = dh (1 - z) (1 - n^2),  dr = dn (rec + b)_n r (1 - r),
          dz = dh (h - n) z (1 - z);  dx = [dr dz dn],  drec = [dr dz dn r],  dh_direct = dh z

``saved`` is the forward's activations in the computing dtype (float32 for float16 and
bfloat16, which compute in float32 and round their results once), a tuple of arrays (Note
[Loops that vectorize] in recurrent_loops.py): LSTM ``([i f g o] (N, 4H), tanh(c') (N, H))``,
GRU ``([r z] (N, 2H), n (N, H), (rec + b)_n (N, H))``.
"""

from __future__ import annotations

import numpy as np

from . import jit
from .bf16 import BF16Array, rounded
from .elementwise import unary

__all__ = ["gru_cell", "gru_cell_backward", "lstm_cell", "lstm_cell_backward"]

_ndarray = np.ndarray
_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
# "no array" for the loops: no bias, no gradient
_NO_BIAS = {dt: np.empty((0,), dt) for dt in (_F32, _F64)}
_NONE = {dt: np.empty((0, 0), dt) for dt in (_F32, _F64)}


def _work(dt, arrays):
    """``arrays`` (None stays None) as plain arrays of the computing dtype ``dt`` (float32 for
    float16 and bfloat16): the arrays themselves when they are already."""
    out = []
    for a in arrays:
        if a is not None and (type(a) is not _ndarray or a.dtype is not dt):
            a = (a.view(_ndarray) if type(a) is BF16Array else a).astype(dt)
        out.append(a)
    return out


def _computing(a):
    """The dtype ``a``'s cell computes in: float32 for float16 and bfloat16."""
    if type(a) is BF16Array or a.dtype == _F16:
        return _F32
    if a.dtype not in (_F32, _F64):
        raise TypeError(f"the recurrent cells take floating-point arrays, got {a.dtype}")
    return a.dtype


def _result(r, like):
    """The computed ``r`` in ``like``'s dtype: float16 and bfloat16 rounded once."""
    if type(like) is _ndarray and like.dtype is r.dtype:
        return r
    if type(like) is BF16Array:
        return rounded(r)
    return r.astype(_F16) if like.dtype == _F16 else r


def _check(op: str, x, rec, b, s, gates: int) -> int:
    n, width = x.shape[0], s.shape[1]
    if x.ndim != 2 or x.shape != rec.shape or x.shape != (n, gates * width) or \
            s.shape[0] != n or (b is not None and b.shape != (gates * width,)):
        raise ValueError(f"{op}: expected x and rec ({n}, {gates} * {width}), b "
                         f"({gates} * {width},) or None and the state ({n}, {width}); got x "
                         f"{tuple(x.shape)}, rec {tuple(rec.shape)}, b "
                         f"{None if b is None else tuple(b.shape)}, state {tuple(s.shape)}")
    return width


def _plain(dt, *arrays) -> bool:
    """Whether ``arrays`` are all plain NumPy arrays of dtype ``dt``."""
    for a in arrays:
        if type(a) is not _ndarray or a.dtype is not dt:
            return False
    return True


def _sigmoid(a):
    return unary("sigmoid", np.ascontiguousarray(a))


def lstm_cell(x, rec, b, c):
    """One LSTM step from the gate pre-activations ``x + (rec + b)``: x and rec (N, 4H), any
    strides, b (4H,) or None, c (N, H) the cell state. Returns (h, c', saved), h and c' new
    (N, H) arrays in c's dtype (module docstring)."""
    dt = c.dtype
    if (dt is _F32 or dt is _F64) and _plain(dt, x, rec, c) and (b is None or _plain(dt, b)) \
            and c.ndim == 2 and x.shape == rec.shape == (c.shape[0], 4 * c.shape[1]) \
            and (b is None or b.shape == (x.shape[1],)) \
            and (loops := jit.loops("recurrent_loops")) is not None:
        # each step of a float32/float64 layer: nothing to check further or to convert (a
        # layer runs this ~30 times per sequence, where the wrapper's Python cost rivals the
        # compiled pass's)
        N, H = c.shape
        h, c2, tc, act = (np.empty((N, H), dt), np.empty((N, H), dt), np.empty((N, H), dt),
                          np.empty((N, 4 * H), dt))
        loops.lstm_cell(x, rec, _NO_BIAS[dt] if b is None else b, c, h, c2, act, tc)
        return h, c2, (act, tc)
    H = _check("lstm_cell", x, rec, b, c, 4)
    dt = _computing(c)
    xw, rw, bw, cw = _work(dt, (x, rec, b, c))
    N = xw.shape[0]
    h, c2, tc, act = (np.empty((N, H), dt), np.empty((N, H), dt), np.empty((N, H), dt),
                      np.empty((N, 4 * H), dt))
    if (loops := jit.loops("recurrent_loops")) is not None:
        loops.lstm_cell(xw, rw, _NO_BIAS[dt] if bw is None else bw, cw, h, c2, act, tc)
    else:
        act[...] = xw + (rw if bw is None else rw + bw)
        for j in (0, 1, 3):
            act[:, j * H:(j + 1) * H] = _sigmoid(act[:, j * H:(j + 1) * H])
        np.tanh(act[:, 2 * H:3 * H], out=act[:, 2 * H:3 * H])
        i, f, g, o = (act[:, j * H:(j + 1) * H] for j in range(4))
        np.add(f * cw, i * g, out=c2)
        np.tanh(c2, out=tc)
        np.multiply(o, tc, out=h)
    saved = (act, tc)
    return _result(h, c), _result(c2, c), saved


def lstm_cell_backward(dh, dc, saved, c):
    """The gradients of one ``lstm_cell`` step: ``dh``, ``dc`` (N, H) those of h and c' (None:
    zeros), ``saved`` the forward's, ``c`` its input cell. Returns (dgates (N, 4H), dc_prev
    (N, H)) in c's dtype: the gradients of the gate pre-activations and of c."""
    N, H = c.shape
    act, tc = saved
    dhw, dcw, cw = _work(act.dtype, (dh, dc, c))
    dt = act.dtype
    dgates, dc_prev = np.empty((N, 4 * H), dt), np.empty((N, H), dt)
    if (loops := jit.loops("recurrent_loops")) is not None:
        none = _NONE[dt]
        loops.lstm_cell_backward(none if dhw is None else dhw, none if dcw is None else dcw,
                                 act, tc, cw, dgates, dc_prev)
    else:
        i, f, g, o = (act[:, j * H:(j + 1) * H] for j in range(4))
        dct = np.zeros((N, H), dt) if dcw is None else dcw.copy()
        if dhw is not None:
            dct += dhw * o * (1 - tc * tc)
        dgates[:, :H] = dct * g * (i * (1 - i))
        dgates[:, H:2 * H] = dct * cw * (f * (1 - f))
        dgates[:, 2 * H:3 * H] = dct * i * (1 - g * g)
        dgates[:, 3 * H:] = 0 if dhw is None else dhw * tc * (o * (1 - o))
        np.multiply(dct, f, out=dc_prev)
    return _result(dgates, c), _result(dc_prev, c)


def gru_cell(x, rec, b, h):
    """One GRU step: x and rec (N, 3H) the input and recurrent terms of the reset, update and
    new gates (any strides), b (3H,) or None (added to rec), h (N, H) the state. Returns (h',
    saved), h' a new (N, H) array in h's dtype (module docstring)."""
    H = _check("gru_cell", x, rec, b, h, 3)
    dt = _computing(h)
    xw, rw, bw, hw = _work(dt, (x, rec, b, h))
    N = xw.shape[0]
    h2, rz, nn, hn = (np.empty((N, H), dt), np.empty((N, 2 * H), dt), np.empty((N, H), dt),
                      np.empty((N, H), dt))
    if (loops := jit.loops("recurrent_loops")) is not None:
        loops.gru_cell(xw, rw, _NO_BIAS[dt] if bw is None else bw, hw, h2, rz, nn, hn)
    else:
        rb = rw if bw is None else rw + bw
        rz[...] = _sigmoid(xw[:, :2 * H] + rb[:, :2 * H])
        hn[...] = rb[:, 2 * H:]
        np.tanh(xw[:, 2 * H:] + rz[:, :H] * hn, out=nn)
        np.add(nn, rz[:, H:] * (hw - nn), out=h2)
    saved = (rz, nn, hn)
    return _result(h2, h), saved


def gru_cell_backward(dh, saved, h):
    """The gradients of one ``gru_cell`` step: ``dh`` (N, H) that of h', ``saved`` the
    forward's, ``h`` its input state. Returns (dx, drec (N, 3H), dh_direct (N, H)) in h's
    dtype: the gradients of x, of rec + b, and of h other than through rec."""
    N, H = h.shape
    rz, nn, hn = saved
    dt = rz.dtype
    dhw, hw = _work(dt, (dh, h))
    dx, drec, dh_direct = np.empty((N, 3 * H), dt), np.empty((N, 3 * H), dt), np.empty((N, H), dt)
    if (loops := jit.loops("recurrent_loops")) is not None:
        loops.gru_cell_backward(dhw, rz, nn, hn, hw, dx, drec, dh_direct)
    else:
        r, z = rz[:, :H], rz[:, H:]
        dn = (dhw - dhw * z) * (1 - nn * nn)
        dr = dn * hn * (r * (1 - r))
        dz = dhw * (hw - nn) * (z * (1 - z))
        dx[:, :H], dx[:, H:2 * H], dx[:, 2 * H:] = dr, dz, dn
        drec[:, :H], drec[:, H:2 * H], drec[:, 2 * H:] = dr, dz, dn * r
        np.multiply(dhw, z, out=dh_direct)
    return _result(dx, h), _result(drec, h), _result(dh_direct, h)
