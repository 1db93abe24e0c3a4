"""Fractional max pooling (Graham, 2014): ``fractional_max_pool2d/3d``, a composite of
``gather`` and ``max``.

Along each pooled dim of size n, output size o and pool size k, a sample u in [0, 1) (one per
sample, plane and dim: ``_random_samples`` of shape (N, C, nd), drawn uniformly when not
given) places the o windows at the pseudo-random, increasing starts::

    alpha = (n - k) / (o - 1)
    start_i = floor((i + u) alpha) - floor(u alpha)   for i < o - 1;   start_{o-1} = n - k

(one window at n - k when o = 1). The starts are computed on the host; the (N, C, *out, K)
table of flat input positions they give is gathered from the input in one ``gather``, then
one ``max`` over the K taps picks each value (the first maximum gets the gradient) and its
flat index in the input plane (volume). The samples are indexed (W, H) in 2-D and (T, H, W) in
3-D, as PyTorch's kernels read them, so the same samples pick the same windows.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.autocast import autocast_op
from ..autograd.ops.creation import rand as _rand
from ..autograd.ops.creation import tensor as _tensor
from ..autograd.tensor import Tensor
from ._convolution import _ntuple

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _starts(u: np.ndarray, n: int, o: int, k: int) -> np.ndarray:
    """(..., o) window starts for samples ``u`` (...,)."""
    if o == 1:
        return np.full(u.shape + (1,), n - k, dtype=np.int64)
    alpha = (n - k) / (o - 1)
    i = np.arange(o - 1)
    s = (np.floor((i + u[..., None]) * alpha) - np.floor(u[..., None] * alpha)).astype(np.int64)
    return np.concatenate([s, np.full(u.shape + (1,), n - k, dtype=np.int64)], axis=-1)


def _fractional_max_pool(input: Tensor, kernel_size, output_size, output_ratio,
                         return_indices: bool, _random_samples, nd: int):
    op = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if input.ndim not in (nd + 1, nd + 2) or any(n == 0 for n in input.shape[-nd:]):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    unbatched = input.ndim == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    kernel = _ntuple(kernel_size, nd, "kernel_size", op)
    sizes = tuple(x.shape[2:])
    if output_size is None:
        ratio = (output_ratio,) * nd if isinstance(output_ratio, (int, float)) \
            else tuple(output_ratio)
        if len(ratio) != nd or not all(0 < r < 1 for r in ratio):  # (the module's check)
            raise ValueError(f"{op}: output_ratio must be between 0 and 1 (got "
                             f"{output_ratio})")
        out = tuple(int(n * r) for n, r in zip(sizes, ratio))
    else:
        out = _ntuple(output_size, nd, "output_size", op)
    names = ("time", "height", "width")[-nd:]
    for name, n, o, k in zip(names, sizes, out, kernel):
        if o + k - 1 > n:
            raise RuntimeError(f"{op}(): pool {name} ({k}) too large relative to input "
                               f"{name} ({n}) for an output {name} of {o}")
    batch, planes = x.shape[:2]
    if _random_samples is None:
        _random_samples = _rand((batch, planes, nd), dtype=x.dtype, device=x.device)
    elif _random_samples.dtype is not x.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if tuple(_random_samples.shape) != (batch, planes, nd):
        raise RuntimeError(f"{op}(): expected _random_samples of shape "
                           f"{[batch, planes, nd]}, but got {list(_random_samples.shape)}")
    u = np.asarray(_random_samples.detach().cpu().numpy(), dtype=np.float64)
    if nd == 2:
        u = u[..., ::-1]  # PyTorch's 2-D kernels read sample 0 for the width
    # flat position of every (window, tap): broadcast over (N, C, *out, *kernel)
    flat = np.zeros((batch, planes) + (1,) * (2 * nd), dtype=np.int64)
    for d, (n, o, k) in enumerate(zip(sizes, out, kernel)):
        pos = _starts(u[..., d], n, o, k)[..., :, None] + np.arange(k)  # (N, C, o, k)
        shape = [batch, planes] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = o, k
        flat = flat * n + pos.reshape(shape)
    flat = np.broadcast_to(flat, (batch, planes) + out + kernel).reshape(
        batch, planes, math.prod(out), math.prod(kernel))
    idx = _tensor(np.ascontiguousarray(flat), device=x.device)
    taps = x.reshape(batch, planes, -1).gather(2, idx.reshape(batch, planes, -1))
    values, arg = taps.reshape(tuple(idx.shape)).max(dim=-1)
    values = values.reshape((batch, planes) + out)
    if unbatched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    indices = idx.gather(-1, arg.unsqueeze(-1)).reshape((batch, planes) + out)
    return values, indices.squeeze(0) if unbatched else indices


@autocast_op("float32 on cpu")
def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """Applies 2D fractional max pooling over an input signal composed of several input
    planes: max pooling over windows of ``kernel_size`` placed at pseudo-random starts so the
    output is ``output_size`` (or ``floor(input size * output_ratio)``) for any input size.

    Args:
        input: (N, C, H, W) or (C, H, W).
        kernel_size: the window size (int or (kH, kW)).
        output_size: the output's (oH, oW) (an int or a pair).
        output_ratio: the output's size as a ratio of the input's, in (0, 1).
        return_indices: also return the flat positions of the maxima in each input plane.
        _random_samples: (N, C, 2) samples in [0, 1) that place the windows (random when
            None).

    Example:
        >>> tg.nn.functional.fractional_max_pool2d(tg.randn(2, 3, 10, 9), 3,
        ...                                        output_ratio=0.5).shape
        tritongrad.Size([2, 3, 5, 4])
    """
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                                _random_samples, 2)


@autocast_op("float32 on cpu")
def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """Applies 3D fractional max pooling (``fractional_max_pool2d``'s arguments, each an int or
    a triple; input (N, C, T, H, W) or (C, T, H, W); ``_random_samples`` (N, C, 3))."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                                _random_samples, 3)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples=None):
    """``fractional_max_pool2d`` returning (values, indices) whatever ``return_indices`` says
    (PyTorch's default, False, shows in its signature but is not read)."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples=None):
    """``fractional_max_pool3d`` returning (values, indices) whatever ``return_indices`` says
    (PyTorch's default, False, shows in its signature but is not read)."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)
