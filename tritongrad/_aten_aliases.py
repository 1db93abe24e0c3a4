"""ATen entry points PyTorch exposes at the top of ``torch`` under their native names, each
the documented function it implements: ``grid_sampler`` (``F.grid_sample`` with its modes as
ATen's integers), ``conv_tbc`` (a 1-D convolution over (time, batch, channel) input),
``native_channel_shuffle``, ``norm_except_dim`` and ``is_distributed``."""

from __future__ import annotations

from .autograd.tensor import Tensor

__all__ = ["conv_tbc", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "is_distributed",
           "native_channel_shuffle", "norm_except_dim"]

_INTERPOLATION = ("bilinear", "nearest", "bicubic")  # ATen's GridSamplerInterpolation
_PADDING = ("zeros", "border", "reflection")  # ATen's GridSamplerPadding


def _mode(names: tuple, value, what: str) -> str:
    if type(value) is not int or not 0 <= value < len(names):
        raise RuntimeError(f"grid_sampler(): expected {what} to be an int in [0, "
                           f"{len(names) - 1}] ({', '.join(names)}), got {value!r}")
    return names[value]


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """``F.grid_sample(input, grid, mode, padding_mode, align_corners)`` with ATen's integer
    modes: interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border,
    2 reflection."""
    from .nn._sampling import grid_sample
    return grid_sample(input, grid, _mode(_INTERPOLATION, interpolation_mode,
                                          "interpolation_mode"),
                       _mode(_PADDING, padding_mode, "padding_mode"), align_corners)


def _grid_sampler_nd(nd: int):
    def sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                align_corners: bool) -> Tensor:
        if input.dim() != nd + 2:
            raise RuntimeError(f"grid_sampler_{nd}d(): expected {nd + 2}D input, but got "
                               f"input with sizes {list(input.shape)}")
        return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)

    sampler.__name__ = sampler.__qualname__ = f"grid_sampler_{nd}d"
    sampler.__doc__ = f"``grid_sampler`` of a {nd + 2}-D input."
    return sampler


grid_sampler_2d = _grid_sampler_nd(2)
grid_sampler_3d = _grid_sampler_nd(3)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """``F.conv_tbc``: a 1-D convolution over (time, batch, in_channels) with a (kernel width,
    in_channels, out_channels) weight (nn/_convolution.py holds it)."""
    from .nn.functional import conv_tbc as conv
    return conv(input, weight, bias, pad)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``F.channel_shuffle``: ATen's kernel under its native name."""
    from .nn._shuffle_distance import channel_shuffle
    return channel_shuffle(input, groups)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dimension but ``dim`` (weight normalization's
    norm; ``dim=-1``: of the whole tensor)."""
    from .nn.utils.parametrizations import norm_except_dim as norm
    return norm(v, pow, dim)


def is_distributed(input: Tensor) -> bool:
    """False: a tensor is never split across processes (PyTorch's answer for every dense
    tensor too)."""
    return False
