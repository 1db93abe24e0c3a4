"""The pointwise part of one LSTM or GRU step, fused: one launch per step forward, one backward.

Same names, signatures and results as kernels/numpy/recurrent.py, whose docstring has the
formulas. autograd/ops/recurrent.py runs the time loop: per step the recurrent product
``h W_hh^T`` (matmul.py), then one of these kernels for the rest of the cell, which would
otherwise be some fifteen elementwise launches (each a few microseconds of host time for a few
hundred nanoseconds of GPU work at a batch's few rows).

Each kernel owns a (BM rows, BH hidden units) tile and reads all gates of it: gate k of row n
at ``n * s_n + (k H + j) * s_k`` (x and rec are any strided (N, G H) views: a step of the
projected sequence). Math in float32 for float16/bfloat16/float32 (float64 for float64); h, c'
and the gradients round once at the store, into the inputs' dtype; ``saved`` (the activations)
stays in the computing dtype: LSTM ``([i f g o] (N, 4H), tanh(c') (N, H))``, GRU
``([r z] (N, 2H), n (N, H), (rec + b)_n (N, H))``, all contiguous.

    LSTM backward, dc_t = dc + dh o (1 - tanh(c')^2):
        d a_i = dc_t g i (1 - i),  d a_f = dc_t c f (1 - f),  d a_g = dc_t i (1 - g^2),
        d a_o = dh tanh(c') o (1 - o),  dc_prev = dc_t f
    GRU backward:
        dn = dh (1 - z) (1 - n^2),  dr = dn (rec + b)_n r (1 - r),  dz = dh (h - n) z (1 - z)
        dx = [dr dz dn],  drec = [dr dz dn r],  dh_direct = dh z
"""

from __future__ import annotations

import triton.language as tl
from triton.language.extra import libdevice

from ...runtime import dtype as D
from ...runtime import memory as _memory
from . import _launch as L
from .launcher import Launch, jit

__all__ = ["gru_cell", "gru_cell_backward", "lstm_cell", "lstm_cell_backward"]

_ACC = {D.float16: tl.float32, D.bfloat16: tl.float32, D.float32: tl.float32,
        D.float64: tl.float64}
_ACC_DT = L.ACC_DT


@jit
def _sigmoid(v):
    return 1.0 / (1.0 + libdevice.exp(-v))


@jit
def _pre(x_ptr, r_ptr, b_ptr, rows, cols, mask, k0, s_xn, s_xk, s_rn, s_rk, s_b,
         ACC: tl.constexpr):
    """The pre-activation x + (rec + b) of gate columns k0 + cols for the tile."""
    k = k0 + cols
    v = tl.load(r_ptr + (rows * s_rn + k * s_rk), mask=mask, other=0).to(ACC)
    if b_ptr is not None:
        v = v + tl.load(b_ptr + k * s_b, mask=mask, other=0).to(ACC)
    return tl.load(x_ptr + (rows * s_xn + k * s_xk), mask=mask, other=0).to(ACC) + v


@jit
def _tile(N, H, BM: tl.constexpr, BH: tl.constexpr):
    """The program's rows (int64, a column) and hidden units (a row), and their mask."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BH + tl.arange(0, BH)
    mask = (rows < N)[:, None] & (cols < H)[None, :]
    return rows.to(tl.int64)[:, None], cols[None, :], mask


# ------------------------------------------------------------------------------------------
# LSTM
# ------------------------------------------------------------------------------------------
@jit
def _lstm_cell_kernel(
    h_ptr,    # *T: (N, H) contiguous output h, written
    c2_ptr,   # *T: (N, H) contiguous output cell c', written
    act_ptr,  # *ACC: (N, 4H) contiguous [i f g o], written
    tc_ptr,   # *ACC: (N, H) contiguous tanh(c'), written
    x_ptr,    # *T: the input term; gate column k of row n at n * s_xn + k * s_xk
    r_ptr,    # *T: the recurrent term; (n, k) at n * s_rn + k * s_rk
    b_ptr,    # *T: the bias (4H,) with stride s_b, or None
    c_ptr,    # *T: the input cell; (n, j) at n * s_cn + j * s_cj
    N, H, s_xn, s_xk, s_rn, s_rk, s_b, s_cn, s_cj,
    ACC: tl.constexpr, BM: tl.constexpr, BH: tl.constexpr,
):
    rows, cols, mask = _tile(N, H, BM, BH)
    i = _sigmoid(_pre(x_ptr, r_ptr, b_ptr, rows, cols, mask, 0, s_xn, s_xk, s_rn, s_rk, s_b,
                      ACC))
    f = _sigmoid(_pre(x_ptr, r_ptr, b_ptr, rows, cols, mask, H, s_xn, s_xk, s_rn, s_rk, s_b,
                      ACC))
    g = libdevice.tanh(_pre(x_ptr, r_ptr, b_ptr, rows, cols, mask, 2 * H, s_xn, s_xk, s_rn,
                            s_rk, s_b, ACC))
    o = _sigmoid(_pre(x_ptr, r_ptr, b_ptr, rows, cols, mask, 3 * H, s_xn, s_xk, s_rn, s_rk,
                      s_b, ACC))
    c = tl.load(c_ptr + (rows * s_cn + cols * s_cj), mask=mask, other=0).to(ACC)
    c2 = f * c + i * g
    tc = libdevice.tanh(c2)
    at = rows * H + cols
    tl.store(c2_ptr + at, c2, mask=mask)
    tl.store(h_ptr + at, o * tc, mask=mask)
    tl.store(tc_ptr + at, tc, mask=mask)
    a = act_ptr + (rows * (4 * H) + cols)
    tl.store(a, i, mask=mask)
    tl.store(a + H, f, mask=mask)
    tl.store(a + 2 * H, g, mask=mask)
    tl.store(a + 3 * H, o, mask=mask)


@jit
def _lstm_cell_bwd_kernel(
    dg_ptr,   # *T: (N, 4H) contiguous gradient of the gates' pre-activations, written
    dcp_ptr,  # *T: (N, H) contiguous gradient of the input cell, written
    dh_ptr,   # *T: the gradient of h; (n, j) at n * s_dhn + j * s_dhj; or None (zeros)
    dc_ptr,   # *T: the gradient of c'; (n, j) at n * s_dcn + j * s_dcj; or None (zeros)
    act_ptr,  # *ACC: (N, 4H) contiguous [i f g o], the forward's
    tc_ptr,   # *ACC: (N, H) contiguous tanh(c'), the forward's
    c_ptr,    # *T: the input cell; (n, j) at n * s_cn + j * s_cj
    N, H, s_dhn, s_dhj, s_dcn, s_dcj, s_cn, s_cj,
    ACC: tl.constexpr, BM: tl.constexpr, BH: tl.constexpr,
):
    rows, cols, mask = _tile(N, H, BM, BH)
    a = act_ptr + (rows * (4 * H) + cols)
    i = tl.load(a, mask=mask, other=0).to(ACC)
    f = tl.load(a + H, mask=mask, other=0).to(ACC)
    g = tl.load(a + 2 * H, mask=mask, other=0).to(ACC)
    o = tl.load(a + 3 * H, mask=mask, other=0).to(ACC)
    at = rows * H + cols
    tc = tl.load(tc_ptr + at, mask=mask, other=0).to(ACC)
    c = tl.load(c_ptr + (rows * s_cn + cols * s_cj), mask=mask, other=0).to(ACC)
    dct = tl.zeros_like(c)
    if dc_ptr is not None:
        dct = tl.load(dc_ptr + (rows * s_dcn + cols * s_dcj), mask=mask, other=0).to(ACC)
    dh = tl.zeros_like(c)
    if dh_ptr is not None:
        dh = tl.load(dh_ptr + (rows * s_dhn + cols * s_dhj), mask=mask, other=0).to(ACC)
    dct = dct + dh * o * (1.0 - tc * tc)
    d = dg_ptr + (rows * (4 * H) + cols)
    tl.store(d, dct * g * (i * (1.0 - i)), mask=mask)
    tl.store(d + H, dct * c * (f * (1.0 - f)), mask=mask)
    tl.store(d + 2 * H, dct * i * (1.0 - g * g), mask=mask)
    tl.store(d + 3 * H, dh * tc * (o * (1.0 - o)), mask=mask)
    tl.store(dcp_ptr + at, dct * f, mask=mask)


# ------------------------------------------------------------------------------------------
# GRU
# ------------------------------------------------------------------------------------------
@jit
def _gru_cell_kernel(
    h2_ptr,   # *T: (N, H) contiguous output h', written
    rz_ptr,   # *ACC: (N, 2H) contiguous [r z], written
    n_ptr,    # *ACC: (N, H) contiguous n, written
    hn_ptr,   # *ACC: (N, H) contiguous (rec + b)_n, written
    x_ptr,    # *T: the input term; gate column k of row n at n * s_xn + k * s_xk
    r_ptr,    # *T: the recurrent term; (n, k) at n * s_rn + k * s_rk
    b_ptr,    # *T: the bias (3H,) with stride s_b, or None
    h_ptr,    # *T: the input state; (n, j) at n * s_hn + j * s_hj
    N, H, s_xn, s_xk, s_rn, s_rk, s_b, s_hn, s_hj,
    ACC: tl.constexpr, BM: tl.constexpr, BH: tl.constexpr,
):
    rows, cols, mask = _tile(N, H, BM, BH)
    r = _sigmoid(_pre(x_ptr, r_ptr, b_ptr, rows, cols, mask, 0, s_xn, s_xk, s_rn, s_rk, s_b,
                      ACC))
    z = _sigmoid(_pre(x_ptr, r_ptr, b_ptr, rows, cols, mask, H, s_xn, s_xk, s_rn, s_rk, s_b,
                      ACC))
    k = 2 * H + cols
    hn = tl.load(r_ptr + (rows * s_rn + k * s_rk), mask=mask, other=0).to(ACC)
    if b_ptr is not None:
        hn = hn + tl.load(b_ptr + k * s_b, mask=mask, other=0).to(ACC)
    xn = tl.load(x_ptr + (rows * s_xn + k * s_xk), mask=mask, other=0).to(ACC)
    n = libdevice.tanh(xn + r * hn)
    h = tl.load(h_ptr + (rows * s_hn + cols * s_hj), mask=mask, other=0).to(ACC)
    at = rows * H + cols
    tl.store(h2_ptr + at, n + z * (h - n), mask=mask)
    tl.store(rz_ptr + (rows * (2 * H) + cols), r, mask=mask)
    tl.store(rz_ptr + (rows * (2 * H) + cols + H), z, mask=mask)
    tl.store(n_ptr + at, n, mask=mask)
    tl.store(hn_ptr + at, hn, mask=mask)


@jit
def _gru_cell_bwd_kernel(
    dx_ptr,   # *T: (N, 3H) contiguous gradient of x, written
    dr_ptr,   # *T: (N, 3H) contiguous gradient of rec + b, written
    dhd_ptr,  # *T: (N, H) contiguous dh z, written
    dh_ptr,   # *T: the gradient of h'; (n, j) at n * s_dhn + j * s_dhj
    rz_ptr,   # *ACC: (N, 2H) contiguous [r z], the forward's
    n_ptr,    # *ACC: (N, H) contiguous n, the forward's
    hn_ptr,   # *ACC: (N, H) contiguous (rec + b)_n, the forward's
    h_ptr,    # *T: the input state; (n, j) at n * s_hn + j * s_hj
    N, H, s_dhn, s_dhj, s_hn, s_hj,
    ACC: tl.constexpr, BM: tl.constexpr, BH: tl.constexpr,
):
    rows, cols, mask = _tile(N, H, BM, BH)
    at = rows * H + cols
    r = tl.load(rz_ptr + (rows * (2 * H) + cols), mask=mask, other=0).to(ACC)
    z = tl.load(rz_ptr + (rows * (2 * H) + cols + H), mask=mask, other=0).to(ACC)
    n = tl.load(n_ptr + at, mask=mask, other=0).to(ACC)
    hn = tl.load(hn_ptr + at, mask=mask, other=0).to(ACC)
    h = tl.load(h_ptr + (rows * s_hn + cols * s_hj), mask=mask, other=0).to(ACC)
    dh = tl.load(dh_ptr + (rows * s_dhn + cols * s_dhj), mask=mask, other=0).to(ACC)
    dn = (dh - dh * z) * (1.0 - n * n)
    dr = dn * hn * (r * (1.0 - r))
    dz = dh * (h - n) * (z * (1.0 - z))
    d = rows * (3 * H) + cols
    tl.store(dx_ptr + d, dr, mask=mask)
    tl.store(dx_ptr + d + H, dz, mask=mask)
    tl.store(dx_ptr + d + 2 * H, dn, mask=mask)
    tl.store(dr_ptr + d, dr, mask=mask)
    tl.store(dr_ptr + d + H, dz, mask=mask)
    tl.store(dr_ptr + d + 2 * H, dn * r, mask=mask)
    tl.store(dhd_ptr + at, dh * z, mask=mask)


# ------------------------------------------------------------------------------------------
# Launchers: a ``Launch`` per layout (Note [plan launches] in launcher.py)
# ------------------------------------------------------------------------------------------
_PLANS = L.plan_cache()


def _float(op: str, *arrays) -> None:
    for a in arrays:
        if a is not None and a.dtype not in _ACC:
            raise L.unsupported(op, a.dtype, "floating point only")


def _check(op: str, x, rec, b, s, gates: int) -> None:
    n, width = s.shape
    if x.ndim != 2 or tuple(x.shape) != (n, gates * width) or rec.shape != x.shape or \
            (b is not None and tuple(b.shape) != (gates * width,)):
        raise ValueError(f"{op}: expected x and rec ({n}, {gates} * {width}), b "
                         f"({gates} * {width},) or None and the state ({n}, {width}); got x "
                         f"{tuple(x.shape)}, rec {tuple(rec.shape)}, b "
                         f"{None if b is None else tuple(b.shape)}, state {tuple(s.shape)}")


def _strides(a) -> tuple:
    return (0, 0) if a is None else tuple(a.strides)


def _plan(key, kernel, N, H, strides, dtype):
    # the row kernels' tile (nn.py): up to ROW_TILE elements, MAX_BLOCK_N hidden units wide
    bh = min(L.next_pow2(H), L.MAX_BLOCK_N)
    bm = max(1, min(L.next_pow2(N), L.ROW_TILE // bh))
    launch = _PLANS[key] = Launch(
        kernel, (L.cdiv(N, bm), L.cdiv(H, bh)), (N, H, *strides, _ACC[dtype], bm, bh),
        num_warps=L.num_warps(bm * bh), **L.EXACT)
    return launch


def lstm_cell(x, rec, b, c):
    """One LSTM step's pointwise part (kernels/numpy/recurrent.py): (h, c', saved)."""
    _float("lstm_cell", x, rec, b, c)
    _check("lstm_cell", x, rec, b, c, 4)
    N, H = c.shape
    dt, dev = c.dtype, c.device
    h, c2 = _memory.empty((N, H), dt, dev), _memory.empty((N, H), dt, dev)
    act, tc = _memory.empty((N, 4 * H), _ACC_DT[dt], dev), _memory.empty((N, H), _ACC_DT[dt], dev)
    if N and H:
        key = ("lstm_cell", N, H, x.strides, rec.strides, _strides(b), c.strides, dt)
        launch = _PLANS.get(key) or _plan(
            key, _lstm_cell_kernel, N, H, (*x.strides, *rec.strides, _strides(b)[0],
                                           *c.strides), dt)
        L.ensure_driver()
        launch(h, c2, act, tc, x, rec, b, c)
    return h, c2, (act, tc)


def lstm_cell_backward(dh, dc, saved, c):
    """The gradients of one ``lstm_cell`` step: (dgates, dc_prev)."""
    _float("lstm_cell_backward", dh, dc, c)
    act, tc = saved
    N, H = c.shape
    dt, dev = c.dtype, c.device
    dgates, dc_prev = _memory.empty((N, 4 * H), dt, dev), _memory.empty((N, H), dt, dev)
    if N and H:
        key = ("lstm_cell_backward", N, H, _strides(dh), _strides(dc), c.strides, dt,
               dh is None, dc is None)
        launch = _PLANS.get(key) or _plan(
            key, _lstm_cell_bwd_kernel, N, H, (*_strides(dh), *_strides(dc), *c.strides), dt)
        L.ensure_driver()
        launch(dgates, dc_prev, dh, dc, act, tc, c)
    return dgates, dc_prev


def gru_cell(x, rec, b, h):
    """One GRU step's pointwise part (kernels/numpy/recurrent.py): (h', saved)."""
    _float("gru_cell", x, rec, b, h)
    _check("gru_cell", x, rec, b, h, 3)
    N, H = h.shape
    dt, dev, acc = h.dtype, h.device, _ACC_DT[h.dtype]
    h2 = _memory.empty((N, H), dt, dev)
    rz, n, hn = (_memory.empty((N, 2 * H), acc, dev), _memory.empty((N, H), acc, dev),
                 _memory.empty((N, H), acc, dev))
    if N and H:
        key = ("gru_cell", N, H, x.strides, rec.strides, _strides(b), h.strides, dt)
        launch = _PLANS.get(key) or _plan(
            key, _gru_cell_kernel, N, H, (*x.strides, *rec.strides, _strides(b)[0],
                                          *h.strides), dt)
        L.ensure_driver()
        launch(h2, rz, n, hn, x, rec, b, h)
    return h2, (rz, n, hn)


def gru_cell_backward(dh, saved, h):
    """The gradients of one ``gru_cell`` step: (dx, drec, dh_direct)."""
    _float("gru_cell_backward", dh, h)
    rz, n, hn = saved
    N, H = h.shape
    dt, dev = h.dtype, h.device
    dx, drec = _memory.empty((N, 3 * H), dt, dev), _memory.empty((N, 3 * H), dt, dev)
    dh_direct = _memory.empty((N, H), dt, dev)
    if N and H:
        key = ("gru_cell_backward", N, H, dh.strides, h.strides, dt)
        launch = _PLANS.get(key) or _plan(
            key, _gru_cell_bwd_kernel, N, H, (*dh.strides, *h.strides), dt)
        L.ensure_driver()
        launch(dx, drec, dh_direct, dh, rz, n, hn, h)
    return dx, drec, dh_direct
