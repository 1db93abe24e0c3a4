"""2-D convolution over NumPy arrays: im2col over BLAS.

The input (N, C, H, W) is zero-padded once, then every output position's receptive field is
read through one strided view of it (no copy), laid out (C, KH, KW, N, OH, OW), and copied
once into the column matrix (groups, C/g * KH * KW, N * OH * OW): the innermost axis walks an
output row, so the copy moves long runs. The whole batch is then one matmul per group:

    y (g, O/g, N*OH*OW) = w (g, O/g, C/g*KH*KW) @ cols

The backward recomputes the columns (they are KH*KW times the input; nothing is kept):
dw = g @ cols^T (one matmul per group). With stride 1, dx is g correlated with the flipped,
transposed weight: a forward convolution of g, no adds. Otherwise dcols = w^T @ g and dx is
col2im: the KH*KW taps' slices of dcols added into the padded input gradient, one strided
slice per tap (faster than ``np.add.at``, which adds element by element). db is g summed over
(N, OH, OW).

float32 and float64 compute in their own dtype; float16 and bfloat16 in float32, rounded once
at the end (as the GPU kernels accumulate in float32).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..geometry import conv_geometry
from .bf16 import BF16Array
from .nn import _back, _up

__all__ = ["conv2d", "conv2d_backward"]


def _result(r: np.ndarray, like) -> np.ndarray:
    """``r`` (compute dtype) as a C-contiguous array of ``like``'s dtype: no copy where it
    already is one."""
    if type(like) is BF16Array or like.dtype != r.dtype:
        return _back(r, like)
    return np.ascontiguousarray(r)


def _padded(x: np.ndarray, pd) -> np.ndarray:
    (pt, pb), (pl, pr) = pd
    if not (pt or pb or pl or pr):
        return x
    N, C, H, W = x.shape
    xp = np.zeros((N, C, H + pt + pb, W + pl + pr), dtype=x.dtype)
    xp[:, :, pt:pt + H, pl:pl + W] = x
    return xp


def _columns(xp: np.ndarray, KH, KW, OH, OW, stride, dilation, groups: int) -> np.ndarray:
    """(groups, C/g*KH*KW, N*OH*OW): the im2col matrix of the padded input ``xp``."""
    N, C = xp.shape[:2]
    sn, sc, sh_, sw_ = xp.strides
    view = as_strided(xp, (C, KH, KW, N, OH, OW),
                      (sc, sh_ * dilation[0], sw_ * dilation[1], sn, sh_ * stride[0],
                       sw_ * stride[1]), writeable=False)
    return np.ascontiguousarray(view).reshape(groups, C // groups * KH * KW, N * OH * OW)


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
    _same_dtype("conv2d", x, w, bias)
    *_, OH, OW, pd = conv_geometry("conv2d", x.shape, w.shape, stride, padding, dilation, groups)
    out = _forward(_up(x), _up(w), None if bias is None else _up(bias), stride, pd, dilation,
                   groups, OH, OW)
    return _result(out, x)


def _forward(xf, wf, bf, stride, pd, dilation, groups: int, OH: int, OW: int) -> np.ndarray:
    """conv2d in the compute dtype: a new (N, O, OH, OW) array."""
    N = xf.shape[0]
    O, Cg, KH, KW = wf.shape
    out = np.empty((N, O, OH, OW), dtype=xf.dtype)
    if out.size:
        cols = _columns(_padded(xf, pd), KH, KW, OH, OW, stride, dilation, groups)
        ym = np.matmul(wf.reshape(groups, O // groups, Cg * KH * KW), cols)  # (g, O/g, N*L)
        ym = ym.reshape(O, N, OH * OW).transpose(1, 0, 2)
        if bf is not None:
            np.add(ym, bf.reshape(1, O, 1), out=out.reshape(N, O, OH * OW))
        else:
            out.reshape(N, O, OH * OW)[...] = ym
    return out


def conv2d_backward(g, x, w, stride, padding, dilation, groups: int, needs):
    """(dx, dw, db) of conv2d for the output gradient ``g`` (N, O, OH, OW); each is None
    where ``needs`` (three bools, for x, w and bias) says it is not wanted."""
    _same_dtype("conv2d_backward", x, w)
    need_x, need_w, need_b = (tuple(needs) + (False, False, False))[:3]
    N, C, H, W, O, Cg, KH, KW, OH, OW, pd = conv_geometry("conv2d_backward", x.shape, w.shape,
                                                     stride, padding, dilation, groups)
    if tuple(g.shape) != (N, O, OH, OW):
        raise ValueError(f"conv2d_backward: expected the output gradient of shape "
                         f"{(N, O, OH, OW)}, got {tuple(g.shape)}")
    xf, wf, gf = _up(x), _up(w), _up(g).astype(_up(x).dtype, copy=False)
    Og, CgK, NL = O // groups, Cg * KH * KW, N * OH * OW
    (pt, pb), (pl, pr) = pd
    (sh, sw), (dh, dw_) = stride, dilation
    eh, ew = dh * (KH - 1), dw_ * (KW - 1)
    dx_by_forward = sh == sw == 1 and max(pt, pb) <= eh and max(pl, pr) <= ew
    dx = dw = db = None
    gm = None
    if need_w or (need_x and not dx_by_forward):
        # (O, N, OH*OW) laid out as (g, O/g, N*L), the columns' order
        gm = np.ascontiguousarray(gf.reshape(N, O, OH * OW).transpose(1, 0, 2))
        gm = gm.reshape(groups, Og, NL)
    if need_w:
        if NL:
            cols = _columns(_padded(xf, pd), KH, KW, OH, OW, stride, dilation, groups)
            dwf = np.matmul(gm, cols.transpose(0, 2, 1))  # (g, O/g, C/g*KH*KW)
        else:
            dwf = np.zeros((groups, Og, CgK), dtype=xf.dtype)
        dw = _result(dwf.reshape(O, Cg, KH, KW), w)
    if need_x:
        if dx_by_forward and NL and CgK:
            # stride 1: dx is g correlated with the flipped, transposed weight, itself a
            # forward convolution (im2col of g, one matmul per group) with no col2im adds
            wt = wf.reshape(groups, Og, Cg, KH, KW).transpose(0, 2, 1, 3, 4)[..., ::-1, ::-1]
            dx = _result(_forward(gf, wt.reshape(C, Og, KH, KW), None, (1, 1),
                                  ((eh - pt, eh - pb), (ew - pl, ew - pr)), dilation, groups,
                                  H, W), x)
        else:
            dxp = np.zeros((N, C, H + pt + pb, W + pl + pr), dtype=xf.dtype)
            if NL and CgK:
                dcols = np.matmul(wf.reshape(groups, Og, CgK).transpose(0, 2, 1), gm)
                dcols = dcols.reshape(C, KH, KW, N, OH, OW)
                for kh in range(KH):
                    rows = slice(kh * dh, kh * dh + sh * (OH - 1) + 1, sh)
                    for kw in range(KW):
                        cols_ = slice(kw * dw_, kw * dw_ + sw * (OW - 1) + 1, sw)
                        dxp[:, :, rows, cols_] += dcols[:, kh, kw].transpose(1, 0, 2, 3)
            dx = _result(dxp[:, :, pt:pt + H, pl:pl + W], x)
    if need_b:
        db = _result(gf.sum(axis=(0, 2, 3)), x)
    return dx, dw, db
