"""2-D convolution over NumPy arrays: im2col over BLAS, channels last.

The input (N, C, H, W) is copied once into a zero-padded channels-last array (N, Hp, Wp, C);
every output position's receptive field is then one strided view of it (no copy) laid out
(N, OH, OW, KH, KW, C), copied once into the column matrix (N*OH*OW, KH*KW*C) per group. In
that order a window row's KW taps of all its channels are adjacent in memory (for stride 1), so
the copy moves runs of KW*C values where the channels-first layout moved runs of OW: 3x faster
for the small images CNNs train on. The whole batch is one matmul per group:

    y (N*OH*OW, O/g) = cols (N*OH*OW, KH*KW*C/g) @ w (KH*KW*C/g, O/g)

and y, viewed (N, OH, OW, O), goes back to channels first in the pass that adds the bias
(with the compiled loops of conv_loops.py, jit.py, one image's rows at a time: 2x faster than
NumPy's transposing add). A depthwise convolution (one input and one output channel per group)
has no GEMM worth the name: it is KH*KW multiply-adds of the shifted windows by the taps'
weights.

The backward recomputes the columns (they are KH*KW times the input; nothing is kept) and
takes g channels last, gn (N*OH*OW, O). dw^T = gn^T @ cols (as cols^T @ gn when O/g is the
larger side: BLAS is fastest with the wider matrix as the product's columns). db is gn summed
over its rows. For dx, the column gradients dcols = gn @ w^T (what each tap passes back) are
summed onto the input by col2im: with the loops, conv_loops.col2im, one pass over dcols that
writes dx channels first; without them, one strided add per tap into the padded channels-last
gradient (faster than ``np.add.at``, which adds element by element). With stride 1 the NumPy
form instead takes dx as g correlated with the flipped, transposed weight: a forward
convolution of g (an im2col of g, O/C times the size of dcols, but no adds), which beats those
KH*KW adds and loses to the loop (digits CNN's second layer: 820 against 460 us).

float32 and float64 compute in their own dtype; float16 and bfloat16 in float32, rounded once
at the end (as the GPU kernels accumulate in float32).

Where oneDNN is installed (onednn.py: direct convolutions, as PyTorch's CPU ones), the float32
computations (float16 and bfloat16 inputs' too) of at least ``onednn.MIN_WORK`` multiply-adds
go to it instead, forward and backward: 1.3-17x faster than the paths above.
``TRITONGRAD_ONEDNN=off`` (or ``onednn.use("off")``) keeps everything here; this file stays
the reference it is tested against (tests/kernels/test_onednn_conv.py).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..geometry import conv_geometry
from . import jit, onednn
from .bf16 import BF16Array
from .linalg import matmul  # (MKL where installed: blas.py)
from .nn import _back, _up
from .reduction import sum as _sum  # (sums over leading dims: BLAS products with ones)

__all__ = ["conv2d", "conv2d_backward", "conv2d_backward_columns", "conv2d_columns"]


def _result(r: np.ndarray, like) -> np.ndarray:
    """``r`` (compute dtype) as a C-contiguous array of ``like``'s dtype: no copy where it
    already is one."""
    if type(like) is BF16Array or like.dtype != r.dtype:
        return _back(r, like)
    return np.ascontiguousarray(r)


def _channels_last(x: np.ndarray, pd) -> np.ndarray:
    """(N, C, H, W) -> the zero-padded channels-last copy (N, H + pads, W + pads, C)."""
    (pt, pb), (pl, pr) = pd
    N, C, H, W = x.shape
    xn = np.zeros((N, H + pt + pb, W + pl + pr, C), dtype=x.dtype)
    xn[:, pt:pt + H, pl:pl + W, :] = x.transpose(0, 2, 3, 1)
    return xn


def _windows(xn: np.ndarray, KH, KW, OH, OW, stride, dilation) -> np.ndarray:
    """The (N, OH, OW, KH, KW, C) view of every receptive field of channels-last ``xn``."""
    N, C = xn.shape[0], xn.shape[3]
    s0, s1, s2, s3 = xn.strides
    return as_strided(xn, (N, OH, OW, KH, KW, C),
                      (s0, s1 * stride[0], s2 * stride[1], s1 * dilation[0], s2 * dilation[1],
                       s3), writeable=False)


def _columns(win: np.ndarray, groups: int) -> np.ndarray:
    """(groups, N*OH*OW, KH*KW*C/g): the im2col matrices of the windows ``win``."""
    N, OH, OW, KH, KW, C = win.shape
    if groups == 1:
        return np.ascontiguousarray(win).reshape(1, N * OH * OW, KH * KW * C)
    cg = C // groups
    split = win.reshape(N, OH, OW, KH, KW, groups, cg).transpose(5, 0, 1, 2, 3, 4, 6)
    return np.ascontiguousarray(split).reshape(groups, N * OH * OW, KH * KW * cg)


# conv_loops.im2col is used where a window row is shorter than this many values (KW*C: a
# first layer's 1 or 3 channels): NumPy's copy of the window view moves one such run per
# call of its inner loop (the digits CNN's first layer, C = 1: 73-88 against 50-58 us; a
# 7x7 stem over 3 channels: 4.3 against 4.0 ms). From KW*C = 48 on both take the same time,
# and on larger images the loop loses (x (16, 32, 32, 32), stride 2: 1.5x NumPy's time).
_LOOP_RUN = 32


def _im2col(xf: np.ndarray, KH, KW, OH, OW, stride, pd, dilation, groups: int) -> np.ndarray:
    """(groups, N*OH*OW, KH*KW*C/g): the im2col matrices of ``xf`` (N, C, H, W), through
    conv_loops.im2col (one group, short window rows: ``_LOOP_RUN``) where the loops run, else
    the NumPy copy of the windows of its padded channels-last copy."""
    if (groups == 1 and KW * xf.shape[1] < _LOOP_RUN and xf.dtype in _NO_BIAS
            and (loops := jit.loops("conv_loops")) is not None):
        N, C, H, W = xf.shape
        (pt, pb), (pl, pr) = pd
        cols = np.empty((N * OH * OW, KH * KW * C), dtype=xf.dtype)
        loops.im2col(xf, KH, KW, stride[0], stride[1], dilation[0], dilation[1], pt, pl,
                     H + pt + pb, W + pl + pr, OH, OW, cols)
        return cols[None]
    return _columns(_windows(_channels_last(xf, pd), KH, KW, OH, OW, stride, dilation), groups)


def _weight_matrix(wf: np.ndarray, groups: int) -> np.ndarray:
    """(O, C/g, KH, KW) -> (groups, KH*KW*C/g, O/g), the columns' row order."""
    O, Cg, KH, KW = wf.shape
    return wf.reshape(groups, O // groups, Cg, KH, KW).transpose(0, 3, 4, 2, 1).reshape(
        groups, KH * KW * Cg, O // groups)


_NO_BIAS = {np.dtype(t): np.empty(0, t) for t in (np.float32, np.float64)}


def _to_channels_first(y: np.ndarray, N, OH, OW, bias, out: np.ndarray) -> np.ndarray:
    """y (groups, N*OH*OW, O/g) into ``out`` (N, O, OH, OW), adding ``bias`` in the same
    pass (conv_loops.to_channels_first where the loops run)."""
    if (loops := jit.loops("conv_loops")) is not None:
        loops.to_channels_first(y, _NO_BIAS[y.dtype] if bias is None else bias, out)
        return out
    g, _, og = y.shape
    src = y.reshape(g, N, OH, OW, og).transpose(1, 0, 4, 2, 3).reshape(N, g * og, OH, OW)
    if bias is not None:
        np.add(src, bias.reshape(1, -1, 1, 1), out=out)
    else:
        out[...] = src
    return out


def _same_dtype(op: str, *arrays) -> None:
    dt = arrays[0].dtype
    for a in arrays[1:]:
        if a is not None and (a.dtype != dt or type(a) is not type(arrays[0])):
            raise ValueError(f"{op}: expected arrays of one dtype, got {dt} and {a.dtype}")
    if dt.kind != "f":
        raise TypeError(f"{op}: expected floating point arrays, got {dt}")


def conv2d(x, w, bias, stride, padding, dilation, groups: int):
    """y[n, o] = sum over the group's channels and the taps of w[o, c, kh, kw] *
    xpad[n, c, oh*sh + kh*dh, ow*sw + kw*dw] (+ bias[o]): x (N, C, H, W), w (O, C/g, KH, KW),
    bias (O,) or None; padding (ph, pw) with each an int or a (low, high) pair."""
    return conv2d_columns(x, w, bias, stride, padding, dilation, groups)[0]


def conv2d_columns(x, w, bias, stride, padding, dilation, groups: int):
    """``(conv2d(...), columns)``: with the im2col matrices the product read (None where none
    were made: a depthwise, empty or oneDNN convolution), for conv2d_backward_columns (Note
    [Kept columns]). Not in the kernel contract: the CPU backend's own."""
    _same_dtype("conv2d", x, w, bias)
    *_, OH, OW, pd = conv_geometry("conv2d", x.shape, w.shape, stride, padding, dilation, groups)
    out, cols = _forward(_up(x), _up(w), None if bias is None else _up(bias), stride, pd,
                         dilation, groups, OH, OW, keep=True)
    return _result(out, x), cols


# Note [Kept columns]: the weight gradient is g^T @ cols, with the same columns the forward
# multiplied; gathering them again copies KH*KW times the input (the digits CNN's second
# layer: 2.4 MB, 100-130 us of its ~1 ms backward). PyTorch's CPU slow_conv2d keeps them (its
# ``finput``) from forward to backward; conv2d_columns and conv2d_backward_columns let a
# caller do the same: it holds the columns beside the saved input while the weight needs a
# gradient. The backward checks that the columns have this call's shape and dtype (else it
# gathers them again); that the input did not change in between is the caller's to check
# (autograd's saved-tensor versions). The contract's conv2d/conv2d_backward keep nothing.


def _forward(xf, wf, bf, stride, pd, dilation, groups: int, OH: int, OW: int,
             keep: bool = False):
    """conv2d in the compute dtype: a new (N, O, OH, OW) array (with ``keep``: and the
    columns, or None), through oneDNN where it takes it (module docstring)."""
    if (y := onednn.forward(xf, wf, bf, stride, pd, dilation, groups, OH, OW)) is not None:
        return (y, None) if keep else y
    N = xf.shape[0]
    O, Cg, KH, KW = wf.shape
    out = np.empty((N, O, OH, OW), dtype=xf.dtype)
    cols = None
    if not out.size:
        pass
    elif Cg == 1 and O == groups:
        out = _depthwise(xf, wf, bf, stride, pd, dilation, OH, OW, out)
    else:
        cols = _im2col(xf, KH, KW, OH, OW, stride, pd, dilation, groups)
        y = matmul(cols, _weight_matrix(wf, groups))  # (g, N*L, O/g)
        out = _to_channels_first(y, N, OH, OW, bf, out)
    return (out, cols) if keep else out


def _depthwise(xf, wf, bf, stride, pd, dilation, OH: int, OW: int, out) -> np.ndarray:
    """One channel in, one out per group: y = sum over the taps of the tap's shifted window
    times its weight, channels last (each product is a broadcast multiply over N*OH*OW*C)."""
    N, C = xf.shape[:2]
    KH, KW = wf.shape[2:]
    win = _windows(_channels_last(xf, pd), KH, KW, OH, OW, stride, dilation)
    taps = wf.reshape(C, KH, KW)
    acc = prod = None
    for kh in range(KH):
        for kw in range(KW):
            tap, reps = _pixel_rows(win[:, :, :, kh, kw, :])
            weight = np.tile(taps[:, kh, kw], reps)
            if acc is None:
                acc = np.multiply(tap, weight)
                prod = np.empty_like(acc)
            else:
                acc += np.multiply(tap, weight, out=prod)
    return _to_channels_first(acc.reshape(1, N * OH * OW, C), N, OH, OW, bf, out)


def _pixel_rows(a: np.ndarray) -> tuple:
    """(view, reps): a (N, OH, OW, C) window viewed (N, OH, OW * C) where each output row's
    pixels are adjacent in memory (stride 1 across: then a per-channel factor is the channel
    vector tiled OW times, and NumPy's loop runs over whole rows instead of C values: 2x
    faster), else ``a`` itself with reps 1."""
    N, OH, OW, C = a.shape
    s = a.strides
    if s[2] == C * s[3]:
        return as_strided(a, (N, OH, OW * C), (s[0], s[1], s[3]), writeable=False), OW
    return a, 1


def conv2d_backward(g, x, w, stride, padding, dilation, groups: int, needs):
    """(dx, dw, db) of conv2d for the output gradient ``g`` (N, O, OH, OW); each is None
    where ``needs`` (three bools, for x, w and bias) says it is not wanted."""
    return conv2d_backward_columns(g, x, w, stride, padding, dilation, groups, needs, None)


def conv2d_backward_columns(g, x, w, stride, padding, dilation, groups: int, needs, columns):
    """conv2d_backward, reading the weight gradient's columns from ``columns`` (what
    conv2d_columns gave for this x; Note [Kept columns]) where they fit, else gathering them
    again (None: always)."""
    _same_dtype("conv2d_backward", x, w)
    need_x, need_w, need_b = (tuple(needs) + (False, False, False))[:3]
    N, _, H, W, O, _, KH, KW, OH, OW, pd = conv_geometry("conv2d_backward", x.shape, w.shape,
                                                     stride, padding, dilation, groups)
    if tuple(g.shape) != (N, O, OH, OW):
        raise ValueError(f"conv2d_backward: expected the output gradient of shape "
                         f"{(N, O, OH, OW)}, got {tuple(g.shape)}")
    xf, wf, gf = _up(x), _up(w), _up(g).astype(_up(x).dtype, copy=False)
    if (r := onednn.backward(gf, xf, wf, stride, pd, dilation, groups, need_x, need_w,
                             need_b)) is not None:
        dx, dw, db = r
        if need_b and db is None:
            db = _sum(gf, (0, 2, 3), False)
        return tuple(None if a is None else _result(a, like)
                     for a, like in ((dx, x), (dw, w), (db, x)))
    loops = jit.loops("conv_loops") if need_x else None
    by_forward = need_x and loops is None and _dx_by_forward(stride, pd, dilation, KH, KW)
    gn = None
    if need_w or need_b or (need_x and not by_forward):
        gn = np.ascontiguousarray(gf.transpose(0, 2, 3, 1)).reshape(N * OH * OW, O)
    dx = dw = db = None
    if need_w:
        dw = _result(_weight_grad(gn, xf, wf, stride, pd, dilation, groups, OH, OW, columns),
                     w)
    if need_x:
        if by_forward:
            dx = _dx_as_forward(gf, wf, pd, dilation, groups, H, W)
        else:
            dx = _col2im(_tap_grads(gn, wf, groups), xf.shape, wf.shape, stride, pd, dilation,
                         OH, OW, loops)
        dx = _result(dx, x)
    if need_b:
        db = _result(_sum(gn, (0,), False), x)
    return dx, dw, db


def _is_depthwise(wf: np.ndarray, groups: int) -> bool:
    return wf.shape[1] == 1 and wf.shape[0] == groups


def _per_group(gn: np.ndarray, groups: int) -> np.ndarray:
    """g channels last (N*OH*OW, O) viewed (groups, N*OH*OW, O/g), as the columns' rows."""
    return gn.reshape(gn.shape[0], groups, gn.shape[1] // groups).transpose(1, 0, 2)


def _weight_grad(gn, xf, wf, stride, pd, dilation, groups: int, OH: int, OW: int,
                 columns=None):
    """dw (O, C/g, KH, KW) from g channels last ``gn`` (N*OH*OW, O) and the windows of x:
    ``columns`` where they are the forward's (Note [Kept columns]), else gathered again."""
    O, Cg, KH, KW = wf.shape
    NL = gn.shape[0]
    if not NL:
        return np.zeros(wf.shape, dtype=xf.dtype)
    if _is_depthwise(wf, groups):  # per tap: sum over N*OH*OW of window * g, as column sums
        win = _windows(_channels_last(xf, pd), KH, KW, OH, OW, stride, dilation)
        C = O
        prod = np.empty((NL, C), dtype=xf.dtype)
        dwf = np.empty((C, 1, KH, KW), dtype=xf.dtype)
        for kh in range(KH):
            for kw in range(KW):
                tap, _ = _pixel_rows(win[:, :, :, kh, kw, :])
                np.multiply(tap, gn.reshape(tap.shape), out=prod.reshape(tap.shape))
                dwf[:, 0, kh, kw] = _sum(prod, (0,), False)
        return dwf
    cols = columns  # (g, N*OH*OW, KH*KW*C/g)
    if (type(cols) is not np.ndarray or cols.dtype != xf.dtype
            or cols.shape != (groups, NL, KH * KW * Cg)):
        cols = _im2col(xf, KH, KW, OH, OW, stride, pd, dilation, groups)
    gm = _per_group(gn, groups)
    # the larger of O/g and KH*KW*C/g as the product's columns: MKL is 1.5-2.5x faster on
    # large layers as dw^T = g^T @ cols than as cols^T @ g, and 1.3x slower on a first layer's
    # (C = 1)
    if KH * KW * Cg < O // groups:
        dwt = matmul(cols.transpose(0, 2, 1), gm).transpose(0, 2, 1)
    else:
        dwt = matmul(gm.transpose(0, 2, 1), cols)  # (g, O/g, KH*KW*C/g)
    return dwt.reshape(O, KH, KW, Cg).transpose(0, 3, 1, 2)


def _tap_grads(gn, wf, groups: int) -> np.ndarray:
    """The column gradients (g, N*OH*OW, KH*KW*C/g), what each tap of each output position
    passes back to its input position: g @ w^T per group (for a depthwise convolution g
    times the tap's weight: (1, N*OH*OW, KH*KW*C))."""
    O, _, KH, KW = wf.shape
    NL = gn.shape[0]
    if _is_depthwise(wf, groups):
        taps = wf.reshape(O, KH * KW).T  # (KH*KW, C)
        return np.multiply(gn.reshape(NL, 1, O), taps).reshape(1, NL, KH * KW * O)
    return matmul(_per_group(gn, groups), _weight_matrix(wf, groups).transpose(0, 2, 1))


def _col2im(dcols, x_shape, w_shape, stride, pd, dilation, OH: int, OW: int, loops):
    """dx (N, C, H, W): the column gradients ``dcols`` (g, N*OH*OW, KH*KW*C/g) summed onto
    the input positions their taps read (conv_loops.col2im where the loops run, else one
    strided add per tap into the padded channels-last gradient)."""
    N, C, H, W = x_shape
    KH, KW = w_shape[2:]
    (pt, pb), (pl, pr) = pd
    (sh, sw), (dh, dw) = stride, dilation
    if not dcols.size:
        return np.zeros(x_shape, dtype=dcols.dtype)
    if loops is not None:
        dx = np.empty(x_shape, dtype=dcols.dtype)
        loops.col2im(dcols, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, H + pt + pb, W + pl + pr,
                     dx)
        return dx
    G, _, KCg = dcols.shape
    d6 = dcols.reshape(G, N, OH, OW, KH, KW, KCg // (KH * KW)).transpose(
        1, 2, 3, 4, 5, 0, 6).reshape(N, OH, OW, KH, KW, C)
    dxn = np.zeros((N, H + pt + pb, W + pl + pr, C), dtype=dcols.dtype)
    for kh in range(KH):
        rows = slice(kh * dh, kh * dh + sh * (OH - 1) + 1, sh)
        for kw in range(KW):
            cols = slice(kw * dw, kw * dw + sw * (OW - 1) + 1, sw)
            dxn[:, rows, cols, :] += d6[:, :, :, kh, kw, :]  # (faster than np.add.at)
    return dxn[:, pt:pt + H, pl:pl + W, :].transpose(0, 3, 1, 2)


def _dx_by_forward(stride, pd, dilation, KH: int, KW: int) -> bool:
    """Whether dx can be computed as a forward convolution (_dx_as_forward): stride 1, no
    padding past the dilated kernel."""
    (pt, pb), (pl, pr) = pd
    eh, ew = dilation[0] * (KH - 1), dilation[1] * (KW - 1)
    return tuple(stride) == (1, 1) and max(pt, pb) <= eh and max(pl, pr) <= ew


def _dx_as_forward(gf, wf, pd, dilation, groups: int, H: int, W: int) -> np.ndarray:
    """dx for stride 1 without the loops: g correlated with the flipped, transposed weight,
    itself a forward convolution (im2col of g, one matmul per group) with no col2im adds,
    which NumPy's form of col2im (KH*KW strided adds) is slower than."""
    O, Cg, KH, KW = wf.shape
    N, Og = gf.shape[0], O // groups
    (pt, pb), (pl, pr) = pd
    eh, ew = dilation[0] * (KH - 1), dilation[1] * (KW - 1)
    if not (gf.size and Cg * KH * KW):
        return np.zeros((N, Cg * groups, H, W), dtype=gf.dtype)
    wt = wf.reshape(groups, Og, Cg, KH, KW).transpose(0, 2, 1, 3, 4)[..., ::-1, ::-1]
    return _forward(gf, wt.reshape(Cg * groups, Og, KH, KW), None, (1, 1),
                    ((eh - pt, eh - pb), (ew - pl, ew - pr)), dilation, groups, H, W)
