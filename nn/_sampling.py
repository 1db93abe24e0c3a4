"""``F.interpolate`` and the ``Upsample`` modules (resizing along the spatial dimensions), and
``F.affine_grid`` / ``F.grid_sample`` (sampling at arbitrary locations: spatial
transformers).

Every mode is separable, so the resize is one step per spatial dimension, each a gather of
input rows (``index_select``) with per-output weights (a composite of differentiable ops:
the backward is the gathers' index_add, on both backends). The source positions and weights
follow ATen's upsample kernels exactly, including where they compute in float32:

- ``nearest``: ``src = min(floor(dst * scale), in - 1)``, ``scale`` = 1 / scale_factor when
  one is given (and not recomputed), else in / out, in float32 (ATen's ``nearest_idx``);
  ``nearest-exact``: ``floor((dst + 0.5) * scale)``;
- ``linear``/``bilinear``/``trilinear``: ``src = (dst + 0.5) * scale - 0.5`` clamped at 0, or
  ``dst * (in - 1) / (out - 1)`` with ``align_corners``; the two neighbours ``floor(src)`` and
  the next (the last row repeats at the edge), weighted ``1 - t`` and ``t``;
- ``bicubic``: the same source position without the clamp at 0, the four neighbours around
  it (indices clamped to the input), Keys' cubic convolution weights with ``A = -0.75``; as
  ATen, the position's integer part is at most the last row and its fraction within [0, 1];
- ``area``: adaptive average pooling.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.ops.creation import tensor as _tensor
from ..autograd.tensor import Tensor
from ..runtime import dtype as dtypes
from ._convolution import adaptive_avg_pool2d
from .module import Module

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "affine_grid",
           "grid_sample", "interpolate"]

_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}  # mode -> the spatial dims it needs
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_CUBIC_A = -0.75


def _scale(n_in: int, n_out: int, align_corners: bool, scale_factor) -> float:
    """ATen's ``area_pixel_compute_scale``: the source step per output step."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale_factor if scale_factor else n_in / n_out


def _nearest(n_in: int, n_out: int, scale_factor, exact: bool) -> np.ndarray:
    scale = np.float32(1.0 / scale_factor if scale_factor else n_in / n_out)
    dst = np.arange(n_out, dtype=np.float32) + (np.float32(0.5) if exact else np.float32(0))
    return np.minimum(np.floor(dst * scale).astype(np.int64), n_in - 1)


def _source(n_in: int, n_out: int, align_corners: bool, scale_factor, cubic: bool):
    scale = _scale(n_in, n_out, align_corners, scale_factor)
    dst = np.arange(n_out, dtype=np.float64)
    src = dst * scale if align_corners else (dst + 0.5) * scale - 0.5
    return src if cubic else np.maximum(src, 0.0)


def _taps(mode: str, n_in: int, n_out: int, align_corners: bool, scale_factor):
    """[(index (n_out,), weight (n_out,) or None)]: the output along one dimension is the sum
    over the list of ``weight * input[index]``."""
    if mode in ("nearest", "nearest-exact"):
        return [(_nearest(n_in, n_out, scale_factor, mode == "nearest-exact"), None)]
    src = _source(n_in, n_out, align_corners, scale_factor, mode == "bicubic")
    # ATen's guard_index_and_lambda: the index at most the last row, the fraction in [0, 1]
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    t = np.clip(src - i0, 0.0, 1.0)
    if mode == "bicubic":
        a = _CUBIC_A
        x1, x2 = t + 1.0, 1.0 - t
        weights = [((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a,
                   ((a + 2) * t - (a + 3)) * t * t + 1,
                   ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1,
                   ((a * (x2 + 1) - 5 * a) * (x2 + 1) + 8 * a) * (x2 + 1) - 4 * a]
        return [(np.clip(i0 + k - 1, 0, n_in - 1), w) for k, w in enumerate(weights)]
    return [(i0, 1.0 - t), (np.minimum(i0 + 1, n_in - 1), t)]


def _resize_dim(x: Tensor, dim: int, taps) -> Tensor:
    shape = [1] * x.ndim
    shape[dim] = -1
    out = None
    for index, weight in taps:
        part = x.index_select(dim, _tensor(index, device=x.device))
        if weight is not None:
            part = part * _tensor(weight, dtype=x.dtype, device=x.device).reshape(shape)
        out = part if out is None else out + part
    return out


def _per_dim(value, nd: int, name: str) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != nd:
            raise ValueError(f"Input and {name} must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{nd} and {name} of {list(value)}. Please provide input tensor "
                             f"in (N, C, d1, d2, ...,dK) format and {name} in "
                             f"(o1, o2, ...,oK) format.")
        return list(value)
    return [value] * nd


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Down/up samples the input to the given ``size`` or by the given ``scale_factor``.

    Args:
        input: (N, C, *spatial) with 1 to 3 spatial dimensions.
        size: the output spatial size (an int or one per dimension).
        scale_factor: multiplier for the spatial size (a float or one per dimension); the
            output size is ``floor(in * scale_factor)``.
        mode: ``'nearest'`` (default), ``'nearest-exact'``, ``'linear'`` (3-D input),
            ``'bilinear'``, ``'bicubic'`` (4-D), ``'trilinear'`` (5-D) or ``'area'``.
        align_corners: for the interpolating modes, map the corner pixels' centres onto each
            other (default False).
        recompute_scale_factor: compute the sampling from the output size instead of the
            given ``scale_factor`` (they differ when ``in * scale_factor`` is not whole).
        antialias: only False (an anti-aliasing filter for downsampling is not implemented).
    """
    if mode not in _MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.ndim}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | area | nearest-exact "
                                  f"(got {mode})")
    interpolating = mode in _LINEAR or mode == "bicubic"
    if align_corners is not None and not interpolating:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    align_corners = bool(align_corners)
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported (only False)")
    nd = input.ndim - 2
    if nd not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.ndim}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | area | nearest-exact "
                                  f"(got {mode})")
    need = _LINEAR.get(mode, 2 if mode == "bicubic" else nd)
    if need != nd:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{need + 2}D input")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    spatial = list(input.shape[2:])
    if size is not None:
        out = [int(v) for v in _per_dim(size, nd, "size")]
        scales = [None] * nd
    else:
        factors = [float(v) for v in _per_dim(scale_factor, nd, "scale_factor")]
        out = [math.floor(n * f) for n, f in zip(spatial, factors)]
        scales = [None] * nd if recompute_scale_factor else factors
    if any(v <= 0 for v in out):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(map(str, spatial))}) and output "
                           f"({', '.join(map(str, out))})")
    if mode == "area":
        if nd == 2:
            return adaptive_avg_pool2d(input, tuple(out))
        # 1-D and 3-D: the same averaging one dimension at a time (it is separable)
        x = input
        for d, (n_in, n_out) in enumerate(zip(spatial, out)):
            x = _area_dim(x, 2 + d, n_in, n_out)
        return x
    x = input
    if not (x.dtype.is_floating_point or mode.startswith("nearest")):
        raise RuntimeError(f"interpolate: {mode} mode needs a floating point input, got "
                           f"{x.dtype}")
    for d, (n_in, n_out, sf) in enumerate(zip(spatial, out, scales)):
        if n_in != n_out or sf not in (None, 1.0):
            x = _resize_dim(x, 2 + d, _taps(mode, n_in, n_out, align_corners, sf))
    return x


def _area_dim(x: Tensor, dim: int, n_in: int, n_out: int) -> Tensor:
    """Adaptive average pooling along ``dim``: window i is [floor(i n / o), ceil((i+1) n / o))."""
    rows = []
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)
        rows.append(x.narrow(dim, lo, hi - lo).mean(dim, keepdim=True))
    from ..autograd.ops.shape import cat

    return cat(rows, dim)


class Upsample(Module):
    """Upsamples multi-channel 1-D (temporal), 2-D (spatial) or 3-D (volumetric) data with
    ``F.interpolate``'s ``size`` or ``scale_factor``, ``mode`` and ``align_corners``.

    Example:
        >>> tg.nn.Upsample(scale_factor=2, mode="nearest")(tg.arange(4.).view(1, 1, 2, 2))
        tensor([[[[0., 0., 1., 1.],
                  [0., 0., 1., 1.],
                  [2., 2., 3., 3.],
                  [2., 2., 3., 3.]]]])
    """

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None):
        super().__init__()
        self.size = size
        self.scale_factor = (float(scale_factor) if isinstance(scale_factor, (int, float))
                             else scale_factor)
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample`` with ``mode='nearest'`` for 4-D input."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample`` with ``mode='bilinear'`` and ``align_corners=True`` for 4-D input."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


# -- spatial transformers: affine_grid and grid_sample ------------------------------------------

def _base_coords(n: int, align_corners: bool, like: Tensor) -> Tensor:
    """The normalised coordinates of ``n`` pixel centres: -1 .. 1 at the corner pixels'
    centres (``align_corners``) or at the image's edges."""
    from ..autograd.ops.creation import linspace

    c = linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    return c if align_corners or n <= 1 else c * ((n - 1) / n)


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) of the affine maps ``theta`` (N, 2, 3) for an output of
    ``size`` (N, C, H, W): each output pixel's normalised (x, y) is theta @ (x, y, 1)."""
    from ..autograd.ops.shape import stack

    align_corners = bool(align_corners)
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid only supports 4D sizes, for 2D affine "
                                  f"transformations. Got size {list(size)}.")
    n, _, h, w = (int(v) for v in size)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype}")
    if tuple(theta.shape) != (n, 2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                         f"{list(size)}. Got {list(theta.shape)}.")
    xs = _base_coords(w, align_corners, theta).reshape(1, w).expand(h, w)
    ys = _base_coords(h, align_corners, theta).reshape(h, 1).expand(h, w)
    base = stack([xs, ys, xs.new_ones(h, w)], -1).reshape(1, h * w, 3)
    return base.matmul(theta.transpose(1, 2)).reshape(n, h, w, 2)


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """ATen's reflect_coordinates: fold ``coord`` into [twice_low / 2, twice_high / 2]."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    d = (coord - low).abs()
    flips = (d / span).floor().detach()
    extra = d - flips * span
    odd = (flips.remainder(2) != 0)
    return (span - extra + low).where(odd, extra + low)


def _clip(x: Tensor, size: int) -> Tensor:
    """``x`` clamped to [0, size - 1] with ATen's gradient: 1 strictly inside, 0 at the
    bounds and beyond (clamp's would pass it at the bounds)."""
    inside = (x > 0).logical_and(x < size - 1)
    return x.where(inside, x.detach().clamp(0, size - 1))


def _grid_source(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    x = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        x = _clip(x, size)
    elif padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        x = _clip(x, size)
    return x


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Samples ``input`` (N, C, H, W) at the normalised locations ``grid`` (N, H_out, W_out,
    2) holding (x, y) in [-1, 1]: ``mode`` ``"bilinear"`` or ``"nearest"``; outside the input,
    ``padding_mode`` ``"zeros"``, ``"border"`` (the edge) or ``"reflection"``. Differentiable
    in both ``input`` and ``grid`` (ATen's formulas: the four neighbours ``floor`` and
    ``floor + 1`` weighted by the opposite areas; nearest rounds half to even). With
    ``"nearest"`` the output does not depend on ``grid`` (its gradient is None here, zeros in
    PyTorch). 4-D input only (no ``"bicubic"``, no volumetric input)."""
    align_corners = bool(align_corners)
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"grid_sample: mode {mode!r} is not supported (bilinear, "
                                  f"nearest)")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2:
        raise NotImplementedError(f"grid_sample: expected 4-D input and a grid of shape (N, "
                                  f"H_out, W_out, 2), got {list(input.shape)} and "
                                  f"{list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1:3]
    ix = _grid_source(grid[..., 0], w, padding_mode, align_corners)
    iy = _grid_source(grid[..., 1], h, padding_mode, align_corners)
    flat = input.reshape(n, c, h * w)

    def tap(xi: Tensor, yi: Tensor) -> Tensor:
        """input at integer (x, y) per output position (N, C, H_out, W_out); 0 outside."""
        inside = (xi >= 0).logical_and(xi <= w - 1).logical_and(yi >= 0).logical_and(
            yi <= h - 1)
        index = (yi.clamp(0, h - 1) * w + xi.clamp(0, w - 1)).to(dtypes.int64)
        got = flat.gather(2, index.reshape(n, 1, ho * wo).expand(n, c, ho * wo))
        return got.reshape(n, c, ho, wo) * inside.to(input.dtype).unsqueeze(1)

    if mode == "nearest":
        return tap(ix.detach().round(), iy.detach().round())
    x0, y0 = ix.detach().floor(), iy.detach().floor()
    x1, y1 = x0 + 1, y0 + 1
    wx1, wy1 = (ix - x0).unsqueeze(1), (iy - y0).unsqueeze(1)  # the weights carry the grad
    wx0, wy0 = 1 - wx1, 1 - wy1
    return (tap(x0, y0) * wx0 * wy0 + tap(x1, y0) * wx1 * wy0
            + tap(x0, y1) * wx0 * wy1 + tap(x1, y1) * wx1 * wy1)
