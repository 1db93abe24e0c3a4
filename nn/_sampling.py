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
- ``area``: adaptive average pooling;
- ``antialias=True`` (``bilinear``/``bicubic``, 4-D): ATen's separable antialiasing filter
  (``_upsample_{bilinear,bicubic}2d_aa``): output ``i`` is centred at ``scale * (i + 0.5)``
  and averages the inputs within the filter's support (1 for the triangle of bilinear, 2 for
  the cubic of bicubic, which has ``A = -0.5`` there), stretched by ``scale`` when
  downsampling, the weights normalised to sum to one.

``grid_sample`` combines per-axis taps (one set per spatial dimension, the same code for
4-D and 5-D input) into every combination: one gather of the input at the combined indices,
weighted by the products of the taps' weights, which carry the gradient to the grid.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd import checks
from ..autograd.autocast import autocast_op
from ..autograd.ops.creation import tensor as _tensor
from ..autograd.ops.sampling_nodes import (UPSAMPLE, GridSampler2DBackward0,
                                           GridSampler3DBackward0, linear_node, recomputed_node)
from ..autograd.tensor import Tensor
from ..runtime import dtype as dtypes
from ._convolution import (_channels_last_like, adaptive_avg_pool1d, adaptive_avg_pool2d,
                           adaptive_avg_pool3d)
from .module import Module

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "affine_grid",
           "grid_sample", "interpolate"]

_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}  # mode -> the spatial dims it needs
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_CUBIC_A = -0.75
_AA_CUBIC_A = -0.5  # the cubic of the antialiasing filter (ATen's, PIL's)


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
        return [(np.clip(i0 + k - 1, 0, n_in - 1), w)
                for k, w in enumerate(_cubic_weights(t))]
    return [(i0, 1.0 - t), (np.minimum(i0 + 1, n_in - 1), t)]


def _cubic_weights(t, a: float = _CUBIC_A) -> list:
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 around a position whose
    fraction is ``t`` (ATen's ``get_cubic_upsample_coefficients``); ``t`` an array or a Tensor
    (the weights are then differentiable in it)."""
    x1, x2 = t + 1.0, 1.0 - t
    return [((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1,
            ((a * (x2 + 1) - 5 * a) * (x2 + 1) + 8 * a) * (x2 + 1) - 4 * a]


def _aa_filter(mode: str, x: np.ndarray) -> np.ndarray:
    """ATen's ``aa_filter``: the triangle (bilinear) or the cubic with A = -0.5 (bicubic)."""
    x = np.abs(x)
    if mode == "bilinear":
        return np.maximum(1.0 - x, 0.0)
    a = _AA_CUBIC_A
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _aa_taps(mode: str, n_in: int, n_out: int, align_corners: bool, scale_factor):
    """``_taps`` of the antialiasing filter (ATen's ``_compute_indices_min_size_weights_aa``):
    output ``i`` is centred at ``scale (i + 0.5)`` (with ``align_corners`` too: only the scale
    changes), reads the inputs ``[floor(centre - support + .5), floor(centre + support + .5))``
    within the input, weighted by the filter at ``j - centre + .5`` and normalised.
    Downsampling (``scale > 1``) stretches the support and the filter by ``scale``."""
    scale = _scale(n_in, n_out, align_corners, scale_factor)
    stretch = max(scale, 1.0)
    support = (1.0 if mode == "bilinear" else 2.0) * stretch
    centre = scale * (np.arange(n_out, dtype=np.float64) + 0.5)
    lo = np.maximum(np.floor(centre - support + 0.5), 0).astype(np.int64)
    hi = np.minimum(np.floor(centre + support + 0.5).astype(np.int64), n_in)
    width = max(int((hi - lo).max()), 1)
    index = lo[:, None] + np.arange(width)  # (n_out, width); past hi weighs nothing
    weight = _aa_filter(mode, (index - centre[:, None] + 0.5) / stretch) * (index < hi[:, None])
    total = weight.sum(1, keepdims=True)
    weight = weight / np.where(total != 0.0, total, 1.0)
    index = np.minimum(index, n_in - 1)
    return [(index[:, k], weight[:, k]) for k in range(width)]


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


# PyTorch 2.13's words for a size / scale_factor of the wrong length: (what the input is
# compared with, how the value is named, the placeholder of the expected format)
_PER_DIM_WORDS = {"size": ("output", "output size of", "output size in (o1, o2, ...,oK)"),
                  "scale_factor": ("scale_factor", "scale_factor of shape",
                                   "scale_factor in (s1, s2, ...,sK)")}


def _per_dim(value, spatial: list, name: str) -> list:
    nd = len(spatial)
    if isinstance(value, (list, tuple)):
        if len(value) != nd:
            what, called, fmt = _PER_DIM_WORDS[name]
            raise ValueError(f"Input and {what} must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{spatial} and {called} {value}. Please provide input tensor "
                             f"in (N, C, d1, d2, ...,dK) format and {fmt} format.")
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
        antialias: for ``'bilinear'`` and ``'bicubic'`` on 4-D input, apply an anti-aliasing
            filter when downsampling (the filter's support scaled by the scale factor; the
            bicubic filter then has ``A = -0.5``, as PIL's). Default False.
    """
    checks.tensor_arg(input, "interpolate")
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
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and "
                         "requires a 4-D tensor as input")
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
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    spatial = list(input.shape[2:])
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        out = [int(v) for v in _per_dim(size, spatial, "size")]
        scales = [None] * nd
    else:
        factors = [float(v) for v in _per_dim(scale_factor, spatial, "scale_factor")]
        out = [math.floor(n * f) for n, f in zip(spatial, factors)]
        scales = [None] * nd if recompute_scale_factor else factors
    if input.shape[1] == 0:  # (an empty batch is fine; empty channels are not, as PyTorch)
        raise RuntimeError(f"interpolate: Non-empty {input.ndim}D data tensor expected but got "
                           f"a tensor with sizes {list(input.shape)}")
    # (area is an adaptive pool, which takes an empty output: a small scale_factor's 0)
    if any(v <= 0 for v in spatial) or (mode != "area" and any(v <= 0 for v in out)):
        raise RuntimeError(f"interpolate: Input and output sizes should be greater than 0, but "
                           f"got input "
                           f"({', '.join(map(str, spatial))}) and output "
                           f"({', '.join(map(str, out))})")
    image = input.dtype.name == "uint8" and (mode.startswith("nearest") or mode == "bicubic"
                                             or mode == "bilinear")
    if not (input.dtype.is_floating_point or image):
        # (PyTorch's kernels: floating dtypes; nearest, bilinear and bicubic also uint8)
        raise NotImplementedError(f"interpolate: {mode} mode needs a floating point input"
                                  f"{' (or uint8)' if mode != 'area' else ''}, "
                                  f"got {input.dtype}")
    if mode == "area":  # (PyTorch's: the adaptive average pool of the spatial dims' count)
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1]
        return pool(input, tuple(out))
    plan = []  # (dim, taps) per resized dimension
    for d, (n_in, n_out, sf) in enumerate(zip(spatial, out, scales)):
        if antialias:  # ATen's separable filter leaves the dimensions it does not resize
            if n_in != n_out:
                plan.append((2 + d, _aa_taps(mode, n_in, n_out, align_corners, sf)))
        elif n_in != n_out or (sf not in (None, 1.0) and not _copies_same_size(mode, nd)):
            plan.append((2 + d, _taps(mode, n_in, n_out, align_corners, sf)))
    if image and not mode.startswith("nearest"):
        # PyTorch's uint8 image kernels: the width pass, then the height pass, each rounded
        # and clamped to uint8 (theirs in fixed point: a value may differ by 1 or 2)
        x = input.to(dtypes.float32)
        for dim, taps in reversed(plan):
            x = _resize_dim(x, dim, taps).round().clamp(0, 255)
        return x.to(dtypes.uint8)
    # one node, named as PyTorch's, saving nothing: the resize is linear in the input
    y = linear_node(UPSAMPLE[mode, nd, antialias], input, _resize, tuple(plan),
                    transpose=_resize_t)
    return _channels_last_like(y, input)


def _copies_same_size(mode: str, nd: int) -> bool:
    """Whether a dimension whose size a ``scale_factor`` other than 1 keeps (3 * 1.2 -> 3) is
    copied as it is, as PyTorch's CPU kernels do for the linear modes (their separable
    resampling skips such a dimension) and for 2-D nearest; 1-D and 3-D nearest,
    nearest-exact and bicubic resample it with the given scale."""
    return mode in ("linear", "bilinear", "trilinear") or (mode == "nearest" and nd == 2)


def _resize(x: Tensor, plan: tuple) -> Tensor:
    if not plan:  # the same size: a new tensor all the same, as PyTorch's (no alias)
        return x.clone()
    for dim, taps in plan:
        x = _resize_dim(x, dim, taps)
    return x


def _resize_t(g: Tensor, shape: tuple, plan: tuple) -> Tensor:
    """The transpose of ``_resize`` (its vjp) applied to ``g``: each step's weighted gradient
    added back into the input rows it read, the steps in reverse order."""
    for dim, taps in reversed(plan):
        size = list(g.shape)
        size[dim] = shape[dim]
        wshape = [1] * g.ndim
        wshape[dim] = -1
        gx = g.new_zeros(size)
        for index, weight in taps:
            part = g
            if weight is not None:
                part = g * _tensor(weight, dtype=g.dtype, device=g.device).reshape(wshape)
            gx = gx.index_add(dim, _tensor(index, device=g.device), part)
        g = gx
    return g


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
        self.name = type(self).__name__  # (PyTorch's attribute)
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
    centres (``align_corners``) or at the image's edges; 0 for a single pixel (ATen's
    ``linspace_from_neg_one``)."""
    from ..autograd.ops.creation import linspace

    if n <= 1:
        return like.new_zeros(n)
    c = linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    return c if align_corners else c * ((n - 1) / n)


def _warn_default_align_corners() -> None:
    warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                  "old behavior is desired. See the documentation of grid_sample for details.",
                  stacklevel=3)


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """Generates a 2-D or 3-D flow field (sampling grid), given a batch of affine matrices
    ``theta``: (N, 2, 3) for a ``size`` (N, C, H, W), giving a grid (N, H, W, 2); or (N, 3, 4)
    for a ``size`` (N, C, D, H, W), giving a grid (N, D, H, W, 3). Each output pixel's
    normalised (x, y[, z]) is ``theta @ (x, y[, z], 1)``."""
    if align_corners is None:
        _warn_default_align_corners()
    align_corners = bool(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype}")
    size = [int(v) for v in size]
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    nd = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (nd, nd + 1):
        kind = "2D affine matrices of shape Nx2x3" if nd == 2 else \
            "3D affine matrices of shape Nx3x4"
        raise ValueError(f"Expected a batch of {kind} for size {size}. Got "
                         f"{list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if align_corners and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    n, spatial = size[0], size[2:]
    if theta.shape[0] != n:  # (PyTorch's bmm words it; its first words kept)
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{n}, {nd + 1}] but got: [{theta.shape[0]}, {nd + 1}] "
                           f"(affine_grid: size {size} asks for {n} matrices, theta holds "
                           f"{theta.shape[0]})")
    # base (1, prod(spatial), nd + 1): x along the last dimension, y the one before, ...
    cols, total = [], math.prod(spatial)
    for d in reversed(range(nd)):
        shape = [1] * nd
        shape[d] = spatial[d]
        cols.append(_base_coords(spatial[d], align_corners, theta).reshape(shape)
                    .expand(*spatial).reshape(total))
    cols.append(theta.new_ones(total))
    from ..autograd.ops.shape import stack

    base = stack(cols, -1).reshape(1, total, nd + 1)
    return base.matmul(theta.transpose(1, 2)).reshape(n, *spatial, nd)


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


def _pad_coords(x: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """ATen's ``compute_coordinates``: an unnormalised coordinate clamped (``border``) or
    reflected and clamped (``reflection``) into the input; ``zeros`` leaves it (the taps
    outside then read 0)."""
    if padding_mode == "border":
        x = _clip(x, size)
    elif padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        x = _clip(x, size)
    return x


def _grid_axis(coord: Tensor, size: int, mode: str, padding_mode: str,
               align_corners: bool) -> tuple:
    """The taps along one spatial axis of the input (``size`` long) for the normalised
    coordinates ``coord`` (N, *out): ``(index, weight)``, both (N, *out, taps), ``index`` a
    detached tensor of whole numbers (possibly outside the input: such a tap reads 0),
    ``weight`` differentiable in ``coord`` (None for nearest, whose one tap weighs 1)."""
    from ..autograd.ops.shape import stack

    x = _unnormalize(coord, size, align_corners)
    if mode == "bicubic":
        # ATen pads each of the four taps, not the position (get_value_bounded): the fraction
        # comes from the raw coordinate, so the weights' gradient skips the padding
        x0 = x.detach().floor()
        offsets = _tensor([-1.0, 0.0, 1.0, 2.0], dtype=x.dtype, device=x.device)
        index = _pad_coords(x0.unsqueeze(-1) + offsets, size, padding_mode, align_corners)
        return index, stack(_cubic_weights(x - x0), -1)
    x = _pad_coords(x, size, padding_mode, align_corners)
    if mode == "nearest":
        return x.detach().round().unsqueeze(-1), None  # half to even, as nearbyint
    x0 = x.detach().floor()
    t = x - x0
    offsets = _tensor([0.0, 1.0], dtype=x.dtype, device=x.device)
    return x0.unsqueeze(-1) + offsets, stack([1 - t, t], -1)


@autocast_op("float32 on cpu")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Computes the output using ``input`` values and pixel locations from ``grid``.

    ``input`` (N, C, H, W) with ``grid`` (N, H_out, W_out, 2) holding normalised (x, y) in
    [-1, 1], or volumetric ``input`` (N, C, D, H, W) with ``grid`` (N, D_out, H_out, W_out, 3)
    holding (x, y, z). ``mode``: ``"bilinear"`` (trilinear for 5-D input), ``"nearest"``
    (rounds half to even) or ``"bicubic"`` (4-D only; cubic convolution with A = -0.75, each
    of the 4 x 4 taps padded on its own). ``padding_mode`` for locations outside the input:
    ``"zeros"``, ``"border"`` (the edge) or ``"reflection"``. Differentiable in both ``input``
    and ``grid`` with ATen's formulas; with ``"nearest"`` the grid's gradient is zeros.
    """
    checks.tensor_arg(input, "grid_sampler", "input")
    checks.tensor_arg(grid, "grid_sampler", "grid")
    if align_corners is None:
        _warn_default_align_corners()
    align_corners = bool(align_corners)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in "
                           f"last dimension, but got grid with sizes {list(grid.shape)}")
    want = 4 if input.ndim == 4 else 5
    if input.ndim != want or grid.ndim != want:
        raise RuntimeError(f"grid_sampler(): expected {want}D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and input.ndim == 5:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:
        raise checks.kernel_not_implemented(f"grid_sampler_{input.ndim - 2}d", input.dtype)
    if grid.dtype is not input.dtype:  # (PyTorch's kernel reads both as one dtype)
        raise RuntimeError(f"grid_sampler(): expected scalar type "
                           f"{checks.scalar_type_name(input.dtype)} but found "
                           f"{checks.scalar_type_name(grid.dtype)} (grid)")
    if mode == "nearest":  # (its composite keeps only the rounded indices: less than the node)
        return _grid_sample(input, grid, mode, padding_mode, align_corners)
    node = GridSampler2DBackward0 if input.ndim == 4 else GridSampler3DBackward0
    return recomputed_node(node, (input, grid), _grid_sample, mode, padding_mode, align_corners)


def _grid_sample(input: Tensor, grid: Tensor, mode: str, padding_mode: str,
                 align_corners: bool) -> Tensor:
    """grid_sample's composite (checked arguments): the forward of GridSampler2DBackward0 and
    GridSampler3DBackward0, and their rule recomputed (Note [Recomputed rules])."""
    n, c, *sizes = input.shape
    out_shape = list(grid.shape[1:-1])
    nd, m = len(sizes), math.prod(out_shape)
    strides = [math.prod(sizes[d + 1:]) for d in range(nd)]
    # per input dimension d (D, H, W order) the grid's component nd - 1 - d (x is the last);
    # the axes' taps combine into (N, *out, taps) flat indices and weights: one gather
    index = weight = None
    for d, size in enumerate(sizes):
        i, w = _grid_axis(grid[..., nd - 1 - d], size, mode, padding_mode, align_corners)
        inside = (i >= 0).logical_and(i <= size - 1).to(input.dtype)
        w = inside if w is None else w * inside  # 0 outside (zeros padding)
        # (a NaN coordinate's tap reads index 0 with weight 0, or NaN: never a wild index)
        i = i.clamp(0, size - 1).nan_to_num(0.0).to(dtypes.int64) * strides[d]
        if index is None:
            index, weight = i, w
        else:  # every tap of the axes so far with every tap of this one
            index = (index.unsqueeze(-1) + i.unsqueeze(-2)).flatten(-2)
            weight = (weight.unsqueeze(-1) * w.unsqueeze(-2)).flatten(-2)
    taps = index.shape[-1]  # 2^nd corners, one (nearest) or 4 x 4 (bicubic)
    flat = input.reshape(n, c, math.prod(sizes))  # (not -1: N or C may be 0)
    got = flat.gather(2, index.reshape(n, 1, m * taps).expand(n, c, m * taps))
    out = (got.reshape(n, c, m, taps) * weight.reshape(n, 1, m, taps)).sum(-1)
    out = out.reshape(n, c, *out_shape)
    if mode == "nearest" and grid.requires_grad:
        # the samples do not depend on the grid, but PyTorch gives it a zero gradient, not
        # None: add a zero that reaches it (where, not `* 0`: no NaN from an infinite grid)
        out = out + grid.where(grid.new_zeros(grid.shape, dtype=dtypes.bool), 0.0).sum()
    return out
