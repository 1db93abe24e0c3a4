"""Max unpooling and LP pooling, composites over the pools of nn/_convolution.py.

* ``max_unpool1d/2d/3d``: the partial inverse of ``max_pool*d``: each pooled value written at
  its flat index into a zero output plane (volume) with one ``scatter`` along the flattened
  spatial dims; its gradient is the output gradient gathered back at the indices.
* ``lp_pool1d/2d/3d``: the power-average pool, ``(sum over the window of x^p)^(1/p)``, as an
  average pool of ``x^p`` times the window's size, then the root. As PyTorch's, the sum goes
  through ``sign(s) relu(|s|)`` first: the same value (a negative sum's fractional root is
  NaN), but a zero gradient through s = 0.
* ``with_indices``: makes ``max_pool*d_with_indices`` / ``adaptive_max_pool*d_with_indices``,
  the max pools with ``return_indices=True`` under PyTorch's names for them.
"""

from __future__ import annotations

import math

from ..autograd import checks
from ..autograd.autocast import autocast_op
from ..autograd.ops.creation import zeros as _zeros
from ..autograd.tensor import Tensor
from ..runtime import dtype as dtypes
from ._convolution import (_ntuple, avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d,
                           max_pool3d)

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d",
           "max_unpool3d"]


# -- max unpooling ---------------------------------------------------------------------------------

def _unpool_output_size(input: Tensor, kernel: tuple, stride: tuple, padding: tuple,
                        output_size) -> tuple:
    """The spatial output size: ``(n - 1) stride - 2 padding + kernel`` per dim, or
    ``output_size`` (its last ``nd`` entries) when it is within one stride of that."""
    nd = len(kernel)
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in
                    zip(input.shape[-nd:], stride, padding, kernel))
    if output_size is None:
        return default
    want = tuple(int(v) for v in output_size)
    if len(want) == nd + 2:
        want = want[2:]
    if len(want) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                         f"elements, but it has a length of '{len(want)}'")
    for d, (w, n, s) in enumerate(zip(want, default, stride)):
        if not n - s < w < n + s:
            raise ValueError(f'invalid output_size "{list(want)}" (dim {d} must be between '
                             f"{n - s} and {n + s})")
    return want


def _max_unpool(input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size,
                nd: int, op: str) -> Tensor:
    checks.tensor_arg(input, op)
    if checks.tensor_arg(indices, op, "indices").dtype is not dtypes.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{indices.dtype}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for "
                           f"input, but got: {list(input.shape)}")
    kernel = _ntuple(kernel_size, nd, "kernel_size", op)
    stride = kernel if stride is None else _ntuple(stride, nd, "stride", op)
    padding = _ntuple(padding, nd, "padding", op)
    out = _unpool_output_size(input, kernel, stride, padding, output_size)
    lead, size = tuple(input.shape[:-nd]), math.prod(out)
    flat_idx = indices.reshape(lead + (-1,))
    if flat_idx.numel():
        lo, hi = int(flat_idx.min().item()), int(flat_idx.max().item())
        if lo < 0 or hi >= size:
            raise RuntimeError(f"Found an invalid max index: {hi if hi >= size else lo} "
                               f"(output volumes are of size {'x'.join(map(str, out))})")
    canvas = _zeros(lead + (size,), dtype=input.dtype, device=input.device)
    return canvas.scatter(-1, flat_idx, input.reshape(lead + (-1,))).reshape(lead + out)


@autocast_op("float32 on cpu")  # (PyTorch's is max_unpool2d's kernel, on its CPU list)
def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Computes a partial inverse of ``max_pool1d``: the pooled values at their indices, zeros
    elsewhere. Input (N, C, L) or (C, L); output length ``(L - 1) stride - 2 padding +
    kernel_size`` unless ``output_size`` picks another (within one stride of it)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpool1d")


@autocast_op("float32 on cpu")
def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Computes a partial inverse of ``max_pool2d``: each value of ``input`` is written at its
    flat index (``indices``, as ``max_pool2d(return_indices=True)`` gives them) into a zero
    (H_out, W_out) plane.

    Args:
        input: (N, C, H, W) or (C, H, W).
        indices: int64, ``input``'s shape: flat positions in each output plane.
        kernel_size, stride, padding: the max pool's (stride defaults to kernel_size).
        output_size: the output's (H, W) (or (N, C, H, W)), to undo a pool whose input size
            the default ``(n - 1) stride - 2 padding + kernel`` does not recover.

    Example:
        >>> F = tg.nn.functional
        >>> y, i = F.max_pool2d(tg.randn(1, 1, 4, 4), 2, return_indices=True)
        >>> F.max_unpool2d(y, i, 2).shape
        tritongrad.Size([1, 1, 4, 4])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpool2d")


@autocast_op("float32 on cpu")
def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Computes a partial inverse of ``max_pool3d`` (``max_unpool2d``'s arguments, each an int
    or a triple; indices are flat positions in each D * H * W output volume)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3,
                       "max_unpool3d")


# -- LP pooling ------------------------------------------------------------------------------------

def _lp_pool(input: Tensor, norm_type: float, kernel_size, stride, ceil_mode: bool, nd: int,
             avg_pool) -> Tensor:
    p = float(norm_type)
    if math.isinf(p):  # the limit of the p-norm: the largest |x| (PyTorch's special case)
        max_pool = (max_pool1d, max_pool2d, max_pool3d)[nd - 1]
        if p > 0:
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    powered = input.pow(p)
    sums = (avg_pool(powered, kernel_size, stride, 0, ceil_mode) if stride is not None else
            avg_pool(powered, kernel_size, padding=0, ceil_mode=ceil_mode))
    # (the kernel read after the pool has checked it, so its errors are the pool's, as
    # PyTorch's)
    kernel = _ntuple(kernel_size, nd, "kernel_size", f"lp_pool{nd}d")
    sums = sums.sign() * sums.abs().relu() * math.prod(kernel)
    return sums.pow(1.0 / p)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """Applies a 1D power-average pooling over an input signal composed of several input
    planes: ``f(X) = (sum_{x in X} x^p)^(1/p)`` over each window (p = ``norm_type``; p = 1 is
    sum pooling; p = inf takes the largest |x| of each window, p = -inf the smallest).
    Negative inputs: as PyTorch's, a non-integer p, or a negative sum under a fractional root,
    gives NaN. With ``ceil_mode`` a
    last window cut short by the input's end counts as its mean times the kernel size (an
    average pool times the kernel size, as PyTorch computes it)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, avg_pool1d)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """Applies a 2D power-average pooling (``lp_pool1d``'s formula) over (N, C, H, W) or
    (C, H, W) input; ``kernel_size`` and ``stride`` are ints or pairs (stride defaults to the
    kernel size).

    Example:
        >>> tg.nn.functional.lp_pool2d(tg.ones(1, 1, 4, 4), 2, 2)
        tensor([[[[2., 2.],
                  [2., 2.]]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, avg_pool2d)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """Applies a 3D power-average pooling (``lp_pool1d``'s formula) over (N, C, D, H, W) or
    (C, D, H, W) input."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, avg_pool3d)


# -- the pools with indices, under PyTorch's names -----------------------------------------------

def with_indices(pool):
    """``pool(..., return_indices=True)`` as PyTorch's ``<pool>_with_indices``: (values,
    indices). nn.functional applies it to its (autocast-wrapped) max pools."""
    def fn(input: Tensor, *args, **kwargs):
        kwargs["return_indices"] = True
        return pool(input, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = f"{pool.__name__}_with_indices"
    fn.__doc__ = f"``{pool.__name__}(..., return_indices=True)``: (values, indices)."
    return fn
