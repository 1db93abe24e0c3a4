"""Max pooling with indices and average pooling over NumPy arrays: the CPU's fused
max_pool1d/2d/3d and avg_pool1d/2d/3d (the nodes in autograd/ops/pooling.py; other devices
compose the pools from windows and a max or a sum, in nn/_convolution.py).

x (N, C, *S) with nd = len(S) spatial dims; window o along dim i covers positions o s_i - p_i
+ j d_i, j < k_i, those outside [0, S_i) left out (PyTorch's implicit -inf padding). Each
output is its window's maximum and the flat position of that maximum in its input plane
(volume for 3-D), PyTorch's rule: the first strictly greater value wins, a NaN wins over
anything (the last NaN, as PyTorch's kernels scan), and a window of -inf points at its first
position inside the input. The backward adds each output's gradient at its position
(overlapping windows may share one). A compiled loop (nn_loops.max_pool) does both in one
pass where kernels/numpy/jit.py allows, MaxPool2d(2)'s windows a loop of their own
(nn_loops.max_pool_2x2, Note [2x2 max pool]); the NumPy form gathers the windows instead.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import jit
from .nn import _fresh, _up

__all__ = ["avg_divisor", "avg_pool", "avg_pool_backward", "max_pool", "max_pool_backward"]


def _as_3d(shape: tuple, params: tuple, fill: int) -> tuple:
    """A 1-D or 2-D pool's per-dim ``params`` padded in front to three dims."""
    return (fill,) * (3 - len(shape)) + tuple(params)


def max_pool(x, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, out: tuple):
    """(values (N, C, *out) in x's dtype, indices (N, C, *out) int64) of the max pool."""
    xf = _up(x)
    n, c, sizes = x.shape[0], x.shape[1], tuple(x.shape[2:])
    loops = jit.loops("nn_loops")
    if loops is not None and _channels_last(xf) and _is_2x2(sizes, kernel, stride, padding,
                                                            dilation, out):
        # a channels-last input pooled as its memory holds it: no copy in, and results in
        # its layout (PyTorch's), which the caller would otherwise copy into
        values = np.empty((n,) + tuple(out) + (c,), xf.dtype)
        index = np.empty(values.shape, np.int64)
        loops.max_pool_2x2_nhwc(xf.transpose(0, 2, 3, 1), values, index)
        return _fresh(values, x).transpose(0, 3, 1, 2), index.transpose(0, 3, 1, 2)
    x4 = np.ascontiguousarray(xf).reshape((n * c,) + _as_3d(sizes, sizes, 1))
    values = np.empty((n * c,) + _as_3d(out, out, 1), xf.dtype)
    index = np.empty(values.shape, np.int64)
    k3, s3, p3, d3 = (_as_3d(out, v, fill) for v, fill
                      in ((kernel, 1), (stride, 1), (padding, 0), (dilation, 1)))
    if loops is not None and _is_2x2(sizes, kernel, stride, padding, dilation, out):
        loops.max_pool_2x2(x4[:, 0], values[:, 0], index[:, 0])  # Note [2x2 max pool]
    elif loops is not None:
        plane = x4.shape[1:]
        taps = np.array([(i * d3[0] * plane[1] + j * d3[1]) * plane[2] + k * d3[2]
                         for i, j, k in np.ndindex(*k3)], np.int64)
        loops.max_pool(x4, *(np.array(v) for v in (k3, s3, p3, d3)), taps, values, index)
    else:
        _max_pool_numpy(x4, k3, s3, p3, d3, values, index)
    shape = (n, c) + tuple(out)
    return _fresh(values.reshape(shape), x), index.reshape(shape)


def _channels_last(x: np.ndarray) -> bool:
    """Whether 4-D ``x`` is densely channels-last (NHWC memory) and not row-major."""
    return x.ndim == 4 and not x.flags.c_contiguous and x.transpose(0, 2, 3, 1).flags.c_contiguous


def _is_2x2(sizes, kernel, stride, padding, dilation, out) -> bool:
    """Whether a pool is MaxPool2d(2)'s: 2x2 windows at stride 2, none past the input."""
    return (len(sizes) == 2 and tuple(kernel) == tuple(stride) == (2, 2)
            and not any(padding) and tuple(dilation) == (1, 1)
            and 2 * out[0] <= sizes[0] and 2 * out[1] <= sizes[1])


def _max_pool_numpy(x4, kernel, stride, padding, dilation, values, index) -> None:
    """max_pool's NumPy form over (P, D, H, W) ``x4``: the taps of a -inf padded copy walked
    one strided view (P, *out) at a time, a few passes each (a tap's index replaces the
    running one where it is strictly greater: the first maximum), then mapped to plane
    positions; the rare windows holding a NaN or only -inf fixed up after."""
    p_, sizes, out = x4.shape[0], x4.shape[1:], values.shape[1:]
    reach = [max(n + q, (o - 1) * s + (k - 1) * d + 1) for n, q, o, s, k, d
             in zip(sizes, padding, out, stride, kernel, dilation)]
    canvas = np.full((p_, *reach), -np.inf, x4.dtype)
    canvas[(slice(None),) + tuple(slice(q, q + n) for q, n in zip(padding, sizes))] = x4
    st = canvas.strides
    win = as_strided(canvas, (p_, *out, *kernel),
                     (st[0], *(a * s for a, s in zip(st[1:], stride)),
                      *(a * d for a, d in zip(st[1:], dilation))), writeable=False)
    lead = (slice(None),) * (1 + len(out))
    taps = [win[lead + t] for t in np.ndindex(*kernel)]  # each (P, *out), no copy
    best = values.reshape(taps[0].shape)
    best[...] = taps[0]
    arg = np.zeros(best.shape, np.int64)
    step = np.empty_like(arg)
    for j, v in enumerate(taps[1:], 1):  # j exceeds every index so far: max() moves it
        np.maximum(arg, np.multiply(v > best, j, out=step), out=arg)
        np.maximum(best, v, out=best)  # (NaN propagates: fixed below)
    odd = np.isnan(best)
    if odd.any():  # PyTorch's kernels keep the last NaN of a window
        arg[odd] = 0
        for j, v in enumerate(taps):
            arg[odd] = np.maximum(arg[odd], np.isnan(v[odd]) * j)
    pos, inside = _tap_positions(sizes, kernel, stride, padding, dilation, out)
    arg = arg.reshape(p_, -1)
    if any(padding):  # a window of -inf points at its first position inside the input
        out_of = ~np.take_along_axis(inside[None], arg[..., None], axis=2)[..., 0]
        if out_of.any():
            arg[out_of] = np.broadcast_to(np.argmax(inside, axis=1), arg.shape)[out_of]
    index.reshape(arg.shape)[...] = pos[np.arange(pos.shape[0])[None, :], arg]


def _tap_positions(sizes, kernel, stride, padding, dilation, out) -> tuple:
    """(L, K) int64 positions in the unpadded plane of each window's taps, and (L, K) bool:
    whether the tap lies inside the input."""
    pos = np.zeros((1, 1), np.int64)
    inside = np.ones((1, 1), bool)
    for n, q, o, s, k, d in zip(sizes, padding, out, stride, kernel, dilation):
        at = np.arange(o)[:, None] * s - q + np.arange(k)[None, :] * d  # (o, k)
        pos = (pos[:, None, :, None] * n + at[None, :, None, :]).reshape(
            pos.shape[0] * o, pos.shape[1] * k)
        inside = (inside[:, None, :, None] & ((at >= 0) & (at < n))[None, :, None, :]).reshape(
            pos.shape)
    return pos, inside


def max_pool_backward(g, index: np.ndarray, input_shape: tuple, channels_last: bool = False):
    """The input gradient (``input_shape``, g's dtype) of max_pool: each output's gradient
    added at its index in its plane. ``channels_last``: the gradient is made channels-last
    (NHWC / NDHWC memory), where the compiled loops run (else row-major)."""
    gf = _up(g)
    n, c = input_shape[:2]
    plane = math.prod(input_shape[2:])
    if channels_last and (loops := jit.loops("nn_loops")) is not None:
        # written in place, in NHWC order: no copy of g, the indices or the result (a
        # channels-last network's gradients are so already)
        dx = np.zeros((n, plane, c), gf.dtype)
        loops.max_pool_backward_nhwc(gf.reshape(n, c, -1), index.reshape(n, c, -1), dx)
        spatial = tuple(input_shape[2:])
        dx = dx.reshape((n,) + spatial + (c,)).transpose(0, len(spatial) + 1,
                                                         *range(1, len(spatial) + 1))
        return _fresh(dx, g)
    g2 = np.ascontiguousarray(gf).reshape(n * c, -1)
    i2 = np.ascontiguousarray(index).reshape(n * c, -1)
    if (loops := jit.loops("nn_loops")) is not None:
        dx = np.zeros((n * c, plane), gf.dtype)
        loops.max_pool_backward(g2, i2, dx)
    else:
        flat = (i2 + np.arange(n * c)[:, None] * plane).reshape(-1)
        dx = np.bincount(flat, weights=g2.reshape(-1), minlength=n * c * plane).astype(gf.dtype)
    return _fresh(dx.reshape(input_shape), g)


def avg_divisor(sizes: tuple, kernel: tuple, stride: tuple, padding: tuple, out: tuple,
                count_include_pad: bool, divisor_override) -> np.ndarray:
    """(*out) int64: each average pool window's divisor, PyTorch's rule: ``divisor_override``
    where given, else the window's volume clipped to the padded input (``count_include_pad``)
    or to the input itself, the outer product of the per-dim lengths."""
    if divisor_override is not None:
        return np.full(tuple(out), divisor_override, np.int64)
    lengths = []
    for n, k, s, p, o in zip(sizes, kernel, stride, padding, out):
        start = np.arange(o, dtype=np.int64) * s - p
        end = np.minimum(start + k, n + p)
        lengths.append(end - start if count_include_pad else
                       np.minimum(end, n) - np.maximum(start, 0))
    return functools.reduce(np.multiply.outer, lengths)


@functools.lru_cache(maxsize=128)
def _avg_plan(sizes: tuple, spec: tuple, dtype: np.dtype) -> tuple:
    """(div (OD, OH, OW) in ``dtype``, kernel, stride and padding as (3,) int arrays, the
    three as tuples, out as three dims) of an average pool of ``spec`` (``avg_pool``'s) over
    planes of ``sizes``: what every call of one layer would otherwise make again (a third of
    a small pool's time)."""
    kernel, stride, padding, out, include_pad, override = spec
    div = avg_divisor(sizes, kernel, stride, padding, out, include_pad, override)
    out3 = _as_3d(out, out, 1)
    div = div.astype(dtype).reshape(out3)
    div.flags.writeable = False
    k3, s3, p3 = (_as_3d(out, v, fill) for v, fill in ((kernel, 1), (stride, 1), (padding, 0)))
    return div, *(np.array(v) for v in (k3, s3, p3)), k3, s3, p3, out3


def avg_pool(x, spec: tuple):
    """(N, C, *out) in x's dtype: the average pool of ``spec`` = (kernel, stride, padding,
    out, count_include_pad, divisor_override), each window's sum of the taps inside the input
    over its divisor (``avg_divisor``'s), computed as PyTorch's CPU kernel (float16 and
    bfloat16 in float32, rounded once)."""
    xf = _up(x)
    n, c, sizes = x.shape[0], x.shape[1], tuple(x.shape[2:])
    div, ka, sa, pa, k3, s3, p3, out3 = _avg_plan(sizes, spec, xf.dtype)
    x4 = np.ascontiguousarray(xf).reshape((n * c,) + _as_3d(sizes, sizes, 1))
    values = np.empty((n * c,) + out3, xf.dtype)
    if (loops := jit.loops("nn_loops")) is not None:
        loops.avg_pool(x4, ka, sa, pa, div, np.zeros(1, xf.dtype), values)
    else:
        canvas = np.zeros((n * c, *_reach(x4.shape[1:], k3, s3, p3, out3)), xf.dtype)
        canvas[(slice(None),) + tuple(slice(q, q + m) for q, m in zip(p3, x4.shape[1:]))] = x4
        win = _windows(canvas, k3, s3, out3)
        total = None
        for t in np.ndindex(*k3):  # the taps in scan order (a padded one adds a zero)
            tap = win[(slice(None),) * 4 + t]
            total = tap.copy() if total is None else np.add(total, tap, out=total)
        np.divide(total, div, out=values)
    return _fresh(values.reshape((n, c) + tuple(spec[3])), x)


def avg_pool_backward(g, input_shape: tuple, spec: tuple):
    """The input gradient (``input_shape``, g's dtype, row-major) of ``avg_pool(x, spec)``:
    each output's gradient over its divisor added at its window's taps inside the input."""
    gf = _up(g)
    n, c, sizes = input_shape[0], input_shape[1], tuple(input_shape[2:])
    div, ka, sa, pa, k3, s3, p3, out3 = _avg_plan(sizes, spec, gf.dtype)
    g4 = np.ascontiguousarray(gf).reshape((n * c,) + out3)
    plane = _as_3d(sizes, sizes, 1)
    if (loops := jit.loops("nn_loops")) is not None:
        dx = np.zeros((n * c,) + plane, gf.dtype)
        loops.avg_pool_backward(g4, ka, sa, pa, div, dx)
    else:  # each tap's shares added onto a zero padded canvas, then cropped
        canvas = np.zeros((n * c, *_reach(plane, k3, s3, p3, out3)), gf.dtype)
        win = _windows(canvas, k3, s3, out3)
        share = g4 / div
        for t in np.ndindex(*k3):  # (one tap's positions are distinct: no lost updates)
            win[(slice(None),) * 4 + t] += share
        dx = canvas[(slice(None),) + tuple(slice(q, q + m) for q, m in zip(p3, plane))]
    return _fresh(dx.reshape(input_shape), g)


def _reach(sizes: tuple, kernel: tuple, stride: tuple, padding: tuple, out: tuple) -> list:
    """The extent per dim of a zero padded canvas holding every window (a ceil_mode window
    may reach past the right padding)."""
    return [max(m + 2 * q, (o - 1) * s + k) for m, q, o, s, k
            in zip(sizes, padding, out, stride, kernel)]


def _windows(canvas: np.ndarray, kernel: tuple, stride: tuple, out: tuple) -> np.ndarray:
    """(P, *out, *kernel): the pool's windows over the zero padded ``canvas`` (P, *reach), a
    strided view (writes through it land in the canvas)."""
    st = canvas.strides
    return as_strided(canvas, (canvas.shape[0], *out, *kernel),
                      (st[0], *(a * s for a, s in zip(st[1:], stride)), *st[1:]))
